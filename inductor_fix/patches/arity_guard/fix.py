"""arity-guard's fix: count a template choice's kernel parameters against what its benchmark
passes; regenerate, exclude or time ``inf`` a choice that does not fit (the package docstring
says when and why)."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from types import ModuleType
from typing import Any, Callable, NamedTuple

from ..._triton_launch import GRID_VALUES, kernel_parameters, tensor_metas
from ..require import require_class, require_codegen_cache, require_function, require_parameters
from ..patch import Fix, Unsupported

from .activity import ACTIVITY

__all__ = ["FIX", "ArityMismatch", "arity_mismatch", "benchmark_argument_count", "decide", "targets"]

log = logging.getLogger(__name__)


_excluded_since_selection = threading.local()
_excluded_at_benchmark = threading.local()


class ArityMismatch(NamedTuple):
    """A loaded template kernel and the call its benchmark request would make.

    ``parameters``: the kernel's Python parameter names. ``arguments``: one
    description per positional argument the benchmark passes before the grid.
    """

    template: str
    kernel: str
    parameters: tuple[str, ...]
    arguments: tuple[str, ...]
    #: Who passes ``arguments``: the choice's own benchmark request, or the autotuner.
    caller: str = "its benchmark request"

    def as_detail(self) -> dict[str, Any]:
        """The mismatch as activity detail (JSON-able)."""
        return {"template": self.template, "kernel": self.kernel, "parameters": list(self.parameters),
                "arguments": list(self.arguments)}

    def message(self, description: str = "") -> str:
        config = f" [{description}]" if description else ""
        return (
            f"inductor_fix: excluded a Triton template choice of '{self.template}'{config} from autotuning: "
            f"kernel {self.kernel}({', '.join(self.parameters)}) takes {len(self.parameters)} parameters, "
            f"but {self.caller} passes {len(self.arguments)} arguments "
            f"({', '.join(self.arguments)}) before the {GRID_VALUES} grid values"
        )


def _describe_tensor(role: str, meta: Any) -> str:
    """``"input 2x2x256x32 float32"`` for a ``TensorMeta`` (``sizes``) or a tensor (``shape``)."""
    sizes = "x".join(str(s) for s in getattr(meta, "sizes", getattr(meta, "shape", ()))) or "scalar"
    dtype = str(getattr(meta, "dtype", "?")).replace("torch.", "")
    return f"{role} {sizes} {dtype}"


def benchmark_argument_count(bmreq: Any, inputs: int | None = None) -> int:
    """How many positional arguments ``TritonBenchmarkRequest.make_run_fn`` passes
    before the grid: ``*input_tensors, out, *extra_args[:-3]``; ``inputs`` input tensors
    if given (what the autotuner passes), else the request's own."""
    inputs = len(tensor_metas(bmreq.input_tensor_meta)) if inputs is None else inputs
    return inputs + len(tensor_metas(bmreq.output_tensor_meta)) + len(bmreq.extra_args) - GRID_VALUES


def benchmark_arguments(bmreq: Any, inputs: list[Any] | None = None,
                        outputs: list[Any] | None = None) -> tuple[str, ...]:
    """Describe each argument counted by :func:`benchmark_argument_count`, for messages;
    ``inputs``/``outputs`` (tensors) stand for the request's own tensor metas if given."""
    inputs = tensor_metas(bmreq.input_tensor_meta) if inputs is None else inputs
    outputs = tensor_metas(bmreq.output_tensor_meta) if outputs is None else outputs
    extra = list(bmreq.extra_args)[: len(bmreq.extra_args) - GRID_VALUES]
    return (
        *(_describe_tensor("input", m) for m in inputs),
        *(_describe_tensor("output", m) for m in outputs),
        *(f"size {value!r}" for value in extra),
    )


def arity_mismatch(template_name: str, choice: Any) -> ArityMismatch | None:
    """The mismatch of a generated choice, or None if it matches or cannot be checked
    (not a Triton benchmark request, or a kernel without a Python signature)."""
    bmreq: Any = getattr(choice, "bmreq", None)
    try:
        parameters = kernel_parameters(bmreq)
        if len(parameters) == benchmark_argument_count(bmreq):
            return None
        arguments = benchmark_arguments(bmreq)
    except Exception:
        return None
    return ArityMismatch(template_name, bmreq.kernel_name, parameters, arguments)


def _drop_stale_entry(template: Any, module_path: str) -> int:
    """Remove codegen-cache entries whose code is the module at ``module_path``."""
    entries = getattr(getattr(template, "_generated_code_cache", None), "_cache", None)
    if not isinstance(entries, dict):
        return 0
    with open(module_path, encoding="utf-8") as source:
        code = source.read()
    stale = [key for key, entry in entries.items() if getattr(entry, "code", None) == code]
    for key in stale:
        del entries[key]
    return len(stale)


def guarded_generate(generate: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``TritonTemplate.generate`` with the arity check (module docstring, steps 1-3)."""
    signature = inspect.signature(generate)
    warned_regenerate: set[str] = set()

    from torch._dynamo.utils import counters

    def checked(how: str, template: Any, *args: Any, **kwargs: Any) -> tuple[Any, ArityMismatch | None]:
        try:
            choice = generate(template, *args, **kwargs)  # passed on as given: an error here came from below
        except Exception as error:
            _passed_through(error, "TritonTemplate.generate", how)
            raise
        return choice, None if choice is None else arity_mismatch(template.name, choice)

    @functools.wraps(generate)
    def generate_with_arity_guard(self: Any, *args: Any, **kwargs: Any) -> Any:
        hits = counters["inductor"]["generated_module_cache_hit"]
        choice, mismatch = checked("unchanged", self, *args, **kwargs)  # Inductor's generate, arguments unchanged
        if mismatch is None:  # it fits, or no choice was generated
            return choice
        if counters["inductor"]["generated_module_cache_hit"] > hits:
            _drop_stale_entry(self, choice.bmreq.module_path)
            ACTIVITY.add("regenerated", **mismatch.as_detail())
            if self.name not in warned_regenerate:
                warned_regenerate.add(self.name)
                log.warning(
                    "inductor_fix: a codegen-cache hit for template '%s' gave kernel %s(%s) for %d arguments; "
                    "dropped the entry and generated it again without the cache",
                    self.name, mismatch.kernel, ", ".join(mismatch.parameters), len(mismatch.arguments),
                )
            bound = signature.bind(self, *args, **kwargs)
            bound.arguments["generate_with_caching"] = False
            choice, mismatch = checked("with generate_with_caching=False", *bound.args, **bound.kwargs)
            if mismatch is None:
                return choice
        _exclude(mismatch, getattr(choice, "description", ""), _excluded_since_selection, "excluded")
        return None

    return generate_with_arity_guard


def _passed_through(error: BaseException, target: str, how: str = "unchanged") -> None:
    """Say on ``error``, in a note under its traceback, that the wrapper of ``target`` whose
    frame the traceback shows only passed the call on, and where the error was raised: a
    traceback through this module reads as the package's fault otherwise. Nothing is said
    when the innermost frame is this package's own code, nor on Python 3.10 (no
    ``add_note``); once per error, however many wrappers it crossed. Inductor re-raises
    many errors as new exceptions (``InductorError``, ``LoweringException``) that drop the
    note: for those, the comment on each wrapper's call line, which tracebacks print, says it."""
    innermost = error.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    if innermost is None or not hasattr(error, "add_note"):  # add_note: Python 3.11+
        return
    filename = innermost.tb_frame.f_code.co_filename
    if filename.startswith(_PACKAGE) or any(str(n).startswith(_NOTE) for n in getattr(error, "__notes__", ())):
        return
    error.add_note(f"{_NOTE} this call to Inductor's {target} {how}; the error was raised below it, in "
                   f"{filename}:{innermost.tb_lineno}, not by inductor_fix (INDUCTOR_FIX_DISABLE=1 runs stock torch)")


_NOTE = "inductor_fix: arity-guard passed"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))) + os.sep  # inductor_fix/


def _exclude(mismatch: ArityMismatch, description: str, store: threading.local, counter: str) -> None:
    ACTIVITY.add(counter, **mismatch.as_detail())
    messages = getattr(store, "messages", None)
    if messages is None:
        messages = store.messages = []
    messages.append(mismatch.message(description))
    log.warning("%s", messages[-1])


def guarded_benchmark_choice(benchmark_choice: Callable[..., Any], template_caller: type) -> Callable[..., Any]:
    """Wrap ``AlgorithmSelectorCache.benchmark_choice`` (the function under its
    ``classmethod``): a Triton template choice (``template_caller``) whose kernel cannot
    take the tensors the autotuner passes is timed ``inf`` instead of launched (module
    docstring, step 4)."""

    @functools.wraps(benchmark_choice)
    def benchmark_choice_with_arity_guard(cls: Any, choice: Any, autotune_args: Any) -> Any:
        bmreq: Any = getattr(choice, "bmreq", None)
        passed: int | None
        if isinstance(choice, template_caller) and getattr(bmreq, "module_path", None) is not None:
            try:
                inputs, output = autotune_args.get_benchmark_tensors(False).unpack()
                parameters = kernel_parameters(bmreq)
                passed = benchmark_argument_count(bmreq, len(inputs))
            except Exception:  # cannot be checked: benchmark as stock would
                passed = parameters = None
            if parameters is not None and len(parameters) != passed:
                arguments = benchmark_arguments(bmreq, list(inputs), [output])
                mismatch = ArityMismatch(bmreq.kernel_name.removeprefix("triton_"), bmreq.kernel_name, parameters,
                                         arguments, "the autotuner's in-process benchmark")
                _exclude(mismatch, getattr(choice, "description", ""), _excluded_at_benchmark, "excluded_at_benchmark")
                return float("inf")
        try:
            return benchmark_choice(cls, choice, autotune_args)  # passed on unchanged: an error here came from below
        except Exception as error:
            _passed_through(error, "AlgorithmSelectorCache.benchmark_choice")
            raise

    return benchmark_choice_with_arity_guard


def guarded_selection(select: Callable[..., Any], no_choices_error: type[Exception]) -> Callable[..., Any]:
    """Wrap ``AlgorithmSelectorCache.__call__`` so that a selection left without a choice
    by the guard raises ``no_choices_error`` saying so, instead of a bare "No choices":
    either every choice was excluded when generated, or every benchmark was."""

    @functools.wraps(select)
    def select_with_arity_guard(self: Any, name: Any, choices: Any, *args: Any, **kwargs: Any) -> Any:
        excluded = getattr(_excluded_since_selection, "messages", None) or []
        _excluded_since_selection.messages = []
        if not choices and excluded:
            raise no_choices_error(
                f"inductor_fix: no choice is left for '{name}': the arity guard excluded all "
                f"{len(excluded)} Triton template choices and no other backend offered one "
                f"(add ATEN to max_autotune_gemm_backends). First exclusion: {excluded[0]}"
            )
        _excluded_at_benchmark.messages = []
        try:
            return select(self, name, choices, *args, **kwargs)  # passed on unchanged: an error here came from below
        except no_choices_error as error:
            at_benchmark = getattr(_excluded_at_benchmark, "messages", None) or []
            if not at_benchmark:
                _passed_through(error, "AlgorithmSelectorCache.__call__")
                raise
            raise no_choices_error(
                f"inductor_fix: no choice is left for '{name}': the arity guard timed {len(at_benchmark)} "
                f"Triton template choice(s) inf at benchmark, and no other choice ran. "
                f"First exclusion: {at_benchmark[0]}"
            ) from error
        except Exception as error:
            _passed_through(error, "AlgorithmSelectorCache.__call__")
            raise
        finally:
            _excluded_at_benchmark.messages = []

    return select_with_arity_guard


# --- the patch ------------------------------------------------------------------------


def decide(module: ModuleType) -> ModuleType:
    require_codegen_cache(module)
    require_parameters(module, "TritonTemplate.generate", ("generate_with_caching",))
    require_function(module, "AlgorithmSelectorCache.__call__")
    require_parameters(module, "AlgorithmSelectorCache.benchmark_choice", ("choice", "autotune_args"), classmethod)
    error = getattr(module, "NoValidChoicesError", None)
    if not (isinstance(error, type) and issubclass(error, Exception)):
        raise Unsupported("select_algorithm.NoValidChoicesError is missing")
    require_class(module, "TritonTemplateCaller")
    return module


def _generate(original: Any, module: ModuleType) -> Any:
    return guarded_generate(original)


def _selection(original: Any, module: ModuleType) -> Any:
    return guarded_selection(original, module.NoValidChoicesError)


def _benchmark_choice(original: classmethod, module: ModuleType) -> classmethod:
    return classmethod(guarded_benchmark_choice(original.__func__, module.TritonTemplateCaller))


def targets() -> dict[str, Any]:
    """``"Class.attribute"`` -> wrapper factory ``(original, select_algorithm)``."""
    return {
        "TritonTemplate.generate": _generate,
        "AlgorithmSelectorCache.__call__": _selection,
        "AlgorithmSelectorCache.benchmark_choice": _benchmark_choice,
    }


#: How the patch acts, loaded by the lifecycle (``patch.fix_of``), never by the table.
FIX = Fix(targets=targets(), decide=decide)
