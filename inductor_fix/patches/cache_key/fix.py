"""cache-key's fix: the codegen-cache key holds the inputs' aliasing pattern, and a later
pattern's choices share their family's autotuning (the package docstring says why)."""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import weakref
from types import ModuleType
from typing import Any, Callable

from ..aliasing import ProbeError, aliasing_pattern
from ..decide import require_codegen_cache, require_function, require_parameters
from ..record import NotNeeded, Unsupported
from ..target_names import MODULE
from .probe import TARGET, keys_separate_aliasing, lacks_crash, separates_aliasing, verify

from .activity import ACTIVITY

__all__ = ["FamilyFailed", "ProbeError", "aliasing_aware_make_key", "aliasing_pattern", "decide",
           "family_recording_generate", "keys_separate_aliasing", "lacks_crash", "own_kernel_hash_key",
           "shared_hash_key", "targets", "verify"]


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
        _generating.family = (id(self), key)  # for the generate call this key serves
        return _patched_key(key, pattern)

    return make_key_with_aliasing


# --- autotuning shared between aliasing patterns (no extra compile cost) ---------------
#
# Keying by aliasing makes a second pattern generate its own code, so its choices get hash
# keys of their own (``TritonTemplateCaller.hash_key``: template name and the module's code
# hash) and miss Inductor's autotune cache: every choice is compiled and benchmarked again,
# where stock replayed the first pattern's code and hit that cache. The two kernels are the
# same template, config, layouts and epilogue (one stock codegen-cache key, a *family*);
# only the binding of arguments differs, so their timings are one measurement. The family's
# later codes therefore answer to the first code's hash key in the autotune cache.

_generating = threading.local()
#: (id of a GeneratedCodeCache, stock key) -> the module key of the first code generated for it.
_first_code: dict[tuple[int, str], str] = {}
#: module key of a later pattern's code -> the module key of its family's first code.
_shared_with: dict[str, str] = {}
#: family -> the newest choice of its first code, weakly (a failed one stays alive in Inductor's
#: precompile cache): whether that code failed to compile (``ChoiceCaller.failed``).
_first_choice: dict[tuple[int, str], Any] = {}


class FamilyFailed(NotImplementedError):
    """A later aliasing pattern's choice whose family's first code failed to compile: the template
    declines it, as a template declines a config it cannot run (``maybe_append_choice`` skips it)."""


def _note_choice(choice: Any, family: tuple[int, str]) -> None:
    """Record ``choice``'s code as a member of ``family``; a later pattern's code shares the first's
    autotuning."""
    own = getattr(getattr(choice, "bmreq", None), "module_cache_key", None)
    if not isinstance(own, str):
        return
    first = _first_code.setdefault(family, own)
    if first == own:  # the newest choice of the first code: the one a precompile marks failed
        _first_choice[family] = weakref.ref(choice)
        return
    first_choice = _first_choice.get(family, lambda: None)()
    if getattr(first_choice, "failed", False) is True:
        # The same template, config and layouts as the first: the same compile (a config over the
        # device's shared memory, say). Offered, it has no autotuning to share, so the selection would
        # miss Inductor's autotune cache and benchmark every choice again (seen on an H200).
        raise FamilyFailed(f"{own}: its family's first aliasing pattern failed to compile ({first})")
    if _shared_with.setdefault(own, first) == first:
        template = _template_of_id(family[0])
        if template is not None:  # not this patch's own probe
            ACTIVITY.add("autotuning_shared", template=template)


def _template_of_id(cache_id: int) -> str | None:
    select_algorithm = sys.modules.get(MODULE)
    templates = getattr(getattr(select_algorithm, "TritonTemplate", None), "all_templates", {})
    return next((name for name, template in templates.items()
                 if id(getattr(template, "_generated_code_cache", None)) == cache_id), None)


def family_recording_generate(generate: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``TritonTemplate.generate``: the choice it returns is recorded under the stock
    codegen-cache key its code was made for (set by :func:`aliasing_aware_make_key` during the
    call), so that :func:`shared_hash_key` can find the first code of that key. A call that
    keys nothing (caching off, an uncacheable key) records nothing."""

    @functools.wraps(generate)
    def generate_recording_family(self: Any, *args: Any, **kwargs: Any) -> Any:
        _generating.family = None
        choice = generate(self, *args, **kwargs)
        family, _generating.family = _generating.family, None
        if choice is not None and family is not None:
            try:
                _note_choice(choice, family)
            except FamilyFailed:
                raise
            except Exception:  # sharing is an optimisation: never fail a compile over it
                pass
        return choice

    return generate_recording_family


def _shared_first(choice: Any) -> tuple[str | None, str | None]:
    """``(its own module key, its family's first one)`` for a choice whose code is a later
    pattern's; ``(own, None)`` for any other."""
    own = getattr(getattr(choice, "bmreq", None), "module_cache_key", None)
    return (own, _shared_with.get(own)) if isinstance(own, str) else (None, None)


def shared_hash_key(hash_key: Callable[[Any], str]) -> Callable[[Any], str]:
    """Wrap ``TritonTemplateCaller.hash_key`` (the choice's key in Inductor's autotune cache,
    ``PersistentCache.lookup``): a later aliasing pattern's code answers with its family's first
    code's key, so the autotune cache serves it the timing measured for that code, and the
    precompile and benchmark of the choice are skipped as stock skips them on a cache hit. Any
    other choice, and a key that does not hold the module key, is unchanged."""

    @functools.wraps(hash_key)
    def hash_key_shared_by_aliasing(self: Any) -> str:
        key = hash_key(self)
        own, first = _shared_first(self)
        if first is None or own is None or own not in key:
            return key
        return key.replace(own, first)

    return hash_key_shared_by_aliasing


def own_kernel_hash_key(kernel_hash_key: Callable[[Any], str]) -> Callable[[Any], str]:
    """Override ``TritonTemplateCaller.kernel_hash_key`` (inherited from ``ir.ChoiceCaller``,
    where it is ``self.hash_key()``: the key of the code to compile) so that it stays the
    code's own where :func:`shared_hash_key` shares the autotuning key. Precompilation is keyed
    by it (``create_precompile_key``, the dedupe in ``make_precompile_fn``): sharing it too
    would hand a later pattern its family's cached precompile step, which compiled the other
    code, and leave its own to be compiled one kernel at a time in the benchmark (seen on an
    H200: 2.7x the compile)."""

    @functools.wraps(kernel_hash_key)
    def kernel_hash_key_of_own_code(self: Any) -> str:
        key = kernel_hash_key(self)
        own, first = _shared_first(self)
        if first is None or own is None or first not in key:
            return key
        return key.replace(first, own)

    return kernel_hash_key_of_own_code


# --- the patch ------------------------------------------------------------------------


def decide(module: ModuleType) -> int:
    """The position of ``input_nodes`` among ``make_key``'s parameters after ``self``. Whether the
    bug is there is probed first: a torch that keys aliasing itself needs nothing, whatever
    else it changed."""
    require_codegen_cache(module)
    make_key = require_parameters(module, TARGET, ("input_nodes",))
    if separates_aliasing(module, make_key):
        raise NotNeeded("make_key already keys the aliasing pattern (upstream fix, pytorch/pytorch#188268)")
    require_function(module, "TritonTemplate.generate")
    require_function(module, "TritonTemplateCaller.hash_key")
    caller = module.TritonTemplateCaller
    if "kernel_hash_key" in caller.__dict__ or not callable(getattr(caller, "kernel_hash_key", None)):
        raise Unsupported("TritonTemplateCaller.kernel_hash_key is not the one it inherits from ChoiceCaller (the "
                          "key of the code to compile, self.hash_key())")
    _clear_with_inductors_caches()
    return list(inspect.signature(make_key).parameters)[1:].index("input_nodes")


class _Records:
    """What the fix remembers of keys, patterns and families, cleared with Inductor's caches
    (``fresh_cache``, ``clear_caches``: a compile worker clears them every compile): after
    that no entry of another pattern, or family code, is there to be kept apart from."""

    registered = False

    @staticmethod
    def cache_clear() -> None:
        for records in (_patterns, _collided, _first_code, _shared_with, _first_choice):
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


def _generate(original: Any, context: int) -> Any:
    return family_recording_generate(original)


def _hash_key(original: Any, context: int) -> Any:
    return shared_hash_key(original)


def _kernel_hash_key(inherited: Any, context: int) -> Any:
    return own_kernel_hash_key(inherited)


def targets() -> dict[str, Any]:
    """``"Class.attribute"`` -> wrapper factory ``(original, input_nodes_index)``."""
    return {TARGET: aliasing_aware_make_key, "TritonTemplate.generate": _generate,
            "TritonTemplateCaller.hash_key": _hash_key, "TritonTemplateCaller.kernel_hash_key": _kernel_hash_key}
