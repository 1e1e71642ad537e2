"""``python -m inductor_fix``: the ``inductor-fix`` program, through the console script's own
entry (:func:`_inductor_fix_autoload.cli`): the same modules loaded and the same exit."""

import sys

from _inductor_fix_autoload import cli

sys.exit(cli())
