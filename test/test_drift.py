"""Drift drill: the next nightly's internals faked the way they usually move.

A user of that nightly must see each patch applied where it still fits, and
``unsupported`` with a one-line reason (warned once, no exception) where it does
not, the other patches still applied. A patch that does not apply on the installed torch
keeps its state there, and its own drills skip, naming the release (``drift.not_applicable``).
Each drill runs in a fresh process (``test/drift.py``); ``python test/drift.py`` prints the same as a table.
"""

from __future__ import annotations

import os
import subprocess
import sys

import drift
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

DRIFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "drift.py")


@instantiate_parametrized_tests
class TestDriftDrill(TestCase):
    @parametrize("name", list(drift.DRILLS))
    def test_drill(self, name: str) -> None:
        reason = drift.not_applicable(name)
        if reason:
            self.skipTest(reason)
        result = drift.run(name)
        self.assertNotIn("error", result, result)
        self.assertEqual(result["torch_version"], drift.NIGHTLY)
        states = {patch["name"]: patch["state"] for patch in result["patches"]}
        self.assertEqual(states, drift.expected_states(name), result)
        unsupported = [patch for patch in result["patches"] if patch["state"] == "unsupported"]
        # A patch that only saves cost, unsupported, leaves the torch protected.
        self.assertEqual(result["protected"], not [patch for patch in unsupported if patch["protects"]])
        for patch in unsupported:
            self.assertNotIn("\n", patch["reason"])
            warned = [w for w in result["warnings"] if f"{patch['name']} patch not applied: {patch['reason']}" in w]
            self.assertEqual(len(warned), 1, result["warnings"])  # once, with the reason
        if not unsupported:
            self.assertEqual(result["warnings"], [])

    def test_table_command(self) -> None:
        process = subprocess.run([sys.executable, DRIFT, "renamed-class"], capture_output=True, text=True,
                                 timeout=600)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertIn("renamed-class: unsupported, protected False (as expected)", process.stdout)
        self.assertIn("select_algorithm.TritonTemplateCaller is missing", process.stdout)
        bad = subprocess.run([sys.executable, DRIFT, "no-such-drill"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown drill(s) no-such-drill", bad.stderr)


if __name__ == "__main__":
    run_tests()
