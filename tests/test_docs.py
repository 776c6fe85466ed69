"""The documentation: every public name has a docstring, the package ships ``py.typed``,
the YAML reference is generated from the schema and covers all of it, and the site
builds with ``mkdocs build --strict`` (a broken reference, a missing page or snippet, or
a docstring whose parameters do not match the signature fails it). The how-to snippets
(docs/snippets/) train and check their error: ``-m slow``."""

import importlib
import importlib.util
import inspect
import os
import runpy
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import pinn

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# the subpackages whose public names (their __all__) the API reference documents
SUBPACKAGES = ["pinn.dsl", "pinn.train", "pinn.geometry", "pinn.nets", "pinn.evaluate",
               "pinn.config", "pinn.fem", "pinn.reference", "pinn.report", "pinn.compile",
               "pinn.export", "pinn.io", "pinn.serialize", "pinn.sweep"]


def _undocumented(module) -> list[str]:
    """Names of ``module.__all__`` that are modules, classes or functions without a
    docstring of their own (data, such as ``pinn.serialize.VERSION``, has none to give)."""
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj)
                or callable(obj)):
            obj = type(obj)  # an instance (pinn.pi): its class says what it is
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(f"{module.__name__}.{name}")
    return missing


def test_every_public_name_has_a_docstring():
    modules = [pinn, *(importlib.import_module(m) for m in SUBPACKAGES)]
    assert len(pinn.__all__) > 50  # the walk sees the real front door
    missing = [n for m in modules for n in _undocumented(m)]
    assert not missing, f"public names without a docstring: {missing}; add one (a line " \
                        "saying what it is, an example where it helps)"


def test_the_dsl_operators_say_what_they_compute():
    for op in (pinn.grad, pinn.div, pinn.laplacian, pinn.vector, pinn.dot, pinn.D):
        doc = inspect.getdoc(op)
        assert doc and len(doc) > 40 and f"{op.__name__}(" in doc, op.__name__


def test_py_typed_ships_with_the_package():
    assert resources.files("pinn").joinpath("py.typed").is_file()
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library "
                                  "from 3.11")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    # an installed wheel has it only when package-data names it
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["pinn"]


def _hooks():
    spec = importlib.util.spec_from_file_location("pinn_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(text: str) -> dict[str, str]:
    """``{anchor: section text}`` of the generated reference."""
    out = {}
    for part in text.split("\n## ")[0:]:
        head = part.lstrip("# ").split("\n", 1)[0]
        anchor = head.rsplit("{#", 1)[-1].rstrip("}")
        out[anchor] = part
    return out


def test_the_yaml_reference_covers_every_key_of_the_schema():
    from pydantic import BaseModel

    from pinn.config import schema as S

    sections = _sections(_hooks().yaml_reference())
    models = [m for m in vars(S).values()
              if isinstance(m, type) and issubclass(m, BaseModel) and m.model_fields]
    reached = [m for m in models if m.__name__.lower() in sections]
    # every model the root reaches has a section (the few unreached are bases)
    assert {"problemspec", "trainingspec", "pointsspec", "stagespec", "adamargs",
            "conditionspec", "modelspec", "domainspec"} <= set(sections)
    assert len(reached) >= len(models) - 3, sorted(m.__name__ for m in models
                                                   if m not in reached)
    for model in reached:
        text = sections[model.__name__.lower()]
        for name, info in model.model_fields.items():
            assert f"| `{info.alias or name}` |" in text, (model.__name__, name)
    points = sections["pointsspec"]
    row = next(r for r in points.splitlines() if r.startswith("| `interior` |"))
    assert f"`{S.PointsSpec.model_fields['interior'].default}`" in row
    assert "integer (≥ 1, ≤ " in row and f"{S.MAX_POINTS:,}".replace(",", " ") in row
    domain = sections["problemspec"]
    assert "| `domain` | [DomainSpec](#domainspec) | required |" in domain


def test_docstring_roles_become_markdown_code():
    griffe = pytest.importorskip("griffe", reason="griffe comes with mkdocstrings[python]")
    assert griffe
    spec = importlib.util.spec_from_file_location("pinn_docs_roles", DOCS / "griffe_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    text = roles.markdown_text(
        "See :func:`~pinn.evaluate.score` and :class:`pinn.Problem`::\n\n    code\n\n"
        "Args:\n    lr: the rate.\n    b1, b2: moment rates.\n")
    assert "See `score` and `pinn.Problem`:\n\n    code" in text
    assert "    b1: moment rates.\n    b2: moment rates." in text and ":class:" not in text


def _has_mkdocs() -> str | None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            return module
        try:
            importlib.import_module(module)
        except ImportError:
            return module
    return None


def test_the_site_builds_strictly(tmp_path):
    missing = _has_mkdocs()
    if missing:
        pytest.skip(f"{missing} is not installed: pip install -e '.[docs]'")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    yaml_page = (site / "yaml" / "index.html").read_text(encoding="utf-8")
    assert "yaml-reference" not in yaml_page  # the marker was replaced
    assert "resample_every" in yaml_page and "micro_batch" in yaml_page
    api = (site / "api" / "dsl" / "index.html").read_text(encoding="utf-8")
    assert 'id="pinn.dsl.laplacian"' in api and "second derivatives" in api
    assert ":class:`" not in api  # roles are rewritten as code
    howto = (site / "howto" / "custom-network" / "index.html").read_text(encoding="utf-8")
    assert "nnx.Module" in howto  # the snippet was included


SNIPPETS = sorted(p for p in (DOCS / "snippets").glob("*.py") if p.stem != "poisson1d")


@pytest.mark.slow
@pytest.mark.parametrize("path", SNIPPETS, ids=lambda p: p.stem)
def test_howto_snippet_runs(path, monkeypatch):
    monkeypatch.syspath_prepend(str(path.parent))
    monkeypatch.delitem(sys.modules, "poisson1d", raising=False)
    runpy.run_path(str(path), run_name="__main__")  # each ends in asserts on its error
