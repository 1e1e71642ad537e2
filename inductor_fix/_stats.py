"""Median and spread of a few samples, and ratios of paired samples."""

from __future__ import annotations

import statistics
from typing import Sequence

__all__ = ["paired_ratios", "summary", "span"]


def summary(values: Sequence[float]) -> dict[str, float]:
    """``n``, ``median``, ``min``, ``max`` and the quartiles ``q1``/``q3`` (equal to min/max below 4 samples)."""
    values = sorted(values)
    if not values:
        return {"n": 0}
    q1, q3 = (statistics.quantiles(values, n=4)[::2] if len(values) >= 4 else (values[0], values[-1]))
    return {
        "n": len(values),
        "median": statistics.median(values),
        "min": values[0],
        "max": values[-1],
        "q1": q1,
        "q3": q3,
    }


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> dict[str, float]:
    """Summary of ``numerator[i] / denominator[i]``: sample i of both was measured in the
    same round, so drift between rounds cancels in each ratio."""
    return summary([n / d for n, d in zip(numerators, denominators) if d])


def span(s: dict[str, float], digits: int = 3) -> str:
    """``median [min-max]`` as text, with the quartiles too from 10 samples on
    (where one disturbed sample would make min-max say little); ``-`` without samples."""
    if not s.get("n"):
        return "-"
    f = f"{{:.{digits}f}}".format
    if s["n"] >= 10:
        return f"{f(s['median'])} [IQR {f(s['q1'])}-{f(s['q3'])}; min-max {f(s['min'])}-{f(s['max'])}]"
    return f"{f(s['median'])} [{f(s['min'])}-{f(s['max'])}]"
