"""The GEMM template families and autotuning settings of an sm90 GPU, beyond ``check``'s ops: one
two-compile aliasing sequence each (:data:`~inductor_fix.check.workloads.SEQUENCES`), for the
family sweep of the GPU tier (``test_families_gpu.py``, ``docs/families.md``).

``python test/cache_key/families.py FAMILY ORDER`` runs one sequence in this process (stock
under ``INDUCTOR_FIX_DISABLE=1``) and prints ``FAMILY-RESULT {json}``: each compile's error
(None if it compiled and ran) and max relative error against eager.

``crashes``: whether stock crashed on the H200 (torch 2.11.0) in the sweep that found the
families; where it did not, the aliasing never reaches a template's inputs as one buffer of
fixed layout (a cast or copy in between: the prologue cast, ``_int_mm``'s and
``_scaled_mm``'s operand layouts, decompose-k's subgraph, conv's weight), so no code of
another arity is cached.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NamedTuple


class Family(NamedTuple):
    #: What it compiles, for the sweep table.
    what: str
    #: Inductor setting(s) or compile option that selects the family ("default": none).
    setting: str
    operands: int
    shape: tuple[int, ...]
    dtype: str
    call: str
    config: dict[str, Any] = {}
    options: dict[str, Any] = {}
    mode: str = "max-autotune-no-cudagraphs"
    crashes: bool = True


#: name -> family. ``call`` is a lambda over the operands, evaluated with ``torch`` and ``F`` in scope.
FAMILIES: dict[str, Family] = {
    "mm_epilogue": Family("relu(x @ x) * 2: a fused epilogue", "default (epilogue fusion)", 2, (128, 128),
                          "float32", "lambda a, b: torch.relu(a @ b) * 2"),
    "mm_persistent_tma": Family("x @ x, persistent TMA template", "triton.enable_persistent_tma_matmul", 2,
                                (256, 256), "float16", "lambda a, b: a @ b",
                                config={"triton.enable_persistent_tma_matmul": True}),
    "linear_tied": Family("F.linear(x, x) = x @ x.T", "default", 2, (128, 128), "float32",
                          "lambda a, b: F.linear(a, b)"),
    "mm_dynamic": Family("x @ x, dynamic shapes", "torch.compile(dynamic=True)", 2, (128, 128), "float32",
                         "lambda a, b: a @ b", options={"dynamic": True}),
    "bmm_cudagraphs": Family("bmm(x, x), CUDA graphs", 'mode="max-autotune"', 2, (4, 128, 128), "float32",
                             "lambda a, b: torch.bmm(a, b)", mode="max-autotune"),
    "mm_coordinate_descent": Family("x @ x, coordinate descent tuning", "coordinate_descent_tuning", 2, (128, 128),
                                    "float32", "lambda a, b: a @ b", config={"coordinate_descent_tuning": True}),
    "mm_prologue_cast": Family("x.bf16() @ x.bf16(): a fused prologue", "prologue_fusion", 2, (128, 128), "float32",
                               "lambda a, b: a.to(torch.bfloat16) @ b.to(torch.bfloat16)",
                               config={"prologue_fusion": True}, crashes=False),
    "gram_decompose_k": Family("x @ x.T, K >> M, N (decompose-k)", "default (triton.num_decompose_k_splits)", 2,
                               (32, 4096), "float32", "lambda a, b: a @ b.T", crashes=False),
    "mm_plus_mm": Family("x @ x + x @ x", "default (mm_plus_mm template)", 4, (128, 128), "float32",
                         "lambda a, b, c, d: a @ b + c @ d", crashes=False),
    "int_mm": Family("torch._int_mm(x, x), int8", "default", 2, (128, 128), "int8",
                     "lambda a, b: torch._int_mm(a, b)", crashes=False),
    "scaled_mm_fp8": Family("torch._scaled_mm(x, x.T), float8_e4m3fn", "default", 2, (128, 128), "float8_e4m3fn",
                            "lambda a, b: torch._scaled_mm(a, b.T, SCALE(), SCALE(), out_dtype=torch.bfloat16)",
                            crashes=False),
    "conv_self": Family("conv2d(x, x): x its own weight", "default (conv template)", 2, (16, 16, 3, 3), "float32",
                        "lambda a, b: F.conv2d(a, b)", crashes=False),
}

#: The sweep's rows, (family, order): both orders where stock crashed, alias-first elsewhere.
ROWS: list[tuple[str, str]] = [(name, order) for name, family in FAMILIES.items()
                               for order in (("alias-first", "distinct-first") if family.crashes else ("alias-first",))]

_SCALE: list[Any] = []


def run(name: str, order: str, device: str = "cuda") -> list[Any]:
    """Sequence ``order`` of family ``name`` in this process: its :class:`Step` list."""
    import torch
    import torch.nn.functional as F  # noqa: N812  (the call strings' name)
    from torch._inductor import config

    import inductor_fix.check.workloads as workloads

    family = FAMILIES[name]

    def scale() -> Any:  # one scale tensor for both operands of every compile
        if not _SCALE:
            _SCALE.append(torch.tensor(1.0, device=device))
        return _SCALE[0]

    call = eval(family.call, {"torch": torch, "F": F, "SCALE": scale})  # noqa: S307  (this file's own strings)
    op = workloads.Op(name, family.operands, family.shape, call)
    previous, workloads.MODE = workloads.MODE, family.mode
    try:
        with config.patch({"fx_graph_cache": False, **family.config}):
            return workloads.run_compiles(op, workloads.SEQUENCES[order], device, compare=True,
                                          dtype=getattr(torch, family.dtype), compile_options=family.options)
    finally:
        workloads.MODE = previous


def main(argv: list[str]) -> int:
    import dataclasses

    import inductor_fix  # noqa: F401  (applied unless INDUCTOR_FIX_DISABLE=1)
    from quick_autotuning import autotuning

    name, order = argv
    with autotuning("cuda"):
        steps = run(name, order)
    print("FAMILY-RESULT " + json.dumps([dataclasses.asdict(step) for step in steps]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
