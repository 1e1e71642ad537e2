"""benchmark-realign's ``check`` workloads, and the harness seams only they need.

``inductor-fix check`` finds this module through the patch table
(:mod:`inductor_fix.check.table`).

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

On a CPU the harness needs three more seams for FlexAttention, which only these workloads
use: :mod:`.seams` (``harness_seams``, which the harness enters through this part's record).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

from ...check.parts import CheckPart
from ...check.workloads import MODE, Step, Workload, compile_step, max_rel_error
from .seams import HARNESS_NOTE, flex_backward_on_triton, flex_lowering_on_triton, harness_seams

__all__ = ["FLEX", "FLEX_ORDER", "FLEX_TRAINING", "HARNESS_NOTE", "PART", "TRAINING_SEQUENCES", "FlexTraining",
           "flex_backward_on_triton", "flex_gathered_bias", "flex_lowering_on_triton", "flex_training",
           "flex_training_workload", "flex_workload", "harness_seams", "relative_position_index"]

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


#: The training compiles ``check --ops flex_backward`` runs (the tests add their own cases):
#: ``selective`` crashes stock 2.15.0's backward (found by the backward property suite);
#: ``t5_view`` has transformers' T5 position bias, a view read by two layers.
FLEX_TRAINING: dict[str, FlexTraining] = {
    "selective": FlexTraining(table_grad=True, checkpoint="selective"),
    "t5_view": FlexTraining(table_grad=True, checkpoint="selective", bias_view="t5", layers=2),
}


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


#: The ``check`` ops this patch's bug shows in, in its order. 2.15.0 passes flex forward and
#: decoding their kernels' inputs (PR #194555); the backward lowering still builds its list by
#: hand, and selective checkpointing crashes it there.
PART = CheckPart(harness_seams=harness_seams, harness_note=HARNESS_NOTE, workloads=(
    Workload("flex", {FLEX_ORDER: ("gathered bias", 1)}, functools.partial(_run_flex, "flex"),
             help="FlexAttention with a gathered bias (pytorch/pytorch#194515)", crashes=">=2.7.0,<2.15.0"),
    Workload("flex_decoding", {FLEX_ORDER: ("gathered bias", 1)}, functools.partial(_run_flex, "flex_decoding"),
             help="its decoding template", crashes=">=2.7.0,<2.15.0"),
    Workload("flex_backward", {order: (label, 1) for order, (label, _) in TRAINING_SEQUENCES.items()},
             _run_training, help="a training step of it under selective activation checkpointing",
             crashes=">=2.7.0"),
))
