"""benchmark-realign: benchmark each template choice with the tensors its kernel takes.

Upstream: ``torch/_inductor/select_algorithm.py``,
``AlgorithmSelectorCache.benchmark_in_current_process`` (affected: 2.7+, forward and
decoding up to 2.14, the backward in every release so far; up to 2.7 it is a closure
inside ``make_benchmark_fn`` and cannot be wrapped, so there the patch is
unsupported). Reported as pytorch/pytorch#194515.

In-process autotuning makes one example tensor per distinct buffer name of the
*selection's* ``input_nodes`` (the list a lowering passes to
``autotune_select_algorithm``) and calls every choice's ``benchmark`` with them.
A Triton template kernel takes one pointer per distinct buffer name of its own
``input_nodes``: the explicit inputs, then every buffer rendering captured. The
FlexAttention lowerings (``kernel/flex/flex_attention.py``, ``flex_decoding.py``;
forward and decoding up to 2.14, the backward in every release so far) pass a
hand-built list holding a ``score_mod``'s logical buffer (``bias = table[index]``)
where the kernel, having inlined the gather, takes ``index`` and ``table``: the launch
is one argument short (``launcher() missing 1 required positional argument:
'_grid_2'``). The benchmark subprocess and the final call
build their arguments from the kernel's own list and are right.

The fix, general rather than flex-specific: a Triton template choice whose kernel
inputs (buffer names, in order) differ from the selection's is benchmarked with
its own input list, one example tensor per kernel input:

- a buffer the selection provides keeps the selection's node, and its
  ``input_gen_fns`` entry (flex's block-mask generators), so its values are what
  stock would have made;
- a buffer the selection does not provide (a captured producer input) gets
  ``benchmark_example_value`` of its own node, filled with **zeros**, whatever its
  dtype. A captured buffer may be an index (``index`` of ``table[index]``) or a
  value an index is computed from; zero is in bounds for every dimension of size
  at least 1, where ``randn`` (Inductor's choice for floats) can index out of
  bounds, an illegal memory access that ends the process when benchmarking in
  process. The kernel's work does not depend on these values: the same loads, the
  same loops (block sparsity comes from the block-mask inputs, which keep their
  generators).

Choices that already match, extern (ATen) choices and every other choice are
benchmarked exactly as stock, in one call with the selection's inputs; the
subprocess path builds tensors from each benchmark request and is untouched.
Gated by behaviour: where upstream passes the kernel's inputs (2.15.0 flex forward
and decoding, PR #194555) nothing differs and nothing is done.

It also wraps ``AlgorithmSelectorCache.__call__`` (:func:`realized_selection`): up to
2.13 the flex backward lowering passes a captured buffer recomputed in the backward
graph (selective activation checkpointing) to selection unrealized — a ``Pointwise``,
or a view such as transformers' T5 position bias, permuted and unsqueezed — which
crashes before any benchmark (``NotImplementedError: Pointwise`` / ``View``); an input
selection cannot key is realized first, as 2.14's lowering does. (Forward and decoding
lowerings realize theirs in every release 2.8–2.15.)

Since 2.14 that lowering realizes them itself but leaves them in a ``FlexibleLayout``,
which a second template reading one (another layer's backward) cannot index; the
selection wrapper freezes them (:data:`FROZEN_SELECTIONS`), as diff ``0004`` does in the
lowering.

Delete this module, ``patches/0003-*``, ``patches/0004-*``, ``test/benchmark_realign/``,
``tools/bench_lib/benchmark_realign.py``, ``docs/bench/benchmark_realign-*.json`` and
``inductor_fix/check/benchmark_realign.py`` (its ``check`` workloads and the CPU harness
seams only they need) once,
in the oldest supported torch, every template lowering passes its kernel's inputs to
selection, realized and frozen (flex backward still passes a hand-built list, and leaves
its captured buffers flexible, in 2.15.0).
"""

from __future__ import annotations

import functools
import inspect
import logging
from types import ModuleType
from typing import Any, Callable, NamedTuple, Sequence

from .._activity import Activity
from .base import Patch, Unsupported, require_class, require_parameters

__all__ = ["PATCH", "Realignment", "group_choices", "input_names", "plan_realignment", "realigned_benchmark",
           "realize_and_freeze", "realized_selection", "selectable"]

log = logging.getLogger(__name__)

#: What this patch did in this process: ``realigned`` choices, ``selections_realigned``, ``realized``,
#: ``frozen`` (layouts).
ACTIVITY = Activity("benchmark-realign")


def input_names(nodes: Sequence[Any]) -> tuple[str, ...]:
    """Distinct buffer names of ``nodes`` in first-seen order: the tensors a benchmark
    passes for a selection, and the pointer parameters ``def_kernel`` gives a kernel."""
    return tuple(dict.fromkeys(node.get_name() for node in nodes))


class Realignment(NamedTuple):
    """A choice's own benchmark inputs. ``nodes``: one IR node per kernel input, in kernel
    order; ``gen_fns``: position in ``nodes`` -> example-value function; ``captured``:
    names the selection did not provide (zero-filled)."""

    nodes: tuple[Any, ...]
    gen_fns: dict[int, Callable[[Any], Any]]
    captured: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return input_names(self.nodes)


def plan_realignment(
    choice_nodes: Sequence[Any],
    selection_nodes: Sequence[Any],
    selection_gen_fns: dict[int, Callable[[Any], Any]] | None,
    zeros: Callable[[Any], Any],
) -> Realignment | None:
    """The inputs a choice with kernel inputs ``choice_nodes`` must be benchmarked with,
    or None if the selection's inputs already are exactly those (by name, in order).

    ``zeros(node)`` makes the example value of a buffer the selection lacks.
    """
    kernel = input_names(choice_nodes)
    if kernel == input_names(selection_nodes):
        return None
    first_by_name: dict[str, tuple[int, Any]] = {}
    for position, node in enumerate(selection_nodes):
        first_by_name.setdefault(node.get_name(), (position, node))
    own = {node.get_name(): node for node in reversed(list(choice_nodes))}
    nodes, gen_fns, captured = [], {}, []
    for name in kernel:
        if name in first_by_name:
            position, node = first_by_name[name]
            if selection_gen_fns and position in selection_gen_fns:
                gen_fns[len(nodes)] = selection_gen_fns[position]
        else:
            node = own[name]
            gen_fns[len(nodes)] = zeros
            captured.append(name)
        nodes.append(node)
    return Realignment(tuple(nodes), gen_fns, tuple(captured))


def group_choices(
    choices: Sequence[Any],
    input_nodes: Sequence[Any],
    input_gen_fns: dict[int, Callable[[Any], Any]] | None,
    zeros: Callable[[Any], Any],
    template_caller: type,
) -> tuple[list[Any], dict[tuple[str, ...], tuple[Realignment, list[Any]]]]:
    """``(choices benchmarked as selected, {kernel inputs: (realignment, choices)})``: only
    ``template_caller`` choices (Triton templates) are ever realigned."""
    as_selected: list[Any] = []
    groups: dict[tuple[str, ...], tuple[Realignment, list[Any]]] = {}
    for choice in choices:
        plan = None
        if isinstance(choice, template_caller):
            plan = plan_realignment(choice.input_nodes, input_nodes, input_gen_fns, zeros)
        if plan is None:
            as_selected.append(choice)
        else:
            groups.setdefault(plan.names, (plan, []))[1].append(choice)
    return as_selected, groups


def realigned_benchmark(benchmark: Callable[..., Any], select_algorithm: ModuleType) -> Callable[..., Any]:
    """Wrap ``AlgorithmSelectorCache.benchmark_in_current_process`` (the function under its
    ``classmethod``): choices are benchmarked in groups of equal kernel inputs, the
    selection's own group first, and timings are returned in ``choices`` order.

    Records ``realigned`` choices and ``selections_realigned`` in :data:`ACTIVITY`.
    """

    signature = inspect.signature(benchmark)
    template_caller = select_algorithm.TritonTemplateCaller
    example_value = select_algorithm.AlgorithmSelectorCache.benchmark_example_value
    # hint_override: 2.9+ (2.8's benchmark_example_value takes the node alone).
    takes_hint = "hint_override" in inspect.signature(example_value).parameters
    logged: set[str] = set()

    @functools.wraps(benchmark)
    def benchmark_in_current_process(cls: Any, choices: Sequence[Any], input_nodes: Any, layout: Any,
                                     input_gen_fns: Any, *args: Any, **kwargs: Any) -> Any:
        hint_override = None
        if "hint_override" in signature.parameters:
            bound = signature.bind(cls, choices, input_nodes, layout, input_gen_fns, *args, **kwargs)
            hint_override = bound.arguments.get("hint_override")

        def zeros(node: Any) -> Any:
            return (example_value(node, hint_override=hint_override) if takes_hint else example_value(node)).zero_()

        as_selected, groups = group_choices(choices, input_nodes, input_gen_fns, zeros, template_caller)
        if not groups:
            return benchmark(cls, choices, input_nodes, layout, input_gen_fns, *args, **kwargs)

        ACTIVITY.add("selections_realigned")
        timings = {}
        if as_selected:
            timings.update(benchmark(cls, as_selected, input_nodes, layout, input_gen_fns, *args, **kwargs))
        for plan, group in groups.values():
            name = getattr(group[0].bmreq, "kernel_name", "?")
            ACTIVITY.add("realigned", len(group), kernel=name, kernel_inputs=list(plan.names),
                         selection_inputs=list(input_names(input_nodes)), captured=list(plan.captured))
            if name not in logged:
                logged.add(name)
                log.info(
                    "inductor_fix: benchmarking %d choice(s) of %s with their kernel's inputs (%s) instead of the "
                    "selection's (%s); captured, zero-filled: %s",
                    len(group), name, ", ".join(plan.names), ", ".join(input_names(input_nodes)),
                    ", ".join(plan.captured) or "none",
                )
            timings.update(benchmark(cls, group, list(plan.nodes), layout, plan.gen_fns, *args, **kwargs))
        return {choice: timings[choice] for choice in choices if choice in timings}

    return benchmark_in_current_process


def selectable(node: Any, key_of: Callable[[Any], Any]) -> bool:
    """Whether selection can key and benchmark ``node`` as it stands: it calls exactly
    what ``AlgorithmSelectorCache`` will, ``key_of(node)`` (``create_inputs_key``: device,
    dtype, size, stride, layout offset) and ``node.get_name()`` (``get_inputs``' one example
    tensor per name). An unrealized ``Pointwise`` or ``Reduction`` fails both; a view
    (``PermuteView``, ``ExpandView``, ``SliceView``, ``View``...) over realized data passes
    ``get_layout()``, which is its base's, and fails ``get_stride()``."""
    try:
        node.get_name()
        key_of(node)
    except (NotImplementedError, AttributeError):
        return False
    return True


def _describe(node: Any) -> str:
    """The class of what ``node`` wraps (``TensorBox``, ``StorageBox`` unwrapped): ``PermuteView``, ``Pointwise``."""
    while type(node).__name__ in ("TensorBox", "StorageBox") and hasattr(node, "data"):
        node = node.data
    return type(node).__name__


#: Selections whose lowering realizes its captured buffers without freezing their layouts:
#: the flex backward (``kernel/flex/flex_attention.py``, ``flex_attention_backward``: 2.14 and
#: 2.15 call ``maybe_realize`` on them, never ``freeze_irnodes`` as the forward does).
FROZEN_SELECTIONS = frozenset({"flex_attention_backward"})


def realized_selection(select: Callable[..., Any], realize: Callable[[Any], Any],
                       key_of: Callable[[Any], Any], flexible: type) -> Callable[..., Any]:
    """Wrap ``AlgorithmSelectorCache.__call__`` so that a selection input node that
    selection cannot key as it stands (:func:`selectable`) is realized first
    (``realize(node)``: :func:`realize_and_freeze` of ``ExternKernel.realize_input``, where a
    view over realized data becomes a ``ReinterpretView`` of it, anything else a buffer).

    Up to 2.13 the flex backward lowering passes its captured buffers to selection
    without ``maybe_realize`` (2.14 added it): a buffer recomputed in the backward graph
    (selective activation checkpointing saving flex_attention's outputs) is then an
    unrealized ``Pointwise`` (``NotImplementedError: ... Pointwise`` in
    ``create_inputs_key``) or a view of one, or of a realized buffer (transformers' T5
    position bias, permuted and unsqueezed: ``NotImplementedError: View`` in
    ``View.get_stride``). Realized, each is what 2.14's lowering passes; its benchmark
    tensors are then realigned like any other. Selections whose inputs are all selectable
    (every one on 2.14 and later) are passed through as is.

    In a selection of :data:`FROZEN_SELECTIONS` an input still in a ``flexible`` layout
    (``ir.FlexibleLayout``) has it frozen, as the forward lowering's ``freeze_irnodes`` does:
    2.14 and 2.15 realize the backward's captured buffers and leave them flexible, and a
    second template reading one (T5's position bias in another layer's backward) fails
    (``AssertionError: convert FlexibleLayout to FixedLayout first``).
    """
    signature = inspect.signature(select)

    @functools.wraps(select)
    def select_with_realized_inputs(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        nodes = bound.arguments.get("input_nodes")
        if nodes is not None:
            must_realize = [not selectable(node, key_of) for node in nodes]
            if any(must_realize):
                unrealized = [_describe(node) for node, bad in zip(nodes, must_realize) if bad]
                realized = [realize(node) if bad else node for node, bad in zip(nodes, must_realize)]
                ACTIVITY.add("realized", len(unrealized), selection=str(bound.arguments.get("name")),
                             buffers=unrealized)
                bound.arguments["input_nodes"] = nodes = type(nodes)(realized) if isinstance(nodes, tuple) \
                    else realized
            name = bound.arguments.get("name")
            if name in FROZEN_SELECTIONS:
                flexibles = [node for node in nodes if isinstance(node.maybe_get_layout(), flexible)]
                for node in flexibles:
                    node.freeze_layout()
                if flexibles:
                    ACTIVITY.add("frozen", len(flexibles), selection=name,
                                 buffers=[node.get_name() for node in flexibles])
        return select(*bound.args, **bound.kwargs)

    return select_with_realized_inputs


# --- the patch ------------------------------------------------------------------------

TARGET = "AlgorithmSelectorCache.benchmark_in_current_process"
SELECTION = "AlgorithmSelectorCache.__call__"


def decide(module: ModuleType) -> ModuleType:
    require_parameters(module, TARGET, ("choices", "input_nodes", "layout", "input_gen_fns"), classmethod)
    require_parameters(module, SELECTION, ("input_nodes",))
    if not callable(getattr(getattr(getattr(module, "ir", None), "ExternKernel", None), "realize_input", None)):
        raise Unsupported("select_algorithm.ir.ExternKernel.realize_input is missing")
    if not isinstance(getattr(module.ir, "FlexibleLayout", None), type):
        raise Unsupported("select_algorithm.ir.FlexibleLayout is missing")
    require_class(module, "TritonTemplateCaller")
    selector = require_class(module, "AlgorithmSelectorCache")
    for helper in ("benchmark_example_value", "key_of"):
        if not callable(getattr(selector, helper, None)):
            raise Unsupported(f"AlgorithmSelectorCache.{helper} is missing")
    return module


def _benchmark(original: classmethod, module: ModuleType) -> classmethod:
    return classmethod(realigned_benchmark(original.__func__, module))


def realize_and_freeze(realize_input: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``realize_input(node)``, its layout then frozen, as the flex lowerings' ``maybe_realize``
    then ``freeze_irnodes`` do: a captured buffer is often read by more than one template (T5's
    position bias by every layer, forward and backward), and a template that renders a load of
    a buffer still in a ``FlexibleLayout`` fails (``AssertionError: convert FlexibleLayout to
    FixedLayout first``)."""

    def realize(node: Any) -> Any:
        node = realize_input(node)
        try:
            node.freeze_layout()
        except NotImplementedError:  # nothing with a layout to freeze
            pass
        return node

    return realize


def _selection(original: Any, module: ModuleType) -> Any:
    return realized_selection(original, realize_and_freeze(module.ir.ExternKernel.realize_input),
                              module.AlgorithmSelectorCache.key_of, module.ir.FlexibleLayout)


PATCH = Patch(
    name="benchmark-realign",
    targets={TARGET: _benchmark, SELECTION: _selection},
    decide=decide,
    effect="each Triton template choice is benchmarked with the tensors its kernel takes (pytorch/pytorch#194515)",
    upstream="pytorch/pytorch#194515, fixed for flex forward and decoding by PR #194555",
    # 2.7.1 and 2.8.0 crash too (the version matrix's flex suite, CPU harness); older: not checked.
    # No release fixes the flex backward yet (2.15.0 crashes there under selective checkpointing).
    affected=">=2.7.0",
    # Up to 2.7 benchmark_in_current_process is a closure inside make_benchmark_fn: nothing to wrap.
    supported=">=2.8.0",
    delete_when="in the oldest supported torch every template lowering passes its kernel's inputs to selection "
                "(flex backward does not in 2.15.0)",
    diff="0003-inductor-benchmark-template-choices-with-their-kernel-inputs.patch",
    # 2.15.0 passes flex forward and decoding their kernels' inputs (PR #194555); the backward
    # lowering still builds its list by hand, and selective checkpointing crashes it there.
    check_ops={"flex": ">=2.7.0,<2.15.0", "flex_decoding": ">=2.7.0,<2.15.0", "flex_backward": ">=2.7.0"},
    activity=ACTIVITY,
)
