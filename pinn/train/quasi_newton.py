"""Quasi-Newton stages with one strong-Wolfe line search: L-BFGS, SSBFGS and SSBroyden.

Every line-search stage (:class:`LineSearch`) takes a direction ``-H g`` from its curvature
memory and one strong-Wolfe line search (:func:`wolfe_search`), full batch; it stops when
converged or stalled. :class:`LBFGS` keeps the last ``memory`` pairs (the two-loop
recursion); the self-scaled methods below keep a dense inverse Hessian.

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

A step takes the direction ``-H g`` and the strong-Wolfe line search. When
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

from pinn.data import register

from .optim import Optimizer, check_int, check_positive
from .steps import select, strong

__all__ = ["LineSearch", "LineState", "LBFGS", "SSBroyden", "SSBFGS",
           "scale_by_self_scaled_broyden", "scale_by_lbfgs", "wolfe_search"]

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
    identity: jax.Array  # True: H is read as the identity (a restart: H itself not rewritten)


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


def _pair(method: str, Hy, s, y, g_old, alpha, n: int):
    """The pieces of the rank-two update from the pair ``(s, y)`` and ``Hy = H y``:
    ``H+ = (H - c Hy Hyᵀ + e v vᵀ) / τ + ρ s sᵀ`` (:func:`_apply`); ``ok``: whether the
    pair is a curvature pair and every piece finite; also ``yᵀs``."""
    ys = jnp.vdot(y, s)
    yHy = jnp.vdot(y, Hy)
    rho = _safe_div(1.0, ys)
    h = yHy * rho
    b = -alpha * rho * jnp.vdot(s, g_old)
    theta, tau = _theta_tau(method, b, h, n)
    a = b * h - 1.0
    phi = _safe_div(1.0 - theta, 1.0 + a * theta)
    c = 1.0 / jnp.where(yHy > 0, yHy, 1.0)
    v = s * rho - Hy * c
    e = phi * yHy
    ok = (ys > 1e-10 * jnp.linalg.norm(s) * jnp.linalg.norm(y)) & (yHy > 0) & (tau > 0)
    # the rank-two terms' largest entry, bounded: far below the float's largest, H+ stays
    # finite (a pair that would overflow it is refused, as if H+ were formed and checked)
    big = jnp.finfo(jnp.result_type(s)).max
    top = (jnp.abs(c) * jnp.max(jnp.abs(Hy)) ** 2 + jnp.abs(e) * jnp.max(jnp.abs(v)) ** 2
           + tau * jnp.abs(rho) * jnp.max(jnp.abs(s)) ** 2) / tau
    ok = ok & jnp.isfinite(top) & (top < 1e-3 * big)
    for x in (c, e, tau, rho, Hy, v, s):
        ok = ok & jnp.all(jnp.isfinite(x))
    return (c, e, tau, rho, v), ok, ys


def _apply(H, Hy, s, pieces):
    """``H+`` from :func:`_pair`'s pieces: elementwise in ``H``, so one pass over it (each
    entry computed the same way as its mirror image: ``H+`` is exactly symmetric when
    ``H`` is)."""
    c, e, tau, rho, v = pieces
    return (H - c * jnp.outer(Hy, Hy) + e * jnp.outer(v, v)) / tau + rho * jnp.outer(s, s)


def _update_inverse(method: str, H, s, y, g_old, alpha, n: int):
    """``H+`` from the pair ``(s, y)``; also whether the pair was a curvature pair."""
    Hy = H @ y
    pieces, ok, ys = _pair(method, Hy, s, y, g_old, alpha, n)
    new = _apply(H, Hy, s, pieces)
    return new, ok & jnp.all(jnp.isfinite(new)), ys


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
            fresh=jnp.asarray(True), restarts=jnp.zeros((), jnp.int32),
            identity=jnp.asarray(False))

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

        # The step is bound by reading and writing the n x n matrix, not by arithmetic:
        # H y (one pass), the new H (one read, one write: the update is elementwise in H,
        # fused with the choice between it, H and a restart) and its product with g (one
        # pass); nothing else touches H. A restart (here where -H g is no descent, or
        # SSBroyden.settle's after a stall) only sets ``identity``: the next update reads H
        # as the identity inside its own pass (eye @ y is y exactly, so the numbers are
        # those of an H rewritten to the identity). Forming H+ g from H g and the update's
        # pieces would save another pass, but rounds differently, and a hard problem's run
        # hangs on that rounding (PINNacle's Wave 2d-MS: 0.258 this way, 3.89 that way).
        Hy = jnp.where(state.identity, y, H @ y)
        pieces, ok, ys = _pair(method, Hy, s, y, state.prev_grad, alpha, n)
        ok = ok & ~state.fresh  # a fresh step (start, new batch) has no pair
        yy = jnp.vdot(y, y)
        restart = jnp.where((ys > 0) & (yy > 0), ys / jnp.where(yy > 0, yy, 1.0), 1.0)
        diag = jnp.where(state.fresh, 1.0, restart).astype(H.dtype)
        eye = jnp.eye(n, dtype=H.dtype)
        H = jnp.where(state.identity, eye, H)
        H1 = jnp.where(ok, _apply(H, Hy, s, pieces), jnp.where(state.fresh, H, diag * eye))
        d = -(H1 @ g)
        descent = (jnp.vdot(d, g) < 0) & jnp.all(jnp.isfinite(d))
        d = jnp.where(descent, d, -g)
        restarted = (~state.fresh & ~ok) | ~descent
        new_state = SelfScaledState(
            inv_hessian=H1, prev_params=x, prev_grad=g, prev_direction=d,
            count=state.count + 1, fresh=jnp.asarray(False),
            restarts=state.restarts + restarted.astype(jnp.int32), identity=~descent)
        return unravel(d), new_state

    return optax.GradientTransformation(init, update)


class LBFGSState(NamedTuple):
    """State of :func:`scale_by_lbfgs` (arrays on the flattened parameters)."""

    s: jax.Array  # the last pairs' steps, memory × n (a ring; oldest overwritten)
    y: jax.Array  # their gradient changes
    rho: jax.Array  # 1 / yᵀs of each pair (0: an empty slot)
    head: jax.Array  # the slot of the next pair (int32)
    prev_params: jax.Array
    prev_grad: jax.Array
    count: jax.Array  # steps taken (int32)
    fresh: jax.Array  # True: the next pair is not a curvature pair (start, new batch)
    restarts: jax.Array  # pairs refused (no positive curvature) (int32)


def scale_by_lbfgs(memory: int = 20) -> optax.GradientTransformation:
    """The L-BFGS direction ``-H g`` (Nocedal & Wright, Algorithm 7.4: the two-loop
    recursion over the last ``memory`` curvature pairs, the initial matrix scaled by
    ``sᵀy / yᵀy`` of the newest pair). A pair without positive curvature is not kept."""

    def init(params):
        flat, _ = ravel_pytree(params)
        n, dt = flat.size, flat.dtype
        zeros = jnp.zeros_like(flat)
        return LBFGSState(
            s=jnp.zeros((memory, n), dt), y=jnp.zeros((memory, n), dt),
            rho=jnp.zeros((memory,), dt), head=jnp.zeros((), jnp.int32), prev_params=zeros,
            prev_grad=zeros, count=jnp.zeros((), jnp.int32), fresh=jnp.asarray(True),
            restarts=jnp.zeros((), jnp.int32))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_lbfgs needs params")
        g, unravel = ravel_pytree(updates)
        x, _ = ravel_pytree(params)
        s, y = x - state.prev_params, g - state.prev_grad
        ys = jnp.vdot(y, s)
        curved = ys > 1e-10 * jnp.linalg.norm(s) * jnp.linalg.norm(y)
        keep = ~state.fresh & curved
        slot = state.head
        memo = state._replace(
            s=jnp.where(keep, state.s.at[slot].set(s), state.s),
            y=jnp.where(keep, state.y.at[slot].set(y), state.y),
            rho=jnp.where(keep, state.rho.at[slot].set(1.0 / jnp.where(curved, ys, 1.0)),
                          state.rho),
            head=jnp.where(keep, (slot + 1) % memory, slot).astype(jnp.int32),
            restarts=state.restarts + (~state.fresh & ~curved).astype(jnp.int32))
        d = -_two_loop(memo, g)
        descent = (jnp.vdot(d, g) < 0) & jnp.all(jnp.isfinite(d))
        d = jnp.where(descent, d, -g)
        new = memo._replace(prev_params=x, prev_grad=g, count=state.count + 1,
                            fresh=jnp.asarray(False))
        return unravel(d), new

    return optax.GradientTransformation(init, update)


def _two_loop(state: LBFGSState, g: jax.Array) -> jax.Array:
    """``H g`` by the two-loop recursion, newest pair first (empty slots have ``rho = 0``
    and change nothing)."""
    m = state.rho.shape[0]
    order = (state.head - 1 - jnp.arange(m)) % m  # newest to oldest

    def back(q, i):
        a = state.rho[i] * jnp.vdot(state.s[i], q)
        return q - a * state.y[i], a

    q, alphas = jax.lax.scan(back, g, order)
    newest = order[0]
    yy = jnp.vdot(state.y[newest], state.y[newest])
    gamma = jnp.where((state.rho[newest] > 0) & (yy > 0),
                      1.0 / (state.rho[newest] * jnp.where(yy > 0, yy, 1.0)), 1.0)

    def forward(r, ia):
        i, a = ia
        b = state.rho[i] * jnp.vdot(state.y[i], r)
        return r + (a - b) * state.s[i], None

    r, _ = jax.lax.scan(forward, gamma * q, (order[::-1], alphas[::-1]))
    return r


# ---------------------------------------------------------------------------
# the line search


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


class _Rules(NamedTuple):
    """The constants of :func:`wolfe_search` and the values at its start."""

    f0: jax.Array
    slope: jax.Array
    fresh: jax.Array
    c1: float
    c2: float
    max_step: jax.Array
    approx: float
    interval: jax.Array


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


def _trial(c: _Search, f: jax.Array, g: jax.Array, da: jax.Array, r: _Rules) -> _Search:
    """The search after the trial ``c.alpha`` gave ``f``, gradient ``g`` and slope ``da``."""
    a = c.alpha
    # sufficient decrease: Armijo's, or near a minimiser (no rise beyond rounding) Hager &
    # Zhang's approximate form (2006, eq. 23), which rounding cannot defeat
    armijo = (f <= r.f0 + r.c1 * a * r.slope) | (
        (da <= (2.0 * r.c1 - 1.0) * r.slope) & (f <= r.f0 + r.approx * jnp.abs(r.f0)))
    curvature = jnp.abs(da) <= -r.c2 * r.slope
    better = f < c.best_f
    # bracketing: a bracket [prev, a] once a fails Armijo or stops decreasing, an accepted
    # step when Armijo and the curvature hold, a bracket [a, prev] when the slope turns
    # positive, else a step twice as long
    b_hi = ~armijo | ((c.trials > 0) & (f >= c.f_prev))
    b_ok = ~b_hi & curvature
    b_flip = ~b_hi & ~b_ok & (da >= 0)
    # zooming in [lo, hi]: a failing a becomes hi; else a accepted, or the new lo
    z_hi = ~armijo | (f >= c.f_lo)
    z_ok = ~z_hi & curvature
    z_swap = ~z_hi & ~z_ok & (da * (c.hi - c.lo) >= 0)
    zoom = c.zoom

    def pick(z_hi_v, z_swap_v, z_rest_v, b_hi_v, b_rest_v):
        return jnp.where(zoom, jnp.where(z_hi, z_hi_v, jnp.where(z_swap, z_swap_v, z_rest_v)),
                         jnp.where(b_hi, b_hi_v, b_rest_v))

    ok = jnp.where(zoom, z_ok, b_ok) | r.fresh
    lo, f_lo, d_lo = (pick(c.lo, a, a, c.a_prev, a), pick(c.f_lo, f, f, c.f_prev, f),
                      pick(c.d_lo, da, da, c.d_prev, da))
    hi, f_hi, d_hi = (pick(a, c.lo, c.hi, a, c.a_prev), pick(f, c.f_lo, c.f_hi, f, c.f_prev),
                      pick(da, c.d_lo, c.d_hi, da, c.d_prev))
    zoom_next = zoom | b_hi | b_flip
    grow = jnp.minimum(2.0 * a, r.max_step)
    nxt = jnp.where(zoom_next, _cubic_step(lo, f_lo, d_lo, hi, f_hi, d_hi), grow)
    return _Search(
        trials=c.trials + 1, alpha=nxt, zoom=zoom_next, a_prev=a, f_prev=f, d_prev=da,
        lo=lo, f_lo=f_lo, d_lo=d_lo, hi=hi, f_hi=f_hi, d_hi=d_hi, done=ok,
        tight=zoom_next & (jnp.abs(hi - lo) < r.interval),
        best_a=jnp.where(better, a, c.best_a), best_f=jnp.where(better, f, c.best_f),
        best_g=jnp.where(better, g, c.best_g),
        ok_a=jnp.where(ok, a, c.ok_a), ok_f=jnp.where(ok, f, c.ok_f),
        ok_g=jnp.where(ok, g, c.ok_g))


def wolfe_search(value_and_grad: Any, x: jax.Array, f0: jax.Array, g0: jax.Array,
                 d: jax.Array, fresh: jax.Array, max_trials: int, c1: float = 1e-4,
                 c2: float = 0.9, max_step: float = 1e3, approx: float = 1e-6,
                 interval: float = 10.0, alpha0: jax.Array | float = 1.0
                 ) -> tuple[jax.Array, ...]:
    """A strong-Wolfe line search along ``d`` from ``x`` (``f0``, ``g0``: value and gradient
    there), the bracketing and zoom phases of Nocedal & Wright (Algorithms 3.5, 3.6; cubic
    interpolation; the approximate sufficient decrease of Hager & Zhang within ``approx``
    of ``f0``, as optax's) as one loop with one call of ``value_and_grad``: traced once, the
    step program compiles in about half the time of optax's zoom line search, which calls
    it in three places. The first trial is the step ``alpha0`` (1: a quasi-Newton step),
    steps grow to at most ``max_step * alpha0``. ``fresh``: ``f0``/``g0`` are unknown (a
    new batch, a restart): the only trial is ``x`` itself.

    Returns ``(alpha, f, g, moved, trials)``: the step taken, the value and gradient there,
    whether it moved, and the evaluations made. Without a strong-Wolfe step in
    ``max_trials`` evaluations, or once the bracket is too narrow to tell its ends apart
    (the step across it below ``interval`` times the rounding of ``x``: ``interval * eps *
    |x|``), it takes the lowest value seen if below ``f0``, else none. A stall there is the
    loss's rounding floor, not a step too long for the curvature (a bracket of 1e-5, as
    optax's, gave up on steps of 1e-7 that a stiff loss needs).
    """
    dt = f0.dtype
    slope = jnp.vdot(g0, d)
    zero = jnp.zeros((), dt)
    alpha0 = jnp.asarray(alpha0, dt)
    eps = jnp.finfo(dt).eps
    width = interval * eps * jnp.maximum(jnp.linalg.norm(x), 1.0) / jnp.maximum(
        jnp.linalg.norm(d), jnp.finfo(dt).tiny)
    rules = _Rules(f0, slope, fresh, c1, c2, max_step * alpha0, approx, width)
    start = _Search(
        trials=jnp.zeros((), jnp.int32), alpha=jnp.where(fresh, zero, alpha0),
        zoom=jnp.asarray(False), a_prev=zero, f_prev=f0, d_prev=slope, lo=zero, f_lo=f0,
        d_lo=slope, hi=zero, f_hi=f0, d_hi=slope, done=jnp.asarray(False),
        tight=jnp.asarray(False), best_a=zero,
        best_f=jnp.where(fresh, jnp.asarray(jnp.inf, dt), f0), best_g=g0, ok_a=zero,
        ok_f=f0, ok_g=g0)

    def cond(c: _Search) -> jax.Array:
        return ~c.done & ~c.tight & (c.trials < max_trials)

    def body(c: _Search) -> _Search:
        f, g = value_and_grad(x + c.alpha * d)
        f = jnp.where(jnp.isfinite(f), f, jnp.inf)  # a non-finite trial: too far
        return _trial(c, f, g, jnp.vdot(g, d), rules)

    c = jax.lax.while_loop(cond, body, start)
    fallback = ~c.done & (c.best_f < f0)
    alpha = jnp.where(c.done, c.ok_a, jnp.where(fallback, c.best_a, zero))
    f = jnp.where(c.done, c.ok_f, jnp.where(fallback, c.best_f, f0))
    g = jnp.where(c.done, c.ok_g, jnp.where(fallback, c.best_g, g0))
    moved = (c.done & ~fresh) | fallback
    return alpha, f, g, moved, c.trials


# ---------------------------------------------------------------------------
# the stages


class LineState(NamedTuple):
    """The line search's part of a :class:`LineSearch` state: the loss and its gradient
    (flattened) at the current point (``value`` infinite: not known yet, the next step only
    evaluates them), the last step length and the evaluations it took."""

    value: jax.Array
    grad: jax.Array
    step: jax.Array
    trials: jax.Array


@dataclass(frozen=True)
class LineSearch(Optimizer):
    """A quasi-Newton stage: the direction of :meth:`direction` from its curvature memory
    and one strong-Wolfe line search (:func:`wolfe_search`), full batch.

    It runs its stage's step count unless it has converged (the gradient norm at most
    ``gtol``) or stalled: a step no longer lowers the loss (the line search found no
    decrease). A stall with an older memory first restarts the memory at the same point;
    only a stall right after a restart ends the stage (in float32 the loss has then reached
    its rounding floor, where a ``"mixed"`` stage goes on in float64). A line search that
    lands on a non-finite loss ends the stage with a warning. The reason and the step are
    reported in ``TrainResult.stages``. The state is ``(direction state, LineState)``.

    ``resample_every``: redraw the collocation points (RAD where the points ask for it)
    every this many steps, keeping the memory (the first pair on a new batch is not a
    curvature pair); ``None``: one batch for the whole stage.
    """

    max_linesearch_steps: int = 30
    gtol: float = 0.0
    resample_every: int | None = None

    full_batch = True
    supports_mixed = True

    def __post_init__(self) -> None:
        name = type(self).__name__
        check_int(name, "max_linesearch_steps", self.max_linesearch_steps, minimum=1)
        check_positive(name, "gtol", self.gtol, allow_zero=True)
        if self.resample_every is not None:
            check_int(name, "resample_every", self.resample_every, minimum=1)

    def direction(self) -> optax.GradientTransformation:
        """The direction's transformation: ``update(g, state, params) -> (d, state)``;
        its state has ``count`` (steps) and ``fresh`` (the next pair is not a pair)."""
        raise NotImplementedError(f"{type(self).__name__} does not define direction()")

    def init(self, params: Any, total_steps: int) -> tuple:
        flat = ravel_pytree(params)[0]
        zero = jnp.zeros((), flat.dtype)
        return (self.direction().init(params),
                LineState(jnp.asarray(jnp.inf, flat.dtype), jnp.zeros_like(flat), zero,
                          jnp.zeros((), jnp.int32)))

    def step(self, spec: Any, weighted: Any) -> Any:
        from .steps import line_search_step

        return line_search_step(spec, weighted)

    def rate(self, state: Any, n: jax.Array, total_steps: int) -> jax.Array:
        return state["opt"][1].step  # the step length the last line search took

    def line_step(self, f: Any, params: Any, state: tuple) -> tuple:
        """One step on the loss ``f`` with a single call site of its value and gradient: the
        direction from the stored gradient, then :func:`wolfe_search`. Where nothing is
        stored (the stage's start, a new batch, a restart) the step only evaluates ``f`` at
        ``params``: it takes no step and is not a stall.

        Returns ``(value, grad_norm, new_params, moved, new_state, fresh)``: the value and
        gradient norm at ``params``, and whether they were unknown (``fresh``)."""
        memory, line = state
        x, unravel = ravel_pytree(params)
        f0, g0 = jnp.asarray(line.value, x.dtype), line.grad
        fresh = ~jnp.isfinite(f0)
        direction = self.direction()
        d_tree, memory = jax.lax.cond(
            fresh, lambda: (jax.tree.map(jnp.zeros_like, params), memory),
            lambda: direction.update(unravel(g0), memory, params))
        d = ravel_pytree(d_tree)[0]
        # from an empty memory the direction is -g: a first trial of unit length (as
        # SciPy's first BFGS step), not the step 1 along a gradient of norm 1e3
        alpha0 = jnp.where(self.fresh_memory((memory, line)),
                           jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.linalg.norm(d), 1e-30)), 1.0)
        value_and_grad = jax.value_and_grad(lambda z: f(unravel(z)))
        alpha, f1, g1, moved, trials = wolfe_search(
            value_and_grad, x, f0, g0, d, fresh, self.max_linesearch_steps, alpha0=alpha0)
        step = jnp.where(moved, alpha, 0.0) * d
        line = LineState(f1, g1, jnp.asarray(alpha, line.step.dtype),
                         jnp.asarray(trials, jnp.int32))
        value = jnp.where(fresh, f1, f0)
        gnorm = jnp.linalg.norm(jnp.where(fresh, g1, g0))
        return value, gnorm, unravel(x + step), moved, (memory, line), fresh

    def settle(self, accept: jax.Array, restart: jax.Array, new: tuple, old: tuple,
               params: Any, total_steps: int) -> tuple:
        """The state after a step: ``new`` where the step is ``accept``-ed, else ``old``;
        the state of :meth:`init` at ``params`` where the memory ``restart``-s."""
        return select(restart, strong(self.init(params, total_steps)),
                      select(accept, new, old))

    def value(self, state: tuple) -> jax.Array:
        """The loss at the current point (infinite: not known)."""
        return state[1].value

    def fresh_memory(self, state: tuple) -> jax.Array:
        """Whether the memory is fresh (at most one step since (re)start): a stall then ends
        the stage; a stall with an older memory restarts it."""
        return state[0].count <= 1

    def resample_due(self, state: tuple) -> jax.Array:
        """Whether this step starts on a new batch (every ``resample_every`` steps)."""
        memory = state[0]
        # not again before a step is taken on the new batch (a step that only evaluates
        # the loss there does not count)
        return (memory.count > 0) & (memory.count % self.resample_every == 0) & ~memory.fresh

    def refresh(self, state: tuple) -> tuple:
        """The state for a new batch (or a float32 stage going on in float64): the memory
        kept, the stored loss dropped (recomputed) and the pair that would straddle the two
        not taken as a curvature pair."""
        memory, line = state
        return (memory._replace(fresh=jnp.asarray(True)),
                line._replace(value=jnp.asarray(jnp.inf, line.value.dtype)))


@register("optimizer")
@dataclass(frozen=True)
class LBFGS(LineSearch):
    """L-BFGS (:func:`scale_by_lbfgs`, the last ``memory`` curvature pairs) with the strong-
    Wolfe line search, run full batch (see :class:`LineSearch`).

    Args:
        memory: number of curvature pairs kept.
        max_linesearch_steps: line-search evaluations per step.
        gtol: stop when the gradient norm of the weighted loss is at most this.
        resample_every: redraw the points every this many steps (``None``: never).
    """

    memory: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("LBFGS", "memory", self.memory, minimum=1)

    def direction(self) -> optax.GradientTransformation:
        return scale_by_lbfgs(self.memory)


@register("optimizer")
@dataclass(frozen=True)
class SSBroyden(LineSearch):
    """Self-scaled Broyden quasi-Newton (dense inverse Hessian), run full batch.

    The method of Urbán et al. (2025) and Kiyani et al. (2025) that takes PINNs in float64
    to errors of 1e-6-1e-8 where Adam and L-BFGS stall near 1e-4; a stage as
    :class:`LineSearch` describes.

    Args:
        method: ``"ssbroyden"`` (Al-Baali's wide-interval choice of ``θ``, ``τ``),
            ``"ssbfgs"`` (self-scaled BFGS) or ``"bfgs"`` (plain BFGS, no scaling).
        resample_every: redraw the collocation points (RAD when the points ask for it)
            every this many steps, keeping ``H`` (the first pair on a new batch is not
            used as a curvature pair). ``None``: one batch for the whole stage.
        max_linesearch_steps: line-search evaluations per step.
        gtol: stop when the gradient norm of the weighted loss is at most this.
        max_params: refuse networks with more parameters than this (``H`` is dense).
    """

    method: Method = "ssbroyden"
    max_params: int = 20_000

    prefers_float64 = True  # precision "auto" (the default) ends the stage in float64 ...

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        if self.method not in ("ssbroyden", "ssbfgs", "bfgs"):
            raise ValueError(
                f"{name}: method must be 'ssbroyden', 'ssbfgs' or 'bfgs', got {self.method!r}.")
        check_int(name, "max_params", self.max_params, minimum=1)

    def direction(self) -> optax.GradientTransformation:
        return scale_by_self_scaled_broyden(self.method)

    def init(self, params: Any, total_steps: int) -> tuple:
        n = ravel_pytree(params)[0].size
        if n > self.max_params:
            raise ValueError(
                f"{type(self).__name__}: the network has {n} parameters; its dense inverse "
                f"Hessian ({n}² entries) is refused above max_params={self.max_params}: use "
                "a smaller network or LBFGS for this stage.")
        return super().init(params, total_steps)

    def settle(self, accept: jax.Array, restart: jax.Array, new: tuple, old: tuple,
               params: Any, total_steps: int) -> tuple:
        """As :meth:`LineSearch.settle`, without a pass over ``H``: the new ``H`` is kept
        whatever the step's fate (a step that is not accepted ends the stage, or goes on
        in float64 from the direction that stalled in float32), and a restart sets
        ``identity`` instead of writing the identity matrix."""
        H = new[0].inv_hessian  # (a select between H and H is no pass: XLA drops it, and
        # the identity matrix of init, then unused, with it)

        def with_h(state: tuple, **more) -> tuple:
            return state[0]._replace(inv_hessian=H, **more), state[1]

        start = with_h(strong(self.init(params, total_steps)), identity=jnp.asarray(True))
        return select(restart, start, select(accept, new, with_h(old)))


@register("optimizer")
@dataclass(frozen=True)
class SSBFGS(SSBroyden):
    """Self-scaled BFGS (:class:`SSBroyden` with ``method="ssbfgs"``)."""

    method: Method = "ssbfgs"
