"""cutlass-cache-key's fix: the CUTLASS template's code-cache key holds the inputs' aliasing
pattern, and its benchmark request names each input buffer once (the package docstring says why)."""

from __future__ import annotations

import functools
import inspect
import sys
import types
from types import ModuleType
from typing import Any, Callable, Sequence

from ..aliasing import ProbeError, aliasing_pattern, key_probe, separates, verifier
from ..require import require_class, require_function, require_parameters
from ..patch import Fix, NotNeeded, Unsupported

from .activity import ACTIVITY

__all__ = ["FIX", "MODULES", "ProbeError", "aliasing_aware_make_key", "decide", "keys_separate_aliasing",
           "kernel_inputs_benchmark_request", "targets", "verify"]

#: Where each release keeps the CUTLASS template base class that holds the code cache: module -> class.
MODULES: dict[str, str] = {
    "torch._inductor.codegen.cutlass.template": "CUTLASSTemplate",  # 2.11 and later
    "torch._inductor.codegen.cuda.cuda_template": "CUDATemplate",  # up to 2.10 (the code cache: 2.9, 2.10)
}
#: The CUTLASS template's code cache first appears here (PR #156781).
CODE_CACHE_ADDED = "2.9.0"
#: The parameters ``make_key`` has in every release 2.9-2.15, after ``self``.
MAKE_KEY_PARAMETERS = ("name", "input_key", "layout_repr")

#: stock key -> {aliasing pattern: the key the fix gave it}, for the collisions activity records.
_patterns: dict[str, dict[tuple[int, ...], str]] = {}


def _note_pattern(template: Any, key: str, pattern: tuple[int, ...], patched: str) -> None:
    """Record a collision when a stock key comes with a pattern while the code cache holds an entry
    of the same stock key made for another pattern: the code stock would have replayed."""
    seen = _patterns.setdefault(key, {})
    if pattern in seen:
        return
    cache = getattr(template, "code_cache", {})
    held = [other for other, other_key in seen.items() if other_key in cache]
    seen[pattern] = patched
    if held:
        ACTIVITY.add("collisions_prevented", template=_template_name(template), patterns=[list(held[0]), list(pattern)])


def _template_name(template: Any) -> str:
    """The CUTLASS template's class (``CUTLASS3xGemmTemplate``): its ``name`` is the placeholder its
    code is rendered with (``Placeholder.KERNEL_NAME``), which says nothing."""
    return type(template).__name__


def aliasing_aware_make_key(make_key: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``make_key(self, name, input_key, layout_repr)`` of the CUTLASS template so that keys
    differ whenever the aliasing pattern of ``self.input_nodes`` differs.

    Stock keys hold the input nodes' layouts (``input_key``, ``create_inputs_key``) but not which
    of them are one buffer, while the kernel's signature has one pointer per distinct buffer name
    (``CUTLASSTemplateKernel.def_kernel``). Every key gets the pattern, so equal layouts with equal
    patterns still share entries; a pattern that cannot be computed gives None, which the template
    reads as "do not cache": slower, never wrong.
    """

    @functools.wraps(make_key)
    def make_key_with_aliasing(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = make_key(self, *args, **kwargs)
        if key is None:
            return None
        try:
            pattern = aliasing_pattern(self.input_nodes)
        except Exception:
            return None
        patched = f"{key} input_aliasing={pattern}"
        _note_pattern(self, key, pattern, patched)
        return patched

    return make_key_with_aliasing


def _unique_by_name(metas: Sequence[Any]) -> list[Any]:
    """The first ``TensorMeta`` of each buffer name, in order."""
    first: dict[str, Any] = {}
    for meta in metas:
        first.setdefault(meta.name, meta)
    return list(first.values())


def _autotune_in_subprocess() -> bool:
    config = sys.modules.get("torch._inductor.config")
    return bool(getattr(config, "autotune_in_subproc", False))


def kernel_inputs_benchmark_request(generate: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap the CUTLASS template's ``generate``: the benchmark request of the choice it returns
    holds one input ``TensorMeta`` per distinct buffer name, as the kernel takes them.

    Stock builds it from every input slot (``TensorMeta.from_irnodes(self.input_nodes)``), while
    the kernel takes one pointer per buffer and ``CUTLASSBenchmarkRequest.update_workspace_size``
    already counts buffers. In-process autotuning passes one tensor per buffer and never reads
    these; a benchmark in a subprocess (``autotune_in_subproc``) makes one tensor per meta, so
    ``mm(x, x)`` passed three pointers to a kernel that takes two, through ctypes: no choice
    survived (seen on an H200: ``NoValidChoicesError`` with CUTLASS alone).
    """

    @functools.wraps(generate)
    def generate_with_kernel_inputs(self: Any, *args: Any, **kwargs: Any) -> Any:
        caller = generate(self, *args, **kwargs)
        bmreq: Any = getattr(caller, "bmreq", None)
        metas = getattr(bmreq, "input_tensor_meta", None)
        if isinstance(metas, list):
            try:
                unique = _unique_by_name(metas)
            except AttributeError:  # a meta without a name: leave the request as stock made it
                return caller
            if len(unique) < len(metas):
                bmreq.input_tensor_meta = unique
                if _autotune_in_subprocess():  # in process, stock passes one tensor per buffer already
                    ACTIVITY.add("subprocess_inputs_deduplicated", template=_template_name(self),
                                 kernel=str(bmreq.kernel_name), slots=len(metas), buffers=len(unique))
        return caller

    return generate_with_kernel_inputs


# --- the probe: does this make_key separate aliasing patterns? ---------------------


class _Node:
    """An input node that is only a buffer name: what the key's aliasing needs."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name


def _stand_in(input_nodes: tuple[_Node, ...]) -> Any:
    """A template with only what ``make_key`` reads in 2.9-2.15: its input nodes, their reorder
    and its runtime arguments (none)."""
    return types.SimpleNamespace(input_nodes=list(input_nodes), input_reorder=None, name="inductor_fix_probe",
                                 get_runtime_arg_info=lambda: [])


def _keys(make_key: Callable[..., Any], module: ModuleType) -> tuple[Any, Any]:
    """The keys ``make_key`` gives a template of inputs ``(x, x)`` and one of ``(x, y)``, equal
    layouts (one ``input_key``)."""
    x, y = _Node("inductor_fix_probe_x"), _Node("inductor_fix_probe_y")
    arguments = {"name": "inductor_fix_probe", "input_key": "inductor_fix_probe", "layout_repr": "inductor_fix_probe"}
    return make_key(_stand_in((x, x)), **arguments), make_key(_stand_in((x, y)), **arguments)


#: ``keys_separate_aliasing(make_key, module)``: whether the CUTLASS template's ``make_key`` gives
#: ``(x, x)`` and ``(x, y)`` different keys (:class:`~..aliasing.ProbeError` where it cannot run).
keys_separate_aliasing = key_probe(_keys)


def decide(module: ModuleType) -> str:
    """The name of the template class of ``module`` that holds the code cache. Whether the bug is
    there is probed: a torch whose ``make_key`` keys aliasing itself needs nothing."""
    name = MODULES.get(module.__name__)
    if name is None:
        raise Unsupported(f"{module.__name__} is not a module this patch knows")
    template = require_class(module, name)
    if "code_cache" not in vars(template):
        raise NotNeeded(f"this torch's CUTLASS template has no code cache (added in {CODE_CACHE_ADDED}, "
                        "pytorch/pytorch#156781)")
    make_key = require_parameters(module, f"{name}.make_key", MAKE_KEY_PARAMETERS)
    extra = [p.name for p in list(inspect.signature(make_key).parameters.values())[1:]
             if p.name not in MAKE_KEY_PARAMETERS and p.default is p.empty]
    if extra:
        raise Unsupported(f"{name}.make_key has required parameters this package does not know: {', '.join(extra)}")
    require_function(module, f"{name}.generate")
    if separates(keys_separate_aliasing, make_key, module):
        raise NotNeeded("the CUTLASS template's make_key already keys the aliasing pattern")
    return name


#: cutlass-cache-key's ``verify``: the installed (patched) ``make_key`` keys aliasing apart.
verify = verifier(keys_separate_aliasing, lambda module: getattr(module, MODULES[module.__name__]).__dict__["make_key"])


def _make_key(original: Any, context: str) -> Any:
    return aliasing_aware_make_key(original)


def _generate(original: Any, context: str) -> Any:
    return kernel_inputs_benchmark_request(original)


def targets() -> dict[str, Any]:
    """``"module:Class.attribute"`` -> wrapper factory ``(original, class name)``: each release has
    one of the two modules."""
    return {f"{module}:{name}.{attribute}": factory for module, name in MODULES.items()
            for attribute, factory in (("make_key", _make_key), ("generate", _generate))}


#: How the patch acts, loaded by the lifecycle (``patch.fix_of``), never by the table.
FIX = Fix(targets=targets(), decide=decide, verify=verify)
