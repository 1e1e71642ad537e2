"""``python -m inductor_fix status`` and ``check``, end to end, and the repo's own promises."""

from __future__ import annotations

import contextlib
import json
import os
import itertools
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from helpers import FIRST_CASE, HAS_CUDA, is_affected, needs_a_check_op

import inductor_fix
import torch
from inductor_fix.check.parts import by_op, check_ops
from inductor_fix.check.runner import EXIT_STATUS, Case, verdict
from inductor_fix.check.table import default_ops, label_of, ops, orders_of
from inductor_fix.patches import PATCHES
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
#: A ``check`` case of whichever patch the table lists first (op, order): the tests of check's own
#: machinery need one, not a particular patch's.
#: The first op ``check`` runs by default of each patch that has one: one command covers every
#: patch's check part.
EACH_PATCHS_OP = tuple(op for op in (next((o for o in check_ops(p) if o in default_ops()), None) for p in PATCHES)
                       if op is not None)


def _cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "inductor_fix", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


class TestStatusCommand(TestCase):
    def test_status_resolves_and_prints(self) -> None:
        result = _cli("status")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout,
                         rf"^inductor_fix: applied - protected: {PATCHES[0].name} (applied|not-needed); ")

    def test_no_load_names_the_same_torch_version(self) -> None:
        """Without importing torch, status reads ``torch.__version__`` (with its local tag, +cu130),
        not the distribution's version."""
        loaded = json.loads(_cli("status", "--json").stdout)["torch_version"]
        self.assertEqual(loaded, torch.__version__)
        self.assertEqual(json.loads(_cli("status", "--json", "--no-load").stdout)["torch_version"], loaded)
        code = "import sys, inductor_fix; print(inductor_fix.status().torch_version, 'torch' in sys.modules)"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
        self.assertEqual(result.stdout.split(), [loaded, "False"], result.stderr)

    def test_a_subcommand_gives_its_own_usage_error(self) -> None:
        for args in (["status", "--jsn"], ["report", "--jsn", "job.jsonl"], ["check", "--opz", "x"]):
            result = _cli(*args, timeout=60)
            self.assertEqual(result.returncode, 2, args)
            self.assertRegex(result.stderr, rf"^usage: python -m inductor_fix {args[0]} ", args)
            self.assertIn(f"python -m inductor_fix {args[0]}: error: unrecognized arguments: {args[1]}", result.stderr)

    def test_an_unknown_disable_name_is_attributed_to_the_variable(self) -> None:
        """Not to the line that imported the package (``from inductor_fix.cli import main``, as
        the console script's target does), which reads like an import error."""
        import os

        env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
        code = "from inductor_fix.cli import main; main(['status', '--no-load'])"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                                env={**env, "INDUCTOR_FIX_DISABLE": "no-such-patch"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"^\$INDUCTOR_FIX_DISABLE:0: InductorFixWarning: inductor_fix: "
                                        r"INDUCTOR_FIX_DISABLE='no-such-patch' names unknown patch")
        self.assertNotIn("import", result.stderr)
        self.assertNotIn("<string>", result.stderr)

    def test_status_json(self) -> None:
        result = _cli("status", "--json", "--no-load")
        status = json.loads(result.stdout)
        self.assertEqual(status["state"], "pending")
        self.assertEqual([p["name"] for p in status["patches"]], [p.name for p in PATCHES])
        self.assertEqual(status["inductor_fix_version"], inductor_fix.__version__)
        self.assertIsNone(status["protected"])


class TestANewUsersFindings(TestCase):
    """Issue 52: what a new user met, each with the fault it would show."""

    def _python(self, code: str, **env: str) -> subprocess.CompletedProcess:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env={**environment, **env})

    def test_version_is_on_stdout(self) -> None:
        # v=$(inductor-fix --version 2>/dev/null) holds it, as it did before 35ab449.
        result = _cli("--version", timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, f"inductor-fix {inductor_fix.__version__}\n")
        self.assertEqual(result.stderr, "")

    def test_status_does_not_pass_on_torchs_numpy_warning(self) -> None:
        # torch warns "Failed to initialize NumPy" at import torch where numpy is not installed (a
        # fresh venv with torch 2.15.0): status imports torch itself, and needs no numpy.
        hide_numpy = "import sys; sys.modules['numpy'] = None; "
        control = self._python(hide_numpy + "import torch")
        self.assertIn("Failed to initialize NumPy", control.stderr)  # the warning this test is about
        result = self._python(hide_numpy + "from inductor_fix.cli import main; sys.exit(main(['status']))")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("NumPy", result.stderr)

    @needs_a_check_op
    def test_check_without_torch_names_the_pip_command(self) -> None:
        code = ("import sys; sys.modules['torch'] = None; from inductor_fix.cli import main; "
                f"sys.exit(main(['check', '--ops', {FIRST_CASE[0]!r}]))")
        result = self._python(code)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("torch is not installed in this Python", result.stderr)
        self.assertIn("python -m pip install torch", result.stderr)

    def test_check_refuses_a_bad_json_path_before_torch_loads(self) -> None:
        code = ("import sys; from inductor_fix.cli import main; "
                "code = main(['check', '--json', '/nonexistent/x.json']); print('torch' in sys.modules); "
                "sys.exit(code)")
        result = self._python(code)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("--json /nonexistent/x.json: no such directory: /nonexistent", result.stderr)
        self.assertEqual(result.stdout.splitlines()[-1], "False", result.stdout)

    def test_status_headline_wraps_between_items(self) -> None:
        from inductor_fix.status import PatchStatus, State, Status

        # Every subset of the table (a retired patch leaves one; CI's retirement drill found a
        # headline one column too long where an item ending a line took its ";" past the width).
        subsets = [kept for size in range(1, len(PATCHES) + 1) for kept in itertools.combinations(PATCHES, size)]
        for kept, first in itertools.product(subsets, (State.NOT_NEEDED, State.APPLIED)):  # 2.15.0's, 2.14's
            patches = tuple(PatchStatus(p.name, (), first if i == 0 else State.APPLIED, "")
                            for i, p in enumerate(kept))
            lines = Status.of(patches, "2.15.0", "3.5.0", "0.1.0").format().splitlines()
            headline = lines[:next(i for i, line in enumerate(lines) if line.startswith("  inductor_fix "))]
            with self.subTest(patches=[p.name for p in kept], first=first):
                self.assertTrue(all(len(line) <= 100 for line in headline), headline)
                # each item whole on one line (where every patch is not needed, the headline says so instead)
                for patch in patches if any(p.state == State.APPLIED for p in patches) else ():
                    self.assertTrue(any(f"{patch.name} {patch.state}" in line for line in headline), headline)


class TestCheckCommand(TestCase):
    @needs_a_check_op
    def test_check_runs_each_patchs_first_op(self) -> None:
        """Every patch's first op, asked for together: those that cannot run here (a backend this
        machine lacks) are skipped with their reason, the others run."""
        from inductor_fix.check.table import unavailable

        device = "cuda" if HAS_CUDA else "cpu"
        skipped = {op: unavailable(op, device) for op in EACH_PATCHS_OP if unavailable(op, device)}
        chosen = tuple(op for op in EACH_PATCHS_OP if op not in skipped)
        result = _cli("check", "--ops", ",".join(EACH_PATCHS_OP))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        out = result.stdout
        for op, reason in skipped.items():
            self.assertIn(f"skipped {op}: {reason}", " ".join(out.split()))
        out = "\n".join(line for line in out.splitlines() if not line.startswith("skipped "))
        if not HAS_CUDA:
            self.assertIn("Triton-on-CPU harness", out)
        sequences = [(op, order) for op in chosen for order in orders_of(op)]
        for op, order in sequences:  # one row each, the sequence under the name the table gives it
            rows = [line for line in out.splitlines()
                    if re.match(rf"{re.escape(op)}\s+{re.escape(label_of(op, order))}\s", line)]
            self.assertEqual(len(rows), 1, (op, order, out))
            row = rows[0]
            self.assertRegex(row, r"\bok\b")
            if is_affected(op):
                self.assertRegex(row, r"crashed \(expected\) \[\d\]")
        if any(map(is_affected, chosen)):
            self.assertRegex(out, r"(?m)^\[1\] TypeError: ")  # the full error, once, under the table
        self.assertIn("verdict: PASS", out)
        self.assertLessEqual(max(map(len, out.splitlines())), 100, out)
        # What it will run and roughly how long, then progress from the start: a line before torch
        # loads, a line per case started, a line per case finished with the time left.
        lines = out.splitlines()
        cases = 2 * len(sequences)  # stock and patched
        self.assertEqual(lines[0], f"inductor_fix check: loading torch ({', '.join(EACH_PATCHS_OP)}) ...")
        self.assertRegex(" ".join(out.split()), rf"running {cases} cases, \d+ at a time, each in a fresh process and "
                         r"Inductor cache: (roughly \d+ (s|min) \(~\d+ s of one CPU a case|each compiles)")
        self.assertEqual(sorted(line.split(maxsplit=1)[1] for line in lines if line.startswith("  start ")),
                         sorted(f"{op} {order} {mode}" for op, order in sequences for mode in ("stock", "patched")))
        finished = [line for line in lines if re.match(rf"  \[\d+/{cases}\] ", line)]
        self.assertEqual(len(finished), cases, out)
        self.assertTrue(all(re.search(r"; ~\d+ (s|min) left$", line) for line in finished[:-1]), finished)
        self.assertNotIn("CONTRIBUTING", out)  # the wheel holds no CONTRIBUTING.md

    @needs_a_check_op
    def test_verdict_fails_when_a_patched_case_crashes(self) -> None:
        cases = [
            Case(*FIRST_CASE, "stock", "cpu", ok=False, error="TypeError: x"),
            Case(*FIRST_CASE, "patched", "cpu", ok=False, error="TypeError: y"),
        ]
        text, exit_status = verdict(cases)
        self.assertEqual(exit_status, 1)
        self.assertIn("verdict: FAIL", text)

    @needs_a_check_op
    def test_verdict_fits_100_columns_with_long_errors(self) -> None:
        # The widest op and sequence names of the table, and a count of every kind of every patch.
        op, order = max(((op, order) for op in ops() for order in orders_of(op)),
                        key=lambda case: len(case[0]) + len(label_of(*case)))
        kinds = [kind for patch in PATCHES for kind in patch.activity.kinds]
        counters = {kind: 3 * i + 1 for i, kind in enumerate(kinds)}
        # A long form of the crash of the op's own patch (each patch knows its crash: Patch.crash).
        messages = {"TypeError": "launcher() missing 1 required positional argument: '_grid_2' ",
                    "RuntimeError": "Error in function: cutlass_sm90_gemm_f16_128x128x64 "}
        error = next(text for text in (f"{kind}: {message * 4}" for kind, message in messages.items())
                     if by_op(op).crash.matches(text))
        cases = [Case(op, order, "stock", "cpu", error=error, affected=True),
                 Case(op, order, "patched", "cpu", ok=True, steps=[{"max_rel_error": 4.3e-07}], counters=counters)]
        text, exit_status = verdict(cases)
        self.assertEqual(exit_status, 0)
        self.assertLessEqual(max(map(len, text.splitlines())), 100, text)
        self.assertIn("crashed (expected) [1]", text)
        cell = " ".join(line[line.index("ok ("):] if "ok (" in line else line.strip()
                        for line in text.split("\n\n")[0].splitlines()[2:])
        # wrapped, whole:
        counts = ", ".join(f"{kind} {count}" for kind, count in sorted(counters.items()))
        self.assertEqual(cell, f"ok (err 4.3e-07, {counts})")
        note = re.search(r"(?ms)^\[1\] (.*?)\n\n", text).group(1)
        self.assertEqual(" ".join(line.strip() for line in note.splitlines()), error.strip())  # nothing lost

    @needs_a_check_op
    def test_verdict_has_one_blank_line_between_its_parts(self) -> None:
        """Table, notes and summary apart by one blank line each; with no note, the table and the
        summary (a new user on 2.15.0 saw two before ``stock:``, where no case crashed)."""
        ok = [Case(*FIRST_CASE, mode, "cpu", ok=True) for mode in ("stock", "patched")]
        crashed = [Case(*FIRST_CASE, "stock", "cpu", error="TypeError: x", affected=True),
                   Case(*FIRST_CASE, "patched", "cpu", ok=True)]
        for cases, parts in ((ok, 2), (crashed, 3)):
            text, _ = verdict(cases)
            self.assertNotIn("\n\n\n", text)
            self.assertEqual(len(text.split("\n\n")), parts, text)
            self.assertTrue(text.split("\n\n")[-1].startswith("stock: "), text)

    @needs_a_check_op
    def test_a_stock_error_that_is_not_the_crash_is_told_apart(self) -> None:
        """A stock case's error is its op's patch's stock crash (``Patch.crash``, the table's; on a
        CPU, the harness's launch too) or another failure, which check does not count as the crash."""
        launch = "TypeError: triton_tem_fused_0() launch: missing a required argument: 'arg_B'"  # the harness's
        other = "RuntimeError: nvcc not found"
        for error, outcome in ((launch, "crashed (expected)"), (other, "failed (not the crash)")):
            stock = Case(*FIRST_CASE, "stock", "cpu", error=error, affected=True)
            self.assertEqual(stock.outcome(), outcome, error)
            text, _ = verdict([stock, Case(*FIRST_CASE, "patched", "cpu", ok=True)])
            crashed = outcome.startswith("crashed")
            self.assertIn(f"stock:   crashed in {int(crashed)}/1 cases", text)
            self.assertEqual("1 failed otherwise" in text, not crashed, text)

    @needs_a_check_op
    def test_verdict_separates_cases_without_result(self) -> None:
        cases = [
            Case(*FIRST_CASE, "stock", "cpu", failure="timed out after 1 s"),
            Case(*FIRST_CASE, "patched", "cpu", failure="timed out after 1 s"),
        ]
        text, exit_status = verdict(cases)
        self.assertEqual(exit_status, 2)
        self.assertIn("stock:   crashed in 0/1 cases", text)
        self.assertIn("timed out after 1 s", text)
        self.assertNotIn("crash", text.split("\n\n")[0])  # a timeout is not reported as a crash
        self.assertIn("verdict: ERROR", text)

    def test_bad_arguments_are_usage_errors(self) -> None:
        for args in (["--ops", ""], ["--ops", "foo"], ["--jobs", "-1"], ["--jobs", "abc"], ["--timeout", "0"],
                     ["--timeout", "nan"], ["--timeout", "soon"]):
            result = _cli("check", *args, timeout=60)
            self.assertEqual(result.returncode, 2, args)
            self.assertIn("usage:", result.stderr)
            self.assertNotIn("invalid parse value", result.stderr)

    def test_an_unknown_op_is_named(self) -> None:
        known = ops()[0]
        result = _cli("check", "--ops", f"{known},nope", timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown op 'nope';", result.stderr)
        self.assertNotIn(repr(known), result.stderr)  # only the unknown one is named


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, session id) of every process, from /proc."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":  # a zombie has ended; its parent has yet to reap it
                table[int(stat.parent.name)] = (int(fields[1]), int(fields[3]))
    return table


class TestCheckStops(TestCase):
    """SIGTERM (timeout, CI runners, Slurm) and SIGHUP (a closed terminal) stop check as cleanly as
    Ctrl-C: a message, exit 128 + the signal, no case process left running, no directory left behind."""

    def _stop_with(self, signum: int) -> None:
        import os
        import queue
        import signal
        import threading

        tmp = Path(tempfile.mkdtemp(prefix="inductor_fix_stop_test_"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        env = dict(os.environ, TMPDIR=str(tmp))
        # check as a terminal starts it: the signal at its default, whatever this test inherited
        # (under nohup SIGHUP arrives ignored, and check rightly keeps an ignored signal ignored).
        at_default = (f"import os, signal, sys; signal.signal({int(signum)}, signal.SIG_DFL); "
                      "os.execv(sys.executable, [sys.executable, '-m', 'inductor_fix', *sys.argv[1:]])")
        check = subprocess.Popen([sys.executable, "-c", at_default, "check", "--ops", FIRST_CASE[0], "--jobs", "2"],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: check.poll() is None and check.kill())
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in check.stdout], daemon=True).start()
        deadline = time.monotonic() + 120
        seen = []
        while sum(line.startswith("  start ") for line in seen) < 2:
            seen.append(lines.get(timeout=max(1, deadline - time.monotonic())))
        while True:  # both case processes running, each with its directories
            children = [pid for pid, (ppid, _) in _processes().items() if ppid == check.pid]
            if len(children) == 2 and len(list(tmp.glob("inductor_fix_child_*"))) == 2:
                break
            self.assertLess(time.monotonic(), deadline, (seen, children, list(tmp.iterdir())))
            time.sleep(0.1)
        self.assertEqual(len(list(tmp.glob("inductor_fix_check_*"))), 2)
        check.send_signal(signum)
        _, stderr = check.communicate(timeout=60)
        self.assertEqual(check.returncode, 128 + signum, stderr)
        self.assertIn(f"inductor_fix check: {signal.Signals(signum).name}: stopped every case; no verdict", stderr)
        self.assertNotIn("Traceback", stderr)
        # Each case ran in a session of its own (its id is the case's pid): nothing of it may be left.
        left = [pid for pid, (_, session) in _processes().items() if session in children]
        self.assertEqual(left, [], "case processes outlived check")
        self.assertEqual(sorted(p.name for p in tmp.iterdir() if p.name.startswith("inductor_fix_")), [])

    @needs_a_check_op
    def test_a_signal_ignored_at_start_stays_ignored(self) -> None:
        """Under nohup (SIGHUP ignored) closing the terminal must not stop check; SIGTERM still
        does; both handlers are restored afterwards."""
        import signal
        from unittest import mock

        from inductor_fix.check import runner

        seen = {}

        def run(*args):
            seen.update({signum: signal.getsignal(signum) for signum in (signal.SIGHUP, signal.SIGTERM)})
            return 0

        before, term = signal.signal(signal.SIGHUP, signal.SIG_IGN), signal.getsignal(signal.SIGTERM)
        try:
            with mock.patch.object(runner, "_run_check", run):
                self.assertEqual(runner.run_check(ops=[FIRST_CASE[0]]), 0)
            self.assertIs(seen[signal.SIGHUP], signal.SIG_IGN)
            self.assertTrue(callable(seen[signal.SIGTERM]) and seen[signal.SIGTERM] is not term)
            self.assertIs(signal.getsignal(signal.SIGHUP), signal.SIG_IGN)
            self.assertIs(signal.getsignal(signal.SIGTERM), term)
        finally:
            signal.signal(signal.SIGHUP, before)

    @needs_a_check_op
    def test_sigterm(self) -> None:
        import signal

        self._stop_with(signal.SIGTERM)

    @needs_a_check_op
    def test_sighup(self) -> None:
        import signal

        self._stop_with(signal.SIGHUP)


class TestRunChild(TestCase):
    """The child-process runner that check and tools/bench share."""

    def _run(self, code: str, timeout: float = 60):
        from inductor_fix.check.child import run_child

        return run_child([sys.executable, "-c", code], {"PATH": "/usr/bin:/bin"}, "MARK ", timeout)

    def test_stop_all_ends_running_children(self) -> None:
        # check's Ctrl-C: its workers wait on children in sessions of their own.
        import threading

        from inductor_fix.check import child

        timer = threading.Timer(1.0, child.stop_all)
        timer.start()
        start = time.monotonic()
        try:
            with self.assertRaises(child.Stopped):
                self._run("import time; time.sleep(60)")
            with self.assertRaises(child.Stopped):  # and none starts afterwards
                self._run("print('MARK {}')")
        finally:
            timer.cancel()
            child._stopping.clear()
        self.assertLess(time.monotonic() - start, 10)

    def test_reads_the_last_marked_line(self) -> None:
        child = self._run("print('MARK {\"a\": 1}'); print('noise'); print('MARK {\"a\": 2}')")
        self.assertEqual((child.result, child.failure, child.timed_out), ({"a": 2}, None, False))

    def test_failure_names_exit_status_and_last_stderr_line(self) -> None:
        child = self._run("import sys; sys.exit('broken here')")
        self.assertEqual((child.result, child.failure), (None, "process failed (exit 1): broken here"))

    def test_timeout_ends_the_whole_process_group(self) -> None:
        # A grandchild stands in for Inductor's compile workers: it must not outlive the timeout.
        code = (
            "import subprocess, sys, time\n"
            "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print(worker.pid, file=sys.stderr, flush=True)\n"
            "time.sleep(60)\n"
        )
        with tempfile.TemporaryDirectory() as directory:
            pid_file = Path(directory, "pid")
            child = self._run(code.replace("sys.stderr", f"open({str(pid_file)!r}, 'w')"), timeout=3)
            self.assertEqual((child.timed_out, child.failure), (True, "timed out after 3 s"))
            worker = int(pid_file.read_text())
        for _ in range(50):
            if not Path(f"/proc/{worker}").exists() or "zombie" in Path(f"/proc/{worker}/status").read_text():
                break
            time.sleep(0.1)
        else:
            self.fail(f"compile-worker stand-in {worker} outlived the timeout")


@contextlib.contextmanager
def _tools_on_path():
    """tools/ is not a package: its libraries import with tools/ on sys.path."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        yield
    finally:
        sys.path.remove(str(ROOT / "tools"))


class TestRepository(TestCase):
    """README's two commands exist, .ci/run runs README's test command verbatim, README
    reads in two minutes and links only to what exists, and the docs' tables are the
    ones rendered from the committed JSON."""

    def test_readme_example_is_what_happens(self) -> None:
        """README's opening example (issue 52): its script crashes stock, with the error README shows
        (recorded for that workload on a GPU, docs/bench/compile-cuda.json), and with the fix it runs
        and its report says what README shows. Here on the CPU harness, the script's device "cpu"."""
        readme = (ROOT / "README.md").read_text()
        script = re.search(r"```python\n(.*?)```", readme, re.DOTALL).group(1)
        said = " ".join(readme.split())
        crash = re.search(r"fails in the second call's compile with `([^`]+)`", said).group(1)
        shown = re.search(r"`inductor-fix report job.jsonl`:\s*```text\n(.*?)```", readme, re.DOTALL).group(1)
        op = re.search(r"torch\.compile\(torch\.(\w+)", script).group(1)
        # The crash README shows is the one recorded for this workload, stock, on a GPU.
        runs = json.loads((ROOT / "docs" / "bench" / "compile-cuda.json").read_text())["runs"]
        recorded = {run["error"] for run in runs if run["workload"] == f"{op}:distinct-first" and run["variant"] ==
                    "stock"}
        self.assertEqual(recorded, {crash})
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_readme_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "example.py").write_text(script.replace('device="cuda"', 'device="cpu"'))
        harness = (f"import sys; sys.path.insert(0, {str(ROOT / 'test')!r}); from quick_autotuning import autotuning; "
                   "from inductor_fix.check.harness import triton_cpu_harness\n"
                   "with autotuning('cpu'), triton_cpu_harness():\n"
                   "    exec(compile(open('example.py').read(), 'example.py', 'exec'), {'__name__': '__main__'})")
        env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}

        def example(**more: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-c", harness], capture_output=True, text=True, timeout=600,
                                  cwd=directory, env={**env, "TORCHINDUCTOR_CACHE_DIR": str(directory / "cache"),
                                                      **more})

        stock = example(INDUCTOR_FIX_DISABLE="1", TORCHINDUCTOR_CACHE_DIR=str(directory / "stock-cache"))
        if is_affected(op):  # the harness says a launch one short in its words: the launcher's are README's
            self.assertNotEqual(stock.returncode, 0, stock.stderr[-3000:])
            self.assertRegex(stock.stderr, r"TypeError: \w+\(\) launch: missing a required argument")
        patched = example(INDUCTOR_FIX_REPORT=str(directory / "job.jsonl"))
        self.assertEqual(patched.returncode, 0, patched.stderr[-3000:])
        report = _cli("report", str(directory / "job.jsonl"), timeout=120)
        if is_affected(op):
            lines = iter(report.stdout.splitlines())
            for line in shown.splitlines():  # in order; "..." stands for what differs between runs
                pattern = ".*".join(map(re.escape, line.split("...")))
                self.assertTrue(any(re.fullmatch(pattern, real) for real in lines), (line, report.stdout))

    def test_readme_is_short_and_its_links_resolve(self) -> None:
        readme = (ROOT / "README.md").read_bytes()
        self.assertLess(len(readme), 8 * 1024)
        for page in sorted((ROOT / "docs").glob("*.md")):
            for target in re.findall(r"\]\((?!https?://)([^)#]+)", page.read_text()):
                self.assertTrue((page.parent / target).exists(), f"{page.name} links to missing {target}")

    def test_readme_links_work_on_the_package_index(self) -> None:
        """README is the long description on the package index, where a relative link leads
        nowhere: every link is absolute, and one into this repository names a file it holds."""
        # [project.urls] Homepage, read without tomllib (Python 3.11+).
        home = re.search(r'(?m)^Homepage = "([^"]+)"$', (ROOT / "pyproject.toml").read_text()).group(1)
        links = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
        self.assertTrue(links)
        for link in links:
            self.assertRegex(link, r"^https://", f"README links to {link}, which the package index cannot resolve")
            inside = re.match(re.escape(home) + r"/(?:blob|tree)/main/([^#]+)", link)
            if link.startswith(home + "/") and not link.startswith(home + "/issues"):
                self.assertIsNotNone(inside, link)
                self.assertTrue((ROOT / inside.group(1)).exists(), f"README links to missing {inside.group(1)}")

    def test_check_help_documents_every_option(self) -> None:
        help_text = " ".join(_cli("check", "--help", timeout=60).stdout.split())
        self.assertRegex(help_text, r"--device \{auto,cpu,cuda\} cuda: run the kernels on the GPU")
        self.assertIn("(default: 1800)", help_text)
        for option in ("--ops", "--jobs", "--timeout", "--json"):
            self.assertRegex(help_text, rf"{option} [A-Z]+ [a-z]", option)

    def test_check_triton_hint_is_readmes(self) -> None:
        """The command check gives a machine without triton (torch pinning none, as CPU builds do)
        is README's."""
        from unittest import mock

        from inductor_fix.check.runner import triton_hint

        with mock.patch("inductor_fix._installed.triton_required", return_value=None):
            command = triton_hint().split(" (")[0]
        readme = " ".join((ROOT / "README.md").read_text().replace("`", "").split())
        self.assertIn(command, readme)

    def test_readme_documents_check_exit_statuses(self) -> None:
        readme = " ".join((ROOT / "README.md").read_text().split())
        for status in EXIT_STATUS:
            self.assertIn(f"**{status}**", readme)
        help_text = " ".join(_cli("check", "--help", timeout=60).stdout.split())
        for status, meaning in EXIT_STATUS.items():
            self.assertIn(f"{status} {' '.join(str(meaning).split())}", help_text)

    def test_readme_commands_match_ci(self) -> None:
        readme = (ROOT / "README.md").read_text()
        commands = re.findall(r"```(?:bash|sh)\n(python -m pip install [^\n]+)\n```", readme)
        self.assertEqual(len(commands), 2, commands)
        self.assertIn("inductor_fix check", commands[0])
        self.assertIn("pytest", commands[1])
        self.assertIn(commands[1], (ROOT / ".ci" / "run").read_text())

    def test_docs_matrix_matches_results_json(self) -> None:
        # docs/matrix.md is tools/run_matrix --report-md, rendered from the JSON.
        with _tools_on_path():
            from matrix_lib import expectations, phases, results
        data = results.load(ROOT / "docs" / "matrix" / "results.json")
        self.assertEqual(sorted(e["spec"] for e in data["releases"]),
                         sorted(expectations.RELEASES + expectations.DEV_BUILDS))
        # The suites the tool runs today, each in the recorded run (a patch retired since may leave
        # its suites in the docs until the matrix runs again: CONTRIBUTING's "Retiring a patch").
        for command in phases.SUITE_COMMAND.split(" / "):
            self.assertIn(command, data["suite"])
        if data["suite"] == phases.SUITE_COMMAND:
            # The row a matrix run is writing (its full suite runs this test) is judged by the run.
            for entry in (e for e in data["releases"] if e["spec"] != os.environ.get(phases.ROW_VARIABLE)):
                self.assertEqual(entry["verdict"], "ok", entry["spec"])
                for phase, result in entry["phases"].items():
                    expected = expectations.expected(phase, entry["torch"], entry.get("variant"))
                    self.assertEqual(result["expected"], expected, (entry["spec"], phase))
        self.assertEqual(results.markdown(data), (ROOT / "docs" / "matrix.md").read_text())

    def test_readme_startup_figures_are_the_measured_ones(self) -> None:
        # README's costs are tools/bench startup's medians (docs/bench/startup.json).
        data = json.loads((ROOT / "docs" / "bench" / "startup.json").read_text())
        readme = " ".join((ROOT / "README.md").read_text().split())
        self.assertIn(f"~{data['import_after_torch_ms']['median']:.1f} ms after `import torch`", readme)
        self.assertIn(f"pays ~{data['run_no_torch']['added_ms']['median']:.1f} ms", readme)
        self.assertIn(f"adds ~{data['autoload']['added_ms']['median']:.1f} ms per `import torch`", readme)
        # What the commands themselves cost (issue 47: run <= 30 ms, status --no-load < 100 ms over python -c pass),
        # in the form README shows them (inductor-fix; python -m inductor_fix is measured beside it, issue 52).
        commands = data["commands"]
        self.assertIn("`inductor-fix status`", readme)
        self.assertIn("**`inductor-fix run -- ", readme)
        self.assertIn(f"`run` itself adds ~{commands['run_command_added_ms']['median']:.0f} ms to a job", readme)
        self.assertIn(f"(`--no-load`: ~{commands['status_no_load_added_ms']['median']:.0f} ms over `python -c pass`)",
                      readme)
        # The command beside them, and what users pay: the installed form (issue 41).
        self.assertIn(f"`{data['command']}`: the wheel in a fresh venv", readme)
        self.assertTrue(data["form"].startswith("installed"), data.get("form"))


if __name__ == "__main__":
    run_tests()
