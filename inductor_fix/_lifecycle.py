"""apply / remove / status: the patch lifecycle, one object, thread-safe and idempotent.

:class:`Lifecycle` holds all state of the fix in a process: the patch table, the
undo stack, each patch's state and reason, which class objects each patch was
decided for, and whether the fix is wanted. One re-entrant lock guards it; the
post-import hook's callback takes the same lock, and nothing waits for an import
while holding it. The package's public functions are its methods on
:data:`LIFECYCLE`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any, Iterator, Sequence

from . import _hook
from ._registry import Registry
from ._version import __version__
from ._versions import distribution_version
from ._warnings import warn_once
from .patches import MODULE, PATCHES, NotNeeded, Patch, Unsupported
from .patches.base import split_target
from .status import PatchStatus, State, Status

__all__ = ["DISABLE_VARIABLE", "LIFECYCLE", "Lifecycle", "disabled_patches"]

DISABLE_VARIABLE = "INDUCTOR_FIX_DISABLE"
#: Set by the process that warned about an unknown name in INDUCTOR_FIX_DISABLE, to that
#: value: its child processes (which inherit it) do not warn again.
DISABLE_WARNED_VARIABLE = "INDUCTOR_FIX_DISABLE_WARNED"
_ALL = ("1", "true", "yes", "on", "all")
_NONE = ("", "0", "false", "no", "off")

log = logging.getLogger("inductor_fix")


def disabled_patches(names: Sequence[str] | None = None, environ: Any = None) -> tuple[frozenset[str], list[str]]:
    """``(the patch names INDUCTOR_FIX_DISABLE turns off, the unknown names it holds)``.

    ``1``/``true``/``yes``/``on``/``all`` (also inside a list): every patch. A comma-separated list of
    patch names (``arity-guard,benchmark-realign``): those, and unknown names in it
    (a misspelling) are returned for the caller to warn about. Empty, ``0``,
    ``false``, ``no``, ``off``: none. ``names`` defaults to the patch table's.
    """
    environ = os.environ if environ is None else environ
    known = {patch.name for patch in PATCHES} if names is None else set(names)
    value = environ.get(DISABLE_VARIABLE, "").strip().lower()
    if value in _NONE:
        return frozenset(), []
    requested = {part.strip() for part in value.split(",")} - set(_NONE)
    if requested & set(_ALL):  # "1,arity-guard": the 1 wins, as a reader of it would expect
        return frozenset(known), []
    return frozenset(requested & known), sorted(requested - known)


def unknown_names_message(unknown: list[str], names: Sequence[str]) -> str:
    return (f"inductor_fix: {DISABLE_VARIABLE}={os.environ.get(DISABLE_VARIABLE, '')!r} names unknown patch(es) "
            f"{', '.join(unknown)}: ignored (the known names in it still apply); use 1 (all) or names from "
            f"{', '.join(sorted(names))}")


def _torch_version() -> str | None:
    from ._versions import torch_version

    return torch_version()


class Lifecycle:
    """The fix in this process: ``patches`` applied to ``module_name`` when it loads."""

    def __init__(self, patches: Sequence[Patch], module_name: str = MODULE) -> None:
        self.patches = tuple(patches)
        self.module_name = module_name
        self._lock = threading.RLock()
        self._registry = Registry()
        self._states: dict[str, tuple[State, str]] = {p.name: (State.REMOVED, "not applied") for p in self.patches}
        #: id()s of the classes each patch was last decided for: a decision is made once per
        #: class object, and again after a reload of the module creates new ones.
        self._decided: dict[str, tuple[int, ...]] = {}
        #: True between apply() and remove(): the hook's callback patches only then.
        self._wanted = False
        #: The patches apply() asked for and remove() did not take back since (all, or by name).
        self._on: set[str] = set()
        self._disabled: frozenset[str] = frozenset()
        self._said_disabled: set[str] = set()

    # --- applying ---------------------------------------------------------------------

    def _names(self, call: str, names: Sequence[str]) -> set[str]:
        """The patches ``names`` selects (none given: all); ValueError naming the unknown ones."""
        known = [p.name for p in self.patches]
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"inductor_fix.{call}(): {', '.join(map(repr, unknown))} is no patch name; the patches "
                             f"are {', '.join(known)}")
        return set(names or known)

    def apply(self, *names: str) -> Status:
        """Apply every patch this torch needs (or only the patches ``names``, e.g.
        ``apply("cache-key")``, besides those already applied), now or when Inductor's
        ``select_algorithm`` module is first imported (it is never imported here).

        Idempotent and thread-safe; returns :meth:`status`. Never raises for this torch: a
        patch that does not fit it is skipped with an
        :class:`~inductor_fix.InductorFixWarning`. Patches named by
        ``INDUCTOR_FIX_DISABLE`` (``1``: all) are not applied and say ``disabled``.
        Raises ValueError, changing nothing, if a name is not a patch of the table.
        """
        self.install(*names)
        return self.status()

    def install(self, *names: str) -> None:
        """:meth:`apply` without building the returned status (package metadata lookups
        that ``import inductor_fix`` need not pay for)."""
        selected = self._names("apply", names)
        with self._lock:
            self._on |= selected
            self._disabled, unknown = disabled_patches([p.name for p in self.patches])
            if unknown and os.environ.get(DISABLE_WARNED_VARIABLE) != os.environ.get(DISABLE_VARIABLE):
                warn_once(unknown_names_message(unknown, [p.name for p in self.patches]), origin=f"${DISABLE_VARIABLE}")
                os.environ[DISABLE_WARNED_VARIABLE] = os.environ.get(DISABLE_VARIABLE, "")  # children: once per job
            for patch in self.patches:
                if patch.name in self._disabled and self._states[patch.name][0] in (State.REMOVED, State.PENDING):
                    self._states[patch.name] = (State.DISABLED, f"{DISABLE_VARIABLE}="
                                                f"{os.environ.get(DISABLE_VARIABLE)} disables it")
            if len(self._disabled) == len(self.patches):
                return
            self._wanted = True
            _hook.register(self.module_name, self._on_import)
            reason = f"waiting for {self.module_name} to be imported"
            if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:  # no metadata read
                reason = f"torch is not installed; {reason}"
            for patch in self.patches:
                if patch.name in self._on and patch.name not in self._disabled and self._states[patch.name][0] in (
                        State.REMOVED, State.DISABLED):
                    self._states[patch.name] = (State.PENDING, reason)
        module = _hook.loaded(self.module_name)  # outside the lock: may wait for another thread's import
        if module is not None:
            self._on_import(module)

    def _owners(self, patch: Patch, module: ModuleType) -> tuple[int, ...]:
        return tuple(id(getattr(module, split_target(target)[0], None)) for target in patch.targets)

    def _on_import(self, module: ModuleType) -> None:
        with self._lock:
            if not self._wanted:
                return
            for patch in self.patches:
                if patch.name not in self._on:
                    continue
                if patch.name in self._disabled:
                    if patch.name not in self._said_disabled:  # said here, once torch's logging is set up
                        self._said_disabled.add(patch.name)
                        log.info("inductor_fix: %s %s: %s", patch.name, *self._states[patch.name])
                    continue
                if self._decided.get(patch.name) == self._owners(patch, module):
                    continue
                self._decided[patch.name] = self._owners(patch, module)
                self._states[patch.name] = self._install(patch, module)
                log.info("inductor_fix: %s %s: %s", patch.name, *self._states[patch.name])

    def _install(self, patch: Patch, module: ModuleType) -> tuple[State, str]:
        """Decide and, if right, install ``patch`` on ``module``; never raises."""
        try:
            context = patch.decide(module)
            patch.check_fingerprints(module, _torch_version() or "")
            for target, factory in patch.targets.items():
                owner_name, attribute = split_target(target)
                self._registry.wrap(getattr(module, owner_name), attribute, lambda o, f=factory: f(o, context),
                                    patch.name)
            if patch.verify is not None:
                patch.verify(module)
        except NotNeeded as reason:
            return State.NOT_NEEDED, str(reason)
        except Exception as error:  # Unsupported, or anything unforeseen: never break Inductor.
            self._registry.restore_all({patch.name})
            reason = str(error) if isinstance(error, Unsupported) else f"{type(error).__name__}: {error}"
            warn_once(f"inductor_fix: {patch.name} patch not applied: {reason}", stacklevel=3)
            return State.UNSUPPORTED, reason
        return State.APPLIED, patch.effect

    # --- removing ---------------------------------------------------------------------

    def remove(self, *names: str) -> Status:
        """Restore the exact original of everything ever wrapped (classes of an earlier
        import of Inductor's module included) and stop patching future imports; with
        ``names`` (``remove("benchmark-realign")``), of those patches only.

        Where another library wrapped a target after this package (``mock.patch``, a
        ``wrapt`` wrapper), its wrapper is left in place and ours inside it passes every
        call through; the patch's reason and a log warning say so, and a later
        ``remove()`` restores the original once the slot holds ours again.
        Idempotent and thread-safe; returns :meth:`status` (state ``removed``; a patch
        that ``INDUCTOR_FIX_DISABLE`` turned off keeps saying ``disabled``, with its reason).
        Raises ValueError, changing nothing, if a name is not a patch of the table.
        """
        selected = self._names("remove", names)
        with self._lock:
            self._on -= selected
            if not self._on:
                self._wanted = False
                _hook.unregister(self.module_name, self._on_import)
            # Newest first: two patches may share a slot. One left under another patch's switch
            # passes calls through and is restored once that one is (so every patch now off
            # is tried again); one under another library's wrapper is said.
            off = {patch.name for patch in self.patches} - self._on
            left_in_place = [entry for entry in self._registry.restore_all(off)
                             if not self._registry.under_ours(entry)]
            for patch in self.patches:
                if patch.name not in selected:
                    continue
                self._decided.pop(patch.name, None)
                left = [entry for entry in left_in_place if entry.patch == patch.name]
                if left:
                    targets = ", ".join(entry.target for entry in left)
                    reason = (f"inductor_fix.remove(): {targets} is wrapped by another library over inductor_fix's "
                              "wrapper; that wrapper was left in place and ours inside it passes every call through "
                              "(call remove() again once it is gone)")
                    log.warning("%s", reason)
                    self._states[patch.name] = (State.REMOVED, reason)
                elif self._states[patch.name][0] == State.APPLIED:
                    self._states[patch.name] = (State.REMOVED, "inductor_fix.remove() restored the originals")
                elif self._states[patch.name][0] not in (State.DISABLED, State.REMOVED):  # keep saying why
                    state, reason = self._states[patch.name]
                    self._states[patch.name] = (State.REMOVED, f"inductor_fix.remove(); it had wrapped nothing "
                                                f"({state}: {reason})")
            return self.status()

    # --- asking -----------------------------------------------------------------------

    def status(self) -> Status:
        """What is patched now, and why (see :class:`~inductor_fix.status.Status`).

        Never imports torch or Inductor.
        """
        with self._lock:
            patches = tuple(PatchStatus(p.name, p.target, *self._states[p.name], p.activity.snapshot()["counts"])
                            for p in self.patches)
        return Status.of(patches, _torch_version(), distribution_version("triton"), __version__)

    def activity(self) -> dict[str, dict[str, Any]]:
        """What each patch did in this process: ``{patch name: {"counts": {kind: n},
        "details": [{"kind", "count", ...}, ...]}}`` (the first 20 details per patch).

        Kinds: cache-key ``collisions_prevented`` (a template's stock codegen-cache key met
        with a second aliasing pattern: what stock would have replayed, with the template
        and both patterns); arity-guard ``regenerated``, ``excluded``,
        ``excluded_at_benchmark`` (template, kernel, its parameters, the arguments);
        benchmark-realign ``realigned`` choices (kernel, its inputs, the selection's, the
        captured buffers), ``selections_realigned``, ``realized`` (buffers realized before
        a selection). Empty counts: the patch found nothing to do in this process.
        """
        return {patch.name: patch.activity.snapshot() for patch in self.patches}

    def is_applied(self) -> bool:
        with self._lock:
            return self._wanted

    def _member(self, target: str) -> tuple[Any, str]:
        if not isinstance(target, str):
            raise KeyError(f"{target!r} is not a target name such as 'TritonTemplate.generate'")
        try:
            owner_name, attribute = split_target(target.removeprefix(f"{self.module_name}."))
        except ValueError:
            raise KeyError(f"{target!r} is not a target name such as 'TritonTemplate.generate'") from None
        module = sys.modules.get(self.module_name)
        owner = getattr(module, owner_name, None) if module is not None else None
        if owner is None:
            raise KeyError(f"{self.module_name}.{owner_name} is not loaded")
        return owner, attribute

    def is_patched(self, target: str) -> bool:
        """Whether ``"Class.attribute"`` of ``torch._inductor.select_algorithm`` (e.g.
        ``"TritonTemplate.generate"``, or the full dotted name) holds this package's active
        wrapper now. Never imports Inductor: False while it is not loaded, or for a name
        that is not a target."""
        try:
            owner, attribute = self._member(target)
        except KeyError:
            return False
        with self._lock:
            entry = self._registry.newest(owner, attribute)
            return entry is not None and entry.active and entry.in_slot()

    def original(self, target: str) -> Any:
        """The stock object (function or classmethod) that ``"Class.attribute"`` (or the full
        dotted name) had before this package wrapped it. Raises KeyError if it is not
        wrapped now or is not a target name."""
        owner, attribute = self._member(target)
        with self._lock:
            newest, oldest = self._registry.newest(owner, attribute), self._registry.find(owner, attribute)
        if newest is None or not newest.active:
            raise KeyError(f"{target} is not patched")
        return oldest.original

    @contextlib.contextmanager
    def applied(self, *names: str) -> Iterator[Status]:
        """Apply (every patch, or the patches ``names``) for the duration of a ``with``
        block; on exit, remove again those that were not applied before the block.
        ValueError for a name that is not a patch, before anything changes."""
        selected = self._names("applied", names)
        with self._lock:
            before = set(self._on)
        try:
            yield self.apply(*names)
        finally:
            if selected - before:
                self.remove(*sorted(selected - before))

    @contextlib.contextmanager
    def removed(self, *names: str) -> Iterator[Status]:
        """Run a ``with`` block on stock Inductor, or without the patches ``names``
        (``removed("benchmark-realign")``: the others stay; the negative control in tests);
        on exit, re-apply those that were applied before the block. ValueError for a name
        that is not a patch, before anything changes."""
        selected = self._names("removed", names)
        with self._lock:
            before = self._on & selected
        try:
            yield self.remove(*names)
        finally:
            if before:
                self.apply(*sorted(before))


#: The fix of this process.
LIFECYCLE = Lifecycle(PATCHES)
