"""Command line: ``inductor-fix {status,check,run,report}`` (also ``python -m inductor_fix ...``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

__all__ = ["main"]


def settle_modules() -> None:
    """Import every module a patch targets that this torch has (each decides its patches when it
    loads); a release lacks the modules of the others."""
    import importlib

    from ._lifecycle import LIFECYCLE

    for module in LIFECYCLE.modules:
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def _status(args: argparse.Namespace) -> int:
    from ._entry_points import advice, start_entry_points

    found_entry_points = start_entry_points()  # a process of its own: it runs while this one works
    inductor_fix = _applied()
    broken_torch = None if args.no_load else _load_inductor()
    status = inductor_fix.status()
    if broken_torch:  # every patch waits for an Inductor that cannot load: say why, not "waiting"
        import dataclasses

        status = dataclasses.replace(status, reason=broken_torch, detail=broken_torch)
        print(f"inductor_fix status: {broken_torch}", file=sys.stderr)
    found = found_entry_points()
    broken = [entry for entry in found or () if entry.error]
    off = _autoload_off()
    off_here = off if "run" not in status.activated_by else None  # run brings it to every process itself
    autoload = ("could not be checked" if found is None else "not installed here (the package is not installed: "
                "import it, or use inductor-fix run)" if not found else
                f"BROKEN - {advice(broken[0])}" if broken else
                f"off ({off}): only a process that imports inductor_fix, or runs under inductor-fix run, gets the "
                "fix; the state above is this command's own" if off else
                "installed, waiting for torch: torch is not installed here (once it is, torch loads the entry point "
                "at import torch)" if status.torch_version is None else
                "installed, but torch cannot be imported here (above)" if broken_torch else
                "ok (torch loads the entry point at import torch)")
    if args.json:
        import json

        print(json.dumps({**status.to_dict(), "autoload": {"ok": None if found is None else not broken,
                                                           "off": off, "text": autoload}}, indent=2))
    else:
        import dataclasses
        import textwrap

        elsewhere = "broken" if broken else "off" if off_here else None
        if broken and "autoload" in status.activated_by:
            # Torch found the entry point's module here where the environment's other processes do
            # not (a moved editable checkout that is the working directory): say so beside "BROKEN".
            status = dataclasses.replace(status, activated_by=tuple(
                "autoload (in this process only: it found the entry point's module where other processes do not; "
                "autoload BROKEN, above)" if route == "autoload" else route for route in status.activated_by))
        if status.protected and elsewhere:
            # This command imported the package itself; the environment's other processes do not get it.
            status = dataclasses.replace(status, reason=f"in this command only, not in other processes (autoload "
                                                        f"{elsewhere}, below): {status.detail}")
        # This command's own state first, then whether the environment's other processes get it.
        print(status.format(after_headline=textwrap.wrap(f"autoload: {autoload}", 100, initial_indent="  ",
                                                         subsequent_indent="    ", break_on_hyphens=False)))
    if status.state == "unsupported" and not args.json:
        from ._installed import please_report

        print(please_report("the output of inductor-fix status --json"))
    if broken:
        print(f"inductor_fix status: {advice(broken[0])}", file=sys.stderr)
        return 1
    if broken_torch:
        return 1
    if args.require == "protected" and not status.protected:
        hint = " (drop --no-load to resolve it)" if args.no_load and status.state == "pending" else ""
        print(f"inductor_fix status: not protected ({status.state}): {status.detail}{hint}", file=sys.stderr)
        return 1
    if args.require == "protected" and off_here:
        print(f"inductor_fix status: not protected: autoload is off ({off}), so a process that neither imports "
              "inductor_fix nor runs under inductor-fix run runs stock torch (this command imported it itself)",
              file=sys.stderr)
        return 1
    return 0


def _load_inductor() -> str | None:
    """Import Inductor's ``select_algorithm`` and every module a patch targets (which settles each
    patch's state). Where torch (or its Inductor) is installed but cannot be imported, why, in one
    line: ``torch cannot be imported: <error> (<where that torch is>) ...``. None where it loaded, or
    where torch is not installed at all (``status`` says that itself)."""
    import warnings

    try:
        with warnings.catch_warnings():
            # torch's own, at import torch where numpy is not installed: nothing status reads needs
            # numpy, and a user's first command should not greet them with a warning to puzzle over.
            warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)
            import torch._inductor.select_algorithm  # noqa: F401  (resolves "pending")

        settle_modules()
    except ModuleNotFoundError as error:
        if error.name == "torch":
            return None  # not installed
        return _cannot_import(error)
    except Exception as error:  # a broken torch install (ImportError: a missing library), or a broken torch/
        return _cannot_import(error)
    return None


def _cannot_import(error: Exception) -> str:
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")  # which torch: one on PYTHONPATH may stand in for the installed one
    except (ImportError, ValueError):
        spec = None
    where = f" ({spec.origin})" if spec is not None and spec.origin else ""
    what, code = (("torch's Inductor", "import torch._inductor.select_algorithm") if "torch" in sys.modules else
                  ("torch", "import torch"))
    message = (str(error).strip().splitlines() or [""])[0]
    # No "; " in it: the headline breaks its lines between "; "-joined items.
    return (f"{what} cannot be imported: {type(error).__name__}: {message}{where}, so nothing can be patched "
            f"(python -c '{code}' shows why)")


def _autoload_off() -> str | None:
    """The variable that turns autoload off in this environment, as ``NAME=value``; None if on."""
    import os

    import _inductor_fix_startup as startup

    if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "1":  # torch's own test of it
        return f"TORCH_DEVICE_BACKEND_AUTOLOAD={os.environ['TORCH_DEVICE_BACKEND_AUTOLOAD']}"
    if startup.on_or_off(os.environ.get(startup.VARIABLE)) is False:
        return f"{startup.VARIABLE}={os.environ[startup.VARIABLE]}"
    return None


def _run(args: argparse.Namespace) -> int:
    from .run import LaunchError, run

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    try:
        return run(command, report=args.report)
    except LaunchError as error:
        print(f"inductor-fix run: {error}", file=sys.stderr)
        return error.status


def _report(args: argparse.Namespace) -> int:
    import json

    from .report import ReportError, format_summary, read, summarize

    try:
        entries, skipped = read(args.file)
    except ReportError as error:
        print(json.dumps({"needed": None, "error": str(error)}, indent=2) if args.json else "needed: unknown")
        print(f"inductor-fix report: {error}", file=sys.stderr)
        return 2
    notes = ["no line: no process of the job loaded Inductor"] if not entries and not skipped else []
    summary = summarize(entries, skipped, notes)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 1 if summary["needed"] is None else 0


def _check(args: argparse.Namespace) -> int:
    _applied()
    from .check.runner import run_check

    return run_check(ops=args.ops, device=args.device, jobs=args.jobs, timeout=args.timeout, json_path=args.json)


def _ops(text: str) -> list[str]:
    from .check.table import broken_parts
    from .check.table import ops as known

    ops = list(dict.fromkeys(op.strip() for op in text.split(",") if op.strip()))
    unknown = [op for op in ops if op not in known()]
    if unknown:
        unread = "".join(f"; {name}'s check part cannot be read ({reason})" for name, reason in broken_parts().items())
        raise argparse.ArgumentTypeError(f"unknown op {', '.join(map(repr, unknown))}; the ops: "
                                         f"{', '.join(known())}{unread}")
    if not ops:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(known())}; got {text!r}")
    return ops


def _positive(kind: type) -> Callable[[str], float]:
    what = "a positive integer" if kind is int else "a positive finite number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not value > 0 or value == float("inf"):  # also rejects nan
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value

    return parse


def _program() -> str:
    """``inductor-fix`` when run as the console script, else ``python -m inductor_fix``."""
    import os

    return "inductor-fix" if os.path.basename(sys.argv[0]).startswith("inductor-fix") else "python -m inductor_fix"


class _ReaderMayLeave:
    """stdout that discards what is written once its reader has gone (``status | head -1``):
    the command still finishes, and its exit status is still the one it reports."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._discard()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._discard()

    def _discard(self) -> None:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class _Subcommand(argparse.ArgumentParser):
    """A subcommand's parser: an argument it does not know (``status --jsn``) is its usage
    error, with its own usage line, not the top-level parser's."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def _applied() -> Any:
    """The package, its public API imported and so the fix applied in this process, which is the
    command's own (``activated by: cli`` where the ``inductor-fix`` program started it): the
    program leaves that to the commands that need it. Loud: what the import raises is raised."""
    import _inductor_fix_startup

    import inductor_fix

    _inductor_fix_startup.STARTUP.activate(explicit=True)
    return inductor_fix


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = _ReaderMayLeave(stdout)
    try:
        status = _main(argv)
        sys.stdout.flush()
        return status
    finally:
        sys.stdout = stdout


class _Parser(argparse.ArgumentParser):
    """The top-level parser: its description (the patch table) is built only when help is
    printed, so that a command never pays for what only ``--help`` shows."""

    def __init__(self, *args: Any, describe: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._describe = describe

    def format_help(self) -> str:
        self.description = self._describe()
        return super().format_help()


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        from ._version import __version__
        from ._installed import DISTRIBUTION, distribution_version

        installed = distribution_version(DISTRIBUTION)
        version = installed if installed == __version__ else \
            f"{__version__} (running from {__file__.rsplit('/', 2)[0]})"
        print(f"{DISTRIBUTION} {version}")  # stdout, as argparse's own version action: v=$(inductor-fix --version)
        parser.exit()


def _describe() -> str:
    from .patches import PATCHES

    return ("Fix for Inductor's max-autotune template-argument crashes:\n"
            + "\n".join(f"  {patch.name}: {patch.upstream}" for patch in PATCHES))


def _add_status(status: argparse.ArgumentParser, program: str) -> None:
    status.description = (
        "What is patched on this torch, and why, and whether torch's autoload brings the fix to "
        "every process of this environment. Exit 0; exit 1 if torch cannot be imported (without --no-load), if "
        "torch cannot load the package's entry point (every import torch fails) or its editable install's stand-in "
        "cannot run it; with --require protected, also exit 1 "
        "unless the fix is applied or not needed and autoload is on (or this runs under inductor-fix run) (reason "
        "on stderr).")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.add_argument(
        "--no-load", action="store_true", help="do not import torch._inductor (state may stay 'pending')"
    )
    status.add_argument("--require", choices=("protected",),
                        help="exit 1 unless this torch is protected (state applied or not-needed)")
    status.set_defaults(run=_status)


def _add_run(run: argparse.ArgumentParser, program: str) -> None:
    run.description = (
        "Run CMD with the fix active in every Python process it starts (the command, torchrun "
        "ranks, multiprocessing children, Inductor's compile and autotune workers), through a "
        "sitecustomize put first on PYTHONPATH; an existing sitecustomize still runs. Installed files are "
        "not edited. INDUCTOR_FIX_DISABLE still applies in every process. Exit status: CMD's; 127 if CMD "
        "is not found, 126 if it cannot be executed, 2 if there is no CMD or --report FILE cannot be appended to "
        "(FILE is created empty; a job in which no process loaded Inductor leaves it empty).")
    run.usage = f"{program} run [--report FILE] -- CMD [ARGS ...]"
    run.add_argument("--report", metavar="FILE",
                     help="every Python process of CMD that loads Inductor appends one JSON line to FILE when it "
                     "exits (what the fix did there); read it with: report FILE")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD", help="the command and its arguments")
    run.set_defaults(run=_run)


def _add_report(report: argparse.ArgumentParser, program: str) -> None:
    from .report import EXIT_STATUS

    report.description = (
        "Fold a job report (run --report FILE, or INDUCTOR_FIX_REPORT=FILE) into one screen: first "
        "line 'needed: yes', 'needed: no' or 'needed: unknown', then what each patch did in which process, "
        "and advice. Exit status: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_STATUS.items()) + ".")
    report.add_argument("file", metavar="FILE", help="the report file (JSON lines)")
    report.add_argument("--json", action="store_true", help='print the summary as JSON (top-level "needed": '
                        "true, false or null)")
    report.set_defaults(run=_report)


def _add_check(check: argparse.ArgumentParser, program: str) -> None:
    # Only check reads the patches' check parts, and only when it is the command.
    from .check.runner import EXIT_STATUS
    from .check.table import broken_parts, default_ops, workloads

    check.description = (
        "Reproduce the crashes on this torch, stock (INDUCTOR_FIX_DISABLE=1) and patched, each "
        "case in a fresh process and Inductor cache. Exit status: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_STATUS.items()) + ".")
    described = "; ".join(f"{op}: {workload.help}" for op, workload in workloads().items() if workload.help)
    unread = "".join(f" ({name}'s check part cannot be read: its ops are missing)" for name in broken_parts())
    check.add_argument(
        "--ops", type=_ops, default=None,
        help=f"comma-separated, from {', '.join(workloads())} ({described}){unread} (default: "
        f"{','.join(default_ops())})",
    )
    check.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="cuda: run the kernels on the GPU and compare outputs with eager; cpu: the Triton-on-CPU "
                       "harness (Inductor's real codegen, each kernel launch replaced by an arity check); auto: cuda "
                       "if torch sees a CUDA device (default: %(default)s)")
    check.add_argument(
        "--jobs", type=_positive(int), default=None, help="cases run at once (default: CPUs, or CPUs/2 up to 8 on CUDA)"
    )
    check.add_argument("--timeout", type=_positive(float), default=1800.0,
                       help="seconds a case may take before it is stopped (default: %(default)g)")
    check.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    check.set_defaults(run=_check)


#: Each command: its one-line help, and how its parser is built (only for the command being run:
#: ``run`` and ``status`` never import what ``check`` reads).
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser, str], None]]] = {
    "status": ("what is patched on this torch, and why", _add_status),
    "check": ("reproduce the crash stock vs patched on this torch", _add_check),
    "run": ("run a command with the fix active in every Python process it starts", _add_run),
    "report": ("what the fix did across a job's processes, and whether it is still needed", _add_report),
}


def _main(argv: list[str] | None) -> int:
    program = _program()
    words = sys.argv[1:] if argv is None else argv
    command = next((i for i, word in enumerate(words) if not word.startswith("-")), len(words))
    chosen = words[command] if command < len(words) else None

    def epilog() -> str:
        from ._installed import project_url

        issues = project_url("Issues")
        return (f"examples:\n  {program} status --require protected   # exit 1 unless this torch is protected\n"
                f"  {program} check\n  {program} run --report job.jsonl -- torchrun --nproc-per-node 8 train.py\n"
                f"  {program} report job.jsonl" + (f"\n\nreport bugs: {issues}" if issues else ""))

    parser = _Parser(prog=program, describe=_describe, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="{status,check,run,report}",
                                     parser_class=_Subcommand)
    subparsers = {}
    for name, (summary, build) in COMMANDS.items():
        subparsers[name] = commands.add_parser(name, help=summary)
        if name == chosen:
            build(subparsers[name], program)
    unknown = [word for word in words[:command] if word not in ("-h", "--help", "--version")]
    if unknown:  # before the subcommand: name them, not the missing subcommand
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if chosen is None or any(word in ("-h", "--help") for word in words[:command]):
        parser.epilog = epilog()
    args = parser.parse_args(argv)
    if args.run is _run and not [word for word in args.cmd if word != "--"]:
        subparsers["run"].error("no command given")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
