"""What the package adds to a Python process's start-up, measured side by side.

- ``run, no torch``: ``python -c pass`` alone against the same under ``inductor-fix
  run``'s start-up hook (its folder first on ``PYTHONPATH``): what every process a
  command starts pays when it never imports torch (data loaders, tokenizer pools,
  tool scripts). Wall time of each process, measured by this parent; the two run
  back to back in alternating order, and each repetition's difference is one pair.
- ``run, import torch``: ``python -c "import torch"`` alone against the same under
  the hook, which imports the package while torch imports (same pairing).
- ``import after torch``: ``import inductor_fix`` right after ``import torch``, timed
  with ``perf_counter`` inside fresh processes; also which ``torch._inductor`` modules
  that import pulled in (none is the goal).

Goals (issue 21): no torch ≤ 5 ms added (median of pairs); import after torch ≤ 10 ms.
The package's bytecode is compiled first and children may use it, as after ``pip
install`` (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from .stats import summary

__all__ = ["GOALS_MS", "markdown", "run"]

GOALS_MS = {"run_no_torch": 5.0, "import_after_torch": 10.0}
IMPORT_CHILD = """
import json, sys, time
import torch
before = set(sys.modules)
start = time.perf_counter()
import inductor_fix
ms = (time.perf_counter() - start) * 1e3
loaded = sorted(m for m in set(sys.modules) - before if m.startswith("torch._inductor"))
print(json.dumps({"ms": ms, "inductor_modules": loaded}))
"""


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("INDUCTOR_FIX_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"))}


def _wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1e3


def _paired(code: str, reps: int) -> dict[str, Any]:
    from inductor_fix.launcher import environment

    alone_env = _environment()
    hooked_env = environment(alone_env)
    command = [sys.executable, "-c", code]
    _wall(command, alone_env), _wall(command, hooked_env)  # warm the page cache and bytecode
    alone, hooked = [], []
    for rep in range(reps):
        order = ((alone, alone_env), (hooked, hooked_env))
        for times, env in order if rep % 2 == 0 else reversed(order):
            times.append(_wall(command, env))
    return {"alone_ms": summary(alone), "under_run_ms": summary(hooked),
            "added_ms": summary([h - a for h, a in zip(hooked, alone)])}


def run(reps: int) -> dict[str, Any]:
    """The three measurements, ``reps`` repetitions each."""
    import compileall

    import torch

    import inductor_fix

    compileall.compile_dir(os.path.dirname(inductor_fix.__file__), quiet=1)
    print(f"run, no torch: python -c pass, alone and under run, {reps} pairs ...", flush=True)
    no_torch = _paired("pass", reps)
    print(f"run, import torch: {reps} pairs ...", flush=True)
    with_torch = _paired("import torch", reps)
    print(f"import inductor_fix after import torch: {reps} fresh processes ...", flush=True)
    imports = []
    for _ in range(reps + 1):
        process = subprocess.run([sys.executable, "-c", IMPORT_CHILD], env=_environment(), capture_output=True,
                                 text=True, check=True)
        imports.append(json.loads(process.stdout.strip().splitlines()[-1]))
    imports = imports[1:]  # the first one compiles bytecode
    return {"kind": "startup", "torch": torch.__version__, "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "reps": reps, "run_no_torch": no_torch, "run_import_torch": with_torch,
            "import_after_torch_ms": summary([i["ms"] for i in imports]),
            "inductor_modules": sorted({m for i in imports for m in i["inductor_modules"]}), "goals_ms": GOALS_MS}


def markdown(data: dict[str, Any]) -> str:
    from .stats import span

    goals = data["goals_ms"]
    rows = [
        ("`python -c pass` under `run` (never imports torch), added ms per process",
         span(data["run_no_torch"]["added_ms"], 1), f"≤ {goals['run_no_torch']:g}",
         f"{data['run_no_torch']['alone_ms']['median']:.1f} alone"),
        ("`python -c \"import torch\"` under `run`, added ms per process",
         span(data["run_import_torch"]["added_ms"], 1), "-",
         f"{data['run_import_torch']['alone_ms']['median']:.0f} alone"),
        ("`import inductor_fix` after `import torch`, ms", span(data["import_after_torch_ms"], 1),
         f"≤ {goals['import_after_torch']:g}", f"torch._inductor modules imported: "
         f"{', '.join(data['inductor_modules']) or 'none'}"),
    ]
    return "\n".join([
        f"Start-up cost, torch {data['torch']}, Python {data['python']}, {data['cpus']} CPUs, {data['reps']} "
        f"repetitions (`{data['command']}`):", "",
        "| measured | median [spread] | goal | beside it |", "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
    ])
