"""cache-key's ``check`` workloads: the matmul two-compile sequences (pytorch/pytorch#188069).

``inductor-fix check`` finds this module through the patch table
(:mod:`inductor_fix.check.table`): it is deleted with the patch. Each op of
``PATCH.check_ops`` (bmm, mm, addmm, baddbmm, and bmm of x and x transposed) compiles
twice in one process with equal layouts, in both orders
(:data:`~inductor_fix.check.workloads.SEQUENCES`): aliased then distinct, distinct then
aliased (:func:`~inductor_fix.check.workloads.run_compiles`).
"""

from __future__ import annotations

import functools
from typing import Any

from .workloads import SEQUENCES, Step, Workload, run_compiles

__all__ = ["WORKLOADS"]

#: order -> its label in the verdict table.
LABELS = {"alias-first": "alias -> distinct", "distinct-first": "distinct -> alias"}


def _run(name: str, order: str, device: str, *, compare: bool, **options: Any) -> list[Step]:
    return run_compiles(name, SEQUENCES[order], device, compare=compare, **options)


#: The ``check`` ops this patch's bug shows in (``PATCH.check_ops``), in its order.
WORKLOADS: tuple[Workload, ...] = tuple(
    Workload(name, {order: (LABELS[order], len(aliasing)) for order, aliasing in SEQUENCES.items()},
             functools.partial(_run, name))
    for name in ("bmm", "mm", "addmm", "baddbmm", "bmm_t"))
