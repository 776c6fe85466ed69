"""The user-facing constructors of the PDE language."""

from __future__ import annotations

from collections.abc import Sequence

from pinn.dsl import expr as E

pi = E.Constant("pi")
e = E.Constant("e")


def _names(spec: str | Sequence[str]) -> list[str]:
    names = spec.replace(",", " ").split() if isinstance(spec, str) else list(spec)
    for n in names:
        if not n.isidentifier():
            raise ValueError(f"{n!r} is not a valid name: use letters, digits and _")
    return names


def coords(spec: str | Sequence[str]) -> tuple[E.Coord, ...] | E.Coord:
    """``x, y, t = coords("x y t")``; a single name returns one coordinate."""
    out = tuple(E.Coord(n) for n in _names(spec))
    return out[0] if len(out) == 1 else out


def _coord_names(spec) -> tuple[str, ...] | None:
    if spec is None:
        return None
    if isinstance(spec, E.Coord):
        return (spec.name,)
    if isinstance(spec, str):
        return tuple(_names(spec))
    return tuple(c.name if isinstance(c, E.Coord) else c for c in spec)


def field(name: str, coords=None) -> E.Field:
    """One unknown scalar field; ``coords``: the coordinates it depends on when that is a
    subset of the problem's (``field("a", coords=(x, y))`` or ``coords="x y"``: a
    coefficient ``a(x, y)`` of a problem in ``x, y, t``). Its network sees only those
    inputs, so its derivatives along the others are exactly zero."""
    return E.Field(_names(name)[0], _coord_names(coords))


def fields(spec: str | Sequence[str], coords=None) -> tuple[E.Field, ...]:
    """Several fields at once, for systems: ``u, v, p = fields("u v p")`` (``coords``: as
    in :func:`field`, for each of them)."""
    cs = _coord_names(coords)
    return tuple(E.Field(n, cs) for n in _names(spec))


def param(name: str, value: float | None = None, *, learnable: bool = False,
          range: tuple[float, float] | None = None) -> E.Param:  # noqa: A002
    """A named parameter; ``learnable=True`` makes ``value`` the initial guess.

    ``range=(lo, hi)`` makes a parametric problem: the parameter becomes an input of the
    network, sampled over ``[lo, hi]`` with the points, so one training covers the range
    (``Solution.evaluate(points, params={name: value})``). A ranged parameter has no
    ``value`` and is not learnable."""
    name = _names(name)[0]
    if learnable and value is None:
        raise ValueError(f"learnable parameter {name!r} needs an initial value")
    if value is not None:
        value = float(value)
    if range is not None:
        range = param_range(name, range)
        if value is not None or learnable:
            raise ValueError(f"parameter {name!r}: give either a value (learnable or not) or "
                             f"a range, not both")
    return E.Param(name, value, learnable, range)


def param_range(name: str, r) -> tuple[float, float]:
    """``(lo, hi)`` as two finite floats with ``lo < hi``, or ValueError naming the fix."""
    import math

    try:
        lo, hi = (float(v) for v in r)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {name!r}: range must be two numbers [lo, hi], got "
                         f"{r!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"parameter {name!r}: range must be finite with lo < hi, got "
                         f"[{lo}, {hi}]")
    return (lo, hi)


def D(expr: E.ExprLike, *wrt: E.Coord | int) -> E.Expr:
    """Partial derivative: ``D(u, x)``, ``D(u, x, 2)``, ``D(u, x, y)``, ``D(u, x, 2, y)``."""
    out: list[E.Coord] = []
    after_coord = False
    for w in wrt:
        if isinstance(w, E.Coord):
            out.append(w)
            after_coord = True
        elif isinstance(w, int) and not isinstance(w, bool):
            if not after_coord:
                raise ValueError("an order must follow a coordinate: D(u, x, 2), not D(u, 2) "
                                 "or D(u, x, 2, 2)")
            if w < 1:
                raise ValueError(f"derivative order must be >= 1, got {w}")
            out.extend([out[-1]] * (w - 1))
            after_coord = False
        else:
            raise TypeError(f"D() takes coordinates and orders, got {w!r}")
    return E.Derivative(E.as_expr(expr), tuple(out))


def _coord_tuple(cs) -> tuple[E.Coord, ...] | None:
    if cs is None:
        return None
    cs = tuple(cs) if not isinstance(cs, E.Coord) else (cs,)
    for c in cs:
        if not isinstance(c, E.Coord):
            raise TypeError(f"expected coordinates, got {c!r}")
    return cs


def grad(expr: E.ExprLike, over: Sequence[E.Coord] | None = None) -> E.Expr:
    """The gradient of a scalar expression: a vector of its derivatives over ``over``.

    ``over`` defaults to the problem's spatial coordinates (time excluded), known once
    the expression is used in a :class:`pinn.Problem`. ``grad(u)`` on ``x, y`` expands to
    ``vector(D(u, x), D(u, y))``; ``dot(grad(u), grad(u))`` is ``|grad u|^2``.
    """
    return E.Grad(E.as_expr(expr), _coord_tuple(over))


def div(vec: E.Expr, over: Sequence[E.Coord] | None = None) -> E.Expr:
    """The divergence of a vector expression: the sum of ``D(vec[i], over[i])``.

    ``over`` defaults to the problem's spatial coordinates. ``div(vector(u*x, u*y))`` on
    ``x, y`` is ``D(u*x, x) + D(u*y, y)``; ``div(grad(u))`` equals ``laplacian(u)``.
    """
    return E.Div_(vec, _coord_tuple(over))


def laplacian(expr: E.ExprLike, over: Sequence[E.Coord] | None = None) -> E.Expr:
    """The Laplacian: the sum of the second derivatives of ``expr`` over ``over``.

    ``over`` defaults to the problem's spatial coordinates, so in a problem on ``x, y, t``
    ``D(u, t) - alpha*laplacian(u)`` is the heat equation ``u_t - alpha*(u_xx + u_yy)``.
    """
    return E.Laplacian(E.as_expr(expr), _coord_tuple(over))


def vector(*items: E.ExprLike) -> E.Vector:
    """A vector of scalar expressions, one per component: ``vector(u, v)`` (a velocity).

    Vectors are what :func:`div` and :func:`dot` take; vectors of vectors are refused.
    """
    return E.Vector(tuple(E.as_expr(i) for i in items))


def dot(a: E.Expr, b: E.Expr) -> E.Expr:
    """The dot product of two vector expressions of the same length.

    The convection term of Navier-Stokes: ``dot(vector(u, v), grad(u))`` is
    ``u*D(u, x) + v*D(u, y)``.
    """
    return E.Dot(a, b)


def _fn(name: str):
    def f(*args: E.ExprLike) -> E.Expr:
        return E.Call(name, tuple(E.as_expr(a) for a in args))

    f.__name__ = name
    f.__doc__ = f"``{name}`` in the PDE language."
    return f


sin, cos, tan, exp, log, sqrt = (_fn(n) for n in ("sin", "cos", "tan", "exp", "log", "sqrt"))
tanh, sinh, cosh, arctan, arcsin, arccos = (
    _fn(n) for n in ("tanh", "sinh", "cosh", "arctan", "arcsin", "arccos")
)
sign, heaviside = _fn("sign"), _fn("heaviside")
abs_ = _fn("abs")
minimum, maximum = _fn("min"), _fn("max")


def where(cond: E.Expr, a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """Piecewise: ``a`` where ``cond`` holds, else ``b``."""
    return E.Call("where", (cond, E.as_expr(a), E.as_expr(b)))


def eq(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """The predicate ``a == b`` (Python's ``==`` compares expressions structurally)."""
    return E.Compare("==", E.as_expr(a), E.as_expr(b))


def ne(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """The predicate ``a != b`` (for :func:`where`)."""
    return E.Compare("!=", E.as_expr(a), E.as_expr(b))


def logical_and(a: E.Expr, b: E.Expr) -> E.Expr:
    """Both predicates hold: ``logical_and(x > 0, y > 0)`` (``x > 0 and y > 0`` in text)."""
    return E.And(a, b)


def logical_or(a: E.Expr, b: E.Expr) -> E.Expr:
    """Either predicate holds: ``logical_or(x < 0, x > 1)`` (``or`` in text)."""
    return E.Or(a, b)


def logical_not(a: E.Expr) -> E.Expr:
    """The predicate does not hold: ``logical_not(x > 0)`` (``not`` in text)."""
    return E.Not(a)


def piecewise(*pieces, otherwise: E.ExprLike | None = None) -> E.Expr:
    """A piecewise expression from ``(condition, value)`` pairs, the first that holds
    winning, and ``otherwise`` where none does: nested :func:`where` without writing it.

        k = piecewise((x < 0.5, 1), (y < 0.5, 4), otherwise=16)

    A last piece without a condition (``(None, value)``, or a bare value) is the
    ``otherwise`` value. Without one, the last piece's value holds everywhere else.
    """
    items = [p if isinstance(p, tuple) else (None, p) for p in pieces]
    if not items:
        raise ValueError("piecewise needs at least one (condition, value) piece")
    if items[-1][0] is None:
        if otherwise is not None:
            raise ValueError("piecewise: give the last value either without a condition or "
                             "as otherwise=, not both")
        otherwise = items.pop()[1]
    for i, (cond, _) in enumerate(items):
        if cond is None:
            raise ValueError(f"piecewise: piece {i} has no condition; only the last piece "
                             "may go without one (the value everywhere else)")
        if not isinstance(cond, (E.Compare, E.And, E.Or, E.Not)):
            raise TypeError(f"piecewise: piece {i}'s condition {cond} is not a comparison "
                            "(x < 0.5, x > 0 and y > 0)")
    if otherwise is None:
        if not items:
            raise ValueError("piecewise needs at least one value")
        *items, (_, otherwise) = items
    out = E.as_expr(otherwise)
    for cond, value in reversed(items):
        out = E.Call("where", (cond, E.as_expr(value), out))
    return out


def cells(over: Sequence[E.Coord], edges: Sequence[Sequence[float]], values) -> E.Expr:
    """A piecewise-constant (or piecewise-expression) coefficient on a table of
    rectangular cells: ``edges[d]`` are the cell edges along ``over[d]`` and
    ``values[i][j]...`` the value in cell ``(i, j, ...)`` (numbers or expressions),
    compiled to nested :func:`where`. Points outside the edges take the nearest cell.

        a = cells((x, y), ([-10, -6, -2, 2, 6, 10],) * 2, a_values)   # 5 x 5 blocks
    """
    import numpy as np

    over = _coord_tuple(over) or ()
    edges = [[float(v) for v in e] for e in edges]
    if len(edges) != len(over) or not over:
        raise ValueError(f"cells: give one list of edges per coordinate ({len(over)} "
                         f"coordinate(s), {len(edges)} list(s))")
    for c, e in zip(over, edges, strict=True):
        if len(e) < 2 or any(b <= a for a, b in zip(e, e[1:], strict=False)):
            raise ValueError(f"cells: the edges along {c.name} must be two or more "
                             f"increasing numbers, got {e}")
    table = np.asarray(values, dtype=object)
    want = tuple(len(e) - 1 for e in edges)
    if table.shape != want:
        raise ValueError(f"cells: values have shape {table.shape}; the edges make "
                         f"{' x '.join(map(str, want))} cells")

    def build(d: int, index: tuple) -> E.Expr:
        if d == len(over):
            return E.as_expr(table[index])
        e = edges[d]
        out = build(d + 1, index + (len(e) - 2,))
        for i in range(len(e) - 3, -1, -1):
            out = E.Call("where", (E.Compare("<", over[d], E.as_expr(e[i + 1])),
                                   build(d + 1, index + (i,)), out))
        return out

    return build(0, ())


def coefficient(name: str, *, file=None, points=None, values=None, grid=None,
                over: Sequence[E.Coord] | None = None, interpolation: str = "linear",
                resample: int | None = None) -> E.Expr:
    """A coefficient given as data, usable in any expression (``-div(k*grad(u))``) and
    differentiated like any other (``D(k, x)`` is the interpolant's slope):

        k = pinn.coefficient("k", file="k.dat", over=(x, y))              # x, y, k columns
        k = pinn.coefficient("k", grid=(xs, ys), values=K, over=(x, y))  # K[len(xs), len(ys)]
        k = pinn.coefficient("k", points=P, values=v, interpolation="nearest")

    ``file``: a text table (columns: the coordinates, then the value) or an NPZ with
    ``points`` and ``values``; ``points[N, d]`` with ``values[N]``: the nodes of a
    tensor grid (any order), or scattered points (``nearest`` only, resampled once on a
    regular grid of ``resample`` nodes per axis); ``grid`` (one axis per coordinate) with
    ``values`` on it. ``interpolation``: ``linear`` (multilinear) or ``nearest``. ``over``:
    the coordinates the columns hold, in order (default: x, y, z up to the table's
    dimension). See :mod:`pinn.dsl.tables`."""
    import os

    from pinn.dsl import tables as T

    name = _names(name)[0]
    given = [k for k, v in (("file", file), ("points", points), ("grid", grid)) if v is not None]
    if len(given) != 1:
        raise ValueError(f"coefficient {name!r}: give exactly one of file=, points= (with "
                         f"values=) or grid= (with values=); got {', '.join(given) or 'none'}")
    try:
        if grid is not None:
            if values is None:
                raise T.TableError("grid= needs values= on it")
            table = T.Table(grid, values, interpolation)
        elif points is not None:
            if values is None:
                raise T.TableError("points= needs values=, one per point")
            table = T.table_from_points(points, values, interpolation, resample=resample)
        else:
            if values is not None:
                raise T.TableError("file= holds the values; drop values=")
            if not os.path.isfile(file):
                raise T.TableError(f"no file {str(file)!r}")
            data, _ = T.read_table(file)
            if data.shape[1] < 2:
                raise T.TableError(f"{file} has {data.shape[1]} column; a coefficient table "
                                   "needs the coordinates and then the value")
            if over is not None and data.shape[1] != len(tuple(over)) + 1:
                raise T.TableError(
                    f"{file} has {data.shape[1]} columns; a coefficient of "
                    f"({', '.join(c.name for c in over)}) needs {len(tuple(over)) + 1}: the "
                    "coordinates, then the value")
            table = T.table_from_points(data[:, :-1], data[:, -1], interpolation,
                                        resample=resample, source=str(file))
    except T.TableError as exc:
        raise ValueError(f"coefficient {name!r}: {exc}") from None
    if over is None:
        if table.dim > 3:
            raise ValueError(f"coefficient {name!r}: a table of {table.dim} coordinates needs "
                             "over=(...) naming them")
        over = tuple(E.Coord(n) for n in ("x", "y", "z")[:table.dim])
    over = _coord_tuple(over)
    if len(over) != table.dim:
        raise ValueError(f"coefficient {name!r}: the table has {table.dim} coordinate(s), "
                         f"over= names {len(over)}")
    return E.Tabulated(name, table, over)
