"""Isolated virtual environments holding one torch build each, for the tools in this folder.

A torch spec is a release (``2.14.1``), a wheel file, or a wheel URL (nightly
builds); with ``index_url``, also a pre-release on that index (``2.16.0.dev20260301``);
or ``RELEASE=DEV``, a *relabelled* build: release ``RELEASE`` installed, then its
``torch/version.py`` and metadata saying ``DEV`` (``2.15.0=2.16.0.dev20261201``), where no
nightly can be downloaded: what a nightly cut right after that release looks like to the
package and the tests (a pre-release version, no recorded fingerprints, ranges read as
``DEV``'s release), with that release's internals (:func:`relabel`).
Each spec gets one venv under a root folder, reused while its marker
file says the install finished. Installs torch, its triton (the wheel's own
requirement, else :data:`TRITON_FOR` by release - CPU wheels carry none), the
test extra's dependencies, this project's build requirements (the suite builds its wheel offline),
and this project (editable, without dependencies).

Used by ``tools/check_patches`` and ``tools/run_matrix``; not imported by the package.
:func:`borrowing_venv` makes the other kind, a venv that borrows the packages already here
(``tools/retire``, and the tests that install the project as a user would);
:func:`unmet_build_requirements` says whether such a venv can build this checkout's wheel
without pip's build isolation (offline).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

__all__ = ["TorchEnv", "TRITON_FOR", "borrowing_venv", "build_requirements", "ensure", "relabel", "remove",
           "site_packages", "spec_release", "split_relabel", "unmet_build_requirements"]

PROJECT = Path(__file__).resolve().parents[1]
#: pyproject.toml's test extra but torch (installed on its own, pinned), and packaging (the package's own
#: requirement): the full suite (README's test command) runs in these venvs too. test/test_tools.py keeps
#: them equal.
TEST_DEPENDENCIES = ("pytest>=7", "hypothesis>=6.100", "expecttest>=0.2", "wrapt>=1.14", "packaging", "numpy",
                     "ruff>=0.6", "mypy>=1.10", "tlparse", "pytest-xdist>=3.5")
#: triton release each torch release was built against (its CUDA wheel's Requires-Dist).
TRITON_FOR = {
    "2.7": "3.3.1",
    "2.8": "3.4.0",
    "2.9": "3.5.1",
    "2.10": "3.6.0",
    "2.11": "3.6.0",
    "2.12": "3.7.0",
    "2.13": "3.7.1",
    "2.14": "3.8.0",
    "2.15": "3.9.0",
}
MARKER = "torchenv.json"


def split_relabel(spec: str) -> tuple[str, str | None]:
    """``"2.15.0=2.16.0.dev20261201"`` -> ``("2.15.0", "2.16.0.dev20261201")``; any other spec ->
    ``(spec, None)``. ValueError where the part after ``=`` is no pre-release version or the part
    before it no release."""
    installed, equals, label = spec.partition("=")
    if not equals or "/" in installed:
        return spec, None
    from packaging.version import InvalidVersion, Version

    try:
        valid = re.fullmatch(r"\d+\.\d+\.\d+", installed) and Version(label).is_prerelease
    except InvalidVersion:
        valid = False
    if not valid:
        raise ValueError(f"{spec!r}: a relabelled build is RELEASE=DEV (2.15.0=2.16.0.dev20261201)")
    return installed, label


def spec_release(spec: str) -> str | None:
    """``"2.14.1"`` / ``".../torch-2.15.0.dev20260101+cpu-cp311-...whl"`` -> ``"2.14.1"`` / ``"2.15.0"``;
    a relabelled build (``2.15.0=2.16.0.dev...``): the release installed."""
    spec = split_relabel(spec)[0]
    match = re.search(r"(?:^|torch-)(\d+\.\d+\.\d+)", Path(spec).name if "/" in spec else spec)
    return match.group(1) if match else None


def _slug(spec: str) -> str:
    installed, label = split_relabel(spec)
    if label:
        return f"{label}-from-{installed}"
    release = spec_release(spec) or "torch"
    if re.fullmatch(r"\d+\.\d+\.\d+", spec):
        return spec
    return f"{release}-{hashlib.sha256(spec.encode()).hexdigest()[:8]}"


class TorchEnv:
    """One venv: ``python`` runs in it, ``site_packages`` is where torch lives."""

    def __init__(self, root: Path, spec: str) -> None:
        self.spec = spec
        self.path = root / _slug(spec)
        self.python = self.path / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        return next((self.path / "lib").glob("python3*/site-packages"))

    @property
    def ready(self) -> bool:
        return (self.path / MARKER).is_file()

    def info(self) -> dict:
        return json.loads((self.path / MARKER).read_text())

    def run(self, *args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), *args], env={**os.environ, **(env or {})}, **kwargs)


def _pip(env: TorchEnv, *args: str, log) -> None:
    # pip's own configuration applies (a constraint file that pins torch must be cleared
    # by the caller, e.g. PIP_CONSTRAINT=/dev/null, to install another release), its wheel
    # cache included: releases that share CUDA libraries download them once (PIP_NO_CACHE_DIR
    # undoes that). --no-compile: byte-compiling every module of torch, sympy and the rest
    # costs each venv time for files the suites never import; Python compiles what it imports.
    command = [str(env.python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-compile", *args]
    process = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    if process.returncode:
        raise RuntimeError(f"pip install {' '.join(args)} failed in {env.path} (see its install.log)")


def ensure(root: Path, spec: str, index_url: str | None = None) -> TorchEnv:
    """The venv for ``spec`` under ``root``, created and installed if not ready yet.

    ``index_url``: an extra package index for torch and its requirements, with
    pre-releases allowed (a nightly CUDA wheel requires ``pytorch-triton``, which
    only the nightly index has).
    """
    env = TorchEnv(root, spec)
    if env.ready:
        return env
    if env.path.exists():
        shutil.rmtree(env.path)  # an interrupted install
    env.path.parent.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True).create(env.path)
    installed, label = split_relabel(spec)
    with open(env.path / "install.log", "w") as log:
        requirement = f"torch=={installed}" if re.fullmatch(r"\d+\.\d+\.\d+[\w.+]*", installed) else installed
        index = ["--pre", "--extra-index-url", index_url] if index_url else []
        # The build requirements too: the suite builds this checkout's wheel without build isolation
        # (test_autoload, tools/bench startup), which a venv's own setuptools (Python 3.11's venv
        # brings 65.5) cannot do where torch does not require a newer one (2.9).
        _pip(env, *index, requirement, *TEST_DEPENDENCIES, *build_requirements(), log=log)
        has_triton = env.run("-c", "import triton", capture_output=True).returncode == 0
        if not has_triton:
            release = spec_release(spec) or ""
            triton = TRITON_FOR.get(".".join(release.split(".")[:2]))
            if triton:
                _pip(env, f"triton=={triton}", log=log)
        _pip(env, "--no-deps", "-e", str(PROJECT), log=log)
    if label:
        relabel(env.site_packages, label)
    versions = env.run(
        "-c",
        "import json, torch, triton; print(json.dumps({'torch': torch.__version__, "
        "'git_version': torch.version.git_version, 'triton': triton.__version__}))",
        capture_output=True,
        text=True,
        env={"INDUCTOR_FIX_DISABLE": "1"},
    )
    if versions.returncode:
        raise RuntimeError(f"torch does not import in {env.path}: {versions.stderr.strip()[-500:]}")
    info = dict(json.loads(versions.stdout), spec=spec, python=sys.version.split()[0], index_url=index_url)
    (env.path / MARKER).write_text(json.dumps(info, indent=2))
    return env


def relabel(site: Path, label: str) -> str:
    """Make the torch installed in ``site`` say it is ``label`` (``2.16.0.dev20261201``; its local
    build tag, ``+cu132``, kept): ``torch/version.py``'s ``__version__`` and the distribution's
    ``Version``. Nothing else changes (``git_version`` still names the installed release's commit).
    Returns the new ``torch.__version__``; RuntimeError where either is not where torch keeps it."""
    version_py = site / "torch" / "version.py"
    metadata = [p / "METADATA" for p in site.glob("torch-*.dist-info")]
    text = version_py.read_text() if version_py.is_file() else ""
    match = re.search(r"^__version__ = '([^'+]+)(\+[^']*)?'$", text, flags=re.M)
    if match is None or len(metadata) != 1:
        raise RuntimeError(f"cannot relabel the torch in {site}: no __version__ line or no single dist-info")
    new = label + (match.group(2) or "")
    version_py.write_text(text[:match.start()] + f"__version__ = '{new}'" + text[match.end():])
    lines = metadata[0].read_text().splitlines(keepends=True)
    metadata[0].write_text("".join(f"Version: {label}\n" if line.startswith("Version: ") else line for line in lines))
    return new


def remove(env: TorchEnv) -> None:
    """Delete a venv (a CUDA build of torch takes about 5 GB)."""
    shutil.rmtree(env.path, ignore_errors=True)


def site_packages(python: str | Path) -> Path:
    """The ``purelib`` folder of the interpreter ``python``."""
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


def build_requirements(project: Path = PROJECT) -> list[str]:
    """``project``'s ``pyproject.toml`` ``[build-system] requires``, as written
    (``["setuptools>=77", "setuptools-scm>=8"]``); PEP 518's default, setuptools, for a checkout
    without one (an old one that ``tools/bench startup --against`` names)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: tomli, which pytest and mypy require there
        import tomli as tomllib
    pyproject = project / "pyproject.toml"
    table = tomllib.loads(pyproject.read_text()).get("build-system", {}) if pyproject.is_file() else {}
    return list(table.get("requires", ["setuptools>=40.8.0"]))


#: Run by the interpreter asked about: the installed version of each distribution named, or None.
_VERSIONS = """
import json, sys
from importlib import metadata
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
print(json.dumps({name: version(name) for name in sys.argv[1:]}))
"""


def unmet_build_requirements(python: str | Path, project: Path = PROJECT,
                             env: dict[str, str] | None = None) -> list[str]:
    """The requirements of :func:`build_requirements` (``project``'s) that the interpreter
    ``python``, run with environment ``env`` (default: this one's), does not meet, each with what it
    has: ``["setuptools>=77 (65.5.0 installed)", "setuptools-scm>=8 (not installed)"]``; empty
    where ``pip wheel --no-build-isolation`` can build there (no download). Markers are evaluated
    in this interpreter (the venvs asked about are made from it)."""
    from packaging.requirements import Requirement

    requirements = [r for r in map(Requirement, build_requirements(project)) if r.marker is None or r.marker.evaluate()]
    found = subprocess.run([str(python), "-c", _VERSIONS, *(r.name for r in requirements)], capture_output=True,
                           text=True, check=True, env=env, timeout=120)
    versions = json.loads(found.stdout)
    return [f"{r} ({'not installed' if versions[r.name] is None else versions[r.name] + ' installed'})"
            for r in requirements
            if versions[r.name] is None or not r.specifier.contains(versions[r.name], prereleases=True)]


def borrowing_venv(directory: Path, outer: Path, *, pip: bool = False) -> Path:
    """A venv at ``directory`` (with pip if ``pip``) that sees the packages of the folder
    ``outer`` (a site-packages: torch, the test tools) through a ``.pth`` naming a folder of
    links to them, less anything of inductor-fix (modules, dist-info, editable finders), so
    that the inductor-fix installed into it is the only one. Its python."""
    subprocess.run([sys.executable, "-m", "venv", *(() if pip else ("--without-pip",)), str(directory)],
                   check=True, timeout=300)
    python = directory / "bin" / "python"
    linked = directory / "borrowed-site"
    linked.mkdir()
    for entry in outer.iterdir():
        if not entry.name.lower().replace("-", "_").lstrip("_").startswith(("inductor_fix", "editable__")):
            (linked / entry.name).symlink_to(entry)
    (site_packages(python) / "borrowed-site.pth").write_text(f"{linked}\n")
    return python
