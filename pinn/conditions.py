"""Boundary, initial, data and constraint conditions.

Each condition is data, and knows itself: every condition type is a
:class:`Condition` and provides

- ``expressions()``: the expressions it is made of (values, coefficients, a
  predicate), which the Problem checks for unknown coordinates and parameters;
- ``fields_used()``: the fields it constrains;
- ``validate(problem, name)``: checks against a problem (raises ``ValueError``
  naming the fix);
- ``residuals(problem, name)``: a :class:`Residuals`, the expressions that
  vanish where the condition holds and where that is; the PINN loss
  (:mod:`pinn.train.loss`) and the manufactured-solution check
  (:mod:`pinn.report.manufactured`) are both built from it;
- ``hard_outputs(problem, name)`` / ``periodic_inputs(problem, name)``: what a
  ``hard=True`` condition builds into the network (output transforms, input
  embedding); ``kink_inputs()``: surfaces across which the network's gradient may
  jump (an energy term's);
- ``for_window(problem, name, window)``: the condition on a time window of a marched
  problem (:mod:`pinn.marching`): itself, its data inside the window, or the previous
  window's values as the initial values;
- ``to_data()`` / ``from_data(arguments)``: its constructor's arguments as data and
  back (expressions, arrays and numbers; the run format, :mod:`pinn.serialize`).

A new condition type is a subclass providing these methods; the FEM baseline
(:mod:`pinn.fem`) keeps its own table of the types it supports.

``on`` selects where a boundary condition holds:

- ``"boundary"``: the whole boundary of the spatial domain;
- a part name (``"left"``) or a tuple of names, as the geometry names them;
- a predicate in the PDE language (``eq(x, 0)``, ``x**2 + y**2 < 0.25``), which
  selects the boundary points where it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

from pinn.data import register
from pinn.dsl import calculus
from pinn.dsl import expr as E

__all__ = ["Condition", "Residuals", "HardOutput", "Window", "normal_symbols", "Dirichlet",
           "Neumann", "Robin", "Periodic", "Initial", "Constraint", "Energy", "Data",
           "LossTerm"]

Where = str | tuple | E.Expr


def normal_symbols(dim: int) -> tuple[E.Coord, ...]:
    """The per-point symbols of the outward normal (Neumann and Robin residuals use them)."""
    return tuple(E.Coord(f"n__{i}") for i in range(dim))


@dataclass(frozen=True, eq=False)
class Residuals:
    """Expressions that vanish where a condition holds, and where that is.

    ``on``: ``"interior"`` (the space-time domain), ``"initial"`` (the initial
    time slice) or a boundary selection (``"boundary"``, parts, a predicate).
    ``normals``: the expressions use :func:`normal_symbols` (outward normal).
    ``match``: ``(axis, position)``, periodic matching: each residual at a point
    of ``on`` minus the same residual at the point moved to ``position`` along
    coordinate ``axis``.  ``points`` / ``targets``: fixed points ``[N, d]`` where
    the expressions must equal ``targets[N, k]`` (observations; ``on`` unused).
    """

    exprs: Mapping[str, E.Expr]
    on: Where = "boundary"
    normals: bool = False
    match: tuple[int, float] | None = None
    points: np.ndarray | None = None
    targets: np.ndarray | None = None


@dataclass(frozen=True)
class HardOutput:
    """One field's exact constraint built into the network output.

    ``kind="dirichlet"``: ``field = value`` on the box ``walls`` (see
    :func:`pinn.nets.box_distance`), or on the boundary ``parts`` of any other shape
    (through its approximate distance function, :mod:`pinn.geometry.adf`); ``names``: the
    boundary parts it holds on, either way (several hard conditions of one field on
    different parts are blended into one lift, :func:`pinn.geometry.adf.lift`);
    ``kind="initial"``: ``field = value`` (and ``D(field, t) = rate``) at the initial time.
    """

    kind: str
    field: E.Field
    value: E.Expr
    walls: tuple = ()
    rate: E.Expr | None = None
    parts: tuple | None = None
    names: tuple = ()


class Window(NamedTuple):
    """A time window ``[t0, t1]`` of a problem trained window by window (:mod:`pinn.marching`).

    ``first``/``last``: whether it starts or ends the problem's interval; ``start(field,
    rate)``: the previous window's ``field`` (``rate``: its time derivative) at ``t0``, as
    an expression of the spatial coordinates, or ``None`` where only the window's network is
    evaluated (not trained)."""

    t0: float
    t1: float
    first: bool
    last: bool
    start: Callable[[E.Field, bool], E.Expr] | None = None


def check_hard_subset(problem, name: str, h) -> None:
    """A hard condition on a field declared on a subset of the coordinates must not bring
    in the others (the constraint multiplies the network by a distance and adds a value):
    ValueError naming the fix otherwise."""
    f = next(g for g in problem.fields if g == h.field)
    if f.coords is None:
        return
    have = set(f.coords)
    spatial = [c.name for c in problem.spatial]
    if h.kind == "initial":
        used = [problem.time_coord.name] if problem.time_coord is not None else []
    elif h.parts is None:  # box walls: their axes
        used = [spatial[w if isinstance(w, int) else w[0]] for w in h.walls]
    else:  # the approximate distance function of the shape: every spatial coordinate
        used = list(spatial)
    for e in (h.value, h.rate):
        if e is not None:
            used += [c.name for c in calculus.coords_of(e)]
    missing = sorted(set(used) - have)
    if missing:
        raise ValueError(
            f"conditions.{name}: a hard condition on {f.name}, declared on "
            f"[{', '.join(f.coords)}], would make it depend on {', '.join(missing)}; make the "
            "condition soft (hard=False) or declare the field on those coordinates too")


class Condition:
    """The protocol of a condition type (see the module docstring)."""

    weight: float = 1.0
    hard: bool = False
    #: it sets the values at the initial time (an evolution problem, time marching)
    initial: ClassVar[bool] = False

    @property
    def kind(self) -> str:
        return type(self).__name__.lower()

    def expressions(self) -> tuple[E.Expr, ...]:
        """The expressions the condition is made of (including an ``on`` predicate)."""
        return _predicate(getattr(self, "on", None))

    def fields_used(self) -> tuple[E.Field, ...]:
        return ()

    def validate(self, problem, name: str) -> None:
        """Raise ``ValueError`` (naming the fix) if the condition does not fit ``problem``."""

    def prescribed(self) -> tuple[tuple[str, E.Expr], ...]:
        """The values it prescribes, as ``(what, expression)`` (``"boundary value"``,
        ``"initial value"``): what a problem file's check evaluates for finiteness."""
        return ()

    def residuals(self, problem, name: str) -> Residuals:
        raise NotImplementedError(
            f"conditions.{name}: {type(self).__name__} does not define residuals(problem, name); "
            "a condition type must return the expressions that vanish where it holds"
        )

    def hard_outputs(self, problem, name: str) -> tuple[HardOutput, ...]:
        return ()

    def periodic_inputs(self, problem, name: str) -> dict[int, float]:
        return {}

    def kink_inputs(self) -> tuple[E.Expr, ...]:
        """Expressions ``phi`` of the coordinates across whose zero sets the network's
        gradient may jump (extra inputs ``|phi|/s``, :func:`pinn.network.kink_inputs`)."""
        return ()

    def loss_term(self, problem, name: str, apply, sampler, dtype):
        """A loss term of the condition's own, or ``None`` (the default: the loss is built
        from :meth:`residuals`). Else ``(evaluate, sample)``: ``evaluate(params, points) ->
        scalar`` and ``sample(key, params) -> points`` (``None``: ``points`` is ``None``).
        ``apply(net_params, x) -> [N, n_fields]`` is the network with the hard conditions;
        ``sampler(on, n)`` gives a ``sample`` for a region (``"interior"``, ``"initial"``,
        a boundary selection; ``n`` points, ``None``: the run's count for that region)."""
        return None

    def with_hard(self, hard: bool) -> Condition:
        """The same condition with ``hard`` set (a plan's choice, :mod:`pinn.plan`)."""
        return type(self).from_data({**self.to_data(), "hard": bool(hard)})

    def for_window(self, problem, name: str, window: Window) -> Condition | None:
        """This condition on the time ``window`` (:mod:`pinn.marching`; ``None``: none
        there). Boundary conditions, constraints and equations hold as given (their
        expressions see the true time): itself."""
        return self

    def to_data(self) -> dict:
        """The constructor's arguments (expressions, arrays, numbers, names), for the run
        format (:mod:`pinn.serialize`); :meth:`from_data` builds the condition again."""
        raise NotImplementedError(f"{type(self).__name__} does not define to_data()")

    @classmethod
    def from_data(cls, arguments: Mapping) -> Condition:
        return cls(**arguments)


def _by_name(pairs) -> dict[str, E.Expr]:
    return {f.name: v for f, v in pairs}


def _by_field(mapping: Mapping) -> dict[E.Field, object]:
    return {E.Field(str(k)): v for k, v in dict(mapping).items()}


def _values(target, value) -> tuple[tuple[E.Field, E.Expr], ...]:
    """Normalise ``(u, 0)`` or ``({u: 0, v: 1}, None)`` to ((field, expr), ...)."""
    if isinstance(target, Mapping):
        if value is not None:
            raise TypeError("give either a {field: value} mapping or a field and a value")
        items = target.items()
    else:
        if value is None:
            raise TypeError(f"missing the value for {target}")
        items = [(target, value)]
    out = []
    for f, v in items:
        if not isinstance(f, E.Field):
            raise TypeError(f"conditions are set on fields, got {f!r}")
        out.append((f, E.as_expr(v)))
    return tuple(out)


def _where(on) -> Where:
    if isinstance(on, (list, tuple)):
        return tuple(on)
    if isinstance(on, (str, E.Expr)):
        return on
    raise TypeError(
        f"'on' must be a boundary part name, a tuple of names or a predicate, got {on!r}"
    )


def _predicate(on) -> tuple[E.Expr, ...]:
    return (on,) if isinstance(on, E.Expr) else ()


def _set(obj, **kw) -> None:
    for k, v in kw.items():
        object.__setattr__(obj, k, v)


def _one_field(kind: str, target) -> E.Field:
    if not isinstance(target, E.Field):
        raise TypeError(f"{kind} is set on a field, got {target!r}")
    return target


def _normal_derivative(problem, f: E.Field) -> E.Expr:
    pairs = zip(normal_symbols(len(problem.spatial)), problem.spatial, strict=True)
    return sum((n_i * E.Derivative(f, (x_i,)) for n_i, x_i in pairs), start=E.Number(0))


def _needs_time(problem, name: str, what: str) -> None:
    if not problem.is_evolution:
        raise ValueError(f"conditions.{name}: {what} needs a time interval in the domain "
                         "(Shape * TimeInterval(t0, t1)); remove it for a steady problem")


def _hard_walls(problem, name, on) -> dict:
    """Where a hard Dirichlet condition holds: ``{"walls": ...}`` for the ``box_distance`` of
    a box, ``{"parts": ...}`` for the approximate distance function of any other shape."""
    from pinn import geometry as G

    space = problem.space
    parts = (on,) if isinstance(on, str) else on
    if not isinstance(parts, tuple) or not all(isinstance(p, str) for p in parts):
        raise ValueError(
            f"conditions.{name}: a hard Dirichlet condition needs named parts (or 'boundary'), "
            f"not a predicate; use hard=False with on={on}"
        )
    names = tuple(space.boundary_parts if on == "boundary" else parts)
    if isinstance(space, (G.Interval, G.Rectangle, G.Box)):
        return {"walls": _box_walls(space, name, on, parts), "names": names}
    from pinn.geometry.adf import boundary_distance

    try:
        boundary_distance(space, parts)
    except ValueError as exc:
        raise ValueError(f"conditions.{name}: {exc}") from None
    return {"parts": names, "names": names}


def _box_walls(space, name, on, parts) -> tuple:
    """The ``box_distance`` walls of a hard Dirichlet condition on a box's parts."""
    if on == "boundary":
        return tuple(range(space.dim))
    walls = []
    for p in parts:
        if p not in space.boundary_parts:
            raise ValueError(f"conditions.{name}.on: unknown part {p!r}; this "
                             f"{type(space).__name__} has {', '.join(space.boundary_parts)}")
        walls.append(space.face(p))
    return tuple(walls)


def periodic_axis(problem, name: str, pair: tuple[str, str]) -> tuple[int, float, float]:
    """The coordinate axis normal to a periodic pair of faces and the faces' two positions."""
    import jax

    from pinn.geometry import Uniform

    key = jax.random.PRNGKey(0)
    positions, axes = [], []
    for part in pair:
        try:
            bs = problem.space.sample_boundary(key, 64, Uniform(), on=part)
        except ValueError as err:
            raise ValueError(f"conditions.{name}.pair: {err}") from None
        normals = np.asarray(bs.normals)
        pts = np.asarray(bs.points)
        axis = int(np.argmax(np.abs(normals).mean(axis=0)))
        if not np.allclose(np.abs(normals[:, axis]), 1.0, atol=1e-6) or np.ptp(pts[:, axis]) > 1e-9:
            raise ValueError(
                f"conditions.{name}: periodic part {part!r} is not a flat face perpendicular to a "
                "coordinate axis; periodic pairs must be opposite faces (e.g. left/right)"
            )
        axes.append(axis)
        positions.append(float(pts[0, axis]))
    if axes[0] != axes[1]:
        raise ValueError(
            f"conditions.{name}: parts {pair} are not opposite faces (normals along "
            f"different axes)"
        )
    return axes[0], positions[0], positions[1]


# ---------------------------------------------------------------------------
# the condition types


@register("condition")
@dataclass(frozen=True)
class Dirichlet(Condition):
    """``field = value`` on a boundary part.  ``hard=True``: built into the network output;
    ``False``: a loss term; ``None`` (the default): the plan decides (:mod:`pinn.plan`:
    built in where the geometry can, a loss term where it cannot)."""

    values: tuple[tuple[E.Field, E.Expr], ...]
    on: Where = "boundary"
    weight: float = 1.0
    hard: bool | None = None

    def __init__(self, target, value=None, *, on: Where = "boundary", weight: float = 1.0,
                 hard: bool | None = None):
        _set(self, values=_values(target, value), on=_where(on), weight=float(weight),
             hard=None if hard is None else bool(hard))

    def expressions(self):
        return tuple(v for _, v in self.values) + _predicate(self.on)

    def fields_used(self):
        return tuple(f for f, _ in self.values)

    def residuals(self, problem, name):
        return Residuals({f"{i}": f - v for i, (f, v) in enumerate(self.values)}, self.on)

    def prescribed(self):
        return tuple(("boundary value", v) for _, v in self.values)

    def to_data(self):
        return {"values": _by_name(self.values), "on": self.on, "weight": self.weight,
                "hard": self.hard}

    @classmethod
    def from_data(cls, arguments):
        a = dict(arguments)
        return cls(_by_field(a.pop("values")), **a)

    def hard_outputs(self, problem, name):
        if not self.hard:
            return ()
        where = _hard_walls(problem, name, self.on)
        return tuple(HardOutput("dirichlet", f, v, **where) for f, v in self.values)


@register("condition")
@dataclass(frozen=True)
class Neumann(Condition):
    """``n · grad(field) = value`` on a boundary part (outward normal)."""

    field: E.Field
    value: E.Expr
    on: Where = "boundary"
    weight: float = 1.0

    def __init__(self, target: E.Field, value, *, on: Where = "boundary", weight: float = 1.0):
        _set(self, field=_one_field("Neumann", target), value=E.as_expr(value), on=_where(on),
             weight=float(weight))

    def expressions(self):
        return (self.value, *_predicate(self.on))

    def fields_used(self):
        return (self.field,)

    def residuals(self, problem, name):
        dn = _normal_derivative(problem, self.field)
        return Residuals({"0": dn - self.value}, self.on, normals=True)

    def to_data(self):
        return {"target": self.field, "value": self.value, "on": self.on,
                "weight": self.weight}


@register("condition")
@dataclass(frozen=True)
class Robin(Condition):
    """``a*field + b*(n · grad field) = value`` on a boundary part."""

    field: E.Field
    a: E.Expr
    b: E.Expr
    value: E.Expr
    on: Where = "boundary"
    weight: float = 1.0

    def __init__(self, target: E.Field, a, b, value, *, on: Where = "boundary",
                 weight: float = 1.0):
        _set(self, field=_one_field("Robin", target), a=E.as_expr(a), b=E.as_expr(b),
             value=E.as_expr(value), on=_where(on), weight=float(weight))

    def expressions(self):
        return (self.a, self.b, self.value, *_predicate(self.on))

    def fields_used(self):
        return (self.field,)

    def residuals(self, problem, name):
        dn = _normal_derivative(problem, self.field)
        return Residuals({"0": self.a * self.field + self.b * dn - self.value}, self.on,
                         normals=True)

    def to_data(self):
        return {"target": self.field, "a": self.a, "b": self.b, "value": self.value,
                "on": self.on, "weight": self.weight}


@register("condition")
@dataclass(frozen=True)
class Periodic(Condition):
    """Values (and derivatives up to ``order`` along ``coord``) match between two parts.

    ``pair=("left", "right")`` on a rectangle: the points of ``left`` are mapped
    to ``right`` by translating along the coordinate normal to them.
    ``hard=True``: exact periodicity through a periodic input embedding.
    """

    fields: tuple[E.Field, ...]
    pair: tuple[str, str]
    order: int = 1
    weight: float = 1.0
    hard: bool = False

    def __init__(self, fields, pair: Sequence[str], *, order: int = 1, weight: float = 1.0,
                 hard: bool = False):
        fields = (fields,) if isinstance(fields, E.Field) else tuple(fields)
        for f in fields:
            if not isinstance(f, E.Field):
                raise TypeError(f"Periodic is set on fields, got {f!r}")
        if len(pair) != 2:
            raise ValueError(f"Periodic needs a pair of boundary parts, got {pair!r}")
        if order < 0:
            raise ValueError(f"Periodic order must be >= 0, got {order}")
        _set(self, fields=fields, pair=(str(pair[0]), str(pair[1])), order=int(order),
             weight=float(weight), hard=bool(hard))

    def fields_used(self):
        return self.fields

    def residuals(self, problem, name):
        axis, _, b_val = periodic_axis(problem, name, self.pair)
        x_axis = problem.coords[axis]
        exprs = {}
        for f in self.fields:
            exprs[f"{f.name}:0"] = f
            for k in range(1, self.order + 1):
                exprs[f"{f.name}:{k}"] = E.Derivative(f, (x_axis,) * k)
        return Residuals(exprs, self.pair[0], match=(axis, b_val))

    def periodic_inputs(self, problem, name):
        if not self.hard:
            return {}
        axis, a_val, b_val = periodic_axis(problem, name, self.pair)
        return {axis: abs(b_val - a_val)}

    def to_data(self):
        return {"fields": self.fields, "pair": self.pair, "order": self.order,
                "weight": self.weight, "hard": self.hard}


@register("condition")
@dataclass(frozen=True)
class Initial(Condition):
    """``field = value`` at the initial time; ``rate`` sets ``D(field, t)`` there too.

    ``hard=True`` builds the initial value into the output:
    ``u = u0(x) + (t - t0) * N(x, t)`` (with a rate, ``u0 + (t - t0) v0 + (t - t0)^2 N``);
    ``False``: a loss term; ``None`` (the default): the plan decides (:mod:`pinn.plan`:
    a start with a rate, a second-order evolution's, is built in where it can be).
    """

    values: tuple[tuple[E.Field, E.Expr], ...]
    rates: tuple[tuple[E.Field, E.Expr], ...] = ()
    weight: float = 1.0
    hard: bool | None = None

    initial = True

    def __init__(self, target, value=None, *, rate=None, weight: float = 1.0,
                 hard: bool | None = None):
        values = _values(target, value)
        rates: tuple = ()
        if rate is not None:
            if isinstance(rate, Mapping):
                rates = _values(rate, None)
            else:
                if len(values) != 1:
                    raise TypeError("give rates as a {field: value} mapping for several fields")
                rates = ((values[0][0], E.as_expr(rate)),)
        _set(self, values=values, rates=rates, weight=float(weight),
             hard=None if hard is None else bool(hard))

    def expressions(self):
        return tuple(v for _, v in self.values) + tuple(v for _, v in self.rates)

    def fields_used(self):
        return tuple(f for f, _ in self.values)

    def validate(self, problem, name):
        _needs_time(problem, name, "an initial condition")

    def prescribed(self):
        return tuple(("initial value", v) for _, v in (*self.values, *self.rates))

    def residuals(self, problem, name):
        _needs_time(problem, name, "an initial condition")
        exprs = {f"v{i}": f - v for i, (f, v) in enumerate(self.values)}
        exprs.update({f"r{i}": E.Derivative(f, (problem.time_coord,)) - v
                      for i, (f, v) in enumerate(self.rates)})
        return Residuals(exprs, "initial")

    def hard_outputs(self, problem, name):
        if not self.hard:
            return ()
        _needs_time(problem, name, "an initial condition")
        rates = dict(self.rates)
        return tuple(HardOutput("initial", f, v, rate=rates.get(f)) for f, v in self.values)

    def for_window(self, problem, name, window):
        """In the first window itself; in a later one the previous window's values (and
        rates) at its start (``window.start``), built into the network (exactly carried
        over); the problem's own values, soft, where the window is only evaluated (a soft
        condition does not enter the network)."""
        if window.first:
            return self
        if window.start is None:
            return Initial(dict(self.values), rate=dict(self.rates) or None,
                           weight=self.weight, hard=False)
        rates = {f: window.start(f, True) for f, _ in self.rates}
        return Initial({f: window.start(f, False) for f, _ in self.values},
                       rate=rates or None, weight=self.weight, hard=True)

    def to_data(self):
        return {"values": _by_name(self.values), "rates": _by_name(self.rates),
                "weight": self.weight, "hard": self.hard}

    @classmethod
    def from_data(cls, arguments):
        a = dict(arguments)
        rates = _by_field(a.pop("rates", None) or {})
        return cls(_by_field(a.pop("values")), rate=rates or None, **a)


@register("condition")
@dataclass(frozen=True)
class Constraint(Condition):
    """Any expression ``= 0`` on a region: ``on="interior"``, ``"boundary"``, parts, predicate."""

    expr: E.Expr
    on: Where = "interior"
    weight: float = 1.0

    def __init__(self, expr, *, on: Where = "interior", weight: float = 1.0):
        _set(self, expr=E.as_expr(expr), on=_where(on), weight=float(weight))

    def expressions(self):
        return (self.expr, *_predicate(self.on))

    def residuals(self, problem, name):
        return Residuals({"0": self.expr}, self.on)

    def to_data(self):
        return {"expr": self.expr, "on": self.on, "weight": self.weight}


@register("condition")
@dataclass(frozen=True)
class Energy(Condition):
    """A variational term: ``measure`` times the mean over ``on`` of an energy ``density``
    (an expression of the coordinates, the fields and their first derivatives), minimised
    as it is, not squared: its first variation is the weak form of an equation, whose flux
    is continuous across a coefficient's jumps where a squared pointwise residual says
    nothing there. ``kinks``: expressions ``phi`` of the coordinates whose zero sets are
    those jumps; ``|phi|`` (scaled to at most 1 on the domain's box) are extra inputs of the
    network, so that its gradient may jump there. The plan adds these terms
    (:func:`pinn.plan._energy`); a loss holding one is bounded below by its minimum, not by
    zero."""

    density: E.Expr
    on: Where = "interior"
    measure: float = 1.0
    kinks: tuple[E.Expr, ...] = ()
    weight: float = 1.0

    def __init__(self, density, *, on: Where = "interior", measure: float = 1.0,
                 kinks: Sequence = (), weight: float = 1.0):
        measure = float(measure)
        if not np.isfinite(measure) or measure <= 0:
            raise ValueError(f"Energy: the measure must be a positive number, got {measure!r}")
        _set(self, density=E.as_expr(density), on=_where(on), measure=measure,
             kinks=tuple(E.as_expr(k) for k in kinks), weight=float(weight))

    def expressions(self):
        return (self.density, *self.kinks, *_predicate(self.on))

    def fields_used(self):
        return calculus.fields_of(self.density)

    def validate(self, problem, name):
        orders = calculus.derivative_orders(self.density)
        high = [f.name for f, k in orders.items() if k > 1]
        if high:
            raise ValueError(f"conditions.{name}: an energy density takes the fields and their "
                             f"first derivatives only; {', '.join(high)} has higher ones")
        for k in self.kinks:
            if calculus.fields_of(k):
                raise ValueError(f"conditions.{name}: a kink ({k}) is an expression of the "
                                 "coordinates, not of the fields")

    def residuals(self, problem, name):
        return Residuals({"0": self.density}, self.on)

    def kink_inputs(self):
        return self.kinks

    def to_data(self):
        return {"density": self.density, "on": self.on, "measure": self.measure,
                "kinks": list(self.kinks), "weight": self.weight}


@register("condition")
@dataclass(frozen=True, eq=False)
class Data(Condition):
    """Observed values of fields at points (inverse problems, data assimilation).

    ``points[N, d]`` in the problem's coordinate order; ``values`` maps each
    observed field to ``[N]``.  ``noise``: the standard deviation of the
    measurement noise, if known (reported; the loss is the mean squared misfit).
    """

    points: np.ndarray
    values: tuple[tuple[E.Field, np.ndarray], ...]
    noise: float | None = None
    weight: float = 1.0
    source: str | None = field(default=None)

    def __init__(self, points, values: Mapping[E.Field, object], *, noise: float | None = None,
                 weight: float = 1.0, source: str | None = None):
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2:
            raise ValueError(f"data points must be an [N, d] array, got shape {pts.shape}")
        vals = []
        for f, v in values.items():
            if not isinstance(f, E.Field):
                raise TypeError(f"data values are keyed by field, got {f!r}")
            arr = np.asarray(v, dtype=np.float64).reshape(-1)
            if arr.shape[0] != pts.shape[0]:
                raise ValueError(
                    f"data for {f.name} has {arr.shape[0]} values for {pts.shape[0]} points"
                )
            vals.append((f, arr))
        if not np.all(np.isfinite(pts)) or not all(np.all(np.isfinite(v)) for _, v in vals):
            raise ValueError("data contains NaN or infinite values; remove those rows")
        _set(self, points=pts, values=tuple(vals), noise=None if noise is None else float(noise),
             weight=float(weight), source=source)

    def fields_used(self):
        return tuple(f for f, _ in self.values)

    def validate(self, problem, name):
        coords = problem.coords
        if self.points.shape[1] != len(coords):
            raise ValueError(
                f"conditions.{name}: data points have {self.points.shape[1]} columns, the "
                f"problem has {len(coords)} coordinates ({', '.join(x.name for x in coords)})"
            )

    def residuals(self, problem, name):
        self.validate(problem, name)
        exprs = {f"{i}": f for i, (f, _) in enumerate(self.values)}
        targets = np.stack([v for _, v in self.values], axis=1)
        return Residuals(exprs, points=self.points, targets=targets)

    def for_window(self, problem, name, window):
        """The observations inside the window (its end belongs to the next one, but for
        the last); ``None`` where there are none."""
        t = self.points[:, problem.time_index]
        keep = (t >= window.t0) & ((t <= window.t1) if window.last else (t < window.t1))
        if not keep.any():
            return None
        return self.take(keep)

    def take(self, rows) -> Data:
        """These observations only (``rows``: a mask or indices), all else as they are."""
        return Data(self.points[rows], {f: v[rows] for f, v in self.values}, noise=self.noise,
                    weight=self.weight, source=self.source)

    def to_data(self):
        return {"points": self.points, "values": _by_name(self.values), "noise": self.noise,
                "weight": self.weight, "source": self.source}

    @classmethod
    def from_data(cls, arguments):
        a = dict(arguments)
        return cls(a.pop("points"), _by_field(a.pop("values")), **a)


class LossTerm(Condition):
    """A loss term of your own: a JAX function ``fn(apply, params, points) -> scalar``.

    ``apply(params["net"], x[N, d]) -> [N, n_fields]`` is the network with the hard
    conditions built in (columns: the problem's coordinates and fields, in order);
    ``params``: ``{"net": ..., "pde": {learnable name: value}}``; ``points``: where the
    term is evaluated: ``"interior"`` (default: the equations' collocation points,
    resampled as they are), ``"initial"``, ``"boundary"``, a part name or names, a
    predicate (sampled afresh with the other points), or an array ``[N, d]`` of fixed
    points. ``n``: how many sampled points (default: the run's ``Points`` count for the
    region). ``fn`` must be pure and traceable (``jax.jit``, ``jax.grad``); derivatives
    of the fields are yours to take (``jax.jacfwd``, ``jax.jvp`` on ``apply``)::

        def flux(apply, params, x):  # mean of u over the points equals 0.25
            return (jnp.mean(apply(params["net"], x)[:, 0]) - 0.25) ** 2

        conditions = {"mass": pinn.LossTerm(flux, points="interior", n=1024)}

    A Python function is not data: the run folder records the problem as not reloadable
    (its parameters and metrics are saved all the same). FEM and the manufactured-solution
    check skip the term.
    """

    def __init__(self, fn, *, points: Where | np.ndarray = "interior", n: int | None = None,
                 weight: float = 1.0):
        if not callable(fn):
            raise TypeError(f"LossTerm: fn must be a function (apply, params, points) -> "
                            f"scalar, got {fn!r}")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"LossTerm: n must be a positive integer, got {n!r}")
        fixed = None
        if isinstance(points, np.ndarray) or (
                isinstance(points, (list, tuple)) and points and not isinstance(points[0], str)):
            fixed = np.asarray(points, dtype=np.float64)
            if fixed.ndim != 2 or not np.all(np.isfinite(fixed)):
                raise ValueError("LossTerm: fixed points must be a finite array [N, d], got "
                                 f"shape {fixed.shape}")
            where: Where = "interior"
        else:
            where = _where(points)
        _set(self, fn=fn, on=where, points=fixed, n=n, weight=float(weight))

    def validate(self, problem, name):
        d = len(problem.coords)
        if self.points is not None and self.points.shape[1] != d:
            raise ValueError(f"conditions.{name}: LossTerm points have {self.points.shape[1]} "
                             f"columns; the problem has {d} coordinates "
                             f"({', '.join(c.name for c in problem.coords)})")
        if self.on == "initial" and self.points is None:
            _needs_time(problem, name, "a LossTerm on 'initial'")

    def residuals(self, problem, name):
        # no expressions: the term is a JAX function (loss_term below builds it)
        return Residuals({}, on=self.on)

    def loss_term(self, problem, name, apply, sampler, dtype):
        import jax.numpy as jnp

        fn = self.fn

        def evaluate(params, x):
            return fn(apply, params, x)

        if self.points is None:
            return evaluate, sampler(self.on, self.n)
        fixed = self.points

        def evaluate_fixed(params, _):
            return fn(apply, params, jnp.asarray(fixed, dtype))

        return evaluate_fixed, None

    def __repr__(self) -> str:
        where = f"{len(self.points)} fixed points" if self.points is not None else self.on
        return f"LossTerm({getattr(self.fn, '__name__', self.fn)!r}, points={where!r})"
