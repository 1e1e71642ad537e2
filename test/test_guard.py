"""The arity guard, under forced faults, on the CPU harness (and for real on a GPU).

The faults (inductor_fix/testing/faults.py) work on every release, 2.15.0
included, so these tests do not depend on the torch under test having the bug.
"""

from __future__ import annotations

import logging
import re

from helpers import requires_cuda

import inductor_fix
from inductor_fix.testing.faults import EXTRA_PARAMETER, aliasing_blind_key, extra_kernel_parameter
from inductor_fix.testing.harness import triton_cpu_harness
from inductor_fix.testing.workloads import ORDERS, optimizer_step, run_compiles, run_sequence
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize


def _name(value: str) -> str:
    return value.replace("-", "_")


def _normalise(message: str) -> str:
    """Exclusion messages name a tiling config that varies by release: blank it."""
    return re.sub(r"\[[^\]]*\]", "[<config>]", message)


@instantiate_parametrized_tests
class TestArityGuardCPU(TestCase):
    @parametrize("order", ORDERS, name_fn=_name)
    def test_blind_key_crashes_without_guard(self, order: str) -> None:
        """Negative control: a key blind to aliasing crashes when nothing guards it."""
        with inductor_fix.removed(), aliasing_blind_key(), triton_cpu_harness() as oracle:
            steps = run_sequence("bmm", order, "cpu", compare=False)
        self.assertEqual(len(steps), 2)
        self.assertRegex(steps[1].error, r"^TypeError: triton_bmm\(\) launch: ")
        self.assertTrue(oracle.mismatches)

    @parametrize("order", ORDERS, name_fn=_name)
    def test_blind_key_regenerated_with_guard(self, order: str) -> None:
        with inductor_fix.applied(), aliasing_blind_key(), triton_cpu_harness() as oracle:
            steps = run_sequence("bmm", order, "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertEqual(oracle.mismatches, [])
        self.assertGreater(counters["inductor_fix"]["regenerated"], 0)
        self.assertEqual(counters["inductor_fix"]["excluded"], 0)
        self.assertGreater(oracle.launches, 0)

    def test_unfixable_mismatch_excluded_and_aten_chosen(self) -> None:
        with (
            inductor_fix.applied(),
            extra_kernel_parameter(),
            triton_cpu_harness() as oracle,
            self.assertLogs("inductor_fix.guard", logging.WARNING) as logs,
        ):
            steps = run_compiles("mm", (False,), "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None])
        self.assertEqual(oracle.launches, 0, "an excluded choice reached a launch")
        excluded = counters["inductor_fix"]["excluded"]
        self.assertGreater(excluded, 0)
        messages = [r.getMessage() for r in logs.records if "excluded" in r.getMessage()]
        self.assertEqual(len(messages), excluded)
        self.assertExpectedInline(
            _normalise(messages[0]),
            """inductor_fix: excluded a Triton template choice of 'mm' [<config>] from autotuning: kernel triton_mm(inductor_fix_extra, arg_A, arg_B, out_ptr0) takes 4 parameters, but its benchmark request passes 3 arguments (input 128x128 float32, input 128x128 float32, output 128x128 float32) before the 3 grid values""",  # noqa: B950
        )
        self.assertIn(EXTRA_PARAMETER, messages[0])

    def test_no_choice_left_says_so(self) -> None:
        with (
            inductor_fix.applied(),
            extra_kernel_parameter(),
            triton_cpu_harness(max_autotune_gemm_backends="TRITON"),
            self.assertLogs("inductor_fix.guard", logging.WARNING),
        ):
            steps = run_compiles("mm", (False,), "cpu", compare=False)
        self.assertEqual(len(steps), 1)
        self.assertIn("NoValidChoicesError: inductor_fix: no choice is left for 'mm'", steps[0].error)
        self.assertIn("the arity guard excluded all", steps[0].error)


@requires_cuda
@instantiate_parametrized_tests
class TestArityGuardGPU(TestCase):
    @parametrize("order", ORDERS, name_fn=_name)
    def test_blind_key_compiles_and_matches_eager(self, order: str) -> None:
        with inductor_fix.applied(), aliasing_blind_key():
            steps = run_sequence("bmm", order, "cuda", compare=True)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertGreater(counters["inductor_fix"]["regenerated"], 0)
        for step in steps:
            self.assertLess(step.max_rel_error, 1e-4)

    def test_blind_key_optimizer_step(self) -> None:
        with inductor_fix.applied(), aliasing_blind_key():
            steps = optimizer_step("cuda", compare=True)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertGreater(counters["inductor_fix"]["regenerated"], 0)
        self.assertLess(max(s.max_rel_error for s in steps), 1e-4)

    @config.patch(max_autotune_gemm_backends="ATEN,TRITON")
    def test_unfixable_mismatch_falls_back_to_aten(self) -> None:
        with inductor_fix.applied(), extra_kernel_parameter(), self.assertLogs("inductor_fix.guard", logging.WARNING):
            steps = run_compiles("mm", (False, True), "cuda", compare=True)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertGreater(counters["inductor_fix"]["excluded"], 0)
        self.assertLess(max(s.max_rel_error for s in steps), 1e-4)


if __name__ == "__main__":
    run_tests()
