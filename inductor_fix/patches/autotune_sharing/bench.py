"""``tools/bench autotune_sharing``: what finding a key's family costs per ``make_key`` call, on the CPU.

In a child process: compile ``bmm(x, x)`` then ``bmm(a, b)`` under the CPU harness with the
package applied, recording every ``make_key`` call (how many, how many distinct keys: the
family of a key is computed once, by one more call of the release's ``make_key``); then time
the ``make_key`` slot with this patch's wrapper against what it wraps (cache-key's wrapper, or
the release's ``make_key``) in alternating short ``timeit`` samples (ABBA), on the recorded
arguments of the first cacheable call, distinct inputs and aliased: a key met before, as every
key but a choice's first is. Also a family computed afresh (the first sight of a key that is
not its own family: every key where a wrapper keys aliasing, an aliased one where the release
does).
Goal: patched/unwrapped per call ≤ 1.05.

For ``tools/bench compile``: the ``unshared`` variant (this patch removed: a later aliasing
pattern's choices are precompiled and benchmarked again, as stock 2.15.0 and cache-key alone
have them).
"""

from __future__ import annotations

import contextlib
import timeit
from typing import Any

from ...check.parts import BenchPart
from ..._stats import paired_ratios, span, summary

__all__ = ["GOAL_RATIO", "PART", "add_arguments", "markdown", "run", "worker"]

GOAL_RATIO = 1.05


def add_arguments(parser: Any) -> None:
    parser.add_argument("--rounds", type=int, default=200, help="alternating timeit rounds (default 200)")
    parser.add_argument("--sample-seconds", type=float, default=0.005, help="length of one sample (default 0.005)")


def run(args: Any, child: Any) -> dict[str, Any]:
    """:func:`worker` in a fresh process (the package applied as installed)."""
    return child([str(args.rounds), str(args.sample_seconds)], {})


def _recorded_calls() -> list[tuple[Any, tuple, dict]]:
    """``(cache, args, kwargs)`` of every ``make_key`` call of ``bmm(x, x)`` then ``bmm(a, b)``
    compiled under the CPU harness, in a fresh Inductor cache."""
    from unittest import mock

    from torch._inductor import select_algorithm
    from torch._inductor.utils import fresh_cache

    from ...check.harness import triton_cpu_harness
    from ...check.operations import operation
    from ...check.workloads import run_compiles

    calls: list[tuple[Any, tuple, dict]] = []
    slot = select_algorithm.GeneratedCodeCache.__dict__["make_key"]

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((self, args, kwargs))
        return slot(self, *args, **kwargs)

    with fresh_cache(), triton_cpu_harness(autotune_local_cache=True), \
            mock.patch.object(select_algorithm.GeneratedCodeCache, "make_key", recording):
        steps = run_compiles(operation("bmm"), (True, False), "cpu", compare=False)
    if any(step.error for step in steps):
        raise SystemExit(f"the bmm sequence failed: {[step.error for step in steps]}")
    return calls


def _alternate(functions: dict[str, Any], call: tuple, kwargs: dict, rounds: int,
               seconds_per_sample: float) -> dict[str, Any]:
    """ns per call of ``functions`` ("unwrapped", "patched"), in alternating short samples."""
    timers = {name: timeit.Timer("function(*call, **kwargs)",
                                 globals={"function": function, "call": call, "kwargs": kwargs})
              for name, function in functions.items()}
    number, _ = timers["unwrapped"].autorange()  # calls for >= 0.2 s
    number = max(1, int(number * seconds_per_sample / 0.2))
    ns: dict[str, list[float]] = {name: [] for name in functions}
    for i in range(rounds):
        for name in ("unwrapped", "patched") if i % 2 == 0 else ("patched", "unwrapped"):
            ns[name].append(timers[name].timeit(number) / number * 1e9)
    return {"unwrapped_ns": summary(ns["unwrapped"]), "patched_ns": summary(ns["patched"]),
            "ratio": paired_ratios(ns["patched"], ns["unwrapped"]),
            "added_ns": summary([p - u for p, u in zip(ns["patched"], ns["unwrapped"])])}


def worker(argv: list[str]) -> dict[str, Any]:
    rounds, seconds_per_sample = int(argv[0]), float(argv[1])
    import inspect

    import torch
    from torch._inductor import select_algorithm

    import inductor_fix

    from . import PATCH, fix

    state = inductor_fix.status().patch(PATCH.name).state
    if str(state) != "applied":
        raise SystemExit(f"{PATCH.name} is {state} here: nothing to measure")
    calls = _recorded_calls()
    patched = select_algorithm.GeneratedCodeCache.__dict__["make_key"]
    unwrapped = patched.__wrapped__  # what this patch wraps (functools.wraps)
    keys = [patched(cache, *args, **kwargs) for cache, args, kwargs in calls]
    cacheable = [(call, key) for call, key in zip(calls, keys) if key is not None]
    index = list(inspect.signature(patched).parameters)[1:].index("input_nodes")
    # A key that is not its own family cost one more call of the release's make_key when first met.
    second_calls = {key for (cache, _, _), key in cacheable if fix._families.get((id(cache), key)) != key}
    result: dict[str, Any] = {"kind": "autotune_sharing", "torch": torch.__version__, "rounds": rounds,
                              "calls": len(calls), "cacheable": len(cacheable),
                              "distinct_keys": len({key for _, key in cacheable}), "second_calls": len(second_calls),
                              "cases": {}}
    by_pattern: dict[str, tuple[Any, tuple, dict]] = {}
    for (cache, args, kwargs), _ in cacheable:
        nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else args[index]
        pattern = "aliased" if len({node.get_name() for node in nodes}) < len(nodes) else "distinct"
        by_pattern.setdefault(pattern, (cache, args, kwargs))
    for pattern, (cache, args, kwargs) in sorted(by_pattern.items(), reverse=True):
        result["cases"][pattern] = _alternate({"unwrapped": unwrapped, "patched": patched}, (cache, *args), kwargs,
                                              rounds, seconds_per_sample)
    cache, args, kwargs = next(iter(by_pattern.values()))
    family = fix.family_key(unwrapped, index)
    timer = timeit.Timer("family(cache, *args, **kwargs)",
                         globals={"family": family, "cache": cache, "args": args, "kwargs": kwargs})
    number, _ = timer.autorange()
    result["first_sight_ns"] = summary([timer.timeit(number) / number * 1e9 for _ in range(max(5, rounds // 20))])
    return result


def markdown(data: dict[str, Any]) -> str:
    cases = data["cases"]
    rows = [f"| {name} | {case['unwrapped_ns']['median'] / 1e3:.1f} | {case['patched_ns']['median'] / 1e3:.1f} | "
            f"{span(case['ratio'])} |" for name, case in cases.items()]
    met = all(case["ratio"]["median"] <= GOAL_RATIO for case in cases.values())
    return "\n".join([
        f"`GeneratedCodeCache.make_key` with autotune-sharing's family lookup vs without, torch {data['torch']}, "
        f"{data['rounds']} alternating rounds (`{data['command']}`):", "",
        "| inputs (a key met before) | without µs | with µs | with/without per round, median [spread] |",
        "|---|---|---|---|", *rows, "",
        f"Goal with/without ≤ {GOAL_RATIO}: {'met' if met else 'NOT met'}. The first sight of a key that is not "
        f"its own family adds one call of the release's `make_key` with the inputs renamed apart: "
        f"{span(data['first_sight_ns'], 0)} ns; in `bmm(x, x)` then `bmm(a, b)`, {data['second_calls']} such keys "
        f"of {data['distinct_keys']} distinct in {data['cacheable']} cacheable calls of {data['calls']}.",
    ])


@contextlib.contextmanager
def _unshared() -> Any:
    """This patch removed for the run: a later aliasing pattern's choices are precompiled and
    benchmarked again (stock 2.15.0; 2.9-2.14 with cache-key alone, as 0.1.0 shipped it)."""
    import inductor_fix

    from . import PATCH

    with inductor_fix.removed(PATCH.name):
        yield


PART = BenchPart(
    help="make_key with and without the family lookup, per call (~1 min)",
    add_arguments=add_arguments, run=run, worker=worker, markdown=markdown,
    # Besides patched, stock and the workaround: autotuning not shared.
    compile_variants={"unshared": _unshared},
)
