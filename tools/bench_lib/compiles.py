"""Part 3: compile and run the workloads, one fresh process per (variant, repetition).

The parent (:func:`run`) never imports torch. After one untimed warm-up run
it runs the cells (part, variant) round-robin, rotating the order every
repetition so that drift over the run (clocks, page cache, other users) hits
every variant alike, and starts no run or repetition that would overrun
``budget_s`` (``--resume`` adds repetitions in later commands). Each run is
``tools/bench _compile PART VARIANT DEVICE`` with a fresh
``TORCHINDUCTOR_CACHE_DIR``, so no variant sees another's Inductor caches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from inductor_fix.check.child import run_child  # tools/bench puts the project on sys.path
from inductor_fix.testing.workloads import describe_error

__all__ = ["PARTS", "PART_VARIANTS", "VARIANTS", "Variant", "budget_cut", "run", "worker"]

RESULT_MARKER = "BENCH_COMPILE_RESULT "
MAX_AUTOTUNE = "max-autotune-no-cudagraphs"


@dataclasses.dataclass(frozen=True)
class Variant:
    fix: bool  # False: INDUCTOR_FIX_DISABLE=1, stock Inductor
    codegen_cache: bool  # config.enable_caching_generated_triton_templates
    mode: str
    clone: bool = False  # part (b): pass a clone of the gradient (the user workaround)
    about: str = ""


VARIANTS = {
    "stock": Variant(False, True, MAX_AUTOTUNE, about="INDUCTOR_FIX_DISABLE=1"),
    "patched": Variant(True, True, MAX_AUTOTUNE, about="import inductor_fix"),
    "cache-off": Variant(False, False, MAX_AUTOTUNE, about="enable_caching_generated_triton_templates=False, no fix"),
    "default": Variant(True, True, "default", about='mode="default", fix imported'),
    "clone": Variant(False, True, MAX_AUTOTUNE, clone=True, about="gradient cloned outside the graph, no fix"),
}
#: The workloads, see workloads.py.
PARTS = {"a": "model", "b": "optimizer"}
#: Stock crashes on (b); the clone workaround only concerns (b).
PART_VARIANTS = {"a": ("stock", "patched", "cache-off", "default"), "b": ("patched", "cache-off", "default", "clone")}


# The child ---------------------------------------------------------------------------

#: Result field -> Inductor counter. An autotuning round is one call of
#: AlgorithmSelectorCache.benchmark: the choices whose timings were not cached yet.
COUNTERS = {
    "hits": "generated_module_cache_hit",
    "misses": "generated_module_cache_miss",
    "autotune_rounds": "select_algorithm_autotune",
}


def worker(part: str, variant_name: str, device: str) -> dict[str, Any]:
    """Compile part ``part``'s functions in order under ``variant_name``, then time them.

    Compile seconds are the wall time of each function's first call (Dynamo,
    Inductor, autotuning, kernel compilation and one run). Runtime is
    ``triton.testing.do_bench``'s median on CUDA; under the CPU harness launches
    compute nothing, so the CPU runtime only proves the code path runs.
    """
    import torch

    import inductor_fix  # after torch, as users import it; INDUCTOR_FIX_DISABLE decides
    from torch._dynamo.utils import counters
    from torch._inductor import config

    from . import workloads

    variant = VARIANTS[variant_name]
    if device == "cpu":
        from inductor_fix.testing.harness import triton_cpu_harness

        harness = triton_cpu_harness()
    else:
        harness = contextlib.nullcontext()
    result: dict[str, Any] = {"error": None, "compile_s": {}, "hits": {}, "misses": {}, "autotune_rounds": {},
                              "runtime_ms": {}}
    steps = []
    # The harness turns the autotuning timing cache off for its tests; a benchmark keeps
    # Inductor's default (on), since reusing timings is part of what a compile costs.
    settings = dict(enable_caching_generated_triton_templates=variant.codegen_cache, autotune_local_cache=True)
    with harness, config.patch(**settings):
        functions = workloads.build(part, device, clone=variant.clone)
        for function in functions:  # eager once: cuBLAS and the allocator start outside the timings
            function.step(function.fn)(*function.args)
        _synchronize(device)
        for function in functions:
            step = function.step(torch.compile(function.fn, mode=variant.mode, fullgraph=True))
            before = {key: counters["inductor"][key] for key in COUNTERS.values()}
            start = time.perf_counter()
            try:
                step(*function.args)
                _synchronize(device)
            except Exception as error:
                result["error"] = f"{function.name}: {describe_error(error)}"
                break
            result["compile_s"][function.name] = time.perf_counter() - start
            for field, key in COUNTERS.items():
                result[field][function.name] = counters["inductor"][key] - before[key]
            steps.append((function, step))
        # Timed after all compiles, so that timing never sits between two compiles.
        for function, step in steps if result["error"] is None else ():
            result["runtime_ms"][function.name] = _runtime_ms(step, function.args, device)
    status = inductor_fix.status()
    result.update(
        state=str(status.state),
        guard=dict(counters["inductor_fix"]),  # did the arity guard regenerate or exclude choices?
        torch=torch.__version__,
        triton=status.triton_version,
        device_name=torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton-on-CPU harness)",
    )
    return result


def _synchronize(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _runtime_ms(step, args, device: str) -> float:
    if device == "cuda":
        from triton.testing import do_bench

        return float(do_bench(lambda: step(*args), return_mode="median"))
    start, calls = time.perf_counter(), 3
    for _ in range(calls):
        step(*args)
    return (time.perf_counter() - start) / calls * 1e3


# The parent --------------------------------------------------------------------------


def _run_cell(script: Path, part: str, variant: str, device: str, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="inductor_fix_bench_") as cache_dir:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(script.parents[1]), env.get("PYTHONPATH")]))
        # Unset, Inductor puts Triton's cache inside the fresh cache dir too.
        env.pop("TRITON_CACHE_DIR", None)
        env.pop("INDUCTOR_FIX_DISABLE", None)
        if not VARIANTS[variant].fix:
            env["INDUCTOR_FIX_DISABLE"] = "1"
        command = [sys.executable, str(script), "_compile", part, variant, device]
        child = run_child(command, env, RESULT_MARKER, timeout)
    if child.timed_out:
        # The timeout is what the budget had left: not a result, a run to do again.
        return {"error": f"cut by the budget after {timeout:.0f} s", "budget_cut": True, "wall_s": child.seconds}
    if child.result is None:
        return {"error": child.failure, "wall_s": child.seconds}
    return dict(child.result, wall_s=child.seconds)


def run(script: Path, parts: list[str], device: str, reps: int, budget_s: float, out: Path, command: str,
        resume: bool = False, fresh: bool = False) -> dict:
    """Run every cell ``reps`` times within ``budget_s``; write ``out`` after every run.

    Each repetition (one run of every cell) is measured within one command, so
    that its runs pair side by side. ``resume`` keeps the complete repetitions
    already in ``out`` and runs the others, so that repetitions too long for one
    command (on an H200 part (a) takes ~100 s a run, ~7 minutes a repetition) add
    up over several; an incomplete one is measured again whole. Raises SystemExit
    if ``out`` exists and neither ``resume`` nor ``fresh`` is given, or if it holds
    other parts, another device, or runs of another torch, triton, Python or GPU.
    """
    cells = [(part, variant) for part in parts for variant in PART_VARIANTS[part]]
    data: dict[str, Any] = {
        "kind": "compile",
        "command": command,
        "device": device,
        "parts": parts,
        "variants": {name: dataclasses.asdict(v) for name, v in VARIANTS.items()},
        "reps_requested": reps,
        "budget_s": budget_s,
        "commands": [],
        "hosts": [],  # one per command: where it ran
        "runs": [],
    }
    stored = _stored(out, parts, device, resume, fresh)
    if stored:
        data["commands"] = stored.get("commands") or [stored["command"]]
        data["hosts"] = stored.get("hosts") or [None] * len(data["commands"])
        data["runs"] = [r for r in stored["runs"] if r["rep"] in _complete(stored["runs"], cells)]
    data["commands"].append(command)
    # The H200 figures come from parts run side by side, each on one GPU and half the cores.
    data["hosts"].append(_host())
    this_command = len(data["commands"]) - 1
    out.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    # Untimed: the first process of a command reads torch, CUDA libraries and
    # compilers from disk; no variant should pay for that alone.
    warmup = _run_cell(script, parts[0], "default", device, timeout=budget_s)
    data["warmup"] = {key: warmup.get(key) for key in ("error", "wall_s")}
    print(f"  warm-up ({parts[0]}) default: {warmup['wall_s']:.1f} s", flush=True)
    if warmup["error"]:
        raise SystemExit(f"the warm-up run failed, nothing measured: {warmup['error']}")
    if stored:
        _check_same_build(out, stored, warmup)
        print(f"  resuming: repetitions {sorted({r['rep'] + 1 for r in data['runs']})} kept from {out}", flush=True)
    todo = [rep for rep in range(reps) if rep not in _complete(data["runs"], cells)]
    for rep in todo:
        # Estimates carry a margin: a run cut by the budget is device time thrown away.
        round_estimate = sum(MARGIN * _estimate(data["runs"], *cell) for cell in cells)
        if time.monotonic() - began + round_estimate > budget_s:
            print(f"stopping before repetition {rep + 1}: it would take ~{round_estimate:.0f} s, past the "
                  f"{budget_s:.0f} s budget", flush=True)
            break
        if not _run_round(script, data, cells, rep, reps, device, budget_s - (time.monotonic() - began),
                          this_command, out):
            break
    data["elapsed_s"] = time.monotonic() - began
    data["complete_reps"] = len(_complete(data["runs"], cells))
    _write(out, data)
    return data


def _host() -> dict[str, Any]:
    """CPU cores this command may use and the GPU it was given (None: not restricted)."""
    return {
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "compile_threads": os.environ.get("TORCHINDUCTOR_COMPILE_THREADS"),
    }


#: Estimated run time times this must fit in what is left of the budget.
MARGIN = 1.2


def _run_round(script: Path, data: dict, cells: list, rep: int, reps: int, device: str, budget_left: float,
               command_index: int, out: Path) -> bool:
    """Repetition ``rep``: every cell once, the order rotated by ``rep``; False if the budget cut it short."""
    began = time.monotonic()
    shift = rep % len(cells)
    for part, variant in cells[shift:] + cells[:shift]:
        remaining = budget_left - (time.monotonic() - began)
        if remaining < MARGIN * _estimate(data["runs"], part, variant):
            print(f"{remaining:.0f} s of the budget left, too little for ({part}) {variant}: repetition {rep + 1} "
                  "left incomplete (--resume measures it again)", flush=True)
            return False
        run_data = _run_cell(script, part, variant, device, timeout=remaining)
        run_data.update(part=part, variant=variant, rep=rep, command_index=command_index)
        data["runs"].append(run_data)
        _write(out, data)
        outcome = run_data["error"] or (
            f"compile {sum(run_data['compile_s'].values()):.1f} s, "
            f"hits {sum(run_data['hits'].values())}, misses {sum(run_data['misses'].values())}, "
            f"runtime {sum(run_data['runtime_ms'].values()):.3f} ms"
        )
        print(f"  [rep {rep + 1}/{reps}] ({part}) {variant:9s} {run_data['wall_s']:6.1f} s  {outcome}", flush=True)
        if run_data.get("budget_cut"):
            return False
    return True


def budget_cut(run: dict) -> bool:
    """Whether the budget stopped ``run`` (no result); results before ``budget_cut``
    was recorded say "timed out after", the only timeout a run has."""
    return bool(run.get("budget_cut")) or str(run.get("error") or "").startswith("timed out after")


def _complete(runs: list[dict], cells: list) -> set[int]:
    """Repetitions with a result (a measurement or a crash, not a budget cut) for every cell."""
    done = {(r["part"], r["variant"], r["rep"]) for r in runs if not budget_cut(r)}
    return {rep for rep in {r["rep"] for r in runs} if all((*cell, rep) in done for cell in cells)}


def _stored(out: Path, parts: list[str], device: str, resume: bool, fresh: bool) -> dict | None:
    """The results in ``out`` to resume from (None to start afresh)."""
    if not out.is_file() or fresh:
        return None
    if not resume:
        raise SystemExit(f"{out} exists: --resume adds the missing repetitions to it, --fresh replaces it")
    try:
        stored = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise SystemExit(f"--resume: cannot read {out} ({error}); --fresh replaces it") from None
    if (stored.get("kind"), stored.get("parts"), stored.get("device")) != ("compile", parts, device):
        raise SystemExit(f"--resume: {out} holds parts {stored.get('parts')} on {stored.get('device')}, "
                         f"not {parts} on {device}")
    return stored


def _check_same_build(out: Path, stored: dict, warmup: dict) -> None:
    """Repetitions pair only within a command, but the table pools them: one build, one GPU."""
    now = (warmup.get("torch"), warmup.get("triton"), warmup.get("device_name"), sys.version.split()[0])
    before = (stored.get("torch"), stored.get("triton"), stored.get("device_name"), stored.get("python"))
    if stored["runs"] and before != now:
        raise SystemExit(f"--resume: {out} was measured with (torch, triton, device, Python) {before}, "
                         f"this machine has {now}; --fresh starts over")


def _estimate(runs: list[dict], part: str, variant: str) -> float:
    """Seconds the next run of a cell will take: its slowest so far, else the slowest run."""
    same = [r["wall_s"] for r in runs if (r["part"], r["variant"]) == (part, variant)]
    return max(same or [r["wall_s"] for r in runs] or [0.0])


def _write(out: Path, data: dict) -> None:
    """Atomically: an interrupted write must not lose the runs of earlier commands."""
    first = next((r for r in data["runs"] if "torch" in r), {})
    data.update({key: first.get(key) for key in ("torch", "triton", "device_name")}, python=sys.version.split()[0])
    temporary = out.with_name(out.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(temporary, out)
