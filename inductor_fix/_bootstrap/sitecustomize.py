"""Start-up hook of ``inductor-fix run``: the fix in every Python process of the command.

At start-up Python's ``site`` imports the first ``sitecustomize`` module on
``sys.path``. ``inductor-fix run`` puts this folder first on ``PYTHONPATH``, which
children inherit (``torchrun`` ranks, ``multiprocessing`` spawns; Inductor's compile
and autotune workers build theirs from ``sys.path``), so each of them runs this file.
It imports nothing: it puts a finder on ``sys.meta_path`` that imports ``inductor_fix``
only when torch starts importing what the package hooks (torch's log registry, then
Inductor's ``select_algorithm``), so a process that never imports torch pays almost
nothing. Then it runs the ``sitecustomize`` that would have run without it, if any.
Never raises for its own reasons: a Python that cannot import the package says so once
on stderr and runs on stock torch.
"""

import sys

#: Marks every copy of this file, so that no copy chains to another (two installs, a
#: symlink, a nested ``run``): the next ``sitecustomize`` is always someone else's.
MARKER = "inductor_fix start-up hook"
#: The first module torch imports that the package hooks (TORCH_LOGS registration), and
#: the one it patches; whichever comes first imports the package.
TRIGGERS = ("torch._logging._registrations", "torch._inductor.select_algorithm")


class _Trigger:  # a sys.meta_path finder by protocol
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in TRIGGERS:
            return None
        while self in sys.meta_path:
            sys.meta_path.remove(self)
        try:
            first = "inductor_fix" not in sys.modules  # else torch's autoload imported it already
            import inductor_fix._hook as hook  # applies the fix; registers the package's own finder
            from inductor_fix._lifecycle import LIFECYCLE

            LIFECYCLE.activated("run", claims_import=first)
        except Exception as error:  # e.g. a python of another environment on PATH
            sys.stderr.write(
                f"inductor-fix run: {sys.executable} cannot import inductor_fix "
                f"({type(error).__name__}: {error}); this process runs without the fix\n"
            )
            return None
        # The import in progress has passed the package's finder already: ask it directly.
        return hook.FINDER.find_spec(fullname, path, target)


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` under that name, as site would have."""
    import os
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


if "inductor_fix" not in sys.modules:
    sys.meta_path.insert(0, _Trigger())
_chain()
