"""An editable install whose checkout moves never fails ``import torch``, and status says why.

In a fresh venv (torch shared from this interpreter through a folder of links, less anything
of inductor-fix), ``pip install -e`` a copy of this checkout (setuptools' default editable
mode, through ``tools/build_backend.py``; the build requirements come from the package
index). Control: torch loads the copy's entry point module and ``status`` is clean. The copy
moved: ``import torch`` still works, stock, with one warning (the stand-in the backend put in
site-packages), the ``inductor-fix`` command says in one line what to do, and ``status`` run
from the moved checkout says so. An editable install made without the stand-in (an older
inductor-fix's, simulated by deleting it): ``import torch`` fails as torch makes it fail,
``status`` names it and the cure, ``pip uninstall`` heals it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from torchenv import borrowing_venv, site_packages  # noqa: E402

SOURCES = ("inductor_fix", "_inductor_fix_autoload.py", "_inductor_fix_startup.py", "pyproject.toml", "README.md",
           "LICENSE", "tools/build_backend.py")
FAILS = "Failed to load the backend extension: inductor_fix"
LOADED = ("import sys, torch; module = sys.modules.get('_inductor_fix_autoload'); "
          "print('AUTOLOAD', getattr(module, '__file__', None))")


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("INDUCTOR_FIX_", "TORCH_DEVICE_BACKEND_AUTOLOAD")) and k != "PYTHONPATH"}


class TestEditableInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        import torch

        cls.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_install_"))
        cls.copy = cls.directory / "checkout"
        for name in SOURCES:
            source, target = ROOT / name, cls.copy / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                shutil.copy2(source, target)
        venv = cls.directory / "venv"
        cls.python = str(borrowing_venv(venv, Path(torch.__file__).resolve().parents[1], pip=True))
        cls.purelib = site_packages(cls.python)
        installed = cls.run_([cls.python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "-e",
                              str(cls.copy)], timeout=900)
        if installed.returncode:
            raise AssertionError(f"pip install -e failed:\n{installed.stdout}{installed.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.directory, ignore_errors=True)

    @classmethod
    def run_(cls, command: list[str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(command, capture_output=True, text=True, cwd=cwd or cls.directory, env=_environment(),
                              timeout=timeout)

    def status(self, checkout: Path) -> subprocess.CompletedProcess:
        """``python -m inductor_fix status --no-load`` from ``checkout`` (the package from there)."""
        return self.run_([self.python, "-m", "inductor_fix", "status", "--no-load"], cwd=checkout)

    def test_moved_checkout(self) -> None:
        # Control: the copy's own module is what torch loads, and status is clean.
        control = self.run_([self.python, "-c", LOADED])
        self.assertEqual(control.returncode, 0, control.stderr)
        self.assertIn(f"AUTOLOAD {self.copy / '_inductor_fix_autoload.py'}", control.stdout)
        self.assertTrue((self.purelib / "_inductor_fix_autoload.py").is_file())  # the stand-in
        clean = self.status(self.copy)
        self.assertEqual(clean.returncode, 0, clean.stdout + clean.stderr)
        self.assertIn("autoload: ok", clean.stdout)
        console = str(Path(self.python).with_name("inductor-fix"))
        self.assertEqual(self.run_([console, "--version"]).returncode, 0)

        moved = self.directory / "moved"
        self.copy.rename(moved)
        try:
            stock = self.run_([self.python, "-c", "import torch; print('IMPORTED')"])
            self.assertEqual(stock.returncode, 0, stock.stderr)
            self.assertIn("IMPORTED", stock.stdout)
            self.assertIn("not applied (autoload): the editable install's", stock.stderr)
            # The console script: one line naming the cure, not a ModuleNotFoundError traceback.
            script = self.run_([console, "status"])
            self.assertEqual(script.returncode, 1, script.stdout + script.stderr)
            self.assertNotIn("Traceback", script.stderr)
            self.assertIn(f"this editable install's checkout {self.copy} is gone or moved", script.stderr)
            self.assertIn("python -m pip install -e CHECKOUT from where the checkout is now", script.stderr)
            said = self.status(moved)
            text = " ".join(said.stdout.split())
            self.assertEqual(said.returncode, 1, said.stdout + said.stderr)
            self.assertIn("inductor-fix is not applied in this environment", text)
            self.assertIn("python -m pip uninstall inductor-fix", text)
            loaded = self.run_([self.python, "-m", "inductor_fix", "status"], cwd=moved)  # torch imported too
            headline = " ".join(loaded.stdout.split("\n  autoload:")[0].split())
            self.assertEqual(loaded.returncode, 1, loaded.stdout + loaded.stderr)
            self.assertIn("in this command only, not in other processes (autoload broken, below)", headline)
            # Torch found the moved checkout's module in the working directory: this process only.
            self.assertIn("activated by: cli, autoload (in this process only:", " ".join(loaded.stdout.split()))

            # An editable install without the stand-in (an older inductor-fix's): torch's own failure.
            (self.purelib / "_inductor_fix_autoload.py").unlink()
            failing = self.run_([self.python, "-c", "import torch"])
            self.assertNotEqual(failing.returncode, 0)
            self.assertIn(FAILS, failing.stderr)
            named = self.status(moved)
            text = " ".join(named.stdout.split())
            self.assertEqual(named.returncode, 1, named.stdout + named.stderr)
            self.assertIn("every `import torch` in this environment fails", text)
            self.assertIn("No module named '_inductor_fix_autoload'", text)
            self.assertIn("TORCH_DEVICE_BACKEND_AUTOLOAD=0", text)
            workaround = subprocess.run([self.python, "-c", "import torch"], capture_output=True, text=True,
                                        cwd=self.directory, timeout=300,
                                        env={**_environment(), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
            self.assertEqual(workaround.returncode, 0, workaround.stderr)

            uninstalled = self.run_([self.python, "-m", "pip", "--disable-pip-version-check", "-q", "uninstall",
                                     "-y", "inductor-fix"])
            self.assertEqual(uninstalled.returncode, 0, uninstalled.stderr)
            healed = self.run_([self.python, "-c", "import torch; print('IMPORTED')"])
            self.assertEqual(healed.returncode, 0, healed.stderr)
            self.assertEqual([p.name for p in self.purelib.iterdir() if "inductor_fix" in p.name], [])
        finally:
            moved.rename(self.copy)


if __name__ == "__main__":
    unittest.main()
