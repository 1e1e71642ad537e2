"""Check an upstream diff in patches/ against a real torch install.

For one torch release (or wheel), in a venv made by ``tools/torchenv.py``:

1. the diff's ``torch/`` files must ``git apply --check`` against the pristine
   installed files (verified against the wheel's RECORD hashes, backed up in
   the venv so every run starts from stock and ends on stock);
2. its patch's CPU property suites (the patch whose ``Patch.diff`` is this file;
   ``tools/matrix_lib/expectations.py``) run with ``INDUCTOR_FIX_DISABLE=1`` twice: on
   stock, where they must fail on a release the patch lists as affected, and with the
   diff applied in place, where they must pass;
3. the test files the diff adds (``test/inductor/...``, GPU tests skip on a
   CPU) run the same way: they must fail on stock and pass patched.

``--apply-only`` does step 1 alone, without a venv, against the files inside
the release's wheel (``--wheel``, or one pip downloads without dependencies),
and also reports fuzz (``patch --dry-run``) where git refuses.

``--no-install`` takes an existing venv as it is, even one whose torchenv
install did not finish (it never installs anything).

Exit status 0 only if every check passed. Run ``tools/check_patches --help``.
Layout of the diffs: patches/README.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import torchenv  # tools/ on sys.path (matrix_lib's rule; tools/check_patches puts it there)

from inductor_fix.check.child import run_logged  # one child-process runner
from inductor_fix.patches import PATCHES, Patch

from . import autotune_counts, expectations, series

PROJECT = torchenv.PROJECT
DEFAULT_VENV_ROOT = PROJECT / ".matrix" / "venvs"


def patch_of(diff: Path) -> Patch | None:
    """The patch of the table whose diff ``diff`` is one of (by file name), if any."""
    return next((patch for patch in PATCHES if diff.name in patch.diffs), None)


def default_suite(diff: Path) -> str | None:
    """Its patch's suites that run diff-applied in the matrix, as pytest arguments; None if
    its patch has no property suite (then only the diff's own tests run)."""
    patch = patch_of(diff)
    if patch is None:
        raise SystemExit(f"check_patches: {diff.name} is no patch's diff in the table: give --suite")
    suites = [s for s in expectations.SUITES.values() if s.patch is patch and "diff" in s.modes]
    return " ".join(shlex.join(s.arguments) for s in suites) or None


def is_affected(diff: Path, release: str | None) -> bool:
    """Whether stock ``release`` has the bug ``diff`` fixes (its patch's range; any
    patch's for a diff the table does not name)."""
    if release is None:
        return False
    patch = patch_of(diff)
    return patch.is_affected(release) if patch else any(p.is_affected(release) for p in PATCHES)


class Report:
    """Collects PASS/FAIL lines; the exit status is 1 if any FAIL was recorded."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def result(self, ok: bool, what: str, detail: str = "") -> bool:
        print(f"  [{'PASS' if ok else 'FAIL'}] {what}" + (f": {detail}" if detail else ""), flush=True)
        if not ok:
            self.failures.append(what)
        return ok

    def note(self, text: str) -> None:
        print(f"  {text}", flush=True)


# --- the patch ------------------------------------------------------------------


def torch_paths(patch: Path) -> list[str]:
    """The ``torch/`` files a git-format patch touches (``test/`` ones do not ship in wheels)."""
    paths = re.findall(r"^diff --git a/(\S+) b/\S+$", patch.read_text(), flags=re.M)
    return [p for p in paths if p.startswith("torch/")]


def torch_only(patch_text: str) -> str:
    """The patch with only its ``torch/`` file sections, for tools without ``--include``."""
    sections = re.split(r"(?m)^(?=diff --git )", patch_text)
    return "".join(s for s in sections[1:] if s.startswith("diff --git a/torch/"))


def shown(path: Path) -> str:
    """``path`` relative to the project if it is inside it."""
    with contextlib.suppress(ValueError):
        return str(path.relative_to(PROJECT))
    return str(path)


def variant_of(patch: Path, release: str | None) -> Path | None:
    """``patches/<release>/<name>``: the per-release variant of a patch, if shipped."""
    if release is None:
        return None
    candidate = patch.resolve().parent / release / patch.name
    return candidate if candidate.is_file() and candidate != patch.resolve() else None


def ceiling_env(root: Path) -> dict[str, str]:
    """Keep git from finding a repository above ``root`` (see :func:`git_apply`)."""
    return {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.resolve().parent)}


def git_apply(patch: Path, root: Path, *, check: bool) -> tuple[bool, str]:
    """``git apply [--check] -v --include='torch/*'`` in ``root``; (ok, output).

    GIT_CEILING_DIRECTORIES: a venv under a git checkout (as .matrix/ is) would
    otherwise make git apply paths relative to that checkout and silently skip
    every file outside the current folder - a "successful" no-op.
    """
    command = ["git", "apply", "-v", "--include=torch/*", *(["--check"] if check else []), str(patch.resolve())]
    process = subprocess.run(command, cwd=root, env=ceiling_env(root), capture_output=True, text=True)
    output = process.stdout + process.stderr
    checked = set(re.findall(r"^Checking patch (\S+)\.\.\.$", output, flags=re.M))
    missing = [p for p in torch_paths(patch) if p not in checked]
    if process.returncode == 0 and missing:
        return False, f"git apply skipped {', '.join(missing)}:\n{output}"
    return process.returncode == 0, output


def classify(patch: Path, root: Path) -> tuple[str, str]:
    """How the patch applies to the files under ``root``: clean, offset, fuzz or fails
    (git applies clean and offset hunks; fuzz is what ``patch`` would still take)."""
    ok, output = git_apply(patch, root, check=True)
    if ok:
        offsets = re.findall(r"^Hunk #\d+ succeeded at \d+ \(offset (-?\d+) lines?\)", output, flags=re.M)
        if offsets:
            return "offset", f"{len(offsets)} hunk(s) at offsets {', '.join(offsets)} lines"
        return "clean", ""
    dry_run = subprocess.run(
        ["patch", "-p1", "--dry-run", "--batch", "--forward"],
        cwd=root,
        input=torch_only(patch.read_text()),
        capture_output=True,
        text=True,
    )
    if dry_run.returncode == 0 and "with fuzz" in dry_run.stdout:
        return "fuzz", " ".join(line.strip() for line in dry_run.stdout.splitlines() if "fuzz" in line)
    failed = [line.strip() for line in output.splitlines() if line.startswith("error:")]
    return "fails", "; ".join(failed) or output.strip()


# --- pristine files -------------------------------------------------------------


def record_hashes(site_packages: Path) -> dict[str, str]:
    """``path -> sha256=...`` from the installed torch's dist-info RECORD."""
    records = sorted(site_packages.glob("torch-*.dist-info/RECORD"))
    if not records:
        return {}
    hashes = {}
    for line in records[0].read_text().splitlines():
        path, digest, *_ = line.split(",") + ["", ""]
        hashes[path] = digest
    return hashes


def sha256_record(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


class Pristine:
    """Stock copies of the patched files, kept in the venv (``<venv>/pristine/``).

    The first backup is taken only from a file whose hash matches the wheel's
    RECORD, so a run interrupted while patched never makes a patched "backup".
    """

    def __init__(self, env: torchenv.TorchEnv, paths: list[str]) -> None:
        self.site = env.site_packages
        self.store = env.path / "pristine"
        self.paths = paths
        self.hashes = record_hashes(self.site)

    def ensure_backups(self) -> None:
        for path in self.paths:
            backup = self.store / path
            if backup.is_file():
                continue
            installed = self.site / path
            if (self.hashes and path not in self.hashes) or not installed.exists():
                continue  # not in this release's wheel (kernel/flex/ is 2.9+): restore() removes it
            expected = self.hashes.get(path)
            if expected and sha256_record(installed.read_bytes()) != expected:
                raise SystemExit(
                    f"{installed} differs from the wheel's RECORD and no pristine backup exists: "
                    "recreate the venv (--delete-venv, then run again)"
                )
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(installed, backup)

    def restore(self) -> None:
        for path in self.paths:
            if (self.store / path).is_file():
                shutil.copy2(self.store / path, self.site / path)
            else:  # not in this release: no patch may leave a copy behind
                (self.site / path).unlink(missing_ok=True)


def wheel_for(release: str, wheel: Path | None, workdir: Path) -> Path:
    """The torch wheel to read pristine files from: ``--wheel``, else pip's download."""
    if wheel is not None:
        return wheel
    print(f"  downloading the torch {release} wheel (no dependencies)...", flush=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
         "-d", str(workdir), f"torch=={release}"],
        check=True,
    )
    return next(workdir.glob("torch-*.whl"))


def extract(wheel: Path, paths: list[str], root: Path, report: Report) -> None:
    """Unpack ``paths`` from ``wheel`` under ``root``, checking them against its RECORD."""
    with zipfile.ZipFile(wheel) as archive:
        record = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD") and n.startswith("torch-"))
        hashes = dict(line.split(",")[:2] for line in archive.read(record).decode().splitlines() if line)
        for path in paths:
            data = archive.read(path)
            report.result(sha256_record(data) == hashes.get(path), f"{path} matches the wheel's RECORD")
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)


# --- runs in the venv -----------------------------------------------------------

def open_env(args: argparse.Namespace) -> torchenv.TorchEnv:
    """The release's venv: made ready by torchenv.ensure, or with --no-install taken as it is."""
    if not args.no_install:
        return torchenv.ensure(args.venv_root, args.torch)
    env = torchenv.TorchEnv(args.venv_root, args.torch)
    if not env.python.exists():
        raise RuntimeError(f"--no-install: there is no venv at {env.path}")
    if not env.ready:
        print(f"  --no-install: {env.path} has no {torchenv.MARKER} (its install did not finish); using it as it is")
    return env


def versions(env: torchenv.TorchEnv) -> str:
    """torch, its git commit and triton in the venv, asked from the venv itself."""
    process = env.run(
        "-c", "import torch, triton; print(torch.__version__, torch.version.git_version, triton.__version__)",
        capture_output=True, text=True, env={"INDUCTOR_FIX_DISABLE": "1"},
    )
    if process.returncode:
        raise RuntimeError(f"torch does not import in {env.path}: {process.stderr.strip()[-500:]}")
    torch_version, git_version, triton_version = process.stdout.split()
    return f"torch {torch_version} ({git_version}), triton {triton_version}"


def added_tests(patch: Path, dest: Path) -> list[str]:
    """Write the test files the patch adds (new files under test/) into ``dest``; their paths."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    sections = re.split(r"(?m)^(?=diff --git )", patch.read_text())
    new_tests = "".join(s for s in sections[1:] if s.startswith("diff --git a/test/") and "\nnew file mode" in s)
    if not new_tests:
        return []
    subprocess.run(["git", "apply", "-"], cwd=dest, env=ceiling_env(dest), input=new_tests, text=True, check=True)
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("test_*.py"))


def run_pytest(env: torchenv.TorchEnv, targets: list[str], log: Path, cwd: Path = PROJECT) -> tuple[int, str]:
    """pytest ``targets`` in the venv from ``cwd``, the monkeypatch off; (exit status, summary line)."""
    command = [str(env.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets]
    environment = {**os.environ, "INDUCTOR_FIX_DISABLE": "1", "PYTHONPATH": str(PROJECT)}
    status, _ = run_logged(command, environment, log, cwd=cwd)
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    return status, (lines[-1] if lines else "(no output)")


# --- modes ----------------------------------------------------------------------


def apply_only(args: argparse.Namespace, report: Report) -> None:
    release = torchenv.spec_release(args.torch)
    with tempfile.TemporaryDirectory(prefix="check_patches-") as tmp:
        wheel = wheel_for(release, args.wheel, Path(tmp))
        print(f"torch {args.torch}: pristine files from {wheel}")
        for patch in args.patch:
            for candidate in filter(None, (patch, variant_of(patch, release))):
                root = Path(tmp) / "tree" / candidate.parent.name
                extract(wheel, torch_paths(candidate), root, report)
                verdict, detail = classify(candidate, root)
                # git apply (the documented way) takes clean and offset hunks, never fuzz.
                report.result(verdict in ("clean", "offset"), f"{shown(candidate)} applies: {verdict}", detail)


def full_check(args: argparse.Namespace, report: Report) -> None:
    if len(args.patch) != 1:
        raise SystemExit("check_patches: the full check takes exactly one --patch (use --apply-only for several)")
    patch = args.patch[0]
    release = torchenv.spec_release(args.torch)
    suite = args.suite or default_suite(patch)

    print(f"torch {args.torch}: venv under {args.venv_root} (created on first use; a CUDA torch takes ~5.5 GB)",
          flush=True)
    env = open_env(args)
    print(f"  venv {env.path}: {versions(env)}")
    variant = variant_of(patch, release)
    if variant is not None:
        report.note(f"note: a per-release variant exists, {shown(variant)}")

    pristine = Pristine(env, torch_paths(patch))
    pristine.ensure_backups()
    logs = env.path / "check_patches"
    logs.mkdir(exist_ok=True)
    try:
        pristine.restore()
        verdict, detail = classify(patch, env.site_packages)
        if not report.result(verdict in ("clean", "offset"), f"git apply --check on the installed files: {verdict}",
                             detail):
            return
        report.note(f"suite: {suite or 'none (the patch has no property suite): only the diff own tests run'}")

        tests_dir = env.path / "patch_tests" / patch.stem
        tests = added_tests(patch, tests_dir)

        print("stock (pristine files, INDUCTOR_FIX_DISABLE=1):", flush=True)
        if suite:
            status, summary = run_pytest(env, shlex.split(suite), logs / "stock.log")
            if is_affected(patch, release):
                report.result(status != 0, "suite fails on stock (the bug is there)",
                              f"{summary}  [{logs / 'stock.log'}]")
            else:
                report.note(f"torch {release} is not an affected release; stock suite: exit {status}, {summary}")
        if tests:
            status, summary = run_pytest(env, tests, logs / "stock-patch-tests.log", cwd=tests_dir)
            report.result(status != 0, "the patch's own tests fail on stock",
                          f"{summary}  [{logs / 'stock-patch-tests.log'}]")

        print("patched (the diff applied in place, INDUCTOR_FIX_DISABLE=1):", flush=True)
        ok, output = git_apply(patch, env.site_packages, check=False)
        if not report.result(ok, "git apply in site-packages", "" if ok else output):
            return
        if suite:
            status, summary = run_pytest(env, shlex.split(suite), logs / "patched.log")
            report.result(status == 0, "suite passes with the patch", f"{summary}  [{logs / 'patched.log'}]")
        if tests:
            status, summary = run_pytest(env, tests, logs / "patched-patch-tests.log", cwd=tests_dir)
            report.result(status == 0, "the patch's own tests pass with it",
                          f"{summary}  [{logs / 'patched-patch-tests.log'}]")
    finally:
        pristine.restore()
        report.note(f"restored the pristine files in {env.site_packages}")
        if args.delete_venv:
            torchenv.remove(env)
            report.note(f"deleted {env.path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="check_patches",
        description=__doc__.split("\n\n")[0],
        epilog=(
            "examples:\n"
            "  tools/check_patches 2.14.1 --patch patches/0001-*.patch\n"
            "  tools/check_patches 2.15.0 --patch patches/0002-*.patch\n"
            "  tools/check_patches 2.11.0 --apply-only --patch patches/0001-*.patch\n"
            "  python tools/check_patches --series --out DIR [--cutlass nvidia_cutlass-*.whl]"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("torch", nargs="?",
                        help="torch release (2.14.1) or wheel path/URL, as tools/torchenv.py takes (not with --series)")
    parser.add_argument("--patch", type=Path, action="append",
                        help="patch file (git format-patch); repeat with --apply-only")
    parser.add_argument("--apply-only", action="store_true",
                        help="only check that the patch applies to the release's wheel files (no venv)")
    parser.add_argument("--wheel", type=Path,
                        help="with --apply-only: the torch wheel to read (default: downloaded from the package index)")
    parser.add_argument("--suite", help="pytest arguments, run from the project root (default: the property "
                        "suites of the diff's patch)")
    parser.add_argument("--venv-root", type=Path, default=DEFAULT_VENV_ROOT,
                        help="where the venvs live (default: %(default)s)")
    parser.add_argument("--delete-venv", action="store_true", help="delete the venv when done")
    parser.add_argument("--no-install", action="store_true",
                        help="use the venv as it is, even if its install did not finish; never install")
    series.add_arguments(parser)
    parser.add_argument("--autotune-counts", action="store_true",
                        help="with one --patch and --out: count the autotuning work of mm/bmm sequences stock and "
                        "with the diff, on this Python's torch (matrix_lib/autotune_counts.py)")
    args = parser.parse_args(argv)
    if args.autotune_counts:
        if args.series or args.torch or args.apply_only:
            parser.error("--autotune-counts takes this Python's torch, one --patch and --out")
        args.patch = [p.resolve() for p in args.patch or []]
        return autotune_counts.main(args)
    if args.series:
        if args.torch or args.patch or args.apply_only:
            parser.error("--series takes this Python's torch and the series diffs: no release, --patch or --apply-only")
        return series.main(args)
    if stray := series.series_arguments_given(args):
        parser.error(f"{', '.join(stray)}: only with --series")
    if not args.torch or not args.patch:
        parser.error("a torch release and --patch are required (or --series)")
    args.patch = [p.resolve() for p in args.patch]
    for patch in args.patch:
        if not patch.is_file():
            parser.error(f"no such patch: {patch}")

    report = Report()
    try:
        (apply_only if args.apply_only else full_check)(args, report)
    except (RuntimeError, subprocess.CalledProcessError) as error:
        report.result(False, "check_patches", str(error))
    print(f"{'FAILED' if report.failures else 'OK'}: torch {args.torch}, "
          f"{len(report.failures)} failed check(s)" + (f": {'; '.join(report.failures)}" if report.failures else ""))
    return 1 if report.failures else 0

