"""Stop when done (pinn.train.Stop): a stage ends when converged or on a plateau, judged on
synthetic loss curves, and a real run ends its stage early and says why."""

import math

import jax
import jax.numpy as jnp
import pytest

import pinn
from pinn.train import Adam, Points, Stage, Stop, StopWhenDone, Training, run
from pinn.train.observers import ChunkEvent, RunInfo


def _ended(stop: Stop, losses, stage_steps=1000, every=50, later=0):
    """Feed ``losses`` (one per ``every`` steps of one stage, followed by ``later`` more
    stages) to the observer; the step it ends the stage at (or None) and why."""
    stages = [Stage(Adam(), stage_steps)] * (1 + later)
    starts = [k * stage_steps for k in range(1 + later)]
    info = RunInfo(stages, starts, [s + stage_steps for s in starts], ["fit"], lambda p: p)
    obs = StopWhenDone(stop)
    obs.on_chunk(ChunkEvent("stage_start", 0, 0, None, info, report={"loss": losses[0]}))
    for k, loss in enumerate(losses[1:], start=1):
        event = ChunkEvent("chunk", k * every, 0, None, info, report={"loss": loss})
        obs.on_chunk(event)
        if event.stage_end is not None:
            return k * every, event.stage_end[0]
    return None, None


def test_a_loss_that_keeps_falling_is_not_stopped():
    losses = [10.0 * 0.9 ** k for k in range(20)]  # 10 % lower every 50 steps
    assert _ended(Stop(residual=None), losses) == (None, None)


def test_a_plateau_ends_the_stage_once_its_window_has_passed():
    # falls for 300 steps, then flat (noise well below 1 %)
    losses = [10.0 * 0.5 ** min(k, 6) * (1 + 1e-3 * math.sin(k)) for k in range(20)]
    step, why = _ended(Stop(residual=None, patience=200, patience_fraction=0.0), losses)
    assert why == "plateau"
    # the window (200 steps) after the last real improvement (step 300), at a check step
    assert step == 500


def test_a_plateau_does_not_end_an_earlier_stage_but_convergence_does():
    # the curve that ends a last stage at step 500 leaves a first stage to run its steps
    losses = [10.0 * 0.5 ** min(k, 6) * (1 + 1e-3 * math.sin(k)) for k in range(20)]
    stop = Stop(residual=None, patience=200, patience_fraction=0.0)
    assert _ended(stop, losses) == (500, "plateau")
    assert _ended(stop, losses, later=1) == (None, None)
    falling = [4.0 * 10.0 ** (-2 * k) for k in range(12)]
    assert _ended(Stop(residual=1e-5), falling, later=1) == (250, "converged")


def test_the_window_grows_with_the_stage():
    losses = [10.0 * 0.5 ** min(k, 6) for k in range(40)]
    stop = Stop(residual=None, patience=100, patience_fraction=0.5)
    assert stop.window(1000) == 500
    step, why = _ended(stop, losses, stage_steps=1000)
    assert why == "plateau" and step == 300 + 500


def test_converged_at_the_residual_tolerance_of_the_first_loss():
    losses = [4.0 * 10.0 ** (-2 * k) for k in range(12)]  # 4, 4e-2, 4e-4, ...
    step, why = _ended(Stop(residual=1e-5, improvement=None), losses)
    assert why == "converged"
    assert step == 5 * 50  # 4e-10 <= (1e-5)^2 * 4 = 4e-10


def test_bad_settings_are_refused():
    for bad in ({"residual": 0.0}, {"improvement": 1.5}, {"patience": 0},
                {"patience_fraction": 2.0}):
        with pytest.raises(ValueError):
            Stop(**bad)
    with pytest.raises(TypeError):
        Training(stop="early")


def test_a_run_ends_its_stage_when_converged_and_reports_it():
    """A quadratic fit converges long before its 2000 steps; the next stage still runs."""
    def terms(p, batch):
        return {"fit": jnp.mean((p["a"] * batch - 2.0 * batch) ** 2)}

    x = jnp.linspace(-1, 1, 32)
    training = Training([Stage(Adam(lr=0.05, decay=None), 2000), Stage(Adam(lr=1e-3), 50)],
                        points=Points(resample_every=None), chunk=100, eval_every=None,
                        checkpoint_every=None, stop=Stop(residual=1e-4))
    res = run(terms, {"a": jnp.asarray(0.0)}, training, sample_fn=lambda k, p: x,
              key=jax.random.key(0), progress=False)
    first, second = res.stages
    assert first["status"] == "converged" and first["stopped_at"] < 2000
    assert second["status"] == "completed" and second["stopped_at"] == 2050
    assert abs(float(res.params["a"]) - 2.0) < 1e-3
    rows = [r for r in res.history if r.get("event") == "converged"]
    assert len(rows) == 1 and "converged at step" in rows[0]["message"]
    without = run(terms, {"a": jnp.asarray(0.0)},
                  Training(training.stages, points=training.points, chunk=100,
                           eval_every=None, checkpoint_every=None, stop=None),
                  sample_fn=lambda k, p: x, key=jax.random.key(0), progress=False)
    assert without.stages[0]["status"] == "completed" and without.step == 2050


def test_pinn_stop_is_exported():
    assert pinn.Stop is Stop
