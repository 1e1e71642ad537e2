"""autotune-sharing: a later aliasing pattern's choices cost no autotuning.

Where the codegen cache is keyed by aliasing (stock 2.15.0; 2.9-2.14 with cache-key) a second
pattern gets code of its own; without sharing its choices miss Inductor's autotune cache and are
precompiled and benchmarked again (the cost stock 2.15.0 pays, and cache-key's up to 1.37x
stock's compile on a real optimizer). With sharing they answer to their family's first code in
that cache, so the second compile of a sequence benchmarks nothing; never across layouts or
configs. Under the CPU harness with the autotune cache on, as by default.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from typing import Any, Iterator
from unittest import mock

import pytest
import torch
from helpers import fresh_cache, not_applied_reason

import inductor_fix
from inductor_fix import State
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.operations import operation as op
from inductor_fix.check.workloads import Op, run_compiles
from inductor_fix.patches.autotune_sharing import PATCH, fix
from torch._inductor import select_algorithm
from torch._inductor.codecache import PersistentCache
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

#: The CPU harness anywhere; the GPU tier (tools/gpu_tier) runs it too, beside the GPU classes: the
#: failed-config rule it holds was found on an H200.
pytestmark = pytest.mark.device

ORDERS = {"alias_first": (True, False), "distinct_first": (False, True)}


def _skip_where_nothing_is_shared(test: TestCase) -> None:
    """Where this process's codegen-cache key does not separate aliasing (cache-key off or
    retired on 2.9-2.14) a later pattern replays the first's code: nothing to share."""
    cache = select_algorithm.GeneratedCodeCache
    if not fix.keys_separate_aliasing(cache.__dict__["make_key"], select_algorithm):
        test.skipTest(f"the codegen-cache key of this process (torch {torch.__version__}) does not separate "
                      "aliasing patterns: a later pattern replays the first's code, nothing is autotuned twice")


@contextlib.contextmanager
def selections() -> Iterator[list[dict[str, Any]]]:
    """Each autotuning selection: its template choices' hash keys and how many were benchmarked."""
    seen: list[dict[str, Any]] = []
    lookup = PersistentCache.lookup

    def watched(self: Any, choices: Any, name: Any, inputs: Any, benchmark: Any, *args: Any, **kwargs: Any):
        if benchmark is None:
            return lookup(self, choices, name, inputs, benchmark, *args, **kwargs)
        templates = [c for c in choices if isinstance(c, select_algorithm.TritonTemplateCaller)]
        record = {"keys": [c.hash_key() for c in templates], "kernel_keys": [c.kernel_hash_key() for c in templates],
                  "benchmarked": 0, "inputs": inputs}
        seen.append(record)
        inner = benchmark

        def counted(chosen: Any) -> Any:
            record["benchmarked"] += len(chosen)
            return inner(chosen)

        return lookup(self, choices, name, inputs, counted, *args, **kwargs)

    with mock.patch.object(PersistentCache, "lookup", watched):
        yield seen


@contextlib.contextmanager
def failing_first_config() -> Iterator[list[Any]]:
    """The first template choice generated fails as a precompile failure leaves it (``failed``;
    the harness compiles nothing, so the test marks it where Inductor would). Held here, as
    Inductor's precompile cache holds it on a GPU."""
    failed: list[Any] = []
    generate = select_algorithm.TritonTemplate.generate

    def failing(self: Any, *args: Any, **kwargs: Any) -> Any:
        choice = generate(self, *args, **kwargs)
        if not failed and choice is not None:
            failed.append(choice)
            choice.failed = True
        return choice

    with mock.patch.object(select_algorithm.TritonTemplate, "generate", failing):
        yield failed


def _skip_where_a_failed_choice_is_timed(test: TestCase) -> None:
    """Where Inductor has no ``ChoiceCaller.mark_failed`` (2.9.1; 2.11.0 has it) a choice that fails
    to precompile is not pruned before the autotune cache's lookup: it is looked up, timed and cached
    with the rest, so a later pattern's choice hits that cache with or without the failed-config rule."""
    from torch._inductor import ir

    if not callable(getattr(ir.ChoiceCaller, "mark_failed", None)):
        test.skipTest(f"torch {torch.__version__}'s Inductor has no ChoiceCaller.mark_failed: a choice that "
                      "fails to precompile is never pruned untimed, its timing is cached with the rest, so nothing "
                      "is benchmarked again")


class _Forgetful(dict):
    """A family record that keeps nothing (the fix without its failed-config rule)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def compiles(template_op: Op, aliasing: tuple[bool, ...]) -> list[dict[str, Any]]:
    with fresh_cache(), triton_cpu_harness(autotune_local_cache=True) as oracle, selections() as seen:
        steps = run_compiles(template_op, aliasing, "cpu", compare=False)
    assert [s.error for s in steps] == [None] * len(aliasing), steps
    assert not oracle.mismatches, oracle.mismatches
    return seen


@instantiate_parametrized_tests
class TestSharedAutotuning(TestCase):
    def setUp(self) -> None:
        super().setUp()
        reason = not_applied_reason(PATCH, "TritonTemplateCaller.hash_key")  # what the package decides here
        if reason:
            self.skipTest(reason)
        _skip_where_nothing_is_shared(self)

    @parametrize("order", list(ORDERS))
    @parametrize("name", ["bmm", "addmm"])
    def test_a_later_pattern_benchmarks_nothing(self, name: str, order: str) -> None:
        first, second = compiles(op(name), ORDERS[order])
        self.assertGreater(first["benchmarked"], 0)
        self.assertEqual(second["benchmarked"], 0)
        self.assertEqual(second["keys"], first["keys"])  # one family each: the first code's keys
        # ... but each code compiles as itself: precompilation is keyed by kernel_hash_key.
        self.assertEqual(set(second["kernel_keys"]) & set(first["kernel_keys"]), set())
        self.assertGreater(inductor_fix.activity()[PATCH.name]["counts"].get("autotuning_shared", 0), 0)

    @parametrize("order", list(ORDERS))
    def test_negative_control_without_sharing_a_later_pattern_benchmarks_again(self, order: str) -> None:
        # The codes stay apart (upstream's key from 2.15.0, cache-key's before), so without this
        # patch the later pattern's choices have identities of their own and miss the autotune cache.
        with inductor_fix.removed(PATCH.name):
            first, second = compiles(op("bmm"), ORDERS[order])
        self.assertEqual(second["benchmarked"], first["benchmarked"])
        self.assertNotEqual(second["keys"], first["keys"])

    def test_negative_control_sharing_the_kernel_key_too_would_reuse_the_other_codes_precompile(self) -> None:
        # What kernel_hash_key's override prevents: inherited, it is the shared key, so the
        # later pattern's precompile key would be its family's (a stale precompile step).
        inherited = inductor_fix.original("TritonTemplateCaller.kernel_hash_key")
        with mock.patch.object(select_algorithm.TritonTemplateCaller, "kernel_hash_key", inherited):
            first, second = compiles(op("bmm"), (True, False))
        self.assertEqual(second["kernel_keys"], first["kernel_keys"])

    def test_a_config_that_failed_to_compile_for_the_first_pattern_is_not_offered_again(self) -> None:
        _skip_where_a_failed_choice_is_timed(self)
        # On an H200 a bmm config needs more shared memory than the device has: its first-pattern
        # choice fails to precompile and Inductor prunes it untimed. Offered again for the later
        # pattern, it missed the autotune cache and every choice was benchmarked again.
        with failing_first_config() as failed:
            first, second = compiles(op("bmm"), (True, False))
        self.assertEqual(len(failed), 1)
        self.assertEqual(second["benchmarked"], 0)
        self.assertEqual(second["keys"], first["keys"])  # the failed config: in neither selection

    def test_negative_control_offered_again_a_failed_config_makes_the_later_pattern_benchmark_again(self) -> None:
        _skip_where_a_failed_choice_is_timed(self)
        with failing_first_config(), mock.patch.object(fix, "_first_choice", _Forgetful()):
            first, second = compiles(op("bmm"), (True, False))
        self.assertGreater(second["benchmarked"], 0)
        self.assertEqual(len(second["keys"]), len(first["keys"]) + 1)

    def test_benchmarks_no_more_than_stock_and_less_where_stock_keys_aliasing(self) -> None:
        # The goal: patched benchmarks no more choices than stock where stock survives (up to
        # 2.14 it does here: with the autotune cache on, stock's replayed choices hit it and
        # never launch); where stock keys aliasing itself (2.15.0) it benchmarks the later
        # pattern again, and patched does not: the negative control against stock.
        patched = compiles(op("bmm"), (True, False))
        with inductor_fix.removed():  # every patch: the guard would regenerate stock's replayed code
            stock = compiles(op("bmm"), (True, False))
        self.assertEqual(patched[0]["benchmarked"], stock[0]["benchmarked"])
        self.assertEqual(patched[1]["benchmarked"], 0)
        stock_pays = PATCH.is_affected(torch.__version__)
        self.assertEqual(stock[1]["benchmarked"], stock[0]["benchmarked"] if stock_pays else 0)

    def test_never_shared_across_layouts(self) -> None:
        # bmm(x, x) then bmm(a, b) with b transposed: another family (the layout), so nothing is shared.
        transposed = Op("bmm_layouts", 2, (4, 64, 64), lambda a, b: torch.bmm(a, b.transpose(1, 2).contiguous().mT))
        plain, other = compiles(op("bmm"), (True,))[0], compiles(transposed, (False,))[0]
        self.assertEqual(set(plain["keys"]) & set(other["keys"]), set())

    def test_never_shared_across_configs(self) -> None:
        (selection,) = compiles(op("bmm"), (True,))
        self.assertEqual(len(set(selection["keys"])), len(selection["keys"]))


class TestDecide(TestCase):
    """Decided by calling the live ``make_key``, never by version."""

    def tearDown(self) -> None:
        inductor_fix.apply()
        super().tearDown()

    def test_applied_on_its_own(self) -> None:
        # Alone on the release's own key (every other patch off), as with them: it decides by
        # its family probe only, so its state never depends on another patch's.
        with inductor_fix.removed(), inductor_fix.applied(PATCH.name):
            alone = inductor_fix.status().patch(PATCH.name)
        self.assertEqual(alone.state, State.APPLIED, alone.reason)
        self.assertEqual(inductor_fix.status().patch(PATCH.name).state, State.APPLIED)

    def test_the_family_key_is_one_for_every_pattern_and_layouts_apart(self) -> None:
        cache = select_algorithm.GeneratedCodeCache
        make_key = cache.__dict__["make_key"]
        index = list(inspect.signature(make_key).parameters)[1:].index("input_nodes")
        family = fix.family_key(make_key, index)
        if not fix.keys_separate_aliasing(make_key, select_algorithm):  # cache-key retired on 2.9-2.14
            self.skipTest(f"this process's make_key does not key aliasing patterns apart on torch {torch.__version__}")
        self.assertFalse(fix.keys_separate_aliasing(family, select_algorithm))

    def test_a_key_the_renaming_cannot_reach_is_unsupported(self) -> None:
        # A make_key that keys inputs by identity, not by buffer name: the family key (each input
        # under a name of its own) still separates (x, x) and (x, y), so no family can be found.
        cache = select_algorithm.GeneratedCodeCache
        original = cache.__dict__["make_key"]

        held: list[Any] = []  # every node seen stays alive: its id is never another's

        def make_key_by_identity(self: Any, input_nodes: Any, *args: Any, **kwargs: Any) -> Any:
            held.extend(input_nodes)
            key = original(self, input_nodes, *args, **kwargs)
            return None if key is None else f"{key} {[id(n) for n in input_nodes]}"

        make_key_by_identity.__signature__ = inspect.signature(original)  # its own function: nothing to unwrap
        inductor_fix.remove()
        with mock.patch.object(cache, "make_key", make_key_by_identity), \
                mock.patch.object(inductor_fix._warnings, "_seen", set()), warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            status = inductor_fix.apply().patch(PATCH.name)
            inductor_fix.remove()
        self.assertEqual(status.state, State.UNSUPPORTED)
        self.assertIn("cannot be found", status.reason)

    def test_off_it_leaves_the_process_protected(self) -> None:
        inductor_fix.remove()
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": PATCH.name}):
            status = inductor_fix.apply()
        self.assertEqual(status.patch(PATCH.name).state, State.DISABLED)
        self.assertIs(status.protected, True)
        self.assertEqual(status.state, State.APPLIED)
        inductor_fix.remove()


class TestJobReport(TestCase):
    """What it saved is a cost, never a reason the fix was needed; off, it blinds nothing."""

    @staticmethod
    def line(sharing: dict[str, Any]) -> dict[str, Any]:
        from inductor_fix.patches import PATCHES
        from inductor_fix.report import FORMAT

        patches = [{"name": p.name, "state": "applied", "counts": {}, "details": []} for p in PATCHES]
        for patch in patches:
            if patch["name"] == PATCH.name:
                patch.update(sharing)
        return {"format": FORMAT, "pid": 1, "benchmarks": 3, "torch": torch.__version__, "patches": patches}

    def test_what_it_shared_leaves_needed_no_and_says_the_cost(self) -> None:
        from inductor_fix.report import format_summary, summarize

        detail = {"kind": "autotuning_shared", "count": 19, "template": "bmm"}
        summary = summarize([self.line({"counts": {"autotuning_shared": 19}, "details": [detail]})])
        self.assertIs(summary["needed"], False)
        self.assertIn(f"{PATCH.name} (autotuning_shared 19)", summary["advice"])
        self.assertIn("saved cost: autotuning_shared 19", format_summary(summary))

    def test_off_it_leaves_needed_no_standing(self) -> None:
        from inductor_fix.report import summarize

        for state in ("disabled", "removed", "unsupported"):
            self.assertIs(summarize([self.line({"state": state})])["needed"], False, state)


if __name__ == "__main__":
    run_tests()
