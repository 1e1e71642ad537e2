"""The two patches, as data: what each wraps, and how it decides it applies.

Each patch's ``plan(module)`` inspects the live
``torch._inductor.select_algorithm`` module and either returns one wrapper
factory per wrapped attribute or raises :class:`NotNeeded` /
:class:`Unsupported` with a one-line reason. Nothing is patched by ``plan``.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType
from typing import Any, Callable

from . import _versions

# The fix itself (aliasing, guard, _probe, _fingerprints) is imported inside the
# plans, when Inductor loads: ``import inductor_fix`` must stay cheap.

__all__ = ["PATCHES", "WRAPPED", "NotNeeded", "Patch", "Unsupported", "check_fingerprints"]

MODULE = "torch._inductor.select_algorithm"


class NotNeeded(Exception):
    """This torch does not have what the patch fixes."""


class Unsupported(Exception):
    """This torch's internals are not what the patch recognises."""


Wrappers = dict[tuple[str, str], Callable[[Any], Any]]


@dataclasses.dataclass(frozen=True)
class Patch:
    name: str
    #: ``(class name, attribute)`` pairs wrapped, the first being the main one.
    wraps: tuple[tuple[str, str], ...]
    plan: Callable[[ModuleType], Wrappers]
    #: What the patch does once applied, for status().
    effect: str
    #: Called after install; raises Unsupported if the patched module misbehaves.
    verify: Callable[[ModuleType], None] | None = None

    @property
    def target(self) -> str:
        return ", ".join(f"{MODULE}.{owner}.{attribute}" for owner, attribute in self.wraps)


def _function(module: ModuleType, owner_name: str, attribute: str) -> Any:
    owner = getattr(module, owner_name, None)
    function = getattr(owner, "__dict__", {}).get(attribute)
    if not inspect.isfunction(function):
        raise Unsupported(f"{owner_name}.{attribute} is not a plain function in this torch")
    return function


def check_fingerprints(patch: Patch, module: ModuleType, torch_version: str) -> None:
    """Raise Unsupported if a function ``patch`` wraps differs from the source
    recorded for this torch release; releases with no record pass."""
    from . import _fingerprints

    release = str(_versions.release_of(torch_version))
    for owner_name, attribute in patch.wraps:
        recorded = _fingerprints.RECORDED.get(release, {}).get(f"{owner_name}.{attribute}")
        if recorded is None:
            continue
        try:
            actual = _fingerprints.fingerprint_of(getattr(module, owner_name).__dict__[attribute])
        except (OSError, TypeError) as error:
            raise Unsupported(f"cannot read the source of {owner_name}.{attribute}: {error}") from error
        if actual != recorded:
            raise Unsupported(
                f"{owner_name}.{attribute} differs from torch {release}'s released source "
                f"(fingerprint {actual}, recorded {recorded})"
            )


def _require_cache(module: ModuleType) -> None:
    if not hasattr(module, "GeneratedCodeCache"):
        raise NotNeeded(f"this torch has no Triton template codegen cache (added in {_versions.CACHE_ADDED})")


def _separates_aliasing(module: ModuleType, make_key: Any, which: str = "") -> bool:
    """The probe's verdict on ``make_key``; Unsupported if the probe cannot call it."""
    from . import _probe

    try:
        return _probe.keys_separate_aliasing(module.GeneratedCodeCache, make_key, module)
    except _probe.ProbeError as error:
        raise Unsupported(f"{which}{error}") from error


def _plan_cache_key(module: ModuleType) -> Wrappers:
    from .aliasing import aliasing_aware_make_key

    _require_cache(module)
    make_key = _function(module, "GeneratedCodeCache", "make_key")
    parameters = list(inspect.signature(make_key).parameters)[1:]
    if "input_nodes" not in parameters:
        raise Unsupported("GeneratedCodeCache.make_key has no 'input_nodes' parameter")
    if _separates_aliasing(module, make_key):
        raise NotNeeded("make_key already keys the aliasing pattern (upstream fix, pytorch/pytorch#188268)")
    index = parameters.index("input_nodes")
    return {("GeneratedCodeCache", "make_key"): lambda original: aliasing_aware_make_key(original, index)}


def _verify_cache_key(module: ModuleType) -> None:
    if not _separates_aliasing(module, module.GeneratedCodeCache.__dict__["make_key"], "patched "):
        raise Unsupported("the patched make_key still gives (x, x) and (x, y) the same key")


def _plan_arity_guard(module: ModuleType) -> Wrappers:
    from .guard import guarded_generate, guarded_selection

    _require_cache(module)
    generate = _function(module, "TritonTemplate", "generate")
    _function(module, "AlgorithmSelectorCache", "__call__")  # raises Unsupported if absent
    if "generate_with_caching" not in inspect.signature(generate).parameters:
        raise Unsupported("TritonTemplate.generate has no 'generate_with_caching' parameter")
    no_choices_error = getattr(module, "NoValidChoicesError", None)
    if not (isinstance(no_choices_error, type) and issubclass(no_choices_error, Exception)):
        raise Unsupported("select_algorithm.NoValidChoicesError is missing")
    return {
        ("TritonTemplate", "generate"): guarded_generate,
        ("AlgorithmSelectorCache", "__call__"): lambda original: guarded_selection(original, no_choices_error),
    }


CACHE_KEY = Patch(
    name="cache-key",
    wraps=(("GeneratedCodeCache", "make_key"),),
    plan=_plan_cache_key,
    effect="codegen-cache keys now include the input aliasing pattern (pytorch/pytorch#188069)",
    verify=_verify_cache_key,
)
ARITY_GUARD = Patch(
    name="arity-guard",
    wraps=(("TritonTemplate", "generate"), ("AlgorithmSelectorCache", "__call__")),
    plan=_plan_arity_guard,
    effect="template choices whose kernel arity mismatches are regenerated or excluded",
)
PATCHES: tuple[Patch, ...] = (CACHE_KEY, ARITY_GUARD)

#: "Class.method" of every wrapped function, as keyed in the fingerprint table.
WRAPPED: tuple[str, ...] = tuple(f"{owner}.{attribute}" for patch in PATCHES for owner, attribute in patch.wraps)
