"""FEM baseline, second order in time (wave-type equations ``a u_tt + ... - div(...) = f``):
Newmark's average acceleration (Crank-Nicolson on u, u_t).

Rates are fitted on log-log plots (scikit-fem's tests/test_convergence.py style) of the
largest L2(Omega) error over a few time levels (by quadrature on the mesh), in space with a
time step small enough that the O(dt^2) error is far below the spatial one, and in time on
a mesh fine enough for the converse. The discrete energy of the homogeneous problem is
conserved to rounding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pinn
import pinn.config
import pinn.fem as fem
from pinn.fem import UnsupportedProblem

ROOT = Path(__file__).resolve().parents[1]
x, y, t = pinn.coords("x y t")
u = pinn.field("u")
sin, cos, pi = pinn.sin, pinn.cos, pinn.pi


def rate(ns, errs) -> float:
    """Slope of log(err) against log(h) (or log(dt)), h = 1/n."""
    return float(-np.polyfit(np.log(ns), np.log(errs), 1)[0])


def worst_l2(sol, exact, levels: int = 10) -> float:
    """The largest L2(Omega) error over ``levels`` evenly spaced stored time levels."""
    every = max(1, (len(sol.times) - 1) // levels)
    return max(sol.l2_error(exact, t=float(tk))["u"] for tk in sol.times[every::every])


def wave1d():
    return pinn.config.load(str(ROOT / "problems" / "wave1d.yaml")).problem


def wave2d(c=None, T=0.5):
    """PINNacle Wave2d-CG's form ``laplacian(u) - u_tt / c = f`` with c = 1 + x/2 + y/4,
    zero-flux sides, moving Dirichlet ends and a non-zero initial rate."""
    ce = 1 + 0.5 * x + 0.25 * y
    c = ce if c is None else c
    ue = cos(pi * x) * cos(pi * y) * (cos(3 * t) + sin(3 * t))
    f = pinn.laplacian(ue, (x, y)) - pinn.D(ue, t, 2) / ce
    return pinn.Problem(
        pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, T),
        {"wave": pinn.laplacian(u) - pinn.D(u, t, 2) / c - f},
        {"sides": pinn.Neumann(u, 0, on=("left", "right")),
         "ends": pinn.Dirichlet(u, ue, on=("bottom", "top")),
         "start": pinn.Initial(u, cos(pi * x) * cos(pi * y),
                               rate=3 * cos(pi * x) * cos(pi * y))},
        exact={u: ue}, name="wave2d")


# ---------------------------------------------------------------------------
# convergence


def test_wave1d_p1_converges_as_h2_in_space():
    # problems/wave1d.yaml: u = sin(pi x) cos(2 pi t) + 0.5 sin(4 pi x) cos(8 pi t), c = 2
    p, ns = wave1d(), [64, 128, 256]
    errs = [worst_l2(fem.solve(p, cells=n, element="P1", steps=2000), p.exact) for n in ns]
    assert abs(rate(ns, errs) - 2.0) < 0.2, errs


def test_wave1d_converges_as_dt2_in_time():
    p, steps = wave1d(), [100, 200, 400]
    errs = [worst_l2(fem.solve(p, cells=128, element="P2", steps=k), p.exact) for k in steps]
    assert abs(rate(steps, errs) - 2.0) < 0.2, errs


@pytest.mark.parametrize("element, ns, expected", [("P1", [8, 16, 32], 2.0),
                                                    ("P2", [4, 8, 16], 3.0)])
def test_wave2d_variable_speed_converges_in_space(element, ns, expected):
    p = wave2d()
    errs = [worst_l2(fem.solve(p, cells=n, element=element, steps=100), p.exact, 4)
            for n in ns]
    assert abs(rate(ns, errs) - expected) < 0.2, errs


def test_wave2d_converges_as_dt2_in_time():
    p, steps = wave2d(), [10, 20, 40]
    errs = [worst_l2(fem.solve(p, cells=16, element="P3", steps=k), p.exact, 5)
            for k in steps]
    assert abs(rate(steps, errs) - 2.0) < 0.2, errs


def test_default_time_step_follows_the_wave_speed():
    """dt ~ h^((k+1)/2) per crossing of the domain: c = 2 crosses [0, 1] twice in t = 1,
    so P1 on 64 cells takes 128 steps (Courant number 1), and the error is that of the
    mesh (the P1 default is within 2x of a 16x smaller step)."""
    p = wave1d()
    sol = fem.solve(p, cells=64, element="P1")
    assert sol.info["steps"] == 128 and sol.info["scheme"] == "newmark"
    fine = fem.solve(p, cells=64, element="P1", steps=2048)
    assert worst_l2(sol, p.exact) < 2 * worst_l2(fine, p.exact)


def test_a_data_coefficient_in_the_inertia_term():
    """c from a bilinear table (linear interpolation reproduces it) gives the solution of
    c written out (Wave2d-CG reads its c from a file)."""
    xs = np.linspace(0, 1, 5)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    table = pinn.coefficient("c", grid=(xs, xs), values=1 + 0.5 * X + 0.25 * Y, over=(x, y))
    a = fem.solve(wave2d(table), cells=8, element="P2", steps=40)
    b = fem.solve(wave2d(), cells=8, element="P2", steps=40)
    np.testing.assert_allclose(a.snapshots, b.snapshots, rtol=0, atol=1e-10)
    assert worst_l2(a, a.problem.exact) < 5e-3


def test_nonlinear_lower_order_terms_by_newton():
    """u_tt - u_xx + u^3 = f (Klein-Gordon type): Newton at each step, the P2 error of a
    fine enough step and mesh."""
    ue = sin(pi * x) * cos(pi * t) + 0.25 * sin(2 * pi * x) * sin(2 * pi * t)
    f = pinn.D(ue, t, 2) - pinn.D(ue, x, 2) + ue**3
    p = pinn.Problem(pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
                     {"kg": pinn.D(u, t, 2) - pinn.D(u, x, 2) + u**3 - f},
                     {"ends": pinn.Dirichlet(u, 0),
                      "start": pinn.Initial(u, sin(pi * x), rate=0.5 * pi * sin(2 * pi * x))},
                     exact={u: ue})
    sol = fem.solve(p, cells=32, element="P2", steps=200)
    assert not sol.info["linear"] and sol.info["newton_iterations"] > 200
    assert worst_l2(sol, p.exact) < 1e-4


# ---------------------------------------------------------------------------
# energy


def test_the_discrete_energy_of_the_homogeneous_problem_is_conserved():
    """u_tt = c div(grad u) (written laplacian(u) - u_tt/c = 0) with zero Dirichlet and
    zero-flux walls: V.A V + U.K U is the same at every step (A: the inertia matrix of
    -1/c, K: the matrix of -laplacian's weak form, both with the walls' rows)."""
    from pinn.fem.assemble import Discretisation

    c = 1 + 0.5 * x + 0.25 * y
    p = pinn.Problem(
        pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 2),
        {"wave": pinn.laplacian(u) - pinn.D(u, t, 2) / c},
        {"sides": pinn.Neumann(u, 0, on=("left", "right")),
         "ends": pinn.Dirichlet(u, 0, on=("bottom", "top")),
         "start": pinn.Initial(u, sin(pi * y) * (1 + x), rate=sin(2 * pi * y) * x ** 2)})
    steps = 40
    sol = fem.solve(p, cells=8, element="P2", steps=steps)
    assert len(sol.times) == steps + 1
    disc = Discretisation(p, fem.translate(p, 2), sol.mesh)
    A = disc.matrix(disc.inertia_data())
    K = disc.matrix(disc.jacobian_data(np.zeros(disc.N)))
    V = disc.interpolate(disc.wf.rates)
    dt = float(sol.times[1] - sol.times[0])
    energy = []
    for k, U in enumerate(sol.snapshots):
        if k:
            V = 2 / dt * (U - sol.snapshots[k - 1]) - V
        energy.append(V @ A @ V + U @ K @ U)
    energy = np.array(energy)
    assert np.all(energy < 0) and np.ptp(energy) < 1e-11 * abs(energy[0]), energy


# ---------------------------------------------------------------------------
# what is not supported


@pytest.mark.parametrize("equation, message", [
    (u * pinn.D(u, t, 2) - pinn.D(u, x, 2), r"coefficient of u_tt depends on the solution"),
    (pinn.D(u, t, 2) ** 2 - pinn.D(u, x, 2), r"nonlinear second-time-derivative term"),
    (pinn.D(u, t, 3) - pinn.D(u, x, 2), r"u_ttt \(third order in t\)"),
])
def test_unsupported_second_order_terms_are_named(equation, message):
    p = pinn.Problem(pinn.Interval(0, 1) * pinn.TimeInterval(0, 1), {"e": equation},
                     {"ends": pinn.Dirichlet(u, 0), "start": pinn.Initial(u, 0, rate=0)})
    with pytest.raises(UnsupportedProblem, match=message) as err:
        fem.solve(p, cells=4)
    assert "\n" not in str(err.value)


def test_a_missing_initial_rate_is_named_with_the_fix():
    p = pinn.Problem(pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
                     {"e": pinn.D(u, t, 2) - pinn.D(u, x, 2)},
                     {"ends": pinn.Dirichlet(u, 0), "start": pinn.Initial(u, sin(pi * x))})
    with pytest.raises(UnsupportedProblem, match=r"u is second order in time and needs its "
                       r"initial rate.*rate: \{u: \.\.\.\}"):
        fem.solve(p, cells=4)


def test_a_rate_on_a_heat_equation_is_ignored_with_a_warning():
    p = pinn.Problem(pinn.Interval(0, 1) * pinn.TimeInterval(0, 0.1),
                     {"e": pinn.D(u, t) - pinn.D(u, x, 2)},
                     {"ends": pinn.Dirichlet(u, 0), "start": pinn.Initial(u, sin(pi * x), rate=1)})
    with pytest.warns(UserWarning, match="initial rate of u is ignored"):
        fem.solve(p, cells=4, steps=4)


# ---------------------------------------------------------------------------
# the refinement study


def test_a_refinement_study_of_a_wave_problem():
    from pinn.fem.study import refine

    study = refine(wave1d(), elements=("P1",), cells=[32, 64, 128], resolution=[101, 101])
    assert [lv.cells for lv in study.by_element()["P1"]] == [32, 64, 128]
    assert all(abs(r - 2.0) < 0.3 for r in study.rates("P1")), study.rates("P1")
