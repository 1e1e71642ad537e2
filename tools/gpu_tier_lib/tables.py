"""The tables a GPU tier run writes: one row per test (its outcome, what stock and patched did, the
error against eager, its seconds and the seconds it took before), the family sweep, and the
documents they are pasted into between markers."""

from __future__ import annotations

from typing import Mapping

__all__ = ["render", "render_families", "replace_table", "markers", "summary"]


def _cell(value: object) -> str:
    if value is None:
        return "ok"
    text = str(value).replace("|", "/").replace("\n", " ")
    return text if len(text) <= 70 else text[:67] + "..."


def _error(figures: list[dict]) -> str:
    errors = [f["max_rel_error"] for f in figures if isinstance(f.get("max_rel_error"), (int, float))]
    return f"{max(errors):.1e}" if errors else "-"


def summary(results: list[dict], selected: list[str], wall: float | None) -> str:
    """The table's last line: the counts, which tests did not finish (or "0 not finished"), the wall time."""
    outcome = {r["nodeid"]: r.get("outcome") for r in results}
    unfinished = [n for n in selected if n not in outcome]
    counts = ", ".join(f"{sum(o == word for o in outcome.values())} {word}" for word in ("passed", "failed", "skipped"))
    left = (f"{len(unfinished)} not finished: " + ", ".join(n.rpartition("::")[2] for n in unfinished)
            if unfinished else "0 not finished")
    wall_text = f"; wall {wall:.0f} s" if wall is not None else ""
    return f"{len(selected)} tests: {counts}, {left}{wall_text}"


def render(results: list[dict], figures: list[dict], selected: list[str], before: Mapping[str, float] | None = None,
           wall: float | None = None) -> str:
    """The tier's table: every selected test, in the order they were collected; ``before``: each test's
    seconds in an earlier run, a column of its own where given."""
    outcome = {r["nodeid"]: r for r in results}
    by_test: dict[str, list[dict]] = {}
    for figure in figures:
        by_test.setdefault(figure.get("nodeid", ""), []).append(figure)
    head = "| test | outcome | stock | patched | error vs eager | seconds |"
    rule = "|---|---|---|---|---|---|"
    if before is not None:
        head, rule = head + " before |", rule + "---|"
    lines = [head, rule]
    for nodeid in selected:
        result = outcome.get(nodeid, {})
        seen = by_test.get(nodeid, [])
        stock = "; ".join(_cell(f.get("stock")) for f in seen if "stock" in f) or "-"
        patched = "; ".join(_cell(f.get("patched")) for f in seen if "patched" in f) or "-"
        seconds = f"{result['seconds']:.0f}" if "seconds" in result else "-"
        row = (f"| `{nodeid.removeprefix('test/')}` | {result.get('outcome', 'not finished')} | {stock} | "
               f"{patched} | {_error(seen)} | {seconds} |")
        if before is not None:
            row += f" {before[nodeid]:.0f} |" if nodeid in before else " - |"
        lines.append(row)
    lines += ["", summary(results, selected, wall)]
    return "\n".join(lines) + "\n"


def render_families(figures: list[dict]) -> str:
    """The family sweep: one row per figure that names a family."""
    rows = [f for f in figures if "family" in f]
    lines = ["| family | setting | order | stock | patched | error vs eager |", "|---|---|---|---|---|---|"]
    for f in sorted(rows, key=lambda f: (f["family"], f.get("order", ""))):
        error = f"{f['max_rel_error']:.1e}" if isinstance(f.get("max_rel_error"), (int, float)) else "-"
        lines.append(f"| {f['family']} | {f.get('setting', '-')} | {f.get('order', '-')} | {_cell(f.get('stock'))} | "
                     f"{_cell(f.get('patched'))} | {error} |")
    return "\n".join(lines) + "\n"


def markers(name: str) -> tuple[str, str]:
    """The two lines between which a document holds the table ``name``."""
    return f"<!-- gpu_tier: {name} -->", f"<!-- gpu_tier: end {name} -->"


def replace_table(text: str, table: str, name: str) -> str:
    """``text`` with what lies between the markers of ``name`` replaced by ``table``; ValueError
    without them."""
    start, end = markers(name)
    head, found, rest = text.partition(start)
    _, ended, tail = rest.partition(end)
    if not (found and ended):
        raise ValueError(f"the document has no {start} ... {end} markers")
    return f"{head}{start}\n{table}{end}{tail}"
