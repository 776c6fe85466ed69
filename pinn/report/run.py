"""A run's report: errors on the evaluation grid, plots, ``metrics.json``, ``report.md``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from pinn.report import plots
from pinn.report.grid import Grid, evaluation_grid
from pinn.report.io import write_json, write_npz, write_text
from pinn.report.metrics import field_errors, truth_on, up_to_constant

CHUNK = 65_536


def evaluate_in_chunks(evaluate: Callable, points: np.ndarray, chunk: int = CHUNK
                       ) -> dict[str, np.ndarray]:
    """``evaluate(points) -> {name: values}`` called on chunks of ``points``."""
    out: dict[str, list] = {}
    for i in range(0, max(len(points), 1), chunk):
        part = evaluate(points[i:i + chunk])
        for k, v in part.items():
            out.setdefault(k, []).append(np.asarray(v, dtype=np.float64).reshape(-1))
    return {k: np.concatenate(v) for k, v in out.items()}


def grid_values(problem, evaluate: Callable, resolution) -> tuple[Grid, dict, dict | None, str]:
    """The grid, the predictions and the truth at its inside points, and the truth's kind."""
    grid = evaluation_grid(problem, resolution)
    pts = grid.inside
    pred = evaluate_in_chunks(evaluate, pts)
    truth, kind = truth_on(problem, pts)
    return grid, pred, truth, kind


def save_grid(run_dir, grid: Grid, pred: Mapping[str, np.ndarray], name="solution_grid.npz"):
    """The solution at the inside grid points (``points`` plus one array per field)."""
    arrays = {"points": grid.inside, "names": np.asarray(grid.names),
              "shape": np.asarray(grid.shape), "mask": grid.mask}
    arrays.update({f"field_{k}": np.asarray(v) for k, v in pred.items()})
    return write_npz(Path(run_dir) / name, **arrays)


def load_grid(path) -> tuple[np.ndarray, dict[str, np.ndarray], dict]:
    with np.load(path, allow_pickle=False) as z:
        pts = z["points"]
        fields = {k[len("field_"):]: z[k] for k in z.files if k.startswith("field_")}
        meta = {"names": [str(n) for n in z["names"]], "shape": tuple(int(s) for s in z["shape"]),
                "mask": z["mask"]}
    return pts, fields, meta


def write_run_report(run_dir: str | os.PathLike, problem, evaluate: Callable, *,
                     metrics: dict, history: Sequence[Mapping] = (), resolution=101,
                     snapshots: int = 4, method: str = "PINN", title: str | None = None,
                     true_params: Mapping[str, float] | None = None,
                     notes: Sequence[str] = ()) -> dict:
    """Evaluate on the grid, add the errors to ``metrics``, write plots, ``metrics.json``
    and ``report.md`` into ``run_dir``; return the metrics."""
    run_dir = Path(run_dir)
    grid, pred, truth, kind = grid_values(problem, evaluate, resolution)
    shift = up_to_constant(problem)
    errs = field_errors(pred, truth, shift)
    metrics = dict(metrics)
    metrics["rel_l2"] = errs["rel_l2"]
    metrics["max_abs_error"] = errs["max_abs_error"]
    metrics["compared_with"] = kind
    if shift:
        metrics["up_to_constant"] = list(shift)
    metrics["grid"] = {"names": list(grid.names), "shape": list(grid.shape),
                       "points_inside": int(grid.mask.sum())}
    save_grid(run_dir, grid, pred)
    if truth is not None:
        for f in shift:
            if f in pred and f in truth:
                pred = {**pred, f: pred[f] - np.mean(pred[f]) + np.nanmean(truth[f])}
    images = write_plots(run_dir, grid, pred, truth, history, method=method, truth_label=kind,
                         snapshots=snapshots, true_params=true_params)
    metrics["plots"] = [p for _, p in images]
    write_json(run_dir / "metrics.json", metrics)
    write_markdown(run_dir, title or f"{getattr(problem, 'name', 'problem')}: {method} run",
                   metrics, images, notes=notes)
    return metrics


def write_plots(run_dir, grid: Grid, pred: Mapping[str, np.ndarray], truth, history=(), *,
                method="PINN", truth_label=None, snapshots=4, true_params=None
                ) -> list[tuple[str, str]]:
    run_dir = Path(run_dir)
    out = []
    for name, values in pred.items():
        p = grid.full(values)
        t = grid.full(truth[name]) if truth is not None and name in truth else None
        fname = f"field_{name}.png"
        plots.field_figure(grid, name, p, t, run_dir / fname,
                           labels=(method, truth_label or "truth"), snapshots=snapshots)
        out.append((f"{name}: {method}" + (f" | {truth_label} | error" if t is not None else ""),
                    fname))
    if history:
        if plots.loss_figure(history, run_dir / "loss.png"):
            out.append(("loss history", "loss.png"))
        if plots.params_figure(history, run_dir / "params.png", true_params):
            out.append(("learned parameters", "params.png"))
    return out


def _truth_name(kind) -> str:
    return {"exact": "exact solution", "reference": "reference solution"}.get(kind, "truth")


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3e}" if (v != 0 and (abs(v) < 1e-2 or abs(v) >= 1e4)) else f"{v:.4g}"
    return str(v)


def write_markdown(run_dir, title: str, metrics: Mapping, images: Sequence[tuple[str, str]],
                   notes: Sequence[str] = ()) -> Path:
    lines = [f"# {title}", ""]
    rel, mx = metrics.get("rel_l2") or {}, metrics.get("max_abs_error") or {}
    if rel:
        lines += [f"Errors against the {_truth_name(metrics.get('compared_with'))} on the "
                  "evaluation grid:", "", "| field | relative L2 | max abs error |",
                  "|---|---|---|"]
        lines += [f"| {f} | {_fmt(rel[f])} | {_fmt(mx.get(f))} |" for f in rel]
        lines.append("")
        if metrics.get("up_to_constant"):
            lines += [f"Determined up to a constant, compared after removing the mean: "
                      f"{', '.join(metrics['up_to_constant'])}.", ""]
    else:
        lines += ["No exact solution or reference: no errors reported.", ""]
    facts = [("steps", "steps"), ("training time (s)", "train_seconds"),
             ("compile time (s)", "compile_seconds"), ("wall time (s)", "wall_seconds"),
             ("precision", "precision"), ("seed", "seed"), ("parameters", "n_params"),
             ("degrees of freedom", "dofs"), ("peak memory (MB)", "peak_memory_mb")]
    rows = [(label, metrics[k]) for label, k in facts if metrics.get(k) is not None]
    if rows:
        lines += ["| | |", "|---|---|"] + [f"| {a} | {_fmt(b)} |" for a, b in rows] + [""]
    loss = metrics.get("loss") or {}
    if loss:
        lines += ["Final loss per term (mean squared residual):", "",
                  "| term | loss |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in loss.items()] + [""]
    params = metrics.get("params") or {}
    if params:
        lines += ["Learned parameters:", "", "| parameter | value |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in params.items()] + [""]
    lines += list(notes)
    if notes:
        lines.append("")
    for caption, fname in images:
        lines += [f"## {caption}", "", f"![{caption}]({fname})", ""]
    files = [f for f in ("config.yaml", "metrics.json", "history.jsonl", "solution_grid.npz")
             if (Path(run_dir) / f).exists()]
    if (Path(run_dir) / "checkpoints").exists():
        files.append("checkpoints/")
    if files:
        lines += ["Files: " + ", ".join(f"[{f}]({f})" for f in files), ""]
    return write_text(Path(run_dir) / "report.md", "\n".join(lines))
