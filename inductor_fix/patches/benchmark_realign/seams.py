"""The CPU-harness seams only benchmark-realign's FlexAttention workloads need (seams 4-6).

Under the CPU harness (:mod:`inductor_fix.check.harness`, seams 1-3) FlexAttention needs
three more seams, entered by :func:`harness_seams` (the harness enters it through ``check.py``):

4. The FlexAttention lowering's device dispatch
   (``torch/_inductor/kernel/flex/flex_attention.py``; ``kernel/flex_attention.py``
   up to 2.8; ``flex_attention``): its
   first statement sends CPU tensors to the C++ template (``lower_cpu``) whatever
   ``cpu_backend`` says, so flex never reaches a Triton template on CPU. The
   harness registers the same function, compiled from its own source with that one
   ``if query.get_device().type == "cpu"`` statement removed; everything after it
   (subgraph building, forward and decoding templates, ``autotune_select_algorithm``)
   is the release's code. Without a recognisable dispatch it is left alone and flex
   stays on the C++ path (:func:`flex_lowering_on_triton` says which). The backward
   lowering (``flex_attention_backward``, same module) has no CPU dispatch in any
   release 2.8-2.15 and is registered as it is: once seam 6 lets a backward be
   traced, it reaches ``flex_attention_backward_template`` unchanged.
5. The GPU flex sizes its work for: the SM count flex decoding splits its work by
   (``flex_decoding.get_split_k`` asks ``torch.cuda.get_device_properties``, which
   fails without a driver) and, up to 2.8, the compute capability the flex configs
   are chosen by (``InductorChoices.get_flex_*_configs`` in 2.8, the
   ``_get_*default_config*`` functions up to 2.7, ask
   ``torch.cuda.get_device_capability``; the backward's
   ``get_flex_attention_bwd_configs`` / ``_get_default_config_bwd`` are new here,
   for flex backward on 2.8 and before). While those functions run, the device is a
   stand-in H200: :data:`STAND_IN_SMS` multiprocessors, capability
   :data:`STAND_IN_CAPABILITY`; the formulas and config lists are the release's.
6. New, for flex backward: the public API's refusal of a CPU backward
   (``torch/nn/attention/flex_attention.py``, ``_validate_device``, 2.11+: ``if
   query.device.type == "cpu" and (query.requires_grad or ...): raise
   NotImplementedError("FlexAttention does not support backward on CPU ...")``),
   which Dynamo traces, so a compile with q/k/v requiring grad stops before any
   graph exists. The harness swaps the module's ``_validate_device`` for the same
   function compiled from its own source with that one statement removed (the
   other device checks stay). It is a check only: it returns nothing and touches
   no tensor, so the traced graph, the partition into forward and backward, every
   lowering's inputs and every benchmark's arguments are the release's own. Up to
   2.10 there is no such statement, and a CPU backward reaches no lowering at all
   (seen on 2.7.1 and 2.8.0): no flex backward under the harness there
   (:func:`flex_backward_on_triton` says whether one runs).

   One CPU rule is left as the release has it: ``_apply_kernel_options`` (same
   module, 2.8-2.15) sets ``OUTPUT_LOGSUMEXP=False`` for CPU inputs, so in training
   the forward kernel is generated without its logsumexp store, where a GPU has
   ``True``. That is one constexpr of the template: ``LSE`` stays a kernel parameter
   and an input of the lowerings, so parameters and arguments are as on a GPU.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import textwrap
import types
from typing import Any, Callable, Iterator
from unittest import mock

__all__ = ["HARNESS_NOTE", "STAND_IN_CAPABILITY", "STAND_IN_SMS", "flex_backward_on_triton", "flex_lowering_on_triton",
           "harness_seams", "triton_flex_lowering", "validate_device_allowing_cpu_grad"]

#: What ``check`` prints about these seams on a CPU-only machine.
HARNESS_NOTE = ("FlexAttention reaches its Triton forward, decoding and backward templates through three more "
                "seams (the lowering's CPU dispatch and the API's CPU-backward refusal removed, a stand-in GPU's "
                "SM count).")

#: Multiprocessors of the GPU flex decoding is split for under the harness (an NVIDIA H200).
STAND_IN_SMS = 132
#: Its compute capability (sm_90).
STAND_IN_CAPABILITY = (9, 0)



def _is_cpu_dispatch(statement: ast.stmt) -> bool:
    """``if query.get_device().type == "cpu": return lower_cpu(...)``, as in 2.9-2.15."""
    if not isinstance(statement, ast.If) or not statement.body:
        return False
    test, body = ast.unparse(statement.test), ast.unparse(statement.body[0])
    return "get_device().type" in test and "'cpu'" in test and "lower_cpu(" in body


def _is_cpu_grad_refusal(statement: ast.stmt) -> bool:
    """``if query.device.type == "cpu" and (query.requires_grad or ...): raise
    NotImplementedError(...)``, as in ``_validate_device`` 2.11-2.15."""
    if not isinstance(statement, ast.If) or len(statement.body) != 1 or not isinstance(statement.body[0], ast.Raise):
        return False
    test = ast.unparse(statement.test)
    return "device.type" in test and "'cpu'" in test and "requires_grad" in test and not statement.orelse


def _without_one_statement(function: Callable[..., Any], removed: Callable[[ast.stmt], bool],
                           module: types.ModuleType) -> Callable[..., Any] | None:
    """``function`` compiled from its own source, in ``module``'s namespace, without the one
    top-level statement of its body that ``removed`` matches; None unless exactly one matches
    or if its source cannot be read."""
    function = inspect.unwrap(function)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        return None
    kept = [statement for statement in definition.body if not removed(statement)]
    if len(kept) != len(definition.body) - 1:
        return None
    definition.body, definition.decorator_list = kept, []
    namespace: dict[str, Any] = {}
    exec(compile(tree, inspect.getsourcefile(function) or f"<{definition.name}>", "exec"), vars(module), namespace)
    return namespace[definition.name]


@functools.cache
def triton_flex_lowering() -> Callable[..., Any] | None:
    """The flex_attention lowering without its CPU dispatch (seam 4), ready to register;
    None if the release's lowering has no such dispatch or its source cannot be read.
    Built once per process (parsing and compiling the lowering's source)."""
    module = _flex_module("flex_attention")
    if module is None:
        return None
    return _without_one_statement(module.flex_attention, _is_cpu_dispatch, module)


@functools.cache
def validate_device_allowing_cpu_grad() -> Callable[..., Any] | None:
    """``torch.nn.attention.flex_attention._validate_device`` without its refusal of a CPU
    backward (seam 6); None where the release has no such refusal (up to 2.10) or its
    source cannot be read."""
    try:
        module = importlib.import_module("torch.nn.attention.flex_attention")
    except ImportError:
        return None
    function = getattr(module, "_validate_device", None)
    if not callable(function):
        return None
    return _without_one_statement(function, _is_cpu_grad_refusal, module)


def flex_backward_on_triton() -> bool:
    """Whether a FlexAttention backward on CPU reaches its Triton template under the harness:
    the forward lowering is re-registrable (seam 4), and the public API either has no CPU
    backward refusal the harness takes out (seam 6, 2.11+). Up to 2.10, where the API has no
    such refusal, the backward graph's ``flex_attention_backward`` finds no lowering on CPU
    (seen on 2.7.1 and 2.8.0: ``AssertionError: flex_attention_backward is not an
    OpOverload``): a limit of the harness, not the bug, so no CPU backward there."""
    return flex_lowering_on_triton() and validate_device_allowing_cpu_grad() is not None


def _flex_module(name: str) -> types.ModuleType | None:
    """``torch._inductor.kernel.flex.<name>`` (2.9+), or ``kernel.<name>`` (2.8 and before)."""
    for package in ("torch._inductor.kernel.flex", "torch._inductor.kernel"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ImportError:
            continue
    return None


def flex_lowering_on_triton() -> bool:
    """Whether the harness can send FlexAttention on CPU to its Triton templates."""
    return triton_flex_lowering() is not None


def _on_stand_in_gpu(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` asking CUDA about the stand-in H200 instead of a driver."""
    import torch

    properties = types.SimpleNamespace(multi_processor_count=STAND_IN_SMS, major=STAND_IN_CAPABILITY[0],
                                       minor=STAND_IN_CAPABILITY[1])

    @functools.wraps(function)
    def on_stand_in(*args: Any, **kwargs: Any) -> Any:
        with mock.patch.object(torch.cuda, "get_device_properties", lambda *a, **k: properties), \
                mock.patch.object(torch.cuda, "get_device_capability", lambda *a, **k: STAND_IN_CAPABILITY):
            return function(*args, **kwargs)

    return on_stand_in


@contextlib.contextmanager
def harness_seams() -> Iterator[None]:
    """Seams 4-6 (module docstring), for :func:`inductor_fix.check.harness.triton_cpu_harness`;
    restored on exit. Without a recognisable CPU dispatch in the lowering, none."""
    import torch
    from torch._inductor import lowering

    function = triton_flex_lowering()
    if function is None:
        yield
        return
    flex_decoding = _flex_module("flex_decoding")
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(lowering.lowerings))  # the registration below is undone on exit
        lowering.register_lowering(torch.ops.higher_order.flex_attention, type_promotion_kind=None)(function)
        from torch._inductor.choices import InductorChoices

        # The functions that size flex's work for a GPU (seam 5): 2.9+ get_split_k; 2.8 the
        # InductorChoices config methods; up to 2.7 the default config getters.
        flex_attention = _flex_module("flex_attention")
        for owner, name in ((flex_decoding, "get_split_k"), (InductorChoices, "get_flex_attention_fwd_configs"),
                            (InductorChoices, "get_flex_attention_bwd_configs"),
                            (InductorChoices, "get_flex_decode_configs"),
                            (flex_decoding, "_get_decoding_default_config"),
                            (flex_attention, "_get_default_config_fwd"), (flex_attention, "_get_default_config_bwd")):
            member = vars(owner).get(name) if owner is not None else None
            if callable(member):
                stack.enter_context(mock.patch.object(owner, name, _on_stand_in_gpu(member)))
        # Seam 6: let Dynamo trace a flex backward on CPU (2.11+; nothing to take out before).
        validate_device = validate_device_allowing_cpu_grad()
        if validate_device is not None:
            api = importlib.import_module("torch.nn.attention.flex_attention")
            stack.enter_context(mock.patch.object(api, "_validate_device", validate_device))
        yield

