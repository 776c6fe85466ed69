"""The finite-volume solver behind Burgers2d-C's reference (benchmarks/pinnacle/make_data.py):
second order against an exact coupled solution, conservative where the PDE is, and the
initial cell averages are those of the stand-in files' closed form."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "pinnacle" / "make_data.py"
_spec = importlib.util.spec_from_file_location("make_data", _PATH)
make_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_data)


def _cole_hopf(x, y, t, nu):
    # u = -2 nu grad(log theta), theta = 1.8 + e^(-nu t) cos x + e^(-4 nu t) sin(2 y) / 2
    # solves theta_t = nu lap theta, so (u, v) solves the coupled viscous Burgers system
    a, b = np.exp(-nu * t), np.exp(-4 * nu * t)
    theta = 1.8 + a * np.cos(x) + 0.5 * b * np.sin(2 * y)
    return np.stack([2 * nu * a * np.sin(x) / theta, -2 * nu * b * np.cos(2 * y) / theta])


def test_second_order_against_cole_hopf():
    """The coupled system (u, v both advected by (u, v)) against its Cole-Hopf solution:
    the log-log slope of the error over 32, 64, 128 cells is 2 within 0.2."""
    nu, t_end, length = 0.05, 1.0, 2 * np.pi
    errors = []
    for n in (32, 64, 128):
        c = (np.arange(n) + 0.5) * length / n
        X, Y = np.meshgrid(c, c, indexing="ij")
        q = make_data.burgers2d_solve(_cole_hopf(X, Y, 0.0, nu), length, nu, [0.0, t_end],
                                      dtype=np.float64)[-1]
        exact = _cole_hopf(X, Y, t_end, nu)
        errors.append(np.linalg.norm(q - exact) / np.linalg.norm(exact))
    slope = -np.polyfit(np.log([32, 64, 128]), np.log(errors), 1)[0]
    assert errors[-1] < 2e-3
    assert slope == pytest.approx(2.0, abs=0.2)


def test_mean_of_u_conserved_when_the_flow_is_one_dimensional():
    """With fields of x only, u solves 1-D Burgers, whose mean the scheme keeps to
    rounding (through a shock: u0 = sin x steepens at t = 1); v's is not conserved by
    the PDE either way (d/dt mean(v) = mean(v u_x))."""
    n, length = 64, 2 * np.pi
    c = (np.arange(n) + 0.5) * length / n
    X, _ = np.meshgrid(c, c, indexing="ij")
    q0 = np.stack([0.3 + np.sin(X), np.cos(X)])
    q = make_data.burgers2d_solve(q0, length, 1e-3, [0.0, 1.5], dtype=np.float64)[-1]
    assert abs(q[0].mean() - 0.3) < 1e-12
    assert np.ptp(q, axis=2).max() < 1e-12  # still independent of y


def test_initial_cell_averages_match_the_files():
    """The closed form is the files' values at their nodes (written to 8 digits), and
    its cell averages are its means over the cells."""
    nodes = make_data.burgers_initial()
    closed = make_data.burgers_initial_closed_form(nodes["x"], nodes["y"])
    for k in ("u", "v"):
        np.testing.assert_allclose(closed[k], nodes[k], atol=1e-13)
    h, centre = 0.25, (1.125, 2.375)
    g = centre[0] - h / 2 + (np.arange(64) + 0.5) * h / 64
    gy = centre[1] - h / 2 + (np.arange(64) + 0.5) * h / 64
    GX, GY = np.meshgrid(g, gy, indexing="ij")
    fine = make_data.burgers_initial_closed_form(GX, GY)
    avg = make_data.burgers_initial_closed_form(np.array([centre[0]]), np.array([centre[1]]),
                                                average=h)
    for k in ("u", "v"):
        assert avg[k][0] == pytest.approx(fine[k].mean(), abs=1e-5)


def test_the_stored_reference_starts_from_the_closed_form():
    """burgers2d_c_ref.npz: the 41 x 41 x 11 grid, and at t = 0 the closed form (within
    the cell averages' bilinear interpolation, ~1e-5 at 1024 cells)."""
    path = _PATH.parent / "burgers2d_c_ref.npz"
    if not path.is_file():
        pytest.skip("burgers2d_c_ref.npz not here (python make_data.py burgers2d_c)")
    ref = np.load(path)
    points = ref["points"].astype(float)
    assert points.shape == (41 * 41 * 11, 3)
    np.testing.assert_allclose(np.unique(points[:, 2]), np.linspace(0, 1, 11), atol=1e-7)
    start = points[:, 2] == 0
    closed = make_data.burgers_initial_closed_form(points[start, 0], points[start, 1])
    for k in ("u", "v"):
        err = np.linalg.norm(ref[k][start] - closed[k]) / np.linalg.norm(closed[k])
        assert err < 1e-4
