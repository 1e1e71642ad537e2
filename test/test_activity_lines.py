"""Every activity kind of every patch, as ``status``, ``report``, logs and trace artifacts show it:
each line read from a detail its patch's real code recorded, naming the template (or kernel, or
selection) it acted on and the op Inductor was lowering, never a placeholder (the CUTLASS
collision read ``'template': 'Placeholder.KERNEL_NAME'`` on an H200, for ``mm(x, x)`` then
``mm(a, b)``).

What makes a patch record each kind is its test folder's ``acts.py`` (``ACTS``: kind -> a
function there), run in a fresh process each (a fresh Inductor and a fresh activity); a patch
without one, or a kind without an act, fails here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

from inductor_fix.patches import PATCHES

HERE = Path(__file__).resolve().parent
#: What a placeholder or an object's repr looks like in a line.
PLACEHOLDER = re.compile(r"Placeholder\.|object at 0x|<[\w.]+( object)?>|\bNone\b|(^|\W)\?(\W|$)")
#: Runs one act of a patch's acts.py; prints what the patch recorded, and each detail's line.
ACT = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import inductor_fix, acts
from inductor_fix.patches import by_name
skipped = None
try:
    getattr(acts, sys.argv[3])()
except Exception as error:
    if type(error).__name__ != "SkipTest":
        raise
    skipped = str(error)
activity = by_name(sys.argv[4]).activity
snapshot = activity.snapshot()
print("ACTIVITY " + json.dumps({**snapshot, "lines": [activity.line(d) for d in snapshot["details"]],
                                "skipped": skipped}))
"""


def _acts(patch):
    """``patch``'s ``ACTS``, read from ``test/<folder>/acts.py`` (None: it has none)."""
    import importlib.util

    path = HERE / patch.folder / "acts.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"acts_of_{patch.folder}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path[:0] = [str(HERE), str(path.parent)]
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.path[:2]
    return module.ACTS


def _run(patch, function: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
    result = subprocess.run([sys.executable, "-c", ACT, str(HERE), str(HERE / patch.folder), function, patch.name],
                            capture_output=True, text=True, timeout=900, env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("ACTIVITY ")]
    assert result.returncode == 0 and lines, f"{patch.name}'s act {function} failed:\n{result.stderr[-3000:]}"
    return json.loads(lines[-1][len("ACTIVITY "):])


class TestEveryKindReads(unittest.TestCase):
    def test_every_kind_of_every_patch(self) -> None:
        import concurrent.futures

        every = {patch.name: _acts(patch) for patch in PATCHES}
        # Every act of every patch, each in a process of its own, as many at once as there are CPUs.
        wanted = [(patch, function.__name__) for patch in PATCHES for function in dict.fromkeys(
            (every[patch.name] or {}).values())]
        with concurrent.futures.ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
            done = dict(zip(((p.name, f) for p, f in wanted), pool.map(lambda job: _run(*job), wanted)))
        for patch in PATCHES:
            acts = every[patch.name]
            with self.subTest(patch=patch.name):
                self.assertIsNotNone(acts, f"test/{patch.folder}/acts.py is missing: what makes {patch.name} act?")
                self.assertEqual(set(acts), set(patch.activity.kinds), "each kind has its act, and only those")
            if acts is None:
                continue
            runs = {function.__name__: done[patch.name, function.__name__] for function in acts.values()}
            for kind, function in acts.items():
                activity = runs[function.__name__]
                with self.subTest(patch=patch.name, kind=kind):
                    if activity["skipped"]:
                        self.skipTest(activity["skipped"])
                    self.assertGreater(activity["counts"].get(kind, 0), 0, f"{function.__name__} made no {kind}")
                    read = [(d, line) for d, line in zip(activity["details"], activity["lines"]) if d["kind"] == kind]
                    for detail, line in read:
                        self.check(detail, line)

    def check(self, detail: dict, line: str) -> None:
        self.assertIsInstance(detail.get("op"), str, f"{detail}: no op")
        self.assertTrue(line.endswith(f"(op {detail['op']})"), line)
        named = [detail[key] for key in ("template", "kernel", "selection") if key in detail]
        self.assertTrue(named, f"{detail}: names no template, kernel or selection")
        for value in named:
            self.assertRegex(value, r"^[A-Za-z_][\w.]*$", detail)
            self.assertIn(value, line)
        self.assertIsNone(PLACEHOLDER.search(line), line)
        self.assertNotEqual(line, detail["kind"], f"{detail}: its kind could not read it")

    def test_a_placeholder_is_caught(self) -> None:
        # Negative control: the line the H200 showed, and a detail recorded outside any lowering.
        with self.assertRaises(AssertionError):
            self.check({"kind": "k", "template": "Placeholder.KERNEL_NAME", "op": "aten.mm"},
                       "kept Placeholder.KERNEL_NAME apart (op aten.mm)")
        with self.assertRaises(AssertionError):
            self.check({"kind": "k", "template": "a_template"}, "kept a_template apart")


if __name__ == "__main__":
    unittest.main()
