"""Property suite of the benchmark-realign patch: FlexAttention with in-graph captured
buffers (pytorch/pytorch#194515), whatever the shapes, GQA, dtype and bias.

Runs against whatever torch is installed, in whatever state ``inductor_fix`` is in
(``INDUCTOR_FIX_DISABLE=1``: stock, which must find a crashing case on 2.7-2.14).
GPU mode with CUDA (outputs compared with eager), else the CPU harness.
"""

from __future__ import annotations


import pytest
from flex_cases import FlexCase, flex_cases
from helpers import (DEVICE, TOLERANCE, is_affected, counterexample_on_stock, fresh_cache, on_device, safety_nets_acted,
                     stock_phases)
from hypothesis import example, given, settings

import torch
from inductor_fix.check.workloads import MODE, describe_error, max_rel_error
from codegen_cache_check import codegen_cache_check
from observe import observe_autotuning
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests

#: tools/run_matrix's expectations for this suite (``packaging`` specifiers of the torch release):
#: stock fails up to 2.14 (2.15.0 passes forward and decoding their kernels' inputs, PR #194555).
STOCK_FAILS = ">=2.7.0,<2.15.0"



def check_flex(case: FlexCase) -> None:
    """Compile ``case`` once in a fresh Inductor cache; AssertionError on any violation.

    Oracle as for matmuls: the compile succeeds (no launch that does not fit its
    kernel), a flex template was generated, no choice's own arity mismatches, the
    guard never had to exclude or regenerate (realigning is the fix, not a fault),
    and on a GPU the output equals eager within the dtype's tolerance. Inductor's own
    codegen-cache check runs too: the flex templates do not use the codegen cache
    (:class:`TestFlexCodegenCache`), so every hit it counts must be zero, and checked.
    """
    harness = on_device()
    counters.clear()
    inputs = case.inputs(DEVICE)
    function = case.function()
    with fresh_cache(), harness, config.patch(fx_graph_cache=False), observe_autotuning() as seen, \
            codegen_cache_check() as tally:
        torch._dynamo.reset()
        try:
            result = torch.compile(function, mode=MODE, fullgraph=True)(*inputs)
        except Exception as error:
            raise AssertionError(f"{case}: {describe_error(error)}") from None
    assert any(c.template in case.templates for c in seen.choices), f"{case}: no flex template generated"
    assert not seen.arity_mismatches, f"{case}: choices whose arity mismatches: {seen.arity_mismatches[:2]}"
    assert not seen.arity_errors, f"{case}: Triton benchmarks failed on arity: {seen.arity_errors[:2]}"
    guard = safety_nets_acted()
    assert not guard, f"{case}: the arity guard had to act: {guard}"
    assert (tally.checks, tally.failed, tally.unchecked) == (tally.hits, 0, []), f"{case}: {tally}"
    if DEVICE == "cuda":
        expected = function(*inputs)
        error = max_rel_error(result, expected)
        assert error <= TOLERANCE[case.dtype], f"{case}: max rel error {error:.2e}"


#: The FlexAttention cases measured on the H200 (torch 2.11.0): decoding and forward kernels.
FLEX_REGRESSIONS = [
    FlexCase(128, 2, 2, 49, 49, 32, "float32", "gather"),
    FlexCase(2, 2, 2, 256, 256, 32, "float32", "gather"),
]


class TestFlexProperties(TestCase):
    """FlexAttention with in-graph captured buffers: whatever the shapes, GQA, dtype and bias."""

    @example(case=FLEX_REGRESSIONS[1])
    @example(case=FLEX_REGRESSIONS[0])
    @given(case=flex_cases())
    def test_flex_captured_bias(self, case: FlexCase) -> None:
        check_flex(case)


@pytest.mark.negative_control
class TestFlexNegativeControl(TestCase):
    """With the fix removed, Hypothesis must find a crashing flex case on an affected release."""

    def test_hypothesis_finds_counterexample_on_stock(self) -> None:
        @settings(phases=stock_phases(), max_examples=4)
        @given(case=flex_cases(dtypes=("float32",)))
        def flex_property(case: FlexCase) -> None:
            check_flex(case)

        counterexample_on_stock(self, flex_property, is_affected("flex"), r"TypeError|arity", "flex counterexample")


class TestFlexCodegenCache(TestCase):
    def test_flex_templates_do_not_use_the_codegen_cache(self) -> None:
        """FlexAttention's templates are created with the TritonTemplate default
        (``cache_codegen_enabled_for_template=False``): Inductor's codegen-cache check,
        the second oracle of the matmul suite, cannot see flex, and has nothing to see."""
        from inductor_fix.patches.benchmark_realign.seams import triton_flex_lowering
        from torch._inductor.select_algorithm import TritonTemplate

        triton_flex_lowering()  # imports the flex lowerings, which register their templates

        flex = {name: template for name, template in TritonTemplate.all_templates.items() if name.startswith("flex")}
        self.assertTrue(flex)
        self.assertEqual({name: getattr(t, "_cache_codegen_enabled_for_template", False) for name, t in flex.items()},
                         dict.fromkeys(flex, False))


if __name__ == "__main__":
    run_tests()
