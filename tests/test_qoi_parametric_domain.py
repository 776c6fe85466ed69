"""Quantities of interest over a domain whose shape follows a ranged parameter (a plate with
a hole of radius ``r``), their gradient along the shape's parameter, and the FEM per query
of such a shape (``pinn.design.fixed_problem``, ``fem_check``).

Closed forms on the unit square minus the disk of radius ``r`` about (1/2, 1/2): its area
``1 - pi r^2`` and the integral of ``rho^2 = (x - 1/2)^2 + (y - 1/2)^2``, ``1/6 - pi r^4 / 2``.
The network is replaced by a known function (``Solution(..., apply=...)``), as in
``tests/test_qoi_optimize.py``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn import design, qoi
from pinn.train.spec import precision_scope

x, y = pinn.coords("x y")
u = pinn.field("u")
PI = math.pi
RHO2 = (x - 0.5) ** 2 + (y - 0.5) ** 2


def plate(quantities=None):
    """-k laplacian(u) = 1 on the plate with a hole of radius r in [0.1, 0.3], u = 0 on the
    hole, insulated walls; k in [1, 2] (a parameter that is not the shape's)."""
    r = pinn.param("r", range=(0.1, 0.3))
    k = pinn.param("k", range=(1.0, 2.0))
    return pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) - pinn.Disk((0.5, 0.5), r),
        equations={"heat": -k * pinn.laplacian(u) - 1},
        conditions={"hole": pinn.Dirichlet(u, 0.0, on="circle"),
                    "walls": pinn.Neumann(u, 0.0, on=("left", "right", "bottom", "top"))},
        quantities=quantities, name="plate")


def known(problem, fn):
    return pinn.Solution(problem, None, {"net": {}}, precision=64,
                         apply=lambda params, X: fn(X)[:, None])


def linear_in_x(X):
    return X[:, 0]


def area(r):
    return 1 - PI * r**2


def rho2_integral(r):
    return 1 / 6 - PI * r**4 / 2


def test_each_query_integrates_over_its_own_plate():
    p = plate({"A": qoi.Integral(1 + 0 * u), "I": qoi.Integral(RHO2), "M": qoi.Mean(RHO2),
               "mx": qoi.Mean(u)})
    sol = known(p, linear_in_x)
    rs = np.array([0.1, 0.17, 0.25, 0.3])
    got = sol.quantities(params={"r": rs, "k": 1.5})
    # 4096 points and a curved edge: ~n^-3/4
    np.testing.assert_allclose(got["A"], area(rs), atol=4e-3)
    np.testing.assert_allclose(got["I"], rho2_integral(rs), atol=4e-4)
    np.testing.assert_allclose(got["M"], rho2_integral(rs) / area(rs), atol=4e-4)
    np.testing.assert_allclose(got["mx"], 0.5, atol=1e-3)  # the mean of x, by symmetry
    # one by one equals batched; the fixed plate's rule (what fem_check integrates on) is the
    # same points
    for i, r in enumerate(rs):
        one = sol.quantities(params={"r": r, "k": 1.5})
        assert one["I"] == pytest.approx(got["I"][i], rel=1e-12)
        fixed = design.fixed_problem(p, {"r": r, "k": 1.5})
        rule = fixed.quantities["I"].quadrature(fixed)
        pts = rule.points
        assert np.sum(rule.weights * ((pts[:, 0] - 0.5) ** 2 + (pts[:, 1] - 0.5) ** 2)) == (
            pytest.approx(one["I"], rel=1e-12))


def test_more_points_integrate_closer():
    p = plate()
    sol = known(p, linear_in_x)
    errors = [abs(sol.quantities(params={"r": 0.23, "k": 1.0},
                                 which={"I": qoi.Integral(RHO2, points=n)})["I"]
                  - rho2_integral(0.23)) for n in (1 << 10, 1 << 14)]
    assert errors[1] < errors[0] / 8, errors  # 16 times the points: ~n^-3/4 at a cut edge


def test_the_gradient_carries_the_edges_motion():
    p = plate({"A": qoi.Integral(1 + 0 * u), "M": qoi.Mean(RHO2),
               "kM": qoi.Mean(pinn.param("k", range=(1.0, 2.0)) * RHO2)})
    sol = known(p, linear_in_x)
    names = [q.name for q in p.ranged]
    assert names == ["k", "r"]
    for r in (0.12, 0.2, 0.28):
        with precision_scope(64):
            theta = jnp.asarray([1.5, r])
            g_area = jax.grad(sol.quantity_function("A"))(theta)
            g_mean = jax.grad(sol.quantity_function("M"))(theta)
            g_k = jax.grad(sol.quantity_function("kM"))(theta)
        a, i = area(r), rho2_integral(r)
        d_mean = (-2 * PI * r**3 * a + i * 2 * PI * r) / a**2  # (I/A)' with I', A' closed
        # the area's derivative is all edge (-2 pi r: a step cut off would say 0)
        assert float(g_area[1]) == pytest.approx(-2 * PI * r, rel=1e-2)
        assert float(g_area[0]) == 0.0
        assert float(g_mean[1]) == pytest.approx(d_mean, rel=2e-2)
        value = sol.quantities(params={"k": 1.5, "r": r}, which=["M"])["M"]
        assert float(g_k[0]) == pytest.approx(value, rel=1e-12)  # d(k M)/dk = M


def test_the_optimiser_finds_an_optimum_set_by_the_edge():
    # J(r) = (1 + 2 pi r^2) (1 - pi r^2): the integral of 1 + 2 pi r^2 over the plate;
    # J' = 0 at r^2 = 1 / (4 pi) (a maximum, r = 0.2821), which a gradient without the
    # edge's motion (J' = 4 pi r (1 - pi r^2) > 0) would miss for the upper bound. The
    # values step as points leave the plate (4096 points: ~2e-3, more than J varies
    # within 0.015 of its maximum), so this flat optimum takes more points
    c = pinn.param("c", 2 * PI)
    r_ = pinn.param("r", range=(0.1, 0.3))
    p = plate({"J": qoi.Integral(1 + c * r_**2 + 0 * u, points=1 << 16)})
    sol = known(p, linear_in_x)
    best = pinn.optimize(sol, "J", over="r", minimize=False, fixed={"k": 1.0})
    r_best = 1 / math.sqrt(4 * PI)
    assert best.params["r"] == pytest.approx(r_best, abs=5e-3) and not best.at_bounds
    assert best.value == pytest.approx((1 + 2 * PI * r_best**2) * area(r_best), rel=2e-3)


def test_points_and_regions_of_a_shape_that_moves_are_checked():
    inside = qoi.Value(u, at=(0.1, 0.1))
    plate({"v": inside})  # inside every plate
    with pytest.raises(ValueError, match=r"quantities.v: the point x=0.5, y=0.22 lies outside "
                                         r"the domain at .*r=0\.3"):
        plate({"v": qoi.Value(u, at=(0.5, 0.22))})  # in the hole from r = 0.22 on
    with pytest.raises(ValueError, match=r"quantities.f: on 'circle': the domain's shape "
                                         r"follows the ranged parameter\(s\) r.*interior"):
        plate({"f": qoi.Integral(u, on="circle")})
    strip = plate({"s": qoi.Mean(RHO2, on=x < 0.1)})  # a predicate region: allowed
    got = known(strip, linear_in_x).quantities(params={"r": 0.2, "k": 1.0})["s"]
    # the mean of (x - 1/2)^2 + (y - 1/2)^2 over [0, 0.1] x [0, 1]
    assert got == pytest.approx((0.4**3 - 0.5**3) / (3 * -0.1) + 1 / 12, rel=5e-3)


def test_the_fem_check_of_a_quantity_that_uses_the_parameters():
    k = pinn.param("k", range=(1.0, 2.0))
    r = pinn.param("r", range=(0.1, 0.3))
    p = plate({"m": qoi.Mean(u), "cost": qoi.Mean(u + k + r**2)})
    values = {"r": 0.2, "k": 1.5}
    m = design.fem_check(p, "m", values, cells=8)
    cost = design.fem_check(p, "cost", values, cells=8)
    assert cost.value == pytest.approx(m.value + 1.5 + 0.04, rel=1e-12)
    own = design.fem_check(p, qoi.Mean(u + k), values, cells=8)  # a quantity object too
    assert own.value == pytest.approx(m.value + 1.5, rel=1e-12)


def test_a_new_plate_per_query_compiles_no_boundary_mask():
    from pinn import fem
    from pinn.geometry import base

    p = plate()
    fem.solve(design.fixed_problem(p, {"r": 0.15, "k": 1.0}), cells=8)
    before = base._jit_mask._cache_size()
    for r in (0.2, 0.25):
        s = fem.solve(design.fixed_problem(p, {"r": r, "k": 1.0}), cells=8)
        assert s.dofs > 0
    assert base._jit_mask._cache_size() == before  # each plate is a new static shape
