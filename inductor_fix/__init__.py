"""Stop ``torch.compile(mode="max-autotune")`` crashing on aliased Triton template inputs.

Importing this package applies the fix; ``INDUCTOR_FIX_DISABLE=1`` turns it off.

The bug (pytorch/pytorch#188069, torch 2.9.0-2.14.x, and 2.8.x with
``enable_caching_generated_triton_templates=True``): Inductor's Triton template
codegen cache (``GeneratedCodeCache`` in ``torch/_inductor/select_algorithm.py``)
keys generated code by input layouts but not by which inputs are the same
buffer, so a kernel generated for ``bmm(x, x)`` is replayed for ``bmm(a, b)``
and the autotuning benchmark crashes with ``launcher() got multiple values for
argument 'stream'`` (or ``missing 1 required positional argument: '_grid_2'``).
Fixed upstream in 2.15.0 (PR #188268).

Importing is cheap: ``torch._inductor`` is not imported here. The patches land
when ``torch._inductor.select_algorithm`` is first imported, or at once if it
already is. Public API:

- :func:`apply` / :func:`remove` - idempotent, thread-safe; ``remove`` restores
  the exact original functions.
- :func:`status` - a :class:`~inductor_fix.status.Status`: state, reason,
  torch/triton versions and what was patched.
- :func:`applied` / :func:`removed` - context managers for scoped use.
- :class:`InductorFixWarning` - the one warning category this package emits.

CLI: ``python -m inductor_fix status`` and ``python -m inductor_fix check``.
"""

from __future__ import annotations

from . import _core
from ._core import applied, apply, remove, removed, status
from ._warnings import InductorFixWarning, warn_once
from .status import PatchStatus, State, Status

__all__ = [
    "InductorFixWarning",
    "PatchStatus",
    "State",
    "Status",
    "applied",
    "apply",
    "remove",
    "removed",
    "status",
]
__version__ = "0.1.0"


def _apply_at_import() -> None:
    try:
        _core.install()
    except Exception as error:  # never raise at import
        warn_once(f"inductor_fix: not applied, unexpected error: {type(error).__name__}: {error}")


_apply_at_import()
