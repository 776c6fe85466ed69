"""The ``pinn`` command line: a thin shell over the Python API.

    pinn solve problems/heat2d.yaml          # train, evaluate, plot, report
    pinn validate problems/heat2d.yaml       # check the file (and its exact solution)
    pinn fem problems/heat2d.yaml            # classical FEM baseline, same problem
    pinn compare problems/heat2d.yaml        # PINN vs FEM, one table
    pinn export runs/heat2d --format all     # StableHLO / ONNX graphs that run without pinn
    pinn sweep problems/heat2d.yaml --vary training.seed=0..3

Exit codes: 0 success, 2 bad input (one line on stderr, no traceback), 1 an
internal error, 130 interrupted (the checkpoint is kept; ``--resume`` goes on).
Set ``PINN_DEBUG=1`` to see tracebacks; ``PINN_MALLOC=1`` tunes glibc's
allocator (see :func:`tune_malloc`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import TyperException

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """Bad input found by the CLI itself (a missing run folder, a bad points file)."""


app = typer.Typer(
    name="pinn",
    help="Physics-informed neural networks in JAX: one PDE description, PINN and FEM.\n\n"
         "\b\nExamples:\n"
         "  pinn solve problems/heat2d.yaml       # train, evaluate, plot, report\n"
         "  pinn validate problems/heat2d.yaml    # check a file and its exact solution\n"
         "  pinn fem problems/heat2d.yaml         # finite-element baseline\n"
         "  pinn compare problems/heat2d.yaml     # PINN vs FEM, one table",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

def _examples(*lines: str) -> str:
    """An epilog that click prints verbatim (``\\b`` stops re-wrapping)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", "-s", metavar="KEY=VALUE",
    help="Override a value of the file, e.g. training.stages.0.steps=500 (repeatable; "
         "values are YAML: 1e-3, true, [1, 2]).")]
FileArg = Annotated[Path, typer.Argument(help="Problem file (YAML).", show_default=False)]
RunArg = Annotated[Path, typer.Argument(help="A run folder written by `pinn solve`.",
                                        show_default=False)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary: "
                                        "errors only (on stderr).")]
LogFormatOpt = Annotated[str, typer.Option(
    "--log-format", metavar="auto|bar|plain|json",
    help="How training progress is shown on stderr: auto (a bar on a terminal, timestamped "
         "lines when piped), bar, plain (a timestamped line every few seconds) or json (one "
         "JSON object a line).")]
LogOpt = Annotated[list[str] | None, typer.Option(
    "--log", metavar="tensorboard",
    help="Also log the training scalars: tensorboard (event files in RUN/tensorboard; needs "
         "pip install 'pinn[tensorboard]'). Repeatable.")]
_LOG_FORMATS = ("auto", "bar", "plain", "json")
_LOGGERS = ("tensorboard",)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def _version(value: bool) -> None:
    if value:
        from pinn import __version__

        sys.stdout.write(f"pinn {__version__}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
):
    """Physics-informed neural networks in JAX: one PDE description, PINN and FEM."""


def _check_logs(log_format: str, logs) -> None:
    if log_format not in _LOG_FORMATS:
        raise UserError(f"--log-format {log_format!r}: use one of {', '.join(_LOG_FORMATS)}")
    bad = [name for name in logs or () if name not in _LOGGERS]
    if bad:
        raise UserError(f"--log {bad[0]!r}: use one of {', '.join(_LOGGERS)}")
    if "tensorboard" in (logs or ()):
        import importlib.util

        if importlib.util.find_spec("tensorboardX") is None:
            raise UserError("--log tensorboard needs tensorboardX: pip install "
                            "'pinn[tensorboard]' (or pip install tensorboardX)")


def _progress_observers(quiet: bool, log_format: str, logs, run_dir: Path) -> list:
    """The progress observer ``--log-format`` asks for and the loggers of ``--log``."""
    _check_logs(log_format, logs)
    from pinn.train import Progress

    chosen = [] if quiet else [Progress(format=log_format)]
    if "tensorboard" in (logs or ()):
        from pinn.train import TensorBoard

        try:
            chosen.append(TensorBoard(run_dir / "tensorboard"))
        except ImportError as exc:
            raise UserError(f"--log tensorboard: {exc}") from None
    return chosen


def _out_opt(default: str) -> typer.Option:
    return typer.Option("--out", "-o", help=f"Output folder (default: {default}).")


def _err(msg: str) -> None:
    """One line on stderr."""
    line = " ".join(str(msg).split("\n")[0].split())
    sys.stderr.write(f"pinn: {line}\n")
    sys.stderr.flush()


def _out(msg: str = "", quiet: bool = False) -> None:
    if not quiet:
        sys.stdout.write(msg + "\n")
        sys.stdout.flush()


def tune_malloc() -> bool:
    """``PINN_MALLOC=1``: keep large buffers in glibc's heap (``mallopt``: no mmap, no
    trimming). Off by default: no measurable gain for ``pinn`` (benchmarks/SPEED.md)."""
    if os.environ.get("PINN_MALLOC", "0").strip().lower() not in ("1", "on", "true", "yes"):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_max = -1, -4
        return bool(libc.mallopt(m_mmap_max, 0) == 1 and
                    libc.mallopt(m_trim_threshold, 2**30) == 1)
    except (OSError, AttributeError):
        return False


def _overrides(sets, seed=None, precision=None, devices=None) -> list[str]:
    out = list(sets or [])
    if seed is not None:
        out.append(f"training.seed={seed}")
    if precision is not None:
        out.append(f"training.precision={precision}")
    if devices is not None:
        out.append(f"training.devices={devices}")
    return out


def _load(file: Path, sets):
    from pinn import config

    if not file.exists():
        raise UserError(f"{file}: no such file")
    return config.load(str(file), sets)


def _user(fn, *args, **kwargs):
    """Call a library function whose ValueError is the user's (a path, a folder)."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _prepare(built, out: Path | None, resume: bool, suffix: str = "") -> Path:
    """The run folder, with its ``config.yaml`` written."""
    from pinn import io

    run_dir = _user(io.run_folder, out, built.name, resume, suffix)
    _user(io.write_config, run_dir, built.resolved(), resume=resume,
          header=f"# resolved configuration of {built.name} (every default filled in); "
                 "`pinn solve` accepts this file as is\n")
    return run_dir


def _errors_line(m: dict) -> str:
    errs = ", ".join(f"{k} {v:.3e}" for k, v in (m.get("rel_l2") or {}).items())
    return f"; relative L2: {errs}" if errs else ""


# ---------------------------------------------------------------------------
# solve


@app.command(epilog=_examples(
    "pinn solve problems/heat2d.yaml",
    "pinn solve problems/burgers1d.yaml --set training.stages.0.steps=500 --seed 1",
    "pinn solve problems/heat2d.yaml --precision 64 --out runs/heat64",
    "pinn solve problems/heat2d.yaml --out runs/heat64 --resume      # after Ctrl-C"))
def solve(
    file: FileArg,
    out: Annotated[Path | None, _out_opt("runs/<name>, or runs/<name>-2, ...")] = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (training.seed).")] = None,
    precision: Annotated[int | None, typer.Option(help="32 or 64 (training.precision).")
                         ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint "
                                         "in the run folder.")] = False,
    devices: Annotated[str | None, typer.Option(
        help="Data parallel over devices: 'all' or a count, the points sharded "
             "(training.devices).")] = None,
    quiet: QuietOpt = False,
    log_format: LogFormatOpt = "auto",
    log: LogOpt = None,
):
    """Train a PINN on a problem file and write a run folder (config, metrics, plots, report)."""
    from pinn.train.progress import resolve_format

    _check_logs(log_format, log)
    if not quiet and resolve_format(log_format) in ("plain", "json"):
        _out(f"{file}: reading the problem")  # piped: say at once that something happens
    built = _load(file, _overrides(set_, seed, precision, devices))
    model, training = built.model(), built.training()
    run_dir = _prepare(built, out, resume)
    _out(f"{built.name}: training in float{built.precision}, {training.steps} steps -> "
         f"{run_dir}", quiet)
    import pinn

    ev = built.spec.evaluation
    observers = _progress_observers(quiet, log_format, log, run_dir)
    run = pinn.setup(built.problem, model, training, precision=built.precision,
                     out_dir=run_dir, resume=resume, progress=False, observers=observers,
                     resolution=ev.resolution, snapshots=ev.snapshots)
    try:
        sol = run.train()
    except KeyboardInterrupt as exc:
        ckpt_dir = run_dir / "checkpoints"
        if getattr(exc, "checkpoint", None) or (ckpt_dir.is_dir() and any(ckpt_dir.iterdir())):
            where = f" at step {exc.step}" if getattr(exc, "step", None) is not None else ""
            _err(f"interrupted{where}, checkpoint kept; continue with: pinn solve {file} "
                 f"--out {run_dir} --resume")
        else:
            _err("interrupted before the first checkpoint; nothing to resume")
        return EXIT_INTERRUPTED
    m = sol.metrics
    learned = ", ".join(f"{k}={v:.6g}" for k, v in m.get("params", {}).items())
    _out(f"done in {m['wall_seconds']:.1f} s" + _errors_line(m)
         + (f"; learned {learned}" if learned else ""), quiet)
    _out(f"report: {run_dir / 'report.md'}", quiet)
    return EXIT_OK


@app.command(epilog=_examples("pinn validate problems/heat2d.yaml",
                             "pinn validate problems/wave1d.yaml --json",
                             "pinn validate my.yaml --set params.alpha=0.1"))
def validate(
    file: FileArg,
    json_: JsonOpt = False,
    set_: SetOpt = None,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Run the manufactured-"
                                        "solution check when the file has an exact "
                                        "solution.")] = True,
):
    """Check a problem file; with an exact solution, run the manufactured-solution check.

    The check evaluates every equation and condition on the exact solution in
    float64 and reports the largest residual of each; a wrong sign or a typo
    shows up as a residual of the size of the terms.  Exit code 2 when the file
    is invalid or a residual is too large.
    """
    from pinn import config

    try:
        built = _load(file, _overrides(set_))
    except config.ConfigError as exc:
        if json_:
            sys.stdout.write(json.dumps(exc.as_dict()) + "\n")
            _err(str(exc))
            return EXIT_INPUT
        raise
    from pinn.io import clean_json
    from pinn.report import summary as S

    result = S.validation(built, file, check)
    failed = [c for c in result["checks"] if not c.ok]
    _out(json.dumps(clean_json({k: v for k, v in result.items() if k != "checks"}))
         if json_ else "\n".join(S.validation_lines(file, result, check, built.problem)))
    if failed:
        names = ", ".join(c.name for c in failed)
        _err(f"{file}: the exact solution does not satisfy {names} (largest residual "
             f"{max(c.max_residual for c in failed):.3e}); check signs and coefficients")
        return EXIT_INPUT
    return EXIT_OK


# ---------------------------------------------------------------------------
# plot, predict


def _load_run(run_dir: Path):
    from pinn.solution import Solution

    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    if not any((run_dir / f).exists() for f in ("solution.json", "solution.pkl")):
        raise UserError(f"{run_dir}: no solution.json (the run did not finish; resume it with "
                        "`pinn solve FILE --out DIR --resume`)")
    try:
        return Solution.load(run_dir)
    except (ValueError, FileNotFoundError) as exc:
        raise UserError(str(exc)) from None


def _run_config(run_dir: Path) -> dict:
    import yaml

    p = run_dir / "config.yaml"
    return (yaml.safe_load(p.read_text(encoding="utf-8")) or {}) if p.exists() else {}


@app.command(epilog=_examples("pinn plot runs/heat2d"))
def plot(
    run_dir: RunArg,
    resolution: Annotated[int | None, typer.Option(help="Grid points per axis (default: "
                                                   "the run's evaluation.resolution).")] = None,
):
    """Redraw the plots, metrics and report of a finished run."""
    sol = _load_run(run_dir)
    ev = _run_config(run_dir).get("evaluation") or {}
    if resolution is not None:
        sol.rescore(resolution)
    sol.save(run_dir, snapshots=ev.get("snapshots", 4))
    m = json.loads((run_dir / "metrics.json").read_text())
    _out(f"wrote {len(m.get('plots', []))} plot(s) and {run_dir / 'report.md'}")
    return EXIT_OK


@app.command(epilog=_examples("pinn predict runs/heat2d --points pts.csv    # CSV on stdout",
                             "pinn predict runs/heat2d --points pts.npz --out values.npz",
                             "pinn predict runs/heat2d/export/heat2d.onnx --points pts.csv"))
def predict(
    run_dir: Annotated[Path, typer.Argument(
        help="A run folder written by `pinn solve`, or a file written by `pinn export` "
             "(.stablehlo, .onnx; its sidecar next to it).", show_default=False)],
    points: Annotated[Path, typer.Option("--points", "-p", help="CSV (header naming the "
                                         "coordinates) or NPZ ('points' [N, d]).",
                                         show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output .csv or .npz "
                                             "(default: CSV on stdout).")] = None,
    outputs: Annotated[str | None, typer.Option(
        "--outputs", help="Comma-separated fields or expressions to evaluate, e.g. "
                          "u,u_x,\"u_t - alpha*laplacian(u)\" (default: the fields; run "
                          "folders only).")] = None,
):
    """Evaluate a trained solution (or an exported one) at given points.

    Values print with the digits the run's precision holds: 9 significant digits for a
    float32 run, 17 for a float64 run.
    """
    from pinn import io

    if run_dir.is_file():  # an exported graph: the columns its sidecar names
        from pinn import export as X

        graph = _user(X.load, run_dir)
        pts = _user(io.read_points, points, graph.inputs)
        text = io.write_values(out, pts, graph.inputs, graph.evaluate(pts))
        if text is not None:
            sys.stdout.write(text)
        if out is not None:
            _out(f"wrote {len(pts)} rows to {out}")
        return EXIT_OK
    sol = _load_run(run_dir)
    pts = _user(io.read_points, points, [c.name for c in sol.problem.coords])
    from pinn.dsl.parser import split_expressions

    exprs = None if outputs is None else _user(split_expressions, outputs)
    values = _user(sol.evaluate, pts, None if exprs is None else {e: e for e in exprs})
    text = io.write_values(out, pts, [c.name for c in sol.problem.coords], values,
                           digits=17 if sol.precision == 64 else 9)
    if text is not None:
        sys.stdout.write(text)
    if out is not None:
        _out(f"wrote {len(pts)} rows to {out}")
    return EXIT_OK


# ---------------------------------------------------------------------------
# export


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
        "--params", help="Parametric inputs to expose as extra columns of points (ranged "
                         "parameters; none of the problems has one yet).")] = None,
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
    from pinn import export as X

    sol = _load_run(run_dir)
    if params:
        names = [p.strip() for p in params.split(",") if p.strip()]
        raise UserError(f"--params {', '.join(names)}: {sol.problem.name} has no parametric "
                        "(ranged) parameter; its parameters are constants of the graph "
                        "(parametric inputs are not supported yet)")
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


# ---------------------------------------------------------------------------
# sweep


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


# ---------------------------------------------------------------------------
# info


@app.command(epilog=_examples("pinn info",
                             "pinn info problems/heat2d.yaml     # + memory per point",
                             "pinn info problems/ns_cavity.yaml --set training.points."
                             "interior=65536 --json"))
def info(
    file: Annotated[Path | None, typer.Argument(
        help="A problem file: also measure the memory per collocation point of one "
             "gradient step (and how many points fit on the device).", show_default=False)
                    ] = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
):
    """Versions, devices and the precision in use (and a problem's memory per point)."""
    from pinn.report import summary as S

    d = S.environment()
    lines = S.environment_lines(d)
    if file is not None:
        sets = list(set_ or [])
        import pinn

        built = _load(file, sets)
        d["memory"] = mem = pinn.setup(built.problem, built.model(), built.training(),
                                       precision=built.precision,
                                       progress=False).memory_per_point()
        fits = mem["points_that_fit"]
        lines.append(f"memory per point ({built.name}, one gradient step, "
                     f"{mem['points']} points): {mem['bytes_per_point'] / 1024:.1f} KiB"
                     + (f"; about {fits:,} points fit on {mem['device']} (training."
                        "micro_batch streams more)" if fits else
                        f"; {mem['device']} does not report its memory"))
    _out(json.dumps(d) if json_ else "\n".join(lines))
    return EXIT_OK


# ---------------------------------------------------------------------------
# fem, compare


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
    run_dir = _prepare(built, out, False, "-fem")
    from pinn import fem as F
    from pinn.run import fem_run

    opts, ev = built.spec.fem, built.spec.evaluation
    try:
        _, m = fem_run(built.problem, cells=opts.cells, element=opts.element, dt=opts.dt,
                       theta=opts.theta, out_dir=run_dir, resolution=ev.resolution,
                       snapshots=ev.snapshots, metrics={"problem": built.name})
    except F.UnsupportedProblem as exc:
        raise UserError(f"{built.name}: the FEM baseline cannot solve this problem: {exc}"
                        ) from None
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


def _subcommand(args: list[str]) -> None:
    """Run ``pinn ARGS`` in a child process; its errors become ours."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "pinn.cli", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        msg = lines[-1].removeprefix("pinn: ") if lines else f"exit code {proc.returncode}"
        if proc.returncode == EXIT_INPUT:
            raise UserError(f"pinn {args[0]}: {msg}")
        raise RuntimeError(f"pinn {args[0]} failed: {msg}")


# ---------------------------------------------------------------------------
# entry point


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code (the console script exits with it)."""
    tune_malloc()
    debug = os.environ.get("PINN_DEBUG", "") not in ("", "0")
    try:
        rv = app(args=argv, prog_name="pinn", standalone_mode=False)
        return rv if isinstance(rv, int) else EXIT_OK
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except TyperException as exc:  # click's usage errors (typer vendors click)
        if debug:
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stdout.write(exc.format_message() + "\n")
            return EXIT_INPUT
        code = getattr(exc, "exit_code", EXIT_INPUT)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if getattr(ctx, "command_path", None) else ""
        _err(exc.format_message() + hint)
        return EXIT_INPUT if code == 2 else code
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except UserError as exc:
        _err(str(exc))
        return EXIT_INPUT
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 1
        from pinn.config import ConfigError

        if isinstance(exc, ConfigError):
            _err(str(exc))
            return EXIT_INPUT
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set PINN_DEBUG=1 for the "
             "traceback; please report it)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
