"""The undo stack overrides what a class only inherits, and undoes exactly that."""

from __future__ import annotations

import unittest
from unittest import mock

from inductor_fix._undo import ABSENT, UndoStack


def _classes() -> tuple[type, type]:
    class Base:
        def key(self) -> str:
            return "inherited"

    class Child(Base):
        pass

    return Base, Child


class TestInheritedSlot(unittest.TestCase):
    def test_override_then_restore_leaves_no_slot(self) -> None:
        base, child = _classes()
        undo = UndoStack()
        seen = []

        def make(inherited):
            seen.append(inherited)
            return lambda self: "ours over " + inherited(self)

        entry = undo.wrap(child, "key", make, "a-patch")
        self.assertIs(entry.original, ABSENT)
        self.assertIs(seen[0].__wrapped__, base.__dict__["key"])  # looked up at each call (a base patched later)
        self.assertEqual(child().key(), "ours over inherited")
        self.assertEqual(base().key(), "inherited")  # the base is untouched
        entry.active = False
        self.assertEqual(child().key(), "inherited")  # the switch, inert, calls the inherited one
        entry.active = True
        self.assertTrue(undo.restore(entry))
        self.assertNotIn("key", child.__dict__)
        self.assertEqual(child().key(), "inherited")
        self.assertEqual(len(undo), 0)

    def test_under_another_wrapper_it_stays_inert_until_restorable(self) -> None:
        _, child = _classes()
        undo = UndoStack()
        entry = undo.wrap(child, "key", lambda inherited: lambda self: "ours", "a-patch")
        with mock.patch.object(child, "key", lambda self: "theirs"):
            self.assertFalse(undo.restore(entry))  # someone else's object sits in the slot
            self.assertEqual(child().key(), "theirs")
        self.assertTrue(undo.restore(entry))  # the slot holds our inert switch again
        self.assertNotIn("key", child.__dict__)

    def test_a_base_patched_later_is_what_the_override_calls(self) -> None:
        base, child = _classes()
        undo = UndoStack()
        entry = undo.wrap(child, "key", lambda inherited: lambda self: "ours over " + inherited(self), "a-patch")
        with mock.patch.object(base, "key", lambda self: "a library's"):
            self.assertEqual(child().key(), "ours over a library's")
            entry.active = False
            self.assertEqual(child().key(), "a library's")
        self.assertEqual(child().key(), "inherited")

    def test_nothing_to_inherit_is_an_error(self) -> None:
        _, child = _classes()
        with self.assertRaises(AttributeError):
            UndoStack().wrap(child, "no_such_method", lambda inherited: inherited, "a-patch")


class TestSlotTakenByAMock(unittest.TestCase):
    """A ``mock.patch`` over our wrapper, with a remove and an apply inside it, and then its
    exit putting our wrapper back: the fix is on, and can be removed and applied again."""

    def test_remove_and_apply_under_a_mock(self) -> None:
        class Owner:
            def method(self) -> str:
                return "stock"

        undo = UndoStack()
        make = (lambda original: lambda self: "ours")  # noqa: E731
        undo.wrap(Owner, "method", make, "a-patch")
        with mock.patch.object(Owner, "method", Owner.__dict__["method"].__wrapped__):
            undo.restore_all()  # the mock's object is in the slot: ours stays, inert
            undo.wrap(Owner, "method", make, "a-patch")  # applied again under the mock
            self.assertEqual(Owner().method(), "ours")
        self.assertEqual(Owner().method(), "ours")  # the mock put our first wrapper back: active
        undo.restore_all()
        self.assertEqual(Owner().method(), "stock")
        undo.wrap(Owner, "method", make, "a-patch")  # no "already patched" error
        self.assertEqual(Owner().method(), "ours")
        undo.restore_all()
        self.assertEqual(Owner.__dict__["method"](Owner()), "stock")


if __name__ == "__main__":
    unittest.main()
