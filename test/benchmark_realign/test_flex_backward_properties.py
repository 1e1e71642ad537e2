"""Property suite of the benchmark-realign patch on the FlexAttention backward: whatever the
captured buffers (score_mod and mask_mod, with and without grad, computed in the graph),
GQA, dtype, length and checkpointing, a training compile's forward and backward kernels
take the arguments autotuning passes them.

Runs against whatever torch is installed, in whatever state ``inductor_fix`` is in
(``INDUCTOR_FIX_DISABLE=1``: stock). GPU mode with CUDA (outputs and every gradient
compared with eager), else the CPU harness (seam 6 lets a CPU backward be traced).
"""

from __future__ import annotations


import pytest
from flex_cases import flex_training_cases
from helpers import (DEVICE, TOLERANCE, TORCH_RELEASE, is_affected, counterexample_on_stock, fresh_cache, on_device,
                     safety_nets_acted, stock_phases)
from hypothesis import Phase, example, given, settings
from observe import observe_autotuning

from flex_cases import TRAINING as FLEX_TRAINING
from inductor_fix.check.harness import ORACLE_ERROR
from inductor_fix.patches.benchmark_realign import PATCH
from inductor_fix.patches.benchmark_realign.check import FlexTraining, flex_backward_on_triton, flex_training
from torch._dynamo.utils import counters
from torch._inductor.test_case import TestCase, run_tests

#: tools/run_matrix's expectations for this suite (``packaging`` specifiers of the torch
#: release): where stock must fail (2.14.x: the forward crashes first; 2.15.0: the backward,
#: whose lowering still passes a hand-built list), and where patched must pass.
STOCK_FAILS = ">=2.7.0"
PATCHED_PASSES = ">=2.8.0"
#: patches/0003 (which applies from 2.12) realigns the benchmarks and realizes what selection
#: cannot key (the backward's captured buffers up to 2.13); 0004 (2.14+) freezes the
#: buffers the backward lowering realizes itself; 0007 (2.15.0) does both in the backward
#: lowering, upstream's way (tools/check_patches 2.15.0 --patch patches/0007-*).
DIFF_PASSES = ">=2.12.0"
#: What check_flex_backward's AssertionError says where stock crashes, and nothing else: the case,
#: then the patch's stock crash (``PATCH.crash``: the launch one tensor short, 2.13's unrealized
#: Pointwise or view, 2.14's flexible layout) or, under the CPU harness, its launch of the wrong
#: arity (``ORACLE_ERROR``). Any other failure (a compile that raised something else, no backward
#: template) is not the bug the negative control must find (it matched r"Error", issue 52).
STOCK_CRASH = rf"^FlexTraining\(.*\): (?:{PATCH.crash.pattern}|{ORACLE_ERROR})"


def check_flex_backward(case: FlexTraining) -> None:
    """One training compile of ``case`` in a fresh Inductor cache; AssertionError on any
    violation. Oracle as for the forward: it compiles, the backward template was generated,
    no choice's own arity mismatches, no benchmark failed on arity, the guard never had to
    act (realigning is the fix, not a fault), and on a GPU output and gradients equal eager."""
    harness = on_device()
    counters.clear()
    with fresh_cache(), harness, observe_autotuning() as seen:
        steps = flex_training(case, DEVICE, compare=DEVICE == "cuda")
    if steps[0].error:
        raise AssertionError(f"{case}: {steps[0].error}")
    assert any(c.template == "flex_attention_backward" for c in seen.choices), f"{case}: no backward template"
    assert not seen.arity_mismatches, f"{case}: choices whose arity mismatches: {seen.arity_mismatches[:2]}"
    assert not seen.arity_errors, f"{case}: Triton benchmarks failed on arity: {seen.arity_errors[:2]}"
    guard = safety_nets_acted()
    assert not guard, f"{case}: the arity guard had to act: {guard}"
    if DEVICE == "cuda":
        assert steps[0].max_rel_error <= TOLERANCE[case.dtype], f"{case}: max rel error {steps[0].max_rel_error:.2e}"


def _skip_without_backward(test: TestCase) -> None:
    if DEVICE == "cpu" and not flex_backward_on_triton():
        test.skipTest(f"the harness cannot send a flex backward to Triton on torch {TORCH_RELEASE}")


class TestFlexBackwardProperties(TestCase):
    def setUp(self) -> None:
        super().setUp()
        _skip_without_backward(self)

    # Half the profile's generated examples (4 in CI): each compiles a forward and a backward.
    @settings(max_examples=max(1, settings.default.max_examples // 2))
    @example(case=FLEX_TRAINING["selective"])  # crashes stock 2.15.0's backward (CPU harness)
    @example(case=FLEX_TRAINING["bias_table_grad"])
    @example(case=FLEX_TRAINING["t5_view"])  # transformers' T5: NotImplementedError: View (2.11, H200)
    @example(case=FLEX_TRAINING["shared_captures"])  # a flexible layout read by a second template
    @example(case=FLEX_TRAINING["t5_doc_mask_full"])  # patches/0007's upstream test, both ways
    @example(case=FLEX_TRAINING["t5_doc_mask_selective"])
    @given(case=flex_training_cases())
    def test_flex_backward_captured_buffers(self, case: FlexTraining) -> None:
        check_flex_backward(case)


@pytest.mark.negative_control
class TestFlexBackwardNegativeControl(TestCase):
    """With the fix removed, Hypothesis must find a crashing training case on an affected release."""

    def setUp(self) -> None:
        super().setUp()
        _skip_without_backward(self)

    def test_hypothesis_finds_counterexample_on_stock(self) -> None:
        @settings(phases=stock_phases(Phase.explicit), max_examples=4)
        @example(case=FLEX_TRAINING["selective"])
        @given(case=flex_training_cases(dtypes=("float32",)))
        def flex_backward_property(case: FlexTraining) -> None:
            check_flex_backward(case)

        counterexample_on_stock(self, flex_backward_property, is_affected("flex_backward"), STOCK_CRASH,
                                "counterexample of the flex backward property")


if __name__ == "__main__":
    run_tests()
