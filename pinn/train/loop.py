"""The training loop: stages of optimisers, many steps per jitted call, and observers.

``run`` keeps one pure training state (a dict pytree, :mod:`pinn.train.core`) and advances
it with one jitted call per chunk of steps; a stage compiles once. The host only sees chunk
boundaries, where a small stage machine (:class:`_Loop`) tells the observers
(:mod:`pinn.train.observers`) what happened: history, progress, evaluation, checkpoints,
the NaN guard, the L-BFGS stall stop, signals and callbacks are all observers, and
``run(..., observers=[...])`` adds more without touching the loop.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from . import observers as _obs
from .checkpoint import CheckpointError, intact_checkpoint, load_checkpoint, read_header
from .core import Core
from .history import as_float, float_or_none, history_row
from .result import Interrupted, TrainingDiverged, TrainResult, warn
from .spec import Training
from .steps import RUNNING, STALLED, STATUS_NAMES
from .weighting import Fixed, Weighting

__all__ = ["run", "TrainResult", "TrainingDiverged", "Interrupted"]

log = logging.getLogger(__name__)

#: Steps per chunk at most while a "mixed" stage runs in float32 (its stall is seen at the
#: chunk's end, and the steps skipped since are not run in float64).
MIXED_CHUNK = 50


class _Loop:
    """The stage machine of one run: chunks, stage changes and the observers' requests."""

    def __init__(self, core: Core, observers: Sequence[Any], chunk: int) -> None:
        self.core, self.observers, self.chunk = core, list(observers), chunk
        self.cuts = [o.every for o in self.observers if getattr(o, "every", None)]
        self.info = _obs.RunInfo(core.stages, core.starts, core.ends, core.names,
                                 core.pde_scale.physical, escalated=core.escalated)
        self.state: Any = None
        self.step = self.stage = 0
        self.last_report: dict | None = None
        self.stop: _obs.ChunkEvent | None = None
        self.ended: dict[int, tuple[str, int]] = {}  # stage -> (why, step) ended early

    def train(self, params: Any, key: jax.Array, resume_from: Path | None) -> TrainResult:
        if resume_from is not None:
            self._resume(params, key, resume_from)
        else:
            self.state = self.core.fresh_state(params, key)
        # the later stages compile in the background while this one compiles and trains
        self.core.compile_ahead(params, key, self.stage)
        started = []
        try:
            for obs in self.observers:
                obs.init(self.info)
                started.append(obs)
            self.info.t_start = time.perf_counter()
            if resume_from is None:
                self._start_stage()
            self._stages()
            self._emit("end")
        except BaseException:
            _close(started, self._result(), failing=True)
            raise
        result = self._result()
        _close(started, result)
        name = self.stop.stop_signal if self.stop is not None else None
        if name is None:
            return result
        path = result.checkpoint
        raise Interrupted(
            f"training interrupted by {name} at step {self.step}"
            + (f"; checkpoint saved to {path}" if path else "")
            + ". Resume with resume=True.",
            step=self.step, signal_name=name, checkpoint=path, result=result,
        )

    def _resume(self, params: Any, key: jax.Array, path: Path) -> None:
        core, meta = self.core, read_header(path)["meta"]
        stage = int(meta["stage"])
        opt_names = [type(s.optimizer).__name__ for s in core.stages]
        if (
            stage >= len(core.stages)
            or core.starts[stage] != meta["stage_start"]
            or opt_names[: stage + 1] != meta["optimizers"][: stage + 1]
            or meta["names"] != core.names
        ):
            raise CheckpointError(
                f"checkpoint {str(path)!r} was written by a run with stages "
                f"{meta['optimizers']} (stage {meta['stage']} starting at step "
                f"{meta['stage_start']}) and terms {meta['names']}; this run has stages "
                f"{opt_names} starting at {core.starts} and terms {core.names}. Resume with the "
                "same stages (later stages may change) or start without resume."
            )
        # "mixed" stages already in float64
        core.escalated.update({int(k): int(v) for k, v in meta.get("escalated", {}).items()})
        state, _ = load_checkpoint(path, core.template(params, key, stage))
        self.state = core.place(state)
        self.step, self.stage = int(meta["step"]), stage
        if self.step > core.ends[stage]:  # a last stage extended under a time limit
            core.ends[stage] = self.step
        info = self.info
        info.start_step, info.resumed_from, info.resume_meta = self.step, path, meta
        info.checkpoint, info.elapsed_before = path, float(meta["elapsed"])
        info.stage_reports.extend(meta["stage_reports"])
        info.rollbacks.extend(meta["rollbacks"])
        log.info("resuming from %s at step %d (stage %d)", path, self.step, stage)

    def _emit(self, kind: str, **fields: Any) -> _obs.ChunkEvent:
        event = _obs.ChunkEvent(kind, self.step, self.stage, self.state, self.info, **fields)
        for obs in self.observers:
            obs.on_chunk(event)
        if event.row is not None:
            self.info.rows.append(event.row)
        if event.stopped and self.stop is None:
            self.stop = event
        return event

    def _stages(self) -> None:
        core = self.core
        while self.stop is None:
            if self.step < core.ends[self.stage]:
                self._chunk()
                continue
            self._finish_stage()
            if self.stage == len(core.stages) - 1:
                return
            self.stage += 1
            self.state = core.enter_stage(self.state, self.stage)
            self._start_stage()

    def _start_stage(self) -> None:
        _, report = self.core.call(self.stage, self.state, 0)
        self.last_report = report
        self._emit("stage_start", report=report, row=self._row(report, "stage_start", None))
        if self.step == 0 and not bool(report["finite"]):
            bad_terms = {n: as_float(v) for n, v in report["terms"].items()}
            raise TrainingDiverged(
                f"the loss is non-finite at the initial parameters (terms: {bad_terms}); "
                "no step was taken. Check the problem (division by zero, log or sqrt of a "
                "negative value at some points) and the initial parameters.",
                step=0, stage=0, failures=[], params=self.info.physical(self.state["params"]),
                history=self.info.rows,
            )

    def _finish_stage(self) -> None:
        i, state, reports = self.stage, self.state, self.info.stage_reports
        if len(reports) > i:
            return
        if self.last_report is None:
            _, self.last_report = self.core.call(i, state, 0)
        status = int(np.asarray(state["status"]))
        stopped_at = int(np.asarray(state["status_step"])) if status else self.core.ends[i]
        name = STATUS_NAMES[status]
        if status == RUNNING and i in self.ended:  # ended by an observer (done, or asked)
            name, stopped_at = self.ended[i]
        reports.append({
            "stage": i,
            "optimizer": repr(self.core.stages[i].optimizer),
            "start": self.core.starts[i],
            "end": self.core.ends[i],
            "status": name,
            "stopped_at": stopped_at,
            "grad_norm": float_or_none(self.last_report["grad_norm"]),
            **({"float64_from": self.info.escalated[i]} if i in self.info.escalated else {}),
            **({"extended_by": self.core.ends[i] - self.info.planned_end(i)}
               if self.core.ends[i] > self.info.planned_end(i) else {}),
        })

    def _end_run(self, why: str) -> None:
        """The run ends at this step (a time limit): the stages after this one not run."""
        core, reports = self.core, self.info.stage_reports
        self._finish_stage()
        for j in range(self.stage + 1, len(core.stages)):
            reports.append({"stage": j, "optimizer": repr(core.stages[j].optimizer),
                            "start": core.starts[j], "end": core.ends[j],
                            "status": f"not run ({why})", "stopped_at": core.starts[j],
                            "grad_norm": None})

    def _chunk(self) -> None:
        core, end = self.core, self.core.ends[self.stage]
        stop = min(self.step + self.chunk, end)
        if core.can_escalate(self.stage):
            # a float32 stall skips the rest of its chunk: short chunks waste few steps
            stop = min(stop, self.step + MIXED_CHUNK)
        for every in self.cuts:
            stop = min(stop, (self.step // every + 1) * every)
        t0 = time.perf_counter()
        new_state, report = core.call(self.stage, self.state, stop - self.step)
        rate = (stop - self.step) / max(time.perf_counter() - t0, 1e-9)
        if not bool(report["finite"]):
            self._nonfinite(report, stop)
            return
        self.state, self.step, self.last_report = new_state, stop, report
        escalate = (int(report["status"]) == STALLED and self.step < end
                    and core.can_escalate(self.stage))
        if escalate:  # a "mixed" stage at float32's floor goes on in float64
            report = {**report, "status": np.int32(RUNNING)}
        event = self._emit("chunk", report=report, row=self._row(report, None, rate))
        if escalate:
            self._escalate(int(new_state["status_step"]))
        if event.extra_steps and self.step >= end:  # the last stage goes on
            core.ends[self.stage] = self.step + event.extra_steps  # info.ends is this list
            name = type(core.stages[self.stage].optimizer).__name__
            message = (f"{name} still improving at step {self.step}: going on for "
                       f"{event.extra_steps} more steps (the time limit allows them)")
            self._emit("extend", report=report,
                       row={**event.row, "event": "extended", "message": message})
        if event.run_end:
            name, message = event.stage_end
            self.ended[self.stage] = (name, self.step)
            self._emit("stage_stop", report=report,
                       row={**event.row, "event": name, "message": message})
            self._end_run(name)
            self.stop = event  # no signal: the run returns as finished
            self._emit("boundary", report=report)
            return
        if event.stage_end is not None and self.step <= end:
            name, message = event.stage_end
            self.ended[self.stage] = (name, self.step)
            if self.step < end:
                self.step, self.state = end, core.skip_to(self.state, end)
            self._emit("stage_stop", report=report,
                       row={**event.row, "event": name, "message": message})
        self._emit("boundary", report=report)

    def _escalate(self, at: int) -> None:
        """Convert the state of a ``"mixed"`` stage to float64 (:meth:`Core.escalate`) after
        its float32 line search stalled at step ``at`` (the steps the chunk skipped since
        then are not made up: :data:`MIXED_CHUNK` bounds them)."""
        core, i = self.core, self.stage
        self.state = core.escalate(self.state, i, at)
        name = type(core.stages[i].optimizer).__name__
        message = (f"{name} stalled in float32 at step {at} (the loss at float32's rounding "
                   f"floor): continuing in float64 from step {self.step}")
        log.info(message)
        self._emit("escalate", row={**self.info.rows[-1], "event": "float64",
                                    "message": message})

    def _nonfinite(self, report: dict, until: int) -> None:
        event = self._emit("nonfinite", report=report, until=until)
        if event.rollback_row is not None:
            self.info.rollbacks.append(event.rollback_row)
            self._emit("rollback", report=report, row=event.rollback_row, until=until)
        if event.error is not None:
            raise event.error
        if event.lr_factor is None:
            raise TrainingDiverged(
                f"the loss was non-finite in steps {self.step}..{until} and no observer rolled "
                "back; add pinn.train.NanGuard() to the observers to retry with a lower "
                "learning rate.",
                step=self.step, stage=self.stage, failures=self.info.rollbacks,
                params=self.info.physical(self.state["params"]), history=self.info.rows,
            )
        self.state = self.core.roll_back(self.state, self.stage, event.lr_factor)

    def _row(self, report: dict, event: str | None, rate: float | None) -> dict:
        return history_row(self.info, self.step, self.stage, report, event, rate)

    def _result(self) -> TrainResult:
        state, info, report = self.state, self.info, self.last_report
        weights = jax.device_get(state["weights"]["weights"])
        return TrainResult(
            params=info.physical(state["params"]),
            history=info.rows,
            step=self.step,
            stages=list(info.stage_reports),
            rollbacks=list(info.rollbacks),
            weights={n: as_float(v) for n, v in weights.items()},
            wall_time=info.elapsed(),
            compile_seconds=self.core.compile_seconds,
            train_seconds=time.perf_counter() - info.t_start - self.core.compile_seconds,
            final_terms={} if report is None else {
                n: as_float(v) for n, v in report["terms"].items()},
            checkpoint=info.checkpoint,
            state=state,
        )


def _close(observers: Sequence[Any], result: TrainResult, failing: bool = False) -> None:
    """``close(result)`` on every observer, even when one raises: the first error is raised,
    or, while the run is already ``failing``, only warned about (the run's error wins)."""
    errors = []
    for obs in observers:
        try:
            obs.close(result)
        except Exception as err:  # noqa: PERF203 - each observer must get its close
            errors.append(err)
    if errors and failing:
        warn(f"run: an observer failed to close after the run failed: {errors[0]!r}",
             RuntimeWarning)
    elif errors:
        raise errors[0]


class _Cut(_obs.Observer):
    """Only cuts chunks at multiples of ``every`` (``eval_every`` without ``evaluate``)."""

    def __init__(self, every: int) -> None:
        self.every = every


def _observers(
    *, handle_signals: bool, max_retries: int, rollback_factor: float, evaluate: Any,
    eval_every: int | None, out_dir: Any, history_csv: bool, progress: bool, on_chunk: Any,
    checkpoint_dir: Any, checkpoint_every: int | None, keep_checkpoints: int | None,
    stop: Any = None, time_limit: float | None = None, keep_best: Any = None,
) -> list[_obs.Observer]:
    """The observers ``run``'s keyword arguments ask for, in the order they must run."""
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"run: max_retries must be an integer >= 0, got {max_retries!r}.")
    if not 0 < rollback_factor < 1:
        raise ValueError(f"run: rollback_factor must lie in (0, 1), got {rollback_factor!r}.")
    chosen: list[_obs.Observer] = [_obs.Signals()] if handle_signals else []
    chosen += [_obs.NanGuard(max_retries, rollback_factor), _obs.StallStop()]
    if stop is not None:
        chosen.append(_obs.StopWhenDone(stop, time_limit))
    if time_limit is not None:
        chosen.append(_obs.TimeLimit(time_limit))
    if evaluate is not None:
        chosen.append(_obs.Evaluation(evaluate, eval_every))
    elif eval_every is not None:
        chosen.append(_Cut(eval_every))
    if keep_best is not None:
        chosen.append(keep_best)
    if checkpoint_dir is not None:
        chosen.append(
            _obs.Checkpoints(checkpoint_dir, every=checkpoint_every, keep=keep_checkpoints)
        )
    if out_dir is not None:
        chosen.append(_obs.History(out_dir, csv=history_csv))
    if progress:
        chosen.append(_obs.Progress())
    if on_chunk is not None:
        chosen.append(_obs.Callback(on_chunk))
    return chosen


def _checked(training: Any, weighting: Any, observers: Any) -> Weighting:
    """The run's weighting (``training``'s unless given), the arguments checked."""
    if not isinstance(training, Training):
        raise TypeError(f"run: training must be a pinn.Training(stages=[...], ...), got "
                        f"{training!r}.")
    weighting = weighting if weighting is not None else (training.weighting or Fixed())
    if not isinstance(weighting, Weighting):
        raise TypeError("run: weighting must be a pinn.train.Weighting such as Fixed(), "
                        f"GradNorm() or Causal(), got {weighting!r}.")
    for obs in observers or ():
        if not isinstance(obs, _obs.Observer):
            raise TypeError("run: each observer must be a pinn.train.Observer (init(info), "
                            f"on_chunk(event), close(result)), got {obs!r}.")
    return weighting


def _resume_point(checkpoint_dir: Any) -> Path | None:
    """The newest intact checkpoint; a damaged newer one is skipped with a warning."""
    path, skipped = intact_checkpoint(checkpoint_dir)
    for bad, why in skipped:
        warn(f"resume: skipped {bad.name}: {why.rstrip('. ')}; resuming from "
             + (str(path) if path is not None else "the start (no intact checkpoint left)"),
             RuntimeWarning)
    if path is None and not skipped:
        log.info("resume: no checkpoint in %s; starting a fresh run", checkpoint_dir)
    return path


def run(
    terms_fn: Callable[[Any, Any], Any],
    params: Any,
    training: Training,
    *,
    sample_fn: Callable[[Any, Any], Any],
    key: jax.Array,
    weighting: Weighting | None = None,
    out_dir: str | os.PathLike | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    keep_checkpoints: int | None = 3,
    resume: bool = False,
    evaluate: Callable[[Any], Mapping[str, Any]] | None = None,
    on_chunk: Callable[[dict], None] | None = None,
    progress: bool = True,
    history_csv: bool = False,
    max_retries: int = 5,
    rollback_factor: float = 0.5,
    handle_signals: bool = True,
    observers: Sequence[Any] | None = None,
    keep_best: _obs.KeepBest | None = None,
) -> TrainResult:
    """Train ``params`` to minimise the weighted sum of the terms of ``terms_fn`` as
    ``training`` says (:class:`~pinn.train.spec.Training`: its stages, its points'
    ``resample_every``, ``chunk``, ``eval_every``, ``checkpoint_every``, ``devices`` and
    ``micro_batch``; its ``weighting`` unless ``weighting`` is given).

    Args:
        terms_fn: ``terms_fn(params, batch) -> {name: scalar}`` (mean squared residual per
            named term), or ``-> (terms, aux)`` where ``aux`` is a dict of scalars that is
            logged (``aux.<name>``) but not minimised. Pure and traceable.
        params: initial parameters, a pytree; ``params["pde"]`` (learnable PDE parameters)
            trains with the network and is logged (``param.<name>``).
        training: the stages (parameters carry over from one to the next) and the loop's
            cadences.
        sample_fn: ``sample_fn(key, params) -> batch`` (a pytree), traceable; called on
            device every ``resample_every`` steps of a first-order stage and at the start of
            every stage after the first (with RAD: where the residual is large now).
        key: PRNG key for sampling.
        weighting: the weighting (default: ``training.weighting``, else :class:`Fixed`).
        out_dir: run folder: ``history.jsonl`` (and ``history.csv`` if ``history_csv``) and,
            unless ``checkpoint_dir`` is given, ``checkpoints/``.
        checkpoint_dir: folder for checkpoints (every ``training.checkpoint_every`` steps,
            at the end, and on SIGINT/SIGTERM); ``keep_checkpoints``: the newest kept
            (``None``: all).
        resume: continue from the newest checkpoint (bit for bit as if never stopped);
            starts fresh if there is none.
        evaluate: ``evaluate(params) -> {name: number}`` (errors against the truth), every
            ``training.eval_every`` steps and at the end; logged as ``eval.<name>``.
        on_chunk: called with each chunk's history row and each roll-back event;
            ``progress``: show progress (a bar on a terminal, lines otherwise).
        max_retries, rollback_factor: consecutive roll-backs allowed before
            :class:`TrainingDiverged`, and the learning-rate factor of each.
        handle_signals: catch SIGINT/SIGTERM (main thread only) and stop cleanly with
            :class:`Interrupted` after the current chunk.
        observers: more observers (:mod:`pinn.train.observers`), after the ones the
            arguments above make.
        keep_best: a :class:`~pinn.train.observers.KeepBest`: the run returns the parameters
            it chose (``result.kept``), not the last ones (those the checkpoints hold).

    Raises:
        TrainingDiverged: the loss stayed non-finite after ``max_retries`` roll-backs.
        Interrupted: on SIGINT/SIGTERM, after saving a checkpoint.
    """
    weighting = _checked(training, weighting, observers)
    checkpoint_dir = _checkpoint_dir(out_dir, checkpoint_dir, resume)
    chosen = _observers(
        handle_signals=handle_signals, max_retries=max_retries, rollback_factor=rollback_factor,
        evaluate=evaluate, eval_every=training.eval_every, out_dir=out_dir,
        history_csv=history_csv, progress=progress, on_chunk=on_chunk,
        checkpoint_dir=checkpoint_dir, checkpoint_every=training.checkpoint_every,
        keep_checkpoints=keep_checkpoints, stop=training.stop, time_limit=training.time_limit,
        keep_best=keep_best)
    core, params = Core.build(terms_fn, params, training, sample_fn=sample_fn, key=key,
                              weighting=weighting)
    result = _Loop(core, [*chosen, *(observers or ())], training.chunk).train(
        params, key, _resume_point(checkpoint_dir) if resume else None)
    if keep_best is not None:  # the parameters the held-out misfit chose
        keep_best.apply(result)
    return result


def _checkpoint_dir(out_dir: Any, checkpoint_dir: Any, resume: bool) -> Any:
    """The checkpoints' folder: ``checkpoint_dir``, else ``out_dir/checkpoints``."""
    if out_dir is not None and checkpoint_dir is None:
        checkpoint_dir = Path(out_dir) / "checkpoints"
    if resume and checkpoint_dir is None:
        raise ValueError("run: resume=True needs checkpoint_dir (or out_dir) to find checkpoints.")
    return checkpoint_dir
