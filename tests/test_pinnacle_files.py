"""The PINNacle suite (issue 19): every problem file in ``benchmarks/pinnacle/`` loads (no
training), the data files it names are in the repository and small, the benchmark script
knows every file, and ``benchmarks/pinnacle.py --smoke`` writes its table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import pinn.config

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
PINNACLE_DIR = BENCH / "pinnacle"
FILES = sorted(PINNACLE_DIR.glob("*.yaml"))
sys.path.insert(0, str(BENCH))

import pinnacle  # noqa: E402


def _data_files(node) -> list[str]:
    """Every ``file:`` value in a problem file (coefficients, initial values, data,
    references), relative to the file."""
    if isinstance(node, dict):
        out = [node["file"]] if isinstance(node.get("file"), str) else []
        return out + [f for v in node.values() for f in _data_files(v)]
    if isinstance(node, list):
        return [f for v in node for f in _data_files(v)]
    return []


def test_the_suite_has_pinnacles_main_table():
    """22 problems, one file each, and the script lists exactly the files there are."""
    assert len(pinnacle.SUITE) == 22
    assert {p.stem for p in FILES} == set(pinnacle.BY_KEY)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_pinnacle_file_loads(path):
    import pinn.config

    spec = yaml.safe_load(path.read_text())
    missing = [f for f in _data_files(spec) if not (path.parent / f).is_file()]
    if missing:  # a clean clone holds every file these name; say which one is not here
        pytest.skip(f"{path.name}: data file(s) not in this checkout: {', '.join(missing)} "
                    "(python benchmarks/pinnacle/make_data.py refs writes them)")
    for f in _data_files(spec):
        size = (path.parent / f).stat().st_size
        assert size < 1_000_000, f"{f} is {size} bytes: data in the repository stay < 1 MB"
    built = pinn.config.load(str(path))
    problem = built.problem
    assert problem.name == path.stem
    assert problem.equations and (problem.reference is not None or problem.exact
                                  or pinnacle.BY_KEY[path.stem].reference == "missing")


def test_pinnacle_smoke_writes_a_table(tmp_path):
    md, js = tmp_path / "PINNACLE.md", tmp_path / "pinnacle.json"
    r = subprocess.run([sys.executable, str(BENCH / "pinnacle.py"), "--smoke", "--problems",
                        "poisson_nd", "--recipe", "file", "--out", str(md), "--results",
                        str(js)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"pinnacle.py failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    row = json.loads(js.read_text())["results"]["poisson_nd"]
    assert row["mode"] == "smoke" and row["steps"] == 10 and row.get("error") is None
    assert row["l2re"] is not None and row["l2re"] > 0
    text = md.read_text()
    assert "| `poisson_nd` | PNd |" in text and "| smoke |" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 22
    assert sum(r[4] == "not run" for r in rows) == 21  # the other rows are there, marked
    assert [r[11] for r in rows if r[0] == "| `poisson_nd`"] == ["not run"]  # default recipe


def test_default_recipe_overrides_keep_the_problem():
    # the default-recipe column: pinn's default stages and network size in place of the
    # file's, the file's points, conditions and network structure kept
    from pinn.config.schema import _default_stages

    for name in ("poisson_nd", "ks"):
        path = str(BENCH / "pinnacle" / f"{name}.yaml")
        own, _ = pinn.config.load_spec(path)
        assert not pinnacle.uses_default_recipe(own)
        spec, _ = pinn.config.load_spec(path, pinnacle.default_recipe_overrides(own))
        assert spec.training.stages == _default_stages()
        assert spec.training.precision == "auto"
        assert (spec.model.args.width, spec.model.args.depth) == (30, 3)
        assert spec.training.points == own.training.points
        assert spec.conditions == own.conditions
        assert spec.model.periodic == own.model.periodic
    wave, _ = pinn.config.load_spec(str(BENCH / "pinnacle" / "wave1d_c.yaml"))
    assert pinnacle.uses_default_recipe(wave)  # its own stages: Adam + SSBroyden
