"""Stopping rules at chunk boundaries: :class:`EarlyStopping` (a target error, patience).

An observer ends the run with ``event.stop()`` (:mod:`pinn.train.observers`); the rules
here also say why: the chunk's history row gets ``event = "early_stop"`` and a
``message``, and the stopped stage's report (``TrainResult.stages``, a run's
``metrics["stages"]``) gets ``status = "early_stop"``, ``stopped_at`` and ``reason``.
"""

from __future__ import annotations

import math

from .history import float_or_none
from .observers import ChunkEvent, Observer, RunInfo
from .result import TrainResult, warn

__all__ = ["EarlyStopping", "record_stop", "monitored"]


def monitored(row: dict, monitor: str) -> float | None:
    """The value ``monitor`` names in a history row, or ``None`` when the row lacks it.

    ``"error"``: the largest relative L2 error of the fields (``eval.rel_l2_<field>``, the
    run's evaluation against the truth); ``"loss"``: the weighted loss; any other string: a
    row key (``"loss.heat"``, ``"eval.rel_l2_u"``, ``"aux.flux"``)."""
    if monitor == "error":
        vals = [v for k, v in row.items() if k.startswith("eval.rel_l2_")
                and isinstance(v, (int, float))]
        return max(vals) if vals else None
    v = row.get(monitor)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def record_stop(event: ChunkEvent, reason: str, by: str) -> None:
    """Stop the run at ``event`` and record ``reason`` in its row and stage report."""
    if event.row is not None:
        event.row.update(event="early_stop", message=reason, stopped_by=by)
    event.stop()
    info, stage = event.info, event.stage
    if len(info.stage_reports) <= stage:  # the loop reports a stage only when it finishes
        report = (event.report or {}).get("grad_norm")
        info.stage_reports.append({
            "stage": stage,
            "optimizer": repr(info.stages[stage].optimizer),
            "start": info.starts[stage],
            "end": info.ends[stage],
            "status": "early_stop",
            "stopped_at": event.step,
            "grad_norm": None if report is None else float_or_none(report),
            "reason": reason,
        })


class EarlyStopping(Observer):
    """End the run once the error reaches ``target_error``, or once it has not improved
    for ``patience`` checks.

    Args:
        target_error: stop when the monitored value is at most this.
        patience: stop after this many checks in a row without an improvement larger than
            ``min_delta`` (absolute) over the best value so far.
        monitor: ``"error"`` (default: the largest relative L2 error over the fields,
            which needs the run's evaluation: a problem with an exact solution or a
            reference, checked at every ``eval_every`` steps), ``"loss"``, or a history
            key (``"loss.heat"``, ``"eval.rel_l2_u"``).
        min_delta: the improvement that resets the patience.

    ``reason`` and ``stopped_at`` say what happened (``None`` if it never stopped).
    Checks happen at the chunks whose row has the value: with ``monitor="error"``, the
    evaluation steps (``Training(eval_every=...)``, ``run(eval_every=...)``).
    """

    def __init__(self, target_error: float | None = None, *, patience: int | None = None,
                 monitor: str = "error", min_delta: float = 0.0) -> None:
        if target_error is None and patience is None:
            raise ValueError("EarlyStopping: give target_error=..., patience=... or both "
                             "(with neither it would never stop).")
        if target_error is not None and not (
                isinstance(target_error, (int, float)) and target_error >= 0):
            raise ValueError(f"EarlyStopping: target_error must be a number >= 0, got "
                             f"{target_error!r}.")
        if patience is not None and (isinstance(patience, bool) or not isinstance(
                patience, int) or patience < 1):
            raise ValueError(f"EarlyStopping: patience must be an integer >= 1 (checks), got "
                             f"{patience!r}.")
        if not isinstance(monitor, str) or not monitor:
            raise ValueError(f"EarlyStopping: monitor must be 'error', 'loss' or a history "
                             f"key, got {monitor!r}.")
        self.target_error, self.patience, self.monitor = target_error, patience, monitor
        self.min_delta = float(min_delta)
        self.best = math.inf
        self.bad_checks = self.checks = 0
        self.reason: str | None = None
        self.stopped_at: int | None = None

    def init(self, info: RunInfo) -> None:
        self.best, self.bad_checks, self.checks = math.inf, 0, 0
        self.reason = self.stopped_at = None

    def on_chunk(self, event: ChunkEvent) -> None:
        if event.kind != "chunk" or self.reason is not None:
            return
        value = monitored(event.row, self.monitor)
        if value is None or not math.isfinite(value):
            return
        self.checks += 1
        what = "the error" if self.monitor == "error" else self.monitor
        if self.target_error is not None and value <= self.target_error:
            self._stop(event, f"early stop at step {event.step}: {what} {value:.3e} reached "
                              f"the target {self.target_error:.3e}")
            return
        if value < self.best - self.min_delta:
            self.best, self.bad_checks = value, 0
            return
        self.bad_checks += 1
        if self.patience is not None and self.bad_checks >= self.patience:
            self._stop(event, f"early stop at step {event.step}: {what} has not improved on "
                              f"{self.best:.3e} for {self.bad_checks} checks (patience "
                              f"{self.patience})")

    def _stop(self, event: ChunkEvent, reason: str) -> None:
        self.reason, self.stopped_at = reason, event.step
        record_stop(event, reason, "EarlyStopping")

    def close(self, result: TrainResult) -> None:
        if self.checks == 0 and result.step > 0:
            hint = (" The run has no evaluation (a problem with an exact solution or a "
                    "reference gives one; set eval_every for checks during training), or "
                    "monitor='loss'." if self.monitor == "error" else "")
            warn(f"EarlyStopping: no history row had {self.monitor!r}, so it never checked."
                 + hint)

    def __repr__(self) -> str:
        return (f"EarlyStopping(target_error={self.target_error!r}, patience={self.patience!r}, "
                f"monitor={self.monitor!r})")
