"""What the version matrix expects of each torch release, and how a release's results are judged.

Two property suites run on each release, each three ways (stock, patched,
diff-applied). Each suite belongs to the patch whose bug it finds, and that
patch's ``affected`` specifier in ``inductor_fix._patches`` is the expectation:
stock must fail (pytest exit 1) inside it and pass outside it; patched and
diff-applied must pass wherever the patch fits the release (its ``supported``
specifier), and fail on an affected release it does not fit.

- matmul (``TestArityProperties``): the codegen-cache key, pytorch/pytorch#188069,
  fixed in 2.15.0 by PR #188268. 2.8.x ships the cache switched off, so its
  stock passes; the ``codegen-cache`` variant (``2.8.0@codegen-cache``) switches
  it on, and then 2.8.x is affected too.
- flex (``TestFlexProperties``): the benchmark realignment, pytorch/pytorch#194515,
  2.7.1 to 2.14.x, fixed for flex forward and decoding in 2.15.0 by PR #194555; the
  patch fits 2.8.0 on (2.7's benchmark code is a closure it cannot wrap).
"""

from __future__ import annotations

from typing import NamedTuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from inductor_fix import _versions
from inductor_fix._patches import BENCHMARK_REALIGN, CACHE_KEY, PATCHES, Patch

PASS, FAIL, ERROR, NOT_APPLICABLE = "PASS", "FAIL", "ERROR", "n/a"
#: Outcomes a rerun keeps (an ERROR may be transient, so it runs again).
CONCLUSIVE = (PASS, FAIL, NOT_APPLICABLE)


class Suite(NamedTuple):
    test_filter: str  # pytest -k of test/test_properties.py
    patch: Patch  # whose ``affected`` range stock must fail in
    diff: str  # number of the patches/ diff that fixes it (top-level or a per-release variant)


SUITES = {
    "matmul": Suite("TestArityProperties", CACHE_KEY, "0001"),
    "flex": Suite("TestFlexProperties", BENCHMARK_REALIGN, "0003"),
}
MODES = {"stock": "stock", "patched": "patched", "diff": "diff-applied"}
#: Every phase, in the order they run, and its column title. The matmul suite's
#: phases keep their first names (results stored before the flex suite existed).
PHASES = {
    (mode if suite == "matmul" else f"{suite}-{mode}"): f"{suite} {title}"
    for suite in SUITES for mode, title in MODES.items()
}

#: Every release from PyPI a user can be on (docs/matrix.md): <= 2.7 as its last, 2.8.x both
#: ways (the codegen cache ships off), then every release up to the first fixed one.
RELEASES = ("2.7.1", "2.8.0", "2.8.0@codegen-cache", "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.12.1",
            "2.13.0", "2.14.0", "2.14.1", "2.15.0")

#: Inductor settings a spec may add after ``@``, and the environment variable the test
#: suite reads them from (see ``test/conftest.py``).
VARIANTS = {"codegen-cache": {"INDUCTOR_FIX_TEST_CODEGEN_CACHE": "1"}}

#: [first affected, first fixed) of the matmul suite's stock: the bounds of the table's range.
_BOUNDS = {spec.operator: Version(spec.version) for spec in SpecifierSet(CACHE_KEY.affected)}
AFFECTED = (_BOUNDS[">="], _BOUNDS["<"])


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"2.8.0@codegen-cache"`` -> ``("2.8.0", "codegen-cache")``; a spec without a known
    variant after its last ``@`` is returned whole. ValueError for an unknown variant name
    after a release number."""
    torch_spec, at, variant = spec.rpartition("@")
    if not at or "/" in variant:
        return spec, None
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} in {spec!r}; known: {', '.join(VARIANTS)}")
    if not torch_spec or "@" in torch_spec:
        raise ValueError(f"{spec!r}: one torch spec, then at most one @variant")
    return torch_spec, variant


def suite_of(phase: str) -> str:
    return phase.split("-")[0] if "-" in phase else "matmul"


def mode_of(phase: str) -> str:
    return phase.split("-")[-1]


def release_of(torch_version: str) -> Version:
    """``"2.14.1+cu130"`` -> ``Version("2.14.1")``; a dev build counts as its release
    (``2.15.0.dev...`` as 2.15.0), the package's own parser (``inductor_fix._versions``)."""
    return Version(_versions.release_of(torch_version))


def is_affected(suite: str, torch_version: str, variant: str | None = None) -> bool:
    """Whether stock ``torch_version`` has the bug ``suite`` finds (with ``variant``'s settings)."""
    patch = SUITES[suite].patch
    if patch is CACHE_KEY and variant == "codegen-cache":  # the cache exists from 2.8.0, off by default
        return release_of(torch_version) in SpecifierSet(f">={_versions.CACHE_ADDED},<{AFFECTED[1]}")
    return patch.is_affected(torch_version)


def expected(phase: str, torch_version: str, variant: str | None = None) -> str:
    """The outcome ``phase`` must have on ``torch_version``: FAIL for stock on an affected
    release, and for every mode where the suite's patch does not fit that release
    (``Patch.supported``: 2.7's benchmark-realign)."""
    suite = suite_of(phase)
    if not is_affected(suite, torch_version, variant):
        return PASS
    return FAIL if mode_of(phase) == "stock" or not SUITES[suite].patch.fixes(torch_version) else PASS


def outcome(exit_status: int) -> str:
    """pytest's exit status as an outcome: 0 PASS, 1 FAIL (tests failed); anything else,
    5 (no tests collected) included, means the run itself went wrong."""
    return {0: PASS, 1: FAIL}.get(exit_status, ERROR)


def agrees(result: dict) -> bool:
    """A phase result agrees with its expectation; a diff phase with no applicable patch is neutral."""
    return result["outcome"] == result["expected"] or result["outcome"] == NOT_APPLICABLE


#: ``inductor-fix status`` states that mean the release is protected.
PROTECTED = ("applied", "not-needed")


def fix_states(torch_version: str) -> tuple[str, ...]:
    """The overall states ``inductor-fix status`` may truthfully give on ``torch_version``:
    protected, or ``unsupported`` where the table says a patch does not fit an affected
    release (2.7's benchmark-realign). Anything else means the internals moved."""
    if torch_version and any(p.is_affected(torch_version) and not p.fixes(torch_version) for p in PATCHES):
        return ("unsupported",)
    return PROTECTED

def verdict(entry: dict) -> str:
    """One word for a release: ``ok``, ``ERROR`` (install or run broke), ``UNPROTECTED``
    (the package's status there is not one :func:`fix_states` allows: its internals moved),
    ``MISMATCH`` (an outcome contradicts its expectation) or ``incomplete``."""
    results = [entry["phases"].get(phase) for phase in PHASES]
    if entry.get("error") or any(r and r["outcome"] == ERROR for r in results):
        return "ERROR"
    if entry.get("fix_state") not in (None, *fix_states(entry.get("torch") or "")):
        return "UNPROTECTED"
    if any(r and not agrees(r) for r in results):
        return "MISMATCH"
    if not all(results):
        return "incomplete"
    return "ok"
