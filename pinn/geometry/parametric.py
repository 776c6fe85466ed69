"""Shapes whose sizes and positions depend on ranged parameters (parametric geometry).

A primitive given an expression of ranged parameters among its numbers,
``Disk((0.5, 0.5), r)`` with ``r = pinn.param("r", range=(0.1, 0.3))``, is a *family* of
shapes, one per value of the parameters, and so is CSG of such shapes
(``Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), r)``). Interval, Rectangle, Box, Disk and
Ball take expressions (their classes here: :class:`Parametric`); the other primitives
refuse them. A family is a :class:`~pinn.geometry.base.Shape`: its dimension, its part
names and CSG work as for a fixed shape, ``params`` lists the parameters, ``bounds`` is a
box holding the shape at every value (the bounds at the probe values: the corners and
centre of the parameters' box and 32 Halton points), and ``shape.at({"r": 0.2})`` is the
fixed shape of one value (what FEM meshes, what the evaluation grid is masked by).
Everything that needs the geometry (sampling, signed distances, normals, masks, distance
functions) takes the parameters' values, one per point (``params={"r": values[N]}``), and
answers each point with its own shape; without them it refuses (never a fixed shape in
its place).

How: ``shape._bind(values)`` is the same CSG tree whose parametric leaves hold one value per
point (arrays ``[N]``, ``[N, d]``: :class:`Bound`); their signed distance, normal,
boundary pieces (per-point lengths and maps), bounding box and distance-function pieces
broadcast over the points, and the rules of :mod:`pinn.geometry.csg` run on them unchanged.
Sampling is conditional on each point's values, which stay as drawn (uniform over the
ranges, or a low-discrepancy net with the points):

- interior: candidates uniform in the point's own bounding box, kept inside its own shape;
- boundary: a piece drawn with probability proportional to its length (area) at the
  point's values, a candidate on it, kept by the CSG rules at those values;

the first kept of ``K`` candidates per point, in rounds (``lax.while_loop``) until every
point has one; so each point is distributed by area (length) in (on) its own shape. ``K``
is sized at trace time from the lowest acceptance rate over the probe values (cached),
which also refuses a family that is empty, or has a part of no length, at some value.
A regular grid (:class:`~pinn.geometry.samplers.Grid`) cannot follow the shape and is
refused.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from pinn.dsl import expr as E
from pinn.geometry._core import MAX_ROUNDS, MIN_RATE, Piece
from pinn.geometry.base import Shape, part_index, piece_mask
from pinn.geometry.samplers import Grid, _halton_table, float_dtype

__all__ = ["Parametric", "Bound", "SUPPORTED", "probe_values", "crossings"]

#: the primitives whose numbers may be expressions of ranged parameters
SUPPORTED = "Interval, Rectangle, Box, Disk and Ball"

#: candidate points per probe value in the trace-time acceptance estimate
RATE_CANDIDATES = 2048

#: a point's K candidates are all rejected with at most this probability
MISS = 1e-3


# ----------------------------------------------------------------- numbers ----


def _exprs(value):
    if isinstance(value, E.Expr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _exprs(v)


def ranged_in(*values) -> tuple[E.Param, ...]:
    """The ranged parameters the numbers ``values`` (numbers, expressions, nested tuples)
    use, in order of first appearance."""
    from pinn.dsl.calculus import params_of

    seen: dict[str, E.Param] = {}
    for ex in _exprs(values):
        for p in params_of(ex):
            if p.range is not None:
                seen.setdefault(p.name, p)
    return tuple(seen.values())


def merge_params(*groups) -> tuple[E.Param, ...]:
    """The parameters of several shapes, once each, in order."""
    seen: dict[str, E.Param] = {}
    for g in groups:
        for p in g:
            seen.setdefault(p.name, p)
    return tuple(seen.values())


def _check_expr(ex: E.Expr, what: str) -> None:
    from pinn.dsl.calculus import params_of, symbols

    bad = sorted({n.name for n in symbols(ex, (E.Coord, E.Field))})
    if bad:
        raise ValueError(f"{what} = {ex} uses {', '.join(bad)}; a shape's numbers may use "
                         "numbers and parameters only")
    for p in params_of(ex):
        if p.learnable:
            raise ValueError(f"{what} = {ex} uses the learnable parameter {p.name!r}; a "
                             "shape's numbers may use fixed parameters or ranged ones "
                             "(range=(lo, hi)), not learnable ones")
        if p.value is None and p.range is None:
            raise ValueError(f"{what} = {ex}: parameter {p.name!r} has no value")


def plain(value, what: str):
    """``value`` with its expressions of fixed parameters evaluated to floats (nested
    tuples kept); ``ValueError`` for an expression of a ranged parameter (``what``: the
    shape and number, for the message) or of coordinates, fields or learnable
    parameters."""
    if isinstance(value, E.Expr):
        _check_expr(value, what)
        ranged = ranged_in(value)
        if ranged:
            names = ", ".join(p.name for p in ranged)
            raise ValueError(f"{what} = {value} depends on the ranged parameter(s) {names}; "
                             f"sizes and positions that follow ranged parameters are "
                             f"supported in {SUPPORTED} (and their unions, differences and "
                             "intersections)")
        return _evaluate(value, {}, np)
    if isinstance(value, (tuple, list)):
        return tuple(plain(v, what) for v in value)
    return value


def has_expressions(*values) -> bool:
    """Whether any of ``values`` (numbers, expressions, nested tuples) is an expression."""
    return any(True for _ in _exprs(values))


def _evaluate(ex, env, xp):
    from pinn.dsl.evaluate import evaluate

    with np.errstate(all="ignore"):
        out = evaluate(ex, env, xp=xp)
    return float(out) if xp is np else out


def _env(params, values: Mapping, xp) -> dict:
    return {E.Coord(p.name): values[p.name] for p in params}


def _number(value, env, xp, like=None):
    """A number, expression or tuple of them at the parameters' values ``env``: floats
    (``xp`` numpy) or arrays of the values' shape (``like``: one of them; tuples become a
    last axis)."""
    if isinstance(value, (tuple, list)):
        if xp is np:
            return tuple(_number(v, env, xp) for v in value)
        return jnp.stack([_number(v, env, xp, like) for v in value], axis=-1)
    if isinstance(value, E.Expr):
        out = _evaluate(value, env, xp)
    else:
        out = float(value)
    if xp is np:
        return float(out)
    return jnp.broadcast_to(jnp.asarray(out, like.dtype), like.shape)


def needs_values(shape) -> ValueError:
    names = ", ".join(p.name for p in shape.params)
    return ValueError(
        f"{shape!r} depends on the ranged parameter(s) {names}: give their values, one per "
        f"point (params={{{shape.params[0].name!r}: values}}), or take the shape of one "
        f"value with shape.at({{{shape.params[0].name!r}: value}})")


# ------------------------------------------------------------------ probes ----


@functools.lru_cache(maxsize=64)
def _probe_units(p: int) -> np.ndarray:
    """Points of the unit cube ``[k, p]``: the centre, the corners (up to 6 parameters) and
    32 Halton points."""
    rows = [np.full(p, 0.5)]
    if p <= 6:
        rows += [np.array(c, np.float64) for c in itertools.product((0.0, 1.0), repeat=p)]
    rows += list(_halton_table(33, p)[1:])
    return np.array(rows)


def probe_values(params) -> list[dict[str, float]]:
    """The values a family is checked at: the centre of the parameters' box, its corners
    (up to 6 parameters) and 32 Halton points, as ``{name: value}``."""
    params = tuple(params)
    if not params:
        return [{}]
    u = _probe_units(len(params))
    lo = np.array([p.range[0] for p in params])
    hi = np.array([p.range[1] for p in params])
    vals = lo + u * (hi - lo)
    return [{p.name: float(v[j]) for j, p in enumerate(params)} for v in vals]


def _show(values: Mapping) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in values.items())


# --------------------------------------------------------------- the family ----


class Parametric(Shape):
    """A primitive with expressions of ranged parameters among its numbers: a family of
    shapes. Subclasses (in :mod:`pinn.geometry.primitives`, one per kind, frozen
    dataclasses with the kind's own fields) give ``KIND`` (the fixed class),
    ``dim``, ``_part_names()`` and ``_bound(**numbers)`` (the :class:`Bound` leaf of
    numbers that are arrays, one value per point)."""

    KIND: ClassVar[type]

    def __post_init__(self):
        kind = self.KIND.__name__
        for f in dataclass_fields(self):
            v = getattr(self, f.name)
            for ex in _exprs(v):
                _check_expr(ex, f"{kind}: {f.name}")
            object.__setattr__(self, f.name, _frozen(v))
        for values in probe_values(self.params):  # a valid fixed shape at every probe
            try:
                self.at(values)
            except ValueError as exc:
                raise ValueError(f"{kind} at {_show(values)} (in the parameters' ranges): "
                                 f"{exc}") from None

    def _numbers(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclass_fields(self)}

    @property
    def params(self) -> tuple[E.Param, ...]:
        return ranged_in(*self._numbers().values())

    def at(self, values: Mapping[str, float]) -> Shape:
        """The fixed shape at the parameters' ``values`` (``{name: number}``; other names
        are ignored)."""
        missing = [p.name for p in self.params if p.name not in values]
        if missing:
            raise ValueError(f"{self!r}: give a value for {missing}")
        env = _env(self.params, {k: float(values[k]) for k in (p.name for p in self.params)},
                   np)
        return self.KIND(**{k: _number(v, env, np) for k, v in self._numbers().items()})

    def _bind(self, values):
        like = jnp.asarray(values[self.params[0].name])
        env = _env(self.params, values, jnp)
        return self._bound(**{k: _number(v, env, jnp, like)
                              for k, v in self._numbers().items()})

    def _bound(self, **numbers) -> Bound:  # pragma: no cover - interface
        raise NotImplementedError

    def _part_names(self) -> tuple[str, ...]:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def bounds(self):
        lo, hi = _family_bounds(self)
        return lo.copy(), hi.copy()

    @property
    def part_measures(self) -> dict[str, float | None]:
        return dict.fromkeys(self._part_names())

    def _boundary_pieces(self):
        """The parts by name (the family's pieces: no geometry; :meth:`_bind` gives it)."""
        return [Piece(name, math.nan, self.dim - 1, self._refuse)
                for name in self._part_names()]

    def _refuse(self, *args):
        raise needs_values(self)

    _sdf = _outward = _refuse

    def _interior_pieces(self):
        raise needs_values(self)

    def periodic_shift(self, pair):
        raise ValueError(f"{self!r} depends on ranged parameters: its parts cannot be "
                         "periodic pairs (give the shape fixed numbers)")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={_text(v)}" for k, v in self._numbers().items())
        return f"{self.KIND.__name__}({args})"


def _frozen(v):
    if isinstance(v, (tuple, list)):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, E.Expr):
        return v
    return float(v)


def _text(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_text(x) for x in v) + ")"
    if isinstance(v, E.Expr):
        return str(v)
    return repr(v)


@functools.lru_cache(maxsize=256)
def _family_bounds(shape: Parametric):
    boxes = [shape.at(v).bounds for v in probe_values(shape.params)]
    lo = np.min([np.asarray(b[0], np.float64) for b in boxes], axis=0)
    hi = np.max([np.asarray(b[1], np.float64) for b in boxes], axis=0)
    return lo, hi


# ------------------------------------------------------------ bound leaves ----


class Bound(Shape):
    """A primitive holding one value of each number per point (arrays ``[...]`` for sizes,
    ``[..., d]`` for positions; the points are ``[..., d]``). Subclasses give ``dim``,
    ``_sdf``, ``_outward``, ``_boundary_pieces`` (per-point measures), ``_row_bounds``,
    ``adf_inside`` and ``adf_pieces`` (:mod:`pinn.geometry.adf`), all broadcasting."""

    def adf_inside(self, x):  # pragma: no cover - interface
        raise NotImplementedError

    def adf_pieces(self) -> list:  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(one per point)"


# ------------------------------------------------------- the public methods ----


def values_for(shape, params, lead: tuple[int, ...], where: str = "params") -> dict:
    """The parameters' values ``params`` (``{name: value or array}``) for points of leading
    shape ``lead``, broadcast to it, in the current float dtype."""
    if params is None:
        raise needs_values(shape)
    if not shape.params:
        raise ValueError(f"{where}: {shape!r} depends on no ranged parameter; leave "
                         "params out")
    if not isinstance(params, Mapping):
        raise TypeError(f"{where}: give the values as a mapping {{name: values}}, got "
                        f"{type(params).__name__}")
    missing = [p.name for p in shape.params if p.name not in params]
    if missing:
        raise ValueError(f"{where}: give a value for {missing} (the shape depends on "
                         f"{', '.join(p.name for p in shape.params)})")
    out = {}
    for p in shape.params:
        v = jnp.asarray(params[p.name])
        if not jnp.issubdtype(v.dtype, jnp.floating):
            v = v.astype(float_dtype())
        try:
            out[p.name] = jnp.broadcast_to(v, lead)
        except ValueError:
            raise ValueError(f"{where}: {p.name} has values of shape {tuple(v.shape)}; give "
                             f"one value, or one per point ({lead})") from None
    return out


@functools.partial(jax.jit, static_argnums=0)
def sdf_at(owner, x, values):
    return owner._bind(values)._sdf(x)


@functools.partial(jax.jit, static_argnums=(0, 3))
def contains_at(owner, x, values, tol):
    return owner._bind(values)._sdf(x) <= tol


@functools.partial(jax.jit, static_argnums=0)
def outward_at(owner, x, values):
    return owner._bind(values)._outward(x)


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
def mask_at(owner, x, values, on, tol, coords):
    bound = owner._bind(values)
    chosen, _, keep = bound._select(on, coords, tol)
    mask = piece_mask(bound, chosen, x, tol)
    return mask if keep is None else mask & keep(x)


@functools.partial(jax.jit, static_argnums=(0, 3))
def part_at(owner, x, values, tol):
    return part_index(owner._bind(values), x, tol)


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5, 6))
def draw_at(owner, key, values, sampler, kind, on, coords):
    """``((points, normals | None, part), src)`` for points with the parameters' values
    ``values`` (``{name: [n]}``), each in (on) its own shape; ``src[i]`` is ``i``, or for a
    point whose shape gave no candidate in ``MAX_ROUNDS`` rounds (only where it has almost
    no area) the index of a point whose sample (and values) stand in for it."""
    return draw_rows(owner, key, values, sampler, kind, on, coords)


def draw_rows(owner, key, values, sampler, kind, on, coords):
    """:func:`draw_at`, traced in the caller's jit."""
    if isinstance(sampler, Grid):
        raise ValueError(
            f"a regular grid cannot follow {owner!r}, whose shape changes with "
            f"{', '.join(p.name for p in owner.params)}; use sobol, halton, lhs or uniform")
    n = int(next(iter(values.values())).shape[0])
    dtype = np.dtype(float_dtype()).name
    from pinn.geometry._core import acceptance_rate

    rate = acceptance_rate(*owner._rate_key(kind, on, coords), dtype)
    k = per_point(rate)
    tol = owner.default_tol
    dunit = owner.dim if kind == "interior" else max(owner.dim - 1, 1)
    # candidate j of point i is unit point j * n + i: the first candidates of all points
    # are the sampler's first n points (a balanced net for Sobol), and so on
    rep = {name: jnp.tile(v, k) for name, v in values.items()}

    def prop(key_r):
        u = sampler.unit(key_r, n * k, dunit)
        x, nrm, part, ok = propose_rows(owner._bind(rep), kind, on, coords, tol, u)
        return (x, nrm, part), ok

    return fill_rows(key, n, k, prop)


def per_point(rate: float) -> int:
    """Candidates per point and round: all of them rejected with probability <= MISS at the
    acceptance rate ``rate`` (1 where nothing is rejected; at most 256)."""
    if rate >= 1.0:
        return 1
    return int(min(max(math.ceil(math.log(MISS) / math.log1p(-rate)), 1), 256))


def propose_rows(bound, kind: str, on, coords, tol: float, u):
    """Candidates from unit points ``u[m, d]`` for points whose values ``bound`` holds
    (``[m]`` each): ``(x[m, dim], normals | None, part[m], ok[m])``."""
    m = u.shape[0]
    if kind == "interior":
        lo, hi = bound._row_bounds()
        lo = jnp.broadcast_to(jnp.asarray(lo, u.dtype), (m, bound.dim))
        hi = jnp.broadcast_to(jnp.asarray(hi, u.dtype), (m, bound.dim))
        x = lo + u[:, : bound.dim] * (hi - lo)
        return x, None, jnp.zeros((m,), jnp.int32), bound._sdf(x) <= 0
    chosen, part_ids, keep = bound._select(on, coords, tol)
    pdim = bound.dim - 1
    meas = jnp.stack([jnp.broadcast_to(jnp.asarray(p.measure, u.dtype), (m,))
                      for p in chosen], axis=1)
    frac = meas / jnp.maximum(jnp.sum(meas, axis=1, keepdims=True), jnp.finfo(u.dtype).tiny)
    if len(chosen) == 1:
        idx = jnp.zeros((m,), jnp.int32)
        loc = u[:, :pdim]
    else:
        cum = jnp.cumsum(frac, axis=1)
        s = u[:, 0]
        idx = jnp.sum(s[:, None] >= cum[:, :-1], axis=1)
        idx = jnp.minimum(idx, len(chosen) - 1).astype(jnp.int32)
        f = jnp.take_along_axis(frac, idx[:, None], axis=1)[:, 0]
        start = jnp.take_along_axis(cum, idx[:, None], axis=1)[:, 0] - f
        loc0 = jnp.clip((s - start) / jnp.where(f > 0, f, 1.0), 0.0, 1.0)
        loc = jnp.concatenate([loc0[:, None], u[:, 1:pdim]], axis=1)[:, :pdim]
    x = normals = None
    for j, p in enumerate(chosen):
        xj = p.map(loc)
        nj = p.normal(xj)
        if x is None:
            x, normals = xj, nj
        else:
            sel = (idx == j)[:, None]
            x = jnp.where(sel, xj, x)
            normals = jnp.where(sel, nj, normals)
    ok = jnp.take_along_axis(frac, idx[:, None], axis=1)[:, 0] > 0
    if bound._n_leaves() > 1:
        leaf = jnp.asarray(np.array([p.leaf for p in chosen], np.int32))[idx]
        ok = ok & bound._accept_leaf(x, normals, leaf, tol)
    if keep is not None:
        ok = ok & keep(x)
    part = jnp.asarray(np.array(part_ids, np.int32))[idx]
    return x, normals, part, ok


def fill_rows(key, n: int, k: int, prop):
    """The first accepted of each point's ``k`` candidates (``prop(key) -> (values,
    ok[k * n])``, point ``i``'s candidates at ``i, n + i, 2 n + i, ...``), in rounds until
    every point has one (at most ``MAX_ROUNDS``); ``(values[n, ...], src[n])`` (see
    :func:`draw_at`)."""
    shapes, _ = jax.eval_shape(prop, key)
    buf = jax.tree.map(lambda v: jnp.zeros((n,) + v.shape[1:], v.dtype), shapes)

    def cond(state):
        r, _, done = state
        return (~jnp.all(done)) & (r < MAX_ROUNDS)

    def body(state):
        r, buf, done = state
        vals, ok = prop(jax.random.fold_in(key, r))
        ok = ok.reshape(k, n)
        first = jnp.argmax(ok, axis=0)
        has = jnp.any(ok, axis=0)
        new = has & ~done

        def update(b, v):
            v = v.reshape((k, n) + v.shape[1:])[first, jnp.arange(n)]
            return jnp.where(new.reshape((n,) + (1,) * (v.ndim - 1)), v, b)

        return r + 1, jax.tree.map(update, buf, vals), done | has

    _, buf, done = jax.lax.while_loop(cond, body, (jnp.int32(0), buf, jnp.zeros((n,), bool)))
    i = jnp.arange(n)
    order = jnp.argsort(~done, stable=True)  # the points that have one, first
    count = jnp.maximum(jnp.sum(done), 1)
    src = jnp.where(done, i, order[i % count])
    return jax.tree.map(lambda b: b[src], buf), src


def row_acceptance(owner, kind: str, on, coords, dtype_name: str) -> float:
    """The lowest fraction of candidates accepted over the probe values (trace time, numpy
    randomness; cached by :func:`pinn.geometry._core.acceptance_rate`); ``ValueError``
    naming the values where none is (an empty shape, a part of no length)."""
    probes = probe_values(owner.params)
    c = RATE_CANDIDATES
    dunit = owner.dim if kind == "interior" else max(owner.dim - 1, 1)
    rng = np.random.default_rng(12345)
    u = rng.random((len(probes) * c, dunit))
    values = {p.name: np.repeat([v[p.name] for v in probes], c) for p in owner.params}
    tol = owner.default_tol
    with jax.ensure_compile_time_eval():
        ok = jax.jit(lambda vals, uu: propose_rows(owner._bind(vals), kind, on, coords, tol,
                                                   uu)[3])(
            {k: jnp.asarray(v, dtype_name) for k, v in values.items()},
            jnp.asarray(u, dtype_name))
        rates = np.asarray(ok).reshape(len(probes), c).mean(axis=1)
    worst = int(np.argmin(rates))
    what = ("boundary part(s) " + (repr(on) if isinstance(on, (str, tuple)) else f"where {on}")
            if kind == "boundary" else "interior")
    if rates[worst] == 0:
        raise ValueError(
            f"the {what} of {owner!r} at {_show(probes[worst])} has no measurable size: none "
            f"of {c} candidate points were accepted; narrow the parameters' ranges to where "
            "the shape keeps it")
    if rates[worst] < 1e-3:
        warnings.warn(f"only {rates[worst]:.2e} of the candidate points lie in the {what} of "
                      f"{owner!r} at {_show(probes[worst])}; sampling it is slow", stacklevel=4)
    return max(float(rates[worst]), MIN_RATE)


# -------------------------------------------------------- distance functions ----


def parametric_distance(shape, on, inputs):
    """:func:`pinn.geometry.adf.boundary_distance` of a family: ``phi(x)`` reads each
    parameter from its column of ``x`` (``inputs``: the columns' names, default the
    shape's coordinates then its parameters) and is the distance function of the point's
    own shape."""
    from pinn.geometry.adf import _TINY, _pieces, _trimmed

    names = [p.name for p in shape._boundary_pieces()]
    want = shape._resolve_parts(tuple(on) if isinstance(on, list) else on)
    if want is None:
        raise ValueError(f"a distance function needs named boundary parts (or 'boundary'), "
                         f"not a predicate ({on})")
    dim = shape.dim
    if inputs is None:
        cols = {p.name: dim + i for i, p in enumerate(shape.params)}
    else:
        inputs = [getattr(c, "name", c) for c in inputs]
        missing = [p.name for p in shape.params if p.name not in inputs]
        if missing:
            raise ValueError(f"the distance function of {shape!r} reads {missing} from the "
                             f"points, whose columns are {inputs}")
        cols = {p.name: inputs.index(p.name) for p in shape.params}
    width = max(cols.values()) + 1
    chosen = [i for i, name in enumerate(names) if name in want]
    lo, hi = (np.asarray(b, np.float64) for b in shape.bounds)
    scale = 2.0 / float(np.max(hi - lo))

    def phi(x):
        if x.shape[-1] < width:
            raise ValueError(
                f"the distance function of {shape!r} reads "
                + ", ".join(f"{k} from column {c}" for k, c in cols.items())
                + f" of the points; got points of {x.shape[-1]} columns")
        bound = shape._bind({k: x[..., c] for k, c in cols.items()})
        pieces = _pieces(bound)
        xs = x[..., :dim]
        inv = 0.0
        for i in chosen:
            f, t = pieces[i]
            inv = inv + 1.0 / jnp.maximum(_trimmed(f(xs), None if t is None else t(xs)), _TINY)
        return scale / inv

    return phi


# ------------------------------------------------------------------- checks ----


def crossings(a, b, n: int = 256) -> tuple[dict, dict] | None:
    """Where the shape ``b`` cut from ``a`` (``a - b``) crosses ``a``'s boundary at some
    probe values and not at others (a hole that leaves its plate over the range, or a notch
    that becomes a hole): ``(values where it crosses, values where it does not)``, or None
    when it does at all of them or at none. ``b``'s boundary is sampled at each value with
    ``n`` points; it crosses where one of them lies on or outside ``a``."""
    params = merge_params(a.params, b.params)
    if not params:
        return None
    probes = probe_values(params)
    rng = np.random.default_rng(7)
    u = rng.random((len(probes) * n, max(b.dim - 1, 1)))
    values = {p.name: np.repeat([v[p.name] for v in probes], n) for p in params}
    tol = max(a.default_tol, b.default_tol)

    def run(vals, uu):
        x, _, _, ok = propose_rows(b._bind(vals), "boundary", "boundary", None, tol, uu)
        return (a._bind(vals)._sdf(x) > -tol) & ok, ok

    with jax.ensure_compile_time_eval():
        out, ok = jax.jit(run)({k: jnp.asarray(v) for k, v in values.items()}, jnp.asarray(u))
        out = np.asarray(out).reshape(len(probes), n).any(axis=1)
        seen = np.asarray(ok).reshape(len(probes), n).any(axis=1)
    out, seen = out[seen], [v for v, s in zip(probes, seen, strict=True) if s]
    if out.all() or not out.any():
        return None
    return seen[int(np.argmax(out))], seen[int(np.argmin(out))]
