"""The fix lands whatever the import order, and ``import inductor_fix`` stays cheap.

Each case runs in a fresh interpreter: import order is process state. The compiles are the
check table's first op in each of its sequences, whichever patch shows it (skipped when no
patch of the table has a check op).
"""

from __future__ import annotations

import json

from helpers import OP, is_affected, needs_a_check_op, run_python

from inductor_fix.check.table import orders_of, steps_of
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

#: The op every case compiles; all its sequences in turn, one process and codegen cache.

HARNESS = """
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.table import orders_of, run_sequence
from quick_autotuning import quick_cpu_autotuning
OP = {op!r}
"""

PRELUDES = {
    "before_torch": "import inductor_fix\nimport torch\n" + HARNESS,
    "after_torch": "import torch\nimport inductor_fix\n" + HARNESS,
    "after_inductor_import": "import torch, torch._inductor.select_algorithm\nimport inductor_fix\n" + HARNESS,
    # A stock compile first (the op's first sequence; what it did, crash included, is not judged):
    # its codegen-cache entries must not be hit once patched.
    "after_first_compile": "import torch\n"
    + HARNESS
    + "import sys\n"
    + "sys.modules['inductor_fix'].remove()  # the harness import brought the package: stock until imported\n"
    + "with quick_cpu_autotuning(), triton_cpu_harness():\n"
    + "    run_sequence(OP, orders_of(OP)[0], 'cpu', compare=False)\n"
    + "import inductor_fix\n"
    + "inductor_fix.apply()\n",
}

BODY = """
import json
steps = []
with quick_cpu_autotuning(), triton_cpu_harness() as oracle:
    for order in orders_of(OP):
        steps += run_sequence(OP, order, "cpu", compare=False)
print(json.dumps({"state": str(inductor_fix.status().state),
                  "errors": [s.error for s in steps], "mismatches": len(oracle.mismatches)}))
"""


def _script(order: str) -> str:
    return PRELUDES[order].format(op=OP) + BODY


@instantiate_parametrized_tests
class TestImportOrders(TestCase):
    @parametrize("order", list(PRELUDES))
    @needs_a_check_op
    def test_fix_holds(self, order: str) -> None:
        result = run_python(_script(order))
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        outcome = json.loads(result.stdout.strip().splitlines()[-1])
        compiles = sum(steps_of(OP, sequence) for sequence in orders_of(OP))
        self.assertEqual(outcome, {"state": "applied", "errors": [None] * compiles, "mismatches": 0})

    @needs_a_check_op
    def test_stock_control_for_first_compile_order(self) -> None:
        """Negative control for the orders above: the same compiles crash without the fix."""
        result = run_python(_script("after_first_compile"), env={"INDUCTOR_FIX_DISABLE": "1"})
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        outcome = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(outcome["state"], "disabled")
        if is_affected(OP):
            self.assertTrue(any((error or "").startswith("TypeError: ") for error in outcome["errors"]), outcome)
            self.assertGreater(outcome["mismatches"], 0)

    def test_import_does_not_load_inductor(self) -> None:
        result = run_python(
            """
            import sys, torch
            before = set(sys.modules)
            import inductor_fix
            loaded = sorted(m for m in set(sys.modules) - before if m.startswith("torch"))
            print(inductor_fix.status().state, loaded)
            """
        )
        self.assertEqual(result.stdout.strip(), "pending []", result.stderr)

    def test_import_without_torch_imported_loads_no_torch(self) -> None:
        result = run_python("import sys, inductor_fix; print('torch' in sys.modules, inductor_fix.status().state)")
        self.assertEqual(result.stdout.split(), ["False", "pending"], result.stderr)


if __name__ == "__main__":
    run_tests()
