"""autotune-sharing's fix: a later aliasing pattern's template choices answer to their family's
first code in Inductor's autotune cache (the package docstring says why and where)."""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import weakref
from types import ModuleType
from typing import Any, Callable

from ..require import require_codegen_cache, require_function, require_parameters
from ..patch import Fix, Unsupported
from ..target_names import MODULE
# The probe that calls make_key with (x, x) and (x, y); shared with cache-key.
from ..triton_key import keys_separate_aliasing, separates_aliasing

from .activity import ACTIVITY

__all__ = ["FIX", "FamilyFailed", "decide", "family_key", "family_keyed_make_key", "family_recording_generate",
           "keys_separate_aliasing", "own_kernel_hash_key", "shared_hash_key", "targets"]

TARGET = "GeneratedCodeCache.make_key"

# --- the family: a codegen-cache key with the aliasing pattern taken out ------------------
#
# Two codes of one template whose keys differ only in which inputs are one buffer (mm(x, x),
# mm(a, b)) are one template, config, layouts and epilogue: one *family*. Its key is what the
# stock make_key gives the same inputs each under a name of its own: every pattern of a
# family then has one key, whether make_key keys aliasing itself (2.15.0) or a wrapper of it
# does (cache-key, 2.9-2.14).


class _Renamed:
    """An input node under another buffer name; every other attribute is the node's."""

    __slots__ = ("_node", "_name")

    def __init__(self, node: Any, name: str) -> None:
        self._node, self._name = node, name

    def get_name(self) -> str:
        return self._name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._node, attribute)


def family_key(make_key: Callable[..., Any], input_nodes_index: int) -> Callable[..., Any]:
    """``make_key`` (unwrapped to the release's own function: a wrapper's bookkeeping, such as
    cache-key's collision record, must not see these calls) with every input node renamed
    apart, so that aliasing leaves no trace in the key; same signature as ``make_key``. None
    where ``make_key`` returns None (an uncacheable key: no family)."""
    stock = inspect.unwrap(make_key)

    @functools.wraps(stock)
    def make_key_of_family(self: Any, *args: Any, **kwargs: Any) -> Any:
        positional, kwargs = list(args), dict(kwargs)
        nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else positional[input_nodes_index]
        renamed = tuple(_Renamed(node, f"inductor_fix_family_{i}") for i, node in enumerate(nodes))
        if "input_nodes" in kwargs:
            kwargs["input_nodes"] = renamed
        else:
            positional[input_nodes_index] = renamed
        return stock(self, *positional, **kwargs)

    return make_key_of_family


_generating = threading.local()
#: (id of a GeneratedCodeCache, key make_key returned) -> its family's key: one stock make_key
#: call per distinct key, not per call (most keys come again in every compile).
_families: dict[tuple[int, str], str | None] = {}


def family_keyed_make_key(make_key: Callable[..., str | None], input_nodes_index: int) -> Callable[..., str | None]:
    """Wrap ``GeneratedCodeCache.make_key``: the key is returned unchanged, and the family it
    belongs to is noted for the ``generate`` call it serves (:func:`family_recording_generate`).
    ``input_nodes_index``: the position of ``input_nodes`` after ``self``. A key's family costs
    one more call of the release's ``make_key`` the first time the key is met (~0.1-0.2 ms,
    ``tools/bench autotune_sharing``), none where the release keys aliasing itself and the inputs
    are distinct. Never raises for the family: one that cannot be computed is none, and that
    code keeps its own autotuning."""
    of_family = family_key(make_key, input_nodes_index)
    # The release's own make_key (2.15.0: nothing between) keys inputs that are all distinct as
    # it keys them renamed apart: such a key is its own family, and costs no second call.
    releases = inspect.unwrap(make_key) is make_key

    @functools.wraps(make_key)
    def make_key_noting_family(self: Any, *args: Any, **kwargs: Any) -> str | None:
        key = make_key(self, *args, **kwargs)
        _generating.family = None
        if key is None:
            return None
        slot = (id(self), key)
        if slot not in _families:
            try:
                nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else args[input_nodes_index]
                names = [node.get_name() for node in nodes]
                distinct = releases and len(set(names)) == len(names)
                _families[slot] = key if distinct else of_family(self, *args, **kwargs)
            except Exception:  # sharing is an optimisation: never fail a key over it
                _families[slot] = None
        if _families[slot] is not None:
            _generating.family = (id(self), _families[slot])
        return key

    return make_key_noting_family


# --- the autotune cache: a family's later codes answer to its first -----------------------
#
# A later pattern's code would get an autotune-cache identity of its own
# (``TritonTemplateCaller.hash_key``: template name and the module's code hash) and miss that
# cache: every choice compiled and benchmarked again. Its timings are its family's first
# code's, so it answers with that code's key; precompilation keeps its own.

#: family -> the module key of the first code generated for it.
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
        template = _template_of(family[0])
        if template is not None:  # not this patch's own probe
            ACTIVITY.add("autotuning_shared", template=template)


def _template_of(cache_id: int) -> str | None:
    """The name of the Triton template whose codegen cache has id ``cache_id``; None if none's."""
    select_algorithm = sys.modules.get(MODULE)
    templates = getattr(getattr(select_algorithm, "TritonTemplate", None), "all_templates", {})
    return next((name for name, template in templates.items()
                 if id(getattr(template, "_generated_code_cache", None)) == cache_id), None)


def family_recording_generate(generate: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``TritonTemplate.generate``: the choice it returns is recorded under the family its
    code's key belongs to (noted by :func:`family_keyed_make_key` during the call), so that
    :func:`shared_hash_key` can find the family's first code. A call that keys nothing (caching
    off, an uncacheable key) records nothing."""

    @functools.wraps(generate)
    def generate_recording_family(self: Any, *args: Any, **kwargs: Any) -> Any:
        _generating.family = None
        choice = generate(self, *args, **kwargs)
        family, _generating.family = getattr(_generating, "family", None), None
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
    """The position of ``input_nodes`` among ``make_key``'s parameters after ``self``.

    Probed, never by version: the family key must give ``(x, x)`` and ``(x, y)`` one key
    (Unsupported if not: the renaming does not reach what that ``make_key`` keys aliasing by;
    or if ``make_key`` cannot be probed). Whether this process's key separates aliasing is not
    asked: that is cache-key's state on 2.9-2.14 (disabled, removed, retired), and where it does
    not, a later pattern replays the first pattern's code, whose choices keep their own keys:
    the wrappers then share nothing and change nothing.
    """
    require_codegen_cache(module)
    make_key = require_parameters(module, TARGET, ("input_nodes",))
    index = list(inspect.signature(make_key).parameters)[1:].index("input_nodes")
    if separates_aliasing(module, family_key(make_key, index), "family key: "):
        raise Unsupported("make_key keys (x, x) and (x, y) apart even with every input named apart: the family "
                          "of a key cannot be found")
    require_function(module, "TritonTemplate.generate")
    require_function(module, "TritonTemplateCaller.hash_key")
    caller = module.TritonTemplateCaller
    if "kernel_hash_key" in caller.__dict__ or not callable(getattr(caller, "kernel_hash_key", None)):
        raise Unsupported("TritonTemplateCaller.kernel_hash_key is not the one it inherits from ChoiceCaller (the "
                          "key of the code to compile, self.hash_key())")
    _clear_with_inductors_caches()
    return index


class _Records:
    """What the fix remembers of families, cleared with Inductor's caches (``fresh_cache``,
    ``clear_caches``: a compile worker clears them every compile): after that no family's
    first code is in the autotune cache to be shared."""

    registered = False

    @staticmethod
    def cache_clear() -> None:
        for records in (_families, _first_code, _shared_with, _first_choice):
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


def _make_key(original: Any, index: int) -> Any:
    return family_keyed_make_key(original, index)


def _generate(original: Any, index: int) -> Any:
    return family_recording_generate(original)


def _hash_key(original: Any, index: int) -> Any:
    return shared_hash_key(original)


def _kernel_hash_key(inherited: Any, index: int) -> Any:
    return own_kernel_hash_key(inherited)


def targets() -> dict[str, Any]:
    """``"Class.attribute"`` -> wrapper factory ``(original, input_nodes_index)``."""
    return {TARGET: _make_key, "TritonTemplate.generate": _generate,
            "TritonTemplateCaller.hash_key": _hash_key, "TritonTemplateCaller.kernel_hash_key": _kernel_hash_key}


#: How the patch acts, loaded by the lifecycle (``patch.fix_of``), never by the table.
FIX = Fix(targets=targets(), decide=decide)
