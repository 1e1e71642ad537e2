"""The package's logger, ``logging.getLogger("inductor_fix")``, as a ``TORCH_LOGS`` name.

``TORCH_LOGS="inductor_fix"`` (or ``+inductor_fix`` for debug messages) shows what
the package does: which choices were realigned, which were excluded and why. torch
parses ``TORCH_LOGS`` when ``import torch`` finishes and rejects names it does not
know, so the name is registered (``torch._logging._internal.register_log``, torch
2.1+) right after ``torch._logging._registrations`` runs, by a post-import hook:
nothing of torch is imported here. If torch is already imported, the name is
registered at once (``torch._logging.set_logs`` then knows it, but ``TORCH_LOGS``
was read already: import this package first, or use ``inductor-fix run``).
"""

from __future__ import annotations

import logging
from types import ModuleType

from . import _hook

__all__ = ["LOGGER_NAME", "install"]

LOGGER_NAME = "inductor_fix"
_REGISTRATIONS = "torch._logging._registrations"


def _register(_module: ModuleType | None = None) -> None:
    try:
        from torch._logging._internal import register_log

        register_log(LOGGER_NAME, LOGGER_NAME)
    except Exception as error:  # a torch without the registry: plain logging still works
        logging.getLogger(LOGGER_NAME).debug("not registered with TORCH_LOGS: %s: %s", type(error).__name__, error)


def install() -> None:
    """Register ``inductor_fix`` with torch's logging now or when torch's registry loads."""
    _hook.when_imported(_REGISTRATIONS, _register)
