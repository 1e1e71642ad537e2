"""Hypothesis strategies for matmul-family compile sequences: the kind of pytorch/pytorch#188069.

A :class:`Case` is one template op, its operand recipes (shape and view kind
per operand position), a dtype, and a compile sequence: 2-4 aliasing patterns
(set partitions of the operand positions, in restricted-growth form) compiled
one after the other in one process. Every position keeps its recipe for the
whole sequence, so every compile presents the template with the same layouts
and only the aliasing differs - exactly what the codegen-cache key must tell apart.

Views are built inside the compiled function from its base-tensor inputs, so
aliased operands are views of one Inductor buffer (one buffer name), the case
``TritonTemplateKernel.def_kernel`` deduplicates.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable

from hypothesis import assume, strategies as st

VIEWS = ("plain", "transpose", "narrow", "expand")
DTYPES = ("float32", "float16", "bfloat16")


@dataclasses.dataclass(frozen=True)
class Operand:
    """One operand position: its shape and how it is viewed out of its base tensor.

    plain: the base itself. transpose: base with the last two dims swapped, viewed
    back. narrow: a slice at ``offset`` along the last dim of a base twice as wide
    (a non-zero storage offset when ``offset`` > 0). expand: a batch-1 base
    expanded to the batch (batch stride 0). reshape: a (1, C, L) base viewed as
    (C, 1, L) (the depthwise-conv weight).
    """

    shape: tuple[int, ...]
    view: str = "plain"
    offset: int = 0

    @property
    def base_shape(self) -> tuple[int, ...]:
        *lead, rows, cols = self.shape
        if self.view == "transpose":
            return (*lead, cols, rows)
        if self.view == "narrow":
            return (*lead, rows, 2 * cols)
        if self.view == "expand":
            return (1, rows, cols)
        if self.view == "reshape":
            return (1, self.shape[0], self.shape[2])
        return self.shape

    def make(self, base: Any) -> Any:
        if self.view == "transpose":
            return base.transpose(-1, -2)
        if self.view == "narrow":
            return base.narrow(-1, self.offset, self.shape[-1])
        if self.view == "expand":
            return base.expand(*self.shape)
        if self.view == "reshape":
            return base.view(*self.shape)
        return base


@dataclasses.dataclass(frozen=True)
class OpSpec:
    name: str
    #: Template whose codegen cache the op reaches (TritonTemplate.name).
    template: str
    shapes: Callable[[int, int, int, int], tuple[tuple[int, ...], ...]]
    call: Callable[..., Any]
    #: View kinds allowed at each operand position.
    views: Callable[[int], tuple[str, ...]] = lambda position: ("plain", "transpose", "narrow")
    #: False for patterns under which the graph no longer has this op's shape
    #: (mm_plus_mm: two identical products are CSE'd to one, so no add(mm, mm) is left).
    keeps_op: Callable[[tuple[int, ...], tuple[Operand, ...]], bool] = lambda pattern, operands: True
    #: Smallest M/N/K drawn. mm_plus_mm keeps only configs with BLOCK_K < K (the smallest BLOCK_K is 16),
    #: and the tests cap a selection at its first two configs (``test_configs.max_mm_configs``):
    #: 2.14.1 filters before the cap (``preprocess_mm_configs``), 2.9.1 and 2.11.0 after it
    #: (``MMPlusMMTemplateConfigMixin._get_template_configs_impl``), where the first two have BLOCK_K 32.
    #: So K >= 33 on every release, or those generate no template at all for K <= 32.
    min_size: int = 1


def _ops() -> dict[str, OpSpec]:
    import torch
    import torch.nn.functional as F

    batched = ("plain", "transpose", "narrow", "expand")
    return {
        "mm": OpSpec("mm", "mm", lambda b, m, n, k: ((m, k), (k, n)), torch.mm),
        "addmm": OpSpec("addmm", "mm", lambda b, m, n, k: ((m, n), (m, k), (k, n)), torch.addmm),
        "bmm": OpSpec("bmm", "bmm", lambda b, m, n, k: ((b, m, k), (b, k, n)), torch.bmm, lambda p: batched),
        "baddbmm": OpSpec(
            "baddbmm", "bmm", lambda b, m, n, k: ((b, m, n), (b, m, k), (b, k, n)), torch.baddbmm, lambda p: batched
        ),
        "mm_plus_mm": OpSpec(
            "mm_plus_mm",
            "mm_plus_mm",
            lambda b, m, n, k: ((m, k), (k, n), (m, k), (k, n)),
            lambda a, b, c, d: a @ b + c @ d,
            keeps_op=lambda p, o: not (p[0] == p[2] and p[1] == p[3] and o[0] == o[2] and o[1] == o[3]),
            min_size=33,
        ),
        # Depthwise conv1d: input (1, C, L), weight (C, 1, L) viewed from a (1, C, L) base,
        # so input and weight can be one buffer. groups = C = m, length L = k.
        "conv": OpSpec(
            "conv",
            "depthwise_conv1d",
            lambda b, m, n, k: ((1, m, k), (m, 1, k)),
            lambda x, w: F.conv1d(x, w, groups=x.shape[1], padding=w.shape[-1] // 2),
            lambda position: ("plain",) if position == 0 else ("reshape",),
        ),
    }


OPS = tuple(_ops())


@dataclasses.dataclass(frozen=True)
class Case:
    op: str
    operands: tuple[Operand, ...]
    dtype: str
    #: One set partition of operand positions per compile.
    patterns: tuple[tuple[int, ...], ...]

    @property
    def spec(self) -> OpSpec:
        return _ops()[self.op]

    @property
    def templates(self) -> tuple[str, ...]:
        """Templates a compile of this case may generate: on CUDA, Inductor's pattern
        matcher turns a batch-1 bmm into mm (seen with torch 2.11 on the H200)."""
        if self.spec.template == "bmm" and self.operands[0].shape[0] == 1:
            return ("bmm", "mm")
        return (self.spec.template,)

    @property
    def reaches_template(self) -> bool:
        """Whether every compile must reach the template: sizes of 1 may be
        decomposed to pointwise code before any template is considered."""
        return all(size >= 2 for operand in self.operands for size in operand.shape[-2:])

    def __repr__(self) -> str:
        operands = ", ".join(f"{o.view}{list(o.shape)}" + (f"+{o.offset}" if o.offset else "") for o in self.operands)
        return f"Case({self.op}, {self.dtype}, [{operands}], patterns={list(self.patterns)})"


def set_partitions(n: int) -> list[tuple[int, ...]]:
    """Every set partition of ``n`` positions as a restricted-growth string (Bell(n) of them)."""
    found = []
    for labels in itertools.product(range(n), repeat=n):
        if all(label <= max(labels[:i], default=-1) + 1 for i, label in enumerate(labels)):
            found.append(labels)
    return found


def valid_partitions(spec: OpSpec, operands: tuple[Operand, ...]) -> list[tuple[int, ...]]:
    """Partitions whose blocks only join operands built from equal base shapes."""
    valid = []
    for pattern in set_partitions(len(operands)):
        if not spec.keeps_op(pattern, operands):
            continue
        blocks: dict[int, set[tuple[int, ...]]] = {}
        for label, operand in zip(pattern, operands):
            blocks.setdefault(label, set()).add(operand.base_shape)
        if all(len(shapes) == 1 for shapes in blocks.values()):
            valid.append(pattern)
    return valid


sizes = st.one_of(st.integers(1, 256),
                  st.sampled_from([1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256]))


@st.composite
def cases(draw: st.DrawFn, op: str, dtypes: tuple[str, ...] = DTYPES) -> Case:
    spec = _ops()[op]
    batch = draw(st.integers(1, 4), label="batch")
    size = sizes.filter(lambda s: s >= spec.min_size)
    if draw(st.booleans(), label="square"):  # equal sizes make more operands able to alias
        m = n = k = draw(size, label="size")
    else:
        m, n, k = draw(size, label="m"), draw(size, label="n"), draw(size, label="k")
    if op == "conv":
        m = max(m, 2)  # depthwise needs groups > 1
    operands = []
    for position, shape in enumerate(spec.shapes(batch, m, n, k)):
        view = draw(st.sampled_from(spec.views(position)), label=f"view{position}")
        offset = draw(st.sampled_from([0, shape[-1]]), label=f"offset{position}") if view == "narrow" else 0
        operands.append(Operand(shape, view, offset))
    operands = tuple(operands)
    valid = valid_partitions(spec, operands)
    assume(len(valid) >= 2)  # some aliasing must be possible
    patterns = draw(st.lists(st.sampled_from(valid), min_size=2, max_size=4), label="patterns")
    assume(len(set(patterns)) >= 2)
    return Case(op, operands, draw(st.sampled_from(dtypes), label="dtype"), tuple(patterns))
