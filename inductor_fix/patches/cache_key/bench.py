"""``tools/bench cache_key``: what the cache-key patch costs per ``make_key`` call, on the CPU.

In a child process started with ``INDUCTOR_FIX_DISABLE=1`` (so the parent never imports
torch): apply this patch alone once (its one-time cost when Inductor loads), then time stock
and patched ``make_key`` in alternating short ``timeit`` samples (ABBA), with distinct
and with aliased inputs of a real (4, 128, 128) fp32 bmm choice, and two controls
(stock against itself; the wrapper around a constant-key ``make_key``). Also the
activity record's part of a call when nothing happens (``cache_key._note_pattern``).
Goals: patched/stock ≤ 1.05; activity ≤ 1 µs per key.
"""

from __future__ import annotations

import inspect
import os
import time
import timeit
from typing import Any

from ...check.parts import BenchPart
from ..._stats import paired_ratios, span, summary

__all__ = ["ACTIVITY_GOAL_NS", "KEY_GOAL_RATIO", "PART", "add_arguments", "markdown", "run", "worker"]

KEY_GOAL_RATIO = 1.05
ACTIVITY_GOAL_NS = 1000.0

#: ``make_key`` arguments of a real (4, 128, 128) fp32 bmm choice, as recorded from a
#: torch 2.14 compile: the probe's values for every parameter of torch 2.8-2.15, with
#: this choice's stages and template kwargs (``_key_arguments`` adds nodes, layouts, epilogue).
KEY_CHOICE: dict[str, Any] = {
    "num_stages": 3,
    "kwargs": {"EVEN_K": True, "USE_FAST_ACCUM": False, "ACC_TYPE": "tl.float32", "BLOCK_M": 64, "BLOCK_N": 64,
               "BLOCK_K": 32, "GROUP_M": 8, "ALLOW_TF32": False},
}


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
    from inductor_fix.patches.cache_key.probe import PROBE_ARGUMENTS

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


def add_arguments(parser: Any) -> None:
    parser.add_argument("--rounds", type=int, default=400, help="alternating timeit rounds (default 400)")
    parser.add_argument("--sample-seconds", type=float, default=0.005, help="length of one sample (default 0.005)")


def run(args: Any, child: Any) -> dict[str, Any]:
    """:func:`worker` in a child started with ``INDUCTOR_FIX_DISABLE=1`` (it applies the fix itself, timed)."""
    return child([str(args.rounds), str(args.sample_seconds)], {"INDUCTOR_FIX_DISABLE": "1"})


def worker(argv: list[str]) -> dict[str, Any]:
    """Run in a child started with ``INDUCTOR_FIX_DISABLE=1``: apply the fix once
    (timed: its one-time cost when Inductor loads), then time stock and patched
    ``make_key`` in alternating rounds, with distinct and with aliased inputs.

    The ``control`` case times stock against itself: how far from 1 this method
    puts two equal functions on this machine. The ``wrapper`` case wraps a
    ``make_key`` that returns a constant key: what the fix adds per call, free of
    the stock key's own cost (mostly sympy printing) and of that cost's noise.
    """
    rounds, seconds_per_sample = int(argv[0]), float(argv[1])
    import torch

    import inductor_fix
    from inductor_fix.patches.cache_key import PATCH
    from inductor_fix.patches.cache_key import fix as cache_key
    from inductor_fix.patches.cache_key.fix import aliasing_aware_make_key
    from torch._inductor import select_algorithm

    os.environ.pop("INDUCTOR_FIX_DISABLE")
    start = time.perf_counter()
    status = inductor_fix.apply(PATCH.name).patch(PATCH.name)  # this patch alone: its wrapper is the slot's
    apply_ms = (time.perf_counter() - start) * 1e3
    if str(status.state) != "applied":  # this patch's state, not the fix's
        raise SystemExit(f"nothing to measure: GeneratedCodeCache.make_key is not wrapped on torch "
                         f"{torch.__version__} ({PATCH.name} {status.state}: {status.reason})")
    cache_class = select_algorithm.GeneratedCodeCache
    stock = inductor_fix.original("GeneratedCodeCache.make_key")
    patched = cache_class.__dict__["make_key"]
    cache = cache_class()

    result: dict[str, Any] = {"kind": "cache_key", "torch": torch.__version__, "rounds": rounds, "apply_ms": apply_ms,
                              "cases": {}}
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
    # The activity record's part of a call when nothing happens, on a template's own cache:
    # "usual", a stock key met again with its one pattern (every key of a template but the
    # aliased ones); "two patterns", at its costliest: a key already seen with both patterns
    # (the rounds above), the other pattern's entry not in the cache, so every call looks for it.
    args = _key_arguments(select_algorithm, stock, aliased=False)
    key = stock(cache, *args)
    pattern = cache_key.aliasing_pattern(args[0])
    single = f"{key} "  # the same key but for a space: seen with one pattern only
    result["activity_ns"] = {}
    for name, note_key in (("usual", single), ("two patterns", key)):
        cache_key._note_pattern(cache, note_key, pattern)
        timer = timeit.Timer("note(cache, key, pattern)", globals={"note": cache_key._note_pattern, "cache": cache,
                                                                 "key": note_key, "pattern": pattern})
        number, _ = timer.autorange()
        samples = [timer.timeit(number) / number * 1e9 for _ in range(max(5, rounds // 20))]
        result["activity_ns"][name] = summary(samples)
    result["key_chars"] = len(key)
    return result


def markdown(data: dict[str, Any]) -> str:
    cases = data["cases"]
    rows = [f"| {name} | {cases[name]['stock_ns']['median'] / 1e3:.1f} | "
            f"{cases[name]['patched_ns']['median'] / 1e3:.1f}"
            f" | {span(cases[name]['ratio'])} |" for name in ("distinct", "aliased", "control", "wrapper")]
    met = all(cases[c]["ratio"]["median"] <= KEY_GOAL_RATIO for c in ("distinct", "aliased"))
    activity = "; ".join(f"{span(measured, 0)} ns per key, {name}" for name, measured in data["activity_ns"].items())
    return "\n".join([
        f"`GeneratedCodeCache.make_key`, stock vs patched, torch {data['torch']}, {data['rounds']} alternating rounds "
        f"(`{data['command']}`):", "",
        "| inputs | stock µs | patched µs | patched/stock per round, median [spread] |", "|---|---|---|---|",
        *rows, "",
        f"Goal patched/stock ≤ {KEY_GOAL_RATIO} (distinct and aliased): {'met' if met else 'NOT met'}. "
        f"Applying the fix once Inductor loads: {data['apply_ms']:.0f} ms. Recording activity when nothing "
        f"happens: {activity} (goal ≤ {ACTIVITY_GOAL_NS:.0f}; {data['key_chars']}-character key).",
    ])


# --- for ``tools/bench compile``: whole compiles (its generic runner counts and times them) ---

def newton_schulz(device: str, n: int = 128) -> list[Any]:
    """A Muon-style optimizer step on two square weights: one Newton-Schulz iteration of each
    gradient ``X`` (a graph input), ``A = X @ X.mT`` (one tensor and its transposed view),
    ``B = A @ A``, ``Y = B @ X``, ``X' = a*X + b*(A @ X) + c*Y``. ``A @ A`` and ``B @ X`` have
    one stock codegen-cache key (template outputs and inputs are fixed layouts) and two
    aliasing patterns; the second weight's products hit the first's entries."""
    import torch
    from torch._inductor import config

    from ...check.workloads import MODE, compile_step

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
    from torch._inductor import config

    from ...check.workloads import MODE, compile_step

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


PART = BenchPart(
    help="make_key stock vs patched, and the activity record per key (~2 min)",
    add_arguments=add_arguments, run=run, worker=worker, markdown=markdown,
    # Upstream's workaround for pytorch/pytorch#188069: the codegen cache off.
    compile_workaround={"enable_caching_generated_triton_templates": False},
    # Whole compiles besides its ``check`` sequences, and what the fast form (--device cpu) runs.
    compile_workloads={"newton_schulz": newton_schulz, "mm_plus_mm": mm_plus_mm},
    compile_fast=("bmm:alias-first", "bmm:distinct-first", "newton_schulz", "mm_plus_mm"),
)
