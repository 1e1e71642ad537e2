"""The benchmark-realign patch: FlexAttention with a bias computed in the graph
(pytorch/pytorch#194515) crashes stock and compiles patched. CPU harness in CI; kernels
for real on a GPU.
"""

from __future__ import annotations

from helpers import LAUNCHER_ERROR, TOLERANCE, TORCH_RELEASE, Node, is_affected, fresh_cache, requires_cuda

import inductor_fix
import torch
from inductor_fix.patches.benchmark_realign.fix import input_names, plan_realignment
from inductor_fix.patches.benchmark_realign.check import FLEX, FLEX_ORDER, flex_lowering_on_triton
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.table import run_sequence
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code
from torch.nn.attention.flex_attention import flex_attention
from torch.testing import FileCheck
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

FLEX_OPS = tuple(FLEX)
#: What a flex launch one tensor short says: the real launcher, or the harness's oracle.
SHORT_LAUNCH = (r"TypeError: .*(missing 1 required positional argument: '_grid_2'"
                r"|missing a required argument: 'out_ptr0')")


class TestPlanRealignment(TestCase):
    """Which tensors a choice is benchmarked with, matched by buffer name."""

    @staticmethod
    def zeros(node):
        return "zeros"

    def test_matching_names_need_nothing(self) -> None:
        q, k, x = Node("q"), Node("k"), Node("x")
        self.assertIsNone(plan_realignment([q, k, x], [q, k, x], None, self.zeros))
        # A view of one buffer twice is one kernel input, as in the selection: still a match.
        self.assertIsNone(plan_realignment([q, x, x], [q, x], None, self.zeros))

    def test_captured_buffers_replace_the_logical_one(self) -> None:
        q, lse, blocks, bias, index, table = map(Node, ("q", "lse", "blocks", "bias", "index", "table"))
        gen = {2: "block generator", 3: "bias generator"}
        plan = plan_realignment([q, lse, blocks, index, table], [q, lse, blocks, bias], gen, self.zeros)
        self.assertEqual(plan.names, ("q", "lse", "blocks", "index", "table"))
        self.assertEqual(plan.captured, ("index", "table"))
        # The block-mask generator follows its buffer; the logical bias's does not survive.
        self.assertEqual(plan.gen_fns, {2: "block generator", 3: self.zeros, 4: self.zeros})

    def test_same_count_other_buffers_detected_by_name(self) -> None:
        a, b, c = map(Node, "abc")
        plan = plan_realignment([a, c], [a, b], None, self.zeros)
        self.assertEqual((plan.names, plan.captured), (("a", "c"), ("c",)))

    def test_order_follows_the_kernel(self) -> None:
        a, b = map(Node, "ab")
        plan = plan_realignment([b, a], [a, b], {0: "a's", 1: "b's"}, self.zeros)
        self.assertEqual((plan.names, plan.gen_fns, plan.captured), (("b", "a"), {0: "b's", 1: "a's"}, ()))

    def test_input_names_dedup_in_order(self) -> None:
        self.assertEqual(input_names(list(map(Node, "abab c"))), ("a", "b", " ", "c"))


@instantiate_parametrized_tests
class TestFlexCPU(TestCase):
    """Under the CPU harness: the real flex lowerings and autotuning, launches checked for arity."""

    def setUp(self) -> None:
        super().setUp()
        if not flex_lowering_on_triton():
            self.skipTest(f"the harness cannot route flex to Triton on torch {TORCH_RELEASE}")

    @parametrize("op", FLEX_OPS)
    def test_stock(self, op: str) -> None:
        """Negative control: with the fix removed, an affected torch must crash."""
        with inductor_fix.removed(), triton_cpu_harness() as oracle:
            steps = run_sequence(op, FLEX_ORDER, "cpu", compare=False)
        if not is_affected("flex"):
            self.assertEqual([s.error for s in steps], [None], f"torch {TORCH_RELEASE} is not affected")
            return
        self.assertRegex(steps[0].error, SHORT_LAUNCH)
        self.assertTrue(oracle.mismatches)

    @parametrize("op", FLEX_OPS)
    def test_patched(self, op: str) -> None:
        with inductor_fix.applied(), triton_cpu_harness() as oracle:
            steps = run_sequence(op, FLEX_ORDER, "cpu", compare=False)
        self.assertEqual([s.error for s in steps], [None])
        self.assertEqual(oracle.mismatches, [])
        self.assertTrue(any(name.startswith("triton_flex") for name in oracle.kernels), oracle.kernels)
        if is_affected("flex"):
            self.assertGreater(counters["inductor_fix"]["realigned"], 0)
        self.assertEqual(counters["inductor_fix"]["excluded_at_benchmark"], 0)


class TestGatheredBiasKernel(TestCase):
    """PyTorch-style: the compiled function written here, its generated code checked. The
    forward kernel reads the inlined gather's two sources (``index``, ``table``) as two
    pointers where the lowering's autotuning list holds one ``bias``."""

    @staticmethod
    def attend(q, k, v, table, index):
        bias = table[index]  # computed in the graph
        return flex_attention(q, k, v, score_mod=lambda score, b, h, i, j: score + bias[i, j, h])

    def _compile(self) -> str:
        generator = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(2, 2, 256, 32, generator=generator) for _ in range(3))
        position = torch.arange(256)
        index, table = position[:, None] - position[None, :] + 255, torch.randn(511, 2, generator=generator)
        with fresh_cache(), triton_cpu_harness(fx_graph_cache=False):
            _, code = run_and_get_code(torch.compile(self.attend, mode="max-autotune-no-cudagraphs"),
                                       q, k, v, table, index)
        return "\n".join(code)

    def setUp(self) -> None:
        super().setUp()
        if not flex_lowering_on_triton():
            self.skipTest(f"the harness cannot route flex to Triton on torch {TORCH_RELEASE}")

    def test_kernel_takes_the_captured_buffers(self) -> None:
        counters.clear()
        with inductor_fix.applied():
            code = self._compile()
        # The flex kernel by its signature (arg_Q, arg_K, arg_V): its name is Inductor's fused
        # origins, which name flex_attention on 2.14+ but only the gather's ops on 2.9.
        FileCheck().check_regex(r"def triton_tem_\w*\(arg_Q, arg_K, arg_V, .*"
                                r"in_ptr\d+, in_ptr\d+, out_ptr0\)").run(code)
        if is_affected("flex"):
            self.assertGreater(counters["inductor_fix"]["realigned"], 0)

    def test_stock_crashes(self) -> None:
        """Negative control: the same compile with the fix removed."""
        with inductor_fix.removed():
            if not is_affected("flex"):
                self.assertIn("def triton_tem_", self._compile(), f"torch {TORCH_RELEASE} is not affected")
                return
            with self.assertRaisesRegex(Exception, SHORT_LAUNCH):
                self._compile()


@requires_cuda
@instantiate_parametrized_tests
class TestFlexGPU(TestCase):
    """On a CUDA GPU: stock crashes with the launcher's own error, patched equals eager."""

    @parametrize("op", FLEX_OPS)
    def test_stock_and_patched(self, op: str) -> None:
        from helpers import report

        with inductor_fix.removed():
            stock = run_sequence(op, FLEX_ORDER, "cuda", compare=True)
        with inductor_fix.applied():
            patched = run_sequence(op, FLEX_ORDER, "cuda", compare=True)
        report(f"{op}/{FLEX_ORDER}", stock=[s.error for s in stock], patched=[s.error for s in patched],
               max_rel_error=patched[0].max_rel_error, realigned=counters["inductor_fix"]["realigned"],
               patched_compile_s=round(patched[0].seconds, 1))
        if is_affected("flex"):
            self.assertRegex(stock[0].error or "", LAUNCHER_ERROR)
        self.assertEqual([s.error for s in patched], [None])
        self.assertLess(patched[0].max_rel_error, TOLERANCE["float32"])

    @parametrize("op", FLEX_OPS)
    def test_bfloat16_matches_eager(self, op: str) -> None:
        with inductor_fix.applied():
            steps = run_sequence(op, FLEX_ORDER, "cuda", compare=True, dtype=torch.bfloat16)
        self.assertEqual([s.error for s in steps], [None])
        self.assertLess(steps[0].max_rel_error, 6e-2)


if __name__ == "__main__":
    run_tests()
