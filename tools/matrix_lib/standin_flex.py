"""Stand-in for what ``test/inductor/test_flex_attention.py`` offers ``TestLearnableBiases``' methods.

Read :mod:`matrix_lib.standins` first. The newest stored copy of upstream's module (a
device-generic one: ``instantiate_device_type_tests(TestLearnableBiases, globals(),
only_for=test_device, allow_xpu=True)``) gives the class's methods ``device``,
``self._init_tensors(params, device=device)`` (three ``randn`` tensors of ``(batch_size,
num_heads, seq_length, head_dim)`` requiring grad), ``self._check_outputs_and_grads(out_eager,
out_compiled, out_gold, tensors, names=None)`` (one random upstream gradient, then for the output
and each gradient the compiled RMSE against the float64 gold run at most the eager RMSE times a
fudge factor: 1.35, and ten times that for float32, applied as upstream applies it), ``Params``
and ``skip_on_cpu``. Those are written again here, with the same names and checks.

With CUDA the class runs on ``cuda`` as upstream's does there. Without CUDA it runs on the CPU
under the package's Triton-on-CPU harness (``inductor_fix.check.harness``, which the child process
imports with ``INDUCTOR_FIX_DISABLE=1``: the monkeypatch stays off), where Inductor's real
lowering, codegen and selection run and each template launch is checked for arity but nothing is
computed: there ``_check_outputs_and_grads`` runs the compiled backward and compares no value, and
``skip_on_cpu`` skips nothing.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch._inductor.test_case import TestCase as InductorTestCase
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention
from torch.testing._internal import common_utils
from torch.testing._internal.common_device_type import instantiate_device_type_tests, skipCPUIf

__all__ = ["BlockMask", "DEVICE", "InductorTestCase", "LearnableBiasRegressions", "LearnableBiasesFixtures",
           "ON_GPU", "Params", "common_utils", "create_block_mask", "flex_attention", "functools",
           "instantiate_stand_in", "rmse", "skip_on_cpu", "torch"]

#: Whether the classes run on a GPU (values compared) or under the CPU harness (arity only).
ON_GPU = torch.cuda.is_available()
DEVICE = "cuda" if ON_GPU else "cpu"


def skip_on_cpu(test: Callable[..., Any]) -> Callable[..., Any]:
    """Upstream's decorator skips the ``cpu`` instance; under the CPU harness the CPU is where the
    method runs, so it skips nothing there."""
    return skipCPUIf(True, "Not supported on CPU")(test) if ON_GPU else test


@dataclass
class Params:
    """The case a learnable-bias test builds its tensors from (upstream's fields)."""

    batch_size: int
    num_heads: int
    seq_length: int
    head_dim: int
    dtype: torch.dtype
    config_str: str | None = None


def rmse(ref: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
    """Root mean squared error, in float64."""
    return torch.sqrt(torch.mean(torch.square(ref.to(torch.float64) - res.to(torch.float64))))


class LearnableBiasesFixtures(InductorTestCase):
    """What ``TestLearnableBiases`` gives its methods (module docstring)."""

    def setUp(self) -> None:
        super().setUp()
        if not ON_GPU:
            from inductor_fix.check.harness import triton_cpu_harness

            harness = contextlib.ExitStack()
            harness.enter_context(triton_cpu_harness())
            self.addCleanup(harness.close)

    def _init_tensors(self, params: Params, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        shape = (params.batch_size, params.num_heads, params.seq_length, params.head_dim)
        make = functools.partial(torch.randn, shape, device=device, dtype=params.dtype, requires_grad=True)
        return make(), make(), make()

    @torch.no_grad()
    def _gold_check(self, eager: torch.Tensor, compiled: torch.Tensor, gold: torch.Tensor, tensor_name: str,
                    fudge_factor: float = 1.35) -> None:
        if eager.dtype == torch.float32:
            fudge_factor *= 10.0
        compiled_error = rmse(compiled, gold).item()
        bound = rmse(eager, gold).item() * fudge_factor
        if tensor_name == "out" and eager.dtype == torch.float32 and compiled_error > bound:
            self.skipTest("Compiled FlexAttention is less accurate than eager in fp32")
        self.assertLessEqual(compiled_error, bound * fudge_factor,
                             f"{tensor_name}: compiled error {compiled_error:.8f} exceeds eager's "
                             f"{bound:.8f} * {fudge_factor}")

    def _check_outputs_and_grads(self, out_eager: torch.Tensor, out_compiled: torch.Tensor, out_gold: torch.Tensor,
                                 tensors: Sequence[torch.Tensor], names: Sequence[str] | None = None) -> None:
        upstream_grad = torch.randn_like(out_eager, device="cpu").to(out_eager.device)
        grads_compiled = torch.autograd.grad((out_compiled,), tensors, upstream_grad)
        if not ON_GPU:
            return  # under the harness the compiled backward ran; its values are not computed
        grads_eager = torch.autograd.grad((out_eager,), tensors, upstream_grad)
        grads_gold = torch.autograd.grad((out_gold,), tensors, upstream_grad)
        names = names or ["out", "grad_query", "grad_key", "grad_value", "grad_bias"]
        for eager, compiled, gold, name in zip((out_eager, *grads_eager), (out_compiled, *grads_compiled),
                                               (out_gold, *grads_gold), names, strict=True):
            self._gold_check(eager, compiled, gold, name)


class LearnableBiasRegressions(LearnableBiasesFixtures):
    """This project's own check, not upstream's test: a learnable bias and a learnable gate read by
    ``score_mod``, compiled with max-autotune, forward and backward. The backward kernel writes
    both captured buffers' gradients (mutated captured grads), so the list the flex backward
    autotunes with must hold them, as upstream's max-autotune learnable-bias tests need."""

    @skip_on_cpu
    def test_learnable_bias_and_gate_max_autotune(self, device: str) -> None:
        params = Params(batch_size=2, num_heads=4, seq_length=256, head_dim=16, dtype=torch.float32)
        query, key, value = self._init_tensors(params, device=device)
        bias = torch.randn(2 * params.seq_length, device=device, requires_grad=True)
        gate = torch.randn(params.num_heads, device=device, requires_grad=True)

        def score_mod(score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                      kv_idx: torch.Tensor) -> torch.Tensor:
            return score * torch.sigmoid(gate[h]) + bias[torch.abs(q_idx - kv_idx)]

        compiled = torch.compile(flex_attention, mode="max-autotune-no-cudagraphs")
        out_eager = flex_attention(query, key, value, score_mod=score_mod)
        out_compiled = compiled(query, key, value, score_mod=score_mod)
        out_gold = flex_attention(query.to(torch.float64), key.to(torch.float64), value.to(torch.float64),
                                  score_mod=score_mod)
        self._check_outputs_and_grads(out_eager, out_compiled, out_gold, (query, key, value, bias, gate),
                                      names=["out", "grad_query", "grad_key", "grad_value", "grad_bias", "grad_gate"])


def instantiate_stand_in(cls: type, scope: dict[str, Any]) -> None:
    """Instantiate ``cls`` for the one device this machine runs it on (upstream: every
    supported device), as ``<cls><DEVICE>``; the generic class leaves ``scope``."""
    instantiate_device_type_tests(cls, scope, only_for=(DEVICE,))
