"""The tools' own logic, without torch builds or GPUs, each in a fast form: tools/run_matrix's
suites and judgement of a release, tools/check_patches' apply check and suite choice,
tools/bench's measurements, tools/record_fingerprints.py, the nightly workflow's commands."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types
from pathlib import Path
from typing import Any
from unittest import mock

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from torch.testing._internal.common_utils import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from matrix_lib import expectations as ex  # noqa: E402

from helpers import bench  # noqa: E402

from inductor_fix.patches import PATCHES  # noqa: E402


class TestMatrixExpectations(TestCase):
    def test_suites_come_from_the_patch_folders(self) -> None:
        for suite in ex.SUITES.values():
            self.assertIn(suite.patch, PATCHES)
            self.assertTrue(suite.arguments[0].startswith(f"test/{suite.patch.folder}/"), suite)
        self.assertEqual(ex.mode_of(f"{next(iter(ex.SUITES))}:diff"), "diff")
        self.assertEqual({s.patch.name for s in ex.SUITES.values()},
                         {p.name for p in PATCHES if list((ROOT / "test" / p.folder).glob("test_*properties.py"))})
        for name, suite in ex.SUITES.items():  # a file with Inductor's codegen-cache check gives a second suite
            self.assertEqual(name.endswith(".test_cache"), suite.modes == ("stock", "patched"), name)

    def test_expectations_follow_the_suites(self) -> None:
        for name, suite in ex.SUITES.items():
            for version in ("2.7.1", "2.8.0", "2.9.0", "2.13.0", "2.14.1+cu130", "2.15.0", "2.16.0.dev20261201+cu130"):
                release = ex.release_of(version)
                stock_fails = release in SpecifierSet(suite.stock_fails)
                self.assertEqual(ex.expected(f"{name}:stock", version), "FAIL" if stock_fails else "PASS",
                                 (name, version))
                patched_passes = not stock_fails or release in SpecifierSet(suite.patched_passes)
                self.assertEqual(ex.expected(f"{name}:patched", version), "PASS" if patched_passes else "FAIL")
        # Where a patch's bug is but the patch does not fit it (Patch.supported), unsupported is the truth.
        for version in ("2.7.1", "2.14.1+cu130"):
            misfit = any(p.is_affected(version) and not p.fits(version) for p in PATCHES)
            self.assertEqual(ex.fix_states(version), ("unsupported",) if misfit else ("applied", "not-needed"))

    def test_suite_constants_are_read_without_importing(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            folder = Path(directory, "test", PATCHES[0].folder)
            folder.mkdir(parents=True)
            (folder / "test_x_properties.py").write_text(
                'raise SystemExit("imported")\nSTOCK_FAILS = ">=2.9.0"\nVARIANTS = {"codegen-cache": ">=2.8.0"}\n'
                "@pytest.mark.codegen_cache_check\nclass TestCheck: pass\n")
            suites = ex.discover(Path(directory))
            self.assertEqual(set(suites), {"x", "x.test_cache"})
            self.assertEqual((suites["x"].stock_fails, suites["x"].variants), (">=2.9.0", {"codegen-cache": ">=2.8.0"}))
            self.assertEqual(suites["x.test_cache"].modes, ("stock", "patched"))
            # Selected by the markers pytest.ini registers, never by test names.
            self.assertEqual(suites["x"].arguments[1:], ("-m", "not negative_control and not codegen_cache_check"))
            self.assertEqual(suites["x.test_cache"].arguments[1:],
                             ("-m", "codegen_cache_check and not negative_control"))
            registered = (ROOT / "pytest.ini").read_text()
            self.assertIn("    negative_control: ", registered)
            self.assertIn("    codegen_cache_check: ", registered)
            # A constant the matrix cannot read is an error, not a silent default.
            for text, error in (("STOCK_FAILS = AFFECTED\n", "must be a literal"), ('STOCK_FAILS = ">=2.9"  + ""\n',
                                "must be a literal"), ("PATCHED_PASSES = 2.8\n", "must be a str"),
                                ('STOCK_FAILS = ">=two"\n', "Invalid specifier")):
                with self.subTest(text=text):
                    (folder / "test_x_properties.py").write_text(text)
                    self.assertRaisesRegex(ValueError, error, ex.discover, Path(directory))

    def test_codegen_cache_variant(self) -> None:
        suite = next((s for s in ex.SUITES.values() if "codegen-cache" in s.variants), None)
        if suite is None:
            self.skipTest("no suite has a codegen-cache variant")
        self.assertEqual(ex.split_spec("2.8.0@codegen-cache"), ("2.8.0", "codegen-cache"))
        wheel = "https://host/torch-2.8.0-cp311.whl"
        self.assertEqual(ex.split_spec(wheel), (wheel, None))
        self.assertRaisesRegex(ValueError, "unknown variant 'cache'", ex.split_spec, "2.8.0@cache")
        for spec in ("@codegen-cache", "2.8.0@codegen-cache@codegen-cache"):
            self.assertRaisesRegex(ValueError, "at most one @variant", ex.split_spec, spec)
        self.assertEqual(ex.expected(f"{suite.name}:stock", "2.8.0"), "PASS")  # the cache ships off
        self.assertEqual(ex.expected(f"{suite.name}:stock", "2.8.0", "codegen-cache"), "FAIL")
        self.assertEqual(ex.expected(f"{suite.name}:stock", "2.7.1", "codegen-cache"), "PASS")  # no cache to switch on

    def test_only_exit_0_and_1_are_results(self) -> None:
        # pytest exit 5 (no tests collected) must never count as a pass or as the expected failure.
        self.assertEqual([ex.outcome(status) for status in (0, 1, 2, 4, 5)],
                         ["PASS", "FAIL", "ERROR", "ERROR", "ERROR"])

    def test_all_skipped_is_not_applicable(self) -> None:
        from matrix_lib import phases

        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory, "phase.log")
            log.write_text("sss\nSKIPPED [3] test/x.py:9: torch 2.7.1 has no TritonTemplate.test_cache\n"
                           "3 skipped in 1.0s\n")
            result = phases.summarize(log, 0)
        self.assertEqual(result["outcome"], "n/a")
        self.assertIn("has no TritonTemplate.test_cache", result["summary"])

    def test_verdict(self) -> None:
        def entry(outcome: str | None) -> dict:
            return {"phases": {phase: {"outcome": outcome, "expected": "PASS"} for phase in ex.PHASES if outcome}}

        self.assertEqual(ex.verdict(entry("PASS")), "ok")
        self.assertEqual(ex.verdict(entry("FAIL")), "MISMATCH")
        self.assertEqual(ex.verdict(entry("ERROR")), "ERROR")
        self.assertEqual(ex.verdict(entry(None)), "incomplete")
        self.assertEqual(ex.verdict({**entry("PASS"), "fix_state": "unsupported", "torch": "2.14.1"}), "UNPROTECTED")


class TestFullSuitePhase(TestCase):
    """The matrix's full-suite phase is README's test command, must pass everywhere, and shows its
    counts; a release that has not run it keeps the verdict of its property suites."""

    def test_it_is_readmes_command(self) -> None:
        from matrix_lib import phases

        self.assertIn(f"```bash\npython -m pip install \".[test]\" && {ex.FULL_SUITE_COMMAND}\n```",
                      (ROOT / "README.md").read_text())
        self.assertEqual(phases.pytest_arguments(ex.FULL_SUITE), ex.FULL_SUITE_ARGUMENTS)
        self.assertEqual(list(ex.phases()), [*ex.PHASES, ex.FULL_SUITE, ex.CHECK])
        self.assertEqual(list(ex.phases(full_suite=False, check=False)), list(ex.PHASES))
        for version in ("2.7.1", "2.14.1+cu130", "2.15.0", "2.16.0.dev20261201+cu130"):
            self.assertEqual(ex.expected(ex.FULL_SUITE, version), "PASS")
            # check passes wherever the fix can protect (a patch unfit for an affected release: it cannot).
            self.assertEqual(ex.expected(ex.CHECK, version),
                             "PASS" if ex.fix_states(version) == ex.PROTECTED else "FAIL", version)

    def test_counts_and_verdict(self) -> None:
        from matrix_lib import phases, results

        self.assertEqual(phases.counts("33 failed, 318 passed, 68 skipped, 2 errors in 699.12s (0:11:39)"),
                         {"passed": 318, "failed": 33, "skipped": 68, "error": 2})
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory, "full.log")
            log.write_text("..s..F [100%]\nFAILED test/test_api.py::T::test_x - AssertionError\n"
                           "==== 1 failed, 4 passed, 1 skipped in 9.00s ====\nW1205 a process's warning at exit\n")
            failed = phases.summarize(log, 1)
        self.assertEqual(failed["summary"], "1 failed, 4 passed, 1 skipped in 9.00s")
        self.assertEqual((failed["outcome"], failed["failed"], failed["counts"]),
                         ("FAIL", ["test/test_api.py::T::test_x"], {"passed": 4, "failed": 1, "skipped": 1}))
        suites = {phase: {"outcome": "PASS", "expected": "PASS"} for phase in ex.PHASES}
        entry = {"spec": "2.15.0", "release": "2.15.0", "phases": dict(suites)}
        self.assertEqual(ex.verdict(entry), "ok")  # not run: judged by its property suites
        self.assertIn("| not run |", results.markdown({"releases": [entry]}))
        entry["phases"][ex.FULL_SUITE] = {**failed, "expected": "PASS", "seconds": 600}
        self.assertEqual(ex.verdict(entry), "MISMATCH")
        self.assertIn("FAIL (4 passed, 1 failed, 1 skipped; 10 min) (expected PASS)",
                      results.table({"releases": [entry]}))
        entry["phases"][ex.FULL_SUITE] = {"outcome": "PASS", "expected": "PASS", "counts": {"passed": 5}, "seconds": 60}
        self.assertEqual(ex.verdict(entry), "ok")
        entry["phases"].pop(next(iter(ex.PHASES)))
        self.assertEqual(ex.verdict(entry), "incomplete")  # a property suite not run is still incomplete


def _check_report(directory: str, crashed: set[tuple[str, str]], skipped: dict[str, str]) -> Path:
    """A ``check --json`` file: every default op's sequences, stock and patched, stock crashing in
    ``crashed`` ((op, order)), patched never; ``skipped`` ops left out with their reason."""
    import json

    from inductor_fix.check.table import default_ops, orders_of

    cases = [{"op": op, "order": order, "mode": mode, "ok": mode == "patched" or (op, order) not in crashed,
              "error": None if mode == "patched" or (op, order) not in crashed else "TypeError: launcher()\nmore",
              "failure": None}
             for op in default_ops() if op not in skipped for order in orders_of(op) for mode in ("stock", "patched")]
    report = Path(directory, "check.json")
    report.write_text(json.dumps({"verdict": "PASS", "exit_status": 0, "skipped": skipped, "cases": cases}))
    return report


class TestNewRelease(TestCase):
    """tools/new_release: README's row from a matrix row, RELEASES kept in order, and the drill."""

    def test_check_phase_and_readme_row(self) -> None:
        from matrix_lib import phases, results

        from inductor_fix.check.parts import check_ops
        from inductor_fix.check.table import default_ops, orders_of

        first, last = default_ops()[0], default_ops()[-1]
        crashed = {(first, orders_of(first)[0])}
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory, "check.log")
            log.write_text("  [24/24] ...\n")
            result = phases.summarize_check(_check_report(directory, crashed, {last: "needs CUDA"}), log, 0)
        self.assertEqual(result["outcome"], "PASS")
        self.assertTrue(result["summary"].startswith("PASS: stock crashed 1/"), result["summary"])
        self.assertEqual(result["skipped"], {last: "needs CUDA"})
        self.assertEqual(next(c["error"] for c in result["cases"] if not c["ok"]), "TypeError: launcher()")
        entry = {"spec": "2.16.0", "release": "2.16.0", "fix_state": "applied",
                 "patch_states": {p.name: "applied" for p in PATCHES}, "phases": {ex.CHECK: result}}
        entry["patch_states"][PATCHES[0].name] = "not-needed"
        row = results.readme_row(entry)
        cells = row.strip("| ").split(" | ")
        # One cell per README column: the release, each patch with check ops (table order), the fix.
        header = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| torch |"))
        # A retired patch's column stays in README until the maintainer edits it (CONTRIBUTING's
        # "Retiring a patch", step 4: tools/retire lists it), so the row may have fewer cells there.
        self.assertLessEqual(len(cells), len(header.split(" | ")))
        with_ops = [p for p in PATCHES if check_ops(p)]
        self.assertEqual(len(cells), len(with_ops) + 2)
        self.assertEqual(cells[-1], f"`applied` ({PATCHES[0].name} `not-needed`)")
        owner = next(i for i, p in enumerate(with_ops, 1) if first in check_ops(p))
        self.assertIn("crashes", cells[owner])
        self.assertIn("not checked here", cells[next(i for i, p in enumerate(with_ops, 1) if last in check_ops(p))])
        self.assertIn("?", results.readme_row({**entry, "phases": {}}))

    def test_a_release_joins_releases_in_order(self) -> None:
        tool = _script("new_release")
        text = (ROOT / "tools" / "matrix_lib" / "expectations.py").read_text()
        self.assertEqual(tool.with_release(text, ex.RELEASES[-1]), text)
        added = tool.with_release(text, "2.16.0")
        namespace: dict[str, Any] = {}
        release_lines = added[added.index("RELEASES = ("):added.index(")", added.index("RELEASES = ("))+1]
        exec(release_lines, namespace)
        self.assertEqual(namespace["RELEASES"], (*ex.RELEASES, "2.16.0"))
        self.assertTrue(all(len(line) <= 120 for line in release_lines.splitlines()))
        self.assertEqual(tool.with_release(text, "2.9.2").count('"2.9.2"'), 1)

    def test_drill_on_the_newest_release(self) -> None:
        """CI's fast form of ``tools/new_release 2.15.0``: a wheel holding only the sources the
        fingerprints read (the installed torch's, under 2.15.0's name: no 3 GB download), the
        fingerprints written to a scratch file, and the matrix row as the stored real run left it
        (``--stored-only``, a copy of docs/matrix/results.json). Left out: the download, the venv,
        and running the suites, the full suite and check; README's row and the verdict are computed
        from the stored row as a real run computes them (the full suite reads this very file while
        the matrix runs it: the drill judges the tool, not the row)."""
        import json
        import shutil

        from matrix_lib import results

        release = "2.15.0"
        with tempfile.TemporaryDirectory() as directory:
            stored_json = Path(directory, "results.json")
            shutil.copy(ROOT / "docs" / "matrix" / "results.json", stored_json)
            stored = next(e for e in results.load(stored_json)["releases"] if e["spec"] == release)
            results.refresh(stored)
            wheel = Path(directory, f"torch-{release}-cp3-none-any.whl")
            _installed_sources_wheel(wheel)
            before = (ROOT / "tools" / "matrix_lib" / "expectations.py").read_text()
            process = subprocess.run(
                [sys.executable, str(ROOT / "tools" / "new_release"), release, "--wheel", str(wheel), "--json",
                 str(stored_json), "--fingerprints", str(Path(directory, "fp.json")), "--stored-only"],
                capture_output=True, text=True, cwd=ROOT, timeout=600)
            written = json.loads(Path(directory, "fp.json").read_text())["releases"]
        self.assertEqual(process.returncode, 0 if stored["verdict"] == "ok" else 1, process.stdout + process.stderr)
        self.assertIn(release, written)
        self.assertIn(" against recorded torch ", process.stdout)  # --compare's report, before --write
        self.assertIn(f"README's row (docs: README.md, 'Affected releases'; wording is yours):\n"
                      f"{results.readme_row(stored)}\n", process.stdout)
        self.assertIn(f"new_release: verdict {stored['verdict']}", process.stdout)
        self.assertEqual((ROOT / "tools" / "matrix_lib" / "expectations.py").read_text(), before)


class TestRelabelledDevBuild(TestCase):
    """``RELEASE=DEV`` specs: a release installed, then relabelled as the dev build a nightly index
    would give (where none can be downloaded)."""

    def test_spec(self) -> None:
        import torchenv

        self.assertEqual(torchenv.split_relabel("2.15.0=2.16.0.dev20261201"), ("2.15.0", "2.16.0.dev20261201"))
        self.assertEqual(torchenv.split_relabel("2.15.0"), ("2.15.0", None))
        self.assertEqual(torchenv.spec_release("2.15.0=2.16.0.dev20261201"), "2.15.0")  # its triton: 2.15's
        self.assertEqual(torchenv.TorchEnv(Path("/v"), "2.15.0=2.16.0.dev20261201").path.name,
                         "2.16.0.dev20261201-from-2.15.0")
        for bad in ("2.15.0=2.16.0", "2.15=2.16.0.dev1", "2.15.0=nightly"):
            self.assertRaisesRegex(ValueError, "RELEASE=DEV", torchenv.split_relabel, bad)
        process = subprocess.run([sys.executable, str(ROOT / "tools" / "run_matrix"), "2.15.0=2.16.0"],
                                 capture_output=True, text=True, cwd=ROOT, timeout=120)
        self.assertEqual(process.returncode, 2)
        self.assertIn("RELEASE=DEV", process.stderr)

    def test_relabel_changes_the_version_and_nothing_else(self) -> None:
        import torchenv

        with tempfile.TemporaryDirectory() as directory:
            site = Path(directory)
            (site / "torch").mkdir()
            version_py = "__version__ = '2.15.0+cu132'\ndebug = False\ngit_version = 'abc'\n"
            (site / "torch" / "version.py").write_text(version_py)
            (site / "torch-2.15.0.dist-info").mkdir()
            (site / "torch-2.15.0.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.15.0\nSummary: x\n")
            self.assertEqual(torchenv.relabel(site, "2.16.0.dev20261201"), "2.16.0.dev20261201+cu132")
            self.assertEqual((site / "torch" / "version.py").read_text(),
                             version_py.replace("2.15.0+cu132", "2.16.0.dev20261201+cu132"))
            self.assertEqual((site / "torch-2.15.0.dist-info" / "METADATA").read_text(),
                             "Name: torch\nVersion: 2.16.0.dev20261201\nSummary: x\n")
            (site / "torch" / "version.py").write_text("git_version = 'abc'\n")
            self.assertRaisesRegex(RuntimeError, "cannot relabel", torchenv.relabel, site, "2.16.0.dev1")


class TestTorchenv(TestCase):
    def test_test_dependencies_are_the_test_extra(self) -> None:
        if sys.version_info < (3, 11):
            self.skipTest("tomllib is Python 3.11+")
        import tomllib

        import torchenv

        extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
        # packaging: the package's own requirement, which a venv made without installing it lacks; the
        # rest is the test extra but torch: the matrix runs the full suite (README's command) there too.
        self.assertEqual(set(torchenv.TEST_DEPENDENCIES) - {"packaging"}, {d for d in extra if d != "torch"})


class TestMatrixPhaseRunner(TestCase):
    """tools/run_matrix runs each phase through the package's child runner: progress is said
    while the suite runs, and a phase past its timeout is ended (process group and all)."""

    def test_progress_then_timeout(self) -> None:
        from matrix_lib import phases

        said: list[str] = []
        env = types.SimpleNamespace(python=sys.executable)
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory, "phase.log")
            arguments = phases.pytest_arguments(next(iter(ex.PHASES)))
            status, seconds = phases.run_pytest(env, arguments, log, dict(os.environ), timeout=4, every=1,
                                                say=said.append)
        self.assertIsNone(status)
        self.assertGreaterEqual(seconds, 4)
        self.assertLess(seconds, 30)
        self.assertTrue(said and all(" elapsed, " in line for line in said), said)


class TestBench(TestCase):
    """tools/bench startup in a fast form, and docs/benchmarks.md's tables are the committed
    results' (each patch's own benchmark runs in a fast form in its test folder)."""

    def test_startup_fast_form(self) -> None:
        process, data = bench("startup", "--reps", "1", "--against", str(ROOT))
        self.assertEqual(data["inductor_modules"], [])
        self.assertIn("under `run`", process.stdout)
        self.assertIn("other_added_ms", data["run_no_torch"])
        self.assertEqual(data["autoload"]["inductor_modules"], [])  # the entry point imports nothing of Inductor
        self.assertIn("installed (autoload entry point)", process.stdout)
        # Both forms of the program (issue 52): README gives the figure for the form it shows.
        self.assertEqual(set(data["commands"]), {"pass_ms", *(f"{name}{form}{kind}" for name in ("run_command",
                         "status_no_load") for form in ("", "_module") for kind in ("_ms", "_added_ms"))})
        self.assertIn("`inductor-fix status --no-load`, ms over `python -c pass`", process.stdout)
        self.assertIn("`python -m inductor_fix status --no-load`, ms over `python -c pass`", process.stdout)
        self.assertEqual(len(data["load"]), 2)  # the load it ran beside, as it started and ended

    def test_every_patch_with_a_benchmark_is_found(self) -> None:
        process = subprocess.run([sys.executable, str(ROOT / "tools" / "bench"), "--help"], capture_output=True,
                                 text=True, timeout=120)
        for patch in PATCHES:
            if (ROOT / "tools" / "bench_lib" / f"{patch.folder}.py").is_file():
                self.assertIn(patch.folder, process.stdout)

    def test_table_is_the_docs(self) -> None:
        process = subprocess.run([sys.executable, str(ROOT / "tools" / "bench"), "table"], capture_output=True,
                                 text=True, cwd=ROOT, timeout=120)
        self.assertEqual(process.returncode, 0, process.stderr)
        page = (ROOT / "docs" / "benchmarks.md").read_text()
        for table in process.stdout.split("\n\n"):
            self.assertIn(table.strip(), page)
        for args in (["startup", "--reps", "0"], ["startup", "--against", "/nonexistent"]):
            bad = subprocess.run([sys.executable, str(ROOT / "tools" / "bench"), *args], capture_output=True,
                                 text=True, cwd=ROOT, timeout=120)
            self.assertEqual(bad.returncode, 2, args)
            self.assertIn("tools/bench: error:", bad.stderr)


def _record_fingerprints() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("record_fingerprints", ROOT / "tools" / "record_fingerprints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_patches_module() -> types.ModuleType:
    """tools/check_patches' module (the script is a thin wrapper over it)."""
    from matrix_lib import check_patches

    return check_patches


class TestCheckPatchesFastForm(TestCase):
    """The patch checker's steps that need no second torch, on the torch under test, so a
    rename in the package can never silently break the documented upstream-diff workflow."""

    def test_default_suite_is_the_patchs_property_suites(self) -> None:
        check_patches = _check_patches_module()
        for patch in PATCHES:
            diff = ROOT / "patches" / patch.diff
            self.assertTrue(diff.is_file(), diff)
            self.assertIs(check_patches.patch_of(diff), patch)
            if any(s.patch is patch for s in ex.SUITES.values()):
                self.assertIn(f"test/{patch.folder}/", check_patches.default_suite(diff))
            else:  # no property suite: never an empty pytest target (that would run all of test/)
                self.assertIsNone(check_patches.default_suite(diff))
        self.assertIsNone(check_patches.patch_of(Path("0009-unknown.patch")))

    def test_apply_only_against_this_torch(self) -> None:
        import base64
        import hashlib
        import subprocess
        import zipfile

        import torch

        root = Path(__file__).resolve().parents[1]
        base = f"base-commit: {torch.version.git_version}"
        patch = next((p for p in PATCHES if base in (root / "patches" / p.diff).read_text()), None)
        if patch is None:
            self.skipTest(f"no diff in patches/ is based on torch {torch.__version__}")
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
            process = subprocess.run([sys.executable, str(root / "tools" / "check_patches"), release, "--apply-only",
                                      "--wheel", str(wheel), "--patch", str(root / "patches" / patch.diff)],
                                     capture_output=True, text=True, cwd=root)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertRegex(process.stdout, r"applies: (clean|offset)")
        self.assertIn(f"OK: torch {release}, 0 failed check(s)", process.stdout)

    def test_pristine_files_of_a_release_without_them(self) -> None:
        """A diff touching a file this release lacks (kernel/flex/ on 2.7-2.8): nothing to back
        up, no error, and a copy a patch made is removed on restore; the others are restored."""
        check_patches = _check_patches_module()
        with tempfile.TemporaryDirectory() as directory:
            site = Path(directory, "site")
            present, absent = "torch/_inductor/select_algorithm.py", "torch/_inductor/kernel/flex/flex_attention.py"
            (site / present).parent.mkdir(parents=True)
            (site / present).write_text("stock\n")
            info = site / "torch-2.7.1.dist-info"
            info.mkdir()
            digest = check_patches.sha256_record(b"stock\n")
            (info / "RECORD").write_text(f"{present},{digest},6\n")
            env = types.SimpleNamespace(site_packages=site, path=Path(directory))
            files = check_patches.Pristine(env, [present, absent])
            files.ensure_backups()
            (site / present).write_text("patched\n")
            (site / absent).parent.mkdir(parents=True)
            (site / absent).write_text("made by a patch\n")
            files.ensure_backups()  # a rerun while patched keeps the stock backup, takes none of the new file
            files.restore()
            self.assertEqual((site / present).read_text(), "stock\n")
            self.assertFalse((site / absent).exists())


def _series_module() -> types.ModuleType:
    """tools/check_patches --series' module."""
    from matrix_lib import series

    return series


class TestCheckPatchesSeries(TestCase):
    """``tools/check_patches --series`` in the form CI can run: no second torch, no GPU, nothing
    downloaded. The shadow's mechanics on a toy package and on this torch, the stand-ins built
    from each series diff and collected, the refusals, and the series' own rules: which diffs
    apply to this release, the rebases' bases and tests, the texts. The runs themselves (stock
    fails, patched passes) are patches/README.md's evidence: on a CPU with torch 2.15.0 or 2.11.0,
    on a GPU with 2.11.0."""

    def _git_diff(self, before: Path, after: Path, path: str) -> str:
        """A git-format diff of one file, ``a/<path>`` -> ``b/<path>``."""
        process = subprocess.run(["git", "diff", "--no-index", "--no-prefix", str(before), str(after)],
                                 capture_output=True, text=True)
        body = process.stdout.split("\n@@", 1)[1]
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@{body}"

    def test_shadow_links_all_but_the_patched_file_and_leaves_the_package_alone(self) -> None:
        series = _series_module()
        with tempfile.TemporaryDirectory() as directory:
            site = Path(directory, "site")
            (site / "torch" / "a" / "__pycache__").mkdir(parents=True)
            (site / "torch" / "__init__.py").write_text("")
            (site / "torch" / "a" / "b.py").write_text("x = 1\n")
            (site / "torch" / "a" / "c.py").write_text("y = 2\n")
            (site / "torch" / "a" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"stock bytecode")
            (site / "torch" / "lib").mkdir()
            (site / "torch" / "lib" / "libx.so").write_bytes(b"\0")
            patched = Path(directory, "b.py")
            patched.write_text("x = 2\n")
            diff = Path(directory, "0099-toy.patch")
            diff.write_text(self._git_diff(site / "torch" / "a" / "b.py", patched, "torch/a/b.py"))

            shadow = series.build_shadow(site / "torch", ["torch/a/b.py"], Path(directory, "shadow"))
            report = series.apply_to_shadow(diff, shadow)
            self.assertIn("Applied patch torch/a/b.py cleanly", report)
            self.assertEqual((shadow / "torch" / "a" / "b.py").read_text(), "x = 2\n")
            self.assertFalse((shadow / "torch" / "a" / "b.py").is_symlink())
            for linked in ("torch/__init__.py", "torch/a/c.py", "torch/lib"):
                self.assertTrue((shadow / linked).is_symlink(), linked)
                self.assertEqual((shadow / linked).resolve(), (site / linked).resolve())
            self.assertFalse((shadow / "torch" / "a" / "__pycache__").exists())  # no bytecode lands in the package
            self.assertEqual((site / "torch" / "a" / "b.py").read_text(), "x = 1\n")
            with self.assertRaisesRegex(series.SeriesError, "does not apply"):
                series.apply_to_shadow(diff, shadow)  # already applied: git refuses, and so does the tool
            series.build_shadow(site / "torch", ["torch/a/b.py"], shadow)  # rebuilt over the old one
            shutil.rmtree(shadow)  # removing a shadow unlinks its links, never their targets
            self.assertEqual(sorted(p.name for p in (site / "torch").iterdir()), ["__init__.py", "a", "lib"])
            self.assertEqual((site / "torch" / "a" / "c.py").read_text(), "y = 2\n")

    def test_a_shadow_of_this_torch_is_the_one_python_imports(self) -> None:
        import torch

        series = _series_module()
        installed = Path(torch.__file__).resolve().parent
        target = "torch/_inductor/select_algorithm.py"
        before = series.digests(installed, [target])
        with tempfile.TemporaryDirectory() as directory:
            shadow = series.build_shadow(installed, [target], Path(directory, "shadow"))
            self.assertFalse((shadow / target).is_symlink())  # else the write below would reach the package
            with (shadow / target).open("a") as copy:
                copy.write("\nSERIES_SHADOW_MARKER = 'patched-copy'\n")
            environment = {**os.environ, "PYTHONPATH": str(shadow), "PYTHONDONTWRITEBYTECODE": "1",
                           "INDUCTOR_FIX_DISABLE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
            process = subprocess.run(
                [sys.executable, "-c", "import torch, torch._inductor.select_algorithm as s; "
                 "print(torch.__file__); print(s.SERIES_SHADOW_MARKER)"],
                capture_output=True, text=True, env=environment)
            self.assertEqual(process.returncode, 0, process.stderr[-2000:])
            torch_file, marker = process.stdout.split()[-2:]
            self.assertEqual(Path(torch_file).parent, shadow / "torch")
            self.assertEqual(marker, "patched-copy")
        self.assertEqual(series.digests(installed, [target]), before)

    def test_stand_ins_hold_each_series_test_and_offer_its_names(self) -> None:
        import symtable

        series = _series_module()
        diffs = [d for d in (ROOT / "patches" / name for name in series.SERIES) if d.is_file()]
        self.assertTrue(diffs, "no series diff in patches/")
        for diff in diffs:
            for tests in series.tests_of(diff):
                fixtures = importlib.import_module(tests.stand_in.fixtures)
                offered = set(fixtures.__all__) | set(dir(__import__("builtins")))
                for method in tests.methods:
                    source = re.search(rf"(?ms)^    def {method}\(.*?(?=^    (?:@|def )|\Z)", tests.source).group(0)
                    table = symtable.symtable(textwrap.dedent(source), diff.name, "exec").get_children()[0]
                    used = {name for name in table.get_globals() if table.lookup(name).is_referenced()}
                    used |= {n for child in table.get_children() for n in child.get_globals()
                             if child.lookup(n).is_referenced()}
                    self.assertEqual(used - offered, set(), f"{diff.name} {method}: names upstream's module "
                                     f"offers that {tests.stand_in.fixtures} does not")
                with tempfile.TemporaryDirectory() as directory:
                    module = Path(directory, f"test_series_{series.short(diff)}.py")
                    module.write_text(series.stand_in_module(tests))
                    Path(directory, "pytest.ini").write_text("[pytest]\n")
                    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tools"), str(ROOT)]),
                                   "INDUCTOR_FIX_DISABLE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
                    process = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", str(module)],
                                             capture_output=True, text=True, cwd=directory, env=environment)
                self.assertEqual(process.returncode, 0, process.stdout[-3000:] + process.stderr[-2000:])
                for method in (*tests.methods, *tests.stand_in.ours):
                    self.assertIn(method, process.stdout, f"{diff.name}: {method} not collected")

    def test_refusals_exit_2_and_change_nothing(self) -> None:
        import torch

        script = ROOT / "tools" / "check_patches"
        with tempfile.TemporaryDirectory() as directory:
            cases = {
                ("--series",): "--out DIR is required",
                ("--series", "--out", directory, "--jobs", "0"): "must be positive",
                ("--series", "--out", directory, "--budget", "nan"): "must be positive",
                ("--series", "--out", directory, "--budget", "inf"): "must be positive",
                ("--series", "--out", str(script)): "not a directory",
                ("--series", "--out", directory, "--cutlass", str(Path(directory, "absent.whl"))): "no such file",
                ("--series", "2.14.1", "--out", directory): "no release, --patch or --apply-only",
                ("2.14.1", "--patch", str(ROOT / "patches" / _series_module().SERIES[0]), "--out", directory):
                    "only with --series",
            }
            for arguments, message in cases.items():
                process = subprocess.run([sys.executable, str(script), *arguments], capture_output=True, text=True)
                self.assertEqual(process.returncode, 2, (arguments, process.stdout, process.stderr))
                self.assertIn(message, process.stderr, arguments)
            series = _series_module()
            if not series.series_for(torch.version.git_version):
                process = subprocess.run([sys.executable, str(script), "--series", "--out", directory],
                                         capture_output=True, text=True)
                self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
                self.assertIn("no series diffs are based on it", process.stderr)
                self.assertEqual(os.listdir(directory), [])

    def test_the_series_applies_to_this_release_as_recorded(self) -> None:
        import torch

        series = _series_module()
        release = Version(torch.__version__).base_version
        if release not in series.APPLIES_TO:
            self.skipTest(f"torch {release}: no row in series.APPLIES_TO")
        site = Path(torch.__file__).resolve().parents[1]
        applies = set()
        for name in series.SERIES:
            diff = ROOT / "patches" / name
            if not diff.is_file():
                continue
            with tempfile.TemporaryDirectory() as directory:
                for path in series.torch_paths(diff):
                    Path(directory, path).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(site / path, Path(directory, path))
                process = subprocess.run(["git", "apply", "--check", "--include=torch/*", str(diff)], cwd=directory,
                                         env={**os.environ, "GIT_CEILING_DIRECTORIES": directory},
                                         capture_output=True, text=True)
            if process.returncode == 0:
                applies.add(series.short(diff))
        present = {series.short(ROOT / "patches" / n) for n in series.SERIES if (ROOT / "patches" / n).is_file()}
        self.assertEqual(applies, series.APPLIES_TO[release] & present)

    def test_the_series_and_its_rebases_follow_their_rules(self) -> None:
        series = _series_module()
        diffs_of_patches = {name for patch in PATCHES for name in patch.diffs}
        present = [ROOT / "patches" / n for n in series.SERIES if (ROOT / "patches" / n).is_file()]
        base_of_main = {series.base_commit(diff) for diff in present}
        self.assertEqual(len(base_of_main), 1, "the series diffs share one base")
        for name in series.SERIES:
            diff = ROOT / "patches" / name
            # A series diff is its patch's (retiring the patch deletes it): present exactly while named.
            self.assertEqual(diff.is_file(), name in diffs_of_patches, name)
            if not diff.is_file():
                continue
            text = diff.read_text()
            message = text.split("\n---\n", 1)[0]
            self.assertRegex(message, r"Subject: \[PATCH\] \[inductor\] ")
            for method in (m for tests in series.tests_of(diff) for m in tests.methods):
                self.assertRegex(message, rf"python test/inductor/test_\w+\.py -k {method}\b")
            self.assertNotRegex(message, r"(?i)inductor[-_ ]fix|this (package|project)|Fixes #188069")
        for folder in ROOT.glob("patches/rebased-*"):
            rebased = sorted(folder.glob("*.patch"))
            self.assertTrue(rebased, folder)
            bases = {series.base_commit(d) for d in rebased}
            self.assertEqual(len(bases), 1, f"{folder.name}: one base")
            for diff in rebased:
                if diff.name.startswith("prerequisite-"):
                    number = diff.name.split("-")[1]
                    self.assertTrue(any(n.startswith(number) for n in series.SERIES), diff.name)
                    continue
                self.assertIn(diff.name, series.SERIES, f"{folder.name}: {diff.name} is no series diff")
                self.assertIn(f"Test-only rebase onto v{folder.name.removeprefix('rebased-')}", diff.read_text())
                upstream = ROOT / "patches" / diff.name
                if upstream.is_file():  # the same tests as the diff it rebases, line for line
                    self.assertEqual([t.source for t in series.tests_of(diff)],
                                     [t.source for t in series.tests_of(upstream)], diff.name)


class TestNightly(TestCase):
    """A development build is classified and expected correctly, and the nightly workflow's
    commands are ones the tools accept - all without downloading a nightly."""

    ROOT = Path(__file__).resolve().parents[1]

    def test_dev_build_classified_and_expected(self) -> None:
        import torchenv

        import drift

        version = drift.NIGHTLY  # 2.16.0.devYYYYMMDD+cu130
        # Stock must pass where a suite says the bug is fixed, and fail where no release fixes it
        # yet (flex backward): a nightly that fixes it, or regresses another, shows as MISMATCH.
        for phase in ex.PHASES:
            suite = ex.suite_of(phase)
            fails = ex.release_of(version) in SpecifierSet(suite.stock_fails) and ex.mode_of(phase) == "stock"
            self.assertEqual(ex.expected(phase, version), "FAIL" if fails else "PASS", phase)
        wheel = (f"https://download.pytorch.org/whl/nightly/cu130/torch-{version.replace('+', '%2B')}"
                 "-cp311-cp311-manylinux_2_28_x86_64.whl")
        self.assertEqual(torchenv.spec_release(wheel), "2.16.0")
        self.assertEqual(str(ex.release_of(version)), "2.16.0")
        # The package on it (the installed torch renamed, nothing else moved).
        result = drift.run("stock")
        self.assertEqual({p["name"]: p["state"] for p in result["patches"]}, drift.expected_states("stock"), result)
        entry = {"fix_state": result["state"],
                 "phases": {phase: {"outcome": ex.expected(phase, version), "expected": ex.expected(phase, version)}
                            for phase in ex.PHASES}}
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

        import torch

        release = Version(torch.__version__).base_version
        with tempfile.TemporaryDirectory() as directory:
            wheel = Path(directory, "torch-2.16.0.dev20261201+cpu-cp311-cp311-linux_x86_64.whl")
            _installed_sources_wheel(wheel)

            def compare(*extra: str) -> subprocess.CompletedProcess:
                return subprocess.run([sys.executable, str(self.ROOT / "tools" / "record_fingerprints.py"),
                                       "--compare", str(wheel), *extra], capture_output=True, text=True, timeout=120)

            RECORDED = _record_fingerprints().RECORDED

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

    def test_fingerprint_write_records_a_wheel_and_keeps_the_rest(self) -> None:
        """``--write`` measures the given wheel's release, keeps every other recorded one, drops
        targets no patch wraps, and writes what the package then reads (the data file)."""
        import json

        from inductor_fix._members import function_of
        from inductor_fix.patches import targets
        from inductor_fix.patches.fingerprints import source_fingerprint
        from inductor_fix.patches.target_names import split_target, target_owner
        TARGETS = targets()

        tool = _record_fingerprints()
        data = tool.DATA.read_text()
        # As --write writes it, but for the targets of a patch retired since, which it would drop.
        recorded = json.loads(data)["releases"]
        current = {release: kept for release, table in recorded.items()
                   if (kept := {t: f for t, f in table.items() if t in TARGETS})}
        if current == recorded:
            self.assertEqual(tool.format_table(tool.RECORDED), data, "the data file is not as --write writes it")
        data = json.dumps({"releases": current})
        with tempfile.TemporaryDirectory() as directory:
            wheel = Path(directory, "torch-9.9.0-cp311-cp311-linux_x86_64.whl")
            _installed_sources_wheel(wheel)
            tool.DATA = Path(directory, "fingerprints.json")
            tool.RECORDED["2.0.0"] = {"Retired.target": "0123456789abcdef"}
            self.assertEqual(tool.main(["--write", str(wheel)]), 0)
            written = json.loads(tool.DATA.read_text())["releases"]
        import inductor_fix
        import torch._inductor.select_algorithm  # noqa: F401  (loads every module a patch targets)

        with inductor_fix.removed():
            # A target the class only inherits has no source in select_algorithm.py: nothing to record.
            defined = {t: vars(owner).get(split_target(t)[1]) for t in TARGETS
                       if (owner := target_owner(t)) is not None}
            live = {t: source_fingerprint(function_of(member)) for t, member in defined.items() if member}
        self.assertEqual(written.pop("9.9.0"), live)  # measured from the wheel as the package measures at run time
        self.assertEqual(written, json.loads(data)["releases"])  # the rest kept, the retired target dropped



def _installed_sources_wheel(wheel: Path) -> None:
    """A wheel holding the installed torch's source of every module a patch targets (those it has)."""
    import zipfile

    import torch

    root = Path(torch.__file__).parent.parent
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in _record_fingerprints().SOURCES.values():
            if (root / path).exists():
                archive.writestr(path, (root / path).read_bytes())


def _script(name: str) -> Any:
    """``tools/<name>`` as a module (a script without a ``.py``)."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader(name, str(ROOT / "tools" / name))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _gpu_tier() -> Any:
    return _script("gpu_tier")


class TestRetireFindsMentions(TestCase):
    """tools/retire lists every file that still names a retired patch (CHANGELOG keeps its
    history), deletes its benchmark results, and fails on package data that names it; CI runs
    the whole drill for every patch (.ci/run)."""

    def test_a_planted_mention_of_each_patch_is_found(self) -> None:
        retire = _script("retire")
        for patch in PATCHES:
            others = [p for p in PATCHES if p is not patch]
            with self.subTest(patch=patch.name), tempfile.TemporaryDirectory() as directory:
                tree = Path(directory)
                kind = next(iter(patch.activity.kinds))
                files = {"README.md": f"intro\nthe {patch.name} patch\n",
                         "docs/x.md": f"see `{patch.folder}`\nand the kind {kind}\n",
                         "inductor_fix/data.json": f'{{"{patch.diff}": 1}}\n',
                         "CHANGELOG.md": f"- {patch.name} retired\n",
                         "other.md": f"{patch.name}s and {patch.folder}_x are other words\n"}
                for name, text in files.items():
                    Path(tree, name).parent.mkdir(parents=True, exist_ok=True)
                    Path(tree, name).write_text(text)
                found = retire.mentions(tree, list(files), retire.naming(patch, others))
                self.assertEqual(found, {"README.md": [2], "docs/x.md": [1, 2], "inductor_fix/data.json": [1]})
                self.assertIn("docs/x.md: 2 lines (1, 2)", retire.describe_mentions(found))

    def test_check_help_lists_the_ops_not_the_words_of_their_descriptions(self) -> None:
        from inductor_fix.check.parts import check_ops

        retire = _script("retire")
        helped = subprocess.run([sys.executable, "-m", "inductor_fix", "check", "--help"], capture_output=True,
                                text=True, cwd=ROOT, timeout=120, env={**os.environ, "COLUMNS": "60"}).stdout
        listed = retire.listed_ops(helped)
        self.assertEqual(sorted(listed), sorted(op for patch in PATCHES for op in check_ops(patch)))
        # An op's description may name another op's call (cutlass_mm's says mm(x, x)): not a listing.
        self.assertEqual(retire.listed_ops("--ops OPS  comma-separated, from fused_gemm (fused_gemm: gemm(x, x)"
                                           " and gemm(a, b)) (default: fused_gemm)"), ["fused_gemm"])
        self.assertEqual(retire.listed_ops("usage: check [-h]"), [])

    def test_retire_deletes_the_benchmark_results_too(self) -> None:
        retire = _script("retire")
        patch = PATCHES[-1]
        with tempfile.TemporaryDirectory() as directory:
            tree = Path(directory)
            made = [f"inductor_fix/patches/{patch.folder}/fix.py", f"test/{patch.folder}/test_x.py",
                    f"docs/bench/{patch.folder}.json", f"docs/bench/{patch.folder}-cuda.json", "docs/bench/other.json",
                    *(f"patches/{diff}" for diff in patch.diffs)]
            for name in made:
                Path(tree, name).parent.mkdir(parents=True, exist_ok=True)
                Path(tree, name).write_text("x")
            table = Path(tree, retire.TABLE)
            table.write_text((ROOT / retire.TABLE).read_text())
            deleted = retire.retire(tree, patch.folder)
            self.assertIn(f"docs/bench/{patch.folder}-cuda.json", deleted)
            self.assertEqual(sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()),
                             ["docs/bench/other.json", str(retire.TABLE)])
            self.assertNotIn(f'"{patch.folder}"', table.read_text())


class TestGpuTierFastForm(TestCase):
    """tools/gpu_tier without a GPU: each form collected (the tier every GPU class but the clients, the
    clients form only them, nothing of the CPU suite) and projected, the empty table written; a selection
    that cannot fit its budget refused; its table, sweep and record from a run's files."""

    def _dry_run(self, *args: str) -> tuple[subprocess.CompletedProcess, str]:
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_tier"), "--out", out, "--dry-run", *args],
                                  capture_output=True, text=True, cwd=ROOT, timeout=600)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            return done, Path(out, "gpu-tier.md").read_text()

    def test_dry_run_collects_each_form(self) -> None:
        """The default form is the whole proof: the tier's tests and the clients'; ``--tier`` and
        ``--clients`` its two parts, which together are the whole."""
        tables = {}
        for args in ((), ("--tier",), ("--clients",)):
            with self.subTest(form=args or "all"):
                done, table = self._dry_run(*args)
                rows = [line for line in table.splitlines() if line.startswith("| `")]
                self.assertTrue(rows, table)
                self.assertTrue(all("not finished" in row for row in rows))
                self.assertFalse(any("test_api.py" in row for row in rows), "a CPU test in the GPU tier")
                self.assertRegex(done.stdout, r"projected (at least )?\d+ s on \d+ workers")
                tables[args[0] if args else "all"] = {row.split("`")[1] for row in rows}
        self.assertTrue(all(name.startswith("clients/") for name in tables["--clients"]), tables["--clients"])
        self.assertFalse(any(name.startswith("clients/") for name in tables["--tier"]), tables["--tier"])
        self.assertEqual(tables["all"], tables["--tier"] | tables["--clients"])

    def test_a_folder_it_did_not_make_is_never_replaced_or_deleted(self) -> None:
        """A user's CUTLASS checkout at DIR/cutlass (or any folder of that name) survives a run that
        lays out CUTLASS there, and the cleaning after it (check_patches --series removed it once)."""
        tier = _gpu_tier()
        with tempfile.TemporaryDirectory() as directory:
            out = Path(directory)
            own = out / "cutlass" / "include"
            own.mkdir(parents=True)
            (own / "README").write_text("mine")
            with self.assertRaisesRegex(ValueError, "was not made by this tool"):
                tier.made_folder(out / "cutlass")
            tier.remove_made(out / "cutlass")
            self.assertEqual((own / "README").read_text(), "mine")
            self.assertEqual(tier.cutlass_tree(str(out / "cutlass"), out), str((out / "cutlass").resolve()))
            made = tier.made_folder(out / "shadows")
            (made / "x").write_text("")
            tier.made_folder(out / "shadows")  # its own folder: emptied and made again
            self.assertEqual(sorted(p.name for p in made.iterdir()), [tier.MADE_HERE])
            tier.remove_made(made)
            self.assertFalse(made.exists())

    def test_bad_arguments(self) -> None:
        for args in (("--workers", "0"), ("--compile-threads", "0"), ("--budget", "-1"), ("--budget", "nan"),
                     ("--tier", "--clients")):
            with self.subTest(args=args):
                done = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_tier"), "--out", "x", *args],
                                      capture_output=True, text=True, cwd=ROOT)
                self.assertEqual(done.returncode, 2)
                self.assertRegex(done.stderr, "must be positive|not allowed with argument")
        with tempfile.TemporaryDirectory() as empty:
            done = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_tier"), "--out", empty, "--record"],
                                  capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(done.returncode, 2)
        self.assertIn("no finished run", done.stderr)
        with tempfile.TemporaryDirectory() as directory:  # a run of selected tests is not recorded
            Path(directory, "run.json").write_text(json.dumps({"form": "tier", "pytest_args": ["-k", "some_tests"]}))
            done = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_tier"), "--out", directory, "--record"],
                                  capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("a run of selected tests only (-- -k some_tests)", done.stderr)

    def test_a_selection_that_cannot_fit_is_refused_naming_what_to_cut(self) -> None:
        tier = _gpu_tier()
        settings = tier.settings_of(True, 1)
        selected = [f"test/a.py::T::test_{name}" for name in ("long", "mid", "short", "tiny")]
        record = {"tier": {"settings": settings, "workers": 2, "wall": 0, "overhead": 10.0,
                           "seconds": dict(zip(selected, (400.0, 300.0, 100.0, 10.0)))}}
        with tempfile.TemporaryDirectory() as directory:
            durations = Path(directory, "gpu-tier.json")
            durations.write_text(json.dumps(record))
            with mock.patch.object(tier, "DURATIONS", durations), \
                    mock.patch.object(tier, "_collect", return_value=selected), \
                    mock.patch("sys.stderr", new_callable=io.StringIO) as stderr, \
                    mock.patch("sys.stdout", new_callable=io.StringIO):
                refused = tier.main(["--out", directory, "--tier", "--dry-run", "--workers", "2", "--budget", "320"])
                fits = tier.main(["--out", directory, "--tier", "--dry-run", "--workers", "2", "--budget", "420"])
        self.assertEqual(refused, 2)
        self.assertEqual(fits, 0)
        line = stderr.getvalue().strip()
        self.assertEqual(len(line.splitlines()), 1, line)
        # Longest first on two workers: 400 | 300 + 100, then 10: 410 s, and 10 s of overhead.
        self.assertIn("projected 420 s on 2 workers (budget 320 s)", line)
        self.assertIn("cut 1 tests: -- --deselect test/a.py::T::test_long", line)

    def test_projection_and_record(self) -> None:
        plan = _gpu_tier().plan
        settings = "s"
        results = [{"nodeid": "a", "outcome": "passed", "seconds": 30.0}, {"nodeid": "b", "outcome": "passed",
                   "seconds": 20.0}, {"nodeid": "c", "outcome": "failed", "seconds": 20.0}]
        data = plan.record({"before": {"a": 90.0}}, "tier", settings, 2, 70.0, results)
        self.assertEqual(data["before"], {"a": 90.0})
        self.assertEqual(data["tier"]["overhead"], 30.0)  # 70 s wall, 40 s of tests on two workers (30 | 20 + 20)
        projection = plan.project(["a", "b", "c"], data, "tier", settings, 2)
        self.assertEqual((projection.seconds, projection.unmeasured), (70.0, ()))
        self.assertEqual(plan.project(["a", "d"], data, "tier", settings, 2).unmeasured, ("d",))
        other = plan.project(["a"], data, "tier", "other settings", 2)
        self.assertEqual((other.seconds, other.unmeasured), (plan.DEFAULT_OVERHEAD, ("a",)))
        self.assertIn("at least", other.describe(480))
        self.assertEqual(plan.order_key(data, "tier", "other settings"), {"a": 90.0})
        self.assertEqual(plan.cut_to_fit(["a", "b", "c"], data, "tier", settings, 2, 50.0), ["a"])
        self.assertEqual(plan.cut_to_fit(["a"], data, "tier", settings, 2, 10.0), ["a"])
        with tempfile.TemporaryDirectory() as directory:  # a record of the first format reads as "before"
            old = Path(directory, "old.json")
            old.write_text(json.dumps({"a": 91.5}))
            self.assertEqual(plan.load(old), {"before": {"a": 91.5}})
            self.assertEqual(plan.load(Path(directory, "none.json")), {})

    def test_the_whole_proof_is_projected_from_its_parts_until_it_ran(self) -> None:
        plan = _gpu_tier().plan
        tier = [{"nodeid": "t", "outcome": "passed", "seconds": 100.0, "start": 1000.0, "stop": 1100.0}]
        clients = [{"nodeid": "c", "outcome": "passed", "seconds": 200.0, "start": 1010.0, "stop": 1210.0}]
        data = plan.record(plan.record({}, "tier", "s", 1, 130.0, tier), "clients", "s", 1, 240.0, clients)
        # the overhead is the wall time outside the tests' span: 130 - 100, 240 - 200
        self.assertEqual((data["tier"]["overhead"], data["clients"]["overhead"]), (30.0, 40.0))
        whole = plan.project(["t", "c"], data, "all", "s", 2)
        self.assertEqual((whole.seconds, whole.unmeasured), (200.0 + plan.DEFAULT_OVERHEAD, ()))
        self.assertEqual(plan.project(["t", "c"], data, "all", "other", 2).unmeasured, ("t", "c"))
        # once the whole proof ran, its own seconds and overhead win over its parts'
        both = [{**tier[0], "seconds": 150.0, "stop": 1150.0}, {**clients[0], "seconds": 250.0, "stop": 1260.0}]
        data = plan.record(data, "all", "s", 2, 300.0, both)
        self.assertEqual(data["all"]["overhead"], 40.0)  # 300 s wall, tests from 1000 to 1260
        self.assertEqual(plan.project(["t", "c"], data, "all", "s", 2).seconds, 290.0)
        self.assertEqual(plan.measured(data, "tier", "s"), {"t": 100.0, "c": 250.0})

    def test_the_order_starts_each_long_test_on_a_worker_of_its_own(self) -> None:
        from gpu_tier_lib import schedule

        seconds = {"a": 300.0, "b": 290.0, "c": 280.0, "d": 100.0, **{f"s{i}": 1.0 for i in range(6)}}
        order = schedule.layout(list(seconds), seconds, 3)
        # pytest-xdist sends each worker two tests first: a long one, and behind it one of the shortest
        self.assertEqual([order[i] for i in (0, 2, 4)], ["a", "b", "c"])
        self.assertTrue(all(seconds[order[i]] == 1.0 for i in (1, 3, 5)), order)
        runs = schedule.simulate(order, seconds, 3)
        self.assertEqual(sorted(runs[name].worker for name in "abc"), [0, 1, 2])
        # c's worker is free first (280 s): its short partner, then d (381 s), then a short one
        self.assertEqual(schedule.makespan(order, seconds, 3), 382.0)
        # longest first alone pairs the two longest on the first worker, one behind the other
        self.assertEqual(schedule.makespan(sorted(seconds, key=lambda n: -seconds[n]), seconds, 3), 590.0)
        # fewer than two tests a worker are dealt round robin: the third joins the shorter of the first two
        few = {"a": 30.0, "b": 20.0, "c": 20.0}
        self.assertEqual(schedule.makespan(schedule.layout(list(few), few, 2), few, 2), 40.0)
        self.assertEqual(schedule.makespan(["a", "b", "c"], few, 2), 50.0)
        # where no short test can go behind the long ones, plain longest-first is kept (it simulates shorter)
        alike = {"p": 10.0, "q": 8.0, "r": 8.0, "s": 8.0, "t": 1.0}
        self.assertEqual(schedule.makespan(schedule.layout(list(alike), alike, 2), alike, 2), 18.0)
        # a test without seconds goes first and counts none in the projection (a lower bound)
        self.assertEqual(schedule.layout(["x", "a", "s0", "s1"], {"a": 300.0, "s0": 1.0, "s1": 1.0}, 2)[0], "x")

    def test_the_simulated_schedule_is_pytest_xdists(self) -> None:
        """The model against pytest-xdist itself: sleeping tests run as the order and the arguments the
        tier uses say; each worker runs the tests the simulation gives it, starting when it says."""
        from gpu_tier_lib import schedule

        seconds = {"t_long": 3.0, "t_long2": 2.6, **{f"t_short{i}": 0.3 for i in range(6)}}
        with tempfile.TemporaryDirectory() as directory:
            folder = Path(directory)
            (folder / "test_sleep.py").write_text(textwrap.dedent(f"""
                import json, os, time
                import pytest
                SECONDS = {seconds!r}
                @pytest.mark.parametrize("name", sorted(SECONDS))
                def test(name):
                    start = time.time()
                    time.sleep(SECONDS[name])
                    with open({str(folder / "runs.jsonl")!r}, "a") as handle:
                        handle.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"], start]) + "\\n")
                """))
            (folder / "conftest.py").write_text(textwrap.dedent(f"""
                import importlib.util  # the suite's own ordering hook, nothing else of its conftest
                spec = importlib.util.spec_from_file_location("suite_conftest", {str(ROOT / "test" / "conftest.py")!r})
                suite = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(suite)
                pytest_collection_modifyitems = suite.pytest_collection_modifyitems
                """))
            for order in (schedule.layout(list(seconds), seconds, 2), sorted(seconds, key=lambda n: -seconds[n])):
                with self.subTest(order=order):
                    (folder / "runs.jsonl").unlink(missing_ok=True)
                    (folder / "order.json").write_text(json.dumps([f"test_sleep.py::test[{name}]" for name in order]))
                    environment = dict(os.environ, INDUCTOR_FIX_TEST_ORDER=str(folder / "order.json"))
                    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                                           *schedule.PYTEST_ARGS, "test_sleep.py"], cwd=folder, capture_output=True,
                                          text=True, env=environment, timeout=300)
                    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                    ran = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
                    first = min(start for _, _, start in ran)
                    simulated = schedule.simulate(order, seconds, 2)
                    by_worker: dict[str, set] = {}
                    for name, worker, start in ran:
                        by_worker.setdefault(worker, set()).add(name)
                        self.assertAlmostEqual(start - first, simulated[name].start, delta=0.5, msg=name)
                    self.assertEqual(sorted(map(sorted, by_worker.values())),
                                     sorted(sorted(n for n in seconds if simulated[n].worker == w) for w in (0, 1)))

    def test_table_joins_results_and_figures(self) -> None:
        tier = _gpu_tier()
        results = [{"nodeid": "test/a.py::T::test_x", "outcome": "passed", "seconds": 12.0}]
        figures = [{"nodeid": "test/a.py::T::test_x", "stock": "TypeError: launcher()", "patched": None,
                    "max_rel_error": 2e-7, "family": "a family", "setting": "default", "order": "alias-first"}]
        selected = ["test/a.py::T::test_x", "test/b.py::T::test_y"]
        table = tier.render(results, figures, selected)
        self.assertIn("| `a.py::T::test_x` | passed | TypeError: launcher() | ok | 2.0e-07 | 12 |", table)
        self.assertIn("| `b.py::T::test_y` | not finished |", table)
        self.assertEqual(table.splitlines()[-1], "2 tests: 1 passed, 0 failed, 0 skipped, 1 not finished: test_y")
        done = tier.render(results, figures, selected[:1], {"test/a.py::T::test_x": 95.4}, wall=301.2)
        self.assertIn("| 2.0e-07 | 12 | 95 |", done)
        self.assertEqual(done.splitlines()[-1], "1 tests: 1 passed, 0 failed, 0 skipped, 0 not finished; wall 301 s")
        self.assertIn("| a family | default | alias-first | TypeError: launcher() | ok | 2.0e-07 |",
                      tier.render_families(figures))

    def test_a_document_keeps_what_lies_outside_its_markers(self) -> None:
        from gpu_tier_lib.tables import markers

        tier = _gpu_tier()
        start, end = markers("tier")
        text = f"head\n{start}\nold\n{end}\ntail\n"
        self.assertEqual(tier.replace_table(text, "new\n", "tier"), f"head\n{start}\nnew\n{end}\ntail\n")
        with self.assertRaises(ValueError):
            tier.replace_table("no markers", "new\n", "tier")
        for document, names in ((ROOT / "docs" / "families.md", ("families",)),
                                (ROOT / "docs" / "gpu-tier.md", ("all", "tier", "clients"))):
            for name in names:
                self.assertTrue(all(marker in document.read_text() for marker in markers(name)), (document, name))

    def test_the_documented_command_names_no_path_of_this_machine(self) -> None:
        shown = _gpu_tier()._as_documented(["--out", "/tmp/x/y", "--cutlass", "/a/b/nvidia_cutlass-4.2.0.0.whl"])
        self.assertEqual(shown, "tools/gpu_tier --out DIR --cutlass nvidia_cutlass-4.2.0.0.whl")


if __name__ == "__main__":
    run_tests()
