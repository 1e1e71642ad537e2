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

ROOT = Path(__file__).resolve().parents[1]


def generic_files() -> list[Path]:
    """Every file of generic code: the package outside the patch folders, the entry point
    module, the tools (scripts without a suffix included) and the shared tests."""
    folders = {ROOT / "inductor_fix" / "patches" / patch.module for patch in table.PATCHES}
    the_table = ROOT / "inductor_fix" / "patches" / "__init__.py"  # the one list, one line per patch
    package = [p for p in (ROOT / "inductor_fix").rglob("*.py")
               if p != the_table and not any(f in p.parents for f in folders)]
    tools = [p for p in (ROOT / "tools").rglob("*") if p.is_file() and (p.suffix == ".py" or not p.suffix)]
    return sorted([*package, ROOT / "_inductor_fix_autoload.py", *tools, *(ROOT / "test").glob("*.py")])


def patch_words(patches: tuple) -> dict[str, re.Pattern]:
    """What names a patch: its name and folder anywhere (``a-name``, ``a_name``), each of its
    ``check`` ops and activity kinds as a string literal."""
    words: dict[str, re.Pattern] = {}
    for patch in patches:
        for name in {patch.name, patch.module}:
            words[name] = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        for literal in (*patch.check_ops, *patch.activity.kinds):
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
        op, kind = next(iter(patch.check_ops), None), next(iter(patch.activity.kinds), None)
        with tempfile.TemporaryDirectory() as directory:
            planted = Path(directory, "planted.py")
            lines = [f"# the {patch.name} patch", f"from inductor_fix.patches import {patch.module}"]
            lines += [f"OP = {op!r}"] if op else []
            lines += [f"KIND = {kind!r}"] if kind else []
            planted.write_text("\n".join(lines) + "\n")
            with mock.patch(f"{__name__}.ROOT", Path(directory)):
                found = namings([planted], (patch,))
        self.assertEqual({int(f.split(":")[1]) for f in found}, set(range(1, len(lines) + 1)), found)

    def test_the_scan_covers_every_layer(self) -> None:
        files = {str(p.relative_to(ROOT)) for p in generic_files()}
        for expected in ("inductor_fix/_lifecycle.py", "inductor_fix/report.py", "inductor_fix/check/runner.py",
                         "inductor_fix/cli.py", "_inductor_fix_autoload.py", "tools/bench", "tools/run_matrix",
                         "test/test_report.py", "test/drift.py"):
            self.assertIn(expected, files)
        self.assertFalse(any(f.startswith(f"inductor_fix/patches/{table.PATCHES[0].module}/") for f in files))


TOY = '''
"""toy: a patch that exists only in a test (it wraps nothing real: NotNeeded)."""

from inductor_fix.patches.base import Activity, Kind, NotNeeded, Patch


def decide(module):
    ACTIVITY.add("toy_acted", thing="x")
    raise NotNeeded("the toy has nothing to fix")


ACTIVITY = Activity("toy-patch", (Kind("toy_acted", "the toy did its thing", lambda d: f"toy did {d['thing']}"),))
PATCH = Patch(name="toy-patch", targets={"TritonTemplate.generate": lambda original, context: original},
              decide=decide, effect="nothing", upstream="none", affected=">=0", delete_when="now",
              diffs=("0000-toy.patch",), activity=ACTIVITY, package="toy_patch")
'''
TOY_CHECK = '''
from inductor_fix.check.workloads import Workload

WORKLOADS = (Workload("toy_op", {"once": ("toy sequence", 1)}, lambda order, device, compare: [],
                      help="the toy's op", default=False),)
'''
TOY_DRILLS = '''
def _toy_drill(module, kit):
    pass


DRILLS = {"toy-drill": (_toy_drill, "not-needed")}
UNDER = {"renamed-class": "not-needed", "stock": "not-needed", "generate-keyword": "not-needed"}
'''


@contextlib.contextmanager
def toy_in_table():
    """The toy patch's folder on ``sys.path`` and the toy added to the table, for the block."""
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory, "toy_patch")
        folder.mkdir()
        for name, text in (("__init__.py", TOY), ("check.py", TOY_CHECK), ("drills.py", TOY_DRILLS)):
            (folder / name).write_text(textwrap.dedent(text))
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
        self.assertEqual(states["toy-patch"], "not-needed")
        self.assertTrue(all(state == "applied" for name, state in states.items() if name != "toy-patch"), states)


if __name__ == "__main__":
    unittest.main()
