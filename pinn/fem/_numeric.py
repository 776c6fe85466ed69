"""Float64 NumPy evaluation of PDE-language expressions (FEM works outside JAX)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pinn.dsl import expr as E

_UNARY = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "abs": np.abs,
    "arctan": np.arctan, "arcsin": np.arcsin, "arccos": np.arccos, "sign": np.sign,
    "heaviside": lambda a: np.heaviside(a, 0.5),
}
_CMP = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal,
}


def evaluate_np(e: E.Expr, env: Mapping[E.Expr, object], *, eq_tol: float = 0.0):
    """Evaluate ``e`` with NumPy; leaves come from ``env`` (keyed by node).

    Parameters fall back to their value.  The result may be a Python scalar
    when ``e`` does not depend on any array in ``env``.  Floating-point
    warnings are silenced: ``where(r > 0, f(r), 0)`` evaluates both branches.
    """
    with np.errstate(all="ignore"):
        return _evaluate(e, env, eq_tol)


def _evaluate(e: E.Expr, env: Mapping[E.Expr, object], eq_tol: float):
    memo: dict[E.Expr, object] = {}

    def ev(node: E.Expr):
        out = memo.get(node)
        if out is None:
            out = _ev(node)
            memo[node] = out
        return out

    def _ev(node: E.Expr):
        if node in env:
            return env[node]
        t = type(node)
        if t is E.Number or t is E.Constant:
            return float(node.value)
        if t is E.Param:
            if node.value is None:
                raise KeyError(f"parameter {node.name!r} has no value")
            return float(node.value)
        if t is E.Add:
            return ev(node.left) + ev(node.right)
        if t is E.Sub:
            return ev(node.left) - ev(node.right)
        if t is E.Mul:
            return ev(node.left) * ev(node.right)
        if t is E.Div:
            return ev(node.left) / ev(node.right)
        if t is E.Pow:
            b = node.right
            if isinstance(b, E.Number) and float(b.value).is_integer():
                return ev(node.left) ** int(b.value)
            return np.power(ev(node.left), ev(node.right))
        if t is E.Neg:
            return -ev(node.arg)
        if t is E.Call:
            f = node.func
            if f == "where":
                c, a, b = (ev(a) for a in node.args)
                return np.where(c, a, b)
            if f == "min":
                return np.minimum(*(ev(a) for a in node.args))
            if f == "max":
                return np.maximum(*(ev(a) for a in node.args))
            return _UNARY[f](ev(node.args[0]))
        if t is E.Compare:
            a, b = ev(node.left), ev(node.right)
            if node.op in ("==", "!=") and eq_tol > 0:
                close = np.abs(np.asarray(a) - np.asarray(b)) <= eq_tol
                return close if node.op == "==" else ~close
            return _CMP[node.op](a, b)
        if t is E.And:
            return np.logical_and(ev(node.left), ev(node.right))
        if t is E.Or:
            return np.logical_or(ev(node.left), ev(node.right))
        if t is E.Not:
            return np.logical_not(ev(node.arg))
        raise KeyError(f"no value for {node} (type {t.__name__})")

    return ev(e)


def evaluate_points(e: E.Expr, coords, points, *, t: float | None = None,
                    time_coord: E.Coord | None = None, eq_tol: float = 0.0) -> np.ndarray:
    """A field-free expression at ``points[N, len(coords)]`` (plus a fixed time ``t``)."""
    from pinn.dsl.calculus import expand

    coords = tuple(coords)
    e = expand(e, tuple(c for c in coords if c != time_coord), coords)
    points = np.asarray(points, dtype=np.float64)
    env: dict = {c: points[:, i] for i, c in enumerate(coords)}
    if time_coord is not None and t is not None and time_coord not in env:
        env[time_coord] = float(t)
    out = evaluate_np(e, env, eq_tol=eq_tol)
    return np.broadcast_to(np.asarray(out, dtype=np.float64), points.shape[:1]).copy()
