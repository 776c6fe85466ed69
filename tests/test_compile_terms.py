"""compile_terms: manufactured solutions through the whole pipeline (plan,
collapse, derivatives, evaluation), learnable parameters, inputs, errors."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn.dsl as P
from pinn.compile import (
    CompileError,
    compile_expressions,
    compile_fields,
    compile_terms,
    initial_pde_params,
    plan_terms,
)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def points(key, n, lo, hi):
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return jnp.asarray(jax.random.uniform(jax.random.PRNGKey(key), (n, len(lo))) * (hi - lo) + lo)


# ---------------------------------------------------------------------------
# manufactured solutions: "networks" that return an exact solution


def heat_exact(alpha):
    def apply(_, z):
        x, y, t = z[:, 0], z[:, 1], z[:, 2]
        return (jnp.exp(-2 * math.pi ** 2 * alpha * t) * jnp.sin(math.pi * x)
                * jnp.sin(math.pi * y))[:, None]

    return apply


def kovasznay(nu):
    lam = 1 / (2 * nu) - math.sqrt(1 / (4 * nu ** 2) + 4 * math.pi ** 2)

    def apply(_, z):
        x, y = z[:, 0], z[:, 1]
        e = jnp.exp(lam * x)
        u = 1 - e * jnp.cos(2 * math.pi * y)
        v = lam / (2 * math.pi) * e * jnp.sin(2 * math.pi * y)
        p = 0.5 * (1 - e * e)
        return jnp.stack([u, v, p], axis=1)

    return apply


def kdv_soliton(c):
    def apply(_, z):
        x, t = z[:, 0], z[:, 1]
        return (c / 2 / jnp.cosh(math.sqrt(c) / 2 * (x - c * t)) ** 2)[:, None]

    return apply


def test_heat_residual_vanishes(strategy="auto"):
    x, y, t = P.coords("x y t")
    u = P.field("u")
    alpha = 0.05
    fn = compile_terms({"heat": P.D(u, t) - alpha * P.laplacian(u)}, coords=(x, y, t),
                       fields=(u,), apply=heat_exact(alpha), strategy=strategy)
    assert fn.plan.combos and not fn.plan.alphas  # u_t - a*lap(u) is ONE collapsed stream
    r = jax.jit(fn)({"net": None}, points(0, 64, (0, 0, 0), (1, 1, 1)))["heat"]
    assert r.shape == (64,)
    assert float(jnp.max(jnp.abs(r))) < 1e-12


def test_navier_stokes_kovasznay(strategy="auto"):
    x, y = P.coords("x y")
    u, v, p = P.fields("u v p")
    nu = 1 / 40
    vel = P.vector(u, v)
    eqs = {
        "mx": P.dot(vel, P.grad(u)) + P.D(p, x) - nu * P.laplacian(u),
        "my": P.dot(vel, P.grad(v)) + P.D(p, y) - nu * P.laplacian(v),
        "mass": P.div(vel),
    }
    fn = compile_terms(eqs, coords=(x, y), fields=(u, v, p), apply=kovasznay(nu),
                       strategy=strategy)
    assert fn.plan.alphas == ((0, 0), (1, 0), (0, 1))  # Laplacians collapsed for u and v
    res = jax.jit(fn)({"net": None}, points(1, 50, (-0.5, -0.5), (1.0, 1.5)))
    for name, r in res.items():
        assert float(jnp.max(jnp.abs(r))) < 1e-10, name


def test_kdv_third_order_and_biharmonic_fourth_order():
    x, t = P.coords("x t")
    u = P.field("u")
    c = 1.3
    kdv = compile_terms({"kdv": P.D(u, t) + 6 * u * P.D(u, x) + P.D(u, x, 3)}, coords=(x, t),
                        fields=(u,), apply=kdv_soliton(c))
    r = jax.jit(kdv)({"net": None}, points(2, 50, (-3, 0), (3, 1)))["kdv"]
    assert float(jnp.max(jnp.abs(r))) < 1e-11
    # biharmonic: lap^2 u = 4 pi^4 u for u = sin(pi x) sin(pi y); the source is symbolic
    y = P.coords("y")
    w = P.field("w")
    src = 4 * P.pi ** 4 * P.sin(P.pi * x) * P.sin(P.pi * y)
    bih = compile_terms(
        {"bih": P.laplacian(P.laplacian(w)) - src},
        coords=(x, y), fields=(w,),
        apply=lambda _, z: (jnp.sin(math.pi * z[:, 0]) * jnp.sin(math.pi * z[:, 1]))[:, None])
    assert len(bih.plan.combos) == 1 and dict(bih.plan.combos[0].parts) == {
        (4, 0): 1.0, (2, 2): 2.0, (0, 4): 1.0}
    r = jax.jit(bih)({"net": None}, points(3, 40, (0, 0), (1, 1)))["bih"]
    assert float(jnp.max(jnp.abs(r))) < 1e-9 * 4 * math.pi ** 4


# ---------------------------------------------------------------------------
# a network, learnable parameters, gradients


def mlp(params, z):
    (w1, b1), (w2, b2) = params
    return jnp.tanh(z @ w1 + b1) @ w2 + b2


def init(key, d_in, d_out, width=8):
    k1, k2 = jax.random.split(jax.random.PRNGKey(key))
    return [(jax.random.normal(k1, (d_in, width)), jnp.zeros(width)),
            (jax.random.normal(k2, (width, d_out)) / 3, jnp.zeros(d_out))]


def test_learnable_parameter_gets_its_gradient():
    x, t = P.coords("x t")
    u = P.field("u")
    nu = P.param("nu", 0.2, learnable=True)
    res = P.D(u, t) + u * P.D(u, x) - nu * P.D(u, x, 2)
    fn = compile_terms({"burgers": res}, coords=(x, t), fields=(u,), apply=mlp)
    assert fn.plan.learnable == ("nu",)
    params = {"net": init(4, 2, 1), "pde": initial_pde_params({"r": res})}
    assert float(params["pde"]["nu"]) == 0.2
    z = points(5, 30, (-1, 0), (1, 1))

    def loss(pr):
        return jnp.mean(fn(pr, z)["burgers"] ** 2)

    g = jax.jit(jax.grad(loss))(params)
    # d/dnu mean(r^2) = mean(2 r * (-u_xx)); u_xx from the jvp strategy
    ref = jax.jit(compile_terms({"r": res, "uxx": P.D(u, x, 2)}, coords=(x, t), fields=(u,),
                                apply=mlp, strategy="jvp"))(params, z)
    want = jnp.mean(2 * ref["r"] * -ref["uxx"])
    np.testing.assert_allclose(g["pde"]["nu"], want, rtol=1e-10)
    # learnable coefficients are not collapsed with u_t (their ratio varies)
    assert all((0, 1) not in dict(c.parts) for c in fn.plan.combos)
    with pytest.raises(KeyError, match="params\\['pde'\\]"):
        fn({"net": params["net"]}, z)


def test_collapse_matches_uncollapsed_and_vmap():
    x, y = P.coords("x y")
    u, v = P.fields("u v")
    a = P.param("a", 0.7)
    eqs = {"e1": P.laplacian(u) + a * P.D(v, x, 2) + a * P.D(v, y, 2) + u * P.D(v, x),
           "e2": x * P.D(u, x, 2) - P.D(v, y, 2) + P.D(u, y, 2)}
    on = compile_terms(eqs, coords=(x, y), fields=(u, v), apply=mlp)
    off = compile_terms(eqs, coords=(x, y), fields=(u, v), apply=mlp, collapse=False)
    # x*u_xx has a point-dependent coefficient, so xx stays explicit; yy is shared
    assert (2, 0) in on.plan.alphas and not off.plan.combos
    params = {"net": init(6, 2, 2)}
    zs = jnp.stack([points(7, 20, (-1, -1), (1, 1)), points(8, 20, (-1, -1), (1, 1))])
    got = jax.jit(jax.vmap(on, (None, 0)))(params, zs)
    want = jax.jit(off)(params, zs[1])
    for k in eqs:
        np.testing.assert_allclose(got[k][1], want[k], rtol=1e-11, atol=1e-12)


def test_nonlinear_in_highest_derivatives_is_not_collapsed():
    x, y = P.coords("x y")
    u = P.field("u")
    pl = plan_terms({"r": P.D(u, x, 2) * P.D(u, y, 2) + P.D(u, x, 2)}, coords=(x, y),
                    fields=(u,))
    assert not pl.combos and set(pl.alphas) == {(2, 0), (0, 2)}
    uxx, uyy = P.D(u, x, 2), P.D(u, y, 2)
    # ratios that change sign with x (or across a branch) must not be collapsed
    for ex in (P.where(x > 0, uxx + uyy, uxx - uyy), x * uxx + P.abs_(x) * uyy,
               P.sqrt(x) * uxx + P.sqrt(-x) * uyy):
        assert not plan_terms({"r": ex}, coords=(x, y), fields=(u,)).combos, ex
    # a common point-dependent factor is fine, also where it is undefined for x < 0
    pl = plan_terms({"r": P.sqrt(x) * (uxx + 2 * uyy)}, coords=(x, y), fields=(u,))
    (combo,) = [dict(c.parts) for c in pl.combos]
    assert set(combo) == {(2, 0), (0, 2)} and combo[(0, 2)] == 2 * combo[(2, 0)]


# ---------------------------------------------------------------------------
# inputs, field-free expressions, evaluation helpers


def test_normal_derivative_with_inputs():
    x, y = P.coords("x y")
    nx, ny = P.coords("n_x n_y")
    u = P.field("u")
    fn = compile_terms({"flux": P.dot(P.grad(u), P.vector(nx, ny)) - 1}, coords=(x, y),
                       fields=(u,), apply=lambda _, z: (z[:, 0] ** 2 * z[:, 1])[:, None],
                       inputs=(nx, ny))
    z = points(9, 10, (0, 0), (1, 1))
    theta = jnp.linspace(0, 2 * math.pi, 10)
    n = jnp.stack([jnp.cos(theta), jnp.sin(theta)], axis=1)
    got = fn({"net": None}, z, n)["flux"]
    want = 2 * z[:, 0] * z[:, 1] * n[:, 0] + z[:, 0] ** 2 * n[:, 1] - 1
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError, match="extra"):
        fn({"net": None}, z)
    with pytest.raises(CompileError, match="per-point inputs"):
        compile_terms({"bad": P.D(u, nx)}, coords=(x, y), fields=(u,), apply=mlp,
                      inputs=(nx, ny))


def test_field_free_expressions_need_no_network():
    x, t = P.coords("x t")
    k = P.param("k", 2.0)
    exact = P.exp(-t) * P.sin(k * P.pi * x)
    fn = compile_expressions({"u": exact, "u_xx": P.D(exact, x, 2), "one": 1}, coords=(x, t))
    z = points(10, 12, (0, 0), (1, 1))
    out = fn(None, z)
    want = np.exp(-z[:, 1]) * np.sin(2 * math.pi * z[:, 0])
    np.testing.assert_allclose(out["u"], want, rtol=1e-12)
    np.testing.assert_allclose(out["u_xx"], -(2 * math.pi) ** 2 * want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out["one"], np.ones(12))
    seq = compile_expressions([exact], coords=(x, t))
    assert list(seq(None, z)) == [str(exact)]


def test_compile_fields_on_an_nnx_network():
    from pinn import nets

    x, y = P.coords("x y")
    u, v = P.fields("u v")
    apply, net = nets.split(nets.MLP(width=8, depth=2).build(2, 2, key=jax.random.key(0)))
    z = points(11, 6, (0, 0), (1, 1))
    out = compile_fields(coords=(x, y), fields=(u, v), apply=apply)({"net": net}, z)
    np.testing.assert_allclose(out["v"], apply(net, z)[:, 1], rtol=1e-12)
    lap = compile_terms({"lap": P.laplacian(u)}, coords=(x, y), fields=(u, v), apply=apply)
    ref = compile_terms({"lap": P.laplacian(u)}, coords=(x, y), fields=(u, v), apply=apply,
                        strategy="jvp")
    np.testing.assert_allclose(jax.jit(lap)({"net": net}, z)["lap"],
                               jax.jit(ref)({"net": net}, z)["lap"], rtol=1e-10)


def test_errors_name_the_problem():
    x, t = P.coords("x t")
    u, w = P.fields("u w")
    with pytest.raises(CompileError, match="field 'w' is not one of the network's outputs"):
        compile_terms({"r": w}, coords=(x, t), fields=(u,), apply=mlp)
    with pytest.raises(CompileError, match="unknown coordinate 'z'"):
        compile_terms({"r": P.D(u, P.coords("z"))}, coords=(x, t), fields=(u,), apply=mlp)
    with pytest.raises(CompileError, match="unknown derivative strategy"):
        compile_terms({"r": u}, coords=(x, t), fields=(u,), apply=mlp, strategy="magic")
    with pytest.raises(CompileError, match="pass the network as apply="):
        compile_terms({"r": u}, coords=(x, t), fields=(u,))
    with pytest.raises(CompileError, match="has no value"):
        compile_terms({"r": P.param("c") * u}, coords=(x, t), fields=(u,), apply=mlp)
    fn = compile_terms({"r": u}, coords=(x, t), fields=(u,), apply=mlp)
    with pytest.raises(ValueError, match=r"points must have shape \[N, 2\]"):
        fn({"net": init(0, 2, 1)}, jnp.zeros((4, 3)))
    two = compile_terms({"r": u}, coords=(x, t), fields=(u, w), apply=mlp)
    with pytest.raises(ValueError, match="expected \\(4, 2\\)"):
        two({"net": init(0, 2, 1)}, jnp.zeros((4, 2)))


_LEAF_ORDER = """
import pinn
from pinn.compile.terms import plan_terms
x, y = pinn.coords("x y")
u, v, p = pinn.field("u"), pinn.field("v"), pinn.field("p")
D = pinn.D
eqs = {"mx": u * D(u, x) + v * D(u, y) + D(p, x) - 0.01 * (D(u, x, x) + D(u, y, y)),
       "my": u * D(v, x) + v * D(v, y) + D(p, y) - 0.01 * (D(v, x, x) + D(v, y, y)),
       "mass": D(u, x) + D(v, y)}
print([str(k) for k in plan_terms(eqs, coords=(x, y), fields=(u, v, p)).leaves])
"""


def test_the_plan_is_the_same_in_every_process():
    """The derivatives a plan computes come in one order whatever Python's string hashes
    (they differ between processes): the traced program is then the same, and a re-run
    finds its compiled programs in the cache (measured before the fix: three hash seeds,
    three orders, and a Burgers re-run missing all four of its programs)."""
    import os
    import subprocess
    import sys

    orders = {subprocess.run([sys.executable, "-c", _LEAF_ORDER], capture_output=True,
                             text=True, check=True, timeout=120,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)}
                             ).stdout.strip().splitlines()[-1] for seed in (1, 2, 3)}
    assert len(orders) == 1, orders
    # equation by equation, each one's by field, then by multi-index over (x, y)
    assert orders.pop().startswith("['u', 'D(u, y)', 'D(u, x)', 'v', 'D(p, x)', 'D(v, y)'")
