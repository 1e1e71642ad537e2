"""What ``check``'s workloads are made of, shared by every patch's: a :class:`Workload`
(an op, its sequences, how one runs, whether ``check`` runs it unasked), the compile of one
step, and two-compile sequences of a template :class:`Op` with and without aliased operands.

Each patch declares its own workloads in its folder's ``check`` part
(``inductor_fix/patches/<folder>/check.py``, a :class:`~inductor_fix.check.parts.CheckPart`),
read by :mod:`inductor_fix.check.table`; this module knows no patch and no op.

Sequences (:data:`SEQUENCES`): two compiles in one process with equal layouts, one where
operands alias (the same tensor twice, or three times), one where they do not.
``alias-first`` (aliased, then distinct) and ``distinct-first`` (the other order).
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
    "max_rel_error",
    "run_compiles",
]

MODE = "max-autotune-no-cudagraphs"
#: order -> whether each compile's operands alias.
SEQUENCES: dict[str, tuple[bool, ...]] = {"alias-first": (True, False), "distinct-first": (False, True)}
ORDERS = tuple(SEQUENCES)


class Workload(NamedTuple):
    """One ``check`` op of a patch: ``sequences`` maps each order it runs in to ``(its label
    in the verdict table, how many compiles it has)``; ``run(order, device, compare=...,
    **options)`` runs one sequence in this process and returns its :class:`Step` list.
    ``help``: what the op compiles, for ``check --help``; ``default``: whether ``check`` runs
    it without ``--ops``; ``affected``: the stock releases where it crashes, as a
    ``packaging`` specifier ("": the patch's ``affected``); ``unavailable(device)``: why it
    cannot run on ``device`` on this machine (a backend, a compiler it needs), None where it can
    (None: it runs wherever ``check`` does)."""

    op: str
    sequences: Mapping[str, tuple[str, int]]
    run: Callable[..., list[Step]]
    help: str = ""
    default: bool = True
    affected: str = ""
    unavailable: Callable[[str], str | None] | None = None


@dataclasses.dataclass(frozen=True)
class Op:
    """A template op: ``call(*operands)``, operand count, and the operand shape. Without
    ``call`` the op calls the ``torch`` function of its name, so that ops are declared
    without importing torch."""

    name: str
    operands: int
    shape: tuple[int, ...]
    call: Callable[..., Any] | None = None

    def __call__(self, *operands: Any) -> Any:
        if self.call is not None:
            return self.call(*operands)
        import torch

        return getattr(torch, self.name)(*operands)


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
    op: Op,
    aliasing: Sequence[bool],
    device: str,
    *,
    compare: bool,
    dtype: Any = None,
    compile_options: dict[str, Any] | None = None,
) -> list[Step]:
    """One fresh ``torch.compile`` of ``op`` per entry of ``aliasing``
    (True: all operands are one tensor), in this process, same layouts throughout.

    ``compare=True`` checks each result against eager (meaningless under the CPU
    harness, where launches compute nothing). ``compile_options`` go to
    ``torch.compile`` (e.g. ``{"dynamic": True}``). Stops at the first failing step.
    The FX graph cache is off: a repeated graph would be served whole from it and
    never reach template codegen, as different graphs of a real model do.
    """
    from torch._inductor import config

    with config.patch(fx_graph_cache=False):
        return _run_compiles(op, aliasing, device, compare, dtype, compile_options or {})


def _run_compiles(
    op: Op, aliasing: Sequence[bool], device: str, compare: bool, dtype: Any, compile_options: dict[str, Any]
) -> list[Step]:
    import torch

    steps: list[Step] = []
    for aliased in aliasing:
        operands = make_operands(op, aliased, device, dtype, seed=len(steps))
        torch._dynamo.reset()
        compiled = torch.compile(lambda *xs: op(*xs), mode=MODE, fullgraph=True, **compile_options)
        check = (lambda result, operands=operands: max_rel_error(result, op(*operands))) if compare else None
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


def describe_error(error: BaseException) -> str:
    """``"TypeError: <first line>"`` of the innermost error, without Inductor's wrapper text."""
    while (inner := getattr(error, "inner_exception", None) or error.__cause__) is not None:
        error = inner
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if type(error).__name__ == "LoweringException":  # its message already starts "TypeError: ..."
        return first
    return f"{type(error).__name__}: {first}"
