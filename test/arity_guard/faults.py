"""Faults injected on purpose, to show the arity guard holds on any release.

- :func:`aliasing_blind_key` recreates pytorch/pytorch#188069 on every release,
  2.15.0 (whose key has ``input_aliasing``) and the patched key included.
- :func:`extra_kernel_parameter` makes every generated template kernel take one
  parameter no benchmark request passes: a mismatch regeneration cannot cure.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from typing import Any, Iterator
from unittest import mock

__all__ = ["EXTRA_PARAMETER", "aliasing_blind_key", "extra_kernel_parameter"]

EXTRA_PARAMETER = "inductor_fix_extra"


class _Distinct:
    """An input node that claims a buffer name of its own, so no two alias."""

    def __init__(self, node: Any, position: int) -> None:
        self._node = node
        self._name = f"{node.get_name()}__position{position}"

    def get_name(self) -> str:
        return self._name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


@contextlib.contextmanager
def aliasing_blind_key() -> Iterator[None]:
    """Wrap the current ``GeneratedCodeCache.make_key`` so every input node looks distinct."""
    from torch._inductor.select_algorithm import GeneratedCodeCache

    current = GeneratedCodeCache.__dict__["make_key"]
    index = list(inspect.signature(current).parameters).index("input_nodes") - 1  # after self

    def blind_make_key(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "input_nodes" in kwargs:
            kwargs["input_nodes"] = tuple(_Distinct(n, i) for i, n in enumerate(kwargs["input_nodes"]))
        else:
            args = list(args)
            args[index] = tuple(_Distinct(n, i) for i, n in enumerate(args[index]))
        return current(self, *args, **kwargs)

    with mock.patch.object(GeneratedCodeCache, "make_key", blind_make_key):
        yield


@contextlib.contextmanager
def extra_kernel_parameter() -> Iterator[None]:
    """Load every generated template kernel with a leading ``inductor_fix_extra`` parameter."""
    from torch._inductor.codecache import PyCodeCache

    load = PyCodeCache.__dict__["load"].__func__

    def load_with_extra_parameter(cls: Any, source_code: str, *args: Any, **kwargs: Any) -> Any:
        if "triton_heuristics.template(" in source_code:
            source_code = re.sub(r"(\ndef triton_\w+\()", rf"\1{EXTRA_PARAMETER}, ", source_code, count=1)
        return load(cls, source_code, *args, **kwargs)

    with mock.patch.object(PyCodeCache, "load", classmethod(load_with_extra_parameter)):
        yield
