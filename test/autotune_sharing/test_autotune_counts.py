"""``tools/check_patches --autotune-counts``: the counts of 0005, autotune-sharing's diff.

The tool exists for this patch's diff (``patches/README.md``, "0005"), so its test lives with
the patch and retires with it. The whole count runs only on 0005's base (it takes minutes);
elsewhere the tool must refuse the diff before it counts anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from matrix_lib import series  # noqa: E402


class TestAutotuneCounts(TestCase):
    def test_refuses_a_diff_this_torch_cannot_take(self) -> None:
        diff = next((ROOT / "patches").glob("0005-*.patch"))
        if series.base_commit(diff) == torch.version.git_version:
            self.skipTest("this torch is 0005's base: the counts run whole (patches/README.md)")
        with tempfile.TemporaryDirectory() as directory:
            process = subprocess.run([sys.executable, str(ROOT / "tools" / "check_patches"), "--autotune-counts",
                                      "--patch", str(diff), "--out", directory], capture_output=True, text=True)
            self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
            self.assertIn("does not apply to this torch's files", process.stderr)
            self.assertEqual(os.listdir(directory), [])


if __name__ == "__main__":
    run_tests()
