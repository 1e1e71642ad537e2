"""cache-key's drift drills: ``GeneratedCodeCache.make_key`` moves the way upstream changes do.

``python test/drift.py`` runs every patch's drills (its :class:`~inductor_fix.check.parts.DrillsPart`):
each is a ``Drill(move, state)``, ``move(select_algorithm, kit)`` changing the module (``kit`` is
``test/drift.py``, with its helpers ``redefined`` and ``gains_keyword``) and ``state`` what
this patch must then say; every other patch must still apply. ``under`` says what this
patch says under the general drills of ``test/drift.py`` where that is not ``applied``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types
from typing import Any

from ...check.parts import Drill, DrillsPart

__all__ = ["PART"]


def _make_key_extra_parameter(module: types.ModuleType, kit: Any) -> None:
    """``make_key`` gains a required parameter after ``input_nodes`` the probe cannot fill."""
    cache = module.GeneratedCodeCache

    def edit(arguments: ast.arguments) -> None:
        position = [a.arg for a in arguments.args].index("input_nodes") + 1
        arguments.args.insert(position, ast.arg("prologue_nodes"))

    cache.make_key = kit.redefined(cache.make_key, edit, module)


def _make_key_keyword(module: types.ModuleType, kit: Any) -> None:
    """An optional keyword the probe need not fill."""
    kit.gains_keyword("GeneratedCodeCache", "make_key", "layout_hint")(module)


def _upstream_key_fix(module: types.ModuleType, kit: Any) -> None:
    """``make_key`` keys the aliasing pattern itself, as 2.15.0 and later do."""
    cache = module.GeneratedCodeCache
    stock = cache.make_key
    position = list(inspect.signature(stock).parameters).index("input_nodes")

    @functools.wraps(stock)
    def make_key(*args: Any, **kwargs: Any) -> Any:
        key = stock(*args, **kwargs)
        nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else args[position]
        names = [node.get_name() for node in nodes]
        return None if key is None else f"{key}|aliasing={[names.index(n) for n in names]}"

    cache.make_key = make_key


PART = DrillsPart(
    drills={
        "make-key-extra-parameter": Drill(_make_key_extra_parameter, "unsupported"),
        "make-key-keyword": Drill(_make_key_keyword, "applied"),
        "upstream-key-fix": Drill(_upstream_key_fix, "not-needed"),
    },
)
