"""cutlass-cache-key's ``check`` workload: ``mm`` through the CUTLASS GEMM backend, two compiles
in one process with equal layouts, aliased then distinct and the other order
(:data:`~inductor_fix.check.workloads.SEQUENCES`).

It needs what the CUTLASS backend needs: a CUDA GPU, ``nvcc`` and CUTLASS (a checkout, or the
``nvidia-cutlass`` wheel laid out as one, named by ``TORCHINDUCTOR_CUTLASS_DIR``); elsewhere
``check`` skips it and says why (:func:`unavailable`). fp16 (256, 256): CUTLASS's Hopper
kernels take half precision. One CUTLASS config and one swizzle per selection keep ``nvcc`` to
one kernel per aliasing pattern (about a minute each on an H200's host).
"""

from __future__ import annotations

import importlib
import os
import shutil
from typing import Any

from ...check.operations import two_compile_workload
from ...check.parts import CheckPart
from ...check.workloads import Op

__all__ = ["CONFIG", "PART", "unavailable"]

#: Inductor settings of the workload: the CUTLASS backend alone, one config, one swizzle.
CONFIG: dict[str, Any] = {"max_autotune_gemm_backends": "CUTLASS", "cutlass.cutlass_max_profiling_configs": 1,
                          "cutlass.cutlass_max_profiling_swizzle_options": [2]}
#: Where each release keeps ``try_import_cutlass``.
_UTILS = ("torch._inductor.codegen.cutlass.utils", "torch._inductor.codegen.cuda.cutlass_utils")


def unavailable(device: str) -> str | None:
    """Why the CUTLASS workload cannot run on ``device`` here, or None if it can."""
    if device != "cuda":
        return "needs a CUDA GPU: the CUTLASS backend compiles C++ kernels with nvcc and runs them there"
    from torch.utils.cpp_extension import CUDA_HOME

    if shutil.which("nvcc") is None and not (CUDA_HOME and os.path.exists(os.path.join(CUDA_HOME, "bin", "nvcc"))):
        return "needs nvcc (CUDA's compiler), which is not on PATH or in CUDA_HOME"
    for name in _UTILS:
        try:
            utils = importlib.import_module(name)
        except ImportError:
            continue
        if utils.try_import_cutlass():
            return None
        break
    return ("needs CUTLASS: set TORCHINDUCTOR_CUTLASS_DIR to a CUTLASS checkout (or the nvidia-cutlass wheel laid out "
            "as one: include/, tools/, python/)")


PART = CheckPart(workloads=(
    two_compile_workload(Op("mm", 2, (256, 256)), name="cutlass_mm", settings=CONFIG, dtype="float16",
                         help="mm(x, x) and mm(a, b) through the CUTLASS backend (CUDA, nvcc, CUTLASS)",
                         unavailable=unavailable),
))
