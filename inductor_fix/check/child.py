"""Child processes for check and the tools: one runner, a process group of its own each.

Shared by ``python -m inductor_fix check`` (one case per child), ``tools/bench``
(one run per child), ``tools/run_matrix`` and ``tools/check_patches`` (one pytest
run per child). Each child runs in a process session of its own, so that a
timeout or a Ctrl-C also ends Inductor's compile workers, which would otherwise
outlive it; its output (stdout and stderr together) goes to a log file.

A parent killed outright (SIGKILL, the OOM killer) ends nothing itself. Its children of this
package (a check case, a bench run) call :func:`die_with_parent` first, so the kernel ends
them with it (Inductor's compile workers watch their own parent); and the temporary folders
it made (:func:`private_directory`) are left to the next ``check``, whose :func:`sweep` removes
those that no living process holds.
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

__all__ = ["ChildResult", "PARENT_VARIABLE", "Stopped", "describe_exit", "die_with_parent", "private_directory",
           "run_child", "run_logged", "stop_all", "sweep"]

#: Set by :func:`run_logged` in each child's environment to its own pid, for :func:`die_with_parent`.
PARENT_VARIABLE = "INDUCTOR_FIX_PARENT_PID"
#: The temporary folders :func:`private_directory` makes here, which :func:`sweep` may remove.
PREFIXES = ("inductor_fix_check_", "inductor_fix_child_")
#: The file in such a folder that its process holds an flock on while it uses the folder.
_LOCK = ".inductor_fix_in_use"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_stopping = threading.Event()


def die_with_parent() -> None:
    """In a child started by :func:`run_logged`: have the kernel SIGKILL this process when its
    parent dies, however the parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``; elsewhere, or
    outside run_logged, nothing). Strictly, when the parent's thread that started it ends:
    run_logged's thread waits for the child, so it lives as long. If the parent died before
    this call, this process exits now (status 137, as if killed)."""
    import sys

    parent = os.environ.pop(PARENT_VARIABLE, None)  # not for this process's own children
    if not parent or not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):  # no libc prctl here: the parent's clean-up is all there is
        return
    if os.getppid() == int(parent):
        return
    try:
        os.kill(int(parent), 0)
    except ProcessLookupError:  # orphaned before the call: no one would send the signal
        os._exit(128 + signal.SIGKILL)
    except OSError:  # alive, another user's (a reused pid)
        pass
    # The variable came from further up (a run_logged child's own children): not ours to act on.
    prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)


@contextlib.contextmanager
def private_directory(prefix: str):
    """A new temporary folder (``tempfile.mkdtemp(prefix=prefix)``, ``prefix`` one of
    :data:`PREFIXES`), removed on exit. While it is in use this process holds an flock on a file
    in it; the kernel drops the lock when the process dies however it dies, so that
    :func:`sweep` can tell a folder a killed run left from one in use."""
    import shutil

    while True:
        path = tempfile.mkdtemp(prefix=prefix)
        held = _hold(path)
        if held is not False:
            break  # else a sweep took the folder between its making and the lock: make another
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if held is not None:
            os.close(held)


def _hold(path: str) -> int | None | bool:
    """The descriptor holding ``path``'s lock; None where there are no flocks; False if a sweep
    got there first (the folder is gone or going)."""
    try:
        import fcntl
    except ImportError:
        return None
    lock = os.path.join(path, _LOCK)
    try:
        descriptor = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(lock).st_ino == os.fstat(descriptor).st_ino:  # not unlinked by a sweep meanwhile
            return descriptor
    except OSError:
        pass
    os.close(descriptor)
    return False


def sweep() -> list[str]:
    """Remove the folders of :data:`PREFIXES` in the temporary directory that a run of this user
    left when it was killed: those whose lock no living process holds (a folder without the lock
    file, an older version's, is left alone). The folders removed."""
    import shutil

    try:
        import fcntl
    except ImportError:
        return []
    base, removed = tempfile.gettempdir(), []
    try:
        names = [name for name in os.listdir(base) if name.startswith(PREFIXES)]
    except OSError:
        return []
    for name in names:
        path = os.path.join(base, name)
        try:
            descriptor = os.open(os.path.join(path, _LOCK), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if os.fstat(descriptor).st_uid != os.getuid():
                continue
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: in use
            os.close(descriptor)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(descriptor)
    return removed


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
        process = subprocess.Popen(list(command), env={**env, PARENT_VARIABLE: str(os.getpid())}, cwd=cwd,
                                   stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
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
                    if next_report and every and progress and now >= next_report:
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
    with private_directory("inductor_fix_child_") as directory:
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
    from .parts import killed_by  # the words a patch's Crash.signals match

    try:
        return killed_by(signal.Signals(-status).name)
    except ValueError:
        return killed_by(f"signal {-status}")
