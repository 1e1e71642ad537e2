"""What cache-key records when it acts (``inductor_fix.activity()["cache-key"]``)."""

from __future__ import annotations

from ..base import Activity, Kind

__all__ = ["ACTIVITY", "KINDS"]


def _patterns(detail: dict) -> str:
    return " vs ".join(str(tuple(pattern)) for pattern in detail.get("patterns", []))


KINDS = (
    Kind("collisions_prevented",
         "a template's stock codegen-cache key met with a second aliasing pattern: what stock would have replayed",
         lambda d: f"kept {d['template']} apart by aliasing: patterns {_patterns(d)}"),
)
ACTIVITY = Activity("cache-key", KINDS)
