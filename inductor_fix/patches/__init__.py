"""The patch table: one module per patch, listed here.

Each module imported below holds its
:class:`~inductor_fix.patches.base.Patch` entry ``PATCH`` (targets, upstream issue,
affected releases, its diff in ``patches/``, when to delete it), how it decides
whether this torch needs it, what it wraps, and the fix itself. Status, ``check``,
the tools and the tests read names, ranges and diffs from these entries.

To retire a patch: delete its module, its diff in ``patches/``, its tests in
``test/<module>/``, its benchmark ``tools/bench_lib/<module>.py`` with its results
``docs/bench/<module>*.json``, its ``check`` workloads ``inductor_fix/check/<module>.py``
(with any CPU-harness seams only they need), and its name from the import and
:data:`PATCHES` below;
then the docs' lines about it (README, CHANGELOG, docs/).
"""

from __future__ import annotations

from . import arity_guard, benchmark_realign, cache_key
from .base import MODULE, NotNeeded, Patch, Unsupported

__all__ = ["MODULE", "PATCHES", "TARGETS", "NotNeeded", "Patch", "Unsupported", "by_name", "patch_for_op"]

#: Every patch, in the order they are applied and shown.
PATCHES: tuple[Patch, ...] = (cache_key.PATCH, arity_guard.PATCH, benchmark_realign.PATCH)

#: Every ``"Class.attribute"`` any patch wraps, once (two patches may wrap one).
TARGETS: tuple[str, ...] = tuple(dict.fromkeys(target for patch in PATCHES for target in patch.targets))


def by_name(name: str) -> Patch:
    """The patch called ``name``; KeyError if there is none."""
    for patch in PATCHES:
        if patch.name == name:
            return patch
    raise KeyError(name)


def patch_for_op(op: str) -> Patch | None:
    """The patch whose bug ``inductor-fix check`` op ``op`` shows (its ``check_ops``), if any."""
    return next((patch for patch in PATCHES if op in patch.check_ops), None)
