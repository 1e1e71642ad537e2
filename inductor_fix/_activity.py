"""What each patch did in this process, as data: counts and the first few details.

Each patch module records into its own :class:`Activity` (``Patch.activity``);
``inductor_fix.activity()`` and ``status()`` read them, and the job report
(``INDUCTOR_FIX_REPORT``) writes them at exit. Every count is also added to
``torch._dynamo.utils.counters["inductor_fix"]``, as before, and with ``TORCH_TRACE``
written as a trace artifact ``inductor_fix_<kind>`` (:mod:`inductor_fix._trace`). Recording happens only
when a patch acts, so a process where nothing needs fixing pays nothing here.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["Activity"]


class Activity:
    """Counts by kind (``"realigned"``, ``"collisions_prevented"`` ...) and up to
    :attr:`DETAILS` distinct details (template, kernel, buffers ...) of what one patch
    did, each with how often it happened."""

    DETAILS = 20

    def __init__(self, patch: str | None = None) -> None:
        #: The patch this records for (``"cache-key"``), named in its trace artifacts.
        self.patch = patch
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.details: list[dict[str, Any]] = []
        self._index: dict[str, dict[str, Any]] = {}

    def add(self, kind: str, count: int = 1, **detail: Any) -> None:
        """Count ``count`` of ``kind``; keep ``detail`` (JSON-able values) while there is room."""
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + count
            if detail:
                key = repr((kind, sorted(detail.items())))
                if key in self._index:
                    self._index[key]["count"] += count
                elif len(self.details) < self.DETAILS:
                    self._index[key] = {"kind": kind, "count": count, **detail}
                    self.details.append(self._index[key])
        utils = sys.modules.get("torch._dynamo.utils")
        if utils is not None:
            utils.counters["inductor_fix"][kind] += count
        from . import _trace

        _trace.artifact(f"inductor_fix_{kind}", {"patch": self.patch, "kind": kind, "count": count, **detail})

    def snapshot(self) -> dict[str, Any]:
        """``{"counts": {...}, "details": [...]}``, a copy."""
        with self._lock:
            return {"counts": dict(self.counts), "details": [dict(d) for d in self.details]}

    def clear(self) -> None:
        with self._lock:
            self.counts.clear()
            self.details.clear()
            self._index.clear()
