"""autotune-sharing: template codes that differ only by aliasing share one autotuning.

Upstream: ``torch/_inductor/select_algorithm.py``, ``TritonTemplateCaller.hash_key`` (the
choice's identity in Inductor's autotune cache, ``PersistentCache.lookup``: template name and
the module's code hash; affected: 2.15+, whose stock key separates aliasing, and 2.9-2.14 with
cache-key). Where the Triton template codegen cache is keyed by aliasing
(``GeneratedCodeCache.make_key``: stock from 2.15.0, PR #188268; 2.9-2.14 with cache-key, the
crash fix of pytorch/pytorch#188069), ``mm(x, x)`` and ``mm(a, b)`` of equal layouts generate
a code each, since ``def_kernel`` binds one pointer per distinct buffer. The later pattern's
choices then miss the autotune cache, and every one is precompiled and benchmarked again,
where 2.9-2.14 stock replayed the first pattern's code (and crashed). The two codes are one
template, config, layouts and epilogue (a *family*: one key but for the aliasing) and differ
only in how arguments bind, so their timings are one measurement (``docs/sharing-premise.md``).

The fix wraps ``GeneratedCodeCache.make_key`` (each key's family: the release's own
``make_key`` with every input under a name of its own, once per distinct key),
``TritonTemplate.generate`` (each code recorded under its family) and
``TritonTemplateCaller.hash_key`` (a family's later codes answer with its first code's key,
so the autotune cache serves them its timings: neither precompiled nor benchmarked), and
overrides ``TritonTemplateCaller.kernel_hash_key`` so that precompilation keeps each code's
own key. Kernels and outputs are unchanged: every code is still generated as itself and the
chosen kernel is the one launched. A later pattern's copy of a config whose first code
failed to compile (on an H200, a bmm config over the device's shared memory) is declined
(:class:`~.fix.FamilyFailed`): untimed, it would make its selection benchmark every choice
again. ``patches/0005-*`` proposes the same change upstream.

Decided by behaviour, never by version: on a torch with the codegen cache (2.8+) it applies
where the family key is found to give ``(x, x)`` and ``(x, y)`` one key (probed by calling
``make_key``); it does not ask whether this process's key separates aliasing, which on
2.9-2.14 is cache-key's state: where the key does not (2.8's cache off, cache-key disabled or
retired), a later pattern replays the first pattern's code and the wrappers share nothing.
It only saves cost: off or unsupported, it leaves the process protected
(``Patch.protects``), and its activity never makes a job report say ``needed: yes``.

Folder: ``fix.py`` (decide, wrappers), ``activity.py`` (what it records), ``bench.py``
(``tools/bench autotune_sharing``, and the ``unshared`` variant of ``tools/bench compile``),
``drills.py`` (drift drills). Delete the folder, ``patches/0005-*``, ``test/autotune_sharing/``,
``docs/bench/autotune_sharing.json`` and its line in the patch table when the oldest supported
torch shares autotuning across aliasing patterns itself (0005's change, or its equal, upstream).
"""

from __future__ import annotations

from ..patch import Patch
from .activity import ACTIVITY

__all__ = ["PATCH"]

PATCH = Patch(
    name="autotune-sharing",
    effect="a later aliasing pattern's template choices share their family's autotuning (neither precompiled nor "
           "benchmarked again); each code keeps its own precompilation",
    upstream="not upstream: since pytorch/pytorch#188069's fix, PR #188268, a later aliasing pattern of a "
             "template autotunes again (the project's issue text for it: patches/README.md, source tree)",
    # Stock releases that pay it: those whose make_key keys aliasing. With cache-key applied
    # (2.9-2.14) the package pays it itself, and this patch saves it there too.
    affected=">=2.15.0",
    delete_when="the oldest supported torch shares autotuning across aliasing patterns itself (0005's change)",
    diffs=("0005-inductor-share-autotuning-between-template-choices-that-differ-only-by-aliasing.patch",),
    activity=ACTIVITY,
    protects=False,
)
