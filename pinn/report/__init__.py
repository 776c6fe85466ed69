"""Run reports: the solution on the evaluation grid, plots, ``metrics.json``, ``report.md``.

Files are written atomically (:mod:`pinn.io`); the numbers come from
:func:`pinn.evaluate.score`. matplotlib is imported only when a plot is drawn.
"""

from pinn.report.metrics import machine, versions
from pinn.report.run import (
    load_grid,
    save_grid,
    true_params,
    write_markdown,
    write_plots,
    write_run,
)

__all__ = ["versions", "machine", "load_grid", "save_grid", "true_params", "write_markdown",
           "write_plots", "write_run"]
