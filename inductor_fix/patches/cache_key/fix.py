"""cache-key's fix: the codegen-cache key holds the inputs' aliasing pattern (the package
docstring says why)."""

from __future__ import annotations

import functools
import inspect
import sys
from types import ModuleType
from typing import Any, Callable

from ..aliasing import ProbeError, aliasing_pattern
from ..require import require_codegen_cache, require_parameters
from ..patch import Fix, NotNeeded
from ..target_names import MODULE
from .probe import TARGET, keys_separate_aliasing, lacks_crash, separates_aliasing, verify

from .activity import ACTIVITY

__all__ = ["FIX", "ProbeError", "aliasing_aware_make_key", "aliasing_pattern", "decide", "keys_separate_aliasing",
           "lacks_crash", "targets", "verify"]


#: (id of a GeneratedCodeCache, hash of a stock key) -> each aliasing pattern keyed with it,
#: and the key the fix gave it once a second pattern came (None before: most keys never see one).
_patterns: dict[tuple[int, int], dict[tuple[int, ...], str | None]] = {}
_collided: set[tuple[tuple[int, int], tuple[int, ...]]] = set()


def _patched_key(key: str, pattern: tuple[int, ...]) -> str:
    return f"{key} input_aliasing={pattern}"


def _note_pattern(cache: Any, key: str, pattern: tuple[int, ...]) -> None:
    """Record a collision when a stock key comes with a pattern while the cache holds an entry
    of the same key with another pattern: what stock would have replayed. An entry gone
    (``fresh_inductor_cache``, ``cache_clear``) is no collision. (< 1 µs, ``tools/bench cache_key``.)"""
    slot = (id(cache), hash(key))
    seen = _patterns.get(slot)
    if seen is None:  # a key's first pattern: the usual call
        _patterns[slot] = {pattern: None}
        return
    seen.setdefault(pattern, None)
    if len(seen) < 2 or (slot, pattern) in _collided:
        return
    entries = getattr(cache, "_cache", None)
    held = []
    for other in seen:
        if other == pattern:
            continue
        if seen[other] is None:  # built once and kept: a str caches its hash, so lookups stay cheap
            seen[other] = _patched_key(key, other)
        if entries is None or seen[other] in entries:
            held.append(other)
    template = _template_of(cache) if held else None
    if template is not None:  # not this patch's own probe (decide, verify), on a cache of its own
        _collided.add((slot, pattern))
        ACTIVITY.add("collisions_prevented", template=template, patterns=[list(held[0]), list(pattern)])


def _template_of(cache: Any) -> str | None:
    """The name of the Triton template whose codegen cache ``cache`` is; None if no template's."""
    select_algorithm = sys.modules.get(MODULE)
    templates = getattr(getattr(select_algorithm, "TritonTemplate", None), "all_templates", {})
    return next((name for name, template in templates.items()
                 if getattr(template, "_generated_code_cache", None) is cache), None)


def aliasing_aware_make_key(make_key: Callable[..., str | None], input_nodes_index: int) -> Callable[..., str | None]:
    """Wrap ``GeneratedCodeCache.make_key`` so keys differ whenever aliasing patterns differ.

    ``input_nodes_index`` is the position of ``input_nodes`` among the positional
    parameters of ``make_key`` after ``self`` (0 in every release 2.8-2.15); the
    parameters after it differ between releases and are passed through untouched.

    Every key gets the pattern appended, also when no input aliases: entries
    a stock ``make_key`` wrote before the fix was applied (a compile before
    ``import inductor_fix``) can then never be hit. Equal layouts and equal
    patterns still give equal keys, so non-aliased compiles hit the cache as
    often as stock. If the pattern cannot be computed the wrapper returns None,
    which Inductor reads as "do not cache": slower, never wrong.
    """

    @functools.wraps(make_key)
    def make_key_with_aliasing(self: Any, *args: Any, **kwargs: Any) -> str | None:
        key = make_key(self, *args, **kwargs)
        if key is None:
            return None
        try:
            input_nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else args[input_nodes_index]
            pattern = aliasing_pattern(input_nodes)
            _note_pattern(self, key, pattern)
        except Exception:
            return None
        return _patched_key(key, pattern)

    return make_key_with_aliasing


# --- the patch ------------------------------------------------------------------------


def decide(module: ModuleType) -> int:
    """The position of ``input_nodes`` among ``make_key``'s parameters after ``self``. Whether the
    bug is there is probed first: a torch that keys aliasing itself needs nothing, whatever
    else it changed."""
    require_codegen_cache(module)
    make_key = require_parameters(module, TARGET, ("input_nodes",))
    if separates_aliasing(module, make_key):
        raise NotNeeded("make_key already keys the aliasing pattern (upstream fix, pytorch/pytorch#188268)")
    _clear_with_inductors_caches()
    return list(inspect.signature(make_key).parameters)[1:].index("input_nodes")


class _Records:
    """What the fix remembers of keys and patterns, cleared with Inductor's caches
    (``fresh_cache``, ``clear_caches``: a compile worker clears them every compile): after
    that no entry of another pattern is there to be kept apart from."""

    registered = False

    @staticmethod
    def cache_clear() -> None:
        for records in (_patterns, _collided):
            records.clear()


def _clear_with_inductors_caches() -> None:
    if _Records.registered:
        return
    try:
        from torch._inductor.utils import clear_on_fresh_cache

        clear_on_fresh_cache(_Records)
        _Records.registered = True
    except (ImportError, AttributeError):  # no such registry: the records then live with the process
        pass


def targets() -> dict[str, Any]:
    """``"Class.attribute"`` -> wrapper factory ``(original, input_nodes_index)``."""
    return {TARGET: aliasing_aware_make_key}


#: How the patch acts, loaded by the lifecycle (``patch.fix_of``), never by the table.
FIX = Fix(targets=targets(), decide=decide, verify=verify, lacks_crash=lacks_crash)
