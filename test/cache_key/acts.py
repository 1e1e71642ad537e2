"""What makes cache-key record each kind of its activity (``ACTS``: kind -> a function of this
module), for ``test/test_activity_lines.py``, which runs each in a fresh process: ``bmm(x, x)``
then ``bmm(a, b)`` under the CPU harness, the two codes of one family kept apart. Skipped, saying
why, where cache-key does not apply (a release whose key separates aliasing itself: nothing to keep
apart)."""

from __future__ import annotations

import unittest

from quick_autotuning import quick_cpu_autotuning

import inductor_fix
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.operations import operation
from inductor_fix.check.workloads import SEQUENCES, run_compiles
from inductor_fix.patches.cache_key import PATCH

__all__ = ["ACTS", "both_patterns"]


def both_patterns() -> None:
    import importlib

    from torch._inductor.utils import fresh_cache

    importlib.import_module("torch._inductor.select_algorithm")  # Inductor loaded: the patches have decided
    state = inductor_fix.status().patch(PATCH.name)
    if state.state != inductor_fix.State.APPLIED:
        raise unittest.SkipTest(f"{PATCH.name} is {state.state}: {state.reason}")
    with fresh_cache(), quick_cpu_autotuning(), triton_cpu_harness(autotune_local_cache=True):
        steps = run_compiles(operation("bmm"), SEQUENCES["alias-first"], "cpu", compare=False)
    assert [step.error for step in steps] == [None, None], steps


ACTS = {"collisions_prevented": both_patterns}
