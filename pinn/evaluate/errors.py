"""Field errors with the up-to-constant rule, and the one scoring of a solution."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from pinn.dsl import expr as E
from pinn.evaluate.grid import (
    EvaluationGrid,
    default_params,
    evaluation_grid,
    param_grid,
    with_params,
)
from pinn.evaluate.truth import Truth, truth

__all__ = ["field_errors", "up_to_constant", "Score", "score", "predict_in_chunks",
           "score_over_params", "score_at_points"]

CHUNK = 65_536
_DIFFERENTIATED = (E.Derivative, E.Laplacian, E.Grad, E.Div_)


def _bare_fields(e: E.Expr, out: set) -> set:
    """Fields that ``e`` uses by value (not only through derivatives)."""
    if isinstance(e, E.Field):
        out.add(e)
    elif not isinstance(e, _DIFFERENTIATED):
        for c in e.children():
            _bare_fields(c, out)
    return out


def up_to_constant(problem) -> tuple[str, ...]:
    """Fields that ``problem`` fixes only up to an additive constant: in a steady problem, a
    field that no equation and no condition uses by value (a pressure with velocity given
    all round); or one that the reference declares so (``reference.up_to_constant``).
    Their errors are taken after removing the mean of the difference."""
    declared = tuple(getattr(problem.reference, "up_to_constant", None) or ())
    if problem.is_evolution:
        return declared
    used: set = set()
    for e in problem.equations.values():
        _bare_fields(e, used)
    for name, c in problem.conditions.items():
        res = c.residuals(problem, name)
        if res.match is None:  # a periodic match compares values: a constant cancels
            for e in res.exprs.values():
                _bare_fields(e, used)
    free = tuple(f.name for f in problem.fields if f not in used)
    return tuple(dict.fromkeys(free + declared))


def field_errors(pred: Mapping[str, np.ndarray], truth: Mapping[str, np.ndarray] | None,
                 shift: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """``{"rel_l2": {field: v}, "max_abs_error": {field: v}}`` over the fields of both.

    The relative L2 error is ``||pred - truth|| / ||truth||`` over the points (where the
    truth is zero everywhere: the RMS error); points where the truth is not finite are left
    out. Fields in ``shift`` are compared after removing the mean of the difference (and the
    truth's mean from the norm), since they are defined up to a constant.
    """
    rel, mx = {}, {}
    for name, t in (truth or {}).items():
        if name not in pred:
            continue
        p = np.asarray(pred[name], dtype=np.float64).reshape(-1)
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        ok = np.isfinite(t)
        diff, t = p[ok] - t[ok], t[ok]
        if name in shift and diff.size:
            diff, t = diff - diff.mean(), t - t.mean()
        norm = float(np.linalg.norm(t))
        rel[name] = (float(np.linalg.norm(diff) / norm) if norm > 0
                     else float(np.sqrt(np.mean(diff**2))) if diff.size else float("nan"))
        mx[name] = float(np.max(np.abs(diff))) if diff.size else float("nan")
    return {"rel_l2": rel, "max_abs_error": mx}


def predict_in_chunks(predict: Callable, points: np.ndarray, chunk: int = CHUNK
                      ) -> dict[str, np.ndarray]:
    """``predict(points) -> {field: values}`` called on chunks of ``points``."""
    out: dict[str, list] = {}
    for i in range(0, max(len(points), 1), chunk):
        for k, v in predict(points[i:i + chunk]).items():
            out.setdefault(k, []).append(np.asarray(v, dtype=np.float64).reshape(-1))
    return {k: np.concatenate(v) for k, v in out.items()}


@dataclass(frozen=True)
class Score:
    """A solution scored on the evaluation grid: its values, the truth, the errors."""

    grid: EvaluationGrid
    pred: dict[str, np.ndarray]
    truth: Truth | None
    shift: tuple[str, ...]
    rel_l2: dict[str, float]
    max_abs_error: dict[str, float]
    params: dict[str, float] | None = None

    def metrics(self) -> dict:
        """The entries a run's ``metrics.json`` takes from the score (for a parametric
        problem ``param_values``: the ranged parameters' values it was scored at)."""
        out = {"rel_l2": self.rel_l2, "max_abs_error": self.max_abs_error,
               "compared_with": None if self.truth is None else self.truth.kind,
               "grid": {"names": list(self.grid.names), "shape": list(self.grid.shape),
                        "points_inside": int(self.grid.mask.sum())}}
        if self.shift:
            out["up_to_constant"] = list(self.shift)
        if self.params:
            out["param_values"] = dict(self.params)
        return out

    def aligned(self) -> dict[str, np.ndarray]:
        """The predictions with each up-to-constant field shifted to the truth's mean (for
        plots of the error)."""
        if self.truth is None:
            return dict(self.pred)
        out = dict(self.pred)
        for f in self.shift:
            if f in out and f in self.truth.values:
                out[f] = out[f] - np.mean(out[f]) + np.nanmean(self.truth.values[f])
        return out


def score(problem, predict: Callable, grid: EvaluationGrid | None = None,
          resolution=None, params: Mapping[str, float] | None = None) -> Score:
    """Evaluate ``predict(points) -> {field: values}`` (a PINN, a FEM solution, anything)
    on ``grid`` (default: :func:`evaluation_grid` at ``resolution``) and take its errors
    against the truth, with the up-to-constant rule: the one scoring every method uses.

    A parametric problem is scored at the ranged parameters' values ``params`` (default:
    the centre of each range): ``predict`` and the truth get the grid's points with the
    parameters' columns appended (``problem.inputs``)."""
    grid = evaluation_grid(problem, resolution) if grid is None else grid
    at = None
    if problem.ranged:
        at = {k: float(v) for k, v in (default_params(problem) if params is None
                                       else params).items()}
    elif params:
        raise ValueError(f"params: {sorted(params)} given, but this problem has no ranged "
                         "parameters")
    pts = with_params(problem, grid.points, at)
    pred = predict_in_chunks(predict, pts)
    ref = truth(problem, pts)
    shift = up_to_constant(problem)
    errs = field_errors(pred, None if ref is None else ref.values, shift)
    return Score(grid, pred, ref, shift, errs["rel_l2"], errs["max_abs_error"], at)


def score_over_params(problem, predict: Callable, n: int = 9, resolution=None,
                      grid: EvaluationGrid | None = None) -> list[dict]:
    """The errors of a parametric solution at every value of :func:`param_grid` (``n`` per
    ranged parameter): ``[{<param>: value, ..., "rel_l2": {field: e}, "max_abs_error":
    {field: e}}, ...]``, each row :func:`score` on the same evaluation grid (what
    ``metrics.json`` holds as ``param_grid``)."""
    grid = evaluation_grid(problem, resolution) if grid is None else grid
    rows = []
    for values in param_grid(problem, n):
        s = score(problem, predict, grid, params=values)
        rows.append({**values, "rel_l2": s.rel_l2, "max_abs_error": s.max_abs_error})
    return rows


def in_time_window(problem, points) -> np.ndarray:
    """``[N]`` bool: the points whose time lies in the problem's time interval (all of
    them for a steady problem)."""
    points = np.asarray(points)
    if not problem.is_evolution:
        return np.ones(len(points), bool)
    t = points[:, problem.time_index]
    t0, t1 = problem.time.t0, problem.time.t1
    tol = 1e-9 * max(1.0, abs(t0), abs(t1))
    return (t >= t0 - tol) & (t <= t1 + tol)


def score_at_points(problem, predict: Callable) -> dict | None:
    """The errors at the reference's own points (a reference with ``points`` and
    ``values``, such as :class:`~pinn.reference.FileReference`), with nothing
    interpolated: ``{"rel_l2_ref_points": {field: e}, "max_abs_error_ref_points": {field:
    e}, "ref_points": N}``; the relative L2 error is PINNacle's L2RE,
    ``sqrt(sum (u - u_ref)^2) / sqrt(sum u_ref^2)`` over the file's points (with the
    up-to-constant rule). None without such a reference, or for a parametric problem."""
    ref = problem.reference
    points, values = getattr(ref, "points", None), getattr(ref, "values", None)
    if points is None or not isinstance(values, Mapping) or problem.ranged:
        return None
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != len(problem.inputs):
        return None
    keep = in_time_window(problem, points)
    if not keep.all():  # a time window of the problem (pinn.marching): its points only
        if not keep.any():
            return None
        points = points[keep]
        values = {k: np.asarray(v)[keep] for k, v in values.items()}
    errs = field_errors(predict_in_chunks(predict, points), values, up_to_constant(problem))
    return {"rel_l2_ref_points": errs["rel_l2"],
            "max_abs_error_ref_points": errs["max_abs_error"], "ref_points": len(points)}
