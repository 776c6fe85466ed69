"""Precision per stage (issue 14): float32 Adam, then the second-order stage in float64,
the parameters converted once at the stage boundary; checkpoints resume across it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn.train import LBFGS, Adam, Observer, Points, SSBroyden, Stage, Training, run
from pinn.train.spec import stage_precisions

A_STAR = np.random.default_rng(1).normal(size=6)


def fit_terms(params, batch):
    """A tanh fit: a smooth non-quadratic loss of 6 parameters with minimum 0 at A_STAR."""
    x = batch["x"]
    a = params["net"]["a"]
    model = lambda c: c[0] * jnp.tanh(c[1] * x + c[2]) + c[3] * x**2 + c[4] * x + c[5]
    return {"fit": jnp.mean((model(a) - model(jnp.asarray(A_STAR, a.dtype))) ** 2)}


def fit_sample(key, params):
    del params  # numpy float64 bounds: truncated to float32 in a float32 stage
    return {"x": jax.random.uniform(key, (64,), dtype=jnp.float64, minval=-1.0, maxval=1.0)}


class Dtypes(Observer):
    """The float types of the parameters and the batch at every chunk, by stage."""

    def __init__(self):
        self.seen = {}

    def on_chunk(self, event):
        if event.kind == "chunk":
            leaves = jax.tree.leaves(event.state["params"]) + jax.tree.leaves(
                event.state["batch"])
            self.seen.setdefault(event.stage, set()).update(str(a.dtype) for a in leaves)


def fit_run(precisions, checkpoint_every=None, **kw):
    stages = [Stage(Adam(lr=2e-2), 60, precision=precisions[0]),
              Stage(SSBroyden(), 40, precision=precisions[1])]
    params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
    return run(fit_terms, params,
               Training(stages, points=Points(resample_every=20), chunk=20, eval_every=None,
                        checkpoint_every=checkpoint_every), sample_fn=fit_sample,
               key=jax.random.key(3), progress=False, **kw)


def test_stages_switch_from_float32_to_float64_and_resume_across_the_switch(tmp_path):
    with jax.enable_x64(True):
        seen = Dtypes()
        mixed = fit_run((32, 64), observers=[seen], checkpoint_dir=tmp_path / "ck",
                        checkpoint_every=20, keep_checkpoints=None)
        assert seen.seen == {0: {"float32"}, 1: {"float64"}}
        assert mixed.params["net"]["a"].dtype == jnp.float64
        full = fit_run((None, None))
        # the error ends as low as all in float64, far below float32's rounding floor
        # (measured 9.3e-10 mixed, 8.4e-9 float64; the loss after the Adam stage ~1e-4)
        batch = {"x": jnp.linspace(-1, 1, 101)}
        err = float(fit_terms(mixed.params, batch)["fit"])
        ref = float(fit_terms(full.params, batch)["fit"])
        assert err < 1e-7 and ref < 1e-7, (err, ref)

        # resume from the float32 checkpoint at step 40: float32 stays float32, and the run
        # ends where the straight run ended, bit for bit
        for f in (tmp_path / "ck").iterdir():
            if "40" not in f.name:
                f.unlink()
        assert any((tmp_path / "ck").iterdir()), "no checkpoint at step 40"
        seen = Dtypes()
        resumed = fit_run((32, 64), observers=[seen], checkpoint_dir=tmp_path / "ck",
                          resume=True)
        assert seen.seen == {0: {"float32"}, 1: {"float64"}}
        assert np.array_equal(np.asarray(resumed.params["net"]["a"]),
                              np.asarray(mixed.params["net"]["a"]))


def mixed_run(steps=200, checkpoint_every=None, **kw):
    """SSBroyden alone on the tanh fit, started in float32 ("mixed")."""
    params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
    return run(fit_terms, params,
               Training([Stage(SSBroyden(), steps, precision="mixed")],
                        points=Points(resample_every=None), chunk=10, eval_every=None,
                        checkpoint_every=checkpoint_every, stop=None), sample_fn=fit_sample,
               key=jax.random.key(3), progress=False, **kw)


def coefficient_error(result):
    return float(np.abs(np.asarray(result.params["net"]["a"]) - A_STAR).max())


def test_a_mixed_stage_goes_on_in_float64_from_its_float32_floor(tmp_path):
    """precision "mixed": the stage runs in float32 until its line search stalls (the loss
    at float32's rounding floor), then in float64 from the same point with its curvature
    memory: it ends where float64 ends, far below where float32 alone stops; a checkpoint
    written after the switch resumes in float64, bit for bit."""
    with jax.enable_x64(True):
        seen = Dtypes()
        mixed = mixed_run(observers=[seen], checkpoint_dir=tmp_path / "ck",
                          checkpoint_every=10, keep_checkpoints=None)
        params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
        alone32 = run(fit_terms, params,
                      Training([Stage(SSBroyden(), 200, precision=32)],
                               points=Points(resample_every=None), chunk=10, eval_every=None,
                               checkpoint_every=None, stop=None), sample_fn=fit_sample,
                      key=jax.random.key(3),
                      progress=False)
    assert seen.seen == {0: {"float32", "float64"}}
    switch = [r for r in mixed.history if r.get("event") == "float64"]
    assert len(switch) == 1 and "stalled in float32" in switch[0]["message"]
    at = mixed.stages[0]["float64_from"]
    # the float32 run alone stalls at the same step (the same float32 trajectory)
    assert at == alone32.stages[0]["stopped_at"]
    assert mixed.params["net"]["a"].dtype == jnp.float64
    # measured: float32 alone 2.6e-5 from A_STAR, mixed 2.0e-14 (float64 alone 1.0e-14)
    assert coefficient_error(alone32) > 1e-6
    assert coefficient_error(mixed) < 1e-10

    # resume from the first checkpoint after the switch: float64 from there on
    after = sorted(f for f in (tmp_path / "ck").iterdir() if int(f.stem[5:]) > at)[0]
    for f in (tmp_path / "ck").iterdir():
        if f != after:
            f.unlink()
    with jax.enable_x64(True):
        seen = Dtypes()
        resumed = mixed_run(observers=[seen], checkpoint_dir=tmp_path / "ck", resume=True)
    assert seen.seen == {0: {"float64"}}
    assert resumed.stages[0]["float64_from"] == at
    assert np.array_equal(np.asarray(resumed.params["net"]["a"]),
                          np.asarray(mixed.params["net"]["a"]))


def test_a_mixed_lbfgs_stage_goes_on_in_float64():
    """L-BFGS (optax's, no refresh of its own) switches too: the stored loss dropped, its
    memory kept. Measured: the switch at step 44, 2.4e-15 from A_STAR at the end."""

    with jax.enable_x64(True):
        params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
        res = run(fit_terms, params,
                  Training([Stage(LBFGS(), 300, precision="mixed")],
                           points=Points(resample_every=None), chunk=10, eval_every=None,
                           checkpoint_every=None, stop=None), sample_fn=fit_sample,
                  key=jax.random.key(3),
                  progress=False)
    assert "float64_from" in res.stages[0]
    assert res.params["net"]["a"].dtype == jnp.float64
    assert coefficient_error(res) < 1e-10


def test_a_mixed_stage_compiles_each_precision_once():
    """A "mixed" stage's float64 program compiles once, when its float32 line search stalls,
    for the state the switch makes (integer counters included): two chunk compilations."""
    with jax.enable_x64(True), _Compiles() as log:
        params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
        res = run(fit_terms, params,
                  Training([Stage(SSBroyden(max_linesearch_steps=23), 200, precision="mixed")],
                           points=Points(resample_every=None), chunk=10, eval_every=None,
                           checkpoint_every=None), sample_fn=fit_sample, key=jax.random.key(3),
                  progress=False)
    assert "float64_from" in res.stages[0]
    assert len(log.chunks()) == 2, log.chunks()


def test_mixed_needs_a_line_search_stage():
    with pytest.raises(ValueError, match="'mixed'.*line search"):
        Stage(Adam(), 10, precision="mixed")
    from pinn.config import ConfigError, load

    with pytest.raises(ConfigError, match="mixed"):
        load("p.yaml", text="domain: {interval: [0, 1]}\n"
             "equations: {poisson: \"-u_xx = 1\"}\n"
             "training: {stages: [{adam: {}, steps: 10, precision: mixed}]}\n").training()


def test_auto_and_the_stages_own_precisions():
    """A stage's own precision wins; auto is float32 for a first-order stage, "mixed"
    (float32 until its line search stalls, then float64) for one that prefers float64 and
    supports mixed (SSBroyden), float64 for one that only prefers it (Gauss-Newton), as the
    optimisers declare."""
    from pinn.train import GaussNewton

    auto = (32, "mixed")
    assert stage_precisions([Adam(), SSBroyden()], [None, None], None) == auto
    assert stage_precisions([Adam, SSBroyden], [None, None], "auto") == auto
    # a second-order method without a float32 start (Gauss-Newton): float64
    assert stage_precisions([Adam(), GaussNewton()], [None, None], None) == (32, 64)
    assert stage_precisions([Adam(), LBFGS()], [None, None]) == (32, 32)
    assert stage_precisions([Adam(), SSBroyden()], [None, None], 64) == (64, 64)
    assert stage_precisions([Adam(), SSBroyden()], [64, None], 32) == (64, 32)
    with pytest.raises(ValueError, match="precision"):
        Stage(Adam(), 10, precision=16)
    x = pinn.coords("x")
    u = pinn.field("u")
    problem = pinn.Problem(domain=pinn.Interval(0, 1), coords=(x,),
                           equations={"poisson": -pinn.D(u, x, 2) - 1},
                           conditions={"ends": pinn.Dirichlet(u, 0, on="boundary")})
    run_ = pinn.setup(problem, progress=False)  # the default recipe, precision auto
    assert run_.precision == 64
    assert [s.precision for s in run_.training.stages] == [32, "mixed"]
    run_ = pinn.setup(problem, precision=64, progress=False)
    assert [s.precision for s in run_.training.stages] == [None, None]
    from pinn.config import load

    built = load("p.yaml", text="domain: {interval: [0, 1]}\n"
                 "equations: {poisson: \"-u_xx = 1\"}\n"
                 "conditions: {ends: {dirichlet: {u: 0}}}\n")
    assert built.precision == 64 and built.stage_precisions == auto
    built = load("p.yaml", text="domain: {interval: [0, 1]}\n"
                 "equations: {poisson: \"-u_xx = 1\"}\n"
                 "training: {precision: 32, stages: [{adam: {}, steps: 10}, "
                 "{ssbroyden: {}, steps: 10, precision: 64}]}\n")
    assert built.precision == 64 and built.stage_precisions == (32, 64)
    assert [s.precision for s in built.training().stages] == [32, 64]


class _Compiles:
    """The XLA compilations of the chunk programs, from JAX's compile log."""

    def __init__(self):
        import logging

        self.names, self.handler = [], logging.Handler()
        self.handler.emit = lambda record: self.names.append(record.getMessage())

    def __enter__(self):
        import logging

        logging.getLogger("jax").addHandler(self.handler)
        self._was = jax.config.jax_log_compiles
        jax.config.update("jax_log_compiles", True)
        return self

    def __exit__(self, *exc):
        import logging

        jax.config.update("jax_log_compiles", self._was)
        logging.getLogger("jax").removeHandler(self.handler)

    def chunks(self):
        return [n for n in self.names if "Finished XLA compilation of jit(chunk_fn)" in n]


@pytest.mark.parametrize("precisions, lr, ls", [((32, 64), 1.7e-2, 17), ((None, None), 1.9e-2, 19)])
def test_later_stages_compile_ahead_once_in_their_precision(precisions, lr, ls):
    """The second stage's program compiles in the background (pinn.train.core.Core
    .compile_ahead) in its own precision, and the loop runs that compilation: each stage's
    chunk program compiles exactly once (a background compile of the wrong state would be
    compiled again when the stage starts)."""
    with jax.enable_x64(True), _Compiles() as log:
        # settings no other test uses: programs of their own, not ones compiled before
        stages = [Stage(Adam(lr=lr), 30, precision=precisions[0]),
                  Stage(SSBroyden(max_linesearch_steps=ls), 20, precision=precisions[1])]
        params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
        res = run(fit_terms, params,
                  Training(stages, points=Points(resample_every=10), chunk=10, eval_every=None,
                           checkpoint_every=None), sample_fn=fit_sample, key=jax.random.key(5),
                  progress=False)
    assert len(log.chunks()) == 2, log.chunks()
    assert res.step == 50 and float(fit_terms(res.params, {"x": jnp.linspace(-1, 1, 9)})[
        "fit"]) < 1e-4
