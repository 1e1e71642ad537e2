"""``inductor-fix run -- CMD ...``: run a command with the fix active in all its Python processes.

The command runs with this package's start-up folder (``inductor_fix/_bootstrap``)
first on ``PYTHONPATH``; its ``sitecustomize`` starts the package (route ``run``: it is
imported when Inductor loads) in every Python process that inherits the variable, then
chains any ``sitecustomize`` that was there before. Nothing installed is edited, and a
process started without the variable (``env -i``, a scrubbed environment, ``python
-E``/``-I``/``-S``, which ignore it or ``site``) runs stock torch. ``INDUCTOR_FIX_DISABLE``
passes through unchanged, so it still turns patches off in each process. The same
mechanism as ``opentelemetry-instrument`` and ``ddtrace-run``.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Mapping, NoReturn, Sequence

__all__ = ["BOOTSTRAP", "LaunchError", "environment", "run"]

#: The folder put first on PYTHONPATH; it holds only the start-up hook.
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")


class LaunchError(Exception):
    """The command cannot be started; nothing ran. ``status`` is the shell's exit status
    for it: 127 not found, 126 found but not runnable, 2 no command."""

    def __init__(self, message: str, status: int = 127) -> None:
        super().__init__(message)
        self.status = status


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with :data:`BOOTSTRAP` first on ``PYTHONPATH``,
    once; the entries that were there kept in order, empty ones too (Python reads an
    empty entry, as ``export PYTHONPATH=$PYTHONPATH:/x`` leaves, as the working directory)."""
    env = dict(os.environ if base is None else base)
    entries = env["PYTHONPATH"].split(os.pathsep) if env.get("PYTHONPATH") else []
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP, *(entry for entry in entries if entry != BOOTSTRAP)])
    return env


def report_path(path: str) -> str:
    """``path`` made absolute (the command's processes may change directory), after checking
    that lines can be appended to it (:func:`inductor_fix._files.unwritable`: a regular file,
    or missing, that takes a write); created empty if missing. Raises LaunchError (status 2)."""
    from ._files import unwritable

    if not path:
        raise LaunchError("--report needs a file name", 2)
    absolute = os.path.abspath(path)
    problem = unwritable(absolute, create=True)
    if problem:
        raise LaunchError(f"--report {path}: {problem}", 2)
    return absolute


def _warn_if_used(path: str, named: str) -> None:
    """Say on stderr if the report file ``path`` already holds lines: this job's would be added
    after another job's (or an earlier run's), and ``inductor-fix report`` reads a file as one
    job. A warning, not a refusal: appending to a file is what the variable asks for."""
    try:
        with open(path, "rb") as handle:
            lines = sum(1 for line in handle if line.strip())
    except OSError:  # unreadable, not unwritable: report_path said what matters
        return
    if lines:
        sys.stderr.write(f"inductor-fix run: warning: {named} already holds {lines} line(s) of another job or an "
                         "earlier run; this job's lines are added after them, and inductor-fix report reads the file "
                         "as one job: give each job a new file\n")


def run(command: Sequence[str], report: str | None = None) -> NoReturn | int:
    """Replace this process by ``command`` (POSIX ``exec``: signals and exit status are the
    command's own: a command that Ctrl-C ends dies of SIGINT, which a shell says as 130); on
    Windows, run it and return its exit status (:func:`_wait_for`). With ``report``, every
    Python process of the command that loads Inductor appends its line to that file
    (``INDUCTOR_FIX_REPORT``, :mod:`inductor_fix.report`); a report file that already holds
    lines is said on stderr (a new file per job).

    Raises LaunchError if ``command`` is empty, its program is not on ``PATH``, it
    cannot be executed, or ``report`` cannot be appended to.
    """
    if not command:
        raise LaunchError("no command given: inductor-fix run -- CMD [ARGS ...]", 2)
    env = environment()
    program = shutil.which(command[0], path=env.get("PATH"))
    if program is None:
        if os.sep in command[0] and os.path.exists(command[0]):  # a shell's 126, not "not found"
            raise LaunchError(f"cannot run {command[0]}: not an executable file", 126)
        raise LaunchError(f"command not found: {command[0]}")
    from _inductor_fix_startup import REPORT_VARIABLE as VARIABLE

    if report is not None:
        env[VARIABLE] = report_path(report)
    elif env.get(VARIABLE):  # set by the caller: absolute too, before any process changes directory
        env[VARIABLE] = os.path.abspath(env[VARIABLE])
    if env.get(VARIABLE):
        named = f"--report {report}" if report is not None else f"{VARIABLE}={os.environ[VARIABLE]}"
        _warn_if_used(env[VARIABLE], named)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "nt":
            return _wait_for([program, *command[1:]], env)
        os.execve(program, list(command), env)
    except OSError as error:  # no shebang, a missing interpreter: as a shell, exit 126
        why = "its #! interpreter was not found" if isinstance(error, FileNotFoundError) else error.strerror
        raise LaunchError(f"cannot run {command[0]}: {why}", 126) from None


def _wait_for(argv: list[str], env: Mapping[str, str]) -> int:
    """Run ``argv`` and return its exit status, as a shell waits for a job: Ctrl-C reaches the
    job too (the console sends it to every process attached), and the job's exit, not this
    process's ``KeyboardInterrupt``, decides (``subprocess.call`` would kill the job mid-exit, its
    report line unwritten). Where ``run`` cannot ``exec`` (Windows)."""
    import subprocess  # here: on POSIX this process becomes the command, and pays only for what it uses

    with subprocess.Popen(argv, env=env) as job:
        while True:
            try:
                return job.wait()
            except KeyboardInterrupt:  # the job got it as well: its exit says what it made of it
                continue
