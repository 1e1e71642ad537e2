"""Originals of every patched attribute, so each patch can be undone exactly.

Originals are read from ``owner.__dict__``, not ``getattr``: ``getattr`` would
return a bound or inherited object, and restoring that would change the class.
The first original is kept; patching an already patched attribute is refused.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["Registry"]

#: Set on every wrapper this package installs, so a wrapper is recognised even
#: when a second copy of the package (or a reload) looks at it.
MARKER = "__inductor_fix_patch__"


class Registry:
    """Saved originals keyed by ``(owner, attribute name)``; not thread-safe on its own."""

    def __init__(self) -> None:
        self._saved: dict[tuple[int, str], tuple[Any, Any]] = {}

    def wrap(self, owner: Any, name: str, make_wrapper: Callable[[Any], Any], patch: str) -> Any:
        """Replace ``owner.name`` by ``make_wrapper(original)`` and remember the original.

        Raises KeyError if ``owner`` does not define ``name`` itself, and
        RuntimeError if the attribute is already an ``inductor_fix`` wrapper.
        """
        original = owner.__dict__[name]
        if getattr(original, MARKER, None) is not None:
            raise RuntimeError(f"{owner.__qualname__}.{name} is already patched by inductor_fix")
        wrapper = make_wrapper(original)
        setattr(wrapper, MARKER, patch)
        setattr(owner, name, wrapper)
        self._saved[(id(owner), name)] = (owner, original)
        return wrapper

    def restore(self, owner: Any, name: str) -> None:
        """Put back the exact original object of ``owner.name``; a no-op if not patched."""
        saved = self._saved.pop((id(owner), name), None)
        if saved is not None:
            setattr(owner, name, saved[1])

    def is_patched(self, owner: Any, name: str) -> bool:
        return (id(owner), name) in self._saved

    def original(self, owner: Any, name: str) -> Any:
        """The saved original of ``owner.name``; KeyError if it is not patched."""
        return self._saved[(id(owner), name)][1]
