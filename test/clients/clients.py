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
- ``muon``: Keller Jordan's Muon (``muon-optimizer``, import ``muon``),
  ``SingleDeviceMuonWithAuxAdam`` as its README groups parameters (Muon for the >=2-D
  weights, its AdamW for the rest), on a bf16 MLP without biases (as in the NanoGPT
  speedruns), the model and the step both compiled (``torch.compile(..., mode=MODE)``).
  Newton-Schulz: ``A = X @ X.mT``, ``b*A + c*A @ A``; with ``--widths 32,32,32`` (the batch
  is 32) the model's own ``x @ W.T`` (first layer) and ``tangent @ W`` (backward) have the
  layouts of ``X @ X.mT`` and ``A @ A`` with two buffers, and the step's products replay their code.
- ``kron_torch``: kron-torch's ``Kron`` (PSGD), the step compiled; kron-torch compiles its
  own kernels with ``@torch.compile`` (default mode, no knob).
- ``torch_optimizer_shampoo``: torch-optimizer's ``Shampoo`` (``grad @ grad.T``, an SVD
  matrix power), the step compiled.
- ``diffusers_ltx``: diffusers' ``LTXVideoTransformer3DModel`` (1 layer, 2 heads of 32,
  fp32) with ``set_attention_backend("flex")``, ``torch.compile(model, mode=MODE)``, a few
  Euler steps of sampling (no grad; the "losses" are the mean squared velocities). Its prompt
  mask (4 padding tokens) becomes a bias computed in the graph (``(1 - mask) * -10000``,
  repeated per head, viewed, expanded), which the flex backend's ``score_mod`` reads (#194515).
- ``diffusers_ltx_train``: the same model, 2 layers, trained with SGD under selective
  activation checkpointing through diffusers' hook
  (``enable_gradient_checkpointing(gradient_checkpointing_func=...)``: save mm/bmm/addmm,
  recompute the rest, so the bias is recomputed in the backward graph). FlexAttention has
  no CPU backward: ``--device cpu --mode eager`` fails there, as for ``t5``.
- ``pyg_gae``: torch-geometric's ``GAE`` (graph autoencoder) around its ``GCN`` (2 layers of
  ``--size``, ``jk="last"``, so ``z`` is a ``Linear``'s output), trained on one random graph of
  ``--size`` nodes and features with Kipf & Welling's dense reconstruction loss,
  ``binary_cross_entropy(model.decoder.forward_all(z), adj)`` (``sigmoid(z @ z.t())``), the loss
  function compiled (``torch.compile(loss_fn, mode=MODE)``). The first ``GCNConv``'s ``x @ W.T``
  (two buffers) and the decoder's ``z @ z.t()`` (one) share layouts (#188069).
- ``pyg_diffpool``: torch-geometric's ``DenseSAGEConv`` and ``dense_diff_pool`` (one pooling
  level of its DiffPool example: 4 graphs of ``--size``/2 nodes, as many clusters, width
  ``--size``), the model compiled (``torch.compile(model, mode=MODE)``). ``dense_diff_pool``
  multiplies the assignment ``s`` with itself (``s @ s.transpose(1, 2)``, the link loss) and
  with other tensors of its layouts (``s.T @ x``, ``(s.T @ adj) @ s``): bmm with one and with
  two buffers.
- ``gpytorch_dkl``: gpytorch's exact GP with a deep kernel (a bias-free ``Linear`` feature
  extractor of ``--size``), 2 independent outputs (its "batch independent multioutput GP":
  ``ScaleKernel(PolynomialKernel(2, batch_shape=[2]))``), ``--size`` training points, trained
  with ``ExactMarginalLogLikelihood`` (the loss function compiled) under
  ``gpytorch.settings.lazily_evaluate_kernels(False)`` (dynamo cannot trace the lazy kernel
  tensor's indexing on torch 2.11). ``PolynomialKernel`` computes ``matmul(z1, z2.T) + offset``
  with ``z1 is z2`` in training: the layouts of the feature extractor's ``x @ W.T`` (two buffers).
- ``lightly_simclr``, ``lightly_vicreg``: lightly's ``NTXentLoss`` (SimCLR: ``out0 @ out0.T``
  and ``out0 @ out1.T``) on its ``SimCLRProjectionHead``, and its ``VICRegLoss`` (the
  covariance ``x.T @ x``) on its ``BarlowTwinsProjectionHead``, after a bias-free ``Linear`` and
  ReLU; two noisy views of random batches of ``--size`` samples, ``--size`` wide, the step's
  loss function compiled.

On the H200 (torch 2.11), a stock crash needs float32 products of at least 128 (``--size``
default 128; ``pyg_diffpool`` crashes at 256): below that no Triton config of the selection
fails to compile, every replayed choice's timing is in the autotune cache already, and
nothing replayed is benchmarked. Where the colliding key is first selected matters too:
``gpytorch_dkl`` selects it in its first graph and crashed stock in every run;
``pyg_diffpool`` selects it later: with Inductor's compile pool it crashed in 1 of 5 runs
(that one with 4 compile threads and 14 other compiles beside it), and in its one run with
one compile thread (``TORCHINDUCTOR_COMPILE_THREADS=1``: every choice precompiled in this
process, its client test's setting) (docs/clients.md).

The optimizers train an MLP of ``--widths`` (default 64,64,64: Linear, Tanh, Linear) on
random batches of 32.

``--workaround`` runs with upstream's workaround for #188069,
``torch._inductor.config.enable_caching_generated_triton_templates = False``. Whether the
fix is active is up to the caller (``INDUCTOR_FIX_DISABLE=1`` or not, ``import`` by
``--patched``); the result says which.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import time
import traceback
from typing import Any, Callable, Iterable, Iterator

MODE = "max-autotune-no-cudagraphs"
#: ``--workaround``: upstream's workaround for #188069 (``torch._inductor.config`` settings).
WORKAROUND = {"enable_caching_generated_triton_templates": False}
#: ``--device``: cuda for the real runs; cpu only to try a client in ``--mode eager``.
DEVICE = "cuda"


#: ``--widths``: the MLP's layer widths (Linear layers with Tanh between them).
WIDTHS = (64, 64, 64)
#: ``--no-foreach``: heavyball steps each parameter alone instead of stacking equal shapes.
FOREACH = True
#: ``--size``: the graph's nodes and features (``pyg_*``), the GP's points and features
#: (``gpytorch_dkl``), the batch and widths (``lightly_*``): equal, so that the products of a
#: tensor with itself have the layouts of the model's own two-tensor products.
SIZE = 128


def _mlp(torch: Any, bias: bool = True) -> Any:
    torch.manual_seed(0)
    layers: list[Any] = []
    for fan_in, fan_out in zip(WIDTHS, WIDTHS[1:]):
        layers += [torch.nn.Linear(fan_in, fan_out, bias=bias), torch.nn.Tanh()]
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


def _train(optimizer: Any, losses: Iterable[Any]) -> list[float]:
    """Backward, ``optimizer.step()`` and zeroed gradients after each loss tensor ``losses``
    yields; their values. ``losses`` is lazy (a generator), so each step's batch and forward
    come after the previous step's update."""
    values = []
    for loss in losses:
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        values.append(loss.item())
    return values


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


def muon(torch: Any, mode: str, steps: int) -> list[float]:
    from muon import SingleDeviceMuonWithAuxAdam

    model = _mlp(torch, bias=False).bfloat16()
    matrices = [p for p in model.parameters() if p.ndim >= 2]
    others = [p for p in model.parameters() if p.ndim < 2]
    optimizer = SingleDeviceMuonWithAuxAdam([dict(params=matrices, lr=0.02, weight_decay=0.01, use_muon=True),
                                             dict(params=others, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.01,
                                                  use_muon=False)])
    compiled = model if mode == "eager" else torch.compile(model, mode=mode)
    step = _compiled_step(torch, optimizer, mode)
    losses = []
    for x, y in _batches(torch, steps):
        loss = torch.nn.functional.mse_loss(compiled(x.bfloat16()).float(), y)
        loss.backward()
        step()
        model.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses

def kron_torch(torch: Any, mode: str, steps: int) -> list[float]:
    from kron_torch import Kron

    model = _mlp(torch)
    optimizer = Kron(model.parameters(), lr=1e-3)
    return _optimizer_loop(torch, model, _compiled_step(torch, optimizer, mode), steps)


def torch_optimizer_shampoo(torch: Any, mode: str, steps: int) -> list[float]:
    from torch_optimizer import Shampoo

    model = _mlp(torch)
    optimizer = Shampoo(model.parameters(), lr=1e-1, update_freq=1)
    return _optimizer_loop(torch, model, _compiled_step(torch, optimizer, mode), steps)


def _save_matmuls_policy(torch: Any, *ops: Any) -> Callable[..., Any]:
    """Selective activation checkpointing's policy of the flex clients: save the products ``ops``,
    recompute the rest (a bias computed in the graph is then recomputed in the backward graph)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE

    return functools.partial(create_selective_checkpoint_contexts, policy)


def _flex_training(torch: Any, mode: str, model_class: Any, config: Any, saved: tuple[Any, ...] = (),
                   part: str | None = None, dtype: Any = None) -> tuple[Any, Any, Any]:
    """transformers' ``model_class(config)`` on DEVICE (in ``dtype``) with
    ``attn_implementation="flex_attention"``, in training; where ``saved`` names products, under
    selective activation checkpointing of the model (or of its ``part``) that saves them and
    recomputes the rest. The model compiled in ``mode``, SGD on its parameters, and a seeded
    generator of inputs. RuntimeError where transformers runs another attention."""
    config._attn_implementation = "flex_attention"
    model = model_class(config).to(DEVICE, dtype)
    if model.config._attn_implementation != "flex_attention":
        raise RuntimeError(f"{model_class.__name__} runs {model.config._attn_implementation!r}, not flex_attention")
    if saved:
        (getattr(model, part) if part else model).gradient_checkpointing_enable(gradient_checkpointing_kwargs={
            "use_reentrant": False, "context_fn": _save_matmuls_policy(torch, *saved)})
    model.train()
    compiled = model if mode == "eager" else torch.compile(model, mode=mode)
    return compiled, torch.optim.SGD(model.parameters(), lr=1e-2), torch.Generator(device="cpu").manual_seed(1)


def t5(torch: Any, mode: str, steps: int) -> list[float]:
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(0)
    config = T5Config(vocab_size=512, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4,
                      dropout_rate=0.0, relative_attention_num_buckets=32)
    compiled, optimizer, generator = _flex_training(
        torch, mode, T5EncoderModel, config, (torch.ops.aten.mm.default, torch.ops.aten.bmm.default),
        dtype=torch.bfloat16)
    return _train(optimizer, (
        compiled(input_ids=torch.randint(0, config.vocab_size, (1, 256), generator=generator).to(DEVICE))
        .last_hidden_state.float().square().mean() for _ in range(steps)))


def layoutlmv3(torch: Any, mode: str, steps: int) -> list[float]:
    from transformers import LayoutLMv3Config, LayoutLMv3Model

    torch.manual_seed(0)
    # text and layout only (no image); 4 x 16 coordinate + 2 x 32 shape embeddings = hidden 128
    config = LayoutLMv3Config(vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=256, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                              coordinate_size=16, shape_size=32, visual_embed=False)
    # no activation checkpointing: LayoutLMv3 does not support it (transformers 5.25)
    compiled, optimizer, generator = _flex_training(torch, mode, LayoutLMv3Model, config)

    def inputs() -> dict[str, Any]:  # a page of 256 words, each a random box (x0 <= x1, y0 <= y1) of 0-1000
        corners = torch.randint(0, 1001, (1, 256, 2, 2), generator=generator).sort(dim=2).values
        bbox = corners.permute(0, 1, 3, 2).reshape(1, 256, 4)[..., [0, 2, 1, 3]]
        return dict(input_ids=torch.randint(3, config.vocab_size, (1, 256), generator=generator).to(DEVICE),
                    bbox=bbox.to(DEVICE))

    return _train(optimizer, (compiled(**inputs()).last_hidden_state.square().mean() for _ in range(steps)))


def pix2struct(torch: Any, mode: str, steps: int) -> list[float]:
    from transformers import Pix2StructConfig, Pix2StructForConditionalGeneration

    torch.manual_seed(0)
    # an 8 x 8 grid of 4 x 4 RGB patches in, 128 tokens out; the text decoder's relative position
    # bias is a view of an embedding lookup, computed in its first layer
    rows = cols = 8
    config = Pix2StructConfig(
        vision_config=dict(hidden_size=128, patch_embed_hidden_size=48, d_ff=256, d_kv=32, num_hidden_layers=2,
                           num_attention_heads=4, seq_len=rows * cols),
        text_config=dict(vocab_size=512, hidden_size=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4,
                         dropout_rate=0.0, use_cache=False))
    # the text decoder supports activation checkpointing (the whole model does not, transformers 5.25)
    compiled, optimizer, generator = _flex_training(
        torch, mode, Pix2StructForConditionalGeneration, config,
        (torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default), part="decoder")
    grid = torch.stack(torch.meshgrid(torch.arange(1, rows + 1), torch.arange(1, cols + 1), indexing="ij"), -1)

    def inputs() -> dict[str, Any]:  # flattened patches: (row, column, the patch's 48 pixels)
        pixels = torch.randn(1, rows * cols, 48, generator=generator)
        patches = torch.cat([grid.reshape(1, -1, 2).float(), pixels], dim=-1)
        return dict(flattened_patches=patches.to(DEVICE), attention_mask=torch.ones(1, rows * cols).to(DEVICE),
                    labels=torch.randint(0, 512, (1, 128), generator=generator).to(DEVICE))

    return _train(optimizer, (compiled(**inputs()).loss for _ in range(steps)))


def pix2struct_decoder(torch: Any, mode: str, steps: int) -> list[float]:
    from transformers import Pix2StructConfig, Pix2StructTextModel

    torch.manual_seed(0)
    # Pix2Struct's text decoder alone (its config taken from a whole model's, which completes it)
    config = Pix2StructConfig(text_config=dict(vocab_size=512, hidden_size=128, d_kv=32, d_ff=256, num_layers=2,
                                               num_heads=4, dropout_rate=0.0, use_cache=False)).text_config
    compiled, optimizer, generator = _flex_training(
        torch, mode, Pix2StructTextModel, config, (torch.ops.aten.mm.default, torch.ops.aten.bmm.default))

    def loss() -> Any:
        tokens = torch.randint(0, config.vocab_size, (1, 257), generator=generator).to(DEVICE)
        return compiled(input_ids=tokens[:, :-1], labels=tokens[:, 1:]).loss

    return _train(optimizer, (loss() for _ in range(steps)))


def umt5(torch: Any, mode: str, steps: int) -> list[float]:
    from transformers import UMT5Config, UMT5EncoderModel

    torch.manual_seed(0)
    # every layer has its own relative position bias (T5 shares the first layer's)
    config = UMT5Config(vocab_size=512, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4,
                        dropout_rate=0.0, use_cache=False)
    compiled, optimizer, generator = _flex_training(
        torch, mode, UMT5EncoderModel, config, (torch.ops.aten.mm.default, torch.ops.aten.bmm.default))
    return _train(optimizer, (
        compiled(input_ids=torch.randint(0, config.vocab_size, (1, 256), generator=generator).to(DEVICE))
        .last_hidden_state.square().mean() for _ in range(steps)))


def wav2vec2_bert(torch: Any, mode: str, steps: int) -> list[float]:
    from transformers import Wav2Vec2BertConfig, Wav2Vec2BertModel

    torch.manual_seed(0)
    # relative_key position embeddings (the default): each layer's bias is einsum(query, distance
    # embeddings) * scaling, computed in the graph and read by the flex score_mod
    config = Wav2Vec2BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                                layerdrop=0.0, apply_spec_augment=False, conformer_conv_dropout=0.0,
                                position_embeddings_type="relative_key")
    compiled, optimizer, generator = _flex_training(
        torch, mode, Wav2Vec2BertModel, config,
        (torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default))
    features = config.feature_projection_input_dim
    return _train(optimizer, (
        compiled(input_features=torch.randn(1, 256, features, generator=generator).to(DEVICE))
        .last_hidden_state.square().mean() for _ in range(steps)))


def _ltx(torch: Any, layers: int = 1) -> tuple[Any, Callable[..., Any]]:
    """diffusers' LTX-Video transformer (1 layer, 2 heads of 32, fp32) on the flex attention
    backend, and ``inputs(generator, latents)``: a 2x8x8 latent video and a 16-token prompt
    whose last 4 tokens are padding (``encoder_attention_mask``)."""
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    model = LTXVideoTransformer3DModel(in_channels=8, out_channels=8, num_attention_heads=2, attention_head_dim=32,
                                       cross_attention_dim=64, num_layers=layers, caption_channels=16).to(DEVICE)
    model.set_attention_backend("flex")
    frames, height, width, text = 2, 8, 8, 16

    def inputs(generator: Any, latents: Any = None) -> dict[str, Any]:
        if latents is None:
            latents = torch.randn(1, frames * height * width, 8, generator=generator).to(DEVICE)
        prompt = torch.randn(1, text, 16, generator=generator).to(DEVICE)
        return dict(hidden_states=latents, encoder_hidden_states=prompt, timestep=torch.tensor([500], device=DEVICE),
                    encoder_attention_mask=(torch.arange(text) < text - 4).long().unsqueeze(0).to(DEVICE),
                    num_frames=frames, height=height, width=width, return_dict=False)

    return model, inputs


def diffusers_ltx(torch: Any, mode: str, steps: int) -> list[float]:
    model, inputs = _ltx(torch)
    model.eval()
    compiled = model if mode == "eager" else torch.compile(model, mode=mode)
    generator = torch.Generator(device="cpu").manual_seed(1)
    latents, losses = None, []
    with torch.no_grad():
        for _ in range(steps):  # a few Euler steps of sampling
            kwargs = inputs(generator, latents)
            velocity = compiled(**kwargs)[0]
            latents = kwargs["hidden_states"] - 0.1 * velocity
            losses.append(velocity.float().square().mean().item())
    return losses


def diffusers_ltx_train(torch: Any, mode: str, steps: int) -> list[float]:
    from torch.utils.checkpoint import checkpoint

    model, inputs = _ltx(torch, layers=2)
    contexts = _save_matmuls_policy(torch, torch.ops.aten.mm.default, torch.ops.aten.bmm.default,
                                    torch.ops.aten.addmm.default)

    def sac(module: Any, *args: Any) -> Any:  # diffusers' gradient_checkpointing_func hook
        return checkpoint(module.__call__, *args, use_reentrant=False, context_fn=contexts)

    model.enable_gradient_checkpointing(gradient_checkpointing_func=sac)
    model.train()
    compiled = model if mode == "eager" else torch.compile(model, mode=mode)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    generator = torch.Generator(device="cpu").manual_seed(1)
    return _train(optimizer, (compiled(**inputs(generator))[0].float().square().mean() for _ in range(steps)))


def gpytorch_dkl(torch: Any, mode: str, steps: int) -> list[float]:
    import gpytorch

    torch.manual_seed(0)
    n = d = SIZE  # train points = features = projected features: x @ W.T and z @ z.T share layouts
    tasks = torch.Size([2])

    class DeepKernelGP(gpytorch.models.ExactGP):  # gpytorch's "batch independent multioutput GP"
        def __init__(self, train_x: Any, train_y: Any, likelihood: Any) -> None:
            super().__init__(train_x, train_y, likelihood)
            self.feature_extractor = torch.nn.Linear(d, d, bias=False)
            self.mean_module = gpytorch.means.ConstantMean(batch_shape=tasks)
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.PolynomialKernel(power=2, batch_shape=tasks), batch_shape=tasks)

        def forward(self, x: Any) -> Any:
            z = self.feature_extractor(x)
            return gpytorch.distributions.MultitaskMultivariateNormal.from_batch_mvn(
                gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z)))

    generator = torch.Generator(device="cpu").manual_seed(1)
    train_x = (torch.randn(n, d, generator=generator) / d ** 0.5).to(DEVICE)
    train_y = torch.randn(n, tasks[0], generator=generator).to(DEVICE)
    likelihood = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=tasks[0]).to(DEVICE)
    model = DeepKernelGP(train_x, train_y, likelihood).to(DEVICE)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    def loss_fn() -> Any:
        return -mll(model(train_x), train_y)

    compiled = loss_fn if mode == "eager" else torch.compile(loss_fn, mode=mode)
    model.train()
    likelihood.train()
    # dense kernel matrices: dynamo cannot trace the lazy kernel tensor's indexing (torch 2.11)
    with gpytorch.settings.lazily_evaluate_kernels(False):
        return _train(optimizer, (compiled() for _ in range(steps)))


def pyg_gae(torch: Any, mode: str, steps: int) -> list[float]:
    from torch_geometric.nn import GAE
    from torch_geometric.nn.models import GCN
    from torch_geometric.utils import add_self_loops, to_dense_adj

    torch.manual_seed(0)
    nodes = features = SIZE  # x @ W.T (the first GCNConv) and z @ z.T (the decoder) share layouts
    # self-loops added once to the data (as by the ``AddSelfLoops`` transform), not per call
    model = GAE(GCN(features, SIZE, num_layers=2, out_channels=SIZE, jk="last", add_self_loops=False)).to(DEVICE)
    generator = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(nodes, features, generator=generator).to(DEVICE)
    edge_index = add_self_loops(torch.randint(0, nodes, (2, 3 * nodes), generator=generator))[0].to(DEVICE)
    adj = to_dense_adj(edge_index, max_num_nodes=nodes)[0].clamp(max=1)

    def loss_fn(x: Any, edge_index: Any, adj: Any) -> Any:  # the dense reconstruction loss of Kipf & Welling
        z = model.encode(x, edge_index)
        return torch.nn.functional.binary_cross_entropy(model.decoder.forward_all(z), adj)  # sigmoid(z @ z.t())

    compiled = loss_fn if mode == "eager" else torch.compile(loss_fn, mode=mode)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    return _train(optimizer, (compiled(x, edge_index, adj) for _ in range(steps)))


def pyg_diffpool(torch: Any, mode: str, steps: int) -> list[float]:
    from torch_geometric.nn import DenseSAGEConv, dense_diff_pool

    # graphs per batch, nodes per graph, clusters (= nodes: s @ s.T has the layouts of s.T @ adj), width
    graphs, nodes, clusters, width = 4, SIZE // 2, SIZE // 2, SIZE
    torch.manual_seed(0)

    class DiffPool(torch.nn.Module):  # PyG's examples/proteins_diff_pool.py, one pooling level
        def __init__(self) -> None:
            super().__init__()
            self.pool = DenseSAGEConv(width, clusters)
            self.embed = DenseSAGEConv(width, width)
            self.after = DenseSAGEConv(width, width)
            self.out = torch.nn.Linear(width, 2)

        def forward(self, x: Any, adj: Any) -> tuple[Any, Any]:
            s = self.pool(x, adj).relu()
            x = self.embed(x, adj).relu()
            x, adj, link_loss, ent_loss = dense_diff_pool(x, adj, s)
            x = self.after(x, adj).relu().mean(dim=1)
            return self.out(x).log_softmax(dim=-1), link_loss + ent_loss

    model = DiffPool().to(DEVICE)
    compiled = model if mode == "eager" else torch.compile(model, mode=mode)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator(device="cpu").manual_seed(1)

    def losses() -> Iterator[Any]:  # a random batch of graphs per step
        for _ in range(steps):
            x = torch.randn(graphs, nodes, width, generator=generator).to(DEVICE)
            adj = (torch.rand(graphs, nodes, nodes, generator=generator) < 0.2).float()
            adj = ((adj + adj.transpose(1, 2)) > 0).float().to(DEVICE)
            y = torch.randint(0, 2, (graphs,), generator=generator).to(DEVICE)
            logits, aux = compiled(x, adj)
            yield torch.nn.functional.nll_loss(logits, y) + aux

    return _train(optimizer, losses())


def _lightly_pairs(torch: Any, steps: int) -> list[tuple[Any, Any]]:
    """Two noisy views of each of ``steps`` random batches of ``SIZE`` samples (no images: the
    losses under test see only the embeddings)."""
    generator = torch.Generator(device="cpu").manual_seed(1)
    pairs = []
    for _ in range(steps):
        x = torch.randn(SIZE, SIZE, generator=generator)
        pairs.append(tuple((x + 0.1 * torch.randn(SIZE, SIZE, generator=generator)).to(DEVICE) for _ in range(2)))
    return pairs


def _lightly(torch: Any, mode: str, steps: int, head: Any, criterion: Any) -> list[float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(SIZE, SIZE, bias=False), torch.nn.ReLU(), head).to(DEVICE)
    criterion = criterion.to(DEVICE)

    def loss_fn(x0: Any, x1: Any) -> Any:  # one step's loss: both views through the model, then the loss
        return criterion(model(x0), model(x1))

    compiled = loss_fn if mode == "eager" else torch.compile(loss_fn, mode=mode)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.06)
    return _train(optimizer, (compiled(x0, x1) for x0, x1 in _lightly_pairs(torch, steps)))


def lightly_simclr(torch: Any, mode: str, steps: int) -> list[float]:
    from lightly.loss import NTXentLoss
    from lightly.models.modules import SimCLRProjectionHead

    torch.manual_seed(0)
    return _lightly(torch, mode, steps, SimCLRProjectionHead(SIZE, SIZE, SIZE), NTXentLoss(temperature=0.5))


def lightly_vicreg(torch: Any, mode: str, steps: int) -> list[float]:
    from lightly.loss import VICRegLoss
    from lightly.models.modules import BarlowTwinsProjectionHead

    torch.manual_seed(0)
    return _lightly(torch, mode, steps, BarlowTwinsProjectionHead(SIZE, SIZE, SIZE), VICRegLoss())


CLIENTS: dict[str, Callable[[Any, str, int], list[float]]] = {
    "t5": t5, "layoutlmv3": layoutlmv3, "wav2vec2_bert": wav2vec2_bert, "pix2struct": pix2struct,
    "pix2struct_decoder": pix2struct_decoder, "umt5": umt5, "heavyball": heavyball,
    "pytorch_optimizer": pytorch_optimizer,
    "pytorch_optimizer_muon": pytorch_optimizer_muon, "timm_kron": timm_kron, "timm_muon": timm_muon,
    "muon": muon, "kron_torch": kron_torch, "torch_optimizer_shampoo": torch_optimizer_shampoo,
    "diffusers_ltx": diffusers_ltx, "diffusers_ltx_train": diffusers_ltx_train,
    "gpytorch_dkl": gpytorch_dkl, "pyg_gae": pyg_gae,
    "pyg_diffpool": pyg_diffpool, "lightly_simclr": lightly_simclr, "lightly_vicreg": lightly_vicreg}


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
    parser.add_argument("--size", type=int, default=SIZE, help="pyg_*, gpytorch_dkl, lightly_*: the equal sizes")
    parser.add_argument("--no-foreach", dest="foreach", action="store_false", help="heavyball: multi_tensor=False")
    args = parser.parse_args(argv)
    globals()["FOREACH"] = args.foreach
    globals()["SIZE"] = args.size
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
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # test/: quick_autotuning
    from quick_autotuning import autotuning

    start = time.perf_counter()
    try:  # under tools/gpu_tier a GPU run bounds its autotuning as the tier's tests do
        with autotuning(args.device) if args.device != "cpu" else contextlib.nullcontext():
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
