"""The two compile workloads of ``tools/bench compile``.

(a) ``model``: four compiled functions of a transformer-like model: the q/k/v
    projections (three mm of one input with three weights), attention (bmm,
    softmax, bmm), a second attention block with a residual (a different graph,
    so the FX graph cache cannot serve it whole) and an MLP (mm, gelu, mm). The
    matmuls share layouts, so Inductor's template codegen cache serves the
    kernels of every matmul after the first of each layout, as for the repeated
    layers of a real model (only matmuls of graph inputs are cached: an
    intermediate still has a flexible layout when its template is generated).
    No operand aliases: stock Inductor handles it, and the fix must not change
    what it does.
(b) ``optimizer``: a Shampoo/SOAP-style optimizer step for two parameters of
    one shape. A compiled statistics update takes einsums of each batched
    gradient with itself (G Gᵀ and Gᵀ G, so both operands of each bmm are one
    buffer) and lerps them into two state buffers; then a compiled projection
    einsum of each gradient with two other batched matrices of the same shape
    reuses those layouts with distinct buffers. Stock Inductor (2.9-2.14)
    crashes on the projection (pytorch/pytorch#188069).

Shapes are small on purpose: the GPU run must fit in one 9-minute command.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch  # this module runs in the benchmark's child processes only

__all__ = ["Function", "build"]

BMM_SHAPE = (4, 128, 128)
MM_SHAPE = (256, 256)
SCALE = BMM_SHAPE[-1] ** -0.5
BETA = 0.95  # second-moment decay of the optimizer statistics
PARAMETERS = 2  # in part (b)


@dataclasses.dataclass
class Function:
    """One function to compile: ``step(torch.compile(fn))(*args)`` is what a training step calls."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    step: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda compiled: compiled


# (a) model ---------------------------------------------------------------------------


def projections(x, w_q, w_k, w_v):
    return torch.mm(x, w_q), torch.mm(x, w_k), torch.mm(x, w_v)


def attention(q, k, v):
    # 3-D bmm and a scale: the unscaled form is rewritten to scaled_dot_product_attention
    # by Inductor's pattern matcher, leaving no template to cache.
    return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * SCALE, dim=-1), v)


def attention_residual(q, k, v):
    return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * SCALE, dim=-1), v) + q


def mlp(x, w1, w2):
    return torch.mm(torch.nn.functional.gelu(torch.mm(x, w1)), w2)


# (b) optimizer -----------------------------------------------------------------------


def accumulate_statistics(grads, grads_again, lefts, rights):
    """left ← lerp(left, G Gᵀ), right ← lerp(right, Gᵀ G) for every parameter's
    gradient G; ``grads_again`` holds the same tensors, or the workaround's clones."""
    for grad, grad_again, left, right in zip(grads, grads_again, lefts, rights):
        left.lerp_(torch.einsum("bij,bkj->bik", grad, grad_again), 1 - BETA)
        right.lerp_(torch.einsum("bji,bjk->bik", grad, grad_again), 1 - BETA)


def statistics_update(grads, lefts, rights):
    accumulate_statistics(grads, grads, lefts, rights)


def project(grads, q_lefts, q_rights):
    """Q_leftᵀ G Q_right for every gradient: the gradients in the statistics' eigenbases."""
    return [torch.einsum("bji,bjk,bkl->bil", q_l, g, q_r) for g, q_l, q_r in zip(grads, q_lefts, q_rights)]


def _clone_outside(compiled: Callable[..., Any]) -> Callable[..., Any]:
    # The workaround must clone outside the compiled region: Inductor removes an
    # in-graph clone (aten.clone is a no-op to remove_noop_ops), and the kernel
    # would see one buffer twice again.
    def step(grads, lefts, rights):
        return compiled(grads, [grad.clone() for grad in grads], lefts, rights)

    return step


def build(part: str, device: str, clone: bool = False) -> list[Function]:
    """The functions of workload ``part`` in compile order, with fp32 operands on ``device``.

    ``clone``: part (b) with the user workaround, a clone of the gradient passed
    as the second einsum operand.
    """
    generator = torch.Generator().manual_seed(0)

    def tensor(shape, scale=1.0):
        return (torch.randn(shape, generator=generator) * scale).to(device)

    if part == "a":
        q, k, v = (tensor(BMM_SHAPE) for _ in range(3))
        x = tensor(MM_SHAPE)
        w_q, w_k, w_v, w1, w2 = (tensor(MM_SHAPE, MM_SHAPE[0] ** -0.5) for _ in range(5))
        return [
            Function("projections", projections, (x, w_q, w_k, w_v)),
            Function("attention", attention, (q, k, v)),
            Function("attention_residual", attention_residual, (q, k, v)),
            Function("mlp", mlp, (x, w1, w2)),
        ]
    if part == "b":
        # Two parameters of one shape, as an optimizer steps many: the second
        # parameter's kernels are the codegen cache's to serve.
        grads, lefts, rights, q_lefts, q_rights = ([tensor(BMM_SHAPE) for _ in range(PARAMETERS)] for _ in range(5))
        update = Function("statistics_update", statistics_update, (grads, lefts, rights))
        if clone:
            update = Function("statistics_update", accumulate_statistics, (grads, lefts, rights), _clone_outside)
        return [update, Function("project", project, (grads, q_lefts, q_rights))]
    raise ValueError(f"unknown part {part!r}; expected 'a' or 'b'")
