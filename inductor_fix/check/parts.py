"""A patch's optional parts, as typed records, and the one place generic code finds them.

A patch's folder (``inductor_fix/patches/<module>/``) may hold three parts besides its fix:
``check.py`` (its ``inductor-fix check`` workloads), ``bench.py`` (its ``tools/bench``
measurement) and ``drills.py`` (its drift drills, for ``test/drift.py``). Each declares one
name, ``PART``: a :class:`CheckPart`, :class:`BenchPart` or :class:`DrillsPart`. Generic code
reads the record's fields, never a module attribute found by name, so a misspelt field is a
``TypeError`` where the record is built and a part without its ``PART`` is a ``TypeError``
where it is read (:func:`part`); a test over every patch of the table reads every part.

This module is also how the layer of ``check`` and the tools reads the patch table
(:func:`patches`): the table sits below, in :mod:`inductor_fix.patches`, and never imports a
part. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping

from .workloads import Workload

if TYPE_CHECKING:
    from ..patches.base import Patch

__all__ = ["KINDS", "BenchPart", "CheckPart", "DrillsPart", "by_op", "check_ops", "crashes", "part", "patches"]

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


@dataclasses.dataclass(frozen=True)
class DrillsPart:
    """A patch's ``drills`` part, for ``test/drift.py``: ``drills``, drill name -> ``(move,
    state)`` (``move(module, kit)`` changes ``select_algorithm`` as a future torch might; the
    patch must then be in ``state``); ``under``, the name of a general drill or of another
    patch's -> the state it leaves this patch in (absent: ``"applied"``)."""

    drills: Mapping[str, tuple[Callable[[Any, Any], None], str]] = dataclasses.field(default_factory=dict)
    under: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _require(self, "drills", isinstance(self.drills, Mapping) and all(
            isinstance(v, tuple) and len(v) == 2 and callable(v[0]) and isinstance(v[1], str)
            for v in self.drills.values()), "a mapping of name -> (move, state)")
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
    if the folder has no such file. Raises ``TypeError`` if the file's ``PART`` is missing or
    not a :data:`KINDS` record (a misspelt name would otherwise turn the part off silently),
    ``KeyError`` for an unknown ``kind``."""
    record_type = KINDS[kind]
    qualified = f"{patch.package or f'inductor_fix.patches.{patch.module}'}.{kind}"
    try:
        found = importlib.util.find_spec(qualified)
    except ModuleNotFoundError:  # no such folder
        return None
    if found is None:
        return None
    module = importlib.import_module(qualified)
    record = getattr(module, "PART", None)
    if not isinstance(record, record_type):
        names = sorted(n for n in vars(module) if n.isupper())
        raise TypeError(f"{qualified} must define PART, a {record_type.__name__}; it defines "
                        f"{', '.join(names) or 'no upper-case name'}")
    return record


def check_ops(patch: Patch) -> dict[str, str]:
    """``inductor-fix check`` ops whose stock compile shows ``patch``'s bug -> the stock releases
    where it crashes, as a specifier ("": the patch's ``affected``); from its ``check`` part."""
    check = part(patch, "check")
    return {w.op: w.crashes for w in check.workloads} if check is not None else {}


def by_op(op: str) -> Patch | None:
    """The patch of the table whose ``check`` part declares op ``op``, if any."""
    return next((patch for patch in patches() if op in check_ops(patch)), None)


def crashes(op: str, torch_version: str) -> bool:
    """Whether stock ``torch_version`` crashes on ``check`` op ``op`` (False if no patch of the
    table declares it): its workload's ``crashes``, else its patch's ``affected``."""
    patch = by_op(op)
    if patch is None:
        return False
    from ..patches.base import in_releases

    return in_releases(check_ops(patch)[op] or patch.affected, torch_version)
