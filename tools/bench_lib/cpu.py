"""Parts 1 and 2, on the CPU: what ``import inductor_fix`` and the patched key cost.

Both run in fresh child processes, so the parent never imports torch and each
import measurement starts from a clean ``sys.modules``.
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from .stats import paired_ratios, summary

__all__ = ["IMPORT_CHILD", "key_worker", "run"]

IMPORT_GOAL_MS = 20.0
KEY_GOAL_RATIO = 1.05

#: Run as ``python -c``: nothing but torch is imported before the timed import.
IMPORT_CHILD = """
import json, sys, time
import torch
before = set(sys.modules)
start = time.perf_counter()
import inductor_fix
ms = (time.perf_counter() - start) * 1e3
new = set(sys.modules) - before
print(json.dumps({
    "ms": ms,
    "modules": len(new),
    "inductor_modules": sorted(m for m in new if m == "torch._inductor" or m.startswith("torch._inductor.")),
    "state": str(inductor_fix.status().state),
    "file": inductor_fix.__file__,
}))
"""

#: ``make_key`` arguments of a real (4, 128, 128) fp32 bmm choice, as recorded from a
#: torch 2.14 compile: the probe's values for every parameter of torch 2.8-2.15, with
#: this choice's stages and template kwargs (``_key_arguments`` adds nodes, layouts, epilogue).
KEY_CHOICE: dict[str, Any] = {
    "num_stages": 3,
    "kwargs": {"EVEN_K": True, "USE_FAST_ACCUM": False, "ACC_TYPE": "tl.float32", "BLOCK_M": 64, "BLOCK_N": 64,
               "BLOCK_K": 32, "GROUP_M": 8, "ALLOW_TF32": False},
}


def _child_env(package_parent: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_parent), env.get("PYTHONPATH")]))
    env.pop("INDUCTOR_FIX_DISABLE", None)
    return env


def measure_import(root: Path, reps: int) -> dict[str, Any]:
    """``import inductor_fix`` after ``import torch`` in ``reps`` fresh interpreters per
    bytecode mode, the modes alternating, one process at a time.

    ``cached``: a copy of the package whose ``.pyc`` files the untimed warm-up
    wrote, as after ``pip install`` (the goal applies here). ``uncached``: a copy
    imported under ``PYTHONDONTWRITEBYTECODE=1``, so every import compiles the
    source, as in a development environment that sets it.
    """
    command = [sys.executable, "-c", IMPORT_CHILD]
    with tempfile.TemporaryDirectory(prefix="inductor_fix_bench_import_") as temporary:
        specs = {}
        for mode in ("cached", "uncached"):
            parent = Path(temporary, mode)
            shutil.copytree(root / "inductor_fix", parent / "inductor_fix", ignore=shutil.ignore_patterns("__pycache__"))
            env = _child_env(parent)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            if mode == "uncached":
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            # cwd too: ``python -c`` puts it first on sys.path.
            specs[mode] = dict(env=env, cwd=parent, check=True, capture_output=True, text=True)
        samples: dict[str, list[dict]] = {mode: [] for mode in specs}
        for spec in specs.values():  # warm-up: writes the copy's .pyc files, fills the page cache
            subprocess.run(command, **spec)
        for i in range(reps):
            for mode, spec in specs.items():
                sample = json.loads(subprocess.run(command, **spec).stdout)
                if not sample["file"].startswith(str(spec["cwd"])):
                    raise SystemExit(f"import {mode}: imported {sample['file']}, not the copy under {spec['cwd']}")
                samples[mode].append(sample)
            if (i + 1) % 10 == 0:
                print(f"  import: {i + 1}/{reps}", flush=True)
    every = [s for mode in samples.values() for s in mode]
    inductor = sorted({m for s in every for m in s["inductor_modules"]})
    result = {
        mode: {"ms": summary([s["ms"] for s in mode_samples]), "samples_ms": [s["ms"] for s in mode_samples]}
        for mode, mode_samples in samples.items()
    }
    result.update(
        modules_imported=summary([s["modules"] for s in every]),
        inductor_modules_imported=inductor,
        states=sorted({s["state"] for s in every}),
        goal_ms=IMPORT_GOAL_MS,
        goal_met=result["cached"]["ms"]["median"] <= IMPORT_GOAL_MS and not inductor,
    )
    return result


def _key_arguments(select_algorithm: Any, make_key: Any, aliased: bool) -> tuple[Any, ...]:
    """Positional arguments, as ``TritonTemplate.generate`` passes them, for a
    (4, 128, 128) fp32 bmm choice on CUDA, input nodes as Inductor wraps graph inputs."""
    import sympy
    import torch

    ir = select_algorithm.ir

    def layout():
        size = [sympy.Integer(n) for n in (4, 128, 128)]
        return ir.FixedLayout(torch.device("cuda", 0), torch.float32, size, [sympy.Integer(n) for n in (16384, 128, 1)])

    x = ir.StorageBox(ir.InputBuffer(name="arg0_1", layout=layout()))
    y = x if aliased else ir.StorageBox(ir.InputBuffer(name="arg1_1", layout=layout()))
    out = layout()
    identity = getattr(select_algorithm, "identity", None)  # what bmm passes as its epilogue
    from inductor_fix._probe import PROBE_ARGUMENTS

    values = dict(
        PROBE_ARGUMENTS,
        **KEY_CHOICE,
        input_nodes=[x, y],
        call_sizes=out.size,
        layout=out,
        epilogue_fn=identity,
        epilogue_fn_hash=None if identity else "identity",
    )
    args = []
    for parameter in list(inspect.signature(make_key).parameters.values())[1:]:
        if parameter.name in values:
            args.append(values[parameter.name])
        elif parameter.default is parameter.empty:
            raise SystemExit(f"make_key needs {parameter.name!r}, which this benchmark does not know")
        else:
            break  # an unknown optional parameter: it and the ones after it keep their defaults
    return tuple(args)


def _alternate(functions: dict[str, Any], call: tuple, rounds: int, seconds_per_sample: float) -> dict[str, Any]:
    """ns per ``function(*call)`` for the two ``functions`` ("stock" first), timed in
    alternating ``timeit`` samples; the ratio is patched/stock of each round."""
    timers = {
        name: timeit.Timer("function(*call)", globals={"function": function, "call": call})
        for name, function in functions.items()
    }
    number, _ = timers["stock"].autorange()  # calls for >= 0.2 s
    number = max(1, int(number * seconds_per_sample / 0.2))
    ns: dict[str, list[float]] = {name: [] for name in functions}
    for i in range(rounds):
        # Short samples in ABBA order: load from other processes on a shared
        # machine and linear drift hit both sides of a round alike.
        for name in ("stock", "patched") if i % 2 == 0 else ("patched", "stock"):
            ns[name].append(timers[name].timeit(number) / number * 1e9)
    return {
        "calls_per_sample": number,
        "stock_ns": summary(ns["stock"]),
        "patched_ns": summary(ns["patched"]),
        "ratio": paired_ratios(ns["patched"], ns["stock"]),
        "added_ns": summary([p - s for p, s in zip(ns["patched"], ns["stock"])]),
        # Each side's least disturbed sample: the classic timeit estimate.
        "ratio_of_minimums": min(ns["patched"]) / min(ns["stock"]),
        "samples_ns": ns,
    }


def key_worker(rounds: int, seconds_per_sample: float) -> dict[str, Any]:
    """Run in a child started with ``INDUCTOR_FIX_DISABLE=1``: apply the fix once
    (timed: its one-time cost when Inductor loads), then time stock and patched
    ``make_key`` in alternating rounds, with distinct and with aliased inputs.

    The ``control`` case times stock against itself: how far from 1 this method
    puts two equal functions on this machine. The ``wrapper`` case wraps a
    ``make_key`` that returns a constant key: what the fix adds per call, free of
    the stock key's own cost (mostly sympy printing) and of that cost's noise.
    """
    import inductor_fix
    from inductor_fix.aliasing import aliasing_aware_make_key
    from torch._inductor import select_algorithm

    os.environ.pop("INDUCTOR_FIX_DISABLE")
    start = time.perf_counter()
    status = inductor_fix.apply()
    apply_ms = (time.perf_counter() - start) * 1e3
    if str(status.state) != "applied":
        raise SystemExit(f"inductor_fix not applied: {status.reason}")
    cache_class = select_algorithm.GeneratedCodeCache
    stock = inductor_fix.original("GeneratedCodeCache.make_key")
    patched = cache_class.__dict__["make_key"]
    cache = cache_class()
    result: dict[str, Any] = {"apply_ms": apply_ms, "cases": {}}
    for case in ("distinct", "aliased", "control", "wrapper"):
        args = _key_arguments(select_algorithm, stock, aliased=case == "aliased")
        key = stock(cache, *args)
        if key is None:
            raise SystemExit(f"make_key returned None for the {case} inputs: arguments not cacheable")
        functions = {"stock": stock, "patched": stock if case == "control" else patched}
        if case == "wrapper":

            def constant(self: Any, *args: Any, key: str = key) -> str:
                return key

            index = list(inspect.signature(stock).parameters)[1:].index("input_nodes")
            functions = {"stock": constant, "patched": aliasing_aware_make_key(constant, index)}
        result["cases"][case] = _alternate(functions, (cache, *args), rounds, seconds_per_sample)
        result["cases"][case]["key_suffix"] = patched(cache, *args)[len(key) :]
    return result


def measure_key(script: Path, root: Path, rounds: int, seconds_per_sample: float) -> dict[str, Any]:
    env = dict(_child_env(root), INDUCTOR_FIX_DISABLE="1")
    command = [sys.executable, str(script), "_key", str(rounds), str(seconds_per_sample)]
    process = subprocess.run(command, env=env, capture_output=True, text=True)
    if process.returncode:
        raise SystemExit(f"key benchmark failed:\n{process.stderr}")
    result = json.loads(process.stdout.strip().splitlines()[-1])
    result["goal_ratio"] = KEY_GOAL_RATIO
    result["goal_met"] = all(result["cases"][case]["ratio"]["median"] <= KEY_GOAL_RATIO for case in ("distinct", "aliased"))
    return result


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def run(script: Path, import_reps: int, key_rounds: int, seconds_per_sample: float, out: Path, command: str) -> dict:
    root = script.parents[1]
    versions = subprocess.run(
        [sys.executable, "-c", "import torch, triton; print(torch.__version__, triton.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    data: dict[str, Any] = {
        "kind": "cpu",
        "command": command,
        "torch": versions[0],
        "triton": versions[1],
        "python": sys.version.split()[0],
        "machine": f"{_cpu_model()}, {os.cpu_count()} CPUs, {platform.platform()}",
    }
    print(f"part 1: import inductor_fix after import torch, {import_reps} fresh processes per bytecode mode ...",
          flush=True)
    data["import"] = measure_import(root, import_reps)
    print(f"part 2: GeneratedCodeCache.make_key, stock vs patched, {key_rounds} alternating rounds ...", flush=True)
    data["key"] = measure_key(script, root, key_rounds, seconds_per_sample)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data
