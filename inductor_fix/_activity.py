"""What each patch did in this process, as data: counts and the first few details.

Each patch declares the kinds of thing it does (:class:`Kind`: a name, what one count
means, and the one line a detail reads as) and records into its own :class:`Activity`
(``Patch.activity``). Everything that shows activity renders it through the kind:
``inductor_fix.activity()`` and ``status()`` read the counts, the job report
(``INDUCTOR_FIX_REPORT``) writes them at exit and ``inductor-fix report`` prints each
detail's line, the ``inductor_fix`` logger logs it (debug), and with ``TORCH_TRACE`` it is
written as a trace artifact ``inductor_fix_<kind>`` (:mod:`inductor_fix._trace`). Every
count is also added to ``torch._dynamo.utils.counters["inductor_fix"]``. Recording happens
only when a patch acts, so a process where nothing needs fixing pays nothing here.

Each detail also names the op Inductor was lowering when the patch acted (``"op":
"aten.bmm"``, ``"flex_attention"``; absent outside a lowering, as in a benchmark deferred to
scheduling), and every line says it: which template and which op, never a placeholder.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, Callable, NamedTuple

__all__ = ["Activity", "Kind", "lowering_op"]

log = logging.getLogger("inductor_fix")


class Kind(NamedTuple):
    """One kind of thing a patch does: ``name`` (a short identifier), what one count
    of it is (``meaning``, for docs and ``--help``), and ``line(detail)``: the one line a
    recorded detail (a dict of JSON-able values) reads as, everywhere it is shown.
    ``needed``: a count of it shows the fix was needed (without it, stock would have
    crashed or replayed a kernel built for other inputs); False for what only saves cost
    (the fix's own, or stock's), which the job report does not count as needing the fix."""

    name: str
    meaning: str
    line: Callable[[dict[str, Any]], str]
    needed: bool = True


class Activity:
    """Counts by kind and up to :attr:`DETAILS` distinct details (template, kernel, buffers
    ...) of what one patch did, each with how often it happened."""

    DETAILS = 20

    def __init__(self, patch: str, kinds: tuple[Kind, ...] = ()) -> None:
        #: The name of the patch this records for, named in its trace artifacts.
        self.patch = patch
        #: name -> :class:`Kind`: every kind the patch may record.
        self.kinds = {kind.name: kind for kind in kinds}
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.details: list[dict[str, Any]] = []
        self._index: dict[str, dict[str, Any]] = {}

    def line(self, detail: dict[str, Any]) -> str:
        """The one line ``detail`` (with its ``"kind"``) reads as, with the op it was recorded in
        (``"... (op aten.bmm)"``); a kind the patch did not declare, or a detail its kind cannot
        read, reads as its kind's name."""
        name = detail.get("kind")
        kind = self.kinds.get(name) if isinstance(name, str) else None  # another version's line may hold anything
        try:
            text = kind.line(detail) if kind is not None else str(detail.get("kind"))
        except Exception:  # a detail from another version's report: still say what it was
            text = str(detail.get("kind"))
        return f"{text} (op {detail['op']})" if isinstance(detail.get("op"), str) else text

    def add(self, kind: str, count: int = 1, **detail: Any) -> None:
        """Count ``count`` of ``kind``; keep ``detail`` (JSON-able values), with the op being
        lowered (:func:`lowering_op`) unless it names one, while there is room."""
        if detail and "op" not in detail and (op := lowering_op()) is not None:
            detail["op"] = op
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
        text = self.line({"kind": kind, "count": count, **detail})
        log.debug("inductor_fix: %s: %s", self.patch, text)
        from . import _trace

        _trace.artifact(f"inductor_fix_{kind}", {"patch": self.patch, "kind": kind, "count": count, "line": text,
                                                  **detail})

    def snapshot(self) -> dict[str, Any]:
        """``{"counts": {...}, "details": [...]}``, a copy."""
        with self._lock:
            return {"counts": dict(self.counts), "details": [dict(d) for d in self.details]}

    def clear(self) -> None:
        with self._lock:
            self.counts.clear()
            self.details.clear()
            self._index.clear()


def lowering_op() -> str | None:
    """The op Inductor is lowering in this thread: the target of its graph's ``current_node``
    (``torch/_inductor/graph.py``, ``GraphLowering.run_node``) by name (``"aten.bmm"``, not an
    overload; ``"flex_attention"``); None outside a lowering. Imports nothing of torch."""
    virtualized = sys.modules.get("torch._inductor.virtualized")
    try:
        target = getattr(virtualized.V.graph.current_node, "target", None)  # type: ignore[union-attr]
    except Exception:  # no graph handler (a NullHandler has no node), no Inductor
        return None
    if target is None:
        return None
    name = str(getattr(target, "overloadpacket", target))  # aten.bmm.default -> aten.bmm
    return getattr(target, "__name__", None) if name.startswith("<") else name
