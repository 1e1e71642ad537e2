"""What the package adds to a Python process's start-up, measured side by side, installed as
users install it: this checkout's wheel in a fresh venv that sees this interpreter's torch
(:func:`torchenv.borrowing_venv`, less any inductor-fix), beside a second fresh venv without
it. An editable install, or the checkout on ``PYTHONPATH``, would measure something else: its
import finder loads modules (``importlib.util``, ``contextlib``) that a user's process then
pays for in the package's code instead. Every child runs in a scratch directory (``-c`` puts
the working directory first on ``sys.path``, where a checkout would shadow the wheel), with
the bytecode pip compiled at install.

- ``run, no torch``: ``python -c pass`` alone against the same under ``inductor-fix
  run``'s start-up hook (the installed ``inductor_fix/_bootstrap`` first on ``PYTHONPATH``):
  what every process a command starts pays when it never imports torch (data loaders,
  tokenizer pools, tool scripts). Wall time of each process, measured by this parent; the
  two run back to back in alternating order, and each repetition's difference is one pair.
- ``run, import torch``: ``python -c "import torch"`` alone against the same under
  the hook, which imports the package while torch imports (same pairing).
- ``import after torch``: ``import inductor_fix`` right after ``import torch``, timed
  with ``perf_counter`` inside fresh processes; also which ``torch._inductor`` modules
  that import pulled in (none is the goal).

- ``commands``: what the ``inductor-fix`` program itself costs: ``inductor-fix run -- true``
  (``run``'s own process, which every job under ``run`` pays once: it replaces itself with the
  command) and ``inductor-fix status --no-load`` (its entry-point probe, a second process,
  included), each in both forms a user types, the console script and ``python -m inductor_fix``
  (one program: the same modules), against ``python -c pass``, rotated; each repetition's
  difference is one pair.

These four with ``INDUCTOR_FIX_AUTOLOAD=0``: the other routes alone.

- ``autoload``: what installing the package adds to every ``import torch`` (torch's
  ``torch.backends`` entry point): the venv with the wheel against the venv without it. In
  fresh processes, alternating, paired: torch's ``_import_device_backends()`` timed with
  ``perf_counter`` (``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` skips torch's own call, so the child
  makes it; the precise figure), and the wall time of ``python -c "import torch"`` (torch's
  own call; noisier).

``--against CHECKOUT`` installs another checkout's wheel in a third venv and adds its ``run``
hook to the first measurement, in the same rotation (before/after a change, side by side).

Goals: no torch ≤ 1 ms added (median of pairs; issue 41, was 5 ms); import after torch
≤ 10 ms (issue 21); autoload ≤ 10 ms added per ``import torch`` (issue 29); ``run``'s own
process ≤ 30 ms and ``status --no-load`` < 100 ms over ``python -c pass`` (issue 47: 170 and
350 ms, the command line imported ``check`` and its harness for every command).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from inductor_fix._stats import summary
from inductor_fix.check.parts import BenchPart

__all__ = ["GOALS_MS", "PART", "add_arguments", "markdown", "run"]


GOALS_MS = {"run_no_torch": 1.0, "import_after_torch": 10.0, "autoload": 10.0, "run_command": 30.0,
            "status_no_load": 100.0}
#: The ``inductor-fix`` commands measured against ``python -c pass``: name -> arguments.
COMMANDS = {"run_command": ["run", "--", "true"], "status_no_load": ["status", "--no-load"]}
#: The two forms of the program: key suffix -> how it is started (the venv's python, its bin folder).
FORMS = {"": lambda python, bin: [str(bin / "inductor-fix")], "_module": lambda python, bin: [python, "-m",
                                                                                               "inductor_fix"]}
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
hooked = any(type(finder).__module__ == "_inductor_fix_startup" for finder in sys.meta_path)
print(json.dumps({"ms": ms, "active": hooked or "inductor_fix" in sys.modules,
                  "inductor_modules": sorted(m for m in sys.modules if m.startswith("torch._inductor"))}))
"""


def _environment() -> dict[str, str]:
    # INDUCTOR_FIX_AUTOLOAD=0: the other routes alone, also where the package is installed.
    return {**{k: v for k, v in os.environ.items()
               if not k.startswith(("INDUCTOR_FIX_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"))},
            "INDUCTOR_FIX_AUTOLOAD": "0"}


class Venv(NamedTuple):
    """A fresh venv: its ``python``, and the installed ``run`` hook's folder (None without the wheel)."""

    python: str
    bootstrap: str | None


def _sources(checkout: Path, into: Path) -> Path:
    """A copy of ``checkout``'s files that git tracks or would track (the working tree, ignored
    files left out: venvs, build output), for pip to build from: a build leaves ``build/`` and an
    ``.egg-info`` in what it builds. A tree that is not a git checkout (``tools/retire``'s copy)
    is copied whole but for build output and caches."""
    listed = subprocess.run(["git", "-C", str(checkout), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True)
    if listed.returncode:
        shutil.copytree(checkout, into, ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ci-*", "node_modules"))
        return into
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = checkout / name
        if source.is_file():  # a deletion not yet committed is listed too
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def _venv(directory: Path, checkout: Path | None) -> Venv:
    """A fresh venv at ``directory`` that sees this interpreter's torch, with ``checkout``'s
    wheel installed (pip builds it from a copy), or without inductor-fix if None."""
    import torch

    from torchenv import borrowing_venv, site_packages, unmet_build_requirements

    python = borrowing_venv(directory, Path(torch.__file__).resolve().parents[1])
    if checkout is None:
        return Venv(str(python), None)
    source = _sources(checkout, directory.with_name(directory.name + "-source"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # checkout's build requirements met in the venv (the borrowed site): build with them, no
    # download; else pip fetches them.
    unmet = unmet_build_requirements(python, source, env)
    isolation = [] if unmet else ["--no-build-isolation"]
    built = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", *isolation, "--no-deps",
                            "-q", "--disable-pip-version-check", str(source)], capture_output=True, text=True,
                           env=env)
    if built.returncode:
        lacking = f"this torch's site lacks the build requirements {', '.join(unmet)} and pip could not fetch " \
                  "them; install them there (its pyproject.toml's [build-system] requires). " if unmet else ""
        raise SystemExit(f"tools/bench startup: pip could not install {checkout}: {lacking}pip said:\n"
                         f"{built.stderr[-3000:]}")
    bootstrap = site_packages(python) / "inductor_fix" / "_bootstrap"
    if not (bootstrap / "sitecustomize.py").is_file():
        raise SystemExit(f"tools/bench startup: the wheel of {checkout} did not install into {directory}")
    return Venv(str(python), str(bootstrap))


def _wall(command: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    return (time.perf_counter() - start) * 1e3


def _paired(code: str, reps: int, venv: Venv, cwd: str, other: Venv | None = None) -> dict[str, Any]:
    """``python -c code`` alone and under the installed ``run`` hook (and ``other``'s), rotated."""
    arms = {"alone": (venv.python, _environment()),
            "under_run": (venv.python, dict(_environment(), PYTHONPATH=venv.bootstrap))}
    if other is not None:
        arms["under_other_run"] = (other.python, dict(_environment(), PYTHONPATH=other.bootstrap))
    times: dict[str, list[float]] = {name: [] for name in arms}
    for python, env in arms.values():
        _wall([python, "-c", code], env, cwd)  # warm the page cache
    for rep in range(reps):
        names = list(arms)[rep % len(arms):] + list(arms)[:rep % len(arms)]  # rotate who goes first
        for name in names:
            python, env = arms[name]
            times[name].append(_wall([python, "-c", code], env, cwd))
    result = {f"{name}_ms": summary(values) for name, values in times.items()}
    for name in arms:
        if name != "alone":
            key = "added_ms" if name == "under_run" else "other_added_ms"
            result[key] = summary([t - a for t, a in zip(times[name], times["alone"])])
    return result


def _commands(reps: int, venv: Venv, cwd: str) -> dict[str, Any]:
    """``python -c pass`` and each of :data:`COMMANDS` in each of :data:`FORMS` (the venv's
    ``inductor-fix``, ``python -m inductor_fix``), rotated."""
    bin = Path(venv.python).parent
    arms = {"pass": [venv.python, "-c", "pass"],
            **{f"{name}{form}": [*start(venv.python, bin), *args]
               for name, args in COMMANDS.items() for form, start in FORMS.items()}}
    times: dict[str, list[float]] = {name: [] for name in arms}
    for command in arms.values():
        _wall(command, _environment(), cwd)  # warm the page cache
    for rep in range(reps):
        names = list(arms)[rep % len(arms):] + list(arms)[:rep % len(arms)]
        for name in names:
            times[name].append(_wall(arms[name], _environment(), cwd))
    measured = [name for name in arms if name != "pass"]
    return {"pass_ms": summary(times["pass"]),
            **{f"{name}_ms": summary(times[name]) for name in measured},
            **{f"{name}_added_ms": summary([t - a for t, a in zip(times[name], times["pass"])]) for name in measured}}


def _imports(reps: int, venv: Venv, cwd: str) -> list[dict[str, Any]]:
    """``import inductor_fix`` after ``import torch``, ``reps`` fresh processes (and one first to warm)."""
    imports = []
    for _ in range(reps + 1):
        process = subprocess.run([venv.python, "-c", IMPORT_CHILD], env=_environment(), capture_output=True,
                                 text=True, check=True, cwd=cwd)
        imports.append(json.loads(process.stdout.strip().splitlines()[-1]))
    return imports[1:]


def _autoload(reps: int, venvs: dict[str, Venv], cwd: str) -> dict[str, Any]:
    """``import torch`` in the venv without the package (``absent``) and with it (``installed``)."""
    envs = {name: {k: v for k, v in _environment().items() if k != "INDUCTOR_FIX_AUTOLOAD"}  # on, as installed
            for name in venvs}
    timed: dict[str, list[dict[str, Any]]] = {name: [] for name in venvs}
    walls: dict[str, list[float]] = {name: [] for name in venvs}
    for rep in range(reps + 1):
        names = list(venvs)[rep % 2:] + list(venvs)[:rep % 2]
        for name in names:
            process = subprocess.run([venvs[name].python, "-c", AUTOLOAD_CHILD], capture_output=True, text=True,
                                     check=True, env=dict(envs[name], TORCH_DEVICE_BACKEND_AUTOLOAD="0"), cwd=cwd)
            timed[name].append(json.loads(process.stdout.strip().splitlines()[-1]))
            walls[name].append(_wall([venvs[name].python, "-c", "import torch"], envs[name], cwd))
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
    parser.add_argument("--reps", type=int, default=30, help="paired repetitions (default 30)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="another checkout of this project whose run hook is measured side by side")


def run(args: Any, child: Any = None) -> dict[str, Any]:
    """The four measurements, ``args.reps`` repetitions each, in fresh venvs made for them (and
    removed after); ``args.against``: another checkout whose ``run`` hook is measured beside
    this one's (the first measurement only)."""
    import torch

    reps = args.reps
    checkout = Path(__file__).resolve().parents[2]
    load_before = os.getloadavg()[0]
    against = args.against.resolve() if args.against else None
    with tempfile.TemporaryDirectory(prefix="inductor_fix_bench_startup_") as directory:
        scratch = os.path.join(directory, "cwd")
        os.mkdir(scratch)
        print("installing this checkout's wheel into a fresh venv, and making one without it ...", flush=True)
        venv = _venv(Path(directory, "installed"), checkout)
        absent = _venv(Path(directory, "absent"), None)
        other = _venv(Path(directory, "against"), against) if against else None
        print(f"run, no torch: python -c pass, alone and under run, {reps} pairs ...", flush=True)
        no_torch = _paired("pass", reps, venv, scratch, other)
        print(f"run, import torch: {reps} pairs ...", flush=True)
        with_torch = _paired("import torch", reps, venv, scratch)
        print(f"commands: inductor-fix run -- true, status --no-load against python -c pass, {reps} rounds ...",
              flush=True)
        commands = _commands(reps, venv, scratch)
        print(f"import inductor_fix after import torch: {reps} fresh processes ...", flush=True)
        imports = _imports(reps, venv, scratch)
        print(f"autoload: import torch with and without the package installed, {reps} pairs ...", flush=True)
        autoload = _autoload(reps, {"absent": absent, "installed": venv}, scratch)
    return {"kind": "startup", "torch": torch.__version__, "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "reps": reps, "form": "installed: a wheel in a fresh venv",
            "commit": _commit(str(checkout)), "run_no_torch": no_torch,
            "against": _commit(str(against)) if against else None, "run_import_torch": with_torch,
            "import_after_torch_ms": summary([i["ms"] for i in imports]),
            "inductor_modules": sorted({m for i in imports for m in i["inductor_modules"]}), "autoload": autoload,
            "commands": commands, "goals_ms": GOALS_MS,
            # The machine's 1-minute load average as the run started and ended: what it ran beside.
            "load": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def _commit(checkout: str) -> str:
    """The commit a checkout is at, ``-dirty`` if its working tree differs (what was measured)."""
    process = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=checkout,
                             capture_output=True, text=True)
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
    ]
    if data.get("commands"):
        commands = data["commands"]
        for form, program in (("", "inductor-fix"), ("_module", "python -m inductor_fix")):
            if f"run_command{form}_added_ms" not in commands:  # a run from before both forms were measured
                continue
            rows += [
                (f"`{program} run -- true` (run's own process), ms over `python -c pass`",
                 span(commands[f"run_command{form}_added_ms"], 1), f"≤ {goals['run_command']:g}",
                 f"{commands['pass_ms']['median']:.1f} `python -c pass`"),
                (f"`{program} status --no-load`, ms over `python -c pass`",
                 span(commands[f"status_no_load{form}_added_ms"], 1), f"< {goals['status_no_load']:g}",
                 "its entry-point probe (a second process) included"),
            ]
    rows += [
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
    load = f", load average {data['load'][0]:g} to {data['load'][1]:g}" if data.get("load") else ""
    return "\n".join([
        f"Start-up cost, {data.get('form', 'from the checkout')}, torch {data['torch']}, Python {data['python']}, "
        f"{data['cpus']} CPUs{load}, {data['reps']} repetitions (`{data['command']}`):", "",
        "| measured | median [spread] | goal | beside it |", "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
    ])


PART = BenchPart(help="process start-up under run, import after torch, and autoload, installed from a wheel (~6 min)",
                 add_arguments=add_arguments, run=run, markdown=markdown)
