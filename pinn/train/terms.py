"""Loss terms: one description of each, from which every form the training needs derives.

A :class:`Block` describes terms whose residuals come from one evaluation at the points of
one batch entry: where the points are in the batch, the residuals there (``{term: {output:
r}}``, ``r`` of shape ``[N]`` or ``[N, k]``) and how they reduce (:class:`Mean`, or
:class:`CausalMean` over time slabs). From it come

- the scalar terms ``{name: value}`` (what first-order optimisers minimise);
- the residual vectors ``{name: 1-D}`` with ``terms[name] == sum(square(vector))``
  (Gauss-Newton, Levenberg-Marquardt);
- the same point by point, :class:`PointwiseResiduals` (cheap Jacobians: one backward
  pass per point).

:class:`Loss` gathers the three forms (and the equations' raw residuals, which residual-
based attention follows) into what the training core takes; any plain function
``(params, batch) -> {name: scalar}`` is a loss too (``Loss(fn)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pinn.train.weighting import MULTIPLIERS, causal_weights

__all__ = ["Loss", "Block", "Mean", "Average", "CausalMean", "PointwiseResiduals", "own_term"]


def _mean_sq(r):
    return jnp.mean(jnp.square(r))


def _scaled(r):
    """``r`` flattened and divided by the square root of its size: its squares sum to the
    mean of ``r``'s squares (the term ``_mean_sq(r)``)."""
    r = jnp.ravel(r)
    return r / jnp.sqrt(jnp.asarray(r.size, r.dtype))


@dataclass(frozen=True)
class Mean:
    """The mean square of a residual over its points (and outputs)."""

    def scalar(self, r, x):
        return _mean_sq(r)

    def vector(self, r, x):
        return _scaled(r)

    def weights(self, r, x):
        """Per point: ``1 / r.size`` (``r``: the residual over the batch)."""
        return jnp.full((r.shape[0],), 1.0 / r.size, r.dtype)


@dataclass(frozen=True)
class Average:
    """``measure`` times the plain mean of a value over its points: an integral (an energy,
    :class:`pinn.conditions.Energy`), not a sum of squares, so that neither a residual vector
    nor per-point weights exist (a Gauss-Newton stage cannot minimise it)."""

    measure: float = 1.0

    def scalar(self, r, x):
        return self.measure * jnp.mean(r)

    def vector(self, r, x):
        raise ValueError("an energy term (pinn.Energy) is an integral, not a sum of squares: "
                         "a Gauss-Newton or Levenberg-Marquardt stage cannot minimise it; use "
                         "Adam, L-BFGS or SSBroyden (or plan: {energy: false})")

    weights = vector


@dataclass(frozen=True)
class CausalMean:
    """The causally weighted mean square over ``chunks`` time slabs of ``[t0, t1]`` (time in
    column ``time_index`` of the points; Wang, Sankaran & Perdikaris 2022):
    ``mean_c w_c L_c`` with ``L_c`` the mean square in slab ``c`` and ``w_c =
    exp(-eps sum_{c' < c} L_c')`` (no gradient through the weights)."""

    t0: float
    t1: float
    time_index: int
    chunks: int
    eps: float

    def _slabs(self, r, x):
        """``(slab of each point, points per slab, w_c, L_c)``."""
        ti, chunks = self.time_index, int(self.chunks)
        idx = jnp.clip(((x[:, ti] - self.t0) / (self.t1 - self.t0) * chunks).astype(jnp.int32),
                       0, chunks - 1)
        counts = jnp.maximum(jax.ops.segment_sum(jnp.ones_like(x[:, ti]), idx, chunks), 1.0)
        r = jnp.ravel(r)
        per_chunk = jax.ops.segment_sum(jnp.square(r), idx, chunks) / counts
        return idx, counts, causal_weights(jax.lax.stop_gradient(per_chunk), self.eps), per_chunk

    def scalar(self, r, x):
        _, _, w, per_chunk = self._slabs(r, x)
        return jnp.mean(w * per_chunk)

    def vector(self, r, x):
        # the term is mean_c w_c * (sum of r_i^2 over slab c) / count_c
        idx, counts, w, _ = self._slabs(r, x)
        return jnp.ravel(r) * jnp.sqrt(w / (self.chunks * counts))[idx]

    def weights(self, r, x):
        idx, counts, w, _ = self._slabs(r, x)
        return jax.lax.stop_gradient((w / (self.chunks * counts))[idx])


def _times(r, m):
    """``r`` times its pointwise multipliers ``m`` where given (:class:`pinn.train.RBA`; no
    gradient flows through them)."""
    if m is None:
        return r
    return jnp.ravel(r) * jax.lax.stop_gradient(m).astype(r.dtype)


@dataclass(frozen=True, eq=False)
class Block:
    """Terms ``names`` evaluated together at the points ``points(batch)`` (a pytree with a
    leading point axis): ``outputs(params, points) -> {term: {output: residual}}``, reduced
    by ``reduction``. ``multiplied``: the batch's pointwise multipliers apply (the equations
    under residual-based attention)."""

    names: tuple[str, ...]
    points: Callable
    outputs: Callable
    reduction: Any = Mean()
    multiplied: bool = False

    def _at(self, params, batch):
        """``(points, {term: {output: residual times its multipliers}})``."""
        x = self.points(batch)
        out = self.outputs(params, x)
        m = batch.get(MULTIPLIERS) if self.multiplied and isinstance(batch, dict) else None
        if m is not None:
            out = {n: {k: _times(r, m.get(n)) for k, r in rs.items()} for n, rs in out.items()}
        return x, out

    def terms(self, params, batch) -> dict:
        x, out = self._at(params, batch)
        red = self.reduction
        return {n: _total(red.scalar(r, x) for r in out[n].values()) for n in self.names}

    def vectors(self, params, batch) -> dict:
        x, out = self._at(params, batch)
        red = self.reduction
        return {n: _joined([red.vector(r, x) for r in out[n].values()]) for n in self.names}

    def pointwise(self) -> PointwiseResiduals:
        """The terms point by point: the residual at one point (each term's outputs
        flattened and joined), and each point's weight from the reduction, times the
        squared multipliers where they apply."""

        def residual(params, point):
            out = self.outputs(params, jax.tree.map(lambda a: a[None], point))
            return {n: jnp.concatenate([jnp.ravel(r) for r in out[n].values()])
                    for n in self.names}

        def weights(params, batch):
            x, out = self._at(params, batch)
            w = {n: self.reduction.weights(next(iter(out[n].values())), x) for n in self.names}
            m = batch.get(MULTIPLIERS) if self.multiplied and isinstance(batch, dict) else None
            if m is None:
                return w
            return {n: v * jnp.square(jax.lax.stop_gradient(m[n]).astype(v.dtype)) if n in m
                    else v for n, v in w.items()}

        return PointwiseResiduals(self.names, self.points, residual, weights)


def _total(values):
    """The sum of a term's outputs (one output: itself)."""
    values = list(values)
    return values[0] if len(values) == 1 else sum(values)


def _joined(vectors):
    return vectors[0] if len(vectors) == 1 else jnp.concatenate(vectors)


@dataclass(frozen=True)
class PointwiseResiduals:
    """Terms whose residuals at a point depend on that point only (what makes Jacobians
    cheap: per point, instead of a backward pass over the whole batch per residual)::

        term[n] == sum_i weights[n][i] * sum(square(residual(params, point_i)[n]))

    ``points(batch)``: the points, a pytree with a leading point axis; ``residual(params,
    point) -> {name: [k]}`` at one point; ``weights(params, batch) -> {name: [N]}``,
    constants (no gradient flows through them). ``mapped(f)``: the same with the
    parameters passed through ``f`` first."""

    names: tuple[str, ...]
    points: Callable
    residual: Callable
    weights: Callable

    def mapped(self, f: Callable) -> PointwiseResiduals:
        return PointwiseResiduals(self.names, self.points, _Mapped(self.residual, f),
                                  _Mapped(self.weights, f))


@dataclass(frozen=True)
class _Mapped:
    """``fn(f(params), rest)``: a function of the parameters called with them mapped by
    ``f`` first (equal when ``fn`` and ``f`` are: equal runs share a compiled program)."""

    fn: Callable
    f: Callable

    def __call__(self, params, rest):
        return self.fn(self.f(params), rest)


def own_term(evaluate: Callable) -> tuple[Callable, Callable]:
    """A term known only as a scalar (a user's own ``LossTerm``): ``(scalar, vector)``,
    the vector the one residual ``sqrt(term)`` (Gauss-Newton on it is Gauss-Newton on the
    term itself)."""

    def vector(params, entry):
        value = evaluate(params, entry)
        return jnp.sqrt(jnp.maximum(value, jnp.finfo(value.dtype).tiny))[None]

    return evaluate, vector


@dataclass(frozen=True)
class Loss:
    """A loss as the training core takes it: ``terms(params, batch) -> {name: scalar}``
    and, where known, the same terms as residual vectors (``residuals``: ``terms[n] ==
    sum(square(residuals[n]))``, what Gauss-Newton stages need), point by point
    (``pointwise``: :class:`PointwiseResiduals` blocks covering some or all terms) and the
    equations' raw residuals at their points (``equation_residuals(params, batch) ->
    {equation: [N]}``, what residual-based attention follows). Calling it gives the
    terms."""

    terms: Callable
    residuals: Callable | None = None
    pointwise: tuple = ()
    equation_residuals: Callable | None = None

    def __call__(self, params, batch):
        return self.terms(params, batch)

    @staticmethod
    def of(fn: Callable) -> Loss:
        """``fn`` as a loss: itself if it is one, else its terms only."""
        return fn if isinstance(fn, Loss) else Loss(fn)

    def mapped(self, f: Callable) -> Loss:
        """The same loss with the parameters passed through ``f`` first (the optimiser's
        units to the physical ones)."""
        return Loss(_Mapped(self.terms, f),
                    None if self.residuals is None else _Mapped(self.residuals, f),
                    tuple(b.mapped(f) for b in self.pointwise),
                    None if self.equation_residuals is None
                    else _Mapped(self.equation_residuals, f))
