"""torch's autoload entry point for ``inductor_fix``: installed means protected.

At the end of ``torch/__init__.py`` (torch 2.5+), ``_import_device_backends`` loads and
calls every entry point of the group ``torch.backends``; the wheel declares
``inductor_fix = _inductor_fix_autoload:activate``. So every process that imports torch
in an environment with the package installed gets the fix, with no import line and no
wrapper: ranks, workers, notebook kernels, ``python -I``.

This module sits outside the package so that loading the entry point imports nothing of
``inductor_fix`` when ``INDUCTOR_FIX_AUTOLOAD=0`` turns this route off, and so that the
package knows it was activated by autoload rather than by an ``import``.

torch is partly initialised when this runs: :func:`activate` only imports the package,
which registers its post-import hooks (nothing of ``torch._inductor`` is imported until
Inductor loads). torch turns an exception here into a failed ``import torch``, so
:func:`activate` never raises: a fault is one warning that says why, and torch imports
stock.
"""

import os
import sys

__all__ = ["VARIABLE", "activate"]

VARIABLE = "INDUCTOR_FIX_AUTOLOAD"
#: Set, to the value, by the process that warned about a bad INDUCTOR_FIX_AUTOLOAD: its
#: children (the rest of the job) do not warn again.
WARNED_VARIABLE = "INDUCTOR_FIX_AUTOLOAD_WARNED"
_OFF = ("0", "false", "no", "off")
_ON = ("", "1", "true", "yes", "on")


def activate() -> None:
    """Activate ``inductor_fix`` as ``import inductor_fix`` does, unless
    ``INDUCTOR_FIX_AUTOLOAD`` is ``0``/``false``/``no``/``off``. Any other value than those
    and ``1``/``true``/``yes``/``on`` (or unset) is on, with one warning per job. Never raises."""
    try:
        value = os.environ.get(VARIABLE, "").strip().lower()
        if value in _OFF:
            return
        first = "inductor_fix" not in sys.modules
        import inductor_fix._lifecycle as lifecycle  # the package applies the fix as it imports

        lifecycle.LIFECYCLE.activated("autoload", claims_import=first)
        if value not in _ON and os.environ.get(WARNED_VARIABLE) != os.environ[VARIABLE]:
            from inductor_fix._warnings import warn_once

            warn_once(f"inductor_fix: {VARIABLE}={os.environ[VARIABLE]!r} is not one of 0, false, no, off (off) or "
                      "1, true, yes, on (on, the default): treated as on")
            os.environ[WARNED_VARIABLE] = os.environ[VARIABLE]
    except Exception as error:  # torch would fail `import torch`: run stock, and say why
        _fault(error)


def _fault(error: Exception) -> None:
    message = (f"inductor_fix: not applied at import torch (autoload): {type(error).__name__}: {error}; this "
               f"process runs stock torch (reinstall inductor-fix; {VARIABLE}=0 turns this route off)")
    try:
        import warnings

        # Not imported anew for its warning category: the package's import may be what failed.
        module = sys.modules.get("inductor_fix._warnings")
        category = getattr(module, "InductorFixWarning", RuntimeWarning)
        try:
            warnings.warn(message, category, stacklevel=3)
        except Warning:  # warnings are errors here: still never raise into torch's import
            sys.stderr.write(message + "\n")
    except Exception:
        pass
