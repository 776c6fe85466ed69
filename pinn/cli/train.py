"""``pinn solve``, ``validate``, ``plot``, ``predict``, ``info``: training a PINN and using it."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer

from pinn.cli import (
    _LOG_FORMATS,
    _LOGGERS,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    FileArg,
    JsonOpt,
    LogFormatOpt,
    LogOpt,
    QuietOpt,
    RunArg,
    SetOpt,
    UserError,
    _err,
    _errors_line,
    _examples,
    _load,
    _load_run,
    _lock_run,
    _out,
    _out_opt,
    _overrides,
    _piped,
    _prepare,
    _run_config,
    _user,
    _write_fix,
    app,
)


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
    if "mlflow" in (logs or ()):
        import importlib.util

        if importlib.util.find_spec("mlflow") is None:
            raise UserError("--log mlflow needs mlflow: pip install 'pinn[mlflow]' (or pip "
                            "install mlflow-skinny)")


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
    if "mlflow" in (logs or ()):
        import os

        from pinn.train import MLflow

        uri = os.environ.get("MLFLOW_TRACKING_URI") or (run_dir / "mlruns").resolve().as_uri()
        chosen.append(MLflow(uri, run_name=run_dir.name))
    return chosen


@app.command(epilog=_examples(
    "pinn solve problems/heat2d.yaml",
    "pinn solve problems/burgers1d.yaml --set training.stages.0.steps=500 --seed 1",
    "pinn solve problems/heat2d.yaml --precision 64 --out runs/heat64",
    "pinn solve --resume --out runs/heat64      # after Ctrl-C: the folder knows the rest"))
def solve(
    file: Annotated[Path | None, typer.Argument(
        help="Problem file (YAML); with --resume, or a run folder (it knows its file and "
             "overrides).", show_default=False)] = None,
    out: Annotated[Path | None, _out_opt("runs/<name>, or runs/<name>-2, ...")] = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (training.seed).")] = None,
    precision: Annotated[int | None, typer.Option(help="32 or 64 (training.precision).")
                         ] = None,
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds of wall time for the run, compilation included: the stages share it, "
             "and the last goes on while its loss still falls (training.time_limit).",
        show_default=False)] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest intact "
                                         "checkpoint in the run folder (FILE may be left "
                                         "out: the folder knows it).")] = False,
    devices: Annotated[str | None, typer.Option(
        help="Data parallel over devices: 'all' or a count, the points sharded "
             "(training.devices).")] = None,
    coordinator: Annotated[str | None, typer.Option(
        help="Many hosts: HOST:PORT of process 0, the same on every process (with "
             "--num-processes and --process-id).", rich_help_panel="Many hosts")] = None,
    num_processes: Annotated[int | None, typer.Option(
        help="Many hosts: how many processes train this run.",
        rich_help_panel="Many hosts")] = None,
    process_id: Annotated[int | None, typer.Option(
        help="Many hosts: this process, 0 .. N-1 (process 0 writes the run folder).",
        rich_help_panel="Many hosts")] = None,
    distributed: Annotated[str | None, typer.Option(
        help="Many hosts: 'auto' joins the processes the cluster environment describes "
             "(SLURM srun, mpirun; also PINN_DISTRIBUTED=1), 'off' never joins.",
        rich_help_panel="Many hosts")] = None,
    quiet: QuietOpt = False,
    log_format: LogFormatOpt = "auto",
    log: LogOpt = None,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Refuse to train when the "
                                        "file's exact solution fails the manufactured-"
                                        "solution check (as `pinn validate` does).")] = True,
):
    """Train a PINN on a problem file and write a run folder (config, metrics, plots, report)."""
    joined = _join(coordinator, num_processes, process_id, distributed)  # before any JAX use
    if not _is_main(joined):  # many hosts: process 0 speaks and logs, the others train
        quiet, log = True, None
    _check_logs(log_format, log)
    if precision is not None and precision not in (32, 64):
        raise UserError(f"--precision {precision}: give 32 or 64 (float32 or float64 training; "
                        "without the option the file's training.precision, auto by default)")
    if not quiet and _piped(log_format):
        _out(f"{file or out}: reading the problem")  # piped: say at once that something happens
    sets = _overrides(set_, seed, precision, devices, time_limit)
    built, file, out = _problem(file, out, resume, sets)
    if check and built.problem.exact:  # an exact solution that is wrong would score nonsense
        from pinn.report.manufactured import check as mms

        failed = [c for c in mms(built.checked_problem()) if not c.ok]
        if failed:
            raise UserError(_check_failure(file, failed) + " (or train anyway: --no-check)")
    model, training = built.model(), built.training()
    run_dir, lock = _shared_folder(joined, lambda: _prepare(built, out, resume, file=file,
                                                            sets=sets))
    with lock:
        return _train(built, model, training, run_dir, resume, quiet, log_format, log)


def _join(coordinator, num_processes, process_id, distributed) -> bool:
    """Many hosts: join this run's processes (:mod:`pinn.distributed`); whether it did."""
    from pinn import distributed as dist

    flags = {"--coordinator": coordinator, "--num-processes": num_processes,
             "--process-id": process_id}
    given = [k for k, v in flags.items() if v is not None]
    if distributed not in (None, "auto", "off"):
        raise UserError(f"--distributed {distributed!r}: use auto (join the processes of the "
                        "cluster environment) or off")
    if given and len(given) < len(flags):
        missing = ", ".join(k for k in flags if k not in given)
        raise UserError(f"{', '.join(given)} without {missing}: a many-host run needs all "
                        "three (--coordinator HOST:PORT --num-processes N --process-id I)")
    if distributed == "off":
        if given:
            raise UserError(f"--distributed off with {', '.join(given)}: drop one of them")
        return False
    try:
        auto = distributed == "auto" or dist.wanted()
        return dist.initialize(coordinator, num_processes, process_id, auto=auto)
    except ValueError as exc:
        raise UserError(f"many hosts: {exc}") from None
    except RuntimeError as exc:
        where = f" at {coordinator}" if coordinator else ""
        raise UserError(f"cannot join the processes{where}: {str(exc).splitlines()[0]}; start "
                        "every process with the same --coordinator and --num-processes and "
                        "a distinct --process-id, and check that process 0's port is "
                        "reachable") from None


def _is_main(joined: bool) -> bool:
    from pinn.distributed import is_main

    return not joined or is_main()


def _shared_folder(joined: bool, prepare):
    """``(run_dir, lock)`` from ``prepare()``; over many processes, process 0 prepares (and
    locks) the folder and the others learn its path and check they see it (the run folder
    must lie on a file system every host shares)."""
    if not joined:
        return prepare()
    from pinn.distributed import agree, broadcast_text, is_main

    run_dir, lock, failure = None, contextlib.nullcontext(), None
    if is_main():
        try:
            run_dir, lock = prepare()
        except Exception as exc:  # noqa: BLE001 - told to the others, then raised here
            failure = exc
    text = broadcast_text(f"error:{failure}" if failure else f"ok:{run_dir}")
    if failure is not None:
        raise failure
    kind, _, value = text.partition(":")
    if kind != "ok":
        raise UserError(f"process 0: {value}")
    run_dir = Path(value)
    if not agree(_visible(run_dir)):
        with lock:
            raise UserError(f"{run_dir}: process 0 wrote the run folder there but not every "
                            "process sees it; a many-host run needs the folder on a file "
                            "system all hosts share (give --out on one)")
    return run_dir, lock


def _visible(folder: Path, wait: float = 5.0) -> bool:
    import time

    end = time.monotonic() + wait
    while not folder.is_dir():
        if time.monotonic() > end:
            return False
        time.sleep(0.2)
    return True


def _problem(file: Path | None, out: Path | None, resume: bool, sets: list[str]):
    """``(built, file, out)``: the problem file and overrides, or with ``--resume`` and a
    run folder (``FILE`` itself, or ``--out`` with no ``FILE``) the folder's own
    ``config.yaml`` (every override it was run with) read as its problem file."""
    if file is not None and not (resume and file.is_dir()):
        return _load(file, sets), file, out
    if not resume:
        raise UserError("give a problem file: pinn solve FILE (or continue a run: pinn solve "
                        "--resume --out RUN)")
    if file is not None and out is not None and file.resolve() != out.resolve():
        raise UserError(f"{file} is a run folder and --out {out} another one; give one of them "
                        f"(pinn solve --resume --out {file})")
    run_dir = file if file is not None else out
    if run_dir is None:
        raise UserError("--resume needs the run folder: pinn solve --resume --out RUN (or "
                        "pinn solve FILE --resume for the newest run of FILE)")
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no run folder to resume")
    from pinn import config, io

    _user(io.check_not_in_use, run_dir)
    command = _user(io.read_command, run_dir)
    try:
        text = io.read_text_file(run_dir / "config.yaml", "run's configuration")
    except (OSError, ValueError) as exc:
        raise UserError(f"{run_dir / 'config.yaml'}: cannot read the run's configuration "
                        f"({exc}); start a new run") from None
    source = Path(command["file"])
    return config.load(str(source), sets, text=text), source, run_dir


@contextlib.contextmanager
def _warning_lines():
    """Warnings while training as one line each on stderr (``pinn: warning: ...``)."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *_a, **_k: _err(f"warning: {message}")
        yield


def _train(built, model, training, run_dir: Path, resume: bool, quiet: bool, log_format: str,
           log) -> int:
    windows = (f" in each of {training.windows} time windows" if training.windows > 1 else "")
    limit = ("" if training.time_limit is None else
             f" (at most {training.time_limit:g} s; the last stage goes on while it improves)")
    _out(f"{built.name}: training in float{built.precision}, {training.steps} steps{windows}"
         f"{limit} -> {run_dir}", quiet)
    ev = built.spec.evaluation
    observers = _progress_observers(quiet, log_format, log, run_dir)
    run = built.setup(model=model, training=training, out_dir=run_dir, resume=resume,
                      progress=False, observers=observers, resolution=ev.resolution,
                      snapshots=ev.snapshots)
    for line in run.plan.lines() if run.plan.choices else ():
        _out(f"plan: {line}", quiet)
    from pinn.io import WriteError

    try:
        with _warning_lines():
            sol = run.train()
    except WriteError as exc:  # a full disk, no permission: the checkpoints say what is kept
        raise UserError(_write_failed(exc, run_dir)) from None
    except KeyboardInterrupt as exc:
        ckpt_dir = run_dir / "checkpoints"
        windows_done = any((run_dir / "windows").glob("w*/params.npz"))  # time marching
        if getattr(exc, "checkpoint", None) or windows_done or (
                ckpt_dir.is_dir() and any(ckpt_dir.iterdir())):
            where = f" at step {exc.step}" if getattr(exc, "step", None) is not None else ""
            _err(f"interrupted{where}, checkpoint kept; continue with: pinn solve --resume "
                 f"--out {shlex.quote(str(run_dir))}")
        else:
            _err("interrupted before the first checkpoint; nothing to resume")
        return EXIT_INTERRUPTED
    m = sol.metrics
    learned = ", ".join(f"{k}={v:.6g}" for k, v in m.get("params", {}).items())
    _out(f"done in {m['wall_seconds']:.1f} s" + _errors_line(m)
         + (f"; learned {learned}" if learned else ""), quiet)
    if m.get("kept"):
        _out(kept_line(m["kept"]), quiet)
    if isinstance(m.get("remarched"), dict):
        _out(m["remarched"]["why"], quiet)
    _out(f"report: {run_dir / 'report.md'}", quiet)
    return EXIT_OK


def kept_line(kept: dict) -> str:
    """What a selection kept (``metrics["kept"]``, :class:`pinn.train.KeepBest`)."""
    return (f"kept step {kept['step']}'s parameters: the held-out observations' misfit was "
            f"lowest there ({kept['value']:.3g}; {kept['last_value']:.3g} at the last step, "
            f"{kept['last_step']})")


def _write_failed(exc, run_dir: Path) -> str:
    """The line for a file that could not be written while training (``exc``: its
    :class:`pinn.io.WriteError`): the file, what was kept of it, the last good checkpoint
    and how to go on from it."""
    from pinn.train.checkpoint import latest_checkpoint

    folders = [run_dir / "checkpoints", *sorted((run_dir / "windows").glob("w*/checkpoints"))]
    found = [c for d in folders if (c := latest_checkpoint(d)) is not None]
    last = max(found, key=lambda c: c.stat().st_mtime, default=None)
    kept = ("no checkpoint was written yet (the run starts again)" if last is None else
            f"the last good checkpoint, {last.relative_to(run_dir)}, is kept")
    return (f"{exc}; {kept}: {_write_fix(exc.errno, has_out=False)}, then continue with: "
            f"pinn solve --resume --out {shlex.quote(str(run_dir))}")


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
        for line in exc.lines():  # every problem of the file, one line each
            _err(line)
        return EXIT_INPUT
    from pinn.io import clean_json
    from pinn.report import summary as S

    result = S.validation(built, file, check)
    failed = [c for c in result["checks"] if not c.ok]
    _out(json.dumps(clean_json({k: v for k, v in result.items() if k != "checks"}))
         if json_ else "\n".join(S.validation_lines(file, result, check, built.problem)))
    if failed:
        _err(_check_failure(file, failed))
        return EXIT_INPUT
    return EXIT_OK


def _check_failure(file, failed) -> str:
    """The line saying which terms the exact solution fails (``pinn validate``/``solve``)."""
    names = ", ".join(c.name for c in failed)
    fitted = {k: v for c in failed for k, v in c.params.items()}  # learnable, fitted
    anyway = (f" for any value of {', '.join(fitted)} (best fit "
              f"{', '.join(f'{k} = {v:.6g}' for k, v in fitted.items())})" if fitted else "")
    return (f"{file}: the exact solution does not satisfy {names}{anyway} (largest residual "
            f"{max(c.max_residual for c in failed):.3e}); check the signs and coefficients of "
            "the equations and of exact:")


@app.command(epilog=_examples("pinn plot runs/heat2d"))
def plot(
    run_dir: RunArg,
    resolution: Annotated[int | None, typer.Option(help="Grid points per axis (default: "
                                                   "the run's evaluation.resolution).")] = None,
):
    """Redraw the plots, metrics and report of a finished run."""
    with _lock_run(run_dir):  # not while a solve writes the run
        sol = _load_run(run_dir)
        ev = _run_config(run_dir).get("evaluation") or {}
        if resolution is not None:
            _user(sol.rescore, resolution)
        sol.save(run_dir, snapshots=ev.get("snapshots", 4))
    from pinn import io

    m = _user(io.read_json_file, run_dir / "metrics.json", "run's metrics")
    _out(f"wrote {len(m.get('plots', []))} plot(s) and {run_dir / 'report.md'}")
    return EXIT_OK


@app.command(epilog=_examples("pinn predict runs/heat2d --points pts.csv    # CSV on stdout",
                             "pinn predict runs/heat2d --points pts.npz --out values.npz",
                             "pinn predict runs/heat2d/export/heat2d.onnx --points pts.csv",
                             "pinn predict runs/heat2d_parametric --points pts.csv --params "
                             "alphas.csv   # every query"))
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
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="A parametric solution's ranged parameter, NAME=VALUE (repeatable), "
                        "e.g. alpha=0.03; without it the points file may carry the "
                        "parameters' columns after the coordinates.", show_default=False)
                     ] = None,
    params_file: Annotated[Path | None, typer.Option(
        "--params", help="Many queries of a parametric solution in one call: a CSV (header "
                         "naming the ranged parameters, one row per query), .npz ('params' "
                         "[Q, p], or one array per parameter) or .npy ([Q, p], the "
                         "parameters in the problem's order). Every query is evaluated at "
                         "every point; CSV columns query,<parameters>,<coordinates>,"
                         "<outputs>, one row per query and point (NPZ: points [N, d], params "
                         "[Q, p], each output [Q, N]).", show_default=False)] = None,
):
    """Evaluate a trained solution (or an exported one) at given points.

    Values print with the digits the run's precision holds: 9 significant digits for a
    float32 run, 17 for a float64 run.
    """
    from pinn import io

    if param and params_file is not None:
        raise UserError(f"--param {param[0]} and --params {params_file}: give one of them (a "
                        "value held for every query is a column of the --params file)")
    if run_dir.is_file():  # an exported graph: the columns its sidecar names
        return _predict_graph(run_dir, points, out, param, params_file)
    sol = _load_run(run_dir)
    if params_file is not None:
        return _predict_queries(sol, points, params_file, out, outputs)
    values_of = _param_values(param, sol.problem)
    cols = [c.name for c in (sol.problem.coords if values_of is not None
                             else sol.problem.inputs)]
    pts = _user(io.read_points, points, cols)
    from pinn.dsl.parser import split_expressions

    exprs = None if outputs is None else _user(split_expressions, outputs)
    values = _user(sol.evaluate, pts, None if exprs is None else {e: e for e in exprs},
                   params=values_of)
    text = io.write_values(out, pts, cols, values, digits=17 if sol.precision == 64 else 9)
    if text is not None:
        sys.stdout.write(text)
    if out is not None:
        _out(f"wrote {len(pts)} rows to {out}")
    return EXIT_OK


def _predict_graph(path: Path, points: Path, out: Path | None, param: list[str] | None,
                   params_file: Path | None) -> int:
    """``pinn predict FILE``: an exported graph at the points (the parameters from
    ``--param`` or ``--params``, or the points file's columns)."""
    from pinn import export as X
    from pinn import io

    graph = _user(X.load, path)
    ranged = list(graph.meta.get("parametric_inputs") or [])
    if params_file is not None:
        return _predict_graph_queries(graph, ranged, points, params_file, out)
    if param:  # the coordinates from the file, the parameters from --param
        import numpy as np

        given = _artefact_params(param, ranged, graph.meta.get("normalisation", {})
                                 .get("box", {}))
        coords = [c for c in graph.inputs if c not in ranged]
        pts = _user(io.read_points, points, coords)
        pts = np.concatenate([pts, np.tile([given[k] for k in ranged], (len(pts), 1))],
                             axis=1)
    else:
        pts = _user(io.read_points, points, graph.inputs)
    text = io.write_values(out, pts, graph.inputs, graph.evaluate(pts))
    if text is not None:
        sys.stdout.write(text)
    if out is not None:
        _out(f"wrote {len(pts)} rows to {out}")
    return EXIT_OK


def _predict_queries(sol, points: Path, params_file: Path, out: Path | None,
                     outputs: str | None) -> int:
    """``pinn predict RUN --params FILE``: every query of ``FILE`` at every point, in one
    batched evaluation (:meth:`pinn.Solution.evaluate` with an array of parameters)."""
    from pinn import io
    from pinn.dsl.parser import split_expressions

    problem = sol.problem
    if not problem.ranged:
        raise UserError(f"--params {params_file}: this solution has no ranged parameters; "
                        "drop --params")
    names = [q.name for q in problem.ranged]
    rows = _user(io.read_params, params_file, names)
    _user(problem.param_rows, rows, where=str(params_file))  # the trained ranges
    coords = [c.name for c in problem.coords]
    pts = _user(io.read_points, points, coords)
    exprs = None if outputs is None else _user(split_expressions, outputs)
    n_out = len(problem.field_names) if exprs is None else len(exprs)
    _user(io.check_queries, params_file, len(rows), len(pts),
          1 + len(names) + len(coords) + n_out)
    values = _user(sol.evaluate, pts, None if exprs is None else {e: e for e in exprs},
                   params=rows)
    text = _user(io.write_query_values, out, pts, coords, rows, names, values,
                 digits=17 if sol.precision == 64 else 9)
    if text is not None:
        sys.stdout.write(text)
    if out is not None:
        _out(f"wrote {len(rows)} queries x {len(pts)} points to {out}")
    return EXIT_OK


def _predict_graph_queries(graph, ranged: list[str], points: Path, params_file: Path,
                           out: Path | None) -> int:
    """``pinn predict FILE.onnx --params P``: the exported graph at every query's inputs
    (the points with each row of parameters appended), one call."""
    import numpy as np

    from pinn import io

    if not ranged:
        raise UserError(f"--params {params_file}: this exported graph has no parametric "
                        "inputs; drop --params")
    rows = _user(io.read_params, params_file, ranged)
    box = graph.meta.get("normalisation", {}).get("box", {})
    for j, k in enumerate(ranged):
        lo, hi = box.get(k, (-float("inf"), float("inf")))
        outside = (rows[:, j] < lo - 1e-9 * (hi - lo)) | (rows[:, j] > hi + 1e-9 * (hi - lo))
        if outside.any():
            i = int(np.argmax(outside))
            raise UserError(f"{params_file}: {k}={rows[i, j]} (query {i}, counting from 0) is "
                            f"outside the range it was trained on, [{lo}, {hi}]")
    coords = [c for c in graph.inputs if c not in ranged]
    pts = _user(io.read_points, points, coords)
    _user(io.check_queries, params_file, len(rows), len(pts),
          1 + len(graph.inputs) + len(graph.outputs))
    q, n = len(rows), len(pts)
    stacked = np.concatenate([np.tile(pts, (q, 1)), np.repeat(rows, n, axis=0)], axis=1)
    values = {k: np.asarray(v).reshape(q, n, *np.shape(v)[1:])
              for k, v in graph.evaluate(stacked).items()}
    text = _user(io.write_query_values, out, pts, coords, rows, ranged, values)
    if text is not None:
        sys.stdout.write(text)
    if out is not None:
        _out(f"wrote {q} queries x {n} points to {out}")
    return EXIT_OK


def _artefact_params(items: list[str], ranged: list[str], box: dict) -> dict[str, float]:
    """``--param NAME=VALUE`` for an exported graph: every parametric input, in its box."""
    if not ranged:
        raise UserError(f"--param {items[0]}: this exported graph has no parametric inputs; "
                        "drop --param")
    out = _name_values(items, f"{ranged[0]}={box.get(ranged[0], [0])[0]}")
    unknown = [k for k in out if k not in ranged]
    missing = [k for k in ranged if k not in out]
    if unknown or missing:
        raise UserError(f"--param: the parametric inputs are {', '.join(ranged)}; "
                        + (f"{', '.join(unknown)} is not one" if unknown else
                           f"give a value for {', '.join(missing)} too"))
    for k, v in out.items():
        lo, hi = box.get(k, (-float("inf"), float("inf")))
        if not lo - 1e-9 * (hi - lo) <= v <= hi + 1e-9 * (hi - lo):
            raise UserError(f"--param {k}={v}: outside the range it was trained on, "
                            f"[{lo}, {hi}]")
    return out


def _name_values(items: list[str], example: str) -> dict[str, float]:
    """``NAME=VALUE`` items as ``{name: value}``; a malformed one is a one-line error."""
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise UserError(f"--param {item}: expected NAME=VALUE with a number, e.g. "
                            f"--param {example}")
    return out


def _param_values(items: list[str] | None, problem) -> dict[str, float] | None:
    """``--param NAME=VALUE`` options as ``{name: value}`` (None when none is given)."""
    if not items:
        return None
    if not problem.ranged:
        raise UserError(f"--param {items[0]}: this solution has no ranged parameters; drop "
                        "--param")
    out = _name_values(items, f"{problem.ranged[0].name}={problem.ranged[0].range[0]}")
    _user(problem.param_columns, out, 1, where="--param")  # names, values and ranges
    return out


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
        built = _load(file, list(set_ or []))
        d["memory"] = mem = built.setup(progress=False).memory_per_point()
        fits = mem["points_that_fit"]
        lines.append(f"memory per point ({built.name}, one gradient step, "
                     f"{mem['points']} points): {mem['bytes_per_point'] / 1024:.1f} KiB"
                     + (f"; about {fits:,} points fit on {mem['device']} (training."
                        "micro_batch streams more)" if fits else
                        f"; {mem['device']} does not report its memory"))
    _out(json.dumps(d) if json_ else "\n".join(lines))
    return EXIT_OK
