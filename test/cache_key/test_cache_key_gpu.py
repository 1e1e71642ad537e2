"""The cache-key patch on a GPU: the real crash and the real fix, kernels running on CUDA (skipped without CUDA).

Stock must crash with the launcher's own TypeError on an affected release (the
negative control); patched must compile and match eager. Includes the pattern of
the upstream report: an optimizer-style update taking einsums of a batched
gradient with itself, then a projection einsum with two other matrices.
Under ``tools/gpu_tier`` autotuning is bounded to a few configs per selection that keep
every config the device may not compile (``quick_autotuning.representative_configs``): stock's
crash on a GPU needs one that fails. A plain ``test_configs.max_mm_configs=4`` keeps the first four,
which all compile on an H200, and the stock run no longer crashes - a negative control that
cannot fail.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import tempfile
import time

from helpers import (LAUNCHER_ERROR, MATMUL_TOLERANCE, is_affected, fresh_cache, optimizer_step, report, requires_cuda,
                     run_python)

import inductor_fix
from inductor_fix.check.table import run_sequence
from inductor_fix.check.workloads import ORDERS, Step
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

def _name(value: str) -> str:
    return value.replace("-", "_")


def _stock_in_fresh_process(op: str, order: str) -> list[Step]:
    """The stock run in a process of its own (``INDUCTOR_FIX_DISABLE=1``), as ``check`` runs it.

    In one process, the template codegen cache and autotuning memory outlive
    ``fresh_cache()``: after an earlier test's stock ``bmm(x, x)``, a later stock
    distinct-first sequence was served that test's kernels and timings and never ran the
    benchmark that crashes (seen on the H200 without xdist) - a negative control that
    could not fail.
    """
    code = f"""
        import dataclasses, json
        from inductor_fix.check.table import run_sequence
        from quick_autotuning import autotuning
        with autotuning("cuda"):
            steps = run_sequence({op!r}, {order!r}, "cuda", compare=True)
        print("STOCK", json.dumps([dataclasses.asdict(s) for s in steps]))
    """
    with tempfile.TemporaryDirectory() as cache:
        result = run_python(code, env={"INDUCTOR_FIX_DISABLE": "1", "TORCHINDUCTOR_CACHE_DIR": cache}, timeout=900)
    lines = [line for line in result.stdout.splitlines() if line.startswith("STOCK ")]
    assert lines, result.stderr[-2000:]
    return [Step(**step) for step in json.loads(lines[-1][len("STOCK "):])]


@requires_cuda
@instantiate_parametrized_tests
class TestAliasedTemplateInputsGPU(TestCase):
    @parametrize("order", ORDERS, name_fn=_name)
    @parametrize("op", ["bmm", "addmm", "bmm_t"])
    def test_stock_and_patched(self, op: str, order: str) -> None:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # stock's process runs while patched compiles here
            stock_run = pool.submit(_stock_in_fresh_process, op, order)
            with fresh_cache(), inductor_fix.applied():
                patched = run_sequence(op, order, "cuda", compare=True)
            stock = stock_run.result()
        report(f"{op}/{order}", stock=[s.error for s in stock], patched=[s.error for s in patched],
               max_rel_error=max((s.max_rel_error or 0.0) for s in patched))
        if is_affected("bmm"):
            self.assertEqual(len(stock), 2)
            self.assertRegex(stock[1].error or "", LAUNCHER_ERROR)
            self.assertGreater(stock[1].cache_hits, 0)
        self.assertEqual([s.error for s in patched], [None, None])
        self.assertLess(max(s.max_rel_error for s in patched), MATMUL_TOLERANCE)
        self.assertEqual(counters["inductor_fix"]["regenerated"], 0)


@requires_cuda
class TestOptimizerStepGPU(TestCase):
    """The upstream report's pattern, with figures: patched vs the cache-off workaround."""

    def test_stock_crashes_patched_matches_eager(self) -> None:
        with fresh_cache(), inductor_fix.removed():
            stock = optimizer_step("cuda", compare=True)
        if is_affected("bmm"):
            self.assertRegex(stock[-1].error or "", LAUNCHER_ERROR)

        figures = {}
        for variant, contexts in (
            ("patched", (inductor_fix.applied(),)),
            ("cache_off", (inductor_fix.removed(), config.patch(enable_caching_generated_triton_templates=False))),
        ):
            with fresh_cache(), contextlib.ExitStack() as stack:
                for context in contexts:
                    stack.enter_context(context)
                start = time.perf_counter()
                steps = optimizer_step("cuda", compare=True)
                figures[f"{variant}_compile_s"] = round(time.perf_counter() - start, 2)
            self.assertEqual([s.error for s in steps], [None, None], variant)
            figures[f"{variant}_max_rel_error"] = max(s.max_rel_error for s in steps)
            self.assertLess(figures[f"{variant}_max_rel_error"], MATMUL_TOLERANCE, variant)
        report("optimizer_step", stock=[s.error for s in stock], **figures)


if __name__ == "__main__":
    run_tests()
