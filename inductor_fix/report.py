"""The job report's reader: did the fix act anywhere in a job, and may it be removed?

:func:`read` and :func:`summarize` (``inductor-fix report FILE``) fold the lines that every
process of a job appended (:mod:`inductor_fix._report_writer`, ``INDUCTOR_FIX_REPORT``) into
one answer, ``needed`` (True, False, or None when nothing could be judged), what happened
where, and advice (a process that died of a patch's stock crash, ``Patch.crash``, is told
so); :func:`format_summary` prints it, each patch's details in the lines its activity kinds
read as (the patch table's).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from . import patches as table
from ._report_writer import FORMAT, VARIABLE
from ._installed import please_report
from .status import PROTECTED_STATES, State

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .patches.patch import Patch

__all__ = ["EXIT_STATUS", "FORMAT", "VARIABLE", "ReportError", "Summary", "format_summary", "read", "summarize"]

#: ``inductor-fix report`` exit status -> meaning, as ``--help`` and README say it.
EXIT_STATUS = {
    0: "a verdict: needed: yes or needed: no",
    1: "needed: unknown (no process loaded Inductor or benchmarked an autotuning choice, the fix was off in every "
       "process, or a line could not be read)",
    2: "the file cannot be read (missing, not a file, not readable), is not a job report, or bad arguments",
}


class ReportError(Exception):
    """The report file cannot be read at all; the message says why."""


def read(path: str) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """The usable lines of ``path`` and one :class:`Skipped` per kind of line skipped (torn or
    garbled, another layout). Raises :class:`ReportError` if the file cannot be read or
    is not a regular file (a FIFO would block the reader)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            kind = "a directory" if os.path.isdir(path) else "not a regular file"
            raise ReportError(f"{path} is {kind}, not a report file")
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ReportError(f"no such file: {path} (did the job run with inductor-fix run --report {path}, "
                          f"or {VARIABLE}={path}?)") from None
    except OSError as error:
        raise ReportError(f"cannot read {path}: {error.strerror or error}") from None
    import json

    usable, garbled, ours = [], 0, 0
    other: dict[str, int] = {}
    for raw in text.splitlines():
        if not raw.strip():
            continue
        ours += raw.startswith('{"format":')  # how a line this package writes starts, torn or whole
        try:
            entry = json.loads(raw)
        except ValueError:
            garbled += 1
            continue
        if isinstance(entry, dict) and type(entry.get("format")) is int and entry["format"] != FORMAT:
            key = f"layout {entry['format']} (inductor_fix {entry.get('inductor_fix', '?')})"
            other[key] = other.get(key, 0) + 1
        elif _well_formed(entry):
            usable.append(entry)
        else:
            garbled += 1
    if garbled and not (usable or other or ours):
        raise ReportError(f"{path} is not a job report: none of its {garbled} line(s) is one that inductor_fix "
                          f"writes (a JSON object starting with {{\"format\":)")
    skipped = [Skipped(garbled, "torn or garbled line(s)")] if garbled else []
    skipped += [Skipped(count, f"line(s) of report {key}; this inductor_fix reads layout {FORMAT}")
                for key, count in other.items()]
    return usable, skipped


class Skipped(NamedTuple):
    """Lines :func:`read` could not use: how many, and why; ``str()`` is the note printed."""

    lines: int
    why: str

    def __str__(self) -> str:
        return f"skipped {self.lines} {self.why}"


def _well_formed(entry: Any) -> bool:
    """Whether ``entry`` has the shape of a layout-:data:`FORMAT` line, all that the summary reads."""
    def counts_ok(counts: Any) -> bool:
        return isinstance(counts, dict) and all(type(v) is int for v in counts.values())

    def patch_ok(patch: Any) -> bool:
        return (isinstance(patch, dict) and isinstance(patch.get("name"), str) and isinstance(patch.get("state"), str)
                and counts_ok(patch.get("counts", {}))
                and isinstance(patch.get("details", []), list)
                and all(isinstance(d, dict) for d in patch.get("details", [])))

    return (isinstance(entry, dict) and type(entry.get("format")) is int and entry["format"] == FORMAT
            and isinstance(entry.get("patches"), list) and all(patch_ok(p) for p in entry["patches"])
            and type(entry.get("benchmarks", 0)) is int)


class Summary(dict[str, Any]):
    """The folded report, JSON-able: ``needed`` (True/False/None), ``processes``,
    ``patches`` {name: {states, processes_acted, counts, where}}, ``lines_unread`` (the lines
    :func:`read` skipped, counted in ``notes``), ``advice``, ``notes``."""


def _known(patch: str) -> Patch | None:
    """The patch of the table called ``patch``; None for one this version does not have."""
    try:
        return table.by_name(patch)
    except KeyError:
        return None


def _needed(patch: str, kind: str) -> bool:
    """Whether a count of ``kind`` shows that ``patch`` was needed (its :class:`Kind`; a kind this
    version does not know counts, as it did when it was written)."""
    known = _known(patch)
    declared = known.activity.kinds.get(kind) if known is not None else None
    return declared.needed if declared is not None else True


def _protects(patch: str) -> bool:
    """Whether ``patch`` guards against a crash, so that its being off leaves a job unjudged
    (``Patch.protects``; a patch this version does not have counts, as it did when written)."""
    known = _known(patch)
    return known.protects if known is not None else True


def _fix_on(entry: dict[str, Any]) -> bool:
    """Whether the fix was on in a process: a patch that guards against a crash was applied there,
    or every such patch left it protected. Not one whose only protecting patch is ``not-needed``
    while the others are off: ``INDUCTOR_FIX_DISABLE=1`` on a torch that lacks one patch's crash
    (2.15.0's cache key) makes that patch ``not-needed``, and the fix was still off."""
    guarding = [p["state"] for p in entry["patches"] if _protects(p["name"])]
    return State.APPLIED in guarding or bool(guarding) and all(state in PROTECTED_STATES for state in guarding)


def _where(entry: dict[str, Any]) -> str:
    rank = f"rank {entry['rank']}" if "rank" in entry else "no rank"
    host = f" on {entry['host']}" if entry.get("host") else ""
    return f"{rank}, pid {entry.get('pid')}{host}"


def summarize(entries: list[dict[str, Any]], skipped: Iterable[Skipped] = (), notes: Iterable[str] = ()) -> Summary:
    """Fold the lines of a job into a :class:`Summary`; ``skipped``: what :func:`read` could not
    use (a line it skipped makes a ``needed: no`` unknown); ``notes``: more to say under it."""
    skipped = list(skipped)
    notes = [str(note) for note in skipped] + list(notes)
    patches: dict[str, dict[str, Any]] = {}
    for entry in entries:
        for patch in entry["patches"]:
            info = patches.setdefault(patch["name"], {"states": {}, "processes_acted": 0, "counts": {}, "where": []})
            info["states"][patch["state"]] = info["states"].get(patch["state"], 0) + 1
            counts = {k: v for k, v in (patch.get("counts") or {}).items() if v}
            # Acted: did what shows it was needed (a kind that only saves the fix's own cost does not).
            info["processes_acted"] += any(_needed(patch["name"], kind) for kind in counts)
            for kind, value in counts.items():
                info["counts"][kind] = info["counts"].get(kind, 0) + value
            if counts and len(info["where"]) < 5:
                info["where"].append({"process": _where(entry), "counts": counts,
                                      "details": (patch.get("details") or [])[:3]})
    on = [e for e in entries if _fix_on(e)]
    acted = any(info["processes_acted"] for info in patches.values())
    benchmarks = sum(e.get("benchmarks", 0) for e in entries)
    # "Not needed" is a claim about every patch: a process that benchmarked choices with a
    # patch off (disabled, removed, unsupported) cannot tell what that patch would have done; one
    # that only saves cost would have prevented nothing.
    blind = [e for e in entries if e.get("benchmarks", 0)
             and not all(p["state"] in PROTECTED_STATES for p in e["patches"] if _protects(p["name"]))]
    # Nothing acted where nothing was benchmarked (every compile served from Inductor's caches):
    # that says nothing about a cold compile. Nor does a process that died of an exception raised
    # in a compile: it may have died before the compile that would have needed the fix.
    died = [e for e in entries if _died_in_compile(e)]
    # Nor does a line that could not be read (torn by a process killed while writing it, a full
    # disk; another layout): the process that wrote it may be the one that needed the fix. Only
    # a yes stands whatever such a line held.
    unread = sum(note.lines for note in skipped)
    needed = True if acted else (None if blind or died or unread or not benchmarks else False)
    torches = sorted({str(e.get("torch")) for e in entries})
    summary = Summary(needed=needed, processes=len(entries), processes_with_fix_on=len(on), benchmarks=benchmarks,
                      torch=torches,
                      inductor_fix=sorted({str(e.get("inductor_fix")) for e in entries}), patches=patches,
                      died_in_compile=[_died(e) for e in died[:5]],
                      notes=list(notes))
    summary["processes_died_in_compile"] = len(died)
    summary["lines_unread"] = unread
    summary["advice"] = _advice(summary, entries, blind)
    return summary


def _died(entry: dict[str, Any]) -> dict[str, Any]:
    """What a process that died in a compile died of: its ``exit_error``, and where that error is
    the stock crash of a patch of the table (``Patch.crash``), that patch (``kind``) and its state
    in the process (``kind_state``)."""
    died = {"process": _where(entry), **entry["exit_error"]}
    kind = table.by_crash(died["error"])
    if kind is not None:
        states = {p.get("name"): p.get("state") for p in entry["patches"]}
        died.update(kind=kind.name, kind_state=states.get(kind.name))
    return died


def _died_in_compile(entry: dict[str, Any]) -> bool:
    error = entry.get("exit_error")
    return isinstance(error, dict) and error.get("in_compile") is True and isinstance(error.get("error"), str)


def _died_advice(summary: Summary) -> str:
    first = summary["died_in_compile"][0]
    raised_in = first.get("raised_in") if isinstance(first.get("raised_in"), str) else None
    where = f", raised in {raised_in}" if raised_in else ""
    died = (f"{summary['processes_died_in_compile']} process(es) died of an exception raised in a compile "
            f"({first['process']}: {first['error']}{where})")
    kind = _known(first["kind"]) if isinstance(first.get("kind"), str) else None
    if kind is not None and first.get("kind_state") in PROTECTED_STATES:
        return (f"{died}: that is how the crash {kind.name} fixes ends ({kind.upstream}), yet {kind.name} was "
                f"{first['kind_state']} in that process: {please_report('this report and inductor-fix status --json')}")
    if kind is not None:
        return (f"{died}: that is the crash inductor_fix fixes ({kind.name}: {kind.upstream}); run the job with the "
                "fix on (INDUCTOR_FIX_DISABLE unset; inductor-fix status says whether it applies to this torch)")
    ours = raised_in is not None and raised_in.startswith("inductor_fix/")
    blame = ("" if ours or raised_in is None else
             "; that error is not inductor_fix's: a traceback that passes through inductor_fix/patches/ shows "
             "the call it passed on unchanged (INDUCTOR_FIX_DISABLE=1 gives the same error)")
    return (f"{died}{blame}; a compile that did not finish cannot show whether the fix is needed: fix that "
            "error, then run the job again")


def _advice(summary: Summary, entries: list[dict[str, Any]], blind: list[dict[str, Any]]) -> str:
    torch = ", ".join(summary["torch"]) or "?"
    if not entries and summary["lines_unread"]:
        return ("no line of the report could be used (see the notes: lines torn by a process killed while writing, "
                "or of another inductor_fix's layout): nothing to judge; run the job again")
    if not entries:
        return "no process of the job loaded Inductor: nothing to judge (was anything compiled?)"
    if summary["needed"] is None and summary["processes_died_in_compile"]:
        return _died_advice(summary)
    if summary["needed"] is None and summary["lines_unread"]:
        return (f"{summary['lines_unread']} line(s) of the report could not be read (see the notes: torn by a process "
                "killed while writing, a full disk, or another inductor_fix's layout), and the process(es) that "
                "wrote them may be the ones that needed the fix: the usable lines alone cannot say it is not "
                "needed; run the job again with a new report file")
    if summary["needed"] is None and not summary["processes_with_fix_on"]:
        off = sorted({str(e.get("disable")) for e in entries if e.get("disable")})
        why = f" (INDUCTOR_FIX_DISABLE={', '.join(off)})" if off else ""
        return (f"the fix was off in all {len(entries)} process(es){why}: nothing was recorded; run the job "
                "with it on to learn whether it is needed")
    if summary["needed"] is None and blind:
        off = sorted({f"{p['name']} ({p['state']})" for e in blind for p in e["patches"]
                      if p["state"] not in PROTECTED_STATES and _protects(p["name"])})
        return (f"{', '.join(off)} was off in {len(blind)} process(es) that benchmarked autotuning choices, and the "
                "patches that were on found nothing to do: whether the job needs the ones that were off is unknown; "
                "run it with them on (INDUCTOR_FIX_DISABLE unset; for unsupported, see inductor-fix status)")
    if summary["needed"] is None:
        return ("no process benchmarked an autotuning choice (nothing was compiled with max-autotune, or every "
                "compile came from Inductor's caches), so nothing could have crashed: run the job once with an empty "
                "TORCHINDUCTOR_CACHE_DIR to learn whether a cold compile needs the fix")
    if summary["needed"]:
        return (f"keep inductor_fix on torch {torch}: without it these processes would have crashed or replayed "
                f"a kernel built for other inputs; {_until(summary)}")
    states = {state for info in summary["patches"].values() for state in info["states"]}
    remove = ("remove it: python -m pip uninstall inductor-fix, and drop `import inductor_fix` or the "
              "`inductor-fix run --` prefix")
    # A patch that only saved cost is no reason to keep the fix, but removing it pays that cost back.
    saved = [f"{name} ({', '.join(f'{kind} {count}' for kind, count in info['counts'].items())})"
             for name, info in summary["patches"].items() if info["counts"] and not info["processes_acted"]]
    cost = f"; without it these compiles would cost more: {', '.join(saved)}" if saved else ""
    if states <= {"not-needed"}:
        return f"torch {torch} has none of the bugs inductor_fix fixes: {remove}{cost}"
    return (f"in these {summary['processes_with_fix_on']} process(es) on torch {torch} no patch found anything to "
            f"do: you can {remove} (keep it if other jobs compile other models with max-autotune){cost}")


def _until(summary: Summary) -> str:
    """Until when the patches that acted are needed: each one's ``Patch.delete_when``."""
    acted = [p for p in table.PATCHES if summary["patches"].get(p.name, {}).get("processes_acted")]
    return "; ".join(f"{p.name} is needed until {p.delete_when}" for p in acted)


def format_summary(summary: Summary, width: int = 100) -> str:
    """The one-screen text ``inductor-fix report`` prints; first line ``needed: yes|no|unknown``."""
    import textwrap

    needed = {True: "yes", False: "no", None: "unknown"}[summary["needed"]]
    lines = [f"needed: {needed}",
             f"{summary['processes']} process(es) "
             + ("with a usable line" if summary["lines_unread"] else "loaded Inductor")
             + f" ({summary['processes_with_fix_on']} with the fix on, "
             f"{summary['benchmarks']} autotuning benchmark(s)"
             + (f", {summary['processes_died_in_compile']} died in a compile" if summary["processes_died_in_compile"]
                else "")
             + f"); torch {', '.join(summary['torch']) or '-'}; "
             f"inductor_fix {', '.join(summary['inductor_fix']) or '-'}"]
    for name, info in summary["patches"].items():
        states = ", ".join(f"{state} in {count}" for state, count in info["states"].items())
        did = ", ".join(f"{kind} {count}" for kind, count in info["counts"].items())
        text = f"{name}: {states}; " + (f"acted in {info['processes_acted']} process(es): {did}"
                                         if did and info["processes_acted"] else
                                         f"nothing it fixes; saved cost: {did}" if did else
                                         "found nothing to do")
        lines += textwrap.wrap(text, width, subsequent_indent="    ", break_on_hyphens=False)
        for where in info["where"]:
            detail = "; ".join(_detail(name, d) for d in where["details"])
            lines += textwrap.wrap(f"  {where['process']}: {detail or where['counts']}", width,
                                   subsequent_indent="    ", break_on_hyphens=False)
    lines += [f"note: {note}" for note in summary["notes"]]
    lines += textwrap.wrap(f"advice: {summary['advice']}", width, subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(lines)


def _detail(patch: str, detail: dict[str, Any]) -> str:
    """The line ``detail`` reads as: its patch's activity kind's (a patch this version does
    not have, or a kind it does not declare: the kind's name)."""
    known = _known(patch)
    return known.activity.line(detail) if known is not None else str(detail.get("kind"))
