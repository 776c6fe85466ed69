"""Loss-term weighting strategies as ``(init, update)`` pairs of pure functions.

A weighting's state is a pytree (a dict holding at least ``"weights": {name: scalar}``);
``init(names, dtype)`` makes it and ``update(state, *, params, batch, terms_fn, step)``
returns the next one. Both are pure and run inside the jitted training loop.

- :class:`Fixed`: constant weights.
- :class:`GradNorm`: gradient-norm balancing (Wang, Teng & Perdikaris 2021; Wang et al.
  2023): every ``every`` steps the terms other than the equations' residuals get
  ``w_i <- alpha * w_i + (1 - alpha) * clip(|grad R| / |grad L_i|, bounds)``, the residual
  terms' weights stay fixed (so the trivial solution of the equation alone is never
  rewarded); :class:`Annealing`: the same with Wang et al. 2021's ``max|grad R| /
  mean|grad L_i|``.
- :class:`Causal`: causal weighting over time chunks for evolution problems (Wang, Sankaran
  & Perdikaris 2022). The loss assembly applies :func:`causal_weights` (or
  :func:`causal_loss`) inside the equation terms; the term weights come from ``base``.
- :class:`RBA`, :class:`VRBA`: pointwise multipliers ``lambda_i`` of the equations'
  residuals (residual-based attention, Anagnostopoulos et al. 2024; its variational form,
  Toscano et al. 2025): the equation term becomes ``mean((lambda_i r_i)^2)``. Their state
  also holds ``"multipliers": {equation: [N]}`` and the points they belong to; the training
  core hands the multipliers to the loss in the batch (key ``"__multipliers__"``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from pinn.data import register

__all__ = ["Fixed", "GradNorm", "Annealing", "Causal", "RBA", "VRBA", "causal_weights",
           "causal_loss", "Weighting", "MULTIPLIERS", "with_multipliers"]

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


class Weighting:
    r"""The protocol of a weighting: :meth:`init` and :meth:`update`, pure, run inside the
    jitted loop. ``pointwise`` (a class variable): the state holds a multiplier per
    collocation point (``init`` gets the first batch; a full-batch stage :meth:`refit`\ s
    them to its batch instead of updating them)."""

    pointwise: ClassVar[bool] = False

    def init(self, names: Sequence[str], dtype: Any = jnp.float32, *, batch: Any = None
             ) -> dict:
        """The state: at least ``{"weights": {name: scalar}}`` for the terms ``names``."""
        raise NotImplementedError(f"{type(self).__name__} does not define init()")

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """The next state (every step of a first-order stage)."""
        raise NotImplementedError(f"{type(self).__name__} does not define update()")

    def with_term_weights(self, terms: Mapping[str, float]) -> Weighting:
        """This weighting starting from the loss terms' own weights (each condition's
        ``weight:``); its explicit weights win. One that cannot take them returns itself,
        with a warning if any weight is not 1 (they would be silently lost)."""
        ignored = {n: w for n, w in terms.items() if float(w) != 1.0}
        if ignored:
            warnings.warn(f"{type(self).__name__} does not take the terms' own weights, so "
                          f"{ignored} are ignored; put them in the weighting", stacklevel=3)
        return self

    def with_residual_terms(self, names: Sequence[str]) -> Weighting:
        """This weighting told which terms are the equations' residuals (a balancing one
        holds those fixed and weighs the others against them)."""
        return self

    def refit(self, state: dict, batch: Any) -> dict:
        """The state for ``batch`` in a full-batch stage (pointwise weightings)."""
        return state


def _terms_only(out: Any) -> dict:
    """``terms_fn`` may return ``terms`` or ``(terms, aux)``; give the terms."""
    return out[0] if isinstance(out, tuple) else out


@register("weighting")
@dataclass(frozen=True)
class Fixed(Weighting):
    """Constant weights: ``weights`` maps term names to weights; missing names get 1."""

    weights: Mapping[str, float] | None = None

    def init(self, names: Sequence[str], dtype: Any = jnp.float32, *, batch: Any = None
             ) -> dict:
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


def term_gradients(terms_fn: TermsFn, params: Any, batch: Any, names: Sequence[str]):
    """The gradients ``grad_params L_i`` of every term, one row per name: ``[n_terms, P]``
    (one batched VJP; the parameters flattened in pytree order)."""

    def stacked(p):
        terms = _terms_only(terms_fn(p, batch))
        return jnp.stack([terms[n] for n in names])

    jac = jax.jacrev(stacked)(params)  # each leaf: [n_terms, *leaf.shape]
    return jnp.concatenate([jnp.reshape(leaf, (len(names), -1))
                            for leaf in jax.tree.leaves(jac)], axis=1)


def _check_bounds(owner: str, bounds: Any) -> tuple[float, float]:
    ok = isinstance(bounds, (tuple, list)) and len(bounds) == 2 and all(
        isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
    if not ok or not 0 < bounds[0] <= bounds[1] < float("inf"):
        raise ValueError(f"{owner}: bounds must be a pair (lower, upper) with 0 < lower <= "
                         f"upper < inf, got {bounds!r}.")
    return float(bounds[0]), float(bounds[1])


@register("weighting")
@dataclass(frozen=True)
class GradNorm(Weighting):
    """Gradient-norm balancing (learning-rate annealing), every ``every`` steps, smoothed
    and bounded.

    With ``residual`` (the equation terms; :func:`pinn.setup` names them), the residual
    terms keep their weights (1 unless ``initial`` says otherwise) and set the scale: every
    other term gets ``w_hat_i = |grad R| / |grad L_i|`` (``R``: the sum of the residual
    terms; Wang, Teng & Perdikaris 2021 balance the boundary terms against the residual's
    gradient, never the reverse), clipped to ``bounds``, and
    ``w_i <- alpha * w_i + (1 - alpha) * w_hat_i``. So a network that fits the equation
    and ignores the boundary (the trivial solution of a Laplace problem) is never rewarded:
    the residual never weighs more than it does in the plain sum, and a boundary term
    never weighs less than ``bounds[0]`` times its loss.

    Without ``residual`` every term is balanced against all (Wang et al. 2023):
    ``w_hat_i = sum_j |grad L_j| / |grad L_i|``, clipped to ``bounds`` too. A term with a
    zero gradient keeps its weight. Gradients are with respect to all trained parameters;
    weights start at ``initial`` (default 1 each) and are frozen during full-batch
    (L-BFGS, quasi-Newton) stages.
    """

    every: int = 1000
    alpha: float = 0.9
    initial: Mapping[str, float] | None = None
    residual: Sequence[str] | None = None
    bounds: tuple[float, float] = (1.0, 1e4)

    rule = "norm"  # |grad R| / |grad L_i|

    def __post_init__(self) -> None:
        name = type(self).__name__
        if not isinstance(self.every, int) or isinstance(self.every, bool) or self.every < 1:
            raise ValueError(f"{name}: every must be an integer >= 1, got {self.every!r}.")
        if not isinstance(self.alpha, (int, float)) or not 0 <= self.alpha < 1:
            raise ValueError(f"{name}: alpha must lie in [0, 1), got {self.alpha!r}.")
        object.__setattr__(self, "bounds", _check_bounds(name, self.bounds))
        if self.residual is not None:
            if isinstance(self.residual, str) or not all(isinstance(n, str)
                                                         for n in self.residual):
                raise ValueError(f"{name}: residual must be a list of term names, got "
                                 f"{self.residual!r}.")
            object.__setattr__(self, "residual", tuple(self.residual))

    def init(self, names: Sequence[str], dtype: Any = jnp.float32, *, batch: Any = None
             ) -> dict:
        """The state: the ``initial`` weights (else 1) per term."""
        if self.residual is not None:
            unknown = sorted(set(self.residual) - set(names))
            if unknown or not self.residual:
                raise ValueError(
                    f"{type(self).__name__}: residual names terms {unknown or '(none)'} that "
                    f"the loss does not have; the loss terms are {sorted(names)}.")
        return Fixed(self.initial).init(names, dtype)

    def with_term_weights(self, terms: Mapping[str, float]) -> GradNorm:
        """Start from the terms' own weights (``initial`` wins where it names a term)."""
        return replace(self, initial=_merge(self.initial, terms, type(self).__name__))

    def with_residual_terms(self, names: Sequence[str]) -> GradNorm:
        """Balance the other terms against these (the equations), whose weights stay fixed;
        an explicit ``residual`` wins."""
        return self if self.residual is not None or not names else replace(
            self, residual=tuple(names))

    def _fresh(self, grads: jax.Array, fixed: jax.Array) -> jax.Array:
        """The target weight of each term (a row of ``grads``; ``fixed``: the residual
        terms), before clipping, or ``nan`` where a term has no gradient."""
        norms = jnp.linalg.norm(grads, axis=1)
        if self.residual is None:
            total = jnp.sum(norms)
        else:
            total = jnp.linalg.norm(jnp.sum(jnp.where(fixed[:, None], grads, 0), axis=0))
        return jnp.where(norms > 0, total / jnp.where(norms > 0, norms, 1), jnp.nan)

    def recompute(self, state: dict, params: Any, batch: Any, terms_fn: TermsFn) -> dict:
        """One smoothed, bounded update of the weights at ``params`` (no ``every`` check)."""
        names = list(state["weights"])
        fixed = jnp.asarray([self.residual is not None and n in self.residual for n in names])
        old = jnp.stack([state["weights"][n] for n in names])
        grads = term_gradients(terms_fn, params, batch, names).astype(old.dtype)
        fresh = self._fresh(grads, fixed)
        lo, hi = self.bounds
        fresh = jnp.where(jnp.isfinite(fresh), jnp.clip(fresh, lo, hi), old)
        new = jnp.clip(self.alpha * old + (1 - self.alpha) * fresh, lo, hi)
        new = jax.lax.stop_gradient(jnp.where(fixed, old, new))
        return {**state, "weights": {n: new[i] for i, n in enumerate(names)}}

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """Recompute the weights every ``every`` steps, else keep them."""
        return jax.lax.cond(
            step % self.every == 0,
            lambda s: self.recompute(s, params, batch, terms_fn),
            lambda s: s,
            state,
        )


@register("weighting")
@dataclass(frozen=True)
class Annealing(GradNorm):
    """Learning-rate annealing (Wang, Teng & Perdikaris 2021, their algorithm 1): each
    non-residual term gets ``w_hat_i = max|grad R| / mean|grad L_i|`` (``R``: the sum of the
    ``residual`` terms, whose weights stay fixed), clipped to ``bounds`` and smoothed:
    ``w_i <- alpha * w_i + (1 - alpha) * w_hat_i`` (the paper's alpha is ``1 - alpha``).
    Otherwise as :class:`GradNorm` (without ``residual``, the scale is the largest gradient
    entry over all terms)."""

    every: int = 100

    rule = "max/mean"

    def _fresh(self, grads: jax.Array, fixed: jax.Array) -> jax.Array:
        mean = jnp.mean(jnp.abs(grads), axis=1)
        if self.residual is None:
            top = jnp.max(jnp.abs(grads))
        else:
            top = jnp.max(jnp.abs(jnp.sum(jnp.where(fixed[:, None], grads, 0), axis=0)))
        return jnp.where(mean > 0, top / jnp.where(mean > 0, mean, 1), jnp.nan)


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


@register("weighting")
@dataclass(frozen=True)
class Causal(Weighting):
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

    def init(self, names: Sequence[str], dtype: Any = jnp.float32, *, batch: Any = None
             ) -> dict:
        """The state of the ``base`` weighting (default ``Fixed()``)."""
        return (self.base or Fixed()).init(names, dtype)

    def with_term_weights(self, terms: Mapping[str, float]) -> Causal:
        """The ``base`` weighting started from the terms' own weights."""
        return replace(self, base=(self.base or Fixed()).with_term_weights(terms))

    def with_residual_terms(self, names: Sequence[str]) -> Causal:
        """The ``base`` weighting told which terms are the residuals."""
        return replace(self, base=(self.base or Fixed()).with_residual_terms(names))

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """The ``base`` weighting's update (the causal weights are computed inside the loss)."""
        base = self.base or Fixed()
        return base.update(state, params=params, batch=batch, terms_fn=terms_fn, step=step)


#: The batch key under which the training core hands pointwise multipliers to the loss.
MULTIPLIERS = "__multipliers__"


def with_multipliers(batch: Any, state: Mapping) -> Any:
    """``batch`` with the weighting state's pointwise multipliers (``state["multipliers"]``,
    :class:`RBA`) under :data:`MULTIPLIERS`, which the assembled loss reads; ``batch`` as
    it is for a weighting without them."""
    multipliers = state.get("multipliers") if isinstance(state, Mapping) else None
    if multipliers is None or not isinstance(batch, Mapping):
        return batch
    return {**batch, MULTIPLIERS: jax.lax.stop_gradient(multipliers)}


def _check_number(owner: str, name: str, value: Any, lo: float, hi: float | None,
                  *, open_lo: bool = False, open_hi: bool = True) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = (v > lo if open_lo else v >= lo) and (
            hi is None or (v < hi if open_hi else v <= hi))
    if not ok:
        span = (("(" if open_lo else "[") + f"{lo:g}, " +
                ("inf)" if hi is None else f"{hi:g}" + (")" if open_hi else "]")))
        raise ValueError(f"{owner}: {name} must be a number in {span}, got {value!r}.")
    return float(value)


@register("weighting")
@dataclass(frozen=True)
class RBA(Weighting):
    """Residual-based attention (Anagnostopoulos, Toscano, Stergiopulos & Karniadakis 2024,
    soanagno/rba-pinns): one multiplier per collocation point of each equation,

        lambda_i <- gamma * lambda_i + eta * |r_i| / max_j |r_j|,

    updated every step of a first-order stage (before the step's gradient, from the
    residuals at the step's parameters), and the equation term ``mean((lambda_i r_i)^2)``
    (the multipliers carry no gradient). Starting at ``initial`` (at most ``eta / (1 -
    gamma)``), the multipliers stay in ``[0, max(initial, eta / (1 - gamma))]``.

    **Resampling.** The multipliers belong to the points they were computed at: where a
    batch brings new points (``resample_every``, RAD), those points' multipliers restart at
    ``initial`` (the default 1: the plain mean square), the points kept keep theirs. So
    with points redrawn every K steps a multiplier sees at most K updates; for the papers'
    setting (fixed points) use ``resample_every: 0`` in the stages that should learn them.

    **Full-batch (line-search, Gauss-Newton) stages.** The multipliers are held fixed, so
    that every line search and every curvature pair of a quasi-Newton stage sees one loss;
    when such a stage redraws its points (its own ``resample_every``, or the fresh batch at
    the stage's start) the new points' multipliers restart at ``initial``, as above. With
    the default ``initial = 1`` a quasi-Newton stage after resampling trains the plain loss
    on points drawn where the residual is large, as vRBA's SSBroyden stage does (Toscano et
    al. 2025 update their multipliers between SSBroyden runs only to draw points with them).

    ``weights``: fixed weights of the named terms (as :class:`Fixed`); ``residual``: the
    equation terms that get multipliers (:func:`pinn.setup` names them).
    """

    gamma: float = 0.999
    eta: float = 0.01
    initial: float = 1.0
    weights: Mapping[str, float] | None = None
    residual: Sequence[str] | None = None

    pointwise = True

    def __post_init__(self) -> None:
        name = type(self).__name__
        _check_number(name, "gamma", self.gamma, 0.0, 1.0)
        _check_number(name, "eta", self.eta, 0.0, None, open_lo=True)
        _check_number(name, "initial", self.initial, 0.0, None)
        if self.initial > self.eta / (1 - self.gamma) * (1 + 1e-12):
            raise ValueError(
                f"{name}: initial={self.initial:g} is above the multipliers' bound eta / (1 - "
                f"gamma) = {self.eta / (1 - self.gamma):g}; lower initial or raise eta.")
        if self.residual is not None:
            if isinstance(self.residual, str) or not all(isinstance(n, str)
                                                         for n in self.residual):
                raise ValueError(f"{name}: residual must be a list of term names, got "
                                 f"{self.residual!r}.")
            object.__setattr__(self, "residual", tuple(self.residual))

    @property
    def bound(self) -> float:
        """The largest value a multiplier can take: ``max(initial, eta / (1 - gamma))``."""
        return max(float(self.initial), float(self.eta) / (1 - float(self.gamma)))

    def with_term_weights(self, terms: Mapping[str, float]) -> RBA:
        """Start from the terms' own weights (the given ``weights`` win)."""
        return replace(self, weights=_merge(self.weights, terms, type(self).__name__))

    def with_residual_terms(self, names: Sequence[str]) -> RBA:
        """Put multipliers on these terms (the equations); an explicit ``residual`` wins."""
        return self if self.residual is not None or not names else replace(
            self, residual=tuple(names))

    def init(self, names: Sequence[str], dtype: Any = jnp.float32, *, batch: Any = None
             ) -> dict:
        """The state: the term weights (as :class:`Fixed`), the multipliers (``initial``
        at every interior point of ``batch``, per equation) and those points."""
        name = type(self).__name__
        if not self.residual:
            raise ValueError(f"{name}: residual (the equation terms that get multipliers) is "
                             "not set; pass residual=[...] (pinn.setup sets it).")
        unknown = sorted(set(self.residual) - set(names))
        if unknown:
            raise ValueError(f"{name}: residual names terms {unknown} that the loss does not "
                             f"have; the loss terms are {sorted(names)}.")
        x = _interior_points(batch, name)
        state = Fixed(self.weights).init(names, dtype)
        n = x.shape[0]
        state["multipliers"] = {e: jnp.full((n,), self.initial, dtype) for e in self.residual}
        state["points"] = x
        return state

    def target(self, r: jax.Array, step: Any) -> jax.Array:
        """The update's target for residual magnitudes ``r`` (one equation, all points):
        ``r / max(r)`` (0 where every residual is 0)."""
        del step
        top = jnp.max(r)
        return jnp.where(top > 0, r / jnp.where(top > 0, top, 1), 0)

    def refit(self, state: dict, batch: Any) -> dict:
        """The state for ``batch``: multipliers of points not in the state's points restart
        at ``initial``; the others are kept (what a full-batch stage calls)."""
        x = _interior_points(batch, type(self).__name__)
        old = state["points"]
        moved = jnp.any(x != old.astype(x.dtype), axis=tuple(range(1, x.ndim)))
        lam = {e: jnp.where(moved, jnp.asarray(self.initial, v.dtype), v)
               for e, v in state["multipliers"].items()}
        return {**state, "multipliers": lam, "points": x.astype(old.dtype)}

    def update(self, state: dict, *, params: Any, batch: Any, terms_fn: TermsFn, step: Any):
        """One update of the multipliers from the residuals at ``params`` (after
        :meth:`refit` to ``batch``'s points); the term weights stay as they are."""
        state = self.refit(state, batch)
        res = equation_residuals(terms_fn, type(self).__name__)(params, batch)
        lam = {}
        for e, v in state["multipliers"].items():
            r = jax.lax.stop_gradient(jnp.abs(jnp.ravel(res[e]))).astype(v.dtype)
            lam[e] = jax.lax.stop_gradient(
                self.gamma * v + self.eta * self.target(r, step).astype(v.dtype))
        return {**state, "multipliers": lam}


@register("weighting")
@dataclass(frozen=True)
class VRBA(RBA):
    """Variational residual-based attention (Toscano et al. 2025, jdtoscano94/vRBA), with
    its exponential potential (the one its Burgers and Allen-Cahn runs use):

        beta = log(step + 3) / (c_log * max|r|),   q_i = exp(beta * (|r_i| - max|r|)),
        lambda_i <- gamma * lambda_i + eta * (phi * q_i + 1 - phi)

    (``q`` is their ``beta exp(beta |r|)`` divided by its largest value; their iteration
    count starts at 1, ours at 0, hence ``step + 3``). The multipliers grow sharper (closer
    to the points of largest residual, an ``L^inf`` target) as training goes on. Otherwise
    as :class:`RBA` (bounded by ``max(initial, eta / (1 - gamma))``, restarted for new points,
    held in full-batch stages)."""

    c_log: float = 1.0
    phi: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_number(type(self).__name__, "c_log", self.c_log, 0.0, None, open_lo=True)
        _check_number(type(self).__name__, "phi", self.phi, 0.0, 1.0, open_hi=False)

    def target(self, r: jax.Array, step: Any) -> jax.Array:
        top = jnp.max(r)
        safe = jnp.where(top > 0, top, 1)
        beta = jnp.log(jnp.asarray(step, r.dtype) + 3) / (self.c_log * safe)
        q = jnp.where(top > 0, jnp.exp(beta * (r - top)), 1)
        return self.phi * q + (1 - self.phi)


def _interior_points(batch: Any, owner: str) -> jax.Array:
    """The equations' points of an assembled batch (``batch["__interior__"]``)."""
    if not isinstance(batch, Mapping) or "__interior__" not in batch:
        raise ValueError(f"{owner}: pointwise multipliers need the batch of an assembled loss "
                         "(a dict with the equations' points under '__interior__'), got "
                         f"{type(batch).__name__}.")
    return jnp.asarray(batch["__interior__"])


@runtime_checkable
class _HasResiduals(Protocol):
    equation_residuals: Callable | None


def equation_residuals(loss: Any, owner: str) -> Callable:
    """``loss.equation_residuals``: ``(params, batch) -> {equation: residual at each interior
    point}`` (unweighted; what the loss of :func:`pinn.train.loss.assemble` carries)."""
    fn = loss.equation_residuals if isinstance(loss, _HasResiduals) else None
    if fn is None:
        raise ValueError(f"{owner}: the loss has no equation_residuals (the residual at each "
                         "point); use a loss built by pinn.train.loss.assemble (pinn.setup).")
    return fn
