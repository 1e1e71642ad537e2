"""cache-key's ``check`` workloads: the matmul two-compile sequences (pytorch/pytorch#188069).

Each op (bmm, mm, addmm, baddbmm, and bmm of x and x transposed) compiles twice in one
process with equal layouts, in both orders
(:data:`~inductor_fix.check.workloads.SEQUENCES`): aliased then distinct, distinct then
aliased (:func:`~inductor_fix.check.workloads.run_compiles`). Shapes as measured on the
H200: (4, 128, 128) for bmm/baddbmm, (128, 128) for mm/addmm.
"""

from __future__ import annotations

import functools
from typing import Any

from ...check.workloads import SEQUENCES, Op, Step, Workload, run_compiles

__all__ = ["OPS", "WORKLOADS", "op"]

#: order -> its label in the verdict table.
LABELS = {"alias-first": "alias -> distinct", "distinct-first": "distinct -> alias"}
#: op -> (operands, shape, what ``check --help`` says of it).
OPS: dict[str, tuple[int, tuple[int, ...], str]] = {
    "bmm": (2, (4, 128, 128), "bmm(x, x) and bmm(a, b)"),
    "mm": (2, (128, 128), "mm(x, x) and mm(a, b)"),
    "addmm": (3, (128, 128), "addmm(x, x, x) and addmm(c, a, b)"),
    "baddbmm": (3, (4, 128, 128), "baddbmm(x, x, x) and baddbmm(c, a, b)"),
    # bmm(x, x^T): aliasing through a transposed view, as in grad @ grad^T; the same kernels as bmm.
    "bmm_t": (2, (4, 128, 128), "bmm of x and x transposed (run on request)"),
}


def _bmm_transposed(a: Any, b: Any) -> Any:
    import torch

    return torch.bmm(a, b.transpose(1, 2))


def op(name: str) -> Op:
    """The template :class:`~inductor_fix.check.workloads.Op` of ``name`` (a key of :data:`OPS`)."""
    operands, shape, _ = OPS[name]
    return Op(name, operands, shape, _bmm_transposed if name == "bmm_t" else None)


def _run(name: str, order: str, device: str, *, compare: bool, **options: Any) -> list[Step]:
    return run_compiles(op(name), SEQUENCES[order], device, compare=compare, **options)


#: The ``check`` ops this patch's bug shows in, in its order.
WORKLOADS: tuple[Workload, ...] = tuple(
    Workload(name, {order: (LABELS[order], len(aliasing)) for order, aliasing in SEQUENCES.items()},
             functools.partial(_run, name), help=OPS[name][2], default=name != "bmm_t")
    for name in OPS)
