"""A run's folder of results: the solution on the evaluation grid, plots, ``metrics.json``,
``report.md``; the same for a PINN and a FEM run."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from pinn.evaluate import EvaluationGrid, Score
from pinn.io import write_json, write_jsonl, write_npz, write_text
from pinn.report import plots
from pinn.report.html import write_html
from pinn.report.metrics import versions


def save_grid(run_dir, grid: EvaluationGrid, pred: Mapping[str, np.ndarray],
              name="solution_grid.npz"):
    """The solution at the inside grid points (``points`` plus one array per field)."""
    arrays = {"points": grid.points, "names": np.asarray(grid.names),
              "shape": np.asarray(grid.shape), "mask": grid.mask}
    arrays.update({f"field_{k}": np.asarray(v) for k, v in pred.items()})
    return write_npz(Path(run_dir) / name, **arrays)


def load_grid(path) -> tuple[np.ndarray, dict[str, np.ndarray], dict]:
    """Read a ``solution_grid.npz`` (see :func:`save_grid`): ``(points, fields, meta)`` with
    ``meta`` holding the grid's coordinate ``names``, ``shape`` and inside ``mask``. Every
    array is checked (``points`` [N, d] numbers, a value of each field at each point, the
    mask as large as the grid): a fault is :class:`pinn.io.BadFile` naming the file."""
    from pinn.io import BadFile, read_npz_file

    z = read_npz_file(path, "solution grid")
    redo = "the solution grid is damaged: run `pinn plot` on the run to write it again"
    for key in ("points", "names", "shape", "mask"):
        if key not in z:
            raise BadFile(f"{path}: no array {key!r}; {redo}")
    pts, names, shape, mask = z["points"], z["names"], z["shape"], z["mask"]
    if pts.ndim != 2 or pts.dtype.kind not in "iuf":
        raise BadFile(f"{path}: points must be a 2-D array of numbers, not {pts.ndim}-D "
                      f"{pts.dtype}; {redo}")
    if names.ndim != 1 or names.dtype.kind != "U" or len(names) != pts.shape[1]:
        raise BadFile(f"{path}: names must name the {pts.shape[1]} coordinate(s) of the "
                      f"points, not {names.ndim}-D {names.dtype} of {names.size}; {redo}")
    if shape.ndim != 1 or shape.dtype.kind not in "iu" or len(shape) > 8 or np.any(shape < 1):
        raise BadFile(f"{path}: shape must be the grid's nodes per axis (integers of at least "
                      f"1), not {shape.tolist() if shape.size <= 8 else shape.shape}; {redo}")
    if mask.dtype.kind != "b" or mask.size != int(np.prod(shape, dtype=np.float64)):
        raise BadFile(f"{path}: mask must be one true or false per grid node "
                      f"({' x '.join(str(int(n)) for n in shape)}), not {mask.size} "
                      f"{mask.dtype}; {redo}")
    fields = {k[len("field_"):]: v for k, v in z.items() if k.startswith("field_")}
    for k, v in fields.items():
        if v.dtype.kind not in "iuf" or v.shape != (len(pts),):
            raise BadFile(f"{path}: field_{k} must hold one number per point "
                          f"({len(pts)}), not an array of shape {v.shape} {v.dtype}; {redo}")
    meta = {"names": [str(n) for n in names], "shape": tuple(int(s) for s in shape),
            "mask": mask}
    return pts, fields, meta


def true_params(problem) -> dict[str, float] | None:
    """Values of the learnable parameters that the reference states (inverse problems:
    Burgers' ``nu``), for the parameter plot."""
    out = {p.name: float(v) for p in problem.learnable
           if isinstance(v := getattr(problem.reference, p.name, None), (int, float))}
    return out or None


def write_run(run_dir: str | os.PathLike, problem, score: Score, metrics: Mapping, *,
              history: Sequence[Mapping] = (), snapshots: int = 4, method: str = "PINN",
              title: str | None = None, true_params: Mapping[str, float] | None = None,
              notes: Sequence[str] = ()) -> dict:
    """Write a run's results into ``run_dir``: ``solution_grid.npz``, plots,
    ``history.jsonl``, ``metrics.json``, ``report.md`` and ``report.html`` (the same page,
    images inlined). ``metrics`` already holds the errors of ``score`` (nothing is
    recomputed); returns what ``metrics.json`` holds."""
    run_dir = Path(run_dir)
    metrics = {**metrics, **score.metrics(), "versions": versions()}
    save_grid(run_dir, score.grid, score.pred)
    if history:  # the whole history (a resumed run's too), one JSON object per row
        write_jsonl(run_dir / "history.jsonl", history)
    truth = None if score.truth is None else score.truth.values
    images = write_plots(run_dir, score.grid, score.aligned(), truth, history, method=method,
                         truth_label=None if score.truth is None else score.truth.kind,
                         snapshots=snapshots, true_params=true_params)
    metrics["plots"] = [p for _, p in images]
    write_json(run_dir / "metrics.json", metrics)
    write_markdown(run_dir, title or f"{getattr(problem, 'name', 'problem')}: {method}",
                   metrics, images, notes=notes)
    write_html(run_dir)  # report.html: the same page, images inlined
    return metrics


def write_plots(run_dir, grid: EvaluationGrid, pred: Mapping[str, np.ndarray], truth, history=(), *,
                method="PINN", truth_label=None, snapshots=4, true_params=None
                ) -> list[tuple[str, str]]:
    """Write the field maps (``field_<name>.png``, beside the truth and the error when
    known), the loss history and the learned parameters into ``run_dir``; returns
    ``(caption, file name)`` pairs for :func:`write_markdown`."""
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


def _param_grid_lines(metrics: Mapping) -> list[str]:
    """A parametric run: where the table above was scored, and the errors over the ranges
    (``metrics["param_grid"]``: one row per parameter value)."""
    at, rows = metrics.get("param_values") or {}, metrics.get("param_grid") or []
    out = []
    if at:
        out += ["(Scored above at " + ", ".join(f"{k} = {_fmt(v)}" for k, v in at.items())
                + ", the centre of the parameter range.)", ""]
    if rows:
        names = [k for k in rows[0] if k not in ("rel_l2", "max_abs_error")]
        fields = list(rows[0]["rel_l2"])
        out += ["Errors over the parameter range (the same grid at each value):", "",
                "| " + " | ".join(names + [f"rel. L2 {f}" for f in fields]
                                  + [f"max abs {f}" for f in fields]) + " |",
                "|" + "---|" * (len(names) + 2 * len(fields))]
        out += ["| " + " | ".join([_fmt(r[k]) for k in names]
                                  + [_fmt(r["rel_l2"].get(f)) for f in fields]
                                  + [_fmt(r["max_abs_error"].get(f)) for f in fields]) + " |"
                for r in rows]
        out.append("")
    return out


def write_markdown(run_dir, title: str, metrics: Mapping, images: Sequence[tuple[str, str]],
                   notes: Sequence[str] = ()) -> Path:
    """Write ``report.md`` in ``run_dir``: the errors, timings, final loss per term, learned
    parameters, ``notes``, the ``images`` (from :func:`write_plots`) and the folder's files."""
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
        lines += _param_grid_lines(metrics)
        at = metrics.get("rel_l2_ref_points") or {}
        if at:
            lines += [f"At the reference's own {metrics.get('ref_points', '?')} points (nothing "
                      "interpolated; PINNacle's L2RE): relative L2 "
                      + ", ".join(f"{f} {_fmt(v)}" for f, v in at.items()) + ".", ""]
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
    kept = metrics.get("kept")
    if isinstance(kept, Mapping) and all(isinstance(kept.get(k), (int, float)) for k in
                                         ("step", "value", "last_step", "last_value")):
        lines += [f"Kept step {kept['step']}'s parameters, not the last step's "
                  f"({kept['last_step']}): the misfit of the observations held out of "
                  f"training was lowest there ({_fmt(kept['value'])}, against "
                  f"{_fmt(kept['last_value'])} at the last step; the losses above are the "
                  "last step's).", ""]
    remarched = metrics.get("remarched")
    if isinstance(remarched, Mapping) and isinstance(remarched.get("why"), str):
        lines += [remarched["why"][0].upper() + remarched["why"][1:] + " (the steps and "
                  "times above count both runs).", ""]
    params = metrics.get("params") or {}
    if params:
        lines += ["Learned parameters:", "", "| parameter | value |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in params.items()] + [""]
    lines += list(notes)
    if notes:
        lines.append("")
    for caption, fname in images:
        lines += [f"## {caption}", "", f"![{caption}]({fname})", ""]
    files = [f for f in ("config.yaml", "metrics.json", "history.jsonl", "solution.json",
                         "params.npz", "solution_grid.npz") if (Path(run_dir) / f).exists()]
    if (Path(run_dir) / "checkpoints").exists():
        files.append("checkpoints/")
    if files:
        lines += ["Files: " + ", ".join(f"[{f}]({f})" for f in files), ""]
    return write_text(Path(run_dir) / "report.md", "\n".join(lines))
