"""Installed versions, read from package metadata (asking imports neither torch nor triton)."""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "distribution_version", "module_version", "please_report", "project_url", "release_of",
           "torch_version", "triton_version"]

#: This project's distribution name (the import name is ``inductor_fix``).
DISTRIBUTION = "inductor-fix"


def distribution_version(name: str) -> str | None:
    """The installed version string of distribution ``name``, or None if absent."""
    from importlib import metadata  # lazily: ~20 ms that import inductor_fix need not pay

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def torch_version() -> str | None:
    """``torch.__version__`` (``"2.14.1+cu130"``), without importing torch when it is not
    imported yet: read from the ``__version__ = '...'`` line of the installed
    ``torch/version.py`` (which carries the local build tag that the distribution's metadata,
    ``"2.14.1"``, lacks); that metadata if the file cannot be read; None without torch."""
    return module_version("torch", "version.py")


def triton_version() -> str | None:
    """``triton.__version__`` (``"3.8.0"``), read as :func:`torch_version` reads torch's, from
    the installed ``triton/__init__.py`` (a nightly's ``pytorch-triton`` distribution included):
    cheaper than the metadata, which ``status`` would otherwise import for it alone."""
    return module_version("triton", "__init__.py")


def module_version(package: str, filename: str) -> str | None:
    """``package.__version__`` without importing ``package``: the module's if it is imported,
    else the ``__version__ = '...'`` literal of the installed ``package/filename``, else the
    distribution ``package``'s version; None where it is not installed."""
    import sys

    version = getattr(sys.modules.get(package), "__version__", None)
    if version is not None:
        return str(version)
    import ast
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec(package)  # a top-level name: imports nothing
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            with open(os.path.join(location, filename), encoding="utf-8") as handle:
                for node in ast.parse(handle.read()).body:
                    if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant)
                            and any(getattr(t, "id", None) == "__version__"
                                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))):
                        return str(node.value.value)
    except (OSError, SyntaxError, ValueError, ImportError):
        pass
    return distribution_version(package)


def triton_required() -> str | None:
    """The triton the installed torch declares it needs, as its requirement says it
    (``"triton==3.8.0"``, 2.15.0's ``"triton~=3.9.0"``, a nightly's ``"pytorch-triton==..."``):
    read from torch's own distribution metadata (CUDA builds declare one), its environment
    marker evaluated here; None where it declares none (a CPU build, another platform, no torch)."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirements = metadata.requires("torch") or []
    except metadata.PackageNotFoundError:
        return None
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.name in ("triton", "pytorch-triton") and (
                requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
            return f"{requirement.name}{requirement.specifier}"
    return None


def project_url(label: str) -> str | None:
    """``[project.urls]`` entry ``label`` of pyproject.toml (``"Issues"``, ``"Changelog"`` ...),
    as the installed distribution's metadata carries it; None when the package runs from a
    checkout that was never installed."""
    from importlib import metadata

    try:
        entries = metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in entries:
        name, _, url = entry.partition(",")
        if name.strip().lower() == label.lower():
            return str(url).strip()
    return None


def please_report(attach: str) -> str:
    """Where to report a problem, for ``status`` and ``check`` to print: the Issues URL of
    the installed distribution's metadata (none from a checkout never installed)."""
    url = project_url("Issues")
    return f"please report it{f' at {url}' if url else ''}, with {attach}"


def release_of(version: str | None) -> str | None:
    """``"2.14.1+cu130"`` -> ``"2.14.1"``, ``"2.15.0.dev20260101"`` -> ``"2.15.0"``;
    None for None or a string ``packaging`` cannot parse."""
    from packaging.version import InvalidVersion, Version  # lazily: import must not fail

    if version is None:
        return None
    try:
        return Version(version).base_version
    except InvalidVersion:
        return None
