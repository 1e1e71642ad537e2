"""Target names: how a patch names what it wraps, and where that lives.

A target is ``"Class.attribute"`` of :data:`MODULE` (Inductor's ``select_algorithm``) or
``"module:Class.attribute"`` of another module of Inductor. Nothing here imports torch.
"""

from __future__ import annotations

__all__ = ["MODULE", "qualified_name", "split_target", "target_module", "target_owner"]

MODULE = "torch._inductor.select_algorithm"


def split_target(target: str) -> tuple[str, str]:
    """``("Class", "attribute")`` of a target, ``"Class.attribute"`` or ``"module:Class.attribute"``;
    ValueError if it is neither."""
    owner, attribute = target.rpartition(":")[2].split(".")
    return owner, attribute


def target_owner(target: str) -> type | None:
    """The class ``target`` names, where its module is loaded in this process; None elsewhere
    (a module this release lacks, or one not imported yet). Imports nothing."""
    import sys

    owner = getattr(sys.modules.get(target_module(target)), split_target(target)[0], None)
    return owner if isinstance(owner, type) else None


def target_module(target: str) -> str:
    """The module a target lives in: its ``"module:"`` prefix, else :data:`MODULE`."""
    module, _, _ = target.rpartition(":")
    return module or MODULE


def qualified_name(target: str) -> str:
    """``"torch._inductor.select_algorithm.TritonTemplate.generate"`` for ``"TritonTemplate.generate"``."""
    return f"{target_module(target)}.{target.rpartition(':')[2]}"
