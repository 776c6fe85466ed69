"""The derivative engine: every strategy against closed forms, finite
differences and each other, in float64; composability with jit/grad/vmap."""

from __future__ import annotations

import itertools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn.compile import (
    IndexSet,
    UnsupportedPrimitive,
    derivatives,
    multi_index,
    polarization,
    supported_primitives,
)
from pinn.compile.plan import Collapsed, StreamSet, lower_set


def jderivatives(apply, params, x, alphas, strategy, combos=()):
    """``derivatives`` under one ``jax.jit`` (one XLA compile is cheaper than
    dispatching every small op eagerly)."""
    return jax.jit(lambda p, z: derivatives(apply, p, z, alphas, strategy=strategy,
                                            combos=combos))(params, x)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


# ---------------------------------------------------------------------------
# closed-form test "networks": products of univariate functions


def _uni(kind, a):
    """(f, k-th derivative of f) for a univariate building block."""
    if kind == "sin":
        return (lambda x: jnp.sin(a * x),
                lambda x, k: a ** k * jnp.sin(a * x + k * math.pi / 2))
    if kind == "cos":
        return (lambda x: jnp.cos(a * x),
                lambda x, k: a ** k * jnp.cos(a * x + k * math.pi / 2))
    if kind == "exp":
        return lambda x: jnp.exp(a * x), lambda x, k: a ** k * jnp.exp(a * x)
    if kind == "poly":  # x^5 - a x^3 + x
        c = np.array([0.0, 1.0, 0.0, -a, 0.0, 1.0])

        def dk(x, k):
            p = np.polynomial.Polynomial(c).deriv(k).coef if k else c
            return sum(float(q) * x ** i for i, q in enumerate(p))

        return lambda x: dk(x, 0), dk
    raise ValueError(kind)


def product_net(kinds):
    """apply(params, x[N, d]) -> [N, len(kinds)]: column j = prod_i f_ji(x_i);
    params scale each column (so gradients w.r.t. params are meaningful)."""
    blocks = [[_uni(k, a) for k, a in col] for col in kinds]

    def apply(params, x):
        cols = []
        for j, col in enumerate(blocks):
            v = params[j]
            for i, (f, _) in enumerate(col):
                v = v * f(x[:, i])
            cols.append(v)
        return jnp.stack(cols, axis=1)

    def exact(params, x, alpha):
        cols = []
        for j, col in enumerate(blocks):
            v = params[j]
            for i, (_, dk) in enumerate(col):
                v = v * dk(x[:, i], alpha[i])
            cols.append(v * jnp.ones(x.shape[0]))
        return jnp.stack(cols, axis=1)

    return apply, exact


def all_alphas(d, max_order):
    return [a for a in itertools.product(range(max_order + 1), repeat=d)
            if 0 < sum(a) <= max_order]


CASES = {
    # name: (kinds per output column, max order)
    "1d_poly": ([[("poly", 2.0)]], 4),
    "2d_sin_exp": ([[("sin", 1.1), ("exp", 0.6)]], 4),
    "2d_time_2out": ([[("cos", 0.9), ("exp", -1.5)], [("poly", 1.0), ("sin", 2.0)]], 3),
    "3d_plus_time": ([[("sin", 1.0), ("poly", 0.5), ("cos", 0.7), ("exp", -1.0)]], 2),
}


# Taylor mode on every case; nested jvp (the reference elsewhere) on the
# multi-output and 4-D ones; jet on one (mixed partials: test_strategies_agree)
RUNS = [(c, "taylor") for c in CASES] + [("2d_time_2out", "jvp"), ("3d_plus_time", "jvp"),
                                         ("1d_poly", "jet")]


@pytest.mark.parametrize("case,strategy", RUNS)
def test_closed_forms(case, strategy):
    kinds, order = CASES[case]
    d = len(kinds[0])
    apply, exact = product_net(kinds)
    params = jnp.linspace(0.8, 1.3, len(kinds))
    x = jax.random.uniform(jax.random.PRNGKey(1), (5, d), minval=-1.0, maxval=1.0)
    alphas = all_alphas(d, order)
    got = jderivatives(apply, params, x, ((0,) * d, *alphas), strategy)
    np.testing.assert_allclose(got[(0,) * d], apply(params, x), rtol=1e-12)
    for a in alphas:
        want = exact(params, x, a)
        scale = float(jnp.max(jnp.abs(want))) + 1.0
        err = float(jnp.max(jnp.abs(got[a] - want)))
        assert err <= 1e-10 * scale, (a, err)


# ---------------------------------------------------------------------------
# a random tanh MLP


def init_mlp(key, sizes):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        key, k1, k2 = jax.random.split(key, 3)
        params.append((jax.random.normal(k1, (a, b)) / math.sqrt(a),
                       0.3 * jax.random.normal(k2, (b,))))
    return params


def mlp(params, x, act=jnp.tanh):
    h = x
    for w, b in params[:-1]:
        h = act(h @ w + b)
    w, b = params[-1]
    return h @ w + b


def test_mlp_finite_differences():
    """Orders 1 and 2 (mixed too) of a random tanh MLP against central differences."""
    params = init_mlp(jax.random.PRNGKey(0), [2, 8, 8, 2])
    x = jax.random.uniform(jax.random.PRNGKey(1), (5, 2))
    f = lambda z: mlp(params, z)
    h = 1e-4
    e = np.eye(2) * h
    first = [(1, 0), (0, 1)]
    second = [(2, 0), (1, 1), (0, 2)]
    got = jderivatives(mlp, params, x, tuple(first + second), "taylor")
    for i, a in enumerate(first):
        fd = (f(x + e[i]) - f(x - e[i])) / (2 * h)
        np.testing.assert_allclose(got[a], fd, rtol=1e-6, atol=1e-8)
    for a in second:
        i, j = [k for k in range(2) for _ in range(a[k])]
        fd = (f(x + e[i] + e[j]) - f(x + e[i] - e[j]) - f(x - e[i] + e[j])
              + f(x - e[i] - e[j])) / (4 * h * h)
        np.testing.assert_allclose(got[a], fd, rtol=1e-5, atol=1e-6)


def test_strategies_agree_on_mlp():
    """Orders 1-4 with all mixed partials of a random 2-D MLP: Taylor (and jet up
    to order 3) against nested jvp."""
    params = init_mlp(jax.random.PRNGKey(2), [2, 8, 8, 3])
    x = jax.random.uniform(jax.random.PRNGKey(7), (5, 2), minval=-1, maxval=1)
    alphas = tuple([(0, 0)] + all_alphas(2, 4))
    ref = jderivatives(mlp, params, x, alphas, "jvp")
    for s, orders in (("taylor", alphas), ("jet", ((3, 0), (2, 1), (1, 2)))):
        got = jderivatives(mlp, params, x, orders, s)
        for a in orders:
            scale = float(jnp.max(jnp.abs(ref[a]))) + 1.0
            assert float(jnp.max(jnp.abs(got[a] - ref[a]))) <= 1e-11 * scale, (s, a)


ACTS = {
    "gelu": jax.nn.gelu, "gelu_exact": lambda v: jax.nn.gelu(v, approximate=False),
    "silu": jax.nn.silu, "softplus": jax.nn.softplus, "relu": jax.nn.relu,
    "elu": lambda v: jnp.where(v > 0, v, jnp.expm1(v)),
    "rational": lambda v: v / (1.0 + v * v) + jnp.sqrt(2.0 + v * v) ** 3 - jnp.log1p(v * v),
    "pow": lambda v: jnp.power(1.5 + jnp.cos(v), 2.5) + jnp.arctan(v) + jnp.abs(v) ** 3,
    "misc": lambda v: (jnp.exp(-v * v) * jnp.cosh(v) + jnp.tan(0.3 * v)
                       + jax.scipy.special.erf(v) + jnp.minimum(v, 0.2 * v)),
}


def mixed_net(params, z):
    """Fourier features, then one hidden layer whose units use every activation
    in ACTS (slices, concatenate, reshape, reversed columns)."""
    (b,), (w1, b1), (w2, b2) = params
    h = z @ b
    h = jnp.concatenate([jnp.cos(h), jnp.sin(h), z[:, :1] ** 2], axis=1) @ w1 + b1
    parts = [f(h[:, 2 * i:2 * i + 2]) for i, f in enumerate(ACTS.values())]
    h = jnp.concatenate(parts, axis=1).reshape(z.shape[0], 2 * len(ACTS))
    return (h @ w2 + b2)[:, ::-1]


def test_taylor_rules_match_jvp():
    """Taylor mode's primitive rules (through nested jit/custom_jvp calls) vs nested jvp."""
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    k = len(ACTS)
    params = [(jax.random.normal(keys[0], (2, 4)),),
              (jax.random.normal(keys[1], (9, 2 * k)) / 3, jnp.linspace(-0.5, 0.5, 2 * k)),
              (jax.random.normal(keys[2], (2 * k, 2)) / 4, jnp.zeros(2))]
    x = jax.random.uniform(keys[3], (5, 2), minval=-1, maxval=1)
    alphas = ((1, 0), (1, 1), (2, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no silent fallback to jvp
        got = jderivatives(mixed_net, params, x, alphas, "taylor")
    ref = jderivatives(mixed_net, params, x, alphas, "jvp")
    for a in alphas:
        scale = float(jnp.max(jnp.abs(ref[a]))) + 1.0
        assert float(jnp.max(jnp.abs(got[a] - ref[a]))) <= 1e-10 * scale, a


def test_collapsed_streams():
    """A combination of highest derivatives carried as one stream equals the sum."""
    params = init_mlp(jax.random.PRNGKey(9), [3, 8, 2])
    x = jax.random.uniform(jax.random.PRNGKey(10), (5, 3))
    heat = (((0, 0, 1), 1.0), ((2, 0, 0), -0.3), ((0, 2, 0), -0.3))
    bih = (((4, 0, 0), 1.0), ((2, 2, 0), 2.0), ((0, 4, 0), 1.0))
    for combo in (heat, bih):
        got = jderivatives(mlp, params, x, ((1, 0, 0),), "taylor", combos=(combo,))
        ref = jderivatives(mlp, params, x, tuple(g for g, _ in combo), "jvp")
        want = sum(v * ref[g] for g, v in combo)
        np.testing.assert_allclose(got[Collapsed(combo)], want, rtol=1e-11, atol=1e-11)
    with pytest.raises(ValueError, match="cannot be collapsed"):
        derivatives(mlp, params, x, [(2, 0, 0)], combos=[heat, bih], strategy="taylor")


# ---------------------------------------------------------------------------
# composability


def test_jit_grad_vmap():
    params = init_mlp(jax.random.PRNGKey(11), [2, 8, 1])
    x = jax.random.uniform(jax.random.PRNGKey(12), (5, 2))
    alphas = [(0, 0), (1, 0), (0, 2), (1, 1)]

    def loss(p, z, s):
        return sum(jnp.sum(v ** 2) for v in derivatives(mlp, p, z, alphas, strategy=s).values())

    grad = jax.jit(jax.grad(loss), static_argnums=2)
    g_t, g_j = grad(params, x, "taylor"), grad(params, x, "jvp")
    g_ref = jax.jit(lambda p, z: derivatives(mlp, p, z, alphas, strategy="jvp")[(1, 1)])
    for a, b in zip(jax.tree.leaves(g_t), jax.tree.leaves(g_j), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    # vmap over a batch of point sets, and over parameter ensembles
    xs = jnp.stack([x, x[::-1]])
    ens = jax.tree.map(lambda a: jnp.stack([a, 2 * a]), params)

    @jax.jit
    def batched(p, z):
        one = lambda q, w: derivatives(mlp, q, w, alphas, strategy="taylor")[(1, 1)]
        return jax.vmap(one, (None, 0))(p, z), jax.vmap(one, (0, None))(ens, z[0])

    vm, ve = batched(params, xs)
    np.testing.assert_allclose(vm[1], g_ref(params, xs[1]), rtol=1e-10)
    np.testing.assert_allclose(ve[1], g_ref(jax.tree.map(lambda a: 2 * a, params), x),
                               rtol=1e-10)


def test_unsupported_primitive_falls_back():
    def f(p, z):
        h = jnp.tanh(z @ p)
        return jnp.max(h, axis=1, keepdims=True) + jnp.cumprod(h, axis=1)[:, -1:]

    p = jax.random.normal(jax.random.PRNGKey(13), (2, 4))
    x = jax.random.uniform(jax.random.PRNGKey(14), (5, 2))
    with pytest.raises(UnsupportedPrimitive, match="strategy='jvp'"):
        derivatives(f, p, x, [(1, 0)], strategy="taylor")
    with pytest.warns(UserWarning, match="nested jvp"):
        got = derivatives(f, p, x, [(0, 1)], strategy="auto")
    ref = derivatives(f, p, x, [(0, 1)], strategy="jvp")
    np.testing.assert_allclose(got[(0, 1)], ref[(0, 1)], rtol=1e-12)
    assert "tanh" in supported_primitives() and "reduce_max" not in supported_primitives()


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown derivative strategy"):
        derivatives(mlp, None, jnp.zeros((2, 2)), [(1, 0)], strategy="fast")
    with pytest.raises(ValueError, match="does not fit"):
        derivatives(mlp, None, jnp.zeros((2, 2)), [(1, 0, 0)])
    with pytest.raises(ValueError, match=r"2-D array \[N, d\]"):
        derivatives(mlp, None, jnp.zeros((2,)), [(1,)])


# ---------------------------------------------------------------------------
# plan-time tables


def test_lower_set_and_products():
    s = IndexSet.closure([(2, 0), (1, 1)], 2)
    assert s.indices == ((0, 0), (1, 0), (0, 1), (2, 0), (1, 1))
    assert multi_index(["x", "y", "x"], ["x", "y"]) == (2, 1)
    assert lower_set([(0, 2)], 2) == ((0, 0), (0, 1), (0, 2))
    with pytest.raises(ValueError, match="not a lower set"):
        IndexSet(((0, 0), (2, 0)))
    # product table: (1,1) = (1,0)+(0,1) both ways
    k = s.pos[(1, 1)]
    assert sorted(s.pairs[k]) == [(1, 2), (2, 1)]
    ss = StreamSet(IndexSet.closure([(1, 0), (0, 1)], 2), ((((2, 0), 1.0), ((0, 2), 1.0)),))
    # the Laplacian stream pairs x with x and y with y, weight 2! each
    assert sorted(ss.pairs[-1]) == [(1, 1, 2.0), (2, 2, 2.0)]


@pytest.mark.parametrize("k,m", [(2, 2), (3, 2), (4, 2), (2, 3), (3, 3)])
def test_polarization_recovers_monomial_derivatives(k, m):
    """D_v^k of a homogeneous polynomial sum c_g x^g is k! sum c_g v^g; inverting the
    system must return each d^g (= g! c_g)."""
    dirs, inv, gammas = polarization(k, m)
    rng = np.random.default_rng(k * 10 + m)
    c = rng.normal(size=len(gammas))
    dd = np.array([math.factorial(k) * sum(cg * np.prod(v ** np.array(g))
                                           for cg, g in zip(c, gammas, strict=True))
                   for v in dirs])
    want = np.array([cg * math.prod(math.factorial(i) for i in g)
                     for cg, g in zip(c, gammas, strict=True)])
    np.testing.assert_allclose(inv @ dd, want, rtol=1e-9, atol=1e-9)
