"""``tools/bench cache_key`` in a fast form: the patch's cost per key is measured as documented."""

from __future__ import annotations

from helpers import bench, not_applied_reason

from inductor_fix.patches.cache_key import PATCH
from torch._inductor.test_case import TestCase, run_tests

KEY = "GeneratedCodeCache.make_key"


class TestBench(TestCase):
    def test_fast_form(self) -> None:
        if not_applied_reason(PATCH, KEY):  # nothing to time: the tool says so, and why
            with self.assertRaisesRegex(AssertionError, rf"nothing to measure: {KEY} is not wrapped on torch "
                                                        rf".*\({PATCH.name} "):
                bench("cache_key", "--rounds", "4", "--sample-seconds", "0.001")
            return
        _, data = bench("cache_key", "--rounds", "4", "--sample-seconds", "0.001")
        self.assertEqual(set(data["cases"]), {"distinct", "aliased", "control", "wrapper"})
        self.assertIn("input_aliasing=(0, 1)", data["cases"]["distinct"]["key_suffix"])
        self.assertEqual(set(data["activity_ns"]), {"usual", "two patterns"})
        self.assertTrue(all(a["median"] > 0 for a in data["activity_ns"].values()))


if __name__ == "__main__":
    run_tests()
