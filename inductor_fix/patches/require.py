"""The checks every patch's ``decide`` shares: a target is the plain function, with the
parameters, that the patch recognises, or :class:`~.patch.Unsupported` says which is not;
a torch without the Triton template codegen cache has no bug there (:class:`~.patch.NotNeeded`).
Nothing here imports torch.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

from .._members import function_of
from .patch import NotNeeded, Unsupported
from .target_names import split_target

__all__ = ["CODEGEN_CACHE_ADDED", "require_class", "require_codegen_cache", "require_function", "require_parameters"]

#: ``GeneratedCodeCache`` first appears here, off by default
#: (``enable_caching_generated_triton_templates=False``; on by default from 2.9.0).
CODEGEN_CACHE_ADDED = "2.8.0"


def require_function(module: ModuleType, target: str, kind: type | None = None) -> Any:
    """The function behind ``target``; Unsupported if absent or not a plain function
    (or, with ``kind``, not wrapped in ``kind``, e.g. ``classmethod``)."""
    owner_name, attribute = split_target(target)
    owner = getattr(module, owner_name, None)
    if not isinstance(owner, type):
        raise Unsupported(f"{_short(module)}.{owner_name} is missing")
    member = owner.__dict__.get(attribute)
    if kind is not None and not isinstance(member, kind):
        raise Unsupported(f"{target} is not a {kind.__name__} in this torch")
    if not inspect.isfunction(function_of(member)):
        raise Unsupported(f"{target} is not a plain function (this torch's internals, or another library's "
                          "wrapper this package does not recognise)")
    return function_of(member)


def require_parameters(module: ModuleType, target: str, names: tuple[str, ...], kind: type | None = None) -> Any:
    """:func:`require_function`, also Unsupported if a parameter of ``names`` is missing."""
    function = require_function(module, target, kind)
    missing = [name for name in names if name not in inspect.signature(function).parameters]
    if missing:
        raise Unsupported(f"{target} has no {', '.join(repr(n) for n in missing)} parameter")
    return function


def require_class(module: ModuleType, name: str) -> type:
    """``module.<name>`` if it is a class; Unsupported if not."""
    value = getattr(module, name, None)
    if not isinstance(value, type):
        raise Unsupported(f"{_short(module)}.{name} is missing")
    return value


def _short(module: ModuleType) -> str:
    """``select_algorithm`` for ``torch._inductor.select_algorithm``: how messages name a module."""
    return getattr(module, "__name__", "?").rpartition(".")[2]


def require_codegen_cache(module: ModuleType) -> None:
    """NotNeeded on a torch without the Triton template codegen cache (up to 2.7)."""
    if not hasattr(module, "GeneratedCodeCache"):
        raise NotNeeded(f"this torch has no Triton template codegen cache (added in {CODEGEN_CACHE_ADDED})")
