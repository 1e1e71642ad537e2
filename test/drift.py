"""Drift drill: what a user of the next nightly sees when Inductor's internals move.

Each drill takes the installed torch, calls it ``2.16.0.dev20261201+cu130`` (a
release with no recorded fingerprints, so only the behaviour probes judge it),
changes a module of Inductor (``select_algorithm``, or wherever the target it moves is) the
way upstream changes usually look, and then applies the package exactly as ``import
inductor_fix`` would. Drills that move what one patch wraps are the ``drills`` part of its
folder (``inductor_fix/patches/<folder>/drills.py``: a :class:`~inductor_fix.check.parts.DrillsPart`,
``drills``: name -> :class:`~inductor_fix.check.parts.Drill`); the general ones are here, and each patch says in its
part which of them leave it other than ``applied`` (``under``):

- ``stock``: nothing moved (the control).
- ``generate-keyword``: ``TritonTemplate.generate`` gains a keyword-only parameter.
- ``renamed-class``: ``TritonTemplateCaller`` is renamed ``TritonTemplateChoice``.

A patch's ``under`` may also name another patch's drill (two patches that wrap one function).

Each drill runs in a fresh process: ``python test/drift.py [NAME ...]`` prints one
line per drill and patch. A patch's drill names the state it expects of that patch; every
other patch must decide as it does on the installed torch under its own version
(:func:`base_states`: applied where it applies). A drill never raises, and a patch that does not
fit says ``unsupported`` with its one-line reason.

The drills start from the installed torch: a patch that does not apply there (``not-needed``
on a release that has upstream's fix, ``unsupported`` on one it does not fit) keeps that state
under the general drills, and its own drills, which move what it would wrap, do not apply
(:func:`not_applicable`: the reason names the release).
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import os
import subprocess
import sys
import textwrap
import types
from typing import Any, Callable, NamedTuple

__all__ = ["DRILLS", "NIGHTLY", "Drill", "base_states", "drills", "expected_states", "gains_keyword", "main",
           "moved_module", "not_applicable", "redefined", "run", "unreadable"]

NIGHTLY = "2.16.0.dev20261201+cu130"


def redefined(function: Any, edit: Callable[[ast.arguments], None], module: types.ModuleType) -> Any:
    """``function`` compiled again from its own source with its parameters edited."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    definition = tree.body[0]
    definition.decorator_list = []
    edit(definition.args)
    namespace: dict[str, Any] = {}
    exec(compile(ast.fix_missing_locations(tree), inspect.getsourcefile(function) or "<drift>", "exec"),
         vars(module), namespace)
    return namespace[definition.name]


def gains_keyword(owner: str, method: str, keyword: str) -> Callable[[types.ModuleType], None]:
    """A drill: ``owner.method`` gains the optional keyword-only parameter ``keyword``."""

    def drill(module: types.ModuleType) -> None:
        cls = getattr(module, owner)

        def edit(arguments: ast.arguments) -> None:
            arguments.kwonlyargs.append(ast.arg(keyword))
            arguments.kw_defaults.append(ast.Constant(None))

        setattr(cls, method, redefined(getattr(cls, method), edit, module))

    return drill


def _renamed_class(module: types.ModuleType) -> None:
    module.TritonTemplateChoice = module.TritonTemplateCaller
    del module.TritonTemplateCaller


class Drill(NamedTuple):
    """``move(module)`` changes the module; ``expected``: patch name -> state for the patches it
    moves (every other patch of the table must decide as on the installed torch); ``modules``: the
    modules it may move, the first this torch has is (empty: ``select_algorithm``); ``owner``: the
    patch whose drill it is (None: a general drill)."""

    move: Callable[[types.ModuleType], None]
    expected: dict[str, str]
    modules: tuple[str, ...] = ()
    owner: str | None = None


#: The general drills: name -> how it moves the module (each patch's ``under`` says what it expects).
GENERAL: dict[str, Callable[[types.ModuleType], None]] = {
    "stock": lambda module: None,
    "generate-keyword": gains_keyword("TritonTemplate", "generate", "prologue_fusion_hint"),
    "renamed-class": _renamed_class,
}


#: The checkout this file is in: a patch's ``drills.py`` is read from its folder here when the
#: installed package lacks it (the wheel leaves out parts only the tests read).
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def drills_part(patch: Any) -> Any:
    """``patch``'s :class:`~inductor_fix.check.parts.DrillsPart`: the installed package's, else
    the checkout's ``inductor_fix/patches/<folder>/drills.py``; None if neither has one.
    :class:`~inductor_fix.check.parts.PartError` if it cannot be read."""
    import importlib.util

    from inductor_fix.check.parts import DrillsPart, PartError, part

    found = part(patch, "drills")
    path = os.path.join(CHECKOUT, "inductor_fix", "patches", patch.folder, "drills.py")
    if found is not None or patch.package or not os.path.isfile(path):
        return found
    name = f"inductor_fix.patches.{patch.folder}.drills"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its relative imports resolve in the installed package
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise PartError(patch.name, "drills", f"{path} failed to load: {type(error).__name__}: {error}") from error
    if not isinstance(getattr(module, "PART", None), DrillsPart):
        raise PartError(patch.name, "drills", f"{path} must define PART, a DrillsPart")
    return module.PART


def unreadable(patches: Any = None) -> dict[str, str]:
    """Patch name -> why its drills part cannot be read (``main`` fails on each, naming it)."""
    from inductor_fix.check.parts import PartError
    from inductor_fix.check.parts import patches as table

    broken = {}
    for patch in table() if patches is None else patches:
        try:
            drills_part(patch)
        except PartError as error:
            broken[patch.name] = str(error)
    return broken


def drills(patches: Any = None) -> dict[str, Drill]:
    """Every drill: the general ones, then each patch's (its folder's ``drills`` part), with
    the state each expects of each patch of ``patches`` (default: the table). A patch whose part
    cannot be read adds none (:func:`unreadable` names it)."""
    from inductor_fix.check.parts import DrillsPart, PartError
    from inductor_fix.check.parts import patches as table

    patches = table() if patches is None else patches
    kit = sys.modules[__name__]
    parts = {}
    for patch in patches:
        try:
            parts[patch.name] = drills_part(patch) or DrillsPart()
        except PartError:
            parts[patch.name] = DrillsPart()
    found = {name: Drill(move, {}) for name, move in GENERAL.items()}
    for patch, record in parts.items():
        for name, drill in record.drills.items():
            found[name] = Drill(lambda module, move=drill.move: move(module, kit), {patch: drill.state}, drill.modules,
                                owner=patch)
    for patch, record in parts.items():  # the drills, general or another patch's, that leave it other than applied
        for name, state in record.under.items():
            if name in found:  # a retired patch's drill is gone with it
                found[name].expected.setdefault(patch, state)
    return found


def moved_module(drill: Drill) -> types.ModuleType:
    """The module ``drill`` moves: the first of its ``modules`` this torch has, imported
    (``select_algorithm`` where it names none). ImportError if it has none of them."""
    import importlib

    for name in drill.modules or ("torch._inductor.select_algorithm",):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"this torch has none of {', '.join(drill.modules)}")


DRILLS: dict[str, Drill] = drills()


@functools.cache
def base_states(extra: str | None = None) -> dict[str, str]:
    """Every patch of the table (and ``extra``'s, see :func:`_one`) -> the state the package
    decides on the installed torch as released: nothing moved, its own version (recorded
    fingerprints checked), in a fresh process. What the drills start from."""
    result = run("stock", extra=extra, released=True)
    if "error" in result:
        raise RuntimeError(f"the installed torch's own status: {result['error']}")
    return {patch["name"]: patch["state"] for patch in result["patches"]}


def not_applicable(name: str, extra: str | None = None) -> str | None:
    """Why drill ``name`` does not apply on the installed torch (its patch does not apply there, so
    nothing it would wrap is there to move), naming the release; None where it applies."""
    owner = DRILLS[name].owner if name in DRILLS else drills()[name].owner
    state = base_states(extra).get(owner, "applied") if owner else "applied"
    if state == "applied":
        return None
    import torch

    return f"{owner} is {state} on torch {torch.__version__}: its drill {name} moves what it would wrap there"


def expected_states(name: str, extra: str | None = None) -> dict[str, str]:
    """Every patch of the table -> the state drill ``name`` must leave it in: the drill's own word
    for a patch that applies on the installed torch (``applied`` where it says none), the
    installed torch's state for one that does not."""
    drill = DRILLS[name] if name in DRILLS else drills()[name]
    return {patch: drill.expected.get(patch, "applied") if state == "applied" else state
            for patch, state in base_states(extra).items()}


def _one(name: str, extra: str | None = None, released: bool = False) -> dict:
    """In this process (started with INDUCTOR_FIX_DISABLE=1): move the internals, then apply.
    ``extra``: a module whose ``PATCH`` joins the table first (a patch that exists only in a test);
    ``released``: the installed torch keeps its own version (else :data:`NIGHTLY`)."""
    import importlib
    import warnings

    import torch

    import inductor_fix
    from inductor_fix import patches as table
    from inductor_fix._lifecycle import Lifecycle

    lifecycle = inductor_fix._lifecycle.LIFECYCLE
    if extra:
        table.PATCHES = (*table.PATCHES, importlib.import_module(extra).PATCH)
        lifecycle = Lifecycle(table.PATCHES)  # the package's own applied nothing (disabled)
    if not released:
        torch.__version__ = NIGHTLY
    import torch._inductor.select_algorithm  # noqa: F401  (every drill's torch has Inductor loaded)

    drill = drills()[name]
    drill.move(moved_module(drill))
    os.environ.pop("INDUCTOR_FIX_DISABLE")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = lifecycle.apply()
    return {"drill": name, **status.to_dict(), "warnings": [str(w.message) for w in caught]}


def run(name: str, timeout: float = 300, extra: str | None = None, released: bool = False) -> dict:
    """The status a user would see after drill ``name``, from a fresh process (``extra``,
    ``released``: see :func:`_one`; ``extra``'s folder must be on ``PYTHONPATH``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, INDUCTOR_FIX_DISABLE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    process = subprocess.run([sys.executable, "-c", "import sys, drift; sys.exit(drift.main(sys.argv[1:]))",
                              "--one", name, *(["--extra", extra] if extra else []),
                              *(["--released"] if released else [])],
                             capture_output=True, text=True, env=env, timeout=timeout)
    lines = [line for line in process.stdout.splitlines() if line.startswith("{")]
    if process.returncode or not lines:
        return {"drill": name, "error": (process.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv[:1] == ["--one"]:  # the child process of run()
        released = argv[-1] == "--released"
        rest = argv[2:-1] if released else argv[2:]
        extra = rest[1] if len(rest) == 2 and rest[0] == "--extra" else None
        if len(argv) < 2 or len(rest) not in (0, 2) or (rest and not extra) \
                or os.environ.get("INDUCTOR_FIX_DISABLE") != "1":
            print("--one NAME is run()'s child: use python test/drift.py [NAME ...]", file=sys.stderr)
            return 2
        print(json.dumps(_one(argv[1], extra, released)), flush=True)
        return 0
    names = argv or list(DRILLS)
    unknown = [name for name in names if name not in DRILLS]
    if unknown:
        print(f"unknown drill(s) {', '.join(unknown)}; known: {', '.join(DRILLS)}", file=sys.stderr)
        return 2
    print(f"torch {NIGHTLY} (the installed torch, renamed), each drill in a fresh process:")
    failed = 0
    for patch, reason in unreadable().items():
        print(f"{patch}: ERROR its drills part cannot be read: {reason}")
        failed += 1
    for name in names:
        reason = not_applicable(name)
        if reason:
            print(f"{name}: does not apply ({reason})")
            continue
        result = run(name)
        if "error" in result:
            print(f"{name}: ERROR {result['error']}")
            failed += 1
            continue
        states, expected = {p["name"]: p["state"] for p in result["patches"]}, expected_states(name)
        verdict = "as expected" if states == expected else f"EXPECTED {'/'.join(expected.values())}"
        failed += states != expected
        print(f"{name}: {result['state']}, protected {result['protected']} ({verdict})")
        for patch in result["patches"]:
            print(f"  {patch['name']:<17} {patch['state']:<11} {patch['reason']}")
    return 1 if failed else 0


if __name__ == "__main__":  # as the module "drift", which the per-patch drills import
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import drift

    sys.exit(drift.main(sys.argv[1:]))
