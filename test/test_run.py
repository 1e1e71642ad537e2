"""``inductor-fix run -- CMD``: the fix in every Python process of a command nobody edited.

Each script here is an ordinary program: it never imports ``inductor_fix``. It asks
whether the fix is there (``"inductor_fix" in sys.modules``) once torch's Inductor has
loaded: the start-up hook imports nothing before torch does. Negative controls:
the same script under plain ``python`` has no fix (``INDUCTOR_FIX_AUTOLOAD=0`` throughout:
this file tests the ``run`` route alone; test_autoload.py the installed one), and under ``run`` with
``INDUCTOR_FIX_DISABLE=1`` the harness compile crashes on affected releases.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from helpers import OP, ORDER, is_affected, needs_a_check_op

from inductor_fix.check.table import steps_of
from inductor_fix.run import BOOTSTRAP, environment
from inductor_fix.patches import PATCHES
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
#: The compile the harness test runs: the check table's first op in its first sequence, whichever
#: patch shows it (skipped when no patch has a check op).
#: Prints whether the fix came with Inductor (the script never imports it), and its state.
PROBE = """
import json, sys
import torch._inductor.select_algorithm
active = "inductor_fix" in sys.modules
state = str(sys.modules["inductor_fix"].status().state) if active else None
print("PROBE " + json.dumps({"active": active, "state": state}), flush=True)
"""


def _environment(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_") and k != "PYTHONPATH"}
    # The run route alone: where the package is installed (CI), torch's autoload would add it too.
    return {**env, "INDUCTOR_FIX_AUTOLOAD": "0", **overrides}


def _probes(output: str) -> list[dict]:
    return [json.loads(line.split(" ", 1)[1]) for line in output.splitlines() if line.startswith("PROBE ")]


class TestRun(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_run_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def _script(self, name: str, code: str) -> str:
        path = self.directory / name
        path.write_text(textwrap.dedent(code))
        return str(path)

    def _run(self, *command: str, launcher: tuple[str, ...] | None = None, timeout: float = 600,
             **env: str) -> subprocess.CompletedProcess:
        launcher = (sys.executable, "-m", "inductor_fix", "run", "--") if launcher is None else launcher
        return subprocess.run([*launcher, *command], capture_output=True, text=True, timeout=timeout,
                              cwd=self.directory, env=_environment(**env))

    def test_script_gets_the_fix_without_importing_it(self) -> None:
        script = self._script("probe.py", PROBE)
        launched = self._run(sys.executable, script)
        self.assertEqual(launched.returncode, 0, launched.stderr)
        (probe,) = _probes(launched.stdout)
        self.assertTrue(probe["active"], launched.stderr)
        self.assertIn(probe["state"], ("applied", "not-needed"))
        if OP is not None and is_affected(OP):
            self.assertEqual(probe["state"], "applied")
        plain = self._run(sys.executable, script, launcher=())  # negative control
        self.assertEqual(_probes(plain.stdout), [{"active": False, "state": None}], plain.stderr)

    def test_a_process_that_never_imports_torch_imports_nothing_of_the_package(self) -> None:
        """The start-up hook imports only the modules beside the package (the entry point's and the
        start-up path) and registers the finder; the package comes when Inductor's select_algorithm
        loads, or with torch when a job report is to be written (a report path that cannot be
        written is said at start)."""
        code = ("import sys; print('MODULES', sorted(m for m in sys.modules if m.startswith('inductor_fix')), "
                "'_inductor_fix_autoload' in sys.modules, "
                "any(type(f).__module__ == '_inductor_fix_startup' for f in sys.meta_path))")
        launched = self._run(sys.executable, "-c", code)
        self.assertIn("MODULES [] True True", launched.stdout, launched.stderr)
        probe = "import sys, {}; print('LOADED', 'inductor_fix' in sys.modules)"
        for module, env, loaded in (("torch", {}, False),  # torch's log registry only registers the name
                                    ("torch._inductor.select_algorithm", {}, True),
                                    ("torch", {"INDUCTOR_FIX_REPORT": str(self.directory / "job.jsonl")}, True)):
            with self.subTest(module=module, **env):
                result = self._run(sys.executable, "-c", probe.format(module), **env)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn(f"LOADED {loaded}", result.stdout, result.stderr)

    def test_the_start_up_hook_loads_nothing_but_the_start_up_module(self) -> None:
        """What a process that never imports torch pays under run (issue 41: ~7 ms, where it had
        been measured as ~1 ms): the hook imports the start-up module and nothing else the
        interpreter had not loaded (importlib.util, contextlib ... cost ~6 ms). In a fresh venv:
        an installed .pth file (an editable install's finder) would load those first and hide it."""
        venv = self.directory / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
        code = "import sys; print('MODULES', *sorted(sys.modules))"

        def modules(**env: str) -> set[str]:
            result = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                                    timeout=120, cwd=self.directory, env=_environment(**env))
            self.assertEqual(result.returncode, 0, result.stderr)
            return set(result.stdout.split("MODULES", 1)[1].split())

        hooked = modules(PYTHONPATH=os.pathsep.join([BOOTSTRAP, str(ROOT)]))
        self.assertEqual(hooked - modules(), {"sitecustomize", "_inductor_fix_autoload", "_inductor_fix_startup"})

    def test_child_obeys_disable(self) -> None:
        script = self._script("probe.py", PROBE)
        launched = self._run(sys.executable, script, INDUCTOR_FIX_DISABLE="1")
        self.assertEqual(_probes(launched.stdout), [{"active": True, "state": "disabled"}], launched.stderr)

    def test_console_script_and_exit_status(self) -> None:
        console = Path(sys.executable).with_name("inductor-fix")
        self.assertTrue(console.exists(), f"{console}: the package is installed without its console script")
        launched = self._run(sys.executable, "-c", "import sys; sys.exit(3)", launcher=(str(console), "run", "--"))
        self.assertEqual(launched.returncode, 3, launched.stderr)  # the command's own status
        missing = self._run("no-such-command-here", launcher=(str(console), "run", "--"))
        self.assertEqual(missing.returncode, 127)
        self.assertIn("command not found: no-such-command-here", missing.stderr)
        for name, text, message in (("no-shebang", "echo hi\n", "cannot run"),
                                    ("bad-interpreter", "#!/no/such/interpreter\n",
                                     "its #! interpreter was not found")):
            script = self.directory / name
            script.write_text(text)
            script.chmod(0o755)
            cannot = self._run(str(script), launcher=(str(console), "run", "--"))
            self.assertEqual(cannot.returncode, 126, name)
            self.assertIn(message, cannot.stderr)
            self.assertNotIn("Traceback", cannot.stderr)
        (self.directory / "sub-directory").mkdir()
        (self.directory / "not-executable").write_text("echo hi\n")
        for not_executable in (self.directory / "sub-directory", self.directory / "not-executable"):
            refused = self._run(str(not_executable), launcher=(str(console), "run", "--"))
            self.assertEqual(refused.returncode, 126, not_executable)  # found, so not 127
            self.assertIn("not an executable file", refused.stderr)
        empty = self._run(launcher=(str(console), "run"))
        self.assertEqual(empty.returncode, 2)
        self.assertIn("usage: inductor-fix run [--report FILE] -- CMD", empty.stderr)

    def test_a_command_ctrl_c_ends_exits_as_it_did(self) -> None:
        """Issue 52: a job Ctrl-C ends dies of SIGINT (Python's way, since 3.8, for an uncaught
        KeyboardInterrupt); under run it exits the same, as a shell says it: 130, that is
        -SIGINT to subprocess. Negative control: the same command without run."""
        interrupted = ("import os, signal, time; print('UP', flush=True); os.kill(os.getpid(), signal.SIGINT); "
                       "time.sleep(30)")
        for launcher in ((sys.executable, "-m", "inductor_fix", "run", "--"),
                         (str(Path(sys.executable).with_name("inductor-fix")), "run", "--"), ()):
            job = self._run(sys.executable, "-c", interrupted, launcher=launcher)
            self.assertEqual((job.returncode, job.stdout), (-signal.SIGINT, "UP\n"), (launcher, job.stderr))
            self.assertIn("KeyboardInterrupt", job.stderr)
        command = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "inductor_fix", "run", "--",
                                                           sys.executable, "-c", interrupted))
        shell = self._run("sh", "-c", f'{command}; echo "status $?"', launcher=())
        self.assertIn("status 130", shell.stdout, shell.stderr)

    def test_where_run_cannot_exec_it_waits_for_the_job_through_ctrl_c(self) -> None:
        """Where run cannot exec (Windows) it waits for the job: a Ctrl-C sent to both (the
        terminal's process group) ends the job, whose exit status run returns, instead of
        killing the job from a KeyboardInterrupt of its own."""
        job = ("import signal, sys, time; signal.signal(signal.SIGINT, lambda *_: sys.exit(7)); "
               "print('UP', flush=True); time.sleep(30)")
        waiter = (f"import sys; from inductor_fix.run import _wait_for; "
                  f"print('STATUS', _wait_for([sys.executable, '-c', {job!r}], {{}}), flush=True)")
        process = subprocess.Popen([sys.executable, "-c", waiter], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, cwd=self.directory, env=_environment(), start_new_session=True)
        try:
            self.assertEqual(process.stdout.readline(), "UP\n")
            os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: every process of the group
            out, err = process.communicate(timeout=120)
        finally:
            process.kill()
        self.assertEqual((process.returncode, out), (0, "STATUS 7\n"), err)

    def test_existing_sitecustomize_still_runs(self) -> None:
        theirs = self.directory / "theirs"
        theirs.mkdir()
        (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIR_SITECUSTOMIZE'] = 'ran'\n")
        script = self._script("probe.py", PROBE + "import os; print('THEIRS', os.environ.get('THEIR_SITECUSTOMIZE'))\n")
        launched = self._run(sys.executable, script, PYTHONPATH=str(theirs))
        self.assertIn("THEIRS ran", launched.stdout, launched.stderr)
        self.assertTrue(_probes(launched.stdout)[0]["active"], launched.stderr)
        self.assertEqual(environment({"PYTHONPATH": os.pathsep.join([BOOTSTRAP, "a"])})["PYTHONPATH"],
                         os.pathsep.join([BOOTSTRAP, "a"]))  # never put twice

    def test_empty_pythonpath_entry_still_means_the_working_directory(self) -> None:
        # `export PYTHONPATH=$PYTHONPATH:/x` with PYTHONPATH unset leaves ":/x".
        (self.directory / "localmod.py").write_text("VALUE = 'here'\n")
        (self.directory / "sub").mkdir()
        script = self._script("sub/uses_local.py", "import localmod; print('LOCAL', localmod.VALUE)\n")
        launched = self._run(sys.executable, script, PYTHONPATH=os.pathsep + str(self.directory / "elsewhere"))
        self.assertIn("LOCAL here", launched.stdout, launched.stderr)

    def test_a_second_copy_of_the_bootstrap_is_not_chained(self) -> None:
        # Two installs, a symlink or a nested run: no copy may chain to another (it would recurse).
        link = self.directory / "bootstrap-link"
        link.symlink_to(BOOTSTRAP, target_is_directory=True)
        script = self._script("probe.py", PROBE)
        launched = self._run(sys.executable, script, PYTHONPATH=str(link))
        self.assertNotIn("Error in sitecustomize", launched.stderr)
        self.assertTrue(_probes(launched.stdout)[0]["active"], launched.stderr)
        nested = self._run(sys.executable, "-m", "inductor_fix", "run", "--", sys.executable, script,
                           PYTHONPATH=str(link))
        self.assertNotIn("Error in sitecustomize", nested.stderr)
        self.assertTrue(_probes(nested.stdout)[0]["active"], nested.stderr)

    def test_multiprocessing_and_inductor_worker_children(self) -> None:
        script = self._script("children.py", """
            import multiprocessing, subprocess, sys

            def active():
                import torch._inductor.select_algorithm  # noqa: F401
                return "inductor_fix" in sys.modules

            if __name__ == "__main__":
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    print("SPAWN", pool.apply(active))
                # The environment Inductor gives its compile and autotune worker processes.
                from torch._inductor.utils import python_subprocess_env
                code = "import sys, torch._inductor.select_algorithm; print('inductor_fix' in sys.modules)"
                worker = subprocess.run([sys.executable, "-c", code], env=python_subprocess_env(),
                                        capture_output=True, text=True)
                print("WORKER", worker.stdout.strip())
        """)
        launched = self._run(sys.executable, script)
        self.assertIn("SPAWN True", launched.stdout, launched.stderr)
        self.assertIn("WORKER True", launched.stdout, launched.stderr)

    def test_torchrun_every_rank_has_the_fix(self) -> None:
        torchrun = Path(sys.executable).with_name("torchrun")
        runner = (str(torchrun),) if torchrun.exists() else (sys.executable, "-m", "torch.distributed.run")
        script = self._script("ranks.py", """
            import json, os, sys
            import torch
            import torch.distributed as dist
            dist.init_process_group("gloo")
            total = torch.ones(1)
            dist.all_reduce(total)
            import torch._inductor.select_algorithm
            active = "inductor_fix" in sys.modules
            state = str(sys.modules["inductor_fix"].status().state) if active else None
            # One write per line: the ranks share the pipe (print() writes text and newline apart).
            line = "RANK " + json.dumps([dist.get_rank(), active, state, int(total.item())]) + "\\n"
            sys.stdout.flush()
            os.write(sys.stdout.fileno(), line.encode())
            dist.destroy_process_group()
        """)
        launched = self._run(*runner, "--standalone", "--nproc-per-node", "2", script, timeout=300)
        self.assertEqual(launched.returncode, 0, launched.stdout + launched.stderr)
        ranks = sorted(json.loads(line[5:]) for line in launched.stdout.splitlines() if line.startswith("RANK "))
        self.assertEqual([rank[:2] + rank[3:] for rank in ranks], [[0, True, 2], [1, True, 2]], launched.stdout)
        self.assertEqual({rank[2] for rank in ranks} & {"applied", "not-needed"}, {ranks[0][2]})

    @needs_a_check_op
    def test_harness_compile_through_run(self) -> None:
        # The check table's first case (crashing on an affected torch); the script imports the
        # harness only after recording that the fix came with Inductor.
        script = self._script("compile.py", """
            import json, sys
            import torch._inductor.select_algorithm
            active = "inductor_fix" in sys.modules
            from inductor_fix.check.harness import triton_cpu_harness
            from inductor_fix.check.table import run_sequence
            sys.path.insert(0, HERE)
            from quick_autotuning import quick_cpu_autotuning
            with quick_cpu_autotuning(), triton_cpu_harness():
                steps = run_sequence(sys.argv[1], sys.argv[2], "cpu", compare=False)
            state = str(sys.modules["inductor_fix"].status().state)
            print("PROBE " + json.dumps({"active": active, "state": state, "errors": [s.error for s in steps]}))
        """.replace("HERE", repr(str(Path(__file__).resolve().parent))))
        launched = self._run(sys.executable, script, OP, ORDER)
        (fixed,) = _probes(launched.stdout) or [launched.stderr]
        self.assertEqual((fixed["active"], fixed["errors"]), (True, [None] * steps_of(OP, ORDER)), fixed)
        stock = self._run(sys.executable, script, OP, ORDER, INDUCTOR_FIX_DISABLE="1")  # negative control
        (unfixed,) = _probes(stock.stdout) or [stock.stderr]
        self.assertEqual((unfixed["active"], unfixed["state"]), (True, "disabled"), unfixed)
        if is_affected(OP):  # the sequence stops at its crashing compile
            self.assertRegex(str(unfixed["errors"][-1]), r"TypeError", unfixed)


class TestLogging(TestCase):
    def test_torch_logs_shows_the_package(self) -> None:
        # TORCH_LOGS rejects names torch does not know at `import torch`: registered before it.
        code = "import inductor_fix, torch, torch._inductor.select_algorithm"
        shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                               env=_environment(TORCH_LOGS="+inductor_fix"))
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertRegex(shown.stderr, rf"inductor_fix: {PATCHES[0].name} (applied|not-needed)")
        quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                               env=_environment())
        self.assertNotIn(f"inductor_fix: {PATCHES[0].name}", quiet.stderr)  # INFO stays silent unless asked for


class TestStatusRequire(TestCase):
    def _status(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "inductor_fix", "status", *args], capture_output=True,
                              text=True, timeout=300, cwd=ROOT, env=_environment(**env))

    def test_not_protected_exits_one_with_reason(self) -> None:
        for args, env, state in ((("--require", "protected"), {"INDUCTOR_FIX_DISABLE": "1"}, "disabled"),
                                 (("--require", "protected", "--no-load"), {}, "pending")):
            result = self._status(*args, **env)
            self.assertEqual(result.returncode, 1, (args, env, result.stdout))
            self.assertIn(f"inductor_fix status: not protected ({state}): ", result.stderr)

    def test_bad_requirement_is_a_usage_error(self) -> None:
        result = self._status("--require", "safe")
        self.assertEqual(result.returncode, 2)
        self.assertIn("invalid choice: 'safe'", result.stderr)

    def test_a_reader_that_leaves_does_not_change_the_exit_status(self) -> None:
        # `status --require protected | head -1` in CI: the gate's answer, not the pipe's. Protected
        # with autoload on, as a user has it (with it off the gate fails: test_edges).
        for env, expected in (({"INDUCTOR_FIX_DISABLE": "1", "PYTHONUNBUFFERED": "1"}, 1),
                              ({"INDUCTOR_FIX_AUTOLOAD": "1"}, 0)):
            process = subprocess.Popen([sys.executable, "-m", "inductor_fix", "status", "--require", "protected"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                       env=_environment(**env))
            process.stdout.close()  # the reader is gone before the first line
            stderr = process.stderr.read().decode()
            self.assertEqual(process.wait(timeout=300), expected, stderr)
            self.assertNotIn("Traceback", stderr)
            self.assertNotIn("Exception ignored", stderr)

    def test_lines_fit_100_columns(self) -> None:
        result = self._status()
        self.assertLessEqual(max(map(len, result.stdout.splitlines())), 100, result.stdout)


if __name__ == "__main__":
    run_tests()
