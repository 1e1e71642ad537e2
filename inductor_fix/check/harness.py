"""Run Inductor's Triton template path on a CPU-only machine, launches checked for arity.

With ``config.cpu_backend = "triton"`` Inductor lowers CPU matmuls through the
same ``TritonTemplate.generate``, ``GeneratedCodeCache`` and
``TritonBenchmarkRequest.make_run_fn`` code as on CUDA. PyPI's triton has no
CPU driver, so this harness replaces exactly three seams, and nothing else:

1. ``torch.utils._triton.triton_hash_with_backend`` - asks the (absent) driver
   for its target; replaced by a constant.
2. ``CachingAutotuner.precompile`` - compiles for the (absent) driver; a no-op.
3. ``CachingAutotuner.run`` - the launch; replaced by an :class:`ArityOracle`
   that binds the launch's positional arguments, minus the 3 grid values, to
   the template kernel's Python signature and raises ``TypeError`` exactly where
   the real launcher would. Nothing is computed: outputs are meaningless.

A patch whose ``check`` workloads need more seams declares them in its folder's ``check``
part (its :class:`~inductor_fix.check.parts.CheckPart`'s ``harness_seams``, read by
:func:`inductor_fix.check.table.harness_seams`, and deleted with the patch); the FlexAttention
workloads add three there (``python -m pydoc`` of that part says which and why).

Also set, because the harness needs them: ``autotune_local_cache=False`` (else a
second compile reuses timings and never launches), ``compile_threads=1`` (keeps
the final compile in this process, where the seams are), and
``max_autotune_gemm_backends="ATEN,TRITON"`` (the C++ template needs a compiler
run per choice and is not what is under test), and ``benchmark_epilogue_fusion=False``
(benchmarking fused epilogues needs a device context the CPU interface lacks).

Use::

    with triton_cpu_harness() as oracle:
        torch.compile(fn, mode="max-autotune-no-cudagraphs")(a, b)
    assert not oracle.mismatches
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Any, Iterator
from unittest import mock

from .._triton_launch import GRID_VALUES  # one definition of the launch's trailing grid arguments
from .table import harness_seams

__all__ = ["ArityOracle", "HARNESS_CONFIG", "Launch", "ORACLE_ERROR", "triton_cpu_harness"]

#: What the oracle raises in the launcher's place (a regular expression of ``Type: message``):
#: on a CPU, the form the Triton patches' stock crash takes (``Patch.crash`` holds the launcher's).
ORACLE_ERROR = r"TypeError: \w+\(\) launch: "

HARNESS_CONFIG: dict[str, Any] = {
    "cpu_backend": "triton",
    "autotune_local_cache": False,
    "compile_threads": 1,
    "max_autotune_gemm_backends": "ATEN,TRITON",
    "benchmark_epilogue_fusion": False,
}


@dataclasses.dataclass(frozen=True)
class Launch:
    """One template-kernel launch: its kernel, parameter names and argument count
    (grid excluded); ``error`` is the binding error, or None if the arity matched."""

    kernel: str
    parameters: tuple[str, ...]
    arguments: int
    error: str | None


class ArityOracle:
    """Stands in for ``CachingAutotuner.run``.

    ``launches`` counts template launches; ``kernels`` maps each launched template
    kernel's name to its parameter names; ``mismatches`` lists every launch whose
    arguments did not bind (benchmarking repeats launches, so matches are only counted).
    """

    def __init__(self) -> None:
        self.launches = 0
        self.kernels: dict[str, tuple[str, ...]] = {}
        self.mismatches: list[Launch] = []

    def run(self, autotuner: Any, *args: Any, **kwargs: Any) -> None:
        from torch._inductor.runtime.hints import HeuristicType

        if autotuner.heuristic_type != HeuristicType.TEMPLATE:
            return  # pointwise/reduction kernels compute their grid in the launcher
        function = autotuner.fn.fn
        signature = inspect.signature(function)
        positional = args[: len(args) - GRID_VALUES]
        try:
            signature.bind(*positional)
            error = None
        except TypeError as bind_error:
            error = str(bind_error)
        self.launches += 1
        self.kernels[function.__name__] = tuple(signature.parameters)
        if error is not None:
            self.mismatches.append(Launch(function.__name__, tuple(signature.parameters), len(positional), error))
            raise TypeError(
                f"{function.__name__}() launch: {error}: kernel takes {len(signature.parameters)} "
                f"parameters, launch passes {len(positional)} (+{GRID_VALUES} grid values)"
            )


def _no_precompile(self: Any, *args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def triton_cpu_harness(**config_overrides: Any) -> Iterator[ArityOracle]:
    """Install the three seams, each patch's own (its ``harness_seams``) and the harness
    config; yields the oracle.

    ``config_overrides`` are extra ``torch._inductor.config`` settings.
    Restores everything on exit. Raises ImportError without torch.
    """
    import torch.utils._triton as triton_utils
    from torch._inductor import config
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    oracle = ArityOracle()

    def run(autotuner: Any, *args: Any, **kwargs: Any) -> None:
        oracle.run(autotuner, *args, **kwargs)

    with contextlib.ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(triton_utils, "triton_hash_with_backend", lambda: "inductor-fix-cpu-harness")
        )
        stack.enter_context(mock.patch.object(CachingAutotuner, "precompile", _no_precompile))
        stack.enter_context(mock.patch.object(CachingAutotuner, "run", run))
        stack.enter_context(config.patch({**HARNESS_CONFIG, **config_overrides}))
        for seams in harness_seams():
            stack.enter_context(seams())
        yield oracle
