"""`pinn compare`'s FEM side: the refinement study converges at the elements' theoretical
rates, and the rows it reports are the right levels of it (Poisson, manufactured solution).
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import pinn
from pinn.cli import main
from pinn.fem import SolveCache
from pinn.fem.study import Level, Study, refine, worst

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POISSON = os.path.join(ROOT, "problems", "poisson2d.yaml")


@pytest.fixture(scope="module")
def poisson():
    return pinn.config.load(POISSON).problem


@pytest.fixture(scope="module")
def study(poisson):
    return refine(poisson, elements=("P1", "P2", "P3"), cells=(4, 8, 16, 32), resolution=41)


def test_fem_errors_converge_at_the_theoretical_rates(study):
    """P_k on a smooth solution: O(h^(k+1)) in L2; the last observed orders within 0.1."""
    for k, element in ((1, "P1"), (2, "P2"), (3, "P3")):
        rates = study.rates(element)
        assert len(rates) == 3
        assert abs(rates[-1] - (k + 1)) < 0.1, (element, rates)
        assert abs(rates[-2] - (k + 1)) < 0.15, (element, rates)


def test_equal_accuracy_is_the_cheapest_level_that_meets_the_error(study):
    errors = sorted(lv.error for lv in study.levels)
    for target in (errors[0], errors[len(errors) // 2], errors[-1], 2 * errors[-1]):
        got = study.equal_accuracy(target)
        meets = [lv for lv in study.levels if lv.error <= target]
        assert got in meets and all(got.seconds <= lv.seconds for lv in meets)
    assert study.equal_accuracy(0.5 * errors[0]) is None


def test_equal_time_is_the_most_accurate_level_within_the_time(study):
    times = sorted(lv.seconds for lv in study.levels)
    for budget in (times[0], times[len(times) // 2], times[-1]):
        got = study.equal_time(budget)
        within = [lv for lv in study.levels if lv.seconds <= budget]
        assert got in within and all(got.error <= lv.error for lv in within)
    assert study.equal_time(0.5 * times[0]) is None


def test_a_study_stops_once_finer_meshes_cannot_change_either_row(poisson):
    s = refine(poisson, elements=("P2",), cells=(4, 8, 16, 32, 64), target_error=1e-2,
               budget_seconds=0.0, resolution=21)
    assert [lv.cells for lv in s.levels] == [4]  # 8.7e-3 <= 1e-2 at once
    assert "neither" in s.stopped["P2"]
    back = Study.from_data(json.loads(json.dumps(s.to_data())))
    assert back.levels == s.levels and back.stopped == s.stopped


def test_worst_field_and_labels():
    assert worst({"u": 1e-3, "v": 2e-3}) == 2e-3 and math.isnan(worst({}))
    lv = Level("P2", 8, 289, 0.1, {"u": 1e-3}, {"u": 2e-3}, 1 / 8, 0.01, 100)
    assert lv.label == "P2, 8 cells, dt 0.01" and lv.error == 1e-3


def test_a_factorisation_is_reused_across_queries_with_the_same_operator(poisson):
    """Two sources on one mesh: one LU; the second solve equals a fresh solve."""
    from pinn import fem

    mesh = fem.build_mesh(poisson.space, cells=16)
    cache = SolveCache()
    a = fem.solve(poisson, mesh=mesh, element="P2", cache=cache)
    scaled = pinn.config.load(POISSON, ["equations.poisson=-laplacian(u) = 4*pi^2*sin(pi*x)"
                                        "*sin(pi*y)"]).problem
    b = fem.solve(scaled, mesh=mesh, element="P2", cache=cache)
    assert (cache.misses, cache.hits) == (1, 1)
    fresh = fem.solve(scaled, mesh=mesh, element="P2")
    np.testing.assert_allclose(b.snapshots, fresh.snapshots, rtol=0, atol=1e-13)
    np.testing.assert_allclose(b.snapshots, 2 * a.snapshots, rtol=0, atol=1e-13)


def test_compare_reports_the_matched_levels_of_its_study(capsys, tmp_path):
    """A short PINN run, then `pinn compare --pinn`: the equal-accuracy row is the cheapest
    level of study.json that meets the PINN's error, the equal-time row the most accurate
    level within its time."""
    run_dir = tmp_path / "run"
    sets = ["training.stages.0.steps=150", "training.stages.1.steps=0",
            "training.points.interior=256", "evaluation.resolution=21"]
    assert main(["solve", POISSON, "--out", str(run_dir), "--quiet",
                 *[a for s in sets for a in ("--set", s)]]) == 0
    out = tmp_path / "cmp"
    rc = main(["compare", POISSON, "--pinn", str(run_dir), "--out", str(out), "--elements",
               "P1,P2", "--max-level-seconds", "0.3", "--set", "evaluation.resolution=21"])
    printed = capsys.readouterr().out
    assert rc == 0
    m = json.loads((run_dir / "metrics.json").read_text())
    err, secs = worst(m["rel_l2"]), m["wall_seconds"]
    study = Study.from_data(json.loads((out / "study.json").read_text()))
    got = json.loads((out / "compare.json").read_text())
    meets = [lv for lv in study.levels if lv.error <= err]
    assert meets, "the study should reach a 150-step PINN's error"
    cheapest = min(meets, key=lambda lv: lv.seconds)
    assert (got["equal_accuracy"]["element"], got["equal_accuracy"]["cells"]) == \
        (cheapest.element, cheapest.cells)
    within = [lv for lv in study.levels if lv.seconds <= secs]
    best = min(within, key=lambda lv: lv.error)
    assert (got["equal_time"]["element"], got["equal_time"]["cells"]) == (best.element,
                                                                          best.cells)
    assert "Equal accuracy" in printed and "Equal time" in printed
    assert (out / "pareto.png").stat().st_size > 10_000


def test_a_changed_operator_is_factorised_anew_and_the_discretisation_rebound():
    """Heat at two diffusivities on one mesh: the discretisation is rebound (one built),
    each operator factorised once, and each solve equals a fresh one."""
    from pinn import fem

    path = os.path.join(ROOT, "problems", "heat2d_parametric.yaml")
    probs = [pinn.config.load(path, [f"params.alpha={a}"]).problem for a in (0.02, 0.08)]
    mesh = fem.build_mesh(probs[0].space, cells=6)
    cache = SolveCache()
    got = [fem.solve(p, mesh=mesh, element="P2", steps=20, cache=cache) for p in probs]
    assert len(cache._discs) == 1 and cache.misses == 2
    for p, g in zip(probs, got, strict=True):
        fresh = fem.solve(p, mesh=mesh, element="P2", steps=20)
        np.testing.assert_allclose(g.snapshots, fresh.snapshots, rtol=0, atol=1e-13)
    assert not np.allclose(got[0].snapshots[-1], got[1].snapshots[-1])


def test_evolution_levels_also_try_coarser_time_steps():
    """Each heat mesh is solved on the time-step rule and with 4 and 16 times its step;
    the rates are taken on the rule's levels, and the coarser steps are cheaper."""
    heat = pinn.config.load(os.path.join(ROOT, "problems", "heat2d.yaml")).problem
    s = refine(heat, elements=("P2",), cells=(8, 32), resolution=11)
    by_mesh = {}
    for lv in s.levels:
        by_mesh.setdefault(lv.cells, {})[lv.coarser] = lv
    for cells, lvs in by_mesh.items():
        want = {1} | {c for c in (4, 16) if lvs[1].steps // c >= 4}  # at least 4 steps
        assert set(lvs) == want and 4 in want, (cells, lvs[1].steps)
        for c in want - {1}:
            assert lvs[c].steps == lvs[1].steps // c and lvs[c].dt > lvs[1].dt
    assert 16 in by_mesh[32]
    assert [lv.coarser for lv in s.by_element()["P2"]] == [1, 1]
