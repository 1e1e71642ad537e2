"""``tools/bench arity_guard``: the arity guard's cost per Triton template choice, on the CPU harness.

For every choice ``TritonTemplate.generate`` makes while real max-autotune
compiles run (mm, addmm, bmm, baddbmm, mm_plus_mm, no aliasing so the guard only
checks), time the unguarded ``generate`` (the original, called by the guard) and
the whole guarded call, in the same call. Their ratio, guarded/unguarded, is the
guard's cost relative to generating the choice; their difference its absolute
cost. Runs in a child process so the parent never imports torch.
"""

from __future__ import annotations

import time
from typing import Any

from ...check.parts import BenchPart
from ..._stats import summary

__all__ = ["PART", "add_arguments", "markdown", "run", "worker"]

GOAL_RATIO = 1.01


def add_arguments(parser: Any) -> None:
    parser.add_argument("--reps", type=int, default=3, help="compiles of each op (default 3)")


def run(args: Any, child: Any) -> dict[str, Any]:
    return child([str(args.reps)], {})


def worker(argv: list[str]) -> dict[str, Any]:
    repetitions = int(argv[0])
    import inductor_fix  # noqa: F401  (the cache-key fix stays applied; only the guard is timed)
    import torch
    from inductor_fix.check.harness import triton_cpu_harness
    from inductor_fix.check.operations import TEMPLATE_MATMULS, operation
    from inductor_fix.check.workloads import run_compiles
    from inductor_fix.patches.arity_guard import fix as guard
    from torch._inductor import select_algorithm  # importing it applies the patches
    from torch._inductor.utils import fresh_cache
    from unittest import mock

    original = inductor_fix.original("TritonTemplate.generate")
    inner: list[float] = []
    pairs: list[tuple[float, float]] = []

    def timed_original(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            inner.append(time.perf_counter() - start)

    guarded = guard.guarded_generate(timed_original)

    def timed_guarded(*args: Any, **kwargs: Any) -> Any:
        inner.clear()
        start = time.perf_counter()
        choice = guarded(*args, **kwargs)
        total = time.perf_counter() - start
        if len(inner) == 1 and choice is not None:  # one generation, no regeneration
            pairs.append((total, inner[0]))
        return choice

    with mock.patch.object(select_algorithm.TritonTemplate, "generate", timed_guarded), triton_cpu_harness():
        for _ in range(repetitions):
            for op in TEMPLATE_MATMULS:  # non-aliased: nothing for the patch to fix
                with fresh_cache():
                    steps = run_compiles(operation(op), (False,), "cpu", compare=False)
                assert steps[0].error is None, steps[0].error
    ratios = [total / unguarded for total, unguarded in pairs]
    overhead_us = [(total - unguarded) * 1e6 for total, unguarded in pairs]
    return {
        "kind": "arity_guard",
        "torch": torch.__version__,
        "choices": len(pairs),
        "generate_ms": summary([u * 1e3 for _, u in pairs]),
        "overhead_us": summary(overhead_us),
        "ratio": summary(ratios),
        "total_ratio": sum(t for t, _ in pairs) / sum(u for _, u in pairs),
        "goal_ratio": GOAL_RATIO,
    }


def markdown(data: dict[str, Any]) -> str:
    ratio, overhead, generate = data["ratio"], data["overhead_us"], data["generate_ms"]
    return "\n".join(
        [
            f"Arity guard cost, CPU harness, torch {data['torch']}, {data['choices']} template choices "
            f"(`{data['command']}`):",
            "",
            "| measured | median [IQR] |",
            "|---|---|",
            f"| unguarded `TritonTemplate.generate`, ms per choice | {generate['median']:.2f} "
            f"[{generate['q1']:.2f}-{generate['q3']:.2f}] |",
            f"| guard's added time, µs per choice | {overhead['median']:.1f} "
            f"[{overhead['q1']:.1f}-{overhead['q3']:.1f}] |",
            f"| ratio guarded/unguarded per choice (goal ≤ {data['goal_ratio']}) | {ratio['median']:.4f} "
            f"[{ratio['q1']:.4f}-{ratio['q3']:.4f}] |",
            f"| ratio over all choices (sum/sum) | {data['total_ratio']:.4f} |",
        ]
    )


PART = BenchPart(help="the arity guard's cost per template choice, CPU harness (~1 min)",
                 add_arguments=add_arguments, run=run, worker=worker, markdown=markdown)
