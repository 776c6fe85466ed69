"""Smoke tests of the benchmark scripts (so they cannot rot) and of their bookkeeping.

The scripts run in their ``--smoke`` mode (tiny networks, a handful of steps) as
subprocesses, the way a person runs them; the table logic is checked on made-up data.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import accuracy  # noqa: E402
import design  # noqa: E402
import speed  # noqa: E402
import time_to_accuracy as tta  # noqa: E402

HAVE_DEEPXDE = (importlib.util.find_spec("deepxde") is not None
                and importlib.util.find_spec("torch") is not None)


def _untrained_errors(built) -> dict[str, float]:
    """The errors of the network a run of ``built`` starts from (same seed), on the default
    evaluation grid (the one the scripts report on), before any training."""
    import pinn
    from pinn.solution import Solution

    model, training = built.model(), built.training()
    run = pinn.setup(built.problem, model, training, precision=built.precision, progress=False)
    return Solution(built.problem, model, run.params, seed=training.seed,
                    precision=built.precision).score().rel_l2


def _run(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"{script} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r


# ---------------------------------------------------------------------------
# pure bookkeeping (no training)


def test_first_below_picks_the_first_crossing():
    curve = [{"time": 1.0, "step": 10, "rel_l2": 0.5}, {"time": 2.0, "step": 20, "rel_l2": 9e-3},
             {"time": 3.0, "step": 30, "rel_l2": 2e-2}, {"time": 4.0, "step": 40, "rel_l2": 5e-4}]
    assert tta.first_below(curve, 1e-2)["step"] == 20
    assert tta.first_below(curve, 1e-3)["time"] == 4.0
    assert tta.first_below(curve, 1e-4) is None
    res = tta.analyse({"curve": curve})
    assert res["final_rel_l2"] == 5e-4 and res["best_rel_l2"] == 5e-4


def test_published_anchors_are_printed_as_cited():
    assert accuracy.sci(1.45e-2) == "1.45e-2"
    assert accuracy.sci(6.7e-4) == "6.7e-4"
    assert accuracy.sci(5.88e-1) == "5.88e-1"
    by = {(a.problem, a.rel_l2) for a in accuracy.ANCHORS}
    for pair in [("burgers1d", 1.45e-2), ("wave1d", 5.88e-1), ("poisson2d-c", 6.94e-1),
                 ("burgers1d", 6.7e-4), ("allen_cahn1d", 5.4e-5), ("allen_cahn1d", 2.2e-5),
                 ("kdv", 4.3e-4), ("advection", 6.9e-4)]:
        assert pair in by


def test_speed_report_ratios_are_within_one_run():
    machine = {"cores": 2, "cpu": "test CPU", "cpu_mhz": 2000.0, "fp32_peak_gflops": 128.0,
               "load_average": [0.1, 0.1, 0.1], "versions": {}, "date": "today"}
    sides = {"pinn": {"ms_min": 2.0, "ms_median": 2.5, "cpu_share": 1.9, "flops": 2e8},
             "deepxde-pytorch": {"ms_min": 6.0, "ms_median": 7.0, "cpu_share": 1.8,
                                 "flops": float("nan")},
             "jax-jvp": {"error": "boom"}}
    data = {"machine": machine, "rounds": 3, "results": [
        {"case": {"key": "a"}, "label": "burgers", "allocator": "tuned", "sides": sides}]}
    text = speed.report(data, "python benchmarks/speed.py")
    assert "| a | tuned | deepxde-pytorch | 6.00 | 7.00 | 3.00 |" in text
    # 2e8 flop in 2 ms = 100 GFLOP/s = 78.1% of 128
    assert "| a | tuned | pinn | 2.00 | 2.50 | 1.00 | 100.0 | 78.1 | 1.90 |" in text
    assert "pinn is 3.00x faster" in text and "jax-jvp" in text and "boom" in text


# ---------------------------------------------------------------------------
# the scripts, smallest mode


def test_accuracy_smoke(tmp_path):
    md, js = tmp_path / "RESULTS.md", tmp_path / "accuracy.json"
    _run("accuracy.py", "--smoke", "--out", str(md), "--json", str(js))
    data = json.loads(js.read_text())
    res = data["entries"]["poisson2d"]
    assert "pinn_error" not in res, res.get("pinn_traceback")
    assert res["pinn"]["steps"] == 20
    # 20 Adam steps of a width-8 network: the error falls from the untrained network's
    # (same overrides and seed; measured 1.022 -> 0.985 at step 10 -> 0.964 at step 20)
    import pinn.config

    path = str(accuracy.PROBLEMS_DIR / "poisson2d.yaml")
    spec, _ = pinn.config.load_spec(path)
    sets = accuracy.overrides_for(accuracy.SUITE["poisson2d"], "smoke", spec)
    assert res["overrides"] == sets
    before = _untrained_errors(pinn.config.load(path, sets))["u"]
    curve = [r["eval.rel_l2_u"] for r in res["pinn"]["history"] if "eval.rel_l2_u" in r]
    assert len(curve) == 2 and curve[1] < curve[0] < before, (before, curve)
    assert res["pinn"]["rel_l2"]["u"] < before
    # the FEM study: P1 and P2 on 4 and 8 cells; P1 on 4x4 is O(h^2), h = 1/4 (0.157), and
    # the matched rows are the cheapest level meeting the PINN's error / best within its time
    levels = res["fem"]["study"]["levels"]
    assert [(lv["element"], lv["cells"]) for lv in levels][0] == ("P1", 4)
    assert 0.02 < levels[0]["rel_l2"]["u"] < 0.3
    err, secs = res["pinn"]["rel_l2"]["u"], res["pinn"]["wall_seconds"]
    meets = [lv for lv in levels if lv["rel_l2"]["u"] <= err]
    assert res["fem"]["equal_accuracy"] == min(meets, key=lambda lv: lv["seconds"])
    within = [lv for lv in levels if lv["seconds"] <= secs]
    assert res["fem"]["equal_time"] == min(within, key=lambda lv: lv["rel_l2"]["u"])
    text = md.read_text()
    assert "generated by benchmarks/accuracy.py" in text and "cores" in text
    assert "Hao et al." in text and "Raissi" in text
    # the markdown can be regenerated from the JSON alone
    md2 = tmp_path / "again.md"
    _run("accuracy.py", "--from-json", str(js), "--out", str(md2))
    assert md2.read_text().split("Machine:")[1] == text.split("Machine:")[1]


@pytest.mark.slow  # 26 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_speed_smoke(tmp_path):
    md, js = tmp_path / "SPEED.md", tmp_path / "speed.json"
    _run("speed.py", "--smoke", "--no-flops", "--cpus", "0", "--out", str(md), "--json",
         str(js))
    data = json.loads(js.read_text())
    sides = data["results"][0]["sides"]
    for side in ("pinn", "jax-jvp"):
        assert sides[side]["ms_min"] > 0, sides[side]
        assert sides[side]["env"]["MALLOC_ARENA_MAX"] == "1"  # the tuned allocator
        assert sides[side]["env"]["OMP_NUM_THREADS"] == "1"   # pinned to one CPU
    assert "| a | tuned | pinn |" in md.read_text()


@pytest.mark.slow  # 19 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_time_to_accuracy_smoke(tmp_path):
    _run("time_to_accuracy.py", "--smoke", "--problems", "burgers", "--sides", "pinn",
         "--out-dir", str(tmp_path))
    data = json.loads((tmp_path / "time_to_accuracy-smoke.json").read_text())
    res = data["problems"]["burgers"]["pinn"]
    curve = res["curve"]
    assert [p["step"] for p in curve] == [10, 20]
    # the clock runs forward, and the errors fall from the untrained network's (same
    # overrides and seed; measured 0.591 -> 0.576 at step 10 -> 0.568 at step 20)
    assert 0 < curve[0]["time"] < curve[1]["time"]
    before = _untrained_errors(tta.load("burgers", "smoke"))["u"]
    assert curve[1]["rel_l2"] < curve[0]["rel_l2"] < before, (before, curve)
    assert (tmp_path / "time_to_accuracy_burgers-smoke.png").stat().st_size > 1000
    md = (tmp_path / "TIME_TO_ACCURACY-smoke.md").read_text()
    assert "| < 1e-2 |" in md and "| < 1e-6 |" in md


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_DEEPXDE, reason="the optional 'peers' extra is not installed")
def test_deepxde_sides_smoke(tmp_path):
    _run("time_to_accuracy.py", "--smoke", "--problems", "burgers", "--sides",
         "deepxde-pytorch", "--out-dir", str(tmp_path))
    data = json.loads((tmp_path / "time_to_accuracy-smoke.json").read_text())
    curve = data["problems"]["burgers"]["deepxde-pytorch"]["curve"]
    assert [p["step"] for p in curve] == [10, 20]
    _run("speed.py", "--smoke", "--no-flops", "--sides", "pinn,deepxde-pytorch", "--out",
         str(tmp_path / "s.md"), "--json", str(tmp_path / "s.json"))
    sides = json.loads((tmp_path / "s.json").read_text())["results"][0]["sides"]
    assert sides["deepxde-pytorch"]["ms_min"] > 0
    assert sides["deepxde-pytorch"]["backend"] == "pytorch"


def test_time_to_accuracy_ratio_to_peer():
    # DeepXDE's best is 2e-3, first reached (within 1 %) at 40 s; pinn falls below
    # 2.02e-3 at 5 s: 8x sooner. A pinn curve that never gets there has no ratio.
    peer = {"curve": [{"time": 10.0, "step": 100, "rel_l2": 1e-2},
                      {"time": 40.0, "step": 400, "rel_l2": 2.01e-3},
                      {"time": 80.0, "step": 800, "rel_l2": 2e-3}]}
    ours = {"curve": [{"time": 1.0, "step": 100, "rel_l2": 5e-2},
                      {"time": 5.0, "step": 500, "rel_l2": 1.5e-3}]}
    r = tta.ratio_to_peer({"pinn": ours, "deepxde-pytorch-f64": peer}, "deepxde-pytorch-f64")
    assert r["peer_best"] == 2e-3 and r["peer_time"] == 40.0 and r["pinn_time"] == 5.0
    assert r["ratio"] == pytest.approx(8.0)
    slow = {"curve": [{"time": 1.0, "step": 100, "rel_l2": 5e-2}]}
    r = tta.ratio_to_peer({"pinn": slow, "deepxde-pytorch": peer})
    assert r["pinn_time"] is None and r["ratio"] is None
    assert tta.ratio_to_peer({"pinn": ours}) is None
    assert tta.ratio_to_peer({"pinn": ours, "deepxde-pytorch": {"error": "x"}}) is None


# ---------------------------------------------------------------------------
# the design study (benchmarks/design.py)


def test_design_moves_the_mesh_onto_each_channel():
    # the FEM's mesh per query: the mesh of the middle radius with its nodes moved along
    # rays; the channel's nodes land on the query's circle, the plate's edges stay, and no
    # triangle folds
    import numpy as np

    import pinn
    from pinn import fem

    base = fem.build_mesh(pinn.Rectangle((0, 0), (1, 1)) - pinn.Disk((0.5, 0.5), 0.2), cells=8)
    rho0 = np.hypot(base.p[0] - 0.5, base.p[1] - 0.5)
    on_edge = np.isclose(base.p, 0, atol=1e-12).any(0) | np.isclose(base.p, 1, atol=1e-12).any(0)
    on_circle = np.abs(rho0 - 0.2) < 1e-9
    assert on_circle.sum() >= 8 and on_edge.sum() >= 16
    for r in (0.1, 0.3):
        m = design.moved_mesh(base, 0.2, r)
        rho = np.hypot(m.p[0] - 0.5, m.p[1] - 0.5)
        np.testing.assert_allclose(rho[on_circle], r, atol=1e-9)
        np.testing.assert_allclose(m.p[:, on_edge], base.p[:, on_edge], atol=1e-12)
        assert rho.min() >= r - 1e-9
        assert np.all(np.sign(_signed_areas(m)) == np.sign(_signed_areas(base)))


def _signed_areas(mesh):
    a, b, c = (mesh.p[:, mesh.t[i]] for i in range(3))
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


@pytest.mark.slow  # ~35 s on 2 cores (a 35-step training, its compilation, 50 FEM solves)
def test_design_smoke(tmp_path):
    import math

    import numpy as np

    _run("design.py", "--smoke", "--out", str(tmp_path))
    data = json.loads((tmp_path / "design.json").read_text())
    res = data["results"]
    assert data["machine"]["cores"] >= 1 and data["command"].endswith(f"--out {tmp_path}")
    queries = res["test"]["queries"]
    assert len(queries) == 3
    for q in queries:
        for name, (lo, hi) in res["ranged"].items():
            assert lo <= q[name] <= hi
    p = res["pinn"]
    assert len(p["errors"]) == 3 and p["worst"] == max(p["errors"])
    assert p["median"] == pytest.approx(float(np.median(p["errors"])))
    assert set(p["quantity_median"]) == {"mean_T", "max_T"}
    # the refinement study: P1, P2 on 8 and 16 cells, each error against the fine FEM (P2 on
    # 32 cells) falling as the mesh is refined
    levels = res["fem"]["levels"]
    assert [(lv["element"], lv["cells"]) for lv in levels] == [
        ("P1", 8), ("P1", 16), ("P2", 8), ("P2", 16)]
    for coarse, fine in (levels[:2], levels[2:]):
        assert fine["median_error"] < 0.75 * coarse["median_error"] < 0.5
    used = res["fem"]["used"]
    meets = [lv for lv in levels if lv["median_error"] <= p["median"]]
    assert used == (min(meets, key=lambda lv: lv["median_seconds"]) if meets
                    else min(levels, key=lambda lv: lv["median_error"]))
    t_train = res["training"]["seconds"]
    for mode in ("single", "batched"):
        q = res["per_query"][mode]
        assert q["speedup"] == pytest.approx(used["median_seconds"] / q["pinn_seconds"])
        if q["break_even"] is not None:
            assert q["break_even"] == math.ceil(t_train / (used["median_seconds"]
                                                           - q["pinn_seconds"]))
    d = res["design"]
    assert d["pinn"]["params"]["s"] == d["fem"]["params"]["s"] == 1.5
    for side in ("pinn", "fem"):
        for name in ("r", "k"):
            lo, hi = res["ranged"][name]
            assert lo <= d[side]["params"][name] <= hi
    assert d["fem"]["solves"] >= 3 and d["pinn"]["total_seconds"] > t_train
    assert d["gap"] == pytest.approx((d["pinn"]["fine_value"] - d["fem"]["fine_value"])
                                     / abs(d["fem"]["fine_value"]))
    assert [t["key"] for t in res["targets"]] == ["speedup", "break_even", "gap", "sooner"]
    assert res["targets"][0]["value"] == res["per_query"]["batched"]["speedup"]
    text = (tmp_path / "DESIGN.md").read_text()
    assert "generated by benchmarks/design.py" in text and "cores" in text
    for head in ("## Issue 31's targets", "## Accuracy over the parameter box",
                 "## FEM refinement study", "## Per-query cost at equal accuracy",
                 "## Design optimisation"):
        assert head in text
    assert text.count("| >= 1000x |") == 1 and "| within 1% |" in text
    # the markdown again from the JSON alone
    again = tmp_path / "again"
    _run("design.py", "--from-json", str(tmp_path / "design.json"), "--out", str(again))
    assert (again / "DESIGN.md").read_text() == text
