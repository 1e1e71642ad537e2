"""Stop ``torch.compile(mode="max-autotune")`` crashing when Inductor's template inputs
and its autotuning call disagree.

Importing this package applies the fix, lazily: nothing of ``torch._inductor`` is
imported here; the patches land when ``torch._inductor.select_algorithm`` is first
imported, or at once if it already is. What is patched, where and why is one table,
``inductor_fix.patches.PATCHES``, one module per patch; every target is a
``"Class.attribute"`` of ``torch/_inductor/select_algorithm.py``:

=====================  =================================================================  ==================
patch                  wraps ``Class.attribute``: what it does                              stock releases
=====================  =================================================================  ==================
``cache-key``          ``GeneratedCodeCache.make_key``: the key also holds which inputs    #188069: 2.9-2.14
                       are one buffer (the aliasing pattern)                               (2.8 if cache on)
``arity-guard``        ``TritonTemplate.generate``, ``AlgorithmSelectorCache.__call__``,   the kind of both:
                       ``.benchmark_choice``: a choice whose kernel cannot take its        2.8+
                       arguments is regenerated or excluded, never launched
``benchmark-realign``  ``AlgorithmSelectorCache.benchmark_in_current_process``,            #194515: 2.7+
                       ``.__call__``: each choice benchmarked with the tensors its kernel  (fits 2.8+)
                       takes; unrealized selection inputs realized (2.8-2.13 backward)
=====================  =================================================================  ==================

Whether a patch is needed is decided by behaviour (the cache-key probe calls
``make_key``; realignment compares buffer names per selection), never by version.
Undo: :func:`remove` restores every original ever wrapped (``remove(name)``: one
patch's); ``INDUCTOR_FIX_DISABLE=1`` disables all, ``INDUCTOR_FIX_DISABLE=arity-guard,benchmark-realign``
just those.

Public API:

- :func:`apply` / :func:`remove` - idempotent, thread-safe; every patch, or those named
  (``apply("cache-key")``, ``remove("benchmark-realign")``; ValueError for another name).
- :func:`status` - a :class:`~inductor_fix.status.Status`: overall state, whether this
  torch is protected, each patch's state and reason, torch/triton versions.
- :func:`applied` / :func:`removed` - context managers for scoped use, also per patch
  (``with inductor_fix.removed("benchmark-realign"):``).
- :func:`is_patched` / :func:`original` - whether a target is wrapped, and its stock object.
- :func:`activity` - what each patch did in this process (``INDUCTOR_FIX_REPORT=FILE``
  appends it, per process, to a job report: :mod:`inductor_fix.report`).
- :class:`InductorFixWarning` - the one warning category this package emits.

Messages go to ``logging.getLogger("inductor_fix")``, also ``TORCH_LOGS="inductor_fix"``.

CLI: ``inductor-fix status | check | run`` (also ``python -m inductor_fix ...``).
"""

from . import _logs, report
from ._lifecycle import LIFECYCLE
from ._version import __version__ as __version__
from ._warnings import InductorFixWarning
from .status import PatchStatus, State, Status

__all__ = [
    "InductorFixWarning",
    "PatchStatus",
    "State",
    "Status",
    "activity",
    "applied",
    "apply",
    "is_patched",
    "original",
    "remove",
    "removed",
    "status",
]

activity = LIFECYCLE.activity
apply = LIFECYCLE.apply
remove = LIFECYCLE.remove
status = LIFECYCLE.status
applied = LIFECYCLE.applied
removed = LIFECYCLE.removed
is_patched = LIFECYCLE.is_patched
original = LIFECYCLE.original


def _apply_at_import() -> None:
    try:
        _logs.install()
        report.install()
        LIFECYCLE.install()
    except Exception as error:  # never raise at import
        from ._warnings import warn_once

        warn_once(f"inductor_fix: not applied, unexpected error: {type(error).__name__}: {error}")


_apply_at_import()
del _apply_at_import
