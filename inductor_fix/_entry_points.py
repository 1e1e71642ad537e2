"""Can torch load this package's autoload entry point in this environment?

torch (2.5+) loads every ``torch.backends`` entry point at the end of ``import torch``
(``_import_device_backends``) and turns any exception into ``RuntimeError: Failed to load
the backend extension: inductor_fix``: ``import torch`` then fails in the whole environment.
That happens when the distribution's metadata is visible but the entry point's module
(``_inductor_fix_autoload``) is not: an editable install whose checkout was moved or
deleted, or switched to a commit older than that module. :func:`entry_points` loads each
such entry point in a fresh interpreter of this environment, as torch would, without
importing torch; ``inductor-fix status`` reports it and how to heal it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Callable, NamedTuple

__all__ = ["EntryPoint", "advice", "entry_points", "start_entry_points"]

GROUP, NAME = "torch.backends", "inductor_fix"

#: The probe, a file of the package (:mod:`inductor_fix._entry_point_probe`, real code that ruff
#: and mypy read), run by path from a scratch directory: where an editable checkout moved, the
#: package may not be importable there, and a checkout in the working directory must not stand in.
_PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_entry_point_probe.py")
#: ``python -c`` runs the file as ``__main__`` with ``sys.path[0]`` the scratch directory, as a
#: plain ``-c`` would (``python FILE`` would put the package's folder first on ``sys.path``).
_RUN_FILE = "import sys; path = sys.argv[1]; exec(compile(open(path, 'rb').read(), path, 'exec'))"


class EntryPoint(NamedTuple):
    """One ``inductor_fix`` entry point of ``torch.backends`` this environment declares:
    ``metadata`` (its ``.dist-info`` folder), ``error`` (what loading it raises, or why an
    editable install's stand-in cannot run the checkout's module; None if it loads),
    ``stand_in`` (the error is the stand-in's: torch imports, stock), ``source`` (the URL pip
    installed it from, ``file:///path/to/checkout`` for a local one) and whether the install
    is ``editable``."""

    value: str
    metadata: str
    error: str | None
    stand_in: bool
    source: str | None
    editable: bool


def entry_points(python: str | None = None, timeout: float = 60) -> list[EntryPoint] | None:
    """Every ``inductor_fix`` entry point of ``torch.backends`` seen by ``python`` (default:
    this interpreter) with this environment, each loaded as torch would, from a scratch
    working directory (a checkout there must not stand in for an installed module). None if
    the probe itself could not run."""
    return start_entry_points(python, timeout)()


def start_entry_points(python: str | None = None,
                       timeout: float = 60) -> Callable[[], list[EntryPoint] | None]:
    """:func:`entry_points`, started now in its own process: the function returned waits for it
    and returns its result (``status`` does its own work meanwhile: the probe is a Python start
    and a scan of every distribution's metadata)."""
    scratch = tempfile.mkdtemp(prefix="inductor_fix_probe_")
    try:
        process = subprocess.Popen([python or sys.executable, "-c", _RUN_FILE, _PROBE, GROUP, NAME], cwd=scratch,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True,
                                   env=dict(os.environ, INDUCTOR_FIX_AUTOLOAD="0"))
    except (OSError, subprocess.SubprocessError):
        os.rmdir(scratch)
        return lambda: None

    def result() -> list[EntryPoint] | None:
        try:
            output, _ = process.communicate(timeout=timeout)
            return [EntryPoint(**entry) for entry in json.loads(output.strip().splitlines()[-1])]
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None
        except (OSError, ValueError, IndexError, TypeError):
            return None
        finally:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)

    return result


def advice(entry: EntryPoint) -> str:
    """What to do about an entry point that does not load, in one paragraph."""
    source = entry.source or ""
    checkout = source[len("file://"):] if source.startswith("file://") else None
    if entry.editable and checkout:
        why = (f"an editable install from {checkout}, which is at a commit without that module" if
               os.path.isdir(checkout) else f"an editable install from {checkout}, which is gone or moved")
        reinstall = "`python -m pip install -e CHECKOUT` from where the checkout is now"
    else:
        why, reinstall = "its module is not importable here", "a reinstall, `python -m pip install inductor-fix`"
    effect = ("inductor-fix is not applied in this environment (torch imports and runs stock, with a warning): "
              "its editable install's stand-in cannot run the checkout's module" if entry.stand_in else
              "every `import torch` in this environment fails: torch cannot load the entry point")
    return (f"{effect} {NAME} = {entry.value} declared by {entry.metadata} ({entry.error}; {why}). Heal it: "
            f"`python -m pip uninstall inductor-fix`, or {reinstall}; meanwhile "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 lets torch import without it")
