"""``python -m inductor_fix``: the ``inductor-fix`` program, through the console script's own
entry (:func:`_inductor_fix_autoload.cli`): the same modules loaded and the same exit."""

import os
import sys

from _inductor_fix_autoload import cli

# ``-m`` put the working directory first on sys.path, where a ``torch/`` folder (a PyTorch checkout)
# stands in for the environment's torch, which the commands describe; the console script's
# sys.path[0] is its own folder. So, as ``python -m pip`` does, take it off: the package and this
# entry module are imported by now (from there, where that is where they are: a moved editable
# checkout), so only what the commands import next is looked for in the environment alone.
try:
    _here: "str | None" = os.getcwd()
except OSError:  # deleted since: -m put nothing first
    _here = None
if not getattr(sys.flags, "safe_path", False) and sys.path and sys.path[0] == _here:
    del sys.path[0]
sys.exit(cli())
