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

Keying by aliasing makes a second pattern generate code of its own, whose choices then
missed Inductor's autotune cache and were compiled and benchmarked again (up to 1.37x
stock's compile on a real optimizer; 2.15.0 pays the same). The two codes are one
template, config, layout and epilogue (one stock key: a *family*) and differ only in how
arguments bind, so the fix also wraps ``TritonTemplate.generate`` (each code recorded
under its stock key) and ``TritonTemplateCaller.hash_key`` (a later pattern's code
answers to its family's first code in the autotune cache, which then serves the timing
as it serves stock's replayed code; ``patches/0005-*`` proposes it upstream). A later
pattern's copy of a config whose first code failed to compile (on an H200, a bmm config
over the device's shared memory) is declined (:class:`~.fix.FamilyFailed`): untimed, it
would make its selection benchmark every choice again (``docs/sharing-premise.md``).

Folder: ``fix.py`` (decide, wrappers), ``probe.py`` (does a ``make_key`` key aliasing: decide,
verify, ``lacks_crash``), ``activity.py`` (what it records),
``check.py`` (the matmul ``check`` sequences), ``bench.py`` (``tools/bench cache_key``),
``drills.py`` (drift drills). Delete the folder, ``patches/0001-*``, ``patches/0005-*``,
``test/cache_key/``, ``docs/bench/cache_key.json`` and its line in the patch table when
the oldest supported torch is 2.15.0 (and, for the shared autotuning, one that has
0005's change).
"""

from __future__ import annotations

from ..record import LAUNCHER_ERRORS, Crash, Patch
from . import fix
from .activity import ACTIVITY

__all__ = ["PATCH"]

PATCH = Patch(
    name="cache-key",
    targets=fix.targets(),
    decide=fix.decide,
    verify=fix.verify,
    lacks_crash=fix.lacks_crash,
    effect="codegen-cache keys now include the input aliasing pattern (pytorch/pytorch#188069); a later "
           "pattern's choices share their family's autotuning",
    upstream="pytorch/pytorch#188069, fixed by PR #188268",
    # 2.8.x has the cache off by default: affected only with enable_caching_generated_triton_templates=True.
    affected=">=2.9.0,<2.15.0",
    delete_when="the oldest supported torch is 2.15.0",
    diffs=("0001-inductor-key-template-codegen-cache-by-input-aliasing.patch",
           "0005-inductor-share-autotuning-between-template-choices-that-differ-only-by-aliasing.patch"),
    activity=ACTIVITY,
    # The replayed kernel's launch, one argument too many or too few.
    crash=Crash(errors=LAUNCHER_ERRORS),
)
