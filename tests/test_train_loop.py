"""The training loop: L-BFGS, stages, NaN roll-back, resume bit for bit, progress, checkpoints."""

import io
import os
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn.train import (
    LBFGS,
    Adam,
    GradNorm,
    Interrupted,
    Stage,
    TrainingDiverged,
    latest_checkpoint,
    load_checkpoint,
    read_history,
    run,
    save_checkpoint,
)
from pinn.train import checkpoint as ckpt
from pinn.train.progress import TrainProgress

# ---------------------------------------------------------------- problems (module level, so
# equal runs share one compiled program through the loop's cache)


def no_batch(key, params):
    del key, params
    return {}


def quadratic_setup():
    """Ill-conditioned 10-D quadratic, condition number 1e6, minimum 0 at p_star."""
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(10, 10)))
    h = q @ np.diag(np.logspace(0, 6, 10)) @ q.T
    p_star = np.random.default_rng(1).normal(size=10)
    return jnp.asarray(h), jnp.asarray(p_star)


def quadratic_terms(params, batch):
    del batch
    h, p_star = quadratic_setup()
    d = params["x"] - p_star
    return {"q": 0.5 * d @ h @ d}


def barrier_terms(params, batch):
    """Minimum at p = 0.5; NaN once |p| >= 1.5 (log of a negative number)."""
    del batch
    p = params["p"]
    return {"fit": (p - 0.5) ** 2 + 0.0 * jnp.log(1.5 - jnp.abs(p))}


def wall_terms(params, batch):
    """Minimum at p = 3 behind a wall at p = 1 where the loss turns NaN: always diverges."""
    del batch
    p = params["p"]
    return {"fit": (p - 3.0) ** 2 + 0.0 * jnp.log(1.0 - p)}


def init_mlp(key, sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        key, k = jax.random.split(key)
        layers.append({"w": jax.random.normal(k, (a, b)) / np.sqrt(a), "b": jnp.zeros(b)})
    return layers


def mlp(layers, x):
    for layer in layers[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ layers[-1]["w"] + layers[-1]["b"]


def fit_terms(params, batch):
    x = batch["x"]
    u = mlp(params["net"], x)[:, 0]
    c = params["pde"]["c"]
    return {
        "data": jnp.mean((u - jnp.sin(3.0 * x[:, 0])) ** 2),
        "param": jnp.mean((c * x[:, 0] - 2.0 * x[:, 0]) ** 2),
    }


def fit_sample(key, params):
    del params
    return {"x": jax.random.uniform(key, (32, 1), minval=-1.0, maxval=1.0)}


FIT_STAGES = [
    Stage(Adam(lr=1e-2, warmup=5, decay="exponential", decay_steps=10), 30),
    Stage(LBFGS(memory=5), 30),
]
FIT_WEIGHTING = GradNorm(every=7, alpha=0.5)


def fit_params():
    return {"net": init_mlp(jax.random.key(3), [1, 8, 1]), "pde": {"c": jnp.asarray(0.3)}}


def fit_run(**kwargs):
    return run(fit_terms, fit_params(), stages=FIT_STAGES, sample_fn=fit_sample,
               key=jax.random.key(7), weighting=FIT_WEIGHTING, resample_every=4, chunk=8,
               progress=False, **kwargs)


def strip(rows):
    return [{k: v for k, v in r.items() if k not in ("time", "steps_per_s")} for r in rows]


# ---------------------------------------------------------------- tests


def test_lbfgs_reduces_ill_conditioned_quadratic_to_1e_12():
    with jax.enable_x64(True):
        result = run(quadratic_terms, {"x": jnp.zeros(10)}, stages=[Stage(LBFGS(gtol=1e-10),
                     300)], sample_fn=no_batch, key=jax.random.key(0), chunk=100,
                     progress=False)
        final = float(quadratic_terms(result.params, {})["q"])
    start = float(result.history[0]["loss"])
    assert start > 1e4
    assert final <= 1e-12
    report = result.stages[0]
    # it stops only because the tolerance is met, and says so
    assert report["status"] == "converged"
    assert 10 < report["stopped_at"] < 300
    assert any(r["event"] == "lbfgs_stop" for r in result.history)


def test_resume_is_bit_for_bit_and_history_marks_stages(tmp_path):
    with jax.enable_x64(True):
        straight = fit_run()
        assert straight.stage_starts == [0, 30]
        starts = [(r["step"], r["stage"]) for r in straight.history if r["event"] == "stage_start"]
        assert starts == [(0, 0), (30, 1)]
        assert straight.history[-1]["step"] == 60
        assert {"loss.data", "loss.param", "weight.data", "param.c", "lr"} <= set(
            straight.history[-1])
        assert abs(straight.history[-1]["param.c"] - 2.0) < 0.05  # learnable parameter trains

        # interrupt mid-Adam (SIGINT) and mid-L-BFGS (SIGTERM), resume, compare bits
        for stop_at, sig in ((20, signal.SIGINT), (40, signal.SIGTERM)):
            out = tmp_path / f"run{stop_at}"

            def on_chunk(row, stop_at=stop_at, sig=sig):
                if row["step"] >= stop_at and row["event"] is None:
                    os.kill(os.getpid(), sig)

            with pytest.raises(Interrupted) as info:
                fit_run(out_dir=out, on_chunk=on_chunk, history_csv=True)
            assert info.value.signal == sig.name
            stopped = info.value.step
            assert stop_at <= stopped < 60
            assert info.value.checkpoint == latest_checkpoint(out / "checkpoints")
            resumed = fit_run(out_dir=out, resume=True)
            assert resumed.step == 60
            for a, b in zip(jax.tree.leaves(straight.params), jax.tree.leaves(resumed.params),
                            strict=True):
                assert np.array_equal(np.asarray(a), np.asarray(b))
            for name, w in straight.weights.items():
                assert resumed.weights[name] == w
            assert strip(resumed.history) == strip(straight.history)
            assert strip(read_history(out / "history.jsonl")) == strip(straight.history)
            assert (out / "history.csv").read_text().count("\n") >= 9


def test_nan_rollback_recovers_and_is_recorded():
    with pytest.warns(RuntimeWarning, match="rolled back"):
        result = run(barrier_terms, {"p": jnp.asarray(0.0)},
                     stages=[Stage(Adam(lr=2.0, decay="cosine"), 200)], sample_fn=no_batch,
                     key=jax.random.key(0), chunk=20, progress=False)
    assert len(result.rollbacks) >= 1
    events = [r for r in result.history if r["event"] == "rollback"]
    assert events == result.rollbacks
    assert "lowered the learning rate scale 1 -> 0.5" in events[0]["message"]
    assert result.step == 200
    assert np.isfinite(result.history[-1]["loss"])
    assert abs(float(result.params["p"]) - 0.5) < 1e-2
    assert result.history[-1]["lr"] == pytest.approx(0.0, abs=1e-9)  # cosine decayed to 0


def test_repeated_nan_stops_with_clear_error():
    with pytest.warns(RuntimeWarning), pytest.raises(TrainingDiverged) as info:
        run(wall_terms, {"p": jnp.asarray(0.0)}, stages=[Stage(Adam(lr=0.5), 100)],
            sample_fn=no_batch, key=jax.random.key(0), chunk=50, max_retries=2,
            progress=False)
    err = info.value
    assert "diverged" in str(err) and "from step 0" in str(err) and "clip" in str(err)
    assert len(err.failures) == 3
    assert float(err.params["p"]) == 0.0  # the last good parameters
    with pytest.raises(TrainingDiverged, match="initial parameters"):
        run(wall_terms, {"p": jnp.asarray(2.0)}, stages=[Stage(Adam(lr=0.5), 100)],
            sample_fn=no_batch, key=jax.random.key(0), chunk=50, progress=False)


def test_progress_is_quiet_when_not_a_terminal(capfd):
    run(barrier_terms, {"p": jnp.asarray(0.2)}, stages=[Stage(Adam(lr=0.1), 40)],
        sample_fn=no_batch, key=jax.random.key(0), chunk=20, progress=True)
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    with TrainProgress(100, stream=stream) as bar:
        bar.update(50, "stage 1/1 Adam", {"loss": 1.5e-3, "loss.heat": 1e-3, "param.nu": 0.01})
    text = stream.getvalue()
    assert "heat 1.0e-03" in text and "nu=0.01" in text and "50/100" in text
    quiet = Terminal()
    with TrainProgress(100, stream=quiet, enabled=False) as bar:
        bar.update(50, "x", {"loss": 1.0})
    assert quiet.getvalue() == ""


def test_checkpoint_writes_are_atomic(tmp_path, monkeypatch):
    tree = {"w": np.arange(5.0), "k": jax.random.key(4), "n": np.int32(3)}
    first = save_checkpoint(tmp_path, 10, tree, {"note": "ok"})
    assert first.name == "ckpt_000000010.npz"

    def crash(src, dst):
        raise OSError("simulated crash between write and rename")

    monkeypatch.setattr(ckpt.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        save_checkpoint(tmp_path, 20, {**tree, "w": np.zeros(5)}, {"note": "new"})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt_000000010.npz"]
    # a hard kill leaves a temporary file behind: readers ignore it
    (tmp_path / ".ckpt_000000030.npz.tmp-1-deadbeef").write_bytes(b"PK\x03\x04 torn")
    assert latest_checkpoint(tmp_path) == first
    loaded, header = load_checkpoint(first, tree)
    assert header["meta"] == {"note": "ok"} and header["step"] == 10
    np.testing.assert_array_equal(loaded["w"], np.arange(5.0))
    assert np.array_equal(jax.random.key_data(loaded["k"]), jax.random.key_data(tree["k"]))
    with pytest.raises(ckpt.CheckpointError, match="different state structure"):
        load_checkpoint(first, {"w": np.arange(5.0)})
    with pytest.raises(ckpt.CheckpointError, match="expects"):
        load_checkpoint(first, {**tree, "w": np.arange(4.0)})
    # keep: only the newest checkpoints stay
    for step in (11, 12, 13):
        save_checkpoint(tmp_path, step, tree, {}, keep=2)
    assert [p.name for p in ckpt.list_checkpoints(tmp_path)] == [
        "ckpt_000000012.npz", "ckpt_000000013.npz"]
