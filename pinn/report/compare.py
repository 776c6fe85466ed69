"""``pinn compare``: one table (Markdown and PNG) and error maps side by side."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pinn import evaluate as ev
from pinn.io import write_json, write_text
from pinn.report import plots
from pinn.report.html import write_html
from pinn.report.run import load_grid

HEADER = ("method", "rel. L2", "max error", "wall time (s)", "peak memory (MB)",
          "dofs / params")


def _fmt(v, spec=".3e") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def _per_field(d: Mapping | None) -> str:
    if not d:
        return "–"
    if len(d) == 1:
        return _fmt(next(iter(d.values())))
    return ", ".join(f"{k} {_fmt(v)}" for k, v in d.items())


def comparison_rows(runs: Mapping[str, Path]) -> list[tuple[str, ...]]:
    rows = []
    for label, run in runs.items():
        path = Path(run) / "metrics.json"
        if not path.exists():
            raise FileNotFoundError(f"{run}: no metrics.json (is it a finished run folder?)")
        m = json.loads(path.read_text())
        size = m.get("dofs") if m.get("dofs") is not None else m.get("n_params")
        kind = "dofs" if m.get("dofs") is not None else "params"
        rows.append((label, _per_field(m.get("rel_l2")), _per_field(m.get("max_abs_error")),
                     _fmt(m.get("wall_seconds"), ".3g"), _fmt(m.get("peak_memory_mb"), ".0f"),
                     f"{size} {kind}" if size is not None else "–"))
    return rows


def _saved_predict(run, problem):
    """``predict(points)`` of the solution saved in ``run`` (PINN or FEM), or None."""
    run = Path(run)
    if (run / "solution.json").exists() or (run / "solution.pkl").exists():
        from pinn.solution import Solution  # refuses an old solution.pkl, naming the fix

        return Solution.load(run).evaluate
    if (run / "fem.npz").exists():
        from pinn.fem import FEMSolution

        return FEMSolution.load(run, problem).evaluate
    return None


def _predictions(run, problem, grid: ev.EvaluationGrid) -> dict | None:
    """The run's values on ``grid``: its saved grid if it is this one, else evaluated."""
    gpath = Path(run) / "solution_grid.npz"
    if gpath.exists():
        pts, fields, meta = load_grid(gpath)
        if tuple(meta["shape"]) == grid.shape and np.array_equal(pts, grid.points):
            return fields
    predict = _saved_predict(run, problem)
    return None if predict is None else ev.predict_in_chunks(predict, grid.points)


def markdown_table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def write_comparison(out_dir, problem, runs: Mapping[str, Path], *, resolution=None,
                     snapshots: int = 3) -> str:
    """Write ``compare.md`` (and ``compare.html``, the same page with its images inlined),
    ``compare.png``, ``compare.json`` and ``errors_<field>.png``."""
    out_dir = Path(out_dir)
    rows = comparison_rows(runs)
    table = markdown_table(HEADER, rows)
    plots.table_figure(HEADER, rows, out_dir / "compare.png",
                       title=f"{getattr(problem, 'name', '')}: PINN vs FEM")
    grid = ev.evaluation_grid(problem, resolution)
    truth = ev.truth(problem, grid.points)
    shift = ev.up_to_constant(problem)
    preds = {label: f for label, run in runs.items()
             if (f := _predictions(run, problem, grid)) is not None}
    images = []
    for name in (truth.values if truth is not None else {}):
        errs = {}
        for label, f in preds.items():
            if name in f:
                d = f[name] - truth.values[name]
                errs[label] = grid.full(d - np.nanmean(d) if name in shift else d)
        if errs:
            fname = f"errors_{name}.png"
            plots.error_maps_figure(grid, name, errs, out_dir / fname, snapshots=snapshots)
            images.append((f"pointwise error of {name}", fname))
    against = "truth" if truth is None else truth.label
    lines = [f"# {getattr(problem, 'name', 'problem')}: PINN vs FEM", "",
             f"Errors against the {against} on the evaluation grid "
             f"({' x '.join(str(s) for s in grid.shape)}).", "", table, "",
             "![table](compare.png)", ""]
    for caption, fname in images:
        lines += [f"## {caption}", "", f"![{caption}]({fname})", ""]
    lines += ["Runs: " + ", ".join(f"{k}: `{v}`" for k, v in runs.items()), ""]
    write_text(out_dir / "compare.md", "\n".join(lines))
    write_html(out_dir, "compare.md", "compare.html")
    write_json(out_dir / "compare.json", {"header": list(HEADER), "rows": rows,
                                          "runs": {k: str(v) for k, v in runs.items()}})
    return table
