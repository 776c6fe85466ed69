"""Fleets of independent runs: ``pinn sweep FILE --vary KEY=VALUES ...``.

:func:`expand` turns ``--vary`` specs (``training.seed=0..4``, ``params.nu=0.01,0.02``) into
their Cartesian product; :func:`sweep` runs every point as its own ``pinn solve`` process (so a
run that crashes, or is killed, takes nothing else with it) in one folder per run under the
sweep folder, on local worker processes or as Ray tasks (``pip install -e ".[ray]"``), and
writes the summary: ``summary.csv``, ``summary.md`` and ``sweep.png`` (the error against each
varied value). Failed runs are reported, not fatal; ``resume=True`` keeps the finished runs
and continues the others from their checkpoints.

Ray workers run ``python -m pinn.cli solve`` on their node: the problem file and the sweep
folder must be on a file system that every node sees.
"""

from __future__ import annotations

import csv
import io as _io
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pinn import io
from pinn.report.metrics import read_metrics

__all__ = ["Vary", "parse_vary", "expand", "RunSpec", "sweep", "summarize", "BACKENDS"]

BACKENDS = ("local", "ray")
_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
_KEY = re.compile(r"^[A-Za-z_][\w-]*(\.[\w-]+)*$")


@dataclass(frozen=True)
class Vary:
    """One varied key and its values (YAML text, as ``--set`` takes them)."""

    key: str
    values: tuple[str, ...]


#: The most runs one sweep makes (the product of its varied values), checked before any.
MAX_RUNS = 10_000


def parse_vary(spec: str) -> Vary:
    """``KEY=A..B`` (the integers A to B, both included) or ``KEY=V1,V2,...``."""
    key, sep, rest = spec.partition("=")
    key = key.strip()
    if not sep or not _KEY.match(key):
        raise ValueError(f"--vary {spec!r}: write KEY=VALUES, e.g. training.seed=0..4 or "
                         "params.nu=0.01,0.02")
    m = _RANGE.match(rest)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if b < a:
            raise ValueError(f"--vary {spec!r}: the range {a}..{b} is empty; write {b}..{a}")
        if b - a + 1 > MAX_RUNS:
            raise ValueError(f"--vary {spec!r}: {b - a + 1:,} values, more than a sweep runs "
                             f"({MAX_RUNS:,}); give a shorter range")
        values = tuple(str(v) for v in range(a, b + 1))
    else:
        values = tuple(v.strip() for v in rest.split(","))
    if not values or any(v == "" for v in values):
        raise ValueError(f"--vary {spec!r}: an empty value; separate values with commas, "
                         "e.g. params.nu=0.01,0.02")
    if len(set(values)) != len(values):
        raise ValueError(f"--vary {spec!r}: a value is repeated")
    return Vary(key, values)


def expand(varies: Sequence[Vary | str]) -> list[dict[str, str]]:
    """The Cartesian product of the varied values: ``[{key: value, ...}, ...]``."""
    varies = [parse_vary(v) if isinstance(v, str) else v for v in varies]
    keys = [v.key for v in varies]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"--vary: the key {dup[0]} is varied twice; give all its values in one "
                         "--vary")
    total = math.prod(len(v.values) for v in varies)
    if total > MAX_RUNS:
        raise ValueError(f"--vary: {total:,} runs (the product of the varied values), more than "
                         f"a sweep runs ({MAX_RUNS:,}); vary fewer values")
    return [dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(v.values for v in varies))]


def _slug(point: dict[str, str]) -> str:
    parts = [f"{k.rsplit('.', 1)[-1]}={v}" for k, v in point.items()]
    return re.sub(r"[^\w=.+-]+", "_", "_".join(parts))[:80] or "run"


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its index, varied values, folder and ``pinn solve`` arguments."""

    index: int
    point: dict[str, str]
    folder: Path
    file: Path
    sets: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.folder.name

    def command(self) -> list[str]:
        """``pinn solve`` in the run's folder; always ``--resume``: a run starts fresh when
        its folder has no checkpoint, and continues from the newest one otherwise."""
        sets = [*self.sets, *(f"{k}={v}" for k, v in self.point.items())]
        return [sys.executable, "-m", "pinn.cli", "solve", str(self.file), "--out",
                str(self.folder), "--quiet", *(a for s in sets for a in ("--set", s)),
                *self.extra, "--resume"]


def _run_one(spec: RunSpec, timeout: float | None = None) -> dict:
    """Run ``spec`` in a child process; never raises for the run's own failure."""
    io.make_folder(spec.folder)
    env = {**os.environ}
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # runs may share an accelerator
    t0 = time.perf_counter()
    log = spec.folder / "sweep.log"
    # the run's stderr; a new file, never written through a link nor onto a FIFO (a
    # failure: pinn.io.WriteError naming it); unbuffered: the child writes to it as well
    with io.open_new(log, "w+b", buffering=0) as err:
        proc = subprocess.Popen(spec.command(), env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        _RUNNING.add(proc)  # (an error from here on: the sweep sends it SIGINT)
        io.write_text(spec.folder / "sweep.json", json.dumps(
            {"index": spec.index, "point": spec.point, "pid": proc.pid,
             "status": "running"}, indent=1))
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
            _log_line(err, log, f"pinn sweep: stopped after the timeout of {timeout} s")
        finally:
            _RUNNING.discard(proc)
        lines = _last_lines(err)
    seconds = time.perf_counter() - t0
    if code == 0:
        status, error = "done", ""
    else:
        status = "failed"
        error = (lines[-1].removeprefix("pinn: ") if lines else "") or (
            f"killed by signal {-code}" if code < 0 else f"exit code {code}")
        if code < 0:
            error = f"killed by signal {-code}"
    record = {"index": spec.index, "point": spec.point, "status": status, "returncode": code,
              "error": error, "seconds": seconds}
    io.write_text(spec.folder / "sweep.json", json.dumps(record, indent=1))
    return record


def _log_line(err, log: Path, line: str) -> None:
    """Append ``line`` to the run's log ``err`` (the file ``log``); :class:`pinn.io.WriteError`
    naming it when it cannot be written."""
    try:
        err.write(f"\n{line}\n".encode())
    except OSError as exc:
        raise io.WriteError(log, exc, "the lines before it are kept") from exc


#: How much of the end of a run's log is read for its last line.
_LOG_TAIL = 64 * 1024


def _last_lines(err) -> list[str]:
    """The non-blank lines at the end of the run's log ``err`` (its last 64 KiB: a run
    that wrote gigabytes to stderr is not read whole)."""
    try:
        end = err.seek(0, os.SEEK_END)
        err.seek(max(0, end - _LOG_TAIL))
        data = err.read()
    except OSError:
        return []
    return [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]


#: what a run's ``sweep.json`` holds (:func:`_run_one` writes it)
_RECORD = io.mapping({"status": io.TEXT, "error": io.TEXT.or_null(),
                      "point": io.mapping({})}, "an object (a sweep run's record)",
                     required=("status",))


def _read_record(folder: Path) -> dict:
    """A run's ``sweep.json``, checked; ``FileNotFoundError`` or :class:`pinn.io.BadFile`."""
    path = folder / "sweep.json"
    return io.check_json(io.read_json_file(path, "sweep run's record"), _RECORD, path,
                         "the record is damaged: run the sweep again with --resume")


def _finished(folder: Path) -> bool:
    try:
        rec = _read_record(folder)
    except (OSError, ValueError):
        return False
    return rec["status"] == "done" and (folder / "metrics.json").exists()


def _local(specs: Sequence[RunSpec], workers: int, timeout: float | None,
           on_done: Callable[[dict], None]) -> list[dict]:
    """The runs on this machine, ``workers`` at a time (threads only wait: each run is its
    own process). Ctrl-C or any error stops the scheduling at once: no queued run starts,
    and the running ones get SIGINT (each keeps its checkpoint; the sweep resumes them)."""
    stop = threading.Event()

    def guarded(spec: RunSpec) -> dict | None:
        return None if stop.is_set() else _run_one(spec, timeout)

    pool = ThreadPoolExecutor(max_workers=workers)
    out = []
    try:
        futures = [pool.submit(guarded, s) for s in specs]
        for f in futures:
            rec = f.result()
            if rec is not None:
                on_done(rec)
                out.append(rec)
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        _interrupt_children()
        raise
    pool.shutdown(wait=True)
    return out


#: The child processes of the runs now running (their Popen objects).
_RUNNING: set = set()


def _interrupt_children() -> None:
    """SIGINT to every run still running (a terminal's Ctrl-C reaches them anyway; a
    SIGTERM to the sweep alone would not)."""
    for proc in list(_RUNNING):
        try:
            proc.send_signal(signal.SIGINT)
        except OSError:
            pass


def _ray(specs: Sequence[RunSpec], address: str | None, timeout: float | None,
         on_done: Callable[[dict], None]) -> list[dict]:
    try:
        import ray
    except ImportError:
        raise ValueError("backend 'ray' needs Ray: pip install -e \".[ray]\" (or pip install "
                         "ray), or use --backend local") from None
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    task = ray.remote(num_cpus=1, max_retries=0)(_run_one)
    refs = [task.remote(s, timeout) for s in specs]
    out = []
    for spec, ref in zip(specs, refs, strict=True):
        try:
            rec = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a lost task is that run's failure
            rec = {"index": spec.index, "point": spec.point, "status": "failed",
                   "returncode": None, "error": f"ray: {type(exc).__name__}: {exc}",
                   "seconds": None}
        on_done(rec)
        out.append(rec)
    return out


@dataclass
class SweepResult:
    """What a sweep did: one row per run (``status`` done or failed), and the files written."""

    folder: Path
    rows: list[dict] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.rows if r["status"] != "done"]

    @property
    def table(self) -> str:
        return self.files["md"].read_text() if "md" in self.files else ""


def plan(file: str | os.PathLike, varies: Sequence[Vary | str], folder: str | os.PathLike,
         sets: Sequence[str] = (), extra: Sequence[str] = ()) -> list[RunSpec]:
    """The runs of a sweep, one folder each: ``folder/NNN-key=value_...``."""
    points = expand(varies)
    width = max(3, len(str(len(points) - 1)))
    return [RunSpec(i, p, Path(folder) / f"{i:0{width}d}-{_slug(p)}", Path(file).resolve(),
                    tuple(sets), tuple(extra)) for i, p in enumerate(points)]


def sweep(file: str | os.PathLike, varies: Sequence[Vary | str], folder: str | os.PathLike, *,
          sets: Sequence[str] = (), backend: str = "local", workers: int | None = None,
          address: str | None = None, resume: bool = False, timeout: float | None = None,
          extra: Sequence[str] = (), on_done: Callable[[dict], None] | None = None
          ) -> SweepResult:
    """Run the Cartesian product of ``varies`` over ``file`` as independent ``pinn solve`` runs.

    ``sets``: overrides common to every run; ``backend``: ``"local"`` (``workers`` processes
    at a time, default half the CPU cores) or ``"ray"`` (one task per run on the cluster at
    ``address``, or a local Ray instance; an already initialised Ray is used as it is);
    ``resume``: keep the finished runs, continue the others from their checkpoints;
    ``timeout``: seconds a run may take before it is stopped (and reported failed);
    ``extra``: more ``pinn solve`` arguments (e.g. ``["--precision", "64"]``);
    ``on_done``: called with each run's record as it finishes.
    Returns the :class:`SweepResult`; a failed run is a row, never an exception.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    folder = Path(folder)
    specs = plan(file, varies, folder, sets, extra)
    if not resume and folder.is_dir() and any(folder.iterdir()):
        raise ValueError(f"{folder}: the sweep folder exists and is not empty; continue it with "
                         "--resume (finished runs are kept), or give a new --out")
    if resume and not folder.is_dir():
        raise ValueError(f"{folder}: no sweep folder to resume")
    io.make_folder(folder)
    io.write_text(folder / "sweep.json", json.dumps(
        {"file": str(Path(file).resolve()), "vary": [
            {"key": k, "values": list(dict.fromkeys(p.point[k] for p in specs))}
            for k in (specs[0].point if specs else {})], "set": list(sets),
         "backend": backend, "runs": [s.name for s in specs]}, indent=1))
    todo = [s for s in specs if not (resume and _finished(s.folder))]
    done = on_done or (lambda rec: None)
    if backend == "local":
        n = workers or max(1, min(len(todo), (os.cpu_count() or 2) // 2))
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        _local(todo, n, timeout, done)
    elif todo:
        _ray(todo, address, timeout, done)
    return summarize(folder, specs)


def _record(spec: RunSpec) -> dict:
    try:
        rec = _read_record(spec.folder)
    except FileNotFoundError:
        rec = {"status": "failed", "error": "never ran (no sweep.json)"}
    except (OSError, ValueError) as exc:  # (BadFile: one line naming the file)
        rec = {"status": "failed", "error": str(exc)}
    if rec.get("status") == "running":  # the sweep itself was stopped during this run
        rec = {**rec, "status": "failed", "error": "stopped while running; --resume continues"}
    return rec


def _metrics(folder: Path) -> tuple[dict, str]:
    """A run's ``metrics.json``, checked, or ``{}`` and why not."""
    try:
        return read_metrics(folder), ""
    except FileNotFoundError:
        return {}, "no metrics.json"
    except (OSError, ValueError) as exc:  # (BadFile: one line naming the file)
        return {}, str(exc)


def _number(v: str) -> float | None:
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def summarize(folder: str | os.PathLike, specs: Sequence[RunSpec]) -> SweepResult:
    """Write ``summary.csv``, ``summary.md`` and ``sweep.png`` for the runs of a sweep."""
    folder = Path(folder)
    rows, fields = [], []
    for s in specs:
        rec, (m, why) = _record(s), _metrics(s.folder)
        status = "done" if rec.get("status") == "done" and m else "failed"
        errors = m.get("rel_l2") or {}
        for f in errors:
            if f not in fields:
                fields.append(f)
        row = {"run": s.name, **s.point, "status": status,
               "error": "" if status == "done" else rec.get("error") or why,
               "steps": m.get("steps_done"), "seconds": m.get("wall_seconds"),
               "loss": sum(m["loss"].values()) if m.get("loss") else None,
               **{f"rel_l2_{f}": v for f, v in errors.items()},
               **{f"param_{k}": v for k, v in (m.get("params") or {}).items()}}
        rows.append(row)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = _io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    files = {"csv": io.write_text(folder / "summary.csv", buf.getvalue())}

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v).replace("|", "\\|")

    n_done = sum(r["status"] == "done" for r in rows)
    md = [f"# Sweep: {n_done} of {len(rows)} runs done", "",
          "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    md += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    files["md"] = io.write_text(folder / "summary.md", "\n".join(md) + "\n")
    png = _plot(folder / "sweep.png", rows, list(specs[0].point) if specs else [], fields)
    if png is not None:
        files["png"] = png
    return SweepResult(folder, rows, files)


def _plot(path: Path, rows: list[dict], keys: list[str], fields: list[str]) -> Path | None:
    """The largest relative L2 error of each finished run against each varied value."""
    done = [r for r in rows if r["status"] == "done" and any(
        r.get(f"rel_l2_{f}") is not None for f in fields)]
    if not done or not keys:
        return None
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.4), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        values = list(dict.fromkeys(r[key] for r in rows))
        numeric = all(_number(v) is not None for v in values)
        pos = {v: (_number(v) if numeric else i) for i, v in enumerate(values)}
        xs = [pos[r[key]] for r in done]
        ys = [max(r[f"rel_l2_{f}"] for f in fields if r.get(f"rel_l2_{f}") is not None)
              for r in done]
        ax.scatter(xs, ys, s=18)
        means = [(pos[v], math.exp(sum(math.log(max(y, 1e-300)) for x, y in zip(
            xs, ys, strict=True) if x == pos[v]) / max(1, sum(x == pos[v] for x in xs))))
            for v in values if any(x == pos[v] for x in xs)]
        ax.plot([m[0] for m in means], [m[1] for m in means], "-", lw=1, alpha=0.7)
        if not numeric:
            ax.set_xticks(range(len(values)), values)
        ax.set_yscale("log")
        ax.set_xlabel(key)
        ax.set_ylabel("largest relative L2 error")
        ax.grid(alpha=0.3)
    failed = len(rows) - len(done)
    fig.suptitle(f"{len(done)} runs" + (f" ({failed} without an error: failed)" if failed
                                        else ""), fontsize=9)
    fig.tight_layout()
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return io.write_bytes(path, buf.getvalue())
