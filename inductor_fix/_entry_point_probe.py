"""The probe ``inductor-fix status`` runs in a fresh interpreter of this environment: can torch
load this package's ``torch.backends`` entry point here? (:mod:`inductor_fix._entry_points` starts it
and reads its answer.)

Run as a file, never imported as part of the package: ``python -c "<exec of this file>" PATH GROUP
NAME`` from a scratch directory (a checkout there must not stand in for an installed module, and the
package itself may not be importable where its editable checkout moved). It loads every NAME entry
point of GROUP as torch does and prints one JSON line, a list of ``{"value", "metadata", "error",
"stand_in", "source", "editable"}``. It finds them as ``importlib.metadata.entry_points(group=...)``
does (each ``.dist-info`` or ``.egg-info`` folder along ``sys.path``, the first of each project name;
``entry_points.txt``'s sections and ``name = module:attr`` lines) but reads the files itself:
importing ``importlib.metadata`` (email, zipfile, pathlib) is two thirds of this probe's cost, and
``status`` waits for it (issue 47: under 100 ms). test_edges.TestEntryPointProbe holds it to
``importlib.metadata``'s answer. It imports only what a bare interpreter has loaded or nearly so.
"""

import json
import os
import re
import sys
from importlib import import_module

# Annotations are strings, their types imported only for type checkers: typing and collections.abc
# would cost the probe, which status waits for.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def declared(group: str, name: str) -> "Iterator[tuple[str, str]]":
    """``(metadata folder, value)`` of each ``name`` entry point of ``group`` along ``sys.path``."""
    seen = set()
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")  # in its order, as importlib.metadata reads them
        except OSError:
            continue
        for entry in names:
            stem, dot, kind = entry.rpartition(".")
            project = re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower()
            if not dot or kind not in ("dist-info", "egg-info") or project in seen:
                continue
            seen.add(project)
            path = os.path.join(folder or ".", entry)
            try:
                with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as file:
                    lines = file.read().splitlines()
            except OSError:
                continue
            section = None
            for line in map(str.strip, lines):
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == group and "=" in line and not line.startswith(("#", ";")):
                    key, _, value = line.partition("=")
                    if key.strip() == name:
                        yield path, value.strip()


def load(value: str) -> str:
    """Import the entry point ``value``'s object, as ``EntryPoint.load`` does; its module's name."""
    module, _, attributes = value.partition("[")[0].strip().partition(":")
    module = module.strip()
    loaded = import_module(module)
    for attribute in filter(None, attributes.strip().split(".")):
        loaded = getattr(loaded, attribute)
    return module


def probe(group: str, name: str) -> "list[dict[str, Any]]":
    """Each ``name`` entry point of ``group``, loaded: what loading it raised, whether its module
    is an editable install's stand-in whose checkout module is gone, and where pip installed it from."""
    found = []
    for path, value in declared(group, name):
        try:
            with open(os.path.join(path, "direct_url.json"), encoding="utf-8") as file:
                url = json.loads(file.read() or "null")
        except (OSError, ValueError):
            url = None
        error: str | None
        try:
            module = load(value)
            # An editable install's stand-in (tools/build_backend.py) whose checkout module is gone.
            error = getattr(sys.modules.get(module), "_MISSING", None)
            stand_in = error is not None
        except Exception as failure:
            error, stand_in = f"{type(failure).__name__}: {failure}", False
        url = url if isinstance(url, dict) else {}
        found.append({"value": value, "metadata": path, "error": error, "stand_in": stand_in,
                      "source": url.get("url"), "editable": bool((url.get("dir_info") or {}).get("editable"))})
    return found


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[2], sys.argv[3])))
