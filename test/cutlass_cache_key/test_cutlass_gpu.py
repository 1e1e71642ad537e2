"""cutlass-cache-key on a GPU: the CUTLASS backend compiles and runs its kernels (skipped without CUDA).

Each case is ``check``'s own (``cutlass_mm``, two compiles in one process), run stock and
patched side by side, each in a process of its own with a fresh Inductor cache: stock's crash
may be a segmentation fault (a kernel called through ctypes with a pointer too many), which
only ends its case process. Stock must crash where the patch is affected (the negative
control); patched must compile and match eager. With ``autotune_in_subproc`` too: stock's
benchmark requests passed one tensor per input slot there, and no CUTLASS choice survived.

Needs CUTLASS (``TORCHINDUCTOR_CUTLASS_DIR``) and nvcc as well: without them the class skips
and says why, unless ``INDUCTOR_FIX_REQUIRE_GPU_DEPS=1`` (the GPU tier sets it), where that
is a failure.
"""

from __future__ import annotations

import concurrent.futures
import os
import unittest
from unittest import mock

import torch
from helpers import TOLERANCE, report, requires_cuda

from inductor_fix.check.runner import Case, _run_case_process
from inductor_fix.check.workloads import ORDERS
from inductor_fix.patches.cutlass_cache_key import PATCH
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

#: Stock's crash: the segfault of the replayed kernel, CUTLASS's own error for it, or no choice left
#: (the patch's ``Patch.crash``).
CRASH = PATCH.crash.pattern
SETTINGS = {"in-process": {}, "subprocess": {"TORCHINDUCTOR_AUTOTUNE_IN_SUBPROC": "1"}}


def _name(value: str) -> str:
    return value.replace("-", "_")


def stock_and_patched(op: str, order: str, env: dict[str, str], timeout: float = 900) -> tuple[Case, Case]:
    """``check``'s case ``op``/``order`` stock and patched at once, each in its own process."""
    cases = [Case(op, order, mode, "cuda", affected=PATCH.is_affected(torch.__version__))
             for mode in ("stock", "patched")]
    with mock.patch.dict(os.environ, env), concurrent.futures.ThreadPoolExecutor(2) as pool:
        return tuple(pool.map(lambda case: _run_case_process(case, timeout, None), cases))


@requires_cuda
@instantiate_parametrized_tests
class TestCutlassGPU(TestCase):
    def setUp(self) -> None:
        super().setUp()
        from inductor_fix.patches.cutlass_cache_key.check import unavailable

        reason = unavailable("cuda")
        if reason and os.environ.get("INDUCTOR_FIX_REQUIRE_GPU_DEPS") == "1":  # the GPU tier: a skip would hide it
            self.fail(f"INDUCTOR_FIX_REQUIRE_GPU_DEPS=1, but the CUTLASS workload {reason}")
        if reason:
            raise unittest.SkipTest(reason)

    @parametrize("row", [(order, "in-process") for order in ORDERS] + [("alias-first", "subprocess")],
                 name_fn=lambda row: _name("_".join(row)))
    def test_stock_and_patched(self, row: tuple[str, str]) -> None:
        order, setting = row
        stock, patched = stock_and_patched("cutlass_mm", order, SETTINGS[setting])
        errors = [s["max_rel_error"] for s in patched.steps if s.get("max_rel_error") is not None]
        report(f"cutlass_mm/{order}/{setting}", family="mm(x, x), CUTLASS backend",
               setting=f'max_autotune_gemm_backends="CUTLASS", {setting}', order=order,
               stock=stock.error or stock.failure, patched=patched.error or patched.failure,
               max_rel_error=max(errors, default=None))
        self.assertIsNone(patched.failure)
        self.assertIsNone(patched.error)
        self.assertEqual(len(errors), 2)
        self.assertLess(max(errors), TOLERANCE["float16"])
        if stock.affected:
            self.assertRegex(stock.error or "", CRASH, f"negative control: stock must crash ({stock.failure})")


if __name__ == "__main__":
    run_tests()
