"""Simple polygons (any orientation) and triangles.

Boundary parts: ``side0 .. side{N-1}``, where ``side{i}`` is the edge from
vertex ``i`` to vertex ``i + 1`` (and the last from vertex ``N-1`` back to
vertex 0), numbered in the order the vertices were given, clockwise or
counter-clockwise.  For ``Triangle(a, b, c)``: ``side0 = ab``, ``side1 = bc``,
``side2 = ca``.  The signed distance is exact; the interior is sampled through
an ear-clipping triangulation (computed once, at construction).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from pinn.data import register
from pinn.geometry._core import Piece
from pinn.geometry.base import Shape
from pinn.geometry.parametric import plain

__all__ = ["Polygon", "Triangle"]


def _cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _segments_touch(p, q, r, s, eps) -> bool:
    """Do the closed segments pq and rs intersect (including touching)?"""
    d1, d2 = _cross(q - p, r - p), _cross(q - p, s - p)
    d3, d4 = _cross(s - r, p - r), _cross(s - r, q - r)
    if ((d1 > eps and d2 < -eps) or (d1 < -eps and d2 > eps)) and (
        (d3 > eps and d4 < -eps) or (d3 < -eps and d4 > eps)
    ):
        return True

    def on_seg(a, b, c, d):  # c on segment ab (given collinear within d)
        return abs(d) <= eps and min(a[0], b[0]) - 1e-12 <= c[0] <= max(a[0], b[0]) + 1e-12 and \
            min(a[1], b[1]) - 1e-12 <= c[1] <= max(a[1], b[1]) + 1e-12

    return on_seg(p, q, r, d1) or on_seg(p, q, s, d2) or on_seg(r, s, p, d3) or on_seg(r, s, q, d4)


def _check_simple(v: np.ndarray, scale: float) -> None:
    n = len(v)
    eps = 1e-12 * scale * scale
    for i in range(n):
        a, b = v[i], v[(i + 1) % n]
        if np.allclose(a, b, rtol=0, atol=1e-12 * scale):
            raise ValueError(f"Polygon: vertices {i} and {(i + 1) % n} coincide ({a.tolist()}); "
                             "remove the duplicate")
    for i in range(n):
        p, q = v[i], v[(i + 1) % n]
        nxt = v[(i + 2) % n]
        if abs(_cross(q - p, nxt - q)) <= eps and np.dot(q - p, nxt - q) < 0:
            raise ValueError(f"Polygon: edges side{i} and side{(i + 1) % n} fold back on each "
                             "other; the polygon must be simple")
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:
                continue  # adjacent through vertex 0
            r, s = v[j], v[(j + 1) % n]
            if _segments_touch(p, q, r, s, eps):
                raise ValueError(
                    f"Polygon: edges side{i} and side{j} intersect; the vertices must describe a "
                    "simple polygon (no self-intersections), in order along the boundary"
                )


def _triangulate(v: np.ndarray, scale: float) -> np.ndarray:
    """Ear clipping of a counter-clockwise simple polygon -> triangles [T, 3, 2]."""
    eps = 1e-12 * scale * scale
    idx = list(range(len(v)))
    tris = []

    def inside_closed(p, a, b, c):
        return _cross(b - a, p - a) >= -eps and _cross(c - b, p - b) >= -eps and \
            _cross(a - c, p - c) >= -eps

    while len(idx) > 3:
        k_found = None
        for k in range(len(idx)):
            i0, i1, i2 = idx[k - 1], idx[k], idx[(k + 1) % len(idx)]
            a, b, c = v[i0], v[i1], v[i2]
            if _cross(b - a, c - b) <= eps:
                continue
            if any(inside_closed(v[j], a, b, c) for j in idx if j not in (i0, i1, i2)):
                continue
            tris.append((a, b, c))
            k_found = k
            break
        if k_found is None:  # only collinear (zero-area) ears left at some vertex
            for k in range(len(idx)):
                a, b, c = v[idx[k - 1]], v[idx[k]], v[idx[(k + 1) % len(idx)]]
                if abs(_cross(b - a, c - b)) <= eps:
                    k_found = k
                    break
            if k_found is None:  # pragma: no cover - excluded by the simplicity check
                raise ValueError("Polygon: triangulation failed; is the polygon simple?")
        idx.pop(k_found)
    a, b, c = (v[i] for i in idx)
    if _cross(b - a, c - b) > eps:
        tris.append((a, b, c))
    return np.asarray(tris, dtype=np.float64)


@register("domain")
@dataclass(frozen=True)
class Polygon(Shape):
    """A simple polygon given by its vertices in order (either orientation)."""

    vertices: tuple[tuple[float, float], ...]

    def __post_init__(self):
        v = np.asarray(plain(self.vertices, "Polygon: vertices"), dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 2 or v.shape[0] < 3:
            raise ValueError(f"Polygon needs at least 3 vertices [[x, y], ...], got "
                             f"{self.vertices!r}")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"Polygon vertices must be finite, got {self.vertices!r}")
        scale = float(np.max(v.max(0) - v.min(0)))
        if scale <= 0:
            raise ValueError(f"Polygon vertices are all the same point: {self.vertices!r}")
        _check_simple(v, scale)
        area2 = float(np.sum(_cross(v, np.roll(v, -1, axis=0))))
        if abs(area2) <= 1e-12 * scale * scale:
            raise ValueError(f"Polygon has zero area: {self.vertices!r}")
        object.__setattr__(self, "vertices", tuple(tuple(map(float, p)) for p in v))
        ccw = v if area2 > 0 else v[::-1]
        object.__setattr__(self, "_ccw", area2 > 0)
        object.__setattr__(self, "_tris", _triangulate(ccw, scale))

    # -- geometry -----------------------------------------------------------
    @property
    def _v(self) -> np.ndarray:
        return np.asarray(self.vertices, np.float64)

    @property
    def dim(self) -> int:
        """2: a polygon is a plane shape."""
        return 2

    @property
    def bounds(self):
        """The bounding box ``(lo[2], hi[2])`` of the vertices."""
        return self._v.min(0), self._v.max(0)

    @property
    def measure(self) -> float:
        """The area (the shoelace formula)."""
        v = self._v
        return abs(float(np.sum(_cross(v, np.roll(v, -1, axis=0))))) / 2

    @property
    def _edge_normals(self) -> np.ndarray:
        v = self._v
        e = np.roll(v, -1, axis=0) - v
        n = np.stack([e[:, 1], -e[:, 0]], -1) / np.linalg.norm(e, axis=1)[:, None]
        return n if self._ccw else -n

    def _edge_distances(self, x):
        v = self._v
        w = np.roll(v, -1, axis=0)
        e = w - v
        pv = x[..., None, :] - v
        t = jnp.clip(jnp.sum(pv * e, -1) / np.sum(e * e, -1), 0.0, 1.0)
        d = pv - t[..., None] * e
        return jnp.sqrt(jnp.sum(d * d, -1))  # [..., E]

    def _sdf(self, x):
        v = self._v
        w = np.roll(v, -1, axis=0)
        dist = jnp.min(self._edge_distances(x), axis=-1)
        px, py = x[..., None, 0], x[..., None, 1]
        straddle = (v[:, 1] > py) != (w[:, 1] > py)
        dy = np.where(w[:, 1] != v[:, 1], w[:, 1] - v[:, 1], 1.0)
        xcross = v[:, 0] + (py - v[:, 1]) * (w[:, 0] - v[:, 0]) / dy
        crossings = jnp.sum(straddle & (px < xcross), axis=-1)
        return jnp.where(crossings % 2 == 1, -dist, dist)

    def _outward(self, x):
        i = jnp.argmin(self._edge_distances(x), axis=-1)
        return jnp.asarray(self._edge_normals, x.dtype)[i]

    # -- pieces ---------------------------------------------------------------
    def _interior_pieces(self):
        tris = self._tris
        areas = np.abs(_cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])) / 2
        frac = areas / areas.sum()
        cum = np.cumsum(frac)
        start = cum - frac

        def f(u):
            dt = u.dtype
            s = u[:, 0]
            j = jnp.sum(s[:, None] >= jnp.asarray(cum[:-1], dt)[None, :], axis=1)
            j = jnp.minimum(j, len(tris) - 1)
            s = jnp.clip((s - jnp.asarray(start, dt)[j]) / jnp.asarray(frac, dt)[j], 0.0, 1.0)
            t = jnp.asarray(tris, dt)[j]
            r1 = jnp.sqrt(s)[:, None]
            r2 = u[:, 1:2]
            return (1 - r1) * t[:, 0] + r1 * (1 - r2) * t[:, 1] + r1 * r2 * t[:, 2]

        return [Piece(None, float(areas.sum()), 2, f)]

    def _boundary_pieces(self):
        v = self._v
        normals = self._edge_normals
        pieces = []
        for i in range(len(v)):
            a, b = v[i], v[(i + 1) % len(v)]
            pieces.append(Piece(
                f"side{i}", float(np.linalg.norm(b - a)), 1, _edge_map(a, b),
                normal=_const_normal(normals[i]), on=_edge_on(a, b),
                affine=(a, (b - a)[None, :], normals[i]),
            ))
        return pieces

    def periodic_shift(self, pair) -> np.ndarray:
        """Translation taking side ``pair[0]`` onto side ``pair[1]`` (parallel, equal length,
        opposite direction along the boundary, as in a parallelogram)."""
        names = self.boundary_parts
        bad = [p for p in pair if p not in names]
        if bad:
            raise ValueError(f"unknown boundary part(s) {bad}; valid names: {list(names)}")
        v, n = self._v, len(self._v)
        i, j = (names.index(p) for p in pair)
        p0, p1 = v[i], v[(i + 1) % n]
        q0, q1 = v[j], v[(j + 1) % n]
        shift = q1 - p0
        scale = float(np.max(v.max(0) - v.min(0)))
        if not np.allclose(p1 + shift, q0, rtol=0, atol=1e-9 * scale):
            raise ValueError(f"sides {pair[0]!r} and {pair[1]!r} are not a translated pair "
                             "(parallel, of equal length); they cannot be periodic")
        return shift


def _edge_map(a, b):
    def f(loc):
        return a + loc[:, :1] * (b - a)

    return f


def _const_normal(n):
    def f(x):
        return jnp.broadcast_to(jnp.asarray(n, x.dtype), x.shape)

    return f


def _edge_on(a, b):
    e = b - a
    ee = float(np.dot(e, e))

    def f(x, tol):
        pa = x - a
        t = jnp.clip(jnp.sum(pa * e, -1) / ee, 0.0, 1.0)
        d = pa - t[..., None] * e
        return jnp.sqrt(jnp.sum(d * d, -1)) <= tol

    return f


@register("domain")
class Triangle(Polygon):
    """The triangle with vertices ``a, b, c`` (parts side0 = ab, side1 = bc, side2 = ca)."""

    def __init__(self, a, b, c):
        super().__init__((tuple(a), tuple(b), tuple(c)))

    def to_data(self) -> dict:
        a, b, c = self.vertices
        return {"a": a, "b": b, "c": c}

    def __repr__(self) -> str:
        a, b, c = self.vertices
        return f"Triangle({a}, {b}, {c})"
