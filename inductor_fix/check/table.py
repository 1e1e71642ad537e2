"""The check table: every patch's ``check`` workloads, read through the patch table.

A patch shows its bug to ``inductor-fix check`` through the ``check`` part of its folder
(``inductor_fix/patches/<folder>/check.py``), whose ``PART`` is a
:class:`~inductor_fix.check.parts.CheckPart`: its workloads (one
:class:`~inductor_fix.check.workloads.Workload` per op), optionally the seams the CPU harness
enters besides its own, and what ``check`` says about them. A patch without one has no
``check`` ops. A part that cannot be read (:class:`~inductor_fix.check.parts.PartError`) is
left out, and named by :func:`broken_parts` for ``check`` to say so. Each function reads the
parts when it is called: importing this module reads none. Nothing here imports torch, and
nothing here names a patch or an op.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager

from .parts import CheckPart, load_parts
from .workloads import Step, Workload

__all__ = ["broken_parts", "check_parts", "default_ops", "harness_notes", "harness_seams", "label_of", "ops",
           "orders_of", "run_sequence", "steps_of", "unavailable", "workloads"]


def check_parts() -> dict[str, CheckPart]:
    """Patch name -> its ``check`` part, for each patch of the table that has one that can be
    read, in table order."""
    return load_parts("check").parts


def broken_parts() -> dict[str, str]:
    """Patch name -> why its ``check`` part cannot be read (its ops are unknown: ``check`` says so
    and runs the others)."""
    return load_parts("check").broken


def workloads() -> dict[str, Workload]:
    """op -> its :class:`Workload`, every patch's, in table order."""
    return {workload.op: workload for check in check_parts().values() for workload in check.workloads}


def ops() -> tuple[str, ...]:
    """Every op ``check --ops`` takes."""
    return tuple(workloads())


def default_ops() -> tuple[str, ...]:
    """The ops ``check`` runs without ``--ops`` (each workload's ``default``)."""
    return tuple(op for op, workload in workloads().items() if workload.default)


def orders_of(op: str) -> tuple[str, ...]:
    """The sequences ``op`` runs in (both aliasing orders for a matmul, one compile for flex)."""
    return tuple(workloads()[op].sequences)


def steps_of(op: str, order: str) -> int:
    """How many compiles sequence ``order`` of ``op`` has."""
    return workloads()[op].sequences[order][1]


def label_of(op: str, order: str) -> str:
    """Sequence ``order`` of ``op`` as the verdict table names it."""
    return workloads()[op].sequences[order][0]


def unavailable(op: str, device: str) -> str | None:
    """Why ``op`` cannot run on ``device`` on this machine (its workload's ``unavailable``), or None."""
    check = workloads()[op].unavailable
    return check(device) if check is not None else None


def run_sequence(name: str, order: str, device: str, *, compare: bool, **options: Any) -> list[Step]:
    """Run sequence ``order`` of op ``name`` in this process (the op's patch's workload);
    ``options`` (``dtype``, ...) go to the workload. KeyError for an op or order no patch
    declares."""
    workload = workloads()[name]
    if order not in workload.sequences:
        raise KeyError(f"{name} has no sequence {order!r}; it has {', '.join(workload.sequences)}")
    return workload.run(order, device, compare=compare, **options)


def harness_seams() -> tuple[Callable[[], ContextManager[Any]], ...]:
    """Each patch's extra CPU-harness seams (its part's ``harness_seams``), in table order."""
    return tuple(check.harness_seams for check in check_parts().values() if check.harness_seams is not None)


def harness_notes() -> tuple[str, ...]:
    """What ``check`` says about those seams, each part's ``harness_note``."""
    return tuple(check.harness_note for check in check_parts().values() if check.harness_note)
