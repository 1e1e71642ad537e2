"""The tools' own logic, without torch builds or GPUs: tools/run_matrix's judgement of a
release, and how tools/bench compile spends its budget and resumes."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import types
from pathlib import Path
from unittest import mock

from packaging.version import Version
from torch.testing._internal.common_utils import TestCase, run_tests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench_lib import compiles, report  # noqa: E402
from matrix_lib import expectations as ex  # noqa: E402


class TestMatrixExpectations(TestCase):
    def test_stock_expected_to_fail_on_affected_releases_only(self) -> None:
        versions = ("2.7.1", "2.8.0", "2.9.0", "2.14.1+cu130", "2.15.0", "2.15.0.dev20261101", "2.16.0.dev20261201+cu130")
        for phase, older in (("stock", "PASS"), ("flex-stock", "FAIL")):  # 2.8 ships the codegen cache off
            table = {v: ex.expected(phase, v) for v in versions}
            self.assertEqual(
                table,
                {"2.7.1": older, "2.8.0": older, "2.9.0": "FAIL", "2.14.1+cu130": "FAIL", "2.15.0": "PASS",
                 "2.15.0.dev20261101": "PASS", "2.16.0.dev20261201+cu130": "PASS"},
                phase,
            )
        modes = [p for p in ex.PHASES if ex.mode_of(p) != "stock"]
        self.assertEqual({ex.expected(phase, "2.12.0") for phase in modes}, {"PASS"})
        # 2.7's flex bug is there, but its benchmark function is a closure the package cannot wrap.
        self.assertEqual(ex.expected("flex-patched", "2.7.1"), "FAIL")
        self.assertEqual(ex.expected("patched", "2.7.1"), "PASS")
        self.assertEqual(ex.fix_states("2.7.1"), ("unsupported",))
        self.assertEqual(ex.fix_states("2.14.1+cu130"), ("applied", "not-needed"))

    def test_codegen_cache_variant_makes_2_8_affected_for_matmuls(self) -> None:
        self.assertEqual(ex.split_spec("2.8.0@codegen-cache"), ("2.8.0", "codegen-cache"))
        self.assertEqual(ex.split_spec("https://host/torch-2.8.0-cp311.whl"), ("https://host/torch-2.8.0-cp311.whl", None))
        self.assertRaisesRegex(ValueError, "unknown variant 'cache'", ex.split_spec, "2.8.0@cache")
        for spec in ("@codegen-cache", "2.8.0@codegen-cache@codegen-cache"):
            self.assertRaisesRegex(ValueError, "at most one @variant", ex.split_spec, spec)
        self.assertEqual(ex.expected("stock", "2.8.0", "codegen-cache"), "FAIL")
        self.assertEqual(ex.expected("stock", "2.7.1", "codegen-cache"), "PASS")  # no cache to switch on
        self.assertEqual(ex.expected("flex-stock", "2.8.0", "codegen-cache"), "FAIL")  # the variant is the cache's

    def test_only_exit_0_and_1_are_results(self) -> None:
        # pytest exit 5 (no tests collected) must never count as a pass or as the expected failure.
        self.assertEqual([ex.outcome(status) for status in (0, 1, 2, 4, 5)], ["PASS", "FAIL", "ERROR", "ERROR", "ERROR"])

    def test_verdict(self) -> None:
        def entry(stock: str, patched: str, diff: str | None) -> dict:
            outcomes = {"stock": (stock, "FAIL"), "patched": (patched, "PASS"), "diff": (diff, "PASS")}
            return {"phases": {phase: {"outcome": outcomes[ex.mode_of(phase)][0],
                                       "expected": outcomes[ex.mode_of(phase)][1]}
                               for phase in ex.PHASES if outcomes[ex.mode_of(phase)][0]}}

        self.assertEqual(ex.verdict(entry("FAIL", "PASS", "PASS")), "ok")
        self.assertEqual(ex.verdict(entry("FAIL", "PASS", "n/a")), "ok")
        self.assertEqual(ex.verdict(entry("PASS", "PASS", "PASS")), "MISMATCH")  # stock did not show the bug
        self.assertEqual(ex.verdict(entry("FAIL", "ERROR", "PASS")), "ERROR")
        self.assertEqual(ex.verdict(entry("FAIL", "PASS", None)), "incomplete")
        half = entry("FAIL", "PASS", "PASS")
        del half["phases"]["flex-diff"]
        self.assertEqual(ex.verdict(half), "incomplete")  # the flex suite counts too


class FakeMachine:
    """Stands in for the benchmark's child processes and the clock: a max-autotune run
    takes 100 s, a default one 20 s, as on the H200; a run longer than its timeout is cut."""

    def __init__(self, torch: str = "2.11.0+cu130") -> None:
        self.now, self.torch = 0.0, torch

    def monotonic(self) -> float:
        return self.now

    def run_cell(self, script, part, variant, device, timeout):
        seconds = 20.0 if variant == "default" else 100.0
        if seconds > timeout:
            self.now += timeout
            return {"error": f"cut by the budget after {timeout:.0f} s", "budget_cut": True, "wall_s": timeout}
        self.now += seconds
        return {"error": None, "compile_s": {"f": seconds - 10}, "hits": {"f": 8}, "misses": {"f": 4},
                "runtime_ms": {"f": 0.1}, "torch": self.torch, "triton": "3.6.0", "device_name": "NVIDIA H200",
                "wall_s": seconds}

    def bench(self, out: Path, budget: float, **options) -> dict:
        with mock.patch.object(compiles, "_run_cell", self.run_cell), \
                mock.patch.object(compiles, "time", types.SimpleNamespace(monotonic=self.monotonic)):
            return compiles.run(Path("tools/bench"), ["a"], "cuda", 3, budget, out, "tools/bench compile", **options)


class TestBenchBudgetAndResume(TestCase):
    def setUp(self) -> None:
        super().setUp()
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.out = Path(directory.name, "a.json")

    def test_repetitions_add_up_over_commands(self) -> None:
        machine = FakeMachine()
        # 20 s warm-up, then 320 s a repetition: one fits in 500 s, a second would not (with the margin).
        self.assertEqual(machine.bench(self.out, 500)["complete_reps"], 1)
        self.assertEqual(machine.bench(self.out, 500, resume=True)["complete_reps"], 2)
        data = machine.bench(self.out, 500, resume=True)
        self.assertEqual(data["complete_reps"], 3)
        self.assertEqual(len(data["runs"]), 12)
        # Every repetition was measured by one command, so its runs pair side by side.
        self.assertEqual({r["rep"]: r["command_index"] for r in data["runs"]}, {0: 0, 1: 1, 2: 2})
        # Each command records where it ran (cores, GPU): the table says so.
        self.assertEqual(len(data["hosts"]), 3)
        self.assertEqual(data["hosts"][0]["cpus"], len(os.sched_getaffinity(0)))
        self.assertEqual(machine.bench(self.out, 500, resume=True)["complete_reps"], 3)  # nothing left to do

    def test_incomplete_repetition_is_measured_again_whole(self) -> None:
        machine = FakeMachine()
        data = machine.bench(self.out, 300)  # two runs fit, the third would be cut: stop
        self.assertEqual((data["complete_reps"], len(data["runs"])), (0, 2))
        self.assertFalse(any(compiles.budget_cut(r) for r in data["runs"]))
        data = machine.bench(self.out, 500, resume=True)
        self.assertEqual(data["complete_reps"], 1)
        self.assertEqual({r["command_index"] for r in data["runs"]}, {1})

    def test_refuses_to_mix_or_overwrite(self) -> None:
        FakeMachine().bench(self.out, 500)
        with self.assertRaisesRegex(SystemExit, "--resume adds"):
            FakeMachine().bench(self.out, 500)
        with self.assertRaisesRegex(SystemExit, "was measured with"):
            FakeMachine(torch="2.12.0+cu130").bench(self.out, 500, resume=True)
        self.out.write_text("{")
        with self.assertRaisesRegex(SystemExit, "cannot read"):
            FakeMachine().bench(self.out, 500, resume=True)
        self.assertEqual(FakeMachine().bench(self.out, 500, fresh=True)["complete_reps"], 1)
        self.assertEqual(json.loads(self.out.read_text())["commands"], ["tools/bench compile"])


class TestBenchVerdicts(TestCase):
    """A goal is met only if every paired repetition meets it, not just the median."""

    @staticmethod
    def _compiled(patched_s: list[float], stock_s: list[float], patched_misses: int = 40) -> list[dict]:
        def run(variant: str, rep: int, seconds: float, misses: int) -> dict:
            return {"part": "a", "variant": variant, "rep": rep, "error": None, "compile_s": {"f": seconds},
                    "hits": {"f": 80}, "misses": {"f": misses}, "runtime_ms": {"f": 1.0}}

        runs = [run("patched", rep, s, patched_misses) for rep, s in enumerate(patched_s)]
        runs += [run("stock", rep, s, 40) for rep, s in enumerate(stock_s)]
        return [{"device": "cuda", "runs": runs}]

    def _verdict(self, compiled: list[dict]) -> object:
        return next(r["met"] for r in report.ratios(compiled) if r["label"] == "(a) compile patched / stock")

    def test_one_pair_over_the_goal_fails_it(self) -> None:
        # Median 1.0, but the third pair is 1.10 > 1.02.
        self.assertEqual(self._verdict(self._compiled([100.0, 100.0, 110.0], [100.0, 100.0, 100.0])), False)
        self.assertEqual(self._verdict(self._compiled([100.0, 101.0, 99.0], [100.0, 100.0, 100.0])), True)

    def test_unequal_misses_fail_it(self) -> None:
        self.assertEqual(self._verdict(self._compiled([100.0] * 3, [100.0] * 3, patched_misses=41)), False)

    def test_pooled_medians_reported_beside_the_paired_ratio(self) -> None:
        row = next(r for r in report.ratios(self._compiled([90.0, 120.0, 121.0], [100.0, 130.0, 110.0]))
                   if r["label"] == "(a) compile patched / stock")
        self.assertAlmostEqual(row["pooled"], 120.0 / 110.0)
        self.assertEqual((row["pairs"], row["met"]), (3, False))  # 121/110 = 1.10


class TestMatrixPhaseRunner(TestCase):
    """tools/run_matrix runs each phase through the package's child runner: progress is said
    while the suite runs, and a phase past its timeout is ended (process group and all)."""

    def test_progress_then_timeout(self) -> None:
        from matrix_lib import phases

        said: list[str] = []
        env = types.SimpleNamespace(python=sys.executable)
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory, "phase.log")
            status, seconds = phases.run_pytest(env, phases.pytest_arguments("stock"), log, dict(os.environ),
                                                timeout=4, every=1, say=said.append)
        self.assertIsNone(status)
        self.assertGreaterEqual(seconds, 4)
        self.assertLess(seconds, 30)
        self.assertTrue(said and all(" elapsed, " in line for line in said), said)


class TestBenchTable(TestCase):
    def test_table_command_prints_the_docs_tables(self) -> None:
        import subprocess

        root = Path(__file__).resolve().parents[1]
        bench = root / "docs" / "bench"
        process = subprocess.run([sys.executable, str(root / "tools" / "bench"), "table", "--in",
                                  str(bench / "cpu.json"), str(bench / "a.json"), str(bench / "b.json")],
                                 capture_output=True, text=True, cwd=root, timeout=120)
        self.assertEqual(process.returncode, 0, process.stderr)
        _, compiled = report.load([bench / "a.json", bench / "b.json"])
        self.assertIn(report.compile_markdown(compiled), process.stdout)
        self.assertIn(report.compile_markdown(compiled), (root / "docs" / "benchmarks.md").read_text())


class TestBenchFlex(TestCase):
    """tools/bench seam runs (fast form, CPU harness) and docs/benchmarks.md's FlexAttention figures
    are the committed results' (tools/bench flex needs CUDA: its renderer is checked)."""

    def test_seam_fast_form(self) -> None:
        import subprocess

        root = Path(__file__).resolve().parents[1]
        with tempfile.TemporaryDirectory() as directory:
            out = Path(directory, "seam.json")
            process = subprocess.run([sys.executable, str(root / "tools" / "bench"), "seam", "--rounds", "2",
                                      "--out", str(out)], capture_output=True, text=True, cwd=root, timeout=900)
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr[-3000:])
            data = json.loads(out.read_text())
        self.assertGreater(data["choices"], 0)
        self.assertIn("| goals met in every selection | yes |", process.stdout)

    def test_readme_flex_figures_match_results(self) -> None:
        import statistics

        from bench_lib import flex

        root = Path(__file__).resolve().parents[1]
        readme = " ".join((root / "docs" / "benchmarks.md").read_text().split())
        seam = json.loads((root / "docs" / "bench" / "seam-cuda.json").read_text())
        self.assertIn(f"{seam['per_choice_us']['median']:.2f} µs per choice on the H200", readme)
        compiled = json.loads((root / "docs" / "bench" / "flex.json").read_text())
        self.assertTrue(all(not run.get("error") for run in compiled["runs"]))
        self.assertIn("| flex | patched", flex.compile_markdown(compiled))
        for workload in flex.WORKLOADS:
            patched, default = (
                statistics.median(r["compile_s"] for r in compiled["runs"]
                                  if r["workload"] == workload and r["variant"] == variant)
                for variant in ("patched", "default")
            )
            self.assertIn(f"{patched:.1f} s vs {default:.1f} s", readme)


def _check_patches_module() -> types.ModuleType:
    """tools/check_patches is a script without a .py ending: load it as a module."""
    import importlib.machinery
    import importlib.util

    path = str(Path(__file__).resolve().parents[1] / "tools" / "check_patches")
    loader = importlib.machinery.SourceFileLoader("check_patches", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("check_patches", loader))
    loader.exec_module(module)
    return module


class TestCheckPatchesFastForm(TestCase):
    """The patch checker's steps that need no second torch, on the torch under test, so a
    rename in the package can never silently break the documented upstream-diff workflow."""

    def test_key_grouping_step(self) -> None:
        import subprocess

        check_patches = _check_patches_module()
        root = Path(__file__).resolve().parents[1]
        process = subprocess.run([sys.executable, "-c", check_patches.KEY_GROUPS, "monkeypatch"], cwd=root,
                                 capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root),
                                                                      "INDUCTOR_FIX_DISABLE": ""})
        self.assertEqual(process.returncode, 0, process.stderr[-2000:])
        result = json.loads(process.stdout.strip().splitlines()[-1])
        # Keys are equal exactly when the aliasing patterns are: one group per pattern, both namings.
        self.assertEqual(result["groups"], {p: [i, i] for i, p in enumerate(["000", "001", "010", "011", "012"])})
        self.assertIn(result["cache_key_patch"], ("applied", "not-needed"))

    def test_key_grouping_compared_for_the_cache_key_patch(self) -> None:
        check_patches = _check_patches_module()
        patches = {p.name[:4]: p for p in (Path(__file__).resolve().parents[1] / "patches").glob("000*.patch")}
        self.assertEqual(
            {(number, release): check_patches.compares_keys(patches[number], release)
             for number, release in (("0001", "2.14.1"), ("0001", "2.9.1"), ("0002", "2.15.0"), ("0003", "2.14.1"),
                                     ("0003", "2.15.0"))},
            {("0001", "2.14.1"): True, ("0001", "2.9.1"): True, ("0002", "2.15.0"): True, ("0003", "2.14.1"): False,
             ("0003", "2.15.0"): True},
        )
        self.assertTrue(check_patches.compares_keys(Path("0009-unknown.patch"), "2.14.1"))

    def test_apply_only_against_this_torch(self) -> None:
        import base64
        import hashlib
        import subprocess
        import zipfile

        import torch
        from inductor_fix._patches import CACHE_KEY

        if not CACHE_KEY.is_affected(torch.__version__):
            self.skipTest(f"patches/0001 is for affected releases, not torch {torch.__version__}")
        root = Path(__file__).resolve().parents[1]
        release = Version(torch.__version__).base_version
        source = Path(torch.__file__).parent / "_inductor" / "select_algorithm.py"
        data = source.read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        with tempfile.TemporaryDirectory() as directory:
            wheel = Path(directory, f"torch-{release}-cp3-none-any.whl")
            with zipfile.ZipFile(wheel, "w") as archive:
                archive.writestr("torch/_inductor/select_algorithm.py", data)
                archive.writestr(f"torch-{release}.dist-info/RECORD",
                                 f"torch/_inductor/select_algorithm.py,sha256={digest},{len(data)}\n")
            patch = next((root / "patches").glob("0001-*.patch"))
            process = subprocess.run([sys.executable, str(root / "tools" / "check_patches"), release, "--apply-only",
                                      "--wheel", str(wheel), "--patch", str(patch)],
                                     capture_output=True, text=True, cwd=root)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertRegex(process.stdout, r"applies: (clean|offset)")
        self.assertIn(f"OK: torch {release}, 0 failed check(s)", process.stdout)


class TestNightly(TestCase):
    """A development build is classified and expected correctly, and the nightly workflow's
    commands are ones the tools accept - all without downloading a nightly."""

    ROOT = Path(__file__).resolve().parents[1]

    def test_dev_build_classified_and_expected(self) -> None:
        import torchenv

        from inductor_fix.testing import drift

        version = drift.NIGHTLY  # 2.16.0.devYYYYMMDD+cu130
        self.assertEqual({phase: ex.expected(phase, version) for phase in ex.PHASES},
                         dict.fromkeys(ex.PHASES, "PASS"))  # not affected: stock must pass
        wheel = (f"https://download.pytorch.org/whl/nightly/cu130/torch-{version.replace('+', '%2B')}"
                 "-cp311-cp311-manylinux_2_28_x86_64.whl")
        self.assertEqual(torchenv.spec_release(wheel), "2.16.0")
        self.assertEqual(str(ex.release_of(version)), "2.16.0")
        # The package on it (the installed torch renamed, its make_key keying aliasing as upstream's does).
        result = drift.run("upstream-key-fix")
        self.assertEqual({p["name"]: p["state"] for p in result["patches"]},
                         {"cache-key": "not-needed", "arity-guard": "applied", "benchmark-realign": "applied"}, result)
        entry = {"fix_state": result["state"],
                 "phases": {phase: {"outcome": "PASS", "expected": ex.expected(phase, version)} for phase in ex.PHASES}}
        self.assertEqual(ex.verdict(entry), "ok")
        self.assertEqual(ex.verdict({**entry, "fix_state": "unsupported"}), "UNPROTECTED")  # fails loudly

    def test_workflow_commands_are_accepted(self) -> None:
        import re
        import subprocess

        workflow = (self.ROOT / ".github" / "workflows" / "nightly.yml").read_text()
        self.assertRegex(workflow, r"(?m)^  schedule:\n    - cron: ")
        (flags,) = re.findall(r'tools/run_matrix "\$WHEEL" (.*?) \|', workflow.replace("\\\n", " "))
        flags = [flag.strip('"') for flag in flags.split()]
        with tempfile.TemporaryDirectory() as directory:
            arguments = [a.replace("$INDEX_URL", "https://example.invalid/nightly") for a in flags]
            arguments[arguments.index("--json") + 1] = str(Path(directory, "results.json"))
            Path(directory, "results.json").write_text('{"releases": []}')
            process = subprocess.run([sys.executable, str(self.ROOT / "tools" / "run_matrix"), *arguments,
                                      "--report-md"], capture_output=True, text=True, cwd=self.ROOT, timeout=120)
        self.assertEqual(process.returncode, 0, process.stderr)
        self.assertIn("--profile nightly", " ".join(flags))
        self.assertIn('tools/record_fingerprints.py --compare "$WHEEL"', workflow)
        # Steps pipe into tee: only bash -eo pipefail (shell: bash) lets a failure fail the job.
        self.assertRegex(workflow, r"(?m)^defaults:\n  run:\n    shell: bash\b")

    def test_fingerprint_compare_says_what_moved(self) -> None:
        import subprocess
        import zipfile

        import torch

        release = Version(torch.__version__).base_version
        source = (Path(torch.__file__).parent / "_inductor" / "select_algorithm.py").read_bytes()
        with tempfile.TemporaryDirectory() as directory:
            wheel = Path(directory, "torch-2.16.0.dev20261201+cpu-cp311-cp311-linux_x86_64.whl")
            with zipfile.ZipFile(wheel, "w") as archive:
                archive.writestr("torch/_inductor/select_algorithm.py", source)

            def compare(*extra: str) -> subprocess.CompletedProcess:
                return subprocess.run([sys.executable, str(self.ROOT / "tools" / "record_fingerprints.py"),
                                       "--compare", str(wheel), *extra], capture_output=True, text=True, timeout=120)

            from inductor_fix._fingerprints import RECORDED

            if release in RECORDED:  # the installed torch's own source: nothing moved
                same = compare("--against", release)
                self.assertEqual(same.returncode, 0, same.stdout + same.stderr)
                self.assertNotIn("MOVED", same.stdout)
            older = min(RECORDED, key=lambda r: [int(x) for x in r.split(".")])
            moved = compare("--against", older)
        self.assertEqual(moved.returncode, 1, moved.stdout + moved.stderr)
        self.assertRegex(moved.stdout, r"(MOVED|GONE)")
        missing = subprocess.run([sys.executable, str(self.ROOT / "tools" / "record_fingerprints.py"), "--compare",
                                  "/nonexistent/torch-2.16.0.whl"], capture_output=True, text=True, timeout=60)
        self.assertEqual((missing.returncode, missing.stdout), (2, ""))
        self.assertIn("no such file", missing.stderr)


if __name__ == "__main__":
    run_tests()
