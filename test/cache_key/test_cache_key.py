"""The cache-key patch on the CPU harness: stock crashes (the negative control), patched
does not, and the kernel each compile generates takes one pointer per distinct buffer.

Inductor's real Triton template codegen, codegen cache and benchmark requests run;
only kernel launches are stood in for (``inductor_fix/check/harness.py``).
"""

from __future__ import annotations

import json

import torch
from helpers import is_affected, fresh_cache, run_python

import inductor_fix
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.workloads import run_compiles
from inductor_fix.check.operations import operation as op
from inductor_fix.check.parts import check_ops
from inductor_fix.patches.cache_key import PATCH
from torch._dynamo.utils import counters
from torch._inductor.test_case import TestCase, run_tests
from torch._inductor.utils import run_and_get_code
from torch.testing import FileCheck
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

MODE = "max-autotune-no-cudagraphs"
#: op -> (the compiled function, operand shape, the kernel's pointer parameters for
#: all operands aliased, and for distinct operands); the names are def_kernel's.
OPS = {
    "bmm": (lambda a, b: torch.bmm(a, b), (4, 64, 64), "arg_B, out_ptr0", "arg_A, arg_B, out_ptr0"),
    "mm": (lambda a, b: torch.mm(a, b), (64, 64), "arg_B, out_ptr0", "arg_A, arg_B, out_ptr0"),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b), (64, 64), "arg_B, out_ptr0", "in_ptr0, arg_A, arg_B, out_ptr0"),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b), (4, 64, 64), "arg_B, out_ptr0",
                "in_ptr0, arg_A, arg_B, out_ptr0"),
    # x and x transposed: aliasing through a view, as in grad @ grad^T.
    "bmm_t": (lambda a, b: torch.bmm(a, b.transpose(1, 2)), (4, 64, 64), "arg_B, out_ptr0", "arg_A, arg_B, out_ptr0"),
}
ORDERS = {"alias_first": (True, False), "distinct_first": (False, True)}  # test-name friendly


def _operands(op: str, aliased: bool) -> list[torch.Tensor]:
    function, shape, *_ = OPS[op]
    count = function.__code__.co_argcount
    generator = torch.Generator().manual_seed(0)
    tensors = [torch.randn(shape, generator=generator) for _ in range(count)]
    return [tensors[0]] * count if aliased else tensors


@instantiate_parametrized_tests
class TestAliasedTemplateInputs(TestCase):
    """Two compiles of one function in one process, equal layouts, once with every operand
    the same tensor and once with distinct tensors: the codegen cache must keep them apart."""

    def _compile(self, op: str, aliased: bool) -> str:
        """The code a fresh compile of ``op`` generates; raises what the compile raises."""
        torch._dynamo.reset()
        _, code = run_and_get_code(torch.compile(OPS[op][0], mode=MODE), *_operands(op, aliased))
        return "\n".join(code)

    def _harness(self):
        return triton_cpu_harness(max_autotune_gemm_backends="TRITON", fx_graph_cache=False)

    @parametrize("order", list(ORDERS))
    @parametrize("op", list(OPS))
    def test_kernel_takes_one_pointer_per_buffer(self, op: str, order: str) -> None:
        counters.clear()
        with inductor_fix.applied(), fresh_cache(), self._harness():
            for aliased in ORDERS[order]:
                pointers = OPS[op][2 if aliased else 3]
                FileCheck().check_regex(rf"def triton_\w+\({pointers}\)").run(self._compile(op, aliased))
        # The key alone keeps the entries apart: the arity guard never had to act.
        self.assertEqual(counters["inductor_fix"]["regenerated"] + counters["inductor_fix"]["excluded"], 0)

    @parametrize("order", list(ORDERS))
    @parametrize("op", list(OPS))
    def test_stock_crashes(self, op: str, order: str) -> None:
        """Negative control: the same compiles with the fix removed crash on an affected torch,
        on a codegen-cache hit of the first compile's kernel."""
        first, second = ORDERS[order]
        with inductor_fix.removed(), fresh_cache(), self._harness():
            self._compile(op, first)
            counters.clear()
            if not PATCH.is_affected(torch.__version__):
                self._compile(op, second)  # must not raise
                return
            expected = "too many positional arguments" if first else "missing a required argument"
            with self.assertRaisesRegex(Exception, rf"triton_\w+\(\) launch: {expected}"):
                self._compile(op, second)
        self.assertGreater(counters["inductor"]["generated_module_cache_hit"], 0)

    def test_collision_counted_only_while_the_cache_holds_the_other_pattern(self) -> None:
        """``collisions_prevented`` (the job report's evidence) counts what stock would have
        replayed: after ``fresh_cache`` emptied the codegen cache, a new pattern is no collision."""
        def collisions() -> int:
            return PATCH.activity.snapshot()["counts"].get("collisions_prevented", 0)

        bmm = lambda a, b: torch.bmm(a, b)  # noqa: E731
        x, y = torch.randn(2, 3, 48, 48).unbind(0)  # a shape no other test keys
        with inductor_fix.applied(), self._harness():
            with fresh_cache():
                torch._dynamo.reset()
                torch.compile(bmm, mode=MODE)(x, x)
            before = collisions()
            with fresh_cache():
                torch._dynamo.reset()
                torch.compile(bmm, mode=MODE)(x, y)
                self.assertEqual(collisions(), before)
                torch._dynamo.reset()
                torch.compile(bmm, mode=MODE)(x, x)  # (x, y)'s entries are held now
        if not PATCH.is_affected(torch.__version__):
            self.assertEqual(collisions(), before)  # stock keys the patterns apart itself: nothing to count
            return
        self.assertGreater(collisions(), before)

    def test_a_collision_reads_as_its_template_and_patterns(self) -> None:
        """What the job report shows of a collision (test_report.py asserts only that each detail
        reads as its kind's line): bmm(x, x) then bmm(x, y), the template and both patterns. In a
        process of its own: an activity keeps its first 20 distinct details, this suite makes more."""
        result = run_python("""
            import json, torch
            import inductor_fix
            from inductor_fix.check.harness import triton_cpu_harness
            from inductor_fix.patches.cache_key import PATCH
            from quick_autotuning import quick_cpu_autotuning
            from torch._inductor.utils import fresh_cache

            x, y = torch.randn(2, 4, 32, 32).unbind(0)
            with fresh_cache(), quick_cpu_autotuning(), triton_cpu_harness(fx_graph_cache=False):
                for args in ((x, x), (x, y)):
                    torch._dynamo.reset()
                    torch.compile(lambda a, b: torch.bmm(a, b), mode="max-autotune-no-cudagraphs")(*args)
            snapshot = PATCH.activity.snapshot()
            print(json.dumps({**snapshot, "lines": [PATCH.activity.line(d) for d in snapshot["details"]]}))
        """)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        activity = json.loads(result.stdout.strip().splitlines()[-1])
        if not PATCH.is_affected(torch.__version__):
            return  # stock keys the patterns apart itself: nothing to count
        self.assertIn("collisions_prevented", activity["counts"])
        self.assertLessEqual(set(activity["counts"]), set(PATCH.activity.kinds), activity)
        (detail,) = [d for d in activity["details"] if d["kind"] == "collisions_prevented"]
        self.assertEqual((detail["template"], detail["patterns"]), ("bmm", [[0, 0], [0, 1]]))
        self.assertEqual(detail["count"], activity["counts"]["collisions_prevented"])
        self.assertIn("kept bmm apart by aliasing: patterns (0, 0) vs (0, 1) (op aten.bmm)", activity["lines"])


class TestCodegenCacheHits(TestCase):
    def test_cache_hits_kept_on_distinct_inputs(self) -> None:
        """Non-aliased compiles with equal layouts hit the codegen cache exactly as often as stock."""
        hits = {}
        for mode, context in (("stock", inductor_fix.removed), ("patched", inductor_fix.applied)):
            with context(), fresh_cache(), triton_cpu_harness():
                counters.clear()
                steps = run_compiles(op("bmm"), (False, False, False), "cpu", compare=False)
                self.assertEqual([s.error for s in steps], [None] * 3)
                hits[mode] = counters["inductor"]["generated_module_cache_hit"]
        self.assertGreater(hits["stock"], 0)
        self.assertEqual(hits["patched"], hits["stock"])

    def test_aliased_compiles_still_cached(self) -> None:
        """Patched keys for aliased inputs are cacheable: a second aliased compile hits."""
        with inductor_fix.applied(), triton_cpu_harness():
            steps = run_compiles(op("bmm"), (True, True), "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None, None])
        self.assertEqual(steps[0].cache_hits, 0)
        self.assertGreater(steps[1].cache_hits, 0)

    def test_check_ops_are_this_patch(self) -> None:
        """``inductor-fix check``'s matmul cases are judged by this patch's range."""
        self.assertEqual(set(check_ops(PATCH)), set(OPS))
        self.assertEqual(is_affected("bmm"), PATCH.is_affected(torch.__version__))


if __name__ == "__main__":
    run_tests()
