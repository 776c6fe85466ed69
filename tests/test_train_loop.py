"""The training loop: L-BFGS, stages, NaN roll-back, resume bit for bit, progress, checkpoints."""

import dataclasses
import io
import os
import re
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
    Points,
    Stage,
    Training,
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


A_STAR = np.random.default_rng(0).normal(size=9)


def poly_terms(params, batch):
    """A polynomial fit (monomials up to x^8) and a learnable parameter c -> 2: a quadratic in
    the 10 parameters with condition number ~1e6 on a fixed batch, minimum 0."""
    x = batch["x"]
    phi = x[:, None] ** jnp.arange(9)
    u = phi @ params["net"]["a"]
    c = params["pde"]["c"]
    return {
        "data": jnp.mean((u - phi @ A_STAR) ** 2),
        "param": jnp.mean((c * x - 2.0 * x) ** 2),
    }


def poly_sample(key, params):
    del params
    return {"x": jax.random.uniform(key, (32,), minval=-1.0, maxval=1.0)}


POLY_STAGES = [
    Stage(Adam(lr=1e-2, warmup=5, decay="exponential", decay_steps=10), 30),
    Stage(LBFGS(gtol=1e-10), 100),
]
POLY_WEIGHTING = GradNorm(every=7, alpha=0.5)


def poly_run(**kwargs):
    params = {"net": {"a": jnp.zeros(9)}, "pde": {"c": jnp.asarray(0.3)}}
    return run(poly_terms, params,
               Training(POLY_STAGES, points=Points(resample_every=4), chunk=8, eval_every=None,
                        checkpoint_every=None, stop=None), sample_fn=poly_sample,
               key=jax.random.key(7), weighting=POLY_WEIGHTING, progress=False, **kwargs)


def strip(rows):
    return [{k: v for k, v in r.items() if k not in ("time", "steps_per_s")} for r in rows]


# ---------------------------------------------------------------- tests


def test_stages_lbfgs_to_1e_12_and_resume_bit_for_bit(tmp_path):
    with jax.enable_x64(True):
        straight = poly_run()
        # stage boundaries in the history
        assert straight.stage_starts == [0, 30]
        starts = [(r["step"], r["stage"]) for r in straight.history if r["event"] == "stage_start"]
        assert starts == [(0, 0), (30, 1)]
        last = straight.history[-1]
        assert {"loss.data", "loss.param", "weight.data", "param.c", "lr"} <= set(last)
        # the Adam stage leaves a loss of order 1; L-BFGS takes the quadratic to 1e-12
        assert last["loss"] < 1e-12
        adam_end = next(r for r in straight.history if r["step"] == 30 and r["stage"] == 1)
        assert adam_end["loss"] > 1e-2
        terms = poly_terms(straight.params, straight.state["batch"])
        assert float(terms["data"]) < 1e-12 and float(terms["param"]) < 1e-12
        assert abs(float(straight.params["pde"]["c"]) - 2.0) < 1e-6  # learnable parameter
        # L-BFGS ran until its tolerance, not a fixed few iterations, and says so
        lbfgs = straight.stages[1]
        assert lbfgs["status"] == "converged" and 50 < lbfgs["stopped_at"] < 130
        assert lbfgs["grad_norm"] <= 1e-10
        assert any(r["event"] == "lbfgs_stop" for r in straight.history)

        # interrupt mid-Adam (SIGINT) and mid-L-BFGS (SIGTERM), resume, compare bits
        for stop_at, sig in ((20, signal.SIGINT), (34, signal.SIGTERM)):
            out = tmp_path / f"run{stop_at}"

            def on_chunk(row, stop_at=stop_at, sig=sig):
                if row["step"] >= stop_at and row["event"] is None:
                    os.kill(os.getpid(), sig)

            with pytest.raises(Interrupted) as info:
                poly_run(out_dir=out, on_chunk=on_chunk, history_csv=True)
            assert info.value.signal == sig.name
            stopped = info.value.step
            assert stop_at <= stopped < stop_at + 8
            assert info.value.checkpoint == latest_checkpoint(out / "checkpoints")
            resumed = poly_run(out_dir=out, resume=True, history_csv=True)
            assert resumed.step == straight.step == 130
            for a, b in zip(
                jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state), strict=True
            ):
                if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
                    a, b = jax.random.key_data(a), jax.random.key_data(b)
                assert np.array_equal(np.asarray(a), np.asarray(b))
            assert resumed.weights == straight.weights
            assert strip(resumed.history) == strip(straight.history)
            assert strip(read_history(out / "history.jsonl")) == strip(straight.history)
            csv_rows = (out / "history.csv").read_text().splitlines()
            assert len(csv_rows) == len(straight.history) + 1


def test_nan_rollback_recovers_and_is_recorded_and_progress_is_quiet(capfd):
    # progress=True, and stderr is not a terminal under pytest: timestamped progress lines
    # on stderr only (tests/test_progress.py), nothing on stdout
    with pytest.warns(RuntimeWarning, match="rolled back"):
        result = run(barrier_terms, {"p": jnp.asarray(0.0)},
                     Training([Stage(Adam(lr=2.0, decay="cosine"), 200)],
                              points=Points(resample_every=1000), chunk=30, eval_every=100,
                              checkpoint_every=None), sample_fn=no_batch, key=jax.random.key(0),
                     progress=True, evaluate=lambda p: {"err": abs(float(p["p"]) - 0.5)})
    captured = capfd.readouterr()
    assert captured.out == ""
    assert all(re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ", line)
               for line in captured.err.splitlines())
    assert "rolled back to step" in captured.err  # the roll-back is a progress line too
    assert len(result.rollbacks) >= 1
    events = [r for r in result.history if r["event"] == "rollback"]
    assert events == result.rollbacks
    assert "lowered the learning rate scale 1 -> 0.5" in events[0]["message"]
    assert result.step == 200
    assert np.isfinite(result.history[-1]["loss"])
    assert abs(float(result.params["p"]) - 0.5) < 1e-2
    assert result.history[-1]["lr"] == pytest.approx(0.0, abs=1e-9)  # cosine decayed to 0
    evaluated = [r["step"] for r in result.history if "eval.err" in r]
    assert evaluated == [100, 200]  # chunks of 30 are cut at the evaluation steps
    assert result.history[-1]["eval.err"] == abs(float(result.params["p"]) - 0.5)


def aux_terms(params, batch):
    del batch
    p = params["p"]
    return {"fit": (p - 1.0) ** 2}, {"p_squared": p**2}


def test_aux_outputs_are_logged_not_minimised():
    result = run(aux_terms, {"p": jnp.asarray(0.0)},
                 Training([Stage(Adam(lr=0.1), 100)], points=Points(resample_every=1000), chunk=50,
                          eval_every=None, checkpoint_every=None), sample_fn=no_batch,
                 key=jax.random.key(0), progress=False)
    last = result.history[-1]
    assert abs(float(result.params["p"]) - 1.0) < 0.05  # p^2 was not minimised
    assert last["aux.p_squared"] == pytest.approx(float(result.params["p"]) ** 2, rel=1e-6)
    assert last["loss"] == pytest.approx(last["loss.fit"], rel=1e-7)


def test_repeated_nan_stops_with_clear_error():
    with pytest.warns(RuntimeWarning), pytest.raises(TrainingDiverged) as info:
        run(wall_terms, {"p": jnp.asarray(0.0)},
            Training([Stage(Adam(lr=0.5), 100)], points=Points(resample_every=1000), chunk=50,
                     eval_every=None, checkpoint_every=None), sample_fn=no_batch,
            key=jax.random.key(0), max_retries=2, progress=False)
    err = info.value
    assert "diverged" in str(err) and "from step 0" in str(err) and "clip" in str(err)
    assert len(err.failures) == 3
    assert float(err.params["p"]) == 0.0  # the last good parameters
    with pytest.raises(TrainingDiverged, match="initial parameters"):
        run(wall_terms, {"p": jnp.asarray(2.0)},
            Training([Stage(Adam(lr=0.5), 100)], points=Points(resample_every=1000), chunk=50,
                     eval_every=None, checkpoint_every=None), sample_fn=no_batch,
            key=jax.random.key(0), progress=False)


def test_progress_bar_in_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    with TrainProgress(100, stream=stream) as bar:
        bar.update(50, "stage 1/1 Adam", {"loss": 1.5e-3, "loss.heat": 1e-3, "param.nu": 0.01})
    text = stream.getvalue()
    assert "heat 1.0e-03" in text and "nu=0.01" in text and " 50/" in text
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
        "ckpt_000000012.npz",
        "ckpt_000000013.npz",
    ]


def mean_terms(params, batch):
    """Minimum at p = the mean of the batch: L-BFGS lands on the batch it was given."""
    return {"fit": jnp.mean((params["p"] - batch["x"]) ** 2)}


def mean_sample(key, params):
    del params
    return {"x": jax.random.normal(key, (16,))}


@pytest.mark.parametrize("resample_every", [1000, None])
def test_each_stage_fits_a_fresh_batch_when_resampling(resample_every):
    """A new stage starts from a fresh batch (unless resampling is off): two L-BFGS stages
    in a row end at the means of two different batches."""
    stages = [Stage(LBFGS(gtol=1e-12), 20), Stage(LBFGS(gtol=1e-12), 20)]
    ends = []
    for n in (1, 2):
        res = run(mean_terms, {"p": jnp.asarray(0.0)},
                  Training(stages[:n], points=Points(resample_every=resample_every), chunk=10,
                           eval_every=None, checkpoint_every=None), sample_fn=mean_sample,
                  key=jax.random.key(3), progress=False)
        ends.append(float(res.params["p"]))
    # stage 1 fits the first batch (drawn before training, the same in both runs)
    key, sub = jax.random.split(jax.random.key(3))
    first = mean_sample(sub, None)["x"]
    np.testing.assert_allclose(ends[0], float(jnp.mean(first)), atol=1e-5)
    if resample_every is None:
        assert ends[1] == pytest.approx(ends[0], abs=1e-6)
    else:
        second = mean_sample(jax.random.split(key)[1], None)["x"]
        np.testing.assert_allclose(ends[1], float(jnp.mean(second)), atol=1e-5)
        assert abs(ends[1] - ends[0]) > 1e-3


def test_lbfgs_stops_when_the_line_search_finds_no_decrease():
    """float32: once the loss is at its rounding floor, L-BFGS stops ('stalled') instead of
    spending every remaining step on a full line search that finds nothing."""
    params = {"net": {"a": jnp.zeros(9, jnp.float32)}, "pde": {"c": jnp.asarray(0.3, jnp.float32)}}
    res = run(poly_terms, params,
              Training([Stage(LBFGS(), 3000)], points=Points(resample_every=None), chunk=100,
                       eval_every=None, checkpoint_every=None), sample_fn=poly_sample,
              key=jax.random.key(7), progress=False)
    first = res.history[0]["loss"]
    st = res.stages[0]
    assert st["status"] == "stalled" and st["stopped_at"] < 3000
    assert res.history[-1]["loss"] < 1e-4 * first
    # the parameters at the stop are the last accepted ones: finite, float32
    assert all(bool(jnp.all(jnp.isfinite(v))) and v.dtype == jnp.float32
               for v in jax.tree.leaves(res.params))


_CALLS = [0]


@dataclasses.dataclass(frozen=True)
class _FailingOnce(LBFGS):
    """L-BFGS whose ``at``-th line search in the whole run finds no step (it stays where it
    is, as a line search that gives up does). The count lives on the host (a callback), so
    it survives the optimiser's restart."""

    at: int = 10

    def line_step(self, f, params, state):
        value, gnorm, new, moved, state, fresh = super().line_step(f, params, state)

        def count():
            _CALLS[0] += 1
            return np.asarray(_CALLS[0] == self.at)

        fail = jax.pure_callback(count, jax.ShapeDtypeStruct((), jnp.bool_)) & ~fresh
        new = jax.tree.map(lambda a, b: jnp.where(fail, b, a), new, params)
        return value, gnorm, new, moved & ~fail, state, fresh


def test_a_stall_with_curvature_memory_restarts_instead_of_ending_the_stage():
    """One failed line search in the middle of an L-BFGS stage (memory full, loss far from
    its minimum) restarts the memory and goes on; before, it ended the stage there."""
    _CALLS[0] = 0
    with jax.enable_x64(True):
        params = {"net": {"a": jnp.zeros(9)}, "pde": {"c": jnp.asarray(0.3)}}
        res = run(poly_terms, params,
                  Training([Stage(_FailingOnce(gtol=1e-9, at=10), 400)],
                           points=Points(resample_every=None), chunk=50, eval_every=None,
                           checkpoint_every=None), sample_fn=poly_sample, key=jax.random.key(7),
                  progress=False)
    assert _CALLS[0] > 12  # the line searches went on
    st = res.stages[0]
    assert st["stopped_at"] > 12, st  # it went on past the failed line search
    assert res.history[-1]["loss"] < 1e-10 * res.history[0]["loss"]
