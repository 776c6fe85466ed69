"""RBA / vRBA pointwise multipliers: the update rule, its bound, new points, training."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn.solution import Solution
from pinn.train import RBA, VRBA, Loss
from pinn.train.weighting import MULTIPLIERS, with_multipliers

R = np.array([0.5, -2.0, 1.0, 0.0, 4.0])


def _fixed_residual(r):
    """A terms function whose equation ``pde`` has the residuals ``r`` at the points."""

    def terms_fn(params, batch):
        return {"pde": jnp.mean(jnp.square(jnp.asarray(r))), "wall": jnp.asarray(0.0)}

    return Loss(terms_fn, equation_residuals=lambda params, batch: {"pde": jnp.asarray(r)})


def _batch(n=None, shift=0.0):
    n = len(R) if n is None else n
    return {"__interior__": jnp.arange(2.0 * n).reshape(n, 2) + shift}


def test_rba_update_is_the_papers_formula():
    w = RBA(gamma=0.9, eta=0.05, initial=0.3, residual=["pde"])
    state = w.init(["pde", "wall"], jnp.float64 if jax.config.jax_enable_x64 else jnp.float32,
                   batch=_batch())
    assert set(state["multipliers"]) == {"pde"}  # the equations only
    lam = np.full(len(R), 0.3)
    for step in range(3):
        state = w.update(state, params=None, batch=_batch(), terms_fn=_fixed_residual(R),
                         step=step)
        lam = 0.9 * lam + 0.05 * np.abs(R) / np.abs(R).max()
        np.testing.assert_allclose(state["multipliers"]["pde"], lam, rtol=1e-6)
    assert float(state["weights"]["wall"]) == 1.0


def test_vrba_update_is_the_exponential_potential():
    w = VRBA(gamma=0.99, eta=0.01, initial=0.0, c_log=2.0, phi=0.8, residual=["pde"])
    state = w.init(["pde"], jnp.float32, batch=_batch())
    state = w.update(state, params=None, batch=_batch(), terms_fn=_fixed_residual(R), step=7)
    r = np.abs(R)
    beta = np.log(7 + 3) / (2.0 * r.max())
    q = beta * np.exp(beta * r)  # vRBA's unnormalised weights, then divided by their max
    want = 0.01 * (0.8 * q / q.max() + 0.2)
    np.testing.assert_allclose(state["multipliers"]["pde"], want, rtol=1e-5)


@pytest.mark.parametrize(("cls", "initial"), [(RBA, 0.0), (RBA, 2.0), (VRBA, 1.0)])
def test_multipliers_stay_below_eta_over_one_minus_gamma(cls, initial):
    w = cls(gamma=0.995, eta=0.01, initial=initial, residual=["pde"])
    bound = 0.01 / (1 - 0.995)
    assert w.bound == pytest.approx(bound)
    n = 64
    batch = _batch(n)

    def terms_fn(params, batch):
        return {"pde": jnp.asarray(0.0)}

    def body(step, carry):
        state, key, top = carry
        key, sub = jax.random.split(key)
        r = jax.random.normal(sub, (n,)) * jnp.exp(jax.random.normal(key, ()))
        r = r.at[0].set(2 * jnp.max(jnp.abs(r)))  # point 0 always has the largest residual
        loss = Loss(terms_fn, equation_residuals=lambda params, batch: {"pde": r})
        state = w.update(state, params=None, batch=batch, terms_fn=loss, step=step)
        return state, key, jnp.maximum(top, jnp.max(state["multipliers"]["pde"]))

    state = w.init(["pde"], jnp.float32, batch=batch)
    state, _, top = jax.lax.fori_loop(0, 5_000, body, (state, jax.random.key(0),
                                                        jnp.asarray(0.0)))
    lam = np.asarray(state["multipliers"]["pde"])
    assert float(top) <= bound * (1 + 1e-5)
    assert lam.min() >= 0
    assert lam[0] > 0.99 * bound  # 5000 steps (25 time constants) reach the bound
    assert lam[1:].max() < 0.9 * bound


def test_new_points_restart_at_initial_and_kept_points_keep_theirs():
    w = RBA(gamma=0.5, eta=1.0, initial=1.0, residual=["pde"])
    state = w.init(["pde"], jnp.float32, batch=_batch())
    state = w.update(state, params=None, batch=_batch(), terms_fn=_fixed_residual(R), step=0)
    learned = np.asarray(state["multipliers"]["pde"])
    moved = _batch()
    moved["__interior__"] = moved["__interior__"].at[1:3].add(0.5)  # two new points
    held = w.refit(state, moved)
    want = learned.copy()
    want[1:3] = 1.0
    np.testing.assert_allclose(held["multipliers"]["pde"], want)
    np.testing.assert_array_equal(held["points"], moved["__interior__"])
    # the loss reads them from the batch
    assert with_multipliers(moved, held)[MULTIPLIERS]["pde"].shape == (len(R),)
    assert with_multipliers(moved, {"weights": {}}) is moved


def test_rba_checks_its_arguments():
    with pytest.raises(ValueError, match="gamma"):
        RBA(gamma=1.0)
    with pytest.raises(ValueError, match="eta"):
        RBA(eta=0.0)
    with pytest.raises(ValueError, match="bound"):
        RBA(gamma=0.9, eta=0.01, initial=1.0)  # bound 0.1
    with pytest.raises(ValueError, match="residual"):
        RBA().init(["pde"], batch=_batch())
    with pytest.raises(ValueError, match="equation_residuals"):
        RBA(residual=["pde"]).update(RBA(residual=["pde"]).init(["pde"], batch=_batch()),
                                     params=None, batch=_batch(),
                                     terms_fn=lambda p, b: {}, step=0)


def _heat1d():
    x, t = pinn.coords("x t")
    u = pinn.field("u")
    return pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 0.5),
        equations={"heat": pinn.D(u, t) - 0.1 * pinn.D(u, x, 2)},
        conditions={"walls": pinn.Dirichlet(u, 0, on="boundary", hard=True),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x), hard=True)},
        exact={u: pinn.exp(-0.1 * pinn.pi**2 * t) * pinn.sin(pinn.pi * x)},
    )


class _Keep(pinn.train.Observer):
    """Keeps the final training state (the weighting's multipliers)."""

    def close(self, result):
        self.state = result.state


def _train(stages, precision):
    training = pinn.Training(
        stages=stages, weighting=RBA(), chunk=300,
        points=pinn.Points(interior=256, boundary=16, initial=16, resample_every=None))
    keep = _Keep()
    run = pinn.setup(_heat1d(), pinn.MLP(width=12, depth=2), training, precision=precision,
                     progress=False, resolution=21, observers=[keep])
    untrained = Solution(run.problem, run.model, run.params, precision=precision,
                         resolution=21).score().rel_l2["u"]
    sol = run.train()
    return untrained, sol.metrics["rel_l2"]["u"], np.asarray(
        keep.state["weights"]["multipliers"]["heat"])


def test_a_tiny_problem_trains_with_rba():
    untrained, err, lam = _train([pinn.Stage(pinn.Adam(lr=1e-2), 300)], 32)
    # measured 0.616 -> 9.1e-4 (float32, seed 0)
    assert err < 3e-3 and err < 0.01 * untrained, (untrained, err)
    assert lam.shape == (256,)
    # 300 updates from 1: 0.999^300 = 0.74 of the start plus up to 0.01 * 300
    assert 0.7 < lam.min() and lam.max() <= 10.0 and lam.max() > lam.min() + 0.1


@pytest.mark.slow
def test_rba_multipliers_are_held_through_a_quasi_newton_stage():
    untrained, err, lam = _train([pinn.Stage(pinn.Adam(lr=1e-2), 200),
                                  pinn.Stage(pinn.SSBroyden(), 50)], 64)
    # measured 2.8e-5 (float64, seed 0)
    assert err < 1e-4, err
    # held in the SSBroyden stage (same points): still 200 updates' worth above 0.999^200
    assert 0.8 < lam.min() and lam.max() <= 1.0 + 0.01 * 200
