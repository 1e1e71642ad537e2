"""FlexAttention compiles with in-graph captured buffers (pytorch/pytorch#194515) that the
tests vary, and their Hypothesis strategies: inference (:class:`FlexCase`) and training
(:class:`TrainingCase`, check's ``FlexTraining`` with what only the tests need)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar

from hypothesis import strategies as st

from inductor_fix.patches.benchmark_realign.check import FLEX_TRAINING, FlexTraining, relative_position_index

#: How the score_mod's bias is computed inside the graph; each leaves captured
#: buffers that the flex lowering's autotuning list does not hold.
BIASES = ("gather", "two_sources", "cast")
FORWARD_LENGTHS = (128, 160, 256)
DECODING_LENGTHS = (1, 7, 49, 64)


@dataclasses.dataclass(frozen=True)
class FlexCase:
    """One inference compile of flex_attention whose ``score_mod`` adds
    ``bias[q_idx, kv_idx, h]``, ``bias`` (q_len, kv_len, q_heads) computed in the graph:

    gather: ``table[index]``; two_sources: ``table[index] + slope * index`` (one producer
    of three buffers); cast: ``table[index.int()].to(dtype)`` of a float32 table.
    ``bias_view``: the bias read through a view, ``"t5"`` permuted and unsqueezed to
    (1, q_heads, q_len, kv_len) as transformers' T5 has it, ``"expand"`` that expanded per batch.
    ``q_heads`` > ``kv_heads`` is GQA; ``q_len`` < 128 without GQA reaches the decoding
    kernel, else the forward kernel.
    """

    batch: int
    q_heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    dtype: str
    bias: str
    bias_view: str | None = None

    @property
    def templates(self) -> tuple[str, ...]:
        return ("flex_attention", "flex_decoding")

    def __repr__(self) -> str:
        view = f", view={self.bias_view}" if self.bias_view else ""
        return (f"FlexCase({self.bias}{view}, {self.dtype}, batch={self.batch}, heads={self.q_heads}/{self.kv_heads}, "
                f"q_len={self.q_len}, kv_len={self.kv_len}, head_dim={self.head_dim})")

    def inputs(self, device: str, seed: int = 0) -> tuple[Any, ...]:
        """query, key, value, table (rows, q_heads) float32, index (q_len, kv_len) int64, slope (q_heads,)."""
        import torch

        generator = torch.Generator().manual_seed(seed)
        dtype = getattr(torch, self.dtype)

        def tensor(*shape: int, kind: Any = dtype) -> Any:
            return torch.randn(shape, generator=generator).to(device, kind)

        index = torch.arange(self.q_len)[:, None] - torch.arange(self.kv_len)[None, :] + self.kv_len - 1
        rows = self.q_len + self.kv_len - 1
        return (tensor(self.batch, self.q_heads, self.q_len, self.head_dim),
                tensor(self.batch, self.kv_heads, self.kv_len, self.head_dim),
                tensor(self.batch, self.kv_heads, self.kv_len, self.head_dim),
                tensor(rows, self.q_heads, kind=torch.float32), index.to(device),
                tensor(self.q_heads, kind=torch.float32))

    def function(self) -> Callable[..., Any]:
        from torch.nn.attention.flex_attention import flex_attention

        bias_kind, view, gqa, batch = self.bias, self.bias_view, self.q_heads != self.kv_heads, self.batch

        def attend(query, key, value, table, index, slope):
            if bias_kind == "gather":
                bias = table[index]
            elif bias_kind == "two_sources":
                bias = table[index] + slope * index[..., None]
            else:
                bias = table[index.int()].to(query.dtype)
            if view:
                bias = bias.permute(2, 0, 1).unsqueeze(0)  # (1, q_heads, q_len, kv_len)
            if view == "expand":
                bias = bias.expand(batch, -1, -1, -1)

            def score_mod(score, b, h, q_idx, kv_idx):
                if view == "expand":
                    return score + bias[b, h, q_idx, kv_idx]
                if view:  # bias[0, h, q_idx, kv_idx]: 2.9's Dynamo reads the int among the index
                    # tensors as a data-dependent item() (aten._local_scalar_dense) and cannot trace it
                    return score + bias[0][h, q_idx, kv_idx]
                return score + bias[q_idx, kv_idx, h]

            return flex_attention(query, key, value, score_mod=score_mod, enable_gqa=gqa)

        return attend


@st.composite
def flex_cases(draw: st.DrawFn, dtypes: tuple[str, ...] = ("float32", "bfloat16")) -> FlexCase:
    kv_heads = draw(st.sampled_from([1, 2]), label="kv_heads")
    group = draw(st.sampled_from([1, 2]), label="gqa_group")
    decoding = draw(st.booleans(), label="decoding")
    q_len = draw(st.sampled_from(DECODING_LENGTHS if decoding else FORWARD_LENGTHS), label="q_len")
    kv_len = draw(st.sampled_from([q_len, 128, 256]) if decoding else st.just(q_len), label="kv_len")
    return FlexCase(
        batch=draw(st.sampled_from([1, 2, 4]), label="batch"),
        q_heads=kv_heads * group,
        kv_heads=kv_heads,
        q_len=q_len,
        kv_len=kv_len,
        head_dim=draw(st.sampled_from([16, 32, 64]), label="head_dim"),
        dtype=draw(st.sampled_from(dtypes), label="dtype"),
        bias=draw(st.sampled_from(BIASES), label="bias"),
        bias_view=draw(st.sampled_from([None, "t5", "expand"]), label="bias_view"),
    )


@dataclasses.dataclass(frozen=True, repr=False)
class TrainingCase(FlexTraining):
    """check's :class:`~inductor_fix.patches.benchmark_realign.check.FlexTraining` and what
    only the tests vary. ``kv_heads`` < ``heads``: GQA (None: ``heads``). ``bias``: the
    ``score_mod`` adds ``bias[q_idx, kv_idx, h]`` computed in the graph from the table and
    index: ``gather`` ``table[index]``; ``two_sources`` ``table[index] + scale * index``
    (one producer, three captured buffers); ``cast`` ``table[index.int()].to(q.dtype)``;
    None: no bias. ``slope``: a per-head ALiBi-like slope computed in the graph,
    ``-exp2(-param)``, its param requiring grad (``"grad"``) or not (``"frozen"``);
    ``slope_view`` broadcasts it to (batch, heads, L, L). ``mask``: a ``mask_mod`` reading
    ``doc = ids // 64`` computed in the graph. ``bias_view`` also ``"expand"`` (T5's view
    expanded per batch) and ``"slice"`` (the bias gathered for L + 16 positions, the last L
    sliced: T5 with a cache). ``qkv_view``: q/k/v are views of projections,
    ``(x @ w).view(B, L, H, D).transpose(1, 2)``, ``x`` (batch, L, 32) and ``w`` the leaves.
    Its inputs: the leaves, table, index, param (heads,) and ids (L,)."""

    kv_heads: int | None = None
    bias: str | None = "gather"
    slope: str | None = None
    mask: bool = False
    slope_view: bool = False
    qkv_view: bool = False

    BIAS_VIEWS: ClassVar[tuple[str | None, ...]] = (None, "t5", "expand", "slice")

    @property
    def groups(self) -> int:
        return self.kv_heads or self.heads

    def inputs(self, device: str) -> tuple[Any, ...]:
        import torch

        generator = torch.Generator(device="cpu").manual_seed(0)
        length, heads = self.length, self.heads
        if self.qkv_view:
            leaves = (self.leaf(generator, device, self.batch, length, 32),
                      *(self.leaf(generator, device, 32, h * self.head_dim) for h in (heads, self.groups, self.groups)))
        else:
            leaves = (self.leaf(generator, device, self.batch, heads, length, self.head_dim),
                      *(self.leaf(generator, device, self.batch, self.groups, length, self.head_dim) for _ in "kv"))
        index = relative_position_index(length + self._pad, None).to(device)
        table = self.leaf(generator, device, int(index.max()) + 1, heads, kind=torch.float32, grad=self.table_grad)
        param = self.leaf(generator, device, heads, kind=torch.float32, grad=self.slope == "grad")
        return (*leaves, table, index, param, torch.arange(length, device=device))

    @property
    def _pad(self) -> int:
        return 16 if self.bias_view == "slice" else 0

    def _captured_bias(self, table: Any, index: Any, dtype: Any) -> tuple[Any, Callable[..., Any]]:
        """``(bias, read)``: the bias computed in the graph and how ``score_mod`` reads it."""
        bias = None  # (L, L, heads)
        if self.bias == "gather":
            bias = table[index]
        elif self.bias == "two_sources":
            bias = table[index] + 0.01 * index[..., None]
        elif self.bias == "cast":
            bias = table[index.int()].to(dtype)
        if bias is None or self.bias_view is None:
            return bias, lambda b, h, q, kv: bias[q, kv, h]
        if self.bias_view == "slice":
            bias = bias[self._pad:, self._pad:]
            return bias, lambda b, h, q, kv: bias[q, kv, h]
        bias = bias.permute(2, 0, 1).unsqueeze(0)  # (1, heads, L, L)
        if self.bias_view == "expand":
            bias = bias.expand(self.batch, -1, -1, -1)
            return bias, lambda b, h, q, kv: bias[b, h, q, kv]
        return bias, lambda b, h, q, kv: bias[0, h, q, kv]

    def _block_mask(self, device: str) -> Any:
        """The block mask of the ``mask_mod``, built eagerly: created in the traced function it
        is a side effect Dynamo refuses."""
        import torch
        from torch.nn.attention.flex_attention import create_block_mask

        eager_doc = torch.arange(self.length, device=device) // 64
        return create_block_mask(lambda b, h, q, kv: eager_doc[q] == eager_doc[kv], None, None, self.length,
                                 self.length, device=device)

    def attention(self, device: str) -> Callable[..., Any]:
        import torch
        from torch.nn.attention.flex_attention import BlockMask, flex_attention

        case, length = self, self.length
        block_mask = self._block_mask(device) if self.mask else None

        def attend(query, key, value, table, index, param, ids):
            bias, read_bias = case._captured_bias(table, index, query.dtype)
            slope = -torch.exp2(-param) if case.slope else None  # (heads,), computed in the graph
            if slope is not None and case.slope_view:
                slope = slope[None, :, None, None].expand(case.batch, case.heads, length, length)

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
                                     enable_gqa=case.groups != case.heads)
            return out

        if not self.qkv_view:
            return attend

        def project(x, w, h):
            return (x @ w).view(case.batch, length, h, case.head_dim).transpose(1, 2)

        def from_projections(x, w_q, w_k, w_v, *rest):
            return attend(project(x, w_q, case.heads), project(x, w_k, case.groups),
                          project(x, w_v, case.groups), *rest)

        return from_projections


@st.composite
def flex_training_cases(draw: st.DrawFn, dtypes: tuple[str, ...] = ("float32", "bfloat16")) -> Any:
    """A :class:`TrainingCase`: q/k/v requiring grad, or views of
    projections; captured buffers in ``score_mod`` (a gathered, two-source or cast bias, the
    table with or without grad, as it is or a view of it: permuted and unsqueezed as T5 does,
    expanded per batch, sliced from a longer one; a slope computed in the graph, per head or
    broadcast) and ``mask_mod``; one or two attention layers reading them; GQA; plain, fully
    checkpointed or selectively checkpointed (captured producers recomputed in the backward
    graph)."""
    kv_heads = draw(st.sampled_from([1, 2]), label="kv_heads")
    bias = draw(st.sampled_from([None, "gather", "two_sources", "cast"]), label="bias")
    slope = draw(st.sampled_from([None, "grad", "frozen"]), label="slope")
    mask = draw(st.booleans(), label="mask")
    if not (bias or slope or mask):
        bias = "gather"  # at least one captured buffer
    return TrainingCase(
        batch=draw(st.sampled_from([1, 2]), label="batch"),
        heads=kv_heads * draw(st.sampled_from([1, 2]), label="gqa_group"),
        kv_heads=kv_heads,
        length=draw(st.sampled_from([128, 256]), label="length"),
        head_dim=draw(st.sampled_from([16, 32, 64]), label="head_dim"),
        dtype=draw(st.sampled_from(dtypes), label="dtype"),
        bias=bias,
        table_grad=bias is not None and draw(st.booleans(), label="table_grad"),
        slope=slope,
        mask=mask,
        checkpoint=draw(st.sampled_from([None, "full", "selective"]), label="checkpoint"),
        bias_view=draw(st.sampled_from([None, "t5", "expand", "slice"]), label="bias_view") if bias else None,
        layers=draw(st.sampled_from([1, 2]), label="layers"),
        slope_view=slope is not None and draw(st.booleans(), label="slope_view"),
        qkv_view=draw(st.booleans(), label="qkv_view"),
    )


def _training_cases() -> dict[str, Any]:
    return {
        **FLEX_TRAINING,  # check's own: selective, t5_view
        "bias": TrainingCase(),
        "bias_table_grad": TrainingCase(table_grad=True),
        "selective_frozen": TrainingCase(checkpoint="selective"),
        # Captured views under selective checkpointing: up to 2.13 each reaches the backward's
        # selection as a view (T5's position bias: permuted, unsqueezed, read by two layers).
        "expand_view": TrainingCase(checkpoint="selective", bias_view="expand", layers=2),
        "slice_view": TrainingCase(table_grad=True, checkpoint="selective", bias_view="slice"),
        "slope_view": TrainingCase(bias=None, slope="grad", slope_view=True, checkpoint="selective"),
        "qkv_view": TrainingCase(checkpoint="selective", qkv_view=True),
        # Found by the backward property suite: captured buffers realized for one layer's
        # backward selection and read by the other layer's template must have fixed layouts.
        "shared_captures": TrainingCase(slope="frozen", mask=True, checkpoint="selective", bias_view="t5", layers=2,
                                        slope_view=True, qkv_view=True),
        # patches/0007's upstream test (TestLearnableBiases.test_gathered_bias_recomputed_in_backward_max_autotune,
        # the selective case): T5's bias view and a document mask, computed in the graph, read by two layers.
        "t5_doc_mask_full": TrainingCase(table_grad=True, mask=True, checkpoint="full", bias_view="t5", layers=2),
        "t5_doc_mask_selective": TrainingCase(table_grad=True, mask=True, checkpoint="selective", bias_view="t5",
                                              layers=2),
    }


#: Named training compiles: check's two (``FlexTraining``) and the tests' own (``TrainingCase``).
TRAINING = _training_cases()
#: The named cases whose captured inputs (or q/k/v) are views.
TRAINING_VIEWS = ("t5_view", "expand_view", "slice_view", "slope_view", "qkv_view")
