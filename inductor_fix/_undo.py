"""An undo stack of exactly what was wrapped, so every patch can be undone exactly.

Each entry is one ``(owner, attribute)`` slot: the original read from
``owner.__dict__`` (``getattr`` would return a bound or inherited object, and
restoring that would change the class), the patch's wrapper, and the object
installed in the slot: a *switch* that calls the wrapper while the entry is active
and the original once it is not. Entries are kept per class object, so after
``importlib.reload`` of Inductor's module the old classes stay on the stack until
they are restored too.

A patch may also override an attribute the class only inherits (``ABSENT`` is then its
original): the factory wraps the inherited one, and restoring deletes the class's own again.

Two patches may wrap one slot: the second wraps the first's switch, and undoing
them newest first (or either alone: the other's switch passes calls through) gives
the original back. Restoring puts the original back only where the slot still holds
our switch. If
another library wrapped the attribute after us (``unittest.mock.patch``, a
``wrapt`` wrapper), its wrapper is left in place, ours inside it turns inert (it
passes every call to the original), and the entry stays: a later restore, once the
slot holds our switch again, puts the original back, and a later apply makes it
active again without wrapping twice.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Collection

from ._members import function_of

__all__ = ["ABSENT", "MARKER", "Entry", "UndoStack"]

#: Set on every object this package installs, so it is recognised even when a
#: second copy of the package (or a reload) looks at it.
MARKER = "__inductor_fix_patch__"


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


#: The original of a slot the class did not define itself (it inherited the attribute).
ABSENT = _Absent()


class Entry:
    """One wrapped slot: ``owner.attribute`` held ``original``; the patch's factory made
    ``wrapper``; ``installed`` is in the slot and calls ``wrapper`` while ``active``, else
    ``original``."""

    __slots__ = ("owner", "attribute", "original", "wrapper", "installed", "patch", "active")

    def __init__(self, owner: Any, attribute: str, original: Any, wrapper: Any, patch: str) -> None:
        self.owner, self.attribute, self.original, self.wrapper = owner, attribute, original, wrapper
        self.installed: Any = None
        self.patch = patch
        self.active = True

    @property
    def target(self) -> str:
        return f"{self.owner.__qualname__}.{self.attribute}"

    def in_slot(self) -> bool:
        return self.owner.__dict__.get(self.attribute) is self.installed

    def holds_original(self) -> bool:
        """Whether the slot holds the original again (for an inherited one: nothing of the class's own)."""
        if self.original is ABSENT:
            return self.attribute not in self.owner.__dict__
        return self.owner.__dict__.get(self.attribute) is self.original

    def inherited(self) -> Any:
        """What the class resolves without a slot of its own (for an inherited original)."""
        for base in self.owner.__mro__[1:]:
            if self.attribute in base.__dict__:
                return base.__dict__[self.attribute]
        raise AttributeError(f"no base of {self.owner.__qualname__} defines {self.attribute}")

    def under_another_wrapper(self) -> bool:
        """Whether the slot holds another object whose ``__wrapped__`` chain reaches ours."""
        current, ours = self.owner.__dict__.get(self.attribute), function_of(self.installed)
        for _ in range(32):  # a chain, not a cycle
            current = getattr(function_of(current), "__wrapped__", None)
            if current is None:
                return False
            if function_of(current) is ours:
                return True
        return False


def _inherited_now(entry: Entry) -> Any:
    """What the class inherits, looked up at each call: a base patched later (another library,
    a ``mock.patch``) is what the override wraps, and what it calls once inert."""
    first = function_of(entry.inherited())

    @functools.wraps(first)
    def inherited(*args: Any, **kwargs: Any) -> Any:
        return function_of(entry.inherited())(*args, **kwargs)

    return inherited


def _switch(entry: Entry) -> Any:
    patched = function_of(entry.wrapper)
    original = _inherited_now(entry) if entry.original is ABSENT else function_of(entry.original)

    @functools.wraps(original)
    def switch(*args: Any, **kwargs: Any) -> Any:
        return (patched if entry.active else original)(*args, **kwargs)

    return type(entry.original)(switch) if isinstance(entry.original, (classmethod, staticmethod)) else switch


class UndoStack:
    """Not thread-safe on its own: the caller holds the lifecycle lock."""

    def __init__(self) -> None:
        self._stack: list[Entry] = []

    def wrap(self, owner: Any, attribute: str, make_wrapper: Callable[[Any], Any], patch: str) -> Entry:
        """Install ``make_wrapper(original)`` in ``owner.attribute`` (through a switch) and push it.

        An entry of ours for the slot that is still reachable from it (in the slot, or under
        another library's wrapper) is made active again instead (no second wrap). One that is
        not (another object sits in the slot: a ``mock.patch`` that will put ours back when it
        exits) is kept, active, and the object now in the slot is wrapped by a new entry.
        Raises AttributeError if neither ``owner`` nor a base defines ``attribute``, and
        RuntimeError if it already holds another copy's ``inductor_fix`` object.
        """
        mine = [e for e in self._stack if e.owner is owner and e.attribute == attribute and e.patch == patch]
        reachable = [e for e in mine if e.in_slot() or e.under_another_wrapper()]
        for entry in reachable[-1:] or mine:
            entry.active = True
        if reachable:
            return reachable[-1]
        original = owner.__dict__.get(attribute, ABSENT)
        ours = any(e.installed is original for e in self._stack)  # another patch's: wrapped over it
        if getattr(original, MARKER, None) is not None and not ours:
            raise RuntimeError(f"{owner.__qualname__}.{attribute} is already patched by inductor_fix")
        entry = Entry(owner, attribute, original, None, patch)
        entry.wrapper = make_wrapper(_inherited_now(entry) if original is ABSENT else original)
        entry.installed = _switch(entry)
        setattr(entry.installed, MARKER, patch)
        setattr(function_of(entry.installed), MARKER, patch)  # under a classmethod too
        setattr(owner, attribute, entry.installed)
        self._stack.append(entry)
        return entry

    def restore(self, entry: Entry) -> bool:
        """Make ``entry`` inert; put its original back and drop it if the slot still holds its
        switch. If the slot holds the original already (someone put it there over ours: a
        ``mock.patch`` with the stock function), True, and the entry stays, inert: that someone
        may put our switch back, and it must then be known as ours. False if another object
        sits in the slot (a ``mock.patch``, a wrapper over ours): it is left there and the entry
        stays, inert, to be restored once the slot holds our switch again."""
        entry.active = False
        if not entry.in_slot():
            return entry.holds_original()
        if entry.original is ABSENT:
            delattr(entry.owner, entry.attribute)
        else:
            setattr(entry.owner, entry.attribute, entry.original)
        self._stack.remove(entry)
        return True

    def restore_all(self, patches: Collection[str] | None = None) -> list[Entry]:
        """Undo every wrap (of ``patches`` only, if given), newest first, old classes included;
        the entries left in place under another wrapper (another library's, or another patch's
        switch over the same slot: :meth:`under_ours`)."""
        return [entry for entry in reversed(list(self._stack))
                if (patches is None or entry.patch in patches) and not self.restore(entry)]

    def under_ours(self, entry: Entry) -> bool:
        """Whether ``entry``'s slot holds another entry's switch (two patches wrap one slot)."""
        current = entry.owner.__dict__.get(entry.attribute)
        return any(other is not entry and other.installed is current for other in self._stack)

    def find(self, owner: Any, attribute: str, patch: str | None = None) -> Entry | None:
        """The oldest entry for the slot (of ``patch``, if given): two patches may wrap one slot."""
        return next((e for e in self._stack if e.owner is owner and e.attribute == attribute
                     and (patch is None or e.patch == patch)), None)

    def newest(self, owner: Any, attribute: str) -> Entry | None:
        """The entry whose switch should be in the slot: the last one wrapped."""
        return next((e for e in reversed(self._stack) if e.owner is owner and e.attribute == attribute), None)

    def __len__(self) -> int:
        return len(self._stack)
