"""TensorBoard logging: the event file holds a scalar per loss term, the error and the
learning rate at the chunk steps, read back with tensorboardX's own protobufs."""

import struct
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import pinn
from pinn.train import Adam, Points, Stage, TensorBoard, Training, run

pytest.importorskip("tensorboardX", reason="the optional extra pinn[tensorboard] is not "
                                            "installed (pip install 'pinn[tensorboard]')")
from tensorboardX.proto import event_pb2  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def read_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` from the TFRecord event files in ``logdir``."""
    out: dict[str, list[tuple[int, float]]] = {}
    files = sorted(logdir.glob("events.out.tfevents.*"))
    assert files, f"no event file in {logdir}"
    for path in files:
        data, at = path.read_bytes(), 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at:at + 8])
            event = event_pb2.Event.FromString(data[at + 12:at + 12 + length])
            at += 12 + length + 4  # length, its crc, the record, its crc
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out


def quadratic(params, batch):
    del batch
    return {"fit": (params["p"] - 0.5) ** 2, "small": 0.1 * params["p"] ** 2}


def test_tensorboard_scalars_per_term_error_and_rate(tmp_path):
    logdir = tmp_path / "tb"
    result = run(quadratic, {"p": jnp.asarray(0.0)},
                 Training([Stage(Adam(lr=0.05), 200)], points=Points(resample_every=1000), chunk=50,
                          eval_every=100, checkpoint_every=None),
                 sample_fn=lambda k, p: jnp.zeros(()), key=jax.random.key(0), progress=False,
                 handle_signals=False,
                 evaluate=lambda p: {"rel_l2_p": abs(float(p["p"]) - 0.5 / 1.1)},
                 observers=[TensorBoard(logdir)])
    scalars = read_scalars(logdir)
    assert {"loss/total", "loss/fit", "loss/small", "weight/fit", "train/lr",
            "train/grad_norm", "train/steps_per_s", "error/rel_l2_p"} <= set(scalars)
    assert [s for s, _ in scalars["loss/fit"]] == [0, 50, 100, 150, 200]
    assert [s for s, _ in scalars["error/rel_l2_p"]] == [100, 200]
    last = result.history[-1]
    assert scalars["loss/fit"][-1][1] == pytest.approx(last["loss.fit"], rel=1e-6)
    assert scalars["train/lr"][-1][1] == pytest.approx(0.05)


def test_solve_log_tensorboard_writes_into_the_run_folder(tmp_path):
    from pinn.cli import main

    out = tmp_path / "run"
    code = main(["solve", str(ROOT / "problems" / "poisson2d.yaml"), "--out", str(out), "-q",
                 "--log", "tensorboard", "--set", "training.stages.0.steps=20",
                 "--set", "training.stages.1.steps=2", "--set", "training.points.interior=64",
                 "--set", "training.chunk=10", "--set", "evaluation.resolution=[9,9]"])
    assert code == 0
    scalars = read_scalars(out / "tensorboard")
    assert "loss/total" in scalars and any(t.startswith("error/rel_l2_") for t in scalars)
    assert max(s for s, _ in scalars["loss/total"]) == 22


def test_a_missing_tensorboardx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=r"pinn\[tensorboard\]"):
        TensorBoard("unused")
    assert pinn.TensorBoard is TensorBoard
