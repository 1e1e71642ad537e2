"""Property suite of the cache-key patch: whatever the op, sizes, dtype, views and aliasing
sequence, kernel arity matches.

Runs against whatever torch is installed, in whatever state ``inductor_fix`` is
in: ``INDUCTOR_FIX_DISABLE=1`` makes it the stock run (which must find a
counterexample on 2.9-2.14), and ``tools/check_patches`` / ``tools/run_matrix``
run it on torch builds carrying the upstream diffs.

Mode: GPU (kernels run, results compared with eager) when CUDA is available,
else the CPU harness (inductor_fix/check/harness.py). Profiles: test/conftest.py.

Oracle, per compile of a :class:`matmul_cases.Case`:
1. every autotuning launch binds to the loaded kernel's signature (no TypeError);
2. every Triton choice's tensor-argument count equals its kernel's pointer parameters;
3. the op's template was really generated (so no example passes by not exercising it);
4. the arity guard never had to step in (the key alone keeps entries apart);
5. no Triton choice's benchmark failed on a launch that did not fit its kernel
   (which Inductor may otherwise swallow, dropping the choice);
6. GPU only: results equal eager within a per-dtype tolerance.
"""

from __future__ import annotations

from unittest import mock

import pytest
from helpers import (DEVICE, TOLERANCE, is_affected, counterexample_on_stock, fresh_cache, on_device, safety_nets_acted,
                     stock_phases)
from hypothesis import example, given, settings
from matmul_cases import Case, Operand, cases

import torch
from inductor_fix.check.workloads import MODE, describe_error, max_rel_error
import codegen_cache_check as codegen_cache_check_module
from codegen_cache_check import WRONG_OUTPUT, CacheCheck, codegen_cache_check
from hypothesis import strategies as st
from observe import observe_autotuning
from torch.testing._internal.common_utils import instantiate_parametrized_tests, parametrize
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests

#: tools/run_matrix's expectations: stock fails where the cache-key patch's ``affected`` says,
#: and on 2.8.x too once its codegen cache is switched on (the ``@codegen-cache`` variant).
VARIANTS = {"codegen-cache": ">=2.8.0,<2.15.0"}



def stock_fails() -> bool:
    """Stock has the bug on this torch as configured: the patch's range, or 2.8.x with its
    codegen cache switched on (:data:`VARIANTS`)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    cache_on = config.enable_caching_generated_triton_templates
    release = Version(torch.__version__).base_version
    return is_affected("bmm") or (cache_on and release in SpecifierSet(VARIANTS["codegen-cache"]))


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
    harness = on_device()
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
    guard = safety_nets_acted()
    assert not any(guard.values()), f"{case}: the arity guard had to act: {guard}"


#: Same-pattern sequences: both operands distinct, and both one tensor.
parametrize_patterns = parametrize("pattern", [(0, 1), (0, 0)],
                                   name_fn=lambda p: "aliased" if p == (0, 0) else "distinct")


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


@pytest.mark.negative_control
class TestPropertyNegativeControl(TestCase):
    """With the fix removed, Hypothesis must find a counterexample on an affected release."""

    def test_hypothesis_finds_counterexample_on_stock(self) -> None:
        # Generated examples only: the pinned ones would make this trivial.
        @settings(phases=stock_phases(), max_examples=8)
        @given(case=cases("bmm", dtypes=("float32",)))
        def arity_property(case: Case) -> None:
            check_arity(case)

        counterexample_on_stock(self, arity_property, stock_fails(), r"TypeError|arity", "counterexample")


def check_codegen_cache(case: Case) -> CacheCheck:
    """The second oracle: ``case``'s sequence in a fresh Inductor cache under Inductor's own
    codegen-cache check (:mod:`codegen_cache_check`); AssertionError if a compile fails
    (a stale hit fails the check itself) or a hit went unchecked. Returns the tally."""
    harness = on_device()
    counters.clear()
    with fresh_cache(), harness, config.patch(fx_graph_cache=False), codegen_cache_check() as tally:
        for index, pattern in enumerate(case.patterns):
            function, bases = _compile_pattern(case, pattern, seed=index)
            torch._dynamo.reset()
            try:
                torch.compile(function, mode=MODE, fullgraph=True)(*bases)
            except Exception as error:
                raise AssertionError(f"compile {index} {pattern} of {case}: {describe_error(error)}") from None
    assert not tally.unchecked, f"{case}: codegen-cache hits Inductor did not check: {tally.unchecked}"
    assert (tally.checks, tally.failed) == (tally.hits, 0), f"{case}: {tally}"
    return tally


def _has_test_cache() -> bool:
    from torch._inductor.select_algorithm import TritonTemplate

    return hasattr(TritonTemplate, "test_cache")


@pytest.mark.codegen_cache_check
@instantiate_parametrized_tests
class TestCodegenCacheCheck(TestCase):
    """Inductor's codegen-cache check (``TritonTemplate.test_cache``) as the oracle: whatever
    the aliasing sequence, every hit regenerates the same kernel; and the check really runs."""

    def setUp(self) -> None:
        super().setUp()
        if not _has_test_cache():
            self.skipTest(f"torch {torch.__version__} has no TritonTemplate.test_cache")
        if not config.enable_caching_generated_triton_templates:
            self.skipTest(f"torch {torch.__version__} ships the codegen cache switched off: no hit to check")

    @settings(max_examples=4)
    @given(case=st.sampled_from(["mm", "addmm", "bmm", "baddbmm"]).flatmap(lambda op: cases(op, ("float32",))))
    def test_every_hit_regenerates_the_same_kernel(self, case: Case) -> None:
        check_codegen_cache(case)

    @parametrize_patterns
    def test_same_pattern_sequence_hits_and_each_hit_is_checked(self, pattern: tuple[int, int]) -> None:
        """A fix that merely disabled the cache would pass the property above: hits must happen."""
        tally = check_codegen_cache(Case("bmm", (_square(B3), _square(B3)), "float32", (pattern, pattern)))
        self.assertGreater(tally.hits, 0, "no codegen-cache hit: the check never had a chance to run")

    def test_caching_off_gives_no_hits(self) -> None:
        """Negative control of the oracle: with the cache off nothing is checked, and the
        same-pattern assertion (hits > 0) is what catches it."""
        with config.patch(enable_caching_generated_triton_templates=False):
            tally = check_codegen_cache(Case("bmm", (_square(B3), _square(B3)), "float32", ((0, 1), (0, 1))))
        self.assertEqual((tally.hits, tally.checks), (0, 0))

    def test_a_hit_the_check_skipped_is_reported(self) -> None:
        """Negative control of the oracle: hits served without Inductor's check (test_cache
        switched back off inside the block) are reported, never counted as passes."""
        from torch._inductor.select_algorithm import TritonTemplate

        with self.assertRaisesRegex(AssertionError, "hits Inductor did not check"), \
                mock.patch.object(codegen_cache_check_module, "_in_maybe_test_cache", lambda depth=6: False):
            check_codegen_cache(Case("bmm", (_square(B3), _square(B3)), "float32", ((0, 1), (0, 1))))
        self.assertTrue(TritonTemplate.test_cache is False)  # restored

    @pytest.mark.negative_control
    def test_stock_fails_the_check(self) -> None:
        """Negative control: with the fix removed, Hypothesis finds a sequence whose hit
        Inductor's own check rejects, on an affected release."""
        @settings(phases=stock_phases(), max_examples=4)
        @given(case=cases("bmm", dtypes=("float32",)))
        def codegen_cache_property(case: Case) -> None:
            check_codegen_cache(case)

        counterexample_on_stock(self, codegen_cache_property, stock_fails(), WRONG_OUTPUT,
                                "counterexample of Inductor's codegen-cache check")


class TestKeyGrouping(TestCase):
    """The installed ``make_key`` (patched by the package, or by patches/0001 applied to torch's
    source) gives two input lists equal keys exactly when their aliasing patterns are equal:
    3 inputs of one layout, all 5 set partitions, each under two buffer namings. Stock keys
    (2.9-2.14) group every pattern together."""

    def test_keys_equal_exactly_when_patterns_equal(self) -> None:
        import inspect

        from inductor_fix.patches.cache_key.probe import PROBE_ARGUMENTS
        from matmul_cases import set_partitions
        from torch._inductor import ir, select_algorithm

        GeneratedCodeCache = getattr(select_algorithm, "GeneratedCodeCache", None)
        if GeneratedCodeCache is None or not config.enable_caching_generated_triton_templates:
            self.skipTest(f"torch {torch.__version__}: no codegen cache, or switched off (2.8's default): "
                          "its key is never used")

        layout = ir.FixedLayout(torch.device("cpu"), torch.float32, [2, 8, 8], [64, 8, 1])
        namings = [[ir.Buffer(name=f"{prefix}{i}", layout=layout) for i in range(3)] for prefix in ("p", "q")]
        parameters = inspect.signature(GeneratedCodeCache.make_key).parameters
        arguments = {k: v for k, v in dict(PROBE_ARGUMENTS, layout=layout, call_sizes=layout.size).items()
                     if k in parameters}
        groups: dict[str, int] = {}
        found = {pattern: [groups.setdefault(GeneratedCodeCache().make_key(
            input_nodes=tuple(nodes[label] for label in pattern), **arguments), len(groups)) for nodes in namings]
            for pattern in set_partitions(3)}
        self.assertEqual(found, {pattern: [index, index] for index, pattern in enumerate(found)})


class TestKernelSignatures(TestCase):
    """The dedup contract of TritonTemplateKernel.def_kernel, as generated kernel signatures:
    one pointer parameter per distinct buffer, whatever the views."""

    def _signatures(self, case: Case) -> str:
        harness = on_device()
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
