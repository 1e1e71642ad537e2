"""How ``inductor_fix`` starts in a process, whichever route starts it: one object,
:data:`STARTUP` (a :class:`Startup`), with one entry, :meth:`Startup.start`, and all its state in
one place. Below both the package and torch's entry point module (it imports neither).

Routes: ``"autoload"``, torch's ``torch.backends`` entry point (:mod:`_inductor_fix_autoload`,
called at the end of ``import torch``, torch 2.5+: installed means protected;
``INDUCTOR_FIX_AUTOLOAD=0`` turns it off, ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` torch's for every
package); ``"run"``, ``inductor-fix run``'s start-up hook (``inductor_fix/_bootstrap/sitecustomize.py``);
``"import"``, ``import inductor_fix``; and ``"cli"``, the ``inductor-fix`` program
(``_inductor_fix_autoload.cli``, which ``python -m inductor_fix`` runs too). Each is recorded in
:attr:`Startup.routes`, first first, and leads to the same two hooks: when torch's log registry
loads, the ``inductor_fix`` log name is registered (torch parses ``TORCH_LOGS`` right after and
rejects unknown names); when Inductor's ``select_algorithm`` loads, the package's API is imported
(:meth:`Startup.activate`, by the importer the first route handed over), which applies the fix. So
a process that never compiles imports nothing of the package but its ``__init__``. Two things
activate it when torch loads instead: ``INDUCTOR_FIX_REPORT`` (a report path that cannot be
written is said when the job starts) and a misspelt ``INDUCTOR_FIX_AUTOLOAD`` (said with the
package's warning).

In the spirit of OpenTelemetry's ``BaseInstrumentor``: one flag (``Startup.active``), one
entry; quiet where nobody asked (autoload, ``run``, an import hook: a failure is one warning and
the process runs stock torch, not tried again), loud where someone did (``activate(explicit=True)``:
the API's first use, a command: the error is raised).

Hooks run from the one post-import finder (:data:`FINDER`, :func:`when_imported`): for a
hooked module it wraps the loader the other finders return; once the module body has run
it puts the real loader back on the module and runs the callbacks in order, those added
while they run included. A callback never breaks the import that triggered it: what it
raises is one warning, and the program carries on.

A top-level module beside the package, so that the entry point and the ``run`` hook import
nothing of ``inductor_fix`` until Inductor loads, and so that the package and the entry module
each import it and never each other's way back (the package never imports the entry module).
Nothing here raises for its own reasons: torch turns an exception in an entry point into a
failed ``import torch``.
"""

import _thread
import os
import sys

# Annotations that name typing's types are strings: no __future__ import, no typing, each a module
# this one would load into every process that starts through it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

    Callback = Callable[[ModuleType], object]

__all__ = ["FINDER", "INDUCTOR", "OFF", "ON", "STARTUP", "Startup", "VARIABLE", "loaded", "on_or_off", "unregister",
           "when_imported"]

#: The words of every on/off variable of the package (``INDUCTOR_FIX_AUTOLOAD``, ``INDUCTOR_FIX_DISABLE``).
ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")
VARIABLE = "INDUCTOR_FIX_AUTOLOAD"
#: Set, to the value, by the process that warned about a bad INDUCTOR_FIX_AUTOLOAD: its
#: children (the rest of the job) do not warn again.
WARNED_VARIABLE = "INDUCTOR_FIX_AUTOLOAD_WARNED"
REPORT_VARIABLE = "INDUCTOR_FIX_REPORT"
#: torch's log registry, and the module the package patches.
TORCH_LOGS = "torch._logging._registrations"
INDUCTOR = "torch._inductor.select_algorithm"


def on_or_off(value: str | None) -> bool | None:
    """True for an on word (or unset/empty), False for an off word, None for anything else. (The
    undo stack's "switch" is another thing: the object in a wrapped slot, ``inductor_fix._undo``.)"""
    value = (value or "").strip().lower()
    return True if value in ("",) + ON else False if value in OFF else None


class Startup:
    """The package's start-up in this process; the one instance is :data:`STARTUP`."""

    def __init__(self) -> None:
        #: How the package was activated in this process, first first (``Status.activated_by``).
        self.routes: list[str] = []
        #: How to import the package's API (which applies the fix): the first one a route handed over.
        self.importer: Callable[[], object] | None = None
        #: The routes whose import of the API is in progress: the package's own start meanwhile is theirs.
        self.importing: str | None = None
        #: Why the one quiet import of the API failed: it is not tried quietly again.
        self.failure: BaseException | None = None
        #: The one flag: the package's API is imported (the fix requested) in this process.
        self.active = False
        #: ``INDUCTOR_FIX_REPORT`` as the first route found it, made absolute then: a program may
        #: drop the variable or change directory before it loads Inductor.
        self.report: str | None = None

    def start(self, route: str, importer: "Callable[[], object] | None" = None) -> None:
        """Activate ``inductor_fix`` in this process by ``route`` (``"autoload"`` does nothing while
        ``INDUCTOR_FIX_AUTOLOAD`` is an off word): record it and hook torch's log registry and
        Inductor (see the module docstring). ``importer()`` imports the package's API: the entry
        module and the package each hand one over (this module never imports the package).
        Never raises."""
        try:
            if route == "autoload" and on_or_off(os.environ.get(VARIABLE)) is False:
                return
            if importer is not None and self.importer is None:
                self.importer = importer
            if not self.routes and os.environ.get(REPORT_VARIABLE):
                self.report = os.path.abspath(os.environ[REPORT_VARIABLE])
            self._add_route(route)
            when_imported(TORCH_LOGS, self._on_torch)
            when_imported(INDUCTOR, self._on_inductor)
        except Exception as error:
            _fault(route, error)

    def _add_route(self, route: str) -> None:
        # The package's import by a route activating it, or by the inductor-fix program, is that
        # route's own; the program's claims an import that ran first (python -m runs __init__ first).
        if route == "import" and (self.importing is not None or "cli" in self.routes):
            return
        if route == "cli" and "import" in self.routes:
            self.routes[self.routes.index("import")] = route
        if route not in self.routes:
            self.routes.append(route)

    def activate(self, explicit: bool = False) -> bool:
        """Import the package's API now (it applies the fix), once; True where it is imported.
        Quiet (``explicit`` False: a hook, no one asked): a failure is one warning, returns False,
        and is not tried again. Loud (``explicit``: the API's first use, a command): tried again
        whatever failed before, and what it raises is raised."""
        if self.active:
            return True
        if self.importer is None or (self.failure is not None and not explicit):
            return False
        previous, self.importing = self.importing, ", ".join(self.routes) or "?"
        try:
            self.importer()
        except Exception as error:  # a broken install: run stock, and say why
            if explicit:
                raise
            self.failure = error
            _fault(self.importing, error)
            return False
        finally:
            self.importing = previous
        self.active = True
        return True

    def _on_inductor(self, module: "ModuleType") -> None:
        self.activate()

    def _on_torch(self, module: "ModuleType") -> None:
        register_log = getattr(sys.modules.get("torch._logging._internal"), "register_log", None)
        if register_log is not None:
            register_log("inductor_fix", "inductor_fix")
        value = os.environ.get(VARIABLE)
        misspelt = on_or_off(value) is None and os.environ.get(WARNED_VARIABLE) != value
        if misspelt or self.report:
            self.activate()
        if misspelt:  # with the package's warn-once where it imported, else a plain warning
            _warn(f"inductor_fix: {VARIABLE}={os.environ[VARIABLE]!r} is not one of {', '.join(OFF)} (off) or "
                  f"{', '.join(ON)} (on, the default): treated as on", origin=f"${VARIABLE}")
            os.environ[WARNED_VARIABLE] = os.environ[VARIABLE]


#: The start-up of this process.
STARTUP = Startup()


def _fault(route: str, error: BaseException) -> None:
    _warn(f"inductor_fix: not applied ({route}): {type(error).__name__}: {error}; this process runs stock torch "
          f"(reinstall inductor-fix; inductor-fix status says more)")


def _warn(message: str, origin: str | None = None) -> None:
    """One warning: the package's warn-once where it is loaded (not imported anew for it: its
    import may be what failed), else a RuntimeWarning; stderr where warnings are errors.
    ``origin`` (``"$INDUCTOR_FIX_AUTOLOAD"``) names what caused it where no line of code did."""
    try:
        package = sys.modules.get("inductor_fix._warnings")
        if package is not None:
            package.warn_once(message, stacklevel=4, origin=origin)
        elif origin is not None:
            import warnings

            warnings.warn_explicit(message, RuntimeWarning, origin, 0, module="inductor_fix")
        else:
            import warnings

            warnings.warn(message, RuntimeWarning, stacklevel=4)
    except Exception:  # never raise into torch's import
        try:
            sys.stderr.write(message + "\n")
        except Exception:
            pass


# --- the post-import finder ---------------------------------------------------------------


class _CallbackLoader:  # a loader by protocol: importlib.abc would cost every start-up ~4 ms
    def __init__(self, loader: "Any", name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: "ModuleSpec") -> "ModuleType | None":
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: "ModuleType") -> None:
        try:
            self._loader.exec_module(module)
        finally:
            module.__loader__ = self._loader
            spec = getattr(module, "__spec__", None)
            if spec is not None:
                spec.loader = self._loader
        FINDER.run(self._name, module)

    def __getattr__(self, name: str) -> "Any":
        # get_source, get_code, is_package ... keep inspect and linecache working meanwhile.
        return getattr(self._loader, name)


class _Finder:  # a sys.meta_path finder by protocol (find_spec)
    def __init__(self) -> None:
        self.hooks: dict[str, list[Callback]] = {}  # module name -> [callback]
        self.running: set[str] = set()  # module names whose callbacks are running

    def find_spec(self, fullname: str, path: "Any" = None, target: "Any" = None) -> "ModuleSpec | None":
        if not self.hooks.get(fullname):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _CallbackLoader(spec.loader, fullname)  # type: ignore[assignment]  # a loader by protocol
                return spec
        return None

    def run(self, name: str, module: "ModuleType") -> None:
        """Run ``name``'s callbacks in order, those registered meanwhile included (under the
        lock, the last look and leaving ``running`` are one step: none registered then is lost)."""
        with _LOCK:
            self.running.add(name)
        done = 0
        try:
            while True:
                with _LOCK:
                    callbacks = self.hooks.get(name, ())
                    if done >= len(callbacks):
                        self.running.discard(name)
                        return
                    callback = callbacks[done]
                _call(callback, module)
                done += 1
        except BaseException:
            with _LOCK:
                self.running.discard(name)
            raise


#: The one finder of the package; first on ``sys.meta_path`` while any hook is registered.
FINDER = _Finder()
#: Guards the finder's hooks (``_thread``'s: ``threading`` would cost a process that never imports torch).
_LOCK = _thread.RLock()


def _call(callback: "Callback", module: "ModuleType") -> None:
    """``callback(module)``, never raising into the import that runs it."""
    try:
        callback(module)
    except Exception as error:  # the user's import must succeed: the module itself is fine
        name = getattr(callback, "__qualname__", repr(callback))
        _warn(f"inductor_fix: the hook {name} on import of {module.__name__} failed, so it did nothing: "
              f"{type(error).__name__}: {error}")


def when_imported(name: str, callback: "Callback") -> None:
    """Call ``callback(module)`` now if module ``name`` is loaded (after waiting for an import
    of it in progress in another thread), and each time an import executes it later (a reload
    gives new class objects): callbacks are idempotent. Registering one twice registers it
    once; one registered while ``name``'s callbacks run is run after them. What ``callback``
    raises is warned, never raised. Call it without holding a lock that ``callback`` takes."""
    with _LOCK:
        callbacks = FINDER.hooks.setdefault(name, [])
        if callback not in callbacks:
            callbacks.append(callback)
        if FINDER not in sys.meta_path:
            sys.meta_path.insert(0, FINDER)
        if name in FINDER.running:
            return
    module = loaded(name)
    if module is not None:
        _call(callback, module)


def unregister(name: str, callback: "Callback") -> None:
    with _LOCK:
        callbacks = FINDER.hooks.get(name, [])
        if callback in callbacks:
            callbacks.remove(callback)
        if not any(FINDER.hooks.values()):
            while FINDER in sys.meta_path:
                sys.meta_path.remove(FINDER)


def loaded(name: str) -> "ModuleType | None":
    """The module if an import of it has started, after waiting for that import to finish
    (``import_module`` takes the module's import lock); else None. Call it without holding
    locks a callback takes: the importing thread runs the callbacks before it releases the
    module's import lock."""
    if name not in sys.modules:
        return None
    import importlib

    return importlib.import_module(name)
