"""Facts about Inductor's Triton launches that the fix and ``check``'s CPU harness share.

Source: ``torch/_inductor/runtime/triton_heuristics.py`` (the launcher Inductor generates for
each compiled kernel), torch 2.7-2.15.
"""

from __future__ import annotations

__all__ = ["GRID_VALUES", "LAUNCHER_ERRORS"]

#: Triton launches take the grid as three trailing positional values.
GRID_VALUES = 3

#: How a launch of a Triton kernel given arguments of another count fails, every form 2.8-2.15
#: has (regular expressions of ``Type: message``): the generated ``def launcher(<kernel args>,
#: _grid_0, _grid_1, _grid_2, stream)`` given one argument too many (``stream`` twice) or more
#: (``takes N positional arguments``), too few (``missing 1``, ``2`` or more ``required positional
#: arguments``: ``'_grid_2'``, ``'_grid_1' and '_grid_2'``); 2.13+'s ``_check_launcher_call_args``
#: (``too many positional arguments - expected N, got M``). The Triton patches' stock crash.
LAUNCHER_ERRORS: tuple[str, ...] = (
    r"TypeError: .*launcher\(\) got multiple values for argument 'stream'",
    r"TypeError: .*launcher\(\) missing \d+ required positional arguments?: ",
    r"TypeError: .*launcher\(\) takes \d+ positional arguments? but \d+ (were|was) given",
    r"TypeError: .*too many positional arguments - expected \d+, got \d+",
)
