"""Run a callback right after a module is first imported (post-import hooks).

``import torch._inductor.select_algorithm`` costs about 2 s, so the package must
not import it itself. One finder on ``sys.meta_path`` serves every hook: for a
hooked module it wraps the loader the other finders return; once the module body
has run, it puts the real loader back on the module (``__loader__`` and
``__spec__.loader``, so ``importlib.reload`` and ``inspect`` see the real one) and
runs the callbacks. If the module is already in ``sys.modules`` when a hook is
registered, the caller runs the callback at once (:func:`loaded`).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any, Callable, Sequence

__all__ = ["FINDER", "loaded", "register", "unregister"]

Callback = Callable[[ModuleType], None]


class _CallbackLoader:  # a loader by protocol: importlib.abc would cost every start-up ~4 ms
    def __init__(self, loader: Any, callbacks: list[Callback]) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            module.__loader__ = self._loader
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self._loader
        for callback in list(self._callbacks):
            callback(module)

    def __getattr__(self, name: str) -> Any:
        # get_source, get_code, is_package ... keep inspect and linecache working meanwhile.
        return getattr(self._loader, name)


class _Finder:  # a sys.meta_path finder by protocol (find_spec)
    def __init__(self) -> None:
        self.hooks: dict[str, list[Callback]] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        callbacks = self.hooks.get(fullname)
        if not callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _CallbackLoader(spec.loader, callbacks)
                return spec
        return None


#: The one finder of this package; first on ``sys.meta_path`` while any hook is registered.
FINDER = _Finder()


def register(module_name: str, callback: Callback) -> None:
    """Call ``callback(module)`` once ``module_name`` has been executed by an import (once per
    callback; registering it again changes nothing)."""
    callbacks = FINDER.hooks.setdefault(module_name, [])
    if callback not in callbacks:
        callbacks.append(callback)
    if FINDER not in sys.meta_path:
        sys.meta_path.insert(0, FINDER)


def unregister(module_name: str, callback: Callback) -> None:
    callbacks = FINDER.hooks.get(module_name, [])
    if callback in callbacks:
        callbacks.remove(callback)
    if not any(FINDER.hooks.values()):
        while FINDER in sys.meta_path:
            sys.meta_path.remove(FINDER)


def loaded(module_name: str) -> ModuleType | None:
    """The module if an import of it has started, after waiting for that import to
    finish (``import_module`` takes the module's import lock); else None.

    Call it without holding locks a callback takes: the importing thread runs the
    callbacks before it releases the module's import lock.
    """
    if module_name not in sys.modules:
        return None
    return importlib.import_module(module_name)
