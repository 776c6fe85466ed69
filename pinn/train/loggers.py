"""Loggers: training scalars to TensorBoard event files (:class:`TensorBoard`) and to an
MLflow tracking store (:class:`MLflow`).

Written at chunk boundaries with ``tensorboardX``'s protobufs (the optional extra
``pip install 'pinn[tensorboard]'``; view with ``tensorboard --logdir runs/``) or
``mlflow`` (``pip install 'pinn[mlflow]'``; view with ``mlflow ui``). The history CSV /
JSONL of every run folder is written always.

A write that fails (a full disk, no permission) is :class:`pinn.io.WriteError`, naming the
event file or the MLflow store, as every other file the package writes: the run stops
there (its last checkpoint is kept) and the command says how to continue.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import socket
import struct
import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

from pinn.io import WriteError, open_new

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
    continues the same curves (steps after the checkpoint are purged).

    Each run (and each resume) writes a new event file, in this process, as the chunks
    come, flushed every ``flush_secs`` seconds and at the end (``tensorboardX``'s
    ``SummaryWriter`` writes from a thread of its own, where a full disk was a traceback,
    then a hang once its queue filled); a write that fails is :class:`pinn.io.WriteError`
    naming the event file."""

    def __init__(self, logdir: str | Path, *, flush_secs: int = 10) -> None:
        if importlib.util.find_spec("tensorboardX") is None:
            raise ImportError(
                "TensorBoard logging needs tensorboardX: pip install 'pinn[tensorboard]' "
                "(or pip install tensorboardX)."
            )
        self.logdir, self.flush_secs = Path(logdir), flush_secs
        self.path: Path | None = None  # the event file of this run
        self._file = None
        self._flushed = 0.0

    def init(self, info: RunInfo) -> None:
        from tensorboardX.proto.event_pb2 import Event, SessionLog

        stamp = f"{int(time.time())}.{socket.gethostname()}.{uuid.uuid4().hex[:6]}"
        self.path = self.logdir / f"events.out.tfevents.{stamp}"
        self._file = open_new(self.path)
        events = [Event(wall_time=time.time(), file_version="brain.Event:2")]
        if info.resume_meta is not None:  # TensorBoard drops the steps from here on
            events.append(Event(wall_time=time.time(), step=info.start_step,
                                session_log=SessionLog(status=SessionLog.START)))
        self._write(events)
        self._flush()

    def on_chunk(self, event: ChunkEvent) -> None:
        if self._file is None or event.row is None:
            return
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.summary import scalar, text

        now, step = time.time(), int(event.step)
        events = []
        if event.kind in ("chunk", "stage_start"):
            events += [Event(wall_time=now, step=step, summary=scalar(tag, value))
                       for tag, value in scalar_tags(event.row).items()]
        message = event.row.get("message")
        if message:
            events.append(Event(wall_time=now, step=step,
                                summary=text("events", str(message))))
        self._write(events)
        if now - self._flushed >= self.flush_secs:
            self._flush()

    def close(self, result: TrainResult) -> None:
        if self._file is not None:
            self._flush()
            self._file.close()
            self._file = None

    def _write(self, events: list) -> None:
        """The TFRecord of each event: its length, the length's masked CRC-32C, the event,
        its masked CRC-32C."""
        from tensorboardX.record_writer import masked_crc32c

        records = []
        for ev in events:
            data = ev.SerializeToString()
            head = struct.pack("<Q", len(data))
            records += [head, struct.pack("<I", masked_crc32c(head)), data,
                        struct.pack("<I", masked_crc32c(data))]
        try:
            self._file.write(b"".join(records))
        except OSError as exc:
            self._failed(exc)

    def _flush(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            self._failed(exc)
        self._flushed = time.time()

    def _failed(self, exc: OSError):
        """Give up the event file (its records so far stay) and raise the WriteError."""
        fh, self._file = self._file, None
        with contextlib.suppress(OSError):  # (what is still buffered cannot be written)
            fh.close()
        raise WriteError(self.path, exc, "the scalars written before are kept") from exc


class MLflow(Observer):
    """An MLflow run: the scalars of every chunk's history row (:func:`scalar_tags`, the
    same names as :class:`TensorBoard`'s) as metrics against the step, the stages and the
    optimisers as parameters, the run's messages (stage stops, roll-backs) as tags.

    ``tracking_uri``: where the runs go (default: ``$MLFLOW_TRACKING_URI`` when set, else
    MLflow's own default); a ``file:`` URI is a folder store (``pinn solve --log mlflow``
    uses ``RUN/mlruns``; view with ``mlflow ui --backend-store-uri RUN/mlruns``);
    ``experiment``: the experiment's name (default: MLflow's default experiment);
    ``run_name``: the MLflow run's name. A store that cannot be written (a full disk, no
    permission: an ``OSError`` behind MLflow's own exception) is
    :class:`pinn.io.WriteError`, naming the file (or the store).
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
        from mlflow.tracking import MlflowClient

        if (self.tracking_uri or "").startswith("file:"):
            # a folder store (no database needed; MLflow 3 asks for this opt-in)
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        client = MlflowClient(tracking_uri=self.tracking_uri)
        exp_id = "0"
        if self.experiment is not None:
            exp = self._call(client.get_experiment_by_name, self.experiment)
            exp_id = exp.experiment_id if exp else self._call(client.create_experiment,
                                                              self.experiment)
        run = self._call(client.create_run, exp_id, run_name=self.run_name)
        self._client, self._run_id = client, run.info.run_id
        for i, stage in enumerate(info.stages):
            self._call(client.log_param, self._run_id, f"stage{i}",
                       f"{stage.optimizer!r} x {stage.steps}")

    def on_chunk(self, event: ChunkEvent) -> None:
        if self._client is None or event.row is None:
            return
        if event.kind in ("chunk", "stage_start"):
            from mlflow.entities import Metric

            now = int(1000 * time.time())
            metrics = [Metric(tag, value, now, int(event.step))
                       for tag, value in scalar_tags(event.row).items()]
            if metrics:
                self._call(self._client.log_batch, self._run_id, metrics=metrics)
        message = event.row.get("message")
        if message:
            self._messages += 1
            self._call(self._client.set_tag, self._run_id, f"event.{self._messages}",
                       f"step {event.step}: {message}"[:5000])

    def close(self, result: TrainResult) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            self._call(client.set_terminated, self._run_id)

    def _call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` of the MLflow client; a failure of the file system behind
        it (MLflow wraps the ``OSError`` in its own exception) is :class:`pinn.io.WriteError`
        naming the file, or the store where MLflow does not say which file."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            cause = _os_error(exc)
            if cause is None or isinstance(exc, WriteError):
                raise
            self._client = None  # the store is not written again (close: nothing to end)
            raise WriteError(cause.filename or self._store(), cause,
                             "the metrics logged before are kept") from exc

    def _store(self) -> str:
        """The tracking store: its folder for a ``file:`` URI, else the URI."""
        uri = self.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "mlruns"
        return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def _os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` that ``exc`` is, or that caused it (``raise ... from``, or raised while
    handling it), if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
