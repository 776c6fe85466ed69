"""Points of a problem's regions: its interior (in space-time), boundary parts and initial
slice, each with a parametric problem's ranged parameters after the coordinates.

The one sampler of a problem's points: the training loss (:mod:`pinn.train.loss`), the
manufactured-solution check (:mod:`pinn.report.manufactured`) and the problem files'
value checks (:mod:`pinn.config.checks`) all draw through :class:`ProblemPoints`. Space is
drawn with the geometry's sampler, time uniformly from a key of its own (uniformly in its
square root where the start is a layer, :class:`pinn.geometry.TimeInterval`). Where the domain's
sizes or positions depend on ranged parameters (:mod:`pinn.geometry.parametric`), the
parameters are drawn first and each point in (on) the shape of its own values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["ProblemPoints"]


def _append_time(key, pts, time, n):
    return jnp.concatenate([pts, time.draw(key, n, pts.dtype)], axis=1)


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

    def _param_values(self, key, n: int):
        """``[n, p]``: the ranged parameters' values, drawn from a key of their own (folded
        in: the coordinates are drawn as without parameters)."""
        ranged = self.problem.ranged
        d = len(self.problem.coords)
        u = _param_unit(self.sampler, jax.random.fold_in(key, 0x9A7A), n, d, len(ranged))
        lo = jnp.asarray([p.range[0] for p in ranged], self.dtype)
        hi = jnp.asarray([p.range[1] for p in ranged], self.dtype)
        return lo + (hi - lo) * jnp.asarray(u, self.dtype)

    def _space(self, key, space_key, n: int, kind: str, on=None, coords=None):
        """``(points [n, space dim], normals | None, parameter columns [n, p] | None)``:
        space drawn from ``space_key``, the parameters from ``key``."""
        space = self.problem.space
        values = self._param_values(key, n) if self.problem.ranged else None
        if space.params:  # each point in (on) the shape of its own values
            from pinn.geometry.parametric import draw_at

            names = [p.name for p in self.problem.ranged]
            at = {p.name: values[:, names.index(p.name)] for p in space.params}
            (pts, normals, _), src = draw_at(space, space_key, at, self.sampler, kind,
                                             on if kind == "boundary" else None, coords)
            values = values[src]
        elif kind == "interior":
            pts, normals = space.sample_interior(space_key, n, self.sampler), None
        else:
            bs = space.sample_boundary(space_key, n, self.sampler, on=on, coords=coords)
            pts, normals = bs.points, bs.normals
        return (jnp.asarray(pts, self.dtype),
                None if normals is None else jnp.asarray(normals, self.dtype), values)

    @staticmethod
    def _join(pts, values):
        return pts if values is None else jnp.concatenate([pts, values], axis=1)

    def interior(self, key, n: int):
        """``[n, inputs]``: points in the (space-time) domain."""
        k1, k2 = jax.random.split(key)
        pts, _, values = self._space(key, k1, n, "interior")
        if self.problem.is_evolution:
            pts = _append_time(k2, pts, self.problem.time, n)
        return self._join(pts, values)

    def boundary(self, key, n: int, on):
        """``([n, inputs], normals [n, space dim])``: points on the boundary selection ``on``
        (the whole boundary, parts, a predicate) at times drawn over the interval."""
        k1, k2 = jax.random.split(key)
        on = tuple(on) if isinstance(on, list) else on
        coords = [c.name for c in self.problem.spatial]
        if self.problem.space.params:
            self.problem.space._resolve_parts(on)
            coords = self.problem.space._coord_key(on, coords)
        pts, normals, values = self._space(key, k1, n, "boundary", on, coords)
        if self.problem.is_evolution:
            pts = _append_time(k2, pts, self.problem.time, n)
        return self._join(pts, values), normals

    def initial(self, key, n: int):
        """``[n, inputs]``: points of the initial slice (space at ``t0``)."""
        pts, _, values = self._space(key, key, n, "interior")
        t0 = jnp.full((n, 1), self.problem.time.t0, self.dtype)
        return self._join(jnp.concatenate([pts, t0], axis=1), values)
