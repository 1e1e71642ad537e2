"""Run a callback right after one module is first imported (a post-import hook).

``import torch._inductor.select_algorithm`` costs about 2 s, so the package must
not import it itself. A finder on ``sys.meta_path`` wraps the loader of that one
module; once the module body has run, the callback patches it. If the module is
already in ``sys.modules`` when the hook is installed, the callback runs at once.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any, Callable, Sequence

__all__ = ["PostImportHook"]


class _CallbackLoader:  # a loader by protocol: importlib.abc would cost every start-up ~4 ms
    def __init__(self, loader: Any, callback: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str):
        # get_source, get_code, is_package ... keep inspect and linecache working.
        return getattr(self._loader, name)


class PostImportHook:  # a sys.meta_path finder by protocol (find_spec)
    """Calls ``callback(module)`` once ``module_name`` has been executed by an import."""

    def __init__(self, module_name: str, callback: Callable[[ModuleType], None]) -> None:
        self.module_name = module_name
        self._callback = callback

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> Any:
        if fullname != self.module_name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _CallbackLoader(spec.loader, self._callback)
                return spec
        return None

    def install(self) -> None:
        """Put the finder first on ``sys.meta_path`` (once)."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def loaded_module(self) -> ModuleType | None:
        """The module if an import of it has started, after waiting for that import to
        finish (``import_module`` takes the module's import lock); else None.

        Call it without holding locks the callback takes: the importing thread runs
        the callback before it releases the module's import lock.
        """
        if self.module_name not in sys.modules:
            return None
        return importlib.import_module(self.module_name)

    def uninstall(self) -> None:
        while self in sys.meta_path:
            sys.meta_path.remove(self)
