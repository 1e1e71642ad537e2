"""Ask a ``make_key`` whether it separates aliasing patterns, by calling it.

Two input lists with equal layouts - ``(x, x)`` and ``(x, y)`` - are keyed with
every other argument equal. Equal keys mean the codegen cache would share one
generated kernel between them: the bug. This decides whether a build needs the
fix by its behaviour, not its version string (2.15.0 and later nightlies key
the aliasing pattern themselves).
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

__all__ = ["ProbeError", "keys_separate_aliasing"]

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


class ProbeError(Exception):
    """The probe could not call ``make_key`` the way it expects; the message says why."""


def _arguments(make_key: Callable[..., Any], select_algorithm: ModuleType) -> tuple[dict[str, Any], Any, Any]:
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


def keys_separate_aliasing(cache_class: type, make_key: Callable[..., Any], select_algorithm: ModuleType) -> bool:
    """True if ``make_key`` gives ``(x, x)`` and ``(x, y)`` different keys.

    ``make_key`` is called unbound on a fresh ``cache_class()``. Raises
    :class:`ProbeError` if it cannot be called with known arguments or returns
    None (uncacheable) for the probe inputs.
    """
    try:
        arguments, x, y = _arguments(make_key, select_algorithm)
        cache = cache_class()
        aliased = make_key(cache, input_nodes=(x, x), **arguments)
        distinct = make_key(cache, input_nodes=(x, y), **arguments)
    except ProbeError:
        raise
    except Exception as error:
        raise ProbeError(f"make_key failed on probe inputs: {type(error).__name__}: {error}") from error
    if aliased is None or distinct is None:
        raise ProbeError("make_key returned None (uncacheable) for the probe inputs")
    return aliased != distinct
