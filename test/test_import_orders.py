"""The fix lands whatever the import order, and ``import inductor_fix`` stays cheap.

Each case runs in a fresh interpreter: import order is process state.
"""

from __future__ import annotations

import json

from helpers import affected, run_python

from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

HARNESS = """
from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.check.workloads import run_compiles
from quick_autotuning import quick_cpu_autotuning
"""

PRELUDES = {
    "before_torch": "import inductor_fix\nimport torch\n" + HARNESS,
    "after_torch": "import torch\nimport inductor_fix\n" + HARNESS,
    "after_inductor_import": "import torch, torch._inductor.select_algorithm\nimport inductor_fix\n" + HARNESS,
    # A stock compile first: its aliased codegen-cache entry must not be hit once patched.
    "after_first_compile": "import torch\n"
    + HARNESS
    + "with quick_cpu_autotuning(), triton_cpu_harness():\n"
    + "    assert run_compiles('bmm', (True,), 'cpu', compare=False)[0].error is None\n"
    + "import inductor_fix\n",
}

BODY = """
import json
with quick_cpu_autotuning(), triton_cpu_harness() as oracle:
    steps = run_compiles("bmm", (False, True, False), "cpu", compare=False)
print(json.dumps({"state": str(inductor_fix.status().state),
                  "errors": [s.error for s in steps], "mismatches": len(oracle.mismatches)}))
"""


@instantiate_parametrized_tests
class TestImportOrders(TestCase):
    @parametrize("order", list(PRELUDES))
    def test_fix_holds(self, order: str) -> None:
        result = run_python(PRELUDES[order] + BODY)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        outcome = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(outcome, {"state": "applied", "errors": [None, None, None], "mismatches": 0})

    def test_stock_control_for_first_compile_order(self) -> None:
        """Negative control for the orders above: the same compiles crash without the fix."""
        result = run_python(PRELUDES["after_first_compile"] + BODY, env={"INDUCTOR_FIX_DISABLE": "1"})
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        outcome = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(outcome["state"], "disabled")
        if affected("bmm"):
            self.assertRegex(outcome["errors"][0] or "", "^TypeError: ")
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
