"""FEM baselines for flows: viscous Burgers (Newton in time) and the lid-driven cavity
(steady Navier-Stokes, Taylor-Hood P2-P1, Newton)."""

from __future__ import annotations

import numpy as np
import pytest

import pinn
import pinn.fem as fem
from pinn.reference.burgers import NU, burgers

x, y, t = pinn.coords("x y t")


def burgers_problem():
    u = pinn.field("u")
    nu = pinn.param("nu", NU)
    return pinn.Problem(pinn.Interval(-1, 1) * pinn.TimeInterval(0, 1),
                        {"burgers": pinn.D(u, t) + u * pinn.D(u, x) - nu * pinn.D(u, x, 2)},
                        {"ends": pinn.Dirichlet(u, 0),
                         "start": pinn.Initial(u, -pinn.sin(pinn.pi * x))}, name="burgers")


def burgers_error(cells: int, steps: int) -> float:
    sol = fem.solve(burgers_problem(), cells=cells, element="P2", steps=steps)
    xs = np.linspace(-1, 1, 2001)
    got = sol.evaluate(np.column_stack([xs, np.ones_like(xs)]))["u"]
    want = burgers(xs, 1.0)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def test_burgers_coarse_against_cole_hopf():
    assert burgers_error(cells=256, steps=100) < 1e-3      # measured 6.2e-4


def test_burgers_fine_against_cole_hopf():
    assert burgers_error(cells=768, steps=200) < 1e-4      # measured 3.2e-5


# Ghia, Ghia & Shin (1982), J. Comput. Phys. 48, 387-411, Table I: u on the vertical
# centreline x = 0.5 of the lid-driven cavity, Re = 100.
GHIA_Y = np.array([1.0000, 0.9766, 0.9688, 0.9609, 0.9531, 0.8516, 0.7344, 0.6172, 0.5000,
                   0.4531, 0.2813, 0.1719, 0.1016, 0.0703, 0.0625, 0.0547, 0.0000])
GHIA_U = np.array([1.00000, 0.84123, 0.78871, 0.73722, 0.68717, 0.23151, 0.00332, -0.13641,
                   -0.20581, -0.21090, -0.15662, -0.10150, -0.06434, -0.04775, -0.04192,
                   -0.03717, 0.00000])


def test_lid_driven_cavity_re100_matches_ghia():
    u, v, p = pinn.fields("u v p")
    re = pinn.param("Re", 100.0)
    momentum_x = u * pinn.D(u, x) + v * pinn.D(u, y) + pinn.D(p, x) - pinn.laplacian(u) / re
    momentum_y = u * pinn.D(v, x) + v * pinn.D(v, y) + pinn.D(p, y) - pinn.laplacian(v) / re
    cavity = pinn.Problem(
        pinn.Rectangle((0, 0), (1, 1)),
        {"momentum_x": momentum_x, "momentum_y": momentum_y,
         "mass": pinn.D(u, x) + pinn.D(v, y)},
        # the walls are listed last, so the two top corners belong to them (u = 0 there)
        {"lid": pinn.Dirichlet({u: 1, v: 0}, on="top"),
         "walls": pinn.Dirichlet({u: 0, v: 0}, on=("left", "right", "bottom"))},
        name="cavity")
    with pytest.warns(UserWarning, match="Taylor-Hood"):
        sol = fem.solve(cavity, cells=16, element="P1")
    assert sol.degrees == {"u": 2, "v": 2, "p": 1}
    assert sol.up_to_constant == ("p",) and not sol.info["linear"]
    got = sol.evaluate(np.column_stack([np.full_like(GHIA_Y, 0.5), GHIA_Y]))
    assert np.max(np.abs(got["u"] - GHIA_U)) < 1e-2        # measured 5.1e-3
    # the divergence-free constraint and the zero-mean pressure
    grid = np.stack(np.meshgrid(np.linspace(0.05, 0.95, 19), np.linspace(0.05, 0.95, 19)),
                    -1).reshape(-1, 2)
    assert abs(np.mean(sol.evaluate(grid)["p"])) < 0.05


def test_stokes_taylor_hood_manufactured():
    # a divergence-free velocity from a stream function; linear: one solve
    u, v, p = pinn.fields("u v p")
    psi = pinn.sin(pinn.pi * x) ** 2 * pinn.sin(pinn.pi * y) ** 2
    ue, ve, pe = pinn.D(psi, y), -pinn.D(psi, x), pinn.cos(pinn.pi * x) * pinn.cos(pinn.pi * y)

    def lap(f):
        return pinn.laplacian(f, (x, y))

    stokes = pinn.Problem(
        pinn.Rectangle((0, 0), (1, 1)),
        {"mx": -pinn.laplacian(u) + pinn.D(p, x) + lap(ue) - pinn.D(pe, x),
         "my": -pinn.laplacian(v) + pinn.D(p, y) + lap(ve) - pinn.D(pe, y),
         "mass": pinn.D(u, x) + pinn.D(v, y)},
        {"walls": pinn.Dirichlet({u: 0, v: 0})}, exact={u: ue, v: ve, p: pe})
    ns = [4, 8, 16]
    sols = [fem.solve(stokes, cells=n, element="P2") for n in ns]
    assert all(s.info["linear"] and s.info["newton_iterations"] == 1 for s in sols)
    errs = [s.l2_error(stokes.exact) for s in sols]
    slope = -np.polyfit(np.log(ns), np.log([e["u"] for e in errs]), 1)[0]
    assert abs(slope - 3.0) < 0.15, errs                     # P2 velocity
    assert errs[-1]["p"] < 5e-3 and errs[-1]["p"] < errs[-2]["p"] / 4   # P1 pressure
