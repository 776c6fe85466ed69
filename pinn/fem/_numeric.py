"""Float64 NumPy evaluation of PDE-language expressions (FEM works outside JAX)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate


def evaluate_np(e: E.Expr, env: Mapping[E.Expr, object], *, eq_tol: float = 0.0):
    """Evaluate ``e`` with NumPy; leaves come from ``env`` (keyed by node).

    Parameters fall back to their value.  The result may be a Python scalar
    when ``e`` does not depend on any array in ``env``.  Floating-point
    warnings are silenced: ``where(r > 0, f(r), 0)`` evaluates both branches.
    """
    with np.errstate(all="ignore"):
        return evaluate(e, env, eq_tol=eq_tol, xp=np)


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
