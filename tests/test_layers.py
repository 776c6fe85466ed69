"""One layered package: the parts of pinn import each other only downward, counting the
imports inside functions too (pyproject's import-linter contract), so no two parts form
an import cycle; and no function of pinn is longer than 80 lines."""

import ast
import collections
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_layers_contract_is_kept():
    pytest.importorskip("importlinter")
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 kept, 0 broken" in proc.stdout


def _part_graph() -> dict[str, set[str]]:
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("pinn", cache_dir=None)
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = (m.split(".")[1] if "." in m else "" for m in (module, imported))
            if a and b and a != b:
                edges[a].add(b)
    return edges


def test_no_two_parts_import_each_other_in_a_cycle():
    edges = _part_graph()

    def reaches(a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            n = todo.pop()
            for m in edges.get(n, ()):
                if m == b:
                    return True
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return False

    cycles = sorted((a, b) for a in edges for b in edges[a] if reaches(b, a))
    assert not cycles, f"parts in an import cycle: {cycles}"


def test_no_function_is_longer_than_80_lines():
    long = []
    for path in sorted((ROOT / "pinn").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if node.end_lineno - start + 1 > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long, long
