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

``--against CHECKOUT`` adds another checkout's ``run`` hook to the first measurement,
in the same rotation (before/after a change, side by side).

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

__all__ = ["GOALS_MS", "HELP", "add_arguments", "markdown", "run"]

HELP = "process start-up under run, and import after torch (~5 min)"

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


def _paired(code: str, reps: int, against: str | None = None) -> dict[str, Any]:
    from inductor_fix.launcher import environment

    envs = {"alone": _environment(), "under_run": environment(_environment())}
    if against:  # that checkout's hook first on PYTHONPATH, its package importable after it
        hook = os.pathsep.join([os.path.join(against, "inductor_fix", "_bootstrap"), against])
        envs["under_other_run"] = dict(_environment(), PYTHONPATH=hook)
    command = [sys.executable, "-c", code]
    times: dict[str, list[float]] = {name: [] for name in envs}
    for env in envs.values():
        _wall(command, env)  # warm the page cache and bytecode
    for rep in range(reps):
        names = list(envs)[rep % len(envs):] + list(envs)[:rep % len(envs)]  # rotate who goes first
        for name in names:
            times[name].append(_wall(command, envs[name]))
    result = {f"{name}_ms": summary(values) for name, values in times.items()}
    for name in envs:
        if name != "alone":
            key = "added_ms" if name == "under_run" else "other_added_ms"
            result[key] = summary([t - a for t, a in zip(times[name], times["alone"])])
    return result


def add_arguments(parser: Any) -> None:
    from pathlib import Path

    parser.add_argument("--reps", type=int, default=30, help="paired repetitions (default 30)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="another checkout of this project whose run hook is measured side by side")


def run(args: Any, child: Any = None) -> dict[str, Any]:
    """The three measurements, ``args.reps`` repetitions each; ``args.against``: another
    checkout whose ``run`` hook is measured beside this one's (the first measurement only)."""
    reps, against = args.reps, str(args.against.resolve()) if args.against else None
    import compileall

    import torch

    import inductor_fix

    compileall.compile_dir(os.path.dirname(inductor_fix.__file__), quiet=1)
    print(f"run, no torch: python -c pass, alone and under run, {reps} pairs ...", flush=True)
    no_torch = _paired("pass", reps, against)
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
            "cpus": os.cpu_count(), "reps": reps, "run_no_torch": no_torch, "against": _commit(against),
            "run_import_torch": with_torch,
            "import_after_torch_ms": summary([i["ms"] for i in imports]),
            "inductor_modules": sorted({m for i in imports for m in i["inductor_modules"]}), "goals_ms": GOALS_MS}


def _commit(checkout: str | None) -> str | None:
    if checkout is None:
        return None
    process = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    return process.stdout.strip() or "another checkout"


def markdown(data: dict[str, Any]) -> str:
    from .stats import span

    goals = data["goals_ms"]
    rows = []
    if data.get("against"):
        rows.append((f"`python -c pass` under `run` of commit {data['against']}, added ms per process",
                     span(data["run_no_torch"]["other_added_ms"], 1), "-", "the same rotation"))
    rows += [
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
