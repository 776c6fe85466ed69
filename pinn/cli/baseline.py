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


@app.command(epilog=_examples(
    "pinn compare problems/heat2d.yaml",
    "pinn compare problems/heat2d.yaml --pinn runs/heat2d --fem runs/heat2d-fem",
    "pinn compare problems/poisson2d.yaml --set training.stages.0.steps=500"))
def compare(
    file: FileArg,
    pinn_run: Annotated[Path | None, typer.Option("--pinn", help="A finished `pinn solve` "
                                                  "run (default: train one now).")] = None,
    fem_run: Annotated[Path | None, typer.Option("--fem", help="A finished `pinn fem` run "
                                                 "(default: solve now).")] = None,
    out: Annotated[Path | None, _out_opt("runs/<name>-compare")] = None,
    set_: SetOpt = None,
    quiet: QuietOpt = False,
):
    """PINN against FEM on one problem: a Markdown + PNG table and error maps side by side."""
    built = _load(file, _overrides(set_))
    _fresh(out, "pinn compare")
    from pinn import io

    out_dir = _user(io.run_folder, out, built.name, False, "-compare")
    out_dir.mkdir(parents=True, exist_ok=True)
    # each method runs in its own process, so that its wall time and peak memory are its own
    sets = [a for item in (set_ or []) for a in ("--set", item)]
    if pinn_run is None:
        pinn_run = out_dir / "pinn"
        _out(f"training the PINN -> {pinn_run}", quiet)
        _subcommand(["solve", str(file), "--out", str(pinn_run), "--quiet", *sets])
    if fem_run is None:
        fem_run = out_dir / "fem"
        _out(f"solving with FEM -> {fem_run}", quiet)
        _subcommand(["fem", str(file), "--out", str(fem_run), "--quiet", *sets])
    from pinn.report.compare import write_comparison

    table = write_comparison(out_dir, built.problem, {"PINN": pinn_run, "FEM": fem_run},
                             resolution=built.spec.evaluation.resolution,
                             snapshots=min(built.spec.evaluation.snapshots, 3))
    _out(table, quiet)
    _out(f"report: {out_dir / 'compare.md'}", quiet)
    return EXIT_OK
