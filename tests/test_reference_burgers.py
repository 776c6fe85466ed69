"""Burgers 1D reference (Cole–Hopf + Gauss–Hermite): PDE residual, quadrature, anchors."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import minimize_scalar

from pinn.reference import NU, Burgers, burgers


def _cole_hopf_quad(x: float, t: float, nu: float = NU) -> float:
    """Brute force: adaptive quadrature of the two Cole–Hopf integrals over y."""
    s = np.sqrt(4 * nu * t)
    lo, hi = x - 12 * s, x + 12 * s  # the Gaussian is < e^-144 beyond

    def expo(y):
        return -np.cos(np.pi * y) / (2 * np.pi * nu) - (x - y) ** 2 / (4 * nu * t)

    shift = expo(np.linspace(lo, hi, 20001)).max()
    peaks = [p for p in (-3.0, -1.0, 1.0, 3.0) if lo < p < hi] or None
    kw = dict(epsabs=1e-15, epsrel=1e-13, limit=1000, points=peaks)
    num = quad(lambda y: np.sin(np.pi * y) * np.exp(expo(y) - shift), lo, hi, **kw)[0]
    den = quad(lambda y: np.exp(expo(y) - shift), lo, hi, **kw)[0]
    return -num / den


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_agrees_with_brute_force_quadrature():
    xs = [-0.93, -0.5, -0.11, -0.004, 0.0, 0.0007, 0.013, 0.25, 0.61, 1.0]
    ts = [0.02, 0.3, 0.51, 0.8, 1.0]
    X, T = np.meshgrid(xs, ts)
    ref = np.array([_cole_hopf_quad(x, t) for x, t in zip(X.ravel(), T.ravel(), strict=True)])
    err = np.abs(burgers(X.ravel(), T.ravel()) - ref)
    assert err.max() < 1e-10, err.max()


def _residual_2nd(x, t, h, nu=NU):
    u = burgers(x, t)
    ut = (burgers(x, t + h) - burgers(x, t - h)) / (2 * h)
    ux = (burgers(x + h, t) - burgers(x - h, t)) / (2 * h)
    uxx = (burgers(x + h, t) - 2 * u + burgers(x - h, t)) / h**2
    return ut + u * ux - nu * uxx


def _residual_4th(x, t, h, nu=NU):
    def d1(f):
        return (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)

    u = burgers(x, t)
    ut = d1(lambda s: burgers(x, t + s))
    ux = d1(lambda s: burgers(x + s, t))
    uxx = (-burgers(x + 2 * h, t) + 16 * burgers(x + h, t) - 30 * u + 16 * burgers(x - h, t)
           - burgers(x - 2 * h, t)) / (12 * h * h)
    return ut + u * ux - nu * uxx


def test_satisfies_the_pde_away_from_the_shock():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 0.9, 300) * rng.choice([-1.0, 1.0], 300)
    t = rng.uniform(0.1, 0.9, 300)
    # fourth-order differences: only truncation error left (|u_t| is up to ~2)
    assert np.abs(_residual_4th(x, t, 2e-3)).max() < 1e-6
    # and the second-order residual falls like h^2: it is truncation, not a model error
    hs = np.array([4e-3, 2e-3, 1e-3])
    res = [np.abs(_residual_2nd(x, t, h)).max() for h in hs]
    slope = np.polyfit(np.log(hs), np.log(res), 1)[0]
    assert abs(slope - 2.0) < 0.1, (slope, res)


def test_satisfies_the_pde_inside_the_shock():
    rng = np.random.default_rng(1)
    x, t = rng.uniform(-0.02, 0.02, 100), rng.uniform(0.4, 1.0, 100)
    r = _residual_4th(x, t, 1e-5)
    scale = np.abs(burgers(x, t) * (burgers(x + 1e-5, t) - burgers(x - 1e-5, t)) / 2e-5).max()
    assert scale > 10  # the terms are large here ...
    assert np.abs(r).max() < 1e-5 * scale  # ... and cancel


def test_basdevant_maximum_slope():
    """Basdevant et al., Comput. Fluids 14 (1986) 23: max |u_x(0, t)| = 152.00516 at
    t = 1.6037/pi."""
    h = 1e-6

    def slope(t):
        return float((burgers(h, t) - burgers(-h, t))[()] / (2 * h))

    r = minimize_scalar(slope, bracket=(0.45, 0.5, 0.55), tol=1e-10)
    assert abs(-r.fun - 152.00516) < 2e-5
    assert abs(r.x * np.pi - 1.6037) < 1e-4


def test_initial_condition_symmetry_and_boundary():
    x = np.linspace(-1, 1, 101)
    assert np.array_equal(burgers(x, 0.0), -np.sin(np.pi * x))
    t = np.linspace(0.0, 1.0, 11)[:, None]
    u = burgers(x[None, :], t)
    assert u.shape == (11, 101)
    np.testing.assert_allclose(u, -u[:, ::-1], atol=1e-14)  # odd in x
    np.testing.assert_allclose(u[:, [0, -1]], 0.0, atol=1e-14)  # u(±1, t) = 0
    # very small t is continuous with t = 0
    np.testing.assert_allclose(burgers(x, 1e-12), -np.sin(np.pi * x), atol=1e-10)


def test_node_count_is_converged_and_chunking_is_invisible():
    rng = np.random.default_rng(2)
    x, t = rng.uniform(-1, 1, 2000), rng.uniform(0, 1, 2000)
    u = burgers(x, t)
    assert np.abs(burgers(x, t, n_nodes=120) - u).max() < 1e-13
    assert np.array_equal(burgers(x, t, chunk=7), u)


def test_reference_callable():
    ref = Burgers()
    rng = np.random.default_rng(3)
    pts = np.column_stack([rng.uniform(-1, 1, 50), rng.uniform(0, 1, 50)]).astype(np.float32)
    out = ref(pts)
    assert set(out) == {"u"} and out["u"].dtype == np.float64 and out["u"].shape == (50,)
    np.testing.assert_array_equal(out["u"], burgers(pts[:, 0], pts[:, 1]))
    with pytest.raises(ValueError, match="points"):
        ref(pts[:, :1])
    with pytest.raises(ValueError, match=">= 0"):
        burgers(0.5, -0.1)
    with pytest.raises(ValueError, match="nu"):
        burgers(0.5, 0.1, nu=0.0)
