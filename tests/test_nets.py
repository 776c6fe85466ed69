"""Networks: shapes, embeddings, architecture formulas, the pure split, derivatives.

Compilation dominates the cost on small CPUs, so the networks are built once per
module (all with 2 inputs, 2 outputs, input 1 periodic with period 1) and the
checks run through ``jax.jit``.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pinn import nets

KEY = jax.random.key(0)
BOUNDS = ([0.0, 0.0], [1.0, 1.0])
PERIODIC = {1: 1.0}

SPECS = {
    "mlp": nets.MLP(width=16, depth=2),
    "mlp-fourier-rwf": nets.MLP(
        width=16,
        depth=2,
        activation="sin",
        fourier=nets.Fourier(1.5, 8),
        rwf=nets.RWF(1.0, 0.1),
        periodic=nets.Periodic(harmonics=2),
    ),
    "modified": nets.ModifiedMLP(width=16, depth=2, activation="gelu", fourier=nets.Fourier(1, 8)),
    "pirate": nets.PirateNet(width=16, blocks=2, fourier=nets.Fourier(1.0, 8)),
}


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def models():
    """name -> (module, apply, params, jitted apply)."""
    out = {}
    for name, spec in SPECS.items():
        module = spec.build(2, 2, key=KEY, bounds=BOUNDS, periodic=PERIODIC)
        apply, params = nets.split(module)
        out[name] = (module, apply, params, jax.jit(apply))
    return out


def _points(seed, n, lo, hi, dtype=np.float32):
    """Uniform points in a box, as numpy (test-side arithmetic stays in numpy: no compiles)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    return (lo + (hi - lo) * np.random.default_rng(seed).random((n, len(lo)))).astype(dtype)


def _max_abs(a, b=0.0):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


X = _points(1, 8, *BOUNDS)


@pytest.mark.parametrize("name", SPECS)
def test_output_shape_every_network(models, name):
    module, apply, params, fast = models[name]
    y = np.asarray(fast(params, X))
    assert y.shape == (8, 2) and y.dtype == np.float32
    assert apply.d_in == module.d_in == 2 and apply.d_out == module.d_out == 2
    # the input Jacobian (what every PDE residual is built from) is the derivative of the
    # output: central differences in float32, h = 1e-3 (error O(h^2 |f_xxx|) + O(eps |f| / h))
    jac = np.asarray(jax.jit(jax.vmap(jax.jacfwd(lambda z: apply(params, z))))(X))
    assert jac.shape == (8, 2, 2) and np.max(np.abs(jac)) > 1e-2  # [point, output, input]
    h = np.float32(1e-3)
    for i in range(2):
        e = np.zeros(2, np.float32)
        e[i] = h
        fd = (np.asarray(fast(params, X + e)) - np.asarray(fast(params, X - e))) / (2 * h)
        assert _max_abs(fd, jac[:, :, i]) < 5e-3 * np.max(np.abs(jac)), (name, i)  # <= 7e-4


def test_dimensions_and_batch_shapes():
    d_in, d_out = 3, 4
    apply, params = nets.split(nets.MLP(width=16, depth=2).build(d_in, d_out, key=KEY))
    x = np.linspace(-1, 1, 6 * d_in, dtype=np.float32).reshape(6, d_in)
    y = apply(params, x)
    assert y.shape == (6, d_out)
    assert apply(params, x.reshape(2, 3, d_in)).shape == (2, 3, d_out)  # any leading shape
    np.testing.assert_allclose(apply(params, x[4]), y[4], rtol=1e-6, atol=1e-6)  # one point


@pytest.mark.parametrize("activation", sorted(nets.ACTIVATIONS))
def test_every_activation(activation):
    spec = nets.MLP(width=16, depth=2, activation=activation)
    apply, p = nets.split(spec.build(2, 2, key=KEY, periodic=PERIODIC))
    act = lambda a: np.asarray(nets.ACTIVATIONS[activation](a))
    k = {name: np.asarray(q["kernel"]) for name, q in [*p["hidden"].items(), ("out", p["output"])]}
    h = np.stack([X[:, 0], np.cos(2 * np.pi * X[:, 1]), np.sin(2 * np.pi * X[:, 1])], 1)
    expected = act(act(h @ k["0"]) @ k["1"]) @ k["out"]  # biases start at zero
    np.testing.assert_allclose(apply(p, X), expected, rtol=1e-5, atol=1e-5)


def test_normalization_maps_bounds_to_unit_box():
    lo, hi = np.array([0.0, -2.0, 10.0]), np.array([1.0, 6.0, 10.5])
    module = nets.MLP(width=4, depth=1).build(3, 1, key=KEY, bounds=(lo, hi))
    corners = np.asarray([lo, hi, (lo + hi) / 2, [lo[0], hi[1], lo[2]]], np.float32)
    z = module.embedding(corners)
    np.testing.assert_allclose(z, [[-1, -1, -1], [1, 1, 1], [0, 0, 0], [-1, 1, -1]], atol=1e-6)
    # normalize=False: the raw coordinates
    raw = nets.MLP(width=4, depth=1, normalize=False).build(3, 1, key=KEY, bounds=(lo, hi))
    np.testing.assert_array_equal(raw.embedding(corners), corners)
    # the normalisation is a constant, not a trained parameter
    _, params = nets.split(module)
    assert set(params) == {"hidden", "output"}


@pytest.mark.parametrize("name", SPECS)
def test_periodic_embedding_is_exactly_periodic_float32(models, name):
    # period 1 in input 1 and dyadic points: x + k P is exact in float32, so f(x + kP) == f(x)
    _, _, params, fast = models[name]
    x = np.stack([np.linspace(0, 1, 8), np.arange(-3, 5) / 8.0], axis=1).astype(np.float32)
    y = fast(params, x)
    for k in (1, -1, 3):
        shift = np.array([0.0, k], np.float32)
        np.testing.assert_allclose(fast(params, x + shift), y, rtol=0, atol=1e-6)
    # the other input is not periodic with that period
    assert _max_abs(fast(params, x + np.array([1.0, 0.0], np.float32)), y) > 1e-2


def test_trainable_period_stays_periodic_and_has_its_gradient(x64):
    # input 1 starts with period 1; its frequency scale is a trained parameter: the network
    # is periodic with whatever period it holds, and the gradient along it is the true one
    spec = nets.MLP(width=8, depth=2, periodic=nets.Periodic({1: 1.0}, harmonics=3,
                                                             trainable=[1]))
    module = spec.build(2, 1, key=KEY, bounds=([0, 0], [1, 1]))
    apply, params = nets.split(module)
    assert params["embedding"]["periodic"]["frequency_scale"].shape == (1,)
    x = _points(3, 20, [0.0, 0.0], [1.0, 1.0], np.float64)
    params["embedding"]["periodic"]["frequency_scale"] = jnp.asarray([0.8])  # period 1.25
    y = apply(params, x)
    np.testing.assert_allclose(apply(params, x + np.array([0.0, 1.25])), y, atol=1e-10)
    assert _max_abs(apply(params, x + np.array([0.0, 1.0])), y) > 1e-3
    np.testing.assert_allclose(module.embedding.periodic.periods(), [1.0])  # module unchanged

    def f(s):
        p = {**params, "embedding": {"periodic": {"frequency_scale": s}}}
        return apply(p, x).sum()

    g = jax.grad(f)(jnp.asarray([0.8]))[0]
    h = 1e-6
    fd = (f(jnp.asarray([0.8 + h])) - f(jnp.asarray([0.8 - h]))) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    # the spec round-trips as data; a period cannot be both trained and a hard condition's
    assert nets.Periodic.from_data(spec.periodic.to_data()) == spec.periodic
    with pytest.raises(ValueError, match="hard periodic condition"):
        spec.build(2, 1, key=KEY, periodic={1: 1.0})
    with pytest.raises(ValueError, match="trainable"):
        nets.Periodic({0: 1.0}, trainable=[1])


def test_periodic_embedding_any_period_float64(x64):
    period = 2 * np.pi
    spec = nets.MLP(
        width=8,
        depth=2,
        fourier=nets.Fourier(2.0, 4),
        rwf=nets.RWF(),
        periodic=nets.Periodic(harmonics=2),
    )
    module = spec.build(2, 1, key=KEY, bounds=([0, 0], [1, period]), periodic={1: period})
    # x64 on: every parameter and buffer is float64
    assert {a.dtype for a in jax.tree.leaves(nnx.state(module))} == {np.dtype("float64")}
    apply, params = nets.split(module)
    x = _points(3, 50, [0.0, 0.0], [1.0, period], np.float64)
    fast = jax.jit(apply)
    y = fast(params, x)
    for k in (1, -2):
        np.testing.assert_allclose(fast(params, x + np.array([0.0, k * period])), y, atol=1e-10)
    # harmonics=2: features cos(2πk y/P), sin(2πk y/P), k = 1, 2, after the normalised x
    emb = module.embedding
    assert emb.periodic_index == (1,) and emb.plain_index == (0,)
    a = 2 * np.pi * x[:, 1:] / period
    h = np.concatenate([2 * x[:, :1] - 1, np.cos(a), np.cos(2 * a), np.sin(a), np.sin(2 * a)], 1)
    B = np.asarray(emb.fourier.B[...])
    expected = np.concatenate([np.cos(h @ B), np.sin(h @ B)], 1)
    np.testing.assert_allclose(emb(x), expected, atol=1e-12)


def test_fourier_features_formula_and_not_trained(models):
    module, apply, params, fast = models["modified"]
    B = np.asarray(module.embedding.fourier.B[...])
    assert B.shape == (3, 8)  # x normalised (1) + cos/sin of the periodic input (2)
    x = X
    h = np.stack([2 * x[:, 0] - 1, np.cos(2 * np.pi * x[:, 1]), np.sin(2 * np.pi * x[:, 1])], 1)
    expected = np.concatenate([np.cos(h @ B), np.sin(h @ B)], 1)
    np.testing.assert_allclose(module.embedding(X), expected, atol=1e-5)
    # only dense layers are parameters: 4 x (16*16 + 16) + (16*2 + 2)
    assert nets.count_params(params) == 1122
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(params)]
    assert not any("fourier" in p or "embedding" in p for p in paths)
    grads = jax.jit(jax.grad(lambda p: jnp.sum(apply(p, X) ** 2)))(params)
    assert jax.tree.structure(grads) == jax.tree.structure(params)
    # a gradient step leaves B where it was
    stepped = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    np.testing.assert_array_equal(apply.module(stepped).embedding.fourier.B[...], B)


def test_fourier_scale_is_the_standard_deviation():
    emb = nets.FourierFeatures(3, 4000, 2.5, rngs=nnx.Rngs(params=KEY))
    assert abs(np.std(np.asarray(emb.B[...])) / 2.5 - 1) < 0.02 and emb.d_out == 8000


def test_rwf_factorisation(models):
    layer = nets.Dense(256, 256, rwf=(0.5, 0.1), rngs=nnx.Rngs(params=KEY))
    s = np.asarray(layer.log_scale[...])
    assert abs(s.mean() - 0.5) < 0.02 and abs(s.std() - 0.1) < 0.015
    W = np.asarray(layer.weight())
    np.testing.assert_allclose(W, np.asarray(layer.kernel[...]) * np.exp(s)[None, :], rtol=1e-6)
    # W starts as a Glorot draw: std sqrt(2 / (fan_in + fan_out))
    assert abs(W.std() / np.sqrt(2 / 512) - 1) < 0.03
    # s is trained: it receives a gradient
    _, apply, params, _ = models["mlp-fourier-rwf"]
    g = jax.jit(jax.grad(lambda p: jnp.sum(apply(p, X) ** 2)))(params)
    assert np.linalg.norm(np.asarray(g["hidden"]["0"]["log_scale"])) > 0


def test_modified_mlp_gating_formula(models):
    module, apply, p, fast = models["modified"]
    h = np.asarray(module.embedding(X))
    gelu = lambda a: np.asarray(jax.nn.gelu(a))
    dense = lambda q, a: a @ np.asarray(q["kernel"]) + np.asarray(q["bias"])
    U, V = gelu(dense(p["encoder_u"], h)), gelu(dense(p["encoder_v"], h))
    for k in ("0", "1"):
        Z = gelu(dense(p["hidden"][k], h))
        h = (1 - Z) * U + Z * V
    np.testing.assert_allclose(fast(p, X), dense(p["output"], h), rtol=1e-5, atol=1e-5)


def test_pirate_net_at_init_is_the_embedding_map(models):
    module, apply, params, fast = models["pirate"]
    assert all(float(b["alpha"]) == 0.0 for b in params["blocks"].values())
    # alpha = 0: y = embed(x) W + b, a linear read-out of the Fourier features
    np.testing.assert_allclose(fast(params, X), module.embedding_map(X), rtol=1e-6, atol=1e-6)
    out = params["output"]
    W = np.asarray(out["kernel"]) * np.exp(np.asarray(out["log_scale"]))
    expected = np.asarray(module.embedding(X)) @ W + np.asarray(out["bias"])
    np.testing.assert_allclose(fast(params, X), expected, rtol=1e-5, atol=1e-5)
    # alpha is trainable and switches the blocks on
    g = jax.jit(jax.grad(lambda p: jnp.sum(apply(p, X) ** 2)))(params)
    assert all(float(g["blocks"][k]["alpha"]) != 0.0 for k in g["blocks"])
    changed = jax.tree.map(lambda a: a, params)
    changed["blocks"]["1"]["alpha"] = np.float32(0.5)
    assert _max_abs(fast(changed, X), fast(params, X)) > 1e-4


@pytest.mark.parametrize("name", SPECS)
def test_deterministic_from_key(name):
    spec = SPECS[name]
    state = lambda k: nnx.state(spec.build(2, 2, key=jax.random.key(k), bounds=BOUNDS))
    s1, s2, s3 = state(42), state(42), state(43)  # parameters and fixed buffers
    jax.tree.map(np.testing.assert_array_equal, s1, s2)
    assert max(jax.tree.leaves(jax.tree.map(_max_abs, s1, s3))) > 1e-3


def test_apply_is_pure_and_transformable(models):
    _, apply, params, fast = models["mlp-fourier-rwf"]
    before = jax.tree.map(np.array, params)
    y = fast(params, X)
    np.testing.assert_array_equal(fast(params, X), y)  # same inputs, same outputs
    np.testing.assert_allclose(apply(params, X), y, rtol=1e-5, atol=1e-6)  # eager == jit
    # vmap over points (one point at a time) and over a stack of parameter sets
    np.testing.assert_allclose(jax.jit(jax.vmap(apply, (None, 0)))(params, X), y, atol=1e-6)
    stacked = jax.tree.map(lambda a: np.stack([a, 2 * np.asarray(a)]), params)
    ys = jax.jit(jax.vmap(apply, (0, None)))(stacked, X)
    assert ys.shape == (2, 8, 2)
    np.testing.assert_allclose(ys[0], y, rtol=1e-5, atol=1e-6)
    # grad w.r.t. params under jit: the value is mean(y^2) of the outputs above, and the
    # gradient is its derivative: <grad, d> against a central difference along a random d
    loss = lambda p: jnp.mean(apply(p, X) ** 2)
    value, grads = jax.jit(jax.value_and_grad(loss))(params)
    assert jax.tree.structure(grads) == jax.tree.structure(params)
    assert float(value) == pytest.approx(np.mean(np.asarray(y, np.float64) ** 2), rel=1e-5)
    leaves, tree = jax.tree.flatten(params)
    rng = np.random.default_rng(7)
    d = jax.tree.unflatten(tree, [rng.standard_normal(np.shape(a)).astype(np.float32)
                                  for a in leaves])
    eps = 1e-3
    shifted = lambda s: jax.tree.map(lambda a, b: np.asarray(a) + s * b, params, d)
    fd = (float(jax.jit(loss)(shifted(eps))) - float(jax.jit(loss)(shifted(-eps)))) / (2 * eps)
    dot = sum(float(np.vdot(np.asarray(g, np.float64), b))
              for g, b in zip(jax.tree.leaves(grads), jax.tree.leaves(d), strict=True))
    assert abs(dot) > 1e-2 and fd == pytest.approx(dot, rel=5e-3)  # measured <= 7e-4
    # the calls above changed nothing
    jax.tree.map(np.testing.assert_array_equal, params, before)


def _third_and_fourth(apply, params):
    """(x, v) -> (D_v^3 f(x), D_v^4 f(x)) by nested forward mode (jax.jvp four times)."""

    def derivs(z, v):
        d = lambda z: apply(params, z)
        for _ in range(3):
            d = (lambda g: lambda z: jax.jvp(g, (z,), (v,))[1])(d)
        return jax.jvp(d, (z,), (v,))

    return jax.jit(derivs)


@pytest.mark.parametrize("name", SPECS)
def test_fourth_order_input_derivatives_via_nested_jvp(models, name):
    _, apply, params, _ = models[name]
    v = np.broadcast_to(np.array([0.6, -0.8], np.float32), X.shape)
    derivs = _third_and_fourth(apply, params)
    d3, d4 = (np.asarray(a) for a in derivs(X, v))
    assert d4.shape == (8, 2)
    # the 4th derivative is the derivative of the 3rd: central difference, h = 5e-4
    # (NaN, or an identically zero d4, fails this comparison)
    h = 5e-4
    fd = (np.asarray(derivs(X + h * v, v)[0]) - np.asarray(derivs(X - h * v, v)[0])) / (2 * h)
    assert _max_abs(fd, d4) < 1e-2 * np.max(np.abs(d4))
    # D_v^k is homogeneous of degree k in v: along 2v, 8x the 3rd and 16x the 4th
    d3_2, d4_2 = (np.asarray(a) for a in derivs(X, 2 * v))
    np.testing.assert_allclose(d3_2, 8 * d3, rtol=1e-5, atol=1e-6 * np.max(np.abs(d3)))
    np.testing.assert_allclose(d4_2, 16 * d4, rtol=1e-5, atol=1e-6 * np.max(np.abs(d4)))


def test_fourth_derivative_closed_form_and_reverse_mode(x64):
    # one hidden sin layer: f = sum_j c_j sin(a_j . x + b_j), so
    # D_v^4 f = sum_j c_j (a_j . v)^4 sin(a_j . x + b_j)
    apply, p = nets.split(nets.MLP(width=8, depth=1, activation="sin").build(2, 1, key=KEY))
    p["hidden"]["0"]["bias"] = np.linspace(-1, 1, 8)
    A, b, c = (
        np.asarray(a)
        for a in (p["hidden"]["0"]["kernel"], p["hidden"]["0"]["bias"], p["output"]["kernel"][:, 0])
    )
    x = _points(10, 6, [-1, -1], [1, 1], np.float64)
    v = np.broadcast_to(np.array([0.3, 1.1]), x.shape)
    exact = (np.sin(x @ A + b) * (v @ A) ** 4) @ c
    _, d4 = _third_and_fourth(apply, p)(x, v)
    np.testing.assert_allclose(d4[:, 0], exact, rtol=1e-11, atol=1e-12)
    # reverse mode along the line x + s v agrees
    line = lambda s: apply(p, x[2] + s * v[2])[0]
    reverse = jax.jit(jax.grad(jax.grad(jax.grad(jax.grad(line)))))(0.0)
    np.testing.assert_allclose(reverse, exact[2], rtol=1e-11)
    assert d4.dtype == jnp.float64 and p["output"]["kernel"].dtype == jnp.float64


def test_explicit_dtype_wins_over_x64(x64):
    layer = nets.Dense(2, 2, rwf=(1.0, 0.1), dtype=jnp.float32, rngs=nnx.Rngs(params=KEY))
    assert {a.dtype for a in jax.tree.leaves(nnx.state(layer))} == {np.dtype("float32")}


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
    assert emb.periodic_index == (0, 1) and emb.plain_index == (2,)
    np.testing.assert_allclose(emb.periodic.inv_period[...], [1.0, 0.5])


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: nets.MLP(activation="tanhh"), ValueError, "unknown activation 'tanhh'"),
        (lambda: nets.MLP(width=0), ValueError, "width=...) must be an integer >= 1, got 0"),
        (lambda: nets.Fourier(scale=-1.0), ValueError,
         "must be a positive number or a tuple of them, got -1.0"),
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


def test_wrong_input_width_is_reported(models):
    _, apply, params, _ = models["mlp"]
    with pytest.raises(ValueError, match=r"shape \[N, 2\], got shape \(5, 3\)"):
        apply(params, np.ones((5, 3), np.float32))
