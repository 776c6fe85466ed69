"""SOAP: Adam in the eigenbasis of Shampoo's preconditioner, as an optax transformation.

Vyas et al. 2024, "SOAP: Improving and Stabilizing Shampoo using Adam" (reference code:
github.com/nikhilvyas/SOAP); used for PINNs by Wang et al. 2025 ("Gradient alignment in
physics-informed neural networks: a second-order optimization perspective").

For a matrix parameter with gradient ``G`` (m×n) SOAP keeps Shampoo's factors
``L = β L + (1-β) G Gᵀ`` and ``R = β R + (1-β) Gᵀ G`` and their eigenbases ``Q_L``, ``Q_R``
(from ``eigh`` at the first step, then every ``precondition_frequency`` steps one power
iteration ``L Q_L`` followed by a QR decomposition). Adam runs in the rotated basis: the
first moment ``M`` is kept in the original basis and rotated, ``M' = Q_Lᵀ M Q_R``; the second
moment ``V`` lives in the rotated basis, ``V = b2 V + (1-b2) (Q_Lᵀ G Q_R)²``; the update is
rotated back, ``Q_L (M' / (√V + eps)) Q_Rᵀ``, with Adam's bias correction. Parameters of
other ranks (biases, scalars) and the axes longer than ``max_precond_dim`` are not rotated:
a bias gets plain Adam. As in the reference code the first call only builds the
preconditioner (its update is zero), so that a gradient is never projected on a basis built
from itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from pinn.data import register

from .optim import Adam, _pde_mask, check_int, check_positive

__all__ = ["soap", "SOAPState", "SOAP"]


class SOAPState(NamedTuple):
    """``count``: calls so far (the first builds the preconditioner); ``mu``, ``nu``: Adam's
    moments (``mu`` in the original basis, ``nu`` in the rotated one); ``gg``, ``q``: per
    leaf (in ``jax.tree.leaves`` order) a tuple with, per axis, Shampoo's factor and its
    eigenbasis, or ``None`` for an axis that is not rotated."""

    count: jax.Array
    mu: Any
    nu: Any
    gg: list
    q: list


def _rotated_axes(shape: tuple[int, ...], max_precond_dim: int) -> tuple[bool, ...]:
    """Which axes of a leaf of ``shape`` are rotated: those of a matrix (or higher-rank
    tensor) up to ``max_precond_dim`` long; none of a vector or scalar."""
    if len(shape) < 2:
        return (False,) * len(shape)
    return tuple(n <= max_precond_dim for n in shape)


def _factor(g: jax.Array, axis: int) -> jax.Array:
    """``G Gᵀ`` along ``axis``: the contraction of ``g`` with itself over the other axes."""
    other = [i for i in range(g.ndim) if i != axis]
    return jnp.tensordot(g, g, axes=(other, other))


def _rotate(x: jax.Array, qs: tuple, back: bool) -> jax.Array:
    """``x`` with each rotated axis ``i`` multiplied by ``Q_iᵀ`` (``back``: by ``Q_i``)."""
    for i, q in enumerate(qs):
        if q is not None:
            x = jnp.moveaxis(jnp.tensordot(x, q.T if back else q, axes=([i], [0])), -1, i)
    return x


def _eigenbasis(m: jax.Array) -> jax.Array:
    """Eigenvectors of the symmetric ``m``, largest eigenvalue first."""
    return jnp.flip(jnp.linalg.eigh(m)[1], axis=1)


def _refresh(gg: tuple, qs: tuple, nu: jax.Array) -> tuple[tuple, jax.Array]:
    """One power iteration and QR per rotated axis; ``nu`` permuted with the sorted basis."""
    new = []
    for i, (m, q) in enumerate(zip(gg, qs, strict=True)):
        if q is None:
            new.append(None)
            continue
        estimate = jnp.einsum("ij,ik,kj->j", q, m, q)  # diag(Qᵀ M Q): the eigenvalues
        order = jnp.argsort(-estimate)
        nu = jnp.take(nu, order, axis=i)
        new.append(jnp.linalg.qr(m @ q[:, order])[0])
    return tuple(new), nu


def _init_state(params, max_precond_dim: int) -> SOAPState:
    """The state before the first call: zero moments and factors, identity eigenbases."""
    leaves = jax.tree.leaves(params)
    gg, q = [], []
    for x in leaves:
        axes = _rotated_axes(x.shape, max_precond_dim)
        gg.append(tuple(jnp.zeros((n, n), x.dtype) if r else None
                        for n, r in zip(x.shape, axes, strict=True)))
        q.append(tuple(jnp.eye(n, dtype=x.dtype) if r else None
                       for n, r in zip(x.shape, axes, strict=True)))
    zeros = jax.tree.map(jnp.zeros_like, params)
    return SOAPState(jnp.zeros((), jnp.int32), zeros, zeros, gg, q)


def _factors(gg: tuple, g: jax.Array, beta: float) -> tuple:
    """A leaf's Shampoo factors after the gradient ``g`` (``None`` for an axis not rotated)."""
    return tuple(None if m is None else beta * m + (1 - beta) * _factor(g, i)
                 for i, m in enumerate(gg))


def _first(grads, state: SOAPState, beta: float):
    """Build the factors from the first gradient and their eigenbases; no step."""
    g_leaves = jax.tree.leaves(grads)
    gg = [_factors(m, g, beta) for m, g in zip(state.gg, g_leaves, strict=True)]
    q = [tuple(None if m is None else _eigenbasis(m) for m in ms) for ms in gg]
    updates = jax.tree.map(jnp.zeros_like, grads)
    return updates, SOAPState(state.count + 1, state.mu, state.nu, gg, q)


def _leaf_step(g, mu, nu, gg: tuple, q: tuple, t, refresh, b1: float, b2: float, eps: float,
               beta: float):
    """One leaf's step ``t``: its update (before the learning rate), and its new moments,
    factors and eigenbases (refreshed when ``refresh``)."""
    dt = g.dtype
    mu = b1 * mu + (1 - b1) * g
    nu = b2 * nu + (1 - b2) * jnp.square(_rotate(g, q, back=False))
    direction = _rotate(_rotate(mu, q, back=False) / (jnp.sqrt(nu) + eps), q, back=True)
    tf = t.astype(dt)
    size = jnp.sqrt(1 - jnp.asarray(b2, dt) ** tf) / (1 - jnp.asarray(b1, dt) ** tf)
    out = (-size * direction).astype(dt)
    gg = _factors(gg, g, beta)  # after the step: the gradient never rotates itself
    if any(m is not None for m in gg):
        q, nu = jax.lax.cond(refresh, _refresh, lambda a, b, c: (b, c), gg, q, nu)
    return out, mu, nu, gg, q


def _step(grads, state: SOAPState, b1: float, b2: float, eps: float, beta: float,
          precondition_frequency: int):
    """A step of SOAP after the first call: the updates (before the learning rate) and the
    new state."""
    t = state.count  # real steps, this one included (the first call was none)
    treedef = jax.tree.structure(grads)
    g_leaves = jax.tree.leaves(grads)
    mu_leaves, nu_leaves = jax.tree.leaves(state.mu), jax.tree.leaves(state.nu)
    refresh = t % precondition_frequency == 0
    out, mus, nus, ggs, qs = [], [], [], [], []
    for g, mu, nu, gg, q in zip(g_leaves, mu_leaves, nu_leaves, state.gg, state.q,
                                strict=True):
        u, mu, nu, gg, q = _leaf_step(g, mu, nu, gg, q, t, refresh, b1, b2, eps, beta)
        out.append(u)
        mus.append(mu)
        nus.append(nu)
        ggs.append(gg)
        qs.append(q)
    updates = jax.tree.unflatten(treedef, out)
    new = SOAPState(t + 1, jax.tree.unflatten(treedef, mus),
                    jax.tree.unflatten(treedef, nus), ggs, qs)
    return updates, new


def _weight_decayed(updates, params, count, lr, weight_decay: float, mask):
    """``updates`` with decoupled weight decay where ``mask`` says (none while building)."""
    m = mask(params) if callable(mask) else mask
    m = jax.tree.map(lambda _: True, params) if m is None else m
    decay = jnp.where(count > 0, lr * weight_decay, 0.0)  # none while building

    def decayed(u, p, keep):
        return u - decay.astype(u.dtype) * (p + u) if keep else u

    return jax.tree.map(decayed, updates, params, m)


def soap(
    learning_rate: float | optax.Schedule = 3e-3,
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    *,
    shampoo_beta: float | None = None,
    precondition_frequency: int = 10,
    max_precond_dim: int = 10_000,
    mask: Callable[[Any], Any] | Any = None,
) -> optax.GradientTransformation:
    """SOAP (see the module docstring) as an ``optax.GradientTransformation``.

    Args:
        learning_rate: a number or a schedule ``count -> rate`` (``count``: calls so far).
        b1, b2, eps: Adam's moment rates and denominator guard (``√V + eps``).
        weight_decay: decoupled weight decay, ``p ← p (1 - lr·weight_decay)`` after the
            step, as in the reference code (needs ``params`` in ``update``).
        shampoo_beta: the rate of Shampoo's factors ``L``, ``R`` (default: ``b2``).
        precondition_frequency: steps between refreshes of the eigenbases.
        max_precond_dim: axes longer than this are not rotated (no factor is kept).
        mask: a pytree of bools like the parameters, or a function ``params -> mask``:
            where weight decay applies (default: everywhere).
    """
    beta = b2 if shampoo_beta is None else shampoo_beta
    lr_fn = learning_rate if callable(learning_rate) else optax.constant_schedule(learning_rate)

    def init(params):
        return _init_state(params, max_precond_dim)

    def first(grads, state):
        return _first(grads, state, beta)

    def step(grads, state):
        return _step(grads, state, b1, b2, eps, beta, precondition_frequency)

    def update(grads, state, params=None):
        lr = jnp.asarray(lr_fn(state.count))
        updates, new = jax.lax.cond(state.count == 0, first, step, grads, state)
        updates = jax.tree.map(lambda u: lr.astype(u.dtype) * u, updates)
        if weight_decay:
            if params is None:
                raise ValueError("soap: weight_decay needs params in update(grads, state, "
                                 "params).")
            updates = _weight_decayed(updates, params, state.count, lr, weight_decay, mask)
        return updates, new

    return optax.GradientTransformation(init, update)


@register("optimizer")
@dataclass(frozen=True)
class SOAP(Adam):
    """SOAP (:func:`soap`) as a stage optimiser: :class:`~pinn.train.Adam`'s schedule
    (``lr``, ``warmup``, ``decay``, ``decay_rate``, ``decay_steps``), ``clip`` and moment
    rates, with the defaults of the SOAP paper, plus:

    Args:
        weight_decay: decoupled weight decay (never on learnable PDE parameters).
        precondition_frequency: steps between refreshes of the eigenbases.
        shampoo_beta: the rate of Shampoo's factors (default: ``b2``).
        max_precond_dim: axes longer than this are not rotated.
    """

    lr: float = 3e-3
    b1: float = 0.95
    b2: float = 0.95
    weight_decay: float = 0.0
    precondition_frequency: int = 10
    shampoo_beta: float | None = None
    max_precond_dim: int = 10_000

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("SOAP", "weight_decay", self.weight_decay, allow_zero=True)
        check_int("SOAP", "precondition_frequency", self.precondition_frequency, minimum=1)
        check_int("SOAP", "max_precond_dim", self.max_precond_dim, minimum=1)
        beta = self.shampoo_beta
        if beta is not None and not (isinstance(beta, (int, float)) and 0 <= beta < 1):
            raise ValueError(f"SOAP: shampoo_beta must lie in [0, 1) or be None, got {beta!r}.")

    def _core(self, schedule: optax.Schedule) -> optax.GradientTransformation:
        return soap(schedule, b1=self.b1, b2=self.b2, eps=self.eps,
                    weight_decay=self.weight_decay, shampoo_beta=self.shampoo_beta,
                    precondition_frequency=self.precondition_frequency,
                    max_precond_dim=self.max_precond_dim, mask=_pde_mask)
