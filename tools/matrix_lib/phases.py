"""Run the CPU property suites in one torch venv: stock, patched (monkeypatch), diff-applied.

Every phase runs, from the project root with the venv's python::

    [INDUCTOR_FIX_DISABLE=1] python -m pytest -q -p no:cacheprovider <the suite's file and -k>

(:data:`expectations.SUITES`), with ``INDUCTOR_FIX_HYPOTHESIS_MAX_EXAMPLES`` bounding the generated examples
(the pinned ``@example`` regressions always run). The full suite's phase runs README's test
command there instead (``python -m pytest -n auto --dist loadfile test``), patched, as a user
runs it: no bound, its own profile; the check phase runs ``python -m inductor_fix check --json``
(every default op, stock and patched, on the CPU harness) and keeps each case's outcome. Each
starts and ends with
the torch files the patches touch restored from their pristine copies, and
the diff phase applies the release's patches from ``patches/`` in between.
That bookkeeping (pristine backups in ``<venv>/pristine/``, ``git apply``
that cannot be fooled by the enclosing checkout) is ``tools/check_patches``'s
(:mod:`matrix_lib.check_patches`), imported from it rather than copied, so both tools
share one set of backups.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
from pathlib import Path
from typing import Callable, Iterator

from inductor_fix.check.child import run_logged

from . import check_patches as cp
from . import expectations as ex

TOOLS = Path(__file__).resolve().parents[1]
PROJECT = TOOLS.parent
PATCHES = PROJECT / "patches"
PYTEST = ("-m", "pytest", "-q", "-p", "no:cacheprovider")


#: Set to the spec of the row a run writes, in its full suite and check: the suite's test of
#: docs/matrix.md leaves that row's verdict to the run (it is incomplete while the run goes on).
ROW_VARIABLE = "INDUCTOR_FIX_MATRIX_ROW"
#: The check phase's python arguments (its ``--json FILE`` added per run).
CHECK_ARGUMENTS = ("-m", "inductor_fix", "check")


def pytest_arguments(phase: str) -> tuple[str, ...]:
    """The venv python's arguments for ``phase``'s suite (the check phase's: its command)."""
    if phase == ex.FULL_SUITE:
        return ex.FULL_SUITE_ARGUMENTS
    if phase == ex.CHECK:
        return CHECK_ARGUMENTS
    return (*PYTEST, *ex.suite_of(phase).arguments)


#: The suites as results and docs/matrix.md show them; each phase sets its own INDUCTOR_FIX_* variables.
SUITE_COMMAND = " / ".join("python " + shlex.join(pytest_arguments(p)) for p in ex.PHASES if ex.mode_of(p) == "stock")


def shown(path: Path) -> str:
    """``path`` relative to the project if it is inside it (check_patches' rule)."""
    return cp.shown(path)


# --- the venv -------------------------------------------------------------------


@contextlib.contextmanager
def locked(env, say: Callable[[str], None]) -> Iterator[None]:
    """Hold ``<venv root>/.locks/<venv>`` so two matrix runs never patch one venv's torch at once.

    tools/check_patches takes no such lock: do not run it on the same venv meanwhile.
    """
    locks = env.path.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / env.path.name, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another run_matrix using {env.path}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def all_patches() -> list[Path]:
    """Every patch in patches/: the top-level ones, then the per-release variants."""
    return sorted(PATCHES.glob("*.patch")) + sorted(PATCHES.glob("*/*.patch"))


@contextlib.contextmanager
def pristine(env) -> Iterator[Path]:
    """Site-packages with every file any patch touches restored to stock, before and after.

    Restoring first also repairs a venv left patched by an interrupted run.
    Yields the site-packages folder.
    """
    paths = sorted({path for patch in all_patches() for path in cp.torch_paths(patch)})
    files = cp.Pristine(env, paths)
    try:
        files.ensure_backups()
    except SystemExit as refusal:  # check_patches' way to refuse a tampered file without a backup
        raise RuntimeError(str(refusal)) from None
    files.restore()
    try:
        yield env.site_packages
    finally:
        files.restore()


def base_commit(patch: Path) -> str | None:
    """The ``base-commit:`` line git format-patch --base writes after the diff."""
    match = re.search(r"^base-commit: ([0-9a-f]{40})$", patch.read_text(), flags=re.M)
    return match.group(1) if match else None


def apply_patches(site_packages: Path, git_version: str, release: str) -> list[dict]:
    """Apply the diff phase's patches to the pristine files; each one applied, with how.

    Every top-level patch (as its per-release variant where one is shipped, none
    today) that ``git apply`` takes as it is ("clean" or "offset"), in order, each
    checked against the files as the patches before it left them; the patches whose
    base commit is this build's ``torch.version.git_version`` first (0001, 0003 and 0004
    on 2.14.1; 0002, 0005, 0006 and 0007 on 2.15.0): those must apply, and a RuntimeError
    says it if one does not. So 2.15.0 gets its four, then 0003 with an offset; 0004,
    which 0007 contains, no longer applies there and is left out.
    """
    applied = []
    patches = [cp.variant_of(p, release) or p for p in sorted(PATCHES.glob("*.patch"))]
    for patch in sorted(patches, key=lambda patch: base_commit(patch) != git_version):  # stable: own first
        own = base_commit(patch) == git_version
        how, _ = cp.classify(patch, site_packages)
        if how not in ("clean", "offset") and not own:
            continue
        ok, output = cp.git_apply(patch, site_packages, check=False)
        if not ok:
            raise RuntimeError(f"git apply {shown(patch)} failed: {output.strip()}")
        applied.append({"patch": shown(patch), "how": "base" if own else how})
    return applied


# --- one phase ------------------------------------------------------------------


def suite_environment(disable: bool, max_examples: int, variant: str | None = None,
                      profile: str | None = None) -> dict[str, str]:
    """This process's environment for a phase: INDUCTOR_FIX_* only as the phase and the
    spec's variant set them, so a variable left in the caller's shell cannot change what
    a phase means."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
    environment.update(ex.VARIANTS.get(variant, {}) if variant else {})
    if profile:
        environment["INDUCTOR_FIX_HYPOTHESIS_PROFILE"] = profile
    if max_examples:  # 0: the profile's own count
        environment["INDUCTOR_FIX_HYPOTHESIS_MAX_EXAMPLES"] = str(max_examples)
    environment["PYTHONUNBUFFERED"] = "1"  # pytest's progress reaches the log as it happens
    if disable:
        environment["INDUCTOR_FIX_DISABLE"] = "1"
    return environment


def _progress(log: Path) -> str:
    """Tests finished so far, from pytest's progress characters (``..F.s``, ``-n``'s too) in its log."""
    marks = "".join(re.findall(r"^([.FEsxX]+)(?:\s*\[\s*\d+%\])?$", log.read_text(errors="replace"), flags=re.M))
    failed = marks.count("F") + marks.count("E")
    cases = re.findall(r"^  \[(\d+)/(\d+)\] ", log.read_text(errors="replace"), flags=re.M)  # check's lines
    if not marks and cases:
        return f"{cases[-1][0]} of {cases[-1][1]} check case(s) finished"
    if not marks:
        return "no test finished yet"
    return f"{len(marks)} test(s) finished" + (f", {failed} failed" if failed else "")


def run_pytest(env, arguments: tuple[str, ...], log: Path, environment: dict[str, str], *, timeout: float,
               every: float, say: Callable[[str], None]) -> tuple[int | None, float]:
    """The suite in ``env``, output to ``log``; (exit status or None on timeout, seconds).

    Says the elapsed time and progress every ``every`` seconds. pytest runs in its
    own process group (the package's one child runner) so a timeout or Ctrl-C ends it
    and its compile workers.
    """
    return run_logged([str(env.python), *arguments], environment, log, cwd=PROJECT, timeout=timeout, every=every,
                      progress=lambda seconds: say(f"{elapsed(seconds)} elapsed, {_progress(log)}"))


#: The counts of pytest's closing line (``356 passed, 2 failed, 63 skipped, 1 error in 480.12s``).
COUNTED = ("passed", "failed", "skipped", "error", "xfailed", "xpassed")


def counts(closing: str) -> dict[str, int]:
    """``{"passed": 356, "skipped": 63}`` of pytest's closing line (``errors`` counted as ``error``)."""
    found = {word.rstrip("s") if word == "errors" else word: int(number)
             for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b", closing)}
    return {word: found[word] for word in COUNTED if word in found}


def summarize(log: Path, status: int | None) -> dict:
    """Outcome, pytest's closing line and its counts, the failed test ids and the first ``E`` line of the log.
    A run whose tests all skipped (a release without what the suite needs, e.g.
    ``TritonTemplate.test_cache``) is ``n/a``, with the skip reason."""
    lines = log.read_text(errors="replace").splitlines()
    failed = [m.group(1) for line in lines if (m := re.match(r"(?:FAILED|ERROR) (\S+)", line))]
    first_error = next((line[1:].strip() for line in lines if line.startswith("E ")), None)
    # pytest's closing line ("2 failed, 345 passed in 9.61s", framed in "=" without -q): a process
    # may print after it.
    last = next((line.strip("= ") for line in reversed(lines) if line.strip()), "(no output)")
    closing = next((line.strip("= ") for line in reversed(lines)
                    if re.match(r"=*\s*(\d+ \w+|no tests ran)\b.* in [\d.]+s", line)), last)
    if status is None:
        return {"outcome": ex.ERROR, "exit": None, "summary": f"timed out; last line: {closing}",
                "failed": failed, "first_error": first_error}
    outcome = ex.outcome(status)
    if status == 0 and re.fullmatch(r"\d+ skipped.*", closing):
        reason = next((line.split(": ", 1)[-1] for line in lines if line.startswith("SKIPPED")), "")
        outcome, closing = ex.NOT_APPLICABLE, f"{closing}: {reason}".rstrip(": ")
    return {"outcome": outcome, "exit": status, "summary": closing, "counts": counts(closing), "failed": failed,
            "first_error": first_error}


def summarize_check(report: Path, log: Path, status: int | None) -> dict:
    """The check phase's result: its exit status as the outcome (0 PASS, 1 FAIL: a patched
    compile crashed, else ERROR), how many stock and patched cases crashed, and each case
    (op, order, mode, ok, its error's first line) and skipped op from check's ``--json`` file."""
    if status is None or not report.is_file():
        closing = next((line for line in reversed(log.read_text(errors="replace").splitlines()) if line.strip()),
                       "(no output)")
        return {"outcome": ex.ERROR, "exit": status, "summary": ("timed out; " if status is None else "")
                + f"no report; last line: {closing.strip()}", "failed": [], "first_error": None}
    data = json.loads(report.read_text())
    cases = [{"op": c["op"], "order": c["order"], "mode": c["mode"], "ok": c["ok"],
              "error": (c.get("error") or c.get("failure") or "").splitlines()[0] if not c["ok"] else None}
             for c in data["cases"]]
    crashed = {mode: sum(not c["ok"] for c in cases if c["mode"] == mode) for mode in ("stock", "patched")}
    each = {mode: sum(c["mode"] == mode for c in cases) for mode in ("stock", "patched")}
    summary = (f"{data['verdict']}: stock crashed {crashed['stock']}/{each['stock']}, patched crashed "
               f"{crashed['patched']}/{each['patched']}" + (f"; skipped {', '.join(data['skipped'])}"
                                                            if data.get("skipped") else ""))
    failed = [f"{c['op']}:{c['order']}" for c in cases if c["mode"] == "patched" and not c["ok"]]
    return {"outcome": ex.outcome(status), "exit": status, "summary": summary, "cases": cases,
            "skipped": data.get("skipped", {}), "failed": failed,
            "first_error": next((c["error"] for c in cases if c["mode"] == "patched" and c["error"]), None)}


def elapsed(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def run_phase(phase: str, env, info: dict, log: Path, *, max_examples: int, timeout: float,
              every: float, say: Callable[[str], None], variant: str | None = None,
              profile: str | None = None) -> dict:
    """One phase's result (see :func:`summarize`), plus ``patches`` for the diff phase.

    Raises RuntimeError where the venv's torch files cannot be made pristine, or
    a patch made for this build does not apply.
    """
    full = phase in ex.EXTRA_PHASES  # run as a user runs them
    mode = "patched" if full else ex.mode_of(phase)
    # The full suite as README runs it: no bound on examples, the suite's own profile.
    environment = suite_environment(disable=mode != "patched", max_examples=0 if full else max_examples,
                                    variant=variant, profile=None if full else profile)
    if full:  # the row being written: the docs' test judges the others (this run judges it)
        environment[ROW_VARIABLE] = info["spec"]
    with pristine(env) as site_packages:
        patches = []
        if mode == "diff":
            patches = apply_patches(site_packages, info["git_version"], str(ex.release_of(info["torch"])))
            diff = ex.suite_of(phase).patch.diff
            if not any(Path(p["patch"]).name == diff for p in patches):
                return {"outcome": ex.NOT_APPLICABLE, "patches": patches,
                        "summary": f"patches/{diff} does not apply to this build"}
            say("applied " + ", ".join(p["patch"] for p in patches))
        arguments = pytest_arguments(phase)
        report = log.with_suffix(".json")
        if phase == ex.CHECK:
            report.unlink(missing_ok=True)
            arguments = (*arguments, "--json", str(report))
        status, seconds = run_pytest(env, arguments, log, environment, timeout=timeout, every=every, say=say)
    result = summarize_check(report, log, status) if phase == ex.CHECK else summarize(log, status)
    result.update(seconds=round(seconds, 1), log=shown(log))
    if mode == "diff":
        result["patches"] = patches
    return result
