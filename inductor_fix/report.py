"""The job report's reader: did the fix act anywhere in a job, and may it be removed?

:func:`read` and :func:`summarize` (``inductor-fix report FILE``) fold the lines that every
process of a job appended (:mod:`inductor_fix._report_writer`, ``INDUCTOR_FIX_REPORT``) into
one answer, ``needed`` (True, False, or None when nothing could be judged), what happened
where, and advice; :func:`format_summary` prints it, each patch's details in the lines its
activity kinds read as (the patch table's).

A process that died in a compile is told what it died of (:func:`attribute`): of the stock crash
of a patch that was off there ("turn it on", as its state says: the ``INDUCTOR_FIX_DISABLE``
value that names it, ``apply()`` after ``remove()``, an inductor_fix that has it), of one whose
patch was applied (the fix did not hold: "please report it"), of an error the package raised
itself where it stopped a crash (``Crash.raises``), or of an error that is not inductor_fix's
("fix that error"). Patches whose crashes end alike (a launch of the wrong arity) are told apart
by where the error was raised (``Crash.selections``, ``Crash.choices``, against the selection,
choice and choices the line records; a format-2 line without a selection: outside autotuning,
where no patch's crash strikes), or said to be ambiguous; a net whose crash it is too is named
beside them; a ``Crash.generic`` form counts only where the line places it. Each explanation is
said once, with every process it holds for. A process interrupted by Ctrl-C is said so, not read
as a crash; one that died outside any compile is a note; compiles served from Inductor's FX graph
cache are told apart from autotuning that ran.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from . import patches as table
from ._installed import please_report
from ._report_writer import FORMAT, READS, VARIABLE, choice_kind
from ._version import __version__
from .status import PROTECTED_STATES, State

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .patches.patch import Crash, Patch

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
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
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
    (what processes that died in a compile died of, once per explanation: the first such process,
    ``alike`` and ``others``, with ``finding``, ``patches``, ``stopped_by``, ``nets``, ``cause`` and
    ``says``; :func:`_died`), ``interrupted``,
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
                      died_in_compile=_grouped([_died(e) for e in died]),
                      interrupted=[{"process": _where(e), "in_compile": e["exit_error"].get("in_compile") is True}
                                   for e in interrupted[:5]],
                      notes=list(notes))
    summary["processes_died_in_compile"] = len(died)
    elsewhere = [e for e in entries if _died_elsewhere(e)]
    if elsewhere:
        first = elsewhere[0]
        summary["notes"].append(
            f"{len(elsewhere)} process(es) died of an exception raised outside any compile ({_where(first)}: "
            f"{first['exit_error']['error']}): the program's own or its compiled code's as it ran, which the "
            "fix neither causes nor stops; it leaves the verdict alone")
    summary["processes_interrupted"] = len(interrupted)
    summary["processes_interrupted_in_compile"] = len(stopped)
    summary["lines_unread"] = unread
    summary["lines_of_other_formats"] = [{"lines": n.lines, "format": n.format, "writer": n.writer}
                                         for n in skipped if n.format is not None]
    summary["advice"] = _advice(summary, entries, blind)
    return summary


def _off(state: str | None) -> bool:
    """Whether a patch in ``state`` (None: not in the line) was off in a process: it could not have
    stopped its crash there."""
    return state not in PROTECTED_STATES


class Attribution(NamedTuple):
    """What a process that died in a compile died of (:func:`attribute`). ``finding``:

    - ``"off"``: the stock crash of ``patches``, which were off there, or not in the inductor_fix
      that wrote its line (several: the line cannot tell which of them; each would have stopped it);
    - ``"applied"``: the stock crash of ``patches``, which were applied there: the fix did not hold;
    - ``"own-error"``: an error ``stopped_by`` raised itself where it stopped a crash
      (``Crash.raises``); ``cause`` then says what explains the crash it stopped;
    - ``"package-fault"``: an error the code of ``stopped_by`` raised, not one it declares;
    - ``"unexplained"``: a crash of the kind inductor_fix fixes, where it strikes, but each patch
      that fixes it (in ``patches``) was not needed there (that torch lacks its crash), or none does;
    - ``"not-ours"``: no patch's crash is that error where it was raised; ``patches``: those whose
      crash reads alike, which strikes elsewhere (or, for a ``Crash.generic`` form, where the line
      does not say).

    ``nets``, beside ``off`` and ``applied`` patches that name where their crash strikes: the
    patches whose crash is placed nowhere (a net for every crash of the kind) that could have
    stopped it, off (to turn on too) or applied (it did not hold either).
    """

    finding: str
    patches: tuple[Patch, ...] = ()
    stopped_by: Patch | None = None
    cause: Attribution | None = None
    nets: tuple[Patch, ...] = ()


class _Place(NamedTuple):
    """Where an error was raised, as a line of format 2 says it: the ``selection`` (None: outside
    any autotuning selection), the kind of the ``choice`` being built or benchmarked, and the
    kinds of the selection's ``choices`` (:func:`~._report_writer.choice_kind`), where known."""

    selection: str | None
    choice: str | None = None
    choices: tuple[str, ...] | None = None


#: How the format-2 lines written before ``choices`` held kinds named a Triton template choice:
#: its class, which says no template.
_TRITON_CLASS = "TritonTemplateCaller"


def attribute(entry: dict[str, Any]) -> Attribution:
    """What the process of report line ``entry`` died of, from everything its line holds: the
    error (``exit_error``), where it was raised (the selection and choice, format 2: no selection
    is outside autotuning), which patch's code raised it, and each patch's state there. Raises
    KeyError for a line without ``exit_error``."""
    error = entry["exit_error"]
    text = error.get("error") if isinstance(error.get("error"), str) else None
    states = {p.get("name"): p.get("state") for p in entry["patches"]}
    place = _place(entry)
    own = next((p for p in table.PATCHES if p.crash.is_own(text)), None)
    if own is not None:
        # It stopped a crash of its kind (the forms it shares with other patches) before any choice
        # launched: the selection and the kinds of its choices say where, unless it left none in the
        # list (excluded as they were generated, they never reached it: which kinds, it cannot say).
        forms = set(own.crash.errors)
        kin = tuple(p for p in table.PATCHES if p is not own and forms & set(p.crash.errors))
        stopped = place._replace(choice=None, choices=place.choices or None) if place is not None else None
        return Attribution("own-error", (own,), own, _explain(kin, states, stopped, None))
    raiser = _known(error["raised_by"]) if isinstance(error.get("raised_by"), str) else None
    if raiser is not None:
        return Attribution("package-fault", (raiser,), raiser)
    return _explain(tuple(p for p in table.PATCHES if p.crash.matches(text)), states, place, text)


def _place(entry: dict[str, Any]) -> _Place | None:
    """Where the error of ``entry`` was raised; None where the line does not say (format 1)."""
    if entry["format"] < 2:
        return None
    error = entry["exit_error"]
    selection = error.get("selection")
    if not isinstance(selection, str):
        return _Place(None)
    choice, kind = error.get("choice"), None
    if isinstance(choice, dict) and isinstance(choice.get("name"), str) and isinstance(choice.get("type"), str):
        kind = choice_kind(choice["type"], choice["name"])
    listed = error.get("choices")
    choices = tuple(c for c in listed if isinstance(c, str)) if isinstance(listed, list) else None
    return _Place(selection, kind, choices)


def _strikes(crash: Crash, place: _Place | None) -> bool | None:
    """Whether ``crash`` can strike at ``place`` (``Crash.strikes_in``); None where the line cannot
    tell (format 1; a Triton template choice named by its class); False outside any selection,
    where no patch's crash strikes."""
    if place is None:
        return None
    if place.selection is None:
        return False
    if any(kind.startswith("triton_") for kind in crash.choices):
        choice = None if place.choice == _TRITON_CLASS else place.choice
        choices = None if place.choices is not None and _TRITON_CLASS in place.choices else place.choices
        return crash.strikes_in(place.selection, choice, choices)
    return crash.strikes_in(place.selection, place.choice, place.choices)


def _explain(suspects: tuple[Patch, ...], states: dict[Any, Any], place: _Place | None,
             text: str | None) -> Attribution:
    """Which of ``suspects`` (the patches whose crash ``text`` reads like; for ``text`` None, the
    kin of a crash a patch stopped) explain an error raised at ``place``: those whose crash can
    strike there (a generic form only where the line says it can), those the line places there
    before those it cannot place, those that name where they strike before the nets; of those,
    the ones not ``not-needed`` there (that torch lacks their crash), off before applied."""
    strikes = {p.name: _strikes(p.crash, place) for p in suspects}
    fits = [p for p in suspects if strikes[p.name] is True
            or (strikes[p.name] is None and (text is None or p.crash.identifies(text)))]
    if not fits:
        return Attribution("unexplained") if text is None else Attribution("not-ours", suspects)
    placed = [p for p in fits if p.crash.placed]
    placed = [p for p in placed if strikes[p.name] is True] or placed

    def live(patches: list[Patch]) -> tuple[Patch, ...]:
        return tuple(p for p in patches if states.get(p.name) != State.NOT_NEEDED)

    nets = live([p for p in fits if not p.crash.placed])
    primary = live(placed) or nets
    beside = nets if live(placed) else ()
    off = tuple(p for p in primary if _off(states.get(p.name)))
    if off:
        return Attribution("off", off, nets=beside)
    if primary:
        return Attribution("applied", primary, nets=beside)
    return Attribution("unexplained", tuple(fits))


def _died(entry: dict[str, Any]) -> dict[str, Any]:
    """What a process that died in a compile died of: its ``exit_error``, and :func:`attribute`'s
    answer: ``finding``, the ``patches`` it names (each with its ``state`` in the process, None
    where the line has none, and ``reason``), ``stopped_by`` (the patch that raised an error of
    its own), ``nets`` and ``cause`` (what explains the crash that patch stopped); ``says``: what
    the advice says of it."""
    states = {p["name"]: (p["state"], p.get("reason")) for p in entry["patches"]}

    def named(patches: tuple[Patch, ...]) -> list[dict[str, Any]]:
        return [{"name": p.name, "state": states.get(p.name, (None, None))[0],
                 "reason": states.get(p.name, (None, None))[1]} for p in patches]

    def answer(found: Attribution) -> dict[str, Any]:
        return {"finding": found.finding, "patches": named(found.patches), "nets": named(found.nets),
                "stopped_by": found.stopped_by.name if found.stopped_by is not None else None}

    found = attribute(entry)
    died = {**entry["exit_error"], "process": _where(entry), **answer(found),
            "cause": answer(found.cause) if found.cause is not None else None}
    died["says"] = _says(died, _Remedy(entry), place_known=entry["format"] >= 2)
    return died


def _died_in_compile(entry: dict[str, Any]) -> bool:
    error = entry.get("exit_error")
    return (isinstance(error, dict) and error.get("in_compile") is True and isinstance(error.get("error"), str)
            and not _interrupted(entry))


def _died_elsewhere(entry: dict[str, Any]) -> bool:
    """Whether the process of ``entry`` died of an exception raised outside any compile (the
    program's own, or its compiled code's as it ran)."""
    error = entry.get("exit_error")
    return (isinstance(error, dict) and error.get("in_compile") is not True and isinstance(error.get("error"), str)
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
    text = [f"{p['name']} ({p['state'] or 'not in that inductor_fix'})" if states else p["name"] for p in patches]
    return text[0] if len(text) == 1 else f"{', '.join(text[:-1])} and {text[-1]}"


class _Remedy:
    """How to turn on a patch that was off in the process of a line, as its state there says
    (``unsupported``: why and the workaround; ``disabled``: the ``INDUCTOR_FIX_DISABLE`` value that
    names it; ``removed``: ``apply()``; not in the line: an inductor_fix that has it)."""

    def __init__(self, entry: dict[str, Any]) -> None:
        self.disable = entry.get("disable") if isinstance(entry.get("disable"), str) else None
        self.writer = str(entry.get("inductor_fix", "?"))
        self.names = [p["name"] for p in entry["patches"]]

    def named(self) -> frozenset[str]:
        """The patches of the line its ``INDUCTOR_FIX_DISABLE`` turns off (as the lifecycle reads it)."""
        if self.disable is None:
            return frozenset()
        from ._lifecycle import DISABLE_VARIABLE, disabled_patches

        return disabled_patches(self.names, {DISABLE_VARIABLE: self.disable})[0]

    def turn_on(self, patches: list[dict[str, Any]]) -> str:
        """What to do about ``patches`` (:func:`_died`'s: name, state, reason) that were off."""
        cannot = [p for p in patches if p["state"] == State.UNSUPPORTED]
        if cannot:
            return (f"{_names(cannot)} could not apply to that torch ({cannot[0]['reason'] or 'unsupported'}): "
                    "inductor-fix status says why, and README's troubleshooting gives a workaround")
        hows = {p["name"]: self._how(p, patches) for p in patches}
        them = "it" if len(patches) == 1 else "them"
        if len(set(hows.values())) == 1:
            return f"turn {them} on ({next(iter(hows.values()))})"
        return f"turn {them} on: " + "; ".join(f"{name}: {how}" for name, how in hows.items())

    def _how(self, patch: dict[str, Any], patches: list[dict[str, Any]]) -> str:
        name, state = patch["name"], patch["state"]
        if state is None:
            return f"inductor_fix {self.writer}, which wrote that line, has no {name}: install one that has it"
        if state == State.REMOVED:
            return "inductor_fix.remove() took it out in that process: inductor_fix.apply() puts it back"
        if state == State.DISABLED and name in (named := self.named()):
            on = {p["name"] for p in patches}
            if named <= on or named == set(self.names):
                return f"INDUCTOR_FIX_DISABLE={self.disable} turned it off: unset it"
            return f"INDUCTOR_FIX_DISABLE={self.disable} turned it off: take {name} out of it"
        if state == State.DISABLED:  # the line does not say the variable's value (format 1 may not)
            return f"INDUCTOR_FIX_DISABLE turned it off: unset it, or take {name} out of it"
        return f"it was {state} when the process died: inductor-fix status says why"


def _strike_place(patch: Patch) -> str:
    """Where ``patch``'s crash strikes, in words."""
    crash = patch.crash
    if crash.selections:
        return f"only in the selections {', '.join(crash.selections)}"
    if crash.choices:
        return f"only in a selection with a choice of kind {' or '.join(crash.choices)}"
    return "only in an autotuning selection"


def _raised_at(died: dict[str, Any], place_known: bool) -> str:
    """Where the line says ``died``'s error was raised, in words (``place_known``: a line of
    format 2, which says it)."""
    if not place_known:
        return "this line does not say where it was raised"
    if not isinstance(died.get("selection"), str):
        return "this one was raised outside any autotuning selection"
    choice = died.get("choice")
    name = f", choice {choice['name']}" if isinstance(choice, dict) and isinstance(choice.get("name"), str) else ""
    return f"this one was raised in the selection {died['selection']}{name}"


def _says(died: dict[str, Any], remedy: _Remedy, place_known: bool) -> str:
    """What the advice says of ``died`` (a :func:`_died` entry), ``remedy`` its line's
    (``place_known``: the line says where the error was raised)."""
    finding, patches = died["finding"], died["patches"]
    if finding == "own-error":
        return (f"that is inductor_fix's own error, not a stock crash: {died['stopped_by']} raised it where it "
                f"stopped a crash; {_explained(died['cause'], remedy, stopped=True)}")
    if finding == "package-fault":
        return (f"inductor_fix's {died['stopped_by']} raised it: {please_report(_ATTACH)}; meanwhile "
                f"INDUCTOR_FIX_DISABLE={died['stopped_by']} runs without that patch")
    if finding == "not-ours":
        alike = [known for p in patches if (known := _known(p["name"])) is not None]
        like = (f" (it reads like the crash {' or '.join(p.name for p in alike)} fixes, but that strikes "
                f"{'; '.join(_strike_place(p) for p in alike)}, and {_raised_at(died, place_known)})") if alike else ""
        raised_in = died.get("raised_in") if isinstance(died.get("raised_in"), str) else None
        passed = ("; a traceback that passes through inductor_fix/patches/ shows the call it passed on unchanged "
                  "(INDUCTOR_FIX_DISABLE=1 gives the same error)"
                  if raised_in is not None and not raised_in.startswith("inductor_fix/") else "")
        return f"that error is not inductor_fix's{like}{passed}: fix that error"
    return _explained(died, remedy)


def _explained(found: dict[str, Any], remedy: _Remedy, stopped: bool = False) -> str:
    """What ``found`` (a :func:`_died` answer: ``off``, ``applied``, ``unexplained``) says of a
    crash: the one the process died of, or (``stopped``) the one a patch stopped with an error of
    its own; and of the nets beside it."""
    patches = found["patches"]
    names = " or ".join(p["name"] for p in patches)
    upstream = "; ".join(patch.upstream for p in patches if (patch := _known(p["name"])) is not None)
    crash = (f"the crash it stopped is the one {names} fixes" if stopped else
             f"that is how the crash {names} fixes ends") + (f" ({upstream})" if upstream else "")
    if found["finding"] == "unexplained":
        lacking = f" ({_names(patches, states=True)}: that torch does not have its crash)" if patches else ""
        return (f"{'the crash it stopped' if stopped else 'that'} is a crash of the kind inductor_fix fixes, which "
                f"no patch explains there{lacking}: {please_report(_ATTACH)}")
    nets = found.get("nets") or []
    nets_off = [n for n in nets if _off(n["state"])]
    nets_on = [n for n in nets if not _off(n["state"])]
    net = "a net for every crash of this kind"
    if found["finding"] == "applied":
        also = f", and so {'was' if len(nets_on) == 1 else 'were'} {_names(nets_on)} ({net})" if nets_on else ""
        said = (f"{crash}, yet {_names(patches)} {'was' if len(patches) == 1 else 'were'} applied in that "
                f"process{also}: {please_report(_ATTACH)}")
    elif len(patches) > 1:
        said = (f"{crash}, and each was off in that process ({_names(patches, states=True)}); the line cannot tell "
                f"which of them would have stopped it: {remedy.turn_on(patches)}")
    elif patches[0]["state"] == State.UNSUPPORTED:
        said = f"{crash}, and {remedy.turn_on(patches)}"
    elif patches[0]["state"] is None:
        said = (f"{crash}, and inductor_fix {remedy.writer}, which wrote that line, has no {names}: install one "
                f"that has it (this one, {__version__}, does)")
    else:
        said = f"{crash}, and {names} was {patches[0]['state']} in that process: {remedy.turn_on(patches)}"
    if found["finding"] == "off" and nets_on:
        said += (f"; {_names(nets_on)} ({net}) {'was' if len(nets_on) == 1 else 'were'} applied there and should "
                 f"have stopped it: {please_report(_ATTACH)}")
    if nets_off:
        said += (f"; {_names(nets_off, states=True)}, {net}, would have stopped it too: "
                 f"{remedy.turn_on(nets_off)}")
    return said


def _died_advice(summary: Summary) -> str:
    """What the advice says of the processes that died in a compile: each explanation once, with
    the first process it holds for and how many more; a sentence or more, without its full stop."""
    groups = summary["died_in_compile"]
    said = []
    for died in groups[:_GROUPS]:
        where = f", raised in {died['raised_in']}" if isinstance(died.get("raised_in"), str) else ""
        if isinstance(died.get("selection"), str):
            where += f" (selection {died['selection']})"
        others = ", ".join(died["others"]) + (", ..." if died["alike"] - 1 > len(died["others"]) else "")
        more = f"; and {died['alike'] - 1} more process(es) alike ({others})" if died["alike"] > 1 else ""
        said.append(f"{died['process']}: {died['error']}{where}{more}: {died['says']}")
    rest = summary["processes_died_in_compile"] - sum(d["alike"] for d in groups[:_GROUPS])
    said += [f"{rest} more process(es) died of other errors (report --json lists them)"] if rest else []
    head = f"{summary['processes_died_in_compile']} process(es) died of an exception raised in a compile"
    if len(said) == 1:
        return f"{head}: {said[0]}"
    return f"{head}: " + ". ".join(f"({i}) {text}" for i, text in enumerate(said, 1))


#: How many different explanations of deaths the advice says one by one.
_GROUPS = 10


def _grouped(died: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``died`` (:func:`_died` entries, in the lines' order) once per explanation (``says``): the
    first process it holds for, with ``alike`` (how many it holds for) and ``others`` (where the
    next few were)."""
    groups: dict[str, dict[str, Any]] = {}
    for one in died:
        group = groups.get(one["says"])
        if group is None:
            groups[one["says"]] = {**one, "alike": 1, "others": []}
            continue
        group["alike"] += 1
        if len(group["others"]) < 3:
            group["others"].append(one["process"])
    return list(groups.values())


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
        return (f"{_died_advice(summary)}. A compile that did not finish cannot show whether the fix is needed: "
                "run the job again once that is done")
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
        return f"{keep}. Yet {_died_advice(summary)}" if summary["processes_died_in_compile"] else keep
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
    # A line's strings may hold what no encoding writes (a lone surrogate, "\ud800"): said as escapes.
    return "\n".join(lines).encode("utf-8", "backslashreplace").decode("utf-8")


def _detail(patch: str, detail: dict[str, Any]) -> str:
    """The line ``detail`` reads as: its patch's activity kind's (a patch this version does
    not have, or a kind it does not declare: the kind's name)."""
    known = _known(patch)
    return known.activity.line(detail) if known is not None else str(detail.get("kind"))
