"""The upstream series: each diff proposed for main, its own tests run stock and patched side by side.

    tools/check_patches --series --out DIR [--cutlass WHEEL_OR_DIR] [--budget SECONDS] [--jobs N]
                        [--only TEXT ...] [--allow-skips]

For the torch the running Python imports (no venv is made, nothing is installed), it:

1. picks the series diffs (:data:`SERIES`, in the order they are proposed) based on that torch
   (a diff's ``base-commit:`` line is its ``torch.version.git_version``): ``patches/`` (v2.15.0),
   or the test-only rebases under ``patches/rebased-<release>/`` (v2.11.0, the GPU machine's);
   none: exit 2, naming the bases there are;
2. makes, per diff, a shadow of the installed torch (:func:`build_shadow`): ``DIR/shadows/<n>/torch``
   mirrors the installed package by symlinks, except the directories on the way to each file the
   diff touches (real directories of symlinks) and those files (copies, which ``git apply``
   patches); its runs put ``DIR/shadows/<n>`` first on ``PYTHONPATH``, and the generated module
   refuses a ``torch`` from anywhere else. Nothing is written into the installed package: its
   touched files' SHA-256 are compared before and after, and the runs write no bytecode;
3. writes, per diff, a stand-in module ``DIR/standins/test_series_<n>.py`` holding the test
   methods the diff adds, in a class of their upstream name whose base gives what upstream's
   class gives (:mod:`matrix_lib.standins`), and runs each method in a pytest process of its own,
   stock and with the shadow, all runs at once up to ``--jobs`` (``INDUCTOR_FIX_DISABLE=1`` and
   ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``: an installed inductor-fix stays out; fresh Inductor and
   Triton caches per run; ``TORCHINDUCTOR_COMPILE_THREADS`` shares the CPUs among the runs);
   every run still going at ``--budget`` seconds is killed;
4. writes ``DIR/series.md`` (diff, test, stock outcome with its error line, patched outcome,
   seconds) and ``DIR/series.json``, and prints the table.

With CUDA every test runs on the GPU and values are compared. Without CUDA the FlexAttention
tests run under the package's Triton-on-CPU harness (compile and launch arity, no values) and the
CUTLASS tests skip: the table says so, and skips there are no failures.

Exit status: 0 when every upstream test failed stock and passed patched and every check of this
project's own passed patched; 1 when one did not (a stock pass, a patched failure or crash, a run
past the budget, a skip where CUDA is present unless ``--allow-skips``); 2 bad arguments, no
series for this torch, or a diff that does not apply to it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import hashlib
import importlib.util
import json
import math
import os
import re
import runpy
import shlex
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from . import standins

PROJECT = Path(__file__).resolve().parents[2]
PATCHES = PROJECT / "patches"
TOOLS = PROJECT / "tools"

#: The diffs proposed for main, in the order of their pull requests (patches/README.md).
SERIES: tuple[str, ...] = (
    "0007-inductor-autotune-the-flex-backward-with-its-kernels-inputs.patch",
    "0006-inductor-key-the-cutlass-template-code-cache-by-input-aliasing.patch",
    "0008-inductor-build-the-cutlass-benchmark-request-from-the-kernels-inputs.patch",
)
#: Which series diffs' ``torch/`` hunks ``git apply`` takes (clean or with offsets) on the releases
#: they were tried on (2026-12-06, the wheels' files): the rest need the rebase under
#: ``patches/rebased-<release>/`` or do not apply. ``test/test_tools.py`` holds the installed
#: release to its row.
APPLIES_TO: dict[str, frozenset[str]] = {
    "2.11.0": frozenset({"0006"}),
    "2.14.1": frozenset({"0006", "0008"}),
    "2.15.0": frozenset({"0006", "0007", "0008"}),
}
#: Seconds after which every run still going is killed: with the setup (a torch import, CUTLASS's
#: wheel unpacked) the whole command stays under 6 minutes.
DEFAULT_BUDGET = 300.0
#: Where the test-only rebases of the series live, one folder per release.
REBASED_PREFIX = "rebased-"

#: What the runs' environment must not inherit (each run sets its own): the caches and the
#: compile pool's size. The caller's PYTHONPATH is kept after the run's own entries (a machine
#: without network has the test dependencies there); the generated module checks where torch
#: came from.
_DROPPED = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_COMPILE_THREADS")


class SeriesError(Exception):
    """A refusal: bad arguments, no series for this torch, a diff that does not apply (exit 2)."""


# --- the diffs ------------------------------------------------------------------


def base_commit(diff: Path) -> str | None:
    """The ``base-commit:`` line git format-patch --base writes after the diff."""
    match = re.search(r"^base-commit: ([0-9a-f]{40})$", diff.read_text(), flags=re.M)
    return match.group(1) if match else None


def series_folders() -> list[Path]:
    """``patches/`` and each ``patches/rebased-<release>/``: the folders a series may live in."""
    return [PATCHES, *sorted(p for p in PATCHES.glob(f"{REBASED_PREFIX}*") if p.is_dir())]


def series_for(git_version: str) -> list[Path]:
    """The series diffs based on ``git_version``, in :data:`SERIES` order: those of the first
    folder whose series diffs (one or more; a retired patch takes its diffs with it) are all based
    on it; [] if no folder's are."""
    for folder in series_folders():
        diffs = [folder / name for name in SERIES if (folder / name).is_file()]
        if diffs and all(base_commit(d) == git_version for d in diffs):
            return diffs
    return []


def bases() -> dict[str, str]:
    """folder (relative to the project) -> the base commit of the series diffs there."""
    found = {}
    for folder in series_folders():
        commits = {base_commit(folder / name) for name in SERIES if (folder / name).is_file()}
        if len(commits) == 1 and None not in commits:
            found[str(folder.relative_to(PROJECT))] = commits.pop()
    return found


def prerequisites(diff: Path) -> list[Path]:
    """The test-only prerequisites of a rebased series diff: ``prerequisite-<n>-*.patch`` beside
    it (a change the series' base has and the rebase's release lacks, without which the diff's
    test fails before it reaches what the diff fixes). Both of its runs have them applied."""
    return sorted(diff.parent.glob(f"prerequisite-{short(diff)}-*.patch"))


def sections(diff_text: str) -> dict[str, str]:
    """path -> that file's section of a git-format diff (``diff --git`` up to the next one)."""
    body = diff_text.split("\n-- \n")[0]
    parts = re.split(r"(?m)^(?=diff --git )", body)
    found = {}
    for part in parts[1:]:
        path = re.match(r"diff --git a/(\S+) b/", part)
        if path:
            found[path.group(1)] = re.sub(r"(?m)^base-commit: .*\n?", "", part)
    return found


def torch_paths(diff: Path) -> list[str]:
    """The installed-package files (``torch/...``) the diff touches."""
    return [path for path in sections(diff.read_text()) if path.startswith("torch/")]


@dataclasses.dataclass(frozen=True)
class UpstreamTests:
    """The test methods one diff adds to one upstream test module."""

    diff: Path
    stand_in: standins.StandIn
    #: the added lines, at class-body indentation, as the diff has them
    source: str
    methods: tuple[str, ...]


def tests_of(diff: Path) -> list[UpstreamTests]:
    """The test methods ``diff`` adds, per upstream module; a test file with no stand-in
    (:data:`matrix_lib.standins.BY_FILE`) is an error, never silently skipped."""
    found = []
    for path, section in sections(diff.read_text()).items():
        if not path.startswith("test/"):
            continue
        if path not in standins.BY_FILE:
            raise SeriesError(f"{diff.name} adds tests to {path}, which has no stand-in (matrix_lib/standins.py)")
        added = [line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++")]
        source = "\n".join(added).strip("\n") + "\n"
        methods = tuple(re.findall(r"^    def (test_\w+)\(", source, flags=re.M))
        if not methods:
            raise SeriesError(f"{diff.name}: its {path} hunk adds no test method")
        found.append(UpstreamTests(diff, standins.BY_FILE[path], source, methods))
    return found


def short(diff: Path) -> str:
    """``0007``: a series diff's number."""
    return diff.name.split("-", 1)[0]


def stand_in_module(tests: UpstreamTests) -> str:
    """The generated module's text: upstream's methods in a class on the stand-in's base."""
    stand_in = tests.stand_in
    return "\n".join([
        f'"""Generated by tools/check_patches --series: the test methods {tests.diff.name} adds to',
        f"{stand_in.upstream}'s {stand_in.cls}, in a stand-in (tools/matrix_lib/standins.py).\"\"\"",
        "",
        "import os as _os",
        "",
        "import torch as _torch",
        "",
        f"from {stand_in.fixtures} import *  # noqa: F403",
        "",
        "# A run imports the torch it is about: the shadow (patched) or the installed package (stock).",
        '_expected = _os.environ.get("SERIES_TORCH")',
        "if _expected and _os.path.realpath(_os.path.dirname(_torch.__file__)) != _os.path.realpath(_expected):",
        '    raise ImportError(f"torch came from {_torch.__file__}, not {_expected}")',
        "",
        "",
        f"class {stand_in.cls}({stand_in.base}):  # noqa: F405",
        tests.source.rstrip("\n"),
        "",
        "",
        *stand_in.instantiate,
        "",
    ])


# --- the shadow -----------------------------------------------------------------


def installed_torch() -> Path:
    """The installed ``torch`` package directory, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SeriesError("this Python has no torch")
    return Path(spec.origin).resolve().parent


def build_shadow(torch_dir: Path, touched: list[str], root: Path) -> Path:
    """``root/torch`` mirroring ``torch_dir`` by symlinks, except each ``torch/...`` path in
    ``touched`` (a copy) and the directories leading to it (real directories whose other entries
    are symlinks; no ``__pycache__``, so no bytecode of a patched file can land in the installed
    package). Returns ``root``. A touched file the installed package lacks is not created here
    (``git apply`` would create it, as for a file a release does not have)."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    real_dirs = {Path("torch")}
    for path in touched:
        parent = Path(path).parent
        while parent != Path("."):
            real_dirs.add(parent)
            parent = parent.parent
    copies = {Path(path) for path in touched}
    for directory in sorted(real_dirs, key=lambda p: len(p.parts)):
        source = torch_dir.parent / directory
        (root / directory).mkdir(exist_ok=True)
        for entry in source.iterdir():
            relative = directory / entry.name
            if relative in real_dirs or entry.name == "__pycache__":
                continue
            if relative in copies:
                shutil.copy2(entry, root / relative)
            else:
                (root / relative).symlink_to(entry)
    return root


def apply_to_shadow(diff: Path, root: Path) -> str:
    """``git apply -v --include=torch/*`` of ``diff`` in the shadow ``root``; git's report. A
    diff that does not apply, or that git skips (no file checked), raises :class:`SeriesError`."""
    linked = [path for path in torch_paths(diff) if (root / path).is_symlink()]
    if linked:  # git would write through the link into the installed package
        raise SeriesError(f"{diff.name}: the shadow links {', '.join(linked)} instead of copying it")
    environment = {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.resolve().parent)}
    process = subprocess.run(["git", "apply", "-v", "--include=torch/*", str(diff)], cwd=root, env=environment,
                             capture_output=True, text=True)
    report = process.stdout + process.stderr
    checked = set(re.findall(r"^Checking patch (\S+)\.\.\.$", report, flags=re.M))
    if process.returncode or checked != set(torch_paths(diff)):
        raise SeriesError(f"{diff.name} does not apply to this torch's files:\n{report.strip()}")
    return report


def digests(torch_dir: Path, paths: list[str]) -> dict[str, str]:
    """SHA-256 of each installed ``torch/...`` file in ``paths`` that exists."""
    return {path: hashlib.sha256((torch_dir.parent / path).read_bytes()).hexdigest()
            for path in paths if (torch_dir.parent / path).is_file()}


# --- the runs -------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One pytest process: one test method of one diff's stand-in, stock or patched."""

    diff: Path
    test: str
    cls: str
    mode: str  # "stock" | "patched"
    ours: bool
    module: Path
    directory: Path
    shadow: Path | None
    process: subprocess.Popen | None = None
    started: float = 0.0
    seconds: float = 0.0
    outcome: str = "not started"
    error: str = ""

    @property
    def log(self) -> Path:
        return self.directory / "pytest.log"

    @property
    def junit(self) -> Path:
        return self.directory / "junit.xml"


def child_environment(run: Run, compile_threads: int, cutlass: str | None) -> dict[str, str]:
    """The run's environment: the caller's, minus what could change which torch or caches it
    sees, plus the switches that keep an installed inductor-fix out."""
    environment = {k: v for k, v in os.environ.items() if k not in _DROPPED and not k.startswith("INDUCTOR_FIX_")}
    path = [str(TOOLS), str(PROJECT), str(run.module.parent)]
    if run.shadow is not None:
        path.insert(0, str(run.shadow))
    path += [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    environment.update({
        "SERIES_TORCH": str(run.shadow / "torch" if run.shadow is not None else installed_torch()),
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "INDUCTOR_FIX_DISABLE": "1",
        "INDUCTOR_FIX_AUTOLOAD": "0",
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
        "TORCHINDUCTOR_CACHE_DIR": str(run.directory / "inductor-cache"),
        "TRITON_CACHE_DIR": str(run.directory / "triton-cache"),
        "TORCHINDUCTOR_COMPILE_THREADS": str(compile_threads),
    })
    if cutlass:
        environment["TORCHINDUCTOR_CUTLASS_DIR"] = cutlass
    return environment


def start(run: Run, compile_threads: int, cutlass: str | None) -> None:
    run.directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", f"--junitxml={run.junit}",
               str(run.module), "-k", run.test]
    (run.directory / "command").write_text(shlex.join(command) + "\n")
    with run.log.open("w") as log:
        run.process = subprocess.Popen(command, cwd=run.module.parent, stdout=log, stderr=subprocess.STDOUT,
                                       env=child_environment(run, compile_threads, cutlass), start_new_session=True)
    run.started = time.monotonic()
    run.outcome = "running"


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= 300 else line[:297] + "..."


def error_line(text: str) -> str:
    """The line that names the exception in a failure's text or a log: the last
    ``SomethingError: ...`` (or ``Fatal Python error``) line, else the first line."""
    lines = [line.strip() for line in text.splitlines()]
    named = [line for line in lines if re.match(r"(E\s+)?([\w.]+(Error|Exception)|Fatal Python error)\b", line)]
    return _first_line(re.sub(r"^E\s+", "", named[-1]) if named else text)


def judge(run: Run) -> None:
    """Set the run's outcome (passed, failed, skipped, crashed, no test) and error line from its
    exit status and junit report."""
    assert run.process is not None
    status = run.process.returncode
    log = run.log.read_text(errors="replace") if run.log.exists() else ""
    if status < 0:
        name = signal.Signals(-status).name
        run.outcome, run.error = f"crashed ({name})", error_line(log)
        return
    try:
        cases = ElementTree.parse(run.junit).getroot().iter("testcase")
        results = []
        for case in cases:
            problem = case.find("failure") if case.find("failure") is not None else case.find("error")
            skipped = case.find("skipped")
            if problem is not None:
                results.append(("failed", error_line(problem.get("message", "") or problem.text or "")))
            elif skipped is not None:
                results.append(("skipped", _first_line(skipped.get("message", ""))))
            else:
                results.append(("passed", ""))
    except (OSError, ElementTree.ParseError):
        run.outcome, run.error = f"crashed (exit {status})", error_line(log)
        return
    kinds = [kind for kind, _ in results]
    if not results:
        run.outcome, run.error = "no test", error_line(log)
    elif "failed" in kinds:
        run.outcome, run.error = "failed", next(detail for kind, detail in results if kind == "failed")
    elif all(kind == "skipped" for kind in kinds):
        run.outcome, run.error = "skipped", results[0][1]
    elif "skipped" in kinds:
        run.outcome, run.error = "passed (some cases skipped)", next(d for k, d in results if k == "skipped")
    else:
        run.outcome = "passed"
    if len(results) > 1:
        run.outcome += f" ({kinds.count(run.outcome.split()[0])} of {len(results)} cases)"


def forget_caches(run: Run) -> None:
    """Delete a finished run's Inductor and Triton caches: they only kept it apart from the
    others, and ``DIR`` keeps what the table needs (its command, log and junit report)."""
    for cache in ("inductor-cache", "triton-cache"):
        shutil.rmtree(run.directory / cache, ignore_errors=True)


def run_all(runs: list[Run], jobs: int, budget: float, compile_threads: int, cutlass: str | None) -> float:
    """Run ``runs``, ``jobs`` at a time, killing every one still going at ``budget`` seconds;
    returns the wall time."""
    began = time.monotonic()
    waiting, going = list(runs), []
    while waiting or going:
        now = time.monotonic()
        if now - began >= budget:
            for run in going:
                assert run.process is not None
                with contextlib.suppress(ProcessLookupError):  # already gone
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait()
                run.seconds = time.monotonic() - run.started
                run.outcome, run.error = "past the budget", f"killed at {budget:.0f} s"
            for run in waiting:
                run.outcome, run.error = "not started", f"the budget ({budget:.0f} s) ran out"
            break
        while waiting and len(going) < jobs:
            run = waiting.pop(0)
            start(run, compile_threads, cutlass)
            going.append(run)
        for run in list(going):
            assert run.process is not None
            if run.process.poll() is not None:
                run.seconds = time.monotonic() - run.started
                judge(run)
                going.remove(run)
                forget_caches(run)
                print(f"  {short(run.diff)} {run.mode:7} {run.test}: {run.outcome}"
                      + (f" - {run.error}" if run.error and run.outcome != "passed" else ""), flush=True)
        time.sleep(0.5)
    return time.monotonic() - began


# --- verdict and table ----------------------------------------------------------


def verdict(runs: list[Run], cuda: bool, allow_skips: bool) -> tuple[list[str], list[str]]:
    """(problems, skipped): why the series is not shown (no problems: it is), and the tests that
    skipped. Each upstream test must fail stock and pass patched, each check of ours pass patched;
    a skip is a problem where CUDA is (unless allowed)."""
    problems, skips = [], []
    pairs: dict[tuple[str, str], dict[str, Run]] = {}
    for run in runs:
        pairs.setdefault((run.diff.name, run.test), {})[run.mode] = run
    for (_, test), pair in pairs.items():
        stock, patched = pair["stock"], pair["patched"]
        label = f"{short(stock.diff)} {test}"
        skipped = [r for r in (stock, patched) if r.outcome.startswith("skipped")]
        if skipped:
            skips.append(label)
            if cuda and not allow_skips:
                problems.append(f"{label}: skipped where CUDA is present ({skipped[0].error})")
            continue
        if not patched.outcome.startswith("passed"):
            problems.append(f"{label}: patched {patched.outcome}")
        if not stock.ours and stock.outcome.startswith("passed"):
            problems.append(f"{label}: stock passed (the test cannot tell the fix)")
        if stock.outcome in ("no test", "past the budget", "not started"):
            problems.append(f"{label}: stock {stock.outcome}")
    return problems, skips


def table(runs: list[Run]) -> str:
    """The markdown table: one row per test, stock and patched side by side."""
    def cell(run: Run) -> str:
        return run.outcome + (f": `{run.error}`" if run.error and not run.outcome.startswith("passed") else "")

    rows = ["| diff | test | stock | patched | seconds (stock / patched) |", "|---|---|---|---|---|"]
    pairs: dict[tuple[str, str], dict[str, Run]] = {}
    for run in runs:
        pairs.setdefault((run.diff.name, run.test), {})[run.mode] = run
    for pair in pairs.values():
        stock, patched = pair["stock"], pair["patched"]
        test = f"{stock.cls}.{stock.test}" + (" (ours, not upstream's)" if stock.ours else "")
        label = short(stock.diff) + "".join(f" (both runs after {p.name})" for p in prerequisites(stock.diff))
        rows.append(f"| {label} | {test} | {cell(stock)} | {cell(patched)} | "
                    f"{stock.seconds:.0f} / {patched.seconds:.0f} |")
    return "\n".join(rows)


def machine() -> dict[str, str]:
    """torch, its commit, triton, Python and the device, asked from a child of this Python."""
    probe = ("import json, platform, torch\n"
             "try:\n import triton; t = triton.__version__\nexcept ImportError:\n t = 'none'\n"
             "gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''\n"
             "print(json.dumps({'torch': torch.__version__, 'git_version': torch.version.git_version, 'triton': t,"
             " 'python': platform.python_version(), 'gpu': gpu, 'cuda': torch.version.cuda or ''}))")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment.update({"INDUCTOR_FIX_DISABLE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    process = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment)
    if process.returncode:
        raise SeriesError(f"torch does not import here: {process.stderr.strip()[-500:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


# --- the mode -------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--series (the diffs proposed for main, on this Python's torch)")
    group.add_argument("--series", action="store_true",
                       help="run each series diff's own tests stock and patched (a shadow of the installed torch)")
    group.add_argument("--out", type=Path, help="with --series: where the shadows, runs and table go")
    group.add_argument("--cutlass", help="with --series: the nvidia-cutlass wheel or a CUTLASS checkout "
                       "(default: TORCHINDUCTOR_CUTLASS_DIR, else an installed cutlass_library)")
    group.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                       help="with --series: seconds before every run still going is killed (default %(default)s)")
    group.add_argument("--jobs", type=int, help="with --series: runs at once (default: every run)")
    group.add_argument("--only", action="append", default=[],
                       help="with --series: only the diffs whose file name contains this (repeatable)")
    group.add_argument("--allow-skips", action="store_true",
                       help="with --series: a test skipped where CUDA is present is not a failure")


def series_arguments_given(args: argparse.Namespace) -> list[str]:
    """The --series-only options given without --series."""
    given = {"--out": args.out is not None, "--cutlass": args.cutlass is not None, "--jobs": args.jobs is not None,
             "--only": bool(args.only), "--allow-skips": args.allow_skips, "--budget": args.budget != DEFAULT_BUDGET}
    return [name for name, present in given.items() if present]


def main(args: argparse.Namespace) -> int:
    """``tools/check_patches --series``: the module docstring. Prints the table; the exit status."""
    try:
        return _series(args)
    except SeriesError as refusal:
        print(f"check_patches --series: {refusal}", file=sys.stderr)
        return 2


def _series(args: argparse.Namespace) -> int:
    if args.out is None:
        raise SeriesError("--out DIR is required")
    if not 0 < args.budget < math.inf or (args.jobs is not None and args.jobs < 1):
        raise SeriesError("--budget and --jobs must be positive (--budget finite)")
    if args.out.exists() and not args.out.is_dir():
        raise SeriesError(f"--out {args.out}: not a directory")
    if args.cutlass is not None and not Path(args.cutlass).exists():
        raise SeriesError(f"--cutlass {args.cutlass}: no such file or directory")
    info = machine()
    diffs = series_for(info["git_version"])
    if not diffs:
        known = ", ".join(f"{folder} ({commit[:12]})" for folder, commit in bases().items())
        raise SeriesError(f"torch {info['torch']} ({info['git_version']}): no series diffs are based on it; "
                          f"bases here: {known}")
    diffs = [d for d in diffs if not args.only or any(text in d.name for text in args.only)]
    if not diffs:
        raise SeriesError(f"--only {args.only}: no series diff's name contains it")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    cuda = bool(info["gpu"])
    cutlass = None
    gpu_tier = runpy.run_path(str(TOOLS / "gpu_tier"))  # one way to lay out CUTLASS, and to clean up after
    if cuda:
        try:
            cutlass = gpu_tier["cutlass_tree"](args.cutlass, out)
        except ValueError as error:
            raise SeriesError(str(error)) from None
    shadows = out / "shadows"
    try:
        gpu_tier["made_folder"](shadows)
    except ValueError as error:
        raise SeriesError(str(error)) from None
    torch_dir = installed_torch()
    touched = sorted({path for diff in diffs for d in (*prerequisites(diff), diff) for path in torch_paths(d)})
    before = digests(torch_dir, touched)

    runs: list[Run] = []
    for diff in diffs:
        needed = prerequisites(diff)
        paths = sorted({path for d in (*needed, diff) for path in torch_paths(d)})
        shadow = build_shadow(torch_dir, paths, shadows / short(diff))
        baseline = build_shadow(torch_dir, paths, shadows / f"{short(diff)}-stock") if needed else None
        for prerequisite in needed:
            apply_to_shadow(prerequisite, shadow)
            apply_to_shadow(prerequisite, baseline)  # type: ignore[arg-type]
        apply_to_shadow(diff, shadow)
        for tests in tests_of(diff):
            module = out / "standins" / f"test_series_{short(diff)}.py"
            module.parent.mkdir(parents=True, exist_ok=True)
            (module.parent / "pytest.ini").write_text("[pytest]\n")  # the project's settings stay out
            module.write_text(stand_in_module(tests))
            methods = [(m, False) for m in tests.methods] + [(m, True) for m in tests.stand_in.ours]
            for method, ours in methods:
                cls = "LearnableBiasRegressions" if ours else tests.stand_in.cls
                for mode in ("stock", "patched"):
                    runs.append(Run(diff, method, cls, mode, ours, module, out / "runs" / short(diff) / method / mode,
                                    shadow if mode == "patched" else baseline))

    jobs = args.jobs or len(runs)
    compile_threads = max(1, (os.cpu_count() or 2) // jobs)
    where = f"{info['gpu']} (CUDA {info['cuda']})" if cuda else "no CUDA: the CPU harness; CUTLASS tests skip"
    print(f"check_patches --series: torch {info['torch']} ({info['git_version']}), triton {info['triton']}, "
          f"Python {info['python']}; {where}; CUTLASS: {cutlass or 'none'}", flush=True)
    print(f"  diffs: {', '.join(str(d.relative_to(PROJECT)) for d in diffs)}", flush=True)
    print(f"  {len(runs)} runs, {jobs} at once, {compile_threads} compile thread(s) each, budget {args.budget:.0f} s",
          flush=True)
    try:
        wall = run_all(runs, jobs, args.budget, compile_threads, cutlass)
    finally:
        for run in runs:
            forget_caches(run)
        # The shadows are links into the installed torch, the CUTLASS tree an unpacked wheel: DIR
        # keeps the table, the runs' logs and the generated modules. Only folders made here go.
        for made in (shadows, out / "cutlass", out / "cutlass-wheel"):
            gpu_tier["remove_made"](made)
    after = digests(torch_dir, touched)
    problems, skips = verdict(runs, cuda, args.allow_skips)
    if after != before:
        changed = [path for path in before if before[path] != after.get(path)]
        problems.append(f"the installed torch's files changed: {', '.join(changed)}")

    folders = sorted({str(d.parent.relative_to(PROJECT)) for d in diffs})
    header = (f"torch {info['torch']} (`{info['git_version']}`), triton {info['triton']}, Python {info['python']}; "
              f"{where}; CUTLASS: {'yes' if cutlass else 'none'}; "
              f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. Diffs from {', '.join(folders)}; "
              f"{len(runs)} runs, {jobs} at once, {compile_threads} compile thread(s) each, "
              f"budget {args.budget:.0f} s.")
    footer = (f"Wall time {wall:.0f} s. The installed torch's {len(before)} touched file(s): "
              f"{'unchanged' if after == before else 'CHANGED'} (SHA-256 before and after). "
              + (f"Verdict: NOT SHOWN: {'; '.join(problems)}." if problems
                 else "Verdict: every test that ran failed stock and passed patched (ours: passed patched)"
                 + (f"; skipped: {', '.join(skips)}." if skips else ".")))
    text = f"# The upstream series, stock and patched\n\n{header}\n\n{table(runs)}\n\n{footer}\n"
    (out / "series.md").write_text(text)
    (out / "series.json").write_text(json.dumps({
        "machine": info, "cutlass": cutlass, "wall_s": round(wall, 1), "budget_s": args.budget, "jobs": jobs,
        "compile_threads": compile_threads, "problems": problems, "skipped": skips,
        "installed_unchanged": after == before,
        "runs": [{"diff": str(r.diff.relative_to(PROJECT)), "test": r.test, "class": r.cls, "mode": r.mode,
                  "ours": r.ours, "outcome": r.outcome, "error": r.error, "seconds": round(r.seconds, 1),
                  "log": str(r.log.relative_to(out))} for r in runs],
    }, indent=1) + "\n")
    print(f"\n{text}", flush=True)
    return 1 if problems else 0
