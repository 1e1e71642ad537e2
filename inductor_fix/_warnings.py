"""The one warning category this package emits, and warn-once bookkeeping."""

from __future__ import annotations

import logging
import threading
import warnings

__all__ = ["InductorFixWarning", "warn_once"]


class InductorFixWarning(RuntimeWarning):
    """Emitted when ``inductor_fix`` leaves Inductor unpatched for a reason a user should see.

    Raised as a warning only, never as an exception: the package never raises at
    import. Filter it with ``warnings.filterwarnings("ignore", category=InductorFixWarning)``.
    """


_seen: set[str] = set()
_seen_lock = threading.Lock()


def warn_once(message: str, *, stacklevel: int = 2, origin: str | None = None) -> bool:
    """Emit ``message`` as an :class:`InductorFixWarning` the first time it is seen.

    ``origin`` (``"$INDUCTOR_FIX_DISABLE"``) names what caused it when no line of code did,
    as the warning's file name (line 0): a warning about the environment would otherwise be
    shown against whichever line happened to import the package. Returns True if the
    warning was emitted. Deduplication is per process and per
    exact message, independent of the ``warnings`` module's own registry (which is
    per call site and reset by ``warnings.simplefilter``). Never raises: where
    warnings are errors, the message goes to the ``inductor_fix`` logger instead.
    """
    with _seen_lock:
        if message in _seen:
            return False
        _seen.add(message)
    try:
        if origin is None:
            warnings.warn(message, InductorFixWarning, stacklevel=stacklevel + 1)
        else:
            warnings.warn_explicit(message, InductorFixWarning, origin, 0, module="inductor_fix")
    except Warning:
        # Warnings turned into errors (-W error, filterwarnings=error) must not make
        # the package raise at import or inside torch's own import: log it instead.
        logging.getLogger("inductor_fix").warning("%s", message)
    return True
