"""What ``inductor_fix`` did to the running Inductor, as data.

``inductor_fix.status()`` returns a :class:`Status`. It is plain frozen data, so
it can be logged, compared in tests, or printed as JSON by
``python -m inductor_fix status --json``.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Sequence

__all__ = ["PROTECTED_STATES", "PatchStatus", "State", "Status"]


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


#: The states in which a patch, or the package as a whole, leaves this torch protected
#: (``status --require protected``). Members equal their strings: ``"applied" in`` works.
PROTECTED_STATES = (State.APPLIED, State.NOT_NEEDED)

@dataclasses.dataclass(frozen=True)
class PatchStatus:
    """One patch: ``name`` (a patch of ``inductor_fix.patches.PATCHES``), the ``targets`` it
    wraps (full dotted names; of the modules this torch has), its ``state``, and a one-line
    ``reason``."""

    name: str
    targets: tuple[str, ...]
    state: State
    reason: str
    #: What it did in this process: kind -> count (``inductor_fix.activity()`` has the details).
    activity: dict[str, int] = dataclasses.field(default_factory=dict)
    #: False for a patch that only saves cost (``Patch.protects``): its state leaves ``protected`` as it is.
    protects: bool = True


@dataclasses.dataclass(frozen=True)
class Status:
    """The package as a whole.

    ``state`` is the overall answer, from the patches' states, first rule that holds:
    ``pending`` if any patch waits for Inductor; ``unsupported`` if any patch did not
    fit this torch; ``disabled`` if any patch is disabled; ``removed`` if any was
    removed; ``applied`` if any is applied (the others not needed); else
    ``not-needed``. A patch that only saves cost (``protects`` False) counts for ``pending``
    and ``applied`` only: off or unsupported, it costs autotuning, never a crash.
    ``protected`` answers "is this torch protected?": True when the
    state is ``applied`` or ``not-needed``, None while ``pending``, else False;
    ``reason`` says why in one line. ``patches`` lists every patch.
    ``torch_version`` is ``torch.__version__`` (``"2.14.1+cu130"``), read from the installed
    ``torch/version.py`` while torch is not imported (the same string either way);
    ``triton_version`` the installed triton's (``triton.__version__``, read the same way). Both
    are None when not installed.
    ``inductor_fix_version`` is this package's version. ``activated_by`` says how the
    package was activated in this process, first first: ``"autoload"`` (installed: torch's
    ``torch.backends`` entry point, at ``import torch``), ``"import"`` (``import
    inductor_fix``), ``"run"`` (``inductor-fix run``'s start-up hook), ``"cli"`` (an
    ``inductor-fix`` command itself); empty when none did (``remove()`` keeps the record).
    """

    state: State
    reason: str
    protected: bool | None
    torch_version: str | None
    triton_version: str | None
    patches: tuple[PatchStatus, ...]
    inductor_fix_version: str | None = None
    activated_by: tuple[str, ...] = ()
    #: ``reason`` without its verdict (``protected: ``, ``not protected: ``): what a reader that
    #: words the verdict itself (``status --require``, the CLI's headline) shows.
    detail: str = ""

    @classmethod
    def of(cls, patches: tuple[PatchStatus, ...], torch_version: str | None, triton_version: str | None,
           inductor_fix_version: str | None = None, activated_by: tuple[str, ...] = ()) -> Status:
        """The overall status of ``patches`` (rules in the class docstring)."""
        # A patch that only saves cost leaves the torch protected when it is off or does not fit.
        either = (State.PENDING, State.APPLIED)
        for state in (State.PENDING, State.UNSUPPORTED, State.DISABLED, State.REMOVED, State.APPLIED):
            named = [p for p in patches if p.state == state and (p.protects or state in either)]
            if named:
                break
        else:
            state, named = State.NOT_NEEDED, list(patches)
        protected = None if state == State.PENDING else state in PROTECTED_STATES
        if state == State.PENDING and torch_version is None:
            detail = "torch is not installed in this environment: nothing to patch until it is"
        elif state == State.APPLIED:
            detail = "; ".join(f"{p.name} {p.state}" for p in patches)
        elif state == State.NOT_NEEDED:
            detail = "this torch has none of the bugs the patches fix"
        else:
            which = "" if len(named) == len(patches) else f"{', '.join(p.name for p in named)} {state}: "
            detail = f"{which}{named[0].reason}"
        verdict = {True: "protected: ", False: "not protected: ", None: ""}[protected]
        return cls(state, verdict + detail, protected, torch_version, triton_version, patches, inductor_fix_version,
                   tuple(activated_by), detail)

    def patch(self, name: str) -> PatchStatus:
        """The :class:`PatchStatus` called ``name``; KeyError if there is none."""
        for patch in self.patches:
            if patch.name == name:
                return patch
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        import json

        data: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(self), default=str))
        return data

    def format(self, width: int = 100, after_headline: Sequence[str] = ()) -> str:
        """Human-readable summary, as printed by ``inductor-fix status``: lines of at most
        ``width`` columns, targets named relative to ``torch._inductor``; ``after_headline``: lines
        a caller puts right under the headline (the CLI's autoload line)."""
        import textwrap

        module = "torch._inductor."
        lines = _wrap_items(f"inductor_fix: {self.state} - {self.reason}", width, "  ")
        lines += after_headline
        lines.append(f"  inductor_fix {self.inductor_fix_version}, torch {self.torch_version or 'not installed'}, "
                     f"triton {self.triton_version or 'not installed'}; targets in {module[:-1]}")
        lines += textwrap.wrap(f"activated by: {', '.join(self.activated_by) or 'nothing'}", width,
                               initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        indent = " " * 32
        for patch in self.patches:
            targets = [target.removeprefix(module) for target in patch.targets] or ["-"]
            lines.append(f"  {patch.name:<17} {str(patch.state):<11} {targets[0]}")
            lines += [indent + target for target in targets[1:]]
            lines += textwrap.wrap(patch.reason, width, initial_indent=indent, subsequent_indent=indent,
                                   break_on_hyphens=False)
            if any(patch.activity.values()):
                did = ", ".join(f"{kind} {count}" for kind, count in patch.activity.items() if count)
                lines += textwrap.wrap(f"did in this process: {did}", width, initial_indent=indent,
                                       subsequent_indent=indent)
        return "\n".join(lines)


def _wrap_items(text: str, width: int, indent: str) -> list[str]:
    """``text``, a list of items joined by ``"; "`` (the headline's ``<patch> <state>`` of each
    patch), in lines of at most ``width`` columns broken between items, the later
    lines indented by ``indent``; an item longer than a line is broken at its spaces."""
    import textwrap

    lines: list[str] = []
    items = text.split("; ")
    for number, item in enumerate(items, 1):
        # An item that another follows may end its line, then with the ";" it keeps.
        reserve = 0 if number == len(items) else len(";")
        if lines and len(lines[-1]) + len("; ") + len(item) + reserve <= width:
            lines[-1] += f"; {item}"
            continue
        if lines:
            lines[-1] += ";"
        lines += textwrap.wrap(item, width - 1, initial_indent=indent if lines else "", subsequent_indent=indent,
                               break_on_hyphens=False)
    return lines
