"""Sampling: points in and on their shape, outward normals, weighting, samplers, RAD, jit."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn.dsl import coords, eq, logical_and
from pinn.geometry import (
    RAD,
    Ball,
    Box,
    Disk,
    Ellipse,
    Grid,
    Halton,
    Interval,
    LatinHypercube,
    Polygon,
    Rectangle,
    Sobol,
    TimeInterval,
    Triangle,
    rad_select,
)

x, y, t = coords("x y t")
KEY = jax.random.key(0)

HOLED = Rectangle((0, 0), (2, 1)) - Disk((1, 0.5), 0.25)  # a rectangle with a hole
L_SHAPE = Rectangle((0, 0), (2, 2)) - Rectangle((1, 1), (2, 2))
BLOB = ((Disk((0, 0), 1) | Rectangle((0, -0.5), (2, 0.5)))
        - Triangle((1.2, -0.2), (1.8, -0.2), (1.5, 0.3))) & Disk((0.5, 0), 1.45)
# one of each kind of boundary: flat faces, sphere, ellipse, a polygon given
# clockwise, and CSG (a union, minus a triangle, intersected with a disk)
SHAPES = {
    "box": Box((0, 0, 0), (1, 2, 0.5)),
    "ball": Ball((0, 0, 1), 0.5),
    "ellipse": Ellipse((0, 0), (2, 0.5)),
    "polygon_cw": Polygon([(0, 0), (0, 2), (1, 2), (1, 1), (2, 1), (2, 0)]),
    "blob": BLOB,
}


def holed_sdf(p):
    """numpy: the CSG signed distance of HOLED, max(rectangle, -disk)."""
    p = np.asarray(p, np.float64)
    q = np.abs(p - [1, 0.5]) - [1, 0.5]
    rect = np.linalg.norm(np.maximum(q, 0), axis=1) + np.minimum(q.max(1), 0)
    return np.maximum(rect, 0.25 - np.linalg.norm(p - [1, 0.5], axis=1))


def l_sdf(p):
    """numpy: the CSG signed distance of L_SHAPE (squares as boxes)."""
    def box(p, lo, hi):
        c, h = (np.add(lo, hi)) / 2, (np.subtract(hi, lo)) / 2
        q = np.abs(p - c) - h
        return np.linalg.norm(np.maximum(q, 0), axis=1) + np.minimum(q.max(1), 0)
    return np.maximum(box(p, (0, 0), (2, 2)), -box(p, (1, 1), (2, 2)))


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _check(shape, key, n=400, h=1e-6):
    """Everything the per-shape test looks at, in one jitted function (one compile)."""
    k1, k2 = jax.random.split(key)
    xi = shape.sample_interior(k1, n)
    b = shape.sample_boundary(k2, n)
    p = b.points
    eye = h * jnp.eye(shape.dim)
    # one sdf call for all points: interior, boundary, and finite-difference stencils
    d = shape.sdf(jnp.concatenate([xi, p] + [p + e for e in eye] + [p - e for e in eye]))
    d = d.reshape(2 + 2 * shape.dim, n)
    grad = (d[2: 2 + shape.dim] - d[2 + shape.dim:]).T / (2 * h)
    parts = shape.boundary_part(jnp.concatenate([xi, p])).reshape(2, n)
    return {"xi": xi, "sdf_i": d[0], "part_i": parts[0], "p": p, "n": b.normals,
            "part": b.part, "sdf_b": d[1], "grad": grad, "part_b": parts[1]}


@pytest.fixture(scope="module")
def checked():
    with jax.enable_x64(True):
        return {name: jax.tree.map(np.asarray, jax.jit(lambda k, s=s: _check(s, k))(
            jax.random.fold_in(KEY, i))) for i, (name, s) in enumerate(SHAPES.items())}


@pytest.mark.parametrize("name", list(SHAPES))
def test_points_inside_and_on_boundary_with_outward_normals(name, checked):
    shape, r = SHAPES[name], checked[name]
    lo, hi = shape.bounds
    scale = float(np.max(hi - lo))
    assert r["xi"].shape == (400, shape.dim)
    assert np.all(r["sdf_i"] <= 1e-12 * scale)  # interior points inside
    p, n = r["p"], r["n"]
    assert p.shape == n.shape == (400, shape.dim)
    assert np.all(np.abs(r["sdf_b"]) < 1e-6 * scale)  # boundary points on the boundary
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-12)  # unit normals
    # outward: the normal is the gradient of the signed distance (finite differences)
    np.testing.assert_allclose(r["grad"], n, atol=1e-5)
    # each point lies on the part it was drawn from (none of them at a corner)
    np.testing.assert_array_equal(r["part_b"], r["part"])
    assert np.all(r["part_i"][r["sdf_i"] < -1e-3] == -1)


def run_jit(f):
    """Run ``f(key)`` under one jit (one compile for all the samples a test needs)."""
    return jax.tree.map(np.asarray, jax.jit(f)(KEY))


def test_monte_carlo_areas_of_csg_shapes_within_one_percent():
    # L-shape (area 3) and a disk with a hole (area 3/4 pi), and sampling by area
    ring = Disk((0, 0), 1) - Disk((0, 0), 0.5)
    n = 30_000
    out = run_jit(lambda k: {
        "L": L_SHAPE.estimate_measure(k, 200_000),
        "ring": ring.estimate_measure(k, 200_000),
        "pts": ring.sample_interior(k, n),
    })
    assert abs(out["L"] - 3.0) / 3.0 < 0.01, out["L"]
    assert abs(out["ring"] - 0.75 * math.pi) / (0.75 * math.pi) < 0.01, out["ring"]
    r = np.linalg.norm(out["pts"], axis=1)
    assert np.all((r >= 0.5 - 1e-12) & (r <= 1 + 1e-12))
    assert abs(np.mean(r < 0.75) - (0.75**2 - 0.25) / 0.75) < 4 * math.sqrt(0.25 / n)


def test_boundary_length_fractions_of_csg_shapes():
    n = 20_000
    sigma = lambda p: 4 * math.sqrt(p * (1 - p) / n)  # noqa: E731
    lens_union = Disk((0, 0), 1) | Disk((1, 0), 1)
    side = Rectangle((0, 0), (1, 1)) | Rectangle((1, 0), (2, 1))
    over = Rectangle((0, 0), (2, 1)) | Rectangle((1, 0), (3, 1))
    out = run_jit(lambda k: {
        "holed": HOLED.sample_boundary(k, n).part,
        "L": L_SHAPE.sample_boundary(k, n).part,
        "lens": lens_union.estimate_boundary_measure(k, 200_000),
        "side": side.estimate_boundary_measure(k, 100_000),
        "over": over.estimate_boundary_measure(k, 100_000),
        "ellipse": SHAPES["ellipse"].sample_boundary(k, n).points,
    })
    # rectangle with a hole: the circle has 2 pi r / (6 + 2 pi r) of the length
    circ = 2 * math.pi * 0.25
    p_circle = circ / (6 + circ)
    part = out["holed"]
    assert abs(np.mean(part == HOLED.boundary_parts.index("circle")) - p_circle) < sigma(p_circle)
    assert abs(np.mean(part == HOLED.boundary_parts.index("left")) - 1 / (6 + circ)) < sigma(0.13)
    # L-shape: total length 8, the notch's two sides have 1 each, the removed square's
    # outer sides nothing
    names = np.array(L_SHAPE.boundary_parts)[out["L"]]
    assert abs(np.mean(names == "piece1.left") - 1 / 8) < sigma(1 / 8)
    assert abs(np.mean(names == "piece0.left") - 2 / 8) < sigma(2 / 8)
    assert not np.any(np.isin(names, ["piece1.right", "piece1.top"]))
    # union of two unit disks 1 apart: each keeps an arc of 240 degrees
    assert abs(out["lens"] - 8 * math.pi / 3) / (8 * math.pi / 3) < 0.01
    # coincident walls: a shared internal wall is dropped, a shared outer wall counted once
    assert abs(out["side"] - 6) < 0.06
    assert abs(out["over"] - 8) < 0.08
    # ellipse: uniform in arc length (fraction of the arc with x > 1.5, by quadrature)
    th = np.linspace(0, 2 * np.pi, 200_001)
    speed = np.hypot(2 * np.sin(th), 0.5 * np.cos(th))
    frac = np.trapezoid(speed * (2 * np.cos(th) > 1.5), th) / np.trapezoid(speed, th)
    assert abs(np.mean(out["ellipse"][:, 0] > 1.5) - frac) < sigma(frac)


def test_part_and_predicate_sampling():
    rect = Rectangle((0, 0), (2, 1))
    out = run_jit(lambda k: {
        "left": rect.sample_boundary(k, 500, on="left"),
        "two": rect.sample_boundary(k, 1000, on=("left", "top")),
        "wall": rect.sample_boundary(k, 500, on=eq(x, 0)),
        "corner": rect.sample_boundary(k, 500, on=x**2 + y**2 < 0.25),
        "hole": HOLED.sample_boundary(k, 300, on="circle"),
        "ends": Interval(-1, 2).sample_boundary(k, 400),
        "segment": Interval(-1, 2).sample_interior(k, 400),
    })
    np.testing.assert_allclose(out["left"].points[:, 0], 0.0)
    np.testing.assert_allclose(out["left"].normals, np.tile([-1.0, 0.0], (500, 1)))
    names = np.array(rect.boundary_parts)[out["two"].part]
    assert set(names) == {"left", "top"}
    assert abs(np.mean(names == "top") - 2 / 3) < 4 * math.sqrt(2 / 9 / 1000)
    # a predicate picks out the wall x == 0 ...
    np.testing.assert_allclose(out["wall"].points[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(out["wall"].normals, np.tile([-1.0, 0.0], (500, 1)))
    # ... or a region of the boundary: two stretches of length 0.5
    p = out["corner"].points
    assert np.all(np.sum(p**2, 1) < 0.25) and np.all((p[:, 0] == 0) | (p[:, 1] == 0))
    assert abs(np.mean(p[:, 0] == 0) - 0.5) < 4 * math.sqrt(0.25 / 500)
    # the hole of a CSG shape, with normals pointing into the hole (out of the domain)
    p, n = out["hole"].points, out["hole"].normals
    np.testing.assert_allclose(np.linalg.norm(p - [1, 0.5], axis=1), 0.25, atol=1e-12)
    np.testing.assert_allclose(n, -(p - [1, 0.5]) / 0.25, atol=1e-12)
    # an interval's boundary: its two end points, equally likely, normals -1 and +1
    e = out["ends"]
    assert set(e.points[:, 0]) == {-1.0, 2.0} and abs(np.mean(e.part) - 0.5) < 0.1
    np.testing.assert_array_equal(e.normals[:, 0], np.where(e.part == 0, -1.0, 1.0))
    assert np.all((out["segment"] >= -1) & (out["segment"] <= 2))


def test_space_time_sampling():
    st = HOLED * TimeInterval(0.5, 2.0)
    box = Rectangle((0, 0), (2, 1)) * TimeInterval(0.5, 2.0)
    out = run_jit(lambda k: {
        "interior": box.sample_interior(k, 2000),
        "boundary": st.sample_boundary(k, 1000),
        "early_left": box.sample_boundary(k, 300, on=logical_and(eq(x, 0), t < 1)),
    })
    xi = out["interior"]
    assert xi.shape == (2000, 3)
    assert np.all((xi[:, :2] > 0) & (xi[:, :2] < [2, 1]))
    assert xi[:, 2].min() >= 0.5 and xi[:, 2].max() <= 2.0
    assert abs(xi[:, 2].mean() - 1.25) < 0.05
    p = out["boundary"].points
    assert p.shape == (1000, 3) and out["boundary"].normals.shape == (1000, 2)
    assert np.all(np.abs(holed_sdf(p[:, :2])) < 1e-9)
    np.testing.assert_array_equal(np.asarray(st.boundary_part(p)), out["boundary"].part)
    p = out["early_left"].points
    assert np.all(p[:, 0] == 0) and np.all((p[:, 2] < 1) & (p[:, 2] >= 0.5))
    assert math.isclose(box.part_measures["left"], 1.5)
    assert math.isclose(box.boundary_measure, 9.0)
    assert st.part_measures["left"] is None and st.boundary_measure is None


def test_samplers_are_stratified_reproducible_and_inside():
    box = Rectangle((0, 0), (1, 1))
    samplers = (Sobol(), Halton(), LatinHypercube())
    f = jax.jit(lambda k: {
        "strat": [box.sample_interior(k, 256, s) for s in samplers],
        "holed": (HOLED.sample_interior(k, 128, Sobol()),
                  HOLED.sample_boundary(k, 128, Sobol()).points),
    })
    out = jax.tree.map(np.asarray, f(KEY))
    # Sobol (random digital shift) and LHS: one point in each of the 256 slabs per axis
    for u in (out["strat"][0], out["strat"][2]):
        for j in range(2):
            np.testing.assert_array_equal(np.sort(np.floor(u[:, j] * 256)), np.arange(256))
    # Halton (random shift modulo 1): base 2 in x, base 3 in y; the first 2^8 (3^5) points
    # have one point in each 1/256 (1/243) slab
    h = out["strat"][1]
    np.testing.assert_array_equal(np.sort(np.floor(h[:, 0] * 256)), np.arange(256))
    np.testing.assert_array_equal(np.sort(np.floor(h[:243, 1] * 243)), np.arange(243))
    # reproducible from the key; another key, other points
    again, other = f(KEY), f(jax.random.key(1))
    for a, b, c in zip(out["strat"], again["strat"], other["strat"], strict=True):
        np.testing.assert_array_equal(a, np.asarray(b))
        assert not np.allclose(a, np.asarray(c))
    # quasi-random points of a CSG shape stay inside / on the boundary
    xi, xb = out["holed"]
    assert np.all(holed_sdf(xi) <= 1e-12)
    assert np.all(np.abs(holed_sdf(xb)) < 1e-9)
    # grids: the full lattice when n fits (20 x 10 on a 2 x 1 rectangle), inside otherwise
    g = np.asarray(Rectangle((0, 0), (2, 1)).sample_interior(KEY, 200, Grid()))
    np.testing.assert_allclose(np.unique(g[:, 0]), 0.05 + 0.1 * np.arange(20), atol=1e-12)
    np.testing.assert_allclose(np.unique(g[:, 1]), 0.05 + 0.1 * np.arange(10), atol=1e-12)
    gh = np.asarray(HOLED.sample_interior(KEY, 300, Grid()))
    assert gh.shape == (300, 2) and np.all(holed_sdf(gh) <= 0)
    assert len(np.unique(gh, axis=0)) == 300
    gb = HOLED.sample_boundary(KEY, 100, Grid())
    assert np.all(np.abs(holed_sdf(gb.points)) < 1e-9)
    # 2-D boundary grids are equally spaced in arc length
    gr = np.asarray(Rectangle((0, 0), (2, 1)).sample_boundary(KEY, 60, Grid()).points)
    bottom = np.sort(gr[gr[:, 1] == 0][:, 0])
    np.testing.assert_allclose(np.diff(bottom), 0.1, atol=1e-12)


def test_sampling_under_jit_and_scan_is_reproducible():
    def step(key, _):
        key, k1, k2 = jax.random.split(key, 3)
        xi = L_SHAPE.sample_interior(k1, 64, Sobol())
        b = L_SHAPE.sample_boundary(k2, 32)
        return key, (xi, b.points, b.normals)

    run = jax.jit(lambda key: jax.lax.scan(step, key, None, length=3)[1])
    xi, pb, nb = run(KEY)
    xi2, pb2, _ = run(KEY)
    np.testing.assert_array_equal(np.asarray(xi), np.asarray(xi2))
    np.testing.assert_array_equal(np.asarray(pb), np.asarray(pb2))
    assert not np.allclose(xi[0], xi[1])  # resampled every step
    assert np.all(l_sdf(xi.reshape(-1, 2)) <= 1e-12)
    assert np.all(np.abs(l_sdf(pb.reshape(-1, 2))) < 1e-9)


def test_float32_boundary_points():
    with jax.enable_x64(False):
        b = HOLED.sample_boundary(KEY, 256)
        assert b.points.dtype == jnp.float32
        assert np.all(np.abs(holed_sdf(b.points)) < 1e-6 * 2)
        np.testing.assert_allclose(np.linalg.norm(b.normals, axis=1), 1.0, atol=1e-6)


def test_rad_concentrates_points_where_the_residual_peaks():
    peak = np.array([0.7, 0.3])

    def run(key):
        cand = Rectangle((0, 0), (1, 1)).sample_interior(key, 20_000)
        resid = jnp.exp(-jnp.sum((cand - peak) ** 2, 1) / (2 * 0.05**2))
        keys = jax.random.split(key, 3)
        return {
            "peaked": rad_select(keys[0], cand, resid, 200, k=1.0, c=0.0),
            "floor": RAD(k=1.0, c=1.0).select(keys[1], cand, resid, 200),
            "flat": rad_select(keys[2], cand, resid, 200, k=0.0, c=1.0),
        }

    f = jax.jit(run)
    out = jax.tree.map(np.asarray, f(KEY))
    near = {k: np.mean(np.linalg.norm(v - peak, axis=1) < 0.1) for k, v in out.items()}
    # c = 0: density ∝ |r|; 86% of the residual lies within 0.1 of the peak (3% of the area)
    assert len(np.unique(out["peaked"], axis=0)) == 200  # without replacement
    assert near["peaked"] > 0.75
    np.testing.assert_allclose(out["peaked"].mean(0), peak, atol=0.02)
    # c = 1: a uniform floor carrying half of the mass
    assert 0.3 < near["floor"] < 0.6
    # k = 0: uniform
    assert near["flat"] < 0.1
    np.testing.assert_allclose(out["flat"].mean(0), [0.5, 0.5], atol=0.08)
    # reproducible from the key
    np.testing.assert_array_equal(np.asarray(f(KEY)["peaked"]), out["peaked"])
    assert RAD(pool=5000).pool_size(100) == 5000 and RAD().pool_size(100) == 100_000
    assert RAD().pool_size(20_000) == 200_000
    with pytest.raises(ValueError, match="pool"):
        RAD(pool=10).pool_size(100)
    with pytest.raises(ValueError, match="k must be"):
        RAD(k=-1.0)
