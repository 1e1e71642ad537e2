"""Drift drills of the cache-key patch: ``GeneratedCodeCache.make_key`` moves (test/drift.py)."""

from __future__ import annotations

import ast
import functools
import inspect
import types
from typing import Any

from drift import Drill, gains_keyword, redefined


def _make_key_extra_parameter(module: types.ModuleType) -> None:
    """``make_key`` gains a required parameter after ``input_nodes`` the probe cannot fill."""
    cache = module.GeneratedCodeCache

    def edit(arguments: ast.arguments) -> None:
        position = [a.arg for a in arguments.args].index("input_nodes") + 1
        arguments.args.insert(position, ast.arg("prologue_nodes"))

    cache.make_key = redefined(cache.make_key, edit, module)


def _upstream_key_fix(module: types.ModuleType) -> None:
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


DRILLS = {
    "make-key-extra-parameter": Drill(_make_key_extra_parameter, {"cache-key": "unsupported"}),
    # An optional keyword the probe need not fill.
    "make-key-keyword": Drill(gains_keyword("GeneratedCodeCache", "make_key", "layout_hint"), {}),
    "upstream-key-fix": Drill(_upstream_key_fix, {"cache-key": "not-needed"}),
}
