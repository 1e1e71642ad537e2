"""The patch table: every patch, one line each, in the order they are applied and shown.

A patch is one folder, ``inductor_fix/patches/<folder>/`` (:mod:`.patch` says what it
holds); its diffs are in the repository's ``patches/`` and its tests in ``test/<folder>/``.
The table imports each folder's entry (``__init__``: what the patch is), never its fix: the
lifecycle loads that (:func:`~.patch.fix_of`). An entry that cannot be imported (whatever it
raises but ``KeyboardInterrupt``), or whose fields are not of the types :class:`~.patch.Patch`
and :class:`~.patch.Crash` declare (:func:`~.patch.check_entry`), is the table's
:func:`~.patch.unreadable_entry` for its folder: that patch is ``unsupported`` with the reason,
the others work, and every entry the table holds is well-formed.
Everything else (the lifecycle, status, the job report, ``check``, the CLI, the tools and
the shared tests) reads names, targets and activity kinds from this table only; ``check``, the
tools and the tests read a patch's parts (its ops among them) through :mod:`inductor_fix.check.parts`.

Order matters where two patches wrap one slot (the later one's wrapper sits outside), and
where one patch's decision probes what an earlier one installed. autotune-sharing comes after
cache-key: it decides by probing the live ``GeneratedCodeCache.make_key`` (cache-key's wrapper
on 2.9-2.14), and its ``make_key`` wrapper must see the key that wrapper returns. Both it and
arity-guard wrap ``TritonTemplate.generate``: autotune-sharing's must be inside, so that it
records the family of exactly the code the key served (arity-guard may call it again with the
cache off, which keys nothing). arity-guard and benchmark-realign both wrap
``AlgorithmSelectorCache.__call__``: benchmark-realign's sits outside, so the guard sees the
inputs it realized. cutlass-cache-key wraps only the CUTLASS template's module, which no other
patch touches. To add a patch: its folder and one line below; to retire one: delete the
folder, its diffs, its test folder and its line (CONTRIBUTING.md).
"""

from __future__ import annotations

import importlib

from .patch import NotNeeded, Patch, Unsupported, check_entry, unreadable_entry
from .target_names import MODULE

__all__ = ["MODULE", "PATCHES", "NotNeeded", "Patch", "Unsupported", "by_crash", "by_name", "targets"]

#: The folders of the patches, in table order.
FOLDERS: tuple[str, ...] = (
    "cache_key",
    "autotune_sharing",
    "arity_guard",
    "benchmark_realign",
    "cutlass_cache_key",
)



def _entry(folder: str) -> Patch:
    """The folder's ``PATCH``; where its entry raises as it imports (anything but
    ``KeyboardInterrupt``: ``SystemExit`` too), defines no ``PATCH``, or one that
    :func:`~.patch.check_entry` refuses (a field not of its declared type, an error pattern that is
    no regular expression), :func:`~.patch.unreadable_entry` (never raises: ``import inductor_fix``
    must not)."""
    try:
        return check_entry(importlib.import_module(f"{__name__}.{folder}").PATCH)
    except KeyboardInterrupt:  # Ctrl-C ends the process, as Python ends it (patch.fix_of says why)
        raise
    except BaseException as error:  # SystemExit too: a broken patch costs only itself
        return unreadable_entry(folder, error)


#: Every patch, in the order they are applied and shown.
PATCHES: tuple[Patch, ...] = tuple(_entry(folder) for folder in FOLDERS)


def targets(patches: tuple[Patch, ...] | None = None) -> tuple[str, ...]:
    """Every ``"Class.attribute"`` the patches wrap, once (two patches may wrap one)."""
    return tuple(dict.fromkeys(t for patch in (PATCHES if patches is None else patches) for t in patch.targets))


def by_name(name: str) -> Patch:
    """The patch called ``name``; KeyError if there is none."""
    for patch in PATCHES:
        if patch.name == name:
            return patch
    raise KeyError(name)


def by_crash(text: str | None) -> Patch | None:
    """The first patch of the table whose stock crash (``Patch.crash``) ``text`` is: an error as
    ``Type: message``, or how a process ended (``killed by SIGSEGV``); None for any other."""
    return next((patch for patch in PATCHES if patch.crash.matches(text)), None)
