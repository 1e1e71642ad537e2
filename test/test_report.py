"""What the fix did, per process and for a whole job: ``inductor_fix.activity()``, the job
report every process appends at exit (``run --report FILE``), and ``inductor-fix report``."""

from __future__ import annotations

import dataclasses

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from helpers import OP, ORDER, crashing_job, is_affected, needs_a_check_op
from hypothesis import given, settings
from hypothesis import strategies as st

import inductor_fix
from inductor_fix._report_writer import choice_kind
from inductor_fix.check.parts import by_op
from inductor_fix.patches import PATCHES
from inductor_fix.report import EXIT_STATUS, FORMAT, READS, Skipped, attribute, format_summary, summarize
from torch._inductor.test_case import TestCase, run_tests

ROOT = Path(__file__).resolve().parents[1]
HERE = str(Path(__file__).resolve().parent)  # quick_autotuning, for the jobs
#: The job that needs the fix: the check table's first op in its first sequence (its patch's
#: workload, which crashes stock on an affected torch), whichever patch shows it.
#: A job under the CPU harness; it imports the harness, never ``inductor_fix`` itself. ``work``:
#: what it compiles, one of the two below.
JOB = """
import sys
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache
import inductor_fix.check.harness as harness
from inductor_fix.check.table import run_sequence
sys.path.insert(0, {here!r})
from quick_autotuning import quick_cpu_autotuning

with fresh_cache(), quick_cpu_autotuning(), harness.triton_cpu_harness(), config.patch(fx_graph_cache=False):
{work}
print("DONE")
"""
#: A job whose compiles may come from Inductor's caches (in TORCHINDUCTOR_CACHE_DIR): its FX graph
#: cache on, no fresh cache.
CACHED = """
import sys
import torch
import inductor_fix.check.harness as harness
sys.path.insert(0, {here!r})
from quick_autotuning import quick_cpu_autotuning

with quick_cpu_autotuning(), harness.triton_cpu_harness():
{work}
print("DONE")
"""
#: The check case: what its steps did is the job report's to say, not the script's.
SEQUENCE = "    run_sequence({op!r}, {order!r}, 'cpu', compare=False)"
#: One max-autotune matmul of distinct operands: choices benchmarked, nothing for any patch to do.
PLAIN = """
    x, y = torch.randn(2, 4, 32, 32).unbind(0)
    torch.compile(lambda a, b: a @ b, mode="max-autotune-no-cudagraphs")(x, y)
"""


def _job_script(needs_the_fix: bool) -> str:
    work = SEQUENCE.format(op=OP, order=ORDER) if needs_the_fix else PLAIN.strip("\n")
    return textwrap.dedent(JOB).format(here=HERE, work=work)


def _environment(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDUCTOR_FIX_") and k != "PYTHONPATH"}
    return {**env, **overrides}


def _cli(*args: str, timeout: float = 600, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inductor_fix", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=_environment(**env))


def _line(**patches: dict) -> dict:
    """A report line with every patch of the table applied, ``patches`` overriding some."""
    return {"format": FORMAT, "inductor_fix": inductor_fix.__version__, "pid": 1, "ppid": 0, "torch": "2.14.1",
            "benchmarks": 3,
            "patches": [{"name": p.name, "state": "applied", "reason": "", "counts": {}, "details": [],
                         **patches.get(p.name, {})} for p in PATCHES]}


class TestActivity(TestCase):
    def test_activity_names_every_patch(self) -> None:
        self.assertEqual(set(inductor_fix.activity()), {p.name for p in PATCHES})
        for snapshot in inductor_fix.activity().values():
            self.assertEqual(set(snapshot), {"counts", "details"})


#: A patch that fixes a crash (``Patch.protects``): its activity means the job needed the fix; a
#: patch that only saves cost acting says nothing of that. The table's first, whichever is retired.
FIXER = next((p for p in PATCHES if p.protects), PATCHES[0])


def _acted(patch=FIXER, count: int = 1) -> dict:
    """The report fields of ``patch`` having done ``count`` of its first kind."""
    return {patch.name: {"counts": {next(iter(patch.activity.kinds)): count}}}


class TestSummary(TestCase):
    def test_needed_yes_when_any_patch_acted(self) -> None:
        acted = FIXER.name
        summary = summarize([_line(), _line(**_acted(count=2))])
        self.assertIs(summary["needed"], True)
        self.assertEqual(summary["patches"][acted]["processes_acted"], 1)
        self.assertIn("keep inductor_fix", summary["advice"])
        self.assertIn(f"{acted} is needed until {FIXER.delete_when}", summary["advice"])  # when it can go

    def test_needed_no_says_how_to_remove(self) -> None:
        for state, phrase in (("applied", "no patch found anything to do"), ("not-needed", "has none of the bugs")):
            summary = summarize([_line(**{p.name: {"state": state} for p in PATCHES})])
            self.assertIs(summary["needed"], False)
            self.assertIn(phrase, summary["advice"])
            self.assertIn("pip uninstall inductor-fix", summary["advice"])

    def test_needed_unknown_when_nothing_was_benchmarked(self) -> None:
        """Compiles served whole from Inductor's caches never reach the buggy benchmark."""
        summary = summarize([{**_line(), "benchmarks": 0}])
        self.assertIsNone(summary["needed"])
        self.assertIn("empty TORCHINDUCTOR_CACHE_DIR", summary["advice"])

    def test_needed_unknown_when_the_fix_was_off(self) -> None:
        off = _line(**{p.name: {"state": "disabled"} for p in PATCHES})
        summary = summarize([{**off, "disable": "1"}])
        self.assertIsNone(summary["needed"])
        self.assertIn("the fix was off", summary["advice"])

    def test_the_fix_was_off_where_a_patch_disabled_on_a_torch_without_its_crash_is_not_needed(self) -> None:
        # INDUCTOR_FIX_DISABLE=1 on 2.15.0: the patch whose crash that torch lacks says not-needed,
        # the others disabled. The fix was off; it was not "on in 1 process".
        for spared in (p for p in PATCHES if p.protects):
            off = _line(**{p.name: {"state": "not-needed" if p is spared else "disabled"} for p in PATCHES})
            summary = summarize([{**off, "disable": "1"}])
            self.assertEqual(summary["processes_with_fix_on"], 0, spared.name)
            self.assertIn("the fix was off", summary["advice"])
        # Negative control: one patch applied is the fix on.
        applied = _line(**{p.name: {"state": "applied" if p is FIXER else "disabled"} for p in PATCHES})
        self.assertEqual(summarize([applied])["processes_with_fix_on"], 1)

    def test_needed_unknown_when_a_patch_was_off_where_choices_were_benchmarked(self) -> None:
        """"No" is a claim about every patch: one switched off in a process that benchmarked
        choices could have been the one the job needs."""
        off = PATCHES[-1].name
        for state in ("disabled", "removed", "unsupported"):
            summary = summarize([_line(), _line(**{off: {"state": state}})])
            self.assertIsNone(summary["needed"], state)
            self.assertIn(f"{off} ({state}) was off in 1 process(es)", summary["advice"])
        everything_off = _line(**{p.name: {"state": "disabled"} for p in PATCHES})
        self.assertIsNone(summarize([_line(), everything_off])["needed"])
        # Off only where nothing was benchmarked (a launcher, a data worker): the rest still judge.
        self.assertIs(summarize([_line(), {**everything_off, "benchmarks": 0}])["needed"], False)

    def test_a_process_that_died_in_a_compile_is_not_one_that_compiled_nothing(self) -> None:
        died = {**_line(), "benchmarks": 0, "exit_error": {
            "error": "RuntimeError: 0 active drivers ([]). There should only be one.", "in_compile": True,
            "raised_in": "triton/runtime/driver.py:12"}}
        for entries in ([died], [_line(), died]):  # with or without another process that benchmarked cleanly
            summary = summarize(entries)
            self.assertIsNone(summary["needed"])
            self.assertEqual(summary["processes_died_in_compile"], 1)
            self.assertIn("died of an exception raised in a compile", summary["advice"])
            self.assertIn("0 active drivers", summary["advice"])
            self.assertIn("that error is not inductor_fix's", summary["advice"])
            self.assertNotIn("TORCHINDUCTOR_CACHE_DIR", summary["advice"])
        launch = "TypeError: launcher() got multiple values for argument 'stream'"
        off = {**_line(**{p.name: {"state": "disabled"} for p in PATCHES}), "benchmarks": 0, "disable": "1",
               "format": min(READS)}  # a format-1 line: where it was raised, it does not say
        bug = {**off, "exit_error": {**died["exit_error"], "raised_in": "job.py:3", "error": launch}}
        summary = summarize([bug])
        # Each patch whose crash ends so and names where it strikes is a suspect (the nets, which
        # strike anywhere, only after them, and named beside them).
        suspects = [p.name for p in PATCHES if p.crash.matches(launch) and p.crash.placed] or [
            p.name for p in PATCHES if p.crash.matches(launch)]
        nets = [p.name for p in PATCHES if p.crash.matches(launch) and not p.crash.placed and p.name not in suspects]
        found = summary["died_in_compile"][0]
        self.assertEqual((found["finding"], [p["name"] for p in found["patches"]]), ("off", suspects))
        self.assertEqual([p["name"] for p in found["nets"]], nets)
        self.assertEqual({p["state"] for p in found["patches"]}, {"disabled"})
        self.assertIn("INDUCTOR_FIX_DISABLE=1 turned", summary["advice"])
        self.assertNotIn("please report", summary["advice"])
        # The same crash where those patches were applied: the fix did not hold, which is reported.
        held = {**bug, "patches": _line()["patches"], "disable": None}
        also = f", and so {'was' if len(nets) == 1 else 'were'} {' and '.join(nets)}" if nets else ""
        self.assertIn(f"yet {' and '.join(suspects)} {'was' if len(suspects) == 1 else 'were'} applied in that "
                      f"process{also}", " ".join(summarize([held])["advice"].split()))
        self.assertIn("please report it", summarize([held])["advice"])
        # An exception outside any compile (the program's own) leaves the verdict alone.
        elsewhere = {**_line(), "exit_error": {**died["exit_error"], "in_compile": False}}
        self.assertIs(summarize([elsewhere])["needed"], False)

    def test_needed_no_says_why_where_no_triton_template_was_a_choice(self) -> None:
        """Issue 52: a CPU job (Inductor's CPU templates are C++) read "needed: no ... you can
        remove it" without the reason."""
        cpu = summarize([{**_line(), "template_choices": 0}, {**_line(), "template_choices": 0, "pid": 2}])
        self.assertIs(cpu["needed"], False)
        self.assertIn("no process made a Triton template choice", cpu["advice"])
        self.assertIn("pip uninstall inductor-fix", cpu["advice"])
        # Controls: one process that made some; a line that does not say (format 1).
        for other in ({**_line(), "template_choices": 4}, {**_line(), "format": min(READS)}):
            summary = summarize([{**_line(), "template_choices": 0}, other])
            self.assertIs(summary["needed"], False)
            self.assertNotIn("Triton template choice", summary["advice"])
            self.assertIn("no patch found anything to do", summary["advice"])

    def test_autotuning_of_compiles_served_from_the_fx_graph_cache_is_not_counted(self) -> None:
        served = {**_line(), "benchmarks": 2, "fx_graph_cache": {"hit": 1, "miss": 0, "bypass": 0}}
        summary = summarize([served])
        self.assertEqual((summary["benchmarks"], summary["benchmarks_counted"], summary["cached_compiles"]), (0, 2, 1))
        self.assertIsNone(summary["needed"])
        self.assertIn("every compile was served from Inductor's caches", summary["advice"])
        self.assertIn("0 autotuning benchmark(s) ran, 1 compile(s) served from the FX graph cache",
                      format_summary(summary))
        # A process that compiled too: its rounds count, maybe with a cached compile's among them.
        mixed = {**served, "fx_graph_cache": {"hit": 1, "miss": 1, "bypass": 0}}
        summary = summarize([mixed])
        self.assertEqual((summary["benchmarks"], summary["needed"]), (2, False))
        self.assertIn("at most 2 autotuning benchmark(s) ran", format_summary(summary))
        # A format-1 line (no cache counts) reads as before.
        self.assertEqual(summarize([{**_line(), "format": min(READS), "benchmarks": 2}])["benchmarks"], 2)

    def test_a_death_is_said_where_the_fix_acted_too(self) -> None:
        """A patch acted (needed: yes) and a process died anyway: what of is said after the verdict
        (a patch that was off there is the rest of the fix to turn on)."""
        died = _died_of(GRID_2, None, {})
        summary = summarize([_line(**_acted()), died])
        self.assertIs(summary["needed"], True)
        advice = " ".join(summary["advice"].split())
        self.assertIn("keep inductor_fix", advice)
        self.assertIn("Yet 1 process(es) died of an exception raised in a compile", advice)

    def test_where_names_rank_pid_and_host(self) -> None:
        summary = summarize([{**_line(**_acted()), "rank": "3", "pid": 41, "host": "node7"}])
        self.assertEqual(summary["patches"][FIXER.name]["where"][0]["process"], "rank 3, pid 41 on node7")


#: A patch's states in a process (status's words), and those in which it was off there.
STATES = ("applied", "not-needed", "disabled", "removed", "unsupported", "pending")
OFF = ("disabled", "removed", "unsupported", "pending")
#: A selection and a Triton template that no patch's crash names: where a net's crash is placed.
_NAMED = {name for patch in PATCHES for name in (*patch.crash.selections, *patch.crash.choices)}
NEUTRAL_SELECTION = next(f"selection_{i}" for i in range(100) if f"selection_{i}" not in _NAMED)
NEUTRAL_CHOICE = next(f"triton_template_{i}" for i in range(100) if f"triton_template_{i}" not in _NAMED)
#: The kind of a choice no patch's crash names, and not a Triton template's: ATen's.
EXTERN = "ExternKernelCaller"
#: The two errors of issue 52: a flex selection's launch one tensor short, and the guard's own
#: error where it left a selection no choice (the issue's was a matmul's; any selection's reads the same).
GRID_2 = "TypeError: launcher() missing 1 required positional argument: '_grid_2'"
STREAM = "TypeError: launcher() got multiple values for argument 'stream'"
NO_CHOICE_LEFT = ("NoValidChoicesError: inductor_fix: no choice is left for 'int_mm': the arity guard excluded all 6 "
                  "Triton template choices and no other backend offered one")
#: The nets: patches whose crash is placed nowhere (any selection's).
NETS = tuple(p for p in PATCHES if not p.crash.placed)


def _place(patch=None, choice: bool = True) -> dict:
    """``exit_error``'s fields for an error raised where ``patch``'s crash strikes (the first
    selection and choice kind it names; a neutral place for what it does not name), the kinds of
    the selection's choices as the writer records them."""
    selection = patch.crash.selections[0] if patch is not None and patch.crash.selections else NEUTRAL_SELECTION
    kind = patch.crash.choices[0] if patch is not None and patch.crash.choices else NEUTRAL_CHOICE
    made = ({"type": "TritonTemplateCaller", "name": f"{kind}_3"} if kind.startswith("triton_") else
            {"type": kind, "name": "kernel_3"})
    return {"selection": selection, **({"choice": made} if choice else {}), "choices": sorted({kind, EXTERN})}


def _nowhere() -> dict:
    """``exit_error``'s fields for an error raised where no placed patch's crash strikes: a
    selection none names, with only ATen's choice."""
    return {"selection": NEUTRAL_SELECTION, "choice": {"type": EXTERN, "name": "extern_mm"}, "choices": [EXTERN]}


def _as_classes(place: dict) -> dict:
    """``place`` as lines written before ``choices`` held kinds say it: Triton template choices by class."""
    return {**place, "choices": sorted({"TritonTemplateCaller" if c.startswith("triton_") else c
                                        for c in place["choices"]})}


def _died_of(error: str, place: dict | None, states: dict[str, str], others: str = "applied",
             line_format: int = FORMAT) -> dict:
    """A report line of a process that died of ``error`` raised at ``place`` (None: a format-1
    line, which does not say), each patch in ``states`` or else in state ``others``."""
    line = _line(**{p.name: {"state": states.get(p.name, others)} for p in PATCHES})
    if place is None:
        line_format = min(READS)
    return {**line, "format": line_format, "benchmarks": 0, "exit_error": {
        "error": error, "in_compile": True, "raised_in": "torch/_inductor/select_algorithm.py:1",
        **(place or {})}}


def _forms(patch, generic: bool | None = None) -> tuple[str, ...]:
    """The regular expressions of ``patch``'s crash: all, or only the generic ones (True), or only
    those that say by themselves that it is its crash (False)."""
    return {None: (*patch.crash.errors, *patch.crash.generic), True: patch.crash.generic,
            False: patch.crash.errors}[generic]


def _text(data, form: str, label: str) -> str:
    return data.draw(st.from_regex(form, fullmatch=True), label=label)


def _advice(*lines: dict) -> str:
    return " ".join(summarize(list(lines))["advice"].split())


class TestCrashAttribution(TestCase):
    """One crash, one patch (issue 52): a process that died in a compile is attributed from
    everything its line holds (each patch's state, the error, where it was raised), over every
    patch of the table x state x crash form; patches whose crashes end alike are told apart by
    where they strike, or said to be ambiguous."""

    @given(data=st.data())
    def test_each_patch_x_state_x_crash_form(self, data) -> None:
        for patch in PATCHES:
            for form in _forms(patch):
                text = _text(data, form, f"{patch.name}: {form}")
                for state in STATES:
                    for others in ("applied", "disabled"):
                        found = attribute(_died_of(text, _place(patch), {patch.name: state}, others))
                        why = (patch.name, state, others, text, found)
                        if state in OFF:  # it was off, and explains the crash: turn it on
                            self.assertEqual((found.finding, found.patches), ("off", (patch,)), why)
                        elif state == "applied":  # it was on, and the crash happened anyway
                            self.assertEqual((found.finding, found.patches), ("applied", (patch,)), why)
                        else:  # not-needed: that torch lacks its crash, so it is no cause
                            self.assertFalse(found.finding in ("off", "applied") and patch in found.patches, why)
                        if patch in found.patches and patch.crash.placed:
                            # The nets that could have stopped it are named beside it (not-needed ones are not).
                            nets = tuple(n for n in NETS if n.crash.matches(text)
                                         and (others if n is not patch else state) != "not-needed")
                            self.assertEqual(found.nets, nets, why)

    @given(data=st.data())
    def test_an_error_that_reads_like_a_crash_where_it_cannot_strike_is_not_ours(self, data) -> None:
        """Breaker 1: a stock NoValidChoicesError of a Triton-only matmul selection (no CUTLASS
        choice), a ``View`` error in a matmul selection, read "a crash of the kind inductor_fix
        fixes ... please report it". Every form of every placed patch's crash, raised in a
        selection where it cannot strike, whatever the patches' states: not ours, fix that error.
        Negative control: the same error where the crash strikes is the patch's."""
        for patch in (p for p in PATCHES if p.crash.placed):
            for form in _forms(patch):
                text = _text(data, form, f"{patch.name}: {form}")
                if any(n.crash.matches(text) for n in NETS):  # a net's crash strikes in any selection
                    continue
                for state in STATES:
                    line = _died_of(text, _nowhere(), {patch.name: state}, others=state)
                    found = attribute(line)
                    self.assertEqual(found.finding, "not-ours", (patch.name, text, state, found))
                    advice = _advice(line)
                    self.assertIn("that error is not inductor_fix's", advice)
                    self.assertIn("fix that error", advice)
                    self.assertNotIn("please report", advice)
                    # Each patch whose crash reads alike is named (several where no net takes the form).
                    self.assertRegex(advice, rf"it reads like the crash ([\w-]+ or )*{re.escape(patch.name)}"
                                             rf"( or [\w-]+)* fixes")
                control = attribute(_died_of(text, _place(patch), {patch.name: "disabled"}))
                self.assertEqual((control.finding, control.patches), ("off", (patch,)), text)

    def test_a_stock_no_choices_error_where_no_choice_was_ones_crash(self) -> None:
        """Breaker 1's real line (``max_autotune_gemm_backends="TRITON"`` on a CPU: the selection
        has no choice at all)."""
        text = ("InductorError: LoweringException: NoValidChoicesError: No choices to select. Provided reason: No "
                "choices exist for backend. please consider adding ATEN into max_autotune_gemm_backends config")
        if not any(p.crash.matches(text) for p in PATCHES):
            self.skipTest("no patch's crash reads like Inductor's NoValidChoicesError")
        line = _died_of(text, {"selection": NEUTRAL_SELECTION, "choices": []}, {})
        self.assertEqual(attribute(line).finding, "not-ours")
        self.assertNotIn("please report", _advice(line))

    @given(data=st.data())
    def test_an_error_raised_outside_any_selection_is_not_a_patchs(self, data) -> None:
        """Breaker 5: a format-2 line without a selection says the error was raised outside
        autotuning, where no patch's crash strikes (an illegal memory access read "cutlass ...
        applied: please report it", and with that patch disabled "turn it on")."""
        for patch in PATCHES:
            for form in _forms(patch):
                text = _text(data, form, f"{patch.name}: {form}")
                for state in STATES:
                    line = _died_of(text, {}, {patch.name: state})
                    self.assertEqual(attribute(line).finding, "not-ours", (patch.name, text, state))
                    advice = _advice(line)
                    self.assertIn("raised outside any autotuning selection", advice)
                    self.assertNotIn("please report", advice)
                    self.assertNotIn("turn it on", advice)

    @given(data=st.data())
    def test_a_generic_form_counts_only_where_the_line_places_it(self, data) -> None:
        """Breaker 5: a format-1 line (which does not say where) of a stock NoValidChoicesError,
        every patch applied, read "cutlass ... applied: please report it". A generic form (one
        other failures end in too) is a patch's crash only where the line places it there; a form
        that says by itself it is the crash is, on a format-1 line too."""
        for patch in PATCHES:
            for generic in (True, False):
                for form in _forms(patch, generic):
                    text = _text(data, form, f"{patch.name}: {form}")
                    found = attribute(_died_of(text, None, {patch.name: "disabled"}))
                    if generic:
                        self.assertEqual(found.finding, "not-ours", (patch.name, text, found))
                        self.assertIn("this line does not say where it was raised",
                                      _advice(_died_of(text, None, {patch.name: "disabled"})))
                    elif patch.crash.placed:
                        self.assertEqual((found.finding, found.patches), ("off", (patch,)), (patch.name, text))
                    placed = attribute(_died_of(text, _place(patch), {patch.name: "disabled"}))
                    self.assertEqual((placed.finding, placed.patches), ("off", (patch,)), (patch.name, text))

    @given(data=st.data())
    def test_the_packages_own_errors_are_named_as_such(self, data) -> None:
        """An error a patch raises where it stops a crash (``Crash.raises``) is its own, never a
        stock crash that another patch's form also matches (issue 52: the guard's own
        NoValidChoicesError was blamed on the CUTLASS patch, whose crash may end in one); the
        crash it stopped is attributed by where it was raised: to the patch whose crash strikes
        there, off (turn it on) or applied (please report it), never to one whose crash cannot
        (breaker 2: the guard's error in a flex selection was blamed on the matmul patch, disabled,
        and the flex patch, applied, was not named)."""
        for raiser in (p for p in PATCHES if p.crash.raises):
            texts = [_text(data, form, raiser.name) for form in raiser.crash.raises]
            texts += [NO_CHOICE_LEFT] if raiser.crash.is_own(NO_CHOICE_LEFT) else []
            kin = [p for p in PATCHES if p is not raiser and set(p.crash.errors) & set(raiser.crash.errors)]
            for text in texts:
                for state in STATES:
                    found = attribute(_died_of(text, _place(), {raiser.name: state}))
                    self.assertEqual((found.finding, found.stopped_by), ("own-error", raiser), (text, state))
                    self.assertEqual(found.patches, (raiser,))
                for stopped in kin:
                    # Timed inf at benchmark: the selection's choices are listed. Excluded as they were
                    # generated: none is (which kinds, the line cannot say).
                    for place in (_place(stopped, choice=False), {**_place(stopped, choice=False), "choices": []}):
                        for state, finding in (("disabled", "off"), ("applied", "applied")):
                            others = "applied" if state == "disabled" else "disabled"
                            found = attribute(_died_of(text, place, {stopped.name: state}, others))
                            self.assertEqual((found.cause.finding, found.cause.patches), (finding, (stopped,)),
                                             (text, stopped.name, place, state))
                found = attribute(_died_of(text, _place(), {}))  # every patch applied: no patch explains it
                self.assertNotIn(found.cause.finding, ("off",), (text, found))

    def test_the_guards_own_error_on_a_line_that_names_choices_by_class(self) -> None:
        """Breaker 2's line (written before ``choices`` held kinds: ``["TritonTemplateCaller"]``):
        the patch whose crash the selection places there is named, not one the line cannot place."""
        raiser = next((p for p in PATCHES if p.crash.raises), None)
        by_selection = next((p for p in PATCHES if p is not raiser and p.crash.selections
                             and raiser and set(p.crash.errors) & set(raiser.crash.errors)), None)
        by_template = next((p for p in PATCHES if raiser and set(p.crash.errors) & set(raiser.crash.errors)
                            and any(k.startswith("triton_") for k in p.crash.choices)), None)
        if not (raiser and by_selection and by_template):
            self.skipTest("no net raising its own error beside patches placed by selection and by template")
        text = next(t for t in (NO_CHOICE_LEFT, *raiser.crash.raises) if raiser.crash.is_own(t))
        place = _as_classes(_place(by_selection, choice=False))
        line = _died_of(text, place, {by_template.name: "disabled", by_selection.name: "applied"})
        found = attribute(line)
        self.assertEqual((found.cause.finding, found.cause.patches), ("applied", (by_selection,)))
        advice = _advice(line)
        self.assertIn(f"the crash it stopped is the one {by_selection.name} fixes", advice)
        self.assertNotIn(f"{by_template.name} was disabled", advice)

    def test_a_line_that_names_triton_choices_by_class_cannot_rule_a_template_out(self) -> None:
        """Breaker 8: the line's ``choices`` held class names where a crash names Triton templates,
        so a patch placed by template never fitted a selection whose choice was not recorded. Lines
        now hold kinds; one that names a Triton template choice by class cannot rule one out."""
        for patch in (p for p in PATCHES if any(k.startswith("triton_") for k in p.crash.choices)):
            for text in (t for t in (GRID_2, STREAM, *patch.crash.errors) if patch.crash.identifies(t)):
                kinds = _place(patch, choice=False)
                for place in (kinds, _as_classes(kinds)):
                    found = attribute(_died_of(text, place, {patch.name: "disabled"}))
                    self.assertEqual((found.finding, found.patches), ("off", (patch,)), (text, place))
                # Control: a selection whose only choice is ATen's: the patch is not the cause (a
                # "not-ours" finding lists it among the crashes the error reads like).
                found = attribute(_died_of(text, {**kinds, "choices": [EXTERN]}, {patch.name: "disabled"}))
                self.assertFalse(found.finding in ("off", "applied") and patch in found.patches, (text, found))
                break

    def test_a_net_that_was_off_is_named_beside_the_patch(self) -> None:
        """Breaker 6: the net off, the patch whose crash it was applied, read "<patch> was applied
        ... please report it" without the net. Each placed patch x each net whose crash ends
        alike: the net is named beside it, with how to turn it on, or, applied, as not holding."""
        pairs = [(p, n) for p in PATCHES for n in NETS if p.crash.placed and set(p.crash.errors) & set(n.crash.errors)]
        for patch, net in pairs:
            text = next(t for t in (GRID_2, STREAM) if patch.crash.matches(t) and net.crash.matches(t))
            for state in ("applied", "disabled"):
                line = {**_died_of(text, _place(patch), {patch.name: state, net.name: "disabled"}), "disable": net.name}
                found = attribute(line)
                self.assertEqual((found.finding, found.patches, found.nets),
                                 ("off" if state == "disabled" else "applied", (patch,), (net,)), state)
                advice = _advice(line)
                self.assertIn(f"{net.name} (disabled), a net for every crash of this kind, would have stopped it too: "
                              f"turn it on (INDUCTOR_FIX_DISABLE={net.name} turned it off: unset it)", advice)
                self.assertEqual("please report" in advice, state == "applied", advice)
            # The net applied and the crash got through: it did not hold either.
            advice = _advice(_died_of(text, _place(patch), {patch.name: "disabled", net.name: "applied"}))
            self.assertIn(f"{net.name} (a net for every crash of this kind) was applied there and should have stopped "
                          "it: please report it", advice)
            # Not needed there: not named.
            line = _died_of(text, _place(patch), {patch.name: "disabled", net.name: "not-needed"})
            self.assertEqual(attribute(line).nets, ())
            self.assertNotIn(net.name, _advice(line))

    def test_a_patch_that_was_off_is_named_where_another_was_not_needed(self) -> None:
        """Issue 52's first case: the flex patch disabled, the matmul codegen-cache patch not-needed,
        dying of launcher() missing '_grid_2' in a flex selection read "<the matmul patch> ...
        please report it":
        each pair of patches whose crashes end alike, one off and one not needed, names the one off,
        with the place (format 2) exactly, without it (format 1) among the suspects."""
        pairs = [(p, q) for p in PATCHES for q in PATCHES
                 if p is not q and p.crash.placed and set(p.crash.errors) & set(q.crash.errors)]
        for p, q in pairs:
            text = GRID_2 if p.crash.matches(GRID_2) and q.crash.matches(GRID_2) else None
            if text is None:
                continue
            others = {n.name: "not-needed" for n in NETS if n is not p}  # the nets: named beside (tested above)
            for state in OFF:
                found = attribute(_died_of(text, _place(p), {**others, p.name: state, q.name: "not-needed"}))
                self.assertEqual((found.finding, found.patches), ("off", (p,)), (p.name, q.name, state))
                found = attribute(_died_of(text, None, {**others, p.name: state, q.name: "not-needed"}))
                self.assertEqual(found.finding, "off", (p.name, q.name, state))
                self.assertIn(p, found.patches)
                self.assertNotIn(q, found.patches)
            advice = _advice(_died_of(text, _place(p), {**others, p.name: "disabled", q.name: "not-needed"}))
            self.assertIn(f"{p.name} was disabled in that process: turn it on", advice)
            self.assertNotIn("please report", advice)
            self.assertNotIn(f"{q.name} was", advice)

    def test_ambiguous_where_the_line_cannot_tell(self) -> None:
        """Several patches whose crash ends so, each off and each able to strike there: all named,
        and said to be ambiguous."""
        for text in (GRID_2, STREAM):
            suspects = tuple(p for p in PATCHES if p.crash.matches(text) and p.crash.placed)
            if len(suspects) < 2:
                continue
            line = _died_of(text, None, {p.name: "disabled" for p in PATCHES})
            self.assertEqual((attribute(line).finding, attribute(line).patches), ("off", suspects))
            self.assertIn("the line cannot tell which of them", _advice(line))

    def test_the_remedy_fits_the_state(self) -> None:
        """Breaker 4: a patch removed in code, another named by INDUCTOR_FIX_DISABLE, read "<the
        removed one> ... turn it on (INDUCTOR_FIX_DISABLE=<the other> turned it off: unset it)".
        Each patch x each way it was off x each value of the variable: the remedy is the state's."""
        for patch in (p for p in PATCHES if p.crash.placed and p.crash.identifies(_text_of(p))):
            other = next(p.name for p in PATCHES if p is not patch)
            text = _text_of(patch)
            nets = {n.name: "not-needed" for n in NETS}
            cases = [  # (state, INDUCTOR_FIX_DISABLE, what the remedy says)
                ("removed", None, "inductor_fix.apply() puts it back"),
                ("removed", other, "inductor_fix.apply() puts it back"),
                ("disabled", patch.name, f"INDUCTOR_FIX_DISABLE={patch.name} turned it off: unset it"),
                ("disabled", "1", "INDUCTOR_FIX_DISABLE=1 turned it off: unset it"),
                ("disabled", f"{patch.name},{other}",
                 f"INDUCTOR_FIX_DISABLE={patch.name},{other} turned it off: take {patch.name} out of it"),
                ("disabled", None, f"INDUCTOR_FIX_DISABLE turned it off: unset it, or take {patch.name} out of it"),
                ("unsupported", other, "README's troubleshooting gives a workaround"),
            ]
            for state, disable, says in cases:
                line = {**_died_of(text, _place(patch), {**nets, patch.name: state}), "disable": disable}
                advice = _advice(line)
                self.assertIn(says, advice, (patch.name, state, disable))
                if state != "disabled":
                    self.assertNotIn("INDUCTOR_FIX_DISABLE=", advice.split("A compile")[0], (state, disable))

    def test_a_patch_missing_from_the_line(self) -> None:
        """Breaker 7: a line of an inductor_fix without a patch (older), dying of that patch's
        crash where it strikes, read "<patch> (None): that torch does not have its crash"."""
        for patch in (p for p in PATCHES if p.crash.placed and p.crash.identifies(_text_of(p))):
            line = _died_of(_text_of(patch), _place(patch), {n.name: "not-needed" for n in NETS})
            line = {**line, "inductor_fix": "0.0.1", "patches": [p for p in line["patches"] if p["name"] != patch.name]}
            found = attribute(line)
            self.assertEqual((found.finding, found.patches), ("off", (patch,)))
            died = summarize([line])["died_in_compile"][0]
            self.assertEqual(died["patches"], [{"name": patch.name, "state": None, "reason": None}])
            advice = _advice(line)
            self.assertIn(f"inductor_fix 0.0.1, which wrote that line, has no {patch.name}: install one that has it",
                          advice)
            self.assertNotIn("None", advice)
            self.assertNotIn("does not have its crash", advice)

    def test_an_error_no_patch_explains(self) -> None:
        # A crash of the kind, where every patch that fixes it is not needed: please report it.
        matching = tuple(p for p in PATCHES if p.crash.identifies(GRID_2))
        line = _died_of(GRID_2, None, {p.name: "not-needed" for p in matching})
        self.assertEqual(attribute(line).finding, "unexplained" if matching else "not-ours")
        if matching:
            self.assertEqual(attribute(line).patches, matching)  # named as why: that torch lacks their crash
            self.assertIn("no patch explains there", _advice(line))
            self.assertIn("please report it", summarize([line])["advice"])
        # Not a crash of the kind: not inductor_fix's, nobody blamed.
        line = _died_of("RuntimeError: 0 active drivers ([]). There should only be one.", _place(), {})
        self.assertEqual(attribute(line)[:4], ("not-ours", (), None, None))
        self.assertNotIn("please report", _advice(line))
        # An error the code of a patch raised, which it does not declare: the package's fault.
        for patch in PATCHES:
            line = _died_of("ZeroDivisionError: division by zero", _place(), {})
            line["exit_error"]["raised_by"] = patch.name
            found = attribute(line)
            self.assertEqual((found.finding, found.patches), ("package-fault", (patch,)))
            self.assertIn(f"INDUCTOR_FIX_DISABLE={patch.name} runs without", summarize([line])["advice"])

    def test_the_died_entry_names_patches_under_patches(self) -> None:
        """``report --json``'s died_in_compile entry: the patches it names, each with its state
        and reason, under ``patches`` (it was ``kind``, a patch's name under another word)."""
        patch = next((p for p in PATCHES if p.crash.errors), None)
        if patch is None:
            self.skipTest("no patch of the table declares a crash")
        died = summarize([_died_of(_text_of(patch), _place(patch), {patch.name: "disabled"})])["died_in_compile"][0]
        self.assertNotIn("kind", died)
        self.assertEqual(died["patches"], [{"name": patch.name, "state": "disabled", "reason": ""}])
        self.assertEqual(died["finding"], "off")


#: Stock crashes as seen: the two launches of the wrong arity, CUTLASS's error (an H200, torch 2.11.0).
SEEN = (GRID_2, STREAM, "RuntimeError: Error in function: cutlass_5f3b1c2a")


def _text_of(patch) -> str:
    """A stock crash seen that says by itself it is ``patch``'s ("" if none is)."""
    return next((t for t in SEEN if patch.crash.identifies(t)), "")


class TestEveryDeath(TestCase):
    """Breaker 3: the text advice said only the first process that died (rank 0's out-of-memory
    error, not rank 1's crash with the patch that fixes it disabled; ``--json`` had both)."""

    def test_each_explanation_is_said_once_with_every_process_it_holds_for(self) -> None:
        patch = next((p for p in PATCHES if p.crash.placed and _text_of(p)), None)
        if patch is None:
            self.skipTest("no placed patch of the table has a crash form to show")
        oom = {**_died_of("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", _place(patch), {}),
               "rank": "0", "pid": 11}
        crashes = [{**_died_of(_text_of(patch), _place(patch), {patch.name: "disabled"}), "rank": str(rank),
                    "pid": 11 + rank, "disable": patch.name} for rank in range(1, 6)]
        summary = summarize([oom, *crashes])
        advice = " ".join(summary["advice"].split())
        self.assertIn("6 process(es) died of an exception raised in a compile: (1) rank 0, pid 11: RuntimeError: CUDA "
                      "out of memory", advice)
        self.assertIn("that error is not inductor_fix's", advice)
        self.assertIn(f"(2) rank 1, pid 12: {_text_of(patch)}", advice)
        self.assertIn("and 4 more process(es) alike (rank 2, pid 13, rank 3, pid 14, rank 4, pid 15, ...)", advice)
        self.assertIn(f"{patch.name} was disabled in that process: turn it on (INDUCTOR_FIX_DISABLE={patch.name} "
                      "turned it off: unset it)", advice)
        self.assertEqual([(d["process"], d["alike"]) for d in summary["died_in_compile"]],
                         [("rank 0, pid 11", 1), ("rank 1, pid 12", 5)])
        # One process: said as before, without numbers.
        single = " ".join(summarize([oom])["advice"].split())
        self.assertIn("1 process(es) died of an exception raised in a compile: rank 0, pid 11: RuntimeError", single)
        self.assertNotIn("(1)", single)


class TestReportCommand(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_report_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def _write(self, *lines: str) -> Path:
        path = self.directory / f"job-{len(list(self.directory.iterdir()))}.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        return path

    def test_exit_statuses_and_first_line(self) -> None:
        cases = [
            (self._write(json.dumps(_line(**_acted()))), 0, "needed: yes"),
            (self._write(json.dumps(_line())), 0, "needed: no"),
            (self._write(), 1, "needed: unknown"),  # empty: no process loaded Inductor
            (self.directory / "missing.jsonl", 2, "needed: unknown"),
            (self.directory, 2, "needed: unknown"),
        ]
        for path, status, first in cases:
            result = _cli("report", str(path), timeout=120)
            self.assertEqual(result.returncode, status, (path, result.stdout, result.stderr))
            self.assertEqual(result.stdout.splitlines()[0], first, result.stdout)
            self.assertNotIn("Traceback", result.stderr)
        for code in EXIT_STATUS:
            self.assertIn(f"{code} ", " ".join(_cli("report", "--help", timeout=120).stdout.split()))

    def test_a_file_that_is_not_a_job_report_says_so(self) -> None:
        import random

        noise = self.directory / "noise.bin"
        noise.write_bytes(random.Random(30).randbytes(4096))
        other = self._write(*(json.dumps({"level": "info", "msg": f"step {i}", "format": "text"}) for i in range(5)))
        for path in (noise, other):
            result = _cli("report", str(path), timeout=120)
            self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (2, "needed: unknown"), path)
            self.assertIn(f"{path} is not a job report", result.stderr)
            self.assertNotIn("Traceback", result.stderr)
            self.assertNotIn("was anything compiled", result.stdout)
        # A report whose only line was cut short is still a job report (exit 1, the line counted).
        torn = self._write(json.dumps(_line())[:40])
        result = _cli("report", str(torn), "--json", timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("skipped 1 torn or garbled line(s)", json.loads(result.stdout)["notes"])

    def test_torn_garbled_and_foreign_lines_are_skipped_and_counted(self) -> None:
        good = json.dumps(_line())
        path = self._write(good, good[: len(good) // 2], "not json", json.dumps({**_line(), "format": FORMAT + 1}))
        result = _cli("report", str(path), "--json", timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)  # what the skipped lines held is unknown
        summary = json.loads(result.stdout)
        self.assertIs(summary["needed"], None)
        self.assertEqual((summary["processes"], summary["lines_unread"]), (1, 3))
        self.assertIn("skipped 2 torn or garbled line(s)", summary["notes"])
        self.assertTrue(any(f"of format {FORMAT + 1}, written by" in note for note in summary["notes"]),
                        summary["notes"])

    def test_a_line_of_an_unknown_format_is_named(self) -> None:
        """Issue 52: a line of format 99 must be named as such, never read as needed: no."""
        future = json.dumps({**_line(), "format": 99, "inductor_fix": "9.9.9"})
        for lines, status in (([future], 1), ([json.dumps(_line()), future], 1)):
            result = _cli("report", str(self._write(*lines)), timeout=120)
            self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (status, "needed: unknown"),
                             result.stdout)
            text = " ".join(result.stdout.split())
            self.assertIn("skipped 1 line(s) of format 99, written by inductor_fix 9.9.9, which this inductor_fix",
                          text)
            self.assertIn("read the report with the inductor_fix that wrote", text)
            self.assertNotIn("torn", text)
        # Every format this version reads is read (format 1 lines as before: no new field needed).
        for number in READS:
            result = _cli("report", str(self._write(json.dumps({**_line(), "format": number}))), timeout=120)
            self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (0, "needed: no"), number)

    def test_a_torn_line_can_hide_the_process_that_needed_the_fix(self) -> None:
        """Issue 41: a process killed while writing its line leaves a prefix of it; that process
        may be the one that needed the fix, so the other lines cannot say "no" (exit 1)."""
        clean, acted = json.dumps(_line()), json.dumps({**_line(**_acted()), "pid": 2})
        torn = self._write(clean, acted[: len(acted) // 2])
        result = _cli("report", str(torn), timeout=120)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (1, "needed: unknown"), result.stdout)
        self.assertIn("1 line(s) of the report could not be read", " ".join(result.stdout.split()))
        self.assertNotIn("you can remove", result.stdout)
        # A yes stands whatever a torn line held.
        result = _cli("report", str(self._write(clean, acted, clean[:40])), timeout=120)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (0, "needed: yes"), result.stdout)

    def test_lines_of_another_shape_are_skipped_not_crashed_on(self) -> None:
        good = _line()
        bad = [{**good, "format": True}, {**good, "benchmarks": "3"}, {**good, "patches": [1]},
               {**good, "patches": [{"name": 1, "state": "applied"}]},
               {**good, "patches": [{**good["patches"][0], "counts": {next(iter(PATCHES[0].activity.kinds)): "many"}}]},
               {**good, "patches": [{**good["patches"][0], "details": "x"}]}, [good], "line"]
        path = self._write(json.dumps(good), *map(json.dumps, bad))
        result = _cli("report", str(path), "--json", timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)  # needed: unknown, not a crash
        self.assertNotIn("Traceback", result.stderr)
        summary = json.loads(result.stdout)
        self.assertEqual(summary["processes"], 1)
        self.assertIn(f"skipped {len(bad)} torn or garbled line(s)", summary["notes"])

    def test_bad_report_path_for_run_changes_nothing(self) -> None:
        fifo = self.directory / "fifo"
        os.mkfifo(fifo)
        for path, message in ((self.directory / "no" / "such" / "dir" / "f", "no such directory"),
                              (fifo, "not a regular file"), ("", "needs a file name")):
            result = _cli("run", "--report", str(path), "--", sys.executable, "-c", "print('RAN')", timeout=120)
            self.assertEqual(result.returncode, 2, path)
            self.assertIn(message, result.stderr)
            self.assertNotIn("RAN", result.stdout)

    def test_a_second_job_in_the_same_file_is_said(self) -> None:
        """Issue 41: a job's lines appended after another job's were folded into one answer
        without a word; run says so at start (README: a new file per job), and still runs."""
        used = self._write(json.dumps(_line()))
        for args, env, said in ((["--report", str(used)], {}, f"--report {used}"),
                                ([], {"INDUCTOR_FIX_REPORT": str(used)}, f"INDUCTOR_FIX_REPORT={used}"),
                                (["--report", str(self.directory / "fresh.jsonl")], {}, None)):  # control
            result = _cli("run", *args, "--", sys.executable, "-c", "print('RAN')", timeout=120, **env)
            self.assertEqual((result.returncode, result.stdout), (0, "RAN\n"), result.stderr)
            if said is None:
                self.assertNotIn("already holds", result.stderr)
            else:
                self.assertIn(f"{said} already holds 1 line(s) of another job or an earlier run", result.stderr)
                self.assertIn("give each job a new file", result.stderr)

    def test_a_command_not_found_creates_no_report(self) -> None:
        report = self.directory / "never.jsonl"
        result = _cli("run", "--report", str(report), "--", "inductor-fix-no-such-command", timeout=120)
        self.assertEqual(result.returncode, 127)
        self.assertFalse(report.exists())

    def test_reading_a_fifo_does_not_block(self) -> None:
        fifo = self.directory / "fifo"
        os.mkfifo(fifo)
        result = _cli("report", str(fifo), timeout=60)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (2, "needed: unknown"))
        self.assertIn("not a regular file", result.stderr)

    def test_crafted_lines_are_read_not_crashed_on(self) -> None:
        """Breaker 9: lines that parse as JSON made ``report`` exit 1 with a traceback: a detail
        whose kind is a list (unhashable), an error holding a lone surrogate (which UTF-8 cannot
        print), a line nested 100000 deep (beyond the parser's recursion). Each is read, or
        counted as garbled, and the exit status is the documented one."""
        kind = next(iter(FIXER.activity.kinds))
        listed = _line(**{FIXER.name: {"counts": {kind: 1}, "details": [{"kind": ["x"], "count": 1}]}})
        died = _died_of(f"{STREAM} \ud800", {"selection": NEUTRAL_SELECTION}, {})
        nested = '{"format": 2, "x": ' + "[" * 100000 + "]" * 100000 + "}"
        for text, status, first, said in ((json.dumps(listed), 0, "needed: yes", "['x']"),
                                          (json.dumps(died), 1, "needed: unknown", "\\ud800"),
                                          (nested, 1, "needed: unknown", "skipped 1 torn or garbled line(s)")):
            for args in ((), ("--json",)):
                result = _cli("report", str(self._write(text)), *args, timeout=120)
                self.assertNotIn("Traceback", result.stderr, (text[:80], args))
                self.assertEqual(result.returncode, status, (text[:80], result.stderr[-2000:]))
                if not args:
                    self.assertEqual(result.stdout.splitlines()[0], first)
                    self.assertIn(said, result.stdout)


#: Any JSON value, lone surrogates in strings included (and, often, a small container or such a string).
JSON = st.one_of(
    st.sampled_from([[], ["x"], {}, {"kind": 1}, "\ud800", f"{STREAM} \udce9", None, True, -1, 1.5]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                 max_leaves=8))


def _paths(value, path=()):
    """Every path into ``value`` (keys and indexes), the empty one first."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _paths(item, (*path, key))


def _replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


class TestAnyLine(TestCase):
    """Breaker 9, whatever a line holds: ``report`` never raises on a line it can parse as JSON."""

    @settings(max_examples=300, deadline=None)
    @given(data=st.data())
    def test_any_value_anywhere_in_a_line(self, data) -> None:
        import io
        from contextlib import redirect_stdout

        from inductor_fix import cli

        kind = next(iter(FIXER.activity.kinds))
        base = _died_of(STREAM, _place(FIXER), {FIXER.name: "disabled"})
        base["patches"][0] = {**base["patches"][0], "counts": {kind: 1}, "details": [{"kind": kind, "count": 1}]}
        line = base
        for _ in range(data.draw(st.integers(1, 3))):
            path = data.draw(st.sampled_from(list(_paths(line))))
            line = _replaced(line, path, data.draw(JSON))
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_any_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        path = directory / "job.jsonl"
        path.write_text(json.dumps(line) + "\n" + json.dumps(base) + "\n")
        for args in ((), ("--json",)):
            out = io.StringIO()
            with redirect_stdout(out):
                status = cli.main(["report", str(path), *args])
            self.assertIn(status, (0, 1, 2))
            out.getvalue().encode("utf-8")  # printable as UTF-8


class TestReportLine(TestCase):
    """The writing side, in a process of its own (no compile: a patch's activity is recorded by hand)."""

    SCRIPT = """
import os, sys, multiprocessing
import inductor_fix
from inductor_fix.patches import PATCHES
os.environ.pop("INDUCTOR_FIX_REPORT")  # a program may drop or change it after start-up
os.chdir({elsewhere!r})
import torch._inductor.select_algorithm
PATCHES[0].activity.add(next(iter(PATCHES[0].activity.kinds)))
child = multiprocessing.get_context("fork").Process(target=os.getpid)
child.start(); child.join()
print("CHILD", child.pid)
"""

    def test_forked_child_writes_its_own_line_to_the_path_set_at_start(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_line_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "elsewhere").mkdir()
        script = directory / "job.py"
        script.write_text(textwrap.dedent(self.SCRIPT.format(elsewhere=str(directory / "elsewhere"))))
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                                cwd=directory, env=_environment(INDUCTOR_FIX_REPORT="job.jsonl"))
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        child = int(result.stdout.split("CHILD")[1])
        lines = {line["pid"]: line for line in map(json.loads, (directory / "job.jsonl").read_text().splitlines())}
        self.assertEqual(set(lines), {child, lines[child]["ppid"]})
        counts = {pid: line["patches"][0]["counts"] for pid, line in lines.items()}
        self.assertEqual(counts, {child: {}, lines[child]["ppid"]: {next(iter(PATCHES[0].activity.kinds)): 1}})


class TestDiedInACompile(TestCase):
    """A process whose compile raised (PyPI triton on a CPU with cpu_backend="triton": `0 active
    drivers`) records the exception in its line, and the report says so (issue 30)."""

    SCRIPT = """
import torch, torch._inductor.select_algorithm

def no_driver(graph, inputs):
    raise RuntimeError("0 active drivers ([]). There should only be one.")

torch.compile(lambda x: x + 1, backend=no_driver)(torch.ones(2))
"""

    def test_the_report_names_the_error_and_where_it_was_raised(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_died_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "job.py").write_text(textwrap.dedent(self.SCRIPT))
        here = {"PYTHONPATH": str(ROOT)}  # this checkout's package, whichever one is installed
        launched = _cli("run", "--report", "job.jsonl", "--", sys.executable, "job.py", cwd=directory, **here)
        self.assertEqual(launched.returncode, 1, launched.stderr[-3000:])
        (line,) = map(json.loads, (directory / "job.jsonl").read_text().splitlines())
        self.assertTrue(line["exit_error"]["in_compile"], line["exit_error"])
        self.assertIn("0 active drivers", line["exit_error"]["error"])
        self.assertEqual(line["exit_error"]["raised_in"], "job.py:5")  # the backend's raise, not Dynamo's wrapper
        result = _cli("report", "job.jsonl", cwd=directory, timeout=120, **here)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertEqual(result.stdout.splitlines()[0], "needed: unknown")
        text = " ".join(result.stdout.split())
        self.assertIn("1 died in a compile", text)
        self.assertIn("died of an exception raised in a compile", text)
        self.assertNotIn("was anything compiled", text)


class TestExitError(TestCase):
    """The writer's ``exit_error`` of exceptions made here, as Python leaves them at exit
    (``sys.last_value``): which patch's code raised one (``raised_by``), and where in autotuning
    (``selection``, ``choice``, ``choices``, read from the frames' locals)."""

    def _exit_error(self, error: BaseException) -> dict:
        from unittest import mock

        from inductor_fix import _report_writer

        with mock.patch.object(sys, "last_value", error, create=True), \
                mock.patch.object(sys, "last_exc", error, create=True):
            return _report_writer._exit_error()

    @staticmethod
    def _raised(code: str, module: str) -> BaseException:
        """The exception ``fail()`` of ``code``, run as module ``module``, raises, wrapped as Dynamo
        wraps a compile's error."""
        scope: dict = {"__name__": module}
        exec(compile(textwrap.dedent(code), f"<{module}>", "exec"), scope)
        try:
            try:
                scope["fail"]()
            except Exception as error:
                raise RuntimeError("backend='inductor' raised:") from error
        except RuntimeError as wrapped:
            return wrapped

    def test_raised_by_names_the_patch_whose_code_raised(self) -> None:
        code = "def fail():\n    raise ZeroDivisionError('division by zero')\n"
        for patch in PATCHES:
            package = patch.package or f"inductor_fix.patches.{patch.folder}"
            self.assertEqual(self._exit_error(self._raised(code, f"{package}.fix"))["raised_by"], patch.name)
        self.assertIsNone(self._exit_error(self._raised(code, "job"))["raised_by"])  # control: not ours

    def test_the_selection_and_choice_it_was_raised_in(self) -> None:
        code = """
            class ChoiceCaller:
                def __init__(self, name):
                    self.name = name

            class TritonTemplateCaller(ChoiceCaller):
                pass

            class AlgorithmSelectorCache:
                def __call__(self, name, choices):
                    for choice in choices:
                        self.benchmark_choice(choice)

                def benchmark_choice(self, choice):
                    raise TypeError("launcher() got multiple values for argument 'stream'")

            def fail():
                AlgorithmSelectorCache()("selection_3", [ChoiceCaller("aten_3"), TritonTemplateCaller("triton_t_7")])
            """
        error = self._exit_error(self._raised(code, "job"))
        # The choices' kinds: a Triton template choice's template (its name without the index).
        self.assertEqual((error["selection"], error["choices"]), ("selection_3", ["ChoiceCaller", "triton_t"]))
        self.assertEqual(error["choice"], {"type": "ChoiceCaller", "name": "aten_3"})  # the first one benchmarked
        self.assertFalse(error["interrupted"])
        # Raised outside a selection: no place.
        outside = self._exit_error(self._raised("def fail():\n    raise TypeError('x')\n", "job"))
        self.assertFalse({"selection", "choice", "choices"} & set(outside))


    #: A selection whose call, as 2.14's ``AlgorithmSelectorCache.__call__`` with
    #: ``benchmark_with_cudagraphs``, loops over its choices first, then fails: in the call itself,
    #: or (``{in_choice}``) in the first choice's ``output_node``.
    LOOPED = """
        class ChoiceCaller:
            def __init__(self, name):
                self.name = name

            def output_node(self):
                raise RuntimeError("a choice's own error")

        class TritonTemplateCaller(ChoiceCaller):
            pass

        class AlgorithmSelectorCache:
            def __call__(self, name, choices):
                for choice in choices:
                    choice._benchmark_with_cudagraphs = True
                if {in_choice}:
                    choices[0].output_node()
                raise RuntimeError("No choices to select")

        def fail():
            AlgorithmSelectorCache()("selection_3", [ChoiceCaller("aten_3"), TritonTemplateCaller("triton_t_7")])
        """

    def test_the_selections_loop_variable_is_not_the_choice_raised_in(self) -> None:
        """Breaker 8: the selection's own ``choice``, left bound by its loop, read as the choice the
        error was raised in; the choice whose method raised is that one."""
        error = self._exit_error(self._raised(self.LOOPED.format(in_choice=False), "job"))
        self.assertEqual(error["selection"], "selection_3")
        self.assertNotIn("choice", error)
        error = self._exit_error(self._raised(self.LOOPED.format(in_choice=True), "job"))
        self.assertEqual(error["choice"], {"type": "ChoiceCaller", "name": "aten_3"})


class TestDiedOutsideACompile(TestCase):
    """Breaker 5: an error the program raised where a compiled function ran (after a graph break)
    read "died in a compile": any traceback through Dynamo's ``eval_frame.py`` counted. Each line
    here is a real process's."""

    #: Raised by the program's own code, in a compiled function after a graph break.
    RUN_TIME = """
import torch, torch._inductor.select_algorithm

@torch.compile(backend="eager")
def f(x):
    y = x * 2
    torch._dynamo.graph_break()
    open("/nonexistent/inductor_fix/weights.pt")
    return y

f(torch.randn(4))
"""
    #: Raised by Dynamo while tracing (which strips its frames from the traceback).
    TRACING = """
import torch, torch._inductor.select_algorithm

def f(x):
    torch._dynamo.graph_break()
    return x + 1

torch.compile(f, fullgraph=True, backend="eager")(torch.ones(2))
"""

    def _died(self, script: str) -> tuple[dict, str]:
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_outside_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "job.py").write_text(textwrap.dedent(script))
        here = {"PYTHONPATH": str(ROOT)}  # this checkout's package, whichever one is installed
        launched = _cli("run", "--report", "job.jsonl", "--", sys.executable, "job.py", cwd=directory, **here)
        self.assertEqual(launched.returncode, 1, launched.stderr[-3000:])
        (line,) = map(json.loads, (directory / "job.jsonl").read_text().splitlines())
        return line, " ".join(format_summary(summarize([line])).split())

    def test_an_error_where_compiled_code_ran_is_not_a_compiles(self) -> None:
        line, text = self._died(self.RUN_TIME)
        self.assertIn("FileNotFoundError", line["exit_error"]["error"])
        self.assertIs(line["exit_error"]["in_compile"], False, line["exit_error"])
        self.assertNotIn("died in a compile", text)
        self.assertIn("1 process(es) died of an exception raised outside any compile", text)
        # Control: Dynamo's own error while tracing is a compile's.
        line, text = self._died(self.TRACING)
        self.assertIs(line["exit_error"]["in_compile"], True, line["exit_error"])
        self.assertIn("1 died in a compile", text)

class TestInterrupted(TestCase):
    """A job Ctrl-C ends in a compile (issue 52: it read "1 died in a compile ... KeyboardInterrupt
    ... fix that error"): its line says it was interrupted, the report says so, and run exits as
    the job did (it dies of SIGINT: a shell's 130)."""

    SCRIPT = """
import os, signal, time, torch, torch._inductor.select_algorithm

def interrupted(graph, inputs):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, while compiling
    time.sleep(60)

torch.compile(lambda x: x + 1, backend=interrupted)(torch.ones(2))
"""

    def test_the_report_says_the_job_was_interrupted(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_interrupted_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        (directory / "job.py").write_text(textwrap.dedent(self.SCRIPT))
        here = {"PYTHONPATH": str(ROOT)}  # this checkout's package, whichever one is installed
        launched = _cli("run", "--report", "job.jsonl", "--", sys.executable, "job.py", cwd=directory, **here)
        self.assertEqual(launched.returncode, -signal.SIGINT, launched.stderr[-3000:])
        (line,) = map(json.loads, (directory / "job.jsonl").read_text().splitlines())
        self.assertEqual((line["exit_error"]["interrupted"], line["exit_error"]["in_compile"]), (True, True))
        result = _cli("report", "job.jsonl", cwd=directory, timeout=120, **here)
        self.assertEqual((result.returncode, result.stdout.splitlines()[0]), (1, "needed: unknown"), result.stdout)
        text = " ".join(result.stdout.split())
        self.assertIn("1 interrupted (Ctrl-C)", text)
        self.assertIn("the job was interrupted (KeyboardInterrupt: Ctrl-C) during a compile", text)
        self.assertNotIn("died in a compile", text)
        self.assertNotIn("fix that error", text)

    def test_a_format_1_line_of_a_keyboard_interrupt_reads_as_interrupted(self) -> None:
        line = {**_line(), "format": min(READS), "exit_error": {
            "error": "KeyboardInterrupt", "in_compile": True, "raised_in": "job.py:5"}}
        summary = summarize([line])
        self.assertEqual((summary["processes_interrupted"], summary["processes_died_in_compile"]), (1, 0))
        self.assertIsNone(summary["needed"])
        # Interrupted outside any compile (after it): the verdict stands.
        after = {**line, "exit_error": {**line["exit_error"], "in_compile": False}}
        self.assertIs(summarize([after])["needed"], False)
        self.assertIn("1 interrupted (Ctrl-C)", format_summary(summarize([after])))




class TestWhereACrashWasRaised(TestCase):
    """Format 2's line says where in autotuning a process died (the selection, the choice being
    benchmarked, the kinds of the selection's choices), read from a real stock crash's frames;
    that place tells the op's patch from the others whose crash ends alike."""

    @needs_a_check_op
    def test_a_stock_crash_is_placed_where_its_patch_strikes(self) -> None:
        from inductor_fix.check.table import ops, orders_of, workloads

        directory = Path(tempfile.mkdtemp(prefix="inductor_fix_place_"))
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        # The check table's first op whose stock compile crashes on this torch, under the CPU harness.
        unavailable = {op: workloads()[op].unavailable for op in ops()}
        tried = [op for op in ops() if is_affected(op) and not (unavailable[op] and unavailable[op]("cpu"))]
        for op in tried:
            (directory / "job.py").write_text(crashing_job(op, orders_of(op)[0]))
            report = directory / f"{op}.jsonl"
            launched = _cli("run", "--report", str(report), "--", sys.executable, "job.py", cwd=directory,
                            INDUCTOR_FIX_DISABLE="1")
            if launched.returncode != 0:
                break
        else:
            self.skipTest(f"no check op crashes stock torch {inductor_fix.status().torch_version} under the CPU "
                          f"harness (tried: {', '.join(tried) or 'none affected'})")
        self.assertEqual(launched.returncode, 1, launched.stderr[-3000:])
        (line,) = map(json.loads, report.read_text().splitlines())
        error = line["exit_error"]
        self.assertIsInstance(error["selection"], str, error)
        self.assertIsInstance(error["choice"]["name"], str, error)
        # The choices as kinds (a Triton template choice: its template), the one raised in among them.
        self.assertIn(choice_kind(error["choice"]["type"], error["choice"]["name"]), error["choices"])
        self.assertIsNone(error["raised_by"])  # stock raised it (the harness's launch, in the launcher's place)
        # The harness raises its own form of the wrong-arity launch; a GPU the launcher's.
        patch = by_op(op)
        launch = next((t for t in (GRID_2, STREAM) if patch.crash.matches(t)), None)
        if launch is None:
            self.skipTest(f"{patch.name}'s crash is not a launch of the wrong arity")
        found = attribute({**line, "exit_error": {**error, "error": launch}})
        self.assertEqual((found.finding, found.patches), ("off", (patch,)), (op, error, found))


class TestJobReport(TestCase):
    """End to end under the CPU harness: processes append their lines, the report folds them."""

    def setUp(self) -> None:
        super().setUp()
        self.directory = Path(tempfile.mkdtemp(prefix="inductor_fix_job_"))
        self.addCleanup(shutil.rmtree, self.directory, ignore_errors=True)

    def _job(self, needs_the_fix: bool, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
        script = self.directory / "job.py"
        script.write_text(_job_script(needs_the_fix))
        report = self.directory / f"report-{needs_the_fix}-{len(env)}.jsonl"
        launched = _cli("run", "--report", str(report), "--", sys.executable, str(script), cwd=self.directory,
                        **env)
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        self.assertIn("DONE", launched.stdout)
        return _cli("report", str(report), "--json", timeout=120), report

    @needs_a_check_op
    def test_a_job_of_a_check_case_needs_the_fix(self) -> None:
        result, report = self._job(needs_the_fix=True)
        lines = report.read_text().splitlines()
        self.assertEqual(len(lines), 1)  # one process loaded Inductor
        summary = json.loads(result.stdout)
        if not is_affected(OP):
            self.assertIs(summary["needed"], False, summary)
            return
        self.assertEqual(result.returncode, 0)
        self.assertIs(summary["needed"], True, summary)
        # The op's patch acted, in kinds it declares; each detail shown reads as its kind's line.
        patch = by_op(OP)
        acted = summary["patches"][patch.name]
        self.assertTrue(acted["counts"], summary)
        self.assertLessEqual(set(acted["counts"]), set(patch.activity.kinds), acted)
        details = acted["where"][0]["details"]
        self.assertTrue(details, acted)
        for detail in details:
            self.assertLessEqual(detail["count"], acted["counts"][detail["kind"]], detail)
            self.assertNotEqual(patch.activity.line(detail), detail["kind"], detail)  # its kind read it

    @needs_a_check_op
    def test_torchrun_ranks_each_append_a_line(self) -> None:
        torchrun = Path(sys.executable).with_name("torchrun")
        runner = [str(torchrun)] if torchrun.exists() else [sys.executable, "-m", "torch.distributed.run"]
        script = self.directory / "ranks.py"
        script.write_text(_job_script(needs_the_fix=True))
        report = self.directory / "ranks.jsonl"
        launched = _cli("run", "--report", str(report), "--", *runner, "--standalone", "--nproc-per-node", "2",
                        str(script), cwd=self.directory, timeout=900)
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        lines = [json.loads(line) for line in report.read_text().splitlines()]
        self.assertEqual(sorted(line["rank"] for line in lines), ["0", "1"])  # torchrun itself loads no Inductor
        self.assertEqual({line["world_size"] for line in lines}, {"2"})
        summary = json.loads(_cli("report", str(report), "--json", timeout=120).stdout)
        self.assertEqual(summary["processes"], 2)
        self.assertIs(summary["needed"], is_affected(OP))

    def test_a_job_with_nothing_to_fix_does_not(self) -> None:
        result, _ = self._job(needs_the_fix=False)
        self.assertEqual(result.returncode, 0)
        summary = json.loads(result.stdout)
        self.assertIs(summary["needed"], False, summary)
        self.assertGreater(summary["template_choices"], 0, summary)  # Triton template choices were made
        self.assertIn("no patch found anything to do", summary["advice"])

    def test_a_rerun_served_from_caches_autotuned_nothing(self) -> None:
        """Issue 52: a re-run served from Inductor's caches read "2 autotuning benchmark(s)": on an
        FX graph cache hit Inductor adds again the counters of the compile that filled the cache,
        its autotuning rounds included. The re-run says it autotuned nothing and made no template
        choice, and cannot say the fix is not needed (what a cold compile needs is unknown)."""
        script = self.directory / "cached.py"
        script.write_text(textwrap.dedent(CACHED).format(here=HERE, work=PLAIN.strip("\n")))
        cache = {"TORCHINDUCTOR_CACHE_DIR": str(self.directory / "inductor-cache")}
        summaries = []
        for run in ("cold", "warm"):
            report = self.directory / f"{run}.jsonl"
            launched = _cli("run", "--report", str(report), "--", sys.executable, str(script), cwd=self.directory,
                            **cache)
            self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
            summaries.append(json.loads(_cli("report", str(report), "--json", timeout=120).stdout))
        cold, warm = summaries
        self.assertGreater(cold["benchmarks"], 0, cold)
        self.assertGreater(cold["template_choices"], 0, cold)
        self.assertEqual(cold["cached_compiles"], 0, cold)
        self.assertIs(cold["needed"], False, cold)
        self.assertEqual((warm["benchmarks"], warm["template_choices"]), (0, 0), warm)
        self.assertGreater(warm["benchmarks_counted"], 0, warm)  # what Inductor's counter said
        self.assertGreater(warm["cached_compiles"], 0, warm)
        self.assertIsNone(warm["needed"], warm)
        self.assertIn("every compile was served from Inductor's caches", warm["advice"])
        text = format_summary(summarize([json.loads(line) for line in (self.directory / "warm.jsonl").open()]))
        self.assertIn("0 autotuning benchmark(s) ran", " ".join(text.split()))

    def test_disabled_job_says_the_fix_was_off(self) -> None:
        """Negative control: with INDUCTOR_FIX_DISABLE=1 nothing is recorded and nothing judged."""
        job = self.directory / "job.py"
        job.write_text(_job_script(needs_the_fix=False))
        report = self.directory / "off.jsonl"
        launched = _cli("run", "--report", str(report), "--", sys.executable, str(job), cwd=self.directory,
                        INDUCTOR_FIX_DISABLE="1")
        self.assertEqual(launched.returncode, 0, launched.stderr[-3000:])
        result = _cli("report", str(report), timeout=120)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertEqual(result.stdout.splitlines()[0], "needed: unknown")
        self.assertIn("the fix was off", result.stdout)



class TestFieldsNotText(TestCase):
    """Readers of the report's notes and of the status read fields: rewording a message changes
    nothing they decide."""

    def test_skipped_lines_count_whatever_their_note_says(self) -> None:
        reworded = Skipped(3, "lines the reader could make nothing of")
        self.assertEqual(str(reworded), "skipped 3 lines the reader could make nothing of")
        nothing = summarize([], [reworded])
        self.assertEqual(nothing["lines_unread"], 3)
        self.assertIn("no line of the report could be used", nothing["advice"])
        some = summarize([_line()], [reworded])
        self.assertIsNone(some["needed"])  # a torn line could hide the process that needed the fix
        self.assertIn("with a usable line", format_summary(some))
        self.assertIn("loaded Inductor", format_summary(summarize([_line()], [], ["another note"])))

    def test_status_verdict_and_detail_are_fields(self) -> None:
        from inductor_fix.status import PatchStatus, State, Status

        patches = (PatchStatus("a", "m.C.f", State.APPLIED, "why a"),
                   PatchStatus("b", "m.C.g", State.DISABLED, "why b"))
        status = Status.of(patches, "2.14.1", "3.8.0")
        self.assertEqual(status.reason, f"not protected: {status.detail}")
        self.assertEqual(status.detail, "b disabled: why b")
        reworded = dataclasses.replace(status, reason="NOT PROTECTED (b)")
        lines = reworded.format(after_headline=["  autoload: line"]).splitlines()
        self.assertEqual(lines[:2], ["inductor_fix: disabled - NOT PROTECTED (b)", "  autoload: line"])


if __name__ == "__main__":
    run_tests()
