"""Run one measurement in a child process that reports a single ``MARKER {json}`` line.

Shared by ``python -m inductor_fix check`` (one case per child) and
``tools/bench compile`` (one run per child): each child gets a fresh Inductor
cache from its parent and a process session of its own, so that a timeout or a
Ctrl-C also ends Inductor's compile workers, which would otherwise outlive it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
from typing import Any, Mapping, Sequence

__all__ = ["ChildResult", "run_child"]


@dataclasses.dataclass
class ChildResult:
    """``result``: the child's JSON, or None with ``failure`` saying why; ``timed_out``
    when the parent ended it; ``seconds`` of wall time."""

    result: dict[str, Any] | None
    failure: str | None
    timed_out: bool
    seconds: float


def run_child(command: Sequence[str], env: Mapping[str, str], marker: str, timeout: float) -> ChildResult:
    """Run ``command``; its last stdout line starting with ``marker`` holds the result.

    Raises what the wait raises other than a timeout (KeyboardInterrupt), after
    killing the child's process group.
    """
    start = time.perf_counter()
    process = subprocess.Popen(list(command), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException as error:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        if not isinstance(error, subprocess.TimeoutExpired):
            raise
        return ChildResult(None, f"timed out after {timeout:g} s", True, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    lines = [line for line in stdout.splitlines() if line.startswith(marker)]
    if not lines:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return ChildResult(None, f"process failed (exit {process.returncode}): {tail}", False, seconds)
    return ChildResult(json.loads(lines[-1][len(marker):]), None, False, seconds)
