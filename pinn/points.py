"""Points of a problem's regions: its interior (in space-time), boundary parts and initial
slice, each with a parametric problem's ranged parameters after the coordinates.

The one sampler of a problem's points: the training loss (:mod:`pinn.train.loss`), the
manufactured-solution check (:mod:`pinn.report.manufactured`) and the problem files'
value checks (:mod:`pinn.config.checks`) all draw through :class:`ProblemPoints`. Space is
drawn with the geometry's sampler, time uniformly from a key of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["ProblemPoints"]


def _append_time(key, pts, time, n):
    t = jax.random.uniform(key, (n, 1), dtype=pts.dtype, minval=time.t0, maxval=time.t1)
    return jnp.concatenate([pts, t], axis=1)


def _param_unit(sampler, key, n, d, p):
    """``[n, p]`` in the unit cube for the ranged parameters of points with ``d`` coordinates:
    Sobol/Halton take the dimensions after the coordinates' (a joint low-discrepancy net where
    the geometry keeps the sequence's order), a Latin hypercube its own slabs, any other
    sampler (uniform, grid, RAD's candidates) independent uniform numbers."""
    from pinn.geometry import Halton, LatinHypercube, Sobol, Uniform

    if isinstance(sampler, (Sobol, Halton)):
        return sampler.unit(key, n, d + p)[:, d:]
    if isinstance(sampler, LatinHypercube):
        return sampler.unit(key, n, p)
    return Uniform().unit(key, n, p)


@dataclass(frozen=True)
class ProblemPoints:
    """Points of ``problem`` drawn with ``sampler`` (``None``: uniform) in ``dtype``
    (``None``: the current precision's float); for a parametric problem each point gets
    the ranged parameters' columns too (after the coordinates: ``problem.inputs``), drawn
    over their ranges jointly with the point."""

    problem: Any
    sampler: Any = None
    dtype: Any = None

    def __post_init__(self):
        if self.sampler is None:
            from pinn.geometry import Uniform

            object.__setattr__(self, "sampler", Uniform())
        dtype = jnp.zeros(()).dtype if self.dtype is None else jnp.dtype(self.dtype)
        object.__setattr__(self, "dtype", dtype)

    def _with_params(self, key, pts):
        ranged = self.problem.ranged
        if not ranged:
            return pts
        # a key of its own (folded in): the coordinates are drawn as without parameters
        n, d = pts.shape[0], len(self.problem.coords)
        u = _param_unit(self.sampler, jax.random.fold_in(key, 0x9A7A), n, d, len(ranged))
        lo = jnp.asarray([p.range[0] for p in ranged], self.dtype)
        hi = jnp.asarray([p.range[1] for p in ranged], self.dtype)
        return jnp.concatenate([pts, lo + (hi - lo) * jnp.asarray(u, self.dtype)], axis=1)

    def interior(self, key, n: int):
        """``[n, inputs]``: points in the (space-time) domain."""
        k1, k2 = jax.random.split(key)
        pts = jnp.asarray(self.problem.space.sample_interior(k1, n, self.sampler), self.dtype)
        if self.problem.is_evolution:
            pts = _append_time(k2, pts, self.problem.time, n)
        return self._with_params(key, pts)

    def boundary(self, key, n: int, on):
        """``([n, inputs], normals [n, space dim])``: points on the boundary selection ``on``
        (the whole boundary, parts, a predicate) at times drawn over the interval."""
        k1, k2 = jax.random.split(key)
        coords = [c.name for c in self.problem.spatial]
        bs = self.problem.space.sample_boundary(k1, n, self.sampler, on=on, coords=coords)
        pts = jnp.asarray(bs.points, self.dtype)
        normals = jnp.asarray(bs.normals, self.dtype)
        if self.problem.is_evolution:
            pts = _append_time(k2, pts, self.problem.time, n)
        return self._with_params(key, pts), normals

    def initial(self, key, n: int):
        """``[n, inputs]``: points of the initial slice (space at ``t0``)."""
        pts = jnp.asarray(self.problem.space.sample_interior(key, n, self.sampler), self.dtype)
        t0 = jnp.full((n, 1), self.problem.time.t0, self.dtype)
        return self._with_params(key, jnp.concatenate([pts, t0], axis=1))
