"""Closed-form references: each satisfies its PDE (manufactured-solution check in float64),
numpy and expression forms agree; Ghia et al. (1982) cavity data."""

import jax
import numpy as np
import pytest
from scipy.interpolate import PchipInterpolator

import pinn.dsl as P
from pinn.dsl.calculus import substitute
from pinn.dsl.evaluate import evaluate_on_points
from pinn.reference import (
    CLOSED_FORMS,
    GHIA_RE100_U,
    GHIA_RE100_V,
    GHIA_RE100_X,
    GHIA_RE100_Y,
    advection,
    ghia_re100,
    heat,
    helmholtz,
    kovasznay,
    poisson,
    taylor_green,
    wave1d,
)

CASES = {
    **{name: factory() for name, factory in CLOSED_FORMS.items()},
    "heat1d": heat(dim=1, alpha=0.3),
    "heat3d_modes": heat(dim=3, alpha=0.1, modes=((1, 2, 1), (3, 1, 2)), amplitudes=(1.0, -0.5)),
    "advection_c80_k2": advection(c=80.0, k=2),
    "helmholtz_k3": helmholtz(k=3.0, a1=2, a2=3),
    "poisson_12": poisson(1, 2),
    "kovasznay_re20": kovasznay(re=20.0),
    "taylor_green_nu01": taylor_green(nu=0.1, t_end=2.0),
}


def _points(form, n=256, seed=0):
    lo, hi = (np.asarray(b, dtype=np.float64) for b in form.bounds)
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, lo.size))


def _eval(expr, form, pts):
    with jax.enable_x64(True):
        return np.asarray(evaluate_on_points(expr, form.coords, pts, spatial=form.spatial))


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_solution_satisfies_its_pde(name):
    form = CASES[name]
    pts = _points(form)
    residuals = form.residuals()
    assert set(residuals) == set(form.equations)
    for eq, res in residuals.items():
        r = _eval(res, form, pts)
        assert r.dtype == np.float64
        assert np.abs(r).max() < 1e-9, (name, eq, np.abs(r).max())
    # the check has teeth: a slightly wrong solution leaves a residual
    x0 = form.spatial[0]
    wrong = {f: e + 0.01 * x0 * x0 for f, e in form.exact.items()}
    worst = max(np.abs(_eval(substitute(eq, wrong), form, pts)).max()
                for eq in form.equations.values())
    assert worst > 1e-4, (name, worst)


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_form_matches_expressions(name):
    form = CASES[name]
    pts = _points(form, seed=1)
    got = form(pts)
    assert set(got) == set(form.field_names)
    for f, e in form.exact.items():
        want = _eval(e, form, pts)
        assert got[f.name].dtype == np.float64 and got[f.name].shape == (256,)
        np.testing.assert_allclose(got[f.name], want, rtol=1e-12, atol=1e-12)


def test_published_forms():
    rng = np.random.default_rng(2)
    x, y, t = rng.uniform(0, 1, 50), rng.uniform(0, 1, 50), rng.uniform(0, 1, 50)
    w = wave1d()(np.column_stack([x, t]))["u"]
    np.testing.assert_allclose(w, np.sin(np.pi * x) * np.cos(2 * np.pi * t)
                               + 0.5 * np.sin(4 * np.pi * x) * np.cos(8 * np.pi * t), atol=1e-15)
    kv = kovasznay()
    assert kv.params["lambda"] == pytest.approx(20 - np.sqrt(400 + 4 * np.pi**2), abs=1e-15)
    assert kv.params["lambda"] == pytest.approx(-0.9637405441957, abs=1e-12)
    h = heat()(np.column_stack([x, y, t]))["u"]
    np.testing.assert_allclose(h, np.exp(-2 * 0.05 * np.pi**2 * t) * np.sin(np.pi * x)
                               * np.sin(np.pi * y), atol=1e-15)
    # the Poisson source is 2 pi^2 sin(pi x) sin(pi y): -laplacian(u) - f with u = 0 is -f
    form = poisson()
    src = -substitute(form.equations["poisson"], {P.field("u"): 0})
    np.testing.assert_allclose(_eval(src, form, np.column_stack([x, y])),
                               2 * np.pi**2 * np.sin(np.pi * x) * np.sin(np.pi * y), atol=1e-12)


def test_boundary_values_of_dirichlet_forms():
    s = np.linspace(0, 1, 11)
    for form in (heat(), poisson(), helmholtz()):
        lo, hi = form.bounds
        for axis in range(len(form.spatial)):
            for side in (lo[axis], hi[axis]):
                pts = np.array([[lo[i] + (hi[i] - lo[i]) * v if i != axis else side
                                 for i in range(len(lo))] for v in s])
                np.testing.assert_allclose(form(pts)["u"], 0.0, atol=1e-14)


def test_bad_points_are_rejected():
    with pytest.raises(ValueError, match=r"points\[N, 3\]"):
        heat()(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="mode"):
        heat(modes=((1, 0),))
    with pytest.raises(ValueError, match="positive integer"):
        advection(k=0.5)


def test_ghia_tables():
    for pos, val in ((GHIA_RE100_Y, GHIA_RE100_U), (GHIA_RE100_X, GHIA_RE100_V)):
        assert len(pos) == len(val) == 17
        assert all(a > b for a, b in zip(pos, pos[1:], strict=False))
        # the positions are nodes j/128 of Ghia's 129 x 129 grid, rounded to 4 decimals
        j = np.asarray(pos) * 128
        assert np.abs(j - np.round(j)).max() < 0.01
    assert GHIA_RE100_U[0] == 1.0 and GHIA_RE100_U[-1] == 0.0  # lid and bottom wall
    assert GHIA_RE100_V[0] == 0.0 and GHIA_RE100_V[-1] == 0.0
    assert min(GHIA_RE100_U) == -0.21090 and min(GHIA_RE100_V) == -0.24533
    g = ghia_re100()
    assert np.all(np.diff(g["y"]) > 0) and np.all(np.diff(g["x"]) > 0)
    # no net flux through either centreline (mass conservation), to the tables' resolution
    assert abs(PchipInterpolator(g["y"], g["u"]).integrate(0, 1)) < 3e-3
    assert abs(PchipInterpolator(g["x"], g["v"]).integrate(0, 1)) < 3e-3
