#!/usr/bin/env python3
"""Print the RECORDED table of inductor_fix/_fingerprints.py from torch wheels.

Reads ``torch/_inductor/select_algorithm.py`` straight out of each wheel (no
install, no import), finds every wrapped method with ``ast`` and fingerprints
its source the way the package does at run time.

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

from inductor_fix._fingerprints import RECORDED, fingerprint  # noqa: E402
from inductor_fix._patches import TARGETS  # noqa: E402

SOURCE = "torch/_inductor/select_algorithm.py"
TABLE_FILE = Path(__file__).resolve().parents[1] / "inductor_fix" / "_fingerprints.py"


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help=f"replace the table in {TABLE_FILE.name}")
    parser.add_argument("--compare", action="store_true", help="compare with --against instead of printing the table")
    parser.add_argument("--against", choices=sorted(RECORDED, key=_release_key), default=max(RECORDED, key=_release_key),
                        help="recorded release to compare with (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.compare and args.write:
        parser.error("--compare and --write do not go together")
    if args.compare:
        return compare(args.wheels, args.against)
    lines = ["RECORDED: dict[str, dict[str, str]] = {"]
    for wheel in sorted(args.wheels, key=lambda p: [int(x) for x in release_from_wheel(p).split(".")]):
        sources = wheel_sources(wheel)
        lines.append(f'    "{release_from_wheel(wheel)}": {{')
        lines.extend(f'        "{name}": "{fingerprint(sources[name])}",' for name in TARGETS if name in sources)
        lines.append("    },")
    lines.append("}")
    table = "\n".join(lines) + "\n"
    if args.write:
        text = TABLE_FILE.read_text()
        TABLE_FILE.write_text(text[: text.index("RECORDED: dict")] + table)
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
