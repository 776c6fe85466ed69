"""MLflow logging (pinn.MLflow, pinn solve --log mlflow): the run in a file tracking store
holds a metric per loss term, the error and the learning rate at the chunk steps (the
same names as TensorBoard's), read back with MLflow's own client."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import pinn
from pinn.train import Adam, MLflow, Points, Stage, Training, run

pytest.importorskip("mlflow", reason="the optional extra pinn[mlflow] is not installed "
                                     "(pip install 'pinn[mlflow]')")
from mlflow.tracking import MlflowClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def quadratic(params, batch):
    del batch
    return {"fit": (params["p"] - 0.5) ** 2, "small": 0.1 * params["p"] ** 2}


def _only_run(uri):
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1
    return client, runs[0]


def test_mlflow_metrics_per_term_error_and_rate(tmp_path):
    uri = (tmp_path / "mlruns").as_uri()
    result = run(quadratic, {"p": jnp.asarray(0.0)},
                 Training([Stage(Adam(lr=0.05), 200)], points=Points(resample_every=1000), chunk=50,
                          eval_every=100, checkpoint_every=None),
                 sample_fn=lambda k, p: jnp.zeros(()), key=jax.random.key(0), progress=False,
                 handle_signals=False,
                 evaluate=lambda p: {"rel_l2_p": abs(float(p["p"]) - 0.5 / 1.1)},
                 observers=[MLflow(uri, experiment="quad", run_name="q")])
    client, r = _only_run(uri)
    assert r.info.status == "FINISHED" and r.info.run_name == "q"
    assert {"loss/total", "loss/fit", "loss/small", "train/lr", "error/rel_l2_p"} <= set(
        r.data.metrics)
    fit = client.get_metric_history(r.info.run_id, "loss/fit")
    assert [m.step for m in fit] == [0, 50, 100, 150, 200]
    assert [m.step for m in client.get_metric_history(r.info.run_id, "error/rel_l2_p")] == [
        100, 200]
    assert fit[-1].value == pytest.approx(result.history[-1]["loss.fit"], rel=1e-6)
    assert r.data.params["stage0"].endswith("x 200")


def test_solve_log_mlflow_writes_into_the_run_folder(tmp_path, monkeypatch):
    from pinn.cli import main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "run"
    code = main(["solve", str(ROOT / "problems" / "poisson2d.yaml"), "--out", str(out), "-q",
                 "--log", "mlflow", "--set", "training.stages=[{adam: {}, steps: 20}]",
                 "--set", "training.points.interior=64", "--set", "training.chunk=10",
                 "--set", "evaluation.resolution=[9,9]"])
    assert code == 0
    client, r = _only_run((out / "mlruns").as_uri())
    assert r.info.run_name == "run"
    assert max(m.step for m in client.get_metric_history(r.info.run_id, "loss/total")) == 20
    assert any(k.startswith("error/rel_l2_") for k in r.data.metrics)


def test_a_missing_mlflow_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=r"pinn\[mlflow\]"):
        MLflow()
    assert pinn.MLflow is MLflow
