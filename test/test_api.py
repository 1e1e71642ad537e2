"""Public API and the lifecycle: apply / remove / status / context managers, each decision
asserted for every patch of the table, and undo that respects other libraries' wrappers.

The generic tests wrap and unwrap what the patches that apply on the running torch wrap there
(``helpers.decisions``, observed): a patch that is ``not-needed`` or ``unsupported`` here wraps
nothing, and :class:`TestDecisions` asserts that, with the reason its status gives."""

from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
import types
import unittest
import warnings
from unittest import mock

import wrapt
from helpers import TORCH_RELEASE, applying, decisions, run_python

import inductor_fix
import torch
import torch._inductor.select_algorithm as select_algorithm
from inductor_fix import State
from inductor_fix._lifecycle import LIFECYCLE
from inductor_fix._undo import MARKER
from inductor_fix.patches import PATCHES
from inductor_fix._members import function_of
from inductor_fix.patches.fingerprints import recorded as _recorded
from inductor_fix.patches.require import CODEGEN_CACHE_ADDED
from inductor_fix.patches.target_names import qualified_name, split_target, target_owner
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from torch._inductor.test_case import TestCase, run_tests

#: The patches that apply on this torch, and every target they wrap here (a patch may name the
#: module of each release, and one may apply on some releases and not on others).
APPLYING = applying()
TARGETS = tuple(dict.fromkeys(target for patch in APPLYING for target in decisions()[patch.name].wraps))
#: (class, attribute) of each of those targets, from the patch table.
WRAPPED = tuple((target_owner(target), split_target(target)[1]) for target in TARGETS)
#: (class, attribute) -> its target name, as the patches and the API name it.
TARGET_OF = dict(zip(WRAPPED, TARGETS))
#: The generic tests need one wrapped target; a torch where no patch applies has none to wrap.
needs_a_target = unittest.skipIf(not TARGETS, f"no patch of the table applies on torch {torch.__version__}: "
                                 "nothing is wrapped here")


def _layers(member: object) -> tuple[int, object]:
    """How many of this package's wrappers sit in a slot's ``__wrapped__`` chain, and the
    function at its end."""
    function, count = function_of(member), 0
    while hasattr(function, "__wrapped__"):
        count += getattr(function, MARKER, None) is not None
        function = function.__wrapped__
    return count, function


def _wrappers_of(owner: type, name: str) -> int:
    """How many patches of the table wrap ``owner.name`` on this torch."""
    return sum(TARGET_OF[owner, name] in decisions()[patch.name].wraps for patch in PATCHES)


def _wrapped_by(patch) -> tuple[str, ...]:
    """The targets ``patch`` wraps on this torch (none where it does not apply)."""
    return decisions()[patch.name].wraps


def _states(**changed) -> dict[str, str]:
    """Every patch -> the state it decides on this torch, but those named in ``changed``."""
    return {patch.name: changed.get(patch.name, decisions()[patch.name].state) for patch in PATCHES}


class _Inherited:
    def __repr__(self) -> str:
        return "INHERITED"


#: What a slot "holds" where the class only inherits the attribute: a patch may wrap one (it
#: gives the class a slot of its own, and remove() deletes it again).
INHERITED = _Inherited()


def _slot(owner: type, name: str) -> object:
    """What ``owner`` itself holds at ``name``: INHERITED where it holds nothing of its own."""
    return owner.__dict__.get(name, INHERITED)


def _stock(owner: type, name: str, original: object) -> object:
    """The stock object a slot's ``original`` stands for: itself, or what the class inherits."""
    if original is not INHERITED:
        return original
    return next(base.__dict__[name] for base in owner.__mro__[1:] if name in base.__dict__)


def _put(owner: type, name: str, original: object) -> None:
    """Put ``original`` back in the slot (where the class inherits it: delete its own)."""
    if original is not INHERITED:
        setattr(owner, name, original)
    elif name in owner.__dict__:
        delattr(owner, name)


def _originals() -> list[object]:
    with inductor_fix.removed():
        return [_slot(owner, name) for owner, name in WRAPPED]


def _markers(target: str) -> list[str]:
    """The patches whose wrappers sit in ``target``'s slot, read from the class: each object this
    package installs carries its patch's name (``MARKER``) and wraps what the slot held before
    (``__wrapped__``), down to Inductor's own function."""
    owner = target_owner(target)
    member = owner.__dict__.get(split_target(target)[1]) if owner is not None else None
    found = []
    for _ in range(32):  # a chain, never a cycle
        function = function_of(member)
        if function is None:
            break
        if isinstance(getattr(function, MARKER, None), str):
            found.append(getattr(function, MARKER))
        member = getattr(function, "__wrapped__", None)
    return found


def _needs_codegen_cache(patch) -> bool:
    """A bug that lives in the codegen cache starts no earlier than the cache does."""
    first = min(Version(spec.version) for spec in SpecifierSet(patch.affected) if spec.operator == ">=")
    return first >= Version(CODEGEN_CACHE_ADDED)


class TestDecisions(TestCase):
    """What each patch does on this torch is what its status says: applied, it wraps targets of
    its own; not needed or unsupported, it wraps nothing and says why. The patch table's ranges
    are checked against the behaviour probes: where it says a release has a patch's bug and the
    patch fits, the patch applies, and never says ``not-needed``."""

    def test_each_patch_wraps_what_its_status_says(self) -> None:
        """Status against the classes themselves (issue 52: it was compared with decisions(), read
        from status, and with the package's own undo stack): an applied patch's wrapper, marked
        with its name, sits in the slot of every target of the table whose class this torch has;
        a patch in any other state wraps none."""
        status = inductor_fix.apply()
        for patch in PATCHES:
            shown = status.patch(patch.name)
            present = {target for target in patch.targets if (owner := target_owner(target)) is not None
                       and hasattr(owner, split_target(target)[1])}
            seen = {target for target in present if patch.name in _markers(target)}
            if shown.state == State.APPLIED:
                self.assertTrue(present, f"{patch.name} applied, and no class of its targets is loaded")
                self.assertEqual(seen, present, f"{patch.name} applied; its wrapper is missing from "
                                                f"{sorted(present - seen)}")
                self.assertEqual(shown.reason, patch.effect)
            else:
                self.assertEqual(seen, set(), f"{patch.name} is {shown.state} and wraps {seen}")
                self.assertTrue(shown.reason)
            # Applied with the others (apply()) as alone (decisions()): one decision.
            decided = decisions()[patch.name]
            self.assertEqual((str(shown.state), shown.reason), (decided.state, decided.reason), patch.name)
            self.assertEqual(set(decided.wraps), seen if shown.state == State.APPLIED else set(), patch.name)

    def test_the_table_agrees_with_the_probes(self) -> None:
        for patch in PATCHES:
            state = decisions()[patch.name].state
            if patch.is_affected(torch.__version__) and patch.fits(torch.__version__):
                self.assertEqual(state, State.APPLIED, f"{patch.name} on torch {torch.__version__}")
            if state == State.NOT_NEEDED:
                self.assertFalse(patch.is_affected(torch.__version__), f"{patch.name} on torch {torch.__version__}")


@needs_a_target
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
            wrapper, stock = _slot(owner, name), _stock(owner, name, original)
            self.assertIsNot(wrapper, original)
            self.assertIs(type(wrapper), type(stock), f"{owner.__name__}.{name}: classmethod kept")
            self.assertEqual(_layers(wrapper), (_wrappers_of(owner, name), function_of(stock)), name)
            self.assertTrue(getattr(wrapper, MARKER))
            self.assertTrue(inductor_fix.is_patched(TARGET_OF[owner, name]))
            self.assertIs(inductor_fix.original(TARGET_OF[owner, name]), stock)

    def test_targets_by_full_dotted_name_and_malformed_names(self) -> None:
        inductor_fix.apply()
        owner, name = WRAPPED[0]
        full = f"torch._inductor.select_algorithm.{owner.__name__}.{name}"
        self.assertTrue(inductor_fix.is_patched(full))
        self.assertIs(inductor_fix.original(full), _stock(owner, name, self.originals[0]))
        for malformed in ("generate", "a.b.c", "", None, f"{owner.__name__}.no_such_attribute"):
            self.assertFalse(inductor_fix.is_patched(malformed), malformed)
            with self.assertRaises(KeyError):
                inductor_fix.original(malformed)

    def test_remove_restores_exact_originals(self) -> None:
        inductor_fix.apply()
        status = inductor_fix.remove()
        self.assertEqual(status.state, State.REMOVED)
        self.assertIs(status.protected, False)
        for (owner, name), original in zip(WRAPPED, self.originals):
            self.assertIs(_slot(owner, name), original)
            self.assertFalse(inductor_fix.is_patched(TARGET_OF[owner, name]))
            with self.assertRaises(KeyError):
                inductor_fix.original(TARGET_OF[owner, name])
        self.assertEqual(inductor_fix.remove(), status)  # idempotent

    def test_status_describes_applied_fix(self) -> None:
        status = inductor_fix.apply()
        self.assertEqual(status.state, State.APPLIED)
        self.assertIs(status.protected, True)
        self.assertEqual(status.torch_version, torch.__version__)
        self.assertTrue(status.triton_version)
        self.assertEqual(status.inductor_fix_version, inductor_fix.__version__)
        self.assertEqual([p.name for p in status.patches], [p.name for p in PATCHES])
        for patch in PATCHES:  # the targets of the modules this torch has (a patch may name each release's)
            shown = tuple(qualified_name(t) for t in patch.targets if target_owner(t) is not None)
            self.assertEqual((status.patch(patch.name).targets, status.patch(patch.name).state,
                              status.patch(patch.name).reason),
                             (shown, decisions()[patch.name].state, decisions()[patch.name].reason))
        self.assertEqual(status.to_dict()["state"], "applied")

    def test_context_managers_restore_previous_state(self) -> None:
        (owner, name), original = WRAPPED[0], self.originals[0]
        inductor_fix.apply()
        with inductor_fix.removed() as inside:
            self.assertEqual(inside.state, State.REMOVED)
            self.assertIs(_slot(owner, name), original)
            with inductor_fix.applied() as nested:
                self.assertEqual(nested.state, State.APPLIED)
            self.assertIs(_slot(owner, name), original)
        self.assertEqual(inductor_fix.status().state, State.APPLIED)

    def test_each_patch_removed_and_applied_by_name(self) -> None:
        inductor_fix.apply()
        for patch in PATCHES:
            with inductor_fix.removed(patch.name) as inside:
                self.assertEqual({p.name: p.state for p in inside.patches}, _states(**{patch.name: State.REMOVED}))
                for (owner, name), original in zip(WRAPPED, self.originals):
                    target = TARGET_OF[owner, name]
                    # A slot two patches wrap keeps the other's wrapper, ours inside it inert.
                    others = any(target in _wrapped_by(p) for p in PATCHES if p is not patch)
                    self.assertEqual(inductor_fix.is_patched(target), others, target)
                    if not others:
                        self.assertIs(_slot(owner, name), original)
            self.assertEqual(inductor_fix.status().state, State.APPLIED)
        inductor_fix.remove()
        for patch in PATCHES:  # one at a time onto stock, then the whole fix off: the originals back
            with inductor_fix.applied(patch.name) as inside:
                self.assertEqual({p.name: p.state for p in inside.patches},
                                 {p.name: decisions()[p.name].state if p is patch else State.REMOVED for p in PATCHES})
                self.assertEqual([t for t in patch.targets if inductor_fix.is_patched(t)], list(_wrapped_by(patch)))
            self.assertEqual([_slot(owner, name) for owner, name in WRAPPED], self.originals)
        for first, second in itertools.permutations(PATCHES, 2):  # two on (some share a slot), removed in turn
            inductor_fix.apply(first.name, second.name)
            inductor_fix.remove(first.name)
            inductor_fix.remove(second.name)
            self.assertEqual([_slot(owner, name) for owner, name in WRAPPED], self.originals)

    def test_an_unknown_patch_name_is_an_error_that_changes_nothing(self) -> None:
        inductor_fix.apply()
        before = [_slot(owner, name) for owner, name in WRAPPED]
        known, misspelt = ", ".join(p.name for p in PATCHES), PATCHES[0].name.upper()
        for call in (inductor_fix.apply, inductor_fix.remove):
            with self.assertRaisesRegex(ValueError, f"'{misspelt}' is no patch name; the patches are {known}$"):
                call(PATCHES[0].name, misspelt)
        for manager in (inductor_fix.applied, inductor_fix.removed):
            with self.assertRaisesRegex(ValueError, "'no-such-patch' is no patch name"), manager("no-such-patch"):
                self.fail("the block ran")
        self.assertEqual([_slot(owner, name) for owner, name in WRAPPED], before)
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
            self.assertEqual(_layers(_slot(owner, name)),
                             (_wrappers_of(owner, name), function_of(_stock(owner, name, original))))

    def test_many_cycles_leave_originals(self) -> None:
        for _ in range(1000):
            inductor_fix.apply()
            inductor_fix.remove()
        for (owner, name), original in zip(WRAPPED, self.originals):
            self.assertIs(_slot(owner, name), original)


@needs_a_target
class TestOtherWrappers(TestCase):
    """remove() restores only slots that still hold this package's wrapper: one another
    library put over ours is left in place, ours inside it turns inert, and it is removed
    later; one put under ours (before apply) is what remove() gives back."""

    def setUp(self) -> None:
        super().setUp()
        self.originals = _originals()
        inductor_fix.apply()
        self.addCleanup(inductor_fix.apply)

    def test_mock_patch_over_ours(self) -> None:
        for (owner, name), original in zip(WRAPPED, self.originals):
            ours = _slot(owner, name)
            with mock.patch.object(owner, name, mock.sentinel.theirs):
                with self.assertLogs("inductor_fix", "WARNING") as logs:
                    status = inductor_fix.remove()
                self.assertIs(_slot(owner, name), mock.sentinel.theirs, "their object was replaced")
                self.assertIn("left in place", "\n".join(logs.output))
                patch = next(p for p in PATCHES if TARGET_OF[owner, name] in _wrapped_by(p))
                self.assertEqual(status.patch(patch.name).state, State.REMOVED)
                self.assertIn(f"{owner.__name__}.{name} is wrapped by another library", status.patch(patch.name).reason)
            self.assertIs(_slot(owner, name), ours)  # mock put ours back: inert, and removable
            self.assertFalse(inductor_fix.is_patched(TARGET_OF[owner, name]))
            inductor_fix.remove()
            self.assertIs(_slot(owner, name), original)
            inductor_fix.apply()

    def test_wrapt_wrapper_over_ours(self) -> None:
        owner, name = WRAPPED[0]
        original = self.originals[0]
        seen = []

        def theirs(wrapped, instance, args, kwargs):
            seen.append(wrapped)
            return wrapped(*args, **kwargs)

        wrapt.wrap_function_wrapper(owner, name, theirs)
        try:
            wrapper = _slot(owner, name)
            inductor_fix.remove()
            self.assertIs(_slot(owner, name), wrapper, "their wrapper must stay")
            ours = wrapper.__wrapped__
            self.assertTrue(getattr(ours, MARKER))
            entry = LIFECYCLE._undo.find(owner, name)
            self.assertFalse(entry.active, "ours inside theirs must pass calls through after remove()")
            inductor_fix.apply()  # made active again, not wrapped a second time
            self.assertIs(_slot(owner, name), wrapper)
            self.assertTrue(entry.active)
            self.assertIs(LIFECYCLE._undo.find(owner, name), entry)
        finally:
            setattr(owner, name, _slot(owner, name).__wrapped__)  # unwrap theirs
        inductor_fix.remove()
        self.assertIs(_slot(owner, name), original)

    def test_wrapper_under_ours_is_what_remove_gives_back(self) -> None:
        inductor_fix.remove()
        owner, name = WRAPPED[0]
        stock = _stock(owner, name, self.originals[0])

        @functools.wraps(stock)
        def theirs(*args, **kwargs):
            return stock(*args, **kwargs)

        setattr(owner, name, theirs)
        try:
            self.assertEqual(inductor_fix.apply().state, State.APPLIED)
            self.assertIs(inductor_fix.original(TARGET_OF[owner, name]), theirs)
            inductor_fix.remove()
            self.assertIs(_slot(owner, name), theirs)
        finally:
            _put(owner, name, self.originals[0])

    def test_mock_patch_before_apply_is_not_recognised(self) -> None:
        inductor_fix.remove()
        # A target of a patch that protects: one that only saves cost, unsupported, leaves the
        # process protected (applied), whatever it wraps.
        index = next(TARGETS.index(target) for patch in APPLYING if patch.protects
                     for target in decisions()[patch.name].wraps)
        owner, name = WRAPPED[index]
        with mock.patch.object(owner, name, mock.MagicMock()):
            with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "is not a plain function"):
                status = inductor_fix.apply()
            self.assertEqual(status.state, State.UNSUPPORTED)
            inductor_fix.remove()
        self.assertIs(_slot(owner, name), self.originals[index])


class TestDisabledWithoutItsCrash(TestCase):
    """A patch that ``INDUCTOR_FIX_DISABLE`` turns off where this torch lacks its crash leaves the
    process protected (``not-needed``), whether ``decide`` says so or the patch's own probe
    (``lacks_crash``); where the crash is there, or cannot be told, it is ``disabled`` and the
    process unprotected. Toy patches of a module of their own: nothing real is wrapped."""

    def test_protected_exactly_where_the_crash_is_absent(self) -> None:
        from inductor_fix._activity import Activity
        from inductor_fix._lifecycle import Lifecycle
        from inductor_fix.patches import NotNeeded, Patch, Unsupported
        from inductor_fix.patches.patch import Fix

        module = types.ModuleType("inductor_fix_toy_module")
        module.Slot = type("Slot", (), {"call": lambda self: "stock"})

        def not_needed(module: types.ModuleType) -> None:
            raise NotNeeded("the toy's crash is not in this module")

        def cannot_tell(module: types.ModuleType) -> None:
            raise Unsupported("the toy cannot tell")

        toys = {  # name -> (decide, lacks_crash, state when disabled)
            "toy-decides-absent": (not_needed, None, State.NOT_NEEDED),
            "toy-probes-absent": (lambda module: None, lambda module: "probed: absent", State.NOT_NEEDED),
            "toy-probes-present": (not_needed, lambda module: None, State.DISABLED),
            "toy-present": (lambda module: None, None, State.DISABLED),
            "toy-cannot-tell": (cannot_tell, None, State.DISABLED),
        }
        for name, (decide, lacks_crash, state) in toys.items():
            fix = Fix(targets={f"{module.__name__}:Slot.call": lambda original, context: original}, decide=decide,
                      lacks_crash=lacks_crash)
            toy = Patch(name=name, effect="", upstream="", affected=">=0", delete_when="", diffs=("toy",),
                        activity=Activity(name), fix=fix)
            lifecycle = Lifecycle((toy,))
            with mock.patch.dict(sys.modules, {module.__name__: module}), \
                    mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": name}):
                status = lifecycle.apply()
                lifecycle.remove()
            with self.subTest(toy=name):
                self.assertEqual(status.patch(name).state, state)
                self.assertEqual(status.protected, state == State.NOT_NEEDED)
                self.assertEqual(module.Slot().call(), "stock")
                if state == State.NOT_NEEDED:
                    self.assertRegex(status.patch(name).reason, r"by INDUCTOR_FIX_DISABLE=.*, and this "
                                                                r"torch does not have the crash it fixes: ")


@needs_a_target
class TestGating(TestCase):
    """Each way the package decides not to patch, asserted with its reason."""

    def setUp(self) -> None:
        super().setUp()
        self.originals = _originals()
        inductor_fix.remove()

    def tearDown(self) -> None:
        for (owner, name), original in zip(WRAPPED, self.originals):
            _put(owner, name, original)
        inductor_fix.apply()
        super().tearDown()

    def test_disabled_by_environment(self) -> None:
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": "1"}):
            status = inductor_fix.apply()
        self.assertEqual(status.state, State.DISABLED)
        self.assertIs(status.protected, False)
        # Each is off, but one this torch lacks the crash of: not needed (2.15.0's codegen-cache key).
        self.assertEqual({p.name: p.state for p in status.patches},
                         {p.name: State.NOT_NEEDED if decisions()[p.name].state == State.NOT_NEEDED else State.DISABLED
                          for p in PATCHES})
        self.assertEqual([_slot(owner, name) for owner, name in WRAPPED], self.originals)

    def test_each_patch_disabled_by_name(self) -> None:
        baseline = inductor_fix.apply()  # every patch as it decides on this torch
        for disabled in PATCHES:
            inductor_fix.remove()
            with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": f" {disabled.name} "}):
                status = inductor_fix.apply()
            # Off where this torch has its crash: disabled, unprotected; where it lacks it (the patch is
            # not needed here), not needed and protected. A patch that only saves cost has no crash: off,
            # it is disabled and leaves the torch as protected as it was (the reason still says it).
            off = State.NOT_NEEDED if decisions()[disabled.name].state == State.NOT_NEEDED else State.DISABLED
            self.assertEqual({p.name: p.state for p in status.patches}, _states(**{disabled.name: off}))
            if off == State.NOT_NEEDED:
                self.assertIs(status.protected, True)
                continue
            expected = (State.DISABLED, False) if disabled.protects else (baseline.state, baseline.protected)
            self.assertEqual((status.state, status.protected), expected)
            self.assertIn(f"{disabled.name} disabled", status.reason)
            for target in TARGETS:
                wrapped = any(target in _wrapped_by(p) for p in PATCHES if p is not disabled)
                self.assertEqual(inductor_fix.is_patched(target), wrapped, target)

    def test_unknown_name_warns_and_the_known_ones_still_apply(self) -> None:
        known = PATCHES[-1].name
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": f"no-such-patch,{known}"}):
            os.environ.pop("INDUCTOR_FIX_DISABLE_WARNED", None)
            with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "unknown patch.*no-such-patch"):
                status = inductor_fix.apply()
            self.assertEqual(os.environ.get("INDUCTOR_FIX_DISABLE_WARNED"), f"no-such-patch,{known}")
        self.assertEqual({p.name: p.state for p in status.patches}, _states(**{known: State.DISABLED}))

    def test_an_unknown_name_alone_is_not_said_to_leave_known_ones(self) -> None:
        # Issue 41: INDUCTOR_FIX_DISABLE=foo said "(the known names in it still apply)": it holds none.
        known = PATCHES[-1].name
        for value, said in (("foo", "ignored (no patch is disabled)"), (f"foo,{known}", f"ignored ({known} still")):
            with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": value}):
                os.environ.pop("INDUCTOR_FIX_DISABLE_WARNED", None)
                inductor_fix.remove()
                with self.assertWarns(inductor_fix.InductorFixWarning) as caught:
                    inductor_fix.apply()
            self.assertIn(said, str(caught.warning), value)
            self.assertNotIn("known names in it still apply", str(caught.warning))

    def test_a_patch_is_also_named_as_its_folder_spells_it(self) -> None:
        # Issue 41: a patch's name as its folder spells it (`_` for `-`) was an unknown name.
        from inductor_fix._lifecycle import disabled_patches

        for patch in PATCHES:
            for value in (patch.folder, patch.folder.upper(), patch.name.upper(), f" {patch.folder} ,no-such"):
                unknown = ["no-such"] if "no-such" in value else []
                self.assertEqual(disabled_patches(environ={"INDUCTOR_FIX_DISABLE": value}),
                                 (frozenset({patch.name}), unknown), value)

    def test_an_all_word_in_a_list_disables_every_patch(self) -> None:
        from inductor_fix._lifecycle import disabled_patches

        names = {p.name for p in PATCHES}
        for value in ("1,no-such-patch", f"{PATCHES[0].name}, all", "0,true"):
            self.assertEqual(disabled_patches(environ={"INDUCTOR_FIX_DISABLE": value}), (frozenset(names), []), value)
        self.assertEqual(disabled_patches(environ={"INDUCTOR_FIX_DISABLE": "0,off"}), (frozenset(), []))

    def test_unknown_name_warned_by_a_parent_is_not_warned_again(self) -> None:
        value = "no-such-patch"
        with mock.patch.dict("os.environ", {"INDUCTOR_FIX_DISABLE": value, "INDUCTOR_FIX_DISABLE_WARNED": value}):
            with warnings.catch_warnings():
                warnings.simplefilter("error", inductor_fix.InductorFixWarning)
                status = inductor_fix.apply()
        self.assertEqual({p.name: p.state for p in status.patches}, _states())

    def test_not_needed_without_codegen_cache(self) -> None:
        """torch <= 2.7 has no GeneratedCodeCache: a patch whose bug lives in it is not needed
        there and patches nothing; the others decide as on any torch."""
        stand_in = types.ModuleType(select_algorithm.__name__)
        for name in ("TritonTemplate", "TritonTemplateCaller", "AlgorithmSelectorCache", "NoValidChoicesError", "ir"):
            setattr(stand_in, name, getattr(select_algorithm, name))
        with mock.patch.dict(sys.modules, {select_algorithm.__name__: stand_in}):
            status = inductor_fix.apply()
            inductor_fix.remove()
        for patch in (p for p in PATCHES if select_algorithm.__name__ in p.modules):  # the stand-in's
            expected = State.NOT_NEEDED if _needs_codegen_cache(patch) else decisions()[patch.name].state
            self.assertEqual(status.patch(patch.name).state, expected, patch.name)
            if expected == State.NOT_NEEDED:
                self.assertIn("no Triton template codegen cache", status.patch(patch.name).reason)
        self.assertEqual([_slot(owner, name) for owner, name in WRAPPED], self.originals)

    def test_unrecognised_target_warns_once_and_is_left_alone(self) -> None:
        """A target that is not a plain function (a vendor build, a C extension): that patch
        says unsupported, one warning, the object untouched; the other patches still apply."""
        for patch in APPLYING:  # one that does not apply here wraps nothing to stand in for
            target = _wrapped_by(patch)[0]
            owner, name = target_owner(target), split_target(target)[1]
            stand_in = types.SimpleNamespace()
            setattr(owner, name, stand_in)
            inductor_fix.remove()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                status = inductor_fix.apply()
            self.assertEqual(status.patch(patch.name).state, State.UNSUPPORTED)
            self.assertIs(_slot(owner, name), stand_in)
            warned = [w for w in caught if f"{patch.name} patch not applied" in str(w.message)]
            self.assertLessEqual(len(warned), 1)  # once per process and message
            inductor_fix.remove()
            _put(owner, name, self.originals[WRAPPED.index((owner, name))])

    def test_unsupported_when_source_differs_from_release(self) -> None:
        """A synthetic change to a wrapped function's source on a recorded release is not patched."""
        recorded = [p for p in APPLYING if _recorded(p, str(TORCH_RELEASE))]
        if not recorded:
            self.skipTest(f"no fingerprints recorded for torch {TORCH_RELEASE}")
        import inspect

        from inductor_fix.patches import fingerprints

        for patch in recorded:
            target = next(iter(_recorded(patch, str(TORCH_RELEASE))))
            owner, name = target_owner(target), split_target(target)[1]
            if owner is None:  # another release's module
                continue
            function = function_of(_stock(owner, name, self.originals[WRAPPED.index((owner, name))]))
            changed = textwrap.dedent(inspect.getsource(function)) + "    pass  # a synthetic change\n"
            # Sources are read once per code object: forget them for the block, and so the changed one after it.
            # Each patch's first sight of its message (two patches may share the changed function).
            with mock.patch("inspect.getsource", return_value=changed), \
                    mock.patch.dict(fingerprints._SOURCE_FINGERPRINTS, clear=True), \
                    mock.patch.object(inductor_fix._warnings, "_seen", set()):
                inductor_fix.remove()
                with self.assertWarnsRegex(inductor_fix.InductorFixWarning, "differs from torch .* released source"):
                    status = inductor_fix.apply()
            self.assertEqual(status.patch(patch.name).state, State.UNSUPPORTED, patch.name)
            self.assertIn("fingerprint", status.patch(patch.name).reason)
            for target in patch.targets:
                self.assertFalse(inductor_fix.is_patched(target))

    def test_source_is_read_once_per_code_object(self) -> None:
        import inspect

        from inductor_fix.patches import fingerprints

        recorded = {t for p in APPLYING for t in _recorded(p, str(TORCH_RELEASE))}
        if not recorded:
            self.skipTest(f"no fingerprints recorded for torch {TORCH_RELEASE}")
        with mock.patch.dict(fingerprints._SOURCE_FINGERPRINTS, clear=True), \
                mock.patch("inspect.getsource", wraps=inspect.getsource) as getsource:
            for _ in range(3):
                inductor_fix.apply()
                inductor_fix.remove()
            self.assertEqual(getsource.call_count, len(recorded))

            def probe() -> int:
                return 1

            first = fingerprints.source_fingerprint(probe)
            probe.__code__ = (lambda: 2).__code__  # a new code object is read again
            self.assertNotEqual(fingerprints.source_fingerprint(probe), first)
            self.assertEqual(getsource.call_count, len(recorded) + 2)

    def test_unreadable_recorded_fingerprints_patch_nothing(self) -> None:
        """A broken install (the data file missing or malformed) recognises nothing."""
        import tempfile
        from pathlib import Path

        from inductor_fix.patches import fingerprints

        if not any(_recorded(p, str(TORCH_RELEASE)) for p in PATCHES):
            self.skipTest(f"no fingerprints recorded for torch {TORCH_RELEASE}")
        for text in (None, "{not json", '{"releases": {"2.14.1": []}}'):
            with tempfile.TemporaryDirectory() as directory:
                if text is not None:
                    Path(directory, fingerprints.FINGERPRINTS_FILE).write_text(text)
                fingerprints.recorded_fingerprints.cache_clear()
                self.addCleanup(fingerprints.recorded_fingerprints.cache_clear)
                with mock.patch("importlib.resources.files", return_value=Path(directory)), \
                        warnings.catch_warnings():
                    warnings.simplefilter("ignore", inductor_fix.InductorFixWarning)
                    status = inductor_fix.apply()
                inductor_fix.remove()
            for patch in status.patches:
                if patch.state != State.NOT_NEEDED:
                    self.assertEqual(patch.state, State.UNSUPPORTED, (text, patch))
                    self.assertIn("recorded source fingerprints", patch.reason)
            self.assertEqual([_slot(owner, name) for owner, name in WRAPPED], self.originals)


class TestUnusualEnvironments(TestCase):
    def tearDown(self) -> None:
        inductor_fix.remove()
        inductor_fix.apply()
        super().tearDown()

    def test_partial_module_is_not_patched(self) -> None:
        """A select_algorithm missing what the patches wrap: each unsupported, warned, untouched."""
        inductor_fix.remove()
        stand_in = types.ModuleType(select_algorithm.__name__)
        stand_in.GeneratedCodeCache = type("GeneratedCodeCache", (), {})
        with mock.patch.dict(sys.modules, {select_algorithm.__name__: stand_in}), \
                mock.patch.object(inductor_fix._warnings, "_seen", set()):  # as in a fresh process
            with self.assertWarns(inductor_fix.InductorFixWarning):
                status = inductor_fix.apply()
        self.assertEqual(status.state, State.UNSUPPORTED)
        # Every patch of select_algorithm; one of another module decides on that module, untouched here.
        here = {p.name for p in PATCHES if select_algorithm.__name__ in p.modules}
        self.assertEqual({p.state for p in status.patches if p.name in here}, {State.UNSUPPORTED})
        self.assertEqual(vars(stand_in.GeneratedCodeCache).keys() & {"make_key"}, set())

    def test_without_torch_import_succeeds_and_status_says_so(self) -> None:
        # -S: no site-packages, so neither torch nor its metadata can be found.
        project = os.path.dirname(os.path.dirname(os.path.abspath(inductor_fix.__file__)))
        code = textwrap.dedent(
            f"""
            import sys; sys.path.insert(0, {project!r})
            import inductor_fix
            status = inductor_fix.status()
            print(status.state, status.torch_version, "|", status.reason)
            """
        )
        result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(
            result.stdout.strip(),
            "pending None | torch is not installed in this environment: nothing to patch until it is",
        )


@functools.cache
def _import_then_reload() -> dict:
    """One fresh interpreter, shared by the tests that read it: import Inductor's module (its
    loaders), reload it (patched again?), then remove() (both classes restored?). Each step
    only reads what the ones before left, as three interpreters did."""
    owner, name = split_target(TestProcesses.TARGET)
    result = run_python(
        f"""
        import importlib, json, inductor_fix, torch._inductor.select_algorithm as sa
        seen = {{"loaders": [type(sa.__loader__).__name__, type(sa.__spec__.loader).__name__,
                            str(inductor_fix.status().state)]}}
        old = sa.{owner}
        sa = importlib.reload(sa)
        seen["reloaded"] = [str(inductor_fix.status().state), inductor_fix.is_patched({TestProcesses.TARGET!r})]
        inductor_fix.remove()
        seen["removed"] = [hasattr(old.__dict__.get({name!r}), "__inductor_fix_patch__"),
                           hasattr(sa.{owner}.__dict__.get({name!r}), "__inductor_fix_patch__")]
        print(json.dumps(seen))
        """
    )
    if result.returncode:
        raise AssertionError(result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


@needs_a_target
class TestProcesses(TestCase):
    """Process-level behaviour, in fresh interpreters."""

    TARGET = TARGETS[0] if TARGETS else None

    def test_reload_of_select_algorithm_is_patched_again(self) -> None:
        self.assertEqual(_import_then_reload()["reloaded"], ["applied", True])

    def test_remove_after_reload_restores_old_and_new_classes(self) -> None:
        self.assertEqual(_import_then_reload()["removed"], [False, False])

    def test_module_keeps_its_real_loader(self) -> None:
        """The post-import hook hands the module back with the loader that loaded it."""
        self.assertEqual(_import_then_reload()["loaders"], ["SourceFileLoader", "SourceFileLoader", "applied"])

    def test_environment_variable_turns_import_off(self) -> None:
        result = run_python(
            f"""
            import inductor_fix, torch._inductor.select_algorithm as sa
            print(inductor_fix.status().state, inductor_fix.is_patched({self.TARGET!r}))
            """,
            env={"INDUCTOR_FIX_DISABLE": "1"},
        )
        self.assertEqual(result.stdout.split(), ["disabled", "False"], result.stderr)


if __name__ == "__main__":
    run_tests()
