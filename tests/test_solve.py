"""pinn.solve end to end at small sizes: error bounds after training, Solution API."""

import numpy as np
import pytest

import pinn

x, t = pinn.coords("x t")
u = pinn.field("u")


@pytest.fixture(scope="module")
def poisson_solution():
    # -u'' = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0: u = sin(pi x)
    p = pinn.Problem(
        domain=pinn.Interval(0, 1),
        coords=(x,),
        equations={"poisson": -pinn.D(u, x, 2) - pinn.pi**2 * pinn.sin(pinn.pi * x)},
        conditions={"ends": pinn.Dirichlet(u, 0, on="boundary")},
        exact={u: pinn.sin(pinn.pi * x)},
        name="poisson1d",
    )
    training = pinn.Training(
        stages=[pinn.Stage(pinn.Adam(lr=3e-3), 1000), pinn.Stage(pinn.LBFGS(), 300)],
        points=pinn.Points(interior=128, boundary=2, resample_every=0),
        chunk=250,
    )
    return pinn.solve(p, pinn.MLP(width=20, depth=2), training, precision=64, progress=False)


def test_poisson_1d_error_bound(poisson_solution):
    s = poisson_solution
    assert s.metrics["rel_l2"]["u"] < 1e-4, s.metrics
    assert s.metrics["max_abs_error"]["u"] < 1e-4
    assert s.metrics["precision"] == 64 and s.metrics["steps"] == 1300


def test_solution_evaluates_derivatives(poisson_solution):
    s = poisson_solution
    pts = np.linspace(0.1, 0.9, 9)[:, None]
    vals = s.evaluate(pts, {"du": pinn.D(u, x), "res": "-u_xx - pi^2*sin(pi*x)"})
    np.testing.assert_allclose(vals["du"], np.pi * np.cos(np.pi * pts[:, 0]), atol=5e-3)
    assert np.max(np.abs(vals["res"])) < 0.5


def test_solution_save_load(poisson_solution, tmp_path):
    s = poisson_solution
    s.save(tmp_path)
    r = pinn.Solution.load(tmp_path)
    pts = np.linspace(0, 1, 17)[:, None]
    np.testing.assert_array_equal(s(pts), r(pts))
    assert r.metrics == s.metrics
    with pytest.raises(ValueError, match="columns x"):
        r(np.zeros((3, 2)))


def test_inverse_heat_recovers_diffusivity():
    # u = exp(-kappa pi^2 t) sin(pi x) with kappa = 0.1; learn kappa from 200 samples
    kappa = pinn.param("kappa", 0.5, learnable=True)
    rng = np.random.default_rng(0)
    pts = np.column_stack([rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)])
    vals = np.exp(-0.1 * np.pi**2 * pts[:, 1]) * np.sin(np.pi * pts[:, 0])
    p = pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - kappa * pinn.D(u, x, 2)},
        conditions={"obs": pinn.Data(pts, {u: vals})},
    )
    training = pinn.Training(
        stages=[pinn.Stage(pinn.Adam(lr=3e-3), 1500), pinn.Stage(pinn.LBFGS(), 300)],
        points=pinn.Points(interior=256, resample_every=0), chunk=500,
    )
    s = pinn.solve(p, pinn.MLP(width=20, depth=2), training, precision=64, progress=False)
    assert abs(s.learned_params()["kappa"] - 0.1) < 0.005, s.learned_params()
    assert s.history and "param.kappa" in s.history[-1]


def test_evaluation_points_are_a_fixed_subset_of_the_grid():
    from pinn.evaluate import evaluation_points

    problem = pinn.Problem(domain=pinn.Interval(-1, 1) * pinn.TimeInterval(0, 1),
                           equations={"pde": pinn.D(u, t) - pinn.D(u, x, 2)})
    grid = pinn.evaluation_grid(problem).points  # 201 x 101 nodes
    assert len(grid) == 201 * 101
    np.testing.assert_array_equal(evaluation_points(problem, None), grid)
    sub = evaluation_points(problem, 500)
    assert sub.shape == (500, 2)
    np.testing.assert_array_equal(sub, evaluation_points(problem, 500))  # same every call
    assert len(np.unique(sub, axis=0)) == 500
    rows = {tuple(r) for r in grid}
    assert all(tuple(r) in rows for r in sub)
    assert not np.array_equal(sub, evaluation_points(problem, 500, seed=1))
