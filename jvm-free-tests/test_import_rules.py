"""The package's layers, checked on the source: every import of every module (inside functions too) is parsed.

``core`` <- ``common``, ``monitoring`` <- ``datastream`` <- executors (``local``, ``spark``) <- ``testing``,
``demo``, ``conformance`` (and the package's own ``__init__``/``__main__``). See ``docs/architecture.md``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

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


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES: Dict[str, Path] = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def imports(module: str) -> Iterator[Tuple[int, str, List[str]]]:
    """``(line, imported module, names imported from it)`` for every import statement of ``module``."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    package = module if is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target, [a.name for a in node.names]


def resolve(target: str, names: List[str]) -> List[Tuple[str, Optional[str]]]:
    """The package modules an import reaches: ``(module, name imported from it or None)``; a name that is a
    submodule counts as an import of that submodule."""
    if not (target == NAME or target.startswith(NAME + ".")):
        return []
    if not names:
        return [(target, None)] if target in MODULES else []
    out: List[Tuple[str, Optional[str]]] = []
    for name in names:
        if f"{target}.{name}" in MODULES:
            out.append((f"{target}.{name}", None))
        elif target in MODULES:
            out.append((target, name))
    return out


def edges() -> Iterator[Tuple[str, int, str, Optional[str]]]:
    for module in MODULES:
        for line, target, names in imports(module):
            for reached, name in resolve(target, names):
                yield module, line, reached, name


def test_the_walk_sees_imports_inside_functions() -> None:
    local = [(m, r) for m, _, r, _ in edges() if m == f"{NAME}.spark.environment"]
    assert (f"{NAME}.spark.environment", f"{NAME}.spark.delta") in local  # from_delta imports it in its body
    assert len(MODULES) > 60


def test_layers_import_only_layers_below_them() -> None:
    problems = []
    for module, line, reached, _ in edges():
        allowed = ALLOWED.get(layer(module))
        if allowed is not None and layer(reached) not in allowed:
            problems.append(f"{MODULES[module].relative_to(ROOT)}:{line}: {layer(module)} imports {reached}")
    assert not problems, "\n".join(problems)


def test_pyspark_sql_only_in_the_spark_executor_and_testing() -> None:
    problems = []
    for module in MODULES:
        if layer(module) in PYSPARK_SQL_LAYERS:
            continue
        for line, target, _ in imports(module):
            if target == "pyspark.sql" or target.startswith("pyspark.sql."):
                problems.append(f"{MODULES[module].relative_to(ROOT)}:{line}: imports {target}")
    assert not problems, "\n".join(problems)


def test_no_private_names_imported_across_modules() -> None:
    problems = [
        f"{MODULES[module].relative_to(ROOT)}:{line}: imports {name} from {reached}"
        for module, line, reached, name in edges()
        if name is not None and name.startswith("_") and not name.startswith("__") and reached != module
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_defines_all(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text())
    names = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    assert "__all__" in names, f"{MODULES[module].relative_to(ROOT)} defines no __all__"


def test_no_import_cycles_between_modules() -> None:
    graph: Dict[str, Set[str]] = {m: set() for m in MODULES}
    for module, _, reached, _ in edges():
        if reached != module:
            graph[module].add(reached)
    cycles: List[List[str]] = []
    state: Dict[str, int] = {}  # 1: on the stack, 2: done
    stack: List[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checks above are not vacuous: a core module importing datastream, a private name and a cycle are seen."""
    assert layer(f"{NAME}.core.window_operator") == "core"
    assert "datastream" not in ALLOWED["core"]
    assert resolve(f"{NAME}.spark", ["environment"]) == [(f"{NAME}.spark.environment", None)]
    assert resolve(f"{NAME}.core.operators", ["_x"]) == [(f"{NAME}.core.operators", "_x")]
