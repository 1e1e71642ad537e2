"""apply / remove / status: the patch lifecycle, one object, thread-safe and idempotent.

:class:`Lifecycle` holds all state of the fix in a process: one :class:`Record` per patch
of the table (its state and reason, whether it is asked for and whether
``INDUCTOR_FIX_DISABLE`` turns it off, which class objects it was decided for) and the
undo stack of what was wrapped. One re-entrant lock guards it; the post-import hook's
callback takes the same lock, and nothing waits for an import while holding it. The
package's public functions are its methods on :data:`LIFECYCLE`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any, Iterator, Sequence

import _inductor_fix_startup as startup

from . import _trace
from ._undo import ABSENT, UndoStack
from ._version import __version__
from ._installed import triton_version
from ._warnings import warn_once
from .patches import PATCHES, NotNeeded, Patch, Unsupported, fingerprints
from .patches.patch import Factory, Fix, FixError, fix_of
from .patches.target_names import qualified_name, split_target, target_module
from .status import PatchStatus, State, Status

__all__ = ["DISABLE_VARIABLE", "LIFECYCLE", "Lifecycle", "Record", "disabled_patches"]

DISABLE_VARIABLE = "INDUCTOR_FIX_DISABLE"
#: Set by the process that warned about an unknown name in INDUCTOR_FIX_DISABLE, to that
#: value: its child processes (which inherit it) do not warn again.
DISABLE_WARNED_VARIABLE = "INDUCTOR_FIX_DISABLE_WARNED"

log = logging.getLogger("inductor_fix")


def disabled_patches(names: Sequence[str] | None = None, environ: Any = None) -> tuple[frozenset[str], list[str]]:
    """``(the patch names INDUCTOR_FIX_DISABLE turns off, the unknown names it holds)``.

    An on word (``1``, ``true``, ``yes``, ``on``) or ``all``, also inside a list: every
    patch. A comma-separated list of patch names, in any case, each also as its folder spells
    it (``_`` for ``-``): those, and unknown names in it (a misspelling) are
    returned for the caller to warn about. Empty or an off word (``0``, ``false``, ``no``,
    ``off``): none. ``names`` defaults to the patch table's.
    """
    environ = os.environ if environ is None else environ
    known = {patch.name for patch in PATCHES} if names is None else set(names)
    value = environ.get(DISABLE_VARIABLE, "").strip().lower()
    if value in ("",) + startup.OFF:
        return frozenset(), []
    requested = {part.strip() for part in value.split(",")} - {""} - set(startup.OFF)
    if requested & {*startup.ON, "all"}:  # "1,<a name>": the 1 wins, as a reader of it would expect
        return frozenset(known), []
    spelled = {name.replace("_", "-"): name for name in known}  # the folder's spelling names the patch too
    named = {spelled[part.replace("_", "-")] for part in requested if part.replace("_", "-") in spelled}
    return frozenset(named), sorted(part for part in requested if part.replace("_", "-") not in spelled)


def unknown_names_message(unknown: list[str], names: Sequence[str]) -> str:
    disabled = sorted(disabled_patches(names)[0])
    # Only where it names one: "the known names still apply" beside a value that holds none read
    # as if something were disabled.
    applies = f"{', '.join(disabled)} still disabled" if disabled else "no patch is disabled"
    return (f"inductor_fix: {DISABLE_VARIABLE}={os.environ.get(DISABLE_VARIABLE, '')!r} names unknown patch(es) "
            f"{', '.join(unknown)}: ignored ({applies}); use 1 (all) or names from {', '.join(sorted(names))}")


def _torch_version() -> str | None:
    from ._installed import torch_version

    return torch_version()


@dataclasses.dataclass
class Record:
    """One patch in this process: its ``fix`` (None where it cannot be loaded: ``broken`` says
    why, and the patch stays ``unsupported``), its ``state`` and one-line ``reason``; ``asked``:
    asked for by ``apply()`` and not taken back by ``remove()``; ``disabled``:
    ``INDUCTOR_FIX_DISABLE`` names it; ``decided_for``: per module, the ids of the classes of the
    last decision (a decision is made once per class object, and again after a reload of the
    module makes new ones)."""

    patch: Patch
    fix: Fix | None = None
    broken: str = ""
    state: State = State.REMOVED
    reason: str = "not applied"
    asked: bool = False
    disabled: bool = False
    decided_for: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    said_disabled: bool = False

    def set(self, state: State, reason: str) -> None:
        self.state, self.reason = state, reason

    @property
    def wanted(self) -> bool:
        """Whether the patch should be installed when its module loads."""
        return self.asked and not self.disabled


class Lifecycle:
    """The fix in this process: ``patches`` applied to each module of their targets when it loads."""

    def __init__(self, patches: Sequence[Patch]) -> None:
        self._lock = threading.RLock()
        self._undo = UndoStack()
        self._records = {patch.name: _record(patch) for patch in patches}
        #: Every module a patch targets, in table order (a patch whose fix cannot be loaded: none).
        self.modules = tuple(dict.fromkeys(module for record in self._records.values() if record.fix is not None
                                           for module in record.fix.modules))

    def _hook(self) -> None:
        for module in self.modules:
            startup.when_imported(module, self._on_import)

    def _unhook(self) -> None:
        for module in self.modules:
            startup.unregister(module, self._on_import)

    @property
    def patches(self) -> tuple[Patch, ...]:
        return tuple(record.patch for record in self._records.values())

    # --- applying ---------------------------------------------------------------------

    def _select(self, call: str, names: Sequence[str]) -> list[Record]:
        """The records ``names`` selects (none given: all); ValueError naming the unknown ones."""
        unknown = [name for name in names if name not in self._records]
        if unknown:
            raise ValueError(f"inductor_fix.{call}(): {', '.join(map(repr, unknown))} is no patch name; the patches "
                             f"are {', '.join(self._records)}")
        return [self._records[name] for name in names] if names else list(self._records.values())

    def apply(self, *names: str) -> Status:
        """Apply every patch this torch needs (or only the patches ``names``,
        besides those already applied), now or when Inductor's
        ``select_algorithm`` module (or another module a patch targets) is first imported (it
        is never imported here).

        Idempotent and thread-safe; returns :meth:`status`. Never raises for this torch: a
        patch that does not fit it is skipped with an
        :class:`~inductor_fix.InductorFixWarning`. Patches named by
        ``INDUCTOR_FIX_DISABLE`` (``1``: all) are not applied and say ``disabled``.
        Raises ValueError, changing nothing, if a name is not a patch of the table.
        """
        self.request(*names)
        return self.status()

    def request(self, *names: str) -> None:
        """:meth:`apply` without building the returned status (package metadata lookups
        that ``import inductor_fix`` need not pay for)."""
        selected = self._select("apply", names)
        with self._lock:
            disabled, unknown = disabled_patches(list(self._records))
            if unknown and os.environ.get(DISABLE_WARNED_VARIABLE) != os.environ.get(DISABLE_VARIABLE):
                warn_once(unknown_names_message(unknown, list(self._records)), origin=f"${DISABLE_VARIABLE}")
                os.environ[DISABLE_WARNED_VARIABLE] = os.environ.get(DISABLE_VARIABLE, "")  # children: once per job
            torch_missing = "torch" not in sys.modules and importlib.util.find_spec("torch") is None  # no metadata
            chosen = {record.patch.name for record in selected}
            for record in self._records.values():
                record.asked = record.asked or record.patch.name in chosen
                if record.fix is None:  # its fix cannot be loaded: it costs only itself
                    if record.asked and record.state != State.UNSUPPORTED:
                        record.set(State.UNSUPPORTED, record.broken)
                        warn_once(f"inductor_fix: {record.patch.name} patch not applied: {record.broken}")
                    continue
                was_disabled, record.disabled = record.disabled, record.patch.name in disabled
                if record.disabled and record.state in (State.REMOVED, State.PENDING):
                    record.set(State.DISABLED, f"by {DISABLE_VARIABLE}={os.environ.get(DISABLE_VARIABLE)}")
                elif record.wanted and (record.state in (State.REMOVED, State.DISABLED) or was_disabled):
                    record.decided_for = {}  # only probed while disabled: decided when its module is seen
                    record.set(State.PENDING, _waiting(record.fix, torch_missing))
            if not any(record.asked for record in self._records.values()):
                return
        # A disabled patch is hooked too: where its module loads, whether this torch has its crash is
        # probed, which patches nothing. Outside the lock: it may wait for another thread's import,
        # whose hook takes the lock.
        self._hook()
        with self._lock:
            if not any(record.asked for record in self._records.values()):  # remove() ran meanwhile
                self._unhook()

    def _owners(self, fix: Fix, module: ModuleType) -> tuple[int, ...]:
        return tuple(id(getattr(module, split_target(target)[0], None)) for target in fix.targets_in(module.__name__))

    def _on_import(self, module: ModuleType) -> None:
        with self._lock:
            for record in self._records.values():
                fix = record.fix
                if not record.asked or fix is None or module.__name__ not in fix.modules:
                    continue
                if record.disabled:
                    if record.decided_for.get(module.__name__) != self._owners(fix, module):
                        record.decided_for[module.__name__] = self._owners(fix, module)
                        absent = _crash_absent(fix, module)
                        off = f"by {DISABLE_VARIABLE}={os.environ.get(DISABLE_VARIABLE)}"
                        if absent is None:
                            record.set(State.DISABLED, off)
                        else:  # off, and nothing to be off for: still protected
                            record.set(State.NOT_NEEDED, f"{off}, and this torch does not have the crash it fixes: "
                                                         f"{absent}")
                    if not record.said_disabled:  # said here, once torch's logging is set up
                        record.said_disabled = True
                        log.info("inductor_fix: %s %s: %s", record.patch.name, record.state, record.reason)
                    continue
                if record.decided_for.get(module.__name__) == self._owners(fix, module):
                    continue
                record.decided_for[module.__name__] = self._owners(fix, module)
                record.set(*self._decide_and_wrap(record.patch, fix, module))
                log.info("inductor_fix: %s %s: %s", record.patch.name, record.state, record.reason)
                _trace.artifact("inductor_fix_decision", {"patch": record.patch.name, "state": str(record.state),
                                                          "reason": record.reason,
                                                          "targets": list(fix.targets_in(module.__name__))})

    def _decide_and_wrap(self, patch: Patch, fix: Fix, module: ModuleType) -> tuple[State, str]:
        """Decide and, if right, wrap ``patch``'s targets in ``module`` (``fix``: its fix); never raises."""
        try:
            context = fix.decide(module)
            fingerprints.check(patch, module, _torch_version() or "")
            for target, factory in fix.targets_in(module.__name__).items():
                owner_name, attribute = split_target(target)

                def wrapper(original: Any, factory: Factory = factory) -> Any:
                    return factory(original, context)

                self._undo.wrap(getattr(module, owner_name), attribute, wrapper, patch.name)
            if fix.verify is not None:
                fix.verify(module)
        except NotNeeded as reason:
            return State.NOT_NEEDED, str(reason)
        except Exception as error:  # Unsupported, or anything unforeseen: never break Inductor.
            self._undo.restore_all({patch.name})
            why = str(error) if isinstance(error, Unsupported) else f"{type(error).__name__}: {error}"
            warn_once(f"inductor_fix: {patch.name} patch not applied: {why}", stacklevel=3)
            return State.UNSUPPORTED, why
        return State.APPLIED, patch.effect

    # --- removing ---------------------------------------------------------------------

    def remove(self, *names: str) -> Status:
        """Restore the exact original of everything ever wrapped (classes of an earlier
        import of Inductor's module included) and stop patching future imports; with
        ``names``, of those patches only.

        Where another library wrapped a target after this package (``mock.patch``, a
        ``wrapt`` wrapper), its wrapper is left in place and ours inside it passes every
        call through; the patch's reason and a log warning say so, and a later
        ``remove()`` restores the original once the slot holds ours again.
        Idempotent and thread-safe; returns :meth:`status` (state ``removed``; a patch
        that ``INDUCTOR_FIX_DISABLE`` turned off keeps saying ``disabled``, with its reason).
        Raises ValueError, changing nothing, if a name is not a patch of the table.
        """
        selected = self._select("remove", names)
        with self._lock:
            for record in selected:
                record.asked = False
            if not any(record.asked for record in self._records.values()):
                self._unhook()
            # Newest first: two patches may share a slot. One left under another patch's switch
            # passes calls through and is restored once that one is (so every patch now off
            # is tried again); one under another library's wrapper is said.
            off = {record.patch.name for record in self._records.values() if not record.asked}
            left_in_place = [entry for entry in self._undo.restore_all(off)
                             if not self._undo.under_ours(entry)]
            for record in selected:
                record.decided_for = {}
                left = [entry for entry in left_in_place if entry.patch == record.patch.name]
                if left:
                    targets = ", ".join(entry.target for entry in left)
                    reason = (f"inductor_fix.remove(): {targets} is wrapped by another library over inductor_fix's "
                              "wrapper; that wrapper was left in place and ours inside it passes every call through "
                              "(call remove() again once it is gone)")
                    log.warning("%s", reason)
                    record.set(State.REMOVED, reason)
                elif record.state == State.APPLIED:
                    record.set(State.REMOVED, "inductor_fix.remove() restored the originals")
                elif record.state not in (State.DISABLED, State.REMOVED) and not record.disabled:  # keep saying why
                    record.set(State.REMOVED, f"inductor_fix.remove(); it had wrapped nothing "
                               f"({record.state}: {record.reason})")
            return self.status()

    # --- asking -----------------------------------------------------------------------

    def status(self) -> Status:
        """What is patched now, and why (see :class:`~inductor_fix.status.Status`).

        Never imports torch or Inductor.
        """
        with self._lock:
            patches = tuple(PatchStatus(r.patch.name, _shown_targets(r.fix), r.state, r.reason,
                                        r.patch.activity.snapshot()["counts"], r.patch.protects)
                            for r in self._records.values())
        return Status.of(patches, _torch_version(), triton_version(), __version__,
                         tuple(startup.STARTUP.routes))

    def activity(self) -> dict[str, dict[str, Any]]:
        """What each patch did in this process: ``{patch name: {"counts": {kind: n},
        "details": [{"kind", "count", ...}, ...]}}`` (the first 20 details per patch). Each
        patch declares its kinds (``Patch.activity.kinds``: what one count means, and the
        line a detail reads as). Empty counts: the patch found nothing to do in this process.
        """
        return {record.patch.name: record.patch.activity.snapshot() for record in self._records.values()}

    def _member(self, target: str) -> tuple[Any, str]:
        if not isinstance(target, str):
            raise KeyError(f"{target!r} is not a target name such as 'TritonTemplate.generate'")
        module_name = target_module(target)
        for known in (t for record in self._records.values() if record.fix is not None for t in record.fix.targets):
            if target in (known, qualified_name(known)):  # the full dotted name of a target
                module_name, target = target_module(known), known
                break
        try:
            owner_name, attribute = split_target(target)
        except ValueError:
            raise KeyError(f"{target!r} is not a target name such as 'TritonTemplate.generate'") from None
        module = sys.modules.get(module_name)
        owner = getattr(module, owner_name, None) if module is not None else None
        if owner is None:
            raise KeyError(f"{module_name}.{owner_name} is not loaded")
        return owner, attribute

    def is_patched(self, target: str) -> bool:
        """Whether target ``"Class.attribute"`` (of ``torch._inductor.select_algorithm``, e.g.
        ``"TritonTemplate.generate"``; ``"module:Class.attribute"`` elsewhere), or its full dotted
        name, holds this package's active wrapper now. Never imports Inductor: False while it is
        not loaded, or for a name that is not a target."""
        try:
            owner, attribute = self._member(target)
        except KeyError:
            return False
        with self._lock:
            entry = self._undo.newest(owner, attribute)
            return entry is not None and entry.active and entry.in_slot()

    def original(self, target: str) -> Any:
        """The stock object (function or classmethod) that ``"Class.attribute"`` (or the full
        dotted name) had before this package wrapped it (where the class only inherited it:
        the inherited object). Raises KeyError if it is not wrapped now or is not a target name."""
        owner, attribute = self._member(target)
        with self._lock:
            newest, oldest = self._undo.newest(owner, attribute), self._undo.find(owner, attribute)
        if newest is None or oldest is None or not newest.active:
            raise KeyError(f"{target} is not patched")
        return oldest.inherited() if oldest.original is ABSENT else oldest.original

    @contextlib.contextmanager
    def applied(self, *names: str) -> Iterator[Status]:
        """Apply (every patch, or the patches ``names``) for the duration of a ``with``
        block; on exit, remove again those that were not applied before the block.
        ValueError for a name that is not a patch, before anything changes."""
        selected = self._select("applied", names)
        with self._lock:
            added = [record.patch.name for record in selected if not record.asked]
        try:
            yield self.apply(*names)
        finally:
            if added:
                self.remove(*added)

    @contextlib.contextmanager
    def removed(self, *names: str) -> Iterator[Status]:
        """Run a ``with`` block on stock Inductor, or without the patches ``names``
        (a patch's name: the others stay; the negative control in tests);
        on exit, re-apply those that were applied before the block. ValueError for a name
        that is not a patch, before anything changes."""
        selected = self._select("removed", names)
        with self._lock:
            before = [record.patch.name for record in selected if record.asked]
        try:
            yield self.remove(*names)
        finally:
            if before:
                self.apply(*before)


def _record(patch: Patch) -> Record:
    """``patch``'s record, with its fix loaded; a fix that cannot be loaded leaves it without one,
    and why (never raises: one broken patch costs only itself)."""
    try:
        return Record(patch, fix_of(patch))
    except FixError as error:
        return Record(patch, None, f"its fix cannot be loaded: {error}")


def _crash_absent(fix: Fix, module: ModuleType) -> str | None:
    """Why stock ``module`` lacks the crash ``fix`` fixes (its ``lacks_crash`` probe, else its
    ``decide``: NotNeeded is the reason), or None where it has it or that cannot be told. Patches
    nothing; never raises."""
    try:
        if fix.lacks_crash is not None:
            return fix.lacks_crash(module)
        fix.decide(module)
    except NotNeeded as reason:
        return str(reason)
    except Exception:  # cannot tell: the patch stays disabled, the process unprotected
        return None
    return None


def _waiting(fix: Fix, torch_missing: bool) -> str:
    modules = " or ".join(fix.modules)
    return f"{'torch is not installed; ' if torch_missing else ''}waiting for {modules} to be imported"


def _shown_targets(fix: Fix | None) -> tuple[str, ...]:
    """A fix's targets as status shows them, full dotted names: those of the modules loaded in
    this process, where one is (a patch may name the module each release keeps its target in); else
    all. None where the fix cannot be loaded."""
    if fix is None:
        return ()
    loaded = [module for module in fix.modules if module in sys.modules]
    shown = loaded if loaded else fix.modules
    return tuple(qualified_name(t) for t in fix.targets if target_module(t) in shown)


#: The fix of this process.
LIFECYCLE = Lifecycle(PATCHES)
