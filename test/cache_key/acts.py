"""What makes cache-key record each kind of its activity (``ACTS``: kind -> a function of this
module), for ``test/test_activity_lines.py``, which runs each in a fresh process: ``bmm(x, x)``
then ``bmm(a, b)`` under the CPU harness, the two codes of one family kept apart, the later one
sharing the first's autotuning."""

from __future__ import annotations

from quick_autotuning import quick_cpu_autotuning

from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.operations import operation
from inductor_fix.check.workloads import SEQUENCES, run_compiles

__all__ = ["ACTS", "both_patterns"]


def both_patterns() -> None:
    from torch._inductor.utils import fresh_cache

    with fresh_cache(), quick_cpu_autotuning(), triton_cpu_harness(autotune_local_cache=True):
        steps = run_compiles(operation("bmm"), SEQUENCES["alias-first"], "cpu", compare=False)
    assert [step.error for step in steps] == [None, None], steps


ACTS = {"collisions_prevented": both_patterns, "autotuning_shared": both_patterns}
