"""cutlass-cache-key on the CPU: the CUTLASS template's real ``make_key`` and ``generate`` of this
torch, driven with stand-in templates (no CUTLASS library, no GPU needed).

Negative controls: stock ``make_key`` gives a template of inputs ``(x, x)`` and one of ``(a, b)``,
equal layouts, one code-cache key (the replay that segfaulted on an H200), and stock
``generate`` leaves a benchmark request with one tensor per input slot; both pass patched.
The kernels themselves run in ``test_cutlass_gpu.py``.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
import unittest
import warnings
from unittest import mock

from helpers import Node
from hypothesis import given, settings
from hypothesis import strategies as st

import inductor_fix
import torch
from inductor_fix import State
from inductor_fix.check.child import ChildResult
from inductor_fix.check.runner import Case, _run_case_process, verdict
from inductor_fix.patches.aliasing import aliasing_pattern
from inductor_fix.patches.target_names import target_owner
from inductor_fix.patches.cutlass_cache_key import PATCH
from inductor_fix.patches.cutlass_cache_key.fix import MODULES, kernel_inputs_benchmark_request, keys_separate_aliasing
from torch._inductor.test_case import TestCase, run_tests

import torch._inductor.select_algorithm  # noqa: E402,F401  (loads the CUTLASS template's module, 2.9+)

#: This torch's CUTLASS template module and class holding the code cache (2.9+), or None.
LOADED = next(((m, c) for m, c in MODULES.items()
               if "code_cache" in vars(target_owner(f"{m}:{c}.make_key") or object)), None)
needs_code_cache = unittest.skipIf(LOADED is None, "this torch's CUTLASS template has no code cache (2.8 and older)")


def _template(names: list[str]) -> types.SimpleNamespace:
    """A CUTLASS template as ``make_key`` sees it: input nodes (buffer names only), no reorder, and
    the class's code cache."""
    module, name = LOADED
    return types.SimpleNamespace(input_nodes=[Node(n) for n in names], input_reorder=None, name="probe",
                                 get_runtime_arg_info=lambda: [],
                                 code_cache=getattr(importlib.import_module(module), name).code_cache)


def _key(names: list[str]):
    module, name = LOADED
    template = getattr(importlib.import_module(module), name)
    return template.make_key(_template(names), name="mm", input_key="equal layouts", layout_repr="out")


#: Input names whose aliasing patterns differ: 1-4 inputs, each one of three buffers.
NAMES = st.lists(st.sampled_from(["buf0", "buf1", "buf2"]), min_size=1, max_size=4)


@needs_code_cache
class TestCodeCacheKey(TestCase):
    def test_aliased_and_distinct_inputs_get_different_keys(self) -> None:
        with inductor_fix.applied(PATCH.name):
            self.assertNotEqual(_key(["x", "x"]), _key(["a", "b"]))
            self.assertEqual(_key(["x", "x"]), _key(["y", "y"]))  # equal patterns share entries
        with inductor_fix.removed(PATCH.name):
            self.assertEqual(_key(["x", "x"]), _key(["a", "b"]), "negative control: stock replays one for the other")

    @settings(max_examples=20)
    @given(NAMES, NAMES)
    def test_keys_equal_exactly_when_patterns_are(self, first: list[str], second: list[str]) -> None:
        if len(first) != len(second):  # equal layouts: as many inputs
            return
        with inductor_fix.applied(PATCH.name):
            self.assertEqual(_key(first) == _key(second), aliasing_pattern(list(map(Node, first)))
                             == aliasing_pattern(list(map(Node, second))))

    def test_stock_keys_ignore_aliasing(self) -> None:
        """The probe the patch decides by, on this torch's stock make_key (the negative control of
        the decision) and on the patched one."""
        module = sys.modules[LOADED[0]]
        with inductor_fix.removed(PATCH.name):
            self.assertFalse(keys_separate_aliasing(getattr(module, LOADED[1]).make_key, module))
        with inductor_fix.applied(PATCH.name):
            self.assertTrue(keys_separate_aliasing(getattr(module, LOADED[1]).make_key, module))

    def test_a_collision_is_recorded_where_stock_would_replay(self) -> None:
        module, name = LOADED
        template = getattr(importlib.import_module(module), name)
        with inductor_fix.applied(PATCH.name), mock.patch.dict(template.code_cache, clear=True):
            before = PATCH.activity.snapshot()["counts"].get("collisions_prevented", 0)
            aliased = _template(["x", "x"])
            template.code_cache[template.make_key(aliased, name="m", input_key="k", layout_repr="o")] = ("code", (), ())
            template.make_key(_template(["a", "b"]), name="m", input_key="k", layout_repr="o")
            self.assertEqual(PATCH.activity.snapshot()["counts"]["collisions_prevented"], before + 1)


@needs_code_cache
class TestBenchmarkRequest(TestCase):
    """``generate``'s benchmark request: one input meta per buffer, as the kernel takes them. The
    wrapper around a stand-in of stock ``generate`` (which renders CUTLASS code: GPU test)."""

    def _metas(self, names: list[str], fixed: bool) -> list[str]:
        caller = types.SimpleNamespace(bmreq=types.SimpleNamespace(
            kernel_name="cutlass_probe", input_tensor_meta=[types.SimpleNamespace(name=n) for n in names]))
        def generate(self: object) -> types.SimpleNamespace:
            return caller

        result = (kernel_inputs_benchmark_request(generate) if fixed else generate)(None)
        return [meta.name for meta in result.bmreq.input_tensor_meta]

    def test_one_meta_per_buffer(self) -> None:
        self.assertEqual(self._metas(["x", "x"], fixed=False), ["x", "x"], "negative control: stock, one per slot")
        self.assertEqual(self._metas(["x", "x"], fixed=True), ["x"])
        self.assertEqual(self._metas(["c", "a", "c", "b"], fixed=True), ["c", "a", "b"])
        self.assertEqual(self._metas(["a", "b"], fixed=True), ["a", "b"])

    def test_installed_on_this_torchs_template(self) -> None:
        module, name = LOADED
        with inductor_fix.applied(PATCH.name):
            generate = vars(getattr(sys.modules[module], name))["generate"]
            self.assertIs(inspect.unwrap(generate), inspect.unwrap(inductor_fix.original(f"{module}:{name}.generate")))
            self.assertTrue(inductor_fix.is_patched(f"{module}:{name}.generate"))


class TestDecide(TestCase):
    def setUp(self) -> None:
        super().setUp()
        seen = mock.patch.object(inductor_fix._warnings, "_seen", set())  # enterContext: Python 3.11+
        seen.start()
        self.addCleanup(seen.stop)

    def tearDown(self) -> None:
        inductor_fix.apply()
        super().tearDown()

    def _decide_on(self, template: type) -> tuple[State, str]:
        """The patch decided on a stand-in module holding ``template`` under this release's name."""
        module_name, name = LOADED or next(iter(MODULES.items()))
        stand_in = types.ModuleType(module_name)
        setattr(stand_in, name, template)
        from inductor_fix._lifecycle import Lifecycle

        lifecycle = Lifecycle([PATCH])
        with mock.patch.dict(sys.modules, {module_name: stand_in}), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            status = lifecycle.apply()
            lifecycle.remove()
        return status.patch(PATCH.name).state, status.patch(PATCH.name).reason

    def test_not_needed_without_a_code_cache(self) -> None:
        """2.7 and 2.8: the CUTLASS template has no code cache."""
        state, reason = self._decide_on(type("CUTLASSTemplate", (), {"generate": lambda self: None}))
        self.assertEqual(state, State.NOT_NEEDED)
        self.assertIn("no code cache", reason)

    def test_not_needed_where_make_key_keys_aliasing(self) -> None:
        def make_key(self, name, input_key, layout_repr):
            return f"{name} {input_key} {[n.get_name() for n in self.input_nodes]}"

        state, reason = self._decide_on(type("T", (), {"code_cache": {}, "make_key": make_key,
                                                       "generate": lambda self: None}))
        self.assertEqual(state, State.NOT_NEEDED)
        self.assertIn("already keys the aliasing pattern", reason)

    def test_unsupported_when_make_key_takes_more(self) -> None:
        def make_key(self, name, input_key, layout_repr, epilogue):
            return "key"

        state, reason = self._decide_on(type("T", (), {"code_cache": {}, "make_key": make_key,
                                                       "generate": lambda self: None}))
        self.assertEqual(state, State.UNSUPPORTED)
        self.assertIn("epilogue", reason)


@needs_code_cache
class TestStatusSettles(TestCase):
    def test_status_decides_the_patch_of_another_module(self) -> None:
        """``inductor-fix status`` imports every module a patch targets: the patch is decided, not
        left pending for a module that only loads when a compile asks for it."""
        import json
        import subprocess

        done = subprocess.run([sys.executable, "-m", "inductor_fix", "status", "--json"], capture_output=True,
                              text=True, timeout=300)
        states = {p["name"]: p["state"] for p in json.loads(done.stdout)["patches"]}
        self.assertEqual(states[PATCH.name], "applied", done.stdout + done.stderr)


class TestCrashInNativeCode(TestCase):
    """A case process a signal ends (a segfault through ctypes) is a crash, not a missing result:
    stock's is the bug shown, patched's fails check (exit 1)."""

    def _case(self, mode: str) -> Case:
        case = Case("cutlass_mm", "alias-first", mode, "cuda", affected=True)
        died = ChildResult(None, "process failed (killed by SIGSEGV): Fatal Python error: Segmentation fault",
                           False, 3.0, -11)
        with mock.patch("inductor_fix.check.runner.run_child", return_value=died):
            return _run_case_process(case, 60, None)

    def test_stock_segfault_is_the_expected_crash(self) -> None:
        stock, patched = self._case("stock"), self._case("patched")
        self.assertEqual((stock.outcome(), stock.failure), ("crashed (expected)", None))
        self.assertIn("killed by SIGSEGV", stock.error)
        self.assertEqual(patched.outcome(), "CRASHED")
        text, status = verdict([stock, patched])
        self.assertEqual(status, 1, text)


class TestStockCrashKnown(TestCase):
    """What CUTLASS's stock crash looks like is this patch's (``PATCH.crash``): ``report`` says a
    process that died of it died of the crash the package fixes, ``check`` counts a case so
    ended as the crash, and the GPU test's negative control reads the same pattern."""

    SEEN = ("RuntimeError: Error in function: cutlass_5f3b1c2a",  # the other order on the H200
            "the case process crashed: process failed (killed by SIGSEGV): Fatal Python error: Segmentation fault")

    def test_the_forms_seen_on_the_h200_are_the_patchs(self) -> None:
        from inductor_fix.patches import by_crash

        for text in self.SEEN:
            self.assertIs(by_crash(text), PATCH, text)
        self.assertIsNone(by_crash("RuntimeError: nvcc not found"))  # control: another error

    def test_the_report_names_it(self) -> None:
        from inductor_fix.patches import PATCHES
        from inductor_fix.report import summarize

        def died(error: str, state: str) -> dict:
            return {"format": 1, "pid": 7, "benchmarks": 0, "torch": torch.__version__,
                    "exit_error": {"error": f"BackendCompilerFailed: backend='inductor' raised: {error}",
                                   "in_compile": True, "raised_in": "torch/_inductor/codecache.py:1"},
                    "patches": [{"name": p.name, "state": state if p is PATCH else "applied"} for p in PATCHES]}

        advice = " ".join(summarize([died(self.SEEN[0], "disabled")])["advice"].split())
        self.assertIn(f"that is how the crash {PATCH.name} fixes ends", advice)
        self.assertIn(f"{PATCH.name} was disabled in that process: turn it on", advice)
        self.assertIn("please report it", summarize([died(self.SEEN[0], "applied")])["advice"])
        other = summarize([died("RuntimeError: nvcc not found", "disabled")])["advice"]  # the negative control
        self.assertNotIn(f"the crash {PATCH.name} fixes", other)
        self.assertIn("fix that error", other)

    def test_check_counts_it(self) -> None:
        for error, outcome in ((self.SEEN[0], "crashed (expected)"), (self.SEEN[1], "crashed (expected)"),
                               ("RuntimeError: nvcc not found", "failed (not the crash)")):
            case = Case("cutlass_mm", "alias-first", "stock", "cuda", error=error, affected=True)
            self.assertEqual(case.outcome(), outcome, error)


if __name__ == "__main__":
    run_tests()
