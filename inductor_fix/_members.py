"""What a class ``__dict__`` entry holds: the one fact the undo stack and the patches' checks
share about a wrapped attribute, below both (neither imports the other for it)."""

from __future__ import annotations

from typing import Any

__all__ = ["function_of"]


def function_of(member: Any) -> Any:
    """The plain function behind a class ``__dict__`` entry (a classmethod's ``__func__``)."""
    return member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
