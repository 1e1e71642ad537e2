"""autotune-sharing's drift drills: the autotune cache's choice identity moves the way upstream
changes do (``python test/drift.py``; the :class:`~inductor_fix.check.parts.DrillsPart` of
each patch, and ``under``: the other drills that leave this patch other than ``applied``)."""

from __future__ import annotations

import types
from typing import Any

from ...check.parts import Drill, DrillsPart

__all__ = ["PART"]


def _hash_key_gone(module: types.ModuleType, kit: Any) -> None:
    """``TritonTemplateCaller`` inherits ``hash_key`` instead of defining it."""
    caller = module.TritonTemplateCaller
    inherited = caller.__dict__["hash_key"]
    del caller.hash_key
    caller.__bases__[0].hash_key = inherited


def _kernel_key_overridden(module: types.ModuleType, kit: Any) -> None:
    """``TritonTemplateCaller`` defines its own ``kernel_hash_key`` (as patches/0005 has it): the
    patch would no longer know what precompilation is keyed by."""
    caller = module.TritonTemplateCaller

    def kernel_hash_key(self: Any) -> str:
        return self.hash_key()

    caller.kernel_hash_key = kernel_hash_key


PART = DrillsPart(
    drills={
        "hash-key-inherited": Drill(_hash_key_gone, "unsupported"),
        "kernel-hash-key-overridden": Drill(_kernel_key_overridden, "unsupported"),
    },
    # It wraps TritonTemplateCaller, and calls make_key to find a key's family: a make_key the
    # probe cannot call (another patch's drill) leaves the family unproven.
    under={"renamed-class": "unsupported", "make-key-extra-parameter": "unsupported"},
)
