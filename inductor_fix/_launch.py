"""Facts about Inductor's Triton launches that the fix and ``check``'s CPU harness share.

Source: ``torch/_inductor/runtime/triton_heuristics.py`` (the launcher Inductor generates for
each compiled kernel), torch 2.7-2.15.
"""

from __future__ import annotations

__all__ = ["GRID_VALUES"]

#: Triton launches take the grid as three trailing positional values.
GRID_VALUES = 3
