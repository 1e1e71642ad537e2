#!/usr/bin/env python3
"""Print (or --write) the recorded fingerprints of every function a patch wraps,
``inductor_fix/patches/fingerprints.json``, with the given wheels' releases
(re)measured and every other recorded release kept.

Reads the source file of each module a patch targets (``torch/_inductor/select_algorithm.py``,
and for a ``"module:Class.attribute"`` target its module's file) straight out of each wheel (no
install, no import), finds every method a patch wraps with ``ast`` and fingerprints
its source the way the package does at run time (``inductor_fix.patches.fingerprints.check``).
Each function is recorded once per release, whichever patches wrap it; functions
no patch wraps any more (a retired patch's) are dropped.

    pip download --no-deps torch==2.14.1 -d wheels/   # once per release
    python tools/record_fingerprints.py --write wheels/*.whl
    python tools/record_fingerprints.py --write         # no wheel: drop what no patch wraps

``--compare`` instead says, for each wheel (a nightly), which wrapped functions
moved since a recorded release (``--against``, default the newest recorded):
exit 1 if any differs or is gone, so a scheduled job fails loudly when the
internals the patches were written for change.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inductor_fix.patches import MODULE, targets  # noqa: E402
from inductor_fix.patches.fingerprints import (FINGERPRINTS_FILE, fingerprint, recorded_fingerprints,  # noqa: E402
                                       target_module)

#: Every "Class.attribute" a patch of the table wraps, once.
TARGETS = targets()

SOURCE = "torch/_inductor/select_algorithm.py"
#: module -> its source file in a wheel, for every module a target lives in.
SOURCES = {module: module.replace(".", "/") + ".py" for module in dict.fromkeys(map(target_module, TARGETS))}
DATA = Path(__file__).resolve().parents[1] / "inductor_fix" / "patches" / FINGERPRINTS_FILE
#: release -> {target: fingerprint}, as recorded (read the way the package reads it).
RECORDED: dict[str, dict[str, str]] = {release: dict(table) for release, table in recorded_fingerprints().items()}


def method_sources(text: str) -> dict[str, str]:
    """``{"Class.method": source}`` for every method defined in ``text``."""
    lines = text.splitlines()
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                    found[f"{node.name}.{item.name}"] = "\n".join(lines[first - 1 : item.end_lineno])
    return found


def release_from_wheel(path: Path) -> str:
    match = re.match(r"torch-(\d+\.\d+\.\d+)", path.name)  # a dev build counts as its release
    if not match:
        raise SystemExit(f"not a torch wheel name: {path.name}")
    return match.group(1)


def wheel_sources(wheel: Path) -> dict[str, str]:
    """``{target: source}`` of every method of the target modules' files in the wheel (targets of
    :data:`MODULE` by ``"Class.method"``, others by ``"module:Class.method"``); a module a release
    lacks gives nothing, a wheel without select_algorithm.py exits 2 saying why."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            found = method_sources(archive.read(SOURCE).decode())
            names = set(archive.namelist())
            for module, path in SOURCES.items():
                if module != MODULE and path in names:
                    found.update({f"{module}:{name}": source
                                  for name, source in method_sources(archive.read(path).decode()).items()})
            return found
    except FileNotFoundError:
        problem = "no such file"
    except zipfile.BadZipFile:
        problem = "not a wheel (zip)"
    except KeyError:
        problem = f"has no {SOURCE}"
    print(f"record_fingerprints: {wheel}: {problem}", file=sys.stderr)
    raise SystemExit(2)


def _release_key(release: str) -> list[int]:
    return [int(part) for part in release.split(".")]


def compare(wheels: list[Path], against: str) -> int:
    """Print each target's fingerprint in each wheel next to ``against``'s; 1 if any moved."""
    moved = 0
    for wheel in wheels:
        sources = wheel_sources(wheel)
        print(f"{wheel.name} against recorded torch {against}:")
        for target in TARGETS:
            recorded = RECORDED[against].get(target)
            actual = fingerprint(sources[target]) if target in sources else None
            if recorded is None:  # not wrapped on that release: nothing to compare
                print(f"  {target:<52} {'new':<9} {actual or '-'} (not recorded for {against})")
                continue
            verdict = "unchanged" if actual == recorded else "GONE" if actual is None else "MOVED"
            moved += verdict != "unchanged"
            print(f"  {target:<52} {verdict:<9} {actual or '-'} (recorded {recorded or '-'})")
    if moved:
        print(f"{moved} wrapped function(s) moved: check the patches still fit, then record the new release "
              "(--write) once it is out")
    return 1 if moved else 0


def format_table(table: dict[str, dict[str, str]]) -> str:
    """The data file's text: releases in order, each release's targets in :data:`TARGETS`
    order, only targets some patch wraps; releases left with none are dropped."""
    releases = {}
    for release in sorted(table, key=_release_key):
        kept = {target: table[release][target] for target in TARGETS if target in table[release]}
        if kept:
            releases[release] = kept
    document = {"written_by": "tools/record_fingerprints.py --write", "module": MODULE,
                "note": "targets of other modules are named module:Class.method", "releases": releases}
    return json.dumps(document, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheels", nargs="*", type=Path)
    parser.add_argument("--write", action="store_true",
                        help=f"record the wheels' releases in inductor_fix/patches/{FINGERPRINTS_FILE} "
                             "(others are kept)")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="with --write: the file to write (default: the package's data file; the releases "
                             "kept are always the package's)")
    parser.add_argument("--compare", action="store_true", help="compare with --against instead of printing the table")
    parser.add_argument("--against", choices=sorted(RECORDED, key=_release_key),
                        default=max(RECORDED, key=_release_key),
                        help="recorded release to compare with (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.compare and args.write:
        parser.error("--compare and --write do not go together")
    if not args.wheels and not args.write:
        parser.error("give at least one wheel (only --write may go without: it drops what no patch wraps)")
    if args.compare:
        return compare(args.wheels, args.against)
    # The releases given are measured again; every other recorded release is kept.
    table = {release: dict(targets) for release, targets in RECORDED.items()}
    for wheel in args.wheels:
        sources = wheel_sources(wheel)
        table[release_from_wheel(wheel)] = {t: fingerprint(sources[t]) for t in TARGETS if t in sources}
    text = format_table(table)
    print(f"# inductor_fix/patches/{FINGERPRINTS_FILE}\n{text}", end="")
    if args.write:
        args.data.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
