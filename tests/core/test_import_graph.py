"""The import graph of wurk_django/: no cycle, also none through an import inside a
function, and the engine under core/ imports nothing of Django."""

import ast
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "wurk_django"
# The Django layer: Django itself, the tasks backport, django-redis.
DJANGO_PREFIX = "django"
IMPORT_CALLS = ("import_module", "__import__")


@dataclass(frozen=True)
class Edge:
    """Where one module first imports another: the line, and whether inside a function."""

    line: int
    in_function: bool


def module_paths(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package at `root`."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name `from <level dots><name>` means inside `module`."""
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _function_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node inside a function or method body."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    return inside


def imported_names(module: str, path: Path, modules: dict) -> list[tuple[str, int, bool]]:
    """(name, line, in a function) for each import statement and each `import_module`
    call with a literal name; `from X import y` names X.y when that is a module."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    inside = _function_nodes(tree)
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        elif _is_import_call(node):
            package = node.args[1].value if len(node.args) > 1 and isinstance(
                node.args[1], ast.Constant) else module
            target = node.args[0].value
            level = len(target) - len(target.lstrip("."))
            names = [_absolute(package, True, level, target.lstrip(".") or None)
                     if level else target]
        found += [(name, node.lineno, id(node) in inside) for name in names]
    return found


def _is_import_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    return called in IMPORT_CALLS and isinstance(first, ast.Constant) \
        and isinstance(first.value, str)


def _owner(name: str, modules: dict) -> str | None:
    """The deepest module of the package that `name` lies in, or None if outside it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path, package: str) -> tuple[dict, dict]:
    """The package's modules -> {imported module: first Edge}, and each module's imports
    from outside the package (top-level name -> first Edge).

    Importing `a.b.c` also runs `a/__init__` and `a/b/__init__`: those count, except the
    packages the importing module itself lives in, which are already being imported.
    """
    modules = module_paths(root, package)
    graph = {module: {} for module in modules}
    outside = {module: {} for module in modules}
    for module, path in modules.items():
        for name, line, in_function in imported_names(module, path, modules):
            target = _owner(name, modules)
            if target is None:
                outside[module].setdefault(name.split(".")[0], Edge(line, in_function))
                continue
            for reached in [target, *_ancestors(target)]:
                if reached != module and (reached == target or
                                          not module.startswith(reached + ".")):
                    graph[module].setdefault(reached, Edge(line, in_function))
    return graph, outside


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:cut]) for cut in range(len(parts) - 1, 0, -1)]


def strongly_connected(graph: dict) -> list[list[str]]:
    """Tarjan's components of more than one module (a module importing itself is none)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def shortest_cycle(graph: dict, component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, staying inside it."""
    start, members = component[0], set(component)
    came_from = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node]):
            if nxt == start:
                path = [node]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt in members and nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start}")


def describe(graph: dict, cycle: list[str], root: Path, package: str) -> str:
    paths = module_paths(root, package)
    steps = []
    for here, there in zip(cycle, cycle[1:]):
        edge = graph[here][there]
        where = f"{paths[here].relative_to(root.parent)}:{edge.line}"
        steps.append(f"  {here} -> {there}   ({where}"
                     f"{', inside a function' if edge.in_function else ''})")
    return "\n".join(steps)


def cycle_report(root: Path, package: str) -> list[str]:
    """One entry per set of modules that import each other: who, and one cycle with lines."""
    graph, _ = import_graph(root, package)
    return [f"{', '.join(component)}; for instance:\n"
            + describe(graph, shortest_cycle(graph, component), root, package)
            for component in strongly_connected(graph)]


# --- the rules ----------------------------------------------------------------------

def test_no_module_of_the_package_takes_part_in_an_import_cycle():
    cycles = cycle_report(PACKAGE, "wurk_django")
    if cycles:
        pytest.fail("import cycles:\n" + "\n\n".join(cycles), pytrace=False)


def test_the_core_imports_nothing_of_django_not_even_inside_a_function():
    graph, outside = import_graph(PACKAGE, "wurk_django")
    core = "wurk_django.core"
    found = sorted(
        f"{module} imports {name} (line {edge.line})"
        for module in graph if module == core or module.startswith(core + ".")
        for name, edge in [*outside[module].items(), *graph[module].items()]
        if name.startswith(DJANGO_PREFIX)
        or (name.startswith("wurk_django.") and not name.startswith(core)))
    assert found == []


# --- the graph itself, on a package made for it ------------------------------------

def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_cycle_hidden_in_a_function_is_found_and_printed_with_its_lines(tmp_path):
    package = write_package(tmp_path, {
        "__init__.py": "",
        "low.py": "def later():\n    from .high import thing\n",
        "high.py": "from pkg import low\nthing = 1\n",
        "alone.py": "import json\nfrom . import low\n",
    })
    [cycle] = cycle_report(package, "pkg")
    assert cycle.splitlines() == [
        "pkg.high, pkg.low; for instance:",
        "  pkg.high -> pkg.low   (pkg/high.py:1)",
        "  pkg.low -> pkg.high   (pkg/low.py:2, inside a function)",
    ]


def test_the_graph_reads_relative_imports_calls_and_the_packages_an_import_runs(tmp_path):
    package = write_package(tmp_path, {
        "__init__.py": "from .sub import api\n",
        "sub/__init__.py": "",
        "sub/api.py": "from .. import names\nfrom ..names import VALUE\n",
        "names.py": "import importlib\nVALUE = importlib.import_module('pkg.other')\n",
        "other.py": "from .sub.api import X\n",
    })
    graph, outside = import_graph(package, "pkg")
    assert set(graph["pkg.sub.api"]) == {"pkg.names"}  # its own packages are not edges
    assert set(graph["pkg.names"]) == {"pkg.other"}
    assert set(graph["pkg.other"]) == {"pkg.sub.api", "pkg.sub"}  # pkg is its own package
    assert outside["pkg.names"] == {"importlib": Edge(1, False)}
    [cycle] = cycle_report(package, "pkg")
    assert cycle.splitlines()[0] == "pkg.names, pkg.other, pkg.sub.api; for instance:"
    assert len(cycle.splitlines()) == 4
