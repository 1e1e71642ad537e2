"""The job report's writer: each process's line, appended at exit.

With ``INDUCTOR_FIX_REPORT=FILE`` in its environment (``inductor-fix run
--report FILE`` sets it for every process of a command), each Python process that
loads Inductor (``torch._inductor.select_algorithm``) appends one JSON line to FILE
when it exits: pid, parent pid, ``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` where set,
host, package/torch/triton versions, each patch's state and what it did
(:func:`inductor_fix.activity`), the autotuning rounds Inductor counted and the compiles its
FX graph cache served (whose rounds it counts again), the Triton template choices made, and
the uncaught exception it dies of, if any (``exit_error``: a process whose compile raised must
not read as one that compiled nothing; where in autotuning it was raised, and whether it was
Ctrl-C). The line is one ``os.write`` to a descriptor opened with ``O_APPEND``: on a
local file system the kernel appends each write whole, so concurrent ranks and workers
never interleave inside a line, without a lock that a process killed while holding it
(or a network file system without lock support) could turn into a hang. A process
killed before it exits loses only its own line; a line cut short (a full disk, a
network file system) is skipped and counted by the reader. Writing never raises into
the program: a failure is one line on stderr. This module runs in every process that
loads Inductor; the reader (``inductor-fix report``) is :mod:`inductor_fix.report`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import _inductor_fix_startup as startup

from ._version import __version__

__all__ = ["FORMAT", "VARIABLE", "choice_kind", "enable", "line"]

VARIABLE = "INDUCTOR_FIX_REPORT"
#: Set, to the absolute path, by the process that warned that the report cannot be written:
#: the job's other processes (its children) do not warn again.
WARNED_VARIABLE = "INDUCTOR_FIX_REPORT_WARNED"
#: The format of a line this version writes; :data:`READS`: the formats its reader reads (a line
#: of another is skipped, counted, and named). 2 added ``fx_graph_cache``, ``template_choices``,
#: and in ``exit_error`` ``interrupted``, ``selection``, ``choice``, ``choices`` and ``raised_by``;
#: its ``in_compile`` says the error was raised while compiling (format 1's: through Dynamo at all).
FORMAT = 2
READS = (1, 2)
_RANK_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE")
#: Inductor's counters of its FX graph cache (``codecache.FxGraphCache``): a compile served whole
#: from it (a hit) adds again the counters recorded when the graph was compiled, the autotuning
#: rounds (``select_algorithm_autotune``) among them, though nothing was autotuned.
_CACHE_COUNTERS = {"hit": "fxgraph_cache_hit", "miss": "fxgraph_cache_miss", "bypass": "fxgraph_cache_bypass"}
#: Files only a compile runs (torch 2.5-2.15): Dynamo's frame conversion (``torch.compile``, a
#: graph break's resume function) and its graph's call of the backend, whose frames are what Dynamo
#: keeps of a backend's error (``ShortenTraceback``); Inductor's entry, which a backward compiled
#: when it first runs (AOTAutograd's lazy backward) and AOTInductor reach without Dynamo. Code a
#: compile produced runs under Dynamo's ``eval_frame.py`` and Inductor's ``output_code.py`` and
#: runtime, never under these. Dynamo strips every frame of its own tracing errors (``Unsupported``):
#: those are told by their class (:func:`_compiling`).
COMPILING = ("/torch/_dynamo/convert_frame.py", "/torch/_dynamo/output_graph.py", "/torch/_inductor/compile_fx.py")
_path: str | None = None  # resolved when installed: a process may chdir or drop the variable later
_armed = False
_written: int | None = None  # the pid whose line is written: a forked child writes its own
#: What a forked child inherited from its parent: the autotuning rounds, FX graph cache counts and
#: Triton template choices counted before the fork (its line counts its own).
_before: dict[str, int] = {}


def enable() -> None:
    """Arm the exit-time line once Inductor loads, if ``INDUCTOR_FIX_REPORT`` is set.

    A path that cannot be appended to is said now, in one
    :class:`~inductor_fix.InductorFixWarning` per job (the first process to see it sets
    :data:`WARNED_VARIABLE` for its children), not at exit when the job's report is lost.
    """
    global _path
    if not startup.STARTUP.report:  # as the process started (made absolute then)
        return
    from ._files import unwritable  # here: a process without a report does not import it

    _path = startup.STARTUP.report
    problem = unwritable(_path, create=True)
    if problem:
        if os.environ.get(WARNED_VARIABLE) != _path:
            from ._warnings import warn_once

            warn_once(f"inductor_fix: {VARIABLE}={os.environ.get(VARIABLE, _path)}: {problem}; no process of this "
                      "job can write its report line (set it to a file that can be appended to)", origin=f"${VARIABLE}")
            os.environ[WARNED_VARIABLE] = _path
        return  # said once at start: nothing to try, and nothing to say again, at exit
    startup.when_imported(startup.INDUCTOR, _arm)


def _arm(_module: Any = None) -> None:
    global _armed
    if _armed or _path is None:
        return
    _armed = True
    import atexit

    atexit.register(_write, _path)
    # A forked child (multiprocessing's fork start method, a DataLoader worker) starts with a
    # copy of the parent's counts and leaves through os._exit, which skips atexit: it starts
    # its own counts at zero and writes its line through multiprocessing's exit finalizers.
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    import multiprocessing.util

    multiprocessing.util.register_after_fork(_FORK_TOKEN, _forked_by_multiprocessing)
    if multiprocessing.parent_process() is not None:
        # A multiprocessing child that loaded Inductor itself (forkserver's, or fork's after
        # the fork) also leaves through os._exit: its line goes out with the exit finalizers.
        multiprocessing.util.Finalize(None, _write, args=(_path,), exitpriority=0)


class _ForkToken:
    """multiprocessing keeps its after-fork callbacks by weak reference to an object."""


_FORK_TOKEN = _ForkToken()


def _forked() -> None:
    from ._lifecycle import LIFECYCLE  # here: the report's reader imports this module, never a fix

    for patch in LIFECYCLE.patches:
        patch.activity.clear()
    _before.update({name: _counter(name) for name in ("select_algorithm_autotune", *_CACHE_COUNTERS.values())})
    _before["template_choices"] = _triton_template_choices() or 0


def _forked_by_multiprocessing(_token: Any) -> None:
    import multiprocessing.util

    multiprocessing.util.Finalize(None, _write, args=(_path,), exitpriority=0)


def line() -> dict[str, Any]:
    """This process's report line (what :func:`_write` appends), as data."""
    import socket

    from ._lifecycle import LIFECYCLE  # here: the report's reader imports this module, never a fix

    now, activity = LIFECYCLE.status(), LIFECYCLE.activity()
    return {
        "format": FORMAT,
        "inductor_fix": __version__,
        "pid": os.getpid(),
        "ppid": os.getppid(),
        **{name.lower(): os.environ[name] for name in _RANK_VARIABLES if name in os.environ},
        "host": socket.gethostname(),
        "argv": sys.argv[:4],
        "torch": now.torch_version,
        "triton": now.triton_version,
        "disable": os.environ.get("INDUCTOR_FIX_DISABLE") or None,
        "state": str(now.state),
        # Autotuning rounds that benchmarked choices here: the bugs can only strike in one. Inductor
        # counts again those of a compile its FX graph cache served (fx_graph_cache: "hit").
        "benchmarks": _since("select_algorithm_autotune"),
        "fx_graph_cache": {key: _since(name) for key, name in _CACHE_COUNTERS.items()},
        # Triton template choices made here (None: this torch's count could not be read): none on a
        # CPU, whose templates are C++, nor where every compile came from a cache.
        "template_choices": _template_choices(),
        # A process that died of an exception (in a compile, say) must not read as one that compiled nothing.
        **({"exit_error": error} if (error := _exit_error()) else {}),
        "patches": [{"name": p.name, "state": str(p.state), "reason": p.reason, **activity[p.name]}
                    for p in now.patches],
    }


def _exit_error() -> dict[str, Any] | None:
    """The exception this process is dying of, if any: at exit Python has put an uncaught
    exception in ``sys.last_value`` (``sys.last_exc`` from 3.12). ``error``: its type and the
    first line of its message, then ``<-`` and the same of the exception it wraps, if any, cut
    short; ``in_compile``: whether it was raised while compiling (:data:`COMPILING`: not where
    compiled code ran, which Dynamo's frames also wrap);
    ``interrupted``: a ``KeyboardInterrupt`` (Ctrl-C), which Python then turns into death by
    SIGINT; ``raised_in``: ``file:line`` of the innermost frame of the exception it wraps, if
    any, else its own, the file relative to its package root: whose code raised it
    (``inductor_fix/...`` only when the package itself did); ``raised_by``: the patch of the
    table whose code raised an exception of the chain, if one did. Where it was raised in an
    autotuning selection (:func:`_autotuning`): ``selection``, ``choice``, ``choices``."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if not isinstance(error, BaseException) or isinstance(error, SystemExit):
        return None
    chain = [error]
    while (cause := chain[-1].__cause__ or (None if chain[-1].__suppress_context__ else chain[-1].__context__)):
        if any(cause is seen for seen in chain):  # a cycle of causes
            break
        chain.append(cause)
    root = chain[-1]
    inner = _frames(root) or _frames(error)
    message = _first_line(error)
    if root is not error:  # Dynamo's "backend='inductor' raised:" says little; what it wraps does
        message += f" <- {_first_line(root)}"
    return {"error": message[:300],
            "in_compile": _compiling(chain),
            "interrupted": isinstance(error, KeyboardInterrupt),
            "raised_in": f"{_package_relative(inner[-1][0])}:{inner[-1][1]}" if inner else None,
            "raised_by": _raised_by(chain),
            **_autotuning(chain)}


def _compiling(chain: list[BaseException]) -> bool:
    """Whether the error of ``chain`` was raised while compiling: its frames pass through a file
    of :data:`COMPILING`, or an exception of it is one of Dynamo's (``torch._dynamo.exc``: raised
    only by a compile, which strips its frames from some of them)."""
    return (any(f.endswith(COMPILING) for exception in chain for f, _ in _frames(exception))
            or any(cls.__module__ == "torch._dynamo.exc" for exception in chain for cls in type(exception).__mro__))


def _raised_by(chain: list[BaseException]) -> str | None:
    """The patch whose code raised an exception of ``chain`` (the innermost frame of that
    exception's own traceback is in the patch's package), nearest the root first; None if none."""
    from ._lifecycle import LIFECYCLE  # here: the report's reader imports this module, never a fix

    packages = {patch.package or f"{__package__}.patches.{patch.folder}": patch.name for patch in LIFECYCLE.patches}
    for exception in reversed(chain):
        tb = exception.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        module = str(tb.tb_frame.f_globals.get("__name__", "")) if tb is not None else ""
        for package, name in packages.items():
            if module == package or module.startswith(package + "."):
                return name
    return None


def _autotuning(chain: list[BaseException]) -> dict[str, Any]:
    """Where in autotuning the error of ``chain`` was raised, read from its frames' locals (the
    innermost first): ``selection``, the name of the selection being made (an
    ``AlgorithmSelectorCache`` method's ``name``: ``"flex_attention"``); ``choice``, the choice
    being benchmarked or built (a ``ChoiceCaller``'s class and ``name``: a method's ``self``, or a
    ``choice`` inside the selection's call), if any; ``choices``, the kinds of the selection's
    choices (:func:`choice_kind`). Empty outside a selection. The selection's own frame's
    ``choice`` is not read: ``AlgorithmSelectorCache.__call__`` (2.14) leaves its loop over the
    choices (``benchmark_with_cudagraphs``) bound to the last one. Never raises: what cannot be
    read is left out."""
    found: dict[str, Any] = {}
    for exception in reversed(chain):
        for frame in reversed(_frame_objects(exception)):
            try:
                scope = frame.f_locals
                owner = scope.get("self")
                if _is_a(owner, "AlgorithmSelectorCache") and isinstance(scope.get("name"), str):
                    found["selection"] = scope["name"]
                    listed = scope.get("choices")
                    if isinstance(listed, (list, tuple)):
                        found["choices"] = sorted({_kind_of(c) for c in listed})[:20]
                    return found
                choice = owner if _is_a(owner, "ChoiceCaller") else scope.get("choice")
                if "choice" not in found and _is_a(choice, "ChoiceCaller") and isinstance(choice.name, str):
                    found["choice"] = {"type": type(choice).__name__, "name": choice.name}
            except Exception:  # a frame whose locals cannot be read: the others may tell
                continue
    return {}


def choice_kind(class_name: str, name: str) -> str:
    """The kind of a choice of class ``class_name`` called ``name``, as ``Crash.choices`` names it:
    a Triton template choice's name without its index (Inductor names one
    ``triton_<template>_<index>``, ``TritonTemplate.generate``, 2.7-2.15), ``"triton_mm"``; any
    other choice's class name, ``"CUTLASSTemplateCaller"``."""
    head, _, index = name.rpartition("_")
    return head if head.startswith("triton_") and index.isdigit() else class_name


def _kind_of(choice: Any) -> str:
    name = getattr(choice, "name", None)
    return choice_kind(type(choice).__name__, name if isinstance(name, str) else "")


def _is_a(value: Any, class_name: str) -> bool:
    """Whether ``value``'s class is or derives from one named ``class_name`` (Inductor's, whose
    module this writer does not import)."""
    return any(cls.__name__ == class_name for cls in type(value).__mro__)


def _frame_objects(error: BaseException) -> list[Any]:
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _first_line(error: BaseException) -> str:
    """``Type: first line``, and the next one too after a line that only introduces it
    (Dynamo's ``backend='inductor' raised:``)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = " ".join(lines[:2] if lines[0].endswith(":") and len(lines) > 1 else lines[:1]) if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _frames(error: BaseException) -> list[tuple[str, int]]:
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename.replace(os.sep, "/"), tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _package_relative(filename: str) -> str:
    """``.../site-packages/triton/runtime/driver.py`` -> ``triton/runtime/driver.py``."""
    for root in sorted({p.replace(os.sep, "/").rstrip("/") + "/" for p in sys.path if p}, key=len, reverse=True):
        if filename.startswith(root):
            return filename[len(root):]
    return filename


def _counter(name: str) -> int:
    utils = sys.modules.get("torch._dynamo.utils")
    return int(utils.counters["inductor"][name]) if utils is not None else 0


def _since(name: str) -> int:
    """Inductor's counter ``name`` in this process, less what a forked child inherited."""
    return _counter(name) - _before.get(name, 0)


def _triton_template_choices() -> int | None:
    """How many Triton template choices this process has made: ``TritonTemplate.index_counter``
    (``torch/_inductor/select_algorithm.py``, 2.7-2.15), which numbers each one's kernel name and
    which no cache replays; its ``repr`` says the next number without taking it. None where it
    cannot be read."""
    import re

    module = sys.modules.get("torch._inductor.select_algorithm")
    counter = getattr(getattr(module, "TritonTemplate", None), "index_counter", None)
    match = re.fullmatch(r"count\((\d+)\)", repr(counter))
    return int(match.group(1)) if match else None


def _template_choices() -> int | None:
    made = _triton_template_choices()
    return None if made is None else made - _before.get("template_choices", 0)


def _write(path: str) -> None:
    global _written
    if _written == os.getpid():  # atexit and multiprocessing's finalizer both ran
        return
    _written = os.getpid()
    try:
        import json

        from ._files import NEW_FILE_MODE

        data = (json.dumps(line(), separators=(",", ":"), default=str) + "\n").encode()
        # O_NONBLOCK: a FIFO with no reader fails at once instead of hanging the exit.
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, NEW_FILE_MODE)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)
    except Exception as error:  # never raise into the program, at exit least of all
        try:
            sys.stderr.write(f"inductor_fix: could not append to the job report {path}: "
                             f"{type(error).__name__}: {error}\n")
        except Exception:
            pass
