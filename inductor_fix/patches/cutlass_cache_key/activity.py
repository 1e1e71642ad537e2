"""What cutlass-cache-key records when it acts (``inductor_fix.activity()["cutlass-cache-key"]``)."""

from __future__ import annotations

from ..._activity import Activity, Kind
from ..aliasing import patterns_text

__all__ = ["ACTIVITY", "KINDS"]


KINDS = (
    Kind("collisions_prevented",
         "a CUTLASS template's stock code-cache key met with a second aliasing pattern: what stock would have "
         "replayed (a kernel of another arity, called through ctypes)",
         lambda d: f"kept {d['template']} apart by aliasing: patterns {patterns_text(d)}"),
    Kind("subprocess_inputs_deduplicated",
         "a CUTLASS benchmark request, benchmarked in a subprocess, given one tensor per distinct input buffer, as "
         "its kernel takes them (stock passed one per input slot)",
         lambda d: f"CUTLASS {d['kernel']} of {d['template']}: {d['slots']} input slots, {d['buffers']} buffers in "
                   "its subprocess benchmark"),
)
ACTIVITY = Activity("cutlass-cache-key", KINDS)
