"""Open extension points: a raw optax transformation as a stage, a raw flax.nnx module as
the model, callbacks that stop the run (EarlyStopping, a user function), and a loss term
that is a user's JAX function. Each trains u'' = -pi^2 sin(pi x) on [0, 1] (exact:
sin(pi x)), seeded, and bounds the error."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import pinn
from pinn.train import Optax, Stage

x = pinn.coords("x")
u = pinn.field("u")
SOURCE = pinn.pi**2 * pinn.sin(pinn.pi * x)


def poisson(**conditions):
    conditions = conditions or {"ends": pinn.Dirichlet(u, 0, on="boundary", hard=True)}
    return pinn.Problem(domain=pinn.Interval(0, 1),
                        equations={"poisson": pinn.D(u, x, 2) + SOURCE},
                        conditions=conditions, exact={u: pinn.sin(pinn.pi * x)}, name="p1")


def training(stage, steps=600, **kw):
    return pinn.Training(stages=[Stage(stage, steps)],
                         points=pinn.Points(interior=128, boundary=16), seed=0, **kw)


class Net(nnx.Module):
    """A user's own network: 1 -> 16 -> 16 -> 1, tanh."""

    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(1, 16, rngs=rngs)
        self.l2 = nnx.Linear(16, 16, rngs=rngs)
        self.l3 = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.l3(jnp.tanh(self.l2(jnp.tanh(self.l1(x)))))


# -- optimisers ------------------------------------------------------------------------


def test_a_raw_optax_transformation_is_a_stage():
    stage = Stage(optax.adamw(1e-2, weight_decay=1e-5), 600)
    assert isinstance(stage.optimizer, Optax) and not stage.full_batch
    sol = pinn.solve(poisson(), pinn.MLP(width=16, depth=2), training(stage.optimizer),
                     progress=False)
    assert sol.metrics["rel_l2"]["u"] < 5e-3
    assert sol.history[-1]["lr"] is None  # optax does not tell its rate: none is invented


def test_an_optax_factory_gets_the_stage_length_and_reports_its_rate():
    seen = []

    def cosine(steps):
        seen.append(steps)
        return optax.adam(optax.cosine_decay_schedule(1e-2, steps))

    opt = Optax(cosine, learning_rate=lambda k: optax.cosine_decay_schedule(1e-2, 600)(k))
    sol = pinn.solve(poisson(), pinn.MLP(width=16, depth=2), training(opt), progress=False)
    assert 600 in seen
    assert sol.metrics["rel_l2"]["u"] < 5e-3
    assert sol.history[-1]["lr"] == pytest.approx(0.0, abs=1e-9)  # decayed to 0 at the end


def test_a_bad_optimiser_names_the_fix():
    with pytest.raises(TypeError, match="optax.GradientTransformation"):
        Stage("adam", 10)
    with pytest.raises(TypeError, match="must return an optax.GradientTransformation"):
        Optax(lambda n: "nope").make(3)


# -- networks --------------------------------------------------------------------------


def test_a_raw_nnx_module_trains_with_the_hard_conditions_applied():
    sol = pinn.solve(poisson(), Net(nnx.Rngs(0)), training(pinn.Adam(lr=1e-2)), progress=False)
    assert sol.metrics["rel_l2"]["u"] < 5e-3
    np.testing.assert_array_equal(sol(np.array([[0.0], [1.0]])), 0.0)  # hard: exactly 0
    # a function key -> module is initialised from the run's seed: reproducible, and
    # another seed gives other weights
    a, b, c = (pinn.setup(poisson(), lambda key: Net(nnx.Rngs(key)),
                          pinn.Training(stages=[Stage(pinn.Adam(), 5)], seed=seed),
                          progress=False).params["net"] for seed in (0, 0, 1))
    leaves = [np.concatenate([np.ravel(v) for v in jax.tree.leaves(t)]) for t in (a, b, c)]
    np.testing.assert_array_equal(leaves[0], leaves[1])
    assert not np.array_equal(leaves[0], leaves[2])


def test_a_module_of_the_wrong_shape_names_the_fix():
    class Two(nnx.Module):
        def __init__(self):
            self.lin = nnx.Linear(1, 2, rngs=nnx.Rngs(0))

        def __call__(self, x):
            return self.lin(x)

    with pytest.raises(ValueError, match=r"must return \[N, 1\]"):
        pinn.setup(poisson(), Two(), training(pinn.Adam(), 5), progress=False)
    with pytest.raises(TypeError, match="network spec"):
        pinn.setup(poisson(), "mlp", training(pinn.Adam(), 5), progress=False)


def test_a_float64_run_casts_the_modules_parameters():
    run = pinn.setup(poisson(), Net(nnx.Rngs(0)), training(pinn.Adam(), 5), precision=64,
                     progress=False)
    assert {str(leaf.dtype) for leaf in jax.tree.leaves(run.params["net"])} == {"float64"}


# -- callbacks -------------------------------------------------------------------------


def test_early_stopping_stops_at_the_target_and_says_why():
    stop = pinn.EarlyStopping(target_error=2e-2)
    sol = pinn.setup(poisson(), pinn.MLP(width=16, depth=2),
                     training(pinn.Adam(lr=1e-2), 3000, eval_every=50, chunk=50),
                     progress=False, observers=[stop]).train()
    done = sol.metrics["steps_done"]
    assert stop.stopped_at == done < 3000
    assert sol.metrics["rel_l2"]["u"] < 2e-2  # it stopped because the target was met
    row = next(r for r in sol.history if r.get("event") == "early_stop")
    assert row["step"] == done and row["eval.rel_l2_u"] <= 2e-2
    assert "reached the target" in row["message"] == stop.reason
    report = sol.metrics["stages"][-1]
    assert report["status"] == "early_stop" and report["stopped_at"] == done
    assert report["reason"] == stop.reason


def test_patience_stops_a_stalled_loss():
    stop = pinn.EarlyStopping(patience=2, monitor="loss", min_delta=1e9)  # nothing improves
    sol = pinn.setup(poisson(), pinn.MLP(width=8, depth=1),
                     training(pinn.Adam(lr=1e-3), 1000, chunk=20), progress=False,
                     observers=[stop]).train()
    assert sol.metrics["steps_done"] == 60  # first check sets the best, then 2 bad checks
    assert "has not improved" in stop.reason


def test_a_user_function_may_stop_the_run_and_add_metrics():
    def watch(row):
        row["aux.custom"] = 2.0 * row["loss"]  # a custom metric
        if row["loss"] < 1.0:
            return f"loss below 1 at step {row['step']}"

    result = pinn.setup(poisson(), pinn.MLP(width=16, depth=2),
                        training(pinn.Adam(lr=1e-2), 3000, chunk=25), progress=False,
                        ).train(on_chunk=watch)
    rows = [r for r in result.history if "aux.custom" in r]
    assert rows and all(r["aux.custom"] == 2.0 * r["loss"] for r in rows)
    last = result.history[-1]
    assert last["event"] == "early_stop" and last["loss"] < 1.0
    assert last["message"].startswith("loss below 1") and last["stopped_by"] == "watch"
    assert result.metrics["steps_done"] == last["step"] < 3000


def test_early_stopping_needs_a_rule():
    with pytest.raises(ValueError, match="target_error"):
        pinn.EarlyStopping()


# -- loss terms ------------------------------------------------------------------------


def boundary_flux(apply, params, pts):
    """u(0) = 0 and u'(1) = -pi, as one JAX function (the derivative by jax.grad)."""
    net = params["net"]
    values = apply(net, pts)[:, 0]
    slope = jax.vmap(jax.grad(lambda s: apply(net, s.reshape(1, 1))[0, 0]))(pts[:, 0])
    return values[0] ** 2 + (slope[1] + jnp.pi) ** 2


def test_a_loss_term_that_is_a_jax_function():
    term = pinn.LossTerm(boundary_flux, points=np.array([[0.0], [1.0]]), weight=10.0)
    sol = pinn.solve(poisson(flux=term), pinn.MLP(width=16, depth=2),
                     training(pinn.Adam(lr=1e-2), 1500), progress=False)
    assert "loss.flux" in sol.history[-1]
    assert sol.metrics["loss"]["flux"] < 1e-4
    assert sol.metrics["rel_l2"]["u"] < 2e-2


def test_a_sampled_loss_term_sees_fresh_points_of_its_region():
    seen = []

    def mean_zero(apply, params, pts):  # on the boundary {0, 1}: u = 0 there
        seen.append(pts.shape)
        return jnp.mean(apply(params["net"], pts)[:, 0] ** 2)

    problem = poisson(ends=pinn.LossTerm(mean_zero, points="boundary", n=8))
    sol = pinn.solve(problem, pinn.MLP(width=16, depth=2), training(pinn.Adam(lr=1e-2), 800),
                     progress=False)
    assert (8, 1) in seen
    assert sol.metrics["rel_l2"]["u"] < 2e-2


def test_a_loss_term_checks_its_points():
    with pytest.raises(ValueError, match="columns"):
        pinn.solve(poisson(bad=pinn.LossTerm(boundary_flux, points=np.zeros((2, 2)))),
                   pinn.MLP(width=4, depth=1), training(pinn.Adam(), 2), progress=False)
    with pytest.raises(TypeError, match="function"):
        pinn.LossTerm(3.0)
