"""The real-client runs (``clients.py``): on a GPU, each library that crashes stock trains
patched with the losses of its reference run; anywhere, the script runs end to end and
reports in its one-line form (a missing library is a result, not a traceback)."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

import pytest
from helpers import LOSS_TOLERANCE, report, requires_cuda

import torch
from inductor_fix.patches import PATCHES
from torch._inductor.test_case import TestCase, run_tests
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clients.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(SCRIPT)))


def run_client(*args: str, disable: bool = False, timeout: float = 900, env: dict[str, str] | None = None) -> dict:
    """``clients.py ARGS`` in a fresh interpreter and Inductor cache, with ``env`` added to the
    environment (Inductor's settings): its CLIENT-RESULT. ``disable``: stock
    (``INDUCTOR_FIX_DISABLE=1``); otherwise the package is never disabled.

    Each run gets its own ``TORCHINDUCTOR_CACHE_DIR``: runs side by side that shared one would
    read each other's autotuning timings and compiled graphs, and a stock run that finds the
    patched run's timings never benchmarks the codes it replays, so it does not crash."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    environment.pop("INDUCTOR_FIX_DISABLE", None)
    if disable:
        environment["INDUCTOR_FIX_DISABLE"] = "1"
    # compile workers the timeout orphans may still write into the cache as it is removed
    with tempfile.TemporaryDirectory(prefix="inductor-fix-client-", ignore_cleanup_errors=True) as cache:
        environment["TORCHINDUCTOR_CACHE_DIR"] = cache
        result = subprocess.run([sys.executable, SCRIPT, *args], env=environment, capture_output=True,
                                text=True, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith("CLIENT-RESULT ")]
    assert lines, result.stderr[-3000:]
    return json.loads(lines[-1][len("CLIENT-RESULT "):])


class TestClientScript(TestCase):
    def test_reports_one_line_whatever_happens(self) -> None:
        result = run_client("heavyball", "--device", "cpu", "--mode", "eager", "--steps", "1", timeout=300)
        self.assertEqual(result["client"], "heavyball")
        if importlib.util.find_spec("heavyball") is None:
            self.assertRegex(result["error"], "ModuleNotFoundError")
        else:
            self.assertIsNone(result["error"])
            self.assertEqual(len(result["losses"]), 1)

    def test_rejects_an_unknown_client(self) -> None:
        result = subprocess.run([sys.executable, SCRIPT, "llama"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 2)
        self.assertIn("invalid choice", result.stderr)


#: One compile thread: every choice precompiles in the compiling process (no compile pool).
#: ``pyg_diffpool`` crashed stock in its one run so, and with the pool in 1 of 5 runs: stock's
#: crash must not depend on how the compile pool schedules (docs/clients.md).
IN_PROCESS = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}
#: client, its arguments, the library it needs, the reference run (mode), the crash stock shows,
#: the environment of its three runs.
CRASHING = {
    "t5": (["t5", "--steps", "3"], "transformers", "default", r"NotImplementedError: View", {}),
    "heavyball": (["heavyball", "--widths", "128,128,128,128", "--steps", "5"], "heavyball", "eager",
                  r"TypeError: launcher\(\) got multiple values for argument 'stream'", {}),
    "diffusers_ltx_train": (["diffusers_ltx_train", "--steps", "2"], "diffusers", "default",
                            r"NotImplementedError: (Expand)?View", {}),
    "gpytorch_dkl": (["gpytorch_dkl", "--steps", "3"], "gpytorch", "eager",
                     r"TypeError: launcher\(\) missing 1 required positional argument", {}),
    "pyg_diffpool": (["pyg_diffpool", "--steps", "3", "--size", "256"], "torch_geometric", "eager",
                     r"TypeError: launcher\(\) got multiple values for argument 'stream'", IN_PROCESS),
    "pix2struct_decoder": (["pix2struct_decoder", "--steps", "2"], "transformers", "default",
                           r"NotImplementedError: (Expand)?View|TypeError: launcher\(\) missing", {}),
    "umt5": (["umt5", "--steps", "2"], "transformers", "default",
             r"NotImplementedError: (Expand)?View|TypeError: launcher\(\) missing", {}),
}
#: Clients that meet the kind but train stock on the GPU (torch 2.11.0): the codes stock replays
#: there are never benchmarked (their timings are in the autotune cache already), so stock trains;
#: patched keeps them apart and must train with the same losses. client -> (arguments, library).
#: ``pytorch_optimizer`` collides with the autotune cache off on the CPU harness and trained stock on
#: an H100 (2026-12-06, docs/clients.md).
NEUTRAL = {
    "pytorch_optimizer": (["pytorch_optimizer", "--widths", "128,128,128,128", "--steps", "3"], "pytorch_optimizer"),
    "muon": (["muon", "--widths", "32,32,32,32", "--steps", "4"], "muon"),
    "torch_optimizer_shampoo": (["torch_optimizer_shampoo", "--steps", "3"], "torch_optimizer"),
}
#: Clients whose model runs in bf16 (their losses are compared with its tolerance).
BF16 = {"t5", "muon"}


def _require(library: str, test: TestCase) -> None:
    if importlib.util.find_spec(library) is None:
        missing = f"{library} is not installed (carry it as a wheel, CONTRIBUTING.md)"
        if os.environ.get("INDUCTOR_FIX_REQUIRE_GPU_DEPS") == "1":  # the GPU tier: a skip would hide a client
            test.fail(f"INDUCTOR_FIX_REQUIRE_GPU_DEPS=1, but {missing}")
        raise unittest.SkipTest(missing)


def _side_by_side(client: str, args: list[str], reference_mode: str,
                  env: dict[str, str] | None = None) -> tuple[dict, dict, dict]:
    """The client's stock, patched and reference runs, three processes side by side, and their
    report line: each run's CLIENT-RESULT."""
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        stock, patched, reference = pool.map(
            lambda extra: run_client(*args, *extra[0], disable=extra[1], env=env),
            (((), True), (("--patched",), False), (("--mode", reference_mode), True)))
    report(f"client/{client}", stock=stock["error"], patched=patched["error"], losses=patched["losses"],
           reference=reference["losses"], reference_mode=reference_mode, patched_s=patched["seconds"],
           stock_s=stock["seconds"])
    return stock, patched, reference


@pytest.mark.client
@requires_cuda
@instantiate_parametrized_tests
class TestClientsGPU(TestCase):
    @parametrize("client", sorted(CRASHING))
    def test_stock_crashes_patched_trains(self, client: str) -> None:
        args, library, reference_mode, crash, env = CRASHING[client]
        _require(library, self)
        stock, patched, reference = _side_by_side(client, args, reference_mode, env)
        # Stock must crash where a patch that acted in the patched run has its bug on this torch.
        acted = [p for p in PATCHES if any((patched["activity"].get(p.name) or {}).values())]
        if any(p.is_affected(torch.__version__) for p in acted):
            self.assertRegex(stock["error"] or "", crash)
        self.assertIsNone(patched["error"])
        self.assertIsNone(reference["error"])
        tolerance = LOSS_TOLERANCE["bfloat16" if client in BF16 else "float32"]  # bf16 T5, Muon; fp32 MLP
        for got, want in zip(patched["losses"], reference["losses"], strict=True):
            self.assertAlmostEqual(got, want, delta=tolerance * max(1.0, abs(want)))

    @parametrize("client", sorted(NEUTRAL))
    def test_neutral_client_trains_alike(self, client: str) -> None:
        """Stock and patched both train, with the eager losses."""
        args, library = NEUTRAL[client]
        _require(library, self)
        stock, patched, reference = _side_by_side(client, args, "eager")
        tolerance = LOSS_TOLERANCE["bfloat16" if client in BF16 else "float32"]
        for run in (stock, patched):
            self.assertIsNone(run["error"])
            for got, want in zip(run["losses"], reference["losses"], strict=True):
                self.assertAlmostEqual(got, want, delta=tolerance * max(1.0, abs(want)))


if __name__ == "__main__":
    run_tests()
