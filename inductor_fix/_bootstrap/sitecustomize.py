"""Start-up hook of ``inductor-fix run``: the fix in every Python process of the command.

At start-up Python's ``site`` imports the first ``sitecustomize`` module on
``sys.path``. ``inductor-fix run`` puts this folder first on ``PYTHONPATH``, which
children inherit (``torchrun`` ranks, ``multiprocessing`` spawns; Inductor's compile
and autotune workers build theirs from ``sys.path``), so each of them runs this file.
It starts the package's one start-up path by the route ``"run"``
(``_inductor_fix_autoload.start``, the entry point's module: hooks that import the package
only when Inductor loads), so a process that never imports torch pays almost nothing. Then it runs the
``sitecustomize`` that would have run without it, if any. Never raises for its own
reasons: a Python that cannot import the start-up module says so once on stderr and runs
on stock torch.
"""

import sys

#: Marks every copy of this file, so that no copy chains to another (two installs, a
#: symlink, a nested ``run``): the next ``sitecustomize`` is always someone else's.
MARKER = "inductor_fix start-up hook"


def _start() -> None:
    try:
        import _inductor_fix_autoload
    except Exception as error:  # e.g. a python of another environment on PATH
        sys.stderr.write(f"inductor-fix run: {sys.executable} cannot import inductor_fix's start-up module "
                         f"({type(error).__name__}: {error}); this process runs without the fix\n")
        return
    _inductor_fix_autoload.start("run")


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` under that name, as site would have."""
    import os

    try:
        # The import system's own modules, loaded before site runs: importlib.machinery and
        # importlib.util are these same objects, but importing them (contextlib, collections,
        # functools ...) cost a process that never imports torch ~6 ms.
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import PathFinder
    except ImportError:  # a Python without CPython's frozen import system
        from importlib.machinery import PathFinder
        from importlib.util import module_from_spec

    path = list(sys.path)
    while True:
        spec = PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None or not spec.origin:
            return
        try:
            with open(spec.origin, encoding="utf-8", errors="replace") as source:
                ours = MARKER in source.read()
        except OSError:
            ours = False
        if not ours:
            break
        # abspath, not realpath: realpath's lstat of every component of every entry cost each
        # process ~0.15 ms; an entry that reaches this folder by another name (a symlink) is
        # found as another copy on the next pass and dropped then.
        folder = os.path.abspath(os.path.dirname(spec.origin))
        rest = [entry for entry in path if os.path.abspath(entry or os.curdir) != folder]
        if len(rest) == len(path):  # an origin outside every entry (a custom path hook): never loop
            return
        path = rest
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_start()
_chain()
