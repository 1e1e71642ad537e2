"""Source fingerprints: a wrapped function is recognised only where its source is the one
recorded for the torch release it claims to be (``tools/record_fingerprints.py --write``
records them from release wheels; the lifecycle checks them before it wraps). Nothing here
imports torch.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import textwrap
from types import CodeType, ModuleType
from typing import Any, Mapping

from .._members import function_of
from .._installed import release_of
from .patch import Patch, Unsupported
from .target_names import split_target, target_module

__all__ = ["FINGERPRINTS_FILE", "check", "fingerprint", "recorded", "recorded_fingerprints", "source_fingerprint"]

#: The package data file ``tools/record_fingerprints.py --write`` writes: ``{"releases": {release:
#: {target: fingerprint}}}``, each function of Inductor once, whichever patches wrap it.
FINGERPRINTS_FILE = "fingerprints.json"


@functools.cache
def recorded_fingerprints() -> Mapping[str, Mapping[str, str]]:
    """torch release (``"2.14.1"``) -> {``"Class.attribute"``: :func:`fingerprint` of its
    released source}, every target of every patch, read once from :data:`FINGERPRINTS_FILE`
    (``inductor_fix/patches/``). Raises Unsupported if it is missing or malformed (a broken
    install): then nothing is recognised, so nothing is patched."""
    import json
    from importlib import resources

    try:
        text = resources.files(__package__).joinpath(FINGERPRINTS_FILE).read_text(encoding="utf-8")
        releases: Mapping[str, Mapping[str, str]] = json.loads(text)["releases"]
        if not all(isinstance(table, dict) for table in releases.values()):
            raise TypeError("a release's entry is not an object")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise Unsupported(f"the recorded source fingerprints ({__package__}/{FINGERPRINTS_FILE}) cannot be read: "
                          f"{type(error).__name__}: {error}") from error
    return releases


def fingerprint(source: str) -> str:
    """16 hex digits of SHA-256 over ``source`` with indentation, blank lines,
    comment-only lines and trailing spaces normalised away: a wrapped function
    whose source moved on a recorded release (a patched build, a local edit, a
    mislabelled wheel) is not recognised. ``tools/record_fingerprints.py --write``
    records them from release wheels in :data:`FINGERPRINTS_FILE`."""
    lines = []
    for line in textwrap.dedent(source).splitlines():
        stripped = line.rstrip()
        if stripped and not stripped.lstrip().startswith("#"):
            lines.append(stripped)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


#: id(code object) -> (that code object, :func:`fingerprint` of its function's source). Holding
#: the code object keeps its id from being reused; the entries are the few wrapped functions.
_SOURCE_FINGERPRINTS: dict[int, tuple[CodeType, str]] = {}


def source_fingerprint(function: Any) -> str:
    """:func:`fingerprint` of ``function``'s source, read once per code object: reading it
    (``inspect.getsource``) is most of an apply/remove cycle, and a code object's source does
    not change while it lives. Raises OSError or TypeError as ``inspect.getsource`` does."""
    # getsource reads the function at the end of a ``__wrapped__`` chain: key by that one's
    # code (every wrapper one factory makes shares the factory's code object).
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None:  # not a Python function: getsource says why
        return fingerprint(inspect.getsource(function))
    cached = _SOURCE_FINGERPRINTS.get(id(code))
    if cached is not None and cached[0] is code:
        return cached[1]
    value = fingerprint(inspect.getsource(function))
    _SOURCE_FINGERPRINTS[id(code)] = (code, value)
    return value


def recorded(patch: Patch, release: str) -> dict[str, str]:
    """{target: fingerprint} of ``patch``'s targets as recorded for ``release`` (``"2.14.1"``);
    empty where none is. Raises Unsupported if the data file is unreadable."""
    table = recorded_fingerprints().get(release, {})
    return {target: table[target] for target in patch.targets if target in table}


def check(patch: Patch, module: ModuleType, torch_version: str) -> None:
    """Raise Unsupported if a function ``patch`` wraps in ``module`` differs from the source
    recorded for this torch release; releases with no record pass, and so do pre-release builds
    (``2.15.0.dev...``: not the released source of 2.15.0)."""
    if _is_prerelease(torch_version):
        return
    for target, expected in recorded(patch, str(release_of(torch_version))).items():
        if target_module(target) != module.__name__:
            continue
        owner_name, attribute = split_target(target)
        try:
            actual = source_fingerprint(function_of(getattr(module, owner_name).__dict__[attribute]))
        except (OSError, TypeError) as error:
            raise Unsupported(f"cannot read the source of {target}: {error}") from error
        if actual != expected:
            raise Unsupported(f"{target} differs from torch {release_of(torch_version)}'s released source "
                              f"(fingerprint {actual}, recorded {expected})")


def _is_prerelease(torch_version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(torch_version).is_prerelease
    except InvalidVersion:
        return False
