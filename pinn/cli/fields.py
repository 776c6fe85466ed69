"""``pinn export-fields``: a run's fields for ParaView (VTU, XDMF), xarray (NetCDF) or CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pinn.cli import (
    EXIT_OK,
    QuietOpt,
    UserError,
    _examples,
    _load_run,
    _os_error_line,
    _out,
    _user,
    app,
)

FieldsRunArg = Annotated[Path, typer.Argument(
    metavar="RUN", help="A run folder written by `pinn solve` (a PINN) or `pinn fem`.",
    show_default=False)]


def _fem_run(run_dir: Path, resolution: int | None):
    """``(FEMSolution, problem or None, name)`` of a ``pinn fem`` run folder."""
    from pinn import config
    from pinn.fem import FEMSolution

    problem, name = None, run_dir.name
    cfg = run_dir / "config.yaml"
    if cfg.is_file():
        try:
            built = config.load(str(cfg))
        except config.ConfigError as exc:
            raise UserError(f"{cfg}: {str(exc).splitlines()[0]}") from None
        problem, name = built.problem, built.name
    elif resolution is not None:
        raise UserError(f"{run_dir}: no config.yaml, so no problem to take an evaluation grid "
                        "from; export the FEM mesh (drop --resolution)")
    try:  # (a damaged file: pinn.io.BadFile, one line naming it)
        sol = FEMSolution.load(run_dir, problem)
    except FileNotFoundError as exc:
        raise UserError(f"{exc.filename}: no such file; solve again with `pinn fem FILE "
                        "--out DIR`") from None
    return sol, problem, name


@app.command("export-fields", epilog=_examples(
    "pinn export-fields runs/heat2d              # runs/heat2d/fields/heat2d.pvd + heat2d_vtu/",
    "pinn export-fields runs/heat2d-fem -f xdmf  # FEM values at its mesh vertices",
    "pinn export-fields runs/poisson2d -f netcdf --resolution 201",
    "pinn export-fields runs/heat2d -f csv --out heat.csv"))
def export_fields(
    run_dir: FieldsRunArg,
    format_: Annotated[str, typer.Option(
        "--format", "-f", metavar="vtu|xdmf|csv|netcdf",
        help="vtu (ParaView; a time series: a .pvd collection of VTU files), xdmf (ParaView, "
             "one file), csv, netcdf (xarray). vtu, xdmf and netcdf need pip install "
             "'pinn[fields]'.")] = "vtu",
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="The file (its suffix: .vtu/.pvd, .xdmf, .csv, .nc) or a folder "
                            "(default: RUN/fields).")] = None,
    resolution: Annotated[int | None, typer.Option(
        help="Nodes per axis of the evaluation grid (default: the run's; a FEM run: its mesh "
             "vertices unless given).")] = None,
    quiet: QuietOpt = False,
):
    """Export a run's fields: the solution, and the exact solution (or reference) and the
    error where the problem has one; a PINN on its evaluation grid, a FEM run at its mesh
    vertices, at every time of an evolution problem."""
    from pinn.report import fields as F

    if format_ not in F.FORMATS:
        raise UserError(f"--format {format_}: choose one of {', '.join(F.FORMATS)}")
    if resolution is not None and resolution < 2:
        raise UserError(f"--resolution {resolution}: give at least 2 nodes per axis")
    try:
        F.require(format_)
    except ModuleNotFoundError as exc:
        raise UserError(str(exc)) from None
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    if (run_dir / "solution.json").exists() or (run_dir / "solution.pkl").exists():
        sol = _load_run(run_dir)
        problem, name, fem = sol.problem, sol.problem.name, None
        series = problem.time is not None
    elif (run_dir / "fem.npz").exists() and (run_dir / "fem.json").exists():
        fem, problem, name = _fem_run(run_dir, resolution)
        series = fem.is_evolution
        name = f"{name}-fem"
    else:
        raise UserError(f"{run_dir}: not a run folder (no solution.json of `pinn solve` nor "
                        "fem.npz of `pinn fem`)")
    path = _user(F.target, out, format_, default_dir=run_dir / "fields", stem=name,
                 series=series)
    # what to do instead says --out as the command takes it: another one where it was given
    _user(F.check_writable, path, "choose another --out" if out is not None else
          "give --out FILE (or a folder) to write the fields elsewhere")
    if fem is None:
        fields = F.from_score(sol.score(resolution), problem=problem.name, method="PINN")
    elif resolution is None:
        fields = F.from_fem(fem, problem, name=name.removesuffix("-fem"))
    else:
        from pinn import evaluate as ev

        fields = F.from_score(ev.score(problem, fem.evaluate, resolution=resolution),
                              problem=problem.name, method="FEM")
    try:
        written = F.write(fields, path, format_)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:  # a full disk, no permission: the file and what was kept
        raise UserError(_os_error_line(exc, has_out=True)) from None
    _out(f"{written[0]}: {F.describe(fields)}", quiet)
    return EXIT_OK
