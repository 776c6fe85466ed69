"""Loss-term weighting (gradient-norm balancing, causal weights) and optimiser schedules."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pinn.train import (
    LBFGS,
    Adam,
    AdamW,
    Annealing,
    Causal,
    Fixed,
    GradNorm,
    Stage,
    causal_loss,
    causal_weights,
)


def two_terms(p, batch):
    del batch
    return {"a": jnp.sum((p - 1.0) ** 2), "b": 100.0 * jnp.sum((p + 1.0) ** 2)}


@jax.jit
def _grad_norms(p):
    ga = jax.grad(lambda q: two_terms(q, None)["a"])(p)
    gb = jax.grad(lambda q: two_terms(q, None)["b"])(p)
    return jnp.linalg.norm(ga), jnp.linalg.norm(gb)


def grad_norms(p):
    return tuple(float(n) for n in _grad_norms(p))


def test_gradnorm_one_update_equalises_gradient_norms():
    p = jnp.array([0.3, -2.0, 1.5])
    na, nb = grad_norms(p)
    assert nb / na > 50  # the toy loss is badly balanced
    gn = GradNorm(every=5, alpha=0.0)
    state = jax.jit(lambda s: gn.recompute(s, p, None, two_terms))(gn.init(["a", "b"]))
    wa, wb = float(state["weights"]["a"]), float(state["weights"]["b"])
    np.testing.assert_allclose(wa * na, wb * nb, rtol=1e-5)
    np.testing.assert_allclose(wa, (na + nb) / na, rtol=1e-5)
    np.testing.assert_allclose(wb, (na + nb) / nb, rtol=1e-5)


def test_gradnorm_moving_average_converges_and_respects_every():
    p = jnp.array([0.3, -2.0, 1.5])
    na, nb = grad_norms(p)
    gn = GradNorm(every=5, alpha=0.9)
    update = jax.jit(lambda s, k: gn.update(s, params=p, batch=None, terms_fn=two_terms, step=k))
    state = gn.init(["a", "b"])
    same = update(state, jnp.int32(3))  # not a multiple of every: unchanged
    assert float(same["weights"]["b"]) == 1.0
    first = update(state, jnp.int32(5))
    expected = 0.9 * 1.0 + 0.1 * (na + nb) / na
    np.testing.assert_allclose(float(first["weights"]["a"]), expected, rtol=1e-5)
    for k in range(200):
        state = update(state, jnp.int32(5 * k))
    wa, wb = float(state["weights"]["a"]), float(state["weights"]["b"])
    np.testing.assert_allclose(wa * na, wb * nb, rtol=1e-5)  # 0.9**200 ~ 7e-10


def test_fixed_weights_defaults_and_errors():
    state = Fixed({"b": 10.0}).init(["a", "b"])
    assert float(state["weights"]["a"]) == 1.0 and float(state["weights"]["b"]) == 10.0
    with pytest.raises(ValueError, match="'c'"):
        Fixed({"c": 1.0}).init(["a", "b"])
    with pytest.raises(ValueError, match="every"):
        GradNorm(every=0)
    assert Causal(eps=2.0).init(["a"])["weights"]["a"] == 1.0


def test_causal_weights_closed_form_monotone_and_no_gradient():
    losses = jnp.array([1.0, 2.0, 3.0, 0.5])
    weights = jax.jit(causal_weights)
    w = weights(losses, 0.5)
    np.testing.assert_allclose(w, np.exp(-0.5 * np.array([0.0, 1.0, 3.0, 6.0])), rtol=1e-6)
    rng = np.random.default_rng(0)
    for eps in (0.1, 1.0, 10.0):
        w = np.asarray(weights(jnp.asarray(rng.exponential(size=64)), eps))
        assert w[0] == 1.0 and np.all(np.diff(w) <= 0) and np.all(w >= 0)
    # stop-gradient: d/dL sum(w * L) = w exactly
    grad = jax.jit(jax.grad(lambda L: jnp.sum(causal_weights(L, 1.0) * L)))(losses)
    np.testing.assert_allclose(grad, weights(losses, 1.0), rtol=1e-7)


def test_causal_loss_bins_points_by_time():
    t = jnp.array([0.05, 0.15, 0.3, 0.35, 0.9, 0.95])
    r2 = jnp.array([1.0, 3.0, 2.0, 2.0, 4.0, 6.0])
    loss, w = jax.jit(lambda r, s: causal_loss(r, s, t0=0.0, t1=1.0, eps=1.0, chunks=4))(r2, t)
    chunk = np.array([2.0, 2.0, 0.0, 5.0])  # means over [0,.25) [.25,.5) [.5,.75) [.75,1]
    expected_w = np.exp(-np.array([0.0, 2.0, 4.0, 4.0]))
    np.testing.assert_allclose(w, expected_w, rtol=1e-6)
    np.testing.assert_allclose(loss, np.mean(expected_w * chunk), rtol=1e-6)


def test_adam_schedules_closed_form():
    exp = Adam(lr=1e-2, warmup=10, decay="exponential", decay_rate=0.5, decay_steps=20)
    s = exp.schedule(100)
    np.testing.assert_allclose([s(5), s(10), s(30), s(50)], [5e-3, 1e-2, 5e-3, 2.5e-3], rtol=1e-6)
    cos = Adam(lr=1e-3, decay="cosine").schedule(100)
    np.testing.assert_allclose([cos(0), cos(50), cos(100)], [1e-3, 5e-4, 0.0], atol=1e-9)
    assert float(Adam(lr=3e-3, decay=None).schedule(100)(77)) == pytest.approx(3e-3)
    # the default: exponential, 0.9 per tenth of the stage
    assert float(Adam(lr=3e-3).schedule(100)(20)) == pytest.approx(3e-3 * 0.81, rel=1e-6)
    with pytest.raises(ValueError, match="'linear'"):
        Adam(decay="linear")
    with pytest.raises(ValueError, match="lr"):
        Adam(lr=-1.0)
    with pytest.raises(TypeError, match="must be a pinn optimiser .* got .adam."):
        Stage("adam", 10)
    with pytest.raises(ValueError, match="steps"):
        Stage(LBFGS(), 0)


def test_adamw_does_not_decay_learnable_pde_parameters():
    params = {"net": {"w": jnp.ones(3)}, "pde": {"nu": jnp.asarray(0.5)}}
    tx = AdamW(lr=0.1, weight_decay=0.5).make(10)

    @jax.jit
    def step(params):
        zero = jax.tree.map(jnp.zeros_like, params)
        updates, _ = tx.update(zero, tx.init(params), params)
        return optax.apply_updates(params, updates)

    new = step(params)
    np.testing.assert_allclose(new["net"]["w"], 1.0 - 0.1 * 0.5, rtol=1e-6)
    assert float(new["pde"]["nu"]) == 0.5


def _pde_walls(scale_pde, scale_walls):
    """A residual term and a boundary term whose gradients differ by orders of magnitude."""

    def terms(p, batch):
        del batch
        return {"pde": scale_pde * jnp.sum((p[:2] - 0.5) ** 2),
                "walls": scale_walls * jnp.sum((p - 1.0) ** 2)}

    return terms


@pytest.mark.parametrize("cls", [GradNorm, Annealing])
@pytest.mark.parametrize("scales", [(1e-9, 1.0), (1e6, 1e-6), (1.0, 1.0)])
def test_bounded_balancing_keeps_the_residual_weight_and_the_bounds(cls, scales):
    """Issue 14: the residual term's weight stays 1 whatever the gradients, the boundary
    weight stays within its bounds (a vanishing residual gradient, the trivial solution of
    a Laplace problem, cannot push it below the lower bound), and one update with
    alpha = 0 is the rule itself, clipped."""
    terms = _pde_walls(*scales)
    p = jnp.array([0.3, -2.0, 1.5])
    w = cls(every=1, alpha=0.0, bounds=(1.0, 1e3)).with_residual_terms(["pde"])
    update = jax.jit(lambda s, k: w.update(s, params=p, batch=None, terms_fn=terms, step=k))
    state = w.init(["pde", "walls"])
    gp = jax.grad(lambda q: terms(q, None)["pde"])(p)
    gw = jax.grad(lambda q: terms(q, None)["walls"])(p)
    if cls is GradNorm:
        want = float(jnp.linalg.norm(gp) / jnp.linalg.norm(gw))
    else:
        want = float(jnp.max(jnp.abs(gp)) / jnp.mean(jnp.abs(gw)))
    first = update(state, jnp.int32(0))
    np.testing.assert_allclose(float(first["weights"]["walls"]), min(max(want, 1.0), 1e3),
                               rtol=1e-5)
    smooth = replace(w, alpha=0.9)
    update = jax.jit(lambda s, k: smooth.update(s, params=p, batch=None, terms_fn=terms,
                                                step=k))
    for k in range(50):
        state = update(state, jnp.int32(k))
        assert float(state["weights"]["pde"]) == 1.0
        assert 1.0 <= float(state["weights"]["walls"]) <= 1e3


def test_bounded_balancing_refuses_bad_bounds_and_unknown_residual_terms():
    with pytest.raises(ValueError, match="bounds"):
        GradNorm(bounds=(10.0, 1.0))
    with pytest.raises(ValueError, match="bounds"):
        Annealing(bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="'heat'"):
        GradNorm(residual=["heat"]).init(["laplace", "walls"])
