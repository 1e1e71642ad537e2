"""apply / remove / status: the patch lifecycle, thread-safe and idempotent.

State lives here and only here. One re-entrant lock guards it; the import hook's
callback takes the same lock, and nothing waits for an import while holding it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from types import ModuleType
from typing import Any, Iterator

from . import _versions
from ._hook import PostImportHook
from ._patches import MODULE, PATCHES, NotNeeded, Patch, Unsupported, check_fingerprints
from ._registry import Registry
from ._warnings import warn_once
from .status import PatchStatus, State, Status

__all__ = ["applied", "apply", "disabled_by_environment", "install", "remove", "removed", "status"]

DISABLE_VARIABLE = "INDUCTOR_FIX_DISABLE"

_lock = threading.RLock()
_registry = Registry()
_states: dict[str, tuple[State, str]] = {patch.name: (State.REMOVED, "not applied") for patch in PATCHES}
#: id()s of the classes each patch was last decided for: a decision is made once per
#: class object, and again after a reload of the module creates new ones.
_decided: dict[str, tuple[int, ...]] = {}
#: True between apply() and remove(): the hook's callback patches only then.
_wanted = False


def disabled_by_environment() -> bool:
    """True if ``INDUCTOR_FIX_DISABLE`` is set to anything but "", 0, false, no or off."""
    value = os.environ.get(DISABLE_VARIABLE, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def _torch_version() -> str | None:
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None)
    return str(version) if version is not None else _versions.distribution_version("torch")


def _install(patch: Patch, module: ModuleType) -> tuple[State, str]:
    """Decide and, if right, install ``patch`` on ``module``; never raises."""
    installed: list[tuple[Any, str]] = []
    try:
        wrappers = patch.plan(module)
        check_fingerprints(patch, module, _torch_version() or "")
        for (owner_name, attribute), make_wrapper in wrappers.items():
            owner = getattr(module, owner_name)
            _registry.wrap(owner, attribute, make_wrapper, patch.name)
            installed.append((owner, attribute))
        if patch.verify is not None:
            patch.verify(module)
    except NotNeeded as reason:
        return State.NOT_NEEDED, str(reason)
    except Exception as error:  # Unsupported, or anything unforeseen: never break Inductor.
        for owner, attribute in installed:
            _registry.restore(owner, attribute)
        reason = str(error) if isinstance(error, Unsupported) else f"{type(error).__name__}: {error}"
        warn_once(f"inductor_fix: {patch.name} patch not applied: {reason}", stacklevel=3)
        return State.UNSUPPORTED, reason
    return State.APPLIED, patch.effect


def _on_import(module: ModuleType) -> None:
    with _lock:
        if not _wanted:
            return
        for patch in PATCHES:
            owners = tuple(id(getattr(module, owner, None)) for owner, _ in patch.wraps)
            if _decided.get(patch.name) == owners:
                continue
            _decided[patch.name] = owners
            _states[patch.name] = _install(patch, module)


_hook = PostImportHook(MODULE, _on_import)


def apply() -> Status:
    """Apply every patch this torch needs, now or when Inductor's
    ``select_algorithm`` module is first imported (it is never imported here).

    Idempotent and thread-safe; returns :func:`status`. Never raises: a patch
    that does not fit this torch is skipped with an
    :class:`~inductor_fix.InductorFixWarning`. With ``INDUCTOR_FIX_DISABLE=1``
    nothing is patched and the state is ``disabled``.
    """
    install()
    return status()


def install() -> None:
    """:func:`apply` without building the returned status (package metadata lookups
    that ``import inductor_fix`` need not pay for)."""
    global _wanted
    with _lock:
        if disabled_by_environment():
            if not _wanted:
                for patch in PATCHES:
                    _states[patch.name] = (State.DISABLED, f"{DISABLE_VARIABLE} is set")
            return
        _wanted = True
        _hook.install()
        reason = f"waiting for {MODULE} to be imported"
        if _torch_version() is None:
            reason = f"torch is not installed; {reason}"
        for patch in PATCHES:
            if _states[patch.name][0] in (State.REMOVED, State.DISABLED):
                _states[patch.name] = (State.PENDING, reason)
    module = _hook.loaded_module()  # outside the lock: may wait for another thread's import
    if module is not None:
        _on_import(module)


def remove() -> Status:
    """Restore the exact original functions and stop patching future imports.

    Idempotent and thread-safe; returns :func:`status` (state ``removed``).
    """
    global _wanted
    with _lock:
        _wanted = False
        _hook.uninstall()
        module = sys.modules.get(MODULE)
        for patch in PATCHES:
            for owner_name, attribute in patch.wraps:
                owner = getattr(module, owner_name, None)
                if owner is not None:
                    _registry.restore(owner, attribute)
            if _states[patch.name][0] != State.DISABLED:  # keep saying why nothing was applied
                _states[patch.name] = (State.REMOVED, "inductor_fix.remove() restored the originals")
        _decided.clear()
        return status()


def status() -> Status:
    """What is patched now, and why (see :class:`~inductor_fix.status.Status`).

    Never imports torch or Inductor.
    """
    with _lock:
        patches = tuple(
            PatchStatus(patch.name, patch.target, *_states[patch.name]) for patch in PATCHES
        )
    return Status(
        state=patches[0].state,
        reason=patches[0].reason,
        torch_version=_torch_version(),
        triton_version=_versions.distribution_version("triton"),
        patches=patches,
    )


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
