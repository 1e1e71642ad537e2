"""What cache-key records when it acts (``inductor_fix.activity()["cache-key"]``)."""

from __future__ import annotations

from ..._activity import Activity, Kind
from ..aliasing import patterns_text

__all__ = ["ACTIVITY", "KINDS"]


KINDS = (
    Kind("collisions_prevented",
         "a template's stock codegen-cache key met with a second aliasing pattern: what stock would have replayed",
         lambda d: f"kept {d['template']} apart by aliasing: patterns {patterns_text(d)}"),
)
ACTIVITY = Activity("cache-key", KINDS)
