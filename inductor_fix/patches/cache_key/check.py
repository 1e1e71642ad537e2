"""cache-key's ``check`` workloads: the matmul two-compile sequences (pytorch/pytorch#188069).

Each op (bmm, mm, addmm, baddbmm, and bmm of x and x transposed) compiles twice in one
process with equal layouts, in both orders
(:data:`~inductor_fix.check.workloads.SEQUENCES`): aliased then distinct, distinct then
aliased (:func:`~inductor_fix.check.workloads.run_compiles`). The ops and their shapes are the
operations catalogue's (:mod:`inductor_fix.check.operations`).
"""

from __future__ import annotations

from ...check.operations import MATMULS, two_compile_workload
from ...check.parts import CheckPart

__all__ = ["PART"]

#: The ``check`` ops this patch's bug shows in, in its order: every matmul of the catalogue
#: (``bmm_t`` on request).
PART = CheckPart(workloads=tuple(
    two_compile_workload(op, help=help + (" (run on request)" if name == "bmm_t" else ""), default=name != "bmm_t")
    for name, (op, help) in MATMULS.items()))
