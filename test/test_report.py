"""What the fix did, per process and for a whole job: ``inductor_fix.activity()``, the job
report every process appends at exit (``run --report FILE``), and ``inductor-fix report``."""

from __future__ import annotations

import dataclasses

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from helpers import OP, ORDER, is_affected, needs_a_check_op

import inductor_fix
from inductor_fix.check.parts import by_op
from inductor_fix.patches import PATCHES
from inductor_fix.report import EXIT_STATUS, FORMAT, Skipped, format_summary, summarize
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
HERE = str(Path(__file__).resolve().parent)  # quick_autotuning, for the jobs
#: The job that needs the fix: the check table's first op in its first sequence (its patch's
#: workload, which crashes stock on an affected torch), whichever patch shows it.
#: A job under the CPU harness; it imports the harness, never ``inductor_fix`` itself. ``work``:
#: what it compiles, one of the two below.
JOB = """
import sys
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache
import inductor_fix.check.harness as harness
from inductor_fix.check.table import run_sequence
sys.path.insert(0, {here!r})
from quick_autotuning import quick_cpu_autotuning

with fresh_cache(), quick_cpu_autotuning(), harness.triton_cpu_harness(), config.patch(fx_graph_cache=False):
{work}
print("DONE")
"""
#: The check case: what its steps did is the job report's to say, not the script's.
SEQUENCE = "    run_sequence({op!r}, {order!r}, 'cpu', compare=False)"
#: One max-autotune matmul of distinct operands: choices benchmarked, nothing for any patch to do.
PLAIN = """
    x, y = torch.randn(2, 4, 32, 32).unbind(0)
    torch.compile(lambda a, b: a @ b, mode="max-autotune-no-cudagraphs")(x, y)
"""


def _job_script(needs_the_fix: bool) -> str:
    work = SEQUENCE.format(op=OP, order=ORDER) if needs_the_fix else PLAIN.strip("\n")
    return textwrap.dedent(JOB).format(here=HERE, work=work)


def _environment(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_") and k != "PYTHONPATH"}
    return {**env, **overrides}


def _cli(*args: str, timeout: float = 600, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inductor_fix", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=_environment(**env))


def _line(**patches: dict) -> dict:
    """A report line with every patch of the table applied, ``patches`` overriding some."""
    return {"format": FORMAT, "inductor_fix": inductor_fix.__version__, "pid": 1, "ppid": 0, "torch": "2.14.1",
            "benchmarks": 3,
            "patches": [{"name": p.name, "state": "applied", "reason": "", "counts": {}, "details": [],
                         **patches.get(p.name, {})} for p in PATCHES]}


class TestActivity(TestCase):
    def test_activity_names_every_patch(self) -> None:
        self.assertEqual(set(inductor_fix.activity()), {p.name for p in PATCHES})
        for snapshot in inductor_fix.activity().values():
            self.assertEqual(set(snapshot), {"counts", "details"})


#: A patch that fixes a crash (``Patch.protects``): its activity means the job needed the fix; a
#: patch that only saves cost acting says nothing of that. The table's first, whichever is retired.
FIXER = next((p for p in PATCHES if p.protects), PATCHES[0])


def _acted(patch=FIXER, count: int = 1) -> dict:
    """The report fields of ``patch`` having done ``count`` of its first kind."""
    return {patch.name: {"counts": {next(iter(patch.activity.kinds)): count}}}


class TestSummary(TestCase):
    def test_needed_yes_when_any_patch_acted(self) -> None:
        acted = FIXER.name
        summary = summarize([_line(), _line(**_acted(count=2))])
        self.assertIs(summary["needed"], True)
        self.assertEqual(summary["patches"][acted]["processes_acted"], 1)
        self.assertIn("keep inductor_fix", summary["advice"])
        self.assertIn(f"{acted} is needed until {FIXER.delete_when}", summary["advice"])  # when it can go

    def test_needed_no_says_how_to_remove(self) -> None:
        for state, phrase in (("applied", "no patch found anything to do"), ("not-needed", "has none of the bugs")):
            summary = summarize([_line(**{p.name: {"state": state} for p in PATCHES})])
            self.assertIs(summary["needed"], False)
            self.assertIn(phrase, summary["advice"])
            self.assertIn("pip uninstall inductor-fix", summary["advice"])

    def test_needed_unknown_when_nothing_was_benchmarked(self) -> None:
        """Compiles served whole from Inductor's caches never reach the buggy benchmark."""
        summary = summarize([{**_line(), "benchmarks": 0}])
        self.assertIsNone(summary["needed"])
        self.assertIn("empty TORCHINDUCTOR_CACHE_DIR", summary["advice"])

    def test_needed_unknown_when_the_fix_was_off(self) -> None:
        off = _line(**{p.name: {"state": "disabled"} for p in PATCHES})
        summary = summarize([{**off, "disable": "1"}])
        self.assertIsNone(summary["needed"])
        self.assertIn("the fix was off", summary["advice"])

    def test_the_fix_was_off_where_a_patch_disabled_on_a_torch_without_its_crash_is_not_needed(self) -> None:
        # INDUCTOR_FIX_DISABLE=1 on 2.15.0: the patch whose crash that torch lacks says not-needed,
        # the others disabled. The fix was off; it was not "on in 1 process".
        for spared in (p for p in PATCHES if p.protects):
            off = _line(**{p.name: {"state": "not-needed" if p is spared else "disabled"} for p in PATCHES})
            summary = summarize([{**off, "disable": "1"}])
            self.assertEqual(summary["processes_with_fix_on"], 0, spared.name)
            self.assertIn("the fix was off", summary["advice"])
        # Negative control: one patch applied is the fix on.
        applied = _line(**{p.name: {"state": "applied" if p is FIXER else "disabled"} for p in PATCHES})
        self.assertEqual(summarize([applied])["processes_with_fix_on"], 1)

    def test_needed_unknown_when_a_patch_was_off_where_choices_were_benchmarked(self) -> None:
        """"No" is a claim about every patch: one switched off in a process that benchmarked
        choices could have been the one the job needs."""
        off = PATCHES[-1].name
        for state in ("disabled", "removed", "unsupported"):
            summary = summarize([_line(), _line(**{off: {"state": state}})])
            self.assertIsNone(summary["needed"], state)
            self.assertIn(f"{off} ({state}) was off in 1 process(es)", summary["advice"])
        everything_off = _line(**{p.name: {"state": "disabled"} for p in PATCHES})
        self.assertIsNone(summarize([_line(), everything_off])["needed"])
        # Off only where nothing was benchmarked (a launcher, a data worker): the rest still judge.
        self.assertIs(summarize([_line(), {**everything_off, "benchmarks": 0}])["needed"], False)

    def test_a_process_that_died_in_a_compile_is_not_one_that_compiled_nothing(self) -> None:
        died = {**_line(), "benchmarks": 0, "exit_error": {
            "error": "RuntimeError: 0 active drivers ([]). There should only be one.", "in_compile": True,
            "raised_in": "triton/runtime/driver.py:12"}}
        for entries in ([died], [_line(), died]):  # with or without another process that benchmarked cleanly
            summary = summarize(entries)
            self.assertIsNone(summary["needed"])
            self.assertEqual(summary["processes_died_in_compile"], 1)
            self.assertIn("died of an exception raised in a compile", summary["advice"])
            self.assertIn("0 active drivers", summary["advice"])
            self.assertIn("that error is not inductor_fix's", summary["advice"])
            self.assertNotIn("TORCHINDUCTOR_CACHE_DIR", summary["advice"])
        launch = "TypeError: launcher() got multiple values for argument 'stream'"
        off = {**_line(**{p.name: {"state": "disabled"} for p in PATCHES}), "benchmarks": 0, "disable": "1"}
        bug = {**off, "exit_error": {**died["exit_error"], "raised_in": "job.py:3", "error": launch}}
        summary = summarize([bug])
        self.assertIn("that is the crash inductor_fix fixes", summary["advice"])
        kind = summary["died_in_compile"][0]["kind"]  # the patch table's Patch.crash knew it
        self.assertEqual((kind, summary["died_in_compile"][0]["kind_state"]), (next(
            p.name for p in PATCHES if p.crash.matches(launch)), "disabled"))
        # The same crash where its patch was applied: the fix did not hold, which is reported.
        held = {**bug, "patches": _line()["patches"], "disable": None}
        self.assertIn(f"yet {kind} was applied in that process: please report it", summarize([held])["advice"])
        # An exception outside any compile (the program's own) leaves the verdict alone.
        elsewhere = {**_line(), "exit_error": {**died["exit_error"], "in_compile": False}}
        self.assertIs(summarize([elsewhere])["needed"], False)

    def test_where_names_rank_pid_and_host(self) -> None:
        summary = summarize([{**_line(**_acted()), "rank": "3", "pid": 41, "host": "node7"}])
        self.assertEqual(summary["patches"][FIXER.name]["where"][0]["process"], "rank 3, pid 41 on node7")


class TestReportCommand(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_report_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def _write(self, *lines: str) -> Path:
        path = self.directory / f"job-{len(list(self.directory.iterdir()))}.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        return path

    def test_exit_statuses_and_first_line(self) -> None:
        cases = [
            (self._write(json.dumps(_line(**_acted()))), 0, "needed: yes"),
            (self._write(json.dumps(_line())), 0, "needed: no"),
            (self._write(), 1, "needed: unknown"),  # empty: no process loaded Inductor
            (self.directory / "missing.jsonl", 2, "needed: unknown"),
            (self.directory, 2, "needed: unknown"),
        ]
        for path, status, first in cases:
            result = _cli("report", str(path), timeout=120)
            self.assertEqual(result.returncode, status, (path, result.stdout, result.stderr))
            self.assertEqual(result.stdout.splitlines()[0], first, result.stdout)
            self.assertNotIn("Traceback", result.stderr)
        for code in EXIT_STATUS:
            self.assertIn(f"{code} ", " ".join(_cli("report", "--help", timeout=120).stdout.split()))

    def test_a_file_that_is_not_a_job_report_says_so(self) -> None:
        import random

        noise = self.directory / "noise.bin"
        noise.write_bytes(random.Random(30).randbytes(4096))
        other = self._write(*(json.dumps({"level": "info", "msg": f"step {i}", "format": "text"}) for i in range(5)))
        for path in (noise, other):
            result = _cli("report", str(path), timeout=120)
            self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (2, "needed: unknown"), path)
            self.assertIn(f"{path} is not a job report", result.stderr)
            self.assertNotIn("Traceback", result.stderr)
            self.assertNotIn("was anything compiled", result.stdout)
        # A report whose only line was cut short is still a job report (exit 1, the line counted).
        torn = self._write(json.dumps(_line())[:40])
        result = _cli("report", str(torn), "--json", timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("skipped 1 torn or garbled line(s)", json.loads(result.stdout)["notes"])

    def test_torn_garbled_and_foreign_lines_are_skipped_and_counted(self) -> None:
        good = json.dumps(_line())
        path = self._write(good, good[: len(good) // 2], "not json", json.dumps({**_line(), "format": FORMAT + 1}))
        result = _cli("report", str(path), "--json", timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)  # what the skipped lines held is unknown
        summary = json.loads(result.stdout)
        self.assertIs(summary["needed"], None)
        self.assertEqual((summary["processes"], summary["lines_unread"]), (1, 3))
        self.assertIn("skipped 2 torn or garbled line(s)", summary["notes"])
        self.assertTrue(any(f"of report layout {FORMAT + 1}" in note for note in summary["notes"]), summary["notes"])

    def test_a_torn_line_can_hide_the_process_that_needed_the_fix(self) -> None:
        """Issue 41: a process killed while writing its line leaves a prefix of it; that process
        may be the one that needed the fix, so the other lines cannot say "no" (exit 1)."""
        clean, acted = json.dumps(_line()), json.dumps({**_line(**_acted()), "pid": 2})
        torn = self._write(clean, acted[: len(acted) // 2])
        result = _cli("report", str(torn), timeout=120)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (1, "needed: unknown"), result.stdout)
        self.assertIn("1 line(s) of the report could not be read", " ".join(result.stdout.split()))
        self.assertNotIn("you can remove", result.stdout)
        # A yes stands whatever a torn line held.
        result = _cli("report", str(self._write(clean, acted, clean[:40])), timeout=120)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (0, "needed: yes"), result.stdout)

    def test_lines_of_another_shape_are_skipped_not_crashed_on(self) -> None:
        good = _line()
        bad = [{**good, "format": True}, {**good, "benchmarks": "3"}, {**good, "patches": [1]},
               {**good, "patches": [{"name": 1, "state": "applied"}]},
               {**good, "patches": [{**good["patches"][0], "counts": {next(iter(PATCHES[0].activity.kinds)): "many"}}]},
               {**good, "patches": [{**good["patches"][0], "details": "x"}]}, [good], "line"]
        path = self._write(json.dumps(good), *map(json.dumps, bad))
        result = _cli("report", str(path), "--json", timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)  # needed: unknown, not a crash
        self.assertNotIn("Traceback", result.stderr)
        summary = json.loads(result.stdout)
        self.assertEqual(summary["processes"], 1)
        self.assertIn(f"skipped {len(bad)} torn or garbled line(s)", summary["notes"])

    def test_bad_report_path_for_run_changes_nothing(self) -> None:
        fifo = self.directory / "fifo"
        os.mkfifo(fifo)
        for path, message in ((self.directory / "no" / "such" / "dir" / "f", "no such directory"),
                              (fifo, "not a regular file"), ("", "needs a file name")):
            result = _cli("run", "--report", str(path), "--", sys.executable, "-c", "print('RAN')", timeout=120)
            self.assertEqual(result.returncode, 2, path)
            self.assertIn(message, result.stderr)
            self.assertNotIn("RAN", result.stdout)

    def test_a_second_job_in_the_same_file_is_said(self) -> None:
        """Issue 41: a job's lines appended after another job's were folded into one answer
        without a word; run says so at start (README: a new file per job), and still runs."""
        used = self._write(json.dumps(_line()))
        for args, env, said in ((["--report", str(used)], {}, f"--report {used}"),
                                ([], {"INDUCTOR_FIX_REPORT": str(used)}, f"INDUCTOR_FIX_REPORT={used}"),
                                (["--report", str(self.directory / "fresh.jsonl")], {}, None)):  # control
            result = _cli("run", *args, "--", sys.executable, "-c", "print('RAN')", timeout=120, **env)
            self.assertEqual((result.returncode, result.stdout), (0, "RAN\n"), result.stderr)
            if said is None:
                self.assertNotIn("already holds", result.stderr)
            else:
                self.assertIn(f"{said} already holds 1 line(s) of another job or an earlier run", result.stderr)
                self.assertIn("give each job a new file", result.stderr)

    def test_a_command_not_found_creates_no_report(self) -> None:
        report = self.directory / "never.jsonl"
        result = _cli("run", "--report", str(report), "--", "inductor-fix-no-such-command", timeout=120)
        self.assertEqual(result.returncode, 127)
        self.assertFalse(report.exists())

    def test_reading_a_fifo_does_not_block(self) -> None:
        fifo = self.directory / "fifo"
        os.mkfifo(fifo)
        result = _cli("report", str(fifo), timeout=60)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (2, "needed: unknown"))
        self.assertIn("not a regular file", result.stderr)


class TestReportLine(TestCase):
    """The writing side, in a process of its own (no compile: a patch's activity is recorded by hand)."""

    SCRIPT = """
import os, sys, multiprocessing
import inductor_fix
from inductor_fix.patches import PATCHES
os.environ.pop("INDUCTOR_FIX_REPORT")  # a program may drop or change it after start-up
os.chdir({elsewhere!r})
import torch._inductor.select_algorithm
PATCHES[0].activity.add(next(iter(PATCHES[0].activity.kinds)))
child = multiprocessing.get_context("fork").Process(target=os.getpid)
child.start(); child.join()
print("CHILD", child.pid)
"""

    def test_forked_child_writes_its_own_line_to_the_path_set_at_start(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_line_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "elsewhere").mkdir()
        script = directory / "job.py"
        script.write_text(textwrap.dedent(self.SCRIPT.format(elsewhere=str(directory / "elsewhere"))))
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                                cwd=directory, env=_environment(INDUCTOR_FIX_REPORT="job.jsonl"))
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        child = int(result.stdout.split("CHILD")[1])
        lines = {line["pid"]: line for line in map(json.loads, (directory / "job.jsonl").read_text().splitlines())}
        self.assertEqual(set(lines), {child, lines[child]["ppid"]})
        counts = {pid: line["patches"][0]["counts"] for pid, line in lines.items()}
        self.assertEqual(counts, {child: {}, lines[child]["ppid"]: {next(iter(PATCHES[0].activity.kinds)): 1}})


class TestDiedInACompile(TestCase):
    """A process whose compile raised (PyPI triton on a CPU with cpu_backend="triton": `0 active
    drivers`) records the exception in its line, and the report says so (issue 30)."""

    SCRIPT = """
import torch, torch._inductor.select_algorithm

def no_driver(graph, inputs):
    raise RuntimeError("0 active drivers ([]). There should only be one.")

torch.compile(lambda x: x + 1, backend=no_driver)(torch.ones(2))
"""

    def test_the_report_names_the_error_and_where_it_was_raised(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_died_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "job.py").write_text(textwrap.dedent(self.SCRIPT))
        here = {"PYTHONPATH": str(ROOT)}  # this checkout's package, whichever one is installed
        launched = _cli("run", "--report", "job.jsonl", "--", sys.executable, "job.py", cwd=directory, **here)
        self.assertEqual(launched.returncode, 1, launched.stderr[-3000:])
        (line,) = map(json.loads, (directory / "job.jsonl").read_text().splitlines())
        self.assertTrue(line["exit_error"]["in_compile"], line["exit_error"])
        self.assertIn("0 active drivers", line["exit_error"]["error"])
        self.assertEqual(line["exit_error"]["raised_in"], "job.py:5")  # the backend's raise, not Dynamo's wrapper
        result = _cli("report", "job.jsonl", cwd=directory, timeout=120, **here)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertEqual(result.stdout.splitlines()[0], "needed: unknown")
        text = " ".join(result.stdout.split())
        self.assertIn("1 died in a compile", text)
        self.assertIn("died of an exception raised in a compile", text)
        self.assertNotIn("was anything compiled", text)


class TestJobReport(TestCase):
    """End to end under the CPU harness: processes append their lines, the report folds them."""

    def setUp(self) -> None:
        super().setUp()
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_job_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def _job(self, needs_the_fix: bool, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
        script = self.directory / "job.py"
        script.write_text(_job_script(needs_the_fix))
        report = self.directory / f"report-{needs_the_fix}-{len(env)}.jsonl"
        launched = _cli("run", "--report", str(report), "--", sys.executable, str(script), cwd=self.directory,
                        **env)
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        self.assertIn("DONE", launched.stdout)
        return _cli("report", str(report), "--json", timeout=120), report

    @needs_a_check_op
    def test_a_job_of_a_check_case_needs_the_fix(self) -> None:
        result, report = self._job(needs_the_fix=True)
        lines = report.read_text().splitlines()
        self.assertEqual(len(lines), 1)  # one process loaded Inductor
        summary = json.loads(result.stdout)
        if not is_affected(OP):
            self.assertIs(summary["needed"], False, summary)
            return
        self.assertEqual(result.returncode, 0)
        self.assertIs(summary["needed"], True, summary)
        # The op's patch acted, in kinds it declares; each detail shown reads as its kind's line.
        patch = by_op(OP)
        acted = summary["patches"][patch.name]
        self.assertTrue(acted["counts"], summary)
        self.assertLessEqual(set(acted["counts"]), set(patch.activity.kinds), acted)
        details = acted["where"][0]["details"]
        self.assertTrue(details, acted)
        for detail in details:
            self.assertLessEqual(detail["count"], acted["counts"][detail["kind"]], detail)
            self.assertNotEqual(patch.activity.line(detail), detail["kind"], detail)  # its kind read it

    @needs_a_check_op
    def test_torchrun_ranks_each_append_a_line(self) -> None:
        torchrun = Path(sys.executable).with_name("torchrun")
        runner = [str(torchrun)] if torchrun.exists() else [sys.executable, "-m", "torch.distributed.run"]
        script = self.directory / "ranks.py"
        script.write_text(_job_script(needs_the_fix=True))
        report = self.directory / "ranks.jsonl"
        launched = _cli("run", "--report", str(report), "--", *runner, "--standalone", "--nproc-per-node", "2",
                        str(script), cwd=self.directory, timeout=900)
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        lines = [json.loads(line) for line in report.read_text().splitlines()]
        self.assertEqual(sorted(line["rank"] for line in lines), ["0", "1"])  # torchrun itself loads no Inductor
        self.assertEqual({line["world_size"] for line in lines}, {"2"})
        summary = json.loads(_cli("report", str(report), "--json", timeout=120).stdout)
        self.assertEqual(summary["processes"], 2)
        self.assertIs(summary["needed"], is_affected(OP))

    def test_a_job_with_nothing_to_fix_does_not(self) -> None:
        result, _ = self._job(needs_the_fix=False)
        self.assertEqual(result.returncode, 0)
        summary = json.loads(result.stdout)
        self.assertIs(summary["needed"], False, summary)

    def test_disabled_job_says_the_fix_was_off(self) -> None:
        """Negative control: with INDUCTOR_FIX_DISABLE=1 nothing is recorded and nothing judged."""
        job = self.directory / "job.py"
        job.write_text(_job_script(needs_the_fix=False))
        report = self.directory / "off.jsonl"
        launched = _cli("run", "--report", str(report), "--", sys.executable, str(job), cwd=self.directory,
                        INDUCTOR_FIX_DISABLE="1")
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        result = _cli("report", str(report), timeout=120)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertEqual(result.stdout.splitlines()[0], "needed: unknown")
        self.assertIn("the fix was off", result.stdout)



class TestFieldsNotText(TestCase):
    """Readers of the report's notes and of the status read fields: rewording a message changes
    nothing they decide."""

    def test_skipped_lines_count_whatever_their_note_says(self) -> None:
        reworded = Skipped(3, "lines the reader could make nothing of")
        self.assertEqual(str(reworded), "skipped 3 lines the reader could make nothing of")
        nothing = summarize([], [reworded])
        self.assertEqual(nothing["lines_unread"], 3)
        self.assertIn("no line of the report could be used", nothing["advice"])
        some = summarize([_line()], [reworded])
        self.assertIsNone(some["needed"])  # a torn line could hide the process that needed the fix
        self.assertIn("with a usable line", format_summary(some))
        self.assertIn("loaded Inductor", format_summary(summarize([_line()], [], ["another note"])))

    def test_status_verdict_and_detail_are_fields(self) -> None:
        from inductor_fix.status import PatchStatus, State, Status

        patches = (PatchStatus("a", "m.C.f", State.APPLIED, "why a"),
                   PatchStatus("b", "m.C.g", State.DISABLED, "why b"))
        status = Status.of(patches, "2.14.1", "3.8.0")
        self.assertEqual(status.reason, f"not protected: {status.detail}")
        self.assertEqual(status.detail, "b disabled: why b")
        reworded = dataclasses.replace(status, reason="NOT PROTECTED (b)")
        lines = reworded.format(after_headline=["  autoload: line"]).splitlines()
        self.assertEqual(lines[:2], ["inductor_fix: disabled - NOT PROTECTED (b)", "  autoload: line"])


if __name__ == "__main__":
    run_tests()
