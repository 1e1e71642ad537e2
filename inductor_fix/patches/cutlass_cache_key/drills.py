"""cutlass-cache-key's drift drills: the CUTLASS template's ``make_key`` and code cache move the way
upstream changes do (``python test/drift.py``; the format:
:class:`~inductor_fix.check.parts.DrillsPart`). Each moves the CUTLASS template module this
torch has (``codegen/cutlass/template.py``, 2.11+; ``codegen/cuda/cuda_template.py`` before).
"""

from __future__ import annotations

import ast
import functools
import types
from typing import Any

from ...check.parts import Drill, DrillsPart
from .fix import MODULES

__all__ = ["PART"]


def _template(module: types.ModuleType) -> Any:
    return getattr(module, MODULES[module.__name__])


def _make_key_extra_parameter(module: types.ModuleType, kit: Any) -> None:
    """``make_key`` gains a required parameter the probe cannot fill."""
    template = _template(module)

    def edit(arguments: ast.arguments) -> None:
        arguments.args.append(ast.arg("epilogue_key"))

    template.make_key = kit.redefined(template.make_key, edit, module)


def _upstream_key_fix(module: types.ModuleType, kit: Any) -> None:
    """``make_key`` keys the aliasing pattern of the template's input nodes itself."""
    template = _template(module)
    stock = template.make_key

    @functools.wraps(stock)
    def make_key(self: Any, *args: Any, **kwargs: Any) -> Any:
        names = [node.get_name() for node in self.input_nodes]
        return f"{stock(self, *args, **kwargs)}|aliasing={[names.index(n) for n in names]}"

    template.make_key = make_key


def _code_cache_gone(module: types.ModuleType, kit: Any) -> None:
    """The template class keeps no code cache of its own (as before PR #156781)."""
    del _template(module).code_cache


#: Every drill moves the CUTLASS template module this torch has.
_MODULES = tuple(MODULES)

PART = DrillsPart(
    drills={
        "cutlass-make-key-extra-parameter": Drill(_make_key_extra_parameter, "unsupported", _MODULES),
        "cutlass-upstream-key-fix": Drill(_upstream_key_fix, "not-needed", _MODULES),
        "cutlass-code-cache-gone": Drill(_code_cache_gone, "not-needed", _MODULES),
    },
)
