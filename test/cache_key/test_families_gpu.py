"""The family sweep on a GPU: every GEMM template family and autotuning setting of
``families.py``, stock and patched side by side, each in a process of its own with a fresh
Inductor cache (skipped without CUDA). Each test is one row of ``docs/families.md``
(:data:`~families.ROWS`: both orders of a family stock crashes on, the first of one it does not;
``tools/gpu_tier`` writes it from the figures).

Patched must compile and match eager in every family. Stock must crash with the launcher's
error where the family crashed in the sweep (``Family.crashes``) on a release cache-key is
affected on: the negative control of the row.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import tempfile

from families import FAMILIES, ROWS
from helpers import LAUNCHER_ERROR, TOLERANCE, is_affected, report, requires_cuda

from inductor_fix.check.child import run_child
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "families.py")


def _name(value: str) -> str:
    return value.replace("-", "_")


def _run(family: str, order: str, disable: str) -> tuple[list[dict] | None, str | None]:
    """``(steps, None)``, or ``(None, why it gave no result)``."""
    with tempfile.TemporaryDirectory(prefix="inductor_fix_family_") as cache:
        here = os.path.dirname(SCRIPT)
        path = os.pathsep.join(filter(None, [here, os.path.dirname(here), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, INDUCTOR_FIX_DISABLE=disable, TORCHINDUCTOR_CACHE_DIR=cache, PYTHONPATH=path)
        child = run_child([sys.executable, SCRIPT, family, order], env, "FAMILY-RESULT ", 900)
    return child.result, child.failure


@requires_cuda
@instantiate_parametrized_tests
class TestFamiliesGPU(TestCase):
    @parametrize("row", ROWS, name_fn=lambda row: _name("_".join(row)))
    def test_stock_and_patched(self, row: tuple[str, str]) -> None:
        family, order = row
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            (stock, stock_failure), (patched, patched_failure) = pool.map(
                lambda disable: _run(family, order, disable), ("1", "0"))
        spec = FAMILIES[family]
        first = lambda steps, failure: failure or next((s["error"] for s in steps if s["error"]), None)  # noqa: E731
        errors = [s["max_rel_error"] for s in patched or [] if s["max_rel_error"] is not None]
        report(f"{family}/{order}", family=spec.what, setting=spec.setting, order=order,
               stock=first(stock, stock_failure), patched=first(patched, patched_failure),
               max_rel_error=max(errors, default=None))
        self.assertIsNone(patched_failure)
        self.assertEqual([s["error"] for s in patched], [None, None])
        tolerance = TOLERANCE.get(spec.dtype, TOLERANCE["bfloat16"])  # int8/fp8 inputs: a low-precision output
        self.assertLess(max(errors), tolerance)
        if spec.crashes and is_affected("mm"):
            self.assertRegex(first(stock, stock_failure) or "", LAUNCHER_ERROR, "negative control: stock must crash")


if __name__ == "__main__":
    run_tests()
