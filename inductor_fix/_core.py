"""apply / remove / status: the patch lifecycle, thread-safe and idempotent.

State lives here and only here. One re-entrant lock guards it; the import hook's
callback takes the same lock, and nothing waits for an import while holding it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any, Iterator

from . import _versions
from ._hook import PostImportHook
from ._patches import MODULE, PATCHES, NotNeeded, Patch, Unsupported, check_fingerprints, split_target
from ._registry import Registry
from ._warnings import warn_once
from .status import PatchStatus, State, Status

__all__ = [
    "applied",
    "apply",
    "disabled_patches",
    "install",
    "is_patched",
    "original",
    "remove",
    "removed",
    "status",
]

DISABLE_VARIABLE = "INDUCTOR_FIX_DISABLE"
_ALL = ("1", "true", "yes", "on", "all")
_NONE = ("", "0", "false", "no", "off")

_lock = threading.RLock()
_registry = Registry()
_states: dict[str, tuple[State, str]] = {patch.name: (State.REMOVED, "not applied") for patch in PATCHES}
#: id()s of the classes each patch was last decided for: a decision is made once per
#: class object, and again after a reload of the module creates new ones.
_decided: dict[str, tuple[int, ...]] = {}
#: True between apply() and remove(): the hook's callback patches only then.
_wanted = False
#: Patch names INDUCTOR_FIX_DISABLE named at the last apply().
_disabled: frozenset[str] = frozenset()


def disabled_patches() -> frozenset[str]:
    """The patch names ``INDUCTOR_FIX_DISABLE`` turns off.

    ``1``/``true``/``yes``/``on``/``all``: every patch. A comma-separated list of
    patch names (``arity-guard,benchmark-realign``): those. Empty, ``0``,
    ``false``, ``no``, ``off``: none. Any other value (a misspelt name) changes
    nothing: no patch is disabled and one InductorFixWarning lists the names.
    """
    value = os.environ.get(DISABLE_VARIABLE, "").strip().lower()
    names = {patch.name for patch in PATCHES}
    if value in _NONE:
        return frozenset()
    if value in _ALL:
        return frozenset(names)
    requested = {part.strip() for part in value.split(",") if part.strip()}
    unknown = sorted(requested - names)
    if unknown:
        warn_once(
            f"inductor_fix: ignoring {DISABLE_VARIABLE}={value!r}: unknown patch name(s) {', '.join(unknown)}; "
            f"use 1 (all) or names from {', '.join(sorted(names))}",
            stacklevel=4,
        )
        return frozenset()
    return frozenset(requested)


def _torch_version() -> str | None:
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None)
    return str(version) if version is not None else _versions.distribution_version("torch")


def _install(patch: Patch, module: ModuleType) -> tuple[State, str]:
    """Decide and, if right, install ``patch`` on ``module``; never raises."""
    try:
        context = patch.decide(module)
        check_fingerprints(patch, module, _torch_version() or "")
        for target, factory in patch.targets.items():
            owner_name, attribute = split_target(target)
            _registry.wrap(getattr(module, owner_name), attribute, lambda o, f=factory: f(o, context), patch.name)
        if patch.verify is not None:
            patch.verify(module)
    except NotNeeded as reason:
        return State.NOT_NEEDED, str(reason)
    except Exception as error:  # Unsupported, or anything unforeseen: never break Inductor.
        _registry.restore_all(patch.name)
        reason = str(error) if isinstance(error, Unsupported) else f"{type(error).__name__}: {error}"
        warn_once(f"inductor_fix: {patch.name} patch not applied: {reason}", stacklevel=3)
        return State.UNSUPPORTED, reason
    return State.APPLIED, patch.effect


def _owners(patch: Patch, module: ModuleType) -> tuple[int, ...]:
    return tuple(id(getattr(module, split_target(target)[0], None)) for target in patch.targets)


def _on_import(module: ModuleType) -> None:
    with _lock:
        if not _wanted:
            return
        for patch in PATCHES:
            if patch.name in _disabled:
                if patch.name not in _said_disabled:  # said here, once torch's logging is set up
                    _said_disabled.add(patch.name)
                    _log.info("inductor_fix: %s %s: %s", patch.name, *_states[patch.name])
                continue
            if _decided.get(patch.name) == _owners(patch, module):
                continue
            _decided[patch.name] = _owners(patch, module)
            _states[patch.name] = _install(patch, module)
            _log.info("inductor_fix: %s %s: %s", patch.name, *_states[patch.name])


_hook = PostImportHook(MODULE, _on_import)
_log = logging.getLogger(__name__)
_said_disabled: set[str] = set()


def apply() -> Status:
    """Apply every patch this torch needs, now or when Inductor's
    ``select_algorithm`` module is first imported (it is never imported here).

    Idempotent and thread-safe; returns :func:`status`. Never raises: a patch
    that does not fit this torch is skipped with an
    :class:`~inductor_fix.InductorFixWarning`. Patches named by
    ``INDUCTOR_FIX_DISABLE`` (``1``: all) are not applied and say ``disabled``.
    """
    install()
    return status()


def install() -> None:
    """:func:`apply` without building the returned status (package metadata lookups
    that ``import inductor_fix`` need not pay for)."""
    global _wanted, _disabled
    with _lock:
        _disabled = disabled_patches()
        for patch in PATCHES:
            if patch.name in _disabled and _states[patch.name][0] in (State.REMOVED, State.PENDING):
                _states[patch.name] = (State.DISABLED, f"{DISABLE_VARIABLE}={os.environ.get(DISABLE_VARIABLE)} disables it")
        if len(_disabled) == len(PATCHES):
            return
        _wanted = True
        _hook.install()
        reason = f"waiting for {MODULE} to be imported"
        if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:  # no metadata read
            reason = f"torch is not installed; {reason}"
        for patch in PATCHES:
            if patch.name not in _disabled and _states[patch.name][0] in (State.REMOVED, State.DISABLED):
                _states[patch.name] = (State.PENDING, reason)
    module = _hook.loaded_module()  # outside the lock: may wait for another thread's import
    if module is not None:
        _on_import(module)


def remove() -> Status:
    """Restore the exact original of everything ever wrapped (classes of an earlier
    import of Inductor's module included) and stop patching future imports.

    Idempotent and thread-safe; returns :func:`status` (state ``removed``).
    """
    global _wanted
    with _lock:
        _wanted = False
        _hook.uninstall()
        _registry.restore_all()
        for patch in PATCHES:
            if _states[patch.name][0] != State.DISABLED:  # keep saying why nothing was applied
                _states[patch.name] = (State.REMOVED, "inductor_fix.remove() restored the originals")
        _decided.clear()
        return status()


def status() -> Status:
    """What is patched now, and why (see :class:`~inductor_fix.status.Status`).

    Never imports torch or Inductor.
    """
    with _lock:
        patches = tuple(PatchStatus(patch.name, patch.target, *_states[patch.name]) for patch in PATCHES)
    return Status.of(patches, _torch_version(), _versions.distribution_version("triton"))


def _member(target: str) -> tuple[Any, str]:
    """``(class, attribute)`` of ``"Class.attribute"`` in the loaded Inductor module;
    KeyError if the module is not loaded or has no such class."""
    owner_name, attribute = split_target(target)
    module = sys.modules.get(MODULE)
    owner = getattr(module, owner_name, None) if module is not None else None
    if owner is None:
        raise KeyError(f"{MODULE}.{owner_name} is not loaded")
    return owner, attribute


def is_patched(target: str) -> bool:
    """Whether ``"Class.attribute"`` of ``torch._inductor.select_algorithm`` (e.g.
    ``"TritonTemplate.generate"``) is wrapped by this package now. Never imports Inductor:
    False while it is not loaded."""
    try:
        owner, attribute = _member(target)
    except KeyError:
        return False
    with _lock:
        entry = _registry.find(owner, attribute)
        return entry is not None and owner.__dict__.get(attribute) is entry.wrapper


def original(target: str) -> Any:
    """The stock object (function or classmethod) that ``"Class.attribute"`` had before
    this package wrapped it. Raises KeyError if it is not wrapped now."""
    owner, attribute = _member(target)
    with _lock:
        entry = _registry.find(owner, attribute)
    if entry is None:
        raise KeyError(f"{target} is not patched")
    return entry.original


def is_applied() -> bool:
    with _lock:
        return _wanted


@contextlib.contextmanager
def applied() -> Iterator[Status]:
    """Apply for the duration of a ``with`` block; on exit, remove again unless
    the fix was applied before the block."""
    before = is_applied()
    try:
        yield apply()
    finally:
        if not before:
            remove()


@contextlib.contextmanager
def removed() -> Iterator[Status]:
    """Run a ``with`` block on stock Inductor (the negative control in tests);
    on exit, re-apply if the fix was applied before the block."""
    before = is_applied()
    try:
        yield remove()
    finally:
        if before:
            apply()
