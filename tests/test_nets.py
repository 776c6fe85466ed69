"""Networks: shapes, embeddings, architecture formulas, the pure split, derivatives."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pinn import nets


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


KEY = jax.random.key(0)

SPECS = {
    "mlp": nets.MLP(width=16, depth=2),
    "mlp-fourier-rwf": nets.MLP(
        width=16, depth=2, activation="sin", fourier=nets.Fourier(1.5, 8), rwf=nets.RWF(1.0, 0.1)
    ),
    "modified": nets.ModifiedMLP(width=16, depth=2, activation="gelu"),
    "modified-fourier": nets.ModifiedMLP(width=16, depth=2, fourier=nets.Fourier(1.0, 8)),
    "pirate": nets.PirateNet(width=16, blocks=2, fourier=nets.Fourier(1.0, 8)),
}


def _points(key, n, lo, hi, dtype=None):
    lo, hi = jnp.asarray(lo), jnp.asarray(hi)
    return lo + (hi - lo) * jax.random.uniform(key, (n, len(lo)), dtype or jnp.float32)


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("d_in,d_out", [(1, 1), (3, 4)])
def test_output_shape_every_network(name, d_in, d_out):
    lo, hi = [-1.0] * d_in, [2.0] * d_in
    apply, params = nets.split(SPECS[name].build(d_in, d_out, key=KEY, bounds=(lo, hi)))
    x = _points(jax.random.key(1), 7, lo, hi)
    y = apply(params, x)
    assert y.shape == (7, d_out) and y.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(y)))
    # any leading batch shape; a single point [d_in] -> [d_out]
    assert apply(params, x.reshape(1, 7, d_in)).shape == (1, 7, d_out)
    np.testing.assert_allclose(apply(params, x[3]), y[3], rtol=1e-6, atol=1e-6)
    assert apply.d_in == d_in and apply.d_out == d_out


@pytest.mark.parametrize("activation", sorted(nets.ACTIVATIONS))
def test_every_activation(activation):
    module = nets.MLP(width=8, depth=2, activation=activation).build(2, 1, key=KEY)
    apply, params = nets.split(module)
    x = jnp.linspace(-1, 1, 10).reshape(5, 2)
    h = nets.ACTIVATIONS[activation](x @ params["hidden"]["0"]["kernel"])
    h = nets.ACTIVATIONS[activation](h @ params["hidden"]["1"]["kernel"])
    expected = h @ params["output"]["kernel"]  # biases start at zero
    np.testing.assert_allclose(apply(params, x), expected, rtol=1e-5, atol=1e-6)


def test_normalization_maps_bounds_to_unit_box():
    lo, hi = np.array([0.0, -2.0, 10.0]), np.array([1.0, 6.0, 10.5])
    module = nets.MLP(width=4, depth=1).build(3, 1, key=KEY, bounds=(lo, hi))
    corners = jnp.asarray([lo, hi, (lo + hi) / 2, [lo[0], hi[1], lo[2]]], jnp.float32)
    z = module.embedding(corners)
    np.testing.assert_allclose(
        z, [[-1, -1, -1], [1, 1, 1], [0, 0, 0], [-1, 1, -1]], atol=1e-6
    )
    # normalize=False or no bounds: the raw coordinates
    raw = nets.MLP(width=4, depth=1, normalize=False).build(3, 1, key=KEY, bounds=(lo, hi))
    np.testing.assert_array_equal(raw.embedding(corners), corners)
    # the normalisation is a constant, not a trained parameter
    _, params = nets.split(module)
    assert "embedding" not in params


@pytest.mark.parametrize("name", ["mlp", "modified", "pirate"])
def test_periodic_embedding_is_exactly_periodic_float32(name):
    # period 2 and dyadic points: x + k P is exact in float32, so f(x + kP) == f(x)
    spec = dataclasses.replace(SPECS[name], periodic=nets.Periodic(harmonics=3))
    module = spec.build(2, 2, key=KEY, bounds=([-1, 0], [1, 1]), periodic={0: 2.0})
    apply, params = nets.split(module)
    x = jnp.stack(
        [jnp.arange(-64, 64) / 64.0, jnp.linspace(0, 1, 128)], axis=1
    ).astype(jnp.float32)
    y = apply(params, x)
    for k in (1, -1, 3):
        shifted = apply(params, x + jnp.array([2.0 * k, 0.0], jnp.float32))
        np.testing.assert_allclose(shifted, y, rtol=0, atol=1e-6)
    # the other input is not periodic with that period
    assert float(jnp.max(jnp.abs(apply(params, x + jnp.array([0.0, 2.0])) - y))) > 1e-2


def test_periodic_embedding_any_period_float64(x64):
    period = 2 * np.pi
    spec = nets.MLP(width=16, depth=2, fourier=nets.Fourier(2.0, 8), periodic=nets.Periodic({}, 2))
    apply, params = nets.split(spec.build(2, 1, key=KEY, periodic={1: period}))
    x = _points(jax.random.key(3), 200, [0.0, 0.0], [1.0, period], jnp.float64)
    y = apply(params, x)
    for k in (1, -2):
        np.testing.assert_allclose(apply(params, x + jnp.array([0.0, k * period])), y, atol=1e-10)
    # harmonics: 2 -> features cos/sin(2πk y/P), k = 1, 2, and the other input passes through
    module = spec.build(2, 1, key=KEY, periodic={1: period}, dtype=jnp.float64)
    emb = module.embedding
    assert emb.periodic_index == (1,) and emb.plain_index == (0,)
    h = jnp.concatenate([x[:, :1]] + [f(2 * np.pi * k * x[:, 1:] / period)
                                      for f in (jnp.cos,) for k in (1, 2)]
                        + [jnp.sin(2 * np.pi * k * x[:, 1:] / period) for k in (1, 2)], axis=1)
    np.testing.assert_allclose(emb.fourier(h), emb(x), atol=1e-12)


def test_fourier_features_formula_and_not_trained():
    spec = nets.MLP(width=10, depth=2, fourier=nets.Fourier(scale=3.0, features=8))
    module = spec.build(2, 1, key=KEY, bounds=([0, 0], [1, 1]))
    B = module.embedding.fourier.B[...]
    assert B.shape == (2, 8)
    x = _points(jax.random.key(4), 5, [0, 0], [1, 1])
    z = 2 * x - 1
    np.testing.assert_allclose(
        module.embedding(x), jnp.concatenate([jnp.cos(z @ B), jnp.sin(z @ B)], 1), atol=1e-5
    )
    apply, params = nets.split(module)
    # only the dense layers are parameters: (16*10 + 10) + (10*10 + 10) + (10*1 + 1)
    assert nets.count_params(params) == 291
    leaves = jax.tree_util.tree_leaves_with_path(params)
    assert not any("B" in jax.tree_util.keystr(p) or "fourier" in jax.tree_util.keystr(p)
                   for p, _ in leaves)
    grads = jax.grad(lambda p: jnp.sum(apply(p, x) ** 2))(params)
    assert jax.tree.structure(grads) == jax.tree.structure(params)
    # a gradient step leaves B where it was
    stepped = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    np.testing.assert_array_equal(apply.module(stepped).embedding.fourier.B[...], B)


def test_fourier_scale_is_the_standard_deviation():
    emb = nets.FourierFeatures(3, 4000, 2.5, rngs=nnx.Rngs(params=KEY))
    std = float(jnp.std(emb.B[...]))
    assert abs(std / 2.5 - 1) < 0.02 and emb.d_out == 8000


def test_rwf_factorisation():
    layer = nets.Dense(256, 256, rwf=(0.5, 0.1), rngs=nnx.Rngs(params=KEY))
    s = layer.log_scale[...]
    assert abs(float(jnp.mean(s)) - 0.5) < 0.02 and abs(float(jnp.std(s)) - 0.1) < 0.015
    W = layer.weight()
    np.testing.assert_allclose(W, layer.kernel[...] * jnp.exp(s)[None, :], rtol=1e-6)
    # W starts as a Glorot draw: std sqrt(2 / (fan_in + fan_out))
    assert abs(float(jnp.std(W)) / np.sqrt(2 / 512) - 1) < 0.03
    # s is trained: it receives a gradient
    apply, params = nets.split(
        nets.MLP(width=8, depth=1, rwf=nets.RWF(1.0, 0.1)).build(2, 1, key=KEY)
    )
    g = jax.grad(lambda p: jnp.sum(apply(p, jnp.ones((3, 2))) ** 2))(params)
    assert float(jnp.linalg.norm(g["hidden"]["0"]["log_scale"])) > 0


def test_modified_mlp_gating_formula():
    spec = nets.ModifiedMLP(width=6, depth=2, activation="tanh")
    apply, p = nets.split(spec.build(2, 3, key=KEY, bounds=([0, 0], [2, 4])))
    x = _points(jax.random.key(5), 9, [0, 0], [2, 4])
    h = x / jnp.array([1.0, 2.0]) - 1

    def dense(q, a):
        return a @ q["kernel"] + q["bias"]

    U, V = jnp.tanh(dense(p["encoder_u"], h)), jnp.tanh(dense(p["encoder_v"], h))
    for k in ("0", "1"):
        Z = jnp.tanh(dense(p["hidden"][k], h))
        h = (1 - Z) * U + Z * V
    np.testing.assert_allclose(apply(p, x), dense(p["output"], h), rtol=1e-5, atol=1e-6)


def test_pirate_net_at_init_is_the_embedding_map():
    spec = nets.PirateNet(width=16, blocks=3, fourier=nets.Fourier(1.0, 8))
    module = spec.build(2, 2, key=KEY, bounds=([0, 0], [1, 1]))
    apply, params = nets.split(module)
    x = _points(jax.random.key(6), 20, [0, 0], [1, 1])
    assert all(float(b["alpha"]) == 0.0 for b in params["blocks"].values())
    # alpha = 0: y = embed(x) W + b, a linear read-out of the Fourier features
    np.testing.assert_allclose(apply(params, x), module.embedding_map(x), rtol=1e-6, atol=1e-6)
    feats = module.embedding(x)
    out = params["output"]
    W = out["kernel"] * jnp.exp(out["log_scale"])
    np.testing.assert_allclose(apply(params, x), feats @ W + out["bias"], rtol=1e-5, atol=1e-5)
    # alpha is trainable and switches the blocks on
    g = jax.grad(lambda p: jnp.sum(apply(p, x) ** 2))(params)
    assert any(float(g["blocks"][k]["alpha"]) != 0.0 for k in g["blocks"])
    params["blocks"]["1"]["alpha"] = jnp.asarray(0.5)
    assert float(jnp.max(jnp.abs(apply(params, x) - module.embedding_map(x)))) > 1e-4


@pytest.mark.parametrize("name", SPECS)
def test_deterministic_from_key(name):
    spec = SPECS[name]
    x = _points(jax.random.key(7), 5, [0, 0], [1, 1])
    a1, p1 = nets.split(spec.build(2, 2, key=jax.random.key(42), bounds=([0, 0], [1, 1])))
    a2, p2 = nets.split(spec.build(2, 2, key=jax.random.key(42), bounds=([0, 0], [1, 1])))
    a3, p3 = nets.split(spec.build(2, 2, key=jax.random.key(43), bounds=([0, 0], [1, 1])))
    jax.tree.map(np.testing.assert_array_equal, p1, p2)
    np.testing.assert_array_equal(a1(p1, x), a2(p2, x))
    assert float(jnp.max(jnp.abs(a1(p1, x) - a3(p3, x)))) > 1e-3


def test_apply_is_pure_and_transformable():
    apply, params = nets.split(SPECS["mlp-fourier-rwf"].build(2, 3, key=KEY))
    x = _points(jax.random.key(8), 11, [0, 0], [1, 1])
    before = jax.tree.map(np.array, params)
    y = apply(params, x)
    np.testing.assert_allclose(jax.jit(apply)(params, x), y, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(apply(params, x), y)  # same inputs, same outputs
    # vmap over points (one point at a time) and over a stack of parameter sets
    np.testing.assert_allclose(jax.vmap(apply, (None, 0))(params, x), y, rtol=1e-5, atol=1e-6)
    stacked = jax.tree.map(lambda a: jnp.stack([a, 2 * a]), params)
    ys = jax.vmap(apply, (0, None))(stacked, x)
    assert ys.shape == (2, 11, 3)
    np.testing.assert_allclose(ys[0], y, rtol=1e-5, atol=1e-6)
    # grad w.r.t. params and inputs under jit
    loss = jax.jit(jax.value_and_grad(lambda p: jnp.mean(apply(p, x) ** 2)))
    value, grads = loss(params)
    assert np.isfinite(float(value)) and jax.tree.structure(grads) == jax.tree.structure(params)
    dx = jax.grad(lambda z: apply(params, z).sum())(x)
    assert dx.shape == x.shape
    # the calls above changed nothing
    jax.tree.map(np.testing.assert_array_equal, params, before)


def _nested_jvp(f, x, v, order):
    g = f
    for _ in range(order):
        g = (lambda h: lambda z: jax.jvp(h, (z,), (v,))[1])(g)
    return g(x)


@pytest.mark.parametrize("name", SPECS)
def test_fourth_order_input_derivatives_via_nested_jvp(name, x64):
    spec = dataclasses.replace(SPECS[name], periodic=nets.Periodic({1: 1.0}))
    apply, params = nets.split(spec.build(2, 2, key=KEY, bounds=([0, 0], [1, 1])))
    x = _points(jax.random.key(9), 4, [0, 0], [1, 1], jnp.float64)
    v = jnp.broadcast_to(jnp.array([0.6, -0.8]), x.shape)
    f = lambda z: apply(params, z)
    d4 = _nested_jvp(f, x, v, 4)
    assert d4.shape == (4, 2) and bool(jnp.all(jnp.isfinite(d4)))
    # agrees with reverse mode along the line x + s v (column 1, point 2)
    line = lambda s: apply(params, x[2] + s * v[2])[1]
    reverse = jax.grad(jax.grad(jax.grad(jax.grad(line))))(0.0)
    np.testing.assert_allclose(d4[2, 1], reverse, rtol=1e-9, atol=1e-9)
    # second order: jvp o jvp equals v^T H v from jax.hessian
    H = jax.hessian(lambda z: apply(params, z)[0])(x[0])
    np.testing.assert_allclose(_nested_jvp(f, x, v, 2)[0, 0], v[0] @ H @ v[0], rtol=1e-9)


def test_fourth_derivative_closed_form(x64):
    # one hidden sin layer: f = sum_j c_j sin(a_j . x + b_j), so
    # d^4 f / ds^4 along v is sum_j c_j (a_j . v)^4 sin(a_j . x + b_j)
    apply, p = nets.split(nets.MLP(width=8, depth=1, activation="sin").build(2, 1, key=KEY))
    p["hidden"]["0"]["bias"] = jnp.linspace(-1, 1, 8)
    A, b, c = p["hidden"]["0"]["kernel"], p["hidden"]["0"]["bias"], p["output"]["kernel"][:, 0]
    x = _points(jax.random.key(10), 6, [-1, -1], [1, 1], jnp.float64)
    v = jnp.broadcast_to(jnp.array([0.3, 1.1]), x.shape)
    exact = (jnp.sin(x @ A + b) * (v @ A) ** 4) @ c
    d4 = _nested_jvp(lambda z: apply(p, z)[:, 0], x, v, 4)
    np.testing.assert_allclose(d4, exact, rtol=1e-11, atol=1e-12)


def test_float64_parameters_when_x64_enabled(x64):
    apply, params = nets.split(SPECS["pirate"].build(2, 1, key=KEY, bounds=([0, 0], [1, 1])))
    assert {leaf.dtype for leaf in jax.tree.leaves(params)} == {jnp.dtype("float64")}
    assert apply(params, jnp.ones((2, 2))).dtype == jnp.float64


def test_specs_are_frozen_hashable_data():
    a = nets.MLP(64, 4, activation="tanh", fourier=nets.Fourier(1.0, 32))
    assert a == nets.MLP(width=64, depth=4, fourier=nets.Fourier(1.0, 32))
    assert hash(a) == hash(nets.MLP(width=64, depth=4, fourier=nets.Fourier(1.0, 32)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.width = 3
    assert nets.PirateNet().fourier == nets.Fourier(1.0, 64) and nets.PirateNet().rwf == nets.RWF()
    assert nets.Periodic({1: 2.0, 0: 1}).periods == ((0, 1.0), (1, 2.0))
    # build(periodic=...) adds to the spec's periods and wins on the same index
    spec = nets.MLP(width=4, depth=1, periodic=nets.Periodic({0: 1.0, 1: 5.0}))
    emb = spec.build(3, 1, key=KEY, periodic={1: 2.0}).embedding
    assert emb.periodic_index == (0, 1)
    np.testing.assert_allclose(emb.periodic.inv_period[...], [1.0, 0.5])


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: nets.MLP(activation="tanhh"), ValueError, "unknown activation 'tanhh'"),
        (lambda: nets.MLP(width=0), ValueError, "width=...) must be an integer >= 1, got 0"),
        (lambda: nets.Fourier(scale=-1.0), ValueError, "must be a positive number, got -1.0"),
        (lambda: nets.RWF(std=-0.1), ValueError, "non-negative"),
        (lambda: nets.MLP(fourier=(1.0, 8)), TypeError, "takes a Fourier(...)"),
        (lambda: nets.Periodic({0: 0.0}), ValueError, "period of input 0 must be positive"),
        (
            lambda: nets.MLP().build(2, 1, key=KEY, bounds=([0, 1], [1, 1])),
            ValueError,
            "lo=[0.0, 1.0], hi=[1.0, 1.0]",
        ),
        (lambda: nets.MLP().build(2, 1, key=KEY, bounds=([0], [1])), ValueError, "2 lower"),
        (
            lambda: nets.MLP().build(2, 1, key=KEY, periodic={2: 1.0}),
            ValueError,
            "index 2 is out of range for 2 inputs",
        ),
        (lambda: nets.MLP().build(2, 1, key=0), TypeError, "jax.random.key(0)"),
    ],
)
def test_errors_name_the_problem(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert words in str(info.value)


def test_wrong_input_width_is_reported():
    apply, params = nets.split(nets.MLP(width=4, depth=1).build(3, 1, key=KEY))
    with pytest.raises(ValueError, match=r"shape \[N, 3\], got shape \(5, 2\)"):
        apply(params, jnp.ones((5, 2)))
