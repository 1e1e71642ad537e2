"""The fix: make the Triton template codegen-cache key see the aliasing pattern.

Upstream: ``torch/_inductor/select_algorithm.py``, ``GeneratedCodeCache.make_key``
(torch 2.8.0-2.14.x; the cache is on by default from 2.9.0). The key holds the
layout of every input node but not which input nodes are the same buffer, while
``TritonTemplateKernel.def_kernel`` gives the kernel one pointer parameter per
distinct buffer name. Code generated for ``bmm(x, x)`` (one input pointer) was
therefore replayed for ``bmm(a, b)`` (two), and the autotuning benchmark called
the launcher with one argument too many (``got multiple values for argument
'stream'``) or, in the other order, too few (``missing ... '_grid_2'``).
Reported as pytorch/pytorch#188069; fixed in 2.15.0 by PR #188268.

Remove this module when the oldest supported torch is 2.15.0.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

__all__ = ["aliasing_pattern", "aliasing_aware_make_key"]


def aliasing_pattern(input_nodes: Sequence[Any]) -> tuple[int, ...]:
    """Which input nodes are the same buffer, independent of the buffer names.

    Each node gets the label of its buffer name (``node.get_name()``, the name
    ``def_kernel`` deduplicates by), labels given in order of first appearance:
    a set partition in canonical (restricted growth) form.

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


def aliasing_aware_make_key(make_key: Callable[..., str | None], input_nodes_index: int) -> Callable[..., str | None]:
    """Wrap ``GeneratedCodeCache.make_key`` so keys differ whenever aliasing patterns differ.

    ``input_nodes_index`` is the position of ``input_nodes`` among the positional
    parameters of ``make_key`` after ``self`` (0 in every release 2.8-2.15); the
    parameters after it differ between releases and are passed through untouched.

    Every key gets the pattern appended, also when no input aliases: entries
    a stock ``make_key`` wrote before the fix was applied (a compile before
    ``import inductor_fix``) can then never be hit. Equal layouts and equal
    patterns still give equal keys, so non-aliased compiles hit the cache as
    often as stock. If the pattern cannot be computed the wrapper returns None,
    which Inductor reads as "do not cache": slower, never wrong.
    """

    @functools.wraps(make_key)
    def make_key_with_aliasing(self: Any, *args: Any, **kwargs: Any) -> str | None:
        key = make_key(self, *args, **kwargs)
        if key is None:
            return None
        try:
            input_nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else args[input_nodes_index]
            pattern = aliasing_pattern(input_nodes)
        except Exception:
            return None
        return f"{key} input_aliasing={pattern}"

    return make_key_with_aliasing
