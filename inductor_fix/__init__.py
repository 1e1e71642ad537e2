"""Stop ``torch.compile(mode="max-autotune")`` crashing when Inductor's template inputs
and its autotuning call disagree.

Installing this package applies the fix in every process that imports torch: torch
calls its ``torch.backends`` entry point (:mod:`_inductor_fix_autoload`) at ``import
torch``, which has this package's API imported when Inductor's ``select_algorithm`` loads
(``INDUCTOR_FIX_AUTOLOAD=0`` turns that route off). Importing this package applies the
fix the same way, lazily: nothing of ``torch._inductor`` is imported here; the patches
land when ``torch._inductor.select_algorithm`` is first imported, or at once if it
already is, or at the first use of the API below. Every route starts through
:data:`_inductor_fix_startup.STARTUP`, which imports nothing of the package; the package never
imports the entry point's module.

What is patched, where and why is one table, ``inductor_fix.patches.PATCHES``: one folder
per patch (``python -m pydoc inductor_fix.patches.<folder>`` shows its upstream issue,
affected releases and when it can be deleted; ``inductor-fix status`` shows them on this
torch). Every target is a ``"Class.attribute"`` of ``torch/_inductor/select_algorithm.py``, or
``"module:Class.attribute"`` of another module of Inductor (each module is patched when it loads).
Whether a patch is needed is decided by behaviour (probes of the live module), never by
version. Undo: :func:`remove` restores every original ever wrapped (``remove(name)``: one
patch's); ``INDUCTOR_FIX_DISABLE=1`` disables all, a comma-separated list of patch names
just those.

Public API:

- :func:`apply` / :func:`remove` - idempotent, thread-safe; every patch, or those named
  (``apply(name)``; ValueError for a name that is not a patch).
- :func:`status` - a :class:`~inductor_fix.status.Status`: overall state, whether this
  torch is protected, each patch's state and reason, torch/triton versions.
- :func:`applied` / :func:`removed` - context managers for scoped use, also per patch.
- :func:`is_patched` / :func:`original` - whether a target is wrapped, and its stock object.
- :func:`activity` - what each patch did in this process (``INDUCTOR_FIX_REPORT=FILE``
  appends it, per process, to a job report: :mod:`inductor_fix.report`).
- :class:`InductorFixWarning` - the one warning category this package emits.

Messages go to ``logging.getLogger("inductor_fix")``, also ``TORCH_LOGS="inductor_fix"``.

CLI: ``inductor-fix status | check | run | report`` (also ``python -m inductor_fix ...``).
"""

import _inductor_fix_startup

from ._version import __version__ as __version__

#: The public API (:mod:`inductor_fix._api`'s ``__all__``, the same names: test_api holds them equal).
__all__ = ["InductorFixWarning", "PatchStatus", "State", "Status", "activity", "applied", "apply", "is_patched",
           "original", "remove", "removed", "status"]


def _import_api() -> None:
    from . import _api  # noqa: F401  (it applies the fix as it imports)


def __getattr__(name: str) -> object:
    """The public API, imported at its first use (PEP 562): that import applies the fix, and what
    it raises is raised (asked for: loud). ``import inductor_fix`` itself only starts the package
    (the hooks) and never raises."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _inductor_fix_startup.STARTUP.activate(explicit=True)
    from . import _api  # which set every name of __all__ here as it was imported

    return getattr(_api, name)


_inductor_fix_startup.STARTUP.start("import", _import_api)

TYPE_CHECKING = False  # typing's, without importing typing: `inductor-fix run` pays for every import
if TYPE_CHECKING:  # what __getattr__ returns, as type checkers see it
    from ._api import (InductorFixWarning, PatchStatus, State, Status, activity, applied, apply, is_patched,
                       original, remove, removed, status)
del TYPE_CHECKING
