"""Real libraries whose users meet pytorch/pytorch#188069 or #194515, as a user runs them.

``python test/clients/clients.py CLIENT [--mode MODE] [--steps N] [--workaround]`` trains a
small model with random weights (nothing downloaded) for ``N`` steps and prints one line,
``CLIENT-RESULT {json}``: the losses, the wall time of the run (compiles included, seconds),
the first error (``Type: message``) or null, and the package's state and activity.

Clients (each on CUDA; the library must be importable):

- ``t5``: transformers' ``T5EncoderModel`` (2 layers, d_model 128, 4 heads, bf16, batch 1,
  length 256) with ``attn_implementation="flex_attention"`` and selective activation
  checkpointing (save mm/bmm, recompute the rest), ``torch.compile(model, mode=MODE)``. Its
  position bias is a view (permuted, unsqueezed) recomputed in the backward graph (#194515).
- ``heavyball``: heavyball's ``SOAP`` on a small MLP; heavyball compiles its own kernels
  with ``heavyball.utils.compile_mode`` (``max-autotune-no-cudagraphs``; ``--mode`` sets it).
  SOAP's preconditioners multiply a gradient with itself (#188069).
- ``pytorch_optimizer``: pytorch-optimizer's ``SOAP``, the optimizer step compiled
  (``torch.compile(optimizer.step, mode=MODE)``, PyTorch's compiled-optimizer recipe).
- ``pytorch_optimizer_muon``: pytorch-optimizer's ``Muon`` (Newton-Schulz: ``X @ X.mT``,
  ``A @ A``, ``B @ X``), the step compiled the same way; ``timm_kron``, ``timm_muon``: timm's
  ``Kron`` (PSGD) and ``Muon``, likewise.

The optimizers train an MLP of ``--widths`` (default 64,64,64: Linear, Tanh, Linear) on
random batches of 32.

``--workaround`` runs with upstream's workaround for #188069,
``torch._inductor.config.enable_caching_generated_triton_templates = False``. Whether the
fix is active is up to the caller (``INDUCTOR_FIX_DISABLE=1`` or not, ``import`` by
``--patched``); the result says which.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import traceback
from typing import Any, Callable

MODE = "max-autotune-no-cudagraphs"
#: ``--workaround``: upstream's workaround for #188069 (``torch._inductor.config`` settings).
WORKAROUND = {"enable_caching_generated_triton_templates": False}
#: ``--device``: cuda for the real runs; cpu only to try a client in ``--mode eager``.
DEVICE = "cuda"


#: ``--widths``: the MLP's layer widths (Linear layers with Tanh between them).
WIDTHS = (64, 64, 64)
#: ``--no-foreach``: heavyball steps each parameter alone instead of stacking equal shapes.
FOREACH = True


def _mlp(torch: Any) -> Any:
    torch.manual_seed(0)
    layers: list[Any] = []
    for fan_in, fan_out in zip(WIDTHS, WIDTHS[1:]):
        layers += [torch.nn.Linear(fan_in, fan_out), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers[:-1]).to(DEVICE)


def _batches(torch: Any, steps: int) -> list[tuple[Any, Any]]:
    generator = torch.Generator(device="cpu").manual_seed(1)
    return [(torch.randn(32, WIDTHS[0], generator=generator).to(DEVICE),
             torch.randn(32, WIDTHS[-1], generator=generator).to(DEVICE)) for _ in range(steps)]


def _optimizer_loop(torch: Any, model: Any, step: Callable[[], None], steps: int) -> list[float]:
    losses = []
    for x, y in _batches(torch, steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        step()
        model.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def heavyball(torch: Any, mode: str, steps: int) -> list[float]:
    import heavyball as hb

    hb.utils.compile_mode = None if mode == "eager" else mode
    model = _mlp(torch)
    optimizer = hb.SOAP(model.parameters(), lr=1e-3, multi_tensor=FOREACH)
    return _optimizer_loop(torch, model, optimizer.step, steps)


def _compiled_step(torch: Any, optimizer: Any, mode: str) -> Callable[[], None]:
    return optimizer.step if mode == "eager" else torch.compile(optimizer.step, mode=mode)


def pytorch_optimizer(torch: Any, mode: str, steps: int) -> list[float]:
    from pytorch_optimizer import SOAP

    model = _mlp(torch)
    optimizer = SOAP(model.parameters(), lr=1e-3, precondition_frequency=2)
    return _optimizer_loop(torch, model, _compiled_step(torch, optimizer, mode), steps)


def pytorch_optimizer_muon(torch: Any, mode: str, steps: int) -> list[float]:
    from pytorch_optimizer import Muon

    model = _mlp(torch)
    matrices = [p for p in model.parameters() if p.ndim == 2]
    others = [p for p in model.parameters() if p.ndim != 2]
    optimizer = Muon([dict(params=matrices, lr=0.02, use_muon=True),
                      dict(params=others, lr=3e-4, use_muon=False)])
    return _optimizer_loop(torch, model, _compiled_step(torch, optimizer, mode), steps)


def timm_kron(torch: Any, mode: str, steps: int) -> list[float]:
    from timm.optim.kron import Kron

    model = _mlp(torch)
    optimizer = Kron(model.parameters(), lr=1e-3)
    return _optimizer_loop(torch, model, _compiled_step(torch, optimizer, mode), steps)


def timm_muon(torch: Any, mode: str, steps: int) -> list[float]:
    from timm.optim import Muon

    model = _mlp(torch)
    optimizer = Muon(model.parameters(), lr=0.02)
    return _optimizer_loop(torch, model, _compiled_step(torch, optimizer, mode), steps)


def t5(torch: Any, mode: str, steps: int) -> list[float]:
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(0)
    config = T5Config(vocab_size=512, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4,
                      dropout_rate=0.0, relative_attention_num_buckets=32)
    config._attn_implementation = "flex_attention"
    model = T5EncoderModel(config).to(DEVICE, torch.bfloat16)
    if model.config._attn_implementation != "flex_attention":
        raise RuntimeError(f"T5 runs {model.config._attn_implementation!r}, not flex_attention")

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        if op in (torch.ops.aten.mm.default, torch.ops.aten.bmm.default):
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={
        "use_reentrant": False, "context_fn": functools.partial(create_selective_checkpoint_contexts, policy)})
    model.train()
    compiled = model if mode == "eager" else torch.compile(model, mode=mode)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    generator = torch.Generator(device="cpu").manual_seed(1)
    losses = []
    for _ in range(steps):
        ids = torch.randint(0, config.vocab_size, (1, 256), generator=generator).to(DEVICE)
        loss = compiled(input_ids=ids).last_hidden_state.float().square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


CLIENTS: dict[str, Callable[[Any, str, int], list[float]]] = {
    "t5": t5, "heavyball": heavyball, "pytorch_optimizer": pytorch_optimizer,
    "pytorch_optimizer_muon": pytorch_optimizer_muon, "timm_kron": timm_kron, "timm_muon": timm_muon}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client", choices=sorted(CLIENTS))
    parser.add_argument("--mode", default=MODE, help=f"torch.compile mode, or 'eager' (default {MODE})")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--workaround", action="store_true",
                        help="enable_caching_generated_triton_templates=False (upstream's workaround)")
    parser.add_argument("--patched", action="store_true", help="import inductor_fix first")
    parser.add_argument("--device", default=DEVICE, choices=("cuda", "cpu"))
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)), help="the MLP's layer widths")
    parser.add_argument("--no-foreach", dest="foreach", action="store_false", help="heavyball: multi_tensor=False")
    args = parser.parse_args(argv)
    globals()["FOREACH"] = args.foreach
    globals()["DEVICE"] = args.device
    globals()["WIDTHS"] = tuple(int(w) for w in args.widths.split(","))
    if args.patched:
        import inductor_fix  # noqa: F401  (the fix lands when Inductor loads)
    import torch
    from torch._inductor import config

    if args.workaround:
        for name, value in WORKAROUND.items():
            setattr(config, name, value)
    result: dict[str, Any] = {"client": args.client, "mode": args.mode, "workaround": args.workaround,
                              "widths": args.widths, "foreach": args.foreach,
                              "torch": torch.__version__, "losses": [], "error": None}
    start = time.perf_counter()
    try:
        result["losses"] = CLIENTS[args.client](torch, args.mode, args.steps)
    except Exception as error:  # the crash under study is the result
        first = next((line for line in str(error).splitlines() if line.strip()), "")
        result["error"] = f"{type(error).__name__}: {first[:300]}"
        traceback.print_exc()
    result["seconds"] = round(time.perf_counter() - start, 1)
    fix = sys.modules.get("inductor_fix")
    result["fix"] = {p.name: str(p.state) for p in fix.status().patches} if fix else "not imported"
    result["activity"] = {name: entry["counts"] for name, entry in fix.activity().items()} if fix else {}
    result["first_actions"] = [d for entry in fix.activity().values() for d in entry["details"]][:3] if fix else []
    result["disable"] = os.environ.get("INDUCTOR_FIX_DISABLE")
    print("CLIENT-RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
