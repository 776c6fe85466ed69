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
    grid_at,
    param_grid,
    with_params,
)
from pinn.evaluate.truth import Truth, truth

__all__ = ["field_errors", "up_to_constant", "free_part", "point_times", "Score", "score",
           "predict_in_chunks", "score_over_params", "score_at_points"]

CHUNK = 65_536
#: Times of the points count as levels (the mean is removed at each) when a level holds at
#: least this many points on average; otherwise they are scattered and binned.
_PER_LEVEL = 10
#: Scattered times: bins of about this many points (at most ``_MAX_BINS`` bins).
_PER_BIN, _MAX_BINS = 40, 200


def _removes_free_part(e: E.Expr, time: E.Coord | None) -> bool:
    """Whether the derivative node ``e`` is blind to what a field is free up to: any
    derivative to a constant (``time`` None); to a function of time, one that
    differentiates along space (a time derivative alone sees it)."""
    if time is None:
        return isinstance(e, (E.Derivative, E.Laplacian, E.Grad, E.Div_))
    if isinstance(e, E.Derivative):
        return any(c != time for c in e.wrt)
    if isinstance(e, (E.Laplacian, E.Grad, E.Div_)):
        return e.coords is None or time not in e.coords
    return False


def _bare_fields(e: E.Expr, out: set, time: E.Coord | None = None) -> set:
    """Fields that ``e`` uses by value (not only through derivatives; in an evolution
    problem, ``time`` its time coordinate, not only through derivatives along space)."""
    if isinstance(e, E.Field):
        out.add(e)
    elif not _removes_free_part(e, time):
        for c in e.children():
            _bare_fields(c, out, time)
    return out


def up_to_constant(problem) -> tuple[str, ...]:
    """Fields that ``problem`` fixes only up to an additive constant: in a steady problem, a
    field that no equation and no condition uses by value (a pressure with velocity given
    all round); in an evolution problem, up to a function of time: a field that they use
    only through derivatives along space (the pressure of an incompressible flow without a
    pressure condition); or one that the reference declares so
    (``reference.up_to_constant``). Their errors are taken after removing the mean of the
    difference, in an evolution problem at each time (:func:`free_part`)."""
    declared = tuple(getattr(problem.reference, "up_to_constant", None) or ())
    time = problem.time_coord
    used: set = set()
    for e in problem.equations.values():
        _bare_fields(e, used, time)
    for name, c in problem.conditions.items():
        res = c.residuals(problem, name)
        if res.match is None:  # a periodic match compares values: a constant cancels
            for e in res.exprs.values():
                _bare_fields(e, used, time)
    free = tuple(f.name for f in problem.fields if f not in used)
    return tuple(dict.fromkeys(free + declared))


def point_times(problem, points) -> np.ndarray | None:
    """``[N]``: the time of each of ``points`` (``[N, d]``, the problem's coordinates
    first), what :func:`free_part` removes a mean per; None for a steady problem."""
    if not problem.is_evolution:
        return None
    return np.asarray(points, dtype=np.float64)[:, problem.time_index]


def _time_bins(times: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(labels[N], scattered)``: each point's time level (times equal to 1e-9 of their
    span), or where the levels hold fewer than ``_PER_LEVEL`` points on average (scattered
    points) its bin of about ``_PER_BIN`` points consecutive in time."""
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    span = float(np.ptp(t)) if t.size else 0.0
    if span == 0.0:
        return np.zeros(t.size, np.int64), False
    key = np.round((t - t.min()) / span * 1e9).astype(np.int64)
    levels, labels = np.unique(key, return_inverse=True)
    if len(levels) * _PER_LEVEL <= t.size:
        return labels.reshape(-1), False
    n_bins = max(1, min(_MAX_BINS, t.size // _PER_BIN))
    edges = np.quantile(t, np.linspace(0.0, 1.0, n_bins + 1)[1:-1])
    return np.searchsorted(edges, t, side="right"), True


def free_part(values, times=None) -> np.ndarray:
    """What a field fixed only up to a constant (``times`` None) or up to a function of
    time cannot pin down in ``values`` (``[N]``: a difference from the truth, or the truth):
    their mean; with ``times`` (``[N]``, :func:`point_times`) the function of time that
    best fits them: their mean at each time level of the points, or where the times are
    scattered (fewer than 10 points a level) a straight line in time over each bin of about
    40 points consecutive in time. Non-finite values are left out of the fit. ``values``
    minus this is what an up-to-constant field is scored on."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    ok = np.isfinite(v)
    if times is None:
        return np.full(v.shape, v[ok].mean() if ok.any() else 0.0)
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    labels, scattered = _time_bins(t)
    m = int(labels.max()) + 1 if labels.size else 0

    def per_bin(w):
        return np.bincount(labels[ok], w[ok], minlength=m)

    count = per_bin(np.ones_like(v))
    n = np.maximum(count, 1)
    dt = t - (per_bin(t) / n)[labels]
    vv = np.where(ok, v, 0.0)
    part = (per_bin(vv) / n)[labels]
    if scattered:  # the slope in time over each bin
        s2 = per_bin(dt * dt)
        slope = np.divide(per_bin(vv * dt), s2, out=np.zeros(m), where=s2 > 0)
        part = part + slope[labels] * dt
    return part


def field_errors(pred: Mapping[str, np.ndarray], truth: Mapping[str, np.ndarray] | None,
                 shift: tuple[str, ...] = (), times: np.ndarray | None = None
                 ) -> dict[str, dict[str, float]]:
    """``{"rel_l2": {field: v}, "max_abs_error": {field: v}}`` over the fields of both.

    The relative L2 error is ``||pred - truth|| / ||truth||`` over the points (where the
    truth is zero everywhere: the RMS error); points where the truth is not finite are left
    out. Fields in ``shift`` are compared after removing the mean of the difference (and the
    truth's mean from the norm), since they are defined up to a constant; with ``times``
    (the time of each point, :func:`point_times`: an evolution problem) the mean at each
    time, since they are defined up to a function of time (:func:`free_part`).
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
            at = None if times is None else np.asarray(times, dtype=np.float64).reshape(-1)[ok]
            diff, t = diff - free_part(diff, at), t - free_part(t, at)
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
    times: np.ndarray | None = None  # the time of each point (an evolution problem)

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
        """The predictions with each up-to-constant field shifted to the truth's mean (at
        each time in an evolution problem; for plots of the error)."""
        if self.truth is None:
            return dict(self.pred)
        out = dict(self.pred)
        for f in self.shift:
            if f in out and f in self.truth.values:
                out[f] = out[f] - free_part(out[f] - self.truth.values[f], self.times)
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
        grid = grid_at(problem, grid, at)  # a domain whose shape follows the parameters
    elif params:
        raise ValueError(f"params: {sorted(params)} given, but this problem has no ranged "
                         "parameters")
    pts = with_params(problem, grid.points, at)
    pred = predict_in_chunks(predict, pts)
    ref = truth(problem, pts)
    shift = up_to_constant(problem)
    times = point_times(problem, grid.points)
    errs = field_errors(pred, None if ref is None else ref.values, shift, times)
    return Score(grid, pred, ref, shift, errs["rel_l2"], errs["max_abs_error"], at, times)


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
    up-to-constant rule, per time level of the file's points in an evolution problem).
    None without such a reference, or for a parametric problem."""
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
    errs = field_errors(predict_in_chunks(predict, points), values, up_to_constant(problem),
                        point_times(problem, points))
    return {"rel_l2_ref_points": errs["rel_l2"],
            "max_abs_error_ref_points": errs["max_abs_error"], "ref_points": len(points)}
