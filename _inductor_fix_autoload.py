"""torch's autoload entry point for ``inductor_fix``, and the ``inductor-fix`` program's entry.

torch calls :func:`activate` (``inductor_fix = _inductor_fix_autoload:activate`` in the
``torch.backends`` group) at the end of ``import torch``, torch 2.5+: installed means
protected. ``inductor-fix run``'s start-up hook calls :func:`start` with ``"run"``. The
``inductor-fix`` console script and ``python -m inductor_fix`` both run :func:`cli`: one
program, the same modules loaded, the same exit. Each starts the package through its one
start-up path, :data:`_inductor_fix_startup.STARTUP`, handing it the one thing that module never
does itself: how to import the package's API (:func:`_import_api`), which happens only when
Inductor's ``select_algorithm`` loads or a command needs it. So this module sits above both: it
may load the package, and neither the package nor the start-up module imports it back.

It is a top-level module beside the package: its name, :func:`activate` and :func:`cli` (the
``inductor-fix`` console script) are in the metadata of every installed copy, an editable
install's included, whose import finder also knows each top-level module by name (a new one
would not import there until reinstalled), so none of them ever changes name; an editable
install older than :mod:`_inductor_fix_startup` runs stock torch and says to reinstall.
Nothing here raises for its own reasons: torch turns an exception in an entry point into a
failed ``import torch``.
"""

import sys

try:
    from _inductor_fix_startup import STARTUP as _STARTUP
except Exception as _error:  # ImportError: an editable install made before the module existed
    _STARTUP = None  # type: ignore[assignment]  # and every use checks
    _missing = _error

__all__ = ["activate", "cli", "start"]


def _import_api() -> None:
    import inductor_fix._api  # noqa: F401  (it applies the fix as it imports)


def start(route: str) -> None:
    """Start the package in this process by ``route`` (``"autoload"``, ``"run"``, ``"cli"``):
    :meth:`_inductor_fix_startup.Startup.start` with the importer of the package's API. Never raises."""
    if _STARTUP is None:
        try:
            sys.stderr.write(f"inductor_fix: not applied ({route}): {_missing}; this editable install predates "
                             "it: reinstall it (python -m pip install -e <checkout>)\n")
        except Exception:
            pass
        return
    _STARTUP.start(route, _import_api)


def activate() -> None:
    """torch's entry point: :func:`start` by ``"autoload"``. Never raises."""
    start("autoload")


def cli() -> int:
    """The ``inductor-fix`` program (the console script, and ``python -m inductor_fix``):
    :func:`start` by ``"cli"``, then ``inductor_fix.cli.main()``, its exit status. Here, beside
    the package, so that a package that cannot be imported is one line on stderr naming the cure
    (exit 1), not a traceback. An editable install's stand-in of this module
    (``tools/build_backend.py``) has its own, which names the checkout that is gone. Each command
    imports the package's API only if it needs it (``status``, ``check``)."""
    if _STARTUP is not None:
        start("cli")
    try:
        from inductor_fix.cli import main
    except ModuleNotFoundError as error:
        if error.name not in ("inductor_fix", "_inductor_fix_startup"):  # the package's own: its traceback says
            raise
        sys.stderr.write(f"inductor-fix: its package cannot be imported ({error}): reinstall it, python -m pip "
                         "install --force-reinstall inductor-fix, or remove it, python -m pip uninstall "
                         "inductor-fix\n")
        return 1
    return main()
