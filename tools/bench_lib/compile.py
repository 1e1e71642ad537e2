"""``tools/bench compile``: whole max-autotune compiles, patched against stock and the workaround.

Each (workload, variant, repetition) is a fresh process with a fresh Inductor cache
(``TORCHINDUCTOR_CACHE_DIR``), its autotune cache on as by default. The variants of one
workload start together, ``--jobs`` processes at a time. Per run: wall seconds of the
compiles (a client's whole run), and counts taken in the child around stock code:

- ``generated``: template choices ``TritonTemplate.generate`` returned;
- ``codegen_hits`` / ``codegen_misses``: Inductor's codegen-cache counters
  (``generated_module_cache_hit`` / ``_miss``); a miss is a template rendered;
- ``benchmarked``: choices handed to autotuning's benchmark (the ``benchmark`` callable of
  ``PersistentCache.lookup``, which stock calls only on an autotune-cache miss);
- ``precompiled``: ``TritonTemplateCaller.precompile`` calls (Triton compiles for the
  device; none on the CPU harness, or on Python 3.11.0-3.11.8, where Inductor skips them).

Variants: ``patched`` (the package as installed), ``unshared`` (patched, but cache-key's
``TritonTemplateCaller.hash_key`` wrapper put back to stock: the fix without shared
autotuning, as 0.1.0 shipped it), ``stock`` (``INDUCTOR_FIX_DISABLE=1``), ``workaround``
(stock with upstream's workaround: the codegen cache off for matmuls,
``enable_caching_generated_triton_templates=False``; in-subprocess autotuning for flex,
``autotune_in_subproc=True``); ``--other-python PY`` adds ``stock@<torch version>``, the
same workloads run stock by that interpreter (a venv of another release, 2.15.0 say).

Workloads (``--workloads``): every ``check`` sequence of a matmul op (``bmm:alias-first``
...), ``newton_schulz`` (an optimizer step of Gram and Newton-Schulz products on square
weights, ``G @ G.mT``, ``A @ A``, ``B @ X``), ``mm_plus_mm`` (``x @ w1 + x @ w2``, then
``a @ b + c @ d``), ``flex_backward:training`` (a flex training step), and the real clients
of ``test/clients/clients.py`` where their library is installed (``pytorch_optimizer``:
SOAP, the step compiled; ``heavyball``: heavyball's SOAP). Ratios pair the runs of one
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
from pathlib import Path
from typing import Any, Callable

from .stats import paired_ratios, span

__all__ = ["HELP", "add_arguments", "markdown", "out_name", "run", "worker"]

HELP = "whole max-autotune compiles: patched vs stock vs the workaround, with counts (--device cuda on a GPU)"

ROOT = Path(__file__).resolve().parents[2]
CLIENTS_SCRIPT = ROOT / "test" / "clients" / "clients.py"
VARIANTS = ("patched", "unshared", "stock", "workaround")
#: Workloads of the fast form (``--device cpu`` without ``--workloads``).
CPU_DEFAULT = ("bmm:alias-first", "bmm:distinct-first", "newton_schulz", "mm_plus_mm")
CLIENTS = {"pytorch_optimizer": ("pytorch_optimizer", []),
           "heavyball": ("heavyball", ["--widths", "128,128,128,128"])}
#: Goals (issue 35): patched/stock compile seconds where stock survives, patched/workaround where it crashes.
STOCK_GOAL, WORKAROUND_GOAL = 1.05, 0.9


def _matmul_sequences() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from inductor_fix.check.table import orders_of, workloads

    return [f"{op}:{order}" for op in workloads() if not op.startswith("flex") for order in orders_of(op)]


def _known_workloads() -> list[str]:
    return [*_matmul_sequences(), "newton_schulz", "mm_plus_mm", "flex_backward:training", *CLIENTS]


def add_arguments(parser: Any) -> None:
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cpu: under the Triton-on-CPU harness (counts only)")
    parser.add_argument("--workloads", help="comma-separated (default: all on cuda; on cpu "
                        f"{','.join(CPU_DEFAULT)}); 'list' lists them")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated of {', '.join(VARIANTS)}")
    parser.add_argument("--reps", type=int, default=1, help="repetitions (default 1)")
    parser.add_argument("--jobs", type=int, default=1, help="processes at once (default 1)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per process (default 900)")
    parser.add_argument("--other-python", help="also run every workload stock with this interpreter's torch")


def out_name(args: Any) -> str:
    return f"compile-{args.device}.json"


def _plan(args: Any) -> tuple[list[str], list[str]]:
    known = _known_workloads()
    if args.workloads == "list":
        raise SystemExit("\n".join(known))
    names = args.workloads.split(",") if args.workloads else (list(CPU_DEFAULT) if args.device == "cpu" else known)
    unknown = [name for name in names if name not in known]
    variants = args.variants.split(",")
    bad = [v for v in variants if v not in VARIANTS]
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
    runs = [(rep, name, variant) for rep in range(args.reps) for name in names for variant in pythons]
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(rep: int, name: str, variant: str) -> None:
        with tempfile.TemporaryDirectory(prefix="bench_compile_") as cache:
            env = {"TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            if variant != "patched" and variant != "unshared":
                env["INDUCTOR_FIX_DISABLE"] = "1"
            kind = "workaround" if variant == "workaround" else variant.split("@")[0]
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

    print(f"tools/bench compile: {len(runs)} runs, {args.jobs} at a time", flush=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for future in [pool.submit(one, *r) for r in runs]:
            future.result()
    versions = sorted({r["torch"] for r in results if r.get("torch") and r["variant"] in VARIANTS})
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
        self.values = {"generated": 0, "benchmarked": 0, "precompiled": 0, "selections": 0}

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.values[name] += n


@contextlib.contextmanager
def _counting(counts: _Counts, unshared: bool):
    """Count around stock code: ``PersistentCache.lookup``'s benchmark callable, template
    precompiles and generated choices (wrapping whatever sits in those slots now)."""
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

    template = select_algorithm.TritonTemplate
    generate = template.__dict__["generate"]

    def counted_generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        choice = generate(self, *args, **kwargs)
        if choice is not None:
            counts.add("generated")
        return choice

    caller = select_algorithm.TritonTemplateCaller
    precompile = caller.__dict__["precompile"]

    def counted_precompile(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts.add("precompiled")
        return precompile(self, *args, **kwargs)

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(PersistentCache, "lookup", counted_lookup))
        stack.enter_context(mock.patch.object(template, "generate", counted_generate))
        stack.enter_context(mock.patch.object(caller, "precompile", counted_precompile))
        if unshared:  # the fix as 0.1.0 shipped it: cache-key's hash_key wrapper back to stock
            import inductor_fix

            stock = inductor_fix.original("TritonTemplateCaller.hash_key")
            stack.enter_context(mock.patch.object(caller, "hash_key", stock))
        yield


def _workload(name: str, device: str, outputs: dict[str, Any]) -> Callable[[], str | None]:
    """``run() -> error or None`` for workload ``name``; a client's losses go to ``outputs``."""
    if name in CLIENTS:
        spec = importlib.util.spec_from_file_location("inductor_fix_bench_clients", CLIENTS_SCRIPT)
        clients = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(clients)
        client, argv = CLIENTS[name]
        clients.DEVICE = device
        if "--widths" in argv:
            clients.WIDTHS = tuple(int(w) for w in argv[argv.index("--widths") + 1].split(","))

        def run_client() -> str | None:
            import torch

            outputs["losses"] = clients.CLIENTS[client](torch, clients.MODE, 3)
            return None

        return run_client
    if name == "newton_schulz":
        return lambda: _first_error(newton_schulz(device))
    if name == "mm_plus_mm":
        return lambda: _first_error(mm_plus_mm(device))
    from inductor_fix.check.table import run_sequence

    op, order = name.split(":")
    return lambda: _first_error(run_sequence(op, order, device, compare=False))


def _first_error(steps: list[Any]) -> str | None:
    return next((step.error for step in steps if step.error), None)


def newton_schulz(device: str, n: int = 128) -> list[Any]:
    """A Muon-style optimizer step on two square weights: one Newton-Schulz iteration of each
    gradient ``X`` (a graph input), ``A = X @ X.mT`` (one tensor and its transposed view),
    ``B = A @ A``, ``Y = B @ X``, ``X' = a*X + b*(A @ X) + c*Y``. ``A @ A`` and ``B @ X`` have
    one stock codegen-cache key (template outputs and inputs are fixed layouts) and two
    aliasing patterns; the second weight's products hit the first's entries."""
    import torch
    from inductor_fix.check.workloads import MODE, compile_step
    from torch._inductor import config

    a, b, c = 3.4445, -4.7750, 2.0315

    def step(weights: list[Any], grads: list[Any]) -> None:
        for weight, x in zip(weights, grads):
            gram = x @ x.mT
            square = gram @ gram
            weight.sub_(0.02 * (a * x + b * (gram @ x) + c * (square @ x)))

    generator = torch.Generator(device="cpu").manual_seed(0)
    weights = [torch.randn(n, n, generator=generator).to(device) for _ in range(2)]
    grads = [torch.randn(n, n, generator=generator).div(n).to(device) for _ in range(2)]
    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False):
        compiled = torch.compile(step, mode=MODE, fullgraph=True)
        return [compile_step(True, compiled, (weights, grads), device, None)]


def mm_plus_mm(device: str, n: int = 128) -> list[Any]:
    """``x @ w1 + x @ w2`` (one input twice: Inductor's ``mm_plus_mm`` template), then
    ``a @ b + c @ d`` of the same layouts, two compiles in one process."""
    import torch
    from inductor_fix.check.workloads import MODE, compile_step
    from torch._inductor import config

    generator = torch.Generator(device="cpu").manual_seed(0)

    def tensor() -> Any:
        return torch.randn(n, n, generator=generator).to(device)

    x, w1, w2 = tensor(), tensor(), tensor()
    a, b, c, d = tensor(), tensor(), tensor(), tensor()
    steps = []
    with config.patch(fx_graph_cache=False):
        for aliased, args in ((True, (x, w1, x, w2)), (False, (a, b, c, d))):
            torch._dynamo.reset()
            compiled = torch.compile(lambda p, q, r, s: p @ q + r @ s, mode=MODE, fullgraph=True)
            steps.append(compile_step(aliased, compiled, args, device, None))
            if steps[-1].error:
                break
    return steps


def worker(argv: list[str]) -> dict[str, Any]:
    device, name, variant = argv
    import inductor_fix  # noqa: F401  (the package as installed; stock under INDUCTOR_FIX_DISABLE=1)
    import torch
    from torch._dynamo.utils import counters
    from torch._inductor import config

    sys.path.insert(0, str(ROOT))
    import torch._inductor.select_algorithm  # noqa: F401  (the fix lands here)

    settings: dict[str, Any] = {}
    if variant == "workaround":
        settings = ({"autotune_in_subproc": True} if name.startswith("flex")
                    else {"enable_caching_generated_triton_templates": False})
    counts = _Counts()
    with contextlib.ExitStack() as stack:
        if device == "cpu":
            from inductor_fix.check.harness import triton_cpu_harness

            # The autotune cache on, as by default: stock then skips a replayed choice's benchmark.
            stack.enter_context(triton_cpu_harness(autotune_local_cache=True))
        stack.enter_context(config.patch(settings))
        stack.enter_context(_counting(counts, variant == "unshared"))
        outputs: dict[str, Any] = {}
        run = _workload(name, device, outputs)
        start = time.perf_counter()
        try:
            error = run()
        except Exception as exc:  # the crash under study is a result
            from inductor_fix.check.workloads import describe_error

            error = describe_error(exc)
        seconds = time.perf_counter() - start
    fix = sys.modules["inductor_fix"]
    return {"seconds": round(seconds, 2), "error": error, **counts.values, **outputs,
            "codegen_hits": counters["inductor"]["generated_module_cache_hit"],
            "codegen_misses": counters["inductor"]["generated_module_cache_miss"],
            "activity": {patch: entry["counts"] for patch, entry in fix.activity().items() if entry["counts"]},
            "torch": torch.__version__}


# --- the table ---------------------------------------------------------------------------

COLUMNS = ("seconds", "generated", "codegen_hits", "codegen_misses", "precompiled", "benchmarked")


def markdown(data: dict[str, Any]) -> str:
    runs = data["runs"]
    lines = [f"Whole compiles, {data['device']}, torch {data['torch']}, {data['reps']} repetition(s), "
             f"{data['jobs']} process(es) at a time (`{data.get('command', 'tools/bench compile')}`):", "",
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
        for other in ("stock", "workaround", "unshared"):
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

