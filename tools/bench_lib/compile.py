"""``tools/bench compile``: whole max-autotune compiles, patched against stock and the workaround.

Each (workload, variant, repetition) is a fresh process with a fresh Inductor cache
(``TORCHINDUCTOR_CACHE_DIR``), its autotune cache on as by default. All variants of one
workload and repetition start together (``--jobs`` processes at a time, a workload's
variants never split across a wait), so they share the machine's conditions. Per run: wall
seconds of the compiles (a client's whole run), and counts taken in the child around stock
code:

- ``generated``: template choices ``TritonTemplate.generate`` returned;
- ``codegen_hits`` / ``codegen_misses``: Inductor's codegen-cache counters
  (``generated_module_cache_hit`` / ``_miss``); a miss is a template rendered;
- ``benchmarked``: choices handed to autotuning's benchmark (the ``benchmark`` callable of
  ``PersistentCache.lookup``, which stock calls only on an autotune-cache miss);
- ``precompiled``: ``TritonTemplateCaller.precompile`` calls: the choices Inductor's precompile
  step (``make_precompile_fn``) compiles for the device. Python 3.11.0-3.11.8 skip the step
  (python/cpython#106905): on a GPU none are counted there. Under ``--device cpu`` the step runs
  on every Python (``select_algorithm`` sees 3.11.9 there) and each precompile is counted and
  does nothing, as the harness's Triton compile does (its seam 2; the release's precompile would
  then read the launchers no compile made);
- ``generate_s`` / ``select_s``: seconds in ``TritonTemplate.generate`` (codegen) and in
  ``AlgorithmSelectorCache.__call__`` (precompiling, benchmarking, choosing).

Workloads and variants come from the patch table: every ``check`` sequence of every patch
(``op:order``), each patch's ``bench`` part's ``compile_workloads``, and the real clients
of ``test/clients/clients.py`` whose library is installed. Variants: ``patched`` (the
package as installed), ``stock`` (``INDUCTOR_FIX_DISABLE=1``), ``workaround`` (stock with
upstream's workaround for the workload's bug: its patch's ``compile_workaround``, the
clients' ``WORKAROUND``), each patch's ``compile_variants`` (patched with a part undone:
what that part saves), and with ``--other-python PY`` ``stock@<torch version>``: stock run
by another interpreter (a venv of another release). Ratios pair the runs of one
repetition. ``--device cpu`` runs under inductor_fix's Triton-on-CPU harness (launches
compute nothing: counts are real, seconds are not a GPU's).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable

from inductor_fix._stats import paired_ratios, span
from inductor_fix.check.parts import BenchPart, load_parts, patches

__all__ = ["PART", "add_arguments", "markdown", "out_name", "run", "worker"]


ROOT = Path(__file__).resolve().parents[2]
CLIENTS_SCRIPT = ROOT / "test" / "clients" / "clients.py"
BASE_VARIANTS = ("patched", "stock", "workaround")
#: Clients of test/clients/clients.py the benchmark runs (3 steps each): name -> extra arguments.
CLIENTS = {"pytorch_optimizer": [], "heavyball": ["--widths", "128,128,128,128"]}
#: Goals: patched/stock compile seconds where stock survives, patched/workaround where it crashes.
STOCK_GOAL, WORKAROUND_GOAL = 1.05, 0.9


def _bench_parts() -> list[tuple[Any, BenchPart]]:
    """(patch, its bench part) for each patch of the table that has one that can be read (``tools/bench
    --help`` names one that cannot)."""
    benches = load_parts("bench").parts
    return [(patch, benches[patch.name]) for patch in patches() if patch.name in benches]


def _owners() -> dict[str, Any]:
    """workload -> the patch whose bug it shows (None: a real client)."""
    owners: dict[str, Any] = {}
    checks, benches = load_parts("check").parts, load_parts("bench").parts
    for patch in patches():
        check, bench = checks.get(patch.name), benches.get(patch.name)
        for workload in check.workloads if check is not None else ():
            owners.update({f"{workload.op}:{order}": patch for order in workload.sequences})
        owners.update(dict.fromkeys(bench.compile_workloads if bench is not None else {}, patch))
    return {**owners, **dict.fromkeys(CLIENTS)}


def _variants() -> tuple[str, ...]:
    return BASE_VARIANTS + tuple(v for _, bench in _bench_parts() for v in bench.compile_variants)


def _fast() -> tuple[str, ...]:
    return tuple(name for _, bench in _bench_parts() for name in bench.compile_fast)


def add_arguments(parser: Any) -> None:
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cpu: under the Triton-on-CPU harness (counts only)")
    parser.add_argument("--workloads", help="comma-separated (default: all on cuda; on cpu each patch's fast "
                        "form); 'list' lists them")
    parser.add_argument("--variants", help="comma-separated (default: all; 'list' lists them)")
    parser.add_argument("--reps", type=int, default=1, help="repetitions (default 1)")
    parser.add_argument("--jobs", type=int, default=1, help="processes at once (default 1)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per process (default 900)")
    parser.add_argument("--other-python", help="also run every workload stock with this interpreter's torch")


def out_name(args: Any) -> str:
    return f"compile-{args.device}.json"


def _plan(args: Any) -> tuple[list[str], list[str]]:
    known, all_variants = list(_owners()), _variants()
    if args.workloads == "list" or args.variants == "list":
        raise SystemExit("\n".join(known if args.workloads == "list" else all_variants))
    names = args.workloads.split(",") if args.workloads else (list(_fast()) if args.device == "cpu" else known)
    unknown = [name for name in names if name not in known]
    variants = args.variants.split(",") if args.variants else list(all_variants)
    bad = [v for v in variants if v not in all_variants]
    if unknown or bad or args.jobs < 1 or args.timeout <= 0:
        raise SystemExit(f"tools/bench compile: unknown workload(s) {unknown or ''} variant(s) {bad or ''} "
                         f"(workloads: {', '.join(known)}; --jobs >= 1, --timeout > 0)")
    return names, variants


def run(args: Any, child: Any) -> dict[str, Any]:
    names, variants = _plan(args)
    pythons = {variant: sys.executable for variant in variants}
    if args.other_python:
        version = subprocess.run([args.other_python, "-c", "import torch; print(torch.__version__)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        pythons[f"stock@{version}"] = args.other_python
    groups = [[(rep, name, variant) for variant in pythons] for rep in range(args.reps) for name in names]
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(rep: int, name: str, variant: str) -> None:
        with tempfile.TemporaryDirectory(prefix="bench_compile_") as cache:
            env = {"TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            if variant in ("stock", "workaround") or variant.startswith("stock@"):
                env["INDUCTOR_FIX_DISABLE"] = "1"
            kind = variant.split("@")[0]
            command = [pythons[variant], str(Path(__file__).resolve().parents[1] / "bench"), "_child", "compile",
                       args.device, name, kind]
            start = time.monotonic()
            result = _run_child(command, env, args.timeout)
            result.update(rep=rep, workload=name, variant=variant, wall=round(time.monotonic() - start, 1))
        with lock:
            results.append(result)
            if args.out is not None:  # what is done so far survives a stopped run
                partial = {"kind": "compile", "device": args.device, "torch": result.get("torch", "?"),
                           "variants": list(pythons), "workloads": names, "reps": args.reps, "jobs": args.jobs,
                           "partial": True, "runs": results}
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(partial, indent=1) + "\n")
            print(f"  {name} {variant} rep {rep}: {result.get('seconds')} s, benchmarked {result.get('benchmarked')}, "
                  f"error {result.get('error')}", flush=True)

    print(f"tools/bench compile: {sum(map(len, groups))} runs, {args.jobs} at a time, a workload's variants "
          "together", flush=True)
    running, changed = [0], threading.Condition()

    def finish(_future: Any) -> None:
        with changed:
            running[0] -= 1
            changed.notify_all()

    with concurrent.futures.ThreadPoolExecutor(max(args.jobs, max(map(len, groups)))) as pool:
        futures = []
        for group in groups:  # a group starts when all its variants can (alone, if it is larger than --jobs)
            size = len(group)
            with changed:
                changed.wait_for(lambda size=size: running[0] + size <= max(args.jobs, size))
                running[0] += size
            for run in group:
                futures.append(pool.submit(one, *run))
                futures[-1].add_done_callback(finish)
        for future in futures:
            future.result()
    versions = sorted({r["torch"] for r in results if r.get("torch") and "@" not in r["variant"]})
    return {"kind": "compile", "device": args.device, "torch": ", ".join(versions) or "?",
            "variants": list(pythons), "workloads": names, "reps": args.reps, "jobs": args.jobs,
            "runs": sorted(results, key=lambda r: (r["workload"], r["variant"], r["rep"]))}


def _run_child(command: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from inductor_fix.check.child import run_child

    result = run_child(command, {**os.environ, "PYTHONUNBUFFERED": "1", **env}, "BENCH_RESULT ", timeout)
    return result.result if result.result is not None else {"error": f"no result: {result.failure}"}


# --- the child: one workload, one variant, counted --------------------------------------


class _Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[str, Any] = {"generated": 0, "benchmarked": 0, "precompiled": 0, "selections": 0,
                                       "generate_s": 0.0, "select_s": 0.0}

    def add(self, name: str, n: float = 1) -> None:
        with self.lock:
            self.values[name] += n


@contextlib.contextmanager
def _counting(counts: _Counts):
    """Count and time around whatever sits in these slots now (stock, or the fix's wrappers):
    ``PersistentCache.lookup``'s benchmark callable, template precompiles, generated choices,
    selections."""
    from unittest import mock

    from torch._inductor import select_algorithm
    from torch._inductor.codecache import PersistentCache

    lookup = PersistentCache.lookup

    def counted_lookup(self: Any, choices: Any, op: Any, inputs: Any, benchmark: Any, *args: Any, **kwargs: Any):
        if benchmark is not None:
            counts.add("selections")
            inner = benchmark

            def benchmark(chosen: Any) -> Any:
                counts.add("benchmarked", len(chosen))
                return inner(chosen)
        return lookup(self, choices, op, inputs, benchmark, *args, **kwargs)

    def timed(function: Any, seconds: str, count: str | None = None) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = function(*args, **kwargs)
            finally:
                counts.add(seconds, time.perf_counter() - start)
            if count is not None and result is not None:
                counts.add(count)
            return result

        return run

    template, selector = select_algorithm.TritonTemplate, select_algorithm.AlgorithmSelectorCache
    caller = select_algorithm.TritonTemplateCaller
    precompile = caller.__dict__["precompile"]

    def counted_precompile(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts.add("precompiled")
        return precompile(self, *args, **kwargs)

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(PersistentCache, "lookup", counted_lookup))
        stack.enter_context(mock.patch.object(template, "generate",
                                              timed(template.__dict__["generate"], "generate_s", "generated")))
        stack.enter_context(mock.patch.object(selector, "__call__", timed(selector.__dict__["__call__"], "select_s")))
        stack.enter_context(mock.patch.object(caller, "precompile", counted_precompile))
        yield


class _PythonWithPrecompile(types.ModuleType):
    """``sys`` as ``select_algorithm`` sees it under ``--device cpu``: Python 3.11.9 where this is
    3.11.0-3.11.8, everything else this interpreter's."""

    version_info = types.SimpleNamespace(major=3, minor=11, micro=9)

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


def _precompile_nothing(self: Any, *args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def _precompiling():
    """Inductor's precompile step on the CPU harness, on any Python: each choice it precompiles
    is a call that compiles nothing (what the harness makes of Triton's compile)."""
    from unittest import mock

    from torch._inductor import select_algorithm

    with contextlib.ExitStack() as stack:
        if sys.version_info[:2] == (3, 11) and sys.version_info.micro <= 8:
            stack.enter_context(mock.patch.object(select_algorithm, "sys", _PythonWithPrecompile("sys")))
        stack.enter_context(mock.patch.object(select_algorithm.TritonTemplateCaller, "precompile",
                                              _precompile_nothing))
        yield


def _workload(name: str, device: str, outputs: dict[str, Any]) -> tuple[Callable[[], str | None], dict[str, Any]]:
    """``(run() -> error or None, the workaround's config)`` for workload ``name``; a client's
    losses go to ``outputs``."""
    if name in CLIENTS:
        spec = importlib.util.spec_from_file_location("inductor_fix_bench_clients", CLIENTS_SCRIPT)
        clients = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(clients)
        argv = CLIENTS[name]
        clients.DEVICE = device
        if "--widths" in argv:
            clients.WIDTHS = tuple(int(w) for w in argv[argv.index("--widths") + 1].split(","))

        def run_client() -> str | None:
            import torch

            outputs["losses"] = clients.CLIENTS[name](torch, clients.MODE, 3)
            return None

        return run_client, clients.WORKAROUND
    patch = _owners()[name]
    bench = load_parts("bench").parts.get(patch.name)
    workaround = dict(bench.compile_workaround) if bench is not None else {}
    extra = bench.compile_workloads if bench is not None else {}
    if name in extra:
        return (lambda: _first_error(extra[name](device))), workaround
    from inductor_fix.check.table import run_sequence

    op, order = name.split(":")
    return (lambda: _first_error(run_sequence(op, order, device, compare=False))), workaround


def _first_error(steps: list[Any]) -> str | None:
    return next((step.error for step in steps if step.error), None)


def worker(argv: list[str]) -> dict[str, Any]:
    device, name, variant = argv
    import inductor_fix  # noqa: F401  (the package as installed; stock under INDUCTOR_FIX_DISABLE=1)
    import torch
    from torch._dynamo.utils import counters
    from torch._inductor import config

    sys.path.insert(0, str(ROOT))
    import torch._inductor.select_algorithm  # noqa: F401  (the fix lands here)

    counts, outputs = _Counts(), {}
    run, workaround = _workload(name, device, outputs)
    undo = {v: make for _, bench in _bench_parts() for v, make in bench.compile_variants.items()}
    with contextlib.ExitStack() as stack:
        if device == "cpu":
            from inductor_fix.check.harness import triton_cpu_harness

            # The autotune cache on, as by default: stock then skips a replayed choice's benchmark.
            stack.enter_context(triton_cpu_harness(autotune_local_cache=True))
            stack.enter_context(_precompiling())
        stack.enter_context(config.patch(workaround if variant == "workaround" else {}))
        if variant in undo:
            stack.enter_context(undo[variant]())
        stack.enter_context(_counting(counts))
        start = time.perf_counter()
        try:
            error = run()
        except Exception as exc:  # the crash under study is a result
            from inductor_fix.check.workloads import describe_error

            error = describe_error(exc)
        seconds = time.perf_counter() - start
    fix = sys.modules["inductor_fix"]
    values = {key: round(value, 2) if isinstance(value, float) else value for key, value in counts.values.items()}
    return {"seconds": round(seconds, 2), "error": error, **values, **outputs,
            "codegen_hits": counters["inductor"]["generated_module_cache_hit"],
            "codegen_misses": counters["inductor"]["generated_module_cache_miss"],
            "activity": {patch: entry["counts"] for patch, entry in fix.activity().items() if entry["counts"]},
            "torch": torch.__version__}


# --- the table ---------------------------------------------------------------------------

COLUMNS = ("seconds", "generate_s", "select_s", "generated", "codegen_hits", "codegen_misses", "precompiled",
           "benchmarked")


def markdown(data: dict[str, Any]) -> str:
    runs = data["runs"]
    note = f" ({data['note']})" if data.get("note") else ""
    lines = [f"Whole compiles, {data['device']}, torch {data['torch']}, {data['reps']} repetition(s), "
             f"{data['jobs']} process(es) at a time (`{data.get('command', 'tools/bench compile')}`){note}:", "",
             "| workload | variant | " + " | ".join(COLUMNS) + " | error |",
             "|---|---|" + "---|" * len(COLUMNS) + "---|"]
    for run in runs:
        cells = [str(run.get(column, "-")) for column in COLUMNS]
        error = run.get("error") or ""
        lines.append(f"| {run['workload']} | {run['variant']} | " + " | ".join(cells) + f" | {error} |")
    ratios = _ratios(runs)
    if ratios:
        lines += ["", "| workload | compared | compile seconds, ratio | benchmarked, patched - other | goal |",
                  "|---|---|---|---|---|"]
        lines += ratios
    return "\n".join(lines)


def _ratios(runs: list[dict[str, Any]]) -> list[str]:
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
        by.setdefault((run["workload"], run["variant"]), []).append(run)
    lines = []
    for workload in dict.fromkeys(run["workload"] for run in runs):
        patched = sorted(by.get((workload, "patched"), []), key=lambda r: r["rep"])
        for other in [v for v in dict.fromkeys(run["variant"] for run in runs) if v != "patched"]:
            others = sorted(by.get((workload, other), []), key=lambda r: r["rep"])
            pairs = [(p, o) for p, o in zip(patched, others) if not p.get("error") and "seconds" in o]
            if not pairs:
                continue
            crashed = any(o.get("error") for _, o in pairs)
            ratio = paired_ratios([p["seconds"] for p, _ in pairs], [o["seconds"] for _, o in pairs])
            extra = max(p["benchmarked"] - o["benchmarked"] for p, o in pairs)
            goal = ""
            if other == "stock" and not crashed:
                goal = f"≤ {STOCK_GOAL}, benchmarked ≤ stock's"
            elif other == "workaround" and any(o.get("error") for o in by.get((workload, "stock"), [])):
                goal = f"≤ {WORKAROUND_GOAL}"
            label = f"patched / {other}" + (" (crashed)" if crashed else "")
            lines.append(f"| {workload} | {label} | {span(ratio)} | {extra:+d} | {goal} |")
    return lines


PART = BenchPart(help=("whole max-autotune compiles: patched vs stock vs the workaround, with counts "
                       "(--device cuda on a GPU)"),
                 add_arguments=add_arguments, run=run, markdown=markdown, worker=worker, out_name=out_name)
