"""The operations catalogue: the template ops that patches' ``check`` workloads, benchmarks and
tests compile, each defined once.

A matmul op compiles one of Inductor's GEMM templates (``mm``, ``addmm``, ``bmm``, ``baddbmm``:
``torch/_inductor/kernel/mm.py`` and ``bmm.py``) on operands of one layout, so that the same
template is keyed once with its operands aliased (one tensor in every slot) and once with them
distinct (:data:`~inductor_fix.check.workloads.SEQUENCES`). Shapes as measured on the H200:
(4, 128, 128) for the batched ops, (128, 128) for the others. A patch draws its ops from here;
a test that needs another patch's *workload* (not an op) says so with the suite helper
``needs_part_of``. Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

from .workloads import SEQUENCES, Op, Step, Workload, run_compiles

__all__ = ["LABELS", "MATMULS", "TEMPLATE_MATMULS", "operation", "two_compile_workload"]

#: A two-compile sequence's order -> its label in ``check``'s verdict table.
LABELS = {"alias-first": "alias -> distinct", "distinct-first": "distinct -> alias"}


def _bmm_transposed(a: Any, b: Any) -> Any:
    import torch

    return torch.bmm(a, b.transpose(1, 2))


#: name -> (the op, what ``check --help`` says of it).
MATMULS: dict[str, tuple[Op, str]] = {
    "bmm": (Op("bmm", 2, (4, 128, 128)), "bmm(x, x) and bmm(a, b)"),
    "mm": (Op("mm", 2, (128, 128)), "mm(x, x) and mm(a, b)"),
    "addmm": (Op("addmm", 3, (128, 128)), "addmm(x, x, x) and addmm(c, a, b)"),
    "baddbmm": (Op("baddbmm", 3, (4, 128, 128)), "baddbmm(x, x, x) and baddbmm(c, a, b)"),
    # bmm(x, x^T): aliasing through a transposed view, as in grad @ grad^T; bmm's kernels.
    "bmm_t": (Op("bmm_t", 2, (4, 128, 128), _bmm_transposed), "bmm of x and x transposed"),
}
#: The four GEMM templates, one op each (``bmm_t`` compiles ``bmm``'s kernels).
TEMPLATE_MATMULS: tuple[str, ...] = ("mm", "addmm", "bmm", "baddbmm")


def operation(name: str) -> Op:
    """The :class:`~inductor_fix.check.workloads.Op` called ``name``; KeyError naming the
    catalogue's ops for any other name."""
    if name not in MATMULS:
        raise KeyError(f"no operation {name!r} in the catalogue; it has {', '.join(MATMULS)}")
    return MATMULS[name][0]


def _two_compiles(op: Op, settings: dict[str, Any], default_dtype: str | None, order: str, device: str, *,
                  compare: bool, dtype: Any = None, **options: Any) -> list[Step]:
    if dtype is None and default_dtype is not None:
        import torch

        dtype = getattr(torch, default_dtype)
    if settings:
        from torch._inductor import config

        patched = config.patch(settings)
    else:
        patched = contextlib.nullcontext()
    with patched:
        return run_compiles(op, SEQUENCES[order], device, compare=compare, dtype=dtype, **options)


def two_compile_workload(op: Op, *, name: str | None = None, help: str = "", default: bool = True,
                         settings: dict[str, Any] | None = None, dtype: str | None = None,
                         unavailable: Callable[[str], str | None] | None = None) -> Workload:
    """A ``check`` workload that compiles ``op`` twice in one process with equal layouts, in
    both orders (:data:`~inductor_fix.check.workloads.SEQUENCES`), under Inductor ``settings``
    (``config.patch``), in ``dtype`` (a ``torch`` dtype's name; None: the workload's default)
    unless ``check`` asks for one; ``name`` defaults to the op's."""
    return Workload(name or op.name,
                    {order: (LABELS[order], len(aliasing)) for order, aliasing in SEQUENCES.items()},
                    functools.partial(_two_compiles, op, dict(settings or {}), dtype), help=help, default=default,
                    unavailable=unavailable)
