"""Start-up hook of ``inductor-fix run``: the fix in every Python process of the command.

At start-up Python's ``site`` imports the first ``sitecustomize`` module on
``sys.path``. ``inductor-fix run`` puts this folder first on ``PYTHONPATH``, which
children inherit (``torchrun`` ranks, ``multiprocessing`` spawns; Inductor's compile
and autotune workers build theirs from ``sys.path``), so each of them runs this file:
it imports ``inductor_fix`` (which obeys ``INDUCTOR_FIX_DISABLE`` and imports nothing
of torch), then runs the ``sitecustomize`` that would have run without it, if any.
Never raises for its own reasons: a Python that cannot import the package says so once
on stderr and runs on stock torch.
"""

import os
import sys

def _activate() -> None:
    try:
        import inductor_fix  # noqa: F401
    except Exception as error:  # e.g. a python of another environment on PATH
        sys.stderr.write(
            f"inductor-fix run: {sys.executable} cannot import inductor_fix "
            f"({type(error).__name__}: {error}); this process runs without the fix\n"
        )


#: Marks every copy of this file, so that no copy chains to another (two installs, a
#: symlink, a nested ``run``): the next ``sitecustomize`` is always someone else's.
MARKER = "inductor_fix start-up hook"


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` under that name, as site would have."""
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
        folder = os.path.realpath(os.path.dirname(spec.origin))
        path = [entry for entry in path if os.path.realpath(entry or os.curdir) != folder]
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_activate()
_chain()
