"""Run reports: the evaluation grid, errors, plots for every kind of domain, atomic files."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from pinn.config import load
from pinn.evaluate import evaluation_grid, field_errors, score, truth
from pinn.io import write_json, write_text
from pinn.report import write_run

DOMAINS = {
    "1d": ("{interval: [0, 1]}", "x", "sin(pi*x)"),
    "1d_time": ("{interval: [-1, 1], time: [0, 1]}", "x t", "exp(-t)*sin(pi*x)"),
    "2d": ("{rectangle: {min: [0, 0], max: [2, 1]}}", "x y", "sin(pi*x)*y"),
    "l_shape": ("{l_shape: {}}", "x y", "x*y"),
    "2d_time": ("{disk: {center: [0, 0], radius: 1}, time: [0, 2]}", "x y t", "t*(x^2 + y^2)"),
    "3d": ("{box: {min: [0, 0, 0], max: [1, 1, 1]}}", "x y z", "x*y*z"),
    "3d_time": ("{box: {min: [0, 0, 0], max: [1, 1, 1]}, time: [0, 1]}", "x y z t",
                "t*x*y*z"),
}


def problem(kind: str):
    dom, coords, exact = DOMAINS[kind]
    text = (f"domain: {dom}\nequations: {{eq: \"u - ({exact})\"}}\n"
            f"exact: {{u: \"{exact}\"}}\n")
    return load(f"{kind}.yaml", text=text).problem


def test_grid_masks_the_l_shape():
    g = evaluation_grid(problem("l_shape"), 21)
    assert g.shape == (21, 21)
    x, y = g.inside.T
    assert not np.any((x > 1e-9) & (y < -1e-9))  # the cut quarter is outside
    assert g.mask.sum() == 21 * 21 - 10 * 10     # boundary nodes of the cut count as inside
    full = g.full(np.ones(len(g.inside)))
    assert np.isnan(full).sum() == 100


def test_grid_resolution_per_axis_and_defaults():
    p = problem("2d_time")
    assert evaluation_grid(p, [11, 13, 5]).shape == (11, 13, 5)
    assert evaluation_grid(p, 31).shape == (31, 31, 11)
    assert evaluation_grid(problem("1d_time"), 31).shape == (31, 31)
    with pytest.raises(ValueError, match="one number per coordinate"):
        evaluation_grid(p, [11, 13])


def test_errors_are_relative_l2_and_max():
    t = {"u": np.array([3.0, 4.0]), "v": np.zeros(2)}
    p = {"u": np.array([3.0, 4.5]), "v": np.array([0.1, -0.1])}
    e = field_errors(p, t)
    assert e["rel_l2"]["u"] == pytest.approx(0.5 / 5.0)
    assert e["max_abs_error"]["u"] == pytest.approx(0.5)
    assert e["rel_l2"]["v"] == pytest.approx(0.1)  # zero truth: the RMS error
    # a pressure-like field: a constant offset is no error
    p = {"p": np.array([1.0, 2.0, 3.0]) + 10.0}
    t = {"p": np.array([1.0, 2.0, 3.0])}
    assert field_errors(p, t, shift=("p",))["rel_l2"]["p"] == pytest.approx(0.0, abs=1e-15)
    assert field_errors(p, t)["rel_l2"]["p"] > 1


@pytest.mark.parametrize("kind", sorted(DOMAINS))
def test_report_for_every_kind_of_domain(tmp_path, kind):
    p = problem(kind)

    def evaluate(points):
        return {"u": truth(p, points).values["u"] + 1e-3 * np.sin(7 * points[:, 0])}

    history = [{"step": 0, "event": "stage_start", "optimizer": "Adam", "loss": 1.0,
                "loss.eq": 1.0, "param.nu": 0.1},
               {"step": 50, "loss": 0.1, "loss.eq": 0.1, "param.nu": 0.05},
               {"step": 50, "event": "stage_start", "optimizer": "LBFGS", "loss": 0.1,
                "loss.eq": 0.1, "param.nu": 0.05},
               {"step": 60, "loss": float("nan"), "loss.eq": 1e-3, "param.nu": 0.04}]
    s = score(p, evaluate, resolution=9)
    m = write_run(tmp_path, p, s, {"steps": 60, "seed": 0}, history=history, snapshots=3,
                  true_params={"nu": 0.03})
    assert m["rel_l2"] == s.rel_l2  # the score's numbers, not recomputed
    assert 0 < m["rel_l2"]["u"] < 1e-2 and 0 < m["max_abs_error"]["u"] <= 1e-3 + 1e-12
    for f in ("field_u.png", "loss.png", "params.png", "metrics.json", "report.md",
              "solution_grid.npz"):
        assert (tmp_path / f).stat().st_size > 0, f
        if f.endswith(".png"):
            assert (tmp_path / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["rel_l2"] == m["rel_l2"] and saved["compared_with"] == "exact"
    report = (tmp_path / "report.md").read_text()
    assert "| u |" in report and "(field_u.png)" in report and "(params.png)" in report
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_atomic_writes_leave_no_partial_file(tmp_path):
    target = tmp_path / "m.json"
    write_json(target, {"a": 1})

    class Boom:
        def __repr__(self):
            raise RuntimeError("boom")

    with pytest.raises(TypeError):
        write_json(target, {"a": Boom()})
    assert json.loads(target.read_text()) == {"a": 1}
    assert os.listdir(tmp_path) == ["m.json"]
    write_text(target, "x")
    assert target.read_text() == "x"


def test_non_finite_values_become_null(tmp_path):
    write_json(tmp_path / "m.json", {"a": float("nan"), "b": np.float32(2.5),
                                     "c": np.arange(2)})
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": None, "b": 2.5, "c": [0, 1]}


MMS = """\
domain: {rectangle: {min: [0, 0], max: [2, 1]}, time: [0, 1]}
params: {c: 2}
equations: {wave: "u_tt - c^2*laplacian(u)"}
conditions:
  right: {neumann: {u: NEU}, on: right}
  top: {robin: {u: {a: 1, b: 0.5, value: ROB}}, on: top}
  seam: {periodic: {pair: [left, right], order: 1}}
  start: {initial: {u: "sin(2*pi*y)*cos(pi*x)"}, rate: {u: 0}}
  mean: {constraint: "u_x = -pi*sin(pi*x)*sin(2*pi*y)*cos(sqrt(5)*pi*c*t)", on: interior}
exact: {u: "cos(sqrt(5)*pi*c*t)*cos(pi*x)*sin(2*pi*y)"}
"""


def test_manufactured_check_covers_every_condition_type():
    from pinn.report.manufactured import check

    # on x = 2: du/dn = u_x = -pi sin(2 pi) ... = 0; on y = 1: u + 0.5 u_y = pi*cos(..)*cos(pi x)
    text = MMS.replace("NEU", "0").replace("ROB", '"pi*cos(sqrt(5)*pi*c*t)*cos(pi*x)"')
    results = {c.name: c for c in check(load("mms.yaml", text=text).problem, n=200)}
    assert set(results) == {"wave", "right", "top", "seam", "start", "mean"}
    for c in results.values():
        assert c.ok, c
        assert c.max_residual < 1e-10 * max(c.scale, 1.0)
    bad = text.replace("u_tt - c^2", "u_tt + c^2").replace("b: 0.5", "b: -0.5")
    results = {c.name: c for c in check(load("mms.yaml", text=bad).problem, n=200)}
    assert not results["wave"].ok and results["wave"].max_residual > 10
    assert not results["top"].ok and results["right"].ok
