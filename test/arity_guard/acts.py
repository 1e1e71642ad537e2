"""What makes arity-guard record each kind of its activity (``ACTS``: kind -> a function of this
module), for ``test/test_activity_lines.py``, which runs each in a fresh process: the faults of
``faults.py`` (a key blind to aliasing: regenerated; a kernel parameter no request passes:
excluded), and FlexAttention with the guard as the only patch (timed inf at its benchmark)."""

from __future__ import annotations

import unittest

from faults import aliasing_blind_key, extra_kernel_parameter
from quick_autotuning import quick_cpu_autotuning

import inductor_fix
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.operations import operation
from inductor_fix.check.workloads import SEQUENCES, run_compiles
from inductor_fix.patches import PATCHES
from inductor_fix.patches.arity_guard import PATCH

__all__ = ["ACTS", "blind_key", "extra_parameter", "guard_alone_on_flex"]

#: The FlexAttention workloads of benchmark-realign's folder, in the order tried: the first that
#: crashes stock on this torch (2.15.0 fixed the forward; its backward still crashes).
FLEX_PATCH, FLEX_OPS = "benchmark-realign", ("flex", "flex_backward")


def blind_key() -> None:
    with aliasing_blind_key(), quick_cpu_autotuning(), triton_cpu_harness():
        run_compiles(operation("bmm"), SEQUENCES["alias-first"], "cpu", compare=False)


def extra_parameter() -> None:
    with extra_kernel_parameter(), quick_cpu_autotuning(), triton_cpu_harness():
        run_compiles(operation("mm"), (False,), "cpu", compare=False)


def guard_alone_on_flex() -> None:
    if FLEX_PATCH not in {patch.name for patch in PATCHES}:
        raise unittest.SkipTest(f"{FLEX_PATCH} is retired: its flex workload went with it")
    import torch

    from inductor_fix.check.table import run_sequence, workloads
    from inductor_fix.patches.patch import in_releases

    crashing = [op for op in FLEX_OPS if in_releases(workloads()[op].affected, torch.__version__)]
    if not crashing:
        raise unittest.SkipTest(f"no flex workload of {FLEX_PATCH} crashes stock torch {torch.__version__}: "
                                "the guard has no benchmark to time inf")
    op = crashing[0]
    with inductor_fix.removed(*(p.name for p in PATCHES if p is not PATCH)), quick_cpu_autotuning(), \
            triton_cpu_harness():
        run_sequence(op, next(iter(workloads()[op].sequences)), "cpu", compare=False)


ACTS = {"regenerated": blind_key, "excluded": extra_parameter, "excluded_at_benchmark": guard_alone_on_flex}
