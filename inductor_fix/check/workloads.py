"""What ``check``'s workloads are made of, shared by every patch's: a :class:`Workload`
(an op, its sequences, how one runs), the compile of one step, and the matmul compiles.

Each patch declares its own workloads in ``inductor_fix/check/<patch module>.py``
(``WORKLOADS``), found through the patch table by :mod:`inductor_fix.check.table`; this
module knows no patch.

Matmuls (the template compiles of pytorch/pytorch#188069, also what the arity guard's
tests drive): two compiles in one process with equal layouts, one where operands alias
(the same tensor twice, or three times for addmm/baddbmm), one where they do not.
``alias-first`` (aliased, then distinct) makes the stock launch take one argument too
many; ``distinct-first`` one too few. Shapes as measured on the H200: (4, 128, 128) for
bmm/baddbmm, (128, 128) for mm/addmm.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping, NamedTuple, Sequence

__all__ = [
    "MODE",
    "ORDERS",
    "SEQUENCES",
    "Op",
    "Step",
    "Workload",
    "compile_step",
    "describe_error",
    "make_operands",
    "matmul_ops",
    "max_rel_error",
    "optimizer_step",
    "run_compiles",
]

MODE = "max-autotune-no-cudagraphs"
#: order -> whether each compile's operands alias.
SEQUENCES: dict[str, tuple[bool, ...]] = {"alias-first": (True, False), "distinct-first": (False, True)}
ORDERS = tuple(SEQUENCES)


class Workload(NamedTuple):
    """One ``check`` op of a patch: ``sequences`` maps each order it runs in to ``(its label
    in the verdict table, how many compiles it has)``; ``run(order, device, compare=...,
    **options)`` runs one sequence in this process and returns its :class:`Step` list."""

    op: str
    sequences: Mapping[str, tuple[str, int]]
    run: Callable[..., list[Step]]


@dataclasses.dataclass(frozen=True)
class Op:
    """A template op: ``call(*operands)``, operand count, and the operand shape."""

    name: str
    operands: int
    shape: tuple[int, ...]
    call: Callable[..., Any]


def matmul_ops() -> dict[str, Op]:
    """The matmul template ops by name (``run_compiles`` compiles them)."""
    import torch

    return {
        "bmm": Op("bmm", 2, (4, 128, 128), torch.bmm),
        "mm": Op("mm", 2, (128, 128), torch.mm),
        "addmm": Op("addmm", 3, (128, 128), torch.addmm),
        "baddbmm": Op("baddbmm", 3, (4, 128, 128), torch.baddbmm),
        # bmm(x, x^T): aliasing through a transposed view, as in grad @ grad^T.
        "bmm_t": Op("bmm_t", 2, (4, 128, 128), lambda a, b: torch.bmm(a, b.transpose(1, 2))),
    }



def make_operands(op: Op, aliased: bool, device: str, dtype: Any = None, seed: int = 0) -> tuple[Any, ...]:
    """``op.operands`` tensors of ``op.shape``: one tensor repeated if ``aliased``."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(seed)
    dtype = dtype or torch.float32

    def tensor():
        return torch.randn(op.shape, generator=generator).to(device=device, dtype=dtype)

    if aliased:
        x = tensor()
        return (x,) * op.operands
    return tuple(tensor() for _ in range(op.operands))


@dataclasses.dataclass
class Step:
    """One compile-and-run: ``error`` is None if it succeeded. ``max_rel_error``
    compares with eager (None when not computed); ``seconds`` is wall time of
    the first compiled call; ``cache_hits`` the codegen-cache hits it caused."""

    aliased: bool
    error: str | None
    seconds: float
    cache_hits: int
    max_rel_error: float | None = None


def max_rel_error(actual: Any, expected: Any) -> float:
    """max |actual - expected| / max |expected| (floor 1e-6), in float32."""
    scale = expected.abs().max().clamp_min(1e-6)
    return float((actual.float() - expected.float()).abs().max() / scale)


def run_compiles(
    name: str,
    aliasing: Sequence[bool],
    device: str,
    *,
    compare: bool,
    dtype: Any = None,
    compile_options: dict[str, Any] | None = None,
) -> list[Step]:
    """One fresh ``torch.compile`` of ``OPS[name]`` per entry of ``aliasing``
    (True: all operands are one tensor), in this process, same layouts throughout.

    ``compare=True`` checks each result against eager (meaningless under the CPU
    harness, where launches compute nothing). ``compile_options`` go to
    ``torch.compile`` (e.g. ``{"dynamic": True}``). Stops at the first failing step.
    The FX graph cache is off: a repeated graph would be served whole from it and
    never reach template codegen, as different graphs of a real model do.
    """
    from torch._inductor import config

    with config.patch(fx_graph_cache=False):
        return _run_compiles(matmul_ops()[name], aliasing, device, compare, dtype, compile_options or {})


def _run_compiles(
    op: Op, aliasing: Sequence[bool], device: str, compare: bool, dtype: Any, compile_options: dict[str, Any]
) -> list[Step]:
    import torch

    steps: list[Step] = []
    for aliased in aliasing:
        operands = make_operands(op, aliased, device, dtype, seed=len(steps))
        torch._dynamo.reset()
        compiled = torch.compile(lambda *xs: op.call(*xs), mode=MODE, fullgraph=True, **compile_options)
        check = (lambda result, operands=operands: max_rel_error(result, op.call(*operands))) if compare else None
        steps.append(compile_step(aliased, compiled, operands, device, check))
        if steps[-1].error:
            break
    return steps


def compile_step(
    aliased: bool,
    compiled: Callable[..., Any],
    args: tuple[Any, ...],
    device: str,
    check: Callable[[Any], float] | None,
) -> Step:
    """The first (compiling) call of ``compiled``, timed, with the codegen-cache hits it
    caused; ``check(result)`` gives the max relative error against eager."""
    import torch
    from torch._dynamo.utils import counters

    hits = counters["inductor"]["generated_module_cache_hit"]
    start = time.perf_counter()
    try:
        result = compiled(*args)
        if device != "cpu":
            torch.cuda.synchronize()
    except Exception as error:
        hits = counters["inductor"]["generated_module_cache_hit"] - hits
        return Step(aliased, describe_error(error), time.perf_counter() - start, hits)
    seconds = time.perf_counter() - start
    hits = counters["inductor"]["generated_module_cache_hit"] - hits
    return Step(aliased, None, seconds, hits, check(result) if check else None)


def optimizer_step(device: str, *, compare: bool, batch: int = 4, n: int = 128, dtype: Any = None) -> list[Step]:
    """The pattern of the upstream report: a Shampoo/SOAP-style preconditioner.

    Compile 1 (aliased): ``L.lerp_(G @ G^T, 1 - beta)`` and ``R.lerp_(G^T @ G, 1 - beta)``
    as einsums of the batched gradient ``G`` (batch, n, n) with itself. Compile 2
    (distinct): the projection ``Q_L^T @ G @ Q_R`` as one einsum of ``G`` with two
    other matrices of the same shape. Their bmm templates see equal layouts, so
    stock Inductor replays compile 1's one-pointer kernel for compile 2 and crashes.
    ``compare=True`` checks both compiled results (state updates, projection) against eager.
    """
    import torch
    from torch._inductor import config

    beta = 0.95

    def update(grad, left, right):
        left.lerp_(torch.einsum("bij,bkj->bik", grad, grad), 1 - beta)
        right.lerp_(torch.einsum("bji,bjk->bik", grad, grad), 1 - beta)

    def project(grad, q_left, q_right):
        return torch.einsum("bji,bjk,bkl->bil", q_left, grad, q_right)

    generator = torch.Generator(device="cpu").manual_seed(0)

    def tensor():
        return torch.randn(batch, n, n, generator=generator).to(device=device, dtype=dtype or torch.float32)

    grad, q_left, q_right = tensor(), tensor(), tensor()
    steps: list[Step] = []
    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False):
        for aliased, function, make_args in (
            (True, update, lambda: (grad, torch.zeros_like(grad), torch.zeros_like(grad))),
            (False, project, lambda: (grad, q_left, q_right)),
        ):
            args, eager_args = make_args(), make_args()

            def check(result, function=function, args=args, eager_args=eager_args):
                expected = function(*eager_args)
                # update() returns None and mutates its state arguments: compare those.
                pairs = [(result, expected)] if result is not None else list(zip(args[1:], eager_args[1:]))
                return max(max_rel_error(a, e) for a, e in pairs)

            compiled = torch.compile(function, mode=MODE, fullgraph=True)
            steps.append(compile_step(aliased, compiled, args, device, check if compare else None))
            if steps[-1].error:
                break
    return steps


def describe_error(error: BaseException) -> str:
    """``"TypeError: <first line>"`` of the innermost error, without Inductor's wrapper text."""
    while error.__cause__ is not None or getattr(error, "inner_exception", None) is not None:
        error = getattr(error, "inner_exception", None) or error.__cause__
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if type(error).__name__ == "LoweringException":  # its message already starts "TypeError: ..."
        return first
    return f"{type(error).__name__}: {first}"
