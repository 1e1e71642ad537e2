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

Folder: ``fix.py`` (decide, wrappers), ``activity.py`` (what it records), ``check.py``
(FlexAttention ``check`` workloads) with ``seams.py`` (the CPU-harness seams only they
need), ``bench.py`` (``tools/bench benchmark_realign``), ``drills.py``. ``patches/0007-*`` is
the backward's fix proposed for main: the backward lowering autotunes with its choices'
input nodes and freezes what it realizes, as the forward does since PR #194555. Delete the
folder, ``patches/0003-*``, ``patches/0004-*``, ``patches/0007-*``, ``test/benchmark_realign/``,
``docs/bench/benchmark_realign-*.json`` and its line in the patch table once, in the oldest
supported torch, every template lowering passes its kernel's inputs to selection, realized
and frozen (flex backward still passes a hand-built list, and leaves its captured buffers
flexible, in 2.15.0).
"""

from __future__ import annotations

from ..patch import LAUNCHER_ERRORS, Crash, Patch
from .activity import ACTIVITY

__all__ = ["PATCH"]

PATCH = Patch(
    name="benchmark-realign",
    effect="each Triton template choice is benchmarked with the tensors its kernel takes (pytorch/pytorch#194515)",
    upstream="pytorch/pytorch#194515, fixed for flex forward and decoding by PR #194555",
    # 2.7.1 and 2.8.0 crash too (the version matrix's flex suite, CPU harness); older: not checked.
    # No release fixes the flex backward yet (2.15.0 crashes there under selective checkpointing).
    affected=">=2.7.0",
    # Up to 2.7 benchmark_in_current_process is a closure inside make_benchmark_fn: nothing to wrap.
    supported=">=2.8.0",
    delete_when="in the oldest supported torch every template lowering passes its kernel's inputs to selection "
                "(flex backward does not in 2.15.0)",
    diffs=("0003-inductor-benchmark-template-choices-with-their-kernel-inputs.patch",
           "0004-inductor-freeze-the-flex-backwards-realized-captured-buffers.patch",
           "0007-inductor-autotune-the-flex-backward-with-its-kernels-inputs.patch"),
    activity=ACTIVITY,
    # The benchmark's launch one tensor short; up to 2.13 the backward's unrealized input, a
    # Pointwise or a view (T5's), which selection cannot key; 2.14's frozen-less layout (errors any
    # lowering may end in: generic forms). In the FlexAttention lowerings' selections (kernel/flex/,
    # 2.7-2.15), whatever the choice.
    crash=Crash(errors=LAUNCHER_ERRORS,
                generic=(r"NotImplementedError: (Pointwise|\w*View)\b",
                         r"AssertionError: convert FlexibleLayout to FixedLayout first"),
                selections=("flex_attention", "flex_attention_backward", "flex_decoding")),
)
