"""The edges a new user hit, each pinned: a bad report path said at start, in the same words as
``check --json``'s, a report of torn lines read without contradiction, ``check --json`` whole or
not at all and with the umask's mode, a check killed outright leaving nothing running and nothing
the next one keeps, check's banner about ``INDUCTOR_FIX_DISABLE``, the triton hint of the
installed torch, ``status`` without torch and with a moved checkout, CLI usage errors, the
diagnosis of an entry point torch cannot load, and the console script of a moved checkout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from helpers import run_python

from inductor_fix.check.table import ops, orders_of

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict | None = None, cwd: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m inductor_fix ARGS`` with this checkout first on the path."""
    full = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **(env or {})}
    return subprocess.run([sys.executable, "-m", "inductor_fix", *args], capture_output=True, text=True,
                          env=full, cwd=cwd or tempfile.gettempdir(), timeout=timeout)


class TestReportPath(unittest.TestCase):
    """A path that takes no append is refused at start (run: exit 2; the variable: a warning)."""

    @unittest.skipUnless(os.path.isfile("/proc/version"), "needs /proc")
    def test_run_refuses_a_file_that_opens_but_takes_no_write(self) -> None:
        result = cli("run", "--report", "/proc/version", "--", sys.executable, "-c", "pass")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--report /proc/version: cannot write to it", result.stderr)

    def test_run_refuses_a_device(self) -> None:
        result = cli("run", "--report", os.devnull, "--", sys.executable, "-c", "pass")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("not a regular file", result.stderr)

    @unittest.skipUnless(os.path.isfile("/proc/version"), "needs /proc")
    def test_the_variable_is_said_at_start_once(self) -> None:
        result = run_python("import warnings; warnings.simplefilter('always'); import inductor_fix, "
                            "torch._inductor.select_algorithm",
                            env={"INDUCTOR_FIX_REPORT": "/proc/version", "INDUCTOR_FIX_REPORT_WARNED": None})
        self.assertIn("$INDUCTOR_FIX_REPORT:0: InductorFixWarning: inductor_fix: INDUCTOR_FIX_REPORT=/proc/version: "
                      "cannot write to it", result.stderr)  # the variable's fault, not a line of code's
        self.assertNotIn("could not append", result.stderr)  # and not again at exit


class TestCheckJsonTarget(unittest.TestCase):
    @unittest.skipUnless(os.path.isfile("/proc/version"), "needs /proc")
    def test_a_target_that_takes_no_file_is_refused_at_start(self) -> None:
        result = cli("check", "--ops", ops()[0], "--json", "/proc/version")
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--json /proc/version: cannot write to it", result.stderr)
        self.assertNotIn("running", result.stdout)  # before any case

    def test_one_failure_reads_the_same_as_run_reports_it(self) -> None:
        """Issue 41: ``check --json /proc/version`` said "cannot create a file in /proc: No such
        file or directory" (it exists), ``run --report`` "cannot append to it: Input/output error"."""
        with tempfile.TemporaryDirectory() as directory:
            targets = [directory, os.path.join(directory, "no-such-folder", "x.json")]
            targets += ["/proc/version"] if os.path.isfile("/proc/version") else []
            for target in targets:
                checked = cli("check", "--ops", ops()[0], "--json", target)
                ran = cli("run", "--report", target, "--", sys.executable, "-c", "pass")
                self.assertEqual((checked.returncode, ran.returncode), (2, 2), target)
                said = checked.stderr.strip().split(f"--json {target}: ", 1)[-1]
                self.assertEqual(ran.stderr.strip(), f"inductor-fix run: --report {target}: {said}", checked.stderr)
            self.assertEqual(os.listdir(directory), [])  # neither left anything behind


class TestNewFilesFollowTheUmask(unittest.TestCase):
    """Issue 41: ``check --json`` wrote 0600 whatever the umask, and made an existing 0644 file
    0600; README asks users to attach that file. A new file follows the umask, as ``run --report``
    creates its file; a file replaced keeps its mode."""

    def _under_umask(self, umask: str, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        command = " ".join(["umask", umask, "&&", "exec", sys.executable, "-m", "inductor_fix", *args])
        return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env,
                              cwd=tempfile.gettempdir(), timeout=600)

    def test_check_json_and_run_report(self) -> None:
        # --timeout 0.01: every case is stopped at once (exit 2), and the file is still written.
        check = ("check", "--ops", ops()[0], "--jobs", "2", "--timeout", "0.01", "--json")
        with tempfile.TemporaryDirectory() as directory:
            for umask, mode in (("022", 0o644), ("027", 0o640), ("002", 0o664)):
                target, report = Path(directory, f"check-{umask}.json"), Path(directory, f"job-{umask}.jsonl")
                result = self._under_umask(umask, *check, str(target))
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertEqual(oct(target.stat().st_mode & 0o777), oct(mode), umask)
                self.assertIn('"exit_status": 2', target.read_text())
                ran = self._under_umask(umask, "run", "--report", str(report), "--", sys.executable, "-c", "pass")
                self.assertEqual(ran.returncode, 0, ran.stderr)
                self.assertEqual(oct(report.stat().st_mode & 0o777), oct(mode), umask)
            kept = Path(directory, "check-022.json")
            self.assertEqual(self._under_umask("077", *check, str(kept)).returncode, 2)
            self.assertEqual(oct(kept.stat().st_mode & 0o777), oct(0o644))  # replaced, its mode kept
            self.assertEqual(sorted(p.name for p in Path(directory).iterdir() if p.name.startswith(".")), [])


class TestTornReport(unittest.TestCase):
    def test_a_report_of_only_torn_lines_does_not_contradict_itself(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory, "job.jsonl")
            path.write_text('{"format":1,"pid":3,"torn')
            result = cli("report", str(path))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("skipped 1 torn or garbled line(s)", result.stdout)
        self.assertNotIn("loaded Inductor", result.stdout)
        self.assertIn("no line of the report could be used", result.stdout)


class TestCheckStoppedEarly(unittest.TestCase):
    def test_sigterm_leaves_no_json_and_the_banner_says_check_sets_disable(self) -> None:
        op = ops()[0]
        with tempfile.TemporaryDirectory() as directory:
            target = Path(directory, "result.json")
            env = dict(os.environ, INDUCTOR_FIX_DISABLE="1",
                       PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
            process = subprocess.Popen([sys.executable, "-m", "inductor_fix", "check", "--ops", op, "--jobs", "1",
                                        "--json", str(target)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, env=env, cwd=directory)
            lines = []
            deadline = time.monotonic() + 120
            for line in process.stdout:
                lines.append(line)
                if "  start " in line or time.monotonic() > deadline:
                    break
            process.send_signal(signal.SIGTERM)
            output = "".join(lines) + process.communicate(timeout=60)[0]
            self.assertEqual(process.returncode, 128 + signal.SIGTERM, output)
            self.assertEqual(sorted(os.listdir(directory)), [], output)  # no file, no temporary one
        self.assertIn("INDUCTOR_FIX_DISABLE=1 is set here: check sets it itself in each case", " ".join(output.split()))
        self.assertIn(f"start {op} {orders_of(op)[0]}", output)


def _processes_with(variable: str) -> list[int]:
    """The pids of this user's processes whose environment holds ``variable`` (``NAME=value``)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if f"\0{variable}\0".encode() in b"\0" + handle.read() + b"\0":
                    found.append(int(entry))
        except (OSError, ValueError):  # not a process, gone, another user's
            continue
    return found


@unittest.skipUnless(sys.platform.startswith("linux") and os.path.isdir("/proc"), "Linux: /proc, PR_SET_PDEATHSIG")
class TestCheckKilledOutright(unittest.TestCase):
    """Issue 41: SIGKILL to ``check`` left its case processes running to completion under PID 1,
    and their ``inductor_fix_check_*`` / ``inductor_fix_child_*`` folders in the temp dir. The
    cases die with it, and the next check removes what it left."""

    def test_cases_die_with_it_and_the_next_check_sweeps(self) -> None:
        op = ops()[0]
        with tempfile.TemporaryDirectory() as temporary:
            marker = f"TMPDIR={temporary}"  # every process of this check, and only those, has it
            env = dict(os.environ, TMPDIR=temporary,
                       PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
            process = subprocess.Popen([sys.executable, "-m", "inductor_fix", "check", "--ops", op, "--jobs", "1"],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                       cwd=temporary)
            try:
                for line in process.stdout:
                    if "  start " in line:
                        break
                deadline = time.monotonic() + 60
                while not set(_processes_with(marker)) - {process.pid} and time.monotonic() < deadline:
                    time.sleep(0.2)
                cases = set(_processes_with(marker)) - {process.pid}
                self.assertTrue(cases, "no case process started")  # control: there is one to outlive it
                process.kill()
            finally:
                process.kill()
                process.wait()
                process.stdout.close()
            # The kernel kills them as check dies; a case left running takes ~20 s of CPU to finish.
            deadline = time.monotonic() + 5
            while _processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertEqual(_processes_with(marker), [], "a case process outlived check")
            left = [name for name in os.listdir(temporary) if name.startswith("inductor_fix_")]
            self.assertTrue(left, "the kill left no folder: nothing here shows the sweep")
            again = subprocess.run([sys.executable, "-m", "inductor_fix", "check", "--ops", op, "--jobs", "1",
                                    "--timeout", "0.01"], capture_output=True, text=True, env=env, cwd=temporary,
                                   timeout=300)
            self.assertEqual(again.returncode, 2, again.stdout + again.stderr)  # every case stopped at once
            self.assertEqual([name for name in os.listdir(temporary) if name.startswith("inductor_fix_")], [])


    def test_a_variable_inherited_from_further_up_is_left_alone(self) -> None:
        # A run_logged child's own children inherit the variable, naming a living grandparent.
        code = "from inductor_fix.check.child import die_with_parent; die_with_parent(); print('RAN')"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        for parent in (os.getpid(), os.getppid()):
            result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                                    env=dict(env, INDUCTOR_FIX_PARENT_PID=str(parent)))
            self.assertEqual((result.returncode, result.stdout), (0, "RAN\n"), result.stderr)


class TestSweep(unittest.TestCase):
    def test_only_folders_no_living_process_holds_are_removed(self) -> None:
        from inductor_fix.check.child import private_directory, sweep

        with tempfile.TemporaryDirectory() as temporary, mock.patch.object(tempfile, "tempdir", temporary):
            older = Path(temporary, "inductor_fix_check_older")  # an older version's: no lock file
            older.mkdir()
            with private_directory("inductor_fix_child_") as held:
                self.assertEqual(sweep(), [])  # in use
                Path(held, "output.log").write_text("x")
            left = Path(temporary, "inductor_fix_child_left")  # its process died: nothing holds the lock
            left.mkdir()
            (left / ".inductor_fix_in_use").touch()
            self.assertEqual(sweep(), [str(left)])
            self.assertEqual(sorted(os.listdir(temporary)), [older.name])


class TestTritonHint(unittest.TestCase):
    def test_it_names_the_triton_torch_declares(self) -> None:
        from inductor_fix.check import runner

        with mock.patch("inductor_fix._installed.triton_required", return_value="triton==3.9.1"):
            self.assertIn("python -m pip install triton==3.9.1 (what torch", runner.triton_hint())
        with mock.patch("inductor_fix._installed.triton_required", return_value="triton~=3.9.0"):
            self.assertIn('python -m pip install "triton~=3.9.0" (what torch', runner.triton_hint())
        with mock.patch("inductor_fix._installed.triton_required", return_value=None):
            hint = runner.triton_hint()
        self.assertNotRegex(hint, r"triton \d|triton==")  # no release it cannot know
        self.assertIn("pip show torch", hint)

    def test_each_form_of_torchs_requirement_is_read(self) -> None:
        """torch's own metadata, as each build declares its triton (``importlib.metadata.requires``):
        2.14.1's pin, 2.15.0's compatible release with a marker (a new user on 2.15.0 was told to
        find it with pip show), a nightly's pytorch-triton; a marker that does not hold here, and a
        CPU build, declare none."""
        from inductor_fix._installed import triton_required

        linux = sys.platform.startswith("linux")
        forms = {
            'triton==3.8.0; platform_system == "Linux"': "triton==3.8.0" if linux else None,
            'triton~=3.9.0; platform_system == "Linux" and python_version < "3.16"': "triton~=3.9.0" if linux else None,
            "pytorch-triton==3.9.0+git1234abcd": "pytorch-triton==3.9.0+git1234abcd",
            'triton==3.8.0; platform_system == "Windows"': None,
        }
        for requirement, expected in forms.items():
            with self.subTest(requirement=requirement), \
                    mock.patch("importlib.metadata.requires", return_value=["filelock", requirement, "sympy>=1.13"]):
                self.assertEqual(triton_required(), expected)
        with mock.patch("importlib.metadata.requires", return_value=["filelock", "sympy>=1.13"]):
            self.assertIsNone(triton_required())

class TestStatusWithoutTorch(unittest.TestCase):
    def test_it_says_torch_is_missing(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", directory], check=True)
            python = str(Path(directory, "bin", "python"))
            # The package from this checkout, a copy of packaging; no torch anywhere on the path.
            import shutil

            import packaging

            shutil.copytree(Path(packaging.__file__).parent, Path(directory, "deps", "packaging"))
            paths = [str(ROOT), str(Path(directory, "deps"))]
            code = ("import sys; sys.path[:0] = %r; sys.modules['torch'] = None; "
                    "from inductor_fix import cli; sys.exit(cli.main(['status', '--no-load']))") % paths
            result = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=120)
        self.assertIn("torch is not installed in this environment", result.stdout, result.stderr)


class TestStatusWithAutoloadOff(unittest.TestCase):
    def test_require_protected_fails_and_says_why(self) -> None:
        result = cli("status", "--require", "protected", env={"INDUCTOR_FIX_AUTOLOAD": "0"})
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("autoload: off (INDUCTOR_FIX_AUTOLOAD=0)", " ".join(result.stdout.split()))
        self.assertIn("not protected: autoload is off (INDUCTOR_FIX_AUTOLOAD=0)", result.stderr)
        # The headline is this command's own state, and says so rather than "protected".
        headline = result.stdout.split("\n  autoload:")[0]
        self.assertNotIn("protected", headline)
        self.assertIn("in this command only, not in other processes (autoload off, below)", " ".join(headline.split()))

    def test_under_run_it_is_protected(self) -> None:
        result = cli("run", "--", sys.executable, "-m", "inductor_fix", "status", "--require", "protected",
                     env={"INDUCTOR_FIX_AUTOLOAD": "0"})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


class TestUsageErrors(unittest.TestCase):
    def test_an_integer_option_says_integer(self) -> None:
        result = cli("check", "--jobs", "0")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--jobs: must be a positive integer, got 0", result.stderr)

    def test_an_unknown_option_before_the_subcommand_is_named(self) -> None:
        result = cli("--bogus")
        self.assertEqual(result.returncode, 2)
        self.assertIn("unrecognized arguments: --bogus", result.stderr)
        self.assertNotIn("required", result.stderr)


class TestEntryPointDiagnosis(unittest.TestCase):
    """``status`` loads the entry point as torch would, and says when it cannot (and how to heal)."""

    def _fake_install(self, directory: str, module: str, source: str) -> str:
        info = Path(directory, "site", "inductor_fix-9.9.dist-info")
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: inductor-fix\nVersion: 9.9\n")
        (info / "entry_points.txt").write_text(f"[torch.backends]\ninductor_fix = {module}:activate\n")
        (info / "direct_url.json").write_text(json.dumps({"url": f"file://{source}", "dir_info": {"editable": True}}))
        return str(info.parent)

    def test_a_module_that_is_gone_is_named_with_the_cure(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            site = self._fake_install(directory, "_inductor_fix_gone", f"{directory}/moved-checkout")
            result = cli("status", "--no-load", env={"PYTHONPATH": os.pathsep.join([site, str(ROOT)])})
            torch = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True,
                                   env=dict(os.environ, PYTHONPATH=site), cwd=directory, timeout=300)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        text = " ".join(result.stdout.split())
        self.assertIn("autoload: BROKEN - every `import torch` in this environment fails", text)
        self.assertIn("No module named '_inductor_fix_gone'", text)
        self.assertIn("which is gone or moved", text)
        self.assertIn("python -m pip uninstall inductor-fix", text)
        self.assertIn("TORCH_DEVICE_BACKEND_AUTOLOAD=0", text)
        self.assertIn("Failed to load the backend extension: inductor_fix", torch.stderr)  # what the user saw

    def test_the_json_says_it_too(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            site = self._fake_install(directory, "_inductor_fix_gone", directory)
            result = cli("status", "--no-load", "--json", env={"PYTHONPATH": os.pathsep.join([site, str(ROOT)])})
        self.assertEqual(result.returncode, 1)
        self.assertIs(json.loads(result.stdout)["autoload"]["ok"], False)

    def test_control_a_loadable_entry_point_is_clean(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            site = self._fake_install(directory, "_inductor_fix_autoload", directory)
            result = cli("status", "--no-load", "--json", env={"PYTHONPATH": os.pathsep.join([site, str(ROOT)])})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIs(json.loads(result.stdout)["autoload"]["ok"], True)


class TestEntryPointProbe(unittest.TestCase):
    """``status``'s probe reads entry points without ``importlib.metadata`` (its import is most of
    the probe's cost): it must find what ``importlib.metadata.entry_points`` finds, as torch asks."""

    ORACLE = """
import json, os
from importlib import metadata
print(json.dumps([[os.path.abspath(str(entry.dist._path)), entry.value]
                  for entry in metadata.entry_points(group="torch.backends") if entry.name == "inductor_fix"]))
"""

    def _both(self, pythonpath: str) -> tuple[list, list]:
        from inductor_fix import _entry_points

        env = {**os.environ, "PYTHONPATH": pythonpath}
        with tempfile.TemporaryDirectory() as scratch, mock.patch.dict(os.environ, env):
            oracle = subprocess.run([sys.executable, "-c", self.ORACLE], capture_output=True, text=True,
                                    cwd=scratch, env=env, timeout=120, check=True)
            found = _entry_points.entry_points()
        self.assertIsNotNone(found)
        probe = [[os.path.abspath(entry.metadata), entry.value] for entry in found]
        return probe, json.loads(oracle.stdout)

    def test_this_environment(self) -> None:
        probe, oracle = self._both(os.environ.get("PYTHONPATH", ""))
        self.assertEqual(probe, oracle)

    def test_the_probe_is_a_module_ruff_and_mypy_read(self) -> None:
        # Issue 52: it was code inside an f-string. The child runs the package's own file.
        from inductor_fix import _entry_point_probe, _entry_points

        self.assertEqual(Path(_entry_points._PROBE), Path(_entry_point_probe.__file__))
        self.assertTrue(callable(_entry_point_probe.probe))

    def test_shadowed_declared_by_another_project_and_commented(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            site = Path(TestEntryPointDiagnosis()._fake_install(directory, "_inductor_fix_gone", directory))
            for name, text in {
                # Another project declaring the name: torch loads it too.
                "other_project-1.0.dist-info": "[torch.backends]\n# inductor_fix = commented:out\n"
                                               "inductor_fix = elsewhere.module:hook [extra]\n",
                # The same name in another group, and a project of a normalised name seen first.
                "Another.Project-2.dist-info": "[console_scripts]\ninductor_fix = x:y\n",
                "another_project-1.egg-info": "[torch.backends]\ninductor_fix = never:seen\n",
                "old_style.egg-info": "[torch.backends]\n  inductor_fix=spaced : attr\n",
            }.items():
                (site / name).mkdir()
                (site / name / "entry_points.txt").write_text(text)
            probe, oracle = self._both(os.pathsep.join([str(site), str(ROOT)]))
        self.assertEqual(probe, oracle)
        # Of two folders of one project name, the one the file system lists first: either here.
        values = {value for _, value in probe}
        self.assertLessEqual({"_inductor_fix_gone:activate", "elsewhere.module:hook [extra]", "spaced : attr"}, values)
        self.assertFalse(values & {"commented:out", "x:y"}, probe)


class TestStatusAgreesWithItself(unittest.TestCase):
    """Issue 41: ``status`` said ``activated by: cli, autoload`` beside ``autoload: BROKEN`` (a
    moved editable checkout), and ``autoload: ok (torch loads the entry point ...)`` without torch."""

    def _site(self, directory: str, module_source: str | None) -> str:
        """A site folder with an editable install's metadata, its checkout gone, and (``module_source``)
        the stand-in its build backend writes for the entry point's module."""
        site = TestEntryPointDiagnosis()._fake_install(directory, "_inductor_fix_autoload", f"{directory}/gone")
        if module_source is not None:
            sys.path.insert(0, str(ROOT / "tools"))
            try:
                from build_backend import MODULE, STAND_IN
            finally:
                sys.path.remove(str(ROOT / "tools"))
            Path(site, MODULE).write_text(STAND_IN.format(module=MODULE, source=module_source))
        return site

    def test_autoload_that_worked_here_only_is_not_claimed_beside_broken(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            site = self._site(directory, f"{directory}/gone/_inductor_fix_autoload.py")
            # From the checkout, as README says to run it: torch finds the module in the working
            # directory; every other process of the environment finds the stand-in.
            result = subprocess.run([sys.executable, "-m", "inductor_fix", "status"], capture_output=True, text=True,
                                    timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": site,
                                                                 "INDUCTOR_FIX_AUTOLOAD": "1"})
        text = " ".join(result.stdout.split())
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("autoload: BROKEN", text)
        self.assertRegex(text, r"activated by: cli, autoload \(in this process only: .* autoload BROKEN, above\)")

    def test_without_torch_autoload_is_not_ok(self) -> None:
        import shutil

        import packaging

        with tempfile.TemporaryDirectory() as directory:
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", f"{directory}/venv"], check=True)
            shutil.copytree(Path(packaging.__file__).parent, Path(directory, "deps", "packaging"))
            site = self._site(directory, None)  # the entry point loads: the checkout's module
            env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
            result = subprocess.run([f"{directory}/venv/bin/python", "-m", "inductor_fix", "status"],
                                    capture_output=True, text=True, timeout=300, cwd=directory,
                                    env={**env, "PYTHONPATH": os.pathsep.join([site, str(ROOT), f"{directory}/deps"])})
        text = " ".join(result.stdout.split())
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("torch not installed", text)
        self.assertIn("autoload: installed, waiting for torch: torch is not installed here", text)
        self.assertNotIn("autoload: ok", text)


class TestEntryPointName(unittest.TestCase):
    def test_the_entry_point_module_never_changes(self) -> None:
        # Every installed copy's metadata, an editable install's too, names it: a rename would
        # break `import torch` wherever an older install's metadata stays.
        if sys.version_info < (3, 11):
            self.skipTest("tomllib is Python 3.11+")
        import tomllib

        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        self.assertEqual(project["entry-points"]["torch.backends"], {"inductor_fix": "_inductor_fix_autoload:activate"})
        self.assertEqual(project["scripts"], {"inductor-fix": "_inductor_fix_autoload:cli"})  # the same for the command
        self.assertTrue((ROOT / "_inductor_fix_autoload.py").is_file())


class TestEntryPointWithoutTheStartUpPath(unittest.TestCase):
    """An editable install made before ``_inductor_fix_startup`` existed knows only the entry
    point's module by name: the entry point runs stock torch and says to reinstall, never
    raising into ``import torch``; the console script says the same in one line."""

    def _python(self, code: str) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as directory:
            (Path(directory) / "_inductor_fix_autoload.py").write_text((ROOT / "_inductor_fix_autoload.py").read_text())
            # -S: no site-packages, so nothing but the folder can provide the start-up module.
            command = f"import sys; sys.path.insert(0, {directory!r}); {code}"
            return subprocess.run([sys.executable, "-S", "-c", command], capture_output=True, text=True, timeout=120,
                                  cwd=directory)

    def test_activate_says_to_reinstall(self) -> None:
        result = self._python("import _inductor_fix_autoload as e; e.activate(); e.start('run'); print('ran')")
        self.assertEqual((result.returncode, result.stdout), (0, "ran\n"), result.stderr)
        self.assertEqual(result.stderr.count("reinstall it (python -m pip install -e <checkout>)"), 2, result.stderr)
        self.assertIn("inductor_fix: not applied (autoload): No module named '_inductor_fix_startup'", result.stderr)

    def test_console_script_says_one_line(self) -> None:
        result = self._python("import _inductor_fix_autoload as e; sys.exit(e.cli())")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertIn("its package cannot be imported", result.stderr)


class TestConsoleScriptOfAMovedCheckout(unittest.TestCase):
    """Issue 41: the ``inductor-fix`` of an editable install whose checkout moved printed a raw
    ``ModuleNotFoundError`` traceback. Its target is in the stand-in the build backend writes
    into site-packages (tools/build_backend.py), which runs where the package cannot: one line
    naming the cure. (test_install.py runs the real console script of a real editable install.)"""

    def _run_console_script(self, directory: str, source: str, *path: str) -> subprocess.CompletedProcess:
        sys.path.insert(0, str(ROOT / "tools"))
        try:
            from build_backend import MODULE, STAND_IN
        finally:
            sys.path.remove(str(ROOT / "tools"))
        site = Path(directory, "site")
        site.mkdir()
        Path(site, MODULE).write_text(STAND_IN.format(module=MODULE, source=source))
        # What pip writes for the entry point; -S: no site-packages, where this venv's own
        # inductor_fix would import (the moved checkout's cannot).
        script = Path(directory, "inductor-fix")
        script.write_text("import sys\nfrom _inductor_fix_autoload import cli\nsys.exit(cli())\n")
        return subprocess.run([sys.executable, "-S", str(script), "status", "--no-load"], capture_output=True,
                              text=True, timeout=120, cwd=directory,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *path])})

    def test_one_line_naming_the_cure(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            result = self._run_console_script(directory, f"{directory}/moved/_inductor_fix_autoload.py")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertIn(f"this editable install's checkout {directory}/moved is gone or moved (No module named "
                      "'inductor_fix'): python -m pip install -e CHECKOUT from where the checkout is now, or python -m "
                      "pip uninstall inductor-fix", result.stderr)

    def test_control_the_checkout_in_place_runs_the_command(self) -> None:
        import packaging

        with tempfile.TemporaryDirectory() as directory:
            result = self._run_console_script(directory, str(ROOT / "_inductor_fix_autoload.py"), str(ROOT),
                                              str(Path(packaging.__file__).parents[1]))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("activated by: cli", result.stdout)


if __name__ == "__main__":
    unittest.main()
