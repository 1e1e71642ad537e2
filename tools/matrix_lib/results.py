"""The matrix's results file (JSON), which is also its resume state, and its two renderings.

Layout (``docs/matrix/results.json`` by default)::

    {"date", "command", "suite", "suites", "expectation", "host", "results_file",  # of the last run
     "releases": [{"spec", "release", "torch", "git_version", "triton", "python", "host", "variant",
                   "fix_state", "patch_states", "max_examples", "project", "commands", "install_seconds", "error",
                   "expected",
                   "phases": {<expectations.PHASES key>: {"outcome", "expected", "exit",
                              "summary", "counts", "failed", "first_error", "seconds", "log",
                              "finished", "project", ["patches"]}},   # "full-suite" the same,
                                                                     # "check" with "cases", "skipped"
                   "verdict", "seconds", "date"}]}

It is written after every phase, so an interrupted run loses at most the phase
in progress. :func:`table` and :func:`markdown` read nothing but this data, so a
test can re-render docs/matrix.md from the JSON and compare.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from packaging.version import InvalidVersion, Version

from . import expectations as ex


def load(path: Path) -> dict:
    """The results file, or an empty one if there is none yet."""
    if path.is_file():
        return json.loads(path.read_text())
    return {"releases": []}


def save(path: Path, data: dict) -> None:
    """Write atomically: a Ctrl-C mid-write must not lose the finished phases."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(temporary, path)


def entry_for(data: dict, spec: str, max_examples: int, fresh: bool) -> tuple[dict, str | None]:
    """The release entry for ``spec`` (appended if new); its phases are dropped with
    ``fresh`` or a different ``max_examples``. Second item: why they were dropped."""
    entry = next((e for e in data["releases"] if e["spec"] == spec), None)
    if entry is None:
        entry = {"spec": spec, "phases": {}}
        data["releases"].append(entry)
    reason = None
    if entry["phases"] and fresh:
        reason = "--fresh"
    elif entry["phases"] and entry.get("max_examples") != max_examples:
        reason = f"stored results used --max-examples {entry.get('max_examples')}"
    if reason:
        entry["phases"] = {}
    entry.pop("error", None)
    entry["max_examples"] = max_examples
    return entry, reason


def refresh(entry: dict) -> None:
    """Recompute the derived fields of ``entry``: each phase's expectation from the patch
    table (so stored results are judged by today's table), the verdict, seconds, date."""
    if entry.get("torch"):
        entry["expected"] = {phase: ex.expected(phase, entry["torch"], entry.get("variant")) for phase in ex.phases()}
        for phase, result in entry["phases"].items():
            # A suite of a patch retired since keeps the expectation it was run with.
            result["expected"] = entry["expected"].get(phase, result.get("expected"))
    entry["verdict"] = ex.verdict(entry)
    entry["seconds"] = round(sum(p.get("seconds", 0) for p in entry["phases"].values()), 1)
    finished = sorted(p["finished"] for p in entry["phases"].values() if p.get("finished"))
    if finished:
        entry["date"] = finished[-1][:10]


# --- rendering (from the data alone) ---------------------------------------------


def _sort_key(entry: dict):
    """By torch version (a release not installed yet: its spec's), variants after their release."""
    try:
        return (0, Version(entry.get("torch") or entry.get("release") or entry["spec"].split("@")[0]), entry["spec"])
    except InvalidVersion:
        return (1, Version("0"), entry["spec"])


def _patch_name(path: str) -> str:
    """``patches/2.9.1/0001-inductor-....patch`` -> ``2.9.1/0001``."""
    parts = Path(path).parts
    number = re.match(r"\d+", parts[-1])
    return "/".join([*parts[1:-1], number.group(0) if number else parts[-1]])


def _cell(entry: dict, phase: str) -> str:
    """The outcome, the patches a diff phase applied, the full suite's counts and minutes, and the
    expectation where it differs."""
    result = entry["phases"].get(phase)
    if result is None:
        return "not run" if phase in ex.EXTRA_PHASES else "-"
    cell = result["outcome"]
    if phase == ex.FULL_SUITE and result.get("counts"):
        counted = ", ".join(f"{n} {word}" for word, n in result["counts"].items())
        cell += f" ({counted}; {result.get('seconds', 0) / 60:.0f} min)"
    if phase == ex.CHECK and result.get("cases"):
        crashed = {mode: sum(not c["ok"] for c in result["cases"] if c["mode"] == mode)
                   for mode in ("stock", "patched")}
        cases = sum(c["mode"] == "stock" for c in result["cases"])
        cell += f" (stock crashed {crashed['stock']}/{cases}, patched {crashed['patched']}/{cases})"
    if result.get("patches") and result["outcome"] != ex.NOT_APPLICABLE:
        cell += f" ({', '.join(_patch_name(p['patch']) for p in result['patches'])})"
    if not ex.agrees(result):
        cell += f" (expected {result['expected']})"
    return cell


def _name(entry: dict) -> str:
    installed, relabelled, label = entry["spec"].partition("=")
    if relabelled:  # a release relabelled as a dev build (tools/torchenv.py)
        return f"{label} ({installed} relabelled)"
    name = entry.get("release") or entry["spec"]
    return f"{name} (codegen cache on)" if entry.get("variant") == "codegen-cache" else name


def phases(data: dict) -> dict[str, str]:
    """Phase -> column title, in the order the results recorded them, then today's phases they
    lack: a suite of a patch retired since keeps its columns until the matrix runs again."""
    recorded = dict.fromkeys(phase for entry in data["releases"] for phase in entry["phases"]
                             if phase not in ex.EXTRA_PHASES)
    titles = {}
    for phase in [*recorded, *ex.phases()]:  # the full suite last
        suite, _, mode = phase.partition(":")
        titles.setdefault(phase, ex.phases().get(phase) or f"{suite} {ex.MODES.get(mode, mode)}")
    return titles


def _columns(titles: dict[str, str]) -> tuple[str, ...]:
    return ("release", "torch", "triton", "fix state", *titles.values(), "verdict", "seconds")


def _suites(data: dict, titles: dict[str, str]) -> list[str]:
    """Each suite with its patch, as the run recorded it (``suites``), else as today's table has it."""
    recorded = data.get("suites", {})
    names = dict.fromkeys(phase.partition(":")[0] for phase in titles if phase not in ex.EXTRA_PHASES)
    return [f"`{name}` ({recorded.get(name) or (ex.SUITES[name].patch.name if name in ex.SUITES else 'retired')})"
            for name in names]


def _entries(data: dict, specs: list[str] | None) -> list[dict]:
    """The releases of ``specs``, in that order; without ``specs``, all of them by version."""
    if specs is None:
        return sorted(data["releases"], key=_sort_key)
    return [e for spec in specs for e in data["releases"] if e["spec"] == spec]


def rows(data: dict, specs: list[str] | None = None) -> list[tuple[str, ...]]:
    """One row per release of :func:`_entries`, a cell per phase of :func:`phases`."""
    titles = phases(data)
    return [
        (
            _name(entry),
            entry.get("torch", "-"),
            entry.get("triton", "-"),
            entry.get("fix_state", "-"),
            *(_cell(entry, phase) for phase in titles),
            entry.get("verdict", "incomplete"),
            f"{entry.get('seconds', 0):.0f}",
        )
        for entry in _entries(data, specs)
    ]


def table(data: dict, specs: list[str] | None = None) -> str:
    """Plain-text table for the terminal, then a line per stock failure and per problem."""
    body, titles = rows(data, specs), phases(data)
    columns = _columns(titles)
    widths = [max(len(row[i]) for row in [columns, *body]) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [columns, *body]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    for entry in _entries(data, specs):
        name = _name(entry)
        if entry.get("error"):
            lines.append(f"{name}: ERROR: {entry['error']}")
        for phase, result in entry["phases"].items():
            title = titles[phase]
            if result["outcome"] == ex.FAIL:
                tests = ", ".join(test.split("::")[-1] for test in result["failed"])
                lines.append(f"{name} {title}: {len(result['failed'])} failed ({tests}); "
                             f"first error: {result.get('first_error')}")
            elif result["outcome"] == ex.ERROR or not ex.agrees(result):
                lines.append(f"{name} {title}: {result['outcome']}: {result['summary']}  [{result.get('log', '')}]")
    return "\n".join(lines)


def _host(host: dict) -> str:
    return f"{host.get('platform', '?')}, {host.get('cpus', '?')} CPUs"


def markdown(data: dict) -> str:
    """docs/matrix.md: what was run, when, on what, the exact commands, and the table."""
    entries, titles = _entries(data, None), phases(data)
    columns = _columns(titles)
    dates = sorted({e["date"] for e in entries if e.get("date")})
    pythons = sorted({e["python"] for e in entries if e.get("python")})
    examples = sorted({e["max_examples"] for e in entries if "max_examples" in e})
    commands = list(dict.fromkeys(c for e in entries for c in e.get("commands", [])))
    hosts = list(dict.fromkeys(_host(e.get("host") or data.get("host") or {}) for e in entries))
    when = " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "(not run)"
    lines = [
        "# Version matrix",
        "",
        "The CPU property suites of every patch (on the CPU harness) on each release: "
        + ", ".join(_suites(data, titles))
        + ", each **stock** (`INDUCTOR_FIX_DISABLE=1`), **patched** (the monkeypatch: the tests' conftest "
        "imports `inductor_fix`) and, but for the `test_cache` suites (Inductor's own codegen-cache check, "
        "`TritonTemplate.test_cache`, as the oracle), **diff-applied** (every diff of "
        "[`patches/`](../patches/README.md) that applies to that release applied to the installed torch, "
        "`INDUCTOR_FIX_DISABLE=1`; `n/a` where the suite's own diff does not apply). "
        "**fix state** is what `python -m inductor_fix status` says on that release. "
        f"Expected: {data.get('expectation', '')}.",
        "",
        f"**full suite**: README's test command, `{data.get('full_suite') or ex.FULL_SUITE_COMMAND}`, in that "
        "release's venv, patched, with the suite's own Hypothesis profile: PASS when every test passes or skips "
        "with its reason (its counts and minutes beside it); `not run` where it has not run yet (the verdict then "
        "judges the property suites alone). **check**: `python -m inductor_fix check` there (CPU harness), "
        "where `tools/new_release` ran it: PASS when every patched compile succeeded, with how many stock and "
        "patched cases crashed.",
        "",
        f"Suites: `{data.get('suite', '')}`.",
        "",
        f"Run {when} ({'; '.join(hosts) or '?'}, Python {', '.join(pythons) or '?'}) "
        f"with at most {', '.join(map(str, examples)) or '?'} generated examples per test "
        "(`INDUCTOR_FIX_HYPOTHESIS_MAX_EXAMPLES`) plus the pinned regressions; seconds are all runs of a "
        "release together:",
        "",
        "```sh",
        *commands,
        "```",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(row) + " |" for row in rows(data)),
    ]
    if data.get("results_file"):
        lines += ["", f"Per-release details (torch commit, failing tests, first errors): `{data['results_file']}`."]
    return "\n".join(lines) + "\n"


def readme_row(entry: dict) -> str:
    """README's "Affected releases" row for ``entry``, from its check phase and patch states: the
    release, one cell per patch with ``check`` ops in table order (what stock did there: ``ok``,
    ``crashes``, ``crashes: <op> <order>, ...`` where some sequences crashed, ``not checked here``
    where check could not run them, ``?`` without a check result), then the fix's state with each
    patch that does not apply; a patched crash is said in capitals."""
    from inductor_fix.check.parts import check_ops, patches

    check = entry["phases"].get(ex.CHECK) or {}
    cells = [_name(entry)]
    for patch in (p for p in patches() if check_ops(p)):
        ops = set(check_ops(patch))
        stock = [c for c in check.get("cases", []) if c["op"] in ops and c["mode"] == "stock"]
        crashed = [f"{c['op']} {c['order']}" for c in stock if not c["ok"]]
        skipped = sorted(ops & set(check.get("skipped", {})))
        if not check:
            cell = "?"
        elif not stock:
            cell = "not checked here"
        elif not crashed:
            cell = "ok"
        else:
            cell = "crashes" if len(crashed) == len(stock) else f"crashes: {', '.join(crashed)}"
        if stock and skipped:
            cell += f" ({', '.join(skipped)} not checked here)"
        broken = [f"{c['op']} {c['order']}" for c in check.get("cases", []) if c["op"] in ops
                  and c["mode"] == "patched" and not c["ok"]]
        cells.append(cell + (f"; PATCHED CRASHED: {', '.join(broken)}" if broken else ""))
    others = [f"{name} `{state}`" for name, state in entry.get("patch_states", {}).items() if state != "applied"]
    cells.append(f"`{entry.get('fix_state', '?')}`" + (f" ({', '.join(others)})" if others else ""))
    return "| " + " | ".join(cells) + " |"
