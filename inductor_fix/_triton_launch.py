"""Facts about Inductor's Triton launches that the fix, ``check``'s CPU harness and the tests share:
the grid values, how a launch of the wrong arity fails, what a benchmark request passes and
what its kernel takes.

Source: ``torch/_inductor/runtime/triton_heuristics.py`` (the launcher Inductor generates for
each compiled kernel), torch 2.7-2.15.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GRID_VALUES", "LAUNCHER_ERRORS", "kernel_parameters", "tensor_metas"]

#: Triton launches take the grid as three trailing positional values.
GRID_VALUES = 3

#: How a launch of a Triton kernel given arguments of another count fails, every form 2.8-2.15
#: has (regular expressions of ``Type: message``): the generated ``def launcher(<kernel args>,
#: _grid_0, _grid_1, _grid_2, stream)`` given one argument too many (``stream`` twice) or more
#: (``takes N positional arguments``), too few (``missing 1``, ``2`` or more ``required positional
#: arguments``: ``'_grid_2'``, ``'_grid_1' and '_grid_2'``); 2.13+'s ``_check_launcher_call_args``
#: (``too many positional arguments - expected N, got M``). The Triton patches' stock crash.
LAUNCHER_ERRORS: tuple[str, ...] = (
    r"TypeError: .*launcher\(\) got multiple values for argument 'stream'",
    r"TypeError: .*launcher\(\) missing \d+ required positional arguments?: ",
    r"TypeError: .*launcher\(\) takes \d+ positional arguments? but \d+ (were|was) given",
    r"TypeError: .*too many positional arguments - expected \d+, got \d+",
)


def tensor_metas(meta: Any) -> list[Any]:
    """A benchmark request's ``input_tensor_meta``/``output_tensor_meta`` as a list
    (each is one ``TensorMeta`` or a list of them)."""
    return list(meta) if isinstance(meta, (list, tuple)) else [meta]


def kernel_parameters(bmreq: Any) -> tuple[str, ...]:
    """Parameter names of the kernel ``bmreq`` will load (PyCodeCache returns the
    module ``generate_and_load`` already loaded)."""
    from torch._inductor.codecache import PyCodeCache

    module = PyCodeCache.load_by_key_path(bmreq.module_cache_key, bmreq.module_path)
    function = getattr(module, bmreq.kernel_name).fn  # a triton JITFunction
    names = getattr(function, "arg_names", None)  # 100x cheaper than inspect.signature
    if names is not None:
        return tuple(names)
    import inspect

    return tuple(inspect.signature(function.fn).parameters)
