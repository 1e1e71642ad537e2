"""What each command loads: a broken part of a patch's folder stops nothing but what reads it.

``status``, ``run``, ``report`` and ``import inductor_fix`` never import a patch's ``check``,
``bench`` or ``drills`` part (nor ``seams``, which only ``check`` reads), nor ``check``'s
machinery or ``unittest.mock`` (the harness's, which imports ``asyncio``: most of what a command
used to pay). Proved on a copy of the package with a line that raises planted at the end of
every such part (the negative control: the same line makes each reader of that part name it).
``check`` reads its parts when it runs: one that cannot be read is named, its ops skipped,
and with nothing left to run, exit 2; ``tools/bench`` and the drift drills name theirs too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from inductor_fix.check.parts import KINDS, check_ops
from inductor_fix.patches import PATCHES

ROOT = Path(__file__).resolve().parents[1]
#: Every file of a patch's folder that is read only by what uses it (``check``'s seams too).
PART_FILES = (*KINDS, "seams")
#: The first patch with a check part, and its first op.
WITH_OPS = next(((patch, next(iter(check_ops(patch)))) for patch in PATCHES if check_ops(patch)), None)

#: Runs the ``inductor-fix`` program's own entry (``_inductor_fix_autoload.cli``) with the
#: arguments in argv[1] (JSON), ``run``'s ``exec`` replaced by an exit, and prints what it loaded.
DRIVER = """
import json, os, sys
arguments, parts = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["inductor-fix", *arguments]
os.execve = lambda *args: sys.exit(0)  # run's exec: the command is not what this measures
import _inductor_fix_autoload
try:
    status = _inductor_fix_autoload.cli()
except SystemExit as stop:
    status = stop.code
import inductor_fix
# unittest.mock: where torch is not loaded (import torch imports it itself)
loaded = sorted(m for m in sys.modules if (m == "unittest.mock" and "torch" not in sys.modules)
                or m.startswith("inductor_fix.check")
                or (m.startswith("inductor_fix.patches.") and m.rpartition(".")[2] in parts))
print("LOADED " + json.dumps({"status": status, "loaded": loaded, "package": inductor_fix.__file__}))
"""


#: The line :func:`planted_copy` appends by default: an error as the file loads, naming where.
RAISES = 'raise RuntimeError("planted in {folder}/{kind}.py")'
#: What a file may raise as it loads, each planted line by what its reader must name: an error, and
#: what is not an ``Exception`` (``SystemExit``: a reader that caught only errors ended with it).
PLANTS = {"RuntimeError": RAISES, "SystemExit": 'raise SystemExit("planted in {folder}/{kind}.py")'}


def planted_copy(directory: Path, kinds: tuple[str, ...] = PART_FILES, patches: tuple = PATCHES,
                 line: str = RAISES) -> Path:
    """A copy of the package, its start-up modules and ``tools/`` in ``directory``, with ``line``
    (``{folder}`` and ``{kind}`` filled in; default: one that raises) at the end of each ``kinds``
    file of each of ``patches``' folders."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "inductor_fix", directory / "inductor_fix", ignore=ignore)
    shutil.copytree(ROOT / "tools", directory / "tools", ignore=ignore)
    shutil.copytree(ROOT / "test", directory / "test", ignore=ignore)
    for name in ("_inductor_fix_autoload.py", "_inductor_fix_startup.py"):
        shutil.copy2(ROOT / name, directory / name)
    for patch in patches:
        for kind in kinds:
            path = directory / "inductor_fix" / "patches" / patch.folder / f"{kind}.py"
            if path.is_file():
                with path.open("a") as handle:
                    handle.write(f"\n{line.format(folder=patch.folder, kind=kind)}\n")
    return directory


def in_copy(copy: Path, *args: str, timeout: float = 600, autoload: bool = False,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python ARGS`` with the copy first on ``sys.path`` (and only the copy of the package: the
    installed one's autoload off; ``autoload``: on, where torch's entry point then loads the copy's
    entry module, first on ``sys.path``), in ``cwd`` (default: the copy)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
    env.update(PYTHONPATH=str(copy), INDUCTOR_FIX_AUTOLOAD="1" if autoload else "0")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd or copy, env=env,
                          timeout=timeout)


class TestCommandsReadNoPart(unittest.TestCase):
    """Every part broken: the commands that never read a part work, and load none of them."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_planted_"))
        cls.copy = planted_copy(cls.directory)
        cls.report = cls.directory / "job.jsonl"
        cls.report.write_text(json.dumps({"format": 1, "pid": 1, "state": "applied", "benchmarks": 1,
                                          "patches": [{"name": PATCHES[0].name, "state": "applied"}]}) + "\n")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.directory, ignore_errors=True)

    def _command(self, *args: str) -> dict:
        result = in_copy(self.copy, "-c", DRIVER, json.dumps(args), json.dumps(PART_FILES))
        lines = [line for line in result.stdout.splitlines() if line.startswith("LOADED ")]
        self.assertTrue(lines, result.stdout + result.stderr)
        loaded = json.loads(lines[-1][len("LOADED "):])
        self.assertTrue(loaded["package"].startswith(str(self.copy)), loaded)  # the copy ran, not the checkout
        self.assertNotIn("planted", result.stderr)
        return loaded

    def test_status_without_loading(self) -> None:
        loaded = self._command("status", "--no-load")
        self.assertEqual((loaded["status"], loaded["loaded"]), (0, []))

    def test_status(self) -> None:  # Inductor loaded, each patch decided: still no part
        loaded = self._command("status")
        self.assertEqual((loaded["status"], loaded["loaded"]), (0, []))

    def test_run(self) -> None:
        loaded = self._command("run", "--", "true")
        self.assertEqual((loaded["status"], loaded["loaded"]), (0, []))

    def test_report(self) -> None:
        loaded = self._command("report", str(self.report))
        self.assertEqual((loaded["status"], loaded["loaded"]), (0, []))

    def test_import(self) -> None:
        code = ("import json, sys, inductor_fix; mock = 'unittest.mock' in sys.modules;"
                "import torch._inductor.select_algorithm; parts = set(json.loads(sys.argv[1]));"
                "print(mock, json.dumps(sorted(m for m in sys.modules if m.startswith('inductor_fix.check')"
                " or (m.startswith('inductor_fix.patches.') and m.rpartition('.')[2] in parts))),"
                " inductor_fix.status().state)")
        result = in_copy(self.copy, "-c", code, json.dumps(PART_FILES))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["False", "[]", "applied"])

    def test_control_a_reader_of_the_parts_meets_the_planted_line(self) -> None:
        # Negative control: the planted lines raise where a part is read.
        code = ("from inductor_fix.check.parts import load_parts; import json; "
                "print(json.dumps({kind: load_parts(kind).broken for kind in ('check', 'bench', 'drills')}))")
        result = in_copy(self.copy, "-c", code)
        broken = json.loads(result.stdout)
        for kind, names in broken.items():
            with self.subTest(kind=kind):
                self.assertTrue(names, kind)
                self.assertTrue(all("RuntimeError: planted in" in reason for reason in names.values()), names)


class TestCheckNamesAPartItCannotRead(unittest.TestCase):
    def setUp(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_planted_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def test_every_check_part_broken_nothing_can_run(self) -> None:
        for raised, line in PLANTS.items():
            with self.subTest(planted=raised):
                copy = planted_copy(self.directory / raised, kinds=("check",), line=line)
                result = in_copy(copy, "-m", "inductor_fix", "check")
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                text = " ".join(result.stdout.split())
                for patch in PATCHES:
                    if (ROOT / "inductor_fix" / "patches" / patch.folder / "check.py").is_file():
                        self.assertIn(f"skipped {patch.name}: its check part cannot be read", text)
                        self.assertIn(f"{raised}: planted in {patch.folder}/check.py", text)
                self.assertIn("no op can run", result.stderr)
                self.assertNotIn("Traceback", result.stderr)

    @unittest.skipIf(WITH_OPS is None, "no patch has a check op")
    def test_one_check_part_broken_the_others_are_offered(self) -> None:
        patch, op = WITH_OPS
        for raised, line in PLANTS.items():
            with self.subTest(planted=raised):
                copy = planted_copy(self.directory / raised, kinds=("check",), patches=(patch,), line=line)
                helped = in_copy(copy, "-m", "inductor_fix", "check", "--help")
                self.assertEqual(helped.returncode, 0, helped.stderr)
                text = re.sub(r"-\s+", "-", " ".join(helped.stdout.split()))  # argparse wraps after a hyphen too
                self.assertIn(f"{patch.name}'s check part cannot be read", text)
                others = [o for p in PATCHES if p is not patch for o in check_ops(p)]
                for other in others:
                    self.assertIn(other, helped.stdout)
                asked = in_copy(copy, "-m", "inductor_fix", "check", "--ops", op)
                self.assertEqual(asked.returncode, 2)
                self.assertIn(f"unknown op '{op}'", asked.stderr)
                self.assertIn(f"{patch.name}'s check part cannot be read", asked.stderr)
                self.assertIn(f"{raised}: planted", asked.stderr)

    def test_control_nothing_planted_nothing_named(self) -> None:
        copy = planted_copy(self.directory, kinds=())
        helped = in_copy(copy, "-m", "inductor_fix", "check", "--help")
        self.assertEqual(helped.returncode, 0, helped.stderr)
        self.assertNotIn("cannot be read", helped.stdout)


class TestToolsNameAPartTheyCannotRead(unittest.TestCase):
    def setUp(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_planted_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def test_bench(self) -> None:
        broken = [p for p in PATCHES if (ROOT / "inductor_fix" / "patches" / p.folder / "bench.py").is_file()]
        for raised, line in PLANTS.items():
            with self.subTest(planted=raised):
                copy = planted_copy(self.directory / raised, kinds=("bench",), line=line)
                helped = in_copy(copy, "tools/bench", "--help")
                self.assertEqual(helped.returncode, 0, helped.stderr)
                self.assertIn("startup", helped.stdout)  # the other benchmarks stay
                for patch in broken:
                    self.assertIn(f"{patch.folder}", helped.stdout)
                    asked = in_copy(copy, "tools/bench", patch.folder)
                    self.assertEqual(asked.returncode, 2)
                    self.assertIn(f"{raised}: planted in {patch.folder}/bench.py", asked.stderr)

    def test_drift_drills(self) -> None:
        expected = [p.name for p in PATCHES if (ROOT / "inductor_fix" / "patches" / p.folder / "drills.py").is_file()]
        for raised, line in PLANTS.items():
            with self.subTest(planted=raised):
                copy = planted_copy(self.directory / raised, kinds=("drills",), line=line)
                code = ("import sys; sys.path.insert(0, 'test'); import drift, json; "
                        "print(json.dumps(drift.unreadable()))")
                result = in_copy(copy, "-c", code)
                self.assertEqual(result.returncode, 0, result.stderr)
                broken = json.loads(result.stdout)
                self.assertEqual(sorted(broken), sorted(expected))
                self.assertTrue(all(f"{raised}: planted" in reason for reason in broken.values()), broken)


if __name__ == "__main__":
    unittest.main()
