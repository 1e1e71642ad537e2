"""Stand-ins for the upstream test modules whose classes the series' tests are methods of.

A series diff adds a test method to a class of ``test/inductor/test_flex_attention.py`` or
``test/inductor/test_cutlass_backend.py``, modules the torch wheel does not ship. To run that
method against an installed torch, :mod:`matrix_lib.series` writes a module holding the method in
a class of the same name whose base is a fixture class here: what the upstream class gives its
methods, written here from what the newest stored copy of each module shows (its fixtures' names,
arguments and checks), not copied. Each generated module does ``from <fixtures> import *``
(:mod:`matrix_lib.standin_flex`, :mod:`matrix_lib.standin_cutlass`): their ``__all__`` lists the
module-level names upstream's module offers its methods. This module imports no torch.

- :data:`FLEX` - ``TestLearnableBiases`` of ``test_flex_attention.py``: device-generic
  (``instantiate_device_type_tests``), methods take ``device``; ``_init_tensors(params, device)``,
  ``_check_outputs_and_grads`` (the compiled output's and gradients' RMSE against a float64 gold
  run, bounded by eager's times a fudge factor). On a machine without CUDA the class runs on the
  CPU under the package's Triton-on-CPU harness (``inductor_fix.check.harness``): compile and
  launch arity only, so ``_check_outputs_and_grads`` runs the backward and compares nothing,
  and ``skip_on_cpu`` skips nothing.
- :data:`CUTLASS` - ``TestCutlassBackend`` of ``test_cutlass_backend.py``: skips without CUDA,
  without CUTLASS (``try_import_cutlass``) or on a GPU older than sm_90.

Besides upstream's methods, ``LearnableBiasRegressions`` (:mod:`matrix_lib.standin_flex`) is this
project's own: a learnable
bias and a learnable gate read by ``score_mod`` and compiled with max-autotune, whose backward
writes the captured buffers' gradients (the mutated captured grads a kernel-derived input list
must hold), as upstream's max-autotune learnable-bias tests do. It is labelled ours in every table.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BY_FILE", "CUTLASS", "FLEX", "StandIn"]


class StandIn(NamedTuple):
    """One upstream test module's stand-in: the class the series' methods belong to, the
    fixture module whose names the generated module star-imports, the fixture base class, the
    lines that end the generated module (instantiating its classes), and this project's own
    test methods the generated module also runs (labelled ours)."""

    upstream: str
    cls: str
    fixtures: str
    base: str
    instantiate: tuple[str, ...]
    ours: tuple[str, ...] = ()


FLEX = StandIn("test/inductor/test_flex_attention.py", "TestLearnableBiases", "matrix_lib.standin_flex",
               "LearnableBiasesFixtures",
               ("instantiate_stand_in(TestLearnableBiases, globals())",
                "instantiate_stand_in(LearnableBiasRegressions, globals())"),
               ("test_learnable_bias_and_gate_max_autotune",))
CUTLASS = StandIn("test/inductor/test_cutlass_backend.py", "TestCutlassBackend", "matrix_lib.standin_cutlass",
                  "CutlassBackendFixtures", ("instantiate_parametrized_tests(TestCutlassBackend)",))

#: Upstream test file -> its stand-in.
BY_FILE = {stand_in.upstream: stand_in for stand_in in (FLEX, CUTLASS)}
