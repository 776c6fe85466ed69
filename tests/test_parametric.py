"""Parametric problems: a ranged parameter is an input of the network, sampled with the
points, read by the residuals from its input column and never differentiated; the exact
solution, the scores, save/load, ``pinn predict --param`` and the problem file
``problems/heat2d_parametric.yaml`` (its full run, slow, pins the issue's number: relative
L2 <= 1e-3 at every alpha of a 9-point grid)."""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
import pinn.config
from pinn import evaluate as ev
from pinn.cli import main
from pinn.compile import compile_terms
from pinn.points import ProblemPoints
from pinn.train.loss import assemble
from pinn.train.spec import Points

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = os.path.join(ROOT, "problems", "heat2d_parametric.yaml")
LO, HI = 0.01, 0.1

x, t = pinn.coords("x t")
u = pinn.field("u")


def heat1d(hard: bool = False):
    """u_t = alpha u_xx on [0, 1] x [0, 0.5], alpha in [LO, HI], exact in alpha."""
    alpha = pinn.param("alpha", range=(LO, HI))
    return pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 0.5),
        equations={"heat": pinn.D(u, t) - alpha * pinn.laplacian(u)},
        conditions={"ends": pinn.Dirichlet(u, 0.0, on="boundary", hard=hard),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x), hard=hard)},
        exact={u: pinn.exp(-pinn.pi**2 * alpha * t) * pinn.sin(pinn.pi * x)},
        name="heat1d_parametric")


# ---------------------------------------------------------------------------
# the problem and the parameter


def test_a_ranged_parameter_is_an_input_after_the_coordinates():
    p = heat1d()
    assert [q.name for q in p.ranged] == ["alpha"] and not p.learnable
    assert [c.name for c in p.inputs] == ["x", "t", "alpha"]
    lo, hi = p.input_box
    np.testing.assert_array_equal(lo, [0.0, 0.0, LO])
    np.testing.assert_array_equal(hi, [1.0, 0.5, HI])
    assert p.time_index == 1
    cols = p.param_columns({"alpha": 0.03}, 4)
    assert cols.shape == (4, 1) and np.all(cols == 0.03)
    with pytest.raises(ValueError, match=r"outside the range it was trained on, \[0.01, 0.1\]"):
        p.param_columns({"alpha": 0.5}, 1)
    with pytest.raises(ValueError, match=r"give a value for \['alpha'\]"):
        p.param_columns({}, 1)
    with pytest.raises(ValueError, match="not ranged parameters"):
        p.param_columns({"alpha": 0.03, "beta": 1.0}, 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"range": (0.1, 0.01)}, "lo < hi"),
    ({"range": (0.0, float("inf"))}, "finite"),
    ({"range": (0.01,)}, "two numbers"),
    ({"value": 0.05, "range": (0.01, 0.1)}, "not both"),
    ({"value": 0.05, "learnable": True, "range": (0.01, 0.1)}, "not both"),
])
def test_a_bad_range_names_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pinn.param("alpha", **kwargs)


# ---------------------------------------------------------------------------
# sampling, residuals, hard conditions


def test_the_parameter_is_sampled_jointly_over_its_range():
    key = jax.random.PRNGKey(3)
    fixed = pinn.Problem(domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 0.5),
                         equations={"heat": pinn.D(u, t) - 0.05 * pinn.laplacian(u)},
                         conditions={"ends": pinn.Dirichlet(u, 0.0, on="boundary"),
                                     "start": pinn.Initial(u, pinn.sin(pinn.pi * x))})
    draws = [ProblemPoints(p, pinn.geometry.Uniform(), jnp.float32) for p in (heat1d(), fixed)]
    for region in ("interior", "boundary", "initial"):
        def sample(d, region=region):
            if region == "boundary":
                return np.asarray(d.boundary(key, 512, "boundary")[0])
            return np.asarray(getattr(d, region)(key, 4096))

        xs, x0 = (sample(d) for d in draws)
        assert xs.shape == (x0.shape[0], 3)
        # the coordinates are drawn as without the parameter; the parameter over its range
        np.testing.assert_array_equal(xs[:, :2], x0)
        a = xs[:, 2]
        assert LO <= a.min() and a.max() <= HI
        # uniform: the mean within 4 standard errors of the centre, the spread (HI-LO)/sqrt(12)
        assert abs(a.mean() - 0.5 * (LO + HI)) < 4 * (HI - LO) / np.sqrt(12 * len(a))
        assert a.std() == pytest.approx((HI - LO) / np.sqrt(12), rel=0.1)
        assert abs(np.corrcoef(a, xs[:, 0])[0, 1]) < 0.15  # independent of x
        if region == "initial":
            assert np.all(xs[:, 1] == 0.0)


def test_sobol_draws_the_parameter_from_its_own_dimension():
    d = ProblemPoints(heat1d(), pinn.geometry.Sobol(), jnp.float32)
    b = np.asarray(d.interior(jax.random.PRNGKey(0), 1024))
    a = (b[:, 2] - LO) / (HI - LO)
    # a balanced net in one dimension: every 1/1024 slab holds one point
    assert np.array_equal(np.sort(np.floor(a * 1024)), np.arange(1024))
    assert abs(np.corrcoef(a, b[:, 0])[0, 1]) < 0.1  # not the x column's sequence


def test_rad_selects_over_the_joint_box():
    """With u = alpha^2 t / LO^2 the residual u_t - alpha u_xx grows as alpha^2: RAD (c = 0,
    the residual only) keeps points with density ~ alpha^2 over the parameter's range."""
    pts = Points(interior=1000, rad=pinn.geometry.RAD(k=1.0, c=0.0, pool=20000))
    asm = assemble(heat1d(), lambda q, z: (z[:, 2:3] / LO) ** 2 * z[:, 1:2], pts)
    b = np.asarray(asm.sample_fn(jax.random.PRNGKey(5), {"net": {}, "pde": {}})["__interior__"])
    assert b.shape == (1000, 3) and LO <= b[:, 2].min() and b[:, 2].max() <= HI
    # density ~ alpha^2 on [LO, HI]: mean 3/4 (HI^4 - LO^4) / (HI^3 - LO^3) = 0.0751 (a
    # uniform sample: 0.055); measured 0.0740 (drawn without replacement from the pool)
    want = 0.75 * (HI**4 - LO**4) / (HI**3 - LO**3)
    assert b[:, 2].mean() == pytest.approx(want, abs=0.004)


def test_residual_reads_the_parameter_column_and_does_not_differentiate_it():
    """u = alpha^2 sin(x) e^(alpha t): u_t = alpha^3 sin(x) e^(alpha t), u_xx = -u; a
    Laplacian that took d2/dalpha2 as well would add (2 + 4 alpha t + alpha^2 t^2) ... ."""
    p = heat1d()

    def apply(_, z):
        xx, tt, a = z[:, 0], z[:, 1], z[:, 2]
        return (a**2 * jnp.sin(xx) * jnp.exp(a * tt))[:, None]

    alpha = p.ranged[0]
    fn = compile_terms({"heat": p.equations["heat"], "lap": pinn.laplacian(u),
                        "grad": pinn.D(u, x), "a": alpha * u},
                       coords=p.inputs, fields=p.fields, apply=apply, spatial=p.spatial)
    z = np.array([[0.3, 0.2, 0.02], [0.7, 0.4, 0.09], [0.5, 0.1, 0.05]])
    out = {k: np.asarray(v) for k, v in fn({"net": {}}, jnp.asarray(z)).items()}
    xx, tt, a = z.T
    uu = a**2 * np.sin(xx) * np.exp(a * tt)
    np.testing.assert_allclose(out["lap"], -uu, rtol=1e-5)
    np.testing.assert_allclose(out["grad"], a**2 * np.cos(xx) * np.exp(a * tt), rtol=1e-5)
    np.testing.assert_allclose(out["heat"], a * uu + a * uu, rtol=1e-5)  # a*u - a*(-u)
    np.testing.assert_allclose(out["a"], a * uu, rtol=1e-5)


def test_compiling_without_the_parameter_column_names_the_fix():
    p = heat1d()
    with pytest.raises(ValueError, match=r"coords=problem.inputs"):
        compile_terms(dict(p.equations), coords=p.coords, fields=p.fields,
                      apply=lambda q, z: z[:, :1], spatial=p.spatial)


def test_hard_conditions_pass_the_parameter_through():
    p = heat1d(hard=True)
    asm = assemble(p, lambda q, z: jnp.sin(3 * z[:, :1] + z[:, 1:2] + 40 * z[:, 2:3]))
    xs = np.linspace(0.05, 0.95, 7)
    for a in (LO, 0.04, HI):
        start = np.stack([xs, 0 * xs, a + 0 * xs], 1)
        np.testing.assert_allclose(np.asarray(asm.apply({}, jnp.asarray(start)))[:, 0],
                                   np.sin(np.pi * xs), atol=1e-6)
        ends = np.array([[0.0, 0.3, a], [1.0, 0.3, a]])
        np.testing.assert_allclose(np.asarray(asm.apply({}, jnp.asarray(ends))), 0, atol=1e-6)
    inside = np.array([[0.5, 0.3, LO], [0.5, 0.3, HI]])
    v = np.asarray(asm.apply({}, jnp.asarray(inside)))[:, 0]
    assert abs(v[0] - v[1]) > 1e-3  # the network sees alpha


def test_the_exact_solution_is_evaluated_at_each_alpha():
    p = heat1d()
    grid = ev.evaluation_grid(p, [5, 3])
    for a in (LO, 0.037, HI):
        pts = ev.with_params(p, grid.points, {"alpha": a})
        truth = ev.truth(p, pts)
        xx, tt = grid.points.T
        np.testing.assert_allclose(truth.values["u"], np.exp(-np.pi**2 * a * tt)
                                   * np.sin(np.pi * xx), rtol=1e-12, atol=1e-15)
    # scoring the exact solution itself gives zero at every alpha of the grid
    exact = pinn.exp(-pinn.pi**2 * p.ranged[0] * t) * pinn.sin(pinn.pi * x)
    from pinn.dsl.evaluate import evaluate_points_numpy

    def predict(z):
        return {"u": evaluate_points_numpy(exact, p.inputs, z, spatial=p.spatial)}

    rows = ev.score_over_params(p, predict, n=3, grid=grid)
    assert [r["alpha"] for r in rows] == pytest.approx([LO, 0.5 * (LO + HI), HI])
    assert all(r["rel_l2"]["u"] < 1e-14 for r in rows)
    # and a solution frozen at one alpha is wrong at the others, more so further away
    def frozen(z):
        return {"u": np.exp(-np.pi**2 * LO * z[:, 1]) * np.sin(np.pi * z[:, 0])}

    errs = [r["rel_l2"]["u"] for r in ev.score_over_params(p, frozen, n=3, grid=grid)]
    assert errs[0] < 1e-14 < errs[1] < errs[2]


# ---------------------------------------------------------------------------
# the problem file, at a tiny size: solve, metrics, report, load, predict, export

TINY = ["training.stages=[{adam: {lr: 1.0e-2}, steps: 300}]", "training.chunk=300",
        "training.points.interior=256", "training.points.resample_every=0",
        "model.mlp.width=16", "model.mlp.depth=2", "evaluation.resolution=[11, 11, 5]"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("parametric") / "run"
    args = ["solve", FILE, "--out", str(out), "-q"]
    for s in TINY:
        args += ["--set", s]
    assert main(args) == 0
    return out


def test_yaml_range_builds_a_parametric_problem():
    built = pinn.config.load(FILE, [])
    (alpha,) = built.problem.ranged
    assert alpha.range == (0.01, 0.1) and HI / LO == pytest.approx(10)
    assert built.resolved()["params"] == {"alpha": {"range": [0.01, 0.1]}}


@pytest.mark.parametrize("value, message", [
    ("{range: [0.1, 0.01]}", "lo < hi"),
    ("{range: [0.01]}", "at least 2"),
    ("{value: 0.05, range: [0.01, 0.1]}", "not both"),
    ('{range: ["0.1/pi", "0.01/pi"]}', "lo < hi"),
    ('{range: ["0.01/pi", "nu"]}', "params.alpha.range.1"),
])
def test_yaml_bad_range_is_one_clear_line(value, message):
    with pytest.raises(pinn.config.ConfigError, match=message) as exc:
        pinn.config.load(FILE, [f"params.alpha={value}"])
    assert "params.alpha" in str(exc.value)


def test_yaml_range_may_be_expressions_of_constants():
    built = pinn.config.load(FILE, ['params.alpha={range: ["0.01/pi", "0.1/pi"]}'])
    (alpha,) = built.problem.ranged
    assert alpha.range == pytest.approx((0.01 / np.pi, 0.1 / np.pi), rel=1e-15)


def test_yaml_data_in_a_parametric_problem_is_refused():
    text = open(FILE).read().replace(
        "  start: {initial:", "  obs: {data: {generate: {from: exact, n: 50}}}\n  start: {initial:")
    with pytest.raises(pinn.config.ConfigError, match="conditions.obs: data conditions are not "
                       "supported in a parametric problem yet"):
        pinn.config.load("heat2d_parametric.yaml", text=text)


def test_tiny_run_learns_at_every_alpha_and_reports_the_grid(tiny_run):
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    rows = metrics["param_grid"]
    assert [round(r["alpha"], 6) for r in rows] == [round(a, 6) for a in
                                                    np.linspace(LO, HI, 9)]
    built = pinn.config.load(FILE, TINY)
    untrained = pinn.Solution(built.problem, built.model(), pinn.setup(
        built.problem, built.model(), built.training(), progress=False).params,
        resolution=[11, 11, 5]).errors_over_params(n=9)
    for r, r0 in zip(rows, untrained, strict=True):
        # measured (seed 0): 0.21-0.33 untrained -> 1.5e-2 - 3.3e-2 after 300 steps
        assert r["rel_l2"]["u"] < 0.06 and r["rel_l2"]["u"] < 0.3 * r0["rel_l2"]["u"], (r, r0)
    assert metrics["param_values"] == {"alpha": pytest.approx(0.055)}
    report = (tiny_run / "report.md").read_text()
    assert "Errors over the parameter range" in report
    assert report.count("\n| 0.") >= 9 and "| alpha |" in report


def test_save_load_keeps_the_range_and_the_values(tiny_run):
    sol = pinn.Solution.load(tiny_run)
    (alpha,) = sol.problem.ranged
    assert alpha.range == (0.01, 0.1) and alpha.value is None
    doc = json.loads((tiny_run / "solution.json").read_text())
    assert {"name": "alpha", "range": [0.01, 0.1]} in doc["problem"]["params"]
    pts = np.array([[0.3, 0.6, 0.5], [0.5, 0.5, 1.0]])
    a = sol.evaluate(pts, params={"alpha": 0.03})["u"]
    b = sol.evaluate(np.c_[pts, [0.03, 0.03]])["u"]  # the column given with the points
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, sol.evaluate(pts, params={"alpha": 0.09})["u"], rtol=1e-3)
    err = sol.errors(pts, params={"alpha": 0.03})["rel_l2"]["u"]
    assert err < 0.1
    with pytest.raises(ValueError, match=r"pass params=\{'alpha': \.\.\.\}"):
        sol.evaluate(pts)
    with pytest.raises(ValueError, match="outside the range"):
        sol.evaluate(pts, params={"alpha": 0.2})


def test_predict_param_matches_evaluate(tiny_run, tmp_path, capsys):
    sol = pinn.Solution.load(tiny_run)
    csv = tmp_path / "p.csv"
    csv.write_text("x,y,t\n0.3,0.6,0.5\n0.5,0.5,1.0\n")
    assert main(["predict", str(tiny_run), "--points", str(csv), "--param", "alpha=0.03",
                 "--outputs", "u,u_t - alpha*laplacian(u)"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "x,y,t,u,u_t - alpha*laplacian(u)"
    got = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    want = sol.evaluate(got[:, :3], {"u": "u", "r": "u_t - alpha*laplacian(u)"},
                        params={"alpha": 0.03})
    np.testing.assert_allclose(got[:, 3], want["u"], rtol=1e-7)
    np.testing.assert_allclose(got[:, 4], want["r"], rtol=1e-6, atol=1e-7)
    for bad, message in [("alpha=0.5", "outside the range"), ("alpha", "NAME=VALUE"),
                         ("beta=1", "not ranged parameters")]:
        assert main(["predict", str(tiny_run), "--points", str(csv), "--param", bad]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------
# the number: the file's defaults, every alpha of a 9-point grid


@pytest.mark.slow
def test_heat2d_parametric_reaches_1e_3_at_every_alpha():
    built = pinn.config.load(FILE, [])
    sol = pinn.setup(built.problem, built.model(), built.training(), precision=built.precision,
                     progress=False, resolution=built.spec.evaluation.resolution).train()
    errs = [r["rel_l2"]["u"] for r in sol.metrics["param_grid"]]
    assert len(errs) == 9
    assert max(errs) <= 1e-3, errs


def test_the_initial_slice_and_the_boundary_are_drawn_in_space_time():
    """ProblemPoints: the initial slice at t0 inside the space, boundary points at times
    over the interval with the space's outward normals."""
    x, t = pinn.coords("x t")
    u = pinn.field("u")
    box = pinn.Rectangle((0, 0), (2, 1)) * pinn.TimeInterval(0.5, 2.0)
    problem = pinn.Problem(domain=box, coords=(x, pinn.coords("y"), t),
                           equations={"e": pinn.D(u, t)})
    draw = ProblemPoints(problem, pinn.geometry.Sobol(), jnp.float64)
    with jax.enable_x64(True):
        x0 = np.asarray(draw.initial(jax.random.key(0), 256))
        pts, normals = (np.asarray(a) for a in draw.boundary(jax.random.key(1), 500, "left"))
    assert x0.shape == (256, 3) and np.all(x0[:, 2] == 0.5)
    assert np.all((x0[:, :2] > 0) & (x0[:, :2] < [2, 1]))
    assert np.all(pts[:, 0] == 0) and np.all((pts[:, 2] >= 0.5) & (pts[:, 2] <= 2.0))
    np.testing.assert_array_equal(normals, np.tile([-1.0, 0.0], (500, 1)))
