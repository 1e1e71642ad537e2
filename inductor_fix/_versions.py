"""Installed torch/triton versions and the release facts this package is built on.

Versions come from package metadata, so asking for them imports neither torch
nor triton. The facts below come from reading each release's
``torch/_inductor/select_algorithm.py`` (see README.md, "Affected releases", and docs/matrix.md).
"""

from __future__ import annotations

__all__ = [
    "CACHE_ADDED",
    "CACHE_ON_BY_DEFAULT",
    "FIXED_UPSTREAM",
    "distribution_version",
    "release_of",
]

#: ``GeneratedCodeCache`` first appears, off by default
#: (``config.enable_caching_generated_triton_templates = False``).
CACHE_ADDED = "2.8.0"
#: The cache is on by default from here: the crash needs no opt-in.
CACHE_ON_BY_DEFAULT = "2.9.0"
#: pytorch/pytorch#188069, fixed by PR #188268 (``input_aliasing`` in the key).
#: Informational only: whether a build needs the fix is decided by probing it.
FIXED_UPSTREAM = "2.15.0"


def distribution_version(name: str) -> str | None:
    """The installed version string of distribution ``name``, or None if absent."""
    from importlib import metadata  # lazily: ~20 ms that import inductor_fix need not pay

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


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
