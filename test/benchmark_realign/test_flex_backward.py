"""FlexAttention backward under the CPU harness: training compiles reach the
``flex_attention_backward`` Triton template, and the one training pattern measured to
crash - a ``score_mod`` bias gathered in the graph (``table[index]``) under selective
activation checkpointing that saves flex_attention's outputs and recomputes the gather
(torchtitan's op-level policy) - crashes stock and is fixed by benchmark-realign.

Why that pattern: the min-cut partitioner never recomputes a captured buffer that
flex_attention_backward reads (it is "materialized in backward"), so without
checkpointing the backward graph gets it as a saved, realized input and the hand-built
autotuning list of the backward lowering is right. Recomputed in the backward graph
(SAC), it is an unrealized gather that the backward template inlines (taking ``table``
and ``index``), while the lowering's list holds the realized ``bias``:

- 2.14+ (``maybe_realize(score_mod_other_buffers)`` after the choices): the in-process
  benchmark passes one tensor too few; 2.15.0 stock crashes here (its forward fix does
  not cover the backward), 2.14.1 stock already crashes in the forward;
- 2.8-2.13 (no such realize): ``autotune_select_algorithm`` gets the unrealized node
  and ``create_inputs_key`` (``key_of``) raises before any benchmark (``NotImplementedError:
  Pointwise``, seen on an H200 with 2.11.0): benchmark-realign realizes it first
  (``realized_selection``), then realigns the benchmark as on 2.14+.

Captured *views* (``FLEX_VIEWS``: transformers' T5 position bias permuted and unsqueezed,
expanded per batch, sliced, a broadcast slope, q/k/v as views of projections) reach that
selection up to 2.13 as ``ir`` views: over a realized buffer a view answers
``get_layout()`` with its base's layout but raises in ``get_stride()`` (``NotImplementedError:
View``, T5 on an H200 with 2.11.0), so the package decides by what selection calls
(``key_of``), not by the layout.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import tempfile
from unittest import mock

from helpers import TOLERANCE, TORCH_RELEASE, is_affected, fresh_cache, report, requires_cuda, run_python
from observe import observe_autotuning
from packaging.version import Version

import inductor_fix
from flex_cases import TRAINING
from flex_cases import TRAINING_VIEWS as FLEX_VIEWS
from inductor_fix.patches.benchmark_realign.check import flex_backward_on_triton, flex_training
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.workloads import Step
from torch._dynamo.utils import counters
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

#: The backward lowering realizes its captured buffers before selection (so a mismatch is an arity one).
BACKWARD_REALIZES = TORCH_RELEASE >= Version("2.14")
HERE = os.path.dirname(os.path.abspath(__file__))
SHORT_LAUNCH = r"TypeError: triton_flex_attention(_backward)?\(\) launch: missing a required argument: 'out_ptr0'"
#: View cases whose bias is gathered (the kernel takes the gather's sources): stock crashes
#: on every affected release. ``slope_view`` crashes stock only up to 2.13 (its backward).
GATHERED_VIEWS = tuple(case for case in FLEX_VIEWS if case != "slope_view")


def train(variant: str):
    """One training compile of ``variant`` under the harness, in a fresh Inductor cache."""
    counters.clear()
    with fresh_cache(), triton_cpu_harness() as oracle, observe_autotuning() as seen:
        steps = flex_training(TRAINING[variant], "cpu", compare=False)
    return steps[0], oracle, seen


@instantiate_parametrized_tests
class TestFlexBackwardCPU(TestCase):
    def setUp(self) -> None:
        super().setUp()
        if not flex_backward_on_triton():
            self.skipTest(f"the harness cannot send a flex backward to Triton on torch {TORCH_RELEASE}")

    def test_training_reaches_the_backward_template(self) -> None:
        """Stock and patched alike: the saved bias is realized, kernel and selection agree."""
        with inductor_fix.removed():
            step, oracle, seen = train("bias_table_grad")
        self.assertIsNone(step.error)
        self.assertEqual(oracle.mismatches, [])
        self.assertIn("triton_flex_attention_backward", oracle.kernels)
        self.assertTrue(any(c.template == "flex_attention_backward" for c in seen.choices))

    @parametrize("variant", ["selective", "selective_frozen"])
    def test_recomputed_capture_stock(self, variant: str) -> None:
        with inductor_fix.removed():
            step, oracle, _ = train(variant)
        self.assertRegex(step.error or "", SHORT_LAUNCH)
        # Up to 2.14.x the forward crashes first; 2.15.0 (forward fixed upstream): the backward.
        failing = "triton_flex_attention_backward" if not is_affected("flex") else "triton_flex_attention"
        self.assertEqual(oracle.mismatches[0].kernel, failing)

    @parametrize("variant", ["selective", "selective_frozen"])
    def test_recomputed_capture_patched(self, variant: str) -> None:
        with inductor_fix.applied():
            step, oracle, seen = train(variant)
        self.assertIsNone(step.error)
        self.assertEqual(oracle.mismatches, [])
        backward = sum(c.template == "flex_attention_backward" for c in seen.choices)
        forward = sum(c.template == "flex_attention" for c in seen.choices) if is_affected("flex") else 0
        self.assertGreater(backward, 0)
        self.assertEqual(counters["inductor_fix"]["realigned"], backward + forward)
        # Up to 2.13 the recomputed capture reaches selection unrealized: realized first.
        self.assertEqual(counters["inductor_fix"]["realized"] > 0, not BACKWARD_REALIZES)
        self.assertEqual(counters["inductor_fix"]["excluded_at_benchmark"], 0)
        self.assertEqual(counters["inductor_fix"]["excluded"], 0)

    @parametrize("variant", GATHERED_VIEWS)
    def test_captured_view_stock(self, variant: str) -> None:
        with inductor_fix.removed():
            step, _, _ = train(variant)
        # Up to 2.14.x the forward crashes first; 2.15.0: the backward's benchmark.
        self.assertRegex(step.error or "", SHORT_LAUNCH)

    @parametrize("variant", FLEX_VIEWS)
    def test_captured_view_patched(self, variant: str) -> None:
        with inductor_fix.applied():
            step, oracle, seen = train(variant)
        self.assertIsNone(step.error)
        self.assertEqual(oracle.mismatches, [])
        self.assertGreater(sum(c.template == "flex_attention_backward" for c in seen.choices), 0)
        self.assertEqual(counters["inductor_fix"]["realized"] > 0, not BACKWARD_REALIZES)
        self.assertEqual(counters["inductor_fix"]["excluded_at_benchmark"] + counters["inductor_fix"]["excluded"], 0)

    def test_shared_captures_are_frozen(self) -> None:
        """Two layers reading the same captured buffers under selective checkpointing: what
        one layer's backward selection realizes, the other's template reads, which needs a
        fixed layout. The package freezes it (up to 2.13 where it realizes, from 2.14 in the
        flex backward's selection); the negative control, neither freeze, crashes."""
        from inductor_fix.patches.benchmark_realign import fix as benchmark_realign

        with inductor_fix.applied():
            step, oracle, _ = train("shared_captures")
        self.assertIsNone(step.error)
        self.assertEqual(oracle.mismatches, [])
        if BACKWARD_REALIZES:  # up to 2.13 what it realizes is frozen as it is realized
            self.assertGreater(counters["inductor_fix"]["frozen"], 0)
        with inductor_fix.removed("benchmark-realign"), \
                mock.patch.object(benchmark_realign, "realize_and_freeze", lambda realize_input: realize_input), \
                mock.patch.object(benchmark_realign, "FROZEN_SELECTIONS", frozenset()), \
                inductor_fix.applied("benchmark-realign"):
            unfrozen, _, _ = train("shared_captures")
        self.assertRegex(unfrozen.error or "", r"convert FlexibleLayout to FixedLayout first")

    def test_captured_view_needs_realizing_by_key(self) -> None:
        """Negative controls of the realization, where the lowering passes T5's captured view
        to selection unrealized (up to 2.13): selection as stock has it crashes on the
        unrealized inputs; deciding by ``get_layout()`` (a proxy: a view answers with its
        base's layout) realizes the ``Pointwise`` but passes the view, which crashes in
        ``get_stride`` - the crash transformers' T5 met on an H200."""
        if BACKWARD_REALIZES:
            self.skipTest(f"torch {TORCH_RELEASE}'s backward lowering realizes its captured buffers")
        from torch._inductor.select_algorithm import AlgorithmSelectorCache

        from inductor_fix.patches.benchmark_realign import fix as benchmark_realign

        def by_layout(node, key_of):
            try:
                node.get_layout()
            except (NotImplementedError, AttributeError):
                return False
            return True

        with inductor_fix.applied(), mock.patch.object(AlgorithmSelectorCache, "__call__",
                                                       AlgorithmSelectorCache.__call__.__wrapped__):
            unrealized, _, _ = train("t5_view")
        with inductor_fix.applied(), mock.patch.object(benchmark_realign, "selectable", by_layout):
            by_proxy, _, _ = train("t5_view")
        self.assertRegex(unrealized.error or "", r"NotImplementedError")
        self.assertRegex(by_proxy.error or "", r"NotImplementedError: View")


def _training_in_fresh_process(case: str, dtype: str, disable: bool) -> Step:
    """One training compile on CUDA in a process and Inductor cache of its own (stock
    with ``INDUCTOR_FIX_DISABLE=1``): kernels, timings and cache entries of another test
    cannot spare it the benchmark that crashes."""
    code = f"""
        import dataclasses, json, sys
        sys.path.insert(0, {HERE!r})
        from flex_cases import TRAINING
        from inductor_fix.patches.benchmark_realign.check import flex_training
        from quick_autotuning import autotuning
        case = dataclasses.replace(TRAINING[{case!r}], dtype={dtype!r})
        with autotuning("cuda"):
            step = flex_training(case, "cuda", compare=True)[0]
        print("STEP", json.dumps(dataclasses.asdict(step)))
    """
    with tempfile.TemporaryDirectory() as cache:
        result = run_python(code, env={"INDUCTOR_FIX_DISABLE": "1" if disable else None,
                                       "TORCHINDUCTOR_CACHE_DIR": cache}, timeout=900)
    lines = [line for line in result.stdout.splitlines() if line.startswith("STEP ")]
    assert lines, result.stderr[-3000:]
    return Step(**json.loads(lines[-1][len("STEP "):]))


#: (case, dtype) compiled on a GPU: the gathered-bias cases in both dtypes, T5's view in both,
#: the other views in float32 (what they vary is the view, not the dtype).
GPU_CASES = [(case, dtype) for case in ("bias", "bias_table_grad", "selective", "selective_frozen", "t5_view")
             for dtype in ("float32", "bfloat16")] + [(case, "float32") for case in FLEX_VIEWS if case != "t5_view"]


@requires_cuda
@instantiate_parametrized_tests
class TestFlexBackwardGPU(TestCase):
    """Training compiles for real: outputs and every gradient against eager, per dtype,
    stock against patched, each in a fresh process."""

    @parametrize("case,dtype", GPU_CASES, name_fn=lambda case, dtype: f"{case}_{dtype}")
    def test_stock_and_patched(self, case: str, dtype: str) -> None:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # side by side, each its own process
            stock, patched = pool.map(lambda disable: _training_in_fresh_process(case, dtype, disable), (True, False))
        report(f"flex_backward/{case}/{dtype}", stock=stock.error, patched=patched.error,
               max_rel_error=patched.max_rel_error, patched_compile_s=round(patched.seconds, 1))
        if case in ("selective", "selective_frozen", *GATHERED_VIEWS) and is_affected("flex_backward"):
            self.assertRegex(stock.error or "", r"TypeError: .*launcher\(\) missing 1 required positional argument"
                                                r"|NotImplementedError: View")
        self.assertIsNone(patched.error)
        self.assertLess(patched.max_rel_error, TOLERANCE[dtype])


class TestTrainingCases(TestCase):
    """check's training cases are the package's ``FlexTraining``; what only the tests vary is
    ``TrainingCase`` (test/benchmark_realign/flex_cases.py), and neither builds what it does
    not know."""

    def test_check_cases_need_nothing_of_the_tests(self) -> None:
        from flex_cases import TrainingCase

        from inductor_fix.patches.benchmark_realign.check import FLEX_TRAINING, FlexTraining

        self.assertTrue(all(type(case) is FlexTraining for case in FLEX_TRAINING.values()))
        self.assertTrue(all(isinstance(TRAINING[name], TrainingCase) for name in FLEX_VIEWS if name != "t5_view"))
        self.assertEqual(repr(TRAINING["t5_view"]),
                         "FlexTraining(table_grad=True, checkpoint='selective', bias_view='t5', layers=2)")

    def test_an_unknown_view_or_checkpoint_is_a_value_error(self) -> None:
        from flex_cases import TrainingCase

        from inductor_fix.patches.benchmark_realign.check import FlexTraining

        for build, fields in ((FlexTraining, {"bias_view": "expand"}), (TrainingCase, {"bias_view": "transpose"}),
                              (FlexTraining, {"checkpoint": "offload"})):
            with self.subTest(build=build.__name__, **fields), self.assertRaisesRegex(ValueError, "must be"):
                build(**fields)


if __name__ == "__main__":
    run_tests()
