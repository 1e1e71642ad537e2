"""arity-guard: no Triton template choice reaches a launch its kernel cannot take.

The other patches remove the known causes of pytorch/pytorch#188069 and #194515. This guard removes the kind: whatever
makes a loaded kernel's parameter list disagree with the arguments its benchmark
request or the autotuner will pass (another property missing from a codegen-cache
key, a miscounted captured buffer, signature drift), compilation does not crash on it.

Wraps ``TritonTemplate.generate``, ``AlgorithmSelectorCache.__call__`` and
``AlgorithmSelectorCache.benchmark_choice`` in ``torch/_inductor/select_algorithm.py``
(affected: 2.8+, where the other two patches' bugs are; up to 2.7 there is no codegen
cache and it says not-needed):

1. After a choice is generated, count the kernel's parameters and the benchmark
   request's arguments (inputs, output, size args, workspace; the 3 grid values
   follow and are not kernel parameters).
2. On a mismatch that came from a codegen-cache hit, drop the stale entry and
   generate again without the cache (``counters["inductor_fix"]["regenerated"]``).
3. If the mismatch remains, leave the choice out of autotuning with a warning
   naming the template, the parameters and the arguments
   (``counters["inductor_fix"]["excluded"]``); ATen and the other choices still
   compete. If no choice is left at all, selection raises Inductor's
   ``NoValidChoicesError`` saying the guard excluded them.
4. At every in-process benchmark, before the launch, count the tensors the
   autotuner actually passes (which come from the selection's ``input_nodes``,
   not from the benchmark request, pytorch/pytorch#194515) against the kernel's
   parameters. A choice that would not fit is timed ``inf`` instead of launched,
   with the same warning (``counters["inductor_fix"]["excluded_at_benchmark"]``);
   if every choice is timed ``inf`` so, ``NoValidChoicesError`` says why.

No upstream equivalent as of 2.15.0 (``patches/0002-*`` proposes one).

Folder: ``fix.py`` (decide, wrappers), ``activity.py`` (what it records), ``bench.py``
(``tools/bench arity_guard``), ``drills.py``. It has no ``check`` ops of its own: it acts
inside the other patches' workloads. Delete the folder, ``patches/0002-*``,
``test/arity_guard/``, ``docs/bench/arity_guard.json`` and its line in the patch table when
the oldest supported torch checks a choice's arity against its benchmark arguments.
"""


from __future__ import annotations

from ..patch import LAUNCHER_ERRORS, Crash, Patch
from .activity import ACTIVITY

__all__ = ["PATCH"]

PATCH = Patch(
    name="arity-guard",
    effect="template choices whose kernel arity mismatches are regenerated, or excluded before any launch",
    upstream="safety net for the kind of pytorch/pytorch#188069 and #194515 (no upstream equivalent)",
    affected=">=2.8.0",  # where the codegen cache and flex's hand-built inputs are; no cache before 2.8
    delete_when="the oldest supported torch checks a choice's arity against its benchmark arguments (none does "
                "as of 2.15.0)",
    diffs=("0002-inductor-check-template-kernel-arity-before-autotuning.patch",),
    activity=ACTIVITY,
    # A launch its kernel cannot take, whatever made the two disagree, in any Triton template (a
    # net: where another patch's crash names the place, that patch explains it). Where it excluded
    # every choice, selection raises its own NoValidChoicesError (fix.guarded_selection).
    crash=Crash(errors=LAUNCHER_ERRORS, raises=(r"NoValidChoicesError: inductor_fix: no choice is left for ",)),
)
