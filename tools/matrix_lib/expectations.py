"""What the version matrix runs on each torch release, and what it expects.

The suites come from the patch table: every patch's property files,
``test/<patch module>/test_*properties.py``, one suite each (named after the file:
``test_flex_backward_properties.py`` is ``flex_backward``), run three ways: stock
(``INDUCTOR_FIX_DISABLE=1``), patched (the monkeypatch) and diff-applied (the patch's
diff in ``patches/`` applied to the installed torch, ``INDUCTOR_FIX_DISABLE=1``). A file
with tests marked ``codegen_cache_check`` (Inductor's own codegen-cache check,
``TritonTemplate.test_cache``; the markers are registered in ``pytest.ini``) gives a second
suite, ``<name>.test_cache``, run stock and patched; the first suite leaves them out. Tests
marked ``negative_control`` are left out of every phase (pytest ``-m``): they run stock
inside any mode, and each phase's own mode is the question it answers.

Each file may say where its stock run fails and its patched and diff-applied runs pass
there, as module constants read here without importing it (the matrix's host need not
have torch) (``STOCK_FAILS``, ``PATCHED_PASSES``, ``DIFF_PASSES``: ``packaging``
specifiers; ``VARIANTS``: variant -> stock-fails specifier); by default the patch's
``affected`` and ``supported``. A constant of those names that is not a literal, or a
specifier ``packaging`` rejects, is an error here, never a silent default. Patched and diff-applied must fail where
stock fails and the patch does not fit (``PATCHED_PASSES``).

Besides the suites, each release runs the whole test suite as README tells a user to
(:data:`FULL_SUITE`, :data:`FULL_SUITE_ARGUMENTS`), patched, with its own Hypothesis profile: it
must pass (every test passes or skips with its reason) on every release; and, asked for,
``inductor-fix check`` (:data:`CHECK`): it must pass wherever the fix can be protected
(:func:`fix_states`). A release without such a result is not judged by it (its cell says it was
not run), so the property suites' results of an older run keep their verdict.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from inductor_fix import _installed
from inductor_fix.patches import PATCHES, Patch
from inductor_fix.status import PROTECTED_STATES

PROJECT = Path(__file__).resolve().parents[2]
PASS, FAIL, ERROR, NOT_APPLICABLE = "PASS", "FAIL", "ERROR", "n/a"
#: Outcomes a rerun keeps (an ERROR may be transient, so it runs again).
CONCLUSIVE = (PASS, FAIL, NOT_APPLICABLE)
#: pytest markers (pytest.ini) the suites are selected by.
CODEGEN_CACHE_CHECK = "codegen_cache_check"
NEGATIVE_CONTROL = "negative_control"
#: The module constants a property file may set, and their type.
CONSTANTS = {"STOCK_FAILS": str, "PATCHED_PASSES": str, "DIFF_PASSES": str, "VARIANTS": dict}


class Suite(NamedTuple):
    name: str
    patch: Patch
    #: pytest arguments after ``python -m pytest -q -p no:cacheprovider``, from the project root.
    arguments: tuple[str, ...]
    stock_fails: str
    patched_passes: str
    #: Where the diff-applied run passes there (a diff for main may leave an older release's
    #: other bug in place).
    diff_passes: str
    #: variant -> where stock fails with it.
    variants: dict[str, str]
    modes: tuple[str, ...]


def _constants(tree: ast.Module, path: Path) -> dict[str, object]:
    """The :data:`CONSTANTS` a test file sets, without importing it. ValueError if one is not
    a literal of its type or holds a specifier ``packaging`` rejects."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in CONSTANTS:
            name = node.targets[0].id
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise ValueError(f"{path}: {name} must be a literal (the matrix reads it without importing "
                                 "the file)") from None
            if not isinstance(value, CONSTANTS[name]):
                raise ValueError(f"{path}: {name} must be a {CONSTANTS[name].__name__}, not {value!r}")
            for specifier in value.values() if isinstance(value, dict) else (value,):
                SpecifierSet(specifier)  # InvalidSpecifier (a ValueError) names it
            found[name] = value
    return found


def _marked(tree: ast.Module, marker: str) -> bool:
    """Whether a class or test of the file carries ``@pytest.mark.<marker>``."""
    return any(ast.unparse(decorator) in (f"pytest.mark.{marker}", f"mark.{marker}")
               for node in ast.walk(tree) if isinstance(node, (ast.ClassDef, ast.FunctionDef))
               for decorator in node.decorator_list)


def discover(project: Path = PROJECT) -> dict[str, Suite]:
    """Every suite of every patch of the table, in table order."""
    suites = {}
    for patch in PATCHES:
        files = (project / "test" / patch.folder).glob("test_*properties.py")
        for path in sorted(files, key=lambda p: (len(p.stem), p.stem)):
            name = path.stem.removeprefix("test_").removesuffix("_properties")
            tree = ast.parse(path.read_text(), str(path))
            constants = _constants(tree, path)
            stock = str(constants.get("STOCK_FAILS", patch.affected))
            patched = str(constants.get("PATCHED_PASSES", patch.supported))
            diff = str(constants.get("DIFF_PASSES", patched))
            variants = dict(constants.get("VARIANTS", {}))
            relative = str(path.relative_to(project))
            has_check = _marked(tree, CODEGEN_CACHE_CHECK)
            # The negative controls run stock inside any phase; a phase's own mode is what it asks.
            select = f"not {NEGATIVE_CONTROL}" + (f" and not {CODEGEN_CACHE_CHECK}" if has_check else "")
            suites[name] = Suite(name, patch, (relative, "-m", select), stock, patched, diff, variants,
                                 ("stock", "patched", "diff"))
            if has_check:
                suites[f"{name}.test_cache"] = Suite(
                    f"{name}.test_cache", patch, (relative, "-m", f"{CODEGEN_CACHE_CHECK} and not {NEGATIVE_CONTROL}"),
                    stock, patched, diff, variants, ("stock", "patched"))
    return suites


SUITES = discover()
MODES = {"stock": "stock", "patched": "patched", "diff": "diff-applied"}
#: Every phase (``suite:mode``), in the order they run, and its column title.
PHASES = {f"{suite.name}:{mode}": f"{suite.name} {MODES[mode]}" for suite in SUITES.values() for mode in suite.modes}
#: The full suite's phase, run after the others, and its column title.
FULL_SUITE, FULL_SUITE_TITLE = "full-suite", "full suite"
#: Its python arguments, from the project root: README's test command (test/test_tools.py keeps them equal).
FULL_SUITE_ARGUMENTS = ("-m", "pytest", "-n", "auto", "--dist", "loadfile", "test")
FULL_SUITE_COMMAND = "python " + " ".join(FULL_SUITE_ARGUMENTS)
#: ``python -m inductor_fix check`` there (the README table's evidence: what stock and patched do).
CHECK, CHECK_TITLE = "check", "check"
#: Phases besides the suites' (a release may lack them: "not run").
EXTRA_PHASES = (FULL_SUITE, CHECK)

#: Every release from PyPI a user can be on (docs/matrix.md): <= 2.7 as its last, 2.8.x both
#: ways (the codegen cache ships off), then every release up to the newest.
RELEASES = ("2.7.1", "2.8.0", "2.8.0@codegen-cache", "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.12.1",
            "2.13.0", "2.14.0", "2.14.1", "2.15.0")

#: Dev builds docs/matrix.md shows beside them: where no nightly index can be reached, a release
#: relabelled as the dev build cut from it (``RELEASE=DEV``, tools/torchenv.py: a pre-release
#: version on that release's internals); the nightly workflow runs the real ones.
DEV_BUILDS = ("2.15.0=2.16.0.dev20261201",)

#: Inductor settings a spec may add after ``@``, and the environment variable the test
#: suite reads them from (see ``test/conftest.py``).
VARIANTS = {"codegen-cache": {"INDUCTOR_FIX_TEST_CODEGEN_CACHE": "1"}}


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


def phases(full_suite: bool = True, check: bool = True) -> dict[str, str]:
    """The phases a run makes, in order, and their column titles: :data:`PHASES`, then the full
    suite's unless ``full_suite`` is false, then check's unless ``check`` is false."""
    return {**PHASES, **({FULL_SUITE: FULL_SUITE_TITLE} if full_suite else {}),
            **({CHECK: CHECK_TITLE} if check else {})}


def suite_of(phase: str) -> Suite:
    return SUITES[phase.split(":")[0]]


def mode_of(phase: str) -> str:
    return phase.split(":")[1]


def release_of(torch_version: str) -> Version:
    """``"2.14.1+cu130"`` -> ``Version("2.14.1")``; a dev build counts as its release
    (``2.15.0.dev...`` as 2.15.0), the package's own parser (``inductor_fix._installed``)."""
    return Version(_installed.release_of(torch_version))


def _in(specifier: str, torch_version: str) -> bool:
    return release_of(torch_version) in SpecifierSet(specifier)


def expected(phase: str, torch_version: str, variant: str | None = None) -> str:
    """The outcome ``phase`` must have on ``torch_version`` (with ``variant``'s settings):
    FAIL for stock where the suite's stock fails, and for every mode there where the
    patch does not make it pass. The full suite must pass everywhere; check wherever the fix
    can be protected."""
    if phase == FULL_SUITE:
        return PASS
    if phase == CHECK:
        return PASS if fix_states(torch_version) == PROTECTED else FAIL
    suite, mode = suite_of(phase), mode_of(phase)
    if not _in(suite.variants.get(variant, suite.stock_fails) if variant else suite.stock_fails, torch_version):
        return PASS
    passes = {"stock": None, "patched": suite.patched_passes, "diff": suite.diff_passes}[mode]
    return PASS if passes is not None and _in(passes, torch_version) else FAIL


def outcome(exit_status: int) -> str:
    """pytest's exit status as an outcome: 0 PASS, 1 FAIL (tests failed); anything else,
    5 (no tests collected) included, means the run itself went wrong."""
    return {0: PASS, 1: FAIL}.get(exit_status, ERROR)


def agrees(result: dict) -> bool:
    """A phase result agrees with its expectation; a phase that does not apply is neutral."""
    return result["outcome"] == result["expected"] or result["outcome"] == NOT_APPLICABLE


#: ``inductor-fix status`` states that mean the release is protected (the package's own list).
PROTECTED = tuple(str(state) for state in PROTECTED_STATES)


def fix_states(torch_version: str) -> tuple[str, ...]:
    """The overall states ``inductor-fix status`` may truthfully give on ``torch_version``:
    protected, or ``unsupported`` where the table says a patch does not fit an affected
    release (``Patch.supported``). Anything else means the internals moved."""
    if torch_version and any(p.is_affected(torch_version) and not p.fits(torch_version) for p in PATCHES):
        return ("unsupported",)
    return PROTECTED


def verdict(entry: dict) -> str:
    """One word for a release: ``ok``, ``ERROR`` (install or run broke), ``UNPROTECTED``
    (the package's status there is not one :func:`fix_states` allows: its internals moved),
    ``MISMATCH`` (an outcome contradicts its expectation) or ``incomplete`` (a suite's phase not
    run; the full suite and check where they ran)."""
    extra = [entry["phases"][phase] for phase in EXTRA_PHASES if phase in entry["phases"]]
    results = [entry["phases"].get(phase) for phase in PHASES] + extra
    if entry.get("error") or any(r and r["outcome"] == ERROR for r in results):
        return "ERROR"
    if entry.get("fix_state") not in (None, *fix_states(entry.get("torch") or "")):
        return "UNPROTECTED"
    if any(r and not agrees(r) for r in results):
        return "MISMATCH"
    if not all(results):
        return "incomplete"
    return "ok"
