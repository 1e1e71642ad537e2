"""``tools/bench benchmark_realign``: the realignment's cost at the selection seam when nothing
needs realigning.

During real max-autotune compiles of mm, addmm, bmm and baddbmm (no aliasing) every
call of the installed ``AlgorithmSelectorCache.benchmark_in_current_process`` is
timed whole (grouping plus Inductor's benchmarking of every choice), and afterwards
its grouping (``benchmark_realign.group_choices`` on the same choices and input
nodes, the work the patch adds when nothing needs realigning; it records no
activity then) is timed alone, ``--rounds`` times. Reports µs per choice of the
grouping and its share of the selection's time (goals: ≤ 20 µs per choice, ≤ 1 %).
On CPU the harness makes launches free, so the share there is an upper bound; the
GPU run is the real one.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from ...check.parts import BenchPart
from ..._stats import span, summary

__all__ = ["PART", "add_arguments", "markdown", "out_name", "run", "worker"]

PER_CHOICE_GOAL_US = 20.0
SHARE_GOAL = 0.01


def add_arguments(parser: Any) -> None:
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu: under the Triton-on-CPU harness")
    parser.add_argument("--rounds", type=int, default=200, help="timings of each selection's grouping (default 200)")


def out_name(args: Any) -> str:
    return f"benchmark_realign-{args.device}.json"


def run(args: Any, child: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench_seam_") as cache:  # a cold Inductor cache
        return child([args.device, str(args.rounds)], {"TORCHINDUCTOR_CACHE_DIR": cache})


def worker(argv: list[str]) -> dict[str, Any]:
    device, rounds = argv[0], int(argv[1])
    import contextlib
    import timeit
    from unittest import mock

    import inductor_fix
    import torch
    from inductor_fix.check.harness import triton_cpu_harness
    from inductor_fix.check.operations import TEMPLATE_MATMULS, operation
    from inductor_fix.check.workloads import run_compiles
    from inductor_fix.patches.benchmark_realign import fix as realign
    from torch._inductor import select_algorithm
    from torch._inductor.utils import fresh_cache

    selector = select_algorithm.AlgorithmSelectorCache
    installed = selector.__dict__["benchmark_in_current_process"].__func__
    calls: list[tuple[Any, Any, Any, float]] = []

    def timed(cls: Any, choices: Any, input_nodes: Any, layout: Any, input_gen_fns: Any, *args: Any, **kwargs: Any):
        start = time.perf_counter()
        try:
            return installed(cls, choices, input_nodes, layout, input_gen_fns, *args, **kwargs)
        finally:
            calls.append((list(choices), list(input_nodes), input_gen_fns, time.perf_counter() - start))

    assert inductor_fix.is_patched("AlgorithmSelectorCache.benchmark_in_current_process")
    harness = triton_cpu_harness() if device == "cpu" else contextlib.nullcontext()
    with mock.patch.object(selector, "benchmark_in_current_process", classmethod(timed)), harness:
        for op in TEMPLATE_MATMULS:
            with fresh_cache():
                steps = run_compiles(operation(op), (False,), device, compare=False)
            assert steps[0].error is None, steps[0].error
    per_choice_us, shares, choices_seen = [], [], 0
    def unused(node: Any) -> Any:  # the zero-filled tensor of a captured buffer: a matmul has none
        raise AssertionError(f"a matmul choice captured {node}")

    for choices, input_nodes, gen_fns, whole in calls:
        def group(choices: Any = choices, input_nodes: Any = input_nodes, gen_fns: Any = gen_fns) -> Any:
            return realign.group_choices(choices, input_nodes, gen_fns, unused, select_algorithm.TritonTemplateCaller)

        grouping = min(timeit.repeat(group, number=1, repeat=rounds))
        as_selected, groups = group()
        assert not groups, "a matmul choice needed realigning"
        per_choice_us.append(grouping / len(choices) * 1e6)
        shares.append(grouping / whole)
        choices_seen += len(choices)
    return {"kind": "benchmark_realign", "device": device, "torch": torch.__version__, "selections": len(calls),
            "choices": choices_seen, "per_choice_us": summary(per_choice_us), "share": summary(shares),
            "rounds": rounds}


def markdown(data: dict[str, Any]) -> str:
    us, share = data["per_choice_us"], data["share"]
    met = us["max"] <= PER_CHOICE_GOAL_US and share["max"] <= SHARE_GOAL
    return "\n".join([
        f"Realignment at the selection seam, nothing to realign: {data['selections']} selections, "
        f"{data['choices']} choices, {data['device']}, torch {data['torch']} (`{data['command']}`):",
        "",
        "| measured | median [min-max] | goal |",
        "|---|---|---|",
        f"| grouping, µs per choice | {span(us, 2)} | ≤ {PER_CHOICE_GOAL_US:g} |",
        f"| grouping / whole selection benchmark | {span(share, 5)} | ≤ {SHARE_GOAL:g} |",
        f"| goals met in every selection | {'yes' if met else 'no'} | |",
    ])


# --- for ``tools/bench compile`` ---------------------------------------------------------

PART = BenchPart(help="the realignment's cost per choice when nothing needs it (--device cuda on a GPU)",
                 add_arguments=add_arguments, run=run, worker=worker, markdown=markdown, out_name=out_name,
                 # Upstream's workaround for pytorch/pytorch#194515: benchmark in a subprocess, which
                 # builds each choice's tensors from its own benchmark request.
                 compile_workaround={"autotune_in_subproc": True})
