"""The shape interface shared by primitives, CSG shapes and the space-time product.

Conventions (all shapes):

- points are arrays ``[..., dim]`` (usually ``[N, dim]``); results are ``[...]``;
- ``sdf`` is negative inside, zero on the boundary, positive outside;
  ``contains(points, tol=0)`` is ``sdf <= tol`` (the closed set);
- ``bounds`` is ``(lo[dim], hi[dim])`` as numpy arrays;
- boundary parts have names (``boundary_parts``); ``"boundary"`` means all
  of them; a :class:`BoundarySample`'s ``part`` is an index into
  ``boundary_parts``;
- ``tol=None`` in masks means ``default_tol`` = ``1e-5`` times the largest
  side of the bounding box;
- sampling functions take an explicit ``key`` and a static ``n`` and are
  usable inside ``jax.jit`` / ``lax.scan`` (see :mod:`pinn.geometry._core`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pinn.data import init_fields
from pinn.geometry import _core
from pinn.geometry._core import Piece, Spec, propose
from pinn.geometry.samplers import Sampler, Uniform, float_dtype

__all__ = ["Shape", "BoundarySample"]

_DEFAULT_NAMES = ("x", "y", "z")


class BoundarySample(NamedTuple):
    """Boundary points with their outward unit normals and part indices.

    ``points[n, dim]``; ``normals[n, space_dim]`` (spatial only for space-time
    domains); ``part[n]`` (int32) indexes the domain's ``boundary_parts``.
    A point sampled exactly at a corner carries the normal of the part it was
    drawn from.
    """

    points: jax.Array
    normals: jax.Array
    part: jax.Array


def default_coords(dim: int) -> tuple[str, ...]:
    """The coordinate names of a ``dim``-D space: ``x, y, z`` up to 3-D, ``x1, ..., xN``
    beyond (the faces of an N-D box are named after them: ``x1_min``, ...)."""
    if dim <= len(_DEFAULT_NAMES):
        return _DEFAULT_NAMES[:dim]
    return tuple(f"x{i + 1}" for i in range(dim))


def coord_names(coords, default: Sequence[str]) -> tuple[str, ...]:
    """Normalise ``coords`` (None, ``"x y t"``, names or Coord nodes) to a tuple of names."""
    if coords is None:
        return tuple(default)
    if isinstance(coords, str):
        return tuple(coords.replace(",", " ").split())
    out = []
    for c in coords:
        name = getattr(c, "name", c)
        if not isinstance(name, str):
            raise TypeError(f"coordinates are names or pinn.coords(...) nodes, got {c!r}")
        out.append(name)
    return tuple(out)


def predicate_fn(expr, names: Sequence[str], tol: float):
    """``points -> bool`` for a predicate Expr (``==`` holds within ``tol``)."""
    from pinn.dsl import expr as E
    from pinn.dsl.calculus import coords_of, fields_of
    from pinn.dsl.evaluate import evaluate_on_points

    coords = tuple(E.Coord(n) for n in names)
    unknown = sorted({c.name for c in coords_of(expr)} - set(names))
    if unknown:
        raise ValueError(
            f"boundary predicate {expr} uses coordinate(s) {unknown}, but the domain's "
            f"coordinates are {list(names)}; pass coords= to name them"
        )
    if fields_of(expr):
        raise ValueError(f"boundary predicate {expr} uses fields; a predicate may use "
                         "coordinates and parameters only")
    if not isinstance(expr, (E.Compare, E.And, E.Or, E.Not)):
        raise ValueError(
            f"boundary predicate {expr} is not a condition; write a comparison such as "
            "eq(x, 0) or x**2 + y**2 < 0.25"
        )

    def keep(x):
        return evaluate_on_points(expr, coords, x, eq_tol=tol).astype(bool)

    return keep


@functools.partial(jax.jit, static_argnums=0)
def _jit_sdf(owner, x):
    return owner._sdf(x)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _jit_contains(owner, x, tol):
    return owner._contains(x, tol)


@functools.partial(jax.jit, static_argnums=0)
def _jit_outward(owner, x):
    return owner._outward(x)


@functools.partial(jax.jit, static_argnums=(0, 2, 3, 4))
def _jit_mask(owner, x, on, tol, coords):
    return owner._mask(x, on, tol, coords)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _jit_part(owner, x, tol):
    return owner._part_of(x, tol)


@functools.partial(jax.jit, static_argnums=(0, 2, 3, 4, 5, 6))
def _jit_draw(owner, key, n, sampler, kind, on, coords):
    return _core.draw(owner, key, n, sampler, kind, on, coords)


@functools.partial(jax.jit, static_argnums=(0, 2, 3, 4, 5))
def _jit_estimate(owner, key, n, kind, on, coords):
    spec = owner._spec(kind, on, coords)
    total = sum(p.measure for p in spec.pieces) * owner._extra_measure()
    u = Uniform().unit(key, n, spec.dunit)
    _, _, _, ok = propose(spec, u)
    frac = 1.0 if ok is None else jnp.mean(ok.astype(float_dtype()))
    return jnp.asarray(total * frac, float_dtype())


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(
            f"the number of points must be a positive Python int (static under jit), got {n!r}"
        )
    return int(n)


def _check_tol(tol) -> float:
    try:
        return float(tol)
    except (TypeError, jax.errors.ConcretizationTypeError):
        raise TypeError(f"tol must be a Python float, got {tol!r}") from None


class Domain:
    """Sampling and boundary-selection methods shared by shapes and space-time domains.

    Subclasses provide ``dim``, ``bounds``, ``_sdf``, ``_contains``,
    ``default_tol``, ``boundary_parts``, ``_spec(kind, on, coords)``,
    ``_select`` and ``_mask``.  Public methods validate their arguments and
    call jitted functions (the domain, ``n``, the sampler and ``on`` are static),
    so they are fast when called eagerly and inline inside a user's jit.
    """

    def to_data(self) -> dict:
        """The constructor's arguments, for the run format (:mod:`pinn.serialize`)."""
        return init_fields(self)

    # -- parameters (a shape that depends on ranged parameters: pinn.geometry.parametric) --
    @property
    def params(self) -> tuple:
        """The ranged parameters the shape's sizes and positions depend on, in order
        (``()``: a fixed shape; see :mod:`pinn.geometry.parametric`)."""
        return ()

    def at(self, values) -> Domain:
        """The fixed shape at the parameters' ``values`` (``{name: number}``): the shape
        itself where it depends on none."""
        return self

    def _values(self, params, x):
        """The parameters' values for points ``x`` (``None`` for a fixed shape); a shape
        that depends on parameters refuses to answer without them."""
        if params is None and not self.params:
            return None
        from pinn.geometry.parametric import values_for

        if not isinstance(self, Shape):
            raise ValueError(f"{self!r} depends on ranged parameters: give their values to "
                             "its space (domain.space) and draw the time yourself")
        return values_for(self, params, tuple(x.shape[:-1]))

    def sdf(self, points, params=None):
        """Signed distance ``[...]``: negative inside (a bound, not exact, for CSG shapes).
        ``params``: the values of the ranged parameters a shape depends on (``{name: value
        or values[...]}``, one per point), each point's own shape."""
        x = self._check_points(points)
        values = self._values(params, x)
        if values is not None:
            from pinn.geometry.parametric import sdf_at

            return sdf_at(self, x, values)
        return _jit_sdf(self, x)

    def contains(self, points, tol: float = 0.0, params=None):
        """``bool[...]``: points in the closed domain (``sdf <= tol``); ``params`` as in
        :meth:`sdf`."""
        x = self._check_points(points)
        values = self._values(params, x)
        if values is not None:
            from pinn.geometry.parametric import contains_at

            return contains_at(self, x, values, _check_tol(tol))
        return _jit_contains(self, x, _check_tol(tol))

    # -- selection --------------------------------------------------------
    def _default_coords(self) -> tuple[str, ...]:
        return default_coords(self.dim)

    def _check_points(self, points):
        x = jnp.asarray(points)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(
                f"points must have shape [..., {self.dim}] for this {self.dim}-D domain, "
                f"got {tuple(x.shape)}"
            )
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(float_dtype())
        return x

    def _resolve_parts(self, on) -> tuple[str, ...] | None:
        """Part names selected by ``on`` (None: a predicate, i.e. all parts + a test)."""
        from pinn.dsl.expr import Expr

        valid = self.boundary_parts
        if isinstance(on, Expr):
            return None
        if isinstance(on, str):
            names = (on,)
        elif isinstance(on, (tuple, list)) and on and all(isinstance(s, str) for s in on):
            names = tuple(on)
        else:
            raise TypeError(
                f"'on' must be 'boundary', a part name, a tuple of part names or a predicate "
                f"expression, got {on!r}"
            )
        if "boundary" in names:
            return valid
        bad = [s for s in names if s not in valid]
        if bad:
            raise ValueError(
                f"unknown boundary part(s) {bad} of {self!r}; valid names: "
                f"{['boundary', *valid]}"
            )
        return tuple(dict.fromkeys(names))

    # -- masks ---------------------------------------------------------------
    def boundary_mask(self, points, on="boundary", tol=None, coords=None, params=None):
        """``bool[...]``: which points lie on the boundary part(s) selected by ``on``.

        ``on``: ``"boundary"``, a part name, a tuple of names, or a predicate
        expression (evaluated with the coordinate names ``coords``, default
        ``x, y, z`` (+ ``t``), where ``==`` holds within ``tol``); a point must
        also lie on the boundary. ``params`` as in :meth:`sdf`.
        """
        x = self._check_points(points)
        tol = self.default_tol if tol is None else _check_tol(tol)
        on = tuple(on) if isinstance(on, list) else on
        self._resolve_parts(on)
        values = self._values(params, x)
        if values is not None:
            from pinn.geometry.parametric import mask_at

            return mask_at(self, x, values, on, tol, self._coord_key(on, coords))
        return _jit_mask(self, x, on, tol, self._coord_key(on, coords))

    def boundary_part(self, points, tol=None, params=None):
        """``int32[...]``: index in ``boundary_parts`` of the part each point lies on, -1 off
        the boundary.  Where parts meet (corners), the first part in order. ``params`` as
        in :meth:`sdf`."""
        x = self._check_points(points)
        tol = self.default_tol if tol is None else _check_tol(tol)
        values = self._values(params, x)
        if values is not None:
            from pinn.geometry.parametric import part_at

            return part_at(self, x, values, tol)
        return _jit_part(self, x, tol)

    # -- sampling ------------------------------------------------------------
    def sample_interior(self, key, n: int, sampler: Sampler | None = None, params=None):
        """``[n, dim]`` points distributed by volume (area, length) in the domain.

        ``params``: the values of the ranged parameters a shape depends on (``{name:
        values[n]}``, or one value for all): point ``i`` lies in the shape of the ``i``-th
        values (:mod:`pinn.geometry.parametric`)."""
        sampler = Uniform() if sampler is None else sampler
        n = _check_n(n)
        if params is not None or self.params:
            return self._draw_at(key, n, sampler, "interior", None, None, params)[0]
        x, _, _ = _jit_draw(self, key, n, sampler, "interior", None, None)
        return x

    def sample_boundary(self, key, n: int, sampler: Sampler | None = None, on="boundary",
                        coords=None, params=None) -> BoundarySample:
        """Points distributed by length (area) on the selected boundary part(s).

        Returns ``BoundarySample(points[n, dim], normals, part[n])``. ``params`` as in
        :meth:`sample_interior` (each point on its own shape, with its normal and part).
        """
        sampler = Uniform() if sampler is None else sampler
        on = tuple(on) if isinstance(on, list) else on
        self._resolve_parts(on)  # validate names early with a clear message
        names = self._coord_key(on, coords)
        n = _check_n(n)
        if params is not None or self.params:
            x, nrm, part = self._draw_at(key, n, sampler, "boundary", on, names, params)
            return BoundarySample(x, nrm, part)
        x, nrm, part = _jit_draw(self, key, n, sampler, "boundary", on, names)
        return BoundarySample(x, nrm, part)

    def _draw_at(self, key, n, sampler, kind, on, coords, params):
        """``(points, normals, part)`` of ``n`` points with the parameters' values
        ``params`` (:func:`pinn.geometry.parametric.draw_at`)."""
        from pinn.geometry.parametric import draw_at

        values = self._values(params, jnp.zeros((n, self.dim)))
        out, _ = draw_at(self, key, values, sampler, kind, on, coords)
        return out

    def _rate_key(self, kind, on, coords):
        """Arguments of the (cached) acceptance-rate estimate for this sampling task."""
        if kind == "boundary":
            parts = self._resolve_parts(on)
            if parts is not None:  # one key for "boundary", a name, and the same names
                return self, kind, tuple(p for p in self.boundary_parts if p in parts), None
        return self, kind, on, coords

    def _coord_key(self, on, coords):
        from pinn.dsl.expr import Expr

        if isinstance(on, Expr):
            return coord_names(coords, self._default_coords())
        return None

    def estimate_measure(self, key, n: int = 100_000):
        """Monte Carlo volume (exact ``measure`` where known); relative error ~ 1/sqrt(n)."""
        self._fixed("estimate_measure")
        if self.measure is not None:
            return jnp.asarray(self.measure, float_dtype())
        return _jit_estimate(self, key, _check_n(n), "interior", None, None)

    def estimate_boundary_measure(self, key, n: int = 100_000, on="boundary", coords=None):
        """Monte Carlo length (area) of the selected boundary part(s)."""
        self._fixed("estimate_boundary_measure")
        on = tuple(on) if isinstance(on, list) else on
        parts = self._resolve_parts(on)
        if parts is not None:
            exact = self.part_measures
            if all(exact.get(p) is not None for p in parts):
                return jnp.asarray(sum(exact[p] for p in parts), float_dtype())
        return _jit_estimate(self, key, _check_n(n), "boundary", on, self._coord_key(on, coords))

    def _extra_measure(self) -> float:
        return 1.0

    def _fixed(self, what: str) -> None:
        if self.params:
            names = ", ".join(p.name for p in self.params)
            raise ValueError(f"{what}: {self!r} depends on the ranged parameter(s) {names}; "
                             f"take the shape of one value first, shape.at({{...}})")


class Shape(Domain):
    """A spatial domain.  Subclasses are frozen dataclasses (hashable, compared by value)."""

    # -- to be provided by subclasses ---------------------------------------
    @property
    def dim(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - interface
        raise NotImplementedError

    def _sdf(self, x):  # pragma: no cover - interface
        raise NotImplementedError

    def _outward(self, x):  # pragma: no cover - interface
        raise NotImplementedError

    def _interior_pieces(self) -> list[Piece]:  # pragma: no cover - interface
        raise NotImplementedError

    def _boundary_pieces(self) -> list[Piece]:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def measure(self) -> float | None:
        """Area / volume / length; exact for primitives, ``None`` for CSG shapes."""
        return None

    # -- generic ---------------------------------------------------------------
    def _contains(self, x, tol):
        return self._sdf(x) <= tol

    def normal(self, points, params=None):
        """Outward unit normal ``[..., dim]`` at boundary points (of the nearest part).

        Meaningful on or very near the boundary; at a corner it is the normal of
        one of the parts meeting there. ``params`` as in :meth:`sdf`.
        """
        x = self._check_points(points)
        values = self._values(params, x)
        if values is not None:
            from pinn.geometry.parametric import outward_at

            return outward_at(self, x, values)
        return _jit_outward(self, x)

    @property
    def default_tol(self) -> float:
        lo, hi = self.bounds
        return 1e-5 * float(np.max(np.asarray(hi) - np.asarray(lo)))

    @property
    def boundary_parts(self) -> tuple[str, ...]:
        """Names of the boundary parts, in order (``part`` indices refer to this)."""
        return tuple(dict.fromkeys(p.name for p in self._boundary_pieces()))

    @property
    def part_measures(self) -> dict[str, float | None]:
        """Length (area) of each part: exact for primitives, ``None`` for CSG shapes."""
        out: dict[str, float | None] = {}
        exact = self._n_leaves() == 1
        for p in self._boundary_pieces():
            out[p.name] = out.get(p.name, 0.0) + p.measure if exact else None
        return out

    @property
    def boundary_measure(self) -> float | None:
        """Total boundary length (area); ``None`` where not exact (CSG)."""
        vals = list(self.part_measures.values())
        return None if any(v is None for v in vals) else float(sum(vals))

    def periodic_shift(self, pair) -> np.ndarray:
        """Translation taking boundary part ``pair[0]`` onto ``pair[1]`` (periodic pairs)."""
        raise ValueError(
            f"{self!r} has no periodic pair {tuple(pair)}: periodic pairs are opposite faces of "
            "an Interval, Rectangle or Box, or two parallel sides of equal length of a Polygon"
        )

    def rename(self, names) -> Shape:
        """The same shape with boundary parts renamed, e.g. ``{"circle": "hole"}``.

        Several parts may share a new name (``{"left": "walls", "right": "walls"}``).
        """
        from pinn.geometry.csg import Renamed

        return Renamed(self, names)

    # -- sampling specs ---------------------------------------------------------
    def _select(self, on, coords, tol):
        parts = self._resolve_parts(on)
        pieces = self._boundary_pieces()
        names = self.boundary_parts
        keep = None
        if parts is None:
            keep = predicate_fn(on, coord_names(coords, self._default_coords()), tol)
            chosen = pieces
        else:
            chosen = [p for p in pieces if p.name in parts]
        return chosen, tuple(names.index(p.name) for p in chosen), keep

    def _spec(self, kind, on, coords) -> Spec:
        tol = self.default_tol
        if kind == "interior":
            pieces = tuple(p for p in self._interior_pieces() if p.measure > 0)
            return Spec(pieces, (0,) * len(pieces), self.dim, False, tol)
        chosen, part, keep = self._select(on, coords, tol)
        kept = [(p, i) for p, i in zip(chosen, part, strict=True) if p.measure > 0]
        return Spec(tuple(p for p, _ in kept), tuple(i for _, i in kept), self.dim - 1, True,
                    tol, keep=keep, accept=self._accept_leaf if self._n_leaves() > 1 else None)

    def _part_of(self, x, tol):
        return part_index(self, x, tol)

    def _mask(self, x, on, tol, coords):
        chosen, _, keep = self._select(on, coords, tol)
        mask = piece_mask(self, chosen, x, tol)
        if keep is not None:
            mask = mask & keep(x)
        return mask

    # -- a shape whose numbers are one value per point (pinn.geometry.parametric) -------
    def _bind(self, values) -> Shape:
        """This shape with its parameters' ``values`` (arrays, one per point) in its
        numbers; itself where it depends on none."""
        return self

    def _row_bounds(self):
        """``(lo, hi)`` of each point's shape after :meth:`_bind` (broadcasting against
        ``[..., dim]``)."""
        return self.bounds

    # -- CSG and products ------------------------------------------------------------
    def _n_leaves(self) -> int:
        """Primitives in the CSG tree (1 for a primitive)."""
        return 1

    def _accept_leaf(self, x, n, leaf, tol, closed=False):
        """CSG: does boundary point ``x`` of primitive ``leaf`` (normal ``n``) lie on the
        boundary of this shape?  ``None`` (no restriction) for primitives."""
        return None

    def _raw_boundary(self, leaf: int, group: int):
        """Boundary pieces tagged with leaf (accept tree) and group (naming) numbers."""
        pieces = [replace(p, leaf=p.leaf + leaf, group=group) for p in self._boundary_pieces()]
        return pieces, self._n_leaves(), 1

    def __or__(self, other):
        from pinn.geometry.csg import Union

        return Union(self, _shape(other, "|"))

    def __sub__(self, other):
        from pinn.geometry.csg import Difference

        return Difference(self, _shape(other, "-"))

    def __and__(self, other):
        from pinn.geometry.csg import Intersection

        return Intersection(self, _shape(other, "&"))

    def __mul__(self, other):
        from pinn.geometry.spacetime import SpaceTime, TimeInterval

        if isinstance(other, TimeInterval):
            return SpaceTime(self, other)
        return NotImplemented


def piece_mask(owner, pieces, x, tol):
    """Points of ``x`` on any of ``pieces`` (restricted to ``owner``'s boundary)."""
    mask = jnp.zeros(x.shape[:-1], bool)
    for p in pieces:
        mask = mask | _on_piece(owner, p, x, tol)
    return mask


def _on_piece(owner, p, x, tol):
    m = p.on(x, tol)
    acc = owner._accept_leaf(x, p.normal(x), p.leaf, tol, True)
    return m if acc is None else m & acc


def part_index(owner, x, tol):
    """Index in ``owner.boundary_parts`` of the first part ``x`` lies on; -1 if none."""
    names = owner.boundary_parts
    out = jnp.full(x.shape[:-1], -1, jnp.int32)
    for p in reversed(owner._boundary_pieces()):
        out = jnp.where(_on_piece(owner, p, x, tol), names.index(p.name), out)
    return out


def _shape(other, op: str) -> Shape:
    if not isinstance(other, Shape):
        raise TypeError(
            f"cannot combine a shape with {other!r} using '{op}'; both operands must be shapes"
        )
    return other
