"""cutlass-cache-key: the CUTLASS template's code cache and benchmark request see which inputs are one buffer.

Upstream: ``torch/_inductor/codegen/cutlass/template.py`` (2.11 and later;
``codegen/cuda/cuda_template.py``'s ``CUDATemplate`` in 2.9 and 2.10),
``CUTLASSTemplate.make_key`` and ``CUTLASSTemplate.generate`` (affected: 2.9+, 2.15.0 too; the
code cache is on by default, ``cutlass.enable_caching_codegen``; 2.8 and older have none).
The CUTLASS GEMM backend (``max_autotune_gemm_backends="CUTLASS"`` or with it) has a
codegen cache of its own, added by pytorch/pytorch#156781, and the same flaw as the Triton
template's (#188069): the key holds the input nodes' layouts but not which of them are one
buffer, while ``CUTLASSTemplateKernel.def_kernel`` gives the kernel one pointer per
distinct buffer name. Code rendered for ``mm(x, x)`` (one input pointer) is replayed for
``mm(a, b)``; the call passes one more pointer than the C function takes, through ctypes,
where nothing checks arity: on an H200 (torch 2.11.0) the process died of a segmentation
fault in ``CUTLASSBenchmarkRequest.update_workspace_size``, stock and with the other
patches alike; the other order ended in ``RuntimeError: Error in function: cutlass_...``.
#188268 (the Triton key, 2.15.0) did not touch this cache; 2.15.0 still has it.

The fix appends the aliasing pattern (:func:`~..aliasing.aliasing_pattern`) to ``make_key``'s
key, probed by behaviour (:func:`~.fix.keys_separate_aliasing`), never by version. It also
makes the choice's benchmark request hold one input ``TensorMeta`` per distinct buffer
(:func:`~.fix.kernel_inputs_benchmark_request`): stock held one per input slot, so a
benchmark in a subprocess (``autotune_in_subproc``) passed ``mm(x, x)``'s kernel a pointer
too many and every CUTLASS choice failed (seen on the H200). A second aliasing pattern
compiles its own kernel, as with the cache off (``cutlass.enable_caching_codegen=False``,
the workaround): one more ``nvcc`` run per config, the cost of a kernel of another arity
(``docs/how-it-works.md`` weighs keeping one parameter per input slot instead).

Folder: ``fix.py`` (decide, wrappers, verify), ``activity.py`` (what it records),
``check.py`` (the ``check`` op, which needs a CUDA GPU, ``nvcc`` and CUTLASS), ``drills.py`` (drift
drills of the CUTLASS template module). Delete the
folder, ``patches/0006-*`` and ``patches/0008-*`` (the key; the benchmark request built from
the kernel's inputs), ``test/cutlass_cache_key/`` and its line in the patch table when the
oldest supported torch keys the CUTLASS code cache by aliasing and gives the benchmark request
one input per kernel argument (no release does yet, 2.15.0 included).
"""

from __future__ import annotations

from ..patch import Crash, Patch
from .activity import ACTIVITY

__all__ = ["PATCH"]

PATCH = Patch(
    name="cutlass-cache-key",
    effect="CUTLASS template code-cache keys include the input aliasing pattern, and its benchmark requests "
           "hold one tensor per input buffer (the CUTLASS kind of pytorch/pytorch#188069)",
    upstream="pytorch/pytorch#188069 (its CUTLASS code cache, from PR #156781); open upstream: PR #189186",
    affected=">=2.9.0",
    delete_when="the oldest supported torch keys the CUTLASS code cache by input aliasing and builds its benchmark "
                "request from the kernel's inputs (none does yet)",
    diffs=("0006-inductor-key-the-cutlass-template-code-cache-by-input-aliasing.patch",
           "0008-inductor-build-the-cutlass-benchmark-request-from-the-kernels-inputs.patch"),
    activity=ACTIVITY,
    # The replayed C++ kernel called through ctypes with a pointer too many: a segmentation fault
    # (H200, 2.11.0), CUTLASS's own error in the other order, an illegal access; in a subprocess
    # benchmark no CUTLASS choice survives. Any CUDA bug ends in an illegal access, and Inductor
    # raises NoValidChoicesError wherever no choice is left: generic forms, this crash's only where
    # a CUTLASS choice was one.
    # A CUTLASS choice: CUTLASSTemplateCaller (codegen/cutlass/, 2.11+), CUDATemplateCaller (codegen/cuda/, 2.9-2.10).
    crash=Crash(errors=(r"RuntimeError: Error in function: cutlass_",), signals=("SIGSEGV", "SIGBUS"),
                generic=(r"illegal memory access", r"NoValidChoicesError"),
                choices=("CUTLASSTemplateCaller", "CUDATemplateCaller")),
)
