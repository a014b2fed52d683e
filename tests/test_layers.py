"""The package's layers: data flows one way (spec -> trials -> sandboxed run -> compare -> classify ->
report), and each module imports only from its own layer and those below it, with no import cycle.

Every import counts, wherever it is written: at the top of a module, inside a function (deferred, but it
still runs, and still ties the modules together), and under `if TYPE_CHECKING:` (it never runs, but a
type named there is still a dependency on the module that defines it; and a cycle through one is a
cycle as soon as someone makes the import real). What escapes: `importlib.import_module("...")` with a
string (grader/__init__.py's lazy API; the zygote's boot line, tested in test_structure.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "grader"

# Lowest first. A module belongs to the layer of the longest prefix naming it (`grader.judging.compare`
# before `grader.judging`); the package itself (`import grader`: its version) is the lowest.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "grader",
        "grader.errors",
        "grader.text",
        "grader.outcomes",
        "grader.memo",
        "grader.collector",
        "grader.environment",
    ),
    ("grader.handin",),  # reading hand-ins: what a notebook's selection is, known to the spec too
    ("grader.exercise",),  # spec, graph, trials, references and where they come from
    ("grader.sandbox",),  # the trust boundary: the worker and everything that runs beside student code
    ("grader.judging.compare", "grader.judging.shapes"),  # per-entry errors, the shape rule
    ("grader.results",),
    ("grader.judging.naming",),  # naming a mistake (torch): the verdict path calls in, never the reverse
    ("grader.judging",),  # the verdict path: reruns, classify, judge; makes results
    ("grader.report", "grader.gradebook"),  # results shown, exported, kept
    ("grader.grading", "grader.validation", "grader.handout"),  # one hand-in on one exercise; a handout
    ("grader.jobs",),  # what a class run hands a backend: shared by classrun and cluster
    ("grader.classrun", "grader.cluster", "grader.local"),  # a class run, and its two backends
    ("grader.commands", "grader.scaffold"),  # each command family, returning an Outcome
    ("grader.cli", "grader.api", "grader.launch", "grader.__main__"),  # the parser, and the exit code
)

# Imports that break the order, each with why it is allowed and until when.
ALLOWED: Mapping[tuple[str, str], str] = {
    # The package's lazy facade (grader.check, grader.grade): imported on first use, named here for mypy.
    ("grader", "grader.api"): "the public API, under TYPE_CHECKING; loaded by name on first use",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The grader's modules that `name` (at `path`) imports, anywhere in its source."""
    modules = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up `level - 1` more
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:  # `from grader.exercise import spec` imports the module spec
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return {module for module in found if module in modules and module != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or (prefix != "grader" and module.startswith(prefix + "."))
            if matches and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def upward(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Each import of a module from a higher layer than the importer's, not ALLOWED."""
    found = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            if layer_of(other) > layer_of(module) and (module, other) not in ALLOWED:
                found.append(f"{module} (layer {layer_of(module)}) imports {other} (layer {layer_of(other)})")
    return found


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected group of modules (Tarjan), ALLOWED edges left out."""
    edges = {m: sorted(o for o in imported if (m, o) not in ALLOWED) for m, imported in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in edges.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1 or module in edges.get(module, ()):
                found.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_every_module_has_a_layer() -> None:
    unplaced = [module for module in _modules() if layer_of(module) < 0]
    assert not unplaced, f"declare their layer in LAYERS: {unplaced}"


def test_no_module_imports_from_a_higher_layer() -> None:
    found = upward(import_graph())
    assert not found, "imports that run back up a layer:\n" + "\n".join(found)


def test_there_is_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(group) for group in found)


def test_the_allowed_exceptions_are_still_needed() -> None:
    """An exception whose import is gone goes too: the list only shrinks."""
    graph = import_graph()
    stale = [edge for edge in ALLOWED if edge[1] not in graph.get(edge[0], set())]
    assert not stale, f"no longer imported, remove from ALLOWED: {stale}"


@pytest.mark.parametrize(
    ("graph", "upward_found", "cycle_found"),
    [
        ({"grader.exercise.spec": {"grader.classrun"}}, 1, 0),  # a spec that knows the class run
        (
            {"grader.classrun": {"grader.cluster.backend"}, "grader.cluster.backend": {"grader.classrun"}},
            0,
            1,
        ),
        ({"grader.cluster.worker": {"grader.jobs"}, "grader.jobs": {"grader.grading"}}, 0, 0),
    ],
)
def test_the_checks_catch_what_they_are_for(
    graph: dict[str, set[str]], upward_found: int, cycle_found: int
) -> None:
    assert len(upward(graph)) == upward_found
    assert len(cycles(graph)) == cycle_found


def test_imports_are_found_inside_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from grader.classrun import ClassRun\n"
        "def later():\n    from grader.exercise import spec\n    import grader.cli\n",
        encoding="utf-8",
    )
    found = _imported("grader.probe", source, _modules())
    assert found == {"grader.classrun", "grader.exercise.spec", "grader.cli"}
