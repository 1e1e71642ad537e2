"""The undo stack overrides what a class only inherits, and undoes exactly that."""

from __future__ import annotations

import unittest
from unittest import mock

from inductor_fix._registry import ABSENT, Registry


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
        registry = Registry()
        seen = []

        def make(inherited):
            seen.append(inherited)
            return lambda self: "ours over " + inherited(self)

        entry = registry.wrap(child, "key", make, "a-patch")
        self.assertIs(entry.original, ABSENT)
        self.assertEqual(seen, [base.__dict__["key"]])
        self.assertEqual(child().key(), "ours over inherited")
        self.assertEqual(base().key(), "inherited")  # the base is untouched
        entry.active = False
        self.assertEqual(child().key(), "inherited")  # the switch, inert, calls the inherited one
        entry.active = True
        self.assertTrue(registry.restore(entry))
        self.assertNotIn("key", child.__dict__)
        self.assertEqual(child().key(), "inherited")
        self.assertEqual(len(registry), 0)

    def test_under_another_wrapper_it_stays_inert_until_restorable(self) -> None:
        _, child = _classes()
        registry = Registry()
        entry = registry.wrap(child, "key", lambda inherited: lambda self: "ours", "a-patch")
        with mock.patch.object(child, "key", lambda self: "theirs"):
            self.assertFalse(registry.restore(entry))  # someone else's object sits in the slot
            self.assertEqual(child().key(), "theirs")
        self.assertTrue(registry.restore(entry))  # the slot holds our inert switch again
        self.assertNotIn("key", child.__dict__)

    def test_nothing_to_inherit_is_an_error(self) -> None:
        _, child = _classes()
        with self.assertRaises(AttributeError):
            Registry().wrap(child, "no_such_method", lambda inherited: inherited, "a-patch")


if __name__ == "__main__":
    unittest.main()
