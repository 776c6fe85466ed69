"""Loggers: training scalars to TensorBoard event files (:class:`TensorBoard`).

Written at chunk boundaries through ``tensorboardX`` (the optional extra
``pip install 'pinn[tensorboard]'``); view with ``tensorboard --logdir runs/``.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

from .observers import ChunkEvent, Observer, RunInfo
from .result import TrainResult

__all__ = ["TensorBoard", "scalar_tags"]

_GROUPS = {"loss.": "loss/", "weight.": "weight/", "eval.": "error/", "param.": "param/",
           "aux.": "aux/"}
_SINGLE = {"loss": "loss/total", "lr": "train/lr", "grad_norm": "train/grad_norm",
           "steps_per_s": "train/steps_per_s"}


def scalar_tags(row: dict) -> dict[str, float]:
    """``{tag: value}`` of a history row: ``loss/total``, ``loss/<term>``,
    ``weight/<term>``, ``error/<name>`` (``eval.<name>``), ``param/<name>``, ``aux/<name>``,
    ``train/lr``, ``train/grad_norm``, ``train/steps_per_s`` (finite numbers only)."""
    out = {}
    for k, v in row.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            continue
        tag = _SINGLE.get(k)
        if tag is None:
            prefix = next((p for p in _GROUPS if k.startswith(p)), None)
            if prefix is None:
                continue
            tag = _GROUPS[prefix] + k[len(prefix):]
        out[tag] = float(v)
    return out


class TensorBoard(Observer):
    """TensorBoard event files in ``logdir``: the scalars of every chunk's history row
    (:func:`scalar_tags`: loss per term, error, learning rate, ...) against the step, and
    the run's messages (stage stops, roll-backs, early stops) as text. A resumed run
    continues the same curves (steps after the checkpoint are purged)."""

    def __init__(self, logdir: str | Path, *, flush_secs: int = 10) -> None:
        if importlib.util.find_spec("tensorboardX") is None:
            raise ImportError(
                "TensorBoard logging needs tensorboardX: pip install 'pinn[tensorboard]' "
                "(or pip install tensorboardX)."
            )
        self.logdir, self.flush_secs = Path(logdir), flush_secs
        self._writer = None

    def init(self, info: RunInfo) -> None:
        from tensorboardX import SummaryWriter

        self.logdir.mkdir(parents=True, exist_ok=True)
        purge = info.start_step if info.resume_meta is not None else None
        self._writer = SummaryWriter(str(self.logdir), flush_secs=self.flush_secs,
                                     purge_step=purge)

    def on_chunk(self, event: ChunkEvent) -> None:
        w = self._writer
        if w is None or event.row is None:
            return
        if event.kind in ("chunk", "stage_start"):
            for tag, value in scalar_tags(event.row).items():
                w.add_scalar(tag, value, event.step)
        message = event.row.get("message")
        if message:
            w.add_text("events", str(message), event.step)

    def close(self, result: TrainResult) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
