"""One ``check`` case, run in its own process: ``python -m inductor_fix.check.case OP ORDER DEVICE``.

Imports ``inductor_fix`` first (so the fix is applied unless the parent set
``INDUCTOR_FIX_DISABLE=1``), runs the two-compile sequence, and prints one line
``RESULT_MARKER {json}`` for the parent to read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import warnings
from typing import Any, ContextManager

import inductor_fix

from .child import die_with_parent

RESULT_MARKER = "INDUCTOR_FIX_CASE_RESULT"


def ignore_cpu_backend_warning() -> None:
    """PyPI's triton has no CPU driver and says so when Inductor imports it; the harness
    needs none, so the warning only confuses ``check``'s output."""
    warnings.filterwarnings("ignore", message="Could not find an active CPU backend", category=UserWarning)


def main(argv: list[str]) -> int:
    die_with_parent()  # a check killed outright must not leave its cases running
    op, order, device = argv
    if device == "cpu":
        ignore_cpu_backend_warning()
    import torch  # noqa: F401  (after inductor_fix on purpose: the import order users have)

    from .table import run_sequence

    if device == "cpu":
        from .harness import triton_cpu_harness

        harness: ContextManager[Any] = triton_cpu_harness()
    else:
        harness = contextlib.nullcontext()
    with harness:
        steps = run_sequence(op, order, device, compare=device != "cpu")
    from torch._dynamo.utils import counters

    result = {
        "state": str(inductor_fix.status().state),
        "steps": [dataclasses.asdict(step) for step in steps],
        "counters": dict(counters["inductor_fix"]),
    }
    print(RESULT_MARKER, json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
