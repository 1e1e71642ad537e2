"""Part 3: compile and run the workloads, one fresh process per (variant, repetition).

The parent (:func:`run`) never imports torch. After one untimed warm-up run
it runs the cells (part, variant) round-robin, rotating the order every
repetition so that drift over the run (clocks, page cache, other users) hits
every variant alike, and starts no run or round that would overrun
``budget_s``. Each run is ``tools/bench _compile PART VARIANT DEVICE`` with a
fresh ``TORCHINDUCTOR_CACHE_DIR``, so no variant sees another's Inductor caches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["PARTS", "PART_VARIANTS", "VARIANTS", "Variant", "run", "worker"]

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
    result: dict[str, Any] = {"error": None, "compile_s": {}, "hits": {}, "misses": {}, "runtime_ms": {}}
    steps = []
    with harness, config.patch(enable_caching_generated_triton_templates=variant.codegen_cache):
        functions = workloads.build(part, device, clone=variant.clone)
        for function in functions:  # eager once: cuBLAS and the allocator start outside the timings
            function.step(function.fn)(*function.args)
        _synchronize(device)
        for function in functions:
            step = function.step(torch.compile(function.fn, mode=variant.mode, fullgraph=True))
            hits = counters["inductor"]["generated_module_cache_hit"]
            misses = counters["inductor"]["generated_module_cache_miss"]
            start = time.perf_counter()
            try:
                step(*function.args)
                _synchronize(device)
            except Exception as error:
                result["error"] = f"{function.name}: {_innermost(error)}"
                break
            result["compile_s"][function.name] = time.perf_counter() - start
            result["hits"][function.name] = counters["inductor"]["generated_module_cache_hit"] - hits
            result["misses"][function.name] = counters["inductor"]["generated_module_cache_miss"] - misses
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


def _innermost(error: BaseException) -> str:
    """Type and first line of the innermost cause, without Inductor's wrapping text."""
    while (cause := getattr(error, "inner_exception", None) or error.__cause__) is not None:
        error = cause
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


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
        start = time.perf_counter()
        # A session of its own, so that a timeout also ends Inductor's compile workers.
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return {"error": f"timed out after {timeout:.0f} s", "wall_s": time.perf_counter() - start}
        wall = time.perf_counter() - start
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARKER)]
    if not lines:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"process failed (exit {process.returncode}): {tail}", "wall_s": wall}
    return dict(json.loads(lines[-1][len(RESULT_MARKER) :]), wall_s=wall)


def run(script: Path, parts: list[str], device: str, reps: int, budget_s: float, out: Path, command: str,
        resume: bool = False) -> dict:
    """Run every cell ``reps`` times within ``budget_s``; write ``out`` after every run.

    ``resume``: keep the successful runs already in ``out`` (same parts and device,
    same torch and GPU) and run only the missing ones, so that repetitions too
    long for one command (part (a) takes ~100 s a run on an H200) add up over
    several commands. Raises SystemExit if ``out`` holds other results.
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
        "runs": [],
    }
    if resume and out.is_file():
        stored = json.loads(out.read_text())
        if (stored.get("parts"), stored.get("device")) != (parts, device):
            raise SystemExit(f"--resume: {out} holds parts {stored.get('parts')} on {stored.get('device')}, "
                             f"not {parts} on {device}")
        data["runs"] = [r for r in stored["runs"] if not r.get("error")]  # failed runs run again
        data["commands"] = stored.get("commands") or [stored["command"]]
    data["commands"].append(command)
    out.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    # Untimed: the first process of a command reads torch, CUDA libraries and
    # compilers from disk; no variant should pay for that alone.
    warmup = _run_cell(script, parts[0], "default", device, timeout=budget_s)
    data["warmup"] = {key: warmup.get(key) for key in ("error", "wall_s")}
    print(f"  warm-up ({parts[0]}) default: {warmup['wall_s']:.1f} s", flush=True)
    if warmup["error"]:
        raise SystemExit(f"the warm-up run failed, nothing measured: {warmup['error']}")
    if data["runs"]:
        stored_build = {(r.get("torch"), r.get("device_name")) for r in data["runs"]}
        if stored_build != {(warmup.get("torch"), warmup.get("device_name"))}:
            raise SystemExit(f"--resume: {out} was measured on {sorted(stored_build)}, this machine is "
                             f"{warmup.get('device_name')} with torch {warmup.get('torch')}")
        print(f"  resuming: {len(data['runs'])} successful runs kept from {out}", flush=True)
    done = {(r["part"], r["variant"], r["rep"]) for r in data["runs"]}
    first = min((rep for rep in range(reps) for cell in cells if (*cell, rep) not in done), default=reps)
    slowest_round = 0.0
    for rep in range(first, reps):
        elapsed = time.monotonic() - began
        if rep > first and elapsed + slowest_round > budget_s:
            print(f"stopping before repetition {rep + 1}: another round (~{slowest_round:.0f} s) would pass "
                  f"the {budget_s:.0f} s budget", flush=True)
            break
        round_began = time.monotonic()
        shift = rep % len(cells)
        for part, variant in cells[shift:] + cells[:shift]:
            if (part, variant, rep) in done:
                continue
            remaining = budget_s - (time.monotonic() - began)
            if remaining < _estimate(data["runs"], part, variant):
                print(f"{remaining:.0f} s of the {budget_s:.0f} s budget left, too little for ({part}) {variant}: "
                      f"round {rep + 1} left incomplete", flush=True)
                break
            run_data = _run_cell(script, part, variant, device, timeout=remaining)
            run_data.update(part=part, variant=variant, rep=rep)
            data["runs"].append(run_data)
            _write(out, data)
            outcome = run_data["error"] or (
                f"compile {sum(run_data['compile_s'].values()):.1f} s, "
                f"hits {sum(run_data['hits'].values())}, misses {sum(run_data['misses'].values())}, "
                f"runtime {sum(run_data['runtime_ms'].values()):.3f} ms"
            )
            print(f"  [rep {rep + 1}/{reps}] ({part}) {variant:9s} {run_data['wall_s']:6.1f} s  {outcome}", flush=True)
        slowest_round = max(slowest_round, time.monotonic() - round_began)
    data["elapsed_s"] = time.monotonic() - began
    data["complete_reps"] = min(sum(1 for r in data["runs"] if (r["part"], r["variant"]) == cell) for cell in cells)
    _write(out, data)
    return data


def _estimate(runs: list[dict], part: str, variant: str) -> float:
    """Seconds the next run of a cell will take: its slowest so far, else the slowest run."""
    same = [r["wall_s"] for r in runs if (r["part"], r["variant"]) == (part, variant)]
    return max(same or [r["wall_s"] for r in runs] or [0.0])


def _write(out: Path, data: dict) -> None:
    first = next((r for r in data["runs"] if "torch" in r), {})
    data.update({key: first.get(key) for key in ("torch", "triton", "device_name")}, python=sys.version.split()[0])
    out.write_text(json.dumps(data, indent=1) + "\n")
