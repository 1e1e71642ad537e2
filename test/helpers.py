"""Shared test helpers: skips, subprocess runs, and the harness sequence assertion."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import unittest

import torch
from packaging.version import Version

from inductor_fix._patches import BENCHMARK_REALIGN, CACHE_KEY
from inductor_fix._versions import release_of

TORCH_RELEASE = Version(release_of(torch.__version__))
#: Stock has the codegen-cache bug (pytorch/pytorch#188069) with default config: the patch table's range.
AFFECTED = CACHE_KEY.is_affected(torch.__version__)
#: Stock FlexAttention crashes on in-graph captured buffers (pytorch/pytorch#194515).
FLEX_AFFECTED = BENCHMARK_REALIGN.is_affected(torch.__version__)
HAS_CUDA = torch.cuda.is_available()

try:
    from torch._inductor.utils import fresh_cache
except ImportError:  # torch <= 2.7 calls it fresh_inductor_cache
    from torch._inductor.utils import fresh_inductor_cache as fresh_cache

requires_cuda = unittest.skipUnless(HAS_CUDA, "needs a CUDA GPU (GPU mode)")
requires_affected = unittest.skipUnless(AFFECTED, f"torch {torch.__version__} is not an affected release")


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; ``env`` is added to (and may delete with
    None values from) this process's environment."""
    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
