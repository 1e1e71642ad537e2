"""Check what a built sdist or wheel of inductor-fix holds, and print its file list.

    python .ci/check_dist.py DIST [DIST ...]   (inductor_fix-X.tar.gz, inductor_fix-X-py3-none-any.whl)
    python .ci/check_dist.py --same WHEEL WHEEL   (the same files, byte for byte: setup.py changes nothing)

A wheel holds exactly the package's modules of this checkout (``inductor_fix/**/*.py``:
the fix, the CLI, ``check`` with its CPU harness, the ``run`` bootstrap; not a patch's
``bench.py`` or ``drills.py``, which only the tools and tests read), its data (the
recorded source fingerprints, ``inductor_fix/patches/fingerprints.json``), the autoload
entry point's module ``_inductor_fix_autoload.py`` (declared in ``torch.backends``; the console
script's target too) and the start-up path below it, ``_inductor_fix_startup.py``, and its
``.dist-info/`` with the license: never tests, tools or
test-only modules; an sdist holds what
building the wheel from it needs and what users expect (README, LICENSE, CHANGELOG,
pyproject.toml and its setup.py shim, the package, test/, patches/). Both name the version in their file
name and in their metadata alike. Exit status: 0 as expected, 1 naming what is not,
2 usage error.
"""

from __future__ import annotations

import email.parser
import re
import sys
import tarfile
import zipfile
from pathlib import Path

#: Test-only helpers (they live in test/: the drift drill, injected faults, the observer) and
#: the parts of a patch's folder only the tools and tests read (its benchmark, its drift drills:
#: tools/build_backend.py leaves them out of the wheel).
TEST_ONLY = re.compile(r"inductor_fix/(testing/|.*(observe|faults|drift)\.py|patches/[^/]+/(bench|drills)\.py)")
CHECKOUT = Path(__file__).resolve().parents[1]
#: Data the package reads at run time (pyproject's package-data): the recorded source fingerprints.
PACKAGE_DATA = {"inductor_fix/patches/fingerprints.json"}
#: Every module of the package in this checkout and its data.
SOURCE_FILES = {str(p.relative_to(CHECKOUT)) for p in (CHECKOUT / "inductor_fix").rglob("*.py")} | PACKAGE_DATA
#: What a wheel must hold of them, no more, no less.
PACKAGE_FILES = {name for name in SOURCE_FILES if not TEST_ONLY.match(name)}
#: The top-level modules beside the package: torch's autoload entry point and the start-up
#: path below it (outside the package so that INDUCTOR_FIX_AUTOLOAD=0 imports nothing of it).
TOP_LEVEL_MODULES = ("_inductor_fix_autoload.py", "_inductor_fix_startup.py")
PACKAGE_FILES.update(TOP_LEVEL_MODULES)
SOURCE_FILES.update(TOP_LEVEL_MODULES)
SDIST_FILES = {"PKG-INFO", "pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md", "patches/README.md"}


def _metadata(text: str) -> dict[str, list[str]]:
    message = email.parser.Parser().parsestr(text)
    return {key: message.get_all(key) for key in set(message.keys())}


def _common(kind: str, version: str, names: list[str], meta: dict[str, list[str]]) -> list[str]:
    problems = []
    if meta.get("Name") != ["inductor-fix"]:
        problems.append(f"{kind} metadata Name is {meta.get('Name')}, not inductor-fix")
    if meta.get("Version") != [version]:
        problems.append(f"{kind} metadata Version is {meta.get('Version')}, the file name says {version}")
    if meta.get("License-Expression") != ["BSD-3-Clause"]:
        problems.append(f"{kind} metadata License-Expression is {meta.get('License-Expression')}")
    return problems


def check_wheel(path: Path) -> list[str]:
    match = re.fullmatch(r"inductor_fix-([^-]+)-py3-none-any\.whl", path.name)
    if not match:
        return [f"{path.name}: not an inductor_fix pure-Python wheel name"]
    version = match.group(1)
    dist_info = f"inductor_fix-{version}.dist-info/"
    with zipfile.ZipFile(path) as wheel:
        names = sorted(wheel.namelist())
        meta = _metadata(wheel.read(dist_info + "METADATA").decode()) if dist_info + "METADATA" in names else {}
    print(f"{path.name}: {len(names)} files")
    print("".join(f"  {name}\n" for name in names), end="")
    problems = _common("wheel", version, names, meta)
    problems += [f"wheel holds test-only module {name}" for name in names if TEST_ONLY.match(name)]
    problems += [f"wheel holds {name}, outside inductor_fix/ and {dist_info}"
                 for name in names
                 if not name.startswith(("inductor_fix/", dist_info)) and name not in TOP_LEVEL_MODULES]
    entry_points = "inductor_fix-{}.dist-info/entry_points.txt".format(version)
    with zipfile.ZipFile(path) as wheel:
        declared = wheel.read(entry_points).decode() if entry_points in names else ""
    if "[torch.backends]\ninductor_fix = _inductor_fix_autoload:activate" not in declared:
        problems.append("wheel does not declare the torch.backends entry point inductor_fix")
    if "[console_scripts]\ninductor-fix = _inductor_fix_autoload:cli" not in declared:
        problems.append("wheel does not declare the console script inductor-fix = _inductor_fix_autoload:cli")
    problems += [f"wheel lacks {name}" for name in sorted(PACKAGE_FILES | {dist_info + "licenses/LICENSE"})
                 if name not in names]
    problems += [f"wheel holds {name}, which is not a module or data file of this checkout's package"
                 for name in names if name.startswith("inductor_fix/") and name not in PACKAGE_FILES]
    return problems


def check_sdist(path: Path) -> list[str]:
    match = re.fullmatch(r"inductor_fix-([^-]+)\.tar\.gz", path.name)
    if not match:
        return [f"{path.name}: not an inductor_fix sdist name"]
    version = match.group(1)
    top = f"inductor_fix-{version}/"
    with tarfile.open(path) as sdist:
        members = sdist.getmembers()
        names = sorted(m.name + ("/" if m.isdir() else "") for m in members)
        pkg_info = sdist.extractfile(top + "PKG-INFO") if top + "PKG-INFO" in names else None
        meta = _metadata(pkg_info.read().decode()) if pkg_info else {}
    print(f"{path.name}: {len(names)} entries")
    print("".join(f"  {name}\n" for name in names), end="")
    problems = [f"sdist entry {name} is outside {top}" for name in names if not (name + "/").startswith(top)]
    inner = [name[len(top):] for name in names if name.startswith(top)]
    problems += _common("sdist", version, inner, meta)
    problems += [f"sdist lacks {name}" for name in sorted(SDIST_FILES | SOURCE_FILES) if name not in inner]
    if not any(re.fullmatch(r"test/test_\w+\.py", name) for name in inner):
        problems.append("sdist holds no test/test_*.py")
    return problems


def same_wheels(first: Path, second: Path) -> list[str]:
    """Whether two wheels hold the same files, with the same metadata and the same content."""
    with zipfile.ZipFile(first) as a, zipfile.ZipFile(second) as b:
        names = sorted(a.namelist())
        if names != sorted(b.namelist()):
            return [f"{first} and {second} hold different files: {sorted(set(names) ^ set(b.namelist()))}"]
        return [f"{name} differs between {first} and {second}" for name in names if a.read(name) != b.read(name)]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--same"] and len(argv) == 3 and all(Path(arg).is_file() for arg in argv[1:]):
        problems = same_wheels(Path(argv[1]), Path(argv[2]))
        for problem in problems:
            print(f"check_dist: {problem}", file=sys.stderr)
        if not problems:
            print(f"check_dist: {Path(argv[1]).name}: the same files, byte for byte, in both wheels")
        return 1 if problems else 0
    if not argv or any(arg.startswith("-") for arg in argv):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    problems = []
    for arg in argv:
        path = Path(arg)
        if not path.is_file():
            print(f"check_dist: no such file: {arg}", file=sys.stderr)
            return 2
        problems += check_wheel(path) if path.name.endswith(".whl") else check_sdist(path)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
