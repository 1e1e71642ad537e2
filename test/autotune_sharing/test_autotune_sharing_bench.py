"""``tools/bench autotune_sharing`` in a fast form: the family lookup's cost per key is measured
as documented."""

from __future__ import annotations

from helpers import bench

from torch._inductor.test_case import TestCase, run_tests


class TestBench(TestCase):
    def test_fast_form(self) -> None:
        process, data = bench("autotune_sharing", "--rounds", "4", "--sample-seconds", "0.001")
        self.assertEqual(set(data["cases"]), {"distinct", "aliased"})
        self.assertTrue(all(case["ratio"]["median"] > 0 for case in data["cases"].values()))
        self.assertLessEqual(data["distinct_keys"], data["cacheable"])
        self.assertGreater(data["first_sight_ns"]["median"], 0)
        self.assertIn("Goal with/without", process.stdout)


if __name__ == "__main__":
    run_tests()
