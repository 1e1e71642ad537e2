"""Watch autotuning from outside: every Triton template choice made, benchmarked and timed.

:func:`observe_autotuning` records, for each choice ``TritonTemplate.generate``
returns, the kernel's parameters and the arguments its benchmark request will
pass (the accounting of :mod:`inductor_fix._triton_launch`, which the arity guard uses); every error a
Triton choice's in-process benchmark raised (``TritonTemplateCaller.benchmark``);
and, through Inductor's feedback-saver hook, the timing of every benchmarked choice.
Enter it after ``inductor_fix.applied()`` / ``removed()``, not before: it wraps
whatever ``generate`` is installed at entry and restores it at exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Iterator
from unittest import mock

__all__ = ["Choice", "Observation", "observe_autotuning"]


@dataclasses.dataclass(frozen=True)
class Choice:
    """One generated Triton template choice."""

    template: str
    kernel: str
    parameters: tuple[str, ...]
    #: Tensor arguments the benchmark request passes: inputs (input_tensor_meta), then the output.
    tensor_arguments: int
    #: Size/workspace arguments after the tensors, grid excluded.
    scalar_arguments: int

    @property
    def pointer_parameters(self) -> int:
        """Kernel parameters left for tensors once the trailing scalar arguments are taken."""
        return len(self.parameters) - self.scalar_arguments

    def signature(self) -> str:
        return f"{self.kernel}({', '.join(self.parameters)})"


@dataclasses.dataclass
class Observation:
    choices: list[Choice] = dataclasses.field(default_factory=list)
    #: (choice name, seconds or inf) for every benchmarked Triton template choice.
    timings: list[tuple[str, float]] = dataclasses.field(default_factory=list)
    #: (choice name, "Type: message") for every in-process benchmark that raised.
    benchmark_errors: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def arity_mismatches(self) -> list[Choice]:
        return [c for c in self.choices if c.tensor_arguments != c.pointer_parameters]

    @property
    def dropped(self) -> list[str]:
        """Triton choices timed as inf, for any reason (a config that exceeds the GPU's
        shared memory is dropped this way too, legitimately)."""
        return [name for name, seconds in self.timings if not math.isfinite(seconds)]

    @property
    def arity_errors(self) -> list[tuple[str, str]]:
        """Benchmarks that failed because the launch did not fit the kernel (a ``TypeError``)."""
        return [(name, error) for name, error in self.benchmark_errors if error.startswith("TypeError")]

    def signatures(self, template: str) -> list[str]:
        """Distinct kernel signatures generated for ``template``, in first-seen order."""
        return list(dict.fromkeys(c.signature() for c in self.choices if c.template == template))


@contextlib.contextmanager
def observe_autotuning() -> Iterator[Observation]:
    from torch._inductor import select_algorithm

    from inductor_fix._triton_launch import GRID_VALUES, kernel_parameters, tensor_metas

    observation = Observation()
    generate = select_algorithm.TritonTemplate.__dict__["generate"]

    def observed_generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        choice = generate(self, *args, **kwargs)
        bmreq = getattr(choice, "bmreq", None)
        if bmreq is not None and hasattr(bmreq, "module_path"):
            observation.choices.append(
                Choice(
                    template=self.name,
                    kernel=bmreq.kernel_name,
                    parameters=kernel_parameters(bmreq),
                    tensor_arguments=len(tensor_metas(bmreq.input_tensor_meta))
                    + len(tensor_metas(bmreq.output_tensor_meta)),
                    scalar_arguments=len(bmreq.extra_args) - GRID_VALUES,
                )
            )
        return choice

    def save_feedback(timings: dict, *args: Any) -> None:
        for choice, seconds in timings.items():
            if getattr(choice, "bmreq", None) is not None and hasattr(choice.bmreq, "module_path"):
                observation.timings.append((choice.name, float(seconds)))

    benchmark = select_algorithm.TritonTemplateCaller.benchmark

    def observed_benchmark(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return benchmark(self, *args, **kwargs)
        except Exception as error:
            observation.benchmark_errors.append((self.name, f"{type(error).__name__}: {error}"))
            raise

    with (
        mock.patch.object(select_algorithm.TritonTemplate, "generate", observed_generate),
        mock.patch.object(select_algorithm.TritonTemplateCaller, "benchmark", observed_benchmark),
    ):
        select_algorithm.add_feedback_saver(save_feedback)
        try:
            yield observation
        finally:
            # get_algorithm_selector_cache() from 2.9; 2.8 keeps the selector in a module global.
            getter = getattr(select_algorithm, "get_algorithm_selector_cache", None)
            selector = getter() if getter else select_algorithm._ALGORITHM_SELECTOR_CACHE
            savers = selector.feedback_saver_fns
            if save_feedback in savers:
                savers.remove(save_feedback)
