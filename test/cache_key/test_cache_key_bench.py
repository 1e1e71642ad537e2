"""``tools/bench cache_key`` in a fast form: the patch's cost per key is measured as documented."""

from __future__ import annotations

from helpers import bench

from torch._inductor.test_case import TestCase, run_tests


class TestBench(TestCase):
    def test_fast_form(self) -> None:
        _, data = bench("cache_key", "--rounds", "4", "--sample-seconds", "0.001")
        self.assertEqual(set(data["cases"]), {"distinct", "aliased", "control", "wrapper"})
        self.assertIn("input_aliasing=(0, 1)", data["cases"]["distinct"]["key_suffix"])
        self.assertEqual(set(data["activity_ns"]), {"usual", "two patterns"})
        self.assertTrue(all(a["median"] > 0 for a in data["activity_ns"].values()))


if __name__ == "__main__":
    run_tests()
