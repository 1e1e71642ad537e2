"""Public API and gating: apply / remove / status / context managers, each decision asserted."""

from __future__ import annotations

import functools
import sys
import threading
import types
import warnings
from unittest import mock

from helpers import TORCH_RELEASE, run_python

import inductor_fix
import torch
import torch._inductor.select_algorithm as select_algorithm
from inductor_fix import State
from inductor_fix._fingerprints import RECORDED
from inductor_fix._patches import TARGETS, function_of, split_target
from inductor_fix._registry import MARKER
from torch._inductor.test_case import TestCase, run_tests

CACHE = select_algorithm.GeneratedCodeCache
TEMPLATE = select_algorithm.TritonTemplate
SELECTOR = select_algorithm.AlgorithmSelectorCache
#: (class, attribute) of every patch target, from the patch table.
WRAPPED = tuple((getattr(select_algorithm, owner), name) for owner, name in map(split_target, TARGETS))


def _originals() -> list[object]:
    with inductor_fix.removed():
        return [owner.__dict__[name] for owner, name in WRAPPED]


class TestApplyRemove(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.originals = _originals()

    def tearDown(self) -> None:
        inductor_fix.apply()
        super().tearDown()

    def test_apply_wraps_each_target_once(self) -> None:
        inductor_fix.apply()
        inductor_fix.apply()
        for (owner, name), original in zip(WRAPPED, self.originals):
            wrapper = owner.__dict__[name]
            self.assertIsNot(wrapper, original)
            self.assertIs(type(wrapper), type(original), f"{owner.__name__}.{name}: classmethod kept")
            inner = function_of(wrapper).__wrapped__
            self.assertIs(inner, function_of(original), f"{owner.__name__}.{name} wrapped twice")
            self.assertTrue(getattr(wrapper, MARKER))
            self.assertTrue(inductor_fix.is_patched(f"{owner.__name__}.{name}"))
            self.assertIs(inductor_fix.original(f"{owner.__name__}.{name}"), original)

    def test_remove_restores_exact_originals(self) -> None:
        inductor_fix.apply()
        status = inductor_fix.remove()
        self.assertEqual(status.state, State.REMOVED)
        self.assertIs(status.protected, False)
        for (owner, name), original in zip(WRAPPED, self.originals):
            self.assertIs(owner.__dict__[name], original)
            self.assertFalse(inductor_fix.is_patched(f"{owner.__name__}.{name}"))
            with self.assertRaises(KeyError):
                inductor_fix.original(f"{owner.__name__}.{name}")
        self.assertEqual(inductor_fix.remove(), status)  # idempotent

    def test_status_describes_applied_fix(self) -> None:
        status = inductor_fix.apply()
        self.assertEqual(status.state, State.APPLIED)
        self.assertEqual(status.torch_version, torch.__version__)
        self.assertTrue(status.triton_version)
        self.assertEqual([p.name for p in status.patches], ["cache-key", "arity-guard", "benchmark-realign"])
        self.assertEqual(
            status.patch("cache-key").target, "torch._inductor.select_algorithm.GeneratedCodeCache.make_key"
        )
        self.assertIn("aliasing pattern", status.patch("cache-key").reason)
        self.assertIs(status.protected, True)
        self.assertEqual(status.to_dict()["state"], "applied")

    def test_context_managers_restore_previous_state(self) -> None:
        inductor_fix.apply()
        with inductor_fix.removed() as inside:
            self.assertEqual(inside.state, State.REMOVED)
            self.assertIs(CACHE.__dict__["make_key"], self.originals[0])
            with inductor_fix.applied() as nested:
                self.assertEqual(nested.state, State.APPLIED)
            self.assertIs(CACHE.__dict__["make_key"], self.originals[0])
        self.assertEqual(inductor_fix.status().state, State.APPLIED)

    def test_concurrent_apply_wraps_once(self) -> None:
        inductor_fix.remove()
        barrier = threading.Barrier(16)

        def apply() -> None:
            barrier.wait()
            inductor_fix.apply()

        threads = [threading.Thread(target=apply) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for (owner, name), original in zip(WRAPPED, self.originals):
            self.assertIs(function_of(owner.__dict__[name]).__wrapped__, function_of(original))

    def test_many_cycles_leave_originals(self) -> None:
        for _ in range(1000):
            inductor_fix.apply()
            inductor_fix.remove()
        for (owner, name), original in zip(WRAPPED, self.originals):
            self.assertIs(owner.__dict__[name], original)


class TestGating(TestCase):
    """Each way the package decides not to patch, asserted with its reason."""

    def setUp(self) -> None:
        super().setUp()
        inductor_fix.remove()
        self.make_key = CACHE.__dict__["make_key"]

    def tearDown(self) -> None:
        CACHE.make_key = self.make_key
        inductor_fix.apply()
        super().tearDown()

    def test_disabled_by_environment(self) -> None:
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": "1"}):
            status = inductor_fix.apply()
        self.assertEqual(status.state, State.DISABLED)
        self.assertIs(status.protected, False)
        self.assertEqual({p.state for p in status.patches}, {State.DISABLED})
        self.assertIs(CACHE.__dict__["make_key"], self.make_key)

    def test_one_patch_disabled_by_name(self) -> None:
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": " arity-guard "}):
            status = inductor_fix.apply()
        self.assertEqual({p.name: p.state for p in status.patches},
                         {"cache-key": State.APPLIED, "arity-guard": State.DISABLED,
                          "benchmark-realign": State.APPLIED})
        self.assertEqual((status.state, status.protected), (State.DISABLED, False))
        self.assertIn("arity-guard disabled", status.reason)
        self.assertFalse(inductor_fix.is_patched("TritonTemplate.generate"))
        self.assertTrue(inductor_fix.is_patched("GeneratedCodeCache.make_key"))

    def test_unknown_patch_name_changes_nothing(self) -> None:
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": "arity_guard"}):
            with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "unknown patch name.*arity_guard"):
                status = inductor_fix.apply()
        self.assertEqual({p.state for p in status.patches}, {State.APPLIED})

    def test_not_needed_when_key_already_separates_aliasing(self) -> None:
        """Decided by probing make_key's behaviour, whatever the version string says."""
        original = self.make_key

        @functools.wraps(original)
        def make_key_keyed_by_identity(self, input_nodes, *args, **kwargs):
            key = original(self, input_nodes, *args, **kwargs)
            return None if key is None else key + repr([id(n) for n in input_nodes])

        CACHE.make_key = make_key_keyed_by_identity
        with warnings.catch_warnings():
            warnings.simplefilter("error", inductor_fix.InductorFixWarning)
            status = inductor_fix.apply()
        self.assertEqual(status.patch("cache-key").state, State.NOT_NEEDED)
        self.assertIn("already keys the aliasing pattern", status.patch("cache-key").reason)
        self.assertEqual((status.state, status.protected), (State.APPLIED, True))  # the others still apply
        self.assertIs(CACHE.__dict__["make_key"], make_key_keyed_by_identity)

    def test_not_needed_without_codegen_cache(self) -> None:
        """torch <= 2.7 has no GeneratedCodeCache: nothing to fix, nothing patched."""
        stand_in = types.ModuleType(select_algorithm.__name__)
        stand_in.TritonTemplate = TEMPLATE
        stand_in.TritonTemplateCaller = select_algorithm.TritonTemplateCaller
        stand_in.AlgorithmSelectorCache = SELECTOR
        with mock.patch.dict(sys.modules, {select_algorithm.__name__: stand_in}):
            status = inductor_fix.apply()
            inductor_fix.remove()
        self.assertEqual({status.patch(n).state for n in ("cache-key", "arity-guard")}, {State.NOT_NEEDED})
        # Realignment needs no codegen cache: it applies wherever its target is as recognised.
        self.assertEqual(status.patch("benchmark-realign").state, State.APPLIED)
        self.assertIn("no Triton template codegen cache", status.patch("cache-key").reason)
        self.assertIs(TEMPLATE.__dict__["generate"], _originals()[1])

    def test_unsupported_signature_warns_once(self) -> None:
        def make_key(self, nodes, num_stages, num_warps):
            return "key"

        CACHE.make_key = make_key
        with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "no 'input_nodes' parameter"):
            status = inductor_fix.apply()
        self.assertEqual(status.state, State.UNSUPPORTED)
        self.assertIs(CACHE.__dict__["make_key"], make_key)
        inductor_fix.remove()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            inductor_fix.apply()
        self.assertEqual([w for w in caught if issubclass(w.category, inductor_fix.InductorFixWarning)], [])

    def test_warnings_as_errors_never_raise(self) -> None:
        """-W error must not turn the "not applied" warning into an exception in torch's import."""

        def make_key(self, input_nodes, werror_probe_parameter):
            return "key"

        CACHE.make_key = make_key
        with warnings.catch_warnings(), self.assertLogs("inductor_fix", "WARNING") as logs:
            warnings.simplefilter("error")
            status = inductor_fix.apply()
        self.assertEqual(status.state, State.UNSUPPORTED)
        self.assertIn("werror_probe_parameter", "\n".join(logs.output))

    def test_unsupported_when_source_differs_from_release(self) -> None:
        """A synthetic change to make_key's source on a recorded release is not patched."""
        if str(TORCH_RELEASE) not in RECORDED:
            self.skipTest(f"no fingerprints recorded for torch {TORCH_RELEASE}")
        import inspect
        import textwrap

        source = textwrap.dedent(inspect.getsource(self.make_key))
        changed = source.replace("def make_key(", "def make_key(  # synthetic change\n", 1)
        changed = changed.replace('"num_stages": num_stages,', '"num_stages": num_stages + 0,', 1)
        self.assertNotEqual(changed, source)
        namespace = dict(vars(select_algorithm))
        exec(compile(changed, select_algorithm.__file__, "exec"), namespace)
        CACHE.make_key = namespace["make_key"]
        with mock.patch("inspect.getsource", return_value=changed):
            with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "differs from torch .* released source"):
                status = inductor_fix.apply()
        self.assertEqual(status.state, State.UNSUPPORTED)
        self.assertIn("fingerprint", status.reason)
        self.assertIs(CACHE.__dict__["make_key"], namespace["make_key"])


class TestDisabledProcess(TestCase):
    def test_reload_of_select_algorithm_is_patched_again(self) -> None:
        result = run_python(
            """
            import importlib, inductor_fix, torch._inductor.select_algorithm as sa
            sa = importlib.reload(sa)
            print(inductor_fix.status().state, hasattr(sa.GeneratedCodeCache.make_key, "__wrapped__"))
            """
        )
        self.assertEqual(result.stdout.split(), ["applied", "True"], result.stderr[-2000:])

    def test_remove_after_reload_restores_old_and_new_classes(self) -> None:
        result = run_python(
            """
            import importlib, inductor_fix, torch._inductor.select_algorithm as sa
            old = sa.GeneratedCodeCache
            sa = importlib.reload(sa)
            inductor_fix.remove()
            print(hasattr(old.__dict__["make_key"], "__wrapped__"),
                  hasattr(sa.GeneratedCodeCache.__dict__["make_key"], "__wrapped__"))
            """
        )
        self.assertEqual(result.stdout.split(), ["False", "False"], result.stderr[-2000:])

    def test_environment_variable_turns_import_off(self) -> None:
        result = run_python(
            """
            import inductor_fix, torch._inductor.select_algorithm as sa
            print(inductor_fix.status().state, hasattr(sa.GeneratedCodeCache.make_key, "__wrapped__"))
            """,
            env={"INDUCTOR_FIX_DISABLE": "1"},
        )
        self.assertEqual(result.stdout.split(), ["disabled", "False"], result.stderr)


if __name__ == "__main__":
    run_tests()
