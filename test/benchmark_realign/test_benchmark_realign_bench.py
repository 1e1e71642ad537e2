"""``tools/bench benchmark_realign`` in a fast form (CPU harness): the grouping's cost per choice."""

from __future__ import annotations

from helpers import bench

from torch._inductor.test_case import TestCase, run_tests


class TestBench(TestCase):
    def test_fast_form(self) -> None:
        process, data = bench("benchmark_realign", "--rounds", "2")
        self.assertGreater(data["choices"], 0)
        self.assertIn("| goals met in every selection | yes |", process.stdout)


if __name__ == "__main__":
    run_tests()
