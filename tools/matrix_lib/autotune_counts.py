"""What a diff changes in Inductor's autotuning work, counted stock and with it, on this Python's torch.

    tools/check_patches --autotune-counts --patch patches/0005-*.patch --out DIR

For a diff that changes how much is autotuned (0005, not a fix: ``patches/README.md``), each
sequence of two max-autotune compiles in one process, ``mm`` or ``bmm`` on aliased inputs
(``x @ x``) and on distinct ones (``a @ b``) of equal layouts, in both orders, runs twice in a
child process of its own: on the installed torch and on a shadow of it with the diff applied
(:func:`matrix_lib.series.build_shadow`; the package's monkeypatch off). Each child counts, per
compile, Inductor's own counters (``select_algorithm_autotune``: selections benchmarked;
``select_algorithm_num_precompiles``: choices precompiled) and the choices benchmarked (calls of
``AlgorithmSelectorCache.benchmark_choice``). Without CUDA the compiles run under the
Triton-on-CPU harness with the autotune cache on (the harness turns it off by default), so
precompiles and benchmarks are counted, not timed. Writes ``DIR/autotune-counts.md`` and
``.json`` and prints the table. Exit status 0, or 2 when the diff does not apply.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from . import series

#: (operation, order): the sequences counted; each is two compiles in one process. An operation is
#: ``torch.<name>`` with its operands' shape.
SHAPES = {"torch.mm": (64, 64), "torch.bmm": (4, 64, 64)}
SEQUENCES = tuple((operation, order) for operation in SHAPES for order in ("aliased first", "distinct first"))


def child(operation: str, order: str) -> dict[str, list[int]]:
    """Run one sequence in this process; per compile: [selections benchmarked, choices precompiled,
    choices benchmarked]."""
    import contextlib
    from unittest import mock

    import torch
    from torch._dynamo.utils import counters
    from torch._inductor import config
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    benchmarked = 0
    original = AlgorithmSelectorCache.benchmark_choice.__func__

    def counting(cls, choice, autotune_args):
        nonlocal benchmarked
        benchmarked += 1
        return original(cls, choice, autotune_args)

    x, a, b = (torch.randn(SHAPES[operation]) for _ in range(3))
    calls = [(x, x), (a, b)] if order == "aliased first" else [(a, b), (x, x)]
    function = getattr(torch, operation.removeprefix("torch."))
    with contextlib.ExitStack() as stack:
        if not torch.cuda.is_available():
            from inductor_fix.check.harness import triton_cpu_harness

            stack.enter_context(triton_cpu_harness(autotune_local_cache=True))
        else:
            calls = [tuple(t.cuda().half() for t in call) for call in calls]
            stack.enter_context(config.patch({"max_autotune_gemm_backends": "ATEN,TRITON"}))
        stack.enter_context(config.patch({"fx_graph_cache": False}))
        stack.enter_context(mock.patch.object(AlgorithmSelectorCache, "benchmark_choice", classmethod(counting)))
        per_compile = []
        for call in calls:
            counters.clear()
            benchmarked = 0
            torch._dynamo.reset()
            torch.compile(function, mode="max-autotune-no-cudagraphs")(*call)
            per_compile.append([counters["inductor"]["select_algorithm_autotune"],
                                counters["inductor"]["select_algorithm_num_precompiles"], benchmarked])
    return {"compiles": per_compile}


def main(args: argparse.Namespace) -> int:
    """``tools/check_patches --autotune-counts``: the module docstring."""
    if len(args.patch or []) != 1 or args.out is None:
        print("check_patches --autotune-counts: one --patch and --out DIR", file=sys.stderr)
        return 2
    diff = args.patch[0]
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    torch_dir = series.installed_torch()
    try:
        shadow = series.build_shadow(torch_dir, series.torch_paths(diff), out / "shadow")
        series.apply_to_shadow(diff, shadow)
    except series.SeriesError as refusal:
        shutil.rmtree(out / "shadow", ignore_errors=True)
        print(f"check_patches --autotune-counts: {refusal}", file=sys.stderr)
        return 2
    info = series.machine()
    rows = []
    try:
        for operation, order in SEQUENCES:
            for variant, path in (("stock", None), ("with the diff", shadow)):
                with tempfile.TemporaryDirectory() as cache:
                    environment = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_")}
                    entries = ([str(path)] if path else []) + [str(series.TOOLS), str(series.PROJECT)]
                    environment.update({
                        "PYTHONPATH": os.pathsep.join(entries),
                        "INDUCTOR_FIX_DISABLE": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
                        "PYTHONDONTWRITEBYTECODE": "1", "TORCHINDUCTOR_CACHE_DIR": cache,
                        "TORCHINDUCTOR_COMPILE_THREADS": "1",
                    })
                    process = subprocess.run(
                        [sys.executable, "-c", "import json, sys; from matrix_lib import autotune_counts as c; "
                         f"print(json.dumps(c.child({operation!r}, {order!r})))"],
                        capture_output=True, text=True, env=environment)
                if process.returncode:
                    raise RuntimeError(f"{operation} {order} {variant}: {process.stderr.strip()[-2000:]}")
                first, second = json.loads(process.stdout.strip().splitlines()[-1])["compiles"]
                rows.append({"operation": operation, "order": order, "variant": variant, "first": first,
                             "second": second})
                print(f"  {operation} {order}, {variant}: first {first}, second {second}", flush=True)
    finally:
        shutil.rmtree(out / "shadow", ignore_errors=True)
    where = info["gpu"] or "no CUDA: the Triton-on-CPU harness, autotune cache on"
    lines = [f"# Autotuning work, stock and with {diff.name}", "",
             f"torch {info['torch']} (`{info['git_version']}`), triton {info['triton']}, Python {info['python']}; "
             f"{where}. Two max-autotune compiles per process, fresh caches; per compile: selections "
             "benchmarked / choices precompiled / choices benchmarked.", "",
             "| operation | order | variant | first compile | second compile |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['operation']} | {row['order']} | {row['variant']} | "
                     f"{' / '.join(map(str, row['first']))} | {' / '.join(map(str, row['second']))} |")
    text = "\n".join(lines) + "\n"
    (out / "autotune-counts.md").write_text(text)
    (out / "autotune-counts.json").write_text(json.dumps({"machine": info, "diff": diff.name, "rows": rows},
                                                         indent=1) + "\n")
    print(f"\n{text}", flush=True)
    return 0
