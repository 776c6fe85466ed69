"""Observers of a training run: what happens at chunk boundaries, one object per concern.

The loop (:func:`pinn.train.run`) advances the pure training state one jitted chunk at a
time and tells every observer what happened, in list order::

    observer.init(info)        # once, before the first chunk (info: RunInfo)
    observer.on_chunk(event)   # at each event of the run (event: ChunkEvent)
    observer.close(result)     # once, however the run ends (result: the run so far)

An observer may set ``every`` (steps): chunks are then cut at its multiples, so it sees
the state exactly there. Subclass :class:`Observer` (no-op defaults) or write any object
with these three methods. ``event.kind`` says what happened:

* ``"stage_start"``: a stage begins (``row``: its first history row);
* ``"chunk"``: a chunk of steps finished with a finite loss (``row``: its history row);
* ``"stage_stop"``: an observer ended the stage early (``row``: e.g. ``lbfgs_stop``);
* ``"extend"``: the last stage was given more steps (``row``: the ``extended`` event);
* ``"nonfinite"``: a chunk produced a non-finite loss; ``state`` is the last good state,
  ``until`` the end of the failed chunk, and nothing was recorded yet;
* ``"rollback"``: the failed chunk was rolled back (``row``: the roll-back event);
* ``"boundary"``: the state the run continues from (after a chunk and any stage stop);
* ``"end"``: the run is about to return (finished, or stopped on request).

Observers only look, unless they ask through the event: :meth:`ChunkEvent.end_stage`,
:meth:`ChunkEvent.end_run`, :meth:`ChunkEvent.extend` (``"chunk"`` only),
:meth:`ChunkEvent.roll_back` / :meth:`ChunkEvent.fail` (``"nonfinite"`` only) and
:meth:`ChunkEvent.stop`. The loop applies requests once every observer has seen the event;
a request the event's kind does not allow raises ``ValueError``. An observer that adds to
a row (:class:`Evaluation`) must come before those that record it (:class:`History`);
:func:`pinn.train.run` puts its own observers first and ``run(observers=[...])`` after.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checkpoint import list_checkpoints, save_checkpoint
from .history import HistoryWriter, as_float, read_history
from .result import TrainingDiverged, TrainResult, warn
from .spec import Stage
from .steps import NONFINITE, RUNNING, STATUS_NAMES

__all__ = [
    "Observer",
    "RunInfo",
    "ChunkEvent",
    "History",
    "Progress",
    "Evaluation",
    "KeepBest",
    "Checkpoints",
    "NanGuard",
    "StallStop",
    "StopWhenDone",
    "TimeLimit",
    "Signals",
    "Callback",
]


@dataclass(eq=False)
class RunInfo:
    """What observers know about the run; the lists grow as it goes (do not edit them).

    ``start_step``: where this call starts (0, or the step of the checkpoint resumed from);
    ``resume_meta``: that checkpoint's metadata (``None`` for a fresh run); ``physical``:
    parameters in physical units from the optimiser's (learnable PDE parameters are trained
    scaled); ``rows``: the history so far (:class:`History` restores it on resume);
    ``checkpoint``: the newest checkpoint written (observers that write one set it).
    """

    stages: list[Stage]
    starts: list[int]
    ends: list[int]
    names: list[str]
    physical: Callable[[Any], Any]
    start_step: int = 0
    resumed_from: Path | None = None
    resume_meta: dict | None = None
    rows: list[dict] = field(default_factory=list)
    stage_reports: list[dict] = field(default_factory=list)
    rollbacks: list[dict] = field(default_factory=list)
    checkpoint: Path | None = None
    # "mixed" stages now in float64 -> the step they changed at (the core's record)
    escalated: dict[int, int] = field(default_factory=dict)
    elapsed_before: float = 0.0
    t_start: float = field(default_factory=time.perf_counter)

    @property
    def total(self) -> int:
        return self.ends[-1]

    def planned_end(self, stage: int) -> int:
        """The step ``stage`` ends at as planned (``ends`` grows where a time limit extends
        the last stage)."""
        return self.starts[stage] + self.stages[stage].steps

    def elapsed(self) -> float:
        """Wall seconds of training, summed over resumes."""
        return self.elapsed_before + time.perf_counter() - self.t_start

    def due(self, step: int, every: int | None) -> bool:
        """``step`` is the last one, or a multiple of ``every``."""
        return step == self.total or (every is not None and step % every == 0)


_REQUESTS = {"end_stage": ("chunk",), "end_run": ("chunk",), "extend": ("chunk",),
             "roll_back": ("nonfinite",), "fail": ("nonfinite",)}


@dataclass(eq=False)
class ChunkEvent:
    """One event of the run (see the module docstring for the kinds).

    ``state`` is the training state (a pytree of arrays: read it, never keep it past the
    call without copying what you need); ``report`` the chunk's report (host arrays: loss,
    terms, weights, grad_norm, status, ...); ``row`` the history row, if the event has one.
    """

    kind: str
    step: int
    stage: int
    state: Any
    info: RunInfo
    report: dict | None = None
    row: dict | None = None
    until: int | None = None
    stage_end: tuple[str, str] | None = None
    rollback_row: dict | None = None
    lr_factor: float | None = None
    error: BaseException | None = None
    stop_signal: str | None = None
    stopped: bool = False
    run_end: bool = False
    extra_steps: int = 0

    def _allow(self, request: str) -> None:
        kinds = _REQUESTS.get(request)
        if (kinds is not None and self.kind not in kinds) or self.kind == "end":
            raise ValueError(
                f"ChunkEvent.{request}() is not allowed at a {self.kind!r} event (allowed: "
                f"{', '.join(kinds or ['any but end'])}); make the request at such an event."
            )

    def end_stage(self, event: str, message: str) -> None:
        """Skip to the end of the current stage, recording a row ``{event, message}``."""
        self._allow("end_stage")
        self.stage_end = (event, message)

    def end_run(self, event: str, message: str) -> None:
        """End the run here: the current stage as :meth:`end_stage` does, and the stages
        after it not run (their reports say ``event``); the run returns as a finished one."""
        self._allow("end_run")
        self.stage_end, self.run_end = (event, message), True

    def extend(self, steps: int) -> None:
        """Give the last stage ``steps`` more steps; only when it has just run its steps."""
        self._allow("extend")
        info = self.info
        if self.stage != len(info.stages) - 1 or self.step < info.ends[self.stage]:
            raise ValueError("ChunkEvent.extend() only extends the last stage, at the chunk "
                             f"that ends it (stage {self.stage + 1} of {len(info.stages)}, "
                             f"step {self.step} of {info.ends[self.stage]}).")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"ChunkEvent.extend: steps must be an integer >= 1, got {steps!r}")
        self.extra_steps = max(self.extra_steps, steps)

    def roll_back(self, row: dict, lr_factor: float) -> None:
        """Discard the failed chunk, record ``row``, retry with the learning rate scaled."""
        self._allow("roll_back")
        if not 0 < lr_factor < 1:
            raise ValueError(f"ChunkEvent.roll_back: lr_factor must lie in (0, 1), got "
                             f"{lr_factor!r}.")
        self.rollback_row, self.lr_factor = row, lr_factor

    def fail(self, error: BaseException, row: dict | None = None) -> None:
        """Give up on the failed chunk: record ``row`` (if given), then raise ``error``."""
        self._allow("fail")
        self.error, self.rollback_row = error, row

    def stop(self, signal_name: str | None = None) -> None:
        """End the run at this chunk's boundary (with a final checkpoint); with a
        ``signal_name``, :func:`pinn.train.run` then raises :class:`Interrupted`."""
        self._allow("stop")
        self.stopped, self.stop_signal = True, signal_name


class Observer:
    """Base class with no-op defaults; ``every``: cut chunks at multiples of this step."""

    every: int | None = None

    def init(self, info: RunInfo) -> None:
        """Called once before the first chunk."""

    def on_chunk(self, event: ChunkEvent) -> None:
        """Called at every event of the run."""

    def close(self, result: TrainResult) -> None:
        """Called once when the run ends, also when it raises (``result``: so far)."""


class History(Observer):
    """The history rows as ``<out_dir>/history.jsonl`` (and ``history.csv`` with ``csv``).

    On resume it restores the rows written up to the checkpoint into ``info.rows``.
    The CSV is rewritten when a checkpoint was written and at the end.
    """

    def __init__(self, out_dir: str | Path, *, csv: bool = False) -> None:
        self.writer = HistoryWriter(out_dir, csv_file=csv)
        self._csv_at: Path | None = None
        self._info: RunInfo | None = None

    def init(self, info: RunInfo) -> None:
        self._info, self._csv_at = info, info.checkpoint
        if info.resume_meta is not None and not info.rows:
            rows = read_history(self.writer.jsonl_path)[: int(info.resume_meta["n_rows"])]
            info.rows.extend(rows)
        self.writer.reset(info.rows)

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.row is not None:
            self.writer.append(event.row)
        elif event.kind == "boundary" and event.info.checkpoint != self._csv_at:
            self._csv_at = event.info.checkpoint
            self.writer.write_csv(event.info.rows)

    def close(self, result: TrainResult) -> None:
        if self._info is not None:
            self.writer.write_csv(self._info.rows)


class Progress(Observer):
    """Training progress on the progress stream (stderr), shown the way the place reads it.

    ``format``: ``"auto"`` (default: a live bar on a terminal, an updating display in
    Jupyter, timestamped lines when piped or redirected), ``"bar"``, ``"notebook"``,
    ``"plain"`` (lines) or ``"json"`` (one JSON object a line); see
    :mod:`pinn.train.progress`. ``interval``: seconds between status lines (plain, json);
    a heartbeat line says what is still running (a long compilation) after as long a
    silence. Each stage's compilation is announced before it starts ("compiling stage 2/2
    (LBFGS) …") and timed when done (``compile_seconds``: ``{stage: seconds}``, the
    compilation and the stage's first zero-step call). Acts at chunk boundaries only.
    """

    def __init__(self, *, format: str = "auto", stream: Any = None,
                 interval: float = 5.0) -> None:
        from .progress import FORMATS

        if format not in FORMATS:
            raise ValueError(f"Progress: format must be one of {', '.join(FORMATS)}, got "
                             f"{format!r}.")
        if not (isinstance(interval, (int, float)) and interval > 0):
            raise ValueError(f"Progress: interval must be a number of seconds > 0, got "
                             f"{interval!r}.")
        self.format, self.stream, self.interval = format, stream, float(interval)
        self.compile_seconds: dict[int, float] = {}
        self._view: Any = None
        self._info: RunInfo | None = None
        self._compiling: tuple[int, float] | None = None
        self._errors: dict[str, float] = {}
        self._fresh_stage = True
        self._shown: int | None = None  # the step of the last status shown

    def _name(self, stage: int) -> str:
        info = self._info
        name = type(info.stages[stage].optimizer).__name__
        return f"stage {stage + 1}/{len(info.stages)} ({name})"

    def init(self, info: RunInfo) -> None:
        from .progress import make_view, resolve_format

        fmt = resolve_format(self.format, self.stream)
        self._info, self._errors, self.compile_seconds, self._shown = info, {}, {}, None
        self._view = make_view(fmt, self.stream, self.interval, info.total, info.start_step)
        self._view.start()
        stage = int((info.resume_meta or {}).get("stage", 0))
        if info.start_step >= info.ends[stage] and stage + 1 < len(info.stages):
            stage += 1  # resumed at a stage's end: the next stage compiles first
        if info.resume_meta is not None:
            self._view.note("resume", f"resuming at step {info.start_step}/{info.total} from "
                            f"{info.resumed_from}", step=info.start_step)
        self._start_compile(stage)

    def _start_compile(self, stage: int) -> None:
        text = f"compiling {self._name(stage)} …"
        self._compiling = (stage, time.perf_counter())
        self._view.note("compiling", text, stage=stage + 1)
        self._view.activity(f"compiling {self._name(stage)}")

    def _status(self, event: ChunkEvent):
        from .progress import Status

        info = event.info
        row = event.row or (dict(info.rows[-1]) if info.rows else {})
        rate = row.get("steps_per_s")
        left = info.ends[event.stage] - event.step
        return Status(step=event.step, total=info.total, stage=event.stage,
                      stages=len(info.stages),
                      optimizer=type(info.stages[event.stage].optimizer).__name__,
                      row=row, errors=dict(self._errors), steps_per_s=rate,
                      elapsed=info.elapsed(),
                      stage_eta=left / rate if rate and left > 0 else None)

    def on_chunk(self, event: ChunkEvent) -> None:
        view, kind = self._view, event.kind
        if view is None:
            return
        if self._compiling is not None and kind in ("stage_start", "chunk"):
            _, t0 = self._compiling
            stage = event.stage  # (a resume at a stage's end compiles the next one)
            seconds = time.perf_counter() - t0
            self.compile_seconds[stage] = seconds
            self._compiling = None
            view.note("compiled", f"compiled {self._name(stage)} in {seconds:.1f} s",
                      stage=stage + 1, compile_seconds=round(seconds, 3))
            view.activity(f"training {self._name(stage)}")
            self._fresh_stage = True
        if kind == "chunk":
            self._errors.update({k[5:]: v for k, v in event.row.items()
                                 if k.startswith("eval.") and isinstance(v, float)})
            if view.status(self._status(event), force=self._fresh_stage):
                self._shown = event.step
            self._fresh_stage = False
        elif kind in ("stage_stop", "rollback", "escalate", "extend"):
            view.note(kind, str(event.row.get("message", kind)), step=event.step)
        elif kind == "boundary":
            info = event.info
            if event.step >= info.ends[event.stage]:
                if event.stage + 1 < len(info.stages):
                    if self._shown != event.step:
                        view.status(self._status(event), force=True)
                        self._shown = event.step
                    self._start_compile(event.stage + 1)
        elif kind == "end":
            info = event.info
            comp = sum(self.compile_seconds.values())
            if self._shown != event.step:
                view.status(self._status(event), force=True)
            view.activity(None)
            from .progress import errors_text

            err = errors_text(self._errors)
            view.note("done", f"trained {event.step}/{info.total} steps in "
                      f"{info.elapsed():.1f} s (compilation {comp:.1f} s)"
                      + (f" | {err}" if err else ""),
                      step=event.step, elapsed=round(info.elapsed(), 3),
                      compile_seconds=round(comp, 3), errors=dict(self._errors))

    def close(self, result: TrainResult) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None


class Evaluation(Observer):
    """``fn(params) -> {name: number}`` (physical parameters) every ``every`` steps and at
    the end, added to the row as ``eval.<name>``."""

    def __init__(self, fn: Callable[[Any], Mapping[str, Any]], every: int | None = None):
        self.fn, self.every = fn, every

    def on_chunk(self, event: ChunkEvent) -> None:
        due = event.info.due(event.step, self.every)
        if event.kind == "stage_stop":
            due = due and not any(k.startswith("eval.") for k in event.row)
        if due and event.kind in ("chunk", "stage_stop"):
            metrics = self.fn(event.info.physical(event.state["params"]))
            event.row.update({f"eval.{k}": as_float(v) for k, v in metrics.items()})


class KeepBest(Observer):
    """The parameters at which ``fn(params) -> float`` (physical parameters; lower is
    better: a misfit on held-out observations) was lowest, among the states whose loss was
    within ``loss_factor`` of the run's lowest (a state that fits the held-out data but not
    the physics is never chosen). Checked every ``every`` steps and at each stage's end,
    logged as ``eval.<name>``; :meth:`apply` puts the chosen parameters into the result.
    Only the states on the front of (loss, value) are kept (host copies): none is better in
    both."""

    def __init__(self, fn: Callable[[Any], float], *, name: str = "heldout",
                 every: int | None = 100, loss_factor: float = 2.0) -> None:
        self.fn, self.name, self.every, self.loss_factor = fn, name, every, loss_factor
        self.front: list[tuple[float, float, int, Any]] = []  # (loss, value, step, params)
        self.last: tuple[int, float] | None = None
        self.lowest_loss = math.inf

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind not in ("chunk", "stage_stop") or event.row is None:
            return
        if not (event.info.due(event.step, self.every) or event.kind == "stage_stop"):
            return
        loss = event.row.get("loss")
        params = event.info.physical(event.state["params"])
        value = float(self.fn(params))
        event.row[f"eval.{self.name}"] = value
        self.last = (event.step, value)
        if not (isinstance(loss, (int, float)) and math.isfinite(loss)
                and math.isfinite(value)):
            return
        self.lowest_loss = min(self.lowest_loss, float(loss))
        if any(lo <= loss and v <= value for lo, v, _, _ in self.front):
            return  # dominated: another state is as good in both
        import jax

        self.front = [e for e in self.front if not (loss <= e[0] and value <= e[1])]
        self.front.append((float(loss), value, event.step, jax.device_get(params)))

    def chosen(self) -> tuple[float, int, Any] | None:
        """``(value, step, params)`` of the state chosen: the lowest value among those whose
        loss is within ``loss_factor`` of the lowest; None before any check."""
        ok = [e for e in self.front if e[0] <= self.loss_factor * self.lowest_loss]
        if not ok:
            return None
        _, value, step, params = min(ok, key=lambda e: e[1])
        return value, step, params

    def apply(self, result: TrainResult) -> dict | None:
        """Put the chosen parameters into ``result`` (and ``result.kept``) where they are
        not its last ones; ``{name, step, value, last_step, last_value}`` (what was kept,
        and the last check), or None when nothing was checked."""
        best = self.chosen()
        if best is None or self.last is None:
            return None
        value, step, params = best
        if step == self.last[0] or value >= self.last[1]:
            step, value = self.last
        kept = {"name": self.name, "step": step, "value": value, "last_step": self.last[0],
                "last_value": self.last[1]}
        if step != self.last[0]:
            result.params, result.kept = params, kept
        return kept


class Checkpoints(Observer):
    """Checkpoints in ``directory`` every ``every`` steps, at the end and when the run is
    stopped; keeps the newest ``keep`` (``None``: all). A fresh run first removes the
    checkpoints of an earlier run there (with a warning)."""

    def __init__(self, directory: str | Path, *, every: int | None = None,
                 keep: int | None = 3) -> None:
        self.directory, self.every, self.keep = Path(directory), every, keep
        self.last: Path | None = None

    def init(self, info: RunInfo) -> None:
        from pinn.distributed import is_main

        self.last = info.resumed_from
        fresh = info.resume_meta is None and is_main()  # many processes: process 0 cleans up
        stale = list_checkpoints(self.directory) if fresh else []
        if stale:
            warn(
                f"run: removing {len(stale)} checkpoint(s) of an earlier run in "
                f"{str(self.directory)!r} before starting afresh (pass resume=True to continue "
                "that run instead)."
            )
            for old in stale:
                old.unlink(missing_ok=True)

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind == "boundary" and event.info.due(event.step, self.every):
            self.save(event)
        elif event.kind == "end" and (
            self.last is None or not self.last.name.endswith(f"{event.step:09d}.npz")
        ):
            self.save(event)

    def save(self, event: ChunkEvent) -> Path:
        """Write the state of ``event`` with the metadata a resume needs."""
        info, stage = event.info, event.stage
        meta = {
            "step": event.step,
            "stage": stage,
            "stage_start": info.starts[stage],
            "optimizers": [type(s.optimizer).__name__ for s in info.stages],
            "names": info.names,
            "n_rows": len(info.rows),
            "elapsed": info.elapsed(),
            "stage_reports": info.stage_reports,
            "rollbacks": info.rollbacks,
            "escalated": {str(k): v for k, v in info.escalated.items()},
        }
        self.last = save_checkpoint(self.directory, event.step, event.state, meta,
                                    keep=self.keep)
        info.checkpoint = self.last
        return self.last


class NanGuard(Observer):
    """On a non-finite chunk: roll back to the last good state with the learning rate
    scaled by ``factor``; after ``max_retries`` consecutive roll-backs, stop with
    :class:`TrainingDiverged`."""

    def __init__(self, max_retries: int = 5, factor: float = 0.5) -> None:
        self.max_retries, self.factor = max_retries, factor
        self.failures = 0

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind == "chunk":
            self.failures = 0
        if event.kind != "nonfinite":
            return
        self.failures += 1
        info, step, stage = event.info, event.step, event.stage
        bad = sorted(n for n, v in event.report["terms"].items() if not math.isfinite(as_float(v)))
        old = as_float(event.state["lr_scale"])
        row = {
            "step": step,
            "stage": stage,
            "stage_step": step - info.starts[stage],
            "optimizer": type(info.stages[stage].optimizer).__name__,
            "event": "rollback",
            "failed_until": event.until,
            "lr_scale": old * self.factor,
            "time": round(info.elapsed(), 4),
            "message": (
                f"non-finite loss in steps {step}..{event.until} (terms: "
                f"{bad or 'gradients/parameters'}); rolled back to step {step} and lowered the "
                f"learning rate scale {old:g} -> {old * self.factor:g}"
            ),
        }
        if self.failures <= self.max_retries:
            warn(row["message"], RuntimeWarning)
            event.roll_back(row, self.factor)
            return
        event.fail(TrainingDiverged(
            f"training diverged: the loss was non-finite in {self.failures} consecutive "
            f"attempts from step {step} (stage {stage}, {info.stages[stage].optimizer!r}), "
            f"even with the learning rate scaled down to {old:g}. Non-finite terms: "
            f"{bad or 'none'} (then the gradients or parameters were). Lower the learning "
            "rate, add gradient clipping (Adam(clip=1.0)), or check the problem scaling.",
            step=step, stage=stage, failures=info.rollbacks,
            params=info.physical(event.state["params"]), history=info.rows,
        ), row=row)


class StallStop(Observer):
    """Ends an L-BFGS stage once it has converged, stalled or hit a non-finite line search
    (the chunk program's ``status``), recording an ``lbfgs_stop`` row."""

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind != "chunk":
            return
        status, end = int(event.report["status"]), event.info.ends[event.stage]
        if status == RUNNING or event.step >= end:
            return
        name = type(event.info.stages[event.stage].optimizer).__name__
        message = (
            f"{name} stopped at step {int(event.report['status_step'])}: "
            f"{STATUS_NAMES[status]} (gradient norm {as_float(event.report['grad_norm']):.3e}); "
            f"skipping to the next stage at step {end}"
        )
        if status == NONFINITE:
            warn(message, RuntimeWarning)
        event.end_stage("lbfgs_stop", message)


class StopWhenDone(Observer):
    """Ends a stage once it is done (:class:`pinn.train.spec.Stop`): converged (the loss
    at ``residual**2`` of the run's first loss), or, the last stage only, on a plateau; a
    row ``{event: "converged" | "plateau", message}`` records it, and the stage's report
    says so."""

    def __init__(self, stop: Any, time_limit: float | None = None) -> None:
        self.stop, self.every, self.time_limit = stop, stop.every, time_limit
        self.first: float | None = None
        self.seen: list[tuple[int, float]] = []

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind == "stage_start":
            self.seen = []
        if event.report is None or event.kind not in ("stage_start", "chunk"):
            return
        loss = as_float(event.report["loss"])
        if loss is None or not math.isfinite(loss):
            return
        if self.first is None:
            self.first = loss if event.info.start_step == 0 else _first_loss(event.info)
        self.seen.append((event.step, loss))
        info, i = event.info, event.stage
        if event.kind != "chunk" or event.step > info.ends[i]:
            return
        if (info.stages[i].precision == "mixed" and i not in info.escalated
                and event.step < info.planned_end(i)):
            return  # float32 at first: its floor is met by the switch to float64; a stage
            # that never met it is judged at its planned end (extended if still improving)
        why = self._done(info, i, event.step, loss)
        extended = info.ends[i] > info.planned_end(i)
        if why is not None and (event.step < info.ends[i] or extended):
            event.end_stage(*why)  # at an extension's end: it ended because it was done
        elif why is None and event.step == info.ends[i]:
            self._extend(event)

    def _extend(self, event: ChunkEvent) -> None:
        """Under a time limit, the last stage that has run its steps and is not done goes on
        for one more plateau window, if the time left allows a part of it."""
        info, i = event.info, event.stage
        if self.time_limit is None or i != len(info.stages) - 1:
            return
        left = self.time_limit - info.elapsed()
        window = self.stop.window(info.stages[i].steps)
        per_step = _seconds_per_step(info, i)
        if per_step is None or left < min(window, self.stop.every) * per_step:
            return  # not even a check's worth of steps left
        event.extend(window)

    def _done(self, info: RunInfo, i: int, step: int, loss: float) -> tuple[str, str] | None:
        stop, name = self.stop, type(info.stages[i].optimizer).__name__
        if (stop.residual is not None and self.first
                and loss <= stop.residual ** 2 * self.first):
            return "converged", (f"{name} converged at step {step}: the loss {loss:.3e} is "
                                 f"{stop.residual:g}^2 of the first ({self.first:.3e})")
        window = stop.window(info.stages[i].steps)
        if (stop.improvement is None or i < len(info.stages) - 1
                or step - info.starts[i] < window):
            return None  # an earlier stage is not judged on a plateau: see Stop
        before = [v for s, v in self.seen if s <= step - window]
        recent = [v for s, v in self.seen if s > step - window]
        if before and recent and min(recent) > (1 - stop.improvement) * min(before):
            return "plateau", (f"{name} on a plateau at step {step}: the lowest loss of the "
                               f"last {window} steps, {min(recent):.3e}, is not "
                               f"{stop.improvement:.0%} below the lowest before, "
                               f"{min(before):.3e}")
        return None


def _seconds_per_step(info: RunInfo, stage: int) -> float | None:
    """Wall seconds per step of ``stage`` now: the median of its last three chunks' rates
    (``None``: no chunk of it yet)."""
    rates = [r["steps_per_s"] for r in info.rows
             if r.get("stage") == stage and r.get("steps_per_s")][-3:]
    return None if not rates else 1.0 / sorted(rates)[len(rates) // 2]


class TimeLimit(Observer):
    """Ends the run at ``seconds`` of wall time (:attr:`pinn.train.Training.time_limit`;
    compilation included, summed over resumes), and each stage but the last at its share
    of them (the share of the steps planned up to its end); the stage's report says
    ``time_limit``. :class:`StopWhenDone` extends a last stage that is still improving
    while time is left."""

    every = 100  # chunks end at least this often, so that the limit is kept to a chunk

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind != "chunk":
            return
        info, i, t = event.info, event.stage, event.info.elapsed()
        last = i == len(info.stages) - 1
        total = info.planned_end(len(info.stages) - 1)
        if t >= self.seconds and (event.step < info.ends[i] or not last):
            event.end_run("time_limit", f"the time limit of {self.seconds:g} s was reached at "
                          f"step {event.step} ({t:.0f} s); the run ends here")
        elif not last and event.step < info.ends[i] and total > 0:
            share = self.seconds * info.planned_end(i) / total
            if t >= share:
                name = type(info.stages[i].optimizer).__name__
                event.end_stage("time_limit", f"{name} ended at step {event.step}: its share "
                                f"of the time limit ({share:.0f} of {self.seconds:g} s) is spent")


def _first_loss(info: RunInfo) -> float | None:
    """The run's first loss, from the history (a resumed run)."""
    for row in info.rows:
        v = row.get("loss")
        if v is not None:
            return float(v)
    return None


class Signals(Observer):
    """SIGINT/SIGTERM (main thread only) stop the run at the next chunk boundary, after a
    checkpoint, with :class:`Interrupted`; a second signal stops at once."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.received is not None:  # second signal: stop now
            raise KeyboardInterrupt
        self.received = signum

    def init(self, info: RunInfo) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handler)

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind != "boundary":
            return
        from pinn.distributed import largest

        received = largest(self.received or 0)  # many processes: all stop at the same chunk
        if received:
            event.stop(signal.Signals(received).name)

    def close(self, result: TrainResult) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}


class Callback(Observer):
    """``fn(row)`` with each chunk's history row and each roll-back event.

    ``fn`` may stop the run: a true return value (``True``, or a string saying why) ends
    it at this chunk's boundary, recorded as an ``early_stop`` row and stage report (see
    :mod:`pinn.train.callbacks`). It may also add entries to a chunk's row (custom
    metrics): they reach ``TrainResult.history`` (and the run folder's history when the
    run is saved). Any other return value (``None``) goes on.
    """

    def __init__(self, fn: Callable[[dict], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"Callback: fn must be a function row -> None | bool | str, got "
                            f"{fn!r}.")
        self.fn = fn

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind in ("chunk", "rollback"):
            verdict = self.fn(event.row)
            if event.kind == "chunk" and verdict is not None and bool(verdict):
                from .callbacks import record_stop

                name = getattr(self.fn, "__name__", "callback")
                reason = (verdict if isinstance(verdict, str) else
                          f"stopped at step {event.step} by {name}")
                record_stop(event, reason, name)
