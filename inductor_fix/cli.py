"""Command line: ``python -m inductor_fix {status,check}`` (also installed as ``inductor-fix``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

__all__ = ["main"]


def _status(args: argparse.Namespace) -> int:
    import inductor_fix

    if not args.no_load:
        try:
            import torch._inductor.select_algorithm  # noqa: F401  (resolves "pending")
        except ImportError:
            pass  # no torch: status says so
        except Exception as error:  # a broken torch install
            print(f"inductor_fix status: importing torch failed: {type(error).__name__}: {error}", file=sys.stderr)
    status = inductor_fix.status()
    print(json.dumps(status.to_dict(), indent=2) if args.json else status.format())
    return 0


def _check(args: argparse.Namespace) -> int:
    from .check.runner import run_check

    return run_check(ops=args.ops, device=args.device, jobs=args.jobs, timeout=args.timeout, json_path=args.json)


def _ops(text: str) -> list[str]:
    from .testing.workloads import OPS

    ops = list(dict.fromkeys(op.strip() for op in text.split(",") if op.strip()))
    unknown = [op for op in ops if op not in OPS]
    if not ops or unknown:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(OPS)}; got {text!r}")
    return ops


def _positive(kind: type) -> Callable[[str], float]:
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inductor_fix",
        description="Fix for Inductor's max-autotune template-argument crashes "
        "(pytorch/pytorch#188069, codegen-cache aliasing; #194515, FlexAttention captured buffers).",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"inductor_fix {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    status = commands.add_parser("status", help="what is patched on this torch, and why")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.add_argument(
        "--no-load", action="store_true", help="do not import torch._inductor (state may stay 'pending')"
    )
    status.set_defaults(run=_status)

    check = commands.add_parser("check", help="reproduce the crash stock vs patched on this torch")
    from .check.runner import DEFAULT_OPS
    from .testing.workloads import OPS

    check.add_argument(
        "--ops", type=_ops, default=",".join(DEFAULT_OPS),
        help=f"comma-separated, from {', '.join(OPS)} (bmm_t: bmm of x and x transposed; flex, flex_decoding: "
        "FlexAttention with a gathered bias, pytorch/pytorch#194515) (default: %(default)s)",
    )
    check.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    check.add_argument(
        "--jobs", type=_positive(int), default=None, help="cases run at once (default: CPUs, or CPUs/2 up to 8 on CUDA)"
    )
    check.add_argument("--timeout", type=_positive(float), default=1800.0, help="seconds per case")
    check.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    check.set_defaults(run=_check)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
