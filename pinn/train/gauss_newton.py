"""Gauss-Newton methods on the stacked residual vector: Levenberg-Marquardt and damped
Gauss-Newton with a line search (energy natural gradient, Müller & Zeinhofer 2023).

The loss of a PINN is ``L(θ) = Σ_t w_t term_t(θ)``, each term a mean of squared residuals.
With ``terms_fn.residuals(params, batch) -> {name: ρ_t}`` (:func:`pinn.train.loss.assemble`
provides it; ``term_t == Σ ρ_t²``), the stacked vector ``r = [√w_t ρ_t]_t`` gives
``L = |r|²``. With ``J = ∂r/∂θ`` (all parameters, learnable PDE parameters included) a step
solves the damped normal equations

    (JᵀJ + λI) δ = -Jᵀr,   or in kernel form (Woodbury)   δ = -Jᵀ (JJᵀ + λI)⁻¹ r

(the second when there are fewer residuals than parameters: an m×m system instead of n×n),
by a Cholesky factorisation. ``λ = damping · mean(diag K)`` (``K``: the Gram matrix
solved), so that ``damping`` does not depend on the loss's scale.

- :class:`LevenbergMarquardt` adapts the damping: a trial step is accepted when the loss
  falls by at least ``accept`` times the decrease the linear model predicts (the gain ratio
  ``ρ``); then the damping goes ``down`` when ``ρ > 0.75`` and ``up`` when ``ρ < 0.25``. A
  rejected trial raises the damping and is tried again with the same ``J`` (at most
  ``max_tries`` per step).
- :class:`GaussNewton` keeps the damping fixed (small) and backtracks along the direction
  (step lengths 1, ½, ¼, …) until Armijo's sufficient decrease holds.

A step that finds no acceptable trial ends the stage as stalled (the loss is at its
rounding floor: use float64); a gradient norm at most ``gtol`` as converged. ``J`` is
dense, ``m × n`` (residuals × parameters), refused above ``max_jacobian`` entries. Its rows
come point by point where the loss says how (``loss.pointwise``: blocks of
:class:`pinn.train.terms.PointwiseResiduals`, one backward pass per point), the rest (and a
residual function without blocks) by ``jax.jacrev`` (``m < n``) or ``jax.jacfwd`` on the
whole batch, which costs a pass over the batch per residual or parameter. The stages run
full batch, in one pass (``micro_batch`` does not apply to them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from pinn.data import register

from .optim import Optimizer, check_int, check_positive
from .steps import CONVERGED, RUNNING, STALLED, skip_step
from .weighting import with_multipliers

__all__ = ["LevenbergMarquardt", "GaussNewton", "GNState", "gauss_newton_step",
           "residuals_of"]

class GNState(NamedTuple):
    """``damping``: the relative damping for the next step; ``learning_rate``: the step
    length of the last step (the line search's; 1 for Levenberg-Marquardt); ``count``: steps
    taken; ``tries``: trial evaluations of the last step."""

    damping: jax.Array
    learning_rate: jax.Array
    count: jax.Array
    tries: jax.Array


class StepInfo(NamedTuple):
    """What one step found: the loss before and after, the gradient norm, acceptance."""

    loss: jax.Array
    new_loss: jax.Array
    grad_norm: jax.Array
    accepted: jax.Array


@dataclass(frozen=True)
class _Rule:
    """The numbers of a step (hashable: part of the compiled program's identity)."""

    adaptive: bool  # True: Levenberg-Marquardt; False: fixed damping and a line search
    up: float
    down: float
    min_damping: float
    max_damping: float
    accept: float  # LM: the least gain ratio; GN: Armijo's constant
    shrink: float  # GN: the step-length factor per backtracking trial
    max_tries: int


def _jacobian(f: Callable, x: jax.Array, m: int) -> jax.Array:
    """``∂f/∂x`` (``m × n``) by reverse mode when ``m < n``, else by forward mode."""
    return jax.jacrev(f)(x) if m < x.size else jax.jacfwd(f)(x)


def _solver(J: jax.Array, r: jax.Array) -> tuple[Callable, jax.Array]:
    """``solve(λ) -> δ`` with ``(JᵀJ + λI) δ = -Jᵀr`` (the kernel form when ``m < n``),
    and the mean diagonal of the Gram matrix (the scale of ``λ``)."""
    m, n = J.shape
    if m < n:
        K, eye = J @ J.T, jnp.eye(m, dtype=J.dtype)

        def solve(lam):
            c = jax.scipy.linalg.cho_factor(K + lam * eye)
            return -J.T @ jax.scipy.linalg.cho_solve(c, r)
    else:
        K, eye, g = J.T @ J, jnp.eye(n, dtype=J.dtype), J.T @ r

        def solve(lam):
            c = jax.scipy.linalg.cho_factor(K + lam * eye)
            return -jax.scipy.linalg.cho_solve(c, g)

    scale = jnp.trace(K) / K.shape[0]
    tiny = jnp.finfo(J.dtype).tiny
    return solve, jnp.where(scale > tiny, scale, 1.0)


def gauss_newton_step(f: Callable, x: jax.Array, state: GNState, rule: _Rule, m: int,
                      linearize: Callable | None = None) -> tuple[jax.Array, GNState, StepInfo]:
    """One step on the flat parameters ``x`` for the residual function ``f(x) -> r`` (``m``
    residuals; the loss is ``|r|²``): the new ``x`` (unchanged when no trial is accepted),
    the new state and what the step found. ``linearize(x) -> (r, J)``: the residuals and
    their Jacobian in any order of the residuals (default: ``f`` and its Jacobian)."""
    dt = x.dtype
    r, J = (f(x), _jacobian(f, x, m)) if linearize is None else linearize(x)
    loss = r @ r
    g = J.T @ r  # half the gradient of |r|²
    solve, scale = _solver(J, r)

    def loss_at(y):
        ry = f(y)
        return ry @ ry

    def good(v):
        return jnp.isfinite(v)

    if rule.adaptive:
        def trial(carry):
            lam, k, _, _, _, _ = carry
            d = solve(lam * scale)
            Jd = J @ d
            predicted = -(2 * (r @ Jd) + Jd @ Jd)  # loss - |r + J d|²
            new = loss_at(x + d)
            ratio = (loss - new) / predicted
            ok = good(new) & jnp.all(jnp.isfinite(d)) & (predicted > 0) & (ratio >= rule.accept)
            return (jnp.where(ok, lam, lam * rule.up), k + 1, d, new, ratio, ok)

        def more(carry):
            lam, k, *_, ok = carry
            return ~ok & (k < rule.max_tries) & (lam <= rule.max_damping)

        zero = jnp.zeros((), dt)
        init = (state.damping, jnp.zeros((), jnp.int32), jnp.zeros_like(x), loss, zero,
                jnp.asarray(False))
        lam, tries, d, new, ratio, ok = jax.lax.while_loop(more, trial, init)
        lam = jnp.where(ok & (ratio > 0.75), lam * rule.down,
                        jnp.where(ok & (ratio < 0.25), lam * rule.up, lam))
        lam = jnp.clip(lam, rule.min_damping, rule.max_damping)
        step_length = jnp.ones((), dt)
    else:
        d = solve(state.damping * scale)
        slope = 2 * (g @ d)  # the directional derivative of the loss (negative)

        def trial(carry):
            alpha, k, _, _ = carry
            new = loss_at(x + alpha * d)
            ok = good(new) & (new <= loss + rule.accept * alpha * slope) & (slope < 0)
            return (jnp.where(ok, alpha, alpha * rule.shrink), k + 1, new, ok)

        def more(carry):
            _, k, _, ok = carry
            return ~ok & (k < rule.max_tries)

        init = (jnp.ones((), dt), jnp.zeros((), jnp.int32), loss, jnp.asarray(False))
        step_length, tries, new, ok = jax.lax.while_loop(more, trial, init)
        d = step_length * d
        lam = state.damping
    x_new = jnp.where(ok, x + d, x)
    new_state = GNState(lam.astype(state.damping.dtype),
                        jnp.where(ok, step_length, 0).astype(state.learning_rate.dtype),
                        state.count + 1, tries)
    info = StepInfo(loss, jnp.where(ok, new, loss), 2 * jnp.linalg.norm(g), ok)
    return x_new, new_state, info


def _linearize(blocks: tuple, residuals: Callable, names: tuple, unravel: Callable, batch: Any,
               w: dict, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(r, J)`` with the rows of the point-by-point ``blocks`` (each row from one point's
    backward pass; ``pinn.train.terms.PointwiseResiduals``) and, for the terms no block
    covers, from ``residuals`` by reverse mode on the whole batch."""
    p = unravel(x)
    rows, jacs = [], []
    for blk in blocks:
        weights = blk.weights(p, batch)

        def at(y, point, blk=blk):
            out = blk.residual(unravel(y), point)
            return out, out

        jac, val = jax.vmap(lambda point, at=at: jax.jacrev(at, has_aux=True)(x, point))(
            blk.points(batch))
        for n in blk.names:
            s = jnp.sqrt(w[n].astype(x.dtype) * weights[n].astype(x.dtype))
            rows.append(jnp.ravel(s[:, None] * val[n].astype(x.dtype)))
            jacs.append((s[:, None, None] * jac[n].astype(x.dtype)).reshape(-1, x.size))
    covered = {n for blk in blocks for n in blk.names}
    rest = tuple(n for n in names if n not in covered)
    if rest:
        def g(y):
            res = residuals(unravel(y), batch)
            return jnp.concatenate([jnp.sqrt(w[n]).astype(y.dtype) * jnp.ravel(res[n])
                                    for n in rest])

        rows.append(g(x))
        jacs.append(jax.jacrev(g)(x))
    return jnp.concatenate(rows), jnp.concatenate(jacs, axis=0)


def residuals_of(loss: Any, owner: str) -> Callable:
    """The residual form of ``loss`` (:class:`pinn.train.terms.Loss`), or a clear error."""
    if loss.residuals is None:
        raise ValueError(
            f"{owner}: a Gauss-Newton stage needs the loss terms as residual vectors: give "
            "the loss its residual form, pinn.train.Loss(terms, residuals=...) with "
            "residuals(params, batch) -> {name: 1-D array} and terms[name] == "
            "sum(square(residuals[name])) (the loss of pinn.train.loss.assemble has it), or "
            "use LBFGS/SSBroyden for this stage.")
    return loss.residuals


@dataclass(frozen=True)
class _GaussNewtonStage(Optimizer):
    """What the two stages share: the residual vector, its Jacobian, a full-batch step."""

    damping: float
    accept: float = 1e-4
    max_tries: int = 30
    gtol: float = 0.0
    max_jacobian: int = 50_000_000

    full_batch = True
    prefers_float64 = True  # precision "auto" (the default) trains in float64

    def __post_init__(self) -> None:
        name = type(self).__name__
        check_positive(name, "damping", self.damping)
        check_positive(name, "accept", self.accept)
        check_positive(name, "gtol", self.gtol, allow_zero=True)
        check_int(name, "max_tries", self.max_tries, minimum=1)
        check_int(name, "max_jacobian", self.max_jacobian, minimum=1)

    def _rule(self) -> _Rule:
        raise NotImplementedError

    def init(self, params: Any, total_steps: int) -> GNState:
        """The state at a stage's start: the initial damping, a full step length."""
        dt = jnp.result_type(ravel_pytree(params)[0])
        return GNState(jnp.asarray(self.damping, dt), jnp.ones((), dt),
                       jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def step(self, spec: Any, weighted: Callable) -> Callable:
        """The training core's step: ``state -> (state, finite, gradient norm)`` on the
        residual vector (``weighted`` is not used: the step needs the residuals)."""
        del weighted
        name = type(self).__name__
        residuals = residuals_of(spec.terms_fn, name)
        blocks = spec.terms_fn.pointwise
        names, rule, gtol = tuple(spec.names), self._rule(), self.gtol
        limit = self.max_jacobian
        # RBA: the multipliers held fixed
        refit = spec.weighting.refit if spec.weighting.pointwise else None

        def do(state):
            if refit is not None:
                state = {**state, "weights": refit(state["weights"], state["batch"])}
            p, w = state["params"], state["weights"]["weights"]
            batch = with_multipliers(state["batch"], state["weights"])
            flat, unravel = ravel_pytree(p)

            def f(x):
                res = residuals(unravel(x), batch)
                return jnp.concatenate([
                    jnp.sqrt(w[n]).astype(x.dtype) * jnp.ravel(res[n]).astype(x.dtype)
                    for n in names])

            m = jax.eval_shape(f, flat).shape[0]
            if m * flat.size > limit:
                raise ValueError(
                    f"{name}: the Jacobian would have {m} residuals x {flat.size} parameters "
                    f"= {m * flat.size} entries, above max_jacobian={limit}: use fewer "
                    "points or a smaller network for this stage, or raise max_jacobian.")
            linearize = None
            if blocks:
                linearize = functools.partial(_linearize, blocks, residuals, names, unravel,
                                              batch, w)
            x, opt, info = gauss_newton_step(f, flat, state["opt"], rule, m, linearize)
            status = jnp.where(info.grad_norm <= gtol, CONVERGED,
                               jnp.where(info.accepted, RUNNING, STALLED)).astype(jnp.int32)
            accept = status == RUNNING
            new = {
                **state,
                "params": jax.tree.map(lambda a, b: jnp.where(accept, a, b), unravel(x), p),
                "opt": opt,
                "step": state["step"] + 1,
                "status": status,
                "status_step": jnp.where(accept, state["status_step"], state["step"]),
            }
            gnorm = info.grad_norm.astype(state["lr_scale"].dtype)
            return new, jnp.isfinite(info.loss), gnorm

        return lambda state: jax.lax.cond(state["status"] != RUNNING, skip_step, do, state)



@register("optimizer")
@dataclass(frozen=True)
class LevenbergMarquardt(_GaussNewtonStage):
    """Levenberg-Marquardt on the stacked residual vector (see the module docstring), run
    full batch; use float64 (``precision: 64``) to go below the float32 rounding floor.

    Args:
        damping: the initial damping, relative to the mean diagonal of the Gram matrix.
        up, down: the damping's factors after a poor or rejected (``up``) and after a good
            (``down``) trial.
        min_damping, max_damping: bounds of the (relative) damping; a step that would need
            more than ``max_damping`` has stalled.
        accept: the least ratio of the actual to the predicted decrease that accepts a trial.
        max_tries: trials (loss evaluations) per step.
        gtol: stop when the gradient norm of the weighted loss is at most this.
        max_jacobian: refuse a Jacobian (residuals × parameters) with more entries.
    """

    damping: float = 1e-3
    up: float = 3.0
    down: float = 1 / 3
    min_damping: float = 1e-12
    max_damping: float = 1e12

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        for f in ("up", "min_damping", "max_damping"):
            check_positive(name, f, getattr(self, f))
        if not (isinstance(self.down, (int, float)) and 0 < self.down < 1):
            raise ValueError(f"{name}: down must lie in (0, 1), got {self.down!r}.")
        if self.up <= 1:
            raise ValueError(f"{name}: up must be > 1, got {self.up!r}.")
        if not self.min_damping <= self.damping <= self.max_damping:
            raise ValueError(f"{name}: damping must lie in [min_damping, max_damping], got "
                             f"{self.damping!r}.")

    def _rule(self) -> _Rule:
        return _Rule(True, float(self.up), float(self.down), float(self.min_damping),
                     float(self.max_damping), float(self.accept), 0.5, self.max_tries)


@register("optimizer")
@dataclass(frozen=True)
class GaussNewton(_GaussNewtonStage):
    """Gauss-Newton with a fixed small damping and a backtracking (Armijo) line search: the
    energy natural gradient of Müller & Zeinhofer (2023) for PINNs, run full batch.

    Args:
        damping: the (fixed) damping, relative to the mean diagonal of the Gram matrix.
        accept: Armijo's constant (sufficient decrease).
        shrink: the step-length factor per backtracking trial (``max_tries`` trials).
        gtol, max_jacobian: as :class:`LevenbergMarquardt`'s.
    """

    damping: float = 1e-10
    shrink: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (isinstance(self.shrink, (int, float)) and 0 < self.shrink < 1):
            raise ValueError(f"GaussNewton: shrink must lie in (0, 1), got {self.shrink!r}.")

    def _rule(self) -> _Rule:
        d = float(self.damping)
        return _Rule(False, 1.0, 1.0, d, d, float(self.accept), float(self.shrink),
                     self.max_tries)
