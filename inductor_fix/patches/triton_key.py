"""The probe of the Triton template codegen cache's key (``GeneratedCodeCache.make_key`` in
``torch/_inductor/select_algorithm.py``, 2.8+): does it give ``(x, x)`` and ``(x, y)`` of one
layout different keys? ``make_key`` is called unbound on a fresh ``GeneratedCodeCache()`` with a
value for every parameter it takes (:data:`PROBE_ARGUMENTS`). Shared by the patches that decide
by this key (whether the release keys aliasing; whether a key with its inputs renamed apart
still does), so that each folder can be deleted without the others. The machinery of a probe
is :mod:`.aliasing`'s. Nothing here imports torch at import.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

from .aliasing import ProbeError, key_probe, separates

__all__ = ["PROBE_ARGUMENTS", "keys_separate_aliasing", "separates_aliasing"]

#: A value for every ``make_key`` parameter seen in torch 2.8.0-2.15.0, chosen
#: so that the key is cacheable (no subgraphs, no workspace, a fixed layout).
PROBE_ARGUMENTS: dict[str, Any] = {
    "num_stages": 1,
    "num_warps": 4,
    "prefix_args": 0,
    "suffix_args": 0,
    "epilogue_fn": None,
    "epilogue_fn_hash": "inductor_fix.probe",
    "tma_store": False,
    "tma_load_for_template_epilogue": False,
    "transpose_discontiguous_tensor_descriptors_override": None,
    "subgraphs": None,
    "workspace_arg": None,
    "num_consumer_groups": 0,
    "num_buffers_warp_spec": 0,
    "kwargs": {"BLOCK_M": 16},
    "hint_override": None,
    "triton_meta": None,
}


def _probe_arguments(make_key: Callable[..., Any], select_algorithm: ModuleType) -> tuple[dict[str, Any], Any, Any]:
    import torch

    ir = select_algorithm.ir
    layout = ir.FixedLayout(torch.device("cpu"), torch.float32, [2, 8, 8], [64, 8, 1])
    x = ir.Buffer(name="inductor_fix_probe_x", layout=layout)
    y = ir.Buffer(name="inductor_fix_probe_y", layout=layout)
    arguments = dict(PROBE_ARGUMENTS, layout=layout, call_sizes=layout.size)
    # signature() follows __wrapped__, so another package's functools.wraps wrapper probes too.
    parameters = list(inspect.signature(make_key).parameters.values())[1:]  # drop self
    required = [p for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    unknown = [p.name for p in required if p.name not in arguments and p.name != "input_nodes"]
    if unknown:
        raise ProbeError(f"make_key has required parameters this package does not know: {', '.join(unknown)}")
    known = {p.name: arguments[p.name] for p in parameters if p.name in arguments}
    return known, x, y


def _keys(make_key: Callable[..., Any], select_algorithm: ModuleType) -> tuple[Any, Any]:
    """The keys ``make_key``, called unbound on a fresh ``GeneratedCodeCache()``, gives ``(x, x)``
    and ``(x, y)``; ProbeError where it takes a required parameter the probe does not know."""
    arguments, x, y = _probe_arguments(make_key, select_algorithm)
    cache = select_algorithm.GeneratedCodeCache()
    return make_key(cache, input_nodes=(x, x), **arguments), make_key(cache, input_nodes=(x, y), **arguments)


#: ``keys_separate_aliasing(make_key, select_algorithm)``: whether ``make_key`` gives ``(x, x)`` and
#: ``(x, y)`` different keys (:class:`~.aliasing.ProbeError` where it cannot be called so).
keys_separate_aliasing = key_probe(_keys)


def separates_aliasing(module: ModuleType, make_key: Callable[..., Any], which: str = "") -> bool:
    """:data:`keys_separate_aliasing` of ``module``'s ``make_key``; Unsupported where it cannot run."""
    return separates(keys_separate_aliasing, make_key, module, which)
