"""Spectral references (Fourier + ETDRK4): scheme, convergence, refinement, interpolation, cache."""

import dataclasses
import os

import numpy as np
import pytest
from scipy.integrate import quad

from pinn.reference import PeriodicSolution, allen_cahn, etdrk4, etdrk4_coefficients, kdv
from pinn.reference import spectral as S


def test_etdrk4_coefficients_small_argument_limits():
    h = 0.01
    e, e2, q, f1, f2, f3 = etdrk4_coefficients(np.array([0.0, 1e-9, -1e-9j]), h)
    np.testing.assert_allclose(e, 1.0, atol=1e-10)
    np.testing.assert_allclose(q, h / 2, rtol=1e-9)
    for f in (f1, f2, f3):  # phi-function limits: all h/6 at hL = 0
        np.testing.assert_allclose(f, h / 6, rtol=1e-9)


def test_etdrk4_is_exact_for_constant_forcing():
    """v' = L v + g has the exact ETD solution; stiff, growing and dispersive L."""
    L = np.array([0.0, -1e3, 5.0, 1e4j, -3 + 40j, -1e-7])
    g = np.array([1.0, 2.0, -1.0, 0.5j, 1 + 1j, 3.0])
    v0 = np.array([1.0, -1.0, 0.5, 2.0, 1j, 0.3], dtype=complex)
    h, steps = 0.01, 50
    times, states = etdrk4(v0, L, lambda v: g, [(h, steps, steps)])
    t = times[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(L == 0, t, np.expm1(L * t) / L)
    exact = np.exp(L * t) * v0 + phi * g
    np.testing.assert_allclose(states[-1], exact, rtol=1e-11, atol=1e-13)


def test_kdv_converges_at_fourth_order_in_time():
    T = 0.25
    def final(h):
        return kdv(n=128, dt=h, store_dt=T / 10, t_end=T, cache=False).u[-1]

    ref = final(T / 1600)
    hs = np.array([T / 50, T / 100, T / 200, T / 400])
    errs = np.array([np.abs(final(h) - ref).max() for h in hs])
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert abs(slope - 4.0) < 0.15, (slope, errs)
    assert errs[-1] < 1e-9


@pytest.fixture(scope="module")
def kdv256():
    """A cheap KdV run shared by several tests (levels 5e-4 apart)."""
    return kdv(n=256, dt=2.5e-4, store_dt=5e-4, t_end=1.0, cache=False)


def test_kdv_conserves_mass_and_energy(kdv256):
    s = kdv256
    mass = s.u.mean(axis=1)  # (1/2) ∫ u dx
    energy = (s.u**2).mean(axis=1)  # (1/2) ∫ u^2 dx, exact for band-limited u
    assert np.abs(mass).max() < 1e-14
    assert np.abs(energy - energy[0]).max() < 1e-9  # ETDRK4 conserves it to O(dt^4)
    assert s.u[-1].max() > 2.0  # solitons have formed (Zabusky & Kruskal 1965)


def test_allen_cahn_initial_coefficients_are_exact():
    n = 64
    v = S._allen_cahn_u0_hat(n)
    for m in (0, 1, 2, 5, 17, 31):
        c = quad(lambda x, m=m: x**2 * np.cos(np.pi * x) * np.cos(np.pi * m * x), -1, 1,
                 epsabs=1e-15, limit=200)[0] / 2
        assert abs(v[m] / n * (-1) ** m - c) < 1e-14, m


def test_allen_cahn_refinement_short_horizon():
    """Defaults (n=4096, dt=1e-3, start 1e-4) against n=8192, dt/2 up to t = 0.1."""
    T = 0.1
    a = allen_cahn(t_end=T, cache=False)
    b = allen_cahn(n=8192, dt=5e-4, early=(0.02, 5e-5), t_end=T, cache=False)
    ia = np.searchsorted(b.t, a.t - 1e-12)
    np.testing.assert_allclose(b.t[ia], a.t, atol=1e-12)
    diff = np.abs(a.u - b.u[ia][:, ::2]).max(axis=1)
    assert diff[a.t >= 0.002].max() < 1e-8, diff[a.t >= 0.002].max()
    assert diff[a.t >= 0.005].max() < 1e-10, diff[a.t >= 0.005].max()
    assert np.all(np.abs(a.u[-1]) < 1.0 + 1e-9)  # maximum principle


def test_space_interpolation_reproduces_the_fourier_series(kdv256):
    s = kdv256
    x = np.random.default_rng(0).uniform(-1, 1, 500)
    for level in (0, 600, 1200, 2000):
        got = s.u_at(x, np.full_like(x, s.t[level]) + (1e-15 if level == 0 else 0.0))
        assert np.abs(got - s.fourier(x, level)).max() < 1e-12


def test_time_interpolation_is_cubic(kdv256):
    """Levels 1e-3 and 2e-3 apart predict the levels in between with a 2^4 error ratio."""
    s = kdv256

    def thinned(k):
        return dataclasses.replace(s, t=s.t[::k], u=s.u[::k])

    odd = np.arange(1, s.t.size - 1, 4)[::5]  # midpoints for both thinned copies
    x = s.x[::2]
    errs = []
    for k in (2, 4):
        sol = thinned(k)
        errs.append(max(np.abs(sol.u_at(x, np.full_like(x, s.t[i])) - s.u[i][::2]).max()
                        for i in odd))
    assert errs[0] < 2e-8, errs
    assert 10 < errs[1] / errs[0] < 24, errs


def test_periodic_solution_as_a_reference():
    s = kdv(n=128, dt=1e-3, store_dt=1e-2, t_end=0.2, cache=False)
    rng = np.random.default_rng(1)
    x, t = rng.uniform(-1, 1, 200), rng.uniform(0, 0.2, 200)
    out = s(np.column_stack([x, t]).astype(np.float32))
    assert set(out) == {"u"} and out["u"].dtype == np.float64 and out["u"].shape == (200,)
    np.testing.assert_allclose(s.u_at(x + 2.0, t), s.u_at(x, t), atol=1e-13)  # periodic
    np.testing.assert_array_equal(s.u_at(x, 0.0), np.cos(np.pi * x))  # exact at t = 0
    assert s.u_at(x[:5, None], t[None, :3]).shape == (5, 3)
    # blocking over levels and chunking over points change nothing
    np.testing.assert_allclose(s.u_at(x, t, block=1, chunk=7), s.u_at(x, t), atol=1e-15)
    with pytest.raises(ValueError, match="outside the stored range"):
        s.u_at(0.0, 0.3)
    with pytest.raises(ValueError, match=r"points\[N, 2\]"):
        s(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="n >= 2048"):
        allen_cahn(n=1024)
    with pytest.raises(ValueError, match="whole number"):
        kdv(dt=3e-4, store_dt=1e-3)
    with pytest.raises(ValueError, match="n must be a whole number"):
        kdv(n=100.5)
    # YAML numbers arrive as floats; the field name is free
    named = kdv(n=128.0, dt=1e-3, store_dt=1e-2, t_end=0.2, cache=False, field="h")
    np.testing.assert_array_equal(named(np.column_stack([x, t]))["h"], s.u_at(x, t))
    with pytest.raises(ValueError, match="shape"):
        PeriodicSolution(x=np.zeros(4), t=np.arange(4.0), u=np.zeros((4, 5)), period=(0, 1))


def test_cache_roundtrip(tmp_path, monkeypatch):
    kw = dict(n=64, dt=1e-3, store_dt=1e-2, t_end=0.1)
    first = kdv(**kw, cache=tmp_path)
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 1 and files[0].startswith("kdv-") and files[0].endswith(".npz")

    def boom(*a, **k):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(S, "etdrk4", boom)
    again = kdv(**kw, cache=tmp_path)
    np.testing.assert_array_equal(again.u, first.u)
    with pytest.raises(AssertionError, match="recomputed"):  # other parameters: a new entry
        kdv(**{**kw, "dt": 5e-4}, cache=tmp_path)
    monkeypatch.undo()

    (tmp_path / files[0]).write_bytes(b"not a zip file")
    with pytest.warns(UserWarning, match="unreadable"):
        fixed = kdv(**kw, cache=tmp_path)
    np.testing.assert_array_equal(fixed.u, first.u)
    assert sorted(os.listdir(tmp_path)) == files  # no temporary files left behind

    monkeypatch.setenv("PINN_CACHE", str(tmp_path / "env"))
    kdv(**kw)
    assert len(os.listdir(tmp_path / "env" / "reference")) == 1


# ---------------------------------------------------------------------------
# the default references over the whole horizon (tens of seconds)


@pytest.mark.slow
def test_allen_cahn_default_accuracy_by_refinement():
    a = allen_cahn(cache=False)
    b = allen_cahn(n=8192, dt=5e-4, early=(0.02, 5e-5), cache=False)
    ia = np.searchsorted(b.t, a.t - 1e-12)
    diff = np.abs(a.u - b.u[ia][:, ::2]).max(axis=1)
    assert diff[a.t >= 0.005].max() < 1e-10, diff[a.t >= 0.005].max()
    # the callable at arbitrary points, against the refined solution's own levels
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, 2000)
    for i in rng.choice(np.flatnonzero(b.t >= 0.05), 20, replace=False):
        t = np.full_like(x, b.t[i])
        assert np.abs(a.u_at(x, t) - b.u_at(x, t)).max() < 1e-9


@pytest.mark.slow
def test_kdv_default_accuracy_by_refinement():
    a = kdv(cache=False)
    b = kdv(n=1024, dt=2.5e-5, cache=False)
    np.testing.assert_allclose(b.t, a.t, atol=1e-12)
    assert np.abs(a.u - b.u[:, ::2]).max() < 1e-9
    energy = (a.u**2).mean(axis=1)
    assert np.abs(energy - energy[0]).max() < 1e-12


def test_kuramoto_sivashinsky_solves_its_equation():
    """KS (PINNacle's parameters): the mean is conserved (every term is a derivative), the
    start is exact, and the stored levels satisfy the PDE: u_t from a fourth-order central
    difference of levels dt apart, the x-derivatives spectrally."""
    from pinn.reference import kuramoto_sivashinsky

    alpha, beta, gamma = 100 / 16, 100 / 16**2, 100 / 16**4
    s = kuramoto_sivashinsky(n=256, dt=1e-4, store_dt=1e-4, t_end=0.3, cache=False)
    assert np.abs(s.u.mean(axis=1) - s.u[0].mean()).max() < 1e-13
    x = s.x
    np.testing.assert_allclose(s.u[0], np.cos(x) * (1 + np.sin(x)), atol=1e-13)
    k = np.fft.rfftfreq(256, d=1 / 256)

    def dx(u, order):
        return np.fft.irfft((1j * k) ** order * np.fft.rfft(u), n=256)

    h = 1e-4
    for i in (1000, 2000, 2900):
        u = s.u[i]
        ut = (s.u[i - 2] - 8 * s.u[i - 1] + 8 * s.u[i + 1] - s.u[i + 2]) / (12 * h)
        res = ut + alpha * u * dx(u, 1) + beta * dx(u, 2) + gamma * dx(u, 4)
        scale = np.abs(alpha * u * dx(u, 1)).max()
        assert np.abs(res).max() < 1e-6 * scale, (i, np.abs(res).max(), scale)
    # the solution has moved far from its start (not a trivial check)
    assert np.abs(s.u[-1] - s.u[0]).max() > 0.5


def test_kuramoto_sivashinsky_is_the_pinnacle_reference():
    """``reference: {kuramoto_sivashinsky: ...}`` in benchmarks/pinnacle/ks.yaml builds it
    with the file's parameters (a short horizon here, not cached)."""
    from pinn.config import load

    here = os.path.dirname(os.path.abspath(__file__))
    ref = load(os.path.join(here, "..", "benchmarks", "pinnacle", "ks.yaml")).problem.reference
    assert ref.kind == "kuramoto_sivashinsky"
    assert ref.options == pytest.approx({"alpha": 6.25, "beta": 100 / 256, "gamma": 100 / 16**4})
