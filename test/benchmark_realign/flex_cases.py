"""Hypothesis strategies for FlexAttention compiles with in-graph captured buffers
(pytorch/pytorch#194515)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from hypothesis import strategies as st

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
                if view:
                    return score + bias[0, h, q_idx, kv_idx]
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


@st.composite
def flex_training_cases(draw: st.DrawFn, dtypes: tuple[str, ...] = ("float32", "bfloat16")) -> Any:
    """A :class:`~inductor_fix.check.benchmark_realign.FlexTraining`: q/k/v requiring grad, or views of
    projections; captured buffers in ``score_mod`` (a gathered, two-source or cast bias, the
    table with or without grad, as it is or a view of it: permuted and unsqueezed as T5 does,
    expanded per batch, sliced from a longer one; a slope computed in the graph, per head or
    broadcast) and ``mask_mod``; one or two attention layers reading them; GQA; plain, fully
    checkpointed or selectively checkpointed (captured producers recomputed in the backward
    graph)."""
    from inductor_fix.patches.benchmark_realign.check import FlexTraining

    kv_heads = draw(st.sampled_from([1, 2]), label="kv_heads")
    bias = draw(st.sampled_from([None, "gather", "two_sources", "cast"]), label="bias")
    slope = draw(st.sampled_from([None, "grad", "frozen"]), label="slope")
    mask = draw(st.booleans(), label="mask")
    if not (bias or slope or mask):
        bias = "gather"  # at least one captured buffer
    return FlexTraining(
        batch=draw(st.sampled_from([1, 2]), label="batch"),
        q_heads=kv_heads * draw(st.sampled_from([1, 2]), label="gqa_group"),
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
    from inductor_fix.patches.benchmark_realign.check import FLEX_TRAINING, FlexTraining

    return {
        **FLEX_TRAINING,  # check's own: selective, t5_view
        "bias": FlexTraining(),
        "bias_table_grad": FlexTraining(table_grad=True),
        "selective_frozen": FlexTraining(checkpoint="selective"),
        # Captured views under selective checkpointing: up to 2.13 each reaches the backward's
        # selection as a view (T5's position bias: permuted, unsqueezed, read by two layers).
        "expand_view": FlexTraining(checkpoint="selective", bias_view="expand", layers=2),
        "slice_view": FlexTraining(table_grad=True, checkpoint="selective", bias_view="slice"),
        "slope_view": FlexTraining(bias=None, slope="grad", slope_view=True, checkpoint="selective"),
        "qkv_view": FlexTraining(checkpoint="selective", qkv_view=True),
        # Found by the backward property suite: captured buffers realized for one layer's
        # backward selection and read by the other layer's template must have fixed layouts.
        "shared_captures": FlexTraining(slope="frozen", mask=True, checkpoint="selective", bias_view="t5", layers=2,
                                        slope_view=True, qkv_view=True),
    }


#: Named training compiles (``FlexTraining`` of check's workloads): check's two and the tests' own.
TRAINING = _training_cases()
#: The named cases whose captured inputs (or q/k/v) are views.
TRAINING_VIEWS = ("t5_view", "expand_view", "slice_view", "slope_view", "qkv_view")
