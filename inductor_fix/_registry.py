"""An undo stack of exactly what was wrapped, so every patch can be undone exactly.

Each entry is ``(owner, attribute, original, patch name)``. Originals are read
from ``owner.__dict__``, not ``getattr``: ``getattr`` would return a bound or
inherited object, and restoring that would change the class. Entries are kept
per class object, so after ``importlib.reload`` of Inductor's module the old
classes stay on the stack until ``restore_all`` puts their originals back too.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

__all__ = ["MARKER", "Registry"]

#: Set on every wrapper this package installs, so a wrapper is recognised even
#: when a second copy of the package (or a reload) looks at it.
MARKER = "__inductor_fix_patch__"


@dataclasses.dataclass(frozen=True)
class Entry:
    owner: Any
    attribute: str
    original: Any
    wrapper: Any
    patch: str


class Registry:
    """Not thread-safe on its own: the caller holds the lifecycle lock."""

    def __init__(self) -> None:
        self._stack: list[Entry] = []

    def wrap(self, owner: Any, attribute: str, make_wrapper: Callable[[Any], Any], patch: str) -> Any:
        """Replace ``owner.attribute`` by ``make_wrapper(original)`` and push the original.

        Raises KeyError if ``owner`` does not define ``attribute`` itself, and
        RuntimeError if it is already an ``inductor_fix`` wrapper.
        """
        original = owner.__dict__[attribute]
        if getattr(original, MARKER, None) is not None:
            raise RuntimeError(f"{owner.__qualname__}.{attribute} is already patched by inductor_fix")
        wrapper = make_wrapper(original)
        setattr(wrapper, MARKER, patch)
        setattr(owner, attribute, wrapper)
        self._stack.append(Entry(owner, attribute, original, wrapper, patch))
        return wrapper

    def restore(self, owner: Any, attribute: str) -> None:
        """Put back the exact original of ``owner.attribute``; a no-op if not patched."""
        for index in range(len(self._stack) - 1, -1, -1):
            entry = self._stack[index]
            if entry.owner is owner and entry.attribute == attribute:
                del self._stack[index]
                setattr(owner, attribute, entry.original)

    def restore_all(self, patch: str | None = None) -> None:
        """Undo every wrap (of ``patch`` only, if given), newest first, old classes included."""
        for entry in reversed(list(self._stack)):
            if patch is None or entry.patch == patch:
                self.restore(entry.owner, entry.attribute)

    def find(self, owner: Any, attribute: str) -> Entry | None:
        return next((e for e in self._stack if e.owner is owner and e.attribute == attribute), None)

    def __len__(self) -> int:
        return len(self._stack)
