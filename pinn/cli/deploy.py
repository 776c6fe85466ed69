"""``pinn export`` and ``pinn sweep``: static graphs of a solution, and fleets of runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pinn.cli import (
    EXIT_OK,
    FileArg,
    QuietOpt,
    RunArg,
    SetOpt,
    UserError,
    _err,
    _examples,
    _load,
    _load_run,
    _lock_run,
    _out,
    _out_opt,
    _user,
    app,
)


@app.command("export", epilog=_examples(
    "pinn export runs/heat2d                          # runs/heat2d/export/heat2d.stablehlo",
    "pinn export runs/heat2d --format onnx --outputs u,u_x,\"u_t - alpha*laplacian(u)\"",
    "pinn export runs/heat2d --format all --dtype float32,float16,bfloat16,int8",
    "pinn export runs/ns_cavity --outputs u,v,p,\"u_x + v_y\" --out cavity.stablehlo"))
def export_(
    run_dir: RunArg,
    format_: Annotated[str, typer.Option("--format", "-f", help="stablehlo (needs only jax "
                                         "to run), onnx (only onnxruntime + numpy; the extra "
                                         "pinn[onnx]) or all.")] = "stablehlo",
    outputs: Annotated[str | None, typer.Option(
        "--outputs", help="Comma-separated names or expressions of the fields, in order: "
                          "u,v,u_x,\"u_t - alpha*laplacian(u)\" (default: the fields).")
                       ] = None,
    params: Annotated[str | None, typer.Option(
        "--params", help="The parametric inputs, as a check: a parametric run's ranged "
                         "parameters are always inputs, columns after the coordinates "
                         "(e.g. --params alpha).")] = None,
    dtype: Annotated[str, typer.Option(
        "--dtype", help="Precision inside the graph, comma-separated: float32, float16, "
                        "bfloat16 (StableHLO only), int8 (ONNX only: weights quantised by "
                        "onnxruntime). Points and values stay float32.")] = "float32",
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Folder (default: RUN/export), or the file itself for one "
                            "artefact (.stablehlo, .onnx).")] = None,
    quiet: QuietOpt = False,
):
    """Export a trained solution as a static graph that runs without pinn.

    One calling convention: values[N, k] = f(points[N, d]), float32, any N; the columns are
    named in the JSON sidecar written next to each file, with the units, the precision and
    the error measured against the model on the run's evaluation grid.
    """
    import contextlib

    # into the run's own export/ folder: not while a solve writes the run
    with _lock_run(run_dir) if out is None else contextlib.nullcontext():
        return _export(run_dir, out, format_, outputs, dtype, params, quiet)


def _export(run_dir, out, format_, outputs, dtype, params, quiet) -> int:
    from pinn import export as X

    sol = _load_run(run_dir)
    if params:
        names = [p.strip() for p in params.split(",") if p.strip()]
        ranged = [p.name for p in sol.problem.ranged]
        if not ranged:
            raise UserError(f"--params {', '.join(names)}: {sol.problem.name} has no "
                            "parametric (ranged) parameter; its parameters are constants of "
                            "the graph (give a parameter a range to make it an input)")
        if names != ranged:
            raise UserError(f"--params {', '.join(names)}: the parametric inputs of "
                            f"{sol.problem.name} are {', '.join(ranged)} (in that order)")
    import warnings

    try:
        with warnings.catch_warnings(record=True) as notes:
            arts = X.export(sol, run_dir / "export" if out is None else out,
                            formats="all" if format_ == "all" else X.split_outputs(format_),
                            outputs=X.split_outputs(outputs),
                            dtypes=X.split_outputs(dtype), source=X.source_of(run_dir),
                            run=run_dir)
    except X.ExportError as exc:
        raise UserError(str(exc)) from None
    for note in notes:  # one line each, not Python's two
        _err(f"note: {note.message}")
    for a in arts:
        errs = ", ".join(f"{k} {v:.2e}" for k, v in a.check["rel_l2"].items())
        _out(f"{a.path} ({a.meta['bytes'] / 1024:.0f} KiB, {a.meta['dtype']}"
             + (", int8 weights" if a.meta.get("quantization") else "")
             + f"): relative L2 from the model on {a.check['points']} grid points: {errs}",
             quiet)
    return EXIT_OK


@app.command(epilog=_examples(
    "pinn sweep problems/heat2d.yaml --vary training.seed=0..4",
    "pinn sweep problems/heat2d.yaml --vary training.seed=0..4 --vary params.alpha=0.05,0.1",
    "pinn sweep problems/heat2d.yaml --vary training.seed=0..4 --out runs/seeds --resume",
    "pinn sweep problems/heat2d.yaml --vary training.seed=0..15 --backend ray "
    "--address ray://head:10001"))
def sweep(
    file: FileArg,
    vary: Annotated[list[str], typer.Option(
        "--vary", metavar="KEY=VALUES",
        help="A key and its values: training.seed=0..4 (integers, both ends included) or "
             "params.nu=0.01,0.02 (repeatable: the runs are the Cartesian product).")],
    out: Annotated[Path | None, _out_opt("runs/<name>-sweep")] = None,
    set_: SetOpt = None,
    backend: Annotated[str, typer.Option(help="local (worker processes) or ray (Ray tasks; "
                                         "pip install -e '.[ray]').")] = "local",
    address: Annotated[str | None, typer.Option(help="Ray cluster address, e.g. "
                                                "ray://head:10001 (default: a local Ray).")
                       ] = None,
    workers: Annotated[int | None, typer.Option(help="Local runs at a time (default: half "
                                                "the CPU cores).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds a run may take before it is "
                                                  "stopped and reported failed.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Keep the finished runs of the "
                                         "sweep folder; continue the others.")] = False,
    quiet: QuietOpt = False,
):
    """Run a problem over the Cartesian product of varied values, one run folder each, and
    write a summary (summary.csv, summary.md, sweep.png). Failed runs are reported."""
    from pinn import io
    from pinn import sweep as S

    if backend not in S.BACKENDS:
        raise UserError(f"--backend {backend}: choose one of {', '.join(S.BACKENDS)}")
    points = _user(S.expand, vary)
    # the file and the first point are checked here, so that a typo fails once, not per run
    built = _load(file, [*(set_ or []), *(f"{k}={v}" for k, v in points[0].items())])
    folder = _user(io.run_folder, out, built.name, resume, "-sweep")
    _out(f"{built.name}: {len(points)} runs ({backend}) -> {folder}", quiet)

    def done(rec):
        what = ", ".join(f"{k}={v}" for k, v in rec["point"].items())
        _out(f"  {rec['status']}: {what}" + (f" ({rec['error']})" if rec["error"] else ""),
             quiet)

    result = _user(S.sweep, file, vary, folder, sets=list(set_ or []), backend=backend,
                   workers=workers, address=address, resume=resume, timeout=timeout,
                   on_done=done)
    _out(result.table, quiet)
    _out(f"summary: {result.files['md']}", quiet)
    if result.failed:
        _err(f"{len(result.failed)} of {len(result.rows)} runs failed; see the error column "
             f"of {result.files['md']} (the same command with --out {folder} --resume "
             "retries them)")
    return EXIT_OK
