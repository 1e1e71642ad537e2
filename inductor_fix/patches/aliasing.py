"""The aliasing pattern of a template's input nodes, and the probe of a codegen-cache key by it:
what the patches of codegen-cache keys share (the Triton template's
``GeneratedCodeCache.make_key``, the CUTLASS template's ``make_key``: each keys input layouts,
not which inputs are one buffer, pytorch/pytorch#188069).

A patch's probe is :func:`key_probe` of how it calls its ``make_key`` on two inputs of equal
layouts, ``(x, x)`` and ``(x, y)``: ``keys_separate_aliasing(make_key)`` says whether the keys
differ (the bug is there where they do not); :func:`separates` turns a probe that cannot run
into Unsupported, for ``decide``; :func:`verifier` makes ``verify``. Nothing here imports torch.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Sequence

from .patch import Unsupported

__all__ = ["ProbeError", "aliasing_pattern", "key_probe", "patterns_text", "separates", "verifier"]

#: ``keys(make_key, module)`` -> the keys ``make_key`` gives ``(x, x)`` and ``(x, y)`` of equal layouts.
Keys = Callable[[Callable[..., Any], ModuleType], "tuple[Any, Any]"]
#: ``keys_separate_aliasing(make_key, module)``: whether the keys differ.
Probe = Callable[[Callable[..., Any], ModuleType], bool]


def aliasing_pattern(input_nodes: Sequence[Any]) -> tuple[int, ...]:
    """Which input nodes are the same buffer, independent of the buffer names.

    Each node gets the label of its buffer name (``node.get_name()``, the name every
    template's ``def_kernel`` deduplicates its inputs by: Triton's and CUTLASS's), labels
    given in order of first appearance: a set partition in canonical (restricted growth) form.

    >>> class N:
    ...     def __init__(self, name): self.name = name
    ...     def get_name(self): return self.name
    >>> aliasing_pattern([N("x"), N("x")]), aliasing_pattern([N("a"), N("b")])
    ((0, 0), (0, 1))
    >>> aliasing_pattern([N("c"), N("buf3"), N("c")])
    (0, 1, 0)
    """
    labels: dict[str, int] = {}
    return tuple(labels.setdefault(node.get_name(), len(labels)) for node in input_nodes)


class ProbeError(Exception):
    """The probe could not call ``make_key`` the way it expects; the message says why."""


def key_probe(keys: Keys) -> Probe:
    """``keys_separate_aliasing(make_key, module)``: True if ``keys(make_key, module)`` gives
    different keys to ``(x, x)`` and ``(x, y)``. Raises :class:`ProbeError` if ``make_key``
    cannot be called so (``keys`` raises) or returns None (uncacheable) for them."""

    def keys_separate_aliasing(make_key: Callable[..., Any], module: ModuleType) -> bool:
        try:
            aliased, distinct = keys(make_key, module)
        except ProbeError:
            raise
        except Exception as error:
            raise ProbeError(f"make_key failed on probe inputs: {type(error).__name__}: {error}") from error
        if aliased is None or distinct is None:
            raise ProbeError("make_key returned None (uncacheable) for the probe inputs")
        return bool(aliased != distinct)

    return keys_separate_aliasing


def separates(probe: Probe, make_key: Callable[..., Any], module: ModuleType, which: str = "") -> bool:
    """``probe(make_key, module)``; Unsupported (its reason prefixed by ``which``, ``"patched "``)
    where the probe cannot run."""
    try:
        return probe(make_key, module)
    except ProbeError as error:
        raise Unsupported(f"{which}{error}") from error


def verifier(probe: Probe, make_key_of: Callable[[ModuleType], Callable[..., Any]]) -> Callable[[ModuleType], None]:
    """A patch's ``verify(module)``: Unsupported unless the ``make_key`` installed now
    (``make_key_of(module)``: the patched one) keys ``(x, x)`` and ``(x, y)`` apart."""

    def verify(module: ModuleType) -> None:
        if not separates(probe, make_key_of(module), module, "patched "):
            raise Unsupported("the patched make_key still gives (x, x) and (x, y) the same key")

    return verify


def patterns_text(detail: dict[str, Any]) -> str:
    """``(0, 0) vs (0, 1)``: the aliasing patterns of an activity detail (its ``"patterns"``)."""
    return " vs ".join(str(tuple(pattern)) for pattern in detail.get("patterns", []))
