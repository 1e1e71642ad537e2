"""Shared test helpers: which bug this torch has (from the patch table), skips, subprocess
runs, and figures for the closing note of a GPU run."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import unittest
from typing import Any, NamedTuple

import torch
from packaging.version import Version

from inductor_fix._triton_launch import LAUNCHER_ERRORS
from inductor_fix._installed import release_of
from inductor_fix.check import parts
from inductor_fix.check.harness import ORACLE_ERROR

TORCH_RELEASE = Version(release_of(torch.__version__))
HAS_CUDA = torch.cuda.is_available()
#: GPU mode (kernels run, results compared with eager) with CUDA, else the CPU harness.
DEVICE = "cuda" if HAS_CUDA else "cpu"

try:
    from torch._inductor.utils import fresh_cache  # noqa: F401  (re-exported)
except ImportError:  # torch <= 2.7 calls it fresh_inductor_cache
    from torch._inductor.utils import fresh_inductor_cache as fresh_cache  # noqa: F401

#: Max relative error against eager a GPU-mode result may have, per dtype.
TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 6e-2}
#: The same for a float32 matmul template's output (no reduction order but the template's own).
MATMUL_TOLERANCE = 1e-4
#: What stock's launch of a kernel of another arity raises: the Triton patches' stock crash, as
#: their ``Patch.crash`` declares it (``inductor_fix._triton_launch.LAUNCHER_ERRORS``: every launcher form
#: 2.8-2.15 has), and the CPU harness's arity oracle, raised in the launcher's place.
LAUNCHER_ERROR = "|".join(f"(?:{form})" for form in (*LAUNCHER_ERRORS, ORACLE_ERROR))
#: Relative difference a real client's training loss may have from its reference run, per dtype.
LOSS_TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}

def requires_cuda(test: Any) -> Any:
    """Runs kernels on a CUDA GPU: marked ``gpu`` (the GPU tier, ``tools/gpu_tier``, runs every such
    test), skipped without CUDA."""
    import pytest

    return pytest.mark.gpu(unittest.skipUnless(HAS_CUDA, "needs a CUDA GPU (GPU mode)")(test))


def on_device(device: str = DEVICE, **config: Any) -> Any:
    """Where tests compile: on a GPU as it is, on a CPU under the Triton-on-CPU harness
    (``config``: extra Inductor settings for it); yields the harness's arity oracle, or None."""
    import contextlib

    if device != "cpu":
        return contextlib.nullcontext()
    from inductor_fix.check.harness import triton_cpu_harness

    return triton_cpu_harness(**config)


def compile_and_run(function: Any, *args: Any, what: str = "", **options: Any) -> Any:
    """``torch.compile(function, mode=MODE, fullgraph=True, **options)(*args)``, its result; an
    error of the compile is raised as an AssertionError that describes it (its innermost
    error's type and first line, prefixed by ``what``). Call it where the test compiles
    (:func:`on_device`)."""
    from inductor_fix.check.workloads import MODE, describe_error

    try:
        return torch.compile(function, mode=MODE, fullgraph=True, **options)(*args)
    except Exception as error:
        raise AssertionError(f"{what}{': ' if what else ''}{describe_error(error)}") from None


class Node:
    """An IR node that is only a buffer name (``get_name``), for tests of naming and aliasing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Node({self.name!r})"

def lowering(target: Any) -> Any:
    """A context in which Inductor lowers an op of ``target`` (``torch.ops.aten.mm.default``): its
    graph handler's ``current_node`` is such a node, as ``GraphLowering.run_node`` sets it; for a
    patch's wrapper called outside a compile, where its activity names the op it acts in."""
    import types

    from torch._inductor.virtualized import V

    node = torch.fx.Graph().call_function(target, ())
    return V.set_graph_handler(types.SimpleNamespace(current_node=node))


class Decision(NamedTuple):
    """What the package decides for one patch on the running torch: its ``state`` (``applied``,
    ``not-needed``, ``unsupported``; ``disabled`` under ``INDUCTOR_FIX_DISABLE``), the one-line
    ``reason`` status gives, and the targets it ``wraps`` here (none unless applied)."""

    state: str
    reason: str
    wraps: tuple[str, ...]


@functools.cache
def decisions() -> dict[str, Decision]:
    """Each patch of the table -> its :class:`Decision` on this torch, observed (each patch applied
    alone, every module a patch targets loaded), never assumed from a version: a patch that is
    ``not-needed`` on one release may apply on the next, or share only part of its targets. The
    shared tests take the patches they exercise from here; read once per process, the fix left
    as it was."""
    import inductor_fix
    from inductor_fix.cli import settle_modules
    from inductor_fix.patches import PATCHES

    settle_modules()
    found = {}
    with inductor_fix.removed():
        for patch in PATCHES:
            with inductor_fix.applied(patch.name) as status:
                decided = status.patch(patch.name)
                found[patch.name] = Decision(str(decided.state), decided.reason,
                                             tuple(t for t in patch.targets if inductor_fix.is_patched(t)))
    return found


def applying() -> tuple[Any, ...]:
    """The patches of the table that apply on this torch (:func:`decisions`), in table order."""
    from inductor_fix.patches import PATCHES

    return tuple(patch for patch in PATCHES if decisions()[patch.name].state == "applied")


def not_applied_reason(patch: Any, target: str | None = None) -> str | None:
    """Why a test of ``patch`` (of its wrapper of ``target``, if given) cannot run on this torch,
    naming the release and what the package decided there; None where it can."""
    decided = decisions()[patch.name]
    if decided.state == "applied" and (target is None or target in decided.wraps):
        return None
    what = f"{patch.name} is {decided.state}" if decided.state != "applied" else f"{patch.name} wraps no {target}"
    return f"{what} on torch {torch.__version__} ({decided.reason}): nothing of it to test here"


def needs_applied(patch: Any, target: str | None = None) -> Any:
    """Skip a test of ``patch`` (of its wrapper of ``target``) where the package does not apply it
    on this torch, saying which release and why (:func:`not_applied_reason`)."""
    reason = not_applied_reason(patch, target)
    return unittest.skipIf(reason is not None, reason or "")


def is_affected(op: str) -> bool:
    """Whether stock compiles of ``inductor-fix check`` op ``op`` crash on this torch: the
    affected range of the patch that lists ``op`` (False if no patch does)."""
    return parts.is_affected(op, torch.__version__)


def safety_nets_acted() -> dict[str, int]:
    """What the safety-net patches (those with no ``check`` op that protect: they act only inside
    the others' workloads; a patch that only saves cost acts there too, as it should) counted in
    ``counters["inductor_fix"]`` since it was cleared, by kind: a suite of another patch asserts
    they never had to act."""
    from torch._dynamo.utils import counters

    from inductor_fix.patches import PATCHES

    kinds = [kind for patch in PATCHES if not parts.check_ops(patch) and patch.protects
             for kind in patch.activity.kinds]
    return {kind: counters["inductor_fix"][kind] for kind in kinds if counters["inductor_fix"][kind]}


def _first_case() -> tuple[str, str] | None:
    from inductor_fix.check.table import ops, orders_of

    return (ops()[0], orders_of(ops()[0])[0]) if ops() else None


#: The check table's first op and its first sequence (``(op, order)``): what the shared tests
#: compile when they need a case stock crashes on; None once every patch with ops is retired.
FIRST_CASE = _first_case()
OP, ORDER = FIRST_CASE or (None, None)
needs_a_check_op = unittest.skipIf(FIRST_CASE is None, "no patch of the table has a check op (all retired)")


def needs_part_of(patch_name: str, *ops: str) -> Any:
    """Declare that a test compiles ``ops``, ``check`` workloads of another patch's folder: the
    test is skipped, saying so, once that patch is retired (its workloads, and the bug they
    show, go with it), and fails if the patch is in the table without them (a renamed op must
    not turn the test off)."""
    from inductor_fix.patches import PATCHES, by_name

    if patch_name not in {patch.name for patch in PATCHES}:
        return unittest.skip(f"{patch_name} is retired: its workloads {', '.join(ops)} went with it")
    missing = [op for op in ops if op not in parts.check_ops(by_name(patch_name))]

    def declare(test: Any) -> Any:
        if not missing:
            return test

        @functools.wraps(test)
        def undeclared(self: Any, *args: Any, **kwargs: Any) -> None:
            self.fail(f"{patch_name} declares no check op {', '.join(missing)}: this test's dependency is stale")

        return undeclared

    return declare


def crashing_job(op: str, order: str) -> str:
    """A job script (for ``inductor-fix run -- python job.py``) that compiles ``check``'s sequence
    ``op``/``order`` under the CPU harness and dies of what the compile raises, to the top as in a
    job (``check``'s steps would catch it), the FX graph cache off so that every compile runs."""
    here = os.path.dirname(os.path.abspath(__file__))  # quick_autotuning
    return textwrap.dedent(f"""
        import sys
        from torch._inductor import config
        from torch._inductor.utils import fresh_cache
        import inductor_fix.check.harness as harness
        import inductor_fix.check.workloads as workloads
        from inductor_fix.check.table import run_sequence
        sys.path.insert(0, {here!r})
        from quick_autotuning import quick_cpu_autotuning


        def raising_step(aliased, compiled, args, device, check):
            compiled(*args)
            return workloads.Step(aliased, None, 0.0, 0)


        workloads.compile_step = raising_step
        with fresh_cache(), quick_cpu_autotuning(), harness.triton_cpu_harness(), config.patch(fx_graph_cache=False):
            run_sequence({op!r}, {order!r}, "cpu", compare=False)
        """)


def run_python(code: str, env: dict[str, str | None] | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter, this folder's helpers importable; ``env`` is added
    to (and may delete with None values from) this process's environment."""
    here = os.path.dirname(os.path.abspath(__file__))
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def bench(*args: str, timeout: float = 900) -> tuple[subprocess.CompletedProcess, dict]:
    """``tools/bench ARGS --out TMP``: the process (it must succeed) and the JSON it wrote."""
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory, "out.json")
        process = subprocess.run([sys.executable, str(root / "tools" / "bench"), *args, "--out", str(out)],
                                 capture_output=True, text=True, cwd=root, timeout=timeout)
        if process.returncode:
            raise AssertionError(f"tools/bench {' '.join(args)} failed:\n{process.stdout}{process.stderr[-3000:]}")
        return process, json.loads(out.read_text())


def stock_phases(*first: Any) -> list[Any]:
    """Hypothesis phases of a negative control: ``first`` (e.g. ``Phase.explicit``), then
    generated examples; shrinking too outside the derandomized ``ci`` profile (it costs one
    compile sequence per step)."""
    from hypothesis import Phase, settings

    return [*first, Phase.generate] + ([] if settings.default.derandomize else [Phase.shrink])


def counterexample_on_stock(test: unittest.TestCase, prop: Any, stock_fails: bool, pattern: str, what: str) -> None:
    """The negative control of a property suite: with the fix removed, Hypothesis test ``prop``
    must fail (an AssertionError matching ``pattern``) where ``stock_fails``, and pass where
    stock has no bug; prints the counterexample it found."""
    import inductor_fix

    with inductor_fix.removed():
        if not stock_fails:
            prop()  # a fixed release: no counterexample may exist
            return
        with test.assertRaisesRegex(AssertionError, pattern) as caught:
            prop()
    print(f"\n{what} on stock torch {torch.__version__}: {caught.exception}")


def report(name: str, **figures) -> None:
    """Print figures of a GPU test as one JSON line, and append it to
    ``$INDUCTOR_FIX_GPU_FIGURES`` if set (``tools/gpu_tier``'s table; ``stock``, ``patched``: each
    run's error or None, ``max_rel_error``: patched against eager; a ``family`` and ``setting``
    make it a row of the family sweep). The test that reported is named by pytest's own
    ``PYTEST_CURRENT_TEST``."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    line = json.dumps({"test": name, "nodeid": current, **figures}, default=str)
    print(line)
    path = os.environ.get("INDUCTOR_FIX_GPU_FIGURES")
    if path:
        with open(path, "a") as handle:
            handle.write(line + "\n")


def optimizer_step(device: str, *, compare: bool, batch: int = 4, n: int = 128, dtype: Any = None) -> list[Any]:
    """The pattern of the upstream report: a Shampoo/SOAP-style preconditioner.

    Compile 1 (aliased): ``L.lerp_(G @ G^T, 1 - beta)`` and ``R.lerp_(G^T @ G, 1 - beta)``
    as einsums of the batched gradient ``G`` (batch, n, n) with itself. Compile 2
    (distinct): the projection ``Q_L^T @ G @ Q_R`` as one einsum of ``G`` with two
    other matrices of the same shape. Their bmm templates see equal layouts, so
    stock Inductor replays compile 1's one-pointer kernel for compile 2 and crashes.
    ``compare=True`` checks both compiled results (state updates, projection) against eager.
    """
    import torch
    from inductor_fix.check.workloads import MODE, compile_step, max_rel_error
    from torch._inductor import config

    beta = 0.95

    def update(grad, left, right):
        left.lerp_(torch.einsum("bij,bkj->bik", grad, grad), 1 - beta)
        right.lerp_(torch.einsum("bji,bjk->bik", grad, grad), 1 - beta)

    def project(grad, q_left, q_right):
        return torch.einsum("bji,bjk,bkl->bil", q_left, grad, q_right)

    generator = torch.Generator(device="cpu").manual_seed(0)

    def tensor():
        return torch.randn(batch, n, n, generator=generator).to(device=device, dtype=dtype or torch.float32)

    grad, q_left, q_right = tensor(), tensor(), tensor()
    steps: list[Any] = []
    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False):
        for aliased, function, make_args in (
            (True, update, lambda: (grad, torch.zeros_like(grad), torch.zeros_like(grad))),
            (False, project, lambda: (grad, q_left, q_right)),
        ):
            args, eager_args = make_args(), make_args()

            def check(result, function=function, args=args, eager_args=eager_args):
                expected = function(*eager_args)
                # update() returns None and mutates its state arguments: compare those.
                pairs = [(result, expected)] if result is not None else list(zip(args[1:], eager_args[1:]))
                return max(max_rel_error(a, e) for a, e in pairs)

            compiled = torch.compile(function, mode=MODE, fullgraph=True)
            steps.append(compile_step(aliased, compiled, args, device, check if compare else None))
            if steps[-1].error:
                break
    return steps
