"""``tools/bench arity_guard`` in a fast form: the guard's cost per choice is measured as documented."""

from __future__ import annotations

from helpers import bench

from torch._inductor.test_case import TestCase, run_tests


class TestBench(TestCase):
    def test_fast_form(self) -> None:
        process, data = bench("arity_guard", "--reps", "1")
        self.assertGreater(data["choices"], 0)
        self.assertIn("ratio guarded/unguarded per choice", process.stdout)


if __name__ == "__main__":
    run_tests()
