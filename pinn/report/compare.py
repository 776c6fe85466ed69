"""``pinn compare``: one table (Markdown and PNG) and error maps side by side."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pinn.report import plots
from pinn.report.grid import evaluation_grid
from pinn.report.io import write_json, write_text
from pinn.report.metrics import truth_on, up_to_constant
from pinn.report.run import _truth_name, load_grid

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


def _evaluate_saved(run, problem, points):
    """Values of the solution saved in ``run`` (PINN or FEM) at ``points``, or None."""
    run = Path(run)
    from pinn.report.run import evaluate_in_chunks

    if (run / "solution.pkl").exists():
        from pinn.solve import Solution

        return evaluate_in_chunks(Solution.load(run).evaluate, points)
    if (run / "fem.npz").exists():
        from pinn.fem import FEMSolution

        return evaluate_in_chunks(FEMSolution.load(run, problem).evaluate, points)
    return None


def markdown_table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def write_comparison(out_dir, problem, runs: Mapping[str, Path], *, resolution=101,
                     snapshots: int = 3) -> str:
    """Write ``compare.md``, ``compare.png``, ``compare.json`` and ``errors_<field>.png``."""
    out_dir = Path(out_dir)
    rows = comparison_rows(runs)
    table = markdown_table(HEADER, rows)
    plots.table_figure(HEADER, rows, out_dir / "compare.png",
                       title=f"{getattr(problem, 'name', '')}: PINN vs FEM")
    grid = evaluation_grid(problem, resolution)
    truth, kind = truth_on(problem, grid.inside)
    images = []
    preds = {}
    for label, run in runs.items():
        gpath = Path(run) / "solution_grid.npz"
        fields = None
        if gpath.exists():
            pts, fields, meta = load_grid(gpath)
            if tuple(meta["shape"]) != grid.shape or len(pts) != len(grid.inside):
                fields = None
        if fields is None:  # another grid: evaluate the saved solution on this one
            fields = _evaluate_saved(run, problem, grid.inside)
        if fields is not None:
            preds[label] = fields
    shift = up_to_constant(problem)
    if truth is not None and preds:
        for name in truth:
            errs = {}
            for label, f in preds.items():
                if name in f:
                    d = f[name] - truth[name]
                    errs[label] = grid.full(d - np.nanmean(d) if name in shift else d)
            if errs:
                fname = f"errors_{name}.png"
                plots.error_maps_figure(grid, name, errs, out_dir / fname, snapshots=snapshots)
                images.append((f"pointwise error of {name}", fname))
    lines = [f"# {getattr(problem, 'name', 'problem')}: PINN vs FEM", "",
             f"Errors against the {_truth_name(kind)} on the evaluation grid "
             f"({' x '.join(str(s) for s in grid.shape)}).", "", table, "",
             "![table](compare.png)", ""]
    for caption, fname in images:
        lines += [f"## {caption}", "", f"![{caption}]({fname})", ""]
    lines += ["Runs: " + ", ".join(f"{k}: `{v}`" for k, v in runs.items()), ""]
    write_text(out_dir / "compare.md", "\n".join(lines))
    write_json(out_dir / "compare.json", {"header": list(HEADER), "rows": rows,
                                          "runs": {k: str(v) for k, v in runs.items()}})
    return table
