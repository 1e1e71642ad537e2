"""The tests' own autotuning bounds (``quick_autotuning.py``): which configs a bounded GPU selection
keeps, on this torch's real config lists and an H200's shared memory, and that each bound reaches
the method it means (the GPU tier runs under them: ``tools/gpu_tier``)."""

from __future__ import annotations

import contextlib
import inspect
import os
from unittest import mock

import torch
from quick_autotuning import (ENVIRONMENT, FITTING_CONFIGS, FLEX_CONFIGS, _config_heuristic_class,
                              autotuning, bounded_gpu_autotuning, quick_cpu_autotuning, representative_configs)

from torch._inductor import config
from torch._inductor.test_case import TestCase, run_tests

#: ``shared_memory_per_block_optin`` of an NVIDIA H200 (and H100), bytes.
H200_SHARED_MEMORY = 232448
HEURISTIC = _config_heuristic_class()


def _cuda_heuristic():
    import importlib

    return importlib.import_module(HEURISTIC.__module__).CUDAConfigHeuristic()


def _needs_the_estimate(test: TestCase) -> None:
    # 2.9 computes a config's shared memory inside its checker: no estimate to rank configs by, so
    # bounded autotuning leaves matmul configs as they are there (quick_autotuning's ``needed``).
    if not callable(getattr(HEURISTIC, "get_shared_memory_estimation", None)):
        test.skipTest(f"torch {torch.__version__}'s config heuristic has no get_shared_memory_estimation")


def _exceeds(heuristic, dtype_size):
    return lambda config, *_: heuristic.get_shared_memory_estimation(config, dtype_size, False, 0) > H200_SHARED_MEMORY


class TestRepresentativeConfigs(TestCase):
    def setUp(self) -> None:
        super().setUp()
        if HEURISTIC is None:
            self.skipTest(f"torch {torch.__version__} keeps no BaseConfigHeuristic where the tests look")
        self.heuristic = _cuda_heuristic()

    def test_fp32_matmul_keeps_the_first_fitting_and_every_one_that_may_not(self) -> None:
        """A float32 matmul on an H200: two configs that compile, and every config the estimate says
        needs more shared memory than the device has (128x128x128 with 4 stages among them): the
        failures stock's crash needs are among those, whichever of them the device cannot compile."""
        _needs_the_estimate(self)
        configs = list(self.heuristic.mm_configs)
        exceeds = _exceeds(self.heuristic, 4)
        chosen = representative_configs(configs, exceeds)
        fitting = [c for c in configs if not exceeds(c)]
        over = [c for c in configs if exceeds(c)]
        self.assertEqual(chosen[:FITTING_CONFIGS], fitting[:FITTING_CONFIGS])
        self.assertEqual(chosen[FITTING_CONFIGS:], over)
        self.assertIn((128, 128, 128), [(c.block_m, c.block_n, c.block_k) for c in over])
        self.assertLess(len(chosen), len(configs), "the bound cuts configs that compile")

    def test_a_list_that_fits_keeps_only_its_first(self) -> None:
        configs = list(self.heuristic.mm_configs)
        chosen = representative_configs(configs, lambda c: False)
        self.assertEqual(chosen, configs[:FITTING_CONFIGS])

    def test_the_order_of_the_list_is_kept(self) -> None:
        self.assertEqual(representative_configs([5, 1, 9, 2, 7], lambda c: c > 4, fitting=1), [5, 1, 9, 7])
        self.assertEqual(representative_configs([], lambda c: True), [])

    def test_the_selection_gets_them(self) -> None:
        """Through ``preprocess_mm_configs`` as a template's config generator calls it (this torch's
        signature; scaling to the problem size left out: it needs a graph), with an H200's limit."""
        _needs_the_estimate(self)
        heuristic, configs = self.heuristic, list(self.heuristic.mm_configs)

        def unscaled(self, m, n, k, configs, *args, **kwargs):
            return configs

        def h200(self, *args):
            return _exceeds(self, 4)

        # The CPU suite's own cap (quick_cpu_autotuning's max_mm_configs) lifted: the GPU tier has none.
        with mock.patch.object(HEURISTIC, "_scale_mm_configs", unscaled), \
                mock.patch.object(HEURISTIC, "_get_exceeding_shared_memory_checker", h200), \
                config.patch({"test_configs.max_mm_configs": None}):
            stock = list(heuristic.preprocess_mm_configs(128, 128, 128, configs=configs, dtype_size=4))
            with bounded_gpu_autotuning():
                bounded = list(heuristic.preprocess_mm_configs(128, 128, 128, configs=configs, dtype_size=4))
                no_device = mock.patch.object(HEURISTIC, "_get_exceeding_shared_memory_checker", lambda *a: None)
                with no_device:
                    unbounded = list(heuristic.preprocess_mm_configs(128, 128, 128, configs=configs, dtype_size=4))
            after = list(heuristic.preprocess_mm_configs(128, 128, 128, configs=configs, dtype_size=4))
        blocks = [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"]) for c in bounded]
        exceeding = sum(map(_exceeds(heuristic, 4), configs))
        self.assertEqual(len(bounded), FITTING_CONFIGS + exceeding)
        self.assertIn((128, 128, 128), blocks)
        self.assertGreater(len(stock), len(bounded))
        self.assertEqual(len(unbounded), len(stock), "no device limit: the list is left as it is")
        self.assertEqual(len(after), len(stock), "restored on exit")


class TestFlexConfigs(TestCase):
    def test_first_two_of_each_flex_list(self) -> None:
        from torch._inductor.choices import InductorChoices

        choices = InductorChoices()
        names = [n for n in ("get_flex_attention_fwd_configs", "get_flex_attention_bwd_configs",
                             "get_flex_decode_configs") if callable(vars(InductorChoices).get(n))]
        if not names:
            self.skipTest(f"torch {torch.__version__}'s InductorChoices chooses no flex configs")
        # The flex heuristics size themselves for the GPU they would run on: an H200's capability.
        with config.patch(max_autotune=True), mock.patch("torch.cuda.get_device_capability", return_value=(9, 0)):
            for name in names:
                with self.subTest(name=name):
                    # 2.14+ take a seq_len as well
                    known = {"head_dim": 64, "seq_len": 256, "dtype": torch.float32, "device_type": "cuda"}
                    method = getattr(choices, name)
                    kwargs = {k: v for k, v in known.items() if k in inspect.signature(method).parameters}
                    stock = list(method(**kwargs))
                    with bounded_gpu_autotuning():
                        bounded = list(getattr(choices, name)(**kwargs))
                    self.assertGreater(len(stock), FLEX_CONFIGS)
                    self.assertEqual(bounded, stock[:FLEX_CONFIGS])


class TestTheSetting(TestCase):
    def test_the_device_and_the_environment_choose(self) -> None:
        with mock.patch.dict(os.environ, {ENVIRONMENT: "bounded"}):
            self.assertIs(autotuning("cuda").func, bounded_gpu_autotuning.__wrapped__)
            self.assertIs(autotuning("cpu").func, quick_cpu_autotuning.__wrapped__)
        with mock.patch.dict(os.environ):
            os.environ.pop(ENVIRONMENT, None)
            self.assertIsInstance(autotuning("cuda"), contextlib.nullcontext)
            self.assertIs(autotuning("cpu").func, quick_cpu_autotuning.__wrapped__)

    def test_another_value_is_an_error(self) -> None:
        with mock.patch.dict(os.environ, {ENVIRONMENT: "few"}), self.assertRaisesRegex(ValueError, "'bounded'"):
            autotuning("cuda")


if __name__ == "__main__":
    run_tests()
