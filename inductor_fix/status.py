"""What ``inductor_fix`` did to the running Inductor, as data.

``inductor_fix.status()`` returns a :class:`Status`. It is plain frozen data, so
it can be logged, compared in tests, or printed as JSON by
``python -m inductor_fix status --json``.
"""

from __future__ import annotations

import dataclasses
import enum
import json

__all__ = ["PatchStatus", "State", "Status"]


class State(str, enum.Enum):
    """Lifecycle of one patch (and of the package as a whole)."""

    #: Installed and waiting: ``torch._inductor.select_algorithm`` is not imported yet.
    PENDING = "pending"
    #: The wrapper is installed on the live Inductor class.
    APPLIED = "applied"
    #: This torch does not have the bug (no codegen cache, or its key already
    #: separates aliasing patterns); nothing was patched.
    NOT_NEEDED = "not-needed"
    #: Inductor's internals are not what this package recognises; nothing was
    #: patched and an :class:`~inductor_fix.InductorFixWarning` said why.
    UNSUPPORTED = "unsupported"
    #: Turned off by ``INDUCTOR_FIX_DISABLE``.
    DISABLED = "disabled"
    #: ``inductor_fix.remove()`` restored the originals.
    REMOVED = "removed"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class PatchStatus:
    """One patch: ``name`` (``"cache-key"`` or ``"arity-guard"``), the dotted
    ``target`` it wraps, its ``state``, and a one-line ``reason``."""

    name: str
    target: str
    state: State
    reason: str


@dataclasses.dataclass(frozen=True)
class Status:
    """The package as a whole.

    ``state`` and ``reason`` are those of the ``cache-key`` patch, the fix for
    pytorch/pytorch#188069; ``patches`` lists every patch. ``torch_version`` is
    ``torch.__version__`` once torch is imported (``"2.14.1+cu130"``), else the
    installed distribution's version (``"2.14.1"``); ``triton_version`` the
    installed distribution's. Both are None when not installed.
    """

    state: State
    reason: str
    torch_version: str | None
    triton_version: str | None
    patches: tuple[PatchStatus, ...]

    def patch(self, name: str) -> PatchStatus:
        """The :class:`PatchStatus` called ``name``; KeyError if there is none."""
        for patch in self.patches:
            if patch.name == name:
                return patch
        raise KeyError(name)

    def to_dict(self) -> dict:
        return json.loads(json.dumps(dataclasses.asdict(self), default=str))

    def format(self) -> str:
        """Human-readable multi-line summary, as printed by ``python -m inductor_fix status``."""
        lines = [
            f"inductor_fix: {self.state} - {self.reason}",
            f"  torch {self.torch_version or 'not installed'}, triton {self.triton_version or 'not installed'}",
        ]
        for patch in self.patches:
            lines.append(f"  {patch.name:<12} {str(patch.state):<12} {patch.target}")
            lines.append(f"  {'':<12} {'':<12} {patch.reason}")
        return "\n".join(lines)
