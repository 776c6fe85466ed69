"""Geometry: exact signed distances, measures, part names, masks, predicates, errors."""

import math

import jax
import numpy as np
import pytest

from pinn.dsl import coords, eq
from pinn.geometry import (
    Ball,
    Box,
    Difference,
    Disk,
    Ellipse,
    Interval,
    Polygon,
    Rectangle,
    SpaceTime,
    TimeInterval,
    Triangle,
    Union,
)

x, y, t = coords("x y t")

L_VERTS = [(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def brute_sdf(points, boundary, inside):
    """Signed distance from a dense sampling of the boundary (numpy)."""
    d = np.sqrt(((points[:, None, :] - boundary[None, :, :]) ** 2).sum(-1)).min(1)
    return np.where(inside, -d, d)


def polyline(verts, per_edge=2000):
    v = np.asarray(verts, float)
    w = np.roll(v, -1, axis=0)
    s = np.linspace(0, 1, per_edge, endpoint=False)[:, None]
    return np.concatenate([a + s * (b - a) for a, b in zip(v, w, strict=True)])


def test_primitive_sdf_is_exact():
    rng = np.random.default_rng(0)
    p = rng.uniform(-3, 3, (120, 2))
    th = np.linspace(0, 2 * np.pi, 40_000, endpoint=False)

    # ellipse: exact distance (bisection) vs a dense boundary, both axis orders
    for a, b in ((2.0, 0.7), (0.6, 1.5)):
        e = Ellipse((0.3, -0.2), (a, b))
        bnd = np.stack([0.3 + a * np.cos(th), -0.2 + b * np.sin(th)], 1)
        inside = ((p[:, 0] - 0.3) / a) ** 2 + ((p[:, 1] + 0.2) / b) ** 2 < 1
        err = np.abs(np.asarray(e.sdf(p)) - brute_sdf(p, bnd, inside)).max()
        assert err < 1e-4, err  # dense sampling: spacing 3e-4, distance error ~1e-8
        # points on the axes (the y = 0 / x = 0 special cases)
        q = np.array([[0.3, -0.2], [0.3 + 0.5 * a, -0.2], [0.3, -0.2 + 0.3 * b],
                      [0.3 + 3 * a, -0.2], [0.3, -0.2 - 2 * b]])
        inside_q = ((q[:, 0] - 0.3) / a) ** 2 + ((q[:, 1] + 0.2) / b) ** 2 < 1
        err_q = np.abs(np.asarray(e.sdf(q)) - brute_sdf(q, bnd, inside_q)).max()
        assert err_q < 1e-4, err_q

    # polygon (L, clockwise) and rectangle against dense polylines
    poly = Polygon(L_VERTS[::-1])
    inside = ~((p[:, 0] > 1) & (p[:, 1] > 1)) & (p >= 0).all(1) & (p <= 2).all(1)
    err = np.abs(np.asarray(poly.sdf(p)) - brute_sdf(p, polyline(L_VERTS), inside)).max()
    assert err < 1e-3, err
    rect = Rectangle((-1, 0), (2, 1))
    inside = (p[:, 0] > -1) & (p[:, 0] < 2) & (p[:, 1] > 0) & (p[:, 1] < 1)
    rv = [(-1, 0), (2, 0), (2, 1), (-1, 1)]
    err = np.abs(np.asarray(rect.sdf(p)) - brute_sdf(p, polyline(rv), inside)).max()
    assert err < 1e-3, err

    # disk, ball, box, interval: closed forms
    np.testing.assert_allclose(Disk((1, 1), 0.5).sdf(p), np.hypot(*(p - 1).T) - 0.5, atol=1e-12)
    p3 = rng.uniform(-2, 2, (200, 3))
    np.testing.assert_allclose(Ball((0, 0, 1), 1.5).sdf(p3),
                               np.linalg.norm(p3 - [0, 0, 1], axis=1) - 1.5, atol=1e-12)
    box = Box((0, 0, 0), (1, 2, 3))
    q = np.maximum(np.abs(p3 - [0.5, 1, 1.5]) - [0.5, 1, 1.5], 0)
    outside = np.linalg.norm(q, axis=1)
    inner = np.minimum(np.max(np.abs(p3 - [0.5, 1, 1.5]) - [0.5, 1, 1.5], axis=1), 0)
    np.testing.assert_allclose(box.sdf(p3), outside + inner, atol=1e-12)
    s = np.linspace(-1, 3, 9)[:, None]
    np.testing.assert_allclose(Interval(0, 2).sdf(s)[:, ], np.abs(s[:, 0] - 1) - 1, atol=1e-12)


def test_measures_and_bounds():
    assert Rectangle((0, 0), (2, 3)).measure == 6
    assert Box((0, 0, 0), (1, 2, 3)).measure == 6
    assert Interval(-1, 2).measure == 3
    assert math.isclose(Disk((0, 0), 2).measure, 4 * math.pi)
    assert math.isclose(Ball((0, 0, 0), 1).measure, 4 * math.pi / 3)
    assert math.isclose(Polygon(L_VERTS).measure, 3.0)
    assert math.isclose(Polygon(L_VERTS[::-1]).measure, 3.0)
    assert math.isclose(Triangle((0, 0), (2, 0), (0, 1)).measure, 1.0)
    e = Ellipse((0, 0), (2, 1))
    assert math.isclose(e.measure, 2 * math.pi)
    th = np.linspace(0, 2 * np.pi, 400_001)
    arc = np.trapezoid(np.hypot(2 * np.sin(th), np.cos(th)), th)
    assert math.isclose(e.perimeter, arc, rel_tol=1e-9)
    assert math.isclose(e.boundary_measure, arc, rel_tol=1e-9)
    assert math.isclose(Rectangle((0, 0), (2, 3)).boundary_measure, 10)
    assert math.isclose(Box((0, 0, 0), (1, 2, 3)).boundary_measure, 22)
    assert Rectangle((0, 0), (2, 3)).part_measures == {"left": 3, "right": 3, "bottom": 2,
                                                       "top": 2}
    lo, hi = (Rectangle((0, 0), (2, 2)) | Disk((3, 1), 1.5)).bounds
    np.testing.assert_allclose(lo, [0, -0.5])
    np.testing.assert_allclose(hi, [4.5, 2.5])
    lo, hi = (Rectangle((0, 0), (2, 2)) & Disk((2, 1), 1.5)).bounds
    np.testing.assert_allclose(lo, [0.5, 0])
    np.testing.assert_allclose(hi, [2, 2])
    assert (Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), 0.1)).measure is None
    st = Disk((0, 0), 1) * TimeInterval(0, 2)
    assert isinstance(st, SpaceTime) and st.dim == 3
    assert math.isclose(st.measure, 2 * math.pi)
    np.testing.assert_allclose(st.bounds[0], [-1, -1, 0])


def test_contains_and_csg_sdf_sign():
    shape = Rectangle((0, 0), (2, 2)) - Rectangle((1, 1), (2, 2))
    poly = Polygon(L_VERTS)
    rng = np.random.default_rng(1)
    p = rng.uniform(-0.5, 2.5, (2000, 2))
    inside = np.asarray(poly.contains(p))
    np.testing.assert_array_equal(np.asarray(shape.contains(p)), inside)
    # CSG sdf: right sign, and a lower bound of the exact distance
    d_csg, d_exact = np.asarray(shape.sdf(p)), np.asarray(poly.sdf(p))
    assert np.all(np.sign(d_csg) == np.sign(d_exact))
    assert np.all(np.abs(d_csg) <= np.abs(d_exact) + 1e-12)
    # contains works under jit
    f = jax.jit(lambda q: shape.contains(q))
    np.testing.assert_array_equal(np.asarray(f(p)), inside)
    st = Disk((0, 0), 1) * TimeInterval(0, 1)
    np.testing.assert_array_equal(np.asarray(st.contains([[0, 0, 0.5], [0, 0, 1.5],
                                                          [2, 0, 0.5]])), [True, False, False])


def test_part_names():
    assert Interval(0, 1).boundary_parts == ("left", "right")
    assert Rectangle((0, 0), (1, 1)).boundary_parts == ("left", "right", "bottom", "top")
    assert Box((0, 0, 0), (1, 1, 1)).boundary_parts == (
        "left", "right", "bottom", "top", "front", "back")
    assert Disk((0, 0), 1).boundary_parts == ("circle",)
    assert Ball((0, 0, 0), 1).boundary_parts == ("sphere",)
    assert Ellipse((0, 0), (1, 2)).boundary_parts == ("ellipse",)
    assert Triangle((0, 0), (1, 0), (0, 1)).boundary_parts == ("side0", "side1", "side2")
    assert Polygon(L_VERTS).boundary_parts == tuple(f"side{i}" for i in range(6))
    holed = Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), 0.2)
    assert isinstance(holed, Difference)
    assert holed.boundary_parts == ("left", "right", "bottom", "top", "circle")
    annulus = Disk((0, 0), 1) - Disk((0, 0), 0.5)
    assert annulus.boundary_parts == ("piece0.circle", "piece1.circle")
    named = Disk((0, 0), 1) - Disk((0, 0), 0.5).rename({"circle": "hole"})
    assert named.boundary_parts == ("circle", "hole")
    three = (Rectangle((0, 0), (1, 1)) | Rectangle((1, 0), (2, 1))) - Disk((1, 0.5), 0.1)
    assert isinstance(three.a, Union)
    assert three.boundary_parts[:2] == ("piece0.left", "piece0.right")
    assert three.boundary_parts[-1] == "circle"
    walls = Rectangle((0, 0), (1, 1)).rename({"left": "walls", "right": "walls"})
    assert walls.boundary_parts == ("walls", "bottom", "top")
    assert walls.part_measures["walls"] == 2
    st = Rectangle((0, 0), (1, 1)) * TimeInterval(0, 1)
    assert st.boundary_parts == ("left", "right", "bottom", "top")


def test_boundary_masks_parts_and_predicates():
    rect = Rectangle((0, 0), (2, 1))
    pts = np.array([[0, 0.5], [2, 0.2], [1, 0], [1, 1], [0, 0], [1, 0.5], [3, 0.5]], float)
    m = {name: np.asarray(rect.boundary_mask(pts, name)) for name in rect.boundary_parts}
    np.testing.assert_array_equal(m["left"], [1, 0, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(m["right"], [0, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(m["bottom"], [0, 0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(m["top"], [0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(rect.boundary_mask(pts), [1, 1, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(rect.boundary_mask(pts, ("left", "top")),
                                  [1, 0, 0, 1, 1, 0, 0])
    # predicates: == within tol, and only boundary points count
    np.testing.assert_array_equal(rect.boundary_mask(pts, eq(x, 0)), [1, 0, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(rect.boundary_mask(pts + [1e-9, 0], eq(x, 0)),
                                  [1, 0, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(rect.boundary_mask(pts, x**2 + y**2 < 1.1),
                                  [1, 0, 1, 0, 1, 0, 0])
    # other coordinate names
    r, s = coords("r s")
    np.testing.assert_array_equal(rect.boundary_mask(pts, eq(r, 0), coords="r s"),
                                  m["left"])
    # CSG: a hole's circle; the rectangle part excludes nothing here
    holed = Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), 0.25)
    q = np.array([[0.75, 0.5], [0.5, 0.5], [0, 0.3], [0.5, 0.25], [0.9, 0.9]])
    np.testing.assert_array_equal(holed.boundary_mask(q, "circle"), [1, 0, 0, 1, 0])
    np.testing.assert_array_equal(holed.boundary_mask(q), [1, 0, 1, 1, 0])
    # a disk cutting the rectangle's edge removes that stretch of the edge
    bite = Rectangle((0, 0), (1, 1)) - Disk((1, 0.5), 0.25)
    e = np.array([[1, 0.1], [1, 0.5], [1, 0.9], [0.75, 0.5]])
    np.testing.assert_array_equal(bite.boundary_mask(e, "right"), [1, 0, 1, 0])
    np.testing.assert_array_equal(bite.boundary_mask(e, "circle"), [0, 0, 0, 1])
    # where the hole cuts the edge, the point is on both parts (closed masks)
    j = np.array([[1.0, 0.75], [1.0, 0.25]])
    np.testing.assert_array_equal(bite.boundary_mask(j, "right"), [1, 1])
    np.testing.assert_array_equal(bite.boundary_mask(j, "circle"), [1, 1])
    np.testing.assert_array_equal(bite.boundary_part(np.concatenate([j, e])),
                                  [1, 1, 1, -1, 1, 4])
    # a wall shared inside a union is not boundary; its end points are
    side = Rectangle((0, 0), (1, 1)) | Rectangle((1, 0), (2, 1))
    np.testing.assert_array_equal(side.boundary_mask([[1, 0.5], [1, 0], [1, 1], [0.5, 0]]),
                                  [0, 1, 1, 1])
    # space-time: spatial parts for t in range, predicates may use t
    st = Rectangle((0, 0), (1, 1)) * TimeInterval(0, 1)
    w = np.array([[0, 0.5, 0.5], [0, 0.5, 2.0], [0.5, 0.5, 0.5], [0, 0.5, 0.9]])
    np.testing.assert_array_equal(st.boundary_mask(w, "left"), [1, 0, 0, 1])
    np.testing.assert_array_equal(st.boundary_mask(w, t < 0.7), [1, 0, 0, 0])
    # under jit
    f = jax.jit(lambda p: holed.boundary_mask(p, "circle"))
    np.testing.assert_array_equal(f(q), [1, 0, 0, 1, 0])


def test_errors_name_the_problem():
    rect = Rectangle((0, 0), (1, 1))
    with pytest.raises(ValueError, match=r"unknown boundary part.*'lft'.*valid names.*'left'"):
        rect.boundary_mask(np.zeros((1, 2)), "lft")
    with pytest.raises(ValueError, match="unknown boundary part"):
        rect.sample_boundary(jax.random.key(0), 4, on=("left", "circle"))
    with pytest.raises(ValueError, match="coordinate"):
        rect.boundary_mask(np.zeros((1, 2)), eq(t, 0))
    with pytest.raises(ValueError, match="not a condition"):
        rect.boundary_mask(np.zeros((1, 2)), x + 1)
    with pytest.raises(ValueError, match="lo < hi"):
        Rectangle((0, 0), (1, 0))
    with pytest.raises(ValueError, match="use Box"):
        Rectangle((0, 0, 0), (1, 1, 1))
    with pytest.raises(ValueError, match="positive"):
        Disk((0, 0), -1)
    with pytest.raises(ValueError, match="use Ball"):
        Disk((0, 0, 0), 1)
    with pytest.raises(ValueError, match="intersect"):
        Polygon([(0, 0), (1, 1), (1, 0), (0, 1)])  # a bow tie
    with pytest.raises(ValueError, match="simple|zero area"):
        Polygon([(0, 0), (1, 0), (2, 0)])
    with pytest.raises(ValueError, match="2-D shape with a 3-D"):
        rect | Box((0, 0, 0), (1, 1, 1))
    with pytest.raises(TypeError, match="both operands must be shapes"):
        rect - 1
    with pytest.raises(ValueError, match="t0 < t1"):
        TimeInterval(1, 0)
    with pytest.raises(ValueError, match="shape"):
        rect.boundary_mask(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="positive Python int"):
        rect.sample_interior(jax.random.key(0), 0)
    with pytest.raises(ValueError, match="cannot rename unknown"):
        rect.rename({"circle": "hole"})
    ell = Rectangle((0, 0), (2, 2)) - Rectangle((1, 1), (2, 2))
    with pytest.raises(ValueError, match="no measurable size"):
        ell.sample_boundary(jax.random.key(0), 8, on="piece1.right")


def test_periodic_shift():
    np.testing.assert_allclose(Rectangle((0, 0), (2, 1)).periodic_shift(("left", "right")),
                               [2, 0])
    np.testing.assert_allclose(Box((0, 0, 0), (1, 2, 3)).periodic_shift(("back", "front")),
                               [0, 0, -3])
    np.testing.assert_allclose(Interval(0, 2).periodic_shift(("left", "right")), [2])
    para = Polygon([(0, 0), (2, 0), (3, 1), (1, 1)])
    np.testing.assert_allclose(para.periodic_shift(("side3", "side1")), [2, 0])
    st = Rectangle((0, 0), (2, 1)) * TimeInterval(0, 1)
    np.testing.assert_allclose(st.periodic_shift(("bottom", "top")), [0, 1, 0])
    with pytest.raises(ValueError, match="not opposite"):
        Rectangle((0, 0), (2, 1)).periodic_shift(("left", "top"))
    with pytest.raises(ValueError, match="periodic"):
        Disk((0, 0), 1).periodic_shift(("circle", "circle"))
