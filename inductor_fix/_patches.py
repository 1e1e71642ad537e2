"""The patch table: every patch this package can apply, as data.

Each :class:`Patch` names its targets (``"Class.attribute"`` in
``torch._inductor.select_algorithm``, each with the factory that wraps it), the
upstream issue and PR, the stock releases that have the bug (a ``packaging``
specifier, for tests and tools: whether a build needs a patch is decided by
behaviour, never by this range), and when the patch can be deleted. ``decide``
inspects the live module and returns what the factories need, or raises
:class:`NotNeeded` / :class:`Unsupported` with a one-line reason; it patches nothing.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType
from typing import Any, Callable, Mapping

from . import _versions

# The fix itself (aliasing, guard, realign, _probe, _fingerprints) is imported inside
# the functions below, when Inductor loads: ``import inductor_fix`` must stay cheap.

__all__ = ["MODULE", "PATCHES", "TARGETS", "NotNeeded", "Patch", "Unsupported", "by_name", "check_fingerprints"]

MODULE = "torch._inductor.select_algorithm"


class NotNeeded(Exception):
    """This torch does not have what the patch fixes."""


class Unsupported(Exception):
    """This torch's internals are not what the patch recognises."""


#: ``factory(original, context)`` returns the wrapper installed in place of ``original``
#: (the object in the class ``__dict__``: a function, or a classmethod for classmethods).
Factory = Callable[[Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class Patch:
    name: str
    #: ``"Class.attribute"`` -> wrapper factory; what is wrapped is exactly these keys.
    targets: Mapping[str, Factory]
    #: ``decide(module)`` -> the context the factories take; raises NotNeeded or Unsupported.
    decide: Callable[[ModuleType], Any]
    #: What the patch does once applied, for status().
    effect: str
    upstream: str
    #: Stock torch releases with the bug, as a ``packaging`` specifier.
    affected: str
    delete_when: str
    #: Called after install; raises Unsupported if the patched module misbehaves.
    verify: Callable[[ModuleType], None] | None = None
    #: Releases whose internals the patch fits, as a ``packaging`` specifier ("": any);
    #: on an affected release outside it the bug stays (``decide`` says unsupported).
    supported: str = ""

    @property
    def target(self) -> str:
        return ", ".join(f"{MODULE}.{target}" for target in self.targets)

    def is_affected(self, torch_version: str) -> bool:
        """Whether stock ``torch_version`` (``"2.14.1+cu130"``, a dev build counts as its
        release) has the bug; for tests and tools, not for deciding to patch."""
        return _in(self.affected, torch_version)

    def fixes(self, torch_version: str) -> bool:
        """Whether the patch fits ``torch_version``'s internals (:attr:`supported`)."""
        return _in(self.supported, torch_version)


def _in(specifier: str, torch_version: str) -> bool:
    """``torch_version``'s release (a dev build counts as its release) is in ``specifier``."""
    from packaging.specifiers import SpecifierSet

    release = _versions.release_of(torch_version)
    return release is not None and release in SpecifierSet(specifier)


def split_target(target: str) -> tuple[str, str]:
    owner, attribute = target.split(".")
    return owner, attribute


def function_of(member: Any) -> Any:
    """The plain function behind a class ``__dict__`` entry (a classmethod's ``__func__``)."""
    return member.__func__ if isinstance(member, (classmethod, staticmethod)) else member


def _function(module: ModuleType, target: str, kind: type | None = None) -> Any:
    """The function behind ``target``; Unsupported if absent or not a plain function
    (or, with ``kind``, not wrapped in ``kind``, e.g. ``classmethod``)."""
    owner_name, attribute = split_target(target)
    member = getattr(getattr(module, owner_name, None), "__dict__", {}).get(attribute)
    if kind is not None and not isinstance(member, kind):
        raise Unsupported(f"{target} is not a {kind.__name__} in this torch")
    if not inspect.isfunction(function_of(member)):
        raise Unsupported(f"{target} is not a plain function in this torch")
    return function_of(member)


def _require_parameters(module: ModuleType, target: str, names: tuple[str, ...], kind: type | None = None) -> Any:
    function = _function(module, target, kind)
    missing = [name for name in names if name not in inspect.signature(function).parameters]
    if missing:
        raise Unsupported(f"{target} has no {', '.join(repr(n) for n in missing)} parameter")
    return function


def check_fingerprints(patch: Patch, module: ModuleType, torch_version: str) -> None:
    """Raise Unsupported if a function ``patch`` wraps differs from the source
    recorded for this torch release; releases with no record pass."""
    from . import _fingerprints

    release = str(_versions.release_of(torch_version))
    for target in patch.targets:
        recorded = _fingerprints.RECORDED.get(release, {}).get(target)
        if recorded is None:
            continue
        owner_name, attribute = split_target(target)
        try:
            actual = _fingerprints.fingerprint_of(function_of(getattr(module, owner_name).__dict__[attribute]))
        except (OSError, TypeError) as error:
            raise Unsupported(f"cannot read the source of {target}: {error}") from error
        if actual != recorded:
            raise Unsupported(
                f"{target} differs from torch {release}'s released source (fingerprint {actual}, recorded {recorded})"
            )


def _require_cache(module: ModuleType) -> None:
    if not hasattr(module, "GeneratedCodeCache"):
        raise NotNeeded(f"this torch has no Triton template codegen cache (added in {_versions.CACHE_ADDED})")


def _no_choices_error(module: ModuleType) -> type[Exception]:
    error = getattr(module, "NoValidChoicesError", None)
    if not (isinstance(error, type) and issubclass(error, Exception)):
        raise Unsupported("select_algorithm.NoValidChoicesError is missing")
    return error


# --- cache-key ------------------------------------------------------------------


def _separates_aliasing(module: ModuleType, make_key: Any, which: str = "") -> bool:
    """The probe's verdict on ``make_key``; Unsupported if the probe cannot call it."""
    from . import _probe

    try:
        return _probe.keys_separate_aliasing(module.GeneratedCodeCache, make_key, module)
    except _probe.ProbeError as error:
        raise Unsupported(f"{which}{error}") from error


def _decide_cache_key(module: ModuleType) -> int:
    """The position of ``input_nodes`` among ``make_key``'s parameters after ``self``."""
    _require_cache(module)
    make_key = _require_parameters(module, "GeneratedCodeCache.make_key", ("input_nodes",))
    if _separates_aliasing(module, make_key):
        raise NotNeeded("make_key already keys the aliasing pattern (upstream fix, pytorch/pytorch#188268)")
    return list(inspect.signature(make_key).parameters)[1:].index("input_nodes")


def _verify_cache_key(module: ModuleType) -> None:
    if not _separates_aliasing(module, module.GeneratedCodeCache.__dict__["make_key"], "patched "):
        raise Unsupported("the patched make_key still gives (x, x) and (x, y) the same key")


def _aliasing_key(original: Any, index: int) -> Any:
    from .aliasing import aliasing_aware_make_key

    return aliasing_aware_make_key(original, index)


# --- arity-guard ----------------------------------------------------------------


def _decide_arity_guard(module: ModuleType) -> ModuleType:
    _require_cache(module)
    _require_parameters(module, "TritonTemplate.generate", ("generate_with_caching",))
    _function(module, "AlgorithmSelectorCache.__call__")
    _require_parameters(module, "AlgorithmSelectorCache.benchmark_choice", ("choice", "autotune_args"), classmethod)
    _no_choices_error(module)
    if not isinstance(getattr(module, "TritonTemplateCaller", None), type):
        raise Unsupported("select_algorithm.TritonTemplateCaller is missing")
    return module


def _guarded_generate(original: Any, module: ModuleType) -> Any:
    from .guard import guarded_generate

    return guarded_generate(original)


def _guarded_selection(original: Any, module: ModuleType) -> Any:
    from .guard import guarded_selection

    return guarded_selection(original, module.NoValidChoicesError)


def _guarded_benchmark(original: classmethod, module: ModuleType) -> classmethod:
    from .guard import guarded_benchmark_choice

    return classmethod(guarded_benchmark_choice(original.__func__, module.TritonTemplateCaller))


# --- benchmark-realign ----------------------------------------------------------

_BENCHMARK_PARAMETERS = ("choices", "input_nodes", "layout", "input_gen_fns")


def _decide_realign(module: ModuleType) -> ModuleType:
    _require_parameters(module, "AlgorithmSelectorCache.benchmark_in_current_process", _BENCHMARK_PARAMETERS,
                        classmethod)
    for name in ("TritonTemplateCaller", "AlgorithmSelectorCache"):
        if not isinstance(getattr(module, name, None), type):
            raise Unsupported(f"select_algorithm.{name} is missing")
    if not callable(getattr(module.AlgorithmSelectorCache, "benchmark_example_value", None)):
        raise Unsupported("AlgorithmSelectorCache.benchmark_example_value is missing")
    return module


def _realigned(original: classmethod, module: ModuleType) -> classmethod:
    from .realign import realigned_benchmark

    return classmethod(realigned_benchmark(original.__func__, module))


CACHE_KEY = Patch(
    name="cache-key",
    targets={"GeneratedCodeCache.make_key": _aliasing_key},
    decide=_decide_cache_key,
    verify=_verify_cache_key,
    effect="codegen-cache keys now include the input aliasing pattern (pytorch/pytorch#188069)",
    upstream="pytorch/pytorch#188069, fixed by PR #188268",
    # 2.8.x has the cache off by default: affected only with enable_caching_generated_triton_templates=True.
    affected=">=2.9.0,<2.15.0",
    delete_when="the oldest supported torch is 2.15.0",
)
ARITY_GUARD = Patch(
    name="arity-guard",
    targets={
        "TritonTemplate.generate": _guarded_generate,
        "AlgorithmSelectorCache.__call__": _guarded_selection,
        "AlgorithmSelectorCache.benchmark_choice": _guarded_benchmark,
    },
    decide=_decide_arity_guard,
    effect="template choices whose kernel arity mismatches are regenerated, or excluded before any launch",
    upstream="safety net for the kind of pytorch/pytorch#188069 and #194515 (no upstream equivalent)",
    affected=">=2.8.0,<2.15.0",  # the union of the two bugs' ranges (2.8: #194515)
    delete_when="upstream checks a choice's arity against its benchmark arguments (not as of 2.15.0)",
)
BENCHMARK_REALIGN = Patch(
    name="benchmark-realign",
    targets={"AlgorithmSelectorCache.benchmark_in_current_process": _realigned},
    decide=_decide_realign,
    effect="each Triton template choice is benchmarked with the tensors its kernel takes (pytorch/pytorch#194515)",
    upstream="pytorch/pytorch#194515, fixed for flex forward and decoding by PR #194555",
    # 2.7.1 and 2.8.0 crash too (the version matrix's flex suite, CPU harness); older: not checked.
    affected=">=2.7.0,<2.15.0",
    # Up to 2.7 benchmark_in_current_process is a closure inside make_benchmark_fn: nothing to wrap.
    supported=">=2.8.0",
    delete_when="every template lowering passes its kernel's inputs to selection (flex backward does not in 2.15.0)",
)
PATCHES: tuple[Patch, ...] = (CACHE_KEY, ARITY_GUARD, BENCHMARK_REALIGN)

#: Every ``"Class.attribute"`` any patch wraps, as keyed in the fingerprint table.
TARGETS: tuple[str, ...] = tuple(target for patch in PATCHES for target in patch.targets)


def by_name(name: str) -> Patch:
    """The patch called ``name``; KeyError if there is none."""
    for patch in PATCHES:
        if patch.name == name:
            return patch
    raise KeyError(name)
