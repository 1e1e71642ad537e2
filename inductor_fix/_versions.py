"""Installed versions, read from package metadata (asking imports neither torch nor triton)."""

from __future__ import annotations

__all__ = ["distribution_version", "release_of"]


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
