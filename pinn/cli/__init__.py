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

import errno
import importlib
import os
import sys
import warnings
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
         "  pinn compare problems/heat2d.yaml     # PINN vs FEM, one table\n"
         "  pinn export runs/heat2d --format all  # graphs that run without pinn\n"
         "  pinn sweep problems/heat2d.yaml --vary training.seed=0..3",
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
    "--log", metavar="tensorboard|mlflow",
    help="Also log the training scalars: tensorboard (event files in RUN/tensorboard; needs "
         "pip install 'pinn[tensorboard]') or mlflow (an MLflow run in $MLFLOW_TRACKING_URI, "
         "else RUN/mlruns; needs pip install 'pinn[mlflow]'). Repeatable.")]
_LOG_FORMATS = ("auto", "bar", "plain", "json")
_LOGGERS = ("tensorboard", "mlflow")
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






def _out_opt(default: str) -> typer.Option:
    return typer.Option("--out", "-o", help=f"Output folder (default: {default}).")


def _err(msg: str) -> None:
    """One line on stderr (control characters and bytes that are not UTF-8 escaped)."""
    line = " ".join(str(msg).split("\n")[0].split())
    line = "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF
                   else ascii(c)[1:-1] for c in line)
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


def _overrides(sets, seed=None, precision=None, devices=None, time_limit=None) -> list[str]:
    out = list(sets or [])
    if time_limit is not None:
        out.append(f"training.time_limit={time_limit}")
    if seed is not None:
        out.append(f"training.seed={seed}")
    if precision is not None:
        out.append(f"training.precision={precision}")
    if devices is not None:
        out.append(f"training.devices={devices}")
    return out


def _load(file: Path, sets, *, checks: bool = True):
    """The built problem file; with ``checks``, everything that would fail in training and
    can be known now is checked first (:mod:`pinn.config.checks`): nothing is written yet."""
    from pinn import config

    if not file.exists() and not file.is_symlink():
        raise UserError(f"{file}: no such file")
    built = config.load(str(file), sets)
    if checks:
        from pinn.config.checks import check

        check(built)
    return built


def _user(fn, *args, **kwargs):
    """Call a library function whose ValueError is the user's (a path, a folder)."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _prepare(built, out: Path | None, resume: bool, suffix: str = "", *,
             file: Path | None = None, sets=()):
    """The run folder, locked for this command, with its ``config.yaml`` (and, given the
    problem ``file`` and its overrides ``sets``, ``command.json``) written: returns
    ``(run_dir, lock)``; release the lock when the command is done (``with lock:``)."""
    from pinn import io

    for _ in range(100):  # a new default folder taken by a solve started just now: the next
        run_dir = _user(io.run_folder, out, built.name, resume, suffix)
        new = _first_missing(run_dir)  # what this command creates (None: it exists)
        try:
            lock = io.lock_run_folder(run_dir)
            break
        except io.FolderInUse as exc:
            if out is not None or resume:
                raise UserError(str(exc)) from None
        except OSError as exc:
            _remove_new_folder(new)
            raise UserError(f"{run_dir}: cannot write the run folder ({exc.strerror or exc}); "
                            f"{_write_fix(exc.errno, has_out=True)}") from None
    else:
        raise UserError(f"{run_dir}: every run folder of {built.name} is in use; give --out")
    try:
        _user(io.write_config, run_dir, built.resolved(), resume=resume,
              header=f"# resolved configuration of {built.name} (every default filled in but "
                     "what the plan chooses); "
                     "`pinn solve` accepts this file as is\n")
        if file is not None:
            io.write_command(run_dir, file, sets, resume=resume)
    except BaseException as exc:
        lock.release()
        _remove_new_folder(new)  # an error before training: leave nothing behind
        if isinstance(exc, OSError) and exc.errno in _USER_ERRNOS:
            raise UserError(_os_error_line(exc, has_out=True)) from None
        raise
    return run_dir, lock


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (None: ``path`` exists)."""
    top = None
    while not (path.exists() or path.is_symlink()) and path != path.parent:
        top, path = path, path.parent
    return top


def _remove_new_folder(path: Path | None) -> None:
    """Remove a folder this command created (None: nothing): an error before training
    leaves nothing behind."""
    import shutil

    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def _errors_line(m: dict) -> str:
    errs = ", ".join(f"{k} {v:.3e}" for k, v in (m.get("rel_l2") or {}).items())
    at = ", ".join(f"{k} {v:.3e}" for k, v in (m.get("rel_l2_ref_points") or {}).items())
    if at:  # a file reference: its own points are the score that counts (PINNacle's L2RE)
        at = f"; at the reference's {m.get('ref_points')} points: {at}"
    return (f"; relative L2: {errs}" if errs else "") + at


def _lock_run(run_dir: Path):
    """The lock of a finished run folder that a command writes into, as a context (none
    where ``run_dir`` holds no run: loading it says so, and nothing is created there)."""
    import contextlib

    from pinn import io

    if not (run_dir / "solution.json").is_file():
        return contextlib.nullcontext()
    return _user(io.lock_run_folder, run_dir)


def _load_run(run_dir: Path):
    from pinn.solution import Solution

    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    if not any((run_dir / f).exists() for f in ("solution.json", "solution.pkl")):
        if (run_dir / "fem.npz").exists() or (run_dir / "fem.json").exists():
            raise UserError(f"{run_dir}: a `pinn fem` run (fem.npz), not a trained PINN; give "
                            "a `pinn solve` run folder, or export the FEM fields with `pinn "
                            f"export-fields {run_dir}`")
        raise UserError(f"{run_dir}: no solution.json (the run did not finish; resume it with "
                        f"`pinn solve --resume --out {run_dir}`)")
    try:
        return Solution.load(run_dir)
    except (ValueError, FileNotFoundError) as exc:
        raise UserError(str(exc)) from None


def _run_config(run_dir: Path) -> dict:
    """The run's ``config.yaml`` as data (``{}`` where it has none); a file that is not a
    YAML mapping is the user's error, naming it."""
    import yaml

    from pinn import io

    p = run_dir / "config.yaml"
    if not p.exists():
        return {}
    text = _user(io.read_text_file, p, "run's configuration")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UserError(f"{p}: not YAML{where}: {getattr(exc, 'problem', None) or exc}; "
                        "the run's configuration is damaged: run the problem again") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{p}: expected a mapping (the run's configuration), got "
                        f"{type(data).__name__}; run the problem again")
    return data


def _subcommand(args: list[str], *, show: bool = False) -> None:
    """Run ``pinn ARGS`` in a child process; its errors become ours. ``show``: its output
    (progress lines) goes to ours."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "pinn.cli", *args],
                          stdout=None if show else subprocess.DEVNULL,
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

#: errors of the user's files and folders (permissions, a full disk, a file in the way)
_USER_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT,
                errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.ENAMETOOLONG,
                errno.ELOOP}


#: what to do when a file cannot be written, by the system's reason (errno)
_REMEDY = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space (the quota is full)",
           errno.EROFS: "the file system is read-only: make it writable",
           errno.EACCES: "make its folder writable", errno.EPERM: "make its folder writable",
           errno.ENOTDIR: "a file is in the way: remove it",
           errno.EEXIST: "a file is in the way: remove it",
           errno.EISDIR: "a folder is in the way: remove it"}


def _write_fix(code: int | None, *, has_out: bool) -> str:
    """What to do when a file cannot be written (``code``: its errno); ``has_out``: the
    command takes --out, another place to write (``pinn plot`` does not)."""
    remedy = _REMEDY.get(code, "check the path")
    return f"{remedy} or give another --out" if has_out else remedy


def _os_error_line(exc: OSError, *, has_out: bool) -> str:
    """One line for a failure of the file system: a write names the file and what was kept
    (:class:`pinn.io.WriteError`: ``PATH: cannot be written (No space left on device);
    params.npz keeps its previous contents; free some space ...``), a read says the file
    cannot be read; each says what to do (``--out`` only where the command has it)."""
    from pinn.io import WriteError

    if isinstance(exc, WriteError):
        return f"{exc}; {_write_fix(exc.errno, has_out=has_out)}"
    path = exc.filename if exc.filename is not None else "a file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (f"{path}: cannot be read ({exc.strerror}); make it (and the folders above it) "
                "readable")
    return f"{path}: {exc.strerror or exc}; {_write_fix(exc.errno, has_out=has_out)}"


def _has_out(argv: list[str] | None) -> bool:
    """Whether the command of ``argv`` (default: this process's) has an --out option."""
    import typer.main

    args = sys.argv[1:] if argv is None else argv
    name = next((a for a in args if not a.startswith("-")), None)
    command = typer.main.get_command(app).commands.get(name) if name else None
    return command is not None and any("--out" in getattr(p, "opts", ())
                                       for p in command.params)


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    _err(f"warning: {message}")


def _piped(log_format: str) -> bool:
    """Whether progress is shown as lines (``plain``/``json``): without importing the
    training stack (``pinn.train.progress.resolve_format`` decides the same later)."""
    if log_format in ("plain", "json"):
        return True
    if log_format != "auto":
        return False
    try:
        return not sys.stderr.isatty() and "ipykernel" not in sys.modules
    except (AttributeError, ValueError):
        return True


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code (the console script exits with it)."""
    tune_malloc()
    debug = os.environ.get("PINN_DEBUG", "") not in ("", "0")
    try:
        with warnings.catch_warnings():  # a warning is one line: pinn: warning: ...
            warnings.showwarning = _warning_line
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
    except OSError as exc:
        if exc.errno not in _USER_ERRNOS or debug:
            raise
        _err(_os_error_line(exc, has_out=_has_out(argv)))
        return EXIT_INPUT
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 1
        from pinn.config import ConfigError
        from pinn.io import BadFile

        if isinstance(exc, (ConfigError, BadFile)) or type(exc).__name__ == "CheckpointError":
            # (a checkpoint that does not fit the run: the folder's fault, named in the line;
            # by name, so that a command that never trained does not import the trainer)
            _err(str(exc))
            return EXIT_INPUT
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set PINN_DEBUG=1 for the "
             "traceback; please report it)")
        return EXIT_INTERNAL


# the commands register themselves on `app` when their modules are imported (in the order
# `pinn --help` lists them)
for _group in ("train", "baseline", "deploy", "fields", "design"):
    importlib.import_module(f"pinn.cli.{_group}")
