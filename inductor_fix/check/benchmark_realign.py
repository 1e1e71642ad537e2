"""benchmark-realign's ``check`` workloads, and the harness seams only they need.

``inductor-fix check`` finds this module through the patch table
(:mod:`inductor_fix.check.table`): it is deleted with the patch.

FlexAttention (pytorch/pytorch#194515): one inference compile whose ``score_mod`` reads a
bias gathered inside the graph, ``bias = table[index]`` (the relative-position idiom of
Swin and T5), sequence ``gathered-bias``. ``flex`` reaches the forward template (q/k/v
(2, 2, 256, 32), a 1-D relative bias); ``flex_decoding`` the decoding template (q/k/v
(128, 2, 49, 32), Swin's 7x7 window bias). ``flex_backward`` compiles a training step,
forward and backward (``flex_attention_backward``), of the same bias; each of its
sequences (:data:`TRAINING_SEQUENCES`: ``training``, under selective activation
checkpointing, which recomputes the gather in the backward graph; ``t5-view``, the same
with the bias a view as transformers' T5 has it) is one
:data:`FLEX_TRAINING` case. A new training case for ``check``: a :class:`FlexTraining` in
:data:`FLEX_TRAINING` and its sequence in :data:`TRAINING_SEQUENCES`.

Under the CPU harness (:mod:`inductor_fix.check.harness`, seams 1-3) FlexAttention needs
three more seams, entered by :func:`harness_seams`:

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
import dataclasses
import functools
import importlib
import inspect
import textwrap
import types
from typing import Any, Callable, Iterator
from unittest import mock

from .workloads import MODE, Step, Workload, compile_step, max_rel_error

__all__ = ["FLEX", "FLEX_ORDER", "FLEX_TRAINING", "FLEX_VIEWS", "HARNESS_NOTE", "STAND_IN_CAPABILITY", "STAND_IN_SMS",
           "TRAINING_SEQUENCES", "WORKLOADS", "FlexTraining", "flex_backward_on_triton", "flex_gathered_bias",
           "flex_lowering_on_triton", "flex_training", "flex_training_workload", "flex_workload", "harness_seams",
           "relative_position_index", "triton_flex_lowering", "validate_device_allowing_cpu_grad"]

#: FlexAttention workloads: name -> (batch, heads, sequence length, head dim, Swin window or None).
FLEX: dict[str, tuple[int, int, int, int, int | None]] = {
    "flex": (2, 2, 256, 32, None),
    "flex_decoding": (128, 2, 49, 32, 7),
}
FLEX_ORDER = "gathered-bias"
#: The training compiles of ``check --ops flex_backward``: sequence -> (its label in the
#: table, the :data:`FLEX_TRAINING` case it compiles).
TRAINING_SEQUENCES: dict[str, tuple[str, str]] = {"training": ("training (SAC)", "selective"),
                                                   "t5-view": ("T5 view (SAC)", "t5_view")}


def relative_position_index(length: int, window: int | None) -> Any:
    """(L, L) int64 index into a relative-position table: 1-D (``q - kv + L - 1``, table
    of 2L - 1 rows) or, for a Swin ``window`` (L = window**2), 2-D as in Swin
    ((2 window - 1)**2 rows)."""
    import torch

    if window is None:
        positions = torch.arange(length)
        return positions[:, None] - positions[None, :] + length - 1
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
    relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window - 1
    return relative[..., 0] * (2 * window - 1) + relative[..., 1]


def flex_workload(name: str, device: str, dtype: Any = None) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``(attend, args)`` of FlexAttention workload ``name``: ``attend(query, key, value, table,
    index)`` with a ``score_mod`` adding ``table[index][q_idx, kv_idx, h]``, the gather inside
    the graph (pytorch/pytorch#194515). q/k/v (batch, heads, L, head dim) of ``dtype``
    (default float32), table (rows, heads), index (L, L) int64; nothing requires grad."""
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    batch, heads, length, head_dim, window = FLEX[name]
    generator = torch.Generator(device="cpu").manual_seed(0)
    dtype = dtype or torch.float32

    def tensor(*shape: int) -> Any:
        return torch.randn(shape, generator=generator).to(device=device, dtype=dtype)

    index = relative_position_index(length, window).to(device)
    rows = int(index.max()) + 1
    args = (*(tensor(batch, heads, length, head_dim) for _ in range(3)), tensor(rows, heads), index)

    def attend(query, key, value, table, index):
        bias = table[index]  # (L, L, heads), computed in the graph

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias[q_idx, kv_idx, h]

        return flex_attention(query, key, value, score_mod=score_mod)

    return attend, args


@dataclasses.dataclass(frozen=True)
class FlexTraining:
    """One FlexAttention training compile: q/k/v (batch, heads, length, head dim) require grad,
    ``torch.compile(mode="max-autotune-no-cudagraphs")`` of the attention, then
    ``out.sum().backward()`` (the ``flex_attention_backward`` template).

    ``bias``: the ``score_mod`` adds ``bias[q_idx, kv_idx, h]`` computed in the graph from a
    float32 table (rows, q_heads) and an int64 relative-position index (L, L): ``gather``
    ``table[index]``; ``two_sources`` ``table[index] + scale * index`` (one producer, three
    captured buffers); ``cast`` ``table[index.int()].to(q.dtype)``; None: no bias.
    ``table_grad``: the table requires grad. ``slope``: a per-head ALiBi-like slope computed
    in the graph, ``-exp2(-param)``, its param requiring grad (``"grad"``) or not
    (``"frozen"``). ``mask``: a ``mask_mod`` reading ``doc = ids // 64`` computed in the graph.
    ``checkpoint``: ``"full"`` (``torch.utils.checkpoint``: the forward recomputed in the
    backward) or ``"selective"`` (saves flex_attention's outputs, recomputes the rest: the
    captured producers are recomputed in the backward graph, pytorch/pytorch#194515's kind).

    Captured inputs that are *views* (what reaches selection as an ``ir`` view node):
    ``bias_view`` ``"t5"`` permutes and unsqueezes the bias to (1, heads, L, L) as
    transformers' T5 does with its position bias; ``"expand"`` expands that per batch;
    ``"slice"`` gathers the bias for L + 16 positions and slices the last L (T5 with a
    cache). ``layers=2`` reads one bias in two attention calls (T5 computes it in its first
    layer for all). ``slope_view`` broadcasts the per-head slope to (batch, heads, L, L).
    ``qkv_view``: q/k/v are views of projections, ``(x @ w).view(B, L, H, D).transpose(1, 2)``,
    ``x`` (batch, L, 32) and ``w`` the leaves.
    """

    batch: int = 2
    q_heads: int = 2
    kv_heads: int = 2
    length: int = 256
    head_dim: int = 32
    dtype: str = "float32"
    bias: str | None = "gather"
    table_grad: bool = False
    slope: str | None = None
    mask: bool = False
    checkpoint: str | None = None
    bias_view: str | None = None
    layers: int = 1
    slope_view: bool = False
    qkv_view: bool = False

    def __repr__(self) -> str:
        fields = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                  if getattr(self, f.name) != f.default]
        return f"FlexTraining({', '.join(fields)})"


#: Named training compiles (``check --ops flex_backward`` runs ``selective``, the one that
#: crashes stock 2.15.0's backward, found by the backward property suite).
FLEX_TRAINING: dict[str, FlexTraining] = {
    "bias": FlexTraining(),
    "bias_table_grad": FlexTraining(table_grad=True),
    "selective": FlexTraining(table_grad=True, checkpoint="selective"),
    "selective_frozen": FlexTraining(checkpoint="selective"),
    # Captured views under selective checkpointing: up to 2.13 each reaches the backward's
    # selection as a view (T5's position bias: permuted, unsqueezed, read by two layers).
    "t5_view": FlexTraining(table_grad=True, checkpoint="selective", bias_view="t5", layers=2),
    "expand_view": FlexTraining(checkpoint="selective", bias_view="expand", layers=2),
    "slice_view": FlexTraining(table_grad=True, checkpoint="selective", bias_view="slice"),
    "slope_view": FlexTraining(bias=None, slope="grad", slope_view=True, checkpoint="selective"),
    "qkv_view": FlexTraining(checkpoint="selective", qkv_view=True),
    # Found by the backward property suite: captured buffers realized for one layer's
    # backward selection and read by the other layer's template must have fixed layouts.
    "shared_captures": FlexTraining(slope="frozen", mask=True, checkpoint="selective", bias_view="t5", layers=2,
                                    slope_view=True, qkv_view=True),
}
#: The named cases whose captured inputs (or q/k/v) are views.
FLEX_VIEWS = ("t5_view", "expand_view", "slice_view", "slope_view", "qkv_view")


def flex_training_workload(case: FlexTraining, device: str) -> tuple[Callable[..., Any], Callable[..., Any],
                                                                      tuple[Any, ...]]:
    """``(train, reference, args)``: ``train(*args)`` returns the attention output (under
    ``case.checkpoint``), ``reference`` the same without checkpointing (eager selective
    checkpointing of flex_attention does not run in eager mode); the args requiring grad
    are leaves (``.grad`` after backward)."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

    dtype = getattr(torch, case.dtype)
    generator = torch.Generator(device="cpu").manual_seed(0)

    def leaf(*shape: int, kind: Any = dtype, grad: bool = True) -> Any:
        return torch.randn(shape, generator=generator).to(device=device, dtype=kind).requires_grad_(grad)

    length, heads = case.length, case.q_heads
    if case.qkv_view:
        x = leaf(case.batch, length, 32)
        projections = tuple(leaf(32, h * case.head_dim) for h in (heads, case.kv_heads, case.kv_heads))
    else:
        query = leaf(case.batch, heads, length, case.head_dim)
        key, value = (leaf(case.batch, case.kv_heads, length, case.head_dim) for _ in "kv")
    pad = 16 if case.bias_view == "slice" else 0
    index = relative_position_index(length + pad, None).to(device)
    table = leaf(int(index.max()) + 1, heads, kind=torch.float32, grad=case.table_grad)
    param = leaf(heads, kind=torch.float32, grad=case.slope == "grad")
    ids = torch.arange(length, device=device)
    block_mask = None
    if case.mask:
        eager_doc = ids // 64
        block_mask = create_block_mask(lambda b, h, q, kv: eager_doc[q] == eager_doc[kv], None, None, length, length,
                                       device=device)

    def captured_bias(table, index, dtype):
        """``(bias, read)``: the bias computed in the graph and how ``score_mod`` reads it."""
        bias = None  # (L, L, heads)
        if case.bias == "gather":
            bias = table[index]
        elif case.bias == "two_sources":
            bias = table[index] + 0.01 * index[..., None]
        elif case.bias == "cast":
            bias = table[index.int()].to(dtype)
        if bias is None or case.bias_view is None:
            return bias, lambda b, h, q, kv: bias[q, kv, h]
        if case.bias_view == "slice":
            bias = bias[pad:, pad:]
            return bias, lambda b, h, q, kv: bias[q, kv, h]
        bias = bias.permute(2, 0, 1).unsqueeze(0)  # (1, heads, L, L)
        if case.bias_view == "expand":
            bias = bias.expand(case.batch, -1, -1, -1)
            return bias, lambda b, h, q, kv: bias[b, h, q, kv]
        return bias, lambda b, h, q, kv: bias[0, h, q, kv]

    def attention(query, key, value, table, index, param, ids):
        bias, read_bias = captured_bias(table, index, query.dtype)
        slope = -torch.exp2(-param) if case.slope else None  # (heads,), computed in the graph
        if slope is not None and case.slope_view:
            slope = slope[None, :, None, None].expand(case.batch, heads, length, length)

        def score_mod(score, b, h, q_idx, kv_idx):
            if bias is not None:
                score = score + read_bias(b, h, q_idx, kv_idx)
            if slope is not None:
                per_head = slope[b, h, q_idx, kv_idx] if case.slope_view else slope[h]
                score = score + per_head * (kv_idx - q_idx)
            return score

        mask = None
        if block_mask is not None:
            doc = ids // 64  # computed in the graph, read by the mask_mod

            def mask_mod(b, h, q_idx, kv_idx):
                return doc[q_idx] == doc[kv_idx]

            mask = BlockMask.from_kv_blocks(block_mask.kv_num_blocks, block_mask.kv_indices,
                                            block_mask.full_kv_num_blocks, block_mask.full_kv_indices,
                                            BLOCK_SIZE=block_mask.BLOCK_SIZE, mask_mod=mask_mod,
                                            seq_lengths=(length, length))
        out = query
        for _ in range(case.layers):  # later layers attend from the previous layer's output
            out = flex_attention(out, key, value, score_mod=score_mod, block_mask=mask,
                                 enable_gqa=case.q_heads != case.kv_heads)
        return out

    if case.qkv_view:
        def project(x, w, h):
            return (x @ w).view(case.batch, length, h, case.head_dim).transpose(1, 2)

        def from_projections(x, w_q, w_k, w_v, *rest):
            return attention(project(x, w_q, heads), project(x, w_k, case.kv_heads), project(x, w_v, case.kv_heads),
                             *rest)

        leaves: tuple[Any, ...] = (x, *projections)
        body = from_projections
    else:
        leaves, body = (query, key, value), attention

    train = body
    if case.checkpoint:
        import functools

        from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

        def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
            if op is torch.ops.higher_order.flex_attention:
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE

        options = {}
        if case.checkpoint == "selective":
            options["context_fn"] = functools.partial(create_selective_checkpoint_contexts, policy)

        def train(*args):
            return checkpoint(body, *args, use_reentrant=False, **options)

    return train, body, (*leaves, table, index, param, ids)


def flex_training(case: FlexTraining | str, device: str, *, compare: bool) -> list[Step]:
    """One max-autotune compile of ``case`` (or a :data:`FLEX_TRAINING` name) and its
    backward, timed together. ``compare=True`` checks the output and every leaf's
    gradient against eager (the max relative error over them)."""
    import torch
    from torch._inductor import config

    case = FLEX_TRAINING[case] if isinstance(case, str) else case
    train, reference, args = flex_training_workload(case, device)
    leaves = [a for a in args if a.requires_grad]
    torch._dynamo.reset()
    compiled = torch.compile(train, mode=MODE, fullgraph=True)

    def run(function: Callable[..., Any]) -> tuple[Any, ...]:
        for leaf in leaves:
            leaf.grad = None
        out = function(*args)
        out.sum().backward()
        return (out.detach(), *(leaf.grad for leaf in leaves))

    def check(compiled_results: tuple[Any, ...]) -> float:
        expected = run(reference)
        return max(max_rel_error(a, e) for a, e in zip(compiled_results, expected))

    with config.patch(fx_graph_cache=False):
        return [compile_step(False, lambda: run(compiled), (), device, check if compare else None)]


def flex_gathered_bias(name: str, device: str, *, compare: bool, dtype: Any = None) -> list[Step]:
    """One max-autotune compile of :func:`flex_workload` ``name``. ``compare=True`` checks
    the output (batch, heads, L, head dim) against eager flex_attention."""
    import torch
    from torch._inductor import config

    attend, args = flex_workload(name, device, dtype)
    torch._dynamo.reset()
    compiled = torch.compile(attend, mode=MODE, fullgraph=True)
    check = (lambda result: max_rel_error(result, attend(*args))) if compare else None
    with config.patch(fx_graph_cache=False):
        return [compile_step(False, compiled, args, device, check)]


def _run_flex(name: str, order: str, device: str, *, compare: bool, **options: Any) -> list[Step]:
    return flex_gathered_bias(name, device, compare=compare, **options)


def _run_training(order: str, device: str, *, compare: bool, dtype: Any = None) -> list[Step]:
    case = FLEX_TRAINING[TRAINING_SEQUENCES[order][1]]
    if dtype is not None:
        case = dataclasses.replace(case, dtype=str(dtype).removeprefix("torch."))
    return flex_training(case, device, compare=compare)


#: The ``check`` ops this patch's bug shows in (``PATCH.check_ops``), in its order.
WORKLOADS: tuple[Workload, ...] = (
    *(Workload(name, {FLEX_ORDER: ("gathered bias", 1)}, functools.partial(_run_flex, name)) for name in FLEX),
    Workload("flex_backward", {order: (label, 1) for order, (label, _) in TRAINING_SEQUENCES.items()},
             _run_training),
)

#: What ``check`` prints about the seams below on a CPU-only machine.
HARNESS_NOTE = ("FlexAttention reaches its Triton forward, decoding and backward templates through three more "
                "seams (the lowering's CPU dispatch and the API's CPU-backward refusal removed, a stand-in GPU's "
                "SM count).")


# --- the harness seams 4-6 --------------------------------------------------------------

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

