"""Each fact once: the releases each patch fixes are written in its entry
(``Patch.affected``); each patch folder's docstring, README and the package metadata say
the same, or this fails."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from inductor_fix.patches import PATCHES
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]


def span(specifier: str, dash: str = "-") -> str:
    """``">=2.9.0,<2.15.0"`` -> ``"2.9-2.14"``; ``">=2.7.0"`` -> ``"2.7+"``."""
    bounds = {spec.operator: Version(spec.version) for spec in SpecifierSet(specifier)}
    low = f"{bounds['>='].major}.{bounds['>='].minor}"
    if "<" not in bounds:
        return f"{low}+"
    high = bounds["<"]
    return f"{low}{dash}{high.major}.{high.minor - 1}"


def protected_from() -> str:
    """The first release every patch that has a bug there fits: the low end of the package's range."""
    lows = [max(Version(s.version) for s in SpecifierSet(p.affected + ("," + p.supported if p.supported else ""))
                if s.operator == ">=") for p in PATCHES]
    low = min(lows)
    return f"{low.major}.{low.minor}+"


class TestFactsAgree(TestCase):
    def test_span(self) -> None:
        self.assertEqual([span(">=2.9.0,<2.15.0"), span(">=2.7.0")], ["2.9-2.14", "2.7+"])

    def test_each_patch_folder_says_its_releases_and_when_to_delete_it(self) -> None:
        for patch in PATCHES:
            module = importlib.import_module(f"inductor_fix.patches.{patch.folder}")
            doc = " ".join(module.__doc__.split())
            self.assertIn(f"affected: {span(patch.affected)}", doc, patch.name)
            self.assertIn("Delete the folder", doc, patch.name)
            self.assertIn("its line in the patch table", doc, patch.name)
            # Its retirement list names everything of it outside the folder (tools/bench table
            # fails on a stray result): its diffs, its tests, its benchmark results.
            for path in [*(f"patches/{diff.split('-')[0]}-*" for diff in patch.diffs), f"test/{patch.folder}/",
                         *(f"docs/bench/{p.name}" for p in (ROOT / "docs" / "bench").glob(f"{patch.folder}*.json"))]:
                self.assertTrue(path in doc or re.sub(r"-\w+\.json$", "-*.json", path) in doc, (patch.name, path))

    def test_each_patchs_activity_names_it(self) -> None:
        # Its trace artifacts say which patch acted (_activity imports nothing of the table).
        for patch in PATCHES:
            self.assertEqual(patch.activity.patch, patch.name)

    def test_check_workloads_are_each_patchs_check_ops(self) -> None:
        # `inductor-fix check` runs what each patch's check module declares, found through the
        # table: its ops are the patch's check_ops, in order, and no op belongs to two patches.
        from inductor_fix.check.parts import check_ops
        from inductor_fix.check.table import check_parts, ops

        declared = {name: [w.op for w in check.workloads] for name, check in check_parts().items()}
        self.assertEqual(declared, {p.name: list(check_ops(p)) for p in PATCHES if check_ops(p)})
        self.assertEqual(list(ops()), [op for p in PATCHES for op in check_ops(p)])
        self.assertEqual(len(set(ops())), len(ops()))

    def test_readme_names_each_patchs_releases(self) -> None:
        readme = " ".join((ROOT / "README.md").read_text().split())
        for patch in PATCHES:
            self.assertIn(f"`{patch.name}` {span(patch.affected, '–')}", readme)

    def test_metadata_says_the_package_range(self) -> None:
        if sys.version_info < (3, 11):
            self.skipTest("tomllib is Python 3.11+")
        import tomllib

        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        self.assertIn(f"torch {protected_from()}", project["description"])
        for patch in PATCHES:
            issue = re.search(r"#\d+", patch.upstream)
            if issue and "safety net" not in patch.upstream:
                self.assertIn(issue.group(0), project["description"], patch.name)


if __name__ == "__main__":
    run_tests()
