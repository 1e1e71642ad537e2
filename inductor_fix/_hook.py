"""Run a callback right after a module is first imported (post-import hooks).

``import torch._inductor.select_algorithm`` costs about 2 s, so the package must
not import it itself. One finder on ``sys.meta_path`` serves every hook: for a
hooked module it wraps the loader the other finders return; once the module body
has run, it puts the real loader back on the module (``__loader__`` and
``__spec__.loader``, so ``importlib.reload`` and ``inspect`` see the real one) and
runs the callbacks. :func:`when_imported` is the one way the package asks for a
module: the callback runs at once if the module is loaded, else when it loads.

A callback never breaks the import that triggered it: an exception it raises is
logged, with one :class:`~inductor_fix.InductorFixWarning` per callback and reason,
and the importing program carries on (the module itself imported fine).
"""

from __future__ import annotations

import importlib
import logging
import sys
from types import ModuleType
from typing import Any, Callable, Sequence

__all__ = ["FINDER", "loaded", "register", "unregister", "when_imported"]

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
            _call(callback, module)

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


def _call(callback: Callback, module: ModuleType) -> None:
    """``callback(module)``, never raising into the import that runs it."""
    try:
        callback(module)
    except Exception as error:  # the user's import must succeed: the module itself is fine
        from ._warnings import warn_once

        name = getattr(callback, "__qualname__", repr(callback))
        logging.getLogger("inductor_fix").debug("post-import hook %s of %s failed", name, module.__name__,
                                                exc_info=True)
        warn_once(f"inductor_fix: the hook {name} on import of {module.__name__} failed, so it did nothing: "
                  f"{type(error).__name__}: {error}")


def when_imported(module_name: str, callback: Callback) -> None:
    """Call ``callback(module)`` now if ``module_name`` is loaded (after waiting for an
    import of it in progress in another thread), and each time an import executes it later
    (a reload gives new class objects). Registering a callback twice changes nothing. An
    exception from ``callback`` is logged and warned once, never raised to the importer or
    to the caller.

    Call it without holding a lock that ``callback`` takes (see :func:`loaded`).
    """
    register(module_name, callback)
    module = loaded(module_name)
    if module is not None:
        _call(callback, module)


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
