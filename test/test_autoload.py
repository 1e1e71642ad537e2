"""Installed means protected: the built wheel in a fresh venv, and scripts that never import
``inductor_fix`` before torch has loaded (torch's ``torch.backends`` entry point brings it).

One wheel and one venv serve the whole module (built in ``setUpModule``): the venv sees this
interpreter's torch (its site-packages, less any inductor-fix) through a ``.pth`` file, as
``.ci/run``'s wheel venv does, and its own
site-packages come first, so its ``inductor-fix`` (metadata and entry point) is the one
torch finds. Every script records whether the package is there once Inductor has loaded (the
entry point imports it then; ``import torch`` alone registers a post-import hook);
the CPU harness lives in the package, so a script imports it only after that record.

The job these tests compile is the check table's first op in its first sequence, whichever
patch shows it (:data:`OP`, :data:`ORDER`). Negative controls: ``INDUCTOR_FIX_AUTOLOAD=0`` and
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` leave the process stock: that sequence crashes there on an
affected torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from unittest import mock

from helpers import OP, ORDER, TOLERANCE, is_affected, needs_a_check_op, requires_cuda
from quick_autotuning import ENVIRONMENT as AUTOTUNING

from inductor_fix.check.table import steps_of
from inductor_fix.check.parts import by_op
from inductor_fix.patches import PATCHES
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from torchenv import borrowing_venv, site_packages, unmet_build_requirements  # noqa: E402

#: What the wheel is built from (a copy: the build leaves nothing in the checkout).
SOURCES = ("inductor_fix", "_inductor_fix_autoload.py", "_inductor_fix_startup.py", "pyproject.toml", "README.md",
           "LICENSE", "tools/build_backend.py")
VENV: dict[str, Path] = {}

#: The job: the check table's first op in its first sequence (its patch's workload), whichever
#: patch of the table shows it; the tests that run it skip when no patch has a check op.

#: The job's script: ``OP ORDER [DEVICE]``, ``cpu`` (the default) on the Triton-on-CPU harness,
#: ``cuda`` with real kernels compared with eager.
JOB = """
import contextlib, json, sys
import torch
import torch._inductor.select_algorithm  # what a compile imports first; the fix comes with it
autoloaded = "inductor_fix" in sys.modules
op, order = sys.argv[1:3]
device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.table import run_sequence
fix = sys.modules["inductor_fix"]
if not autoloaded:  # the harness import just imported the package: undo it, as a stock process is
    fix.remove()
sys.path.insert(0, TEST_FOLDER)  # quick_autotuning (it imports nothing of the package)
from quick_autotuning import autotuning
with autotuning(device), \\
        triton_cpu_harness() if device == "cpu" else contextlib.nullcontext():
    steps = run_sequence(op, order, device, compare=device != "cpu")
status = fix.status()
print("PROBE " + json.dumps({"autoloaded": autoloaded, "state": str(status.state),
                             "activated_by": list(status.activated_by), "errors": [s.error for s in steps],
                             "max_rel_error": [s.max_rel_error for s in steps]}))
"""
JOB = JOB.replace("TEST_FOLDER", repr(str(Path(__file__).resolve().parent)))
#: Whether the package came with torch, its state once Inductor loaded, and its report line.
PROBE = """
def probe(tag):
    import json, os, sys
    import torch._inductor.select_algorithm  # noqa: F401
    autoloaded = "inductor_fix" in sys.modules
    fix = sys.modules.get("inductor_fix")
    status = fix.status() if fix else None
    line = "PROBE " + json.dumps({"tag": tag, "pid": os.getpid(), "autoloaded": autoloaded,
                                  "state": str(status.state) if status else None,
                                  "activated_by": list(status.activated_by) if status else []}) + "\\n"
    # One write per line: ranks share the pipe, and print() writes the text and its newline
    # apart, so two ranks' lines could interleave.
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), line.encode())
"""
#: One wrap per target whatever the order, and remove() undoes all of it.
WRAPS = """
import json, sys
import torch._inductor.select_algorithm as select_algorithm
fix = sys.modules["inductor_fix"]
from inductor_fix._lifecycle import LIFECYCLE
from inductor_fix._undo import MARKER
from inductor_fix.patches import PATCHES
from inductor_fix.patches.target_names import split_target, target_module
applied = [p for p in PATCHES if str(fix.status().patch(p.name).state) == "applied"]
# Each target in a module this torch has loaded (a patch may name where each release keeps it).
targets = [t for p in applied for t in p.targets if target_module(t) in sys.modules]
entries = [(id(e.owner), e.attribute, e.patch) for e in LIFECYCLE._undo._stack]
originals_clean = all(getattr(fix.original(t), MARKER, None) is None for t in targets)
fix.remove()
# A target the class only inherits has no slot of its own once removed.
owners = [vars(sys.modules[target_module(t)])[split_target(t)[0]] for t in targets]
slots = [vars(owner).get(split_target(t)[1]) for owner, t in zip(owners, targets)]
print("PROBE " + json.dumps({
    "activated_by": list(fix.status().activated_by), "targets": len(targets), "entries": len(entries),
    "unique": len(set(entries)), "originals_clean": originals_clean,
    "left_after_remove": len(LIFECYCLE._undo) + sum(getattr(s, MARKER, None) is not None for s in slots)}))
"""


def setUpModule() -> None:
    directory = Path(tempfile.mkdtemp(prefix="inductor_fix_autoload_"))
    VENV["dir"] = directory
    source = directory / "inductor-fix"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        copy(ROOT / name, source / name)
    # pyproject's build requirements met here: build with them, no download; else pip fetches them.
    unmet = unmet_build_requirements(sys.executable, ROOT)
    build = [sys.executable, "-m", "pip", "wheel", *([] if unmet else ["--no-build-isolation"]), "--no-deps",
             "--disable-pip-version-check", "-q", "-w", str(directory / "dist"), str(source)]
    built = subprocess.run(build, capture_output=True, text=True, timeout=600)
    if built.returncode:
        lacking = f"this interpreter lacks the build requirements {', '.join(unmet)} and pip could not fetch them; " \
                  "install them here (pyproject.toml's [build-system] requires). " if unmet else ""
        raise RuntimeError(f"pip could not build the wheel of this checkout: {lacking}pip said:\n"
                           f"{built.stderr[-3000:]}")
    (wheel,) = (directory / "dist").glob("inductor_fix-*.whl")
    # torch through a .pth, from a folder of links to this interpreter's site-packages without its
    # inductor-fix: Inductor puts torch's folder first on its workers' PYTHONPATH, where another
    # inductor-fix distribution would shadow the wheel's entry point (the test's artefact, not a user's).
    import torch

    venv = directory / "venv"
    python = borrowing_venv(venv, Path(torch.__file__).resolve().parents[1])
    install_wheel(python, wheel)
    VENV.update(python=python, bin=venv / "bin", wheel=wheel)


def install_wheel(python: Path, wheel: Path) -> None:
    """Install ``wheel`` into the venv of ``python``; AssertionError if it is not there after.
    PYTHONPATH is cleared: a checkout on it holding an ``inductor_fix.egg-info`` (``pip install
    .`` leaves one) reads to pip as an installed inductor-fix, and pip would skip the wheel."""
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                    "--disable-pip-version-check", str(wheel)], check=True, capture_output=True, timeout=600,
                   env=_environment())
    if not list(Path(site_packages(python)).glob("inductor_fix-*.dist-info")):
        raise AssertionError(f"the wheel did not install into {python}'s venv: nothing here would test it")


def tearDownModule() -> None:
    shutil.rmtree(VENV.get("dir", "/nonexistent"), ignore_errors=True)


def _environment(**overrides: str) -> dict[str, str]:
    """This environment without the package's settings, torch's autoload switch and PYTHONPATH; the
    tests' autotuning setting (quick_autotuning.ENVIRONMENT) stays, as in every child of a test."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("INDUCTOR_FIX_", "TORCH_DEVICE_BACKEND_AUTOLOAD", "TORCH_TRACE", "TORCH_LOGS"))
           and k != "PYTHONPATH" or k == AUTOTUNING}
    return {**env, **overrides}


def _probes(output: str) -> list[dict]:
    return [json.loads(line.split(" ", 1)[1]) for line in output.splitlines() if line.startswith("PROBE ")]


class AutoloadCase(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.directory = Path(tempfile.mkdtemp(prefix="job_", dir=VENV["dir"]))

    def _script(self, name: str, code: str) -> str:
        path = self.directory / name
        path.write_text(textwrap.dedent(code))
        return str(path)

    def _run(self, *command: str | Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout,
                              cwd=self.directory, env=_environment(**env))

    def _python(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess:
        return self._run(VENV["python"], *args, **env)


class TestInstalledProtects(AutoloadCase):
    def test_the_wheel_is_the_one_imported(self) -> None:
        code = "import torch._inductor.select_algorithm, sys; m = sys.modules['inductor_fix']; print(m.__file__)"
        result = self._python("-c", code)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.strip().startswith(str(VENV["dir"])), result.stdout)

    @needs_a_check_op
    def test_job_protected_reported_and_traced(self) -> None:
        script = self._script("job.py", JOB)
        report, trace = self.directory / "job.jsonl", self.directory / "trace"
        protected = self._python(script, OP, ORDER, INDUCTOR_FIX_REPORT=str(report), TORCH_TRACE=str(trace))
        (outcome,) = _probes(protected.stdout) or [protected.stderr[-3000:]]
        steps = steps_of(OP, ORDER)
        self.assertEqual(outcome, {"autoloaded": True, "state": "applied", "activated_by": ["autoload"],
                                   "errors": [None] * steps, "max_rel_error": [None] * steps})
        summary = self._run(VENV["bin"] / "inductor-fix", "report", report)
        self.assertEqual(summary.returncode, 0, summary.stdout + summary.stderr)
        if is_affected(OP):
            self.assertEqual(summary.stdout.splitlines()[0], "needed: yes", summary.stdout)
        # TORCH_TRACE: each decision and each action is an artifact, and tlparse shows them. What
        # the op's patch did is an artifact of one of its kinds.
        kinds = [f"inductor_fix_{kind}" for kind in by_op(OP).activity.kinds]
        logs = "".join(path.read_text() for path in trace.glob("*.log"))
        self.assertIn('"name": "inductor_fix_decision"', logs)
        if is_affected(OP):
            self.assertTrue(any(f'"name": "{name}"' in logs for name in kinds), kinds)
        tlparse = shutil.which("tlparse", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                              os.environ.get("PATH", "")]))
        self.assertIsNotNone(tlparse, "tlparse is not installed (it is in the test extra: pip install tlparse)")
        (log,) = sorted(trace.glob("*.log"))[:1]
        rendered = self.directory / "tlparse"
        parsed = self._run(tlparse, str(log), "-o", str(rendered), "--no-browser", "--overwrite")
        self.assertEqual(parsed.returncode, 0, parsed.stdout + parsed.stderr)
        shown = {path.name for path in rendered.rglob("*")}
        self.assertTrue(any(name.startswith("inductor_fix_decision") for name in shown), sorted(shown))
        if is_affected(OP):
            self.assertTrue(any(name.startswith(tuple(kinds)) for name in shown), sorted(shown))
            decision = next(p for p in rendered.rglob("inductor_fix_decision*"))
            self.assertIn('"state": "applied"', decision.read_text())

    @needs_a_check_op
    def test_negative_controls_stock(self) -> None:
        script = self._script("job.py", JOB)
        for switch in ({"INDUCTOR_FIX_AUTOLOAD": "0"}, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}):
            with self.subTest(**switch):
                stock = self._python(script, OP, ORDER, **switch)
                (outcome,) = _probes(stock.stdout) or [stock.stderr[-3000:]]
                self.assertEqual((outcome["autoloaded"], outcome["state"]), (False, "removed"), outcome)
                if is_affected(OP):  # the sequence stops at its crashing compile
                    self.assertRegex(str(outcome["errors"][-1]), r"^TypeError: ", outcome)

    def test_import_torch_only_registers_the_hook(self) -> None:
        code = ("import sys, torch; print(sorted(x for x in sys.modules if x.startswith(('torch._inductor', "
                "'inductor_fix'))), any(type(f).__module__ == '_inductor_fix_startup' for f in sys.meta_path))")
        on = self._python("-c", code, TORCH_LOGS="+inductor_fix")  # rejected unless registered in time
        off = self._python("-c", code, INDUCTOR_FIX_AUTOLOAD="0")
        self.assertEqual(on.returncode, 0, on.stderr)
        self.assertEqual(on.stdout.replace("True", "False"), off.stdout, on.stderr)  # no module more
        self.assertEqual((on.stdout.split()[-1], off.stdout.split()[-1]), ("True", "False"))
        self.assertNotIn("inductor_fix", on.stdout)
        code = "import sys, torch._inductor.select_algorithm; print('inductor_fix' in sys.modules)"
        logged = self._python("-c", code, TORCH_LOGS="+inductor_fix")
        self.assertEqual(logged.stdout.strip(), "True", logged.stderr)
        # TORCH_LOGS took it: each patch's decision is logged.
        self.assertRegex(logged.stderr, rf"inductor_fix: {PATCHES[0].name} (applied|not-needed)")
        isolated = self._python("-I", "-c", code)
        self.assertEqual(isolated.stdout.strip(), "True", isolated.stderr)  # -I: no environment, still protected

    def test_status_says_how_it_was_activated(self) -> None:
        cli = VENV["bin"] / "inductor-fix"
        for env, routes in (({}, ["cli", "autoload"]), ({"INDUCTOR_FIX_AUTOLOAD": "0"}, ["cli"])):
            with self.subTest(**env):
                result = self._run(cli, "status", "--json", **env)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(json.loads(result.stdout)["activated_by"], routes)
        text = self._run(cli, "status")
        self.assertIn("activated by: cli, autoload", text.stdout)
        bad = self._python("-c", "import sys, subprocess, torch._inductor.select_algorithm; print(sys.modules["
                                 "'inductor_fix'].status().activated_by); subprocess.run([sys.executable, '-c', "
                                 "'import torch'])",
                           INDUCTOR_FIX_AUTOLOAD="maybe")
        self.assertIn("('autoload',)", bad.stdout, bad.stderr)  # treated as on, as documented
        self.assertEqual(bad.stderr.count("INDUCTOR_FIX_AUTOLOAD='maybe' is not one of"), 1, bad.stderr)

    def test_a_fault_in_activation_never_fails_import_torch(self) -> None:
        faulty = self.directory / "faulty"
        faulty.mkdir()
        (faulty / "sitecustomize.py").write_text(textwrap.dedent("""
            import sys
            class Broken:  # a broken install: one module of the package cannot be imported
                def find_spec(self, name, path=None, target=None):
                    if name == "inductor_fix.patches":
                        raise ImportError("forced fault")
            sys.meta_path.insert(0, Broken())
        """))
        code = ("import torch, torch._inductor.select_algorithm as s; "
                "print('TORCH', torch.ones(2).sum().item(), s.TritonTemplate.generate.__module__)")
        for flags, env in (((), {}), (("-W", "error"), {}), ((), {"INDUCTOR_FIX_REPORT": "job.jsonl"})):
            with self.subTest(flags=flags, **env):  # at Inductor's import; at import torch with a report
                result = self._python(*flags, "-c", code, PYTHONPATH=str(faulty), **env)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("TORCH 2.0 torch._inductor.select_algorithm", result.stdout)  # stock
                said = [line for line in result.stderr.splitlines() if "inductor_fix" in line]
                self.assertEqual(len(said), 1, result.stderr)
                self.assertIn("not applied (autoload): ImportError: forced fault", said[0])

    def test_an_unwritable_report_is_said_once_per_job_at_start(self) -> None:
        report = self.directory / "no-such-folder" / "job.jsonl"
        code = "import subprocess, sys, torch; subprocess.run([sys.executable, '-c', 'import torch'])"
        result = self._python("-c", code, INDUCTOR_FIX_REPORT=str(report))
        self.assertEqual(result.returncode, 0, result.stderr)
        said = [line for line in result.stderr.splitlines() if "INDUCTOR_FIX_REPORT=" in line]
        self.assertEqual(len(said), 1, result.stderr)
        self.assertIn(f"no such directory: {report.parent}", said[0])


class TestEveryProcess(AutoloadCase):
    def _lines(self, report: Path) -> list[dict]:
        return [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []

    def test_torchrun_ranks(self) -> None:
        script = self._script("ranks.py", PROBE + "import os\nprobe('rank ' + os.environ['RANK'])\n")
        report = self.directory / "job.jsonl"
        launched = self._run(VENV["python"], "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                             script, INDUCTOR_FIX_REPORT=str(report), timeout=600)
        self.assertEqual(launched.returncode, 0, launched.stdout + launched.stderr[-3000:])
        probes = sorted(_probes(launched.stdout), key=lambda p: p["tag"])
        self.assertEqual([(p["tag"], p["autoloaded"], p["state"], p["activated_by"]) for p in probes],
                         [(f"rank {r}", True, "applied", ["autoload"]) for r in (0, 1)], launched.stdout)
        lines = self._lines(report)
        self.assertEqual(sorted((line["rank"], line["state"]) for line in lines), [("0", "applied"), ("1", "applied")])

    def test_multiprocessing_children_and_inductor_workers(self) -> None:
        script = self._script("children.py", PROBE + textwrap.dedent("""
            import multiprocessing, subprocess, sys

            if __name__ == "__main__":
                probe("main")
                for method in ("spawn", "forkserver"):
                    child = multiprocessing.get_context(method).Process(target=probe, args=(method,))
                    child.start()
                    child.join()
                # The environment Inductor gives its compile and autotune worker processes.
                from torch._inductor.utils import python_subprocess_env
                code = open(__file__).read().split("if __name__")[0] + "probe('worker')"
                subprocess.run([sys.executable, "-c", code], env=python_subprocess_env(), check=True)
        """))
        report = self.directory / "job.jsonl"
        launched = self._python(script, INDUCTOR_FIX_REPORT=str(report), TORCHINDUCTOR_AUTOTUNE_IN_SUBPROC="1")
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        probes = _probes(launched.stdout)
        self.assertEqual(sorted((p["tag"], p["autoloaded"], p["state"]) for p in probes),
                         sorted((tag, True, "applied") for tag in ("main", "spawn", "forkserver", "worker")),
                         launched.stdout + launched.stderr[-2000:])
        lines = {line["pid"]: line["state"] for line in self._lines(report)}
        self.assertEqual(lines, {p["pid"]: "applied" for p in probes}, report.read_text())


class TestImportOrders(AutoloadCase):
    def _wraps(self, *command: str | Path) -> dict:
        result = self._run(*command)
        (outcome,) = _probes(result.stdout) or [result.stderr[-3000:]]
        return outcome

    def test_one_wrap_per_target_and_remove_undoes_it(self) -> None:
        python = VENV["python"]
        before = self._script("before.py", "import inductor_fix\nimport torch\n" + WRAPS)
        after = self._script("after.py", "import torch\nimport inductor_fix\n" + WRAPS)
        plain = self._script("plain.py", "import torch\n" + WRAPS)
        for name, command, routes in (
                ("before torch", (python, before), [["import", "autoload"]]),
                ("after torch", (python, after), [["autoload", "import"]]),
                ("under run", (VENV["bin"] / "inductor-fix", "run", "--", python, plain),
                 [["run", "autoload"], ["autoload", "run"]])):
            with self.subTest(name):
                outcome = self._wraps(*command)
                self.assertIn(outcome["activated_by"], routes, outcome)
                self.assertGreater(outcome["targets"], 0, outcome)
                self.assertEqual((outcome["entries"], outcome["unique"]), (outcome["targets"],) * 2, outcome)
                self.assertEqual((outcome["originals_clean"], outcome["left_after_remove"]), (True, 0), outcome)


@requires_cuda
class TestInstalledProtectsGPU(AutoloadCase):
    """``check``'s first case on a GPU, protected by installation alone (real kernels)."""

    @needs_a_check_op
    def test_job_on_cuda(self) -> None:
        script = self._script("job.py", JOB)
        report = self.directory / "job.jsonl"
        protected = self._python(script, OP, ORDER, "cuda", INDUCTOR_FIX_REPORT=str(report))
        (outcome,) = _probes(protected.stdout) or [protected.stderr[-3000:]]
        stock = self._python(script, OP, ORDER, "cuda", INDUCTOR_FIX_AUTOLOAD="0")  # negative control
        (control,) = _probes(stock.stdout) or [stock.stderr[-3000:]]
        summary = self._run(VENV["bin"] / "inductor-fix", "report", report)
        print(f"\ninstalled: {outcome}\nINDUCTOR_FIX_AUTOLOAD=0: {control}\n{summary.stdout}")
        self.assertEqual((outcome["autoloaded"], outcome["state"], outcome["errors"]),
                         (True, "applied", [None] * steps_of(OP, ORDER)))
        self.assertLess(max(outcome["max_rel_error"]), TOLERANCE["float32"])
        self.assertEqual(control["autoloaded"], False)
        if is_affected(OP):
            self.assertEqual(summary.stdout.splitlines()[0], "needed: yes", summary.stdout)
            self.assertRegex(str(control["errors"][-1]), r"^TypeError: ", control)


class TestTheVenvHasTheWheel(TestCase):
    def test_an_egg_info_on_pythonpath_does_not_stand_in_for_the_wheel(self) -> None:
        # A checkout on PYTHONPATH holding an inductor_fix.egg-info, as `pip install .` leaves:
        # pip must still install the wheel into the test's venv.
        with tempfile.TemporaryDirectory() as directory:
            checkout = Path(directory, "checkout", "inductor_fix.egg-info")
            checkout.mkdir(parents=True)
            (checkout / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: inductor-fix\nVersion: 0.1.0\n")
            venv = Path(directory, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
            python = venv / "bin" / "python"
            with mock.patch.dict(os.environ, {"PYTHONPATH": str(checkout.parent)}):
                install_wheel(python, VENV["wheel"])
            self.assertTrue(list(Path(site_packages(python)).glob("inductor_fix-*.dist-info")))


class TestWhenImported(TestCase):
    """``_inductor_fix_startup.when_imported``: now if loaded, else at import; a raising callback
    never breaks the import."""

    def setUp(self) -> None:
        super().setUp()
        self.folder = Path(tempfile.mkdtemp(prefix="hooked_"))
        self.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)
        sys.path.insert(0, str(self.folder))
        self.addCleanup(sys.path.remove, str(self.folder))

    def _module(self, name: str) -> str:
        (self.folder / f"{name}.py").write_text("VALUE = 42\n")
        self.addCleanup(sys.modules.pop, name, None)
        return name

    def test_now_if_loaded_later_if_not(self) -> None:
        import importlib

        import _inductor_fix_startup as startup

        seen: list[str] = []

        def record(module) -> None:
            seen.append(module.__name__)

        name = self._module("inductor_fix_hooked_later")
        self.addCleanup(startup.unregister, name, record)
        startup.when_imported(name, record)
        self.assertEqual(seen, [])
        module = importlib.import_module(name)
        self.assertEqual((seen, module.VALUE, module.__loader__.__class__.__name__),
                         ([name], 42, "SourceFileLoader"))  # the real loader put back
        startup.when_imported(name, record)  # registered once; loaded now: called at once
        self.assertEqual(seen, [name, name])
        self.assertEqual(startup.FINDER.hooks[name].count(record), 1)

    def test_a_raising_callback_never_breaks_the_import(self) -> None:
        import importlib
        import warnings

        import _inductor_fix_startup as startup
        from inductor_fix import InductorFixWarning

        def broken(module) -> None:
            raise ValueError("hook fault")

        name = self._module("inductor_fix_hooked_broken")
        self.addCleanup(startup.unregister, name, broken)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            startup.when_imported(name, broken)
            self.assertEqual(importlib.import_module(name).VALUE, 42)
            importlib.reload(sys.modules[name])
            startup.when_imported(name, broken)  # loaded: at once, still not raised
        said = [str(w.message) for w in caught if issubclass(w.category, InductorFixWarning)]
        self.assertEqual(len(said), 1, said)  # once, however often it failed
        self.assertIn(f"the hook {broken.__qualname__} on import of {name} failed, so it did nothing: "
                      "ValueError: hook fault", said[0])


if __name__ == "__main__":
    run_tests()
