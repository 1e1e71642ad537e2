"""torch's autoload entry point for ``inductor_fix``: installed means protected.

At the end of ``torch/__init__.py`` (torch 2.5+), ``_import_device_backends`` loads and
calls every entry point of the group ``torch.backends``; the wheel declares
``inductor_fix = _inductor_fix_autoload:activate``. So every process that imports torch
in an environment with the package installed gets the fix, with no import line and no
wrapper: ranks, workers, notebook kernels, ``python -I``.

torch is partly initialised when this runs, and every process that imports torch pays
for it, so :func:`activate` only registers a post-import hook: a finder that imports the
package when Inductor's ``select_algorithm`` starts importing (the package then patches
it as it loads). A process that never compiles imports nothing of the package. Two
things cannot wait: the ``inductor_fix`` log name is registered now (torch parses
``TORCH_LOGS`` right after this call and rejects unknown names), and with
``INDUCTOR_FIX_REPORT`` set the package is imported now, so that a report path that
cannot be written is said when the job starts.

This module sits outside the package so that loading the entry point imports nothing of
``inductor_fix``, and so that the package knows autoload activated it. torch turns an
exception here into a failed ``import torch``: nothing here raises; a fault is one
warning that says why, and torch runs stock.
"""

import os
import sys

__all__ = ["VARIABLE", "activate"]

VARIABLE = "INDUCTOR_FIX_AUTOLOAD"
#: Set, to the value, by the process that warned about a bad INDUCTOR_FIX_AUTOLOAD: its
#: children (the rest of the job) do not warn again.
WARNED_VARIABLE = "INDUCTOR_FIX_AUTOLOAD_WARNED"
#: The module whose import brings the package in (the one it patches).
TRIGGER = "torch._inductor.select_algorithm"
_OFF = ("0", "false", "no", "off")
_ON = ("", "1", "true", "yes", "on")


def activate() -> None:
    """Activate ``inductor_fix`` as ``import inductor_fix`` does, lazily, unless
    ``INDUCTOR_FIX_AUTOLOAD`` is ``0``/``false``/``no``/``off``. Any value other than those
    and ``1``/``true``/``yes``/``on`` (or unset) is on, with one warning per job. Never raises."""
    try:
        value = os.environ.get(VARIABLE, "").strip().lower()
        if value in _OFF:
            return
        misspelt = value not in _ON and os.environ.get(WARNED_VARIABLE) != os.environ[VARIABLE]
        if misspelt or "inductor_fix" in sys.modules or os.environ.get("INDUCTOR_FIX_REPORT"):
            if _import_package() and misspelt:  # its warning category, and its warn-once
                sys.modules["inductor_fix._warnings"].warn_once(
                    f"inductor_fix: {VARIABLE}={os.environ[VARIABLE]!r} is not one of 0, false, no, off (off) or "
                    "1, true, yes, on (on, the default): treated as on", stacklevel=3)
                os.environ[WARNED_VARIABLE] = os.environ[VARIABLE]
            return
        internal = sys.modules.get("torch._logging._internal")
        if internal is not None and hasattr(internal, "register_log"):
            internal.register_log("inductor_fix", "inductor_fix")  # as inductor_fix._logs does, later
        if not any(isinstance(finder, _Trigger) for finder in sys.meta_path):
            sys.meta_path.insert(0, _Trigger())
    except Exception as error:
        _fault(error)


def _import_package() -> bool:
    """Import the package (it applies the fix as it imports) and record the route; False
    (after one warning) if it cannot be imported."""
    try:
        first = "inductor_fix" not in sys.modules
        import inductor_fix._lifecycle as lifecycle

        lifecycle.LIFECYCLE.activated("autoload", claims_import=first)
        return True
    except Exception as error:  # a broken install: run stock, and say why
        _fault(error)
        return False


class _Trigger:  # a sys.meta_path finder by protocol: importlib.abc would cost every process
    def find_spec(self, fullname, path=None, target=None):
        if fullname != TRIGGER:
            return None
        while self in sys.meta_path:
            sys.meta_path.remove(self)
        if not _import_package():
            return None
        # The import in progress has passed the package's own finder already: ask it directly.
        return sys.modules["inductor_fix._hook"].FINDER.find_spec(fullname, path, target)


def _warn(message: str) -> None:
    import warnings

    # Not imported anew for its warning category: the package's import may be what failed.
    category = getattr(sys.modules.get("inductor_fix._warnings"), "InductorFixWarning", RuntimeWarning)
    try:
        warnings.warn(message, category, stacklevel=4)
    except Warning:  # warnings are errors here: still never raise into torch's import
        sys.stderr.write(message + "\n")


def _fault(error: Exception) -> None:
    try:
        _warn(f"inductor_fix: not applied (autoload): {type(error).__name__}: {error}; this process runs stock "
              f"torch (reinstall inductor-fix; {VARIABLE}=0 turns this route off)")
    except Exception:
        pass
