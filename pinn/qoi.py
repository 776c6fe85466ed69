"""Quantities of interest: named outputs of a problem, computed from its fields.

A quantity reduces an expression of the fields (``u``, ``-k*u_x``, ``u^2``) to one
number: its integral or mean over a region, its maximum or minimum there, or its value at
a point::

    import pinn
    from pinn import qoi

    quantities = {
        "mean_T": qoi.Mean(u),                           # over the domain
        "flux_left": qoi.Integral(-k * pinn.D(u, x), on="left"),  # over a boundary part
        "T_center": qoi.Value(u, at=(0.5, 0.5)),        # at a point
        "T_max": qoi.Max(u, on="interior"),
    }
    problem = pinn.Problem(..., quantities=quantities)
    solution.quantities(params={"k": 2.0})              # {"mean_T": ..., ...}

(in a problem file: ``quantities: {mean_T: {mean: u}, flux_left: {integral: "-k*u_x",
on: left}}``).

A region is ``on``: ``"interior"`` (the domain; in space-time for an evolution problem),
``"boundary"``, a boundary part's name or a tuple of names, or a predicate of the
coordinates (``x < 0.5``: the part of the domain where it holds); ``where`` restricts
any region further by a predicate (``on="boundary", where=x == 0``); ``time`` takes the
spatial region at one time of an evolution problem.

The points are a quadrature rule (:func:`region_quadrature`): the first ``points``
points of the Sobol sequence (the package's quasi-random sampler, without its random
shift unless a ``key`` asks for one) mapped onto the region by the geometry's
measure-preserving maps, each weighted by the region's measure over ``points``. An
integral's error falls like Sobol's, about ``1/n`` up to logarithms on smooth integrands
(and regions that need no rejection: a CSG shape or a predicate cuts the integrand off at
its edge, which costs some of that rate); a mean divides by the region's measure estimated
on the same points; a maximum is taken over the points. The rule is fixed, so a quantity is
a smooth function of a parametric solution's parameters (what :func:`pinn.optimize`
differentiates).

A domain whose shape follows ranged parameters (:mod:`pinn.geometry.parametric`: a hole
of radius ``r``) has one rule for every shape: the Sobol points of the box holding all its
shapes (the family's ``bounds``), each weighted by the box's measure over ``points``, and
each query keeps the points inside its own shape (:func:`inside`; the rule of the fixed
shape of one value, what :func:`pinn.design.fem_check` integrates on, is the same points
where that shape is a box with holes cut out). Kept or not is a step in the parameters;
its derivative is taken as that of a smoothed step across a band of ``width`` (four point
spacings) about the shape's edge, so the gradient of an integral or a mean carries the
motion of the edge (Reynolds' transport term: a larger hole takes area from a mean's
measure) up to the band's quadrature error. Interior regions only (a predicate ``where``
may restrict them); a boundary region of such a shape is refused.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from pinn.data import init_fields, register
from pinn.dsl import calculus
from pinn.dsl import expr as E

__all__ = ["Quantity", "Integral", "Mean", "Max", "Min", "Value", "Quadrature",
           "region_quadrature", "inside", "DEFAULT_POINTS", "MAX_POINTS", "KINDS"]

#: Points of a region's quadrature rule unless a quantity says (a power of two: Sobol's
#: nets are balanced then).
DEFAULT_POINTS = 4096
#: The most points one quantity may take (memory: the fields and their derivatives at every
#: point, for every query at once).
MAX_POINTS = 1 << 22


#: Points mapped at once (one shape, so the geometry's maps compile once for any size).
_CHUNK = 4096


class Quadrature(NamedTuple):
    """A quadrature rule: ``points[N, d]`` (float64, the problem's coordinates) and
    ``weights[N]`` (``sum(weights * f(points))`` approximates the integral of ``f``);
    ``measure``: the region's length, area or volume estimated on the same rule (the sum of
    the weights; exact where no point is rejected).

    For a domain whose shape follows ranged parameters: ``shape``, that family (the
    problem's space); the points cover the box of all its shapes (``measure`` is the box's)
    and a query weighs each by :func:`inside` its own shape; ``width``: the band about the
    shape's edge over which that step's derivative is smoothed."""

    points: np.ndarray
    weights: np.ndarray
    measure: float
    shape: Any = None
    width: float = 0.0


def _unit(n: int, d: int, key=None) -> np.ndarray:
    """``[n, d]`` float64: the first ``n`` Sobol points, each moved to the centre of its cell
    of the grid of ``2^m >= n`` cells per axis (a fixed digital shift); a ``key`` applies
    :class:`pinn.geometry.Sobol`'s random digital shift instead."""
    if key is not None:
        import jax

        from pinn.geometry import Sobol

        with jax.enable_x64(True):
            return np.asarray(Sobol().unit(key, n, d), np.float64)
    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balance warning when n is not a power of 2
        s = qmc.Sobol(d, scramble=False, bits=32).random(n)
    # the first 2^m points sit on the grid of step 2^-m along every axis; moving them to the
    # centres of its cells (a fixed digital shift: one bit) keeps the net and makes every
    # one-dimensional projection the midpoint rule
    m = max(int(n - 1).bit_length(), 0)
    return np.floor(s * 2.0**32) * 2.0**-32 + 2.0 ** -(m + 1)


def _region_text(on, where) -> str:
    text = on if isinstance(on, str) else ", ".join(on)
    return text if where is None else f"{text} where {E.to_string_safe(where)}"


def region_quadrature(problem, on="interior", where: E.Expr | None = None, *,
                      points: int = DEFAULT_POINTS, time: float | None = None,
                      key=None) -> Quadrature:
    """The quadrature rule of a region of ``problem``'s domain (see the module doc):
    ``points`` Sobol points mapped onto ``on`` (``"interior"``, ``"boundary"``, part
    names), those where ``where`` fails (and, in a CSG shape, those its operands reject)
    dropped, each kept point weighted by the proposal's measure over ``points``.
    ``time``: the spatial region at that time (an evolution problem). ``key``: a random
    digital shift of the Sobol points (None: none, the same rule every time).
    ``ValueError`` where no point is kept."""
    import jax
    import jax.numpy as jnp

    from pinn.geometry._core import propose
    from pinn.geometry.base import predicate_fn

    if problem.space.params:  # a shape that follows ranged parameters
        return _family_quadrature(problem, on, where, points, time, key)
    domain = problem.space if time is not None else problem.domain
    kind = "interior" if on == "interior" else "boundary"
    with jax.enable_x64(True):
        spec = domain._spec(kind, None if kind == "interior" else on, None)
        u = _unit(points, spec.dunit, key)
        keep = (None if where is None else
                predicate_fn(where, [c.name for c in problem.coords], domain.default_tol))
        xs, oks = [], []
        for i in range(0, points, _CHUNK):  # chunks of one shape: the maps compile once
            part = u[i:i + _CHUNK]
            n = len(part)
            part = np.concatenate([part, np.full((_CHUNK - n, spec.dunit), 0.5)])
            x, _, _, ok = propose(spec, jnp.asarray(part))
            x = np.asarray(x, np.float64)
            ok = np.ones(_CHUNK, bool) if ok is None else np.asarray(ok, bool)
            if time is not None:
                x = np.concatenate([x, np.full((_CHUNK, 1), float(time))], axis=1)
            if keep is not None:
                ok &= np.asarray(keep(jnp.asarray(x)), bool)
            xs.append(x[:n])
            oks.append(ok[:n])
        x, ok = np.concatenate(xs), np.concatenate(oks)
    total = float(sum(p.measure for p in spec.pieces)) * float(domain._extra_measure())
    if not ok.any():
        raise ValueError(f"the region {_region_text(on, where)} holds none of the "
                         f"{points} quadrature points: it has no length, area or volume (a "
                         "predicate such as x == 0.5 selects a line of the interior, not a "
                         "region); select a region, a boundary part, or a piece of the "
                         "boundary (on: boundary, where: \"x == 0\")")
    w = np.full(int(ok.sum()), total / points)
    return Quadrature(x[ok], w, float(w.sum()))


def _no_family_boundary(problem, on) -> str | None:
    """Why ``on`` is no region of a quantity over ``problem``'s domain when its shape
    follows ranged parameters (None: it is one, or the shape is fixed)."""
    if on == "interior" or not problem.space.params:
        return None
    names = ", ".join(p.name for p in problem.space.params)
    return (f"on {on if isinstance(on, str) else list(on)!r}: the domain's shape follows "
            f"the ranged parameter(s) {names}, and quantities over its boundary are not "
            "supported yet; integrate over the interior (on: interior, optionally with a "
            "predicate such as x < 0.2) or take a value at a point")


def _family_quadrature(problem, on, where, points: int, time, key) -> Quadrature:
    """The rule of an interior region of a family of shapes (the module doc): Sobol points
    of the box of all its shapes (and the time interval, or ``time``), those where
    ``where`` fails dropped; :func:`inside` keeps each query's own."""
    import jax
    import jax.numpy as jnp

    from pinn.geometry.base import predicate_fn

    why = _no_family_boundary(problem, on)
    if why:
        raise ValueError(why)
    space = problem.space
    lo, hi = (np.asarray(b, np.float64).reshape(-1) for b in space.bounds)
    if problem.is_evolution and time is None:
        lo = np.append(lo, problem.time.t0)
        hi = np.append(hi, problem.time.t1)
    u = _unit(points, len(lo), key)
    x = lo + u * (hi - lo)
    if time is not None:
        x = np.concatenate([x, np.full((points, 1), float(time))], axis=1)
    ok = np.ones(points, bool)
    if where is not None:
        keep = predicate_fn(where, [c.name for c in problem.coords], space.default_tol)
        with jax.enable_x64(True):
            ok = np.asarray(keep(jnp.asarray(x)), bool)
        if not ok.any():
            raise ValueError(f"the region {_region_text(on, where)} holds none of the "
                             f"{points} quadrature points: it has no length, area or volume; "
                             "select a region of the domain")
    box = float(np.prod(hi - lo))
    w = np.full(int(ok.sum()), box / points)
    width = 4.0 * (box / points) ** (1.0 / len(lo))  # four point spacings
    return Quadrature(x[ok], w, float(w.sum()), shape=space, width=width)


@functools.cache
def _step_fn():
    """The step of :func:`inside`: ``step(phi, width)`` is 1 where ``phi <= 0`` (inside),
    else 0; its derivative is that of a step smoothed over ``|phi| < width`` (a
    raised-cosine kernel of unit integral), ``-delta(phi) dphi`` (built on first use: JAX
    is not imported with this module)."""
    import jax
    import jax.numpy as jnp

    @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
    def step(phi, width: float):
        return (phi <= 0).astype(phi.dtype)

    @step.defjvp
    def step_jvp(width, primals, tangents):
        (phi,), (dphi,) = primals, tangents
        t = phi / width
        kernel = jnp.where(jnp.abs(t) < 1, (1 + jnp.cos(jnp.pi * t)) / (2 * width), 0.0)
        return step(phi, width), -kernel.astype(phi.dtype) * dphi

    return step


def inside(rule: Quadrature, problem, theta, xp=np):
    """The weight of each of ``rule``'s points for the ranged parameters' values ``theta``
    (``[p]`` or ``[Q, p]``, in the order of ``problem.ranged``): ``[N]`` or ``[Q, N]``, 1 for
    the points inside that value's own shape and 0 for the others (a step of the
    shape's signed distance: with ``xp=jax.numpy`` differentiable along ``theta``, the
    edge's motion included). ``None`` for a rule of a fixed shape."""
    if rule.shape is None:
        return None
    import jax.numpy as jnp

    shape = rule.shape
    names = [p.name for p in problem.ranged]
    theta = jnp.asarray(theta)
    x = jnp.asarray(rule.points[:, :shape.dim], theta.dtype)
    lead = (*theta.shape[:-1], x.shape[0])
    values = {p.name: jnp.broadcast_to(theta[..., names.index(p.name), None], lead)
              for p in shape.params}
    phi = shape.sdf(jnp.broadcast_to(x, (*lead, shape.dim)), params=values)
    out = _step_fn()(phi, float(rule.width))
    return out if xp is jnp else np.asarray(out, np.float64)


class Quantity:
    """The protocol of a quantity of interest: ``expr`` (an expression of the fields) and
    how it is reduced to one number.

    ``KIND``: its key in a problem file; ``REGION``: whether it reduces over the points
    of a region (``on``, ``where``, ``time``, ``points``) rather than at one point.
    """

    KIND: ClassVar[str] = ""
    REGION: ClassVar[bool] = True
    expr: E.Expr

    def expressions(self) -> tuple[E.Expr, ...]:
        """The expressions it is made of (the value's and a region's predicate)."""
        return (self.expr,)

    def quadrature(self, problem, *, key=None) -> Quadrature:  # pragma: no cover - interface
        """Its points and weights in ``problem``'s domain."""
        raise NotImplementedError

    def reduce(self, values, rule: Quadrature, xp=np, mask=None):  # pragma: no cover
        """The quantity from ``values[..., N]`` at the rule's points (``xp``: numpy or
        jax.numpy): ``[...]``. ``mask[..., N]``: each point's weight for a query of a shape
        that follows ranged parameters (:func:`inside`; None: every point counts)."""
        raise NotImplementedError

    def validate(self, problem, name: str) -> None:
        """``ValueError`` (``quantities.<name>: ...``, naming the fix) where the quantity does
        not fit ``problem``: unknown fields, coordinates or parameters, a derivative of too
        high an order, a region that is not the domain's."""
        where = f"quantities.{name}"
        _check_expr(problem, self.expr, where)

    def to_data(self) -> dict:
        """The constructor's arguments, for the run format (:mod:`pinn.serialize`)."""
        return init_fields(self)

    def describe(self) -> str:
        """One line: what it computes (``mean of u over interior``)."""
        raise NotImplementedError  # pragma: no cover - interface


def _check_expr(problem, ex: E.Expr, where: str) -> None:
    from pinn.dsl.calculus import MAX_DERIVATIVE_ORDER, derivative_order

    if ex.is_vector:
        raise ValueError(f"{where}: {E.to_string_safe(ex)} is a vector; a quantity reduces a "
                         "scalar expression (take a component or dot(...))")
    fields = {f.name for f in problem.fields}
    bad = sorted({f.name for f in calculus.fields_of(ex)} - fields)
    if bad:
        raise ValueError(f"{where}: unknown field(s) {bad}; this problem's fields are "
                         f"{sorted(fields)}")
    coords = [c.name for c in problem.coords]
    bad = sorted({c.name for c in calculus.coords_of(ex)} - set(coords))
    if bad:
        raise ValueError(f"{where}: unknown coordinate(s) {bad}; this problem's coordinates "
                         f"are {coords}")
    k = derivative_order(ex)
    if k > MAX_DERIVATIVE_ORDER:
        raise ValueError(f"{where}: a derivative of order {k}; quantities take derivatives up "
                         f"to order {MAX_DERIVATIVE_ORDER}: lower the order")
    known = {q.name: q for q in problem.params}
    for p in calculus.params_of(ex):
        if p.name in known and known[p.name] != p:
            q = known[p.name]
            raise ValueError(f"{where}: parameter {p.name!r} is defined twice with different "
                             f"values ({q.range or q.value} and {p.range or p.value})")
        if p.name in {c.name for c in problem.coords} | {f.name for f in problem.fields}:
            raise ValueError(f"{where}: {p.name!r} is a coordinate or field of the problem, "
                             "not a parameter")
        if p.range is not None and p not in problem.ranged:
            raise ValueError(f"{where}: the ranged parameter {p.name!r} is not an input of "
                             "this problem's network (no equation, condition or exact "
                             "solution uses it); use a fixed value")
        if p.learnable and p not in problem.learnable:
            raise ValueError(f"{where}: the learnable parameter {p.name!r} is not learned by "
                             "this problem (no equation or condition uses it); use a fixed "
                             "value")


def _region(on, where):
    """``(on, where)`` normalised: a predicate given as ``on`` is a region of the domain."""
    if isinstance(on, E.Expr):
        where = on if where is None else E.And(on, where)
        on = "interior"
    if isinstance(on, list):
        on = tuple(on)
    if not (isinstance(on, str) or (isinstance(on, tuple) and on
                                    and all(isinstance(s, str) for s in on))):
        raise TypeError(f"on: 'interior', 'boundary', a part name, a tuple of part names or "
                        f"a predicate of the coordinates (x < 0.5), got {on!r}")
    if isinstance(on, tuple) and "interior" in on:
        raise ValueError(f"on: {list(on)}: 'interior' is a region of its own; list boundary "
                         "parts only")
    if where is not None and not isinstance(where, (E.Compare, E.And, E.Or, E.Not)):
        raise ValueError(f"where: {E.to_string_safe(where)} is not a condition; write a "
                         "comparison such as x < 0.5 or x == 0")
    return on, where


@dataclass(frozen=True, eq=False)
class _OverRegion(Quantity):
    """An expression reduced over the points of a region (see the module doc)."""

    expr: E.Expr
    on: Any = "interior"
    where: E.Expr | None = None
    time: float | None = None
    points: int = DEFAULT_POINTS

    def __post_init__(self):
        object.__setattr__(self, "expr", E.as_expr(self.expr))
        on, where = _region(self.on, self.where)
        object.__setattr__(self, "on", on)
        object.__setattr__(self, "where", where)
        n = self.points
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not (
                1 <= n <= MAX_POINTS):
            raise ValueError(f"points: a whole number from 1 to {MAX_POINTS} (a power of two "
                             f"balances Sobol's points), got {n!r}")
        object.__setattr__(self, "points", int(n))
        if self.time is not None:
            t = self.time
            if isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not (
                    math.isfinite(float(t))):
                raise ValueError(f"time: a finite number, got {t!r}")
            object.__setattr__(self, "time", float(t))

    def expressions(self) -> tuple[E.Expr, ...]:
        return (self.expr,) + (() if self.where is None else (self.where,))

    def validate(self, problem, name: str) -> None:
        where = f"quantities.{name}"
        _check_expr(problem, self.expr, where)
        why = _no_family_boundary(problem, self.on)
        if why:
            raise ValueError(f"{where}: {why}")
        if self.on != "interior":
            try:
                problem.domain._resolve_parts(self.on)
            except (TypeError, ValueError):
                parts = ", ".join(("interior", "boundary", *problem.domain.boundary_parts))
                raise ValueError(f"{where}: on {self.on!r} is not a region of this domain; "
                                 f"write one of {parts}, a list of parts or a predicate "
                                 "such as x < 0.5") from None
        if self.where is not None:
            if calculus.fields_of(self.where):
                raise ValueError(f"{where}: the predicate {E.to_string_safe(self.where)} uses "
                                 "fields; a region is selected by its coordinates")
            if any(p.range is not None for p in calculus.params_of(self.where)):
                raise ValueError(f"{where}: the predicate {E.to_string_safe(self.where)} uses "
                                 "a ranged parameter; a region is the same for every value "
                                 "(write it in the coordinates)")
            coords = [c.name for c in problem.coords]
            bad = sorted({c.name for c in calculus.coords_of(self.where)} - set(coords))
            if bad:
                raise ValueError(f"{where}: the predicate uses unknown coordinate(s) {bad}; "
                                 f"this problem's coordinates are {coords}")
        if self.time is not None:
            if not problem.is_evolution:
                raise ValueError(f"{where}: time {self.time:g} is for an evolution problem; "
                                 "this one has no time: drop it")
            t0, t1 = problem.time.t0, problem.time.t1
            if not t0 <= self.time <= t1:
                raise ValueError(f"{where}: time {self.time:g} is outside the time interval "
                                 f"[{t0:g}, {t1:g}]")
            if self.where is not None and problem.time_coord in calculus.coords_of(self.where):
                raise ValueError(f"{where}: the predicate uses time, but time is fixed at "
                                 f"{self.time:g}; drop one of them")

    def quadrature(self, problem, *, key=None) -> Quadrature:
        return region_quadrature(problem, self.on, self.where, points=self.points,
                                 time=self.time, key=key)

    def describe(self) -> str:
        at = "" if self.time is None else f" at time {self.time:g}"
        return (f"{self.KIND} of {E.to_string_safe(self.expr)} over "
                f"{_region_text(self.on, self.where)}{at}")


@register("quantity")
@dataclass(frozen=True, eq=False)
class Integral(_OverRegion):
    """The integral of ``expr`` over a region (by length, area or volume; over space and
    time for a region of an evolution problem's domain without ``time``)."""

    KIND: ClassVar[str] = "integral"

    def reduce(self, values, rule: Quadrature, xp=np, mask=None):
        w = xp.asarray(rule.weights, values.dtype)
        return xp.sum(values * (w if mask is None else w * mask), axis=-1)


@register("quantity")
@dataclass(frozen=True, eq=False)
class Mean(_OverRegion):
    """The mean of ``expr`` over a region: its integral over the region's measure."""

    KIND: ClassVar[str] = "mean"

    def reduce(self, values, rule: Quadrature, xp=np, mask=None):
        if mask is None:
            return xp.mean(values, axis=-1)  # equal weights: the integral over the measure
        return xp.sum(values * mask, axis=-1) / xp.sum(mask, axis=-1)


@register("quantity")
@dataclass(frozen=True, eq=False)
class Max(_OverRegion):
    """The largest value of ``expr`` at the region's points (a lower bound of the true
    maximum, closer with more ``points``)."""

    KIND: ClassVar[str] = "max"

    def reduce(self, values, rule: Quadrature, xp=np, mask=None):
        return xp.max(values if mask is None else xp.where(mask > 0, values, -xp.inf),
                      axis=-1)


@register("quantity")
@dataclass(frozen=True, eq=False)
class Min(_OverRegion):
    """The smallest value of ``expr`` at the region's points."""

    KIND: ClassVar[str] = "min"

    def reduce(self, values, rule: Quadrature, xp=np, mask=None):
        return xp.min(values if mask is None else xp.where(mask > 0, values, xp.inf),
                      axis=-1)


@register("quantity")
@dataclass(frozen=True, eq=False)
class Value(Quantity):
    """The value of ``expr`` at the point ``at`` (one number per coordinate of the problem,
    time included for an evolution problem), in the closed domain."""

    KIND: ClassVar[str] = "value"
    REGION: ClassVar[bool] = False

    expr: E.Expr
    at: tuple[float, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "expr", E.as_expr(self.expr))
        try:
            at = tuple(float(v) for v in np.asarray(self.at, dtype=np.float64).reshape(-1))
        except (TypeError, ValueError):
            raise ValueError(f"at: a point (one number per coordinate), got {self.at!r}"
                             ) from None
        if not at or not all(math.isfinite(v) for v in at) or np.ndim(self.at) != 1:
            raise ValueError(f"at: a point (a list of finite numbers, one per coordinate), "
                             f"got {self.at!r}")
        object.__setattr__(self, "at", at)

    def validate(self, problem, name: str) -> None:
        where = f"quantities.{name}"
        _check_expr(problem, self.expr, where)
        coords = [c.name for c in problem.coords]
        if len(self.at) != len(coords):
            raise ValueError(f"{where}: at has {len(self.at)} number(s), this problem has "
                             f"{len(coords)} coordinates ({', '.join(coords)}); give one "
                             "number each")
        dom = problem.domain
        shown = ", ".join(f"{c}={v:g}" for c, v in zip(coords, self.at, strict=True))
        if problem.space.params:  # a shape that follows ranged parameters: in every one
            from pinn.geometry.parametric import probe_values

            space, at = problem.space, np.asarray([self.at[:problem.space.dim]])
            t_ok = not problem.is_evolution or (
                problem.time.t0 <= self.at[-1] <= problem.time.t1)
            out = [v for v in probe_values(space.params)
                   if not bool(np.asarray(space.at(v).contains(at, space.default_tol))[0])]
            if out or not t_ok:
                at_v = (", ".join(f"{k}={x:.6g}" for k, x in out[0].items()) if out
                        else "its time")
                raise ValueError(f"{where}: the point {shown} lies outside the domain at "
                                 f"{at_v}; give a point inside the shape at every value of "
                                 "the ranged parameters")
            return
        if not bool(np.asarray(dom.contains(np.asarray([self.at]), dom.default_tol))[0]):
            raise ValueError(f"{where}: the point {shown} lies outside the domain; give a "
                             "point of the domain (or on its boundary)")

    def quadrature(self, problem, *, key=None) -> Quadrature:
        return Quadrature(np.asarray([self.at], np.float64), np.ones(1), 0.0)

    def reduce(self, values, rule: Quadrature, xp=np, mask=None):
        return values[..., 0]

    def describe(self) -> str:
        return f"value of {E.to_string_safe(self.expr)} at {list(self.at)}"


#: The quantity classes by their key in a problem file.
KINDS: dict[str, type[Quantity]] = {c.KIND: c for c in (Integral, Mean, Max, Min, Value)}
