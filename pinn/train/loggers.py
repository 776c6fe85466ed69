"""Loggers: training scalars to TensorBoard event files (:class:`TensorBoard`) and to an
MLflow tracking store (:class:`MLflow`).

Written at chunk boundaries through ``tensorboardX`` (the optional extra
``pip install 'pinn[tensorboard]'``; view with ``tensorboard --logdir runs/``) or
``mlflow`` (``pip install 'pinn[mlflow]'``; view with ``mlflow ui``). The history CSV /
JSONL of every run folder is written always.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

from .observers import ChunkEvent, Observer, RunInfo
from .result import TrainResult

__all__ = ["TensorBoard", "MLflow", "scalar_tags"]

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


class MLflow(Observer):
    """An MLflow run: the scalars of every chunk's history row (:func:`scalar_tags`, the
    same names as :class:`TensorBoard`'s) as metrics against the step, the stages and the
    optimisers as parameters, the run's messages (stage stops, roll-backs) as tags.

    ``tracking_uri``: where the runs go (default: ``$MLFLOW_TRACKING_URI`` when set, else
    MLflow's own default); a ``file:`` URI is a folder store (``pinn solve --log mlflow``
    uses ``RUN/mlruns``; view with ``mlflow ui --backend-store-uri RUN/mlruns``);
    ``experiment``: the experiment's name (default: MLflow's default experiment);
    ``run_name``: the MLflow run's name.
    """

    def __init__(self, tracking_uri: str | None = None, *, experiment: str | None = None,
                 run_name: str | None = None) -> None:
        if importlib.util.find_spec("mlflow") is None:
            raise ImportError("MLflow logging needs mlflow: pip install 'pinn[mlflow]' (or pip "
                              "install mlflow-skinny).")
        self.tracking_uri, self.experiment, self.run_name = tracking_uri, experiment, run_name
        self._client = self._run_id = None
        self._messages = 0

    def init(self, info: RunInfo) -> None:
        import os

        from mlflow.tracking import MlflowClient

        if (self.tracking_uri or "").startswith("file:"):
            # a folder store (no database needed; MLflow 3 asks for this opt-in)
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        client = MlflowClient(tracking_uri=self.tracking_uri)
        exp_id = "0"
        if self.experiment is not None:
            exp = client.get_experiment_by_name(self.experiment)
            exp_id = exp.experiment_id if exp else client.create_experiment(self.experiment)
        run = client.create_run(exp_id, run_name=self.run_name)
        self._client, self._run_id = client, run.info.run_id
        for i, stage in enumerate(info.stages):
            client.log_param(self._run_id, f"stage{i}", f"{stage.optimizer!r} x {stage.steps}")

    def on_chunk(self, event: ChunkEvent) -> None:
        if self._client is None or event.row is None:
            return
        if event.kind in ("chunk", "stage_start"):
            from mlflow.entities import Metric

            now = int(1000 * time.time())
            metrics = [Metric(tag, value, now, int(event.step))
                       for tag, value in scalar_tags(event.row).items()]
            if metrics:
                self._client.log_batch(self._run_id, metrics=metrics)
        message = event.row.get("message")
        if message:
            self._messages += 1
            self._client.set_tag(self._run_id, f"event.{self._messages}",
                                 f"step {event.step}: {message}"[:5000])

    def close(self, result: TrainResult) -> None:
        if self._client is not None:
            self._client.set_terminated(self._run_id)
            self._client = None
