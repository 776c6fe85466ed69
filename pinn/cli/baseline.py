"""``pinn fem`` and ``pinn compare``: the finite-element baseline, and PINN against it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pinn.cli import (
    EXIT_OK,
    FileArg,
    QuietOpt,
    SetOpt,
    UserError,
    _errors_line,
    _examples,
    _load,
    _out,
    _out_opt,
    _overrides,
    _prepare,
    _remove_new_folder,
    _subcommand,
    _user,
    app,
)


def _fresh(out: Path | None, command: str) -> None:
    """``--out`` must be new or empty: these commands start afresh (they have no --resume)."""
    from pinn import io

    if out is not None and out.is_dir():
        _user(io.check_not_in_use, out)
    if out is not None and out.is_dir() and any(p.name != io.LOCK_FILE for p in out.iterdir()):
        raise UserError(f"{out}: the folder exists and is not empty; give a new --out or remove "
                        f"it ({command} starts afresh and has no --resume)")


def _unwrite(run_dir: Path, created: bool) -> None:
    """Undo what ``_prepare`` wrote: the folder if this command created it, else its files."""
    from pinn import io

    if created:
        _remove_new_folder(run_dir)
        return
    for name in ("config.yaml", io.COMMAND_FILE, io.LOCK_FILE):
        (run_dir / name).unlink(missing_ok=True)


@app.command(epilog=_examples("pinn fem problems/poisson2d.yaml",
                             "pinn fem problems/heat2d.yaml --cells 32 --element P2 --dt 0.01",
                             "pinn fem problems/ns_cavity.yaml --out runs/cavity-fem"))
def fem(
    file: FileArg,
    cells: Annotated[int | None, typer.Option(help="Cells per side (default: fem.cells).")
                     ] = None,
    element: Annotated[str | None, typer.Option(help="P1 or P2 (default: fem.element).")
                       ] = None,
    dt: Annotated[float | None, typer.Option(help="Time step for evolution problems.")] = None,
    out: Annotated[Path | None, _out_opt("runs/<name>-fem")] = None,
    set_: SetOpt = None,
    quiet: QuietOpt = False,
):
    """Solve the same problem with the finite-element baseline (scikit-fem)."""
    sets = list(set_ or [])
    for key, value in (("cells", cells), ("element", element), ("dt", dt)):
        if value is not None:
            sets.append(f"fem.{key}={value}")
    built = _load(file, sets)
    _fresh(out, "pinn fem")
    run_dir, lock = _prepare(built, out, False, "-fem", file=file, sets=sets)
    from pinn import fem as F
    from pinn.run import fem_run

    opts, ev = built.spec.fem, built.spec.evaluation
    try:
        with lock:
            _, m = fem_run(built.problem, cells=opts.cells, element=opts.element, dt=opts.dt,
                           theta=opts.theta, out_dir=run_dir, resolution=ev.resolution,
                           snapshots=ev.snapshots, metrics={"problem": built.name})
    except F.UnsupportedProblem as exc:
        _unwrite(run_dir, lock.created)  # refused before solving: leave nothing behind
        why = str(exc)
        raise UserError(f"{built.name}: " + (why if why.startswith("the FEM baseline") else
                        f"the FEM baseline cannot solve this problem: {why}")) from None
    _out(f"{built.name}: FEM {opts.element}, {m['dofs']} dofs, {m['wall_seconds']:.1f} s"
         + _errors_line(m), quiet)
    _out(f"report: {run_dir / 'report.md'}", quiet)
    return EXIT_OK


def _compare_elements(built, elements: str, max_level_seconds: float | None) -> list[str]:
    """The elements of ``--elements``, once the options and the problem suit ``pinn compare``
    (a truth to measure against, one parameter value, a problem the FEM baseline solves)."""
    from pinn import evaluate as ev
    from pinn import fem as F

    chosen = [e.strip().upper() for e in elements.split(",") if e.strip()]
    bad = [e for e in chosen if e not in ("P1", "P2", "P3", "P4")]
    if bad or not chosen:
        raise UserError(f"--elements {elements!r}: use P1, P2, P3 or P4, comma-separated "
                        "(e.g. --elements P2,P3)")
    if max_level_seconds is not None and not max_level_seconds > 0:
        raise UserError(f"--max-level-seconds must be > 0, got {max_level_seconds}")
    if not ev.has_truth(built.problem):
        raise UserError(f"{built.name}: pinn compare measures both methods against the truth; "
                        "give the problem an exact solution (exact:) or a reference "
                        "(reference:)")
    if built.problem.ranged:
        first = built.problem.ranged[0]
        raise UserError(f"{built.name} is parametric: compare one parameter value (e.g. --set "
                        f"params.{first.name}={first.range[0]}), or see "
                        "benchmarks/surrogate.py for the many-query comparison")
    try:
        F.translate(built.problem, 2)
    except F.UnsupportedProblem as exc:
        raise UserError(f"{built.name}: the FEM baseline cannot solve this problem: {exc}"
                        ) from None
    return chosen


def _compare_pinn_run(file: Path, built, pinn_run: Path | None, out_dir: Path,
                      set_: list[str] | None, sets_in: list[str], quiet: bool) -> Path:
    """The PINN run to compare: --pinn's finished run, or one trained now into ``out_dir/pinn``
    (in its own process, with an evaluation curve unless --set gave training.eval_every)."""
    sets = [a for item in (set_ or []) for a in ("--set", item)]
    if pinn_run is None:
        pinn_run = out_dir / "pinn"
        if not any(s.split("=", 1)[0].strip() == "training.eval_every" for s in sets_in):
            total = sum(st.steps for st in built.spec.training.stages)
            sets += ["--set", f"training.eval_every={max(10, total // 50)}"]  # the curve
        _out(f"training the PINN -> {pinn_run}", quiet)
        # its own process, so that its wall time is its own
        _subcommand(["solve", str(file), "--out", str(pinn_run), *sets,
                     *(["--quiet"] if quiet else [])], show=not quiet)
    elif not (pinn_run / "metrics.json").exists():
        raise UserError(f"--pinn {pinn_run}: no metrics.json there; give a finished "
                        "`pinn solve` run folder")
    return pinn_run


def _matched_predictions(study, verdict: dict) -> dict:
    """The FEM levels the verdict picks (at equal accuracy, at equal time), each once, as
    {row label: prediction}."""
    keep: dict = {}
    for key, what in (("equal_accuracy", "equal accuracy"), ("equal_time", "equal time")):
        lv = verdict[key]
        key = None if lv is None else (lv["element"], lv["cells"], lv["coarser"])
        if key is not None and key not in keep:
            keep[key] = (f"FEM at {what}", study.values[key])
    return dict(keep.values())


@app.command(epilog=_examples(
    "pinn compare problems/heat2d.yaml",
    "pinn compare problems/poisson2d.yaml --pinn runs/poisson2d",
    "pinn compare problems/burgers1d.yaml --elements P2,P3 --max-level-seconds 60"))
def compare(
    file: FileArg,
    pinn_run: Annotated[Path | None, typer.Option("--pinn", help="A finished `pinn solve` "
                                                  "run (default: train one now).")] = None,
    fem_run: Annotated[Path | None, typer.Option("--fem", help="A finished `pinn fem` run, "
                                                 "shown as one more row.")] = None,
    elements: Annotated[str, typer.Option(help="The FEM elements of the refinement study, "
                                          "comma-separated.")] = "P1,P2,P3",
    max_level_seconds: Annotated[float | None, typer.Option(
        help="Stop refining an element when its next solve would take longer (s; default: "
             "the larger of 120 s and 1.5x the PINN's time).")] = None,
    out: Annotated[Path | None, _out_opt("runs/<name>-compare")] = None,
    set_: SetOpt = None,
    quiet: QuietOpt = False,
):
    """PINN against FEM at equal accuracy and at equal time.

    Trains the PINN (or reads --pinn), then refines the FEM baseline (P1-P3 on finer and
    finer meshes; evolution problems: the time step follows the cell size) and reports the
    cheapest FEM at least as accurate as the PINN and the most accurate FEM within the
    PINN's training time, with a Pareto plot of error against wall time (pareto.png)."""
    from pinn import io

    sets_in = _overrides(set_)
    built = _load(file, sets_in)
    chosen = _compare_elements(built, elements, max_level_seconds)
    if fem_run is not None:  # read before any work: a damaged run folder is refused now
        from pinn.compare import check_run

        _user(check_run, fem_run, built.problem)
    _fresh(out, "pinn compare")
    out_dir = _user(io.run_folder, out, built.name, False, "-compare")
    io.make_folder(out_dir)
    pinn_run = _compare_pinn_run(file, built, pinn_run, out_dir, set_, sets_in, quiet)
    from pinn.fem.study import refine, worst
    from pinn.report.metrics import read_metrics

    m = read_metrics(pinn_run)
    err, secs = worst(m.get("rel_l2")), float(m.get("wall_seconds") or 0.0)
    _out(f"PINN: rel. L2 {err:.3e} in {secs:.3g} s; refining FEM ({', '.join(chosen)})", quiet)
    res = built.spec.evaluation.resolution

    def shown(lv):
        _out(f"  FEM {lv.label}: {lv.dofs} dofs, {lv.seconds:.3g} s, rel. L2 {lv.error:.3e}",
             quiet)

    cap = max(120.0, 1.5 * secs) if max_level_seconds is None else max_level_seconds
    study = refine(built.problem, elements=chosen, target_error=err, budget_seconds=secs,
                   max_level_seconds=cap, resolution=res, progress=shown)
    if not study.levels:
        raise UserError(f"{built.name}: no FEM level could be solved: "
                        + "; ".join(f"{k}: {v}" for k, v in study.stopped.items()))
    from pinn.compare import matched_verdict, write_matched_comparison

    verdict = matched_verdict(study, err, secs)
    preds = _matched_predictions(study, verdict)
    table = write_matched_comparison(out_dir, built.problem, pinn_run, study, preds,
                                     resolution=res,
                                     snapshots=min(built.spec.evaluation.snapshots, 3),
                                     runs={"FEM (given run)": fem_run} if fem_run else None)
    for line in verdict["sentences"]:
        _out(line, quiet)
    _out(table, quiet)
    _out(f"report: {out_dir / 'compare.md'} (Pareto plot: {out_dir / 'pareto.png'})", quiet)
    return EXIT_OK

