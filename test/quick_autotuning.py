"""Quick autotuning for tests on the CPU harness: fewer template configs, briefer benchmarks.

Imports neither this package nor Inductor until used, so a child process that tests an
import order can use it after its own imports (``from quick_autotuning import
quick_cpu_autotuning``; ``helpers.run_python`` puts this folder on the path).
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Iterator
from unittest import mock

__all__ = ["CPU_BENCHMARK_MS", "MAX_MM_CONFIGS", "quick_cpu_autotuning"]

#: Triton template configs a matmul selection tries on the CPU harness
#: (``torch._inductor.config.test_configs.max_mm_configs``, 2.8-2.15; the default, None, tries
#: each of the release's list, a dozen or more). Nothing is computed there, and the bugs under
#: test do not depend on how many are tried: only on each compile of a sequence trying the
#: same ones, so that a later compile hits an earlier one's codegen-cache entry (the
#: same-pattern tests assert hits; the stock controls fail on them). Two keep every selection
#: choosing among several Triton choices.
MAX_MM_CONFIGS = 2
#: Milliseconds each CPU benchmark of a choice runs, warm-up and timed (Inductor's
#: ``Benchmarker.benchmark_cpu`` runs 20 + 100, 2.8-2.15): under the harness a launch only
#: checks arity, which its first call does, and the timings choose nothing that matters.
#: Each benchmark still calls the choice at least twice.
CPU_BENCHMARK_MS = 1


@contextlib.contextmanager
def quick_cpu_autotuning() -> Iterator[None]:
    """Autotuning with :data:`MAX_MM_CONFIGS` configs per matmul selection (a ``config.patch``,
    where this torch has the setting; the depthwise conv1d template's cut alike) and CPU
    benchmarks of :data:`CPU_BENCHMARK_MS` (where ``Benchmarker.benchmark_cpu`` takes
    ``warmup`` and ``rep``); on a torch with none of these, autotuning as it is. Restored on exit.
    A three-compile bmm sequence under the harness, on 2 busy CPUs: 4.1 s capped, 2.4 s also brief."""
    from torch._inductor import config
    from torch._inductor.runtime import benchmarking

    with contextlib.ExitStack() as stack:
        if hasattr(getattr(config, "test_configs", None), "max_mm_configs"):
            stack.enter_context(config.patch({"test_configs.max_mm_configs": MAX_MM_CONFIGS}))
        stack.enter_context(_first_depthwise_conv_configs())
        benchmark_cpu = getattr(benchmarking.Benchmarker, "benchmark_cpu", None)
        if benchmark_cpu is not None and {"warmup", "rep"} <= set(inspect.signature(benchmark_cpu).parameters):

            def brief_benchmark_cpu(self: Any, _callable: Any, warmup: int = 20, rep: int = 100, **kwargs: Any) -> Any:
                return benchmark_cpu(self, _callable, warmup=min(warmup, CPU_BENCHMARK_MS),
                                     rep=min(rep, CPU_BENCHMARK_MS), **kwargs)

            stack.enter_context(mock.patch.object(benchmarking.Benchmarker, "benchmark_cpu", brief_benchmark_cpu))
        yield


def _first_depthwise_conv_configs() -> contextlib.AbstractContextManager:
    """The depthwise conv1d template's configs (``InductorChoices.get_depthwise_conv_configs``,
    2.14+: 15 of them, which ``max_mm_configs`` does not bound) cut to the first
    :data:`MAX_MM_CONFIGS`, by the same reasoning; nothing where the method is absent."""
    from torch._inductor.choices import InductorChoices

    configs = vars(InductorChoices).get("get_depthwise_conv_configs")
    if not callable(configs):
        return contextlib.nullcontext()

    def first_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
        return list(configs(self, *args, **kwargs))[:MAX_MM_CONFIGS]

    return mock.patch.object(InductorChoices, "get_depthwise_conv_configs", first_configs)
