"""Approximate distance functions (pinn.geometry.adf): hard Dirichlet conditions on any
shape, CSG domains with holes included (issue 19)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn import config
from pinn.geometry import Ball, Box, Disk, Ellipse, Polygon, Rectangle
from pinn.geometry.adf import boundary_distance

KEY = jax.random.PRNGKey(0)

SHAPES = {
    "disk_with_hole": Disk((0.0, 0.0), 1.0) - Disk((0.3, 0.1), 0.3),
    "square_with_hole": Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), 0.2),
    "union": Rectangle((0, 0), (2, 1)) | Disk((2.0, 0.5), 0.5),
    "l_shape": Polygon([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]),
    "ellipse": Ellipse((0.5, 0), (2, 1)),
    "hollow_ball": Ball((0, 0, 0), 1.0) - Box((-0.2, -0.2, -0.2), (0.2, 0.2, 0.2)),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "hollow_ball"
                                  else n for n in sorted(SHAPES)])
def test_distance_is_zero_on_the_boundary_and_positive_elsewhere(name):
    shape = SHAPES[name]
    phi = jax.jit(boundary_distance(shape))
    b = shape.sample_boundary(KEY, 1000)
    assert np.abs(np.asarray(phi(b.points))).max() < 1e-6
    inside = np.asarray(phi(shape.sample_interior(KEY, 1000)))
    assert inside.min() > 0
    lo, hi = shape.bounds
    u = np.asarray(jax.random.uniform(KEY, (3000, shape.dim), minval=lo - 0.3, maxval=hi + 0.3))
    outside = u[~np.asarray(shape.contains(u, 1e-3))]
    assert len(outside) > 100 and np.asarray(phi(outside)).min() > 0
    # distance-like: a step delta inward from the boundary gives phi ~ delta (times the scale)
    delta = 1e-3 * float(np.max(hi - lo))
    x = np.asarray(b.points, np.float64) - delta * np.asarray(b.normals, np.float64)
    scale = 2.0 / float(np.max(hi - lo))
    ok = np.asarray(shape.sdf(x)) < -0.9 * delta  # away from corners and seams
    ratio = np.asarray(phi(jnp.asarray(x[ok]))) / (delta * scale)
    assert ok.mean() > 0.8 and np.median(ratio) == pytest.approx(1.0, abs=0.05)


def test_distance_of_chosen_parts_vanishes_on_those_only():
    shape = (Disk((0.0, 0.0), 1.0) - Disk((0.3, 0.1), 0.3).rename({"circle": "hole"})
             ).rename({"circle": "rim"})
    phi = boundary_distance(shape, "hole")
    hole = shape.sample_boundary(KEY, 500, on="hole")
    rim = shape.sample_boundary(KEY, 500, on="rim")
    assert np.abs(np.asarray(phi(hole.points))).max() < 1e-6
    assert np.asarray(phi(rim.points)).min() > 0.1
    with pytest.raises(ValueError, match="unknown boundary part"):
        boundary_distance(shape, "nothing")


@pytest.mark.slow
def test_second_derivatives_are_finite_inside():
    shape = SHAPES["square_with_hole"]
    phi = boundary_distance(shape)
    x = shape.sample_interior(KEY, 200)
    lap = jax.jit(jax.vmap(lambda z: jnp.trace(jax.hessian(lambda y: phi(y[None])[0])(z))))(x)
    assert np.all(np.isfinite(np.asarray(lap)))


HOLE = """\
fields: [u]
domain:
  difference: [{disk: {center: [0, 0], radius: 1}}, {disk: {center: [0.3, 0.1], radius: 0.3}}]
  parts: {piece0.circle: rim, piece1.circle: hole}
equations: {poisson: "-laplacian(u) = 1"}
conditions:
  walls: {dirichlet: {u: "1 + x*y - sin(2*y)"}, on: ON, hard: true}
"""


@pytest.mark.parametrize("on", ["boundary", "hole"])
def test_hard_dirichlet_on_a_disk_with_a_hole_equals_the_boundary_values(tmp_path, on):
    from pinn.network import hard_transforms

    f = tmp_path / "hole.yaml"
    f.write_text(HOLE.replace("ON", on))
    problem = config.load(str(f)).problem

    def apply(params, x):  # a stand-in network, far from the boundary values
        return (jnp.cos(x @ params) + 2.0)[:, None]

    u = hard_transforms(problem, apply)
    params = jnp.asarray([1.3, -0.7])
    parts = ("rim", "hole") if on == "boundary" else ("hole",)
    b = problem.space.sample_boundary(KEY, 2000, on=parts)
    x = np.asarray(b.points, np.float64)
    g = 1 + x[:, 0] * x[:, 1] - np.sin(2 * x[:, 1])
    np.testing.assert_allclose(np.asarray(u(params, b.points))[:, 0], g, atol=1e-6)
    if on == "hole":  # the rim is free
        r = problem.space.sample_boundary(KEY, 200, on="rim")
        y = np.asarray(r.points, np.float64)
        gy = 1 + y[:, 0] * y[:, 1] - np.sin(2 * y[:, 1])
        assert np.abs(np.asarray(u(params, r.points))[:, 0] - gy).min() > 1e-2
