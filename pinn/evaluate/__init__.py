"""One evaluation: one grid, one truth, one error rule, for every method.

Every number a run reports (``Solution.metrics``, ``metrics.json``, ``report.md``,
``pinn compare``, the benchmarks) comes from :func:`score`: the solution evaluated on
:func:`evaluation_grid`, compared with :func:`truth` (the exact solution or the problem's
reference) by :func:`field_errors`, fields defined up to a constant compared after
removing their mean (:func:`up_to_constant`; in an evolution problem up to a function of
time, the mean at each time: :func:`free_part`).
"""

from pinn.evaluate.errors import (
    Score,
    field_errors,
    free_part,
    in_time_window,
    point_times,
    predict_in_chunks,
    score,
    score_at_points,
    score_over_params,
    up_to_constant,
)
from pinn.evaluate.grid import (
    MAX_GRID_POINTS,
    EvaluationGrid,
    check_resolution,
    default_params,
    default_resolution,
    evaluation_grid,
    evaluation_points,
    grid_at,
    param_grid,
    with_params,
)
from pinn.evaluate.truth import Truth, exact_values, has_truth, truth

__all__ = ["EvaluationGrid", "evaluation_grid", "evaluation_points", "grid_at",
           "default_resolution", "check_resolution", "MAX_GRID_POINTS", "Truth", "truth",
           "exact_values", "has_truth", "Score", "score", "field_errors", "up_to_constant",
           "predict_in_chunks", "param_grid", "default_params", "with_params",
           "score_over_params", "score_at_points", "in_time_window", "free_part",
           "point_times"]
