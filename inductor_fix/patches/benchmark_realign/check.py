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
from typing import Any, Callable, ClassVar

from ...check.parts import CheckPart
from ...check.workloads import MODE, Step, Workload, compile_step, max_rel_error
from .seams import HARNESS_NOTE, flex_backward_on_triton, flex_lowering_on_triton, harness_seams

__all__ = ["FLEX", "FLEX_ORDER", "FLEX_TRAINING", "HARNESS_NOTE", "PART", "TRAINING_SEQUENCES", "FlexTraining",
           "checkpointed", "flex_backward_on_triton", "flex_gathered_bias", "flex_lowering_on_triton", "flex_training",
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

    The ``score_mod`` adds ``bias[q_idx, kv_idx, h]``, computed in the graph by gathering a
    float32 table (2 length - 1, heads) with an int64 relative-position index (L, L):
    ``table[index]``. ``table_grad``: the table requires grad. ``bias_view="t5"``: the bias
    permuted and unsqueezed to (1, heads, L, L), as transformers' T5 has its position bias (a
    captured input that reaches selection as an ``ir`` view node). ``layers=2`` reads one bias
    in two attention calls (T5 computes it in its first layer for all). ``checkpoint``:
    ``"full"`` (``torch.utils.checkpoint``: the forward recomputed in the backward) or
    ``"selective"`` (saves flex_attention's outputs, recomputes the rest: the captured
    producers are recomputed in the backward graph, pytorch/pytorch#194515's kind).

    The tests extend it (``test/benchmark_realign/flex_cases.py``: other biases, slopes, masks,
    GQA, other views) by overriding :meth:`inputs` and :meth:`attention`; ValueError for a
    ``bias_view`` or ``checkpoint`` the class does not build.
    """

    batch: int = 2
    heads: int = 2
    length: int = 256
    head_dim: int = 32
    dtype: str = "float32"
    table_grad: bool = False
    checkpoint: str | None = None
    bias_view: str | None = None
    layers: int = 1

    #: The ``bias_view`` values this class builds.
    BIAS_VIEWS: ClassVar[tuple[str | None, ...]] = (None, "t5")

    def __post_init__(self) -> None:
        if self.bias_view not in self.BIAS_VIEWS:
            raise ValueError(f"{type(self).__name__}: bias_view must be one of {self.BIAS_VIEWS}, "
                             f"got {self.bias_view!r}")
        if self.checkpoint not in (None, "full", "selective"):
            raise ValueError(f"{type(self).__name__}: checkpoint must be None, 'full' or 'selective', "
                             f"got {self.checkpoint!r}")

    def __repr__(self) -> str:
        fields = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                  if getattr(self, f.name) != f.default]
        return f"{type(self).__name__}({', '.join(fields)})"

    def leaf(self, generator: Any, device: str, *shape: int, kind: Any = None, grad: bool = True) -> Any:
        """A (``shape``) normal tensor of ``kind`` (default: the case's dtype) from ``generator``, a
        leaf requiring grad or not."""
        import torch

        kind = kind or getattr(torch, self.dtype)
        return torch.randn(shape, generator=generator).to(device=device, dtype=kind).requires_grad_(grad)

    def inputs(self, device: str) -> tuple[Any, ...]:
        """``(query, key, value, table, index)``: q/k/v (batch, heads, L, head dim) leaves, the
        table (2 L - 1, heads) float32, the index (L, L) int64."""
        import torch

        generator = torch.Generator(device="cpu").manual_seed(0)
        qkv = [self.leaf(generator, device, self.batch, self.heads, self.length, self.head_dim) for _ in "qkv"]
        index = relative_position_index(self.length, None).to(device)
        table = self.leaf(generator, device, int(index.max()) + 1, self.heads, kind=torch.float32,
                          grad=self.table_grad)
        return (*qkv, table, index)

    def attention(self, device: str) -> Callable[..., Any]:
        """``attend(*inputs)`` on ``device``: the attention output (batch, heads, L, head dim),
        not checkpointed; what it needs built eagerly (not traced) is built here."""
        from torch.nn.attention.flex_attention import flex_attention

        t5_view, layers = self.bias_view == "t5", self.layers

        def attend(query, key, value, table, index):
            bias = table[index]  # (L, L, heads), computed in the graph
            if t5_view:
                bias = bias.permute(2, 0, 1).unsqueeze(0)  # (1, heads, L, L)

            def score_mod(score, b, h, q_idx, kv_idx):
                return score + (bias[0, h, q_idx, kv_idx] if t5_view else bias[q_idx, kv_idx, h])

            out = query
            for _ in range(layers):  # later layers attend from the previous layer's output
                out = flex_attention(out, key, value, score_mod=score_mod)
            return out

        return attend


#: The training compiles ``check --ops flex_backward`` runs (the tests add their own cases):
#: ``selective`` crashes stock 2.15.0's backward (found by the backward property suite);
#: ``t5_view`` has transformers' T5 position bias, a view read by two layers.
FLEX_TRAINING: dict[str, FlexTraining] = {
    "selective": FlexTraining(table_grad=True, checkpoint="selective"),
    "t5_view": FlexTraining(table_grad=True, checkpoint="selective", bias_view="t5", layers=2),
}


def checkpointed(body: Callable[..., Any], kind: str | None) -> Callable[..., Any]:
    """``body`` under activation checkpointing: ``"full"`` (``torch.utils.checkpoint``),
    ``"selective"`` (flex_attention's outputs saved, the rest recomputed) or None (``body``)."""
    if kind is None:
        return body
    import torch
    from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        if op is torch.ops.higher_order.flex_attention:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    options: dict[str, Any] = {}
    if kind == "selective":
        options["context_fn"] = functools.partial(create_selective_checkpoint_contexts, policy)

    def train(*args: Any) -> Any:
        return checkpoint(body, *args, use_reentrant=False, **options)

    return train


def flex_training_workload(case: FlexTraining, device: str) -> tuple[Callable[..., Any], Callable[..., Any],
                                                                      tuple[Any, ...]]:
    """``(train, reference, args)``: ``train(*args)`` returns the attention output (under
    ``case.checkpoint``), ``reference`` the same without checkpointing (eager selective
    checkpointing of flex_attention does not run in eager mode); the args requiring grad
    are leaves (``.grad`` after backward)."""
    body = case.attention(device)
    return checkpointed(body, case.checkpoint), body, case.inputs(device)


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
             help="FlexAttention with a gathered bias (pytorch/pytorch#194515)", affected=">=2.7.0,<2.15.0"),
    Workload("flex_decoding", {FLEX_ORDER: ("gathered bias", 1)}, functools.partial(_run_flex, "flex_decoding"),
             help="its decoding template", affected=">=2.7.0,<2.15.0"),
    Workload("flex_backward", {order: (label, 1) for order, (label, _) in TRAINING_SEQUENCES.items()},
             _run_training, help="a training step of it under selective activation checkpointing",
             affected=">=2.7.0"),
))
