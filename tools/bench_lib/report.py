"""Markdown tables from the JSON files ``tools/bench`` writes."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any, Callable

from .compiles import PART_VARIANTS, PARTS, VARIANTS, budget_cut
from .stats import paired_ratios, span, summary

__all__ = ["compile_markdown", "cpu_markdown", "load"]

PATCHED_VS_STOCK_GOAL = 1.02
#: Fewer paired repetitions than this get a ratio but no verdict on its goal.
MIN_PAIRS = 2
#: "max-autotune runtime kept": at most default's, give or take do_bench noise.
RUNTIME_GOAL = 1.05


def load(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """``(cpu and guard results, compile results)``; each compile run gets ``session`` (its
    file's index) so repetitions pair only within the file that measured them side by side."""
    cpu, compiled = [], []
    for session, path in enumerate(paths):
        data = json.loads(Path(path).read_text())
        if data.get("kind") in ("cpu", "guard"):
            cpu.append(data)
        elif data.get("kind") == "compile":
            for run in data["runs"]:
                run["session"] = session
            compiled.append(data)
        else:
            raise SystemExit(f"{path}: not a tools/bench result (no known 'kind')")
    return cpu, compiled


# Parts 1-2 ---------------------------------------------------------------------------


def cpu_markdown(data: dict) -> str:
    imp, key = data["import"], data["key"]
    lines = [
        f"CPU: {data['machine']}; torch {data['torch']}, triton {data['triton']}, Python {data['python']}. "
        f"Command: `{data['command']}`.",
        "",
        "| measured | median [spread] | goal | met |",
        "|---|---|---|---|",
    ]
    for mode, how in (("cached", "bytecode cached, as installed"), ("uncached", "PYTHONDONTWRITEBYTECODE=1")):
        ms = imp[mode]["ms"]
        goal = f"≤ {imp['goal_ms']:.0f} ms, no torch._inductor" if mode == "cached" else "-"
        met = _yes(imp["goal_met"]) if mode == "cached" else "-"
        lines.append(
            f"| `import inductor_fix` after `import torch`, ms ({how}; {ms['n']} fresh processes; "
            f"torch._inductor modules imported: {len(imp['inductor_modules_imported'])}) | {span(ms, 2)} "
            f"| {goal} | {met} |"
        )
    for case in ("distinct", "aliased"):
        c = key["cases"][case]
        lines.append(
            f"| `make_key` per call, {case} inputs ({c['ratio']['n']} alternating rounds): stock "
            f"{c['stock_ns']['median'] / 1e3:.1f} µs, patched {c['patched_ns']['median'] / 1e3:.1f} µs; "
            f"ratio patched/stock (ratio of minimums {c['ratio_of_minimums']:.3f}) "
            f"| {span(c['ratio'])} | ≤ {key['goal_ratio']} "
            f"| {_yes(c['ratio']['median'] <= key['goal_ratio'])} |"
        )
    control = key["cases"].get("control")
    if control:
        lines.append(
            f"| control: stock `make_key` timed against itself, ratio (this method's noise here) "
            f"| {span(control['ratio'])} | - | - |"
        )
    wrapper = key["cases"].get("wrapper")
    if wrapper:
        lines.append(
            f"| what the fix adds to one `make_key` call, µs (its wrapper around a constant-key "
            f"`make_key`) | {span({k: v / 1e3 if k != 'n' else v for k, v in wrapper['added_ns'].items()}, 2)} "
            f"| - | - |"
        )
    lines.append(
        f"| one-time `inductor_fix.apply()` once Inductor is loaded (probe, fingerprints, patch), ms "
        f"| {key['apply_ms']:.1f} (one sample) | - | - |"
    )
    return "\n".join(lines)


# Part 3 ------------------------------------------------------------------------------


def _total(run: dict, field: str) -> float:
    return sum(run[field].values())


def _runs(compiled: list[dict], part: str, variant: str, cut: bool = False) -> list[dict]:
    """Runs of the cell with a result; with ``cut``, those the budget stopped instead."""
    return [r for data in compiled for r in data["runs"]
            if r["part"] == part and r["variant"] == variant and budget_cut(r) == cut]


def _ok(runs: list[dict]) -> list[dict]:
    return [r for r in runs if not r.get("error")]


def _counts(values: list[int]) -> str:
    values = sorted(set(values))
    return "-" if not values else str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def cells(compiled: list[dict]) -> list[dict[str, Any]]:
    """One row per (part, variant) measured: summaries over its successful runs."""
    rows = []
    for part, variants in PART_VARIANTS.items():
        for variant in variants:
            runs, cut = _runs(compiled, part, variant), _runs(compiled, part, variant, cut=True)
            if not runs and not cut:
                continue
            ok = _ok(runs)
            rows.append(
                {
                    "part": part,
                    "variant": variant,
                    "runs": len(runs),
                    "ok": len(ok),
                    "cut": len(cut),
                    "error": next((r["error"] for r in runs if r.get("error")), None),
                    "compile_s": summary([_total(r, "compile_s") for r in ok]),
                    "runtime_ms": summary([_total(r, "runtime_ms") for r in ok]),
                    "hits": _counts([_total(r, "hits") for r in ok]),
                    "misses": _counts([_total(r, "misses") for r in ok]),
                    # Recorded since 2026-11-30: the committed H200 runs predate it.
                    "autotune_rounds": _counts([_total(r, "autotune_rounds") for r in ok if "autotune_rounds" in r]),
                    "states": sorted({r.get("state", "?") for r in runs}),
                    "guard": sorted({f"{k} {v}" for r in runs for k, v in (r.get("guard") or {}).items() if v}),
                }
            )
    return rows


@dataclasses.dataclass(frozen=True)
class Ratio:
    part: str
    field: str  # "compile_s" or "runtime_ms"
    numerator: str
    denominator: str
    goal: str = ""
    met: Callable[[dict[str, float]], bool] | None = None

    @property
    def label(self) -> str:
        what = "compile" if self.field == "compile_s" else "runtime"
        return f"({self.part}) {what} {self.numerator} / {self.denominator}"


RATIOS = (
    # A goal is met only if every pair meets it: with 3 pairs a median could hide a miss.
    Ratio("a", "compile_s", "patched", "stock", f"≤ {PATCHED_VS_STOCK_GOAL}, equal cache hits and misses",
          lambda s: s["max"] <= PATCHED_VS_STOCK_GOAL),
    Ratio("a", "compile_s", "cache-off", "patched"),
    Ratio("b", "compile_s", "cache-off", "patched", "> 1 (patched faster)", lambda s: s["min"] > 1),
    Ratio("b", "compile_s", "clone", "patched"),
    Ratio("a", "runtime_ms", "patched", "stock"),
    Ratio("a", "runtime_ms", "patched", "default", f"≤ {RUNTIME_GOAL} (max-autotune kept)",
          lambda s: s["max"] <= RUNTIME_GOAL),
    Ratio("b", "runtime_ms", "patched", "default", f"≤ {RUNTIME_GOAL} (max-autotune kept)",
          lambda s: s["max"] <= RUNTIME_GOAL),
    Ratio("b", "runtime_ms", "clone", "patched"),
)


def _pairs(compiled: list[dict], ratio: Ratio) -> list[tuple[dict, dict]]:
    """Successful runs of the two variants from the same file and repetition."""
    def key(run: dict) -> tuple[int, int]:
        return run.get("session", 0), run["rep"]

    by_rep = {key(r): r for r in _ok(_runs(compiled, ratio.part, ratio.denominator))}
    return [(r, by_rep[key(r)]) for r in _ok(_runs(compiled, ratio.part, ratio.numerator)) if key(r) in by_rep]


def ratios(compiled: list[dict]) -> list[dict[str, Any]]:
    smoke = any(data["device"] != "cuda" for data in compiled)
    rows = []
    for ratio in RATIOS:
        pairs = _pairs(compiled, ratio)
        if not pairs:
            continue
        s = paired_ratios([_total(n, ratio.field) for n, _ in pairs], [_total(d, ratio.field) for _, d in pairs])
        met = ratio.met(s) if ratio.met else None
        if ratio.numerator == "patched" and ratio.denominator == "stock" and ratio.field == "compile_s":
            # Equal keys for non-aliased inputs: the fix must not cost a single cache hit.
            met = met and all(_total(n, c) == _total(d, c) for n, d in pairs for c in ("hits", "misses"))
        if smoke and met is not None:
            met = "smoke"  # CPU harness: launches compute nothing, no verdict
        if ratio.met and s["n"] < MIN_PAIRS:
            met = "few"
        # Pooled medians too: where they disagree with the paired ratio, the noise is larger than the effect.
        pooled = [statistics.median(_total(r, ratio.field) for r in _ok(_runs(compiled, ratio.part, v)))
                  for v in (ratio.numerator, ratio.denominator)]
        rows.append({"label": ratio.label, "ratio": s, "goal": ratio.goal, "met": met, "pairs": s["n"],
                     "pooled": pooled[0] / pooled[1] if pooled[1] else None})
    return rows


def compile_markdown(compiled: list[dict]) -> str:
    first = compiled[0]
    reps = max((r["rep"] + 1 for data in compiled for r in data["runs"]), default=0)
    # A result completed with --resume lists every command that added runs to it.
    commands = [f"`{c}`" for data in compiled for c in data.get("commands") or [data["command"]]]
    smoke = any(data["device"] != "cuda" for data in compiled)
    runtime = "3 calls timed under the CPU harness, meaningless" if smoke else "`do_bench` median"
    rounds = any("autotune_rounds" in r for data in compiled for r in data["runs"])
    hosts = {(h["cpus"], h["cuda_visible_devices"]) for data in compiled for h in data.get("hosts") or [] if h}
    pinned = ""
    if hosts:
        pinned = " Commands ran pinned to " + "; ".join(
            f"{cpus} CPU cores" + (f" and GPU {gpu}" if gpu is not None else "") for cpus, gpu in sorted(hosts, key=str)
        ) + "."
    lines = [
        f"{first.get('device_name')}; torch {first.get('torch')}, triton {first.get('triton')}, "
        f"Python {first.get('python')}. Up to {reps} repetitions per variant, each in a fresh process with a "
        f"fresh `TORCHINDUCTOR_CACHE_DIR`, variants interleaved round-robin. Compile s: first call of every "
        f"compiled function, summed; runtime: {runtime}, summed. "
        f"Command{'s' if len(commands) > 1 else ''}: {', '.join(commands)}.{pinned}",
        "",
        "| workload | variant | setting | compile s, median [min-max] | codegen cache hits / misses "
        f"{'| autotuning rounds ' if rounds else ''}| runtime ms, median [min-max] | runs ok |",
        "|---|---|---|---|---|" + ("---|" if rounds else "") + "---|---|",
    ]
    for row in cells(compiled):
        variant = VARIANTS[row["variant"]]
        setting = f"`{variant.mode}`; {variant.about}"
        ok = f"{row['ok']}/{row['runs']}"
        if row["error"]:
            ok += f" (crash: {row['error']})"
        if row["cut"]:
            ok += f" ({row['cut']} cut by the budget)"
        if row["guard"]:
            ok += f" (guard: {', '.join(row['guard'])})"
        if variant.fix and row["runs"] and row["states"] != ["applied"] and variant.mode == "max-autotune-no-cudagraphs":
            ok += f" (fix state: {', '.join(row['states'])})"
        rounds_cell = f"| {row['autotune_rounds']} " if rounds else ""
        lines.append(
            f"| ({row['part']}) {PARTS[row['part']]} | {row['variant']} | {setting} | {span(row['compile_s'], 2)} "
            f"| {row['hits']} / {row['misses']} {rounds_cell}| {span(row['runtime_ms'], 4)} | {ok} |"
        )
    lines += ["", "| ratio | paired by repetition, median [min-max] | of the medians | goal | met in every pair |",
              "|---|---|---|---|---|"]
    for row in ratios(compiled):
        met = {True: "yes", False: "**no**", None: "-", "smoke": "(CPU smoke)",
               "few": f"({row['pairs']} pair, no verdict)"}[row["met"]]
        pooled = "-" if row["pooled"] is None else f"{row['pooled']:.3f}"
        lines.append(f"| {row['label']} | {span(row['ratio'])} | {pooled} | {row['goal'] or '-'} | {met} |")
    return "\n".join(lines)


def _yes(value: bool) -> str:
    return "yes" if value else "**no**"
