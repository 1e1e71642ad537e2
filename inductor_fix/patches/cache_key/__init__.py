"""cache-key: the Triton template codegen-cache key sees which inputs are one buffer.

Upstream: ``torch/_inductor/select_algorithm.py``, ``GeneratedCodeCache.make_key``
(affected: 2.9-2.14, where the cache is on by default; 2.8.x only with
``enable_caching_generated_triton_templates=True``). The key holds the layout of every
input node but not which input nodes are the same buffer, while
``TritonTemplateKernel.def_kernel`` gives the kernel one pointer parameter per distinct
buffer name. Code generated for ``bmm(x, x)`` (one input pointer) was therefore replayed
for ``bmm(a, b)`` (two), and the autotuning benchmark called the launcher with one
argument too many (``got multiple values for argument 'stream'``) or, in the other
order, too few (``missing ... '_grid_2'``). Reported as pytorch/pytorch#188069; fixed in
2.15.0 by PR #188268.

Whether a build needs the fix is decided by calling its ``make_key`` with ``(x, x)`` and
``(x, y)`` of equal layouts (:data:`~.probe.keys_separate_aliasing`), never by version.

Keying by aliasing makes a second pattern generate code of its own, whose choices would miss
Inductor's autotune cache and be compiled and benchmarked again (up to 1.37x stock's compile
on a real optimizer; 2.15.0 pays the same): the autotune-sharing patch, applied after this
one, shares that autotuning wherever the key separates aliasing, this one's or upstream's.

Folder: ``fix.py`` (decide, wrappers), ``probe.py`` (does a ``make_key`` key aliasing: decide,
verify, ``lacks_crash``), ``activity.py`` (what it records),
``check.py`` (the matmul ``check`` sequences), ``bench.py`` (``tools/bench cache_key``),
``drills.py`` (drift drills). Delete the folder, ``patches/0001-*``, ``test/cache_key/``,
``docs/bench/cache_key.json`` and its line in the patch table when the oldest supported
torch is 2.15.0.
"""

from __future__ import annotations

from ..patch import LAUNCHER_ERRORS, Crash, Patch
from .activity import ACTIVITY

__all__ = ["PATCH"]

PATCH = Patch(
    name="cache-key",
    effect="codegen-cache keys now include the input aliasing pattern (pytorch/pytorch#188069)",
    upstream="pytorch/pytorch#188069, fixed by PR #188268",
    # 2.8.x has the cache off by default: affected only with enable_caching_generated_triton_templates=True.
    affected=">=2.9.0,<2.15.0",
    delete_when="the oldest supported torch is 2.15.0",
    diffs=("0001-inductor-key-template-codegen-cache-by-input-aliasing.patch",),
    activity=ACTIVITY,
    # The replayed kernel's launch, one argument too many or too few, in the benchmark of a choice
    # of a Triton template whose code is cached (cache_codegen_enabled_for_template=True: mm and
    # bmm in 2.9-2.15, also depthwise_conv1d and mm_plus_mm in 2.14-2.15).
    crash=Crash(errors=LAUNCHER_ERRORS,
                choices=("triton_mm", "triton_bmm", "triton_depthwise_conv1d", "triton_mm_plus_mm")),
)
