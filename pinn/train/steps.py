"""One training step over the pure state, as each kind of optimiser takes it.

A step is ``state -> (state, finite, gradient norm)`` (:mod:`pinn.train.core` holds the
state's layout): :func:`first_order_step` (an optax transformation, the points redrawn
every ``resample_every`` steps) and :func:`line_search_step` (a quasi-Newton direction and a
line search on a fixed batch, which stops when converged or stalled). An optimiser
declares which it takes (:meth:`pinn.train.optim.Optimizer.step`); Gauss-Newton brings its
own (:mod:`pinn.train.gauss_newton`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .weighting import with_multipliers

__all__ = ["RUNNING", "CONVERGED", "STALLED", "NONFINITE", "STATUS_NAMES", "first_order_step",
           "line_search_step", "all_finite", "select", "strong"]

# The status of a stage that can stop early (state["status"]).
RUNNING, CONVERGED, STALLED, NONFINITE = 0, 1, 2, 3
STATUS_NAMES = {
    RUNNING: "completed",
    CONVERGED: "converged",
    STALLED: "stalled",
    NONFINITE: "nonfinite_linesearch",
}


def all_finite(tree: Any) -> jax.Array:
    """Whether every floating leaf of ``tree`` is finite."""
    leaves = [
        jnp.all(jnp.isfinite(x))
        for x in jax.tree.leaves(tree)
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)
    ]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


def select(pred: jax.Array, a: Any, b: Any) -> Any:
    """``a`` where ``pred``, else ``b``, leaf by leaf."""
    return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)


def strong(tree: Any) -> Any:
    """The same pytree with weak types made strong, so the jitted chunk compiles once."""

    def fix(x: Any) -> Any:
        if not isinstance(x, jax.Array):
            return jnp.asarray(np.asarray(x))  # Python scalars and NumPy arrays: strong types
        return jnp.asarray(x, dtype=x.dtype) if getattr(x, "weak_type", False) else x

    return jax.tree.map(fix, tree)


def _placer(spec: Any) -> Callable:
    return (lambda b: b) if spec.sharding is None else spec.sharding.constrain


def first_order_step(spec: Any, weighted: Callable, tx: Any) -> Callable:
    """One step of a first-order optimiser (resampling every ``resample_every`` steps)."""
    terms_fn, sample_fn, weighting = spec.terms_fn, spec.sample_fn, spec.weighting
    resample_every = spec.resample_every
    place = _placer(spec)

    def step_fn(state):
        p, step = state["params"], state["step"]
        k, batch = state["key"], state["batch"]
        if resample_every is not None:

            def resample(args):
                k, _ = args
                k, sub = jax.random.split(k)
                return k, place(sample_fn(sub, p))

            k, batch = jax.lax.cond(
                (step > 0) & (step % resample_every == 0), resample, lambda a: a, (k, batch)
            )
        wstate = weighting.update(
            state["weights"], params=p, batch=batch, terms_fn=terms_fn, step=step
        )
        w = wstate["weights"]
        (loss, _), grads = jax.value_and_grad(weighted, has_aux=True)(
            p, with_multipliers(batch, wstate), w)
        updates, opt = tx.update(grads, state["opt"], p)
        scale = state["lr_scale"]
        updates = jax.tree.map(lambda u: u * scale.astype(u.dtype), updates)
        p = optax.apply_updates(p, updates)
        new = {
            **state,
            "params": p,
            "opt": opt,
            "weights": wstate,
            "key": k,
            "batch": batch,
            "step": step + 1,
        }
        # non-finite gradients show in the parameters, checked at the chunk's end
        return new, jnp.isfinite(loss), optax.tree.norm(grads)

    return step_fn


def skip_step(state):
    """A step of a stage that has stopped (converged or stalled): only the counter moves."""
    nan = jnp.asarray(jnp.nan, state["lr_scale"].dtype)
    return {**state, "step": state["step"] + 1}, jnp.asarray(True), nan


def line_search_step(spec: Any, weighted: Callable) -> Callable:
    """One full-batch quasi-Newton step (:class:`pinn.train.optim.LineSearch`: the
    optimiser's ``line_step``); once stopped (``status``), steps are skipped.

    A step that finds no decrease (``stalled``) with an older curvature memory restarts
    the memory at the same point (pairs from far away, a poor scaling); only a stall right
    after a restart ends the stage (the loss is then at its floor)."""
    opt = spec.optimizer
    gtol, every = opt.gtol, opt.resample_every
    place = _placer(spec)
    # pointwise multipliers (RBA) are held fixed in a full-batch stage, those of new points
    # restarted: every line search and curvature pair sees one loss
    refit = spec.weighting.refit if spec.weighting.pointwise else None

    def resample(state):
        k, sub = jax.random.split(state["key"])
        batch = place(spec.sample_fn(sub, state["params"]))
        return {**state, "key": k, "batch": batch, "opt": opt.refresh(state["opt"])}

    def do(state):
        if every is not None:  # a new batch (RAD), the optimiser told to forget its loss
            state = jax.lax.cond(opt.resample_due(state["opt"]), resample, lambda s: s, state)
        if refit is not None:
            state = {**state, "weights": refit(state["weights"], state["batch"])}
        p, o = state["params"], state["opt"]
        batch = with_multipliers(state["batch"], state["weights"])
        w = state["weights"]["weights"]
        value, gnorm, new_p, moved, new_o, fresh = opt.line_step(
            lambda q: weighted(q, batch, w)[0], p, o)
        new_value = opt.value(new_o)
        nonfinite = ~jnp.isfinite(new_value) | ~all_finite(new_p)
        # stalled: the step leaves the parameters as they are, or the line search found
        # no decrease of the loss; a step that only evaluated the loss (fresh) is neither
        stalled = ~fresh & (~moved | ~(new_value < value))
        restart = stalled & ~opt.fresh_memory(o) & ~nonfinite & (gnorm > gtol)
        status = jnp.where(
            gnorm <= gtol,
            CONVERGED,
            jnp.where(nonfinite, NONFINITE, jnp.where(stalled & ~restart, STALLED, RUNNING)),
        ).astype(jnp.int32)
        accept = (status == RUNNING) & ~restart
        new = {
            **state,
            "params": select(accept, new_p, p),
            "opt": opt.settle(accept, restart, new_o, o, p, spec.steps),
            "step": state["step"] + 1,
            "status": status,
            "status_step": jnp.where(accept, state["status_step"], state["step"]),
        }
        return new, jnp.isfinite(value), gnorm.astype(state["lr_scale"].dtype)

    return lambda state: jax.lax.cond(state["status"] != RUNNING, skip_step, do, state)
