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

#: Loads every inductor_fix entry point of the group as torch does; prints one JSON line. It finds
#: them as ``importlib.metadata.entry_points(group=...)`` does (each ``.dist-info`` or ``.egg-info``
#: folder along ``sys.path``, the first of each project name; ``entry_points.txt``'s sections and
#: ``name = module:attr`` lines) but reads the files itself: importing ``importlib.metadata`` (email,
#: zipfile, pathlib) is two thirds of this probe's cost, and ``status`` waits for it (issue 47: under
#: 100 ms). test_edges.TestEntryPointProbe holds it to ``importlib.metadata``'s answer.
_PROBE = f"""
import json
import os
import re
import sys
from importlib import import_module

def declared():
    seen = set()
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")  # in its order, as importlib.metadata reads them
        except OSError:
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            project = re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower()
            if not dot or kind not in ("dist-info", "egg-info") or project in seen:
                continue
            seen.add(project)
            path = os.path.join(folder or ".", name)
            try:
                with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as file:
                    lines = file.read().splitlines()
            except OSError:
                continue
            group = None
            for line in map(str.strip, lines):
                if line.startswith("[") and line.endswith("]"):
                    group = line[1:-1].strip()
                elif group == {GROUP!r} and "=" in line and not line.startswith(("#", ";")):
                    key, _, value = line.partition("=")
                    if key.strip() == {NAME!r}:
                        yield path, value.strip()

def load(value):  # the entry point's object imported, as EntryPoint.load does; its module's name
    module, _, attributes = value.partition("[")[0].strip().partition(":")
    module = module.strip()
    loaded = import_module(module)
    for attribute in filter(None, attributes.strip().split(".")):
        loaded = getattr(loaded, attribute)
    return module

found = []
for path, value in declared():
    try:
        with open(os.path.join(path, "direct_url.json"), encoding="utf-8") as file:
            url = json.loads(file.read() or "null")
    except (OSError, ValueError):
        url = None
    try:
        module = load(value)
        # An editable install's stand-in (tools/build_backend.py) whose checkout module is gone.
        error = getattr(sys.modules.get(module), "_MISSING", None)
        stand_in = error is not None
    except Exception as failure:
        error, stand_in = f"{{type(failure).__name__}}: {{failure}}", False
    url = url if isinstance(url, dict) else {{}}
    found.append({{"value": value, "metadata": path, "error": error, "stand_in": stand_in,
                  "source": url.get("url"), "editable": bool((url.get("dir_info") or {{}}).get("editable"))}})
print(json.dumps(found))
"""


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
        process = subprocess.Popen([python or sys.executable, "-c", _PROBE], cwd=scratch, stdout=subprocess.PIPE,
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
