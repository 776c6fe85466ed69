"""What a training run returns or raises: :class:`TrainResult`, :class:`TrainingDiverged`,
:class:`Interrupted` (re-exported by :mod:`pinn.train.loop` and :mod:`pinn.train`)."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TrainResult", "TrainingDiverged", "Interrupted", "warn"]


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first caller outside ``pinn.train`` (the user)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pinn.train"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class TrainingDiverged(RuntimeError):
    """The loss stayed non-finite after repeated roll-backs with lower learning rates.

    Attributes: ``step`` (where the last good state was), ``stage``, ``failures`` (the
    roll-back events), ``params`` (the last good parameters), ``history``.
    """

    def __init__(
        self,
        message: str,
        *,
        step: int,
        stage: int,
        failures: list[dict],
        params: Any,
        history: list[dict],
    ) -> None:
        super().__init__(message)
        self.step, self.stage, self.failures = step, stage, failures
        self.params, self.history = params, history


class Interrupted(KeyboardInterrupt):
    """Training stopped on SIGINT/SIGTERM after finishing a chunk and saving a checkpoint.

    A ``KeyboardInterrupt``, so ``except Exception`` does not swallow it; the CLI exits 130.
    Attributes: ``step``, ``signal`` (its name), ``checkpoint`` (path or ``None``),
    ``result`` (a :class:`TrainResult` of the run so far).
    """

    def __init__(
        self,
        message: str,
        *,
        step: int,
        signal_name: str,
        checkpoint: Path | None,
        result: TrainResult,
    ) -> None:
        super().__init__(message)
        self.step, self.signal, self.checkpoint, self.result = (
            step,
            signal_name,
            checkpoint,
            result,
        )


@dataclass
class TrainResult:
    """What :func:`run` returns.

    Attributes:
        params: the trained parameters (same structure as the input).
        history: rows (dicts), one per chunk plus event rows; see :mod:`pinn.train.history`.
        step: global steps done.
        stages: per stage: ``stage``, ``optimizer``, ``start``, ``end``, ``status``
            (``completed``, or for L-BFGS ``converged`` / ``stalled`` /
            ``nonfinite_linesearch``), ``stopped_at``, ``grad_norm``.
        rollbacks: the NaN roll-back events (also in ``history``).
        weights: final term weights.
        wall_time: seconds, summed over resumes.
        compile_seconds: seconds the run waited for compilation (this call only; a stage
            compiled in the background while an earlier one trained counts what was left).
        train_seconds: ``wall_time`` of this call minus ``compile_seconds``.
        final_terms: the unweighted loss terms at the end.
        checkpoint: the last checkpoint written, if any.
        kept: where the parameters are not the last ones but those a selection chose
            (:class:`~pinn.train.observers.KeepBest`: held-out data), what was kept:
            ``{name, step, value, last_step, last_value}``; else None.
        state: the full final training state (for experts).
    """

    params: Any
    history: list[dict]
    step: int
    stages: list[dict]
    rollbacks: list[dict] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    wall_time: float = 0.0
    compile_seconds: float = 0.0
    train_seconds: float = 0.0
    final_terms: dict[str, float] = field(default_factory=dict)
    checkpoint: Path | None = None
    state: Any = None
    kept: dict | None = None

    @property
    def stage_starts(self) -> list[int]:
        return [s["start"] for s in self.stages]
