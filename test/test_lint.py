"""The linter passes: ``python -m ruff check .`` with pyproject.toml's ``[tool.ruff]``
(pycodestyle, pyflakes, bugbear; lines of at most 120 columns), and a planted finding fails it.
The type checker passes too: ``python -m mypy`` with ``[tool.mypy]`` (the package; its core
strictly), and a planted finding in a core module fails it.

Without ruff or mypy (``pip install ".[test]"`` installs them) the tests skip, unless
``INDUCTOR_FIX_REQUIRE_LINT`` is set (``.ci/run`` sets it): then they fail.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *arguments], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


class TestLint(unittest.TestCase):
    def setUp(self) -> None:
        if importlib.util.find_spec("ruff") is None:
            if os.environ.get("INDUCTOR_FIX_REQUIRE_LINT"):
                self.fail("ruff is not installed, and INDUCTOR_FIX_REQUIRE_LINT is set")
            self.skipTest("ruff is not installed (it is in the test extra)")

    def test_the_repository_passes(self) -> None:
        result = _ruff(".")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_planted_findings_fail(self) -> None:
        # Negative control: the configured rules catch each kind, so the pass above means something.
        plants = {"F401": "import os\n", "E501": f"x = {'1' * 130}\n", "B006": "def f(x=[]):\n    return x\n"}
        with tempfile.TemporaryDirectory(dir=ROOT / "test") as directory:
            for code, text in plants.items():
                with self.subTest(code=code):
                    path = Path(directory, f"planted_{code.lower()}.py")
                    path.write_text(text)
                    result = _ruff(str(path))
                    self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                    self.assertIn(code, result.stdout)


def _mypy(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *arguments], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


class TestTypes(unittest.TestCase):
    def setUp(self) -> None:
        if importlib.util.find_spec("mypy") is None:
            if os.environ.get("INDUCTOR_FIX_REQUIRE_LINT"):
                self.fail("mypy is not installed, and INDUCTOR_FIX_REQUIRE_LINT is set")
            self.skipTest("mypy is not installed (it is in the test extra)")

    def test_the_package_passes(self) -> None:
        result = _mypy()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("no issues found", result.stdout)

    def test_a_core_module_is_checked_strictly(self) -> None:
        # Negative control: an unannotated function passes in a module outside the core and fails in
        # a core one, in a copy of the package with pyproject.toml's configuration.
        import shutil

        with tempfile.TemporaryDirectory() as directory:
            copy = Path(directory)
            shutil.copytree(ROOT / "inductor_fix", copy / "inductor_fix", ignore=shutil.ignore_patterns("__pycache__"))
            for name in ("_inductor_fix_startup.py", "_inductor_fix_autoload.py", "pyproject.toml"):
                shutil.copy2(ROOT / name, copy / name)
            for module, fails in (("inductor_fix/check/workloads.py", False), ("inductor_fix/_lifecycle.py", True)):
                with self.subTest(module=module):
                    path = copy / module
                    original = path.read_text()
                    path.write_text(original + "\n\ndef planted(x):\n    return x\n")
                    result = _mypy(cwd=copy)
                    path.write_text(original)
                    self.assertEqual(result.returncode, int(fails), result.stdout + result.stderr)
                    self.assertEqual("no-untyped-def" in result.stdout, fails, result.stdout)


if __name__ == "__main__":
    unittest.main()
