"""Quick autotuning for tests: on the CPU harness fewer template configs and briefer
benchmarks; on a GPU under ``tools/gpu_tier``, a bounded but representative set of configs.

Imports neither this package nor Inductor until used, so a child process that tests an
import order can use it after its own imports (``from quick_autotuning import
quick_cpu_autotuning``; ``helpers.run_python`` puts this folder on the path). A test process,
and every child it starts, enters :func:`autotuning` for its device: the tier's setting
travels to the children in the environment (:data:`ENVIRONMENT`).
"""

from __future__ import annotations

import contextlib
import inspect
import os
from typing import Any, Callable, Iterator, Sequence, TypeVar
from unittest import mock

__all__ = ["CPU_BENCHMARK_MS", "ENVIRONMENT", "FITTING_CONFIGS", "FLEX_CONFIGS", "MAX_MM_CONFIGS",
           "bounded_gpu_autotuning", "quick_cpu_autotuning", "representative_configs", "autotuning"]

Config = TypeVar("Config")

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


#: ``tools/gpu_tier`` sets it to ``bounded`` for every process of a run (its children inherit it):
#: :func:`autotuning` then bounds a GPU process's autotuning (:func:`bounded_gpu_autotuning`).
#: Unset, a GPU test autotunes as users do.
ENVIRONMENT = "INDUCTOR_FIX_TEST_AUTOTUNING"
#: Triton configs per GPU matmul selection that fit the device's shared memory, kept under
#: :func:`bounded_gpu_autotuning` (the first of the heuristics' list), beside every one that may not.
FITTING_CONFIGS = 2
#: FlexAttention configs per forward, backward or decoding selection under :func:`bounded_gpu_autotuning`:
#: two keep it a selection (one choice alone is never benchmarked, so its arity never tested).
FLEX_CONFIGS = 2


def autotuning(device: str) -> contextlib.AbstractContextManager:
    """How a test process autotunes on ``device``: :func:`quick_cpu_autotuning` on the CPU harness;
    on a GPU :func:`bounded_gpu_autotuning` where ``$INDUCTOR_FIX_TEST_AUTOTUNING`` is ``bounded``
    (``tools/gpu_tier``), else as users do. ValueError for another value of the variable."""
    if device == "cpu":
        return quick_cpu_autotuning()
    setting = os.environ.get(ENVIRONMENT, "")
    if setting not in ("", "bounded"):
        raise ValueError(f"{ENVIRONMENT}={setting!r}: the one setting is 'bounded' (or unset)")
    return bounded_gpu_autotuning() if setting == "bounded" else contextlib.nullcontext()


def representative_configs(configs: Sequence[Config], exceeds: Callable[[Config], bool],
                           fitting: int = FITTING_CONFIGS) -> list[Config]:
    """The configs of a matmul selection that keep what the kind needs on a GPU, in ``configs``' order:
    the first ``fitting`` that do not ``exceeds`` the device's shared memory (their codes compile, so a
    later pattern's selection replays them), and every one that does. ``exceeds`` is the heuristics'
    estimate, a theoretical upper bound ("will over-prune", ``preprocess_mm_configs``), so every config
    of the list that fails to compile for want of shared memory is among those kept: the selection,
    like the full list's, gets no timing for it, and a later selection of the same layouts then misses
    Inductor's autotune cache and benchmarks every choice, the replayed codes too: how stock crashes
    on an H200 (``docs/clients.md``, "When stock crashes on the GPU"). What is cut compiles.

    Keeping only the config the estimate puts largest is not enough: on an H100 (2026-12-05, torch
    2.11) stock then compiled five of the 21 float32 sequences that crash with the full list
    (``docs/gpu-tier.md``, "What makes it fit"): that config compiled there, where others of the list do not.
    """
    kept: list[Config] = []
    for config in configs:
        over = exceeds(config)
        if over or fitting > 0:
            kept.append(config)
            fitting -= not over
    return kept


@contextlib.contextmanager
def bounded_gpu_autotuning() -> Iterator[None]:
    """Autotuning bounded for the GPU tier, each bound from Inductor's own heuristics: a matmul
    selection keeps :func:`representative_configs` of its template's list (judged by the heuristic's
    own shared-memory estimate against the device's limit, ``BaseConfigHeuristic._get_exceeding_shared_memory_checker``
    over ``get_shared_memory_estimation``, 2.11-2.15), a FlexAttention selection the first
    :data:`FLEX_CONFIGS` of its list (``InductorChoices.get_flex_attention_fwd_configs``, ``_bwd_``,
    ``get_flex_decode_configs``). The CUTLASS workload bounds itself (one config). Where this torch
    lacks a method, that part is left as it is (2.9 has no estimate: its matmul configs stay whole).
    Restored on exit.

    Why it stays honest: the bugs need each selection of a sequence to offer the same configs (so a
    later compile replays an earlier one's codes) and, for a replay to crash on a GPU, the configs that
    fail to compile (so their timings are missing and the repeat is benchmarked); FlexAttention's need a
    selection of several choices, whose benchmark passes the hand-built inputs. The negative controls of
    the tier assert stock still crashes under these bounds.
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(_representative_mm_configs())
        stack.enter_context(_first_flex_configs())
        yield


def _config_heuristic_class() -> type | None:
    """``BaseConfigHeuristic``, wherever this release keeps it (2.14+ ``heuristics.template.triton``,
    2.10-2.13 ``template_heuristics.triton``); None where neither is."""
    import importlib

    for name in ("torch._inductor.heuristics.template.triton", "torch._inductor.template_heuristics.triton"):
        try:
            heuristic = getattr(importlib.import_module(name), "BaseConfigHeuristic", None)
        except ImportError:
            continue
        if isinstance(heuristic, type):
            return heuristic
    return None


def _representative_mm_configs() -> contextlib.AbstractContextManager:
    heuristic = _config_heuristic_class()
    # get_shared_memory_estimation marks the checker that takes the layout-conversion arguments passed
    # below (2.11+); 2.9's checker takes none.
    needed = ("preprocess_mm_configs", "get_shared_memory_estimation", "_get_exceeding_shared_memory_checker")
    if heuristic is None or not all(callable(getattr(heuristic, name, None)) for name in needed):
        return contextlib.nullcontext()
    original = vars(heuristic)["preprocess_mm_configs"]
    signature = inspect.signature(original)

    def preprocess_representative_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        dtype_size = bound.arguments.get("dtype_size", 0)
        extra = bound.arguments.get("kwargs", {})
        conversion = (extra.get("has_sm_layout_conversion", False), extra.get("layout_conversion_byte_size", 0))
        exceeds = self._get_exceeding_shared_memory_checker(*conversion) if dtype_size > 0 else None
        if exceeds is not None and "configs" in bound.arguments:  # no device limit (no GPU): left as it is
            configs = self._filter_configs(list(bound.arguments["configs"]))
            bound.arguments["configs"] = representative_configs(configs, lambda config: exceeds(config, dtype_size))
        return original(*bound.args, **bound.kwargs)

    return mock.patch.object(heuristic, "preprocess_mm_configs", preprocess_representative_configs)


@contextlib.contextmanager
def _first_flex_configs() -> Iterator[None]:
    from torch._inductor.choices import InductorChoices

    def first(configs: Callable[..., Any]) -> Callable[..., Any]:
        def first_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
            return list(configs(self, *args, **kwargs))[:FLEX_CONFIGS]

        return first_configs

    with contextlib.ExitStack() as stack:
        for name in ("get_flex_attention_fwd_configs", "get_flex_attention_bwd_configs", "get_flex_decode_configs"):
            configs = vars(InductorChoices).get(name)
            if callable(configs):
                stack.enter_context(mock.patch.object(InductorChoices, name, first(configs)))
        yield
