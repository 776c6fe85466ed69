"""Hard-constraint output transforms: the constraint holds exactly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn import nets

KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def net():
    """A 2-input, 2-output network: apply(params, x[N, 2]) -> [N, 2]."""
    spec = nets.MLP(width=16, depth=2, fourier=nets.Fourier(1.0, 8))
    return nets.split(spec.build(2, 2, key=KEY, bounds=([0, 0], [1, 1])))


def _square_boundary(n):
    s = jnp.linspace(0.0, 1.0, n)
    zero, one = jnp.zeros(n), jnp.ones(n)
    return jnp.concatenate(
        [
            jnp.stack([zero, s], 1),
            jnp.stack([one, s], 1),
            jnp.stack([s, zero], 1),
            jnp.stack([s, one], 1),
        ]
    )


def test_box_distance_vanishes_on_walls_only():
    d = nets.box_distance([0.0, -1.0], [2.0, 1.0])
    assert float(d(jnp.array([[1.0, 0.0]]))[0]) == pytest.approx(1.0)  # 1 at the centre
    walls = jnp.array([[0.0, 0.3], [2.0, -0.5], [0.7, -1.0], [1.9, 1.0]])
    np.testing.assert_array_equal(d(walls), 0.0)
    inside = jax.random.uniform(
        KEY, (100, 2), minval=jnp.array([0.01, -0.99]), maxval=jnp.array([1.99, 0.99])
    )
    assert bool(jnp.all(d(inside) > 0)) and bool(jnp.all(d(inside) <= 1))
    # one wall only: x = 0, normalised by the width
    d_left = nets.box_distance([0.0, -1.0], [2.0, 1.0], walls=[(0, "lo")])
    np.testing.assert_allclose(d_left(inside), inside[:, 0] / 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="dimension index in 0..1"):
        nets.box_distance([0, 0], [1, 1], walls=[2])


def test_hard_dirichlet_is_exact_on_the_boundary(net):
    apply, params = net
    g = lambda x: jnp.stack([jnp.sin(3 * x[:, 0]) + x[:, 1], jnp.cos(x[:, 1])], axis=1)
    u = nets.hard_dirichlet(apply, nets.box_distance([0, 0], [1, 1]), g)
    xb = _square_boundary(33)
    np.testing.assert_array_equal(u(params, xb), g(xb))
    # inside it is g + d N, and it is a smooth function that jit/grad go through
    xi = jax.random.uniform(KEY, (50, 2), minval=0.05, maxval=0.95)
    d = nets.box_distance([0, 0], [1, 1])(xi)[:, None]
    np.testing.assert_allclose(
        jax.jit(u)(params, xi), g(xi) + d * apply(params, xi), rtol=1e-5, atol=1e-6
    )
    hess = jax.jit(jax.vmap(jax.hessian(lambda z: u(params, z[None])[0, 0])))(xi[:3])
    assert hess.shape == (3, 2, 2) and bool(jnp.all(jnp.isfinite(hess)))


def test_hard_dirichlet_on_some_outputs_and_walls(net):
    apply, params = net
    # space-time (x, t) in [0, 1]^2: u(0, t) = u(1, t) = 0 on column 1 only
    u = nets.hard_dirichlet(apply, nets.box_distance([0, 0], [1, 1], walls=[0]), 0.0, outputs=1)
    t = jnp.linspace(0, 1, 17)
    xb = jnp.concatenate([jnp.stack([jnp.zeros(17), t], 1), jnp.stack([jnp.ones(17), t], 1)])
    np.testing.assert_array_equal(u(params, xb)[:, 1], 0.0)
    np.testing.assert_array_equal(u(params, xb)[:, 0], apply(params, xb)[:, 0])
    # t = 0 is not constrained by walls=[0]
    xt = jnp.stack([jnp.linspace(0.1, 0.9, 5), jnp.zeros(5)], 1)
    assert bool(jnp.all(jnp.abs(u(params, xt)[:, 1]) > 0))


def test_hard_initial_is_exact_at_t0(net):
    apply, params = net
    u0 = lambda x: jnp.sin(jnp.pi * x[:, 0])
    u = nets.hard_initial(apply, u0, t_index=1, t0=0.25, outputs=[0])
    x0 = jnp.stack([jnp.linspace(0, 1, 21), jnp.full(21, 0.25)], 1)
    np.testing.assert_array_equal(u(params, x0)[:, 0], u0(x0))
    np.testing.assert_array_equal(u(params, x0)[:, 1], apply(params, x0)[:, 1])
    x = jnp.array([[0.3, 0.75]])
    np.testing.assert_allclose(u(params, x)[:, 0], u0(x) + 0.5 * apply(params, x)[:, 0], rtol=1e-6)


def test_hard_initial_with_rate_matches_value_and_time_derivative(net):
    apply, params = net
    u0 = lambda x: jnp.sin(jnp.pi * x[:, 0])
    v0 = lambda x: x[:, 0] * (1 - x[:, 0])
    u = nets.hard_initial(apply, u0, t_index=1, rate_fn=v0)
    x0 = jnp.stack([jnp.linspace(0, 1, 11), jnp.zeros(11)], 1)
    np.testing.assert_array_equal(u(params, x0), jnp.stack([u0(x0), u0(x0)], 1))
    tangent = jnp.broadcast_to(jnp.array([0.0, 1.0]), x0.shape)
    u_t = jax.jvp(lambda z: u(params, z), (x0,), (tangent,))[1]
    np.testing.assert_allclose(u_t, jnp.stack([v0(x0), v0(x0)], 1), atol=1e-6)


def test_transforms_compose_and_keep_the_periodic_embedding():
    # periodic in x (period 1), zero at t = 0: both constraints hold exactly
    spec = nets.MLP(width=8, depth=2, periodic=nets.Periodic(harmonics=2))
    apply, params = nets.split(
        spec.build(2, 1, key=KEY, bounds=([0, 0], [1, 1]), periodic={0: 1.0})
    )
    u = nets.hard_initial(apply, 0.0, t_index=1)
    x = jnp.stack([jnp.arange(16) / 16.0, jnp.arange(16) / 32.0], 1)
    np.testing.assert_allclose(u(params, x + jnp.array([1.0, 0.0])), u(params, x), atol=1e-6)
    np.testing.assert_array_equal(u(params, x.at[:, 1].set(0.0)), 0.0)


def test_transform_errors(net):
    apply, params = net
    u = nets.hard_dirichlet(apply, nets.box_distance([0, 0], [1, 1]), 0.0, outputs=[2])
    with pytest.raises(ValueError, match="column indices in 0..1"):
        u(params, jnp.ones((3, 2)))
    bad = nets.hard_dirichlet(apply, nets.box_distance([0, 0], [1, 1]), lambda x: jnp.ones((3, 5)))
    with pytest.raises(ValueError, match="boundary_value_fn returned shape"):
        bad(params, jnp.ones((3, 2)))
    with pytest.raises(TypeError, match="t_index must be the column index"):
        nets.hard_initial(apply, 0.0, t_index="t")
