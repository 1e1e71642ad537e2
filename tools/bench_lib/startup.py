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

- ``autoload``: what installing the package adds to every ``import torch`` (torch's
  ``torch.backends`` entry point). Two folders first on ``PYTHONPATH``, each holding an
  ``inductor-fix`` distribution's metadata that shadows any installed one: with the entry
  point, and without. In fresh processes, alternating, paired: torch's
  ``_import_device_backends()`` timed with ``perf_counter`` (``TORCH_DEVICE_BACKEND_AUTOLOAD=0``
  skips torch's own call, so the child makes it; the precise figure), and the wall time of
  ``python -c "import torch"`` (torch's own call; noisier).

``--against CHECKOUT`` adds another checkout's ``run`` hook to the first measurement,
in the same rotation (before/after a change, side by side).

Goals (issue 21): no torch ≤ 5 ms added (median of pairs); import after torch ≤ 10 ms;
(issue 29) autoload ≤ 10 ms added per ``import torch``.
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

from inductor_fix._stats import summary

__all__ = ["GOALS_MS", "HELP", "add_arguments", "markdown", "run"]

HELP = "process start-up under run, and import after torch (~5 min)"

GOALS_MS = {"run_no_torch": 5.0, "import_after_torch": 10.0, "autoload": 10.0}
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

AUTOLOAD_CHILD = """
import json, sys, time
import torch
start = time.perf_counter()
torch._import_device_backends()
ms = (time.perf_counter() - start) * 1e3
hooked = any(type(finder).__module__ == "_inductor_fix_autoload" for finder in sys.meta_path)
print(json.dumps({"ms": ms, "active": hooked or "inductor_fix" in sys.modules,
                  "inductor_modules": sorted(m for m in sys.modules if m.startswith("torch._inductor"))}))
"""


def _environment() -> dict[str, str]:
    # INDUCTOR_FIX_AUTOLOAD=0: the other routes alone, also where the package is installed.
    return {**{k: v for k, v in os.environ.items()
               if not k.startswith(("INDUCTOR_FIX_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"))},
            "INDUCTOR_FIX_AUTOLOAD": "0"}


def _wall(command: list[str], env: dict[str, str], cwd: str | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
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


def _distribution(folder: str, entry_point: bool) -> str:
    """``folder`` holding an ``inductor-fix`` dist-info (with the autoload entry point or
    without), to put first on ``PYTHONPATH``: it shadows an installed one of that name."""
    from inductor_fix import __version__

    info = os.path.join(folder, f"inductor_fix-{__version__}.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as handle:
        handle.write(f"Metadata-Version: 2.1\nName: inductor-fix\nVersion: {__version__}\n")
    if entry_point:
        with open(os.path.join(info, "entry_points.txt"), "w") as handle:
            handle.write("[torch.backends]\ninductor_fix = _inductor_fix_autoload:activate\n")
    return folder


def _autoload(reps: int) -> dict[str, Any]:
    import tempfile

    import inductor_fix

    checkout = os.path.dirname(os.path.dirname(os.path.abspath(inductor_fix.__file__)))  # the entry point's module
    with tempfile.TemporaryDirectory() as directory:
        folders = {name: _distribution(os.path.join(directory, name), name == "installed")
                   for name in ("absent", "installed")}
        envs = {name: dict(_environment(), PYTHONPATH=os.pathsep.join([folder, checkout]))
                for name, folder in folders.items()}
        for env in envs.values():
            env.pop("INDUCTOR_FIX_AUTOLOAD")  # on, as installed
        timed: dict[str, list[dict[str, Any]]] = {name: [] for name in envs}
        walls: dict[str, list[float]] = {name: [] for name in envs}
        for rep in range(reps + 1):
            names = list(envs)[rep % 2:] + list(envs)[:rep % 2]
            for name in names:
                # cwd: `-c` puts the working directory first on sys.path, and a checkout that pip
                # built in holds an inductor_fix.egg-info that would shadow both folders.
                process = subprocess.run([sys.executable, "-c", AUTOLOAD_CHILD], capture_output=True, text=True,
                                         check=True, env=dict(envs[name], TORCH_DEVICE_BACKEND_AUTOLOAD="0"),
                                         cwd=directory)
                timed[name].append(json.loads(process.stdout.strip().splitlines()[-1]))
                walls[name].append(_wall([sys.executable, "-c", "import torch"], envs[name], directory))
        timed = {name: values[1:] for name, values in timed.items()}  # the first pair warms caches
        walls = {name: values[1:] for name, values in walls.items()}
    if not all(t["active"] for t in timed["installed"]) or any(t["active"] for t in timed["absent"]):
        raise SystemExit("tools/bench startup: the entry point did not activate the package as expected")
    return {"backends_call_ms": {name: summary([t["ms"] for t in values]) for name, values in timed.items()},
            "added_ms": summary([i["ms"] - a["ms"] for i, a in zip(timed["installed"], timed["absent"])]),
            "import_torch_wall_ms": {name: summary(values) for name, values in walls.items()},
            "wall_added_ms": summary([i - a for i, a in zip(walls["installed"], walls["absent"])]),
            "inductor_modules": sorted({m for t in timed["installed"] for m in t["inductor_modules"]}
                                       - {m for t in timed["absent"] for m in t["inductor_modules"]})}


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
    print(f"autoload: import torch with and without the entry point installed, {reps} pairs ...", flush=True)
    autoload = _autoload(reps)
    return {"kind": "startup", "torch": torch.__version__, "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "reps": reps, "run_no_torch": no_torch, "against": _commit(against),
            "run_import_torch": with_torch,
            "import_after_torch_ms": summary([i["ms"] for i in imports]),
            "inductor_modules": sorted({m for i in imports for m in i["inductor_modules"]}), "autoload": autoload,
            "goals_ms": GOALS_MS}


def _commit(checkout: str | None) -> str | None:
    if checkout is None:
        return None
    process = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    return process.stdout.strip() or "another checkout"


def markdown(data: dict[str, Any]) -> str:
    from inductor_fix._stats import span

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
    if data.get("autoload"):
        autoload = data["autoload"]
        rows += [
            ("installed (autoload entry point): torch's `_import_device_backends()`, added ms",
             span(autoload["added_ms"], 1), f"≤ {goals['autoload']:g}",
             f"{autoload['backends_call_ms']['absent']['median']:.1f} without; torch._inductor modules imported: "
             f"{', '.join(autoload['inductor_modules']) or 'none'}"),
            ("installed (autoload entry point): `python -c \"import torch\"`, added wall ms",
             span(autoload["wall_added_ms"], 1), "-",
             f"{autoload['import_torch_wall_ms']['absent']['median']:.0f} without"),
        ]
    return "\n".join([
        f"Start-up cost, torch {data['torch']}, Python {data['python']}, {data['cpus']} CPUs, {data['reps']} "
        f"repetitions (`{data['command']}`):", "",
        "| measured | median [spread] | goal | beside it |", "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
    ])
