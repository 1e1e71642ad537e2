"""cache-key's probe: does this build's ``GeneratedCodeCache.make_key`` key the aliasing pattern?

``make_key`` is called on a fresh cache with ``(x, x)`` and ``(x, y)`` of one layout, with a
value for every parameter it takes (:data:`PROBE_ARGUMENTS`): the keys differ where the build
keys aliasing itself (2.15.0, PR #188268). The shared machinery is :mod:`..aliasing`'s.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

from ..aliasing import ProbeError, key_probe, separates, verifier
from ..decide import require_codegen_cache, require_parameters
from ..record import NotNeeded

__all__ = ["PROBE_ARGUMENTS", "TARGET", "keys_separate_aliasing", "lacks_crash", "separates_aliasing", "verify"]

TARGET = "GeneratedCodeCache.make_key"

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
#: ``(x, y)`` different keys (:class:`~..aliasing.ProbeError` where it cannot be called so).
keys_separate_aliasing = key_probe(_keys)


def separates_aliasing(module: ModuleType, make_key: Callable[..., Any], which: str = "") -> bool:
    """:data:`keys_separate_aliasing` of ``module``'s ``make_key``; Unsupported where it cannot run."""
    return separates(keys_separate_aliasing, make_key, module, which)


#: cache-key's ``verify``: the installed (patched) ``make_key`` keys aliasing apart.
verify = verifier(keys_separate_aliasing, lambda module: module.GeneratedCodeCache.__dict__["make_key"])


def lacks_crash(module: ModuleType) -> str | None:
    """Why this torch's stock Triton codegen cache cannot replay one aliasing pattern's code for
    another (the crash this patch fixes), or None where it can: it has no such cache (up to 2.7),
    or its ``make_key`` keys the aliasing pattern (2.15.0, PR #188268). Probes the module's
    ``make_key`` as it is (stock, where the patch is off); Unsupported where it cannot tell."""
    try:
        require_codegen_cache(module)
    except NotNeeded as reason:
        return str(reason)
    if separates_aliasing(module, require_parameters(module, TARGET, ("input_nodes",))):
        return "make_key already keys the aliasing pattern (upstream fix, pytorch/pytorch#188268)"
    return None
