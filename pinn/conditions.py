"""Boundary, initial, data and constraint conditions: data only.

Each condition becomes one named loss term (see :mod:`pinn.train.loss`).
``on`` selects where a boundary condition holds:

- ``"boundary"``: the whole boundary of the spatial domain;
- a part name (``"left"``) or a tuple of names, as the geometry names them;
- a predicate in the PDE language (``eq(x, 0)``, ``x**2 + y**2 < 0.25``), which
  selects the boundary points where it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pinn.dsl import expr as E

Where = str | tuple | E.Expr


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


@dataclass(frozen=True)
class Dirichlet:
    """``field = value`` on a boundary part.  ``hard=True``: built into the network output."""

    values: tuple[tuple[E.Field, E.Expr], ...]
    on: Where = "boundary"
    weight: float = 1.0
    hard: bool = False

    def __init__(self, target, value=None, *, on: Where = "boundary", weight: float = 1.0,
                 hard: bool = False):
        object.__setattr__(self, "values", _values(target, value))
        object.__setattr__(self, "on", _where(on))
        object.__setattr__(self, "weight", float(weight))
        object.__setattr__(self, "hard", bool(hard))


@dataclass(frozen=True)
class Neumann:
    """``n · grad(field) = value`` on a boundary part (outward normal)."""

    field: E.Field
    value: E.Expr
    on: Where = "boundary"
    weight: float = 1.0

    def __init__(self, target: E.Field, value, *, on: Where = "boundary", weight: float = 1.0):
        if not isinstance(target, E.Field):
            raise TypeError(f"Neumann is set on a field, got {target!r}")
        object.__setattr__(self, "field", target)
        object.__setattr__(self, "value", E.as_expr(value))
        object.__setattr__(self, "on", _where(on))
        object.__setattr__(self, "weight", float(weight))


@dataclass(frozen=True)
class Robin:
    """``a*field + b*(n · grad field) = value`` on a boundary part."""

    field: E.Field
    a: E.Expr
    b: E.Expr
    value: E.Expr
    on: Where = "boundary"
    weight: float = 1.0

    def __init__(self, target: E.Field, a, b, value, *, on: Where = "boundary",
                 weight: float = 1.0):
        if not isinstance(target, E.Field):
            raise TypeError(f"Robin is set on a field, got {target!r}")
        object.__setattr__(self, "field", target)
        object.__setattr__(self, "a", E.as_expr(a))
        object.__setattr__(self, "b", E.as_expr(b))
        object.__setattr__(self, "value", E.as_expr(value))
        object.__setattr__(self, "on", _where(on))
        object.__setattr__(self, "weight", float(weight))


@dataclass(frozen=True)
class Periodic:
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
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "pair", (str(pair[0]), str(pair[1])))
        object.__setattr__(self, "order", int(order))
        object.__setattr__(self, "weight", float(weight))
        object.__setattr__(self, "hard", bool(hard))


@dataclass(frozen=True)
class Initial:
    """``field = value`` at the initial time; ``rate`` sets ``D(field, t)`` there too.

    ``hard=True`` builds the initial value into the output:
    ``u = u0(x) + (t - t0) * N(x, t)``.
    """

    values: tuple[tuple[E.Field, E.Expr], ...]
    rates: tuple[tuple[E.Field, E.Expr], ...] = ()
    weight: float = 1.0
    hard: bool = False

    def __init__(self, target, value=None, *, rate=None, weight: float = 1.0,
                 hard: bool = False):
        values = _values(target, value)
        rates: tuple = ()
        if rate is not None:
            if isinstance(rate, Mapping):
                rates = _values(rate, None)
            else:
                if len(values) != 1:
                    raise TypeError("give rates as a {field: value} mapping for several fields")
                rates = ((values[0][0], E.as_expr(rate)),)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "rates", rates)
        object.__setattr__(self, "weight", float(weight))
        object.__setattr__(self, "hard", bool(hard))


@dataclass(frozen=True)
class Constraint:
    """Any expression ``= 0`` on a region: ``on="interior"``, ``"boundary"``, parts, predicate."""

    expr: E.Expr
    on: Where = "interior"
    weight: float = 1.0

    def __init__(self, expr, *, on: Where = "interior", weight: float = 1.0):
        object.__setattr__(self, "expr", E.as_expr(expr))
        object.__setattr__(self, "on", _where(on))
        object.__setattr__(self, "weight", float(weight))


@dataclass(frozen=True, eq=False)
class Data:
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
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "values", tuple(vals))
        object.__setattr__(self, "noise", None if noise is None else float(noise))
        object.__setattr__(self, "weight", float(weight))
        object.__setattr__(self, "source", source)


Condition = Dirichlet | Neumann | Robin | Periodic | Initial | Constraint | Data
