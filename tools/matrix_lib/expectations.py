"""What the version matrix expects of each torch release, and how a release's results are judged.

The bug (pytorch/pytorch#188069) is in stock torch 2.9.0 up to, not including,
2.15.0, which has the upstream fix (PR #188268). So the CPU property suite must
fail on stock (pytest exit 1) in that range and pass from 2.15.0 on; with the
monkeypatch or with a diff from ``patches/`` it must pass everywhere. 2.8.x
ships the cache switched off, so its stock passes too.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from inductor_fix import _versions
from inductor_fix._patches import CACHE_KEY

PASS, FAIL, ERROR, NOT_APPLICABLE = "PASS", "FAIL", "ERROR", "n/a"
#: The three runs of the suite, in the order they run, and their column titles.
PHASES = {"stock": "stock", "patched": "patched", "diff": "diff-applied"}
#: [first affected, first fixed) for stock: the bounds of the patch table's range.
_BOUNDS = {spec.operator: Version(spec.version) for spec in SpecifierSet(CACHE_KEY.affected)}
AFFECTED = (_BOUNDS[">="], _BOUNDS["<"])
#: Outcomes a rerun keeps (an ERROR may be transient, so it runs again).
CONCLUSIVE = (PASS, FAIL, NOT_APPLICABLE)


def release_of(torch_version: str) -> Version:
    """``"2.14.1+cu130"`` -> ``Version("2.14.1")``; a dev build counts as its release
    (``2.15.0.dev...`` as 2.15.0), the package's own parser (``inductor_fix._versions``)."""
    return Version(_versions.release_of(torch_version))


def is_affected(torch_version: str) -> bool:
    return CACHE_KEY.is_affected(torch_version)


def expected(phase: str, torch_version: str) -> str:
    """The outcome ``phase`` must have on ``torch_version``: FAIL for stock on an affected release."""
    return FAIL if phase == "stock" and is_affected(torch_version) else PASS


def outcome(exit_status: int) -> str:
    """pytest's exit status as an outcome: 0 PASS, 1 FAIL (tests failed); anything else,
    5 (no tests collected) included, means the run itself went wrong."""
    return {0: PASS, 1: FAIL}.get(exit_status, ERROR)


def agrees(result: dict) -> bool:
    """A phase result agrees with its expectation; a diff phase with no applicable patch is neutral."""
    return result["outcome"] == result["expected"] or result["outcome"] == NOT_APPLICABLE


def verdict(entry: dict) -> str:
    """One word for a release: ``ok``, ``ERROR`` (install or run broke), ``MISMATCH``
    (an outcome contradicts its expectation) or ``incomplete`` (phases not run yet)."""
    results = [entry["phases"].get(phase) for phase in PHASES]
    if entry.get("error") or any(r and r["outcome"] == ERROR for r in results):
        return "ERROR"
    if any(r and not agrees(r) for r in results):
        return "MISMATCH"
    if not all(results):
        return "incomplete"
    return "ok"
