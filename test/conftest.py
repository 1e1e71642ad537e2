"""pytest configuration: Hypothesis profiles and the GPU/CPU mode switch.

``INDUCTOR_FIX_HYPOTHESIS_PROFILE`` picks the Hypothesis profile:

- ``ci`` (default): derandomized, no example database, no deadline, bounded
  example counts so the CPU suite finishes in minutes on 2 cores.
- ``dev``: a few random examples, database kept - for iterating locally.
- ``nightly``: many random examples, database kept - for hunting regressions.

``INDUCTOR_FIX_HYPOTHESIS_MAX_EXAMPLES=N`` bounds any profile to N generated examples
per test, without shrinking (pinned ``@example`` cases always run).

``INDUCTOR_FIX_TEST_CODEGEN_CACHE=1`` switches Inductor's codegen cache on
(``enable_caching_generated_triton_templates``), as 2.9+ ships it; 2.8.x ships it
off, so this is how the version matrix shows 2.8.x is affected once it is on.

GPU tests skip without CUDA; on a CUDA machine they run for real.

In CPU mode every test autotunes quickly (``quick_autotuning.py``: fewer Triton template
configs per matmul selection, briefer CPU benchmarks; why that stays honest beside them);
GPU mode autotunes as users do, except under ``tools/gpu_tier`` (``INDUCTOR_FIX_TEST_AUTOTUNING=bounded``:
a representative few configs per selection, ``quick_autotuning.bounded_gpu_autotuning``), where every
test process and every child it starts bounds its autotuning alike.

README's command passes ``-n auto --dist loadfile`` (pytest-xdist): each test file runs whole
in one worker process (module fixtures such as test_autoload's wheel are built once), one
worker per CPU up to 4; ``-n 0`` runs everything in this process.
"""

from __future__ import annotations

import os

import pytest

import inductor_fix  # noqa: F401  (applied for the whole session, as users have it; before torch)

# PyTorch's common_utils registers and loads Hypothesis profiles of its own when first
# imported (one is also called "dev"): import it first so ours are registered last.
import torch.testing._internal.common_utils  # noqa: F401, E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

settings.register_profile(
    "ci",
    parent=settings.get_profile("ci"),
    derandomize=True,
    database=None,
    print_blob=True,
    max_examples=8,
    **_COMMON,
)
settings.register_profile("dev", max_examples=4, **_COMMON)
settings.register_profile(
    "nightly",
    max_examples=200,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    **_COMMON,
)
settings.load_profile(os.environ.get("INDUCTOR_FIX_HYPOTHESIS_PROFILE", "ci"))
if os.environ.get("INDUCTOR_FIX_TEST_CODEGEN_CACHE") == "1":
    import torch._inductor.config as inductor_config  # noqa: E402

    inductor_config.enable_caching_generated_triton_templates = True
if os.environ.get("INDUCTOR_FIX_HYPOTHESIS_MAX_EXAMPLES"):  # a bounded run: the version matrix, a GPU run
    # No shrinking either: a bounded run asks pass or fail, and shrinking a failing example
    # costs a compile sequence per step (the negative controls set their own phases).
    settings.register_profile(
        "bounded", settings.default, max_examples=int(os.environ["INDUCTOR_FIX_HYPOTHESIS_MAX_EXAMPLES"]),
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )
    settings.load_profile("bounded")


@pytest.fixture(autouse=True)
def _autotuning():
    from helpers import DEVICE
    from quick_autotuning import autotuning

    with autotuning(DEVICE):
        yield


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which a matrix venv does not install
def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (README's command): one worker per CPU this process may run on, at most 4,
    since each holds torch and compiles, and on a GPU machine they share its one GPU."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, 4))


def pytest_report_header(config) -> list[str]:
    """The fix's state on this torch, first thing in every run's output: a nightly whose
    internals moved shows ``unsupported`` and why before any test fails."""
    try:
        import torch._inductor.select_algorithm  # noqa: F401  (settles "pending")
        from inductor_fix.cli import settle_modules

        settle_modules()  # and every other module a patch targets
    except Exception as error:  # the tests will report it
        return [f"inductor_fix: torch._inductor does not import: {type(error).__name__}: {error}"]
    status = inductor_fix.status()
    lines = [f"inductor_fix: {status.state} - {status.reason}"]
    if status.protected is False and status.state != "disabled":
        lines.append("inductor_fix: NOT PROTECTED on this torch - see the patch states above")
    return lines


def pytest_collection_modifyitems(config, items) -> None:
    """``INDUCTOR_FIX_TEST_ORDER=FILE`` (``tools/gpu_tier``): the tests in the order FILE lists their
    ids (``tools/gpu_tier_lib/schedule.py`` says why it is not simply longest first), tests it does
    not list before all."""
    path = os.environ.get("INDUCTOR_FIX_TEST_ORDER")
    if not path:
        return
    import json

    with open(path) as handle:
        position = {nodeid: index for index, nodeid in enumerate(json.load(handle))}
    items.sort(key=lambda item: position.get(item.nodeid, -1))


def pytest_runtest_logreport(report) -> None:
    """``INDUCTOR_FIX_GPU_TIER_RESULTS=FILE`` (``tools/gpu_tier``): each test's outcome, seconds, and
    when it started and stopped (seconds since the epoch, the wall time's part its tests did not take),
    one JSON line as it finishes (in the controlling process only, under pytest-xdist)."""
    path = os.environ.get("INDUCTOR_FIX_GPU_TIER_RESULTS")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        import json

        with open(path, "a") as handle:
            handle.write(json.dumps({"nodeid": report.nodeid, "outcome": report.outcome,
                                     "seconds": round(report.duration, 1), "start": round(report.start, 1),
                                     "stop": round(report.stop, 1)}) + "\n")
