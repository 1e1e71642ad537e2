"""What cache-key records when it acts (``inductor_fix.activity()["cache-key"]``)."""

from __future__ import annotations

from ..._activity import Activity, Kind
from ..aliasing import patterns_text

__all__ = ["ACTIVITY", "KINDS"]


KINDS = (
    Kind("collisions_prevented",
         "a template's stock codegen-cache key met with a second aliasing pattern: what stock would have replayed",
         lambda d: f"kept {d['template']} apart by aliasing: patterns {patterns_text(d)}"),
    Kind("autotuning_shared",
         "a later aliasing pattern's template code that answers to its family's first code in the autotune cache",
         lambda d: f"{d['template']}: a later aliasing pattern's choice shares its family's autotuning",
         needed=False),  # the fix's own cost saved: stock had nothing to save
)
ACTIVITY = Activity("cache-key", KINDS)
