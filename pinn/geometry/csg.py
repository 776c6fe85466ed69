"""Constructive solid geometry: ``a | b``, ``a - b``, ``a & b``, and renamed parts.

Signed distance: ``min(a, b)``, ``max(a, -b)``, ``max(a, b)``.  The sign and the
zero set are right, and ``|sdf|`` is a lower bound of the true distance (equal
to it outside a union and inside an intersection), not the exact distance.
``measure`` and ``boundary_measure`` are ``None``; use ``estimate_measure(key,
n)`` / ``estimate_boundary_measure(key, n)`` (Monte Carlo).

Boundary of a CSG shape: the parts of each piece's boundary that lie on the
boundary of the result (for ``a - b``, the parts of ``b``'s boundary inside
``a``, with normals flipped).  Boundaries where both pieces coincide (within
``default_tol``) are sampled once: kept where the two outward normals agree in
a union or an intersection, or are opposite for a difference (``b`` touching
``a`` from outside), and dropped otherwise (a shared internal wall).  So
sampling is by length (area) on the true boundary.  Masks
(``boundary_mask``, ``boundary_part``) use the closed version of the same
rules: a point where pieces meet (where a hole cuts an edge) is on both parts.
Each rule is applied once per point, from the root of the expression down to
the primitive the point was drawn from.

Part names: each piece keeps its part names.  A name that occurs in more than
one piece of the expression (its primitives, or renamed sub-expressions,
numbered 0, 1, ... from left to right as written) is prefixed with
``piece<i>.``.  So
``Rectangle(...) - Disk(...)`` has ``left, right, bottom, top, circle``, an
annulus ``Disk(c, 1) - Disk(c, 0.5)`` has ``piece0.circle, piece1.circle``,
and an L-shape ``Rectangle(...) - Rectangle(...)`` has ``piece0.left`` ...
``piece1.top`` (parts that end up with no length, such as a side of the
removed square lying outside the L, are still listed; sampling them is an
error).  Choose your own names with ``shape.rename({...})`` (on a piece or on
the result): ``Rectangle(...) - Disk(...).rename({"circle": "hole"})``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax.numpy as jnp
import numpy as np

from pinn.data import register
from pinn.geometry._core import Piece
from pinn.geometry.base import Shape

__all__ = ["Union", "Difference", "Intersection", "Renamed"]

_SAME = 0.5  # cosine above which two normals count as the same direction


class _CSG(Shape):
    a: Shape
    b: Shape

    def _check(self, op: str):
        for s in (self.a, self.b):
            if not isinstance(s, Shape):
                raise TypeError(f"{type(self).__name__} combines shapes, got {s!r}")
        if self.a.dim != self.b.dim:
            raise ValueError(
                f"cannot combine a {self.a.dim}-D shape with a {self.b.dim}-D shape using "
                f"'{op}': {self.a!r} {op} {self.b!r}"
            )

    @property
    def dim(self) -> int:
        return self.a.dim

    @property
    def default_tol(self) -> float:
        return max(self.a.default_tol, self.b.default_tol)

    # -- ranged parameters (pinn.geometry.parametric) --------------------------------
    @property
    def params(self) -> tuple:
        from pinn.geometry.parametric import merge_params

        return merge_params(self.a.params, self.b.params)

    def at(self, values) -> Shape:
        if not self.params:
            return self
        return type(self)(self.a.at(values), self.b.at(values))

    def _bind(self, values) -> Shape:
        if not self.params:
            return self
        out = object.__new__(type(self))  # arrays inside: not checked, not hashed
        object.__setattr__(out, "a", self.a._bind(values))
        object.__setattr__(out, "b", self.b._bind(values))
        return out

    # -- boundary pieces and naming ------------------------------------------------
    def _n_leaves(self) -> int:
        return self.a._n_leaves() + self.b._n_leaves()

    def _raw_boundary(self, leaf: int, group: int):
        pa, la, ga = self.a._raw_boundary(leaf, group)
        pb, lb, gb = self.b._raw_boundary(leaf + la, group + ga)
        if isinstance(self, Difference):
            pb = [_flipped(p) for p in pb]
        return pa + pb, la + lb, ga + gb

    def _boundary_pieces(self):
        pieces, _, _ = self._raw_boundary(0, 0)
        groups: dict[str, set[int]] = {}
        for p in pieces:
            groups.setdefault(p.name, set()).add(p.group)
        if self.params:  # a family: no piece lies at a fixed place (pinn.geometry.parametric)
            pieces = [replace(p, affine=None) for p in pieces]
        return [p if len(groups[p.name]) == 1 else replace(p, name=f"piece{p.group}.{p.name}")
                for p in pieces]

    def _accept_leaf(self, x, n, leaf, tol, closed=False):
        """Rules of :mod:`pinn.geometry.csg`, applied from this node down to the leaf.

        ``closed=False`` (sampling): every stretch of boundary is produced by one
        piece only.  ``closed=True`` (masks): a point where pieces meet is on
        both; only walls inside the shape are excluded.
        """
        na = self.a._n_leaves()
        keep_a, keep_b = self._keep(closed)
        nb = -n if isinstance(self, Difference) else n  # the normal as b itself sees it

        def side_a():
            return _both(keep_a(x, n, tol), self.a._accept_leaf(x, n, leaf, tol, closed))

        def side_b():
            return _both(keep_b(x, n, tol),
                         self.b._accept_leaf(x, nb, leaf - na, tol, closed))

        if isinstance(leaf, int):  # static: one branch
            return side_a() if leaf < na else side_b()
        return jnp.where(leaf < na, side_a(), side_b())

    # -- rules (overridden) ------------------------------------------------------
    def _keep(self, closed: bool):  # pragma: no cover - interface
        raise NotImplementedError


def _both(a, b):
    return a if b is None else a & b


def _flipped(p: Piece) -> Piece:
    """The piece with its normals reversed (the subtracted operand of a difference)."""
    f = p.normal
    affine = None if p.affine is None else (p.affine[0], p.affine[1], -p.affine[2])
    return replace(p, normal=lambda x: -f(x), affine=affine)


def _rule(s: Shape, x, n, tol, *, outside: bool, wall: float, closed: bool):
    """Keep a boundary point ``x`` (normal ``n``) of one operand, tested against ``s``.

    ``outside``: keep points outside ``s`` (else inside).  On the boundary of
    ``s`` (within ``tol``), the point is kept when the normals point the same
    way as ``wall * n`` (``wall = +1``: the same direction, ``-1``: opposite).
    ``closed=False``: strictly outside / inside, plus those coincident walls
    (``wall = 0``: none); ``closed=True``: outside / inside or on ``s``, minus
    the walls of the other direction.
    """
    d = s._sdf(x)
    if not closed and wall == 0:
        return d > tol if outside else d < -tol
    on = jnp.abs(d) <= tol
    cos = jnp.sum(n * s._outward(x), -1)
    if not closed:
        side = d > tol if outside else d < -tol
        return side | (on & (wall * cos > _SAME))
    side = d >= -tol if outside else d <= tol
    return side & ~(on & (-wall * cos > _SAME))


@register("domain")
@dataclass(frozen=True)
class Union(_CSG):
    """``a | b``: points in ``a`` or in ``b``."""

    a: Shape
    b: Shape

    def __post_init__(self):
        self._check("|")

    @property
    def bounds(self):
        (la, ha), (lb, hb) = self.a.bounds, self.b.bounds
        return np.minimum(la, lb), np.maximum(ha, hb)

    def _row_bounds(self):
        (la, ha), (lb, hb) = self.a._row_bounds(), self.b._row_bounds()
        return jnp.minimum(la, lb), jnp.maximum(ha, hb)

    def _sdf(self, x):
        return jnp.minimum(self.a._sdf(x), self.b._sdf(x))

    def _outward(self, x):
        pick = (self.a._sdf(x) <= self.b._sdf(x))[..., None]
        return jnp.where(pick, self.a._outward(x), self.b._outward(x))

    def _keep(self, closed: bool):
        a, b = self.a, self.b

        def keep_a(x, n, tol):
            return _rule(b, x, n, tol, outside=True, wall=1.0, closed=closed)

        def keep_b(x, n, tol):  # shared walls of the same direction come from a
            return _rule(a, x, n, tol, outside=True, wall=0.0 if not closed else 1.0,
                         closed=closed)

        return keep_a, keep_b

    def _interior_pieces(self):
        a = self.a

        def not_in_a(x, n, tol):
            return ~a._contains(x, 0.0)

        pieces = self.a._interior_pieces() + [p.restrict(not_in_a)
                                              for p in self.b._interior_pieces()]
        return _maybe_bbox(self, pieces)


@register("domain")
@dataclass(frozen=True)
class Intersection(_CSG):
    """``a & b``: points in both ``a`` and ``b``."""

    a: Shape
    b: Shape

    def __post_init__(self):
        self._check("&")
        lo, hi = self.bounds
        if np.any(lo > hi):
            raise ValueError(f"the intersection of {self.a!r} and {self.b!r} is empty "
                             "(their bounding boxes do not overlap)")

    @property
    def bounds(self):
        (la, ha), (lb, hb) = self.a.bounds, self.b.bounds
        return np.maximum(la, lb), np.minimum(ha, hb)

    def _row_bounds(self):
        (la, ha), (lb, hb) = self.a._row_bounds(), self.b._row_bounds()
        return jnp.maximum(la, lb), jnp.minimum(ha, hb)

    def _sdf(self, x):
        return jnp.maximum(self.a._sdf(x), self.b._sdf(x))

    def _outward(self, x):
        pick = (self.a._sdf(x) >= self.b._sdf(x))[..., None]
        return jnp.where(pick, self.a._outward(x), self.b._outward(x))

    def _keep(self, closed: bool):
        a, b = self.a, self.b

        def keep_a(x, n, tol):
            return _rule(b, x, n, tol, outside=False, wall=1.0, closed=closed)

        def keep_b(x, n, tol):
            return _rule(a, x, n, tol, outside=False, wall=0.0 if not closed else 1.0,
                         closed=closed)

        return keep_a, keep_b

    def _interior_pieces(self):
        a, b = self.a, self.b
        pa, pb = a._interior_pieces(), b._interior_pieces()
        if sum(p.measure for p in pb) < sum(p.measure for p in pa):
            a, b, pa = b, a, pb

        def in_b(x, n, tol):
            return b._contains(x, 0.0)

        return _maybe_bbox(self, [p.restrict(in_b) for p in pa])


@register("domain")
@dataclass(frozen=True)
class Difference(_CSG):
    """``a - b``: points in ``a`` and not inside ``b`` (``b``'s boundary normals flipped)."""

    a: Shape
    b: Shape

    def __post_init__(self):
        self._check("-")

    @property
    def bounds(self):
        return self.a.bounds

    def _row_bounds(self):
        return self.a._row_bounds()

    def _sdf(self, x):
        return jnp.maximum(self.a._sdf(x), -self.b._sdf(x))

    def _outward(self, x):
        pick = (self.a._sdf(x) >= -self.b._sdf(x))[..., None]
        return jnp.where(pick, self.a._outward(x), -self.b._outward(x))

    def _keep(self, closed: bool):
        a, b = self.a, self.b

        def keep_a(x, n, tol):  # b touching a from outside leaves a's wall
            return _rule(b, x, n, tol, outside=True, wall=-1.0, closed=closed)

        def keep_b(x, n, tol):  # n is already flipped (the normal of the result)
            return _rule(a, x, n, tol, outside=False, wall=0.0 if not closed else 1.0,
                         closed=closed)

        return keep_a, keep_b

    def _interior_pieces(self):
        b = self.b

        def not_in_b(x, n, tol):
            return b._sdf(x) > 0

        return _maybe_bbox(self, [p.restrict(not_in_b) for p in self.a._interior_pieces()])


def _maybe_bbox(shape: Shape, pieces: list[Piece]) -> list[Piece]:
    """Propose from the bounding box instead when it is smaller than the pieces."""
    lo, hi = shape.bounds
    box = float(np.prod(hi - lo))
    if box >= sum(p.measure for p in pieces):
        return pieces

    def f(u):
        return lo + u * (hi - lo)

    def inside(x, n, tol):
        return shape._contains(x, 0.0)

    return [Piece(None, box, shape.dim, f, accept=inside,
                  affine=(lo, np.diag(hi - lo), np.zeros(shape.dim)))]


@register("domain")
@dataclass(frozen=True)
class Renamed(Shape):
    """A shape with some boundary parts renamed (``shape.rename({"old": "new"})``)."""

    shape: Shape
    names: tuple[tuple[str, str], ...]

    def __post_init__(self):
        items = self.names.items() if hasattr(self.names, "items") else self.names
        try:
            pairs = tuple((str(k), str(v)) for k, v in items)
        except (TypeError, ValueError):
            raise TypeError(f"rename takes a mapping {{old: new}}, got {self.names!r}") from None
        valid = self.shape.boundary_parts
        bad = [k for k, _ in pairs if k not in valid]
        if bad:
            raise ValueError(f"cannot rename unknown boundary part(s) {bad} of {self.shape!r}; "
                             f"valid names: {list(valid)}")
        if any(v == "boundary" or not v for _, v in pairs):
            raise ValueError("'boundary' (or an empty name) cannot name a part: it means the "
                             "whole boundary")
        object.__setattr__(self, "names", pairs)

    @property
    def dim(self) -> int:
        return self.shape.dim

    @property
    def bounds(self):
        return self.shape.bounds

    @property
    def measure(self):
        return self.shape.measure

    @property
    def default_tol(self) -> float:
        return self.shape.default_tol

    @property
    def params(self) -> tuple:
        return self.shape.params

    def at(self, values) -> Shape:
        return Renamed(self.shape.at(values), self.names) if self.params else self

    def _bind(self, values) -> Shape:
        if not self.params:
            return self
        out = object.__new__(Renamed)
        object.__setattr__(out, "shape", self.shape._bind(values))
        object.__setattr__(out, "names", self.names)
        return out

    def _row_bounds(self):
        return self.shape._row_bounds()

    def _sdf(self, x):
        return self.shape._sdf(x)

    def _outward(self, x):
        return self.shape._outward(x)

    def _interior_pieces(self):
        return self.shape._interior_pieces()

    def _n_leaves(self) -> int:
        return self.shape._n_leaves()

    def _accept_leaf(self, x, n, leaf, tol, closed=False):
        return self.shape._accept_leaf(x, n, leaf, tol, closed)

    def _boundary_pieces(self):
        m = dict(self.names)
        return [replace(p, name=m.get(p.name, p.name)) for p in self.shape._boundary_pieces()]

    def periodic_shift(self, pair):
        inv: dict[str, list[str]] = {}
        for old, new in self.names:
            inv.setdefault(new, []).append(old)
        orig = []
        for p in pair:
            olds = inv.get(p, [p])
            if len(olds) != 1:
                raise ValueError(f"part {p!r} merges several parts {olds}; it cannot be one "
                                 "side of a periodic pair")
            orig.append(olds[0])
        return self.shape.periodic_shift(tuple(orig))
