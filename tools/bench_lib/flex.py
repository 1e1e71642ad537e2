"""The benchmark realignment's cost (pytorch/pytorch#194515), two measurements.

``seam``: the realignment's own work at the selection seam when nothing needs
realigning. During real max-autotune compiles of mm, addmm, bmm and baddbmm
(no aliasing) every call of the installed
``AlgorithmSelectorCache.benchmark_in_current_process`` is timed whole (grouping
plus Inductor's benchmarking of every choice), and afterwards its grouping
(``realign.group_choices`` on the same choices and input nodes) is timed alone,
``--rounds`` times. Reports µs per choice of the grouping and its share of the
selection's time (goals: ≤ 20 µs per choice, ≤ 1 %). On CPU the harness makes
launches free, so the share there is an upper bound; the GPU run is the real one.

``compile``: FlexAttention with a gathered bias (workloads ``flex`` and
``flex_decoding``), patched ``max-autotune-no-cudagraphs`` against
``mode="default"``, side by side: each (variant, repetition) a fresh process with
a fresh ``TORCHINDUCTOR_CACHE_DIR``, variants alternating; compile seconds of the
first call and runtime (``do_bench`` median, ms). Stock max-autotune crashes
here, so there is no stock variant. CUDA only.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .stats import paired_ratios, span, summary

__all__ = ["compile_markdown", "compile_worker", "run_compile", "run_seam", "seam_markdown", "seam_worker"]

PER_CHOICE_GOAL_US = 20.0
SHARE_GOAL = 0.01
MATMULS = ("mm", "addmm", "bmm", "baddbmm")
WORKLOADS = ("flex", "flex_decoding")
VARIANTS = {"patched": "max-autotune-no-cudagraphs", "default": "default"}
MARKER = "BENCH_FLEX_RESULT "


def seam_worker(device: str, rounds: int) -> dict[str, Any]:
    import contextlib
    import timeit
    from unittest import mock

    import inductor_fix
    import torch
    from inductor_fix import realign
    from inductor_fix.testing.harness import triton_cpu_harness
    from inductor_fix.testing.workloads import run_compiles
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
        for op in MATMULS:
            with fresh_cache():
                steps = run_compiles(op, (False,), device, compare=False)
            assert steps[0].error is None, steps[0].error
    per_choice_us, shares, choices_seen = [], [], 0
    for choices, input_nodes, gen_fns, whole in calls:
        grouping = min(timeit.repeat(
            lambda: realign.group_choices(choices, input_nodes, gen_fns, None, select_algorithm.TritonTemplateCaller),
            number=1, repeat=rounds,
        ))
        as_selected, groups = realign.group_choices(choices, input_nodes, gen_fns, None,
                                                    select_algorithm.TritonTemplateCaller)
        assert not groups, "a matmul choice needed realigning"
        per_choice_us.append(grouping / len(choices) * 1e6)
        shares.append(grouping / whole)
        choices_seen += len(choices)
    return {"kind": "flex-seam", "device": device, "torch": torch.__version__, "selections": len(calls),
            "choices": choices_seen, "per_choice_us": summary(per_choice_us), "share": summary(shares),
            "rounds": rounds}


def run_seam(script: Path, device: str, rounds: int, out: Path, command: str) -> dict[str, Any]:
    from inductor_fix.check.child import run_child

    with tempfile.TemporaryDirectory(prefix="bench_seam_") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, PYTHONUNBUFFERED="1")
        env.pop("INDUCTOR_FIX_DISABLE", None)
        child = run_child([sys.executable, str(script), "_seam", device, str(rounds)], env, MARKER, 1800)
    if child.result is None:
        raise SystemExit(f"seam bench failed: {child.failure}")
    data = dict(child.result, command=command)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    return data


def seam_markdown(data: dict[str, Any]) -> str:
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


def compile_worker(workload: str, variant: str) -> dict[str, Any]:
    import inductor_fix
    import torch
    from inductor_fix.testing.workloads import describe_error, flex_workload, max_rel_error
    from torch._dynamo.utils import counters
    from torch._inductor.runtime.benchmarking import benchmarker

    attend, args = flex_workload(workload, "cuda")
    compiled = torch.compile(attend, mode=VARIANTS[variant], fullgraph=True)
    result = {"workload": workload, "variant": variant, "torch": torch.__version__,
              "device_name": torch.cuda.get_device_name(), "error": None}
    start = time.perf_counter()
    try:
        output = compiled(*args)
        torch.cuda.synchronize()
    except Exception as error:
        return dict(result, error=describe_error(error))
    result["compile_s"] = time.perf_counter() - start
    expected = attend(*args)
    result["max_rel_error"] = max_rel_error(output, expected)
    result["runtime_ms"] = benchmarker.benchmark_gpu(lambda: compiled(*args))
    result["realigned"] = counters["inductor_fix"]["realigned"]
    result["state"] = str(inductor_fix.status().state)
    return result


def run_compile(script: Path, reps: int, out: Path, command: str) -> dict[str, Any]:
    from inductor_fix.check.child import run_child

    runs = []
    for rep in range(reps):
        order = list(VARIANTS) if rep % 2 == 0 else list(reversed(VARIANTS))
        for workload in WORKLOADS:
            for variant in order:
                with tempfile.TemporaryDirectory(prefix="bench_flex_") as cache:
                    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, PYTHONUNBUFFERED="1")
                    env.pop("INDUCTOR_FIX_DISABLE", None)
                    child = run_child([sys.executable, str(script), "_flex", workload, variant], env, MARKER, 900)
                run = child.result or {"workload": workload, "variant": variant, "error": child.failure}
                run["rep"] = rep
                runs.append(run)
                print(f"  [rep {rep + 1}/{reps}] {workload:<14} {variant:<8} "
                      + (f"compile {run['compile_s']:.1f} s, runtime {run.get('runtime_ms', float('nan')):.4f} ms"
                         if not run.get("error") else f"error: {run['error']}"), flush=True)
    data = {"kind": "flex-compile", "command": command, "reps": reps, "runs": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    return data


def compile_markdown(data: dict[str, Any]) -> str:
    runs = [r for r in data["runs"] if not r.get("error")]
    first = runs[0] if runs else {}
    lines = [
        f"FlexAttention with a gathered bias, {first.get('device_name', '?')}, torch {first.get('torch', '?')}, "
        f"{data['reps']} repetitions, fresh process and cache per run (`{data['command']}`):",
        "",
        "| workload | variant | compile s, median [min-max] | runtime ms, median [min-max] | max rel err vs eager | runs ok |",
        "|---|---|---|---|---|---|",
    ]
    ratios = []
    for workload in WORKLOADS:
        by_variant = {}
        for variant in VARIANTS:
            cell = [r for r in data["runs"] if r["workload"] == workload and r["variant"] == variant]
            ok = [r for r in cell if not r.get("error")]
            by_variant[variant] = sorted(ok, key=lambda r: r["rep"])
            errors = max((r["max_rel_error"] or 0.0 for r in ok), default=float("nan"))
            lines.append(f"| {workload} | {variant} (`{VARIANTS[variant]}`) | {span(summary([r['compile_s'] for r in ok]), 2)} "
                         f"| {span(summary([r['runtime_ms'] for r in ok]), 4)} | {errors:.1e} | {len(ok)}/{len(cell)} |")
        pairs = {r["rep"]: r for r in by_variant["default"]}
        patched = [r for r in by_variant["patched"] if r["rep"] in pairs]
        ratios.append((workload, "compile", paired_ratios([r["compile_s"] for r in patched],
                                                          [pairs[r["rep"]]["compile_s"] for r in patched])))
        ratios.append((workload, "runtime", paired_ratios([r["runtime_ms"] for r in patched],
                                                          [pairs[r["rep"]]["runtime_ms"] for r in patched])))
    lines += ["", "| ratio, paired by repetition | median [min-max] |", "|---|---|"]
    lines += [f"| {w} {what} patched max-autotune / default | {span(s)} |" for w, what, s in ratios]
    return "\n".join(lines)
