"""Self-scaled quasi-Newton methods with a dense inverse Hessian: SSBFGS and SSBroyden.

The update of the inverse Hessian approximation ``H`` after a step ``s = x+ - x`` with
gradient change ``y = g+ - g`` is the self-scaled Broyden family of Al-Baali (2003, "A wide
interval for efficient self-scaling quasi-Newton algorithms"), in the form used for PINNs by
Urbán, Stefanou & Pons (J. Comput. Phys. 523, 2025, eqs. 11-23) and Kiyani et al. (2025)::

    H+ = (H - H y yᵀ H / (yᵀ H y) + φ (yᵀ H y) v vᵀ) / τ + s sᵀ / (yᵀ s),
    v  = s / (yᵀ s) - H y / (yᵀ H y)

with the scaling ``τ`` and the Broyden parameter ``φ`` chosen from ``b = -α sᵀg / (yᵀ s)``
(``α``: the step length) and ``h = yᵀ H y / (yᵀ s)``. ``φ = 0`` with ``τ = min(1, 1/b)`` is
SSBFGS (Al-Baali & Khalfan's choice, "SSBFGS_AB"); SSBroyden picks ``θ`` (and from it ``φ``
and ``τ``) in Al-Baali's wide interval ("SSBroyden2" of the reference code,
github.com/jorgeurban/self_scaled_algorithms_pinns, ``modified_optimize.py``).

A step takes the direction ``-H g`` and a strong-Wolfe (zoom) line search (optax's). When
the curvature condition fails (``yᵀs`` not positive) or ``H`` stops giving a descent
direction, ``H`` restarts from the identity scaled by ``yᵀs / yᵀy`` (or the identity).

The dense ``H`` has ``n²`` entries for ``n`` parameters: cheap for the small networks these
methods are meant for (a 3×30 MLP has ~2 000 parameters: 32 MB in float64), refused above
``max_params``. End in float64: in float32 the line search stalls at the loss's rounding
floor long before these methods pay off. ``precision: auto`` (the default) runs the stage
``"mixed"``: float32 steps (about half the cost) until that stall, then float64 from the same
point with ``H`` kept (:meth:`pinn.train.core.Core.escalate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from .optim import _check_int, _check_positive

__all__ = ["SSBroyden", "SSBFGS", "scale_by_self_scaled_broyden", "wolfe_search"]

Method = Literal["ssbroyden", "ssbfgs", "bfgs"]


class SelfScaledState(NamedTuple):
    """State of :func:`scale_by_self_scaled_broyden` (arrays on the flattened parameters)."""

    inv_hessian: jax.Array  # H, n × n
    prev_params: jax.Array
    prev_grad: jax.Array
    prev_direction: jax.Array
    count: jax.Array  # steps taken (int32)
    fresh: jax.Array  # True: the next pair is not a curvature pair (start, new batch)
    restarts: jax.Array  # times H restarted (int32)


def _safe_div(a: jax.Array, b: jax.Array) -> jax.Array:
    tiny = jnp.finfo(jnp.result_type(b)).tiny
    return a / jnp.where(jnp.abs(b) > tiny, b, jnp.where(b < 0, -tiny, tiny))


def _theta_tau(method: str, b: jax.Array, h: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """Al-Baali's ``θ`` and ``τ`` (``φ = (1-θ)/(1+aθ)``) for ``method``."""
    if method == "bfgs":
        return jnp.zeros_like(b), jnp.ones_like(b)
    if method == "ssbfgs":
        return jnp.zeros_like(b), jnp.minimum(1.0, _safe_div(1.0, b))
    a = b * h - 1.0
    root = jnp.sqrt(_safe_div(jnp.abs(a), 1.0 + a))
    rho_minus = jnp.minimum(1.0, h * (1.0 - root))
    theta_minus = _safe_div(rho_minus - 1.0, a)
    theta_plus = _safe_div(1.0, rho_minus)
    theta = jnp.maximum(theta_minus, jnp.minimum(theta_plus, _safe_div(1.0 - b, b)))
    rho_k = jnp.minimum(1.0, _safe_div(1.0, b))
    sigma = 1.0 + theta * a
    sigma_root = jnp.abs(sigma) ** (1.0 / (1.0 - n)) if n > 1 else jnp.ones_like(sigma)
    tau = jnp.where(theta <= 0, jnp.minimum(rho_k * sigma_root, sigma),
                    rho_k * jnp.minimum(sigma_root, _safe_div(1.0, theta)))
    return theta, tau


def _update_inverse(method: str, H, s, y, g_old, alpha, n: int):
    """``H+`` from the pair ``(s, y)``; also whether the pair was a curvature pair."""
    ys = jnp.vdot(y, s)
    Hy = H @ y
    yHy = jnp.vdot(y, Hy)
    rho = _safe_div(1.0, ys)
    h = yHy * rho
    b = -alpha * rho * jnp.vdot(s, g_old)
    theta, tau = _theta_tau(method, b, h, n)
    a = b * h - 1.0
    phi = _safe_div(1.0 - theta, 1.0 + a * theta)
    v = s * rho - Hy / jnp.where(yHy > 0, yHy, 1.0)
    new = (H - jnp.outer(Hy, Hy) / jnp.where(yHy > 0, yHy, 1.0)
           + phi * yHy * jnp.outer(v, v)) / tau + rho * jnp.outer(s, s)
    new = 0.5 * (new + new.T)  # keep it symmetric against rounding
    ok = (ys > 1e-10 * jnp.linalg.norm(s) * jnp.linalg.norm(y)) & (yHy > 0) & (tau > 0)
    ok = ok & jnp.all(jnp.isfinite(new))
    return new, ok, ys


def scale_by_self_scaled_broyden(method: Method = "ssbroyden") -> optax.GradientTransformation:
    """The quasi-Newton direction ``-H g`` with ``H`` updated by the self-scaled family.

    Chain it with a line search that stores ``value``/``grad`` (as :class:`SSBroyden`
    does): the step length it took is recovered from ``s`` and the previous direction.
    """
    if method not in ("ssbroyden", "ssbfgs", "bfgs"):
        raise ValueError(f"method must be 'ssbroyden', 'ssbfgs' or 'bfgs', got {method!r}")

    def init(params):
        flat, _ = ravel_pytree(params)
        n = flat.size
        zeros = jnp.zeros_like(flat)
        return SelfScaledState(
            inv_hessian=jnp.eye(n, dtype=flat.dtype), prev_params=zeros, prev_grad=zeros,
            prev_direction=zeros, count=jnp.zeros((), jnp.int32),
            fresh=jnp.asarray(True), restarts=jnp.zeros((), jnp.int32))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_self_scaled_broyden needs params")
        g, unravel = ravel_pytree(updates)
        x, _ = ravel_pytree(params)
        n = g.size
        H = state.inv_hessian
        s = x - state.prev_params
        y = g - state.prev_grad
        d_old = state.prev_direction
        alpha = _safe_div(jnp.vdot(s, d_old), jnp.vdot(d_old, d_old))

        def with_pair(H):
            new, ok, ys = _update_inverse(method, H, s, y, state.prev_grad, alpha, n)
            yy = jnp.vdot(y, y)
            restart = jnp.where((ys > 0) & (yy > 0), ys / jnp.where(yy > 0, yy, 1.0), 1.0)
            return jnp.where(ok, new, restart * jnp.eye(n, dtype=H.dtype)), ~ok

        H, restarted = jax.lax.cond(state.fresh, lambda H: (H, jnp.asarray(False)),
                                    with_pair, H)
        d = -(H @ g)
        descent = (jnp.vdot(d, g) < 0) & jnp.all(jnp.isfinite(d))
        eye = jnp.eye(n, dtype=H.dtype)
        H = jnp.where(descent, H, eye)
        d = jnp.where(descent, d, -g)
        restarted = restarted | ~descent
        new_state = SelfScaledState(
            inv_hessian=H, prev_params=x, prev_grad=g, prev_direction=d,
            count=state.count + 1, fresh=jnp.asarray(False),
            restarts=state.restarts + restarted.astype(jnp.int32))
        return unravel(d), new_state

    return optax.GradientTransformation(init, update)


class _Search(NamedTuple):
    """The carry of :func:`wolfe_search` (scalars along the direction, ``g_*`` vectors)."""

    trials: jax.Array
    alpha: jax.Array  # the next trial step
    zoom: jax.Array  # False: bracketing (growing the step), True: zooming in a bracket
    a_prev: jax.Array
    f_prev: jax.Array
    d_prev: jax.Array
    lo: jax.Array
    f_lo: jax.Array
    d_lo: jax.Array
    hi: jax.Array
    f_hi: jax.Array
    d_hi: jax.Array
    done: jax.Array
    tight: jax.Array  # the bracket has shrunk below ``interval`` with no acceptable step
    best_a: jax.Array  # the lowest value seen (the fallback when no step is strong-Wolfe)
    best_f: jax.Array
    best_g: jax.Array
    ok_a: jax.Array  # the accepted (strong-Wolfe) step
    ok_f: jax.Array
    ok_g: jax.Array


def _cubic_step(a, fa, da, b, fb, db):
    """The minimiser of the cubic through ``(a, fa, da)`` and ``(b, fb, db)`` (Nocedal &
    Wright, eq. 3.59), kept in the middle 80 % of the interval; its midpoint when the cubic
    has none."""
    d1 = da + db - 3.0 * _safe_div(fa - fb, a - b)
    d2 = jnp.sign(b - a) * jnp.sqrt(jnp.maximum(d1 * d1 - da * db, 0.0))
    t = b - (b - a) * _safe_div(db + d2 - d1, db - da + 2.0 * d2)
    low, high = jnp.minimum(a, b), jnp.maximum(a, b)
    margin = 0.1 * (high - low)
    t = jnp.where(jnp.isfinite(t), t, 0.5 * (a + b))
    return jnp.clip(t, low + margin, high - margin)


def wolfe_search(value_and_grad: Any, x: jax.Array, f0: jax.Array, g0: jax.Array,
                 d: jax.Array, fresh: jax.Array, max_trials: int, c1: float = 1e-4,
                 c2: float = 0.9, max_step: float = 1e3, approx: float = 1e-6,
                 interval: float = 1e-5) -> tuple[jax.Array, ...]:
    """A strong-Wolfe line search along ``d`` from ``x`` (``f0``, ``g0``: value and gradient
    there), the bracketing and zoom phases of Nocedal & Wright (Algorithms 3.5, 3.6; cubic
    interpolation; the approximate sufficient decrease of Hager & Zhang within ``approx``
    of ``f0``, as optax's) as one loop with one call of ``value_and_grad``: traced once, the step
    program compiles in about half the time of optax's zoom line search, which calls it in
    three places. The first trial is the step 1. ``fresh``: ``f0``/``g0`` are unknown (a
    new batch, a restart): the only trial is ``x`` itself.

    Returns ``(alpha, f, g, moved, trials)``: the step taken, the value and gradient there,
    whether it moved, and the evaluations made. Without a strong-Wolfe step in
    ``max_trials`` evaluations (or once the bracket is narrower than ``interval``, as
    optax's) it takes the lowest value seen if below ``f0``, else none.
    """
    dt = f0.dtype
    slope = jnp.vdot(g0, d)
    zero = jnp.zeros((), dt)
    start = _Search(
        trials=jnp.zeros((), jnp.int32), alpha=jnp.where(fresh, zero, jnp.ones((), dt)),
        zoom=jnp.asarray(False), a_prev=zero, f_prev=f0, d_prev=slope, lo=zero, f_lo=f0,
        d_lo=slope, hi=zero, f_hi=f0, d_hi=slope, done=jnp.asarray(False),
        tight=jnp.asarray(False), best_a=zero,
        best_f=jnp.where(fresh, jnp.asarray(jnp.inf, dt), f0), best_g=g0, ok_a=zero,
        ok_f=f0, ok_g=g0)

    def cond(c: _Search) -> jax.Array:
        return ~c.done & ~c.tight & (c.trials < max_trials)

    def body(c: _Search) -> _Search:
        a = c.alpha
        f, g = value_and_grad(x + a * d)
        f = jnp.where(jnp.isfinite(f), f, jnp.inf)  # a non-finite trial: too far
        da = jnp.vdot(g, d)
        # sufficient decrease: Armijo's, or near a minimiser (no rise beyond rounding) Hager
        # & Zhang's approximate form (2006, eq. 23), which rounding cannot defeat
        armijo = (f <= f0 + c1 * a * slope) | (
            (da <= (2.0 * c1 - 1.0) * slope) & (f <= f0 + approx * jnp.abs(f0)))
        curvature = jnp.abs(da) <= -c2 * slope
        better = f < c.best_f
        best_a, best_f = jnp.where(better, a, c.best_a), jnp.where(better, f, c.best_f)
        best_g = jnp.where(better, g, c.best_g)
        # bracketing: a bracket [prev, a] once a fails Armijo or stops decreasing, an
        # accepted step when Armijo and the curvature hold, a bracket [a, prev] when the
        # slope turns positive, else a step twice as long
        b_hi = ~armijo | ((c.trials > 0) & (f >= c.f_prev))
        b_ok = ~b_hi & curvature
        b_flip = ~b_hi & ~b_ok & (da >= 0)
        # zooming in [lo, hi]: a failing a becomes hi; else a accepted, or the new lo
        z_hi = ~armijo | (f >= c.f_lo)
        z_ok = ~z_hi & curvature
        z_swap = ~z_hi & ~z_ok & (da * (c.hi - c.lo) >= 0)
        zoom = c.zoom
        ok = jnp.where(zoom, z_ok, b_ok) | fresh
        lo = jnp.where(zoom, jnp.where(z_hi, c.lo, a), jnp.where(b_hi, c.a_prev, a))
        f_lo = jnp.where(zoom, jnp.where(z_hi, c.f_lo, f), jnp.where(b_hi, c.f_prev, f))
        d_lo = jnp.where(zoom, jnp.where(z_hi, c.d_lo, da), jnp.where(b_hi, c.d_prev, da))
        hi = jnp.where(zoom, jnp.where(z_hi, a, jnp.where(z_swap, c.lo, c.hi)),
                       jnp.where(b_hi, a, c.a_prev))
        f_hi = jnp.where(zoom, jnp.where(z_hi, f, jnp.where(z_swap, c.f_lo, c.f_hi)),
                         jnp.where(b_hi, f, c.f_prev))
        d_hi = jnp.where(zoom, jnp.where(z_hi, da, jnp.where(z_swap, c.d_lo, c.d_hi)),
                         jnp.where(b_hi, da, c.d_prev))
        zoom_next = zoom | b_hi | b_flip
        grow = jnp.minimum(2.0 * a, max_step)
        nxt = jnp.where(zoom_next, _cubic_step(lo, f_lo, d_lo, hi, f_hi, d_hi), grow)
        return _Search(
            trials=c.trials + 1, alpha=nxt, zoom=zoom_next, a_prev=a, f_prev=f, d_prev=da,
            lo=lo, f_lo=f_lo, d_lo=d_lo, hi=hi, f_hi=f_hi, d_hi=d_hi, done=ok,
            tight=zoom_next & (jnp.abs(hi - lo) < interval),
            best_a=best_a, best_f=best_f, best_g=best_g,
            ok_a=jnp.where(ok, a, c.ok_a), ok_f=jnp.where(ok, f, c.ok_f),
            ok_g=jnp.where(ok, g, c.ok_g))

    c = jax.lax.while_loop(cond, body, start)
    fallback = ~c.done & (c.best_f < f0)
    alpha = jnp.where(c.done, c.ok_a, jnp.where(fallback, c.best_a, zero))
    f = jnp.where(c.done, c.ok_f, jnp.where(fallback, c.best_f, f0))
    g = jnp.where(c.done, c.ok_g, jnp.where(fallback, c.best_g, g0))
    moved = (c.done & ~fresh) | fallback
    return alpha, f, g, moved, c.trials


@dataclass(frozen=True)
class SSBroyden:
    """Self-scaled Broyden quasi-Newton (dense inverse Hessian), run full batch.

    The method of Urbán et al. (2025) and Kiyani et al. (2025) that takes PINNs in float64
    to errors of 1e-6-1e-8 where Adam and L-BFGS stall near 1e-4. Like :class:`LBFGS` it
    runs its stage unless converged (gradient norm at most ``gtol``) or stalled (the line
    search finds no decrease); a non-finite line search ends the stage with a warning.

    Args:
        method: ``"ssbroyden"`` (Al-Baali's wide-interval choice of ``θ``, ``τ``),
            ``"ssbfgs"`` (self-scaled BFGS) or ``"bfgs"`` (plain BFGS, no scaling).
        resample_every: redraw the collocation points (RAD when the points ask for it)
            every this many steps, keeping ``H`` (the first pair on a new batch is not
            used as a curvature pair). ``None``: one batch for the whole stage.
        max_linesearch_steps: zoom (strong-Wolfe) line-search iterations per step.
        gtol: stop when the gradient norm of the weighted loss is at most this.
        max_params: refuse networks with more parameters than this (``H`` is dense).
    """

    method: Method = "ssbroyden"
    resample_every: int | None = None
    max_linesearch_steps: int = 30
    gtol: float = 0.0
    max_params: int = 20_000

    full_batch = True
    line_search = True  # the update takes the loss function (value_fn)
    prefers_float64 = True  # precision "auto" (the default) ends the stage in float64
    supports_mixed = True  # ... after starting it in float32 (Stage precision "mixed")

    def __post_init__(self) -> None:
        name = type(self).__name__
        if self.method not in ("ssbroyden", "ssbfgs", "bfgs"):
            raise ValueError(
                f"{name}: method must be 'ssbroyden', 'ssbfgs' or 'bfgs', got {self.method!r}.")
        _check_int(name, "max_linesearch_steps", self.max_linesearch_steps, minimum=1)
        _check_int(name, "max_params", self.max_params, minimum=1)
        if self.resample_every is not None:
            _check_int(name, "resample_every", self.resample_every, minimum=1)
        _check_positive(name, "gtol", self.gtol, allow_zero=True)

    def make(self, total_steps: int) -> optax.GradientTransformationExtraArgs:
        """The direction, then optax's zoom line search (it stores ``value`` and ``grad``)."""
        del total_steps
        linesearch = optax.scale_by_zoom_linesearch(
            max_linesearch_steps=self.max_linesearch_steps, initial_guess_strategy="one")
        inner = optax.chain(scale_by_self_scaled_broyden(self.method), linesearch)
        max_params = self.max_params
        name = type(self).__name__

        def init(params):
            n = ravel_pytree(params)[0].size
            if n > max_params:
                raise ValueError(
                    f"{name}: the network has {n} parameters; its dense inverse Hessian "
                    f"({n}² entries) is refused above max_params={max_params}: use a "
                    "smaller network or LBFGS for this stage.")
            return inner.init(params)

        return optax.GradientTransformationExtraArgs(init, inner.update)

    def line_step(self, f: Any, params: Any, opt_state: Any) -> tuple[Any, ...]:
        """One step of the training core (:mod:`pinn.train.core`) on the loss ``f`` with a
        single call site of ``f``'s value and gradient (:func:`wolfe_search`), on the state
        of :meth:`make`: the direction ``-H g`` from the stored value and gradient, then the
        line search. Where none is stored (the stage's start, a new batch, a restart) the
        step only evaluates ``f`` at ``params``: it takes no step and is not a stall.

        Returns ``(value, grad_norm, new_params, updates, new_state, fresh)``: the value and
        gradient norm at ``params``, and whether they were unknown (``fresh``)."""
        qn, ls = opt_state[0], opt_state[1]
        x, unravel = ravel_pytree(params)
        g0 = ravel_pytree(ls.grad)[0]
        f0 = jnp.asarray(ls.value, x.dtype)
        fresh = ~jnp.isfinite(f0)
        direction = scale_by_self_scaled_broyden(self.method)
        d_tree, qn = jax.lax.cond(
            fresh, lambda: (jax.tree.map(jnp.zeros_like, params), qn),
            lambda: direction.update(unravel(g0), qn, params))
        d = ravel_pytree(d_tree)[0]
        value_and_grad = jax.value_and_grad(lambda z: f(unravel(z)))
        alpha, f1, g1, moved, trials = wolfe_search(
            value_and_grad, x, f0, g0, d, fresh, self.max_linesearch_steps)
        step = jnp.where(moved, alpha, 0.0) * d
        ls = ls._replace(learning_rate=jnp.asarray(alpha, jnp.result_type(ls.learning_rate)),
                         value=jnp.asarray(f1, jnp.result_type(ls.value)), grad=unravel(g1),
                         info=ls.info._replace(num_linesearch_steps=jnp.asarray(
                             trials, jnp.result_type(ls.info.num_linesearch_steps))))
        value = jnp.where(fresh, f1, f0)
        gnorm = jnp.linalg.norm(jnp.where(fresh, g1, g0))
        return (value, gnorm, unravel(x + step), unravel(step), (qn, ls, *opt_state[2:]),
                fresh)

    def fresh_memory(self, opt_state: Any) -> jax.Array:
        """Whether ``H`` is fresh (at most one step since (re)start): a stall then ends the
        stage; a stall with an older ``H`` restarts it from the identity."""
        return opt_state[0].count <= 1

    def resample_due(self, opt_state: Any) -> jax.Array:
        """Whether this step starts on a new batch (every ``resample_every`` steps)."""
        count = opt_state[0].count
        # not again before a step is taken on the new batch (a step that only evaluates
        # the loss there does not count)
        return (count > 0) & (count % self.resample_every == 0) & ~opt_state[0].fresh

    def refresh(self, opt_state: Any) -> Any:
        """The state for a new batch: keep ``H``, drop the stored loss (recomputed) and the
        pair that would straddle two batches."""
        opt_state = optax.tree.set(opt_state, value=jnp.asarray(jnp.inf, _value_dtype(
            opt_state)))
        direction, rest = opt_state[0], opt_state[1:]
        return (direction._replace(fresh=jnp.asarray(True)), *rest)


@dataclass(frozen=True)
class SSBFGS(SSBroyden):
    """Self-scaled BFGS (:class:`SSBroyden` with ``method="ssbfgs"``)."""

    method: Method = "ssbfgs"


def _value_dtype(opt_state: Any) -> Any:
    value = optax.tree.get(opt_state, "value")
    return jnp.result_type(value)
