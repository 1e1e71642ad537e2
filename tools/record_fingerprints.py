#!/usr/bin/env python3
"""Print (or --write) each patch module's FINGERPRINTS table, with the given wheels' releases
(re)measured and every other recorded release kept.

Reads ``torch/_inductor/select_algorithm.py`` straight out of each wheel (no
install, no import), finds every method a patch wraps with ``ast`` and fingerprints
its source the way the package does at run time (``Patch.check_fingerprints``).

    pip download --no-deps torch==2.14.1 -d wheels/   # once per release
    python tools/record_fingerprints.py --write wheels/*.whl

``--compare`` instead says, for each wheel (a nightly), which wrapped functions
moved since a recorded release (``--against``, default the newest recorded):
exit 1 if any differs or is gone, so a scheduled job fails loudly when the
internals the patches were written for change.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inductor_fix.patches import PATCHES, TARGETS  # noqa: E402
from inductor_fix.patches.base import fingerprint  # noqa: E402

SOURCE = "torch/_inductor/select_algorithm.py"
MODULES = Path(__file__).resolve().parents[1] / "inductor_fix" / "patches"
#: release -> {target: fingerprint}, over every patch of the table.
RECORDED: dict[str, dict[str, str]] = {}
for _patch in PATCHES:
    for _release, _table in _patch.fingerprints.items():
        RECORDED.setdefault(_release, {}).update(_table)


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
    """:func:`method_sources` of the wheel's select_algorithm.py; exit 2 saying why not."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            return method_sources(archive.read(SOURCE).decode())
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
    """The ``FINGERPRINTS = {...}`` block of a patch module, releases in order, a line per target."""
    lines = ["FINGERPRINTS = {"]
    for release in sorted(table, key=_release_key):
        if table[release]:
            lines += [f'    "{release}": {{', *(f'        "{t}": "{fp}",' for t, fp in table[release].items()),
                      "    },"]
    return "\n".join([*lines, "}"]) + "\n"


def write_table(path: Path, block: str) -> None:
    """Replace the ``FINGERPRINTS = {...}`` block of the module at ``path`` by ``block``."""
    text = path.read_text()
    start = text.index("FINGERPRINTS = {")
    end = text.index("\n}\n", start) + 3
    path.write_text(text[:start] + block + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true",
                        help="record the wheels' releases in each patch module's FINGERPRINTS (others are kept)")
    parser.add_argument("--compare", action="store_true", help="compare with --against instead of printing the table")
    parser.add_argument("--against", choices=sorted(RECORDED, key=_release_key),
                        default=max(RECORDED, key=_release_key),
                        help="recorded release to compare with (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.compare and args.write:
        parser.error("--compare and --write do not go together")
    if args.compare:
        return compare(args.wheels, args.against)
    measured = {release_from_wheel(wheel): wheel_sources(wheel) for wheel in args.wheels}
    for patch in PATCHES:
        # The releases given are measured again; every other recorded release is kept.
        table = {release: dict(targets) for release, targets in patch.fingerprints.items()}
        for release, sources in measured.items():
            table[release] = {t: fingerprint(sources[t]) for t in patch.targets if t in sources}
        text = format_table(table)
        print(f"# inductor_fix/patches/{patch.module}.py\n{text}")
        if args.write:
            write_table(MODULES / f"{patch.module}.py", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
