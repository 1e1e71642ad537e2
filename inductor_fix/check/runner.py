"""``python -m inductor_fix check``: does the installed torch crash, and does the fix stop it?

Each patch declares the ops that show its bug in the ``check`` part of its folder, found
through the patch table (:mod:`inductor_fix.check.table`): each op runs in one or more
sequences (both aliasing orders of a two-compile matmul sequence, a single compile of a
FlexAttention workload ...). ``check`` runs every sequence of the chosen ops twice: stock
(``INDUCTOR_FIX_DISABLE=1``) and patched, each in a fresh subprocess with a fresh
``TORCHINDUCTOR_CACHE_DIR``, and prints a verdict table.

On a CUDA machine the kernels run for real and patched outputs are compared
with eager. On a CPU-only machine the Triton-on-CPU harness
(:mod:`inductor_fix.check.harness`) runs the same Inductor code with launches
replaced by an arity oracle.

Output fits 100 columns: each distinct error is a numbered note under the table
(the full text also in ``--json``). Exit status (:data:`EXIT_STATUS`): 0 every
patched compile succeeded, 1 a patched compile crashed, 2 a case gave no result or
check could not run.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import importlib.util
import json
import os
import re
import signal
import sys
import textwrap
import threading
from typing import Any, NamedTuple, Sequence

import inductor_fix

from .._files import unwritable, write_whole
from .._installed import please_report
from .case import RESULT_MARKER, ignore_cpu_backend_warning
from .child import Stopped, private_directory, run_child, stop_all, sweep
from .harness import ORACLE_ERROR
from .parts import by_op, is_affected
from .table import broken_parts, default_ops, harness_notes, label_of, orders_of, steps_of, unavailable

__all__ = ["EXIT_STATUS", "Case", "Verdict", "harness_note", "run_check", "verdict"]

class Verdict(NamedTuple):
    """An exit status's ``word`` (the verdict line's, the JSON's) and what it means; reads as
    ``"WORD: meaning"``, as ``--help`` and README say it."""

    word: str
    meaning: str

    def __str__(self) -> str:
        return f"{self.word}: {self.meaning}"


#: Exit status -> its :class:`Verdict`.
EXIT_STATUS = {
    0: Verdict("PASS", "every patched compile succeeded"),
    1: Verdict("FAIL", "a patched compile crashed - the fix did not hold on this torch (please report it)"),
    2: Verdict("ERROR", "a case gave no result (timeout, a broken case process) or check could not run"),
}
WIDTH = 100  # the table; prose and error notes wrap at PROSE, for 80-column terminals
PROSE = 80

MODES = ("stock", "patched")



def harness_note() -> str:
    """What ``check`` says of the CPU harness; each patch's own seams add a sentence between the
    first and the last (its part's ``harness_note``). Read when check runs: importing this module
    reads no part."""
    return " ".join((
        "CPU-only machine: Triton-on-CPU harness. Inductor's real template codegen, codegen cache and "
        "benchmark-request code run; kernel launches are replaced by an arity oracle that raises the "
        "TypeError a real launcher would (python -m pydoc inductor_fix.check.harness lists the seams it replaces).",
        *harness_notes(),
        "It shows whether arguments fit kernels, not whether outputs are right.",
    ))


@dataclasses.dataclass
class Case:
    op: str
    order: str
    mode: str
    device: str
    ok: bool = False
    #: The compile's error (the bug, or another crash), None if it compiled.
    error: str | None = None
    #: Why the case produced no result at all (timeout, a failed case process).
    failure: str | None = None
    state: str | None = None
    seconds: float = 0.0
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: counters["inductor_fix"] of the case process: what every patch did there, by activity kind.
    counters: dict[str, int] = dataclasses.field(default_factory=dict)

    #: Whether stock torch of this version has the bug this case shows (the patch table).
    affected: bool = False

    def outcome(self) -> str:
        """One short phrase: ``ok``, ``crashed (expected)``, ``CRASHED``, ``timed out`` ...; a stock
        case that failed otherwise than its patch's crash: ``failed (not the crash)``."""
        if self.failure:
            return self.failure
        if self.ok:
            return "ok"
        if self.mode == "stock":
            if not self.is_the_crash():
                return "failed (not the crash)"
            return "crashed (expected)" if self.affected else "crashed (not expected on this torch)"
        return "CRASHED"

    def is_the_crash(self) -> bool:
        """Whether the case's error is the stock crash of its op's patch (``Patch.crash``, the
        patch table's; on a CPU also the harness's launch of the wrong arity, raised in the
        launcher's place)."""
        patch = by_op(self.op)
        if patch is None or not self.error:
            return False
        harness = self.device == "cpu" and re.search(ORACLE_ERROR, self.error) is not None
        return patch.crash.matches(self.error) or harness

    def details(self) -> str:
        """What an ok case measured: max relative error and what the fix did, short."""
        errors = [s["max_rel_error"] for s in self.steps if s.get("max_rel_error") is not None]
        parts = [f"err {max(errors):.1e}"] if errors else []
        parts += [f"{key} {value}" for key, value in sorted(self.counters.items()) if value]
        return ", ".join(parts)


#: Seconds a CPU-harness case takes with a CPU to itself: the start-up estimate. Measured: the
#: median of ``cases[].seconds`` in ``check --jobs 1 --json FILE`` (22 cases, 21.3 s; 481 s in all)
#: on a 2-CPU machine, torch 2.14.1; the progress lines then use the pace measured on the machine.
CPU_CASE_SECONDS = 21


def triton_hint() -> str:
    """What check says to a machine without triton (README's install section says the same): the
    triton this torch's metadata declares, where it declares one (CUDA builds), else which to look for."""
    import re

    from .._installed import triton_required, torch_version

    declared = triton_required()
    if declared is not None:
        quoted = f'"{declared}"' if re.search(r"[<>~!*, ]", declared) else declared  # a shell's words
        return f"python -m pip install {quoted} (what torch {torch_version()} declares it requires)"
    return (f"python -m pip install triton (the release the CUDA build of torch {torch_version()} requires, if "
            "the newest does not fit it: pip show torch on a CUDA machine names it)")


SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class _Signalled(BaseException):
    """SIGTERM or SIGHUP reached check (``timeout``, a CI runner, Slurm, a closed terminal):
    stop as on Ctrl-C, cases ended and their temporary directories removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _run_case(case: Case, timeout: float, threads: int | None, started: Any = None) -> Case:
    try:
        if started is not None:
            started(case)
        return _run_case_process(case, timeout, threads)
    except Stopped:
        case.failure = "stopped"
        return case


def _run_case_process(case: Case, timeout: float, threads: int | None) -> Case:
    with private_directory("inductor_fix_check_") as cache_dir:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, PYTHONUNBUFFERED="1")
        env.pop("INDUCTOR_FIX_DISABLE", None)
        if case.mode == "stock":
            env["INDUCTOR_FIX_DISABLE"] = "1"
        if threads:
            env["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
        command = [sys.executable, "-m", "inductor_fix.check.case", case.op, case.order, case.device]
        child = run_child(command, env, RESULT_MARKER, timeout)
    case.seconds = child.seconds
    if child.result is None and child.status is not None and child.status < 0:
        # Ended by a signal (SIGSEGV, SIGABRT, SIGBUS) while compiling: a crash in native code, such as a
        # kernel called through ctypes with arguments it does not take. The crash is the case's result.
        case.error = f"the case process crashed: {child.failure}"
        return case
    if child.result is None:
        case.failure = child.failure if child.timed_out else f"no result: case {child.failure}"
        return case
    result = child.result
    case.state, case.steps, case.counters = result["state"], result["steps"], result["counters"]
    failed = [step for step in case.steps if step["error"]]
    case.ok = not failed and len(case.steps) == steps_of(case.op, case.order)
    case.error = failed[0]["error"] if failed else None
    return case


def _table(cases: list[Case]) -> tuple[str, list[str]]:
    """The verdict table, and the distinct errors its cells point to as ``[n]``."""
    notes: list[str] = []

    def cell(case: Case) -> str:
        problem = case.failure if case.failure and len(case.failure) > 30 else case.error if not case.ok else None
        text = "no result" if problem and case.failure else case.outcome()
        if problem:
            if problem not in notes:
                notes.append(problem)
            text += f" [{notes.index(problem) + 1}]"
        details = case.details() if case.ok else ""
        return f"{text} ({details})" if details else text

    by_key = {(c.op, c.order, c.mode): c for c in cases}
    rows = [("op", "sequence", "stock", "patched")]
    for op, order in dict.fromkeys((c.op, c.order) for c in cases):
        rows.append((op, label_of(op, order), cell(by_key[op, order, "stock"]), cell(by_key[op, order, "patched"])))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    indent = sum(widths) + 2 * len(widths)
    for i, row in enumerate(rows):
        head = "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  "
        # The patched cell is last: it wraps under itself rather than losing what the fix did.
        wrapped = _wrap_cell(row[3], max(WIDTH - indent, 20))
        lines.append(_fit(head + wrapped[0]))
        lines.extend(_fit(" " * indent + more) for more in wrapped[1:])
        if i == 0:
            lines.append(("  ".join("-" * w for w in widths) + "  " + "-" * 7)[:WIDTH])
    return "\n".join(lines), notes


def _wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken only after its ``", "``s
    (so ``realigned 35`` stays together); the lines joined by spaces give ``text`` back."""
    lines: list[str] = []
    for piece in text.replace(", ", ",\0").split("\0"):
        if lines and len(lines[-1]) + 1 + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def _fit(line: str) -> str:
    """``line`` cut to :data:`WIDTH` columns (the whole text is in ``--json``)."""
    return line if len(line) <= WIDTH else line[: WIDTH - 4] + " ..."


def _wrapped(text: str, indent: str = "") -> str:
    return textwrap.fill(text, PROSE, initial_indent=indent, subsequent_indent=" " * len(indent),
                         break_long_words=True, break_on_hyphens=False)


def run_check(
    ops: Sequence[str] | None = None,
    device: str = "auto",
    jobs: int | None = None,
    timeout: float = 1800.0,
    json_path: str | None = None,
) -> int:
    """Run every case, print the table, return the exit status (0: all patched ok;
    :data:`EXIT_STATUS`). Ctrl-C, SIGTERM and SIGHUP end every case process (with its
    compile workers) and remove its temporary directories, and return 128 + the signal."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        caught: list[int] = []

        def handler(signum: int, _frame: Any) -> None:
            if not caught:  # a second signal while stopping must not cut the clean-up short
                caught.append(signum)
                raise _Signalled(signum)

        # A signal ignored when check started stays ignored (nohup: SIGHUP must not stop it).
        previous = {signum: signal.signal(signum, handler) for signum in SIGNALS
                    if signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        return _run_check(ops, device, jobs, timeout, json_path)
    except (KeyboardInterrupt, _Signalled) as stop:
        signum = stop.signum if isinstance(stop, _Signalled) else signal.SIGINT
        print(f"inductor_fix check: {signal.Signals(signum).name}: stopped every case; no verdict", file=sys.stderr)
        return 128 + signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run_check(ops: Sequence[str] | None, device: str, jobs: int | None, timeout: float,
               json_path: str | None) -> int:
    # The parts, read now: one that cannot be read is named, and its ops are not run.
    broken = broken_parts()
    chosen = list(default_ops() if ops is None else ops)
    not_loaded = [_wrapped(f"skipped {name}: its check part cannot be read, so its ops cannot run ({reason})")
                  for name, reason in broken.items()]
    if not chosen:
        print("\n".join(not_loaded))
        print("inductor_fix check: no op can run (above)", file=sys.stderr)
        return 2
    # A bad argument is refused before torch loads (seconds), not after every case has run; in
    # run --report's words (inductor_fix._files).
    problem = unwritable(json_path, create=False) if json_path else None
    if problem:
        print(f"inductor_fix check: --json {json_path}: {problem}", file=sys.stderr)
        return 2
    print(f"inductor_fix check: loading torch ({', '.join(chosen)}) ...", flush=True)
    sweep()  # what a check killed outright (SIGKILL) left in the temporary directory
    ignore_cpu_backend_warning()
    try:
        import torch
    except ImportError:
        print(f"inductor_fix check: torch is not installed in this Python ({sys.executable}): install the torch "
              "you use first, python -m pip install torch (CPU-only: python -m pip install torch --index-url "
              "https://download.pytorch.org/whl/cpu, then python -m pip install triton), then run check again",
              file=sys.stderr)
        return 2
    except Exception as error:
        print(f"inductor_fix check: importing torch failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and importlib.util.find_spec("triton") is None:
        print("inductor_fix check: the CPU harness runs Inductor's Triton template codegen and needs triton, which "
              f"torch's CPU wheels do not install: {triton_hint()}", file=sys.stderr)
        return 2
    if device == "cuda" and not torch.cuda.is_available():
        print("inductor_fix check: --device cuda, but torch sees no CUDA device", file=sys.stderr)
        return 2
    cpus = os.cpu_count() or 1
    jobs = jobs or (cpus if device == "cpu" else max(1, min(8, cpus // 2)))
    threads = None if device == "cpu" else max(1, cpus // jobs)
    status = inductor_fix.status()
    print(f"inductor_fix check: torch {status.torch_version}, triton {status.triton_version}, device {device}")
    if os.environ.get("INDUCTOR_FIX_DISABLE"):
        print(_wrapped(f"INDUCTOR_FIX_DISABLE={os.environ['INDUCTOR_FIX_DISABLE']} is set here: check sets it "
                       "itself in each case (stock: 1; patched: unset), to compare the two."))
    if device == "cpu":
        print(_wrapped(harness_note()))
    else:
        print(f"CUDA: {torch.cuda.get_device_name()}; kernels run for real, patched outputs compared with eager.")
    for line in not_loaded:
        print(line)
    skipped = {op: reason for op in chosen if (reason := unavailable(op, device))}
    for op, reason in skipped.items():
        print(_wrapped(f"skipped {op}: {reason}"))
    if len(skipped) == len(chosen):
        print(f"inductor_fix check: no op of {', '.join(chosen)} can run here (above)", file=sys.stderr)
        return 2
    cases = [Case(op, order, mode, device, affected=is_affected(op, str(status.torch_version)))
             for op in chosen if op not in skipped for order in orders_of(op) for mode in MODES]
    print(_wrapped(f"running {len(cases)} cases, {jobs} at a time, each in a fresh process and Inductor cache: "
                   + _estimate(len(cases), jobs, device, cpus)), flush=True)
    lock = threading.Lock()

    def started(case: Case) -> None:
        with lock:
            print(f"  start {case.op} {case.order} {case.mode}", flush=True)

    measured: list[float] = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(_run_case, case, timeout, threads, started) for case in cases]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            case = future.result()
            took = "" if case.failure else f" in {case.seconds:.1f} s"
            left = len(cases) - done
            measured.append(case.seconds)
            # At the pace measured here so far: the cases left, a case's mean time each, jobs at a time.
            pace = f"; ~{_duration(sum(measured) / len(measured) * left / jobs)} left" if left else ""
            line = f"  [{done}/{len(cases)}] {case.op} {case.order} {case.mode}: {case.outcome()}{took}{pace}"
            with lock:
                print(_fit(line), flush=True)
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP
        stop_all()  # the cases run in sessions of their own: they never saw the signal
        pool.shutdown(wait=True, cancel_futures=True)  # each worker kills its case, removes its directories
        raise
    pool.shutdown()
    text, exit_status = verdict(cases)
    print()
    print(text)
    if exit_status == 1:
        print(_wrapped(please_report("check --json FILE's file and the output of inductor-fix status --json")))
    if json_path:
        try:
            write_whole(json_path, json.dumps({
                "torch": status.torch_version, "triton": status.triton_version, "device": device,
                "inductor_fix": inductor_fix.__version__, "exit_status": exit_status,
                "verdict": EXIT_STATUS[exit_status].word,
                "options": {"ops": list(dict.fromkeys(c.op for c in cases)), "jobs": jobs, "timeout": timeout},
                "skipped": skipped, "parts_not_read": broken,
                "cases": [dataclasses.asdict(c) for c in cases]}, indent=2))
        except OSError as error:  # it could be written at start: something changed since
            print(f"inductor_fix check: --json {json_path}: cannot write to it: {error.strerror or error}",
                  file=sys.stderr)
            return 2
    return exit_status


def _estimate(cases: int, jobs: int, device: str, cpus: int) -> str:
    """What to expect, said before the first case starts."""
    if device != "cpu":
        return "each compiles and autotunes its kernels on the GPU; the time left is shown as cases finish"
    seconds = cases * CPU_CASE_SECONDS / max(1, min(jobs, cpus))
    return (f"roughly {_duration(seconds)} (~{CPU_CASE_SECONDS} s of one CPU a case on a 2-CPU machine; "
            "the time left is shown as cases finish)")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def verdict(cases: list[Case]) -> tuple[str, int]:
    """The table and summary lines for ``cases``, and the exit status: 0 if every patched
    case compiled, 1 if a patched compile crashed, 2 if a case gave no result."""
    stock = [c for c in cases if c.mode == "stock"]
    patched = [c for c in cases if c.mode == "patched"]
    crashed = [c for c in patched if c.error]
    no_result = [c for c in cases if c.failure]
    states = ", ".join(sorted({c.state for c in patched if c.state})) or "unknown"
    table, notes = _table(cases)
    lines = [table, ""]
    if notes:  # one blank line between the table, its notes and the summary
        lines += [_wrapped(note, f"[{number}] ") for number, note in enumerate(notes, 1)] + [""]
    lines += [
        f"stock:   crashed in {sum(c.is_the_crash() for c in stock)}/{len(stock)} cases "
        f"({sum(c.affected for c in stock)} expected to on this torch"
        + (f"; {len(other)} failed otherwise" if (other := [c for c in stock if c.error and not c.is_the_crash()])
           else "")
        + (f"; {sum(bool(c.failure) for c in stock)} gave no result)" if any(c.failure for c in stock) else ")"),
        f"patched: ok in {sum(c.ok for c in patched)}/{len(patched)} cases (inductor_fix state: {states})",
    ]
    status = 1 if crashed else 2 if no_result else 0
    reason = {0: "patched compiles never crashed", 1: "a patched compile crashed: the fix did not hold",
              2: f"{len(no_result)} case(s) gave no result"}[status]
    lines.append(f"verdict: {EXIT_STATUS[status].word} - {reason} (exit {status})")
    return "\n".join(lines), status
