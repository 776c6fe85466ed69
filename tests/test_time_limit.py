"""A run's time limit (pinn.Training.time_limit): the stages share it, the run ends at it,
and a last stage that is still improving when its steps run out goes on until a plateau."""

import jax
import jax.numpy as jnp
import pytest

from pinn import config
from pinn.train import Adam, Points, SSBroyden, Stage, Stop, Training, run

X = jnp.linspace(-1, 1, 32)


def _fit(p, batch):
    # a slow approach to a = 2 (Adam's steps are ~lr each), then a floor of 1e-3
    return {"fit": jnp.mean((p["a"] - 2.0) ** 2 * batch ** 2) + 1e-3}


def _train(stages, **kw):
    training = Training(stages, points=Points(resample_every=None), chunk=50,
                        eval_every=None, checkpoint_every=None, **kw)
    return run(_fit, {"a": jnp.asarray(0.0)}, training, sample_fn=lambda k, p: X,
               key=jax.random.key(0), progress=False)


STOP = Stop(residual=None, improvement=0.01, patience=100, patience_fraction=0.0, every=50)


def test_a_last_stage_still_improving_goes_on_until_its_plateau():
    # lr 5e-3: a reaches 2 after ~400 steps; the stage plans 100
    res = _train([Stage(Adam(lr=5e-3, decay=None), 100)], stop=STOP, time_limit=600)
    (stage,) = res.stages
    assert stage["status"] == "plateau", stage
    assert stage["extended_by"] >= 300 and res.step == stage["stopped_at"] > 400
    assert abs(float(res.params["a"]) - 2.0) < 0.05  # it got there
    # without a time limit the stage ends at its planned steps, a far from 2
    plain = _train([Stage(Adam(lr=5e-3, decay=None), 100)], stop=STOP)
    assert plain.stages[0]["status"] == "completed" and plain.step == 100
    assert "extended_by" not in plain.stages[0]
    assert abs(float(plain.params["a"]) - 2.0) > 1.0


def test_a_stage_on_its_plateau_at_its_end_is_not_extended():
    # lr 0.05: at the loss's floor by step ~200, flat for the rest of the 800 steps
    res = _train([Stage(Adam(lr=0.05, decay=None), 800)], stop=STOP, time_limit=600)
    (stage,) = res.stages
    assert stage["status"] == "plateau" and stage["stopped_at"] < 800
    assert res.step == 800 and "extended_by" not in stage


def test_the_run_ends_at_its_time_limit_and_later_stages_are_not_run():
    big = 10_000_000
    # 6 s: each stage's share (3 s) well above its compilation, even on a loaded machine
    res = _train([Stage(Adam(lr=1e-4), big), Stage(Adam(lr=1e-5), big)], stop=None,
                 time_limit=6.0)
    first, second = res.stages
    # the first stage's share (half) ends it, the limit the second, each part way through
    assert first["status"] == "time_limit" and 0 < first["stopped_at"] < big
    assert second["status"] == "time_limit" and big < second["stopped_at"] < 2 * big
    assert res.step == second["stopped_at"]
    ends = [r for r in res.history if r.get("event") == "time_limit"]
    assert len(ends) == 2 and "time limit of 6 s" in ends[-1]["message"]

    res = _train([Stage(Adam(lr=1e-4), big), Stage(Adam(lr=1e-5), 100)], stop=None,
                 time_limit=0.5)  # the first stage's share is all of it: the run ends there
    first, second = res.stages
    assert first["status"] == "time_limit" and second["status"] == "not run (time_limit)"
    assert res.step == first["stopped_at"] < big


def test_bad_limits_are_refused():
    for bad in (0, -1.0, float("inf"), True, "10"):
        with pytest.raises(ValueError, match="time_limit"):
            Training(time_limit=bad)


def test_the_file_and_the_command_line_set_the_limit(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("name: p\ncoords: [x]\nfields: [u]\ndomain: {interval: [0, 1]}\n"
                 "equations: {pde: \"u_xx + 1\"}\n"
                 "conditions: {ends: {dirichlet: {u: 0}, on: boundary}}\n")
    assert config.load(str(f), ["training.time_limit=90"]).training().time_limit == 90.0
    assert config.load(str(f)).training().time_limit is None
    with pytest.raises(config.ConfigError, match="time_limit"):
        config.load(str(f), ["training.time_limit=0"])


def _rosenbrock(p, batch):
    x = p["x"]
    return {"fit": jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
            + 0.0 * jnp.sum(batch)}


def test_a_mixed_stage_still_in_float32_at_its_planned_end_goes_on():
    """A "mixed" quasi-Newton stage is not judged while in float32 (its floor sends it on
    in float64), but one that has not met that floor by its planned end is judged there as
    any stage: still improving under a time limit, it goes on."""
    x0 = jnp.tile(jnp.asarray([-1.2, 1.0]), 5)  # the extended Rosenbrock's classical start

    def train(**kw):
        training = Training([Stage(SSBroyden(), 15, precision="mixed")],
                            points=Points(resample_every=None), chunk=5, eval_every=None,
                            checkpoint_every=None, stop=STOP, **kw)
        return run(_rosenbrock, {"x": x0}, training, sample_fn=lambda k, p: X,
                   key=jax.random.key(0), progress=False)

    plain = train()
    assert plain.step == 15 and "extended_by" not in plain.stages[0]
    first = float(plain.history[-1]["loss"])
    assert first > 1.0  # 15 steps from the classical start: far from the minimum (0)
    res = train(time_limit=600)
    (stage,) = res.stages
    assert stage["extended_by"] >= 100 and res.step > 15
    assert float(res.history[-1]["loss"]) < 1e-3 * first
