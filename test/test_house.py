"""The house: a patch is one folder, and generic code reads it only through the patch table.

Two proofs. First, no generic module names a patch (its name or folder, anywhere in the
text) or one of its ``check`` ops or activity kinds (as a string literal): generic means the
package outside ``inductor_fix/patches/<folder>/``, the entry point module, ``tools/`` and
the shared tests (``test/*.py``). Second, a toy patch registered only here, in a folder of
its own on ``sys.path``, goes through status, the job report's rendering, check's listing
and the drift drill with no edit of generic code. (Retiring each real patch in turn, in a
copy of the tree: ``tools/retire``, which CI runs.)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

import drift

from inductor_fix import patches as table
from inductor_fix._lifecycle import Lifecycle
from inductor_fix.check.parts import KINDS, CheckPart, PartError, check_ops, part

ROOT = Path(__file__).resolve().parents[1]


def generic_files() -> list[Path]:
    """Every file of generic code: the package outside the patch folders, the entry point
    module, the tools (scripts without a suffix included) and the shared tests."""
    folders = {ROOT / "inductor_fix" / "patches" / patch.folder for patch in table.PATCHES}
    the_table = ROOT / "inductor_fix" / "patches" / "__init__.py"  # the one list, one line per patch
    catalogue = ROOT / "inductor_fix" / "check" / "operations.py"  # the one place operations are named
    package = [p for p in (ROOT / "inductor_fix").rglob("*.py")
               if p not in (the_table, catalogue) and not any(f in p.parents for f in folders)]
    tools = [p for p in (ROOT / "tools").rglob("*") if p.is_file() and (p.suffix == ".py" or not p.suffix)]
    return sorted([*package, ROOT / "_inductor_fix_autoload.py", ROOT / "_inductor_fix_startup.py", *tools,
                   *(ROOT / "test").glob("*.py")])


def patch_words(patches: tuple) -> dict[str, re.Pattern]:
    """What names a patch: its name and folder anywhere (``a-name``, ``a_name``), each of its
    ``check`` ops and activity kinds as a string literal."""
    words: dict[str, re.Pattern] = {}
    for patch in patches:
        for name in {patch.name, patch.folder}:
            words[name] = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        for literal in (*check_ops(patch), *patch.activity.kinds):
            words[literal] = re.compile(rf"[\"']{re.escape(literal)}[\"']")
    return words


def namings(files: list[Path], patches: tuple) -> list[str]:
    words = patch_words(patches)
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {word}" for word, pattern in words.items()
                      if pattern.search(line)]
    return found


class TestGenericCodeNamesNoPatch(unittest.TestCase):
    def test_no_patch_op_or_kind_in_generic_code(self) -> None:
        self.assertEqual(namings(generic_files(), table.PATCHES), [])

    def test_the_scan_finds_what_it_looks_for(self) -> None:
        # Negative control: a planted line in each form is found.
        patch = table.PATCHES[0]
        op, kind = next(iter(check_ops(patch)), None), next(iter(patch.activity.kinds), None)
        with tempfile.TemporaryDirectory() as directory:
            planted = Path(directory, "planted.py")
            lines = [f"# the {patch.name} patch", f"from inductor_fix.patches import {patch.folder}"]
            lines += [f"OP = {op!r}"] if op else []
            lines += [f"KIND = {kind!r}"] if kind else []
            planted.write_text("\n".join(lines) + "\n")
            with mock.patch(f"{__name__}.ROOT", Path(directory)):
                found = namings([planted], (patch,))
        self.assertEqual({int(f.split(":")[1]) for f in found}, set(range(1, len(lines) + 1)), found)

    def test_the_scan_covers_every_layer(self) -> None:
        files = {str(p.relative_to(ROOT)) for p in generic_files()}
        for expected in ("inductor_fix/_lifecycle.py", "inductor_fix/report.py", "inductor_fix/check/runner.py",
                         "inductor_fix/cli.py", "_inductor_fix_autoload.py", "_inductor_fix_startup.py", "tools/bench",
                         "tools/run_matrix",
                         "test/test_report.py", "test/drift.py"):
            self.assertIn(expected, files)
        self.assertFalse(any(f.startswith(f"inductor_fix/patches/{table.PATCHES[0].folder}/") for f in files))


TOY = '''
"""toy: a patch that exists only in a test (it wraps nothing real: NotNeeded)."""

from inductor_fix.patches.patch import Patch

from .activity import ACTIVITY

PATCH = Patch(name="toy-patch", effect="nothing", upstream="none", affected=">=0", delete_when="now",
              diffs=("0000-toy.patch",), activity=ACTIVITY, package="toy_patch")
'''
TOY_ACTIVITY = '''
from inductor_fix.patches.patch import Activity, Kind

ACTIVITY = Activity("toy-patch", (Kind("toy_acted", "the toy did its thing", lambda d: f"toy did {d['thing']}"),))
'''
TOY_FIX = '''
from inductor_fix.patches.patch import Fix, NotNeeded

from .activity import ACTIVITY


def decide(module):
    ACTIVITY.add("toy_acted", thing="x")
    raise NotNeeded("the toy has nothing to fix")


FIX = Fix(targets={"TritonTemplate.generate": lambda original, context: original}, decide=decide)
'''
TOY_CHECK = '''
from inductor_fix.check.parts import CheckPart
from inductor_fix.check.workloads import Workload

PART = CheckPart(workloads=(Workload("toy_op", {"once": ("toy sequence", 1)}, lambda order, device, compare: [],
                                     help="the toy's op", default=False),))
'''
TOY_DRILLS = '''
from inductor_fix.check.parts import Drill, DrillsPart


def _toy_drill(module, kit):
    pass


PART = DrillsPart(drills={"toy-drill": Drill(_toy_drill, "not-needed")},
                  under={"renamed-class": "not-needed", "stock": "not-needed", "generate-keyword": "not-needed"})
'''


@contextlib.contextmanager
def toy_in_table(**replaced: str):
    """The toy patch's folder on ``sys.path`` and the toy added to the table, for the block;
    ``replaced``: file stem -> its text instead of the toy's (None: no such file)."""
    files = {"__init__": TOY, "activity": TOY_ACTIVITY, "fix": TOY_FIX, "check": TOY_CHECK, "drills": TOY_DRILLS,
             **replaced}
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory, "toy_patch")
        folder.mkdir()
        for name, text in files.items():
            if text is not None:
                (folder / f"{name}.py").write_text(textwrap.dedent(text))
        sys.path.insert(0, directory)
        try:
            import toy_patch

            with mock.patch.object(table, "PATCHES", (*table.PATCHES, toy_patch.PATCH)):
                yield toy_patch.PATCH, directory
        finally:
            sys.path.remove(directory)
            for name in [n for n in sys.modules if n == "toy_patch" or n.startswith("toy_patch.")]:
                del sys.modules[name]


class TestToyPatch(unittest.TestCase):
    """A patch registered only here goes through every generic path untouched."""

    def test_status(self) -> None:
        with toy_in_table() as (toy, _):
            import torch._inductor.select_algorithm  # noqa: F401  (decided at once)

            lifecycle = Lifecycle(table.PATCHES)  # another lifecycle: the real one keeps its patches
            lifecycle.apply(toy.name)
            status = lifecycle.status()
            lifecycle.remove()
        self.assertEqual(status.patch("toy-patch").state, "not-needed")
        self.assertIn("toy-patch", status.format())
        self.assertIn("the toy has nothing to fix", status.format())

    def test_report_renders_its_kind(self) -> None:
        from inductor_fix.report import format_summary, summarize

        with toy_in_table() as (toy, _):
            line = {"format": 1, "pid": 1, "state": "applied", "benchmarks": 1, "torch": "2.14.1",
                    "patches": [{"name": "toy-patch", "state": "not-needed", "reason": "",
                                 "counts": {"toy_acted": 2},
                                 "details": [{"kind": "toy_acted", "count": 2, "thing": "y"}]}]}
            text = format_summary(summarize([line]))
        self.assertIn("needed: yes", text)
        self.assertIn("toy did y", text)
        self.assertIn("toy-patch is needed until now", text)

    def test_check_lists_its_op(self) -> None:
        from inductor_fix import cli
        from inductor_fix.check import table as checks

        with toy_in_table():
            self.assertIn("toy_op", checks.ops())
            self.assertNotIn("toy_op", checks.default_ops())
            out = io.StringIO()
            with contextlib.redirect_stdout(out), self.assertRaises(SystemExit):
                cli.main(["check", "--help"])
        self.assertIn("toy_op: the toy's op", " ".join(out.getvalue().split()))

    def test_drift_drill(self) -> None:
        with toy_in_table() as (toy, directory):
            drills = drift.drills()
            self.assertEqual(drills["toy-drill"].expected, {"toy-patch": "not-needed"})
            self.assertEqual(drills["renamed-class"].expected["toy-patch"], "not-needed")
            # In a fresh process, as every drill runs, with the toy added to the table there.
            path = os.pathsep.join([directory, os.environ.get("PYTHONPATH", "")])
            with mock.patch.dict(os.environ, {"PYTHONPATH": path}):
                result = drift.run("toy-drill", extra="toy_patch")
        self.assertNotIn("error", result, result)
        states = {p["name"]: p["state"] for p in result["patches"]}
        # The other patches decide as on the installed torch (applied where they apply on it).
        self.assertEqual(states, {**drift.base_states(), "toy-patch": "not-needed"})


#: The files of a patch's folder that are not parts: its entry, its fix, its activity kinds.
CORE_FILES = ("__init__", "fix", "activity")


def orphans(folder: Path) -> list[str]:
    """Modules of a patch's folder that are neither a part, nor core, nor imported by another
    module of the folder: a misspelt part (``bench_.py``) that nothing would ever read."""
    stems = {p.stem for p in folder.glob("*.py")}
    texts = "\n".join(p.read_text() for p in folder.glob("*.py"))
    return sorted(stem for stem in stems - set(KINDS) - set(CORE_FILES)
                  if not re.search(rf"^\s*from \.{stem} import|^\s*from \. import .*\b{stem}\b", texts, re.MULTILINE))


class TestParts(unittest.TestCase):
    """A patch's parts are typed records that generic code reads, never names found by
    ``hasattr``: a misspelt name is an error, not a feature silently off."""

    def test_every_part_of_every_patch_is_its_record(self) -> None:
        for patch in table.PATCHES:
            for kind, record in KINDS.items():
                with self.subTest(patch=patch.name, part=kind):
                    found = part(patch, kind)
                    self.assertTrue(found is None or isinstance(found, record), found)
        self.assertTrue(any(part(p, "check") for p in table.PATCHES), "no patch has a check part: the loop ran empty")

    def test_no_patch_folder_holds_a_module_nothing_reads(self) -> None:
        for patch in table.PATCHES:
            with self.subTest(patch=patch.name):
                self.assertEqual(orphans(ROOT / "inductor_fix" / "patches" / patch.folder), [])

    def test_a_part_without_its_record_is_an_error(self) -> None:
        # Negative control: the old spelling (a bare WORKLOADS, no PART) must not pass as "no ops".
        misspelt = ("from inductor_fix.check.workloads import Workload\n"
                    "WORKLOADS = (Workload('toy_op', {'once': ('toy sequence', 1)}, lambda o, d, compare: []),)\n")
        with toy_in_table(check=misspelt) as (toy, _):
            with self.assertRaisesRegex(PartError, r"toy_patch\.check must define PART, a CheckPart; "
                                                   r"it defines WORKLOADS"):
                part(toy, "check")

    def test_a_misspelt_field_is_an_error(self) -> None:
        with self.assertRaisesRegex(TypeError, "workload"):
            CheckPart(workload=())  # type: ignore[call-arg]
        with self.assertRaisesRegex(TypeError, "CheckPart.workloads must be a tuple of Workload"):
            CheckPart(workloads=("an op",))  # type: ignore[arg-type]

    def test_a_dependency_on_another_patchs_ops_is_declared(self) -> None:
        # A test that compiles another patch's workloads says so (helpers.needs_part_of): skipped
        # with a reason once that patch is retired, failed where the op it names is gone.
        from helpers import needs_part_of

        class Borrower(unittest.TestCase):
            @needs_part_of(table.PATCHES[0].name, "an_op_no_patch_declares")
            def test_stale(self) -> None:
                pass

            @needs_part_of("a-retired-patch", "its_op")
            def test_retired(self) -> None:
                pass

        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(Borrower).run(result)
        self.assertEqual([test.id().rpartition(".")[2] for test, _ in result.failures], ["test_stale"])
        self.assertEqual([(test.id().rpartition(".")[2], why) for test, why in result.skipped],
                         [("test_retired", "a-retired-patch is retired: its workloads its_op went with it")])

    def test_a_misspelt_part_file_is_found(self) -> None:
        with toy_in_table(bench_=TOY_CHECK) as (_, directory):
            self.assertEqual(orphans(Path(directory, "toy_patch")), ["bench_"])


if __name__ == "__main__":
    unittest.main()
