"""Drift drill: what a user of the next nightly sees when Inductor's internals move.

Each drill takes the installed torch, calls it ``2.16.0.dev20261201+cu130`` (a
release with no recorded fingerprints, so only the behaviour probes judge it),
changes ``torch._inductor.select_algorithm`` the way upstream changes usually
look, and then applies the package exactly as ``import inductor_fix`` would:

- ``stock``: nothing moved (the control).
- ``make-key-extra-parameter``: ``GeneratedCodeCache.make_key`` gains a required
  parameter after ``input_nodes`` that the probe cannot fill.
- ``make-key-keyword``: ``make_key`` gains an optional keyword the probe need not fill.
- ``generate-keyword``: ``TritonTemplate.generate`` gains a keyword-only parameter.
- ``renamed-class``: ``TritonTemplateCaller`` is renamed ``TritonTemplateChoice``.
- ``upstream-key-fix``: ``make_key`` keys the aliasing pattern itself, as 2.15.0+ do.

Each drill runs in a fresh process: ``python -m inductor_fix.testing.drift [NAME ...]``
prints one line per drill and patch. Expected outcome of every drill:
:data:`EXPECTED`; a drill never raises, a patch that does not fit says
``unsupported`` with its one-line reason and the others still apply.
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
from typing import Any, Callable

__all__ = ["DRILLS", "EXPECTED", "NIGHTLY", "run", "main"]

NIGHTLY = "2.16.0.dev20261201+cu130"


def _redefined(function: Any, edit: Callable[[ast.arguments], None], module: types.ModuleType) -> Any:
    """``function`` compiled again from its own source with its parameters edited."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    definition = tree.body[0]
    definition.decorator_list = []
    edit(definition.args)
    namespace: dict[str, Any] = {}
    exec(compile(ast.fix_missing_locations(tree), inspect.getsourcefile(function) or "<drift>", "exec"),
         vars(module), namespace)
    return namespace[definition.name]


def _make_key_extra_parameter(module: types.ModuleType) -> None:
    cache = module.GeneratedCodeCache

    def edit(arguments: ast.arguments) -> None:
        position = [a.arg for a in arguments.args].index("input_nodes") + 1
        arguments.args.insert(position, ast.arg("prologue_nodes"))

    cache.make_key = _redefined(cache.make_key, edit, module)


def _gains_keyword(owner: str, method: str, keyword: str) -> Callable[[types.ModuleType], None]:
    """A drill: ``owner.method`` gains the optional keyword-only parameter ``keyword``."""

    def drill(module: types.ModuleType) -> None:
        cls = getattr(module, owner)

        def edit(arguments: ast.arguments) -> None:
            arguments.kwonlyargs.append(ast.arg(keyword))
            arguments.kw_defaults.append(ast.Constant(None))

        setattr(cls, method, _redefined(getattr(cls, method), edit, module))

    return drill


def _renamed_class(module: types.ModuleType) -> None:
    module.TritonTemplateChoice = module.TritonTemplateCaller
    del module.TritonTemplateCaller


def _upstream_key_fix(module: types.ModuleType) -> None:
    cache = module.GeneratedCodeCache
    stock = cache.make_key
    position = list(inspect.signature(stock).parameters).index("input_nodes")

    @functools.wraps(stock)
    def make_key(*args: Any, **kwargs: Any) -> Any:
        key = stock(*args, **kwargs)
        nodes = kwargs["input_nodes"] if "input_nodes" in kwargs else args[position]
        names = [node.get_name() for node in nodes]
        return None if key is None else f"{key}|aliasing={[names.index(n) for n in names]}"

    cache.make_key = make_key


DRILLS: dict[str, Callable[[types.ModuleType], None]] = {
    "stock": lambda module: None,
    "make-key-extra-parameter": _make_key_extra_parameter,
    "make-key-keyword": _gains_keyword("GeneratedCodeCache", "make_key", "layout_hint"),
    "generate-keyword": _gains_keyword("TritonTemplate", "generate", "prologue_fusion_hint"),
    "renamed-class": _renamed_class,
    "upstream-key-fix": _upstream_key_fix,
}

#: drill -> (cache-key, arity-guard, benchmark-realign) states a user of that nightly sees.
EXPECTED: dict[str, tuple[str, str, str]] = {
    "stock": ("applied", "applied", "applied"),
    "make-key-extra-parameter": ("unsupported", "applied", "applied"),
    "make-key-keyword": ("applied", "applied", "applied"),
    "generate-keyword": ("applied", "applied", "applied"),
    "renamed-class": ("applied", "unsupported", "unsupported"),
    "upstream-key-fix": ("not-needed", "applied", "applied"),
}


def _one(name: str) -> dict:
    """In this process (started with INDUCTOR_FIX_DISABLE=1): move the internals, then apply."""
    import warnings

    import torch

    import inductor_fix

    torch.__version__ = NIGHTLY
    from torch._inductor import select_algorithm

    DRILLS[name](select_algorithm)
    os.environ.pop("INDUCTOR_FIX_DISABLE")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = inductor_fix.apply()
    return {"drill": name, **status.to_dict(), "warnings": [str(w.message) for w in caught]}


def run(name: str, timeout: float = 300) -> dict:
    """The status a user would see after drill ``name``, from a fresh process."""
    env = dict(os.environ, INDUCTOR_FIX_DISABLE="1")
    process = subprocess.run([sys.executable, "-m", "inductor_fix.testing.drift", "--one", name],
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
        if len(argv) != 2 or argv[1] not in DRILLS or os.environ.get("INDUCTOR_FIX_DISABLE") != "1":
            print("--one NAME is run()'s child: use python -m inductor_fix.testing.drift [NAME ...]", file=sys.stderr)
            return 2
        print(json.dumps(_one(argv[1])), flush=True)
        return 0
    names = argv or list(DRILLS)
    unknown = [name for name in names if name not in DRILLS]
    if unknown:
        print(f"unknown drill(s) {', '.join(unknown)}; known: {', '.join(DRILLS)}", file=sys.stderr)
        return 2
    print(f"torch {NIGHTLY} (the installed torch, renamed), each drill in a fresh process:")
    failed = 0
    for name in names:
        result = run(name)
        if "error" in result:
            print(f"{name}: ERROR {result['error']}")
            failed += 1
            continue
        states = tuple(patch["state"] for patch in result["patches"])
        verdict = "as expected" if states == EXPECTED[name] else f"EXPECTED {'/'.join(EXPECTED[name])}"
        failed += states != EXPECTED[name]
        print(f"{name}: {result['state']}, protected {result['protected']} ({verdict})")
        for patch in result["patches"]:
            print(f"  {patch['name']:<17} {patch['state']:<11} {patch['reason']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
