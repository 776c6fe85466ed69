"""Dependencies earn their place: every core dependency declared in pyproject.toml is
imported somewhere in pinn/ (at the top of a module or lazily inside a function), and
every optional extra names what uses it."""

import ast
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")

ROOT = Path(__file__).resolve().parents[1]
# distribution name -> the module it installs, where they differ
MODULE_OF = {"scikit-fem": "skfem", "pyyaml": "yaml", "tensorboardx": "tensorboardX",
             "markdown-it-py": "markdown_it", "mlflow-skinny": "mlflow",
             "orbax-checkpoint": "orbax", "jax2onnx": "jax2onnx"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower()


def _imported_modules() -> set[str]:
    """Top-level names of every module imported anywhere in pinn/ (also inside functions)."""
    found = set()
    for path in (ROOT / "pinn").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_core_dependency_is_imported_by_pinn():
    deps = [_name(r) for r in _pyproject()["project"]["dependencies"]]
    imported = _imported_modules()
    unused = [d for d in deps if MODULE_OF.get(d, d.replace("-", "_")) not in imported]
    assert not unused, (
        f"declared in pyproject.toml but never imported in pinn/: {unused}; drop them from "
        "[project] dependencies (or move them to the extra that needs them)")


def test_the_tensorboard_extra_is_what_the_logger_imports():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert [_name(r) for r in extras["tensorboard"]] == ["tensorboardx"]
    assert "tensorboardX" in _imported_modules()
    assert "orbax" not in _imported_modules()  # checkpoints are npz (pinn.train.checkpoint)
