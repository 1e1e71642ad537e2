"""cache-key's probe: does this build's ``GeneratedCodeCache.make_key`` key the aliasing pattern?

``make_key`` is called on a fresh cache with ``(x, x)`` and ``(x, y)`` of one layout
(:mod:`..triton_key`, which autotune-sharing's probe of a key's family calls too): the keys
differ where the build keys aliasing itself (2.15.0, PR #188268). The shared machinery is
:mod:`..aliasing`'s.
"""

from __future__ import annotations

from types import ModuleType

from ..aliasing import verifier
from ..require import require_codegen_cache, require_parameters
from ..patch import NotNeeded
from ..triton_key import PROBE_ARGUMENTS, keys_separate_aliasing, separates_aliasing

__all__ = ["PROBE_ARGUMENTS", "TARGET", "keys_separate_aliasing", "lacks_crash", "separates_aliasing", "verify"]

TARGET = "GeneratedCodeCache.make_key"


#: cache-key's ``verify``: the installed (patched) ``make_key`` keys aliasing apart.
verify = verifier(keys_separate_aliasing, lambda module: module.GeneratedCodeCache.__dict__["make_key"])


def lacks_crash(module: ModuleType) -> str | None:
    """Why this torch's stock Triton codegen cache cannot replay one aliasing pattern's code for
    another (the crash this patch fixes), or None where it can: it has no such cache (up to 2.7),
    or its ``make_key`` keys the aliasing pattern (2.15.0, PR #188268). Probes the module's
    ``make_key`` as it is (stock, where the patch is off); Unsupported where it cannot tell."""
    try:
        require_codegen_cache(module)
    except NotNeeded as reason:
        return str(reason)
    if separates_aliasing(module, require_parameters(module, TARGET, ("input_nodes",))):
        return "make_key already keys the aliasing pattern (upstream fix, pytorch/pytorch#188268)"
    return None
