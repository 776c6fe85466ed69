"""Hard-constraint output transforms: the constraint holds exactly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn import nets

KEY = jax.random.key(0)
UNIT = ([0.0, 0.0], [1.0, 1.0])


@pytest.fixture(scope="module")
def net():
    """A 2-input, 2-output network: apply(params, x[N, 2]) -> [N, 2]."""
    spec = nets.MLP(width=16, depth=2, fourier=nets.Fourier(1.0, 8))
    return nets.split(spec.build(2, 2, key=KEY, bounds=UNIT))


def _square_boundary(n):
    s = np.linspace(0.0, 1.0, n, dtype=np.float32)
    zero, one = np.zeros_like(s), np.ones_like(s)
    sides = [(zero, s), (one, s), (s, zero), (s, one)]
    return np.concatenate([np.stack(side, 1) for side in sides])


def _interior(n, seed=0):
    return np.random.default_rng(seed).uniform(0.05, 0.95, (n, 2)).astype(np.float32)


def test_box_distance_vanishes_on_walls_only():
    d = nets.box_distance([0.0, -1.0], [2.0, 1.0])
    assert float(d(np.array([[1.0, 0.0]], np.float32))[0]) == pytest.approx(1.0)  # centre
    walls = np.array([[0.0, 0.3], [2.0, -0.5], [0.7, -1.0], [1.9, 1.0]], np.float32)
    np.testing.assert_array_equal(d(walls), 0.0)
    inside = np.random.default_rng(1).uniform([0.01, -0.99], [1.99, 0.99], (100, 2))
    inside = inside.astype(np.float32)
    dist = np.asarray(d(inside))
    assert np.all(dist > 0) and np.all(dist <= 1)
    # the closed form: prod (x - lo)(hi - x) / ((hi - lo) / 2)^2
    expected = inside[:, 0] * (2 - inside[:, 0]) * (inside[:, 1] + 1) * (1 - inside[:, 1])
    np.testing.assert_allclose(dist, expected, rtol=1e-5)
    # one wall only: x = 0, normalised by the width
    d_left = nets.box_distance([0.0, -1.0], [2.0, 1.0], walls=[(0, "lo")])
    np.testing.assert_allclose(d_left(inside), inside[:, 0] / 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="dimension index in 0..1"):
        nets.box_distance([0, 0], [1, 1], walls=[2])


def test_hard_dirichlet_is_exact_on_the_boundary(net):
    apply, params = net
    g = lambda x: jnp.stack([jnp.sin(3 * x[..., 0]) + x[..., 1], jnp.cos(x[..., 1])], axis=-1)
    u = jax.jit(nets.hard_dirichlet(apply, nets.box_distance(*UNIT), g))
    xb = _square_boundary(33)
    np.testing.assert_array_equal(u(params, xb), jax.jit(g)(xb))
    # inside it is g + d N
    xi = _interior(50)
    d = np.prod(4 * xi * (1 - xi), axis=1)[:, None]
    expected = np.asarray(jax.jit(g)(xi)) + d * np.asarray(jax.jit(apply)(params, xi))
    np.testing.assert_allclose(u(params, xi), expected, rtol=1e-5, atol=1e-6)
    # and smooth: second derivatives through the transform are the product rule of
    # u_0 = g_0 + d N_0, with g_0 = sin(3x) + y and d = 16 x(1-x) y(1-y) in closed form
    z = xi[:3].astype(np.float64)
    hess = np.asarray(jax.jit(jax.vmap(jax.hessian(lambda z: u(params, z)[0])))(xi[:3]))
    n0 = lambda z: apply(params, z)[0]
    N = np.asarray(jax.jit(jax.vmap(n0))(xi[:3]))
    dN = np.asarray(jax.jit(jax.vmap(jax.grad(n0)))(xi[:3]))
    hN = np.asarray(jax.jit(jax.vmap(jax.hessian(n0)))(xi[:3]))
    x_, y_ = z[:, 0], z[:, 1]
    d = 16 * x_ * (1 - x_) * y_ * (1 - y_)
    dd = np.stack([16 * (1 - 2 * x_) * y_ * (1 - y_), 16 * x_ * (1 - x_) * (1 - 2 * y_)], 1)
    hd = np.empty((3, 2, 2))
    hd[:, 0, 0], hd[:, 1, 1] = -32 * y_ * (1 - y_), -32 * x_ * (1 - x_)
    hd[:, 0, 1] = hd[:, 1, 0] = 16 * (1 - 2 * x_) * (1 - 2 * y_)
    hg = np.zeros((3, 2, 2))
    hg[:, 0, 0] = -9 * np.sin(3 * x_)
    expected = (hg + hd * N[:, None, None] + dd[:, :, None] * dN[:, None, :]
                + dN[:, :, None] * dd[:, None, :] + d[:, None, None] * hN)
    assert hess.shape == (3, 2, 2)
    np.testing.assert_allclose(hess, expected, rtol=1e-4, atol=1e-4 * np.max(np.abs(expected)))


def test_hard_dirichlet_on_some_outputs_and_walls(net):
    apply, params = net
    # space-time (x, t) in [0, 1]^2: u(0, t) = u(1, t) = 0 on output column 1 only
    walls = nets.box_distance(*UNIT, walls=[0])
    u = jax.jit(nets.hard_dirichlet(apply, walls, 0.0, outputs=1))
    t = np.linspace(0, 1, 17, dtype=np.float32)
    xb = np.concatenate([np.stack([np.zeros_like(t), t], 1), np.stack([np.ones_like(t), t], 1)])
    ub, raw = np.asarray(u(params, xb)), np.asarray(jax.jit(apply)(params, xb))
    np.testing.assert_array_equal(ub[:, 1], 0.0)
    np.testing.assert_array_equal(ub[:, 0], raw[:, 0])
    # t = 0 is not a constrained wall with walls=[0]
    xt = np.stack([np.linspace(0.1, 0.9, 5), np.zeros(5)], 1).astype(np.float32)
    assert np.all(np.abs(np.asarray(u(params, xt))[:, 1]) > 0)


def test_hard_initial_is_exact_at_t0(net):
    apply, params = net
    u0 = lambda x: jnp.sin(jnp.pi * x[..., 0])
    u = jax.jit(nets.hard_initial(apply, u0, t_index=1, t0=0.25, outputs=[0]))
    x0 = np.stack([np.linspace(0, 1, 21), np.full(21, 0.25)], 1).astype(np.float32)
    out, raw = np.asarray(u(params, x0)), np.asarray(jax.jit(apply)(params, x0))
    np.testing.assert_array_equal(out[:, 0], jax.jit(u0)(x0))
    np.testing.assert_array_equal(out[:, 1], raw[:, 1])
    x = np.array([[0.3, 0.75]], np.float32)
    expected = np.sin(np.pi * 0.3) + 0.5 * np.asarray(jax.jit(apply)(params, x))[0, 0]
    np.testing.assert_allclose(u(params, x)[0, 0], expected, rtol=1e-5)


def test_hard_initial_with_rate_matches_value_and_time_derivative(net):
    apply, params = net
    u0 = lambda x: jnp.sin(jnp.pi * x[..., 0])
    v0 = lambda x: x[..., 0] * (1 - x[..., 0])
    u = nets.hard_initial(apply, u0, t_index=1, rate_fn=v0)
    x0 = np.stack([np.linspace(0, 1, 11), np.zeros(11)], 1).astype(np.float32)
    tangent = np.broadcast_to(np.array([0.0, 1.0], np.float32), x0.shape)
    value, u_t = jax.jit(lambda z: jax.jvp(lambda y: u(params, y), (z,), (tangent,)))(x0)
    s = x0[:, 0]
    np.testing.assert_allclose(value, np.stack([np.sin(np.pi * s)] * 2, 1), atol=1e-6)
    np.testing.assert_allclose(u_t, np.stack([s * (1 - s)] * 2, 1), atol=1e-6)


def test_hard_initial_factor_spans_zero_to_one_over_the_time_interval(net):
    # on [t0, t0 + T] the network's factor is (t - t0)/T (squared with a rate): exact at
    # t0, N itself at the end whatever T; span=1 is the plain t - t0, bit for bit
    apply, params = net
    u0 = lambda x: jnp.cos(x[..., 0])
    v0 = lambda x: x[..., 0]
    x = np.array([[0.3, 150.0], [0.7, 200.0], [0.1, 50.0]], np.float32)
    raw = np.asarray(jax.jit(apply)(params, x))[:, 0]
    s, t = x[:, 0], x[:, 1]
    u = jax.jit(nets.hard_initial(apply, u0, t_index=1, t0=50.0, span=150.0, outputs=0))
    np.testing.assert_allclose(u(params, x)[:, 0], np.cos(s) + (t - 50) / 150 * raw, rtol=1e-5)
    ur = jax.jit(nets.hard_initial(apply, u0, t_index=1, t0=50.0, span=150.0, rate_fn=v0,
                                   outputs=0))
    np.testing.assert_allclose(ur(params, x)[:, 0],
                               np.cos(s) + (t - 50) * s + ((t - 50) / 150) ** 2 * raw,
                               rtol=1e-5)
    d = nets.box_distance(np.float32([0, 50]), np.float32([1, 200]), walls=[0])
    ud = jax.jit(nets.hard_dirichlet_initial(apply, d, 0.0, u0, t_index=1, t0=50.0,
                                             span=150.0, outputs=0))
    np.testing.assert_allclose(ud(params, x)[:, 0],
                               np.cos(s) + 4 * s * (1 - s) * (t - 50) / 150 * raw, rtol=1e-5)
    xs = _interior(8)
    plain = jax.jit(nets.hard_initial(apply, u0, t_index=1, outputs=0))
    unit = jax.jit(nets.hard_initial(apply, u0, t_index=1, span=1.0, outputs=0))
    np.testing.assert_array_equal(plain(params, xs), unit(params, xs))
    with pytest.raises(ValueError, match="span must be a positive"):
        nets.hard_initial(apply, u0, t_index=1, span=0.0)


def test_hard_dirichlet_and_initial_together(net):
    apply, params = net
    # (x, t) in [0, 1]^2, walls x = 0 and x = 1: g = x (1 + t); u0 = x + sin(pi x), compatible
    g = lambda x: x[..., 0] * (1 + x[..., 1])
    u0 = lambda x: x[..., 0] + jnp.sin(jnp.pi * x[..., 0])
    d = nets.box_distance(*UNIT, walls=[0])
    u = jax.jit(nets.hard_dirichlet_initial(apply, d, g, u0, t_index=1, outputs=0))
    s = np.linspace(0, 1, 17, dtype=np.float32)
    at_t0 = np.stack([s, np.zeros_like(s)], 1)
    np.testing.assert_array_equal(u(params, at_t0)[:, 0], jax.jit(u0)(at_t0))
    walls = np.concatenate([np.stack([np.zeros_like(s), s], 1), np.stack([np.ones_like(s), s], 1)])
    np.testing.assert_allclose(u(params, walls)[:, 0], jax.jit(g)(walls), atol=1e-6)
    # inside: u0 + g - g(., 0) + d t N
    xi = _interior(20)
    raw = np.asarray(jax.jit(apply)(params, xi))[:, 0]
    x, t = xi[:, 0], xi[:, 1]
    expected = x + np.sin(np.pi * x) + x * t + 4 * x * (1 - x) * t * raw
    np.testing.assert_allclose(u(params, xi)[:, 0], expected, rtol=1e-5, atol=1e-6)


def test_transforms_compose_with_the_periodic_embedding():
    # periodic in x (period 1) and zero at t = 0: both hold exactly
    spec = nets.MLP(width=8, depth=2, periodic=nets.Periodic(harmonics=2))
    module = spec.build(2, 1, key=KEY, bounds=UNIT, periodic={0: 1.0})
    apply, params = nets.split(module)
    u = jax.jit(nets.hard_initial(apply, 0.0, t_index=1))
    x = np.stack([np.arange(16) / 16.0, np.arange(1, 17) / 32.0], 1).astype(np.float32)
    y = np.asarray(u(params, x))
    np.testing.assert_allclose(u(params, x + np.float32([1.0, 0.0])), y, atol=1e-6)
    np.testing.assert_array_equal(u(params, x * np.float32([1.0, 0.0])), 0.0)
    assert np.all(np.abs(y) > 0)


def test_transform_errors(net):
    apply, params = net
    x = np.ones((3, 2), np.float32)
    u = nets.hard_dirichlet(apply, nets.box_distance(*UNIT), 0.0, outputs=[2])
    with pytest.raises(ValueError, match="column indices in 0..1"):
        u(params, x)
    bad = nets.hard_dirichlet(apply, nets.box_distance(*UNIT), lambda x: np.ones((3, 5)))
    with pytest.raises(ValueError, match="boundary_value_fn returned shape"):
        bad(params, x)
    with pytest.raises(TypeError, match="t_index must be the column index"):
        nets.hard_initial(apply, 0.0, t_index="t")
