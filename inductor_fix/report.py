"""The job report's reader: did the fix act anywhere in a job, and may it be removed?

:func:`read` and :func:`summarize` (``inductor-fix report FILE``) fold the lines that every
process of a job appended (:mod:`inductor_fix._report_writer`, ``INDUCTOR_FIX_REPORT``) into
one answer, ``needed`` (True, False, or None when nothing could be judged), what happened
where, and advice; :func:`format_summary` prints it, each patch's details in the lines its
activity kinds read as (the patch table's).

A process that died in a compile is told what it died of (:func:`attribute`): of the stock crash
of a patch that was off there ("turn it on"), of one whose patch was applied (the fix did not
hold: "please report it"), of an error the package raised itself where it stopped a crash
(``Crash.raises``), or of an error no patch explains. Patches whose crashes end alike (a launch of
the wrong arity) are told apart by where the error was raised (``Crash.selections``,
``Crash.choices``, against the selection and choice the line records), or said to be
ambiguous. A process interrupted by Ctrl-C is said so, not read as a crash; compiles served from
Inductor's FX graph cache are told apart from autotuning that ran.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from . import patches as table
from ._installed import please_report
from ._report_writer import FORMAT, READS, VARIABLE
from ._version import __version__
from .status import PROTECTED_STATES, State

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .patches.patch import Patch

__all__ = ["EXIT_STATUS", "FORMAT", "READS", "VARIABLE", "Attribution", "ReportError", "Summary", "attribute",
           "format_summary", "read", "summarize"]

#: ``inductor-fix report`` exit status -> meaning, as ``--help`` and README say it.
EXIT_STATUS = {
    0: "a verdict: needed: yes or needed: no",
    1: "needed: unknown (no process loaded Inductor or benchmarked an autotuning choice, the fix was off in every "
       "process, a process died or was interrupted in a compile, or a line could not be read)",
    2: "the file cannot be read (missing, not a file, not readable), is not a job report, or bad arguments",
}


class ReportError(Exception):
    """The report file cannot be read at all; the message says why."""


def read(path: str) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """The usable lines of ``path`` (of the formats :data:`READS`) and one :class:`Skipped` per
    kind of line skipped (torn or garbled; each format this version cannot read). Raises
    :class:`ReportError` if the file cannot be read or is not a regular file (a FIFO would
    block the reader)."""
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
    other: dict[tuple[int, str], int] = {}
    for raw in text.splitlines():
        if not raw.strip():
            continue
        ours += raw.startswith('{"format":')  # how a line this package writes starts, torn or whole
        try:
            entry = json.loads(raw)
        except ValueError:
            garbled += 1
            continue
        if isinstance(entry, dict) and type(entry.get("format")) is int and entry["format"] not in READS:
            key = (entry["format"], str(entry.get("inductor_fix", "?")))
            other[key] = other.get(key, 0) + 1
        elif _well_formed(entry):
            usable.append(entry)
        else:
            garbled += 1
    if garbled and not (usable or other or ours):
        raise ReportError(f"{path} is not a job report: none of its {garbled} line(s) is one that inductor_fix "
                          f"writes (a JSON object starting with {{\"format\":)")
    skipped = [Skipped(garbled, "torn or garbled line(s)")] if garbled else []
    skipped += [Skipped(count, f"line(s) of format {number}, written by inductor_fix {version}, which this "
                        f"inductor_fix ({__version__}) cannot read: it reads format(s) {', '.join(map(str, READS))}",
                        number, version)
                for (number, version), count in other.items()]
    return usable, skipped


class Skipped(NamedTuple):
    """Lines :func:`read` could not use: how many, and why; ``str()`` is the note printed.
    ``format``, ``writer``: for lines of a format this version cannot read, that format and the
    version of inductor_fix that wrote them (None for torn or garbled lines)."""

    lines: int
    why: str
    format: int | None = None
    writer: str | None = None

    def __str__(self) -> str:
        return f"skipped {self.lines} {self.why}"


def _well_formed(entry: Any) -> bool:
    """Whether ``entry`` has the shape of a line of a format of :data:`READS`, all that the summary reads."""
    def counts_ok(counts: Any) -> bool:
        return isinstance(counts, dict) and all(type(v) is int for v in counts.values())

    def patch_ok(patch: Any) -> bool:
        return (isinstance(patch, dict) and isinstance(patch.get("name"), str) and isinstance(patch.get("state"), str)
                and counts_ok(patch.get("counts", {}))
                and isinstance(patch.get("details", []), list)
                and all(isinstance(d, dict) for d in patch.get("details", [])))

    return (isinstance(entry, dict) and type(entry.get("format")) is int and entry["format"] in READS
            and isinstance(entry.get("patches"), list) and all(patch_ok(p) for p in entry["patches"])
            and type(entry.get("benchmarks", 0)) is int and counts_ok(entry.get("fx_graph_cache", {}))
            and type(entry.get("template_choices", 0)) in (int, type(None)))


class Summary(dict[str, Any]):
    """The folded report, JSON-able: ``needed`` (True/False/None), ``processes``,
    ``benchmarks`` (autotuning rounds that ran; ``benchmarks_counted``: as Inductor counted them,
    a cached compile's counted again), ``cached_compiles`` (served whole from Inductor's FX
    graph cache), ``template_choices`` (Triton template choices made; None where a line does
    not say), ``patches`` {name: {states, processes_acted, counts, where}}, ``died_in_compile``
    (each with what it died of: ``finding``, ``patches``, ``stopped_by``), ``interrupted``,
    ``lines_unread`` (the lines :func:`read` skipped, counted in ``notes``), ``advice``, ``notes``."""


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


def _cache(entry: dict[str, Any]) -> dict[str, int]:
    """The line's FX graph cache counts (``hit``, ``miss``, ``bypass``); none in a format-1 line."""
    counts = entry.get("fx_graph_cache")
    return counts if isinstance(counts, dict) else {}


def _ran(entry: dict[str, Any]) -> int:
    """The autotuning rounds that ran in the process of ``entry``. Inductor counts again, for a
    compile its FX graph cache serves, the rounds of the compile that cached it: a process whose
    every compile was served so (hits, no miss or bypass) autotuned nothing."""
    cache = _cache(entry)
    if cache.get("hit") and not (cache.get("miss") or cache.get("bypass")):
        return 0
    return int(entry.get("benchmarks", 0))


def _ran_unsure(entry: dict[str, Any]) -> bool:
    """Whether :func:`_ran` may count a cached compile's rounds (the process compiled some graphs
    and was served others from the cache: Inductor's count does not say which were which)."""
    cache = _cache(entry)
    return bool(_ran(entry) and cache.get("hit"))


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
    benchmarks = sum(_ran(e) for e in entries)
    # "Not needed" is a claim about every patch: a process that benchmarked choices with a
    # patch off (disabled, removed, unsupported) cannot tell what that patch would have done; one
    # that only saves cost would have prevented nothing.
    blind = [e for e in entries if _ran(e)
             and not all(p["state"] in PROTECTED_STATES for p in e["patches"] if _protects(p["name"]))]
    # Nothing acted where nothing was benchmarked (every compile served from Inductor's caches):
    # that says nothing about a cold compile. Nor does a process that died of an exception raised
    # in a compile, or was interrupted in one: it may have stopped before the compile that would
    # have needed the fix.
    died = [e for e in entries if _died_in_compile(e)]
    interrupted = [e for e in entries if _interrupted(e)]
    stopped = [e for e in interrupted if e["exit_error"].get("in_compile") is True]
    # Nor does a line that could not be read (torn by a process killed while writing it, a full
    # disk; another format): the process that wrote it may be the one that needed the fix. Only
    # a yes stands whatever such a line held.
    unread = sum(note.lines for note in skipped)
    needed = True if acted else (None if blind or died or stopped or unread or not benchmarks else False)
    torches = sorted({str(e.get("torch")) for e in entries})
    choices = [c for e in entries if type(c := e.get("template_choices")) is int]
    summary = Summary(needed=needed, processes=len(entries), processes_with_fix_on=len(on), benchmarks=benchmarks,
                      benchmarks_counted=sum(int(e.get("benchmarks", 0)) for e in entries),
                      benchmarks_unsure=any(_ran_unsure(e) for e in entries),
                      cached_compiles=sum(_cache(e).get("hit", 0) for e in entries),
                      template_choices=sum(choices) if entries and len(choices) == len(entries) else None,
                      torch=torches,
                      inductor_fix=sorted({str(e.get("inductor_fix")) for e in entries}), patches=patches,
                      died_in_compile=[_died(e) for e in died[:5]],
                      interrupted=[{"process": _where(e), "in_compile": e["exit_error"].get("in_compile") is True}
                                   for e in interrupted[:5]],
                      notes=list(notes))
    summary["processes_died_in_compile"] = len(died)
    summary["processes_interrupted"] = len(interrupted)
    summary["processes_interrupted_in_compile"] = len(stopped)
    summary["lines_unread"] = unread
    summary["lines_of_other_formats"] = [{"lines": n.lines, "format": n.format, "writer": n.writer}
                                         for n in skipped if n.format is not None]
    summary["advice"] = _advice(summary, entries, blind)
    return summary


def _off(state: str | None) -> bool:
    """Whether a patch in ``state`` was off in a process: it could not have stopped its crash there."""
    return state is not None and state not in PROTECTED_STATES


class Attribution(NamedTuple):
    """What a process that died in a compile died of (:func:`attribute`). ``finding``:

    - ``"off"``: the stock crash of ``patches``, which were off there (several: the line cannot
      tell which of them; each would have stopped it);
    - ``"applied"``: the stock crash of ``patches``, which were applied there: the fix did not hold;
    - ``"own-error"``: an error ``stopped_by`` raised itself where it stopped a crash
      (``Crash.raises``); ``cause`` then says what explains the crash it stopped;
    - ``"package-fault"``: an error the code of ``stopped_by`` raised, not one it declares;
    - ``"unexplained"``: a crash of the kind inductor_fix fixes, but each patch that fixes it (in
      ``patches``) was not needed there (that torch lacks its crash) or not in that version;
    - ``"not-ours"``: no patch's crash looks like it.
    """

    finding: str
    patches: tuple[Patch, ...] = ()
    stopped_by: Patch | None = None
    cause: Attribution | None = None


def attribute(entry: dict[str, Any]) -> Attribution:
    """What the process of report line ``entry`` died of, from everything its line holds: the
    error (``exit_error``), where it was raised (the selection and choice, format 2), which patch's
    code raised it, and each patch's state there. Raises KeyError for a line without ``exit_error``."""
    error = entry["exit_error"]
    text = error.get("error") if isinstance(error.get("error"), str) else None
    states = {p.get("name"): p.get("state") for p in entry["patches"]}
    place = _place(error)
    own = next((p for p in table.PATCHES if p.crash.is_own(text)), None)
    if own is not None:
        # It left out the choices whose crash it stopped: only the selection says where.
        forms = set(own.crash.errors)
        kin = tuple(p for p in table.PATCHES if p is not own and forms & set(p.crash.errors))
        where = (place[0], None, None) if place is not None else None
        return Attribution("own-error", (own,), own, _suspects(kin, states, where))
    raiser = _known(error["raised_by"]) if isinstance(error.get("raised_by"), str) else None
    if raiser is not None:
        return Attribution("package-fault", (raiser,), raiser)
    return _suspects(tuple(p for p in table.PATCHES if p.crash.matches(text)), states, place)


def _place(error: dict[str, Any]) -> tuple[str | None, str | None, tuple[str, ...] | None] | None:
    """Where ``error`` was raised, as ``Crash.strikes_in`` reads it: (selection, the kind of the
    choice being built or benchmarked, the kinds of the selection's choices); None where the line
    does not say (format 1, or raised outside a selection)."""
    selection = error.get("selection")
    if not isinstance(selection, str):
        return None
    choice = error.get("choice")
    kind = None
    if isinstance(choice, dict) and isinstance(choice.get("name"), str) and isinstance(choice.get("type"), str):
        # A Triton template choice is named "triton_<template>_<index>" (TritonTemplate.generate).
        head, _, index = choice["name"].rpartition("_")
        kind = head if head.startswith("triton_") and index.isdigit() else choice["type"]
    listed = error.get("choices")
    choices = tuple(c for c in listed if isinstance(c, str)) if isinstance(listed, list) else None
    return selection, kind, choices


def _suspects(suspects: tuple[Patch, ...], states: dict[Any, Any],
              place: tuple[str | None, str | None, tuple[str, ...] | None] | None) -> Attribution:
    """Which of ``suspects`` (patches whose crash the error looks like) explain it: those that can
    strike where it was raised, in that process's torch (not ``not-needed``, which says that torch
    lacks the crash), those that name where they strike before the nets; then those that were off
    before those that were applied."""
    if not suspects:
        return Attribution("not-ours")
    fits = [p for p in suspects if place is None or p.crash.strikes_in(*place) is not False]
    live = [p for p in fits if states.get(p.name) is not None and states[p.name] != State.NOT_NEEDED]
    live = [p for p in live if p.crash.placed] or live
    off = tuple(p for p in live if _off(states[p.name]))
    if off:
        return Attribution("off", off)
    if live:
        return Attribution("applied", tuple(live))
    return Attribution("unexplained", tuple(fits))


def _died(entry: dict[str, Any]) -> dict[str, Any]:
    """What a process that died in a compile died of: its ``exit_error``, and :func:`attribute`'s
    answer: ``finding``, the ``patches`` it names (each with its ``state`` in the process and
    ``reason``), ``stopped_by`` (the patch that raised an error of its own) and ``cause`` (what
    explains the crash that patch stopped)."""
    states = {p.get("name"): (p.get("state"), p.get("reason")) for p in entry["patches"]}

    def named(found: Attribution) -> dict[str, Any]:
        return {"finding": found.finding,
                "patches": [{"name": p.name, "state": states.get(p.name, (None, None))[0],
                             "reason": states.get(p.name, (None, None))[1]} for p in found.patches],
                "stopped_by": found.stopped_by.name if found.stopped_by is not None else None}

    found = attribute(entry)
    return {"process": _where(entry), **entry["exit_error"], **named(found),
            "cause": named(found.cause) if found.cause is not None else None}


def _died_in_compile(entry: dict[str, Any]) -> bool:
    error = entry.get("exit_error")
    return (isinstance(error, dict) and error.get("in_compile") is True and isinstance(error.get("error"), str)
            and not _interrupted(entry))


def _interrupted(entry: dict[str, Any]) -> bool:
    """Whether the process of ``entry`` was interrupted (``KeyboardInterrupt``: Ctrl-C); a format-1
    line says it only in its error's type."""
    error = entry.get("exit_error")
    if not isinstance(error, dict):
        return False
    if "interrupted" in error:
        return error["interrupted"] is True
    return isinstance(error.get("error"), str) and error["error"].split(":")[0] == "KeyboardInterrupt"


#: What a report of a crash the fix did not explain or did not stop attaches.
_ATTACH = "this report and inductor-fix status --json"


def _names(patches: list[dict[str, Any]], states: bool = False) -> str:
    text = [f"{p['name']} ({p['state']})" if states else p["name"] for p in patches]
    return text[0] if len(text) == 1 else f"{', '.join(text[:-1])} and {text[-1]}"


def _turn_on(patches: list[dict[str, Any]], disable: str | None) -> str:
    """What to do about ``patches`` that were off in a process (``disable``: its INDUCTOR_FIX_DISABLE)."""
    cannot = [p for p in patches if p["state"] == State.UNSUPPORTED]
    if cannot:
        return (f"{_names(cannot)} could not apply to that torch ({cannot[0]['reason'] or 'unsupported'}): "
                "inductor-fix status says why, and README's troubleshooting gives a workaround")
    them = "it" if len(patches) == 1 else "them"
    how = (f"INDUCTOR_FIX_DISABLE={disable} turned {them} off: unset it" if disable else
           "inductor_fix.apply(), or no inductor_fix.remove(); inductor-fix status says whether it applies here")
    return f"turn {them} on ({how})"


def _explained(found: dict[str, Any], disable: str | None, stopped: bool = False) -> str:
    """What ``found`` (a :func:`_died` finding: ``off``, ``applied``, ``unexplained``) says of a
    crash: the one the process died of, or (``stopped``) the one a patch stopped with an error of
    its own."""
    patches = found["patches"]
    names = " or ".join(p["name"] for p in patches)
    upstream = "; ".join(patch.upstream for p in patches if (patch := _known(p["name"])) is not None)
    crash = (f"the crash it stopped is the one {names} fixes" if stopped else
             f"that is how the crash {names} fixes ends") + (f" ({upstream})" if upstream else "")
    if found["finding"] == "off" and len(patches) > 1:
        return (f"{crash}, and each was off in that process ({_names(patches, states=True)}); the line cannot tell "
                f"which of them would have stopped it: {_turn_on(patches, disable)}")
    if found["finding"] == "off" and patches[0]["state"] == State.UNSUPPORTED:
        return f"{crash}, and {_turn_on(patches, disable)}"
    if found["finding"] == "off":
        return f"{crash}, and {names} was {patches[0]['state']} in that process: {_turn_on(patches, disable)}"
    if found["finding"] == "applied":
        return (f"{crash}, yet {_names(patches)} {'was' if len(patches) == 1 else 'were'} applied in that process: "
                f"{please_report(_ATTACH)}")
    lacking = f" ({_names(patches, states=True)}: that torch does not have its crash)" if patches else ""
    return (f"{'the crash it stopped' if stopped else 'that'} is a crash of the kind inductor_fix fixes, which no "
            f"patch explains there{lacking}: {please_report(_ATTACH)}")


def _died_advice(summary: Summary, entries: list[dict[str, Any]]) -> str:
    first = summary["died_in_compile"][0]
    raised_in = first.get("raised_in") if isinstance(first.get("raised_in"), str) else None
    where = f", raised in {raised_in}" if raised_in else ""
    died = (f"{summary['processes_died_in_compile']} process(es) died of an exception raised in a compile "
            f"({first['process']}: {first['error']}{where})")
    disable = next((str(e["disable"]) for e in entries if _where(e) == first["process"] and e.get("disable")), None)
    if first["finding"] in ("off", "applied", "unexplained"):
        return f"{died}: {_explained(first, disable)}"
    if first["finding"] == "own-error":
        cause = first["cause"]
        stopped = (f"{died}: that is inductor_fix's own error, not a stock crash: {first['stopped_by']} raised it "
                   "where it stopped a crash")
        return f"{stopped}; {_explained(cause, disable, stopped=True)}"
    if first["finding"] == "package-fault":
        return (f"{died}: inductor_fix's {first['stopped_by']} raised it: "
                f"{please_report(_ATTACH)}; meanwhile "
                f"INDUCTOR_FIX_DISABLE={first['stopped_by']} runs without that patch")
    ours = raised_in is not None and raised_in.startswith("inductor_fix/")
    blame = ("" if ours or raised_in is None else
             "; that error is not inductor_fix's: a traceback that passes through inductor_fix/patches/ shows "
             "the call it passed on unchanged (INDUCTOR_FIX_DISABLE=1 gives the same error)")
    return (f"{died}{blame}; a compile that did not finish cannot show whether the fix is needed: fix that "
            "error, then run the job again")


def _advice(summary: Summary, entries: list[dict[str, Any]], blind: list[dict[str, Any]]) -> str:
    torch = ", ".join(summary["torch"]) or "?"
    other = summary["lines_of_other_formats"]
    if not entries and summary["lines_unread"]:
        return (f"no line of the report could be used (see the notes: {_unread(summary)}): nothing to judge; "
                + ("read the report with the inductor_fix that wrote it" if other and
                   sum(o["lines"] for o in other) == summary["lines_unread"] else "run the job again"))
    if not entries:
        return "no process of the job loaded Inductor: nothing to judge (was anything compiled?)"
    if summary["needed"] is None and summary["processes_died_in_compile"]:
        return _died_advice(summary, entries)
    if summary["needed"] is None and summary["processes_interrupted_in_compile"]:
        first = next(i for i in summary["interrupted"] if i["in_compile"])
        return (f"the job was interrupted (KeyboardInterrupt: Ctrl-C) during a compile in "
                f"{summary['processes_interrupted_in_compile']} process(es) ({first['process']}): a compile that did "
                "not finish cannot show whether the fix is needed; run the job to the end, with a new report file")
    if summary["needed"] is None and summary["lines_unread"]:
        return (f"{summary['lines_unread']} line(s) of the report could not be read (see the notes: "
                f"{_unread(summary)}), and the process(es) that wrote them may be the ones that needed the fix: the "
                "usable lines alone cannot say it is not needed; "
                + ("read the report with the inductor_fix that wrote them" if other and
                   sum(o["lines"] for o in other) == summary["lines_unread"] else
                   "run the job again with a new report file"))
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
    if summary["needed"] is None and summary["cached_compiles"] and not summary["benchmarks"]:
        return (f"every compile was served from Inductor's caches ({summary['cached_compiles']} from the FX graph "
                "cache): no autotuning ran, so nothing could have crashed, and what the compiles that filled the "
                "cache needed is not in this report: run the job once with an empty TORCHINDUCTOR_CACHE_DIR to learn "
                "whether a cold compile needs the fix")
    if summary["needed"] is None:
        return ("no process benchmarked an autotuning choice (nothing was compiled with max-autotune, or every "
                "compile came from Inductor's caches), so nothing could have crashed: run the job once with an empty "
                "TORCHINDUCTOR_CACHE_DIR to learn whether a cold compile needs the fix")
    if summary["needed"]:
        keep = (f"keep inductor_fix on torch {torch}: without it these processes would have crashed or replayed "
                f"a kernel built for other inputs; {_until(summary)}")
        # It acted, and yet a process died: what of says what else to do (a patch that was off).
        return f"{keep}. Yet {_died_advice(summary, entries)}" if summary["processes_died_in_compile"] else keep
    states = {state for info in summary["patches"].values() for state in info["states"]}
    remove = ("remove it: python -m pip uninstall inductor-fix, and drop `import inductor_fix` or the "
              "`inductor-fix run --` prefix")
    # A patch that only saved cost is no reason to keep the fix, but removing it pays that cost back.
    saved = [f"{name} ({', '.join(f'{kind} {count}' for kind, count in info['counts'].items())})"
             for name, info in summary["patches"].items() if info["counts"] and not info["processes_acted"]]
    cost = f"; without it these compiles would cost more: {', '.join(saved)}" if saved else ""
    if states <= {"not-needed"}:
        return f"torch {torch} has none of the bugs inductor_fix fixes: {remove}{cost}"
    if summary["template_choices"] == 0:
        return (f"no process made a Triton template choice (on a CPU none is made: Inductor's CPU templates are C++), "
                f"so none of the crashes inductor_fix fixes could happen in this job on torch {torch}: you can "
                f"{remove} (keep it if other jobs compile with max-autotune on a GPU){cost}")
    return (f"in these {summary['processes_with_fix_on']} process(es) on torch {torch} no patch found anything to "
            f"do: you can {remove} (keep it if other jobs compile other models with max-autotune){cost}")


def _unread(summary: Summary) -> str:
    """Why lines could not be read, as the notes say it."""
    other = summary["lines_of_other_formats"]
    torn = summary["lines_unread"] - sum(o["lines"] for o in other)
    said = [f"{torn} torn by a process killed while writing, or garbled"] if torn else []
    said += [f"{o['lines']} of format {o['format']}, written by inductor_fix {o['writer']}, which this inductor_fix "
             f"({__version__}) cannot read" for o in other]
    return "; ".join(said)


def _until(summary: Summary) -> str:
    """Until when the patches that acted are needed: each one's ``Patch.delete_when``."""
    acted = [p for p in table.PATCHES if summary["patches"].get(p.name, {}).get("processes_acted")]
    return "; ".join(f"{p.name} is needed until {p.delete_when}" for p in acted)


def format_summary(summary: Summary, width: int = 100) -> str:
    """The one-screen text ``inductor-fix report`` prints; first line ``needed: yes|no|unknown``."""
    import textwrap

    needed = {True: "yes", False: "no", None: "unknown"}[summary["needed"]]
    autotuning = f"{summary['benchmarks']} autotuning benchmark(s)"
    if summary["cached_compiles"]:
        autotuning = (f"{'at most ' if summary['benchmarks_unsure'] else ''}{autotuning} ran, "
                      f"{summary['cached_compiles']} compile(s) served from the FX graph cache (no autotuning)")
    if summary["template_choices"] is not None:
        autotuning += f", {summary['template_choices']} Triton template choice(s)"
    lines = [f"needed: {needed}",
             f"{summary['processes']} process(es) "
             + ("with a usable line" if summary["lines_unread"] else "loaded Inductor")
             + f" ({summary['processes_with_fix_on']} with the fix on, {autotuning}"
             + (f", {summary['processes_died_in_compile']} died in a compile" if summary["processes_died_in_compile"]
                else "")
             + (f", {summary['processes_interrupted']} interrupted (Ctrl-C)" if summary["processes_interrupted"]
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
