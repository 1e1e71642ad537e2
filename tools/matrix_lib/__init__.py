"""Helpers of ``tools/run_matrix``: expectations, the suite runs, and the results file.

- :mod:`matrix_lib.expectations` - what each torch release must do, as data;
- :mod:`matrix_lib.phases` - running the CPU property suite stock / patched / diff-applied;
- :mod:`matrix_lib.results` - the JSON results file (also the resume state), table and markdown.

Importable with ``tools/`` and the project root on ``sys.path`` (the expectations read
the affected range from ``inductor_fix``'s patch table; a test checking docs/matrix.md
does ``from matrix_lib.results import load, markdown``).
"""
