"""What benchmark-realign records when it acts (``inductor_fix.activity()["benchmark-realign"]``)."""

from __future__ import annotations

from ..._activity import Activity, Kind

__all__ = ["ACTIVITY", "KINDS"]

KINDS = (
    Kind("realigned", "a template choice benchmarked with its kernel's own inputs instead of the selection's",
         lambda d: (f"{d['count']} choice(s) of {d['kernel']} benchmarked with {', '.join(d['kernel_inputs'])} "
                    f"(captured {', '.join(d['captured'])})")),
    Kind("selections_realigned", "a selection in which some choice was realigned",
         lambda d: "a selection realigned"),
    Kind("realized", "a selection input that selection cannot key (unrealized), realized first",
         lambda d: f"realized {', '.join(d['buffers'])} for {d['selection']}"),
    Kind("frozen", "a selection input left in a FlexibleLayout, its layout frozen",
         lambda d: f"froze the layout of {', '.join(d['buffers'])} for {d['selection']}"),
)
ACTIVITY = Activity("benchmark-realign", KINDS)
