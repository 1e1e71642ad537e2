"""The public API of :mod:`inductor_fix`, which the package re-exports (its ``__all__`` is this
module's); importing this module applies the fix (the package's docstring says how and when): it
is what :meth:`_inductor_fix_startup.Startup.activate` imports."""

import sys

from . import _report_writer
from ._lifecycle import LIFECYCLE
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
        _report_writer.enable()
        LIFECYCLE.request()
    except Exception as error:  # never raise at import
        from ._warnings import warn_once

        warn_once(f"inductor_fix: not applied, unexpected error: {type(error).__name__}: {error}")


_apply_at_import()
del _apply_at_import
# The package re-exports each name here from now on: set, not left to its __getattr__, because
# importing the submodule inductor_fix.status bound the package's attribute `status` to that module.
vars(sys.modules[__package__]).update({name: globals()[name] for name in __all__})
