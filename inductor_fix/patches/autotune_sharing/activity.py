"""What autotune-sharing records when it acts (``inductor_fix.activity()["autotune-sharing"]``)."""

from __future__ import annotations

from ..._activity import Activity, Kind

__all__ = ["ACTIVITY", "KINDS"]

KINDS = (
    Kind("autotuning_shared",
         "a later aliasing pattern's template code that answers to its family's first code in the autotune cache: "
         "its choice neither precompiled nor benchmarked again",
         lambda d: f"{d['template']}: a later aliasing pattern's choice shares its family's autotuning",
         needed=False),  # cost saved (stock 2.15's, or cache-key's): nothing would have crashed without it
)
ACTIVITY = Activity("autotune-sharing", KINDS)
