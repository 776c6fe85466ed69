"""Precision per stage (issue 14): float32 Adam, then the second-order stage in float64,
the parameters converted once at the stage boundary; checkpoints resume across it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn.train import Adam, Observer, SSBroyden, Stage, run
from pinn.training import stage_precisions

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


def fit_run(precisions, **kw):
    stages = [Stage(Adam(lr=2e-2), 60, precision=precisions[0]),
              Stage(SSBroyden(), 40, precision=precisions[1])]
    params = {"net": {"a": jnp.asarray(A_STAR + 0.3, jnp.float64)}}
    return run(fit_terms, params, stages=stages, sample_fn=fit_sample, key=jax.random.key(3),
               resample_every=20, chunk=20, progress=False, **kw)


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


@pytest.mark.parametrize("mixed", [False, True])
def test_auto_and_the_stages_own_precisions(monkeypatch, mixed):
    """A stage's own precision wins; auto is float64 for the whole run when a stage prefers
    it (MIXED_AUTO off, as measured), or float32 Adam then float64 SSBroyden (on)."""
    import pinn.training as PT

    monkeypatch.setattr(PT, "MIXED_AUTO", mixed)
    auto = (32, 64) if mixed else (64, 64)
    assert stage_precisions([False, True], [None, None]) == auto
    assert stage_precisions([False, True], [None, None], "auto") == auto
    assert stage_precisions([False, False], [None, None]) == (32, 32)
    assert stage_precisions([False, True], [None, None], 64) == (64, 64)
    assert stage_precisions([False, True], [64, None], 32) == (64, 32)
    with pytest.raises(ValueError, match="precision"):
        Stage(Adam(), 10, precision=16)
    x = pinn.coords("x")
    u = pinn.field("u")
    problem = pinn.Problem(domain=pinn.Interval(0, 1), coords=(x,),
                           equations={"poisson": -pinn.D(u, x, 2) - 1},
                           conditions={"ends": pinn.Dirichlet(u, 0, on="boundary")})
    run_ = pinn.setup(problem, progress=False)  # the default recipe, precision auto
    assert run_.precision == 64
    assert [s.precision for s in run_.training.stages] == ([32, 64] if mixed else [None, None])
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
        res = run(fit_terms, params, stages=stages, sample_fn=fit_sample,
                  key=jax.random.key(5), resample_every=10, chunk=10, progress=False)
    assert len(log.chunks()) == 2, log.chunks()
    assert res.step == 50 and float(fit_terms(res.params, {"x": jnp.linspace(-1, 1, 9)})[
        "fit"]) < 1e-4
