"""Numerical evaluation of expressions with jax.numpy.

``evaluate(e, env)`` maps every leaf it meets through ``env`` (keyed by node:
``Coord``, ``Field``, ``Derivative(field, wrt)``, ``Param``), so the same
function evaluates exact solutions on arrays and residuals from derivatives
that the derivative engine computed.  Parameters fall back to their fixed
value; a ranged parameter (``param("alpha", range=...)``) reads the input column
``Coord("alpha")`` of the environment.  Everything is traceable under jit/grad/vmap.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pinn.dsl import expr as E

_CMP = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
        "==": "equal", "!=": "not_equal"}


def _heaviside(xp, a):
    return xp.where(a > 0, 1.0, xp.where(a < 0, 0.0, 0.5)).astype(xp.result_type(a, float))


class UnboundError(KeyError):
    """An expression needs a value that the environment does not provide."""


def _leaf(node: E.Expr, env: Mapping[E.Expr, object]):
    """The value of a leaf that ``env`` does not hold: a number, a constant, a parameter's
    fixed value or a ranged parameter's input column; coordinates, fields and derivatives
    must come from ``env``."""
    t = type(node)
    if t is E.Number:
        return node.value
    if t is E.Constant:
        return node.value
    if t is E.Param:
        if node.value is None and node.range is not None:
            # a ranged parameter is an input: the column of that name
            col = E.Coord(node.name)
            if col in env:
                return env[col]
            raise UnboundError(
                f"parameter {node.name!r} ranges over [{node.range[0]}, "
                f"{node.range[1]}]: give its value (params={{{node.name!r}: ...}})")
        if node.value is None:
            raise UnboundError(f"parameter {node.name!r} has no value")
        return node.value
    if t is E.Derivative and not isinstance(node.expr, E.Field):
        raise UnboundError(
            f"{node}: expand the expression first (pinn.dsl.expand) so that "
            "derivatives apply to fields only"
        )
    raise UnboundError(f"no value for {node}")


_LEAVES = (E.Number, E.Constant, E.Param, E.Coord, E.Field, E.Derivative)


def _pow(xp, ev, node: E.Pow):
    """``a ^ b``; integer powers exactly (negative bases too), via lax.integer_pow."""
    base, b = ev(node.left), node.right
    n = b.value if isinstance(b, E.Number) else (
        -b.arg.value if isinstance(b, E.Neg) and isinstance(b.arg, E.Number) else None)
    if n is not None and float(n).is_integer() and abs(n) <= 2**31:
        # integer powers: exact for negative bases (x^2, x^(-1)), via lax.integer_pow
        if isinstance(base, (int, float)) and (base != 0 or n >= 0):
            try:
                return float(base) ** int(n)
            except OverflowError:
                return xp.power(xp.asarray(float(base)), int(n))
        return xp.power(base, int(n))
    return xp.power(base, ev(node.right))


def _call(xp, ev, node: E.Call):
    """A function call: ``where``, ``min``, ``max``, ``heaviside`` or one of ``xp``'s."""
    f = node.func
    if f == "where":
        c, a, b = (ev(a) for a in node.args)
        return xp.where(c, a, b)
    if f == "min":
        return xp.minimum(*(ev(a) for a in node.args))
    if f == "max":
        return xp.maximum(*(ev(a) for a in node.args))
    if f == "heaviside":
        return _heaviside(xp, ev(node.args[0]))
    return getattr(xp, f)(ev(node.args[0]))


def _compare(xp, ev, node: E.Compare, eq_tol: float):
    """A comparison; ``==`` and ``!=`` within ``eq_tol`` when it is positive."""
    a, b = ev(node.left), ev(node.right)
    if node.op in ("==", "!=") and eq_tol > 0:
        close = xp.abs(xp.asarray(a) - xp.asarray(b)) <= eq_tol
        return close if node.op == "==" else ~close
    return getattr(xp, _CMP[node.op])(a, b)


def evaluate(e: E.Expr, env: Mapping[E.Expr, object], *, eq_tol: float = 0.0, xp=None):
    """Evaluate ``e`` with leaves from ``env`` (arrays broadcast together).

    ``eq_tol``: ``a == b`` holds where ``|a - b| <= eq_tol`` (boundary
    predicates such as ``x == 0`` on sampled points use a small tolerance).
    ``xp``: the array module, ``jax.numpy`` (traceable, the default) or ``numpy``
    (the FEM baseline evaluates in float64 outside JAX).
    """
    if xp is None:  # imported here: checking a problem file in NumPy never loads JAX
        import jax.numpy as xp
    memo: dict[E.Expr, object] = {}

    def ev(node: E.Expr):
        if node in memo:
            return memo[node]
        out = _ev(node)
        memo[node] = out
        return out

    def _ev(node: E.Expr):
        if node in env:
            return env[node]
        t = type(node)
        if t in _LEAVES:
            return _leaf(node, env)
        if t is E.Add:
            return ev(node.left) + ev(node.right)
        if t is E.Sub:
            return ev(node.left) - ev(node.right)
        if t is E.Mul:
            return ev(node.left) * ev(node.right)
        if t is E.Div:
            return ev(node.left) / ev(node.right)
        if t is E.Pow:
            return _pow(xp, ev, node)
        if t is E.Neg:
            return -ev(node.arg)
        if t is E.Call:
            return _call(xp, ev, node)
        if t is E.Tabulated:  # a coefficient given as data (pinn.dsl.tables)
            return node.table([ev(a) for a in node.args], node.deriv or None, xp=xp)
        if t is E.Compare:
            return _compare(xp, ev, node, eq_tol)
        if t is E.And:
            return xp.logical_and(ev(node.left), ev(node.right))
        if t is E.Or:
            return xp.logical_or(ev(node.left), ev(node.right))
        if t is E.Not:
            return xp.logical_not(ev(node.arg))
        raise TypeError(
            f"cannot evaluate {node} directly: resolve vector operators first (pinn.dsl.expand)"
        )

    return ev(e)


def evaluate_on_points(e: E.Expr, coords, points, params: Mapping[str, object] | None = None,
                       spatial=None, *, eq_tol: float = 0.0):
    """Evaluate a field-free expression at ``points[N, len(coords)]``; returns ``[N]``.

    Derivatives of coordinate expressions (``D(sin(pi*x), x)``) are expanded
    symbolically first.  ``params`` overrides parameter values by name.
    """
    import jax.numpy as jnp

    from pinn.dsl.calculus import expand, symbols

    coords = tuple(coords)
    spatial = tuple(spatial) if spatial is not None else tuple(
        c for c in coords if c.name != "t"
    )
    ex = expand(e, spatial, coords)
    points = jnp.asarray(points)
    env: dict = {c: points[..., i] for i, c in enumerate(coords)}
    params = dict(params or {})
    for p in symbols(ex, E.Param):
        if p.name in params:
            env[p] = params[p.name]
    out = evaluate(ex, env, eq_tol=eq_tol)
    return jnp.broadcast_to(jnp.asarray(out), points.shape[:-1])


def evaluate_numpy(e: E.Expr, env: Mapping[E.Expr, object], *, eq_tol: float = 0.0):
    """:func:`evaluate` with NumPy (float64, outside JAX: FEM, references, checks).

    Parameters fall back to their value; the result may be a Python scalar when ``e`` does
    not depend on any array in ``env``. Floating-point warnings are silenced:
    ``where(r > 0, f(r), 0)`` evaluates both branches.
    """
    with np.errstate(all="ignore"):
        return evaluate(e, env, eq_tol=eq_tol, xp=np)


def evaluate_points_numpy(e: E.Expr, coords, points, *, spatial=None, t: float | None = None,
                          time_coord: E.Coord | None = None, eq_tol: float = 0.0) -> np.ndarray:
    """A field-free expression at ``points[N, len(coords)]`` in NumPy float64, ``[N]``:
    derivatives of coordinate expressions are expanded first (over ``spatial``, default
    the coordinates other than ``time_coord``); ``t`` fixes ``time_coord`` when ``coords``
    lacks it. The one way an exact solution is evaluated."""
    from pinn.dsl.calculus import expand

    coords = tuple(coords)
    spatial = tuple(c for c in coords if c != time_coord) if spatial is None else tuple(spatial)
    e = expand(e, spatial, coords)
    points = np.asarray(points, dtype=np.float64)
    env: dict = {c: points[:, i] for i, c in enumerate(coords)}
    if time_coord is not None and t is not None and time_coord not in env:
        env[time_coord] = float(t)
    out = evaluate_numpy(e, env, eq_tol=eq_tol)
    return np.broadcast_to(np.asarray(out, dtype=np.float64), points.shape[:1]).copy()
