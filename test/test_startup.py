"""One start-up path, and a broken patch costs only itself.

``python -m inductor_fix CMD`` and ``inductor-fix CMD`` are one program: each command loads the
same modules of the package and exits the same way in both forms, with a fault planted in a patch
or not (:class:`TestOneProgram`, ``-X importtime``: every import, however late). A fault planted in
any file of one patch's folder (its entry, its activity kinds, its fix; its parts are
test_loading's), an entry or fix whose fields are not of their declared types, or a module that
raises what is not an ``Exception`` (``SystemExit``) leaves that patch ``unsupported`` with the
reason and the others as they are, and ``status``, ``report``, ``run``, ``import inductor_fix``
and Inductor's import (the autoload hook) working; ``report`` imports no fix at all; a real Ctrl-C
still ends the process (:class:`TestABrokenPatchCostsOnlyItself`). The start-up's state is one object
(:class:`TestStartupObject`).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import tempfile
import unittest
from pathlib import Path

from test_loading import RAISES, in_copy, planted_copy

from inductor_fix.patches import PATCHES, Patch

#: The console script pip writes for ``inductor-fix = _inductor_fix_autoload:cli`` (its text, so
#: that the form runs with the copy's modules first on ``sys.path``, as the installed one does).
CONSOLE_SCRIPT = """\
import re
import sys
from _inductor_fix_autoload import cli
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(cli())
"""

#: What a torch that cannot be imported raises (a CUDA build without its libraries, a half-built checkout).
BROKEN_TORCH = "planted: libtorch_cpu.so: cannot open shared object file"

#: The files of a patch's folder the core reads: its entry, its activity kinds, its fix.
CORE = ("__init__", "activity", "fix")

#: Faults of a patch other than an error as a file loads (each: the file, the line appended to
#: it, what its reason must name): an entry whose fields are not of the types ``Patch`` and
#: ``Crash`` declare (``errors`` a str, whose characters would each be a pattern) or whose errors
#: are no regular expression; a ``FIX`` whose targets are no mapping; a module that raises what
#: is not an ``Exception`` (``SystemExit``, which ended every process that loaded Inductor).
MALFORMED = (
    ("__init__", "PATCH = PATCH._replace(activity=None)", "Patch.activity"),
    ("__init__", "PATCH = PATCH._replace(crash=None)", "Patch.crash"),
    ("__init__", "PATCH = PATCH._replace(crash=PATCH.crash._replace(errors='TypeError: launcher'))", "Crash.errors"),
    ("__init__", "PATCH = PATCH._replace(crash=PATCH.crash._replace(errors=('(',)))", "Crash.errors[0]"),
    ("__init__", "PATCH = PATCH._replace(crash=PATCH.crash._replace(generic=('(',)))", "Crash.generic[0]"),
    ("__init__", "class Planted(BaseException): pass\nraise Planted('planted')", "Planted: planted"),
    ("fix", "raise SystemExit(3)", "SystemExit: 3"),
    ("fix", "FIX = FIX._replace(targets=None)", "Fix.targets"),
)

#: Runs, in one process with the copy first on sys.path: ``report FILE`` (then which fix modules
#: are loaded), an import of Inductor's ``select_algorithm`` (the hook every process that compiles
#: runs: torch's autoload, where the package is installed), ``run -- true`` (its exec replaced by an
#: exit), ``status`` and the API's status.
DRIVER = """
import contextlib, io, json, os, re, sys, warnings
warnings.simplefilter("always")
os.execve = lambda *args: sys.exit(0)
from _inductor_fix_autoload import cli
import _inductor_fix_startup

def command(*words):
    sys.argv = ["inductor-fix", *words]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = cli()
    except SystemExit as stop:
        code = stop.code
    return code, out.getvalue()

fixes = lambda: sorted(m for m in sys.modules if re.fullmatch(r"inductor_fix\\.patches\\.\\w+\\.fix", m))
found = {"report": command("report", sys.argv[1]), "fixes_after_report": fixes()}
import torch._inductor.select_algorithm
found.update(routes=_inductor_fix_startup.STARTUP.routes, run=command("run", "--", "true"), status=command("status"))
import inductor_fix
status = inductor_fix.status()
found["states"] = {p.name: [str(p.state), p.reason] for p in status.patches}
print("FOUND " + json.dumps(found))
"""


def console_script(directory: Path) -> Path:
    path = directory / "inductor-fix"
    path.write_text(CONSOLE_SCRIPT)
    return path


def package_modules(stderr: str) -> list[str]:
    """The package's modules (and those beside it) that ``-X importtime`` says were imported,
    ``python -m``'s ``inductor_fix.__main__`` aside (the console script's ``__main__`` is the script)."""
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| ( *)(\S+)$", stderr, re.MULTILINE)
    return sorted({name for _, name in names if re.match(r"_?inductor_fix", name)} - {"inductor_fix.__main__"})


class TestOneProgram(unittest.TestCase):
    """Both forms of the command: the same modules, the same exit, faults planted or not."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_forms_"))
        cls.report = cls.directory / "job.jsonl"
        cls.report.write_text(json.dumps({"format": 1, "pid": 1, "state": "applied", "benchmarks": 1,
                                          "patches": [{"name": PATCHES[0].name, "state": "applied"}]}) + "\n")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.directory, ignore_errors=True)

    def forms(self, copy: Path, *words: str, cwd: Path | None = None) -> dict[str, tuple[int, list[str], str, str]]:
        """Each form's exit status, the package's modules it loaded, its stderr and its stdout."""
        script = console_script(copy)
        found = {}
        for form, head in (("inductor-fix", [str(script)]), ("python -m inductor_fix", ["-m", "inductor_fix"])):
            result = in_copy(copy, "-X", "importtime", *head, *words, cwd=cwd)
            said = "\n".join(line for line in result.stderr.splitlines() if not line.startswith("import time:"))
            found[form] = (result.returncode, package_modules(result.stderr), said, result.stdout)
        return found

    def assert_one_program(self, copy: Path, *words: str, status: int,
                           cwd: Path | None = None) -> dict[str, tuple[int, list[str], str, str]]:
        found = self.forms(copy, *words, cwd=cwd)
        script, module = found["inductor-fix"], found["python -m inductor_fix"]
        with self.subTest(command=words):
            self.assertEqual(script[0], status, script[2])
            self.assertEqual(module[:2], script[:2], f"{words}: python -m {module[2]}\nscript {script[2]}")
            self.assertIn("_inductor_fix_autoload", script[1])  # the measure sees the program's entry
        return found

    def test_every_command_without_a_fault(self) -> None:
        copy = planted_copy(self.directory / "clean", kinds=())
        for words, status in ((("run", "--", "true"), 0), (("status", "--no-load"), 0),
                              (("report", str(self.report)), 0), (("--version",), 0), (("status", "--jsn"), 2)):
            self.assert_one_program(copy, *words, status=status)

    def test_a_torch_that_cannot_be_imported(self) -> None:
        # A broken torch first on the path (PYTHONPATH): status said "pending ... waiting for
        # Inductor", exit 0; both forms now say torch cannot be imported, with its error, exit 1.
        copy = planted_copy(self.directory / "broken-torch", kinds=())
        (copy / "torch").mkdir()
        (copy / "torch" / "__init__.py").write_text(f'raise ImportError("{BROKEN_TORCH}")\n')
        found = self.assert_one_program(copy, "status", status=1)
        for form, (_, _, stderr, stdout) in found.items():
            with self.subTest(form=form):
                headline = " ".join(stdout.split("  autoload:")[0].split())
                self.assertIn(f"torch cannot be imported: ImportError: {BROKEN_TORCH}", headline)
                self.assertIn(str(copy / "torch"), headline)  # which torch
                self.assertIn("torch cannot be imported", stderr)
                self.assertNotIn("waiting for", headline)
                self.assertNotIn("Traceback", stderr)

    def test_a_torch_folder_in_the_working_directory(self) -> None:
        # A PyTorch checkout as the working directory: python -m put it first on sys.path, where it
        # stood in for the environment's torch (python -m: "pending", the console script: "applied").
        # Both describe the environment's torch, as python -m pip does.
        copy = planted_copy(self.directory / "torch-folder", kinds=())
        checkout = self.directory / "pytorch-checkout"
        (checkout / "torch").mkdir(parents=True)
        (checkout / "torch" / "__init__.py").write_text(f'raise ImportError("{BROKEN_TORCH}")\n')
        found = self.assert_one_program(copy, "status", status=0, cwd=checkout)
        script, module = found["inductor-fix"], found["python -m inductor_fix"]
        self.assertEqual(module[3].splitlines()[0], script[3].splitlines()[0])
        self.assertNotIn("torch cannot be imported", module[3])

    def test_a_working_directory_since_deleted(self) -> None:
        # python -m then puts nothing first on sys.path: nothing to take off, and no error asking where it was.
        copy = planted_copy(self.directory / "gone", kinds=())
        gone = Path(tempfile.mkdtemp(dir=self.directory))
        code = (f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); "
                "os.execv(sys.executable, [sys.executable, '-m', 'inductor_fix', '--version'])")
        result = in_copy(copy, "-c", code)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.startswith("inductor-fix "), result.stdout)

    def test_a_fault_in_each_core_file_of_a_patch(self) -> None:
        patch = PATCHES[-1]
        for kind in CORE:
            with self.subTest(planted=kind):
                copy = planted_copy(self.directory / kind, kinds=(kind,), patches=(patch,))
                for words in (("run", "--", "true"), ("status", "--no-load"), ("report", str(self.report))):
                    self.assert_one_program(copy, *words, status=0)


class TestABrokenPatchCostsOnlyItself(unittest.TestCase):
    """A fault planted in each core file of one patch: that patch unsupported, with the reason;
    the others as in a copy without the fault; every command works; report imports no fix."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_broken_"))
        cls.report = cls.directory / "job.jsonl"
        # Two processes: one that did nothing, one that died in a compile of an error no patch's
        # crash looks like (the reader asks every patch's Crash of it).
        patches = [{"name": p.name, "state": "applied"} for p in PATCHES]
        died = {"error": "FileNotFoundError: [Errno 2] No such file or directory: 'planted'", "in_compile": True}
        cls.report.write_text("".join(json.dumps({"format": 1, "pid": pid, "state": "applied", "benchmarks": 1,
                                                  "patches": patches, **extra}) + "\n"
                                      for pid, extra in ((1, {}), (2, {"exit_error": died}))))
        cls.clean = cls.drive(planted_copy(cls.directory / "clean", kinds=()))

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.directory, ignore_errors=True)

    @classmethod
    def drive(cls, copy: Path) -> dict:
        result = in_copy(copy, "-c", DRIVER, str(cls.report), autoload=True)
        lines = [line for line in result.stdout.splitlines() if line.startswith("FOUND ")]
        if not lines:
            raise AssertionError(result.stdout + result.stderr)
        return {**json.loads(lines[-1][len("FOUND "):]), "stderr": result.stderr}

    def test_the_clean_copy_applies_every_patch_it_can(self) -> None:
        # The control the faults are compared with: no patch unsupported, no fix loaded by report.
        self.assertEqual(self.clean["fixes_after_report"], [])
        self.assertNotIn("unsupported", [state for state, _ in self.clean["states"].values()])
        self.assertEqual([self.clean[c][0] for c in ("run", "status")], [0, 0])
        self.assertIn(self.clean["report"][0], (0, 1))  # read (1: a process died: needed unknown)
        self.assertIn("FileNotFoundError", self.clean["report"][1])
        # The hook that Inductor's import runs came from torch's entry point too (the package is
        # installed, as README's test command has it): the autoload route met each fault.
        self.assertIn("autoload", self.clean["routes"], "install the package: pip install -e .")

    def planted(self, kind: str, line: str) -> tuple[Patch, dict]:
        """The last applied patch of the table and what the commands found with ``line`` planted at
        the end of its ``kind`` file. The last: a later patch's decision may probe an earlier one's
        wrapper (the table's docstring), never the reverse, so the others decide as without it."""
        applied = [p for p in PATCHES if self.clean["states"][p.name][0] == "applied"]
        self.assertTrue(applied, self.clean["states"])
        copy = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=self.directory))
        return applied[-1], self.drive(planted_copy(copy, kinds=(kind,), patches=applied[-1:], line=line))

    def assert_costs_only_itself(self, patch: Patch, found: dict, reason: str) -> None:
        """``patch`` unsupported, its reason naming ``reason``; every command as in the clean copy."""
        self.assertEqual([found[c][0] for c in ("run", "status")], [0, 0], found)
        self.assertEqual(found["report"], self.clean["report"])  # the report reads the line as without the fault
        self.assertEqual(found["fixes_after_report"], [])
        self.assertEqual(found["routes"], self.clean["routes"])
        state, said = found["states"][patch.name]
        self.assertEqual(state, "unsupported")
        self.assertIn(reason, said)
        others = {name: value for name, value in found["states"].items() if name != patch.name}
        self.assertEqual(others, {n: v for n, v in self.clean["states"].items() if n != patch.name})
        self.assertIn(f"{patch.name}", found["status"][1])
        self.assertIn(reason, " ".join(found["status"][1].split()))  # status says why
        self.assertEqual(found["stderr"].count(reason), 1, found["stderr"])  # one warning
        self.assertNotIn("Traceback", found["stderr"])

    def test_a_fault_in_each_core_file(self) -> None:
        for kind in CORE:
            with self.subTest(planted=kind):
                patch, found = self.planted(kind, RAISES)
                self.assert_costs_only_itself(patch, found, f"RuntimeError: planted in {patch.folder}/{kind}.py")

    def test_a_malformed_entry_or_fix_or_a_base_exception(self) -> None:
        for kind, line, reason in MALFORMED:
            with self.subTest(planted=line, file=kind):
                patch, found = self.planted(kind, line)
                self.assert_costs_only_itself(patch, found, reason)

    def test_a_real_ctrl_c_still_ends_the_process(self) -> None:
        # A SIGINT while a patch's entry or fix loads (Python's handler raises KeyboardInterrupt
        # there): the process ends as Python ends it, by SIGINT, where the faults above cost only
        # their patch. (A module that raises KeyboardInterrupt itself reads the same: it ends too.)
        line = "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)"
        for kind in ("__init__", "fix"):
            with self.subTest(planted=kind):
                copy = planted_copy(self.directory / f"ctrl-c-{kind}", kinds=(kind,), patches=PATCHES[-1:], line=line)
                code = "import inductor_fix; inductor_fix.status(); print('carried on')"
                result = in_copy(copy, "-c", code, timeout=60)
                self.assertEqual(result.returncode, -signal.SIGINT, result.stdout + result.stderr)
                self.assertNotIn("carried on", result.stdout)
                self.assertIn("KeyboardInterrupt", result.stderr)


class TestStartupObject(unittest.TestCase):
    """The start-up's state is one object: its routes, its importer, what failed."""

    def test_routes_in_one_place(self) -> None:
        import _inductor_fix_startup as startup

        found = startup.Startup()
        found.start("import", lambda: None)
        found.start("cli")  # python -m inductor_fix: __init__ ran first; the program claims its import
        self.assertEqual(found.routes, ["cli"])
        found.start("import")  # the program's own import of its package
        self.assertEqual(found.routes, ["cli"])
        startup.unregister(startup.INDUCTOR, found._on_inductor)
        startup.unregister(startup.TORCH_LOGS, found._on_torch)

    def test_the_package_re_exports_the_api(self) -> None:
        import inductor_fix
        from inductor_fix import _api

        self.assertEqual(inductor_fix.__all__, _api.__all__)
        for name in _api.__all__:  # the API's objects, not the submodule inductor_fix.status
            self.assertIs(getattr(inductor_fix, name), getattr(_api, name), name)

    def test_import_only_starts_the_package(self) -> None:
        # The API (and the lifecycle, the table, every fix) is imported at its first use.
        code = ("import sys, inductor_fix; before = '_api' in dir(inductor_fix) or 'inductor_fix._api' in sys.modules; "
                "state = inductor_fix.status().state; print(before, 'inductor_fix._api' in sys.modules, state)")
        result = in_copy(Path(__file__).resolve().parents[1], "-c", code, timeout=120)
        self.assertEqual(result.stdout.split(), ["False", "True", "pending"], result.stderr)

    def test_quiet_when_hooked_loud_when_asked(self) -> None:
        import _inductor_fix_startup as startup

        found = startup.Startup()

        def broken() -> None:
            raise ImportError("planted")

        found.importer = broken
        with self.assertWarnsRegex(RuntimeWarning, r"not applied \(\?\): ImportError: planted"):
            self.assertFalse(found.activate())
        self.assertFalse(found.activate())  # not tried again quietly: no second warning
        with self.assertRaisesRegex(ImportError, "planted"):
            found.activate(explicit=True)


if __name__ == "__main__":
    unittest.main()
