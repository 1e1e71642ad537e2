"""The compiles that trigger pytorch/pytorch#188069 and #194515.

Matmuls (#188069): two compiles in one process with equal layouts, one where
operands alias (the same tensor twice, or three times for addmm/baddbmm), one
where they do not. ``alias-first`` (aliased, then distinct) makes the stock
launch take one argument too many; ``distinct-first`` one too few. Shapes as
measured on the H200: (4, 128, 128) for bmm/baddbmm, (128, 128) for mm/addmm.

FlexAttention (#194515): one inference compile whose ``score_mod`` reads a bias
gathered inside the graph, ``bias = table[index]`` (the relative-position idiom
of Swin and T5), sequence ``gathered-bias``. ``flex`` reaches the forward
template (q/k/v (2, 2, 256, 32), a 1-D relative bias); ``flex_decoding`` the
decoding template (q/k/v (128, 2, 49, 32), Swin's 7x7 window bias). ``flex_backward``
(sequence ``training``) compiles a training step, forward and backward
(``flex_attention_backward``), of the same bias under selective activation
checkpointing (:class:`FlexTraining`, ``FLEX_TRAINING["selective"]``), which
recomputes the gather in the backward graph; sequence ``t5-view`` the same with the
bias a view, as transformers' T5 has it (``FLEX_TRAINING["t5_view"]``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

__all__ = [
    "FLEX",
    "FLEX_BACKWARD",
    "FLEX_ORDER",
    "FLEX_TRAINING",
    "FLEX_VIEWS",
    "FlexTraining",
    "flex_training",
    "flex_training_workload",
    "OPS",
    "ORDERS",
    "Op",
    "Step",
    "describe_error",
    "flex_gathered_bias",
    "flex_workload",
    "make_operands",
    "max_rel_error",
    "optimizer_step",
    "orders_of",
    "run_compiles",
    "run_sequence",
    "steps_of",
    "TRAINING_ORDER",
]

MODE = "max-autotune-no-cudagraphs"
#: order -> whether each compile's operands alias.
SEQUENCES: dict[str, tuple[bool, ...]] = {"alias-first": (True, False), "distinct-first": (False, True)}
ORDERS = tuple(SEQUENCES)
#: FlexAttention workloads: name -> (batch, heads, sequence length, head dim, Swin window or None).
FLEX: dict[str, tuple[int, int, int, int, int | None]] = {
    "flex": (2, 2, 256, 32, None),
    "flex_decoding": (128, 2, 49, 32, 7),
}
FLEX_ORDER = "gathered-bias"
#: The training compiles: FlexAttention forward and backward, sequence ``training`` (a
#: gathered bias) and ``t5-view`` (T5's position bias, a view); sequence -> FLEX_TRAINING name.
FLEX_BACKWARD, TRAINING_ORDER = "flex_backward", "training"
TRAINING_ORDERS = {TRAINING_ORDER: "selective", "t5-view": "t5_view"}


def orders_of(op: str) -> tuple[str, ...]:
    """The sequences ``op`` runs in: both aliasing orders for a matmul, one compile for flex,
    two training compiles for the flex backward."""
    if op == FLEX_BACKWARD:
        return tuple(TRAINING_ORDERS)
    return (FLEX_ORDER,) if op in FLEX else ORDERS


def steps_of(order: str) -> int:
    """How many compiles a sequence has."""
    return 1 if order == FLEX_ORDER or order in TRAINING_ORDERS else len(SEQUENCES[order])


@dataclasses.dataclass(frozen=True)
class Op:
    """A template op: ``call(*operands)``, operand count, and the operand shape."""

    name: str
    operands: int
    shape: tuple[int, ...]
    call: Callable[..., Any]


def _ops() -> dict[str, Op]:
    import torch

    return {
        "bmm": Op("bmm", 2, (4, 128, 128), torch.bmm),
        "mm": Op("mm", 2, (128, 128), torch.mm),
        "addmm": Op("addmm", 3, (128, 128), torch.addmm),
        "baddbmm": Op("baddbmm", 3, (4, 128, 128), torch.baddbmm),
        # bmm(x, x^T): aliasing through a transposed view, as in grad @ grad^T.
        "bmm_t": Op("bmm_t", 2, (4, 128, 128), lambda a, b: torch.bmm(a, b.transpose(1, 2))),
    }


OPS: tuple[str, ...] = ("bmm", "mm", "addmm", "baddbmm", "bmm_t", *FLEX, FLEX_BACKWARD)


def make_operands(op: Op, aliased: bool, device: str, dtype: Any = None, seed: int = 0) -> tuple[Any, ...]:
    """``op.operands`` tensors of ``op.shape``: one tensor repeated if ``aliased``."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(seed)
    dtype = dtype or torch.float32

    def tensor():
        return torch.randn(op.shape, generator=generator).to(device=device, dtype=dtype)

    if aliased:
        x = tensor()
        return (x,) * op.operands
    return tuple(tensor() for _ in range(op.operands))


@dataclasses.dataclass
class Step:
    """One compile-and-run: ``error`` is None if it succeeded. ``max_rel_error``
    compares with eager (None when not computed); ``seconds`` is wall time of
    the first compiled call; ``cache_hits`` the codegen-cache hits it caused."""

    aliased: bool
    error: str | None
    seconds: float
    cache_hits: int
    max_rel_error: float | None = None


def max_rel_error(actual: Any, expected: Any) -> float:
    """max |actual - expected| / max |expected| (floor 1e-6), in float32."""
    scale = expected.abs().max().clamp_min(1e-6)
    return float((actual.float() - expected.float()).abs().max() / scale)


def run_sequence(name: str, order: str, device: str, *, compare: bool, **options: Any) -> list[Step]:
    """Compile ``OPS[name]`` twice in this process, aliased and distinct, in ``order``
    (``"alias-first"`` or ``"distinct-first"``), see :func:`run_compiles`; a flex op
    once (``"gathered-bias"``), see :func:`flex_gathered_bias`; ``flex_backward`` once
    per training sequence (``"training"``, ``"t5-view"``), see :func:`flex_training`."""
    if name == FLEX_BACKWARD:
        dtype = options.pop("dtype", None)
        case = FLEX_TRAINING[TRAINING_ORDERS[order]]
        if dtype is not None:
            case = dataclasses.replace(case, dtype=str(dtype).removeprefix("torch."))
        return flex_training(case, device, compare=compare, **options)
    if name in FLEX:
        return flex_gathered_bias(name, device, compare=compare, **options)
    return run_compiles(name, SEQUENCES[order], device, compare=compare, **options)


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
        return [_compile_step(False, lambda: run(compiled), (), device, check if compare else None)]


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
        return [_compile_step(False, compiled, args, device, check)]


def run_compiles(
    name: str,
    aliasing: Sequence[bool],
    device: str,
    *,
    compare: bool,
    dtype: Any = None,
    compile_options: dict[str, Any] | None = None,
) -> list[Step]:
    """One fresh ``torch.compile`` of ``OPS[name]`` per entry of ``aliasing``
    (True: all operands are one tensor), in this process, same layouts throughout.

    ``compare=True`` checks each result against eager (meaningless under the CPU
    harness, where launches compute nothing). ``compile_options`` go to
    ``torch.compile`` (e.g. ``{"dynamic": True}``). Stops at the first failing step.
    The FX graph cache is off: a repeated graph would be served whole from it and
    never reach template codegen, as different graphs of a real model do.
    """
    from torch._inductor import config

    with config.patch(fx_graph_cache=False):
        return _run_compiles(_ops()[name], aliasing, device, compare, dtype, compile_options or {})


def _run_compiles(
    op: Op, aliasing: Sequence[bool], device: str, compare: bool, dtype: Any, compile_options: dict[str, Any]
) -> list[Step]:
    import torch

    steps: list[Step] = []
    for aliased in aliasing:
        operands = make_operands(op, aliased, device, dtype, seed=len(steps))
        torch._dynamo.reset()
        compiled = torch.compile(lambda *xs: op.call(*xs), mode=MODE, fullgraph=True, **compile_options)
        check = (lambda result: max_rel_error(result, op.call(*operands))) if compare else None
        steps.append(_compile_step(aliased, compiled, operands, device, check))
        if steps[-1].error:
            break
    return steps


def _compile_step(
    aliased: bool,
    compiled: Callable[..., Any],
    args: tuple[Any, ...],
    device: str,
    check: Callable[[Any], float] | None,
) -> Step:
    """The first (compiling) call of ``compiled``, timed, with the codegen-cache hits it
    caused; ``check(result)`` gives the max relative error against eager."""
    import torch
    from torch._dynamo.utils import counters

    hits = counters["inductor"]["generated_module_cache_hit"]
    start = time.perf_counter()
    try:
        result = compiled(*args)
        if device != "cpu":
            torch.cuda.synchronize()
    except Exception as error:
        hits = counters["inductor"]["generated_module_cache_hit"] - hits
        return Step(aliased, describe_error(error), time.perf_counter() - start, hits)
    seconds = time.perf_counter() - start
    hits = counters["inductor"]["generated_module_cache_hit"] - hits
    return Step(aliased, None, seconds, hits, check(result) if check else None)


def optimizer_step(device: str, *, compare: bool, batch: int = 4, n: int = 128, dtype: Any = None) -> list[Step]:
    """The pattern of the upstream report: a Shampoo/SOAP-style preconditioner.

    Compile 1 (aliased): ``L.lerp_(G @ G^T, 1 - beta)`` and ``R.lerp_(G^T @ G, 1 - beta)``
    as einsums of the batched gradient ``G`` (batch, n, n) with itself. Compile 2
    (distinct): the projection ``Q_L^T @ G @ Q_R`` as one einsum of ``G`` with two
    other matrices of the same shape. Their bmm templates see equal layouts, so
    stock Inductor replays compile 1's one-pointer kernel for compile 2 and crashes.
    ``compare=True`` checks both compiled results (state updates, projection) against eager.
    """
    import torch
    from torch._inductor import config

    beta = 0.95

    def update(grad, left, right):
        left.lerp_(torch.einsum("bij,bkj->bik", grad, grad), 1 - beta)
        right.lerp_(torch.einsum("bji,bjk->bik", grad, grad), 1 - beta)

    def project(grad, q_left, q_right):
        return torch.einsum("bji,bjk,bkl->bil", q_left, grad, q_right)

    generator = torch.Generator(device="cpu").manual_seed(0)

    def tensor():
        return torch.randn(batch, n, n, generator=generator).to(device=device, dtype=dtype or torch.float32)

    grad, q_left, q_right = tensor(), tensor(), tensor()
    steps: list[Step] = []
    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False):
        for aliased, function, make_args in (
            (True, update, lambda: (grad, torch.zeros_like(grad), torch.zeros_like(grad))),
            (False, project, lambda: (grad, q_left, q_right)),
        ):
            args, eager_args = make_args(), make_args()

            def check(result, function=function, args=args, eager_args=eager_args):
                expected = function(*eager_args)
                # update() returns None and mutates its state arguments: compare those.
                pairs = [(result, expected)] if result is not None else list(zip(args[1:], eager_args[1:]))
                return max(max_rel_error(a, e) for a, e in pairs)

            compiled = torch.compile(function, mode=MODE, fullgraph=True)
            steps.append(_compile_step(aliased, compiled, args, device, check if compare else None))
            if steps[-1].error:
                break
    return steps


def describe_error(error: BaseException) -> str:
    """``"TypeError: <first line>"`` of the innermost error, without Inductor's wrapper text."""
    while error.__cause__ is not None or getattr(error, "inner_exception", None) is not None:
        error = getattr(error, "inner_exception", None) or error.__cause__
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if type(error).__name__ == "LoweringException":  # its message already starts "TypeError: ..."
        return first
    return f"{type(error).__name__}: {first}"
