"""How the cache-key patch decides: by calling ``make_key``, never by version."""

from __future__ import annotations

import functools
import warnings
from unittest import mock

import inductor_fix
import torch
import torch._inductor.select_algorithm as select_algorithm
from inductor_fix import State
from inductor_fix.patches.cache_key import PATCH
from inductor_fix.patches.cache_key.fix import aliasing_pattern
from torch._inductor.test_case import TestCase, run_tests

CACHE = select_algorithm.GeneratedCodeCache


def _wrappers_down_to(make_key) -> list[str]:
    """This patch's wrappers of the installed ``make_key`` (another patch may wrap the slot too:
    its wrappers are walked down to ``make_key``)."""
    wrappers, slot = [], CACHE.__dict__["make_key"]
    while slot is not make_key:
        wrappers.append(slot.__qualname__)
        slot = slot.__wrapped__
    return [name for name in wrappers if name.startswith("aliasing_aware_make_key")]


class TestDecide(TestCase):
    def setUp(self) -> None:
        super().setUp()
        inductor_fix.remove()
        self.make_key = CACHE.__dict__["make_key"]
        # Each case is a fresh process's first sight of its message.
        seen = mock.patch.object(inductor_fix._warnings, "_seen", set())  # enterContext: Python 3.11+
        seen.start()
        self.addCleanup(seen.stop)

    def tearDown(self) -> None:
        inductor_fix.remove()
        CACHE.make_key = self.make_key
        inductor_fix.apply()
        super().tearDown()

    def test_not_needed_when_key_already_separates_aliasing(self) -> None:
        """2.15.0's make_key keys the aliasing pattern itself: the probe sees it, whatever the version."""
        original = self.make_key

        @functools.wraps(original)
        def make_key_keyed_by_aliasing(self, input_nodes, *args, **kwargs):
            # As 2.15.0's keys it (by the inputs' buffer names), so autotune-sharing still finds families.
            key = original(self, input_nodes, *args, **kwargs)
            return None if key is None else f"{key} {aliasing_pattern(input_nodes)}"

        CACHE.make_key = make_key_keyed_by_aliasing
        with warnings.catch_warnings():
            warnings.simplefilter("error", inductor_fix.InductorFixWarning)
            status = inductor_fix.apply()
        self.assertEqual(status.patch(PATCH.name).state, State.NOT_NEEDED)
        self.assertIn("already keys the aliasing pattern", status.patch(PATCH.name).reason)
        self.assertEqual((status.state, status.protected), (State.APPLIED, True))  # the others still apply
        self.assertEqual(_wrappers_down_to(make_key_keyed_by_aliasing), [])

    def test_disabled_where_the_key_separates_aliasing_the_process_stays_protected(self) -> None:
        """A new user on 2.15.0 (whose make_key keys aliasing) set ``INDUCTOR_FIX_DISABLE=`` this
        patch: status said disabled, not protected. Its crash is not in such a torch: not needed,
        protected; on this torch's own make_key it is disabled, unprotected (the control)."""
        original = self.make_key

        @functools.wraps(original)
        def make_key_keyed_by_aliasing(self, input_nodes, *args, **kwargs):
            # As 2.15.0's keys it (by the inputs' buffer names), so autotune-sharing still finds families.
            key = original(self, input_nodes, *args, **kwargs)
            return None if key is None else f"{key} {aliasing_pattern(input_nodes)}"

        crash_here = PATCH.is_affected(torch.__version__)  # this torch's own make_key: the control
        for make_key, crash in ((make_key_keyed_by_aliasing, False), (original, crash_here)):
            inductor_fix.remove()
            CACHE.make_key = make_key
            with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": PATCH.name}):
                status = inductor_fix.apply()
            with self.subTest(make_key=make_key.__name__):
                self.assertEqual(status.patch(PATCH.name).state, State.DISABLED if crash else State.NOT_NEEDED)
                self.assertEqual(status.protected, not crash)
                self.assertEqual(_wrappers_down_to(make_key), [])  # probed, never wrapped
        self.assertIn("INDUCTOR_FIX_DISABLE", status.patch(PATCH.name).reason)

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

    def test_unknown_required_parameter_is_unsupported(self) -> None:
        def make_key(self, input_nodes, prologue_nodes, num_stages):
            return "key"

        CACHE.make_key = make_key
        with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "required parameters .*: prologue_nodes"):
            status = inductor_fix.apply()
        self.assertEqual(status.patch(PATCH.name).state, State.UNSUPPORTED)

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

    def test_corrupted_make_key_is_not_patched(self) -> None:
        """make_key that raises on the probe: unsupported with the error, original left in place."""

        def make_key(self, input_nodes, num_stages, num_warps):
            raise RuntimeError("corrupted")

        CACHE.make_key = make_key
        with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "RuntimeError: corrupted"):
            status = inductor_fix.apply()
        self.assertEqual(status.patch(PATCH.name).state, State.UNSUPPORTED)
        self.assertIs(CACHE.__dict__["make_key"], make_key)


class TestAliasingPattern(TestCase):
    def test_restricted_growth_labels(self) -> None:
        from helpers import Node

        def pattern(names: str) -> tuple[int, ...]:
            return aliasing_pattern([Node(name) for name in names])

        self.assertEqual([pattern(n) for n in ("xx", "ab", "cbc", "abcab")],
                         [(0, 0), (0, 1), (0, 1, 0), (0, 1, 2, 0, 1)])


if __name__ == "__main__":
    run_tests()
