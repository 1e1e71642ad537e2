"""The cache-key fix on the CPU harness: stock crashes (negative control), patched does not.

Runs Inductor's real Triton template codegen, codegen cache and benchmark
requests; only kernel launches are stood in for (inductor_fix/testing/harness.py).
"""

from __future__ import annotations

from helpers import AFFECTED, TORCH_RELEASE

import inductor_fix
from inductor_fix.testing.harness import triton_cpu_harness
from inductor_fix.testing.workloads import ORDERS, run_compiles, run_sequence
from torch._dynamo.utils import counters
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

OPS = ("bmm", "mm", "addmm", "baddbmm", "bmm_t")


def _name(value: str) -> str:
    return value.replace("-", "_")


@instantiate_parametrized_tests
class TestAliasedTemplateInputs(TestCase):
    @parametrize("order", ORDERS, name_fn=_name)
    @parametrize("op", OPS)
    def test_stock(self, op: str, order: str) -> None:
        """Negative control: with the fix removed, an affected torch must crash."""
        with inductor_fix.removed(), triton_cpu_harness() as oracle:
            steps = run_sequence(op, order, "cpu", compare=False)
        if not AFFECTED:
            self.assertEqual([s.error for s in steps], [None, None], f"torch {TORCH_RELEASE} is not affected")
            return
        self.assertEqual(len(steps), 2)
        self.assertIsNone(steps[0].error)
        self.assertRegex(steps[1].error, r"^TypeError: triton_\w+\(\) launch: ")
        self.assertGreater(steps[1].cache_hits, 0, "the crash must come from a codegen-cache hit")
        self.assertTrue(oracle.mismatches)
        mismatch = oracle.mismatches[0]
        expected = "too many positional arguments" if order == "alias-first" else "missing a required argument"
        self.assertIn(expected, mismatch.error)

    @parametrize("order", ORDERS, name_fn=_name)
    @parametrize("op", OPS)
    def test_patched(self, op: str, order: str) -> None:
        with inductor_fix.applied() as status, triton_cpu_harness() as oracle:
            steps = run_sequence(op, order, "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertEqual(oracle.mismatches, [])
        self.assertGreater(oracle.launches, 0, "no template kernel was launched: the template was not exercised")
        # The key alone prevents it: the arity guard never had to act.
        self.assertEqual(counters["inductor_fix"]["regenerated"], 0)
        self.assertEqual(counters["inductor_fix"]["excluded"], 0)
        # Matmul choices take the selection's inputs: benchmarked exactly as stock.
        self.assertEqual(counters["inductor_fix"]["realigned"], 0)
        self.assertEqual(counters["inductor_fix"]["excluded_at_benchmark"], 0)
        self.assertIn(status.patch("cache-key").state, (inductor_fix.State.APPLIED, inductor_fix.State.PENDING))

    def test_cache_hits_kept_on_distinct_inputs(self) -> None:
        """Non-aliased compiles with equal layouts hit the codegen cache exactly as often as stock."""
        from torch._inductor.utils import fresh_cache

        hits = {}
        for mode, context in (("stock", inductor_fix.removed), ("patched", inductor_fix.applied)):
            with context(), fresh_cache(), triton_cpu_harness():
                counters.clear()
                steps = run_compiles("bmm", (False, False, False), "cpu", compare=False)
                self.assertEqual([s.error for s in steps], [None] * 3)
                hits[mode] = counters["inductor"]["generated_module_cache_hit"]
        self.assertGreater(hits["stock"], 0)
        self.assertEqual(hits["patched"], hits["stock"])

    def test_aliased_compiles_still_cached(self) -> None:
        """Patched keys for aliased inputs are cacheable: a second aliased compile hits."""
        with inductor_fix.applied(), triton_cpu_harness():
            steps = run_compiles("bmm", (True, True), "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertEqual(steps[0].cache_hits, 0)
        self.assertGreater(steps[1].cache_hits, 0)


if __name__ == "__main__":
    run_tests()
