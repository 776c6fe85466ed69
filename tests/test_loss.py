"""The loss assembly: each condition's term vanishes on a function that satisfies it
exactly and is positive on one that does not."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn.train.loss import assemble
from pinn.train.spec import Points

x, y, t = pinn.coords("x y t")
u = pinn.field("u")
KEY = jax.random.PRNGKey(0)
PTS = Points(interior=256, boundary=128, initial=128)


def _apply_of(fn):
    """A fake 'network' returning fn(x) (ignores its parameters)."""
    return lambda params, X: fn(X)[:, None]


def _terms(problem, fn, params_pde=None):
    with jax.enable_x64(True):
        asm = assemble(problem, _apply_of(fn), PTS)
        params = {"net": {}, "pde": params_pde or {}}
        batch = asm.sample_fn(KEY, params)
        return {k: float(v) for k, v in asm.terms_fn(params, batch).items()}


def test_dirichlet_neumann_robin_on_parts():
    # u = x^2 + y on the unit square: u_xx + u_yy = 2
    p = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)),
        equations={"pde": pinn.laplacian(u) - 2},
        conditions={
            "left": pinn.Dirichlet(u, y, on="left"),
            "right": pinn.Neumann(u, 2 * x, on="right"),        # du/dn = u_x = 2 at x=1
            "top": pinn.Robin(u, 1, 1, x**2 + 2, on="top"),      # u + u_y = x^2 + 1 + 1
            "bottom": pinn.Dirichlet(u, x**2, on=pinn.eq(y, 0)),
        },
    )
    good = _terms(p, lambda X: X[:, 0] ** 2 + X[:, 1])
    assert max(good.values()) < 1e-20, good
    bad = _terms(p, lambda X: X[:, 0] ** 2 + X[:, 1] + 0.1 * X[:, 0] * (X[:, 1] + 1) ** 2)
    for name in ("pde", "right", "top", "bottom"):
        assert bad[name] > 1e-4, (name, bad)


def test_initial_with_rate_and_constraint():
    # wave: u = sin(pi x) cos(2 pi t) + t*sin(pi x)  ->  u_tt = 4 u_xx ... use exact forms
    p = pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"wave": pinn.D(u, t, 2) - 4 * pinn.D(u, x, 2)},
        conditions={
            "ends": pinn.Dirichlet(u, 0, on="boundary"),
            "start": pinn.Initial(u, pinn.sin(pinn.pi * x),
                                  rate=2 * pinn.pi * pinn.sin(pinn.pi * x)),
            "mean": pinn.Constraint(u - pinn.sin(pinn.pi * x) * (pinn.cos(2 * pinn.pi * t)
                                                             + pinn.sin(2 * pinn.pi * t))),
        },
    )

    def exact(X):
        return jnp.sin(np.pi * X[:, 0]) * (jnp.cos(2 * np.pi * X[:, 1])
                                           + jnp.sin(2 * np.pi * X[:, 1]))

    good = _terms(p, exact)
    assert max(good.values()) < 1e-18, good
    bad = _terms(p, lambda X: jnp.sin(np.pi * X[:, 0]) * jnp.cos(2 * np.pi * X[:, 1]))
    assert bad["start"] > 1.0 and bad["mean"] > 1e-2 and good["ends"] < 1e-20


@pytest.mark.parametrize("order", [0, 1, 2])
def test_periodic(order):
    p = pinn.Problem(
        domain=pinn.Interval(-1, 1) * pinn.TimeInterval(0, 1),
        equations={"pde": pinn.D(u, t) + pinn.D(u, x)},
        conditions={"seam": pinn.Periodic(u, ("left", "right"), order=order)},
    )
    good = _terms(p, lambda X: jnp.sin(np.pi * (X[:, 0] - X[:, 1])))
    assert good["seam"] < 1e-20 and good["pde"] < 1e-20
    # periodic values but not slopes: x^2 (equal at +-1, u_x differs)
    bad = _terms(p, lambda X: X[:, 0] ** 2 + X[:, 1])
    if order == 0:
        assert bad["seam"] < 1e-20
    else:
        assert bad["seam"] > 1.0


def test_data_term_and_learnable_param():
    nu = pinn.param("nu", 0.3, learnable=True)
    pts = np.random.default_rng(0).uniform(size=(50, 2))
    vals = np.exp(-pts[:, 1]) * np.sin(pts[:, 0])
    p = pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"pde": pinn.D(u, t) - nu * pinn.D(u, x, 2)},
        conditions={"obs": pinn.Data(pts, {u: vals})},
    )
    fn = lambda X: jnp.exp(-X[:, 1]) * jnp.sin(X[:, 0])  # solves u_t = 1.0 * u_xx
    good = _terms(p, fn, {"nu": jnp.asarray(1.0)})
    assert good["obs"] < 1e-28 and good["pde"] < 1e-20
    bad = _terms(p, fn, {"nu": jnp.asarray(0.3)})
    assert bad["pde"] > 1e-3


def test_hard_constraints_are_exact():
    p = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - pinn.laplacian(u)},
        conditions={"walls": pinn.Dirichlet(u, x * y, on="boundary", hard=True),
                    "start": pinn.Initial(u, x * y, hard=True)},
    )
    asm = assemble(p, lambda params, X: jnp.ones((X.shape[0], 1)) * 3.0, PTS)
    assert asm.names == ("heat",)
    b = p.space.sample_boundary(KEY, 64, pinn.Uniform())
    X = jnp.concatenate([b.points, jnp.full((64, 1), 0.7)], axis=1)
    got = asm.apply({}, X)[:, 0]
    np.testing.assert_allclose(got, X[:, 0] * X[:, 1], atol=1e-6)
    X0 = jnp.concatenate([jax.random.uniform(KEY, (64, 2)), jnp.zeros((64, 1))], axis=1)
    np.testing.assert_allclose(asm.apply({}, X0)[:, 0], X0[:, 0] * X0[:, 1], atol=1e-6)


def test_bad_part_name_is_reported():
    p = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)),
        equations={"pde": pinn.laplacian(u)},
        conditions={"wall": pinn.Dirichlet(u, 0, on="lefft")},
    )
    with pytest.raises(ValueError, match=r"conditions\.wall\.on.*left"):
        assemble(p, _apply_of(lambda X: X[:, 0]), PTS)


def test_hard_dirichlet_on_named_parts_only():
    p = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (2, 1)),
        equations={"pde": pinn.laplacian(u)},
        conditions={"left": pinn.Dirichlet(u, y**2, on=("left", "top"), hard=True),
                    "rest": pinn.Dirichlet(u, 0, on=("right", "bottom"))},
    )
    asm = assemble(p, lambda params, X: jnp.full((X.shape[0], 1), 5.0), PTS)
    assert asm.names == ("pde", "rest")
    left = p.space.sample_boundary(KEY, 32, pinn.Uniform(), on="left").points
    top = p.space.sample_boundary(KEY, 32, pinn.Uniform(), on="top").points
    right = p.space.sample_boundary(KEY, 32, pinn.Uniform(), on="right").points
    for pts in (left, top):
        np.testing.assert_allclose(asm.apply({}, pts)[:, 0], pts[:, 1] ** 2, atol=1e-6)
    assert np.all(np.abs(asm.apply({}, right)[:, 0] - right[:, 1] ** 2) > 1e-3)
    with pytest.raises(ValueError, match="predicate"):
        bad = pinn.Problem(domain=p.domain, equations=dict(p.equations),
                           conditions={"w": pinn.Dirichlet(u, 0, on=pinn.eq(x, 0), hard=True)})
        assemble(bad, lambda params, X: X[:, :1], PTS)
