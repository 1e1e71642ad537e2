"""The check table: every patch's ``check`` workloads, found through the patch table.

A patch shows its bug to ``inductor-fix check`` through ``inductor_fix/check/<patch
module>.py``, a module deleted with the patch, which declares ``WORKLOADS`` (one
:class:`~inductor_fix.check.workloads.Workload` per op of its ``check_ops``), optionally
``harness_seams`` (a context manager the CPU harness enters besides its own seams) and
``HARNESS_NOTE`` (what ``check`` says about those seams). A patch without such a module
has no ``check`` ops. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from types import ModuleType
from typing import Any, Callable, ContextManager

from ..patches import PATCHES
from .workloads import Step, Workload

__all__ = ["OPS", "harness_notes", "harness_seams", "label_of", "orders_of", "patch_modules", "run_sequence",
           "steps_of", "workloads"]


@functools.cache
def patch_modules() -> tuple[ModuleType, ...]:
    """The ``check`` module of each patch of the table that has one, in table order."""
    found = []
    for patch in PATCHES:
        name = f"{__package__}.{patch.module}"
        if importlib.util.find_spec(name) is not None:
            found.append(importlib.import_module(name))
    return tuple(found)


@functools.cache
def workloads() -> dict[str, Workload]:
    """op -> its :class:`Workload`, every patch's, in table order."""
    return {workload.op: workload for module in patch_modules() for workload in module.WORKLOADS}


#: Every op ``check --ops`` takes.
OPS: tuple[str, ...] = tuple(workloads())


def orders_of(op: str) -> tuple[str, ...]:
    """The sequences ``op`` runs in (both aliasing orders for a matmul, one compile for flex)."""
    return tuple(workloads()[op].sequences)


def steps_of(op: str, order: str) -> int:
    """How many compiles sequence ``order`` of ``op`` has."""
    return workloads()[op].sequences[order][1]


def label_of(op: str, order: str) -> str:
    """Sequence ``order`` of ``op`` as the verdict table names it."""
    return workloads()[op].sequences[order][0]


def run_sequence(name: str, order: str, device: str, *, compare: bool, **options: Any) -> list[Step]:
    """Run sequence ``order`` of op ``name`` in this process (the op's patch's workload, e.g.
    ``run_sequence("bmm", "alias-first", "cpu", compare=False)``); ``options`` (``dtype``,
    ...) go to the workload. KeyError for an op or order no patch declares."""
    workload = workloads()[name]
    if order not in workload.sequences:
        raise KeyError(f"{name} has no sequence {order!r}; it has {', '.join(workload.sequences)}")
    return workload.run(order, device, compare=compare, **options)


def harness_seams() -> tuple[Callable[[], ContextManager[Any]], ...]:
    """Each patch's extra CPU-harness seams (its ``harness_seams``), in table order."""
    return tuple(module.harness_seams for module in patch_modules() if hasattr(module, "harness_seams"))


def harness_notes() -> tuple[str, ...]:
    """What ``check`` says about those seams, each patch's ``HARNESS_NOTE``."""
    return tuple(module.HARNESS_NOTE for module in patch_modules() if hasattr(module, "HARNESS_NOTE"))
