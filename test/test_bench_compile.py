"""``tools/bench compile`` in its fast form, under the CPU harness: whole compiles, patched
against stock, the workaround and each patch's partial undo, counted side by side.

What it must show wherever stock survives: the fix benchmarks no more choices than stock
(its extra codegen is counted, not hidden), and each undone part (a ``COMPILE_VARIANTS`` entry
of a patch's bench part) costs at least what patched costs."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers import applying, bench

from inductor_fix.patches import PATCHES
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from bench_lib import compile as compile_bench  # noqa: E402


class TestCompileBench(TestCase):
    def test_fast_form(self) -> None:
        fast = compile_bench._fast()
        if not fast:
            self.skipTest("no patch of the table declares a fast compile workload")
        # Every variant but the workaround (a stock compile of its own, the slowest of them); a
        # patch's partial undo only where it applies on this torch (elsewhere there is nothing to undo).
        variants = [v for v in compile_bench.BASE_VARIANTS if v != "workaround"]
        variants += [v for patch, part in compile_bench._bench_parts() if patch in applying()
                     for v in part.compile_variants]
        process, data = bench("compile", "--device", "cpu", "--workloads", fast[0], "--variants", ",".join(variants),
                              "--jobs", "2", timeout=900)
        runs = {run["variant"]: run for run in data["runs"]}
        self.assertEqual(set(runs), set(variants))
        patched, stock = runs["patched"], runs["stock"]
        self.assertIsNone(patched["error"])
        for run in runs.values():
            self.assertGreater(run["generated"], 0, run)
            self.assertGreater(run["benchmarked"], 0, run)
        # No more than stock: what the crash fixes cost (codes kept apart, each autotuned) the
        # patches that only save cost pay back; with none of those in the table (retired before
        # the crash fixes they pay for: tools/retire's copy) nothing promises it.
        if stock["error"] is None and any(not patch.protects for patch in PATCHES):
            self.assertLessEqual(patched["benchmarked"], stock["benchmarked"])
        for variant in set(runs) - set(compile_bench.BASE_VARIANTS):
            self.assertGreaterEqual(runs[variant]["benchmarked"], patched["benchmarked"], variant)
        self.assertIn("| workload | variant | seconds |", process.stdout)
        self.assertIn("patched / stock", process.stdout)

    def test_bad_arguments_are_usage_errors(self) -> None:
        import subprocess

        for args in (["--workloads", "no-such-workload"], ["--variants", "no-such"], ["--jobs", "0"]):
            result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench"), "compile", *args],
                                    capture_output=True, text=True, timeout=120)
            self.assertNotEqual(result.returncode, 0, args)
            self.assertIn("tools/bench compile:", result.stderr + result.stdout, args)


if __name__ == "__main__":
    run_tests()
