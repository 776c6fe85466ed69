"""Run reports: errors on the evaluation grid, plots, ``metrics.json`` and ``report.md``.

Files are written atomically (:mod:`pinn.report.io`).  matplotlib is imported
only when a plot is drawn.
"""

from pinn.report.grid import Grid, evaluation_grid
from pinn.report.metrics import field_errors, truth_on, versions
from pinn.report.run import (
    evaluate_in_chunks,
    grid_values,
    load_grid,
    save_grid,
    write_markdown,
    write_plots,
    write_run_report,
)

__all__ = ["Grid", "evaluation_grid", "field_errors", "truth_on", "versions",
           "evaluate_in_chunks", "grid_values", "load_grid", "save_grid", "write_markdown",
           "write_plots", "write_run_report"]
