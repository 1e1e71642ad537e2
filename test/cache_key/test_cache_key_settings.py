"""The patch holds under the ways people actually run torch.compile, and fails safe elsewhere.

Each setting runs an aliasing sequence twice: stock (the negative control: it
must crash on an affected release wherever the codegen cache is in play) and
patched (it must not). CPU harness where it reaches the path; the settings it
cannot reach (benchmarks in a child process, parallel compile workers) run on a GPU.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import tempfile

from helpers import MATMUL_TOLERANCE, is_affected, report, requires_cuda, run_python

import inductor_fix
import torch
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.table import run_sequence
from inductor_fix.check.workloads import run_compiles
from inductor_fix.check.operations import operation as op
from torch._inductor.test_case import TestCase, run_tests
from torch._inductor.utils import fresh_inductor_cache
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

ALIAS_FIRST = (True, False, True)


def _errors(steps) -> list:
    return [step.error for step in steps]


@instantiate_parametrized_tests
class TestSettingsCPU(TestCase):
    """Settings the CPU harness reaches."""

    def _both(self, run) -> None:
        with inductor_fix.removed(), triton_cpu_harness():
            stock = run()
        with inductor_fix.applied(), triton_cpu_harness():
            patched = run()
        self.assertEqual(_errors(patched), [None] * len(ALIAS_FIRST))
        if is_affected("bmm"):
            self.assertRegex(stock[-1].error or "", r"TypeError: .*launch", "negative control: stock must crash")

    def test_dynamic_shapes(self) -> None:
        self._both(lambda: run_compiles(op("bmm"), ALIAS_FIRST, "cpu", compare=False,
                                        compile_options={"dynamic": True}))

    @parametrize("dtype", ["float16", "bfloat16"])
    def test_half_precision(self, dtype: str) -> None:
        self._both(lambda: run_compiles(op("mm"), ALIAS_FIRST, "cpu", compare=False, dtype=getattr(torch, dtype)))

    def test_fresh_inductor_cache(self) -> None:
        def run():
            with fresh_inductor_cache():
                return run_compiles(op("addmm"), ALIAS_FIRST, "cpu", compare=False)

        self._both(run)

    def test_dynamo_reset_between_compiles(self) -> None:
        def run():
            steps = []
            for aliased in ALIAS_FIRST:
                torch._dynamo.reset()
                steps += run_compiles(op("baddbmm"), (aliased,), "cpu", compare=False)
                if steps[-1].error:
                    break
            return steps

        self._both(run)

    def test_force_disable_caches_environment(self) -> None:
        """TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 starts every compile with a fresh codegen
        cache: nothing is replayed, so stock cannot crash either (zero hits is the control)."""
        code = """
            import json, inductor_fix, torch
            from inductor_fix.check.harness import triton_cpu_harness
            from inductor_fix.check.workloads import run_compiles
            from inductor_fix.check.operations import operation as op
            from quick_autotuning import quick_cpu_autotuning
            with quick_cpu_autotuning(), triton_cpu_harness():
                steps = run_compiles(op("bmm"), (True, False, True), "cpu", compare=False)
            print(json.dumps([[s.error, s.cache_hits] for s in steps]))
        """
        for disable in ("1", "0"):
            result = run_python(code, env={"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "INDUCTOR_FIX_DISABLE": disable})
            self.assertEqual(result.returncode, 0, result.stderr[-2000:])
            self.assertEqual(json.loads(result.stdout.strip().splitlines()[-1]), [[None, 0]] * 3)


@requires_cuda
class TestSettingsGPU(TestCase):
    """Settings the CPU harness cannot reach: the benchmark or the compile leaves this process."""

    def _patched_and_stock(self, env: dict[str, str]) -> None:
        code = """
            import json, inductor_fix
            from observe import observe_autotuning
            from inductor_fix.check.table import run_sequence
            from quick_autotuning import autotuning
            with autotuning("cuda"), observe_autotuning() as seen:
                steps = run_sequence("bmm", "alias-first", "cuda", compare=True)
            print(json.dumps({"errors": [s.error for s in steps], "dropped": len(seen.dropped),
                              "mismatched": len(seen.arity_mismatches),
                              "max_rel_error": max([s.max_rel_error or 0.0 for s in steps])}))
        """
        def run(disable: str) -> subprocess.CompletedProcess:
            # An Inductor cache of its own each: stock's benchmark subprocess times the replayed
            # one-pointer code inf and Inductor's on-disk autotune cache keeps that under the layouts'
            # key, where a later run of the same layouts reads it (seen on an H200: patched then
            # timed all 40 choices of both compiles inf, after stock's 20).
            with tempfile.TemporaryDirectory(prefix="inductor_fix_settings_") as cache:
                return run_python(code, env={**env, "INDUCTOR_FIX_DISABLE": disable, "TORCHINDUCTOR_CACHE_DIR": cache},
                                  timeout=900)

        outcome = {}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # side by side, as check runs them
            for mode, result in zip(("stock", "patched"), pool.map(run, ("1", "0"))):
                self.assertEqual(result.returncode, 0, result.stderr[-2000:])
                outcome[mode] = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"\n{env}: {outcome}")
        report(f"settings/{env}", stock=outcome["stock"]["errors"][-1], patched=outcome["patched"]["errors"][-1],
               max_rel_error=outcome["patched"]["max_rel_error"], dropped_stock=outcome["stock"]["dropped"],
               dropped_patched=outcome["patched"]["dropped"])
        patched, stock = outcome["patched"], outcome["stock"]
        self.assertEqual(patched["errors"], [None, None])
        self.assertLess(patched["max_rel_error"], MATMUL_TOLERANCE)
        self.assertEqual(patched["mismatched"], 0)
        self.assertLessEqual(patched["dropped"], stock["dropped"])
        if is_affected("bmm"):
            # A benchmark subprocess turns the launch TypeError into a choice timed inf, so
            # stock may not crash; the choices built for the wrong arity show it either way.
            self.assertGreater(stock["mismatched"], 0, f"negative control: {stock}")

    def test_autotune_in_subprocess(self) -> None:
        self._patched_and_stock({"TORCHINDUCTOR_AUTOTUNE_IN_SUBPROC": "1"})

    def test_parallel_compile_workers(self) -> None:
        self._patched_and_stock({"TORCHINDUCTOR_COMPILE_THREADS": "4"})

    def test_dynamic_and_half_precision(self) -> None:
        with inductor_fix.applied():
            for dtype in (torch.float16, torch.bfloat16):
                steps = run_sequence("bmm", "alias-first", "cuda", compare=True, dtype=dtype)
                self.assertEqual(_errors(steps), [None, None])
            steps = run_sequence("mm", "distinct-first", "cuda", compare=True, compile_options={"dynamic": True})
            self.assertEqual(_errors(steps), [None, None])


if __name__ == "__main__":
    run_tests()
