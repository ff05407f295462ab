"""The package's shape: no module over 400 lines unless it is on a list that only shrinks, no function over 80
lines, and no import cycles among its modules (the imports that run when a module is imported, read from the source
with `ast`)."""

import ast
from pathlib import Path

import metaworld_x

PACKAGE_DIR = Path(metaworld_x.__file__).parent
MAX_LINES = 400
MAX_FUNCTION_LINES = 80
TOO_LONG = {
    "metaworld_x/envs/tasks/tracking.py",
    "metaworld_x/motion/keyframes.py",
    "metaworld_x/routing/all_tasks.py",
    "metaworld_x/routing/pipeline.py",
}
"""The modules over MAX_LINES, each to be split by concept and then taken off this list; none may join it."""


def _modules() -> dict[str, Path]:
    """{dotted module name: its file} for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_over_400_lines_but_those_listed():
    modules = {str(path.relative_to(PACKAGE_DIR.parent)): _lines(path) for path in _modules().values()}
    too_long = {name for name, lines in modules.items() if lines > MAX_LINES}
    new = sorted(f"{name} ({modules[name]} lines)" for name in too_long - TOO_LONG)
    assert not new, f"over {MAX_LINES} lines: {', '.join(new)}; split them by concept"
    done = sorted(TOO_LONG - too_long)
    assert not done, f"{', '.join(done)} within {MAX_LINES} lines now (or gone): take them off TOO_LONG"


def _long_functions(source: str, max_lines: int) -> list[tuple[str, int, int]]:
    """(qualified name, first line, lines) of each function or method in `source` longer than `max_lines`, its
    decorators not counted, nested ones under their enclosing names."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and child.end_lineno - child.lineno + 1 > max_lines:
                    found.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_no_function_is_over_80_lines():
    offenders = sorted(
        f"{path.relative_to(PACKAGE_DIR.parent)}:{line} {name} ({lines} lines)"
        for path in _modules().values()
        for name, line, lines in _long_functions(path.read_text(), MAX_FUNCTION_LINES)
    )
    assert not offenders, (f"functions over {MAX_FUNCTION_LINES} lines: {'; '.join(offenders)}; split each into"
                           " functions whose names say what its parts do")


def test_the_function_measure_counts_methods_and_nested_functions():
    source = """
class Holder:
    def method(self):
        a = 1
        return a
def outer():
    def inner():
        a = 1
        return a
    return inner
def short():
    return 1
"""
    assert _long_functions(source, 2) == [("Holder.method", 3, 3), ("outer", 6, 5), ("outer.inner", 7, 3)]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_time_statements(body: list[ast.stmt]):
    """The statements that run when a module is imported: its top level and the blocks under it (if, try, with,
    class bodies), not function bodies, nor what runs only for a type checker (`if TYPE_CHECKING:`)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(statement, ast.If) and _is_type_checking(statement.test):
            yield from _import_time_statements(statement.orelse)
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _import_time_statements(getattr(statement, field, []))
        for handler in getattr(statement, "handlers", []):
            yield from _import_time_statements(handler.body)


def _imports(name: str, source: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules among `modules` that module `name` (of text `source`) imports when it is imported:
    `import metaworld_x.x` and `from metaworld_x.x import y` count metaworld_x.x, and metaworld_x.x.y where y is
    a module."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for statement in _import_time_statements(ast.parse(source).body):
        if isinstance(statement, ast.Import):
            found |= {alias.name for alias in statement.names}
        elif isinstance(statement, ast.ImportFrom):
            base = statement.module or ""
            if statement.level:  # relative: from the package, up level - 1 packages
                anchor = package.split(".")[: len(package.split(".")) - statement.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in statement.names}
    return {module for module in found if module in modules and module != name}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in `graph` as [a, b, ..., a]; None if there is none."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once all it reaches is explored
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                return path[path.index(imported):] + [imported]
            if imported not in state and (cycle := visit(imported)):
                return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path.read_text(), path.name == "__init__.py", set(modules))
            for name, path in modules.items()}


def test_no_import_cycles_among_the_package_modules():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_reports_a_cycle_and_passes_a_tree():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_counts_the_imports_that_run_at_import_time():
    source = """
import metaworld_x.a
from metaworld_x.b import thing
from metaworld_x import c
from . import sibling
if TYPE_CHECKING:
    from metaworld_x import d
def later():
    import metaworld_x.e
class Holder:
    from metaworld_x.f import g
try:
    import metaworld_x.h
except ImportError:
    import metaworld_x.i
"""
    modules = {"metaworld_x", *(f"metaworld_x.{name}" for name in "abcdefhi"), "metaworld_x.x.sibling"}
    found = _imports("metaworld_x.x.y", source, is_package=False, modules=modules)
    assert found == {"metaworld_x", "metaworld_x.a", "metaworld_x.b", "metaworld_x.c", "metaworld_x.x.sibling",
                     "metaworld_x.f", "metaworld_x.h", "metaworld_x.i"}
