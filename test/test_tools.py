"""tools/run_matrix's judgement of a release: what it expects, and how it reads pytest's exit."""

from __future__ import annotations

import sys
from pathlib import Path

from torch._inductor.test_case import TestCase, run_tests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from matrix_lib import expectations as ex  # noqa: E402


class TestMatrixExpectations(TestCase):
    def test_stock_expected_to_fail_on_affected_releases_only(self) -> None:
        versions = ("2.7.1", "2.8.0", "2.9.0", "2.14.1+cu130", "2.15.0", "2.15.0.dev20261101")
        table = {v: ex.expected("stock", v) for v in versions}
        self.assertEqual(
            table,
            {"2.7.1": "PASS", "2.8.0": "PASS", "2.9.0": "FAIL", "2.14.1+cu130": "FAIL", "2.15.0": "PASS",
             "2.15.0.dev20261101": "PASS"},
        )
        self.assertEqual({ex.expected(phase, "2.12.0") for phase in ("patched", "diff")}, {"PASS"})

    def test_only_exit_0_and_1_are_results(self) -> None:
        # pytest exit 5 (no tests collected) must never count as a pass or as the expected failure.
        self.assertEqual([ex.outcome(status) for status in (0, 1, 2, 4, 5)], ["PASS", "FAIL", "ERROR", "ERROR", "ERROR"])

    def test_verdict(self) -> None:
        def entry(stock: str, patched: str, diff: str | None) -> dict:
            phases = {"stock": (stock, "FAIL"), "patched": (patched, "PASS"), "diff": (diff, "PASS")}
            return {"phases": {p: {"outcome": o, "expected": e} for p, (o, e) in phases.items() if o}}

        self.assertEqual(ex.verdict(entry("FAIL", "PASS", "PASS")), "ok")
        self.assertEqual(ex.verdict(entry("FAIL", "PASS", "n/a")), "ok")
        self.assertEqual(ex.verdict(entry("PASS", "PASS", "PASS")), "MISMATCH")  # stock did not show the bug
        self.assertEqual(ex.verdict(entry("FAIL", "ERROR", "PASS")), "ERROR")
        self.assertEqual(ex.verdict(entry("FAIL", "PASS", None)), "incomplete")


if __name__ == "__main__":
    run_tests()
