"""Child processes for check and the tools: one runner, a process group of its own each.

Shared by ``python -m inductor_fix check`` (one case per child), ``tools/bench``
(one run per child), ``tools/run_matrix`` and ``tools/check_patches`` (one pytest
run per child). Each child runs in a process session of its own, so that a
timeout or a Ctrl-C also ends Inductor's compile workers, which would otherwise
outlive it; its output (stdout and stderr together) goes to a log file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = ["ChildResult", "Stopped", "describe_exit", "run_child", "run_logged", "stop_all"]

_stopping = threading.Event()


class Stopped(Exception):
    """:func:`stop_all` ended the child (a Ctrl-C in the parent's main thread)."""


def stop_all() -> None:
    """End every running child (each within a second) and start no new one: for the main
    thread on Ctrl-C, whose worker threads wait on children that never see the signal."""
    _stopping.set()


def run_logged(
    command: Sequence[str],
    env: Mapping[str, str],
    log: Path,
    *,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    every: float | None = None,
    progress: Callable[[float], None] | None = None,
) -> tuple[int | None, float]:
    """Run ``command`` with its output in ``log``; ``(exit status, or None if it timed out,
    seconds)``. ``progress(seconds)`` is called every ``every`` seconds while it runs.

    Raises what the wait raises other than a timeout (KeyboardInterrupt), after
    killing the child's process group.
    """
    start = time.monotonic()
    if _stopping.is_set():
        raise Stopped()
    with open(log, "w") as out:
        process = subprocess.Popen(list(command), env=dict(env), cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        next_report = start + every if every else None
        try:
            while True:
                wait = 1.0  # also how soon stop_all() is noticed
                if timeout is not None:
                    wait = max(0.0, min(wait, start + timeout - time.monotonic()))
                try:
                    process.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    if _stopping.is_set():
                        raise Stopped() from None
                    now = time.monotonic()
                    if timeout is not None and now - start >= timeout:
                        _kill(process)
                        return None, now - start
                    if next_report and progress and now >= next_report:
                        progress(now - start)
                        next_report += every
        except BaseException:
            _kill(process)
            raise
    return process.returncode, time.monotonic() - start


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@dataclasses.dataclass
class ChildResult:
    """``result``: the child's JSON, or None with ``failure`` saying why; ``timed_out``
    when the parent ended it; ``seconds`` of wall time; ``status`` its exit status (negative:
    the signal that ended it; None if it timed out)."""

    result: dict[str, Any] | None
    failure: str | None
    timed_out: bool
    seconds: float
    status: int | None = None


def run_child(command: Sequence[str], env: Mapping[str, str], marker: str, timeout: float) -> ChildResult:
    """Run ``command``; its last output line starting with ``marker`` holds the result (JSON)."""
    with tempfile.TemporaryDirectory(prefix="inductor_fix_child_") as directory:
        log = Path(directory, "output.log")
        status, seconds = run_logged(command, env, log, timeout=timeout)
        lines = log.read_text(errors="replace").splitlines()
    if status is None:
        return ChildResult(None, f"timed out after {timeout:g} s", True, seconds)
    marked = [line for line in lines if line.startswith(marker)]
    if not marked:
        tail = ([line for line in lines if line.strip()] or ["no output"])[-1].strip()
        return ChildResult(None, f"process failed ({describe_exit(status)}): {tail}", False, seconds, status)
    return ChildResult(json.loads(marked[-1][len(marker):]), None, False, seconds, status)


def describe_exit(status: int) -> str:
    """``"exit 3"``, or ``"killed by SIGSEGV"`` for a process a signal ended (a negative status)."""
    if status >= 0:
        return f"exit {status}"
    try:
        return f"killed by {signal.Signals(-status).name}"
    except ValueError:
        return f"killed by signal {-status}"
