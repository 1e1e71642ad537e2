"""benchmark-realign's fix: benchmark each template choice with the tensors its kernel takes,
and realize (and freeze) selection inputs that selection cannot key (the package docstring
says when and why)."""

from __future__ import annotations

import functools
import inspect
import logging
from types import ModuleType
from typing import Any, Callable, NamedTuple, Sequence

from ..require import require_class, require_parameters
from ..patch import Fix, Unsupported
from .activity import ACTIVITY

__all__ = ["FIX", "Realignment", "decide", "group_choices", "input_names", "plan_realignment", "realigned_benchmark",
           "realize_and_freeze", "realized_selection", "selectable", "targets"]

log = logging.getLogger(__name__)


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
    nodes: list[Any] = []
    gen_fns, captured = {}, []
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
    template_caller: type[Any],
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


def targets() -> dict[str, Any]:
    """``"Class.attribute"`` -> wrapper factory ``(original, select_algorithm)``."""
    return {TARGET: _benchmark, SELECTION: _selection}


#: How the patch acts, loaded by the lifecycle (``patch.fix_of``), never by the table.
FIX = Fix(targets=targets(), decide=decide)
