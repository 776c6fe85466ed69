"""``pinn compare``: one table (Markdown and PNG) and error maps side by side."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

import numpy as np

from pinn import evaluate as ev
from pinn.io import write_json, write_text
from pinn.report import plots
from pinn.report.html import write_html
from pinn.report.metrics import read_metrics
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
        if not (Path(run) / "metrics.json").exists():
            raise FileNotFoundError(f"{run}: no metrics.json (is it a finished run folder?)")
        m = read_metrics(run)
        size = m.get("dofs") if m.get("dofs") is not None else m.get("n_params")
        kind = "dofs" if m.get("dofs") is not None else "params"
        rows.append((label, _per_field(m.get("rel_l2")), _per_field(m.get("max_abs_error")),
                     _fmt(m.get("wall_seconds"), ".3g"), _fmt(m.get("peak_memory_mb"), ".0f"),
                     f"{size} {kind}" if size is not None else "–"))
    return rows


def check_run(run, problem, *, option: str = "--fem") -> None:
    """Read now what a comparison reads of the finished run folder ``run`` later (its
    ``metrics.json``, ``solution_grid.npz``, and a ``pinn fem`` run's solution, checked
    against ``problem``), so that a damaged or a foreign folder is refused before any
    work: :class:`pinn.io.BadFile` naming the file, ``ValueError`` (naming ``option``)
    without metrics."""
    run = Path(run)
    if not (run / "metrics.json").exists():
        raise ValueError(f"{option} {run}: no metrics.json there; give a finished run folder "
                         "(of `pinn solve` or `pinn fem`)")
    read_metrics(run)
    if (run / "solution_grid.npz").exists():
        load_grid(run / "solution_grid.npz")
    pinn = (run / "solution.json").exists() or (run / "solution.pkl").exists()
    if not pinn and ((run / "fem.npz").exists() or (run / "fem.json").exists()):
        from pinn.fem import FEMSolution

        try:
            FEMSolution.load(run, problem)
        except FileNotFoundError as exc:
            raise ValueError(f"{option} {run}: no {Path(exc.filename).name} there; give a "
                             "finished `pinn fem` run folder") from None


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


def _error_maps(out_dir: Path, problem, grid, truth, preds: Mapping[str, dict],
                snapshots: int) -> list[tuple[str, str]]:
    """``errors_<field>.png``, one panel per method; ``[(caption, file name)]``."""
    shift = ev.up_to_constant(problem)
    times = ev.point_times(problem, grid.points)
    images = []
    for name in (truth.values if truth is not None else {}):
        errs = {}
        for label, f in preds.items():
            if name in f:
                d = f[name] - truth.values[name]
                errs[label] = grid.full(d - ev.free_part(d, times) if name in shift else d)
        if errs:
            fname = f"errors_{name}.png"
            plots.error_maps_figure(grid, name, errs, out_dir / fname, snapshots=snapshots)
            images.append((f"pointwise error of {name}", fname))
    return images


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
    preds = {label: f for label, run in runs.items()
             if (f := _predictions(run, problem, grid)) is not None}
    images = _error_maps(out_dir, problem, grid, truth, preds, snapshots)
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


# -- equal accuracy and equal time ---------------------------------------------------

MATCHED_HEADER = ("method", "rel. L2", "max error", "wall time (s)", "dofs / params",
                  "against the PINN")


def pinn_curve(run) -> tuple[list[float], list[float]]:
    """The PINN's error against wall time: its history's evaluations (worst field,
    ``eval.rel_l2_<field>`` at ``time``), then the final score at the run's wall time."""
    from pinn.fem.study import worst
    from pinn.train.history import read_history

    run = Path(run)
    ts, es = [], []
    for row in read_history(run / "history.jsonl"):
        errs = {k: v for k, v in row.items() if k.startswith("eval.rel_l2_") and v is not None}
        if errs and row.get("time") is not None:
            ts.append(float(row["time"]))
            es.append(worst(errs))
    m = read_metrics(run)
    if m.get("wall_seconds") is not None:
        ts.append(float(m["wall_seconds"]))
        es.append(worst(m.get("rel_l2")))
    return ts, es


def matched_verdict(study, error: float, seconds: float) -> dict:
    """The two comparisons as data and sentences: the cheapest FEM level at least as
    accurate as ``error`` and the most accurate one within ``seconds``."""
    acc, tim = study.equal_accuracy(error), study.equal_time(seconds)
    best = min(study.levels, key=lambda lv: lv.error, default=None)
    fastest = min(study.levels, key=lambda lv: lv.seconds, default=None)
    if acc is not None:
        faster = seconds / acc.seconds if acc.seconds > 0 else math.inf
        said_acc = (f"Equal accuracy (rel. L2 <= {error:.2e}): FEM {acc.label} ({acc.dofs} dofs) "
                    f"takes {acc.seconds:.3g} s, "
                    + (f"{faster:.3g}x less than the PINN's {seconds:.3g} s." if faster >= 1 else
                       f"{1 / faster:.3g}x more than the PINN's {seconds:.3g} s."))
    else:
        said_acc = (f"Equal accuracy (rel. L2 <= {error:.2e}): no FEM level of the study reached "
                    f"the PINN's error (best {best.error:.2e}, {best.label}, {best.seconds:.3g} s)"
                    if best is not None else "Equal accuracy: the study has no FEM level")
        said_acc += "; the study stopped: " + "; ".join(f"{k}: {v}" for k, v in
                                                        study.stopped.items()) + "."
    if tim is not None:
        said_tim = (f"Equal time (<= {seconds:.3g} s, the PINN's wall time): FEM {tim.label} "
                    f"reaches {tim.error:.2e}, "
                    + (f"{error / tim.error:.3g}x lower than the PINN's {error:.2e}."
                       if tim.error <= error else
                       f"{tim.error / error:.3g}x higher than the PINN's {error:.2e}."))
    else:
        said_tim = (f"Equal time (<= {seconds:.3g} s): every FEM level took longer (the fastest, "
                    f"{fastest.label}, {fastest.seconds:.3g} s)." if fastest is not None else
                    "Equal time: the study has no FEM level")
    return {"pinn": {"rel_l2": error, "wall_seconds": seconds},
            "equal_accuracy": None if acc is None else asdict(acc),
            "equal_time": None if tim is None else asdict(tim),
            "sentences": [said_acc, said_tim]}


def _matched_rows(verdict: dict, pinn_run: Path, m: dict, err: float, secs: float,
                  runs: Mapping[str, Path] | None) -> list:
    """The rows of ``pinn compare``'s table: the PINN, the FEM at equal accuracy and at equal
    time (how much sooner, how much more accurate), then ``runs``."""
    from pinn.fem.study import worst

    rows = [comparison_rows({"PINN": pinn_run})[0][:3] + (_fmt(secs, ".3g"),
            f"{m.get('n_params')} params", "–")]
    for key, what in (("equal_accuracy", "equal accuracy"), ("equal_time", "equal time")):
        lv = verdict[key]
        if lv is None:
            rows.append((f"FEM at {what}", "none in the study", "–", "–", "–", "–"))
            continue
        e = worst(lv["rel_l2"])
        if key == "equal_accuracy":
            r = secs / lv["seconds"] if lv["seconds"] > 0 else math.inf
            vs = f"{r:.3g}x sooner" if r >= 1 else f"{1 / r:.3g}x later"
        else:
            r = err / e if e > 0 else math.inf
            vs = f"{r:.3g}x more accurate" if r >= 1 else f"{1 / r:.3g}x less accurate"
        dt = f", dt {lv['dt']:.3g}" if lv.get("dt") else ""
        rows.append((f"FEM at {what}: {lv['element']}, {lv['cells']} cells{dt}",
                     _per_field(lv["rel_l2"]), _per_field(lv["max_abs_error"]),
                     _fmt(lv["seconds"], ".3g"), f"{lv['dofs']} dofs", vs))
    for row in comparison_rows(runs) if runs else []:
        rows.append(row[:4] + (row[5], "–"))
    return rows


def _matched_pareto(path: Path, pinn_run: Path, study, verdict: dict, name: str) -> None:
    """The Pareto plot: the PINN's training history and each element's refinement sequence
    (error against wall time), the matched levels marked, the coarser time steps as points."""
    from pinn.fem.study import worst

    curves = {"PINN (training history)": pinn_curve(pinn_run)}
    for element, seq in study.by_element().items():
        curves[f"FEM {element}"] = ([lv.seconds for lv in seq], [lv.error for lv in seq])
    marks = {f"FEM at {w}": (verdict[k]["seconds"], worst(verdict[k]["rel_l2"]))
             for k, w in (("equal_accuracy", "equal accuracy"), ("equal_time", "equal time"))
             if verdict[k] is not None}
    coarse = [lv for lv in study.levels if lv.coarser > 1]
    points = ({"FEM, 4x and 16x the time step": ([lv.seconds for lv in coarse],
                                                 [lv.error for lv in coarse])}
              if coarse else {})
    plots.pareto_figure(curves, path, marks=marks, points=points,
                        title=f"{name}: error against wall time")


def _matched_markdown(name: str, grid, truth, verdict: dict, table: str, study, images,
                      pinn_run: Path) -> str:
    """``compare.md``: the verdict, the table, the Pareto plot, the refinement sequence and
    the error maps."""
    seq_rows = [(lv.element, str(lv.cells), str(lv.dofs), _fmt(lv.dt, ".3g"),
                 _fmt(lv.seconds, ".3g"), _fmt(lv.error)) for lv in study.levels]
    against = "truth" if truth is None else truth.label
    lines = [f"# {name}: PINN vs FEM at equal accuracy and equal time", "",
             f"Errors against the {against} on the evaluation grid "
             f"({' x '.join(str(s) for s in grid.shape)}); rel. L2 of the worst field. "
             "The PINN's time is its training's wall time (compilation included); each FEM "
             "time is one solve's (mesh, assembly, factorisation and solve), P1-P3 on finer "
             "and finer meshes (evolution: the time step follows the cell size).", "",
             *[f"- {s}" for s in verdict["sentences"]], "", table, "",
             "![error against wall time](pareto.png)", "",
             "## The FEM refinement sequence", "",
             markdown_table(("element", "cells", "dofs", "dt", "wall time (s)", "rel. L2"),
                            seq_rows), "",
             "Stopped: " + "; ".join(f"{k}: {v}" for k, v in study.stopped.items()) + ".", ""]
    for caption, fname in images:
        lines += [f"## {caption}", "", f"![{caption}]({fname})", ""]
    lines += [f"PINN run: `{pinn_run}`", ""]
    return "\n".join(lines)


def write_matched_comparison(out_dir, problem, pinn_run, study, fem_preds: Mapping[str, dict],
                             *, resolution=None, snapshots: int = 3,
                             runs: Mapping[str, Path] | None = None) -> str:
    """``pinn compare``'s report: the PINN beside the FEM of ``study`` (a
    :class:`pinn.fem.study.Study`) at equal accuracy and at equal time, the whole
    refinement sequence, the Pareto plot (``pareto.png``: error against wall time), error
    maps, ``compare.md`` / ``.html`` / ``.json`` and ``study.json``. ``fem_preds``: the
    matched levels' values on the evaluation grid, by their table labels; ``runs``: more
    finished run folders shown as rows. Returns the Markdown table."""
    from pinn.fem.study import worst

    out_dir = Path(out_dir)
    pinn_run = Path(pinn_run)
    m = read_metrics(pinn_run)
    err, secs = worst(m.get("rel_l2")), float(m.get("wall_seconds") or math.nan)
    verdict = matched_verdict(study, err, secs)
    rows = _matched_rows(verdict, pinn_run, m, err, secs, runs)
    table = markdown_table(MATCHED_HEADER, rows)
    name = getattr(problem, "name", "problem")
    plots.table_figure(MATCHED_HEADER, rows, out_dir / "compare.png",
                       title=f"{name}: PINN vs FEM at equal accuracy and equal time")
    _matched_pareto(out_dir / "pareto.png", pinn_run, study, verdict, name)
    grid = ev.evaluation_grid(problem, resolution)
    truth = ev.truth(problem, grid.points)
    preds = {"PINN": f} if (f := _predictions(pinn_run, problem, grid)) is not None else {}
    preds.update(fem_preds)
    for label, run in (runs or {}).items():
        if (f := _predictions(run, problem, grid)) is not None:
            preds[label] = f
    images = _error_maps(out_dir, problem, grid, truth, preds, snapshots)
    write_text(out_dir / "compare.md",
               _matched_markdown(name, grid, truth, verdict, table, study, images, pinn_run))
    write_html(out_dir, "compare.md", "compare.html")
    write_json(out_dir / "study.json", study.to_data())
    write_json(out_dir / "compare.json", {"header": list(MATCHED_HEADER), "rows": rows,
                                          **verdict, "pinn_run": str(pinn_run)})
    return table
