"""The package's layers, checked on the source: every import of every module (inside functions too) is parsed.

``core`` <- ``common``, ``monitoring`` <- ``datastream`` <- executors (``local``, ``spark``) <- ``testing``,
``demo``, ``conformance`` (and the package's own ``__init__``/``__main__``). See ``docs/architecture.md``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pyspark_flinkish"
NAME = "pyspark_flinkish"

ALLOWED: Dict[str, Set[str]] = {
    "core": {"core"},
    "common": {"core", "common"},
    "monitoring": {"core", "monitoring"},
    "datastream": {"core", "common", "datastream"},
    "local": {"core", "common", "monitoring", "datastream", "local"},
    "spark": {"core", "common", "monitoring", "datastream", "local", "spark"},
}
"""Which layers a layer's modules may import; a layer not named here (``testing``, ``demo``, ``conformance``, the
package's ``__init__``/``__main__``) sits on top and may import any."""

PYSPARK_SQL_LAYERS = {"spark", "testing"}
"""Where ``pyspark.sql`` may be imported."""

TYPE_ONLY_UPWARD = {("pyspark_flinkish.datastream.stream_execution_environment", "pyspark_flinkish.spark.environment")}
"""Imports against the layers allowed under ``if TYPE_CHECKING:`` only (never executed): the overload of
``get_execution_environment(spark)`` names the Spark environment's type for type checkers."""


class Import(NamedTuple):
    module: str  # the importing module
    line: int
    target: str  # the module named by the statement (relative imports resolved)
    names: List[str]  # names imported from it (``from target import ...``), else empty
    type_only: bool  # under ``if TYPE_CHECKING:``


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES: Dict[str, Path] = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def parse_imports(module: str, source: str, is_package: bool) -> Iterator[Import]:
    """Every import statement of ``source`` (module ``module``), wherever it is: module level, functions, methods."""
    tree = ast.parse(source)
    type_only: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                type_only.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, node.lineno, alias.name, [], node.lineno in type_only)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield Import(module, node.lineno, target, [a.name for a in node.names], node.lineno in type_only)


def imports(module: str) -> Iterator[Import]:
    path = MODULES[module]
    return parse_imports(module, path.read_text(), path.name == "__init__.py")


def resolve(target: str, names: List[str], modules: Optional[Dict[str, Path]] = None) -> List[Tuple[str, Optional[str]]]:
    """The package modules an import reaches: ``(module, name imported from it or None)``; a name that is a
    submodule counts as an import of that submodule."""
    modules = MODULES if modules is None else modules
    if not (target == NAME or target.startswith(NAME + ".")):
        return []
    if not names:
        return [(target, None)] if target in modules else []
    out: List[Tuple[str, Optional[str]]] = []
    for name in names:
        if f"{target}.{name}" in modules:
            out.append((f"{target}.{name}", None))
        elif target in modules:
            out.append((target, name))
    return out


class Edge(NamedTuple):
    imp: Import
    reached: str  # the package module reached
    name: Optional[str]  # the name imported from it (None: the module itself)


def edges() -> Iterator[Edge]:
    for module in MODULES:
        for imp in imports(module):
            for reached, name in resolve(imp.target, imp.names):
                yield Edge(imp, reached, name)


def where(imp: Import) -> str:
    path = MODULES.get(imp.module)
    return f"{path.relative_to(ROOT) if path is not None else imp.module}:{imp.line}"


def layer_violations(all_edges: List[Edge]) -> List[str]:
    out = []
    for e in all_edges:
        allowed = ALLOWED.get(layer(e.imp.module))
        if allowed is None or layer(e.reached) in allowed:
            continue
        if e.imp.type_only and (e.imp.module, e.reached) in TYPE_ONLY_UPWARD:
            continue
        out.append(f"{where(e.imp)}: {layer(e.imp.module)} imports {e.reached}")
    return out


def private_imports(all_edges: List[Edge]) -> List[str]:
    return [
        f"{where(e.imp)}: imports {e.name} from {e.reached}"
        for e in all_edges
        if e.name is not None and e.name.startswith("_") and not e.name.startswith("__") and e.reached != e.imp.module
    ]


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Cycles of a directed graph (one per back edge of a depth-first search; none means acyclic)."""
    found: List[List[str]] = []
    state: Dict[str, int] = {}  # 1: on the stack, 2: done
    stack: List[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                found.append([*stack[stack.index(n) :], n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def runtime_graph(all_edges: List[Edge]) -> Dict[str, Set[str]]:
    """Imports that run (at import or call time): ``if TYPE_CHECKING:`` imports never do."""
    graph: Dict[str, Set[str]] = {m: set() for m in MODULES}
    for e in all_edges:
        if not e.imp.type_only and e.reached != e.imp.module:
            graph[e.imp.module].add(e.reached)
    return graph


EDGES = list(edges())


def test_layers_import_only_layers_below_them() -> None:
    problems = layer_violations(EDGES)
    assert not problems, "\n".join(problems)


def test_pyspark_sql_only_in_the_spark_executor_and_testing() -> None:
    problems = [
        f"{where(imp)}: imports {imp.target}"
        for module in MODULES
        if layer(module) not in PYSPARK_SQL_LAYERS
        for imp in imports(module)
        if imp.target == "pyspark.sql" or imp.target.startswith("pyspark.sql.")
    ]
    assert not problems, "\n".join(problems)


def test_no_private_names_imported_across_modules() -> None:
    problems = private_imports(EDGES)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_defines_all(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text())
    names = {
        t.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    assert "__all__" in names, f"{MODULES[module].relative_to(ROOT)} defines no __all__"


def test_no_import_cycles_between_modules() -> None:
    found = cycles(runtime_graph(EDGES))
    assert not found, "\n".join(" -> ".join(c) for c in found)


# ---------------------------------------------------------------------------------- the checks themselves


def test_the_walk_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from ..datastream import plan\n"
        "if TYPE_CHECKING:\n"
        "    from ..spark.environment import SparkStreamExecutionEnvironment\n"
        "def f():\n"
        "    from ..spark.driver import _Private\n"
        "    import pyspark.sql.functions\n"
    )
    found = list(parse_imports(f"{NAME}.core.example", source, is_package=False))
    assert [(i.target, i.names, i.type_only) for i in found] == [
        ("typing", ["TYPE_CHECKING"], False),
        (f"{NAME}.datastream", ["plan"], False),
        (f"{NAME}.spark.environment", ["SparkStreamExecutionEnvironment"], True),
        (f"{NAME}.spark.driver", ["_Private"], False),
        ("pyspark.sql.functions", [], False),
    ]
    reached = [Edge(i, r, n) for i in found for r, n in resolve(i.target, i.names)]
    assert [(e.reached, e.name) for e in reached] == [
        (f"{NAME}.datastream.plan", None),
        (f"{NAME}.spark.environment", "SparkStreamExecutionEnvironment"),
        (f"{NAME}.spark.driver", "_Private"),
    ]
    # core may import none of them; the private name is caught wherever it is imported
    assert len(layer_violations(reached)) == 3
    assert [p.split(": ", 1)[1] for p in private_imports(reached)] == [f"imports _Private from {NAME}.spark.driver"]


def test_the_cycle_check_finds_a_cycle_and_passes_a_dag() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_package_is_seen_whole() -> None:
    assert len(MODULES) > 60
    assert any(e.imp.module == f"{NAME}.spark.environment" and e.reached == f"{NAME}.spark.delta" for e in EDGES)
