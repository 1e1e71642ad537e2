"""The repository's import graph: no cycle, and no module importing one of a higher layer.

Two graphs. The package's own (:class:`TestImportGraph`), by its layers. And every Python
file outside ``test/`` (:class:`TestRepositoryGraph`): the start-up path beside the package
(``_inductor_fix_startup``) at the bottom, the package above it, the entry point's module
(``_inductor_fix_autoload``), ``run``'s start-up hook and ``python -m inductor_fix``'s
``__main__`` above the package (they may load it; it never imports them back), and the tools, CI
scripts and ``setup.py`` on top.

Every module of ``inductor_fix`` is parsed with ``ast`` (nothing is imported), and every
``import`` / ``from ... import`` inside the package becomes an edge, at module level or
inside a function alike: an import that only works because it sits in a function (it runs
after the module it needs has finished initialising) is the trap this test exists for.
Importing ``a.b.c`` also runs the package ``a.b``: that is an edge too, unless ``a.b`` is
a package of the importing module itself (it is running already, as the root package
always is); an explicit import of it (``from . import name``) is kept.
"""

from __future__ import annotations

import ast
import unittest
from pathlib import Path

PACKAGE = "inductor_fix"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: Layers, lowest first: a module may import its own layer or a lower one, never a higher one.
#: 0, the core: the private modules, the patch table and each patch's fix and activity, the
#: status data; 1, the job report (writer and reader) and ``inductor-fix run`` (``run.py``); 2,
#: the package's ``__init__`` and ``_api`` (the public API it re-exports); 3, ``check`` and each patch's check, seams,
#: bench and drills parts; 4, the command line.
LAYERS = ("core", "report, run", "the package __init__", "check", "cli")


#: The parts of a patch's folder that belong to ``check``'s layer (its workloads, harness
#: seams, benchmark and drift drills use check's machinery); the fix itself is core.
CHECK_PARTS = ("check", "seams", "bench", "drills")


def layer(module: str) -> int:
    parts = module.split(".")[1:]
    if not parts or parts == ["_api"]:  # the public API the package __init__ re-exports
        return 2
    first = parts[0]
    if first == "patches" and len(parts) == 3 and parts[2] in CHECK_PARTS:
        return 3
    if first in ("_report_writer", "report", "run"):
        return 1
    if first.startswith("_") and first != "__main__" or first in ("patches", "status"):
        return 0
    return {"check": 3, "cli": 4, "__main__": 4}[first]


def modules() -> dict[str, Path]:
    """Dotted name -> path, for every module of the package (``__init__`` as the package)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = (PACKAGE, *path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` imports anywhere in its source, and the packages
    such an import runs first but ``name``'s own (they are running already)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            sources = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            sources = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        for target in sources:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
                parent = target.rpartition(".")[0]
                while parent and parent in known and not name.startswith(parent + "."):  # packages an import runs
                    edges.add(parent)
                    parent = parent.rpartition(".")[0]
    edges.discard(name)
    return edges


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``edges`` as its modules in order, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _is_table(module: str) -> bool:
    return module == f"{PACKAGE}.patches" or module.startswith(f"{PACKAGE}.patches.")


def table_readers(edges: dict[str, set[str]]) -> list[str]:
    """Modules of ``check`` other than ``check.parts`` that import the patch table or a folder."""
    return sorted(name for name, targets in edges.items()
                  if name.startswith(f"{PACKAGE}.check.") and name != f"{PACKAGE}.check.parts"
                  and any(_is_table(target) for target in targets))


def core_importing_check(edges: dict[str, set[str]]) -> list[str]:
    """Modules of the table's core (not a part of a folder) that import the layer of ``check``."""
    return sorted(name for name, targets in edges.items() if _is_table(name) and layer(name) == 0
                  and any(target == f"{PACKAGE}.check" or target.startswith(f"{PACKAGE}.check.") for target in targets))


class TestImportGraph(unittest.TestCase):
    def test_every_module_has_a_layer(self) -> None:
        for name in modules():
            with self.subTest(module=name):
                self.assertIn(layer(name), range(len(LAYERS)))

    def test_no_import_cycle(self) -> None:
        self.assertIsNone(cycle(graph()))

    def test_no_import_from_a_higher_layer(self) -> None:
        upward = sorted(f"{name} ({LAYERS[layer(name)]}) imports {target} ({LAYERS[layer(target)]})"
                        for name, targets in graph().items() for target in targets if layer(target) > layer(name))
        self.assertEqual(upward, [])

    def test_check_reads_the_patch_table_through_one_module(self) -> None:
        # check's engines read the table (and a patch's parts) through check/parts.py only, and
        # the table's core (the table, patch.py, each folder's entry, fix and activity) never imports
        # the layer of check: a part is read by check, the table never reads a part.
        self.assertEqual(table_readers(graph()), [])
        self.assertEqual(core_importing_check(graph()), [])

    def test_a_second_reader_of_the_table_is_caught(self) -> None:
        edges = graph()
        edges["inductor_fix.check.runner"] = edges["inductor_fix.check.runner"] | {"inductor_fix.patches"}
        edges["inductor_fix.patches.patch"] = edges["inductor_fix.patches.patch"] | {"inductor_fix.check.parts"}
        self.assertEqual(table_readers(edges), ["inductor_fix.check.runner"])
        self.assertEqual(core_importing_check(edges), ["inductor_fix.patches.patch"])

    def test_the_graph_sees_function_level_and_relative_imports(self) -> None:
        # Controls for the parser itself: edges known to exist, one of them inside a function.
        edges = graph()
        self.assertIn("inductor_fix.patches.patch", edges["inductor_fix._lifecycle"])  # from .patches.patch import
        self.assertIn("inductor_fix.patches", edges["inductor_fix._lifecycle"])  # the package it runs first
        self.assertNotIn("inductor_fix.patches", edges["inductor_fix._undo"])  # the undo stack stands alone
        self.assertIn("inductor_fix._trace", edges["inductor_fix._activity"])  # inside a function
        self.assertIn("inductor_fix.check.runner", edges["inductor_fix.cli"])  # inside a function

    def test_a_planted_cycle_and_an_upward_import_are_caught(self) -> None:
        # Negative controls: the checks above fail on the traps this test was written for.
        edges = graph()
        edges["inductor_fix._lifecycle"] = edges["inductor_fix._lifecycle"] | {PACKAGE}  # `from . import __version__`
        self.assertIsNotNone(cycle(edges))
        self.assertGreater(layer("inductor_fix.cli"), layer("inductor_fix.check.runner"))
        self.assertGreater(layer(PACKAGE), layer("inductor_fix.report"))


REPO = ROOT.parent
#: Module names outside the package: the top-level modules beside it, and each tool by the name
#: it is imported by (``tools/`` is on ``sys.path`` for the tools); scripts by their path.
STARTUP, ENTRY = "_inductor_fix_startup", "_inductor_fix_autoload"
#: Repository layers, lowest first.
REPO_LAYERS = ("the start-up path", *(f"the package: {name}" for name in LAYERS),
               "the entry point and run's hook", "tools, CI and setup.py")


def repo_modules() -> dict[str, Path]:
    """Dotted name (or ``tools/<script>``) -> path, for every Python file outside ``test/``."""
    found = {f"{PACKAGE}.{name}" if name else PACKAGE: path
             for name, path in ((n.partition(".")[2], p) for n, p in modules().items())}
    found.update({STARTUP: REPO / f"{STARTUP}.py", ENTRY: REPO / f"{ENTRY}.py", "setup": REPO / "setup.py",
                  ".ci/check_dist": REPO / ".ci" / "check_dist.py"})
    tools = REPO / "tools"
    for path in sorted(tools.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if path.suffix == ".py":
            parts = path.relative_to(tools).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        elif not path.suffix and path.read_text(errors="replace").startswith("#!/usr/bin/env python"):
            found[f"tools/{path.name}"] = path
    return found


def repo_layer(name: str) -> int:
    if name == STARTUP:
        return 0
    # Run on start-up, outside the package's import: the entry module, run's hook, and python -m's
    # program (which runs the entry module's cli, as the console script does).
    if name in (ENTRY, f"{PACKAGE}.__main__") or name.startswith(f"{PACKAGE}._bootstrap"):
        return len(LAYERS) + 1
    if name == PACKAGE or name.startswith(f"{PACKAGE}."):
        return 1 + layer(name)
    return len(LAYERS) + 2


def repo_graph() -> dict[str, set[str]]:
    found = repo_modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{name} ({REPO_LAYERS[repo_layer(name)]}) imports {target} ({REPO_LAYERS[repo_layer(target)]})"
                  for name, targets in edges.items() for target in targets if repo_layer(target) > repo_layer(name))


class TestRepositoryGraph(unittest.TestCase):
    def test_no_cycle_anywhere(self) -> None:
        self.assertIsNone(cycle(repo_graph()))

    def test_no_import_from_a_higher_layer(self) -> None:
        self.assertEqual(upward(repo_graph()), [])

    def test_the_graph_covers_the_repository(self) -> None:
        edges = repo_graph()
        for name in (STARTUP, ENTRY, "tools/bench", "tools/retire", "bench_lib.compile", "torchenv", "setup",
                     ".ci/check_dist", f"{PACKAGE}._bootstrap.sitecustomize", f"{PACKAGE}.check.runner"):
            self.assertIn(name, edges)
        self.assertIn(STARTUP, edges[f"{PACKAGE}._lifecycle"])  # the package starts through the start-up path
        self.assertIn(PACKAGE, edges[ENTRY])  # the entry point loads the package (inside a function)
        self.assertIn("bench_lib.compile", edges["tools/bench"])  # a tool's own library
        self.assertEqual(edges[STARTUP], set())  # the bottom imports nothing of the repository

    def test_a_planted_cycle_and_an_upward_import_are_caught(self) -> None:
        # The cycle this test was written for: the package importing the entry point's module back.
        edges = repo_graph()
        edges[PACKAGE] = edges[PACKAGE] | {ENTRY}
        self.assertIsNotNone(cycle(edges))
        self.assertEqual(upward(edges), [f"{PACKAGE} (the package: the package __init__) imports {ENTRY} "
                                         "(the entry point and run's hook)"])


if __name__ == "__main__":
    unittest.main()
