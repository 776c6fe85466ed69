"""The PINNacle suite (issue 19): every problem file in ``benchmarks/pinnacle/`` loads (no
training), the data files it names are in the repository and small, the benchmark script
knows every file, PINNacle's Table 3 (``benchmarks/pinnacle/table3.json``) is the shared
TABLE3.md's, ``benchmarks/pinnacle.py --smoke`` writes its table with the user files' and
the expert files' rows, and its verdicts and summary count what they should."""

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
    # and the same 22 as a user writes them (the user rows)
    assert {p.stem for p in pinnacle.USER_DIR.glob("*.yaml")} == set(pinnacle.BY_KEY)
    assert all(pinnacle.problem_path(k, "user").is_file() for k in pinnacle.BY_KEY)


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


def _table(text: str, title: str) -> list[list[str]]:
    """The rows of the Markdown table under ``## title``, as lists of cells."""
    part = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split(" | ")]
            for line in part.splitlines() if line.startswith("| `")]


@pytest.mark.slow  # 31 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_pinnacle_smoke_writes_a_table(tmp_path):
    # the expert file's own recipe and the user's file, both in smoke mode
    md, js = tmp_path / "PINNACLE.md", tmp_path / "pinnacle.json"
    r = subprocess.run([sys.executable, str(BENCH / "pinnacle.py"), "--smoke", "--problems",
                        "poisson_nd", "--files", "both", "--recipe", "file", "--out", str(md),
                        "--results", str(js)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"pinnacle.py failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    data = json.loads(js.read_text())
    for table, path in (("results", "benchmarks/pinnacle/poisson_nd.yaml"),
                        ("user", "benchmarks/pinnacle/user/poisson_nd.yaml")):
        row = data[table]["poisson_nd"]
        assert row["mode"] == "smoke" and row["steps"] == 10 and row.get("error") is None
        assert row["l2re"] is not None and row["l2re"] > 0
        assert row["file"] == path
    user = data["user"]["poisson_nd"]
    assert user["recipe_kind"] == "user" and "poisson_nd" not in data["defaults"]
    assert user["recipe"] == "adam 2000 + ssbroyden 3000, mlp 30x3"  # the library's default
    text = md.read_text()
    runs = _table(text, "Runs")
    assert len(runs) == 22
    (pnd,) = [r for r in runs if r[0] == "`poisson_nd`"]
    assert pnd[1] == "PNd" and pnd[3] == "smoke" and pnd[5] == "10"   # the user file's row
    assert pnd[9] == "smoke" and pnd[11] == "10"                       # the expert file's
    assert pnd[14] == "not run"                                        # the default recipe's
    assert sum(r[3] == "not run" and r[9] == "not run" for r in runs) == 21
    verdicts = _table(text, "Against PINNacle")
    (pnd,) = [r for r in verdicts if r[0] == "`poisson_nd`"]
    # PINNacle's numbers; a smoke row gets no verdict
    assert pnd[6:] == ["3.04e-03", "4.58e-04 (LRA)", "–", "–", "–"]
    assert "user files: no budget run yet" in text


def test_table3_json_is_pinnacles_table():
    """benchmarks/pinnacle/table3.json: PINNacle's 22 problems, our 22 files, its best
    column the lowest cell, and the footnotes that change a best (HInv, PInv)."""
    t3 = pinnacle.TABLE3
    assert set(t3) == set(pinnacle.BY_KEY)
    assert all(t3[e.key].problem == e.label for e in pinnacle.SUITE)
    assert (t3["burgers1d_c"].pinn, t3["burgers1d_c"].best) == (1.45e-2, 1.33e-2)
    assert t3["burgers1d_c"].best_methods == ("LBFGS",)
    assert t3["poisson2d_c"].best_methods == ("NTK",) and t3["poisson2d_c"].best == 1.23e-2
    assert len(t3["heat2d_lt"].best_methods) == 6  # a tie at 9.99e-1
    assert (t3["hinv"].best, t3["hinv"].best_methods) == (1.19e-2, ("vPINN",))
    assert (t3["hinv"].alt_best, t3["hinv"].alt_methods) == (5.09e-2, ("LRA",))
    assert (t3["pinv"].best, t3["pinv"].alt_best, t3["pinv"].alt_methods) == (
        1.96e-2, 2.45e-2, ("vPINN",))
    assert [k for k, p in t3.items() if p.alt_best is not None] == ["pinv", "hinv"]
    # the four problems every PINNacle method fails
    assert {k for k, p in t3.items() if p.best >= 0.95} == set(pinnacle.HARD)
    assert json.loads(pinnacle.TABLE3_JSON.read_text())["_source"].startswith("PINNacle")
    # every cell has the digits the verdicts compare at (pinnacle.at_table_precision)
    cells = [v for r in json.loads(pinnacle.TABLE3_JSON.read_text())["problems"]
             for v in r["values"].values() if v is not None]
    assert len(cells) > 200 and all(pinnacle.at_table_precision(v) == v for v in cells)


def test_table3_json_matches_the_markdown():
    """The JSON is the shared TABLE3.md's table (../shared/pinnacle/ from the repository
    root; not in a clone of the repository alone)."""
    if not pinnacle.TABLE3_MD.is_file():
        pytest.skip(f"{pinnacle.TABLE3_MD} not here (only the project's shared folder has it)")
    md = pinnacle.table3_from_markdown(pinnacle.TABLE3_MD.read_text())
    stored = json.loads(pinnacle.TABLE3_JSON.read_text())
    assert stored.pop("_source") == pinnacle.TABLE3_SOURCE
    assert stored == md
    assert pinnacle.table3_json(md) == pinnacle.TABLE3_JSON.read_text()
    assert len(md["problems"]) == 22


def _row(l2re, budget=600.0, **kw):
    return {"mode": "budget", "budget_seconds": budget, "steps": 100, "wall_seconds": budget,
            "l2re": l2re, "where": "somewhere", **kw}


def test_verdicts_and_summary():
    """The verdict columns and the summary's counts from made-up budget rows (no training):
    the lowest row counts, Burgers 1d-C by its error against the exact solution, both
    bests where a footnote changes PINNacle's best."""
    results = {"burgers1d_c": _row(1.33e-2, l2re_exact=3e-5, ref_vs_exact=1.33e-2),
               "hinv": _row(3e-2), "pinv": _row(2.2e-2), "ks": _row(0.5),
               "heat2d_ms": _row(0.1)}
    user = {"hinv": _row(0.9), "pinv": _row(1e-2), "ks": _row(0.15),
            "poisson_nd": {"mode": "smoke", "l2re": 1e-9, "steps": 10},
            "heat2d_ms": {"key": "heat2d_ms", "mode": "budget", "error": "boom"}}
    defaults = {"burgers1d_c": {"key": "burgers1d_c", "same_as_file": True}}
    text = pinnacle.report(results, "cmd", _machine(), defaults, user)
    v = {r[0].strip("`"): r for r in _table(text, "Against PINNacle")}
    assert v["burgers1d_c"][5] == "3.00e-05 (expert file, 600 s; vs exact)"
    assert v["burgers1d_c"][8:] == ["yes", "yes", "yes"]
    assert v["hinv"][8:] == ["yes vs LRA 5.09e-02 only", "yes", "yes"]
    assert v["pinv"][5].startswith("1.00e-02 (user file") and v["pinv"][8] == "yes (both)"
    assert pinnacle.beats(2.2e-2, pinnacle.TABLE3["pinv"]) == "yes vs vPINN 2.45e-02 only"
    assert pinnacle.beats(0.1, pinnacle.TABLE3["pinv"]) == "no"
    # at the table's three digits: Heat 2d-CG's best is LAAF's 2.39e-2, Heat 2d-LT's plain
    # PINN 0.999
    assert pinnacle.beats(2.384e-2, pinnacle.TABLE3["heat2d_cg"]) == "yes"
    assert pinnacle.beats(2.386e-2, pinnacle.TABLE3["heat2d_cg"]) == "no"  # 2.39e-2: equal
    hlt = next(e for e in pinnacle.SUITE if e.key == "heat2d_lt")
    assert not pinnacle._above_pinn(hlt, 0.99909) and pinnacle._above_pinn(hlt, 0.9996)
    assert v["ks"][8:] == ["yes", "yes", "no"]
    assert v["heat2d_ms"][2] == "failed" and v["heat2d_ms"][8:] == ["no", "no", "no"]
    assert v["poisson_nd"][2] == "(1.00e-09)" and v["poisson_nd"][8:] == ["–", "–", "–"]
    runs = {r[0].strip("`"): r for r in _table(text, "Runs")}
    assert "user file FAILED: boom" in runs["heat2d_ms"][-1]
    assert runs["burgers1d_c"][14] == "(the file's)"
    summary = text.split("## Summary", 1)[1]
    beat = next(x for x in summary.splitlines() if x.startswith("- Beat"))
    assert "user files: **2** of 22 (3 with a budget run) (KS, PInv [both bests])" in beat
    assert ("expert files (own or default recipe): **4** of 22 (5 with a budget run) "
            "(Burgers 1d-C, KS, PInv [vs vPINN 2.45e-02 only], HInv [vs LRA 5.09e-02 only])"
            in beat)
    assert ("either (the best of all rows): **4** of 22 (5 with a budget run) (Burgers 1d-C, "
            "KS, PInv [both bests], HInv [vs LRA 5.09e-02 only])" in beat)
    above = next(x for x in summary.splitlines() if x.startswith("- Above"))
    assert "expert files (own or default recipe): **1** of 22" in above and "Heat 2d-MS" in above
    hard = next(x for x in summary.splitlines() if x.startswith("- Of the four"))
    assert "user files: **1** of 4 (1 with a budget run) (KS [1.50e-01])" in hard
    assert "either (the best of all rows): **1** of 4 (1 with a budget run)" in hard
    # the user files that miss a mark, each with the marks it misses and how it ended
    missed = text.split("## Where the user files miss, and why", 1)[1].split("## Summary")[0]
    lines = {x[2:].split(":")[0]: x for x in missed.splitlines() if x.startswith("- ")}
    assert sorted(lines) == ["HInv", "Heat 2d-MS", "KS"]        # PInv (1e-2) misses none
    assert "**its plain PINN 1.57e+00**" not in lines["HInv"]     # 0.9 is below it
    assert "misses PINNacle's best 1.19e-02" in lines["HInv"] and "5e-2" in lines["HInv"]
    assert "0.2 (one of the four hard problems)" not in lines["KS"]   # 0.15 reaches 0.2
    assert "5e-2" in lines["KS"] and pinnacle.WHY_MISSED["ks"] in lines["KS"]
    assert "the run failed (boom)" in lines["Heat 2d-MS"]


def test_recorded_results_still_render():
    """The recorded rows (expert files, before the user files had rows) make the table."""
    data = json.loads((BENCH / "results" / "pinnacle.json").read_text())
    text = pinnacle.report(data["results"], "cmd", data["machine"], data.get("defaults"),
                           data.get("user"))
    assert len(_table(text, "Runs")) == len(_table(text, "Against PINNacle")) == 22
    assert "## Summary" in text


def _machine() -> dict:
    return {"cores": 2, "cpu": "cpu", "date": "today", "versions": {"jax": "0"},
            "load_average": [1.0, 1.0, 1.0]}


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


@pytest.mark.slow
def test_the_user_step_flow_trains_through_both_precisions(tmp_path):
    """NS 2d-CG as a user writes it (a step cut out of a rectangle, three Dirichlet
    conditions built in by the plan) through a float32 Adam stage and a float64 quasi-Newton
    stage: the wall distances' float64 constants once reached the float32 program and the
    run failed to lower at its first step (the benchmark's row, 2026-12-04)."""
    import warnings

    built = pinn.config.load(str(PINNACLE_DIR / "user" / "ns2d_cg.yaml"),
                             ["training.stages.0.steps=20", "training.stages.1.steps=5"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sol = built.setup(progress=False).train()
    assert sol.metrics["steps_done"] == 25
    assert all(v < 10 for v in sol.metrics["rel_l2"].values())   # scored: finite, not NaN
    assert sorted(built.plan().choices[0].value) == ["inflow", "no_slip", "outflow"]
