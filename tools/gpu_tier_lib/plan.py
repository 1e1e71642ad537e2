"""What a GPU tier run will cost, from the seconds the last runs recorded: the order tests start
in, the projected wall time (of that order as pytest-xdist schedules it: :mod:`.schedule`), and
what to cut when it cannot fit.

The record (``docs/bench/gpu-tier.json``): for each form of the tier (``all``, ``tier``, ``clients``), the
settings its last run ran under, its wall time and workers, and each test's seconds; ``before``: each test's
seconds in the last run under other settings (2026-12-03: every config autotuned, Inductor's compile
pool), which orders a test that has no seconds of its own yet. Seconds recorded under other
settings never enter a projection: a test without seconds of these settings is *unmeasured*, and
a projection with unmeasured tests is a lower bound. A form's tests are measured by its own last run
first, then by the other forms' (``all`` holds the tests of ``tier`` and ``clients``), so the whole
proof is projected from its parts' runs until it has run itself.
"""

from __future__ import annotations

import heapq
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

from . import schedule

__all__ = ["Projection", "cut_to_fit", "load", "order", "order_key", "project", "record", "save"]

#: A run's wall time beyond its tests' (collection, starting the workers) where no run recorded it.
DEFAULT_OVERHEAD = 60.0


class Projection(NamedTuple):
    """``seconds``: the projected wall time of the measured tests on ``workers`` workers, longest first,
    plus the run's ``overhead``; ``unmeasured``: the tests with no seconds under these settings."""

    seconds: float
    workers: int
    unmeasured: tuple[str, ...]

    def describe(self, budget: float) -> str:
        bound = "at least " if self.unmeasured else ""
        text = f"projected {bound}{self.seconds:.0f} s on {self.workers} workers (budget {budget:g} s)"
        if self.unmeasured:
            text += f"; {len(self.unmeasured)} tests have no seconds recorded under these settings"
        return text


def load(path: Path) -> dict[str, Any]:
    """The record at ``path`` (an empty one where there is none). A file of the first format, one
    mapping of test to seconds, reads as ``before``."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    if data and all(isinstance(value, (int, float)) for value in data.values()):
        return {"before": data}
    return data


def save(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _seconds(data: Mapping[str, Any], form: str, settings: str) -> dict[str, float]:
    entry = data.get(form) or {}
    return dict(entry.get("seconds", {})) if entry.get("settings") == settings else {}


def measured(data: Mapping[str, Any], form: str, settings: str) -> dict[str, float]:
    """Each test's seconds under ``settings``: from ``form``'s own last run, else from the latest
    other form's run that finished it (a test runs alike in each form that selects it); none under
    other settings."""
    others = sorted((name for name in data if name not in ("before", form)), key=lambda n: data[n].get("run", 0))
    merged: dict[str, float] = {}
    for name in others:
        merged.update(_seconds(data, name, settings))
    return {**merged, **_seconds(data, form, settings)}


def order_key(data: Mapping[str, Any], form: str, settings: str) -> dict[str, float]:
    """Seconds to order tests by, longest first: this form's under ``settings``, else ``before``."""
    return {**data.get("before", {}), **measured(data, form, settings)}


def _makespan(seconds: Iterable[float], workers: int) -> float:
    """Wall time of ``seconds`` of tests on ``workers`` workers, each next test (longest first) given
    to the worker that is free first."""
    loads = [0.0] * max(1, workers)
    for duration in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + duration)
    return max(loads)


def order(selected: list[str], data: Mapping[str, Any], form: str, settings: str, workers: int) -> list[str]:
    """The order to hand pytest: :func:`schedule.layout` of ``selected`` by :func:`order_key`."""
    return schedule.layout(selected, order_key(data, form, settings), workers)


def project(selected: list[str], data: Mapping[str, Any], form: str, settings: str, workers: int) -> Projection:
    """The projected wall time of running ``selected`` on ``workers`` workers, in :func:`order`."""
    seconds = measured(data, form, settings)
    entry = data.get(form) or {}
    overhead = entry.get("overhead", DEFAULT_OVERHEAD) if _seconds(data, form, settings) else DEFAULT_OVERHEAD
    wall = schedule.makespan(order(selected, data, form, settings, workers), seconds, workers)
    return Projection(wall + overhead, workers, tuple(n for n in selected if n not in seconds))


def cut_to_fit(selected: list[str], data: Mapping[str, Any], form: str, settings: str, workers: int,
               budget: float) -> list[str]:
    """The fewest longest tests whose removal brings the projection within ``budget`` (all of them if
    even the overhead does not fit)."""
    seconds = measured(data, form, settings)
    remaining = sorted(selected, key=lambda n: -seconds.get(n, 0.0))
    cut: list[str] = []
    while remaining and project(remaining, data, form, settings, workers).seconds > budget:
        cut.append(remaining.pop(0))
    return cut


def overhead_of(wall: float, workers: int, results: list[dict], complete: bool = True) -> float:
    """The part of a run's ``wall`` time its tests did not take: collecting, starting the workers,
    writing the tables. For a run cut before every test finished (not ``complete``),
    :data:`DEFAULT_OVERHEAD`: a test still running at the end leaves its time out of every finished
    test's seconds and span. Otherwise, where the results say when each test started and stopped,
    the wall time outside the span from the first start to the last stop; else the wall time beyond
    the projection of their seconds (which also holds any time lost to the order they ran in)."""
    if not complete:
        return DEFAULT_OVERHEAD
    spans = [(r["start"], r["stop"]) for r in results if "start" in r and "stop" in r]
    if spans and len(spans) == sum("seconds" in r for r in results):
        return max(0.0, wall - (max(stop for _, stop in spans) - min(start for start, _ in spans)))
    return max(0.0, wall - _makespan([r["seconds"] for r in results if "seconds" in r], workers))


def record(data: dict[str, Any], form: str, settings: str, workers: int, wall: float,
           results: list[dict], complete: bool = True) -> dict[str, Any]:
    """``data`` with ``form``'s entry replaced by this run's: its settings, workers, wall time, each
    finished test's seconds, its overhead (:func:`overhead_of`; ``complete``: every selected test
    finished) and its place among the recorded runs (``run``, which the latest of which wins in
    :func:`measured`)."""
    seconds = {r["nodeid"]: round(r["seconds"], 1) for r in results if "seconds" in r}
    overhead = overhead_of(wall, workers, results, complete)
    latest = max((entry.get("run", 0) for name, entry in data.items() if name != "before"), default=0)
    return {**data, form: {"settings": settings, "workers": workers, "wall": round(wall, 1), "run": latest + 1,
                           "overhead": round(overhead, 1), "seconds": dict(sorted(seconds.items()))}}
