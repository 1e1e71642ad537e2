"""What makes benchmark-realign record each kind of its activity (``ACTS``: kind -> a function of
this module), for ``test/test_activity_lines.py``, which runs each in a fresh process: a training
step of FlexAttention with T5's position bias under selective checkpointing, two layers
(``check --ops flex_backward``'s ``t5-view``: its backward's choices realigned, its shared
captured buffers frozen; up to 2.13 realized too), on the CPU harness. From 2.14 the lowering
realizes its captured buffers itself: there, an unrealized input is handed to the selection
wrapper as 2.8-2.13's lowering handed it, in a lowering of the flex backward."""

from __future__ import annotations

import types

from helpers import lowering
from quick_autotuning import quick_cpu_autotuning

from inductor_fix.check.harness import triton_cpu_harness
from inductor_fix.patches.benchmark_realign.check import FLEX_TRAINING, flex_training

__all__ = ["ACTS", "t5_training", "unrealized_input"]


def t5_training() -> None:
    import unittest

    import torch
    from torch._inductor.utils import fresh_cache

    from inductor_fix.patches.benchmark_realign.seams import flex_backward_on_triton

    if not flex_backward_on_triton():  # 2.9.1: flex_attention_backward has no CPU lowering to reach
        raise unittest.SkipTest(f"the harness cannot send a flex backward to Triton on torch {torch.__version__}")

    with fresh_cache(), quick_cpu_autotuning(), triton_cpu_harness():
        (step,) = flex_training(FLEX_TRAINING["t5_view"], "cpu", compare=False)
    assert step.error is None, step.error


class Pointwise:
    """An input node selection cannot key: what 2.8-2.13's flex backward passed (``key_of``
    raises, as ``create_inputs_key`` does on an unrealized ``ir.Pointwise``)."""

    def get_name(self) -> str:
        raise NotImplementedError("Pointwise")


def unrealized_input() -> None:
    import torch

    from inductor_fix.patches.benchmark_realign import fix

    if fix.ACTIVITY.counts.get("realized"):
        return
    buffer = types.SimpleNamespace(get_name=lambda: "buf7", maybe_get_layout=lambda: None)
    flexible = type("FlexibleLayout", (), {})  # no input here has one: nothing to freeze
    select = fix.realized_selection(lambda name, choices, input_nodes, layout: input_nodes,
                                    lambda node: buffer, lambda node: node.get_name(), flexible)
    with lowering(torch.ops.higher_order.flex_attention_backward):
        select("flex_attention_backward", [], [Pointwise()], None)


def training_and_unrealized() -> None:
    t5_training()
    unrealized_input()


ACTS = {"realigned": t5_training, "selections_realigned": t5_training, "frozen": t5_training,
        "realized": training_and_unrealized}
