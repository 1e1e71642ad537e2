"""What makes autotune-sharing record each kind of its activity (``ACTS``: kind -> a function of
this module), for ``test/test_activity_lines.py``, which runs each in a fresh process: ``bmm(x, x)``
then ``bmm(a, b)`` under the CPU harness with the autotune cache on, the later pattern's code
answering to its family's first in that cache. Skipped, saying why, where this process's
codegen-cache key does not separate aliasing (a later pattern replays the first's code: nothing
to share)."""

from __future__ import annotations

import unittest

from quick_autotuning import quick_cpu_autotuning

import inductor_fix
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.operations import operation
from inductor_fix.check.workloads import SEQUENCES, run_compiles
from inductor_fix.patches.autotune_sharing import PATCH, fix

__all__ = ["ACTS", "later_pattern"]


def later_pattern() -> None:
    from torch._inductor import select_algorithm
    from torch._inductor.utils import fresh_cache

    state = inductor_fix.status().patch(PATCH.name)
    if state.state != inductor_fix.State.APPLIED:
        raise unittest.SkipTest(f"{PATCH.name} is {state.state}: {state.reason}")
    cache = select_algorithm.GeneratedCodeCache
    if not fix.keys_separate_aliasing(cache.__dict__["make_key"], select_algorithm):
        raise unittest.SkipTest("this process's codegen-cache key does not separate aliasing patterns")
    with fresh_cache(), quick_cpu_autotuning(), triton_cpu_harness(autotune_local_cache=True):
        steps = run_compiles(operation("bmm"), SEQUENCES["alias-first"], "cpu", compare=False)
    assert [step.error for step in steps] == [None, None], steps


ACTS = {"autotuning_shared": later_pattern}
