"""Loss-term weighting strategies as ``(init, update)`` pairs of pure functions.

A weighting's state is a pytree (a dict holding at least ``"weights": {name: scalar}``);
``init(names, dtype)`` makes it and ``update(state, *, params, batch, terms_fn, step)``
returns the next one. Both are pure and run inside the jitted training loop.

- :class:`Fixed`: constant weights.
- :class:`GradNorm`: learning-rate annealing / gradient-norm balancing (Wang, Teng &
  Perdikaris 2021; Wang et al. 2023): every ``every`` steps,
  ``w_i <- alpha * w_i + (1 - alpha) * sum_j |grad L_j| / |grad L_i|``, so the weighted terms
  pull with equal gradient norms.
- :class:`Causal`: causal weighting over time chunks for evolution problems (Wang, Sankaran
  & Perdikaris 2022). The loss assembly applies :func:`causal_weights` (or
  :func:`causal_loss`) inside the equation terms; the term weights come from ``base``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["Fixed", "GradNorm", "Causal", "causal_weights", "causal_loss", "Weighting",
           "with_term_weights"]

TermsFn = Callable[[Any, Any], Any]


def _merge(given: Mapping[str, float] | None, terms: Mapping[str, float], who: str) -> dict:
    """The conditions' ``weight:`` values, overridden by the weighting's own ``given``
    (with a warning where both set a term to different values)."""
    given = dict(given or {})
    clash = {n: (float(terms[n]), float(v)) for n, v in given.items()
             if n in terms and float(terms[n]) != 1.0 and float(terms[n]) != float(v)}
    if clash:
        pairs = ", ".join(f"{n}: {a:g} -> {b:g}" for n, (a, b) in sorted(clash.items()))
        warnings.warn(f"{who}: its weights override the conditions' weight: ({pairs}); give "
                      "each weight in one place", stacklevel=4)
    return {**{n: float(v) for n, v in terms.items()}, **given}


def with_term_weights(weighting: Any, terms: Mapping[str, float]) -> Any:
    """``weighting`` starting from the loss terms' own weights (each condition's
    ``weight:``); a weighting's explicit weights win. A weighting that cannot take them
    (no ``with_term_weights`` method) is returned as is, with a warning if any weight is
    not 1, since those weights would be silently lost."""
    method = getattr(weighting, "with_term_weights", None)
    if method is not None:
        return method(terms)
    ignored = {n: w for n, w in terms.items() if float(w) != 1.0}
    if ignored:
        warnings.warn(f"{type(weighting).__name__} has no with_term_weights(), so the terms' "
                      f"own weights {ignored} are ignored; put them in the weighting",
                      stacklevel=3)
    return weighting


def _terms_only(out: Any) -> dict:
    """``terms_fn`` may return ``terms`` or ``(terms, aux)``; give the terms."""
    return out[0] if isinstance(out, tuple) else out


@dataclass(frozen=True)
class Fixed:
    """Constant weights: ``weights`` maps term names to weights; missing names get 1."""

    weights: Mapping[str, float] | None = None

    def init(self, names: Sequence[str], dtype: Any = jnp.float32) -> dict:
        """The state: one weight per term (the given ones, else 1)."""
        given = dict(self.weights or {})
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise ValueError(
                f"Fixed: weights name terms {unknown} that the loss does not have; the loss "
                f"terms are {sorted(names)}. Fix the names in the weights dict."
            )
        for name, value in given.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(
                    f"Fixed: the weight of {name!r} must be a number >= 0, got {value!r}."
                )
        return {"weights": {n: jnp.asarray(given.get(n, 1.0), dtype) for n in names}}

    def with_term_weights(self, terms: Mapping[str, float]) -> Fixed:
        """Start from the terms' own weights (the given ``weights`` win where they name a term)."""
        return Fixed(_merge(self.weights, terms, "Fixed"))

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """The weights stay as they are."""
        del params, batch, terms_fn, step
        return state


def term_gradient_norms(terms_fn: TermsFn, params: Any, batch: Any, names: Sequence[str]):
    """Norms ``|grad_params L_i|`` of every term, in the order of ``names`` (one batched VJP)."""

    def stacked(p):
        terms = _terms_only(terms_fn(p, batch))
        return jnp.stack([terms[n] for n in names])

    jac = jax.jacrev(stacked)(params)  # each leaf: [n_terms, *leaf.shape]
    sq = sum(
        jnp.sum(jnp.reshape(leaf, (len(names), -1)) ** 2, axis=1) for leaf in jax.tree.leaves(jac)
    )
    return jnp.sqrt(sq)


@dataclass(frozen=True)
class GradNorm:
    """Gradient-norm balancing, updated every ``every`` steps with a moving average.

    ``w_new_i = sum_j |grad L_j| / |grad L_i|`` (gradients with respect to all trained
    parameters); ``w_i <- alpha * w_i + (1 - alpha) * w_new_i``. A term with a zero gradient
    keeps its weight. Weights start at ``initial`` (default 1 each) and are frozen during
    L-BFGS stages.
    """

    every: int = 1000
    alpha: float = 0.9
    initial: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.every, int) or isinstance(self.every, bool) or self.every < 1:
            raise ValueError(f"GradNorm: every must be an integer >= 1, got {self.every!r}.")
        if not isinstance(self.alpha, (int, float)) or not 0 <= self.alpha < 1:
            raise ValueError(f"GradNorm: alpha must lie in [0, 1), got {self.alpha!r}.")

    def init(self, names: Sequence[str], dtype: Any = jnp.float32) -> dict:
        """The state: the ``initial`` weights (else 1) per term."""
        return Fixed(self.initial).init(names, dtype)

    def with_term_weights(self, terms: Mapping[str, float]) -> GradNorm:
        """Start from the terms' own weights (``initial`` wins where it names a term)."""
        return replace(self, initial=_merge(self.initial, terms, "GradNorm"))

    def recompute(self, state: dict, params: Any, batch: Any, terms_fn: TermsFn) -> dict:
        """One moving-average update of the weights at ``params`` (no ``every`` check)."""
        names = list(state["weights"])
        norms = term_gradient_norms(terms_fn, params, batch, names)
        old = jnp.stack([state["weights"][n] for n in names])
        norms = norms.astype(old.dtype)
        total = jnp.sum(norms)
        fresh = jnp.where(norms > 0, total / jnp.where(norms > 0, norms, 1), old)
        new = self.alpha * old + (1 - self.alpha) * fresh
        new = jax.lax.stop_gradient(new)
        return {**state, "weights": {n: new[i] for i, n in enumerate(names)}}

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """Recompute the weights every ``every`` steps, else keep them."""
        return jax.lax.cond(
            step % self.every == 0,
            lambda s: self.recompute(s, params, batch, terms_fn),
            lambda s: s,
            state,
        )


def causal_weights(chunk_losses: jax.Array, eps: float | jax.Array) -> jax.Array:
    """Causal weights ``w_i = exp(-eps * sum_{k<i} L_k)`` for time-ordered chunk losses.

    ``chunk_losses[i]`` is the mean squared residual on the i-th time chunk (earliest first).
    The weights are non-increasing in time, ``w_0 = 1``, and carry no gradient
    (``stop_gradient``), so ``mean(w * L)`` trains late times only once early times fit.
    """
    losses = jax.lax.stop_gradient(jnp.asarray(chunk_losses))
    before = jnp.cumsum(losses) - losses  # exclusive prefix sum
    return jax.lax.stop_gradient(jnp.exp(-eps * before))


def causal_loss(
    squared_residuals: jax.Array,
    t: jax.Array,
    *,
    t0: float,
    t1: float,
    eps: float | jax.Array,
    chunks: int,
) -> tuple[jax.Array, jax.Array]:
    """Causally weighted mean of pointwise squared residuals; returns ``(loss, weights)``.

    Points are binned into ``chunks`` equal time slabs of ``[t0, t1]``; each slab's loss is
    the mean over its points (empty slabs count 0), and the loss is
    ``mean_i(w_i * L_i)`` with ``w = causal_weights(L, eps)``.
    """
    squared_residuals = jnp.ravel(squared_residuals)
    t = jnp.ravel(t)
    index = jnp.clip(jnp.floor((t - t0) / (t1 - t0) * chunks), 0, chunks - 1).astype(jnp.int32)
    sums = jax.ops.segment_sum(squared_residuals, index, num_segments=chunks)
    counts = jax.ops.segment_sum(jnp.ones_like(squared_residuals), index, num_segments=chunks)
    losses = sums / jnp.maximum(counts, 1)
    weights = causal_weights(losses, eps)
    return jnp.mean(weights * losses), weights


@dataclass(frozen=True)
class Causal:
    """Causal weighting over ``chunks`` time slabs with tolerance ``eps``.

    The loss assembly reads ``eps`` and ``chunks`` and applies :func:`causal_loss` to the
    residuals of time-dependent equations. Term weights (across named terms) come from
    ``base`` (``None``: :class:`Fixed`), to which ``init``/``update`` delegate.
    """

    eps: float = 1.0
    chunks: int = 32
    base: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.eps, (int, float)) or not self.eps >= 0:
            raise ValueError(f"Causal: eps must be a number >= 0, got {self.eps!r}.")
        if not isinstance(self.chunks, int) or isinstance(self.chunks, bool) or self.chunks < 1:
            raise ValueError(f"Causal: chunks must be an integer >= 1, got {self.chunks!r}.")

    def init(self, names: Sequence[str], dtype: Any = jnp.float32) -> dict:
        """The state of the ``base`` weighting (default ``Fixed()``)."""
        return (self.base or Fixed()).init(names, dtype)

    def with_term_weights(self, terms: Mapping[str, float]) -> Causal:
        """The ``base`` weighting started from the terms' own weights."""
        return replace(self, base=with_term_weights(self.base or Fixed(), terms))

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """The ``base`` weighting's update (the causal weights are computed inside the loss)."""
        base = self.base or Fixed()
        return base.update(state, params=params, batch=batch, terms_fn=terms_fn, step=step)


Weighting = Fixed | GradNorm | Causal
