"""Stand-in for what ``test/inductor/test_cutlass_backend.py`` offers ``TestCutlassBackend``' methods.

Read :mod:`matrix_lib.standins` first. Upstream's class skips without CUDA or on HIP, and its
``setUp`` runs the base ``setUp`` with ``INDUCTOR_TEST_DISABLE_FRESH_CACHE=1`` (Inductor's fresh
cache and the persistent autotuning subprocesses do not mix); its methods are decorated
``@skipXPUIf(not Xe2_Or_Later, "")``, ``@skipCUDAIf(not SM90OrLater, "need sm_90")`` and
``@mock.patch.dict(os.environ, {"PATH": _get_path_without_sccache()})``, its ``tearDown`` clears
Inductor's caches (``clear_inductor_caches``), and its methods patch
``config`` with ``"cutlass.*"`` keys. The same names are offered here; this class also skips
where CUTLASS cannot be imported (``try_import_cutlass``: ``TORCHINDUCTOR_CUTLASS_DIR``), which
upstream's CI always has. Nothing of it runs without CUDA: the methods are GPU tests.
"""

from __future__ import annotations

import os
import unittest
from unittest import mock

import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase
from torch._inductor.utils import clear_inductor_caches, fresh_cache
from torch.testing._internal.common_cuda import SM90OrLater
from torch.testing._internal.common_device_type import skipCUDAIf, skipXPUIf
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize
from torch.testing._internal.inductor_utils import GPU_TYPE

try:
    from torch.testing._internal.common_xpu import Xe2_Or_Later
except ImportError:  # older releases have no common_xpu; no XPU runs here
    Xe2_Or_Later = False

__all__ = ["CutlassBackendFixtures", "GPU_TYPE", "SM90OrLater", "TestCase", "Xe2_Or_Later",
           "_get_path_without_sccache", "config", "counters", "fresh_cache", "instantiate_parametrized_tests",
           "mock", "os", "parametrize", "skipCUDAIf", "skipXPUIf", "torch", "unittest"]


def _get_path_without_sccache() -> str:
    """``PATH`` without the compiler-cache wrappers' directory of upstream's CI (``/opt/cache/bin``)."""
    return ":".join(entry for entry in os.environ.get("PATH", "").split(":") if "/opt/cache/bin" not in entry)


class CutlassBackendFixtures(TestCase):
    """What ``TestCutlassBackend`` gives its methods (module docstring)."""

    #: what ``skipCUDAIf`` / ``skipXPUIf`` compare against
    device_type = GPU_TYPE

    def setUp(self) -> None:
        if not torch.cuda.is_available() or torch.version.hip:
            self.skipTest("needs a CUDA GPU")
        from torch._inductor.codegen.cutlass.utils import try_import_cutlass

        if not try_import_cutlass():
            self.skipTest("needs CUTLASS (TORCHINDUCTOR_CUTLASS_DIR)")
        with mock.patch.dict(os.environ, {"INDUCTOR_TEST_DISABLE_FRESH_CACHE": "1"}):
            super().setUp()
        torch.random.manual_seed(1234)

    def tearDown(self) -> None:
        super().tearDown()
        clear_inductor_caches()  # the CUTLASS code cache too: each test starts without entries
