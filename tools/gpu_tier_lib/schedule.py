"""How pytest-xdist hands a run's tests to its workers, and the order that makes it run the longest
first, each long test on a worker of its own.

``pytest -n WORKERS --dist load --maxschedchunk 1`` (pytest-xdist 3.3+, ``LoadScheduling``): with at
least two tests per worker, each worker is first sent two consecutive tests of the collection order,
worker ``i`` the tests ``2i`` and ``2i + 1``; then, as a worker finishes a test and holds fewer than
``max(2, pending // workers // 4)``, it is sent more, one at a time (``--maxschedchunk 1``), from the
front of what is left. A worker runs what it was sent in order, so a test sent to it waits behind the
one it is running. With fewer than two tests per worker they are dealt round robin.

So the longest-first order alone pairs the two longest tests on one worker, one behind the other
(the 2026-12-06 run of the whole proof: the first worker got two clients of five minutes each, a
third worker the two CUTLASS tests of six; two tests never finished). :func:`layout` puts one of the
shortest tests behind each of the longest, and :func:`makespan` simulates the scheduling above, so
that the projection is the wall time of the order pytest will really run.
"""

from __future__ import annotations

import heapq
from typing import Mapping, NamedTuple, Sequence

__all__ = ["PYTEST_ARGS", "Run", "layout", "makespan", "simulate"]

#: What pytest is run with for the scheduling this module simulates.
PYTEST_ARGS = ("--dist", "load", "--maxschedchunk", "1")


class Run(NamedTuple):
    """One test's run in a simulated schedule: its worker (0-based), its start and stop (seconds)."""

    worker: int
    start: float
    stop: float


def layout(selected: Sequence[str], seconds: Mapping[str, float], workers: int) -> list[str]:
    """``selected`` in the order to hand pytest: longest first by ``seconds`` (tests without seconds
    before all, as the longest may be among them), and where each worker is first sent two tests,
    one of the shortest behind each of the ``workers`` longest; with fewer than two tests a worker,
    which pytest-xdist deals round robin, the ``workers`` longest in reverse, so that each of the
    rest, longest first, follows the shortest of them. Where plain longest-first simulates shorter
    (a few tests of like length, no short ones to put behind them), that order."""
    unknown = max(seconds.values(), default=0.0) + 1.0
    ranked = sorted(selected, key=lambda name: -seconds.get(name, unknown))
    if len(ranked) < 2 * workers:  # dealt round robin: the longest of the rest joins the shortest head
        return ranked[:workers][::-1] + ranked[workers:]
    heads, rest = ranked[:workers], ranked[workers:]
    tails = rest[::-1][:workers]
    behind = set(tails)
    paired = [name for pair in zip(heads, tails) for name in pair] + [name for name in rest if name not in behind]
    guessed = {name: seconds.get(name, unknown) for name in ranked}
    return min((paired, ranked), key=lambda order: makespan(order, guessed, workers))


def simulate(order: Sequence[str], seconds: Mapping[str, float], workers: int) -> dict[str, Run]:
    """Each test of ``order`` run as pytest-xdist schedules it (the module's docstring), each taking its
    ``seconds`` (a test without seconds: none): on which worker, from when to when."""
    duration = [float(seconds.get(name, 0.0)) for name in order]
    workers = max(1, workers)
    queues: list[list[int]] = [[] for _ in range(workers)]
    pending = list(range(len(order)))
    if len(pending) < 2 * workers:
        for position, index in enumerate(pending):
            queues[position % workers].append(index)
        pending = []
    else:
        for worker in range(workers):
            queues[worker], pending = pending[:2], pending[2:]
    runs: dict[str, Run] = {}
    running = []
    for worker, queue in enumerate(queues):
        if queue:
            runs[order[queue[0]]] = Run(worker, 0.0, duration[queue[0]])
            running.append((duration[queue[0]], worker))
    heapq.heapify(running)
    while running:
        now, worker = heapq.heappop(running)
        queue = queues[worker]
        finished = duration[queue.pop(0)]
        # a worker still holding two tests after a long one waits (LoadScheduling.check_schedule)
        if pending and len(queue) < max(2, len(pending) // workers // 4) and not (finished >= 0.1 and len(queue) >= 2):
            wanted = max(2, len(pending) // workers // 2) - len(queue)
            sent = min(wanted, max(2 - len(queue), 1))
            queue.extend(pending[:sent])
            del pending[:sent]
        if queue:
            runs[order[queue[0]]] = Run(worker, now, now + duration[queue[0]])
            heapq.heappush(running, (now + duration[queue[0]], worker))
    return runs


def makespan(order: Sequence[str], seconds: Mapping[str, float], workers: int) -> float:
    """The wall time of running ``order`` as pytest-xdist schedules it (:func:`simulate`); a lower
    bound where a test has no ``seconds``."""
    return max((run.stop for run in simulate(order, seconds, workers).values()), default=0.0)
