"""Property suite: whatever the op, sizes, dtype, views and aliasing sequence, kernel arity matches.

Runs against whatever torch is installed, in whatever state ``inductor_fix`` is
in: ``INDUCTOR_FIX_DISABLE=1`` makes it the stock run (which must find a
counterexample on 2.9-2.14), and ``tools/check_patches`` / ``tools/run_matrix``
run it on torch builds carrying the upstream diffs.

Mode: GPU (kernels run, results compared with eager) when CUDA is available,
else the CPU harness (inductor_fix/testing/harness.py). Profiles: test/conftest.py.

Oracle, per compile of a :class:`strategies.Case`:
1. every autotuning launch binds to the loaded kernel's signature (no TypeError);
2. every Triton choice's tensor-argument count equals its kernel's pointer parameters;
3. the op's template was really generated (so no example passes by not exercising it);
4. the arity guard never had to step in (the key alone keeps entries apart);
5. no Triton choice's benchmark failed on a launch that did not fit its kernel
   (which Inductor may otherwise swallow, dropping the choice);
6. GPU only: results equal eager within a per-dtype tolerance.
"""

from __future__ import annotations

import contextlib

from helpers import AFFECTED, FLEX_AFFECTED, HAS_CUDA, fresh_cache
from hypothesis import Phase, example, given, settings
from strategies import Case, FlexCase, Operand, cases, flex_cases

import inductor_fix
import torch
from inductor_fix.testing.harness import triton_cpu_harness
from inductor_fix.testing.observe import observe_autotuning
from inductor_fix.testing.workloads import MODE, describe_error, max_rel_error
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests

DEVICE = "cuda" if HAS_CUDA else "cpu"
TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 6e-2}


def _compile_pattern(case: Case, pattern: tuple[int, ...], seed: int):
    """Base tensors, one per block of ``pattern``, and the function viewing them into operands."""
    generator = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, case.dtype)
    first = {label: position for position, label in reversed(list(enumerate(pattern)))}
    bases = [
        torch.randn(case.operands[first[label]].base_shape, generator=generator).to(DEVICE, dtype)
        for label in sorted(first)
    ]
    call = case.spec.call

    def function(*tensors):
        return call(*(operand.make(tensors[label]) for operand, label in zip(case.operands, pattern)))

    return function, bases


def check_arity(case: Case) -> None:
    """Run ``case``'s compile sequence in a fresh Inductor cache; AssertionError on any violation."""
    harness = triton_cpu_harness() if DEVICE == "cpu" else contextlib.nullcontext()
    counters.clear()
    with fresh_cache(), harness, config.patch(fx_graph_cache=False), observe_autotuning() as seen:
        for index, pattern in enumerate(case.patterns):
            function, bases = _compile_pattern(case, pattern, seed=index)
            torch._dynamo.reset()
            choices_before = len(seen.choices)
            try:
                result = torch.compile(function, mode=MODE, fullgraph=True)(*bases)
            except Exception as error:
                raise AssertionError(f"compile {index} {pattern} of {case}: {describe_error(error)}") from None
            generated = [c for c in seen.choices[choices_before:] if c.template in case.templates]
            if case.reaches_template:
                assert generated, f"compile {index} {pattern} of {case}: none of templates {case.templates} generated"
            if DEVICE == "cuda":
                expected = function(*bases)
                error = max_rel_error(result, expected)
                assert error <= TOLERANCE[case.dtype], f"compile {index} {pattern} of {case}: max rel error {error:.2e}"
    assert not seen.arity_mismatches, f"{case}: choices whose arity mismatches: {seen.arity_mismatches[:2]}"
    assert not seen.arity_errors, f"{case}: Triton benchmarks failed on arity: {seen.arity_errors[:2]}"
    guard = dict(counters["inductor_fix"])
    assert not any(guard.values()), f"{case}: the arity guard had to act: {guard}"


def _square(shape: tuple[int, ...], view: str = "plain") -> Operand:
    return Operand(shape, view)


B3 = (4, 128, 128)
M2 = (128, 128)
#: The regressions measured on the H200 (torch 2.11.0), pinned.
REGRESSIONS = [
    Case("bmm", (_square(B3), _square(B3)), "float32", ((0, 0), (0, 1))),
    Case("bmm", (_square(B3), _square(B3)), "float32", ((0, 1), (0, 0))),
    Case("mm", (_square(M2), _square(M2)), "float32", ((0, 0), (0, 1))),
    Case("addmm", (_square(M2), _square(M2), _square(M2)), "float32", ((0, 0, 0), (0, 1, 2))),
    Case("baddbmm", (_square(B3), _square(B3), _square(B3)), "float32", ((0, 0, 0), (0, 1, 2))),
    Case("bmm", (_square(B3), _square(B3, "transpose")), "float32", ((0, 0), (0, 1))),
]


def _pinned(op: str):
    """Apply @example for every pinned regression of ``op``."""

    def decorate(test):
        for case in reversed([c for c in REGRESSIONS if c.op == op]):
            test = example(case=case)(test)
        return test

    return decorate


class TestArityProperties(TestCase):
    """The property, one test per op, each with its pinned regressions."""

    @_pinned("mm")
    @given(case=cases("mm"))
    def test_mm(self, case: Case) -> None:
        check_arity(case)

    @_pinned("addmm")
    @given(case=cases("addmm"))
    def test_addmm(self, case: Case) -> None:
        check_arity(case)

    @_pinned("bmm")
    @given(case=cases("bmm"))
    def test_bmm(self, case: Case) -> None:
        check_arity(case)

    @_pinned("baddbmm")
    @given(case=cases("baddbmm"))
    def test_baddbmm(self, case: Case) -> None:
        check_arity(case)

    @given(case=cases("mm_plus_mm"))
    def test_mm_plus_mm(self, case: Case) -> None:
        check_arity(case)

    @given(case=cases("conv"))
    def test_conv(self, case: Case) -> None:
        if not _conv_template_cached():
            self.skipTest("depthwise_conv1d template does not use the codegen cache in this torch")
        check_arity(case)


def _conv_template_cached() -> bool:
    from torch._inductor.kernel import conv

    template = getattr(conv, "depthwise_conv1d_template", None)
    return bool(getattr(template, "_cache_codegen_enabled_for_template", False))


class TestPropertyNegativeControl(TestCase):
    """With the fix removed, Hypothesis must find a counterexample on an affected release."""

    def test_hypothesis_finds_counterexample_on_stock(self) -> None:
        # Generated examples only (the pinned ones would make this trivial); shrinking
        # costs one compile sequence per step, so it runs only in the dev/nightly profiles.
        phases = [Phase.generate] if settings.default.derandomize else [Phase.generate, Phase.shrink]

        @settings(phases=phases, max_examples=8)
        @given(case=cases("bmm", dtypes=("float32",)))
        def arity_property(case: Case) -> None:
            check_arity(case)

        with inductor_fix.removed():
            if not AFFECTED:
                arity_property()  # a fixed release: no counterexample may exist
                return
            with self.assertRaisesRegex(AssertionError, r"TypeError|arity") as caught:
                arity_property()
        print(f"\nshrunk counterexample on stock torch {torch.__version__}: {caught.exception}")


def check_flex(case: FlexCase) -> None:
    """Compile ``case`` once in a fresh Inductor cache; AssertionError on any violation.

    Oracle as for matmuls: the compile succeeds (no launch that does not fit its
    kernel), a flex template was generated, no choice's own arity mismatches, the
    guard never had to exclude or regenerate (realigning is the fix, not a fault),
    and on a GPU the output equals eager within the dtype's tolerance.
    """
    harness = triton_cpu_harness() if DEVICE == "cpu" else contextlib.nullcontext()
    counters.clear()
    inputs = case.inputs(DEVICE)
    function = case.function()
    with fresh_cache(), harness, config.patch(fx_graph_cache=False), observe_autotuning() as seen:
        torch._dynamo.reset()
        try:
            result = torch.compile(function, mode=MODE, fullgraph=True)(*inputs)
        except Exception as error:
            raise AssertionError(f"{case}: {describe_error(error)}") from None
    assert any(c.template in case.templates for c in seen.choices), f"{case}: no flex template generated"
    assert not seen.arity_mismatches, f"{case}: choices whose arity mismatches: {seen.arity_mismatches[:2]}"
    assert not seen.arity_errors, f"{case}: Triton benchmarks failed on arity: {seen.arity_errors[:2]}"
    guard = {k: v for k, v in counters["inductor_fix"].items() if k != "realigned" and v}
    assert not guard, f"{case}: the arity guard had to act: {guard}"
    if DEVICE == "cuda":
        expected = function(*inputs)
        error = max_rel_error(result, expected)
        assert error <= TOLERANCE[case.dtype], f"{case}: max rel error {error:.2e}"


#: The FlexAttention cases measured on the H200 (torch 2.11.0): decoding and forward kernels.
FLEX_REGRESSIONS = [
    FlexCase(128, 2, 2, 49, 49, 32, "float32", "gather"),
    FlexCase(2, 2, 2, 256, 256, 32, "float32", "gather"),
]


class TestFlexProperties(TestCase):
    """FlexAttention with in-graph captured buffers: whatever the shapes, GQA, dtype and bias."""

    @example(case=FLEX_REGRESSIONS[1])
    @example(case=FLEX_REGRESSIONS[0])
    @given(case=flex_cases())
    def test_flex_captured_bias(self, case: FlexCase) -> None:
        check_flex(case)


class TestFlexNegativeControl(TestCase):
    """With the fix removed, Hypothesis must find a crashing flex case on an affected release."""

    def test_hypothesis_finds_counterexample_on_stock(self) -> None:
        phases = [Phase.generate] if settings.default.derandomize else [Phase.generate, Phase.shrink]

        @settings(phases=phases, max_examples=4)
        @given(case=flex_cases(dtypes=("float32",)))
        def flex_property(case: FlexCase) -> None:
            check_flex(case)

        with inductor_fix.removed():
            if not FLEX_AFFECTED:
                flex_property()
                return
            with self.assertRaisesRegex(AssertionError, r"TypeError|arity") as caught:
                flex_property()
        print(f"\nshrunk flex counterexample on stock torch {torch.__version__}: {caught.exception}")


class TestKernelSignatures(TestCase):
    """The dedup contract of TritonTemplateKernel.def_kernel, as generated kernel signatures:
    one pointer parameter per distinct buffer, whatever the views."""

    def _signatures(self, case: Case) -> str:
        harness = triton_cpu_harness() if DEVICE == "cpu" else contextlib.nullcontext()
        with harness, config.patch(fx_graph_cache=False), observe_autotuning() as seen:
            function, bases = _compile_pattern(case, case.patterns[0], seed=0)
            torch.compile(function, mode=MODE, fullgraph=True)(*bases)
        return "\n".join(seen.signatures(case.spec.template))

    def test_bmm_aliased_takes_one_input_pointer(self) -> None:
        case = Case("bmm", (_square((2, 32, 32)), _square((2, 32, 32))), "float32", ((0, 0),))
        self.assertExpectedInline(self._signatures(case), """triton_bmm(arg_B, out_ptr0)""")

    def test_bmm_distinct_takes_two_input_pointers(self) -> None:
        case = Case("bmm", (_square((2, 32, 32)), _square((2, 32, 32))), "float32", ((0, 1),))
        self.assertExpectedInline(self._signatures(case), """triton_bmm(arg_A, arg_B, out_ptr0)""")

    def test_addmm_all_three_aliased(self) -> None:
        case = Case("addmm", (_square((32, 32)),) * 3, "float32", ((0, 0, 0),))
        self.assertExpectedInline(self._signatures(case), """triton_mm(arg_B, out_ptr0)""")

    def test_bmm_transposed_alias(self) -> None:
        case = Case("bmm", (_square((2, 32, 32)), _square((2, 32, 32), "transpose")), "float32", ((0, 0),))
        self.assertExpectedInline(self._signatures(case), """triton_bmm(arg_B, out_ptr0)""")


if __name__ == "__main__":
    run_tests()
