"""Approximate distance functions (ADFs): smooth functions that vanish exactly on chosen
boundary parts, for hard Dirichlet conditions on any shape.

After Sukumar & Srivastava, "Exact imposition of boundary conditions with distance
functions in physics-informed deep neural networks", CMAME 389 (2022) 114333:

- each boundary piece of a primitive has a normalised function ``f`` that vanishes on the
  curve (surface) it lies on: ``(x - o) . n`` for a flat face, ``(r^2 - |x - c|^2) / (2r)``
  for a circle or sphere, ``g / sqrt(g^2 + |grad g|^2)`` with ``g = 1 - |(x - c) / a|^2``
  for an ellipse;
- a trimming function ``t`` (``t >= 0`` on the part of that curve that is boundary) cuts
  it to the piece: the extent of a flat face (R0 conjunction of its edges' slabs), and for
  the operands of a CSG shape the inside or outside of the other operand, as the CSG rule
  says (``a - b``: ``a``'s pieces outside ``b``, ``b``'s inside ``a``);
- the trimmed piece ``phi = sqrt(f^2 + ((sqrt(t^2 + f^4) - t) / 2)^2)`` (their eq. 14)
  vanishes exactly on the piece and is positive elsewhere;
- the pieces are joined by R-equivalence, ``phi = 1 / sum_i (1 / phi_i)`` (m = 1), which
  vanishes exactly where one of them does.

The "inside" functions of the operands are R-functions too (R0 conjunction ``a + b -
sqrt(a^2 + b^2)``, disjunction ``a + b + sqrt(a^2 + b^2)``), smooth for boxes, disks,
balls and ellipses; a polygon's is minus its exact signed distance (smooth but for its
medial axis).  The result is divided by half the largest side of the bounding box, so it
is of order one inside the shape.  Columns of the points beyond the shape's dimension
(time, parameters) are ignored.

Limitation: a wall that two operands share exactly (``Rectangle((0, 0), (1, 1)) |
Rectangle((1, 0), (2, 1))``: the line ``x = 1`` inside the union) is kept by the trims,
so the function vanishes there too; let such operands overlap instead.

    phi = boundary_distance(Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), 0.2))
    u = pinn.nets.hard_dirichlet(apply, phi, g)      # u == g on the whole boundary
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

__all__ = ["boundary_distance", "inside_function"]

_TINY = 1e-30  # keeps 1/phi and sqrt finite exactly on the boundary (value 0 to ~1e-30)

Fn = Callable[[jnp.ndarray], jnp.ndarray]


def _safe_sqrt(v):
    return jnp.sqrt(jnp.maximum(v, _TINY))


def r_and(a, b):
    """R0 conjunction: ``>= 0`` exactly where both are."""
    return a + b - _safe_sqrt(a * a + b * b)


def r_or(a, b):
    """R0 disjunction: ``>= 0`` exactly where one is."""
    return a + b + _safe_sqrt(a * a + b * b)


def _trimmed(f, t):
    if t is None:
        return jnp.abs(f)
    q = (_safe_sqrt(t * t + f**4) - t) / 2
    return _safe_sqrt(f * f + q * q)


# ------------------------------------------------------------ inside functions


def inside_function(shape) -> Fn:
    """``x -> [...]``: positive inside ``shape``, zero on its boundary, negative outside
    (an R-function of the primitives' inside functions)."""
    from pinn.geometry import csg, parametric, polygon, primitives

    if isinstance(shape, parametric.Bound):  # one shape per point (a family bound to values)
        return shape.adf_inside
    if isinstance(shape, parametric.Parametric):
        raise parametric.needs_values(shape)
    if isinstance(shape, csg.Renamed):
        return inside_function(shape.shape)
    if isinstance(shape, csg._CSG):
        fa, fb = inside_function(shape.a), inside_function(shape.b)
        if isinstance(shape, csg.Union):
            return lambda x: r_or(fa(x), fb(x))
        if isinstance(shape, csg.Intersection):
            return lambda x: r_and(fa(x), fb(x))
        return lambda x: r_and(fa(x), -fb(x))
    if isinstance(shape, primitives._BoxLike):
        lo, hi = shape._lo, shape._hi

        def box(x):
            out = None
            for i in range(len(lo)):
                for s in (x[..., i] - lo[i], hi[i] - x[..., i]):
                    out = s if out is None else r_and(out, s)
            return out

        return box
    if isinstance(shape, primitives._Round):
        return _round_curve(np.asarray(shape.center), shape.radius)
    if isinstance(shape, primitives.Ellipse):
        return _ellipse_curve(np.asarray(shape.center), np.asarray(shape.semi_axes))
    if isinstance(shape, polygon.Polygon):
        return lambda x: -shape._sdf(x)
    raise ValueError(
        f"no distance function for {type(shape).__name__}: hard Dirichlet conditions work on "
        "intervals, rectangles, boxes, disks, balls, ellipses, polygons and their unions, "
        "differences and intersections; use hard: false"
    )


def _as(c, x):
    """The constant ``c`` in the dtype of ``x``: a new array per precision, so that a
    float64 array captured by a trace never stands in a float32 program (JAX's lowering
    keyed it by identity: a file traced in both precisions failed to lower)."""
    return np.asarray(c, dtype=x.dtype)


def _round_curve(c, r) -> Fn:
    r = float(r)
    return lambda x: (r * r - jnp.sum((x - _as(c, x)) ** 2, -1)) / (2 * r)


def _ellipse_curve(c, a) -> Fn:
    """``g / sqrt(g^2 + |grad g|^2)`` of ``g = 1 - |(x - c) / a|^2``: smooth, and its
    gradient is a unit normal on the ellipse."""

    def f(x):
        ca, aa = _as(c, x), _as(a, x)
        q = (x - ca) / aa
        g = 1 - jnp.sum(q * q, -1)
        grad2 = jnp.sum((2 * q / aa) ** 2, -1)
        return g / jnp.sqrt(g * g + grad2)

    return f


# ------------------------------------------------------------ boundary pieces


def _pieces(shape) -> list[tuple[Fn, Fn | None]]:
    """``(f, t)`` of each boundary piece, in the order of ``shape._raw_boundary``."""
    from pinn.geometry import csg, parametric, primitives

    if isinstance(shape, parametric.Bound):
        return shape.adf_pieces()
    if isinstance(shape, csg.Renamed):
        return _pieces(shape.shape)
    if isinstance(shape, csg._CSG):
        ia, ib = inside_function(shape.a), inside_function(shape.b)
        if isinstance(shape, csg.Union):
            ta, tb = (lambda x: -ib(x)), (lambda x: -ia(x))
        elif isinstance(shape, csg.Intersection):
            ta, tb = ib, ia
        else:  # a - b: a's boundary outside b, b's inside a
            ta, tb = (lambda x: -ib(x)), ia
        return ([(f, _and_trim(t, ta)) for f, t in _pieces(shape.a)]
                + [(f, _and_trim(t, tb)) for f, t in _pieces(shape.b)])
    inside_function(shape)  # the shape kinds this module knows, with its message
    out = []
    for p in shape._boundary_pieces():
        if p.affine is not None:
            out.append(_flat_piece(*p.affine))
        elif isinstance(shape, primitives._Round):
            out.append((_round_curve(np.asarray(shape.center), shape.radius), None))
        elif isinstance(shape, primitives.Ellipse):
            out.append((_ellipse_curve(np.asarray(shape.center), np.asarray(shape.semi_axes)),
                        None))
        else:  # pragma: no cover - every known primitive is handled above
            raise ValueError(f"no distance function for a piece of {shape!r}")
    return out


def _and_trim(t, extra):
    if t is None:
        return extra
    return lambda x: r_and(t(x), extra(x))


def _flat_piece(origin, axes, normal):
    """A flat face (segment, rectangle, ...; a point in 1-D): the plane's signed distance,
    trimmed to the face by the slabs of its edges."""
    o = np.asarray(origin, np.float64)
    n = np.asarray(normal, np.float64)
    n = n / np.linalg.norm(n)
    axes = np.asarray(axes, np.float64).reshape(-1, len(o))

    def f(x):
        return jnp.sum((x - _as(o, x)) * _as(n, x), -1)

    if axes.shape[0] == 0:
        return f, None
    lengths = np.linalg.norm(axes, axis=1)
    units = axes / lengths[:, None]

    def t(x):
        out = None
        for u, length in zip(units, lengths.tolist(), strict=True):
            s = jnp.sum((x - _as(o, x)) * _as(u, x), -1)  # position along this edge
            for w in (s, length - s):
                out = w if out is None else r_and(out, w)
        return out

    return f, t


def boundary_distance(shape, on="boundary", inputs=None) -> Fn:
    """``phi(x[..., d]) -> [...]``: zero exactly on the boundary parts ``on`` (a part name,
    a tuple of names or ``"boundary"``), positive elsewhere in and around ``shape``
    (see the module docstring).

    A shape that depends on ranged parameters (:mod:`pinn.geometry.parametric`) reads their
    values from the points' columns: ``inputs`` names the columns (a problem's
    ``inputs``; default: the shape's coordinates, then its parameters), and ``phi`` is the
    distance function of each point's own shape."""
    if shape.params:
        from pinn.geometry.parametric import parametric_distance

        return parametric_distance(shape, on, inputs)
    names = [p.name for p in shape._boundary_pieces()]
    pieces = _pieces(shape)
    if len(pieces) != len(names):  # pragma: no cover - the two walks of the tree agree
        raise ValueError(f"distance function of {shape!r}: {len(pieces)} pieces for "
                         f"{len(names)} boundary pieces")
    want = shape._resolve_parts(tuple(on) if isinstance(on, list) else on)
    if want is None:
        raise ValueError(f"a distance function needs named boundary parts (or 'boundary'), "
                         f"not a predicate ({on})")
    chosen = [pc for pc, name in zip(pieces, names, strict=True) if name in want]
    lo, hi = (np.asarray(b, np.float64) for b in shape.bounds)
    scale = 2.0 / float(np.max(hi - lo))
    dim = shape.dim

    def phi(x):
        x = x[..., :dim]
        inv = 0.0
        for f, t in chosen:
            inv = inv + 1.0 / jnp.maximum(_trimmed(f(x), None if t is None else t(x)), _TINY)
        return scale / inv

    return phi


def transfinite_weights(distances, power: int = 2):
    """``x -> [w_1, ..., w_m]`` (each ``[...]``): weights that are 1 on the zero set of
    ``distances[i]`` and 0 on the others' (transfinite interpolation, Sukumar & Srivastava
    2022, sec. 5):
    ``w_i = prod_{k != i} phi_k^p / sum_j prod_{k != j} phi_k^p``, written with products so
    that nothing overflows where a distance is ~0. ``power`` 2 makes ``1 - w_i`` vanish to
    second order at part ``i``: a lift blended from them has the normal derivative of that
    part's own value there. Exactly where two parts meet (every product 0) the weights are
    ``1/m`` with zero derivatives (both branches of a ``where`` finite, so that no
    derivative of any order is NaN there: the data jump at such a corner anyway)."""
    distances = tuple(distances)
    m = len(distances)

    def weights(x):  # elementwise products, sums and selects: the Taylor engine sees them
        phi = [d(x) ** power for d in distances]
        terms = [_product([p for k, p in enumerate(phi) if k != i], phi[0]) for i in range(m)]
        total = sum(terms[1:], terms[0])
        meet = total <= jnp.finfo(total.dtype).tiny
        safe = jnp.where(meet, jnp.ones_like(total), total)
        return [jnp.where(meet, jnp.full_like(t, 1.0 / m), t / safe) for t in terms]

    return weights


def lift(distances, values, power: int = 2):
    """``x -> [...]``: a function equal to ``values[i](x)`` on the zero set of
    ``distances[i]`` for every ``i`` (the parts of a boundary with different Dirichlet
    values), blended by :func:`transfinite_weights` in between: the lift a hard condition
    builds on (``u = lift + phi N``) so that nobody has to write one."""
    weights = transfinite_weights(distances, power)
    values = tuple(values)

    def g(x):
        w = weights(x)
        out = w[0] * values[0](x)
        for wi, v in zip(w[1:], values[1:], strict=True):
            out = out + wi * v(x)
        return out

    return g


def _product(factors, like):
    out = jnp.ones_like(like)
    for f in factors:
        out = out * f
    return out
