"""The package's PEP 517 build backend: setuptools', and one thing more for editable installs.

torch loads the ``torch.backends`` entry point of every installed distribution at ``import
torch`` and turns any failure into a failed ``import torch``. An editable install's metadata
stays in site-packages while its modules stay in the checkout: once the checkout is moved,
deleted or checked out at a commit without ``_inductor_fix_autoload.py``, every ``import
torch`` of the environment would fail. So ``build_editable`` also puts a stand-in of that
module into the editable wheel, as a real file of site-packages (it is found before
setuptools' editable finder, which comes last on ``sys.meta_path``): it runs the checkout's
own module when that exists (its cached bytecode, as an import would: nothing goes stale),
and otherwise defines an ``activate`` that warns once and lets torch run stock, and a ``cli``
(the ``inductor-fix`` console script's target) that says in one line what to do, where the
package's own command would fail with a traceback.
``pip uninstall`` removes it with the rest (it is in the wheel's RECORD). And ``build_wheel``
leaves out the parts of a patch's folder that only the tools and tests read (``bench.py``,
``drills.py``). Everything else, the sdist included, is setuptools' own.
"""

import base64
import hashlib
import os
import re
import zipfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403

MODULE = "_inductor_fix_autoload.py"

STAND_IN = '''"""Stand-in of inductor-fix's editable install for the module torch's entry point names:
it runs the checkout's {module} (tools/build_backend.py says why)."""
from importlib.machinery import SourceFileLoader as _Loader

_SOURCE = {source!r}
#: Why the checkout's module does not run, if it does not (inductor-fix status reports it).
_MISSING = None


def _stand_in_activate():
    import sys
    import warnings

    message = (f"inductor_fix: not applied (autoload): the editable install's {{_SOURCE}} cannot be run "
               f"({{_MISSING}}); this process runs stock torch (pip uninstall inductor-fix, or reinstall it "
               "from the checkout: pip install -e CHECKOUT)")
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    except Exception:  # warnings are errors here: never fail torch's import
        sys.stderr.write(message + "\\n")


def _stand_in_cli():
    """The inductor-fix console script where the checkout's module defines none (gone, moved, an
    older commit): the package's command if it imports, else one line naming the cure."""
    import os
    import sys

    try:
        from inductor_fix.cli import main
    except ModuleNotFoundError as error:
        if error.name != "inductor_fix":
            raise
        checkout = os.path.dirname(_SOURCE)
        where = "is gone or moved" if not os.path.isdir(checkout) else "holds no inductor_fix package"
        sys.stderr.write(f"inductor-fix: this editable install's checkout {{checkout}} {{where}} ({{error}}): "
                         "python -m pip install -e CHECKOUT from where the checkout is now, or python -m pip "
                         "uninstall inductor-fix\\n")
        return 1
    return main()


activate = _stand_in_activate
cli = _stand_in_cli  # the checkout's module, once run, defines its own
try:  # the checkout gone, moved, at a commit without the module, or the module failing: stock torch
    _code = _Loader(__name__, _SOURCE).get_code(__name__)
    __file__ = _SOURCE
    exec(_code)
    if globals().get("activate") is _stand_in_activate or not callable(globals().get("activate")):
        raise ImportError("it defines no activate()")
except Exception as _error:
    _MISSING = f"{{type(_error).__name__}}: {{_error}}"
    activate, cli = _stand_in_activate, _stand_in_cli  # not half-defined ones of the checkout's
    __file__ = __spec__.origin if globals().get("__spec__") is not None else __file__
'''


#: Parts of a patch's folder that only the tools and the tests read (``tools/bench``,
#: ``test/drift.py``): in the sdist and a checkout, never in the wheel users install.
NOT_SHIPPED = re.compile(r"inductor_fix/patches/[^/]+/(bench|drills)\.py")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    _drop_unshipped(os.path.join(wheel_directory, name))
    return name


def _drop_unshipped(wheel: str) -> None:
    """Remove :data:`NOT_SHIPPED` files, and their RECORD lines, from ``wheel``; every other
    entry is written back as it was (same order, same timestamps: the build stays reproducible)."""
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist() if not NOT_SHIPPED.fullmatch(info.filename)]
    with zipfile.ZipFile(wheel + ".tmp", "w", zipfile.ZIP_DEFLATED) as new:
        for info, content in entries:
            if info.filename.endswith(".dist-info/RECORD"):
                lines = content.decode().splitlines(keepends=True)
                content = "".join(line for line in lines if not NOT_SHIPPED.fullmatch(line.split(",")[0])).encode()
            new.writestr(info, content)
    os.replace(wheel + ".tmp", wheel)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    _add_stand_in(os.path.join(wheel_directory, name))
    return name


def _add_stand_in(wheel: str) -> None:
    """Add the stand-in, with its RECORD line, to the editable wheel ``wheel`` (the backend
    runs in the project root, where the module is)."""
    data = STAND_IN.format(module=MODULE, source=os.path.abspath(MODULE)).encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist()]
    if any(info.filename == MODULE for info, _ in entries):
        return
    with zipfile.ZipFile(wheel + ".tmp", "w", zipfile.ZIP_DEFLATED) as new:
        for info, content in entries:
            if info.filename.endswith(".dist-info/RECORD"):
                content = f"{MODULE},sha256={digest},{len(data)}\n".encode() + content
            new.writestr(info, content)
        new.writestr(MODULE, data)
    os.replace(wheel + ".tmp", wheel)
