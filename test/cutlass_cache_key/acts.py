"""What makes cutlass-cache-key record each kind of its activity (``ACTS``: kind -> a function of
this module), for ``test/test_activity_lines.py``, which runs each in a fresh process. The
CUTLASS backend needs a GPU, nvcc and CUTLASS: here the patch's wrappers of this torch's CUTLASS
GEMM template run on an instance of its real class (``CUTLASS3xGemmTemplate``, whose ``name`` is
the placeholder its code is rendered with) in a lowering of ``mm``: ``mm(x, x)``'s key in the
code cache, then ``mm(a, b)``'s; and a benchmark request of ``mm(x, x)`` for a subprocess."""

from __future__ import annotations

import importlib
from unittest import mock

from helpers import Node, lowering

from inductor_fix.patches.cutlass_cache_key.fix import MODULES, kernel_inputs_benchmark_request

__all__ = ["ACTS", "collision", "subprocess_request"]

#: Where each release keeps the CUTLASS GEMM templates (2.11+; 2.9 and 2.10).
GEMM_MODULES = ("torch._inductor.codegen.cutlass.gemm_template", "torch._inductor.codegen.cuda.gemm_template")


def _template(names: list[str]):
    """An instance of this torch's ``CUTLASS3xGemmTemplate`` as ``make_key`` sees it (its
    constructor needs CUTLASS): inputs, no reorder, the placeholder name, no runtime arguments."""
    import torch._inductor.select_algorithm  # noqa: F401  (loads the CUTLASS modules)
    from torch._inductor.utils import Placeholder

    for name in GEMM_MODULES:
        try:
            gemm = importlib.import_module(name)
        except ImportError:
            continue
        template = object.__new__(gemm.CUTLASS3xGemmTemplate)
        template.input_nodes, template.input_reorder = [Node(n) for n in names], None
        template.name = str(Placeholder.KERNEL_NAME)
        template.get_runtime_arg_info = lambda: []
        return template
    raise ImportError(f"no CUTLASS GEMM template module of {', '.join(GEMM_MODULES)} in this torch")


def _base() -> type:
    for module, name in MODULES.items():
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError("no CUTLASS template class in this torch")


def collision() -> None:
    import torch

    base = _base()
    with mock.patch.dict(base.code_cache, clear=True), lowering(torch.ops.aten.mm.default):
        aliased = _template(["x", "x"])
        base.code_cache[aliased.make_key(name="cutlass3x_gemm", input_key="k", layout_repr="o")] = ("", (), ())
        _template(["a", "b"]).make_key(name="cutlass3x_gemm", input_key="k", layout_repr="o")


def subprocess_request() -> None:
    import types

    import torch
    from torch._inductor import config

    template = _template(["x", "x"])
    caller = types.SimpleNamespace(bmreq=types.SimpleNamespace(
        kernel_name="cutlass_5f3b1c2a", input_tensor_meta=[types.SimpleNamespace(name=n) for n in ("x", "x")]))
    generate = kernel_inputs_benchmark_request(lambda self, **kwargs: caller)
    with config.patch(autotune_in_subproc=True), lowering(torch.ops.aten.mm.default):
        generate(template)


ACTS = {"collisions_prevented": collision, "subprocess_inputs_deduplicated": subprocess_request}
