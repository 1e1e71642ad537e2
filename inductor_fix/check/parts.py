"""A patch's optional parts, as typed records, and the one place generic code finds them.

A patch's folder (``inductor_fix/patches/<folder>/``) may hold three parts besides its fix:
``check.py`` (its ``inductor-fix check`` workloads), ``bench.py`` (its ``tools/bench``
measurement) and ``drills.py`` (its drift drills, for ``test/drift.py``). Each declares one
name, ``PART``: a :class:`CheckPart`, :class:`BenchPart` or :class:`DrillsPart`. Generic code
reads the record's fields, never a module attribute found by name, so a misspelt field is a
``TypeError`` where the record is built and a part without its ``PART`` is a :class:`PartError`
where it is read (:func:`part`); a test over every patch of the table reads every part.

Parts are read only by what uses them, when it runs (``check``, ``tools/bench``, the drift
drills): ``status``, ``run``, ``report`` and ``import inductor_fix`` never import one. A part
that fails to load (a broken file, a missing ``PART``) is a :class:`PartError` naming it;
:func:`load_parts` keeps the others and names each one that failed, for the reader to skip.

This module is also how the layer of ``check`` and the tools reads the patch table
(:func:`patches`): the table sits below, in :mod:`inductor_fix.patches`, and never imports a
part. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping, NamedTuple

from .workloads import Workload

if TYPE_CHECKING:
    from ..patches.patch import Patch

__all__ = ["KINDS", "BenchPart", "CheckPart", "Drill", "DrillsPart", "Loaded", "PartError", "by_op", "check_ops",
           "is_affected", "killed_by", "load_parts", "part", "patches"]


class PartError(Exception):
    """A part of a patch's folder that cannot be read: its module raised while it loaded, or it
    defines no ``PART`` of its kind's record. ``patch``: the patch's name; ``kind``: the part."""

    def __init__(self, patch: str, kind: str, message: str) -> None:
        super().__init__(message)
        self.patch, self.kind = patch, kind


def _require(record: object, field: str, valid: bool, wanted: str) -> None:
    if not valid:
        raise TypeError(f"{type(record).__name__}.{field} must be {wanted}, got {getattr(record, field)!r}")


@dataclasses.dataclass(frozen=True)
class CheckPart:
    """A patch's ``check`` part: ``workloads``, one :class:`~inductor_fix.check.workloads.Workload`
    per op, in the patch's order; ``harness_seams``, a context-manager factory the CPU harness
    enters besides its own seams (None: none); ``harness_note``, what ``check`` says of those
    seams ("" : nothing)."""

    workloads: tuple[Workload, ...]
    harness_seams: Callable[[], ContextManager[Any]] | None = None
    harness_note: str = ""

    def __post_init__(self) -> None:
        _require(self, "workloads", isinstance(self.workloads, tuple)
                 and all(isinstance(w, Workload) for w in self.workloads), "a tuple of Workload")
        _require(self, "harness_seams", self.harness_seams is None or callable(self.harness_seams),
                 "callable or None")
        _require(self, "harness_note", isinstance(self.harness_note, str), "a str")


@dataclasses.dataclass(frozen=True)
class BenchPart:
    """A patch's ``bench`` part: ``tools/bench <folder>``'s measurement and what the patch adds
    to ``tools/bench compile``.

    ``help`` is the subcommand's help line; ``add_arguments(parser)`` adds its options;
    ``run(args, child)`` measures, ``child(argv, env)`` running ``worker(argv)`` in a fresh
    process (None: no child), and returns the JSON-able result ``markdown(result)`` renders; ``out_name(args)``
    names its result file (None: ``<folder>.json``). For whole compiles: ``compile_workaround``,
    upstream's workaround as Inductor settings; ``compile_variants``, variant name -> a
    context-manager factory entered in the patched process; ``compile_workloads``, workload
    name -> ``workload(device)`` returning its steps; ``compile_fast``, the workloads run on the
    CPU by default.
    """

    help: str
    add_arguments: Callable[[Any], None]
    run: Callable[[Any, Any], dict[str, Any]]
    markdown: Callable[[dict[str, Any]], str]
    worker: Callable[[list[str]], dict[str, Any]] | None = None
    out_name: Callable[[Any], str] | None = None
    compile_workaround: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    compile_variants: Mapping[str, Callable[[], ContextManager[Any]]] = dataclasses.field(default_factory=dict)
    compile_workloads: Mapping[str, Callable[[str], list[Any]]] = dataclasses.field(default_factory=dict)
    compile_fast: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _require(self, "help", isinstance(self.help, str) and bool(self.help), "a non-empty str")
        for name in ("add_arguments", "run", "markdown"):
            _require(self, name, callable(getattr(self, name)), "callable")
        for name in ("worker", "out_name"):
            _require(self, name, getattr(self, name) is None or callable(getattr(self, name)), "callable or None")
        for name in ("compile_workaround", "compile_variants", "compile_workloads"):
            _require(self, name, isinstance(getattr(self, name), Mapping), "a mapping")
        _require(self, "compile_fast", isinstance(self.compile_fast, tuple), "a tuple of workload names")


class Drill(NamedTuple):
    """One drift drill of a patch: ``move(module, kit)`` changes ``module`` as a future torch might
    (``kit``: ``test/drift.py``, with its helpers); the patch must then be in ``state``.
    ``modules``: where the patch's targets are that the drill moves, the first this torch has is
    the one moved (each release may keep them elsewhere); empty: Inductor's ``select_algorithm``."""

    move: Callable[[Any, Any], None]
    state: str
    modules: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class DrillsPart:
    """A patch's ``drills`` part, for ``test/drift.py``: ``drills``, drill name -> its
    :class:`Drill`; ``under``, the name of a general drill or of another patch's -> the state it
    leaves this patch in (absent: ``"applied"``)."""

    drills: Mapping[str, Drill] = dataclasses.field(default_factory=dict)
    under: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _require(self, "drills", isinstance(self.drills, Mapping) and all(
            isinstance(v, Drill) and callable(v.move) and isinstance(v.state, str)
            and all(isinstance(m, str) for m in v.modules) for v in self.drills.values()),
            "a mapping of name -> Drill")
        _require(self, "under", isinstance(self.under, Mapping)
                 and all(isinstance(v, str) for v in self.under.values()), "a mapping of name -> state")


#: Each part's file name in a patch's folder -> the record its ``PART`` must be.
KINDS: dict[str, type] = {"check": CheckPart, "bench": BenchPart, "drills": DrillsPart}


def patches() -> tuple[Patch, ...]:
    """The patch table (:data:`inductor_fix.patches.PATCHES`), read where it is now: a test may
    extend it."""
    from .. import patches as table

    return table.PATCHES


def part(patch: Patch, kind: str) -> Any:
    """The ``PART`` of the ``kind`` part (a key of :data:`KINDS`) of ``patch``'s folder, or None
    if the folder has no such file. Raises :class:`PartError` if the file raises while it loads
    (anything but ``KeyboardInterrupt``: ``SystemExit`` too), or its ``PART`` is missing or not a
    :data:`KINDS` record (a misspelt name would otherwise turn the part off silently); ``KeyError``
    for an unknown ``kind``."""
    record_type = KINDS[kind]
    qualified = f"{patch.package or f'inductor_fix.patches.{patch.folder}'}.{kind}"
    try:
        found = importlib.util.find_spec(qualified)
    except ModuleNotFoundError:  # no such folder
        return None
    if found is None:
        return None
    try:
        module = importlib.import_module(qualified)
    except KeyboardInterrupt:  # Ctrl-C ends the process, as Python ends it
        raise
    except BaseException as error:  # a broken part (SystemExit too): its reader names it and goes on without it
        raise PartError(patch.name, kind, f"{qualified} failed to load: {type(error).__name__}: {error}") from error
    record = getattr(module, "PART", None)
    if not isinstance(record, record_type):
        names = sorted(n for n in vars(module) if n.isupper())
        raise PartError(patch.name, kind, f"{qualified} must define PART, a {record_type.__name__}; it defines "
                                          f"{', '.join(names) or 'no upper-case name'}")
    return record


class Loaded(NamedTuple):
    """The ``kind`` parts of the table's patches: ``parts``, patch name -> its record, in table
    order (a patch without the file has none); ``broken``, patch name -> why its part could not
    be read (:class:`PartError`'s message)."""

    parts: dict[str, Any]
    broken: dict[str, str]


def load_parts(kind: str) -> Loaded:
    """Every patch's ``kind`` part, read now (a part that fails is named in ``broken``, the
    others are kept)."""
    found: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for patch in patches():
        try:
            record = part(patch, kind)
        except PartError as error:
            broken[patch.name] = str(error)
            continue
        if record is not None:
            found[patch.name] = record
    return Loaded(found, broken)


def check_ops(patch: Patch) -> dict[str, str]:
    """``inductor-fix check`` ops whose stock compile shows ``patch``'s bug -> the stock releases
    where it crashes, as a specifier ("": the patch's ``affected``); from its ``check`` part
    (:class:`PartError` if it cannot be read)."""
    check = part(patch, "check")
    return {w.op: w.affected for w in check.workloads} if check is not None else {}


def killed_by(signal: str) -> str:
    """How ``check`` says a case process a signal ended (``"killed by SIGSEGV"``): the patch
    record's words, which a patch's ``Crash.signals`` match."""
    from ..patches.patch import killed_by as words

    return words(signal)


def by_op(op: str) -> Patch | None:
    """The patch of the table whose ``check`` part declares op ``op``, if any (a part that cannot
    be read declares none)."""
    checks = load_parts("check").parts
    return next((patch for patch in patches() if patch.name in checks
                 and any(w.op == op for w in checks[patch.name].workloads)), None)


def is_affected(op: str, torch_version: str) -> bool:
    """Whether stock ``torch_version`` crashes on ``check`` op ``op`` (False if no patch of the
    table declares it): its workload's ``affected``, else its patch's."""
    patch = by_op(op)
    if patch is None:
        return False
    from ..patches.patch import in_releases

    return in_releases(check_ops(patch)[op] or patch.affected, torch_version)
