"""The arity guard, under forced faults, on the CPU harness (and for real on a GPU).

The faults (``faults.py`` beside this file) work on every release, 2.15.0
included, so these tests do not depend on the torch under test having the bug.
"""

from __future__ import annotations

import logging
import re
import sys
import unittest

from helpers import (MATMUL_TOLERANCE, TORCH_RELEASE, crashing_job, is_affected, needs_part_of, optimizer_step,
                     requires_cuda)

import inductor_fix
from faults import EXTRA_PARAMETER, aliasing_blind_key, extra_kernel_parameter
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.table import run_sequence
from inductor_fix.check.operations import operation
from inductor_fix.check.workloads import ORDERS, SEQUENCES, run_compiles
from inductor_fix.patches import PATCHES
from inductor_fix.patches.arity_guard import PATCH
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize


#: A non-aliased matmul the guard checks and leaves alone, and the two-compile op it guards.
MM, BMM = operation("mm"), operation("bmm")
#: The FlexAttention workloads of benchmark-realign's folder (pytorch/pytorch#194515), declared
#: with ``needs_part_of``, and their sequence.
FLEX_PATCH = "benchmark-realign"
FLEX_OPS = ("flex", "flex_decoding")
FLEX_ORDER = "gathered-bias"


def _flex_lowering_on_triton() -> bool:
    if FLEX_PATCH not in {patch.name for patch in PATCHES}:
        return False
    from inductor_fix.patches.benchmark_realign.seams import flex_lowering_on_triton

    return flex_lowering_on_triton()


def guard_alone():
    """The fix with every patch of the table but this one removed; restored after."""
    return inductor_fix.removed(*(p.name for p in PATCHES if p is not PATCH))


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
            steps = run_compiles(BMM, SEQUENCES[order], "cpu", compare=False)
        self.assertEqual(len(steps), 2)
        self.assertRegex(steps[1].error, r"^TypeError: triton_bmm\(\) launch: ")
        self.assertTrue(oracle.mismatches)

    @parametrize("order", ORDERS, name_fn=_name)
    def test_blind_key_regenerated_with_guard(self, order: str) -> None:
        with inductor_fix.applied(), aliasing_blind_key(), triton_cpu_harness() as oracle:
            steps = run_compiles(BMM, SEQUENCES[order], "cpu", compare=False)
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
            self.assertLogs("inductor_fix.patches.arity_guard", logging.WARNING) as logs,
        ):
            steps = run_compiles(MM, (False,), "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None])
        self.assertEqual(oracle.launches, 0, "an excluded choice reached a launch")
        excluded = counters["inductor_fix"]["excluded"]
        self.assertGreater(excluded, 0)
        messages = [r.getMessage() for r in logs.records if "excluded" in r.getMessage()]
        self.assertEqual(len(messages), excluded)
        self.assertExpectedInline(
            _normalise(messages[0]),
            """inductor_fix: excluded a Triton template choice of 'mm' [<config>] from autotuning: kernel triton_mm(inductor_fix_extra, arg_A, arg_B, out_ptr0) takes 4 parameters, but its benchmark request passes 3 arguments (input 128x128 float32, input 128x128 float32, output 128x128 float32) before the 3 grid values""",  # noqa: E501 (expecttest's inline text)
        )
        self.assertIn(EXTRA_PARAMETER, messages[0])

    def test_no_choice_left_says_so(self) -> None:
        with (
            inductor_fix.applied(),
            extra_kernel_parameter(),
            triton_cpu_harness(max_autotune_gemm_backends="TRITON"),
            self.assertLogs("inductor_fix.patches.arity_guard", logging.WARNING),
        ):
            steps = run_compiles(MM, (False,), "cpu", compare=False)
        self.assertEqual(len(steps), 1)
        self.assertIn("NoValidChoicesError: inductor_fix: no choice is left for 'mm'", steps[0].error)
        self.assertIn("the arity guard excluded all", steps[0].error)


@instantiate_parametrized_tests
class TestGuardAloneOnFlexCPU(TestCase):
    """FlexAttention's captured-buffer crash (pytorch/pytorch#194515) with the guard as the only
    patch: every mismatched choice is timed inf before its launch, and selection says why."""

    def setUp(self) -> None:
        super().setUp()
        if not _flex_lowering_on_triton():
            self.skipTest(f"the harness cannot route flex to Triton on torch {TORCH_RELEASE}")

    @needs_part_of(FLEX_PATCH, *FLEX_OPS)
    @parametrize("op", FLEX_OPS)
    def test_guard_alone_excludes_and_says_why(self, op: str) -> None:
        """Without realignment the guard times every flex choice inf before its launch:
        no TypeError, no launch, and Inductor's NoValidChoicesError names the mismatch."""
        if not is_affected("flex"):
            self.skipTest(f"torch {TORCH_RELEASE} passes flex its kernels' inputs")
        with guard_alone(), triton_cpu_harness() as oracle, \
                self.assertLogs("inductor_fix.patches.arity_guard", logging.WARNING) as logs:
            steps = run_sequence(op, FLEX_ORDER, "cpu", compare=False)
        self.assertEqual(oracle.mismatches, [], "a mismatched flex choice reached a launch")
        self.assertIn("NoValidChoicesError: inductor_fix: no choice is left for 'flex_", steps[0].error)
        self.assertIn("inf at benchmark", steps[0].error)
        excluded = counters["inductor_fix"]["excluded_at_benchmark"]
        self.assertGreater(excluded, 0)
        self.assertEqual(len(logs.records), excluded)
        message = re.sub(r"\[[^\]]*\]", "[<config>]", logs.records[0].getMessage())
        message = re.sub(r"input \d+x\d+x\d+x\d+ float32", "input <q/k/v>", message)
        self.assertIn("takes 12 parameters, but the autotuner's in-process benchmark passes 11 arguments", message)
        self.assertRegex(message, r"kernel triton_flex_\w+\(arg_Q, arg_K, arg_V, .*in_ptr9, in_ptr10, out_ptr0\)")


class TestJobReportNamesItsOwnError(TestCase):
    """Issue 52: a process that died of the guard's own NoValidChoicesError was blamed on the
    CUTLASS patch (whose crash may end in a NoValidChoicesError). The job's report names it the
    guard's own error, and the patch that was off for the crash it stopped: benchmark-realign,
    disabled, in a flex selection."""

    #: The flex workloads stock crashes on, in order: the forward (up to 2.14), the backward (2.15 too).
    CASES = (("flex", FLEX_ORDER), ("flex_backward", "training"))

    def setUp(self) -> None:
        super().setUp()
        if not _flex_lowering_on_triton():
            self.skipTest(f"the harness cannot route flex to Triton on torch {TORCH_RELEASE}")

    @needs_part_of(FLEX_PATCH, *(op for op, _ in CASES))
    def test_a_flex_job_with_realignment_off(self) -> None:
        import json
        import os
        import subprocess
        import tempfile
        from pathlib import Path

        from inductor_fix.patches import by_name
        from inductor_fix.report import attribute, format_summary, summarize

        case = next(((op, order) for op, order in self.CASES if is_affected(op)), None)
        if case is None:
            self.skipTest(f"torch {TORCH_RELEASE} passes every flex lowering its kernels' inputs")
        with tempfile.TemporaryDirectory() as directory:
            job = Path(directory, "job.py")
            job.write_text(crashing_job(*case))
            env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
            ran = subprocess.run([sys.executable, "-m", "inductor_fix", "run", "--report", "job.jsonl", "--",
                                  sys.executable, str(job)], capture_output=True, text=True, timeout=600,
                                 cwd=directory, env={**env, "INDUCTOR_FIX_DISABLE": FLEX_PATCH})
            self.assertEqual(ran.returncode, 1, ran.stderr[-3000:])
            (line,) = map(json.loads, Path(directory, "job.jsonl").read_text().splitlines())
        self.assertEqual(line["exit_error"]["raised_by"], PATCH.name)
        self.assertRegex(line["exit_error"]["selection"], r"^flex_attention")
        found = attribute(line)
        self.assertEqual((found.finding, found.stopped_by), ("own-error", PATCH))
        self.assertEqual((found.cause.finding, found.cause.patches), ("off", (by_name(FLEX_PATCH),)))
        advice = " ".join(format_summary(summarize([line])).split())
        self.assertIn(f"that is inductor_fix's own error, not a stock crash: {PATCH.name} raised it", advice)
        self.assertIn(f"{FLEX_PATCH} was disabled in that process: turn it on", advice)
        self.assertNotIn("cutlass", advice.split("advice:")[1].lower())


class TestErrorsPassedThrough(TestCase):
    """An error raised under the guard's wrappers says the guard only passed the call on (issue 30:
    PyPI triton's `0 active drivers` on a CPU read as the package's fault)."""

    def _generate(self, error: Exception):
        from inductor_fix.patches.arity_guard.fix import guarded_generate

        def generate(template, generate_with_caching=True):
            raise error

        return guarded_generate(generate)

    @unittest.skipIf(sys.version_info < (3, 11), "add_note is Python 3.11+")
    def test_an_error_from_below_gets_a_note_naming_where_it_was_raised(self) -> None:
        with self.assertRaises(RuntimeError) as raised:
            self._generate(RuntimeError("0 active drivers ([]). There should only be one."))(object())
        notes = raised.exception.__notes__
        self.assertEqual(len(notes), 1, notes)
        self.assertRegex(notes[0], r"^inductor_fix: arity-guard passed this call to Inductor's "
                                   r"TritonTemplate.generate unchanged; the error was raised below it, in "
                                   rf"{re.escape(__file__)}:\d+, not by inductor_fix")
        self.assertEqual(str(raised.exception), "0 active drivers ([]). There should only be one.")  # unchanged

    def test_the_wrapper_lines_of_a_traceback_say_the_call_was_passed_on(self) -> None:
        """What a reader sees when Inductor re-raises the error as a new exception without the note."""
        import traceback

        try:  # not assertRaises: it drops the traceback
            self._generate(RuntimeError("0 active drivers"))(object())
        except RuntimeError as error:
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        else:
            self.fail("no error")
        frames = re.findall(r'File "[^"]*/patches/arity_guard/fix\.py", line \d+, in \w+\n\s+(.*)\n', text)
        self.assertEqual(len(frames), 2, text)  # generate_with_arity_guard, and the call it makes
        for frame in frames:
            self.assertRegex(frame, r"# (passed on as given: an error here came from below|Inductor's generate, "
                                    r"arguments unchanged)")

    def test_an_error_of_the_package_itself_gets_no_note(self) -> None:
        """Negative control: the note never clears the package of an error its own code raised."""
        from inductor_fix.patches.arity_guard.fix import guarded_generate
        from inductor_fix.report import ReportError, read

        wrapped = guarded_generate(lambda template, generate_with_caching=True: read("/no/such/report.jsonl"))
        with self.assertRaises(ReportError) as raised:
            wrapped(object())
        self.assertFalse(getattr(raised.exception, "__notes__", None))


@requires_cuda
@instantiate_parametrized_tests
class TestArityGuardGPU(TestCase):
    @parametrize("order", ORDERS, name_fn=_name)
    def test_blind_key_compiles_and_matches_eager(self, order: str) -> None:
        with inductor_fix.applied(), aliasing_blind_key():
            steps = run_compiles(BMM, SEQUENCES[order], "cuda", compare=True)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertGreater(counters["inductor_fix"]["regenerated"], 0)
        for step in steps:
            self.assertLess(step.max_rel_error, MATMUL_TOLERANCE)

    def test_blind_key_optimizer_step(self) -> None:
        with inductor_fix.applied(), aliasing_blind_key():
            steps = optimizer_step("cuda", compare=True)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertGreater(counters["inductor_fix"]["regenerated"], 0)
        self.assertLess(max(s.max_rel_error for s in steps), MATMUL_TOLERANCE)

    @config.patch(max_autotune_gemm_backends="ATEN,TRITON")
    def test_unfixable_mismatch_falls_back_to_aten(self) -> None:
        with inductor_fix.applied(), extra_kernel_parameter(), \
                self.assertLogs("inductor_fix.patches.arity_guard", logging.WARNING):
            steps = run_compiles(MM, (False, True), "cuda", compare=True)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertGreater(counters["inductor_fix"]["excluded"], 0)
        self.assertLess(max(s.max_rel_error for s in steps), MATMUL_TOLERANCE)

    @needs_part_of(FLEX_PATCH, "flex")
    def test_guard_alone_never_crashes_on_flex(self) -> None:
        if not is_affected("flex"):
            self.skipTest(f"torch {TORCH_RELEASE} passes flex its kernels' inputs")
        with guard_alone(), self.assertLogs("inductor_fix.patches.arity_guard", logging.WARNING):
            steps = run_sequence("flex", FLEX_ORDER, "cuda", compare=True)
        self.assertIn("NoValidChoicesError: inductor_fix: no choice is left", steps[0].error)
        self.assertGreater(counters["inductor_fix"]["excluded_at_benchmark"], 0)


if __name__ == "__main__":
    run_tests()
