"""Time intervals and space-time domains (``shape * TimeInterval(t0, t1)``).

Points of a space-time domain are ``[..., space.dim + 1]`` with time last.
Its boundary is the spatial boundary times the time interval (the initial
and final time slices are not part of it; a problem's initial slice is sampled by
:meth:`pinn.points.ProblemPoints.initial`).  Part names are the spatial shape's;
boundary normals are spatial (``[n, space.dim]``).  Predicates may use ``t`` as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from pinn.data import register
from pinn.geometry._core import Spec
from pinn.geometry.base import (
    Domain,
    Shape,
    coord_names,
    part_index,
    piece_mask,
    predicate_fn,
)

__all__ = ["TimeInterval", "SpaceTime"]

#: A layer's ``tau`` at ``t0`` (its square root's derivative is finite there).
LAYER_OFFSET = 1e-6


@register("domain")
@dataclass(frozen=True)
class TimeInterval:
    """The time interval ``[t0, t1]``; ``shape * TimeInterval(0, 1)`` is a space-time domain.

    ``layer=True``: the start is a layer (initial values that disagree with the boundary
    conditions, as a cold body in a hot bath: the solution moves like ``sqrt(t - t0)``
    near the boundary). Time is then drawn uniformly in ``tau = sqrt((t - t0)/(t1 - t0))``
    (:meth:`draw`), the network takes ``tau`` in its place (:meth:`network_time`), and the
    loss weights the equations with a time derivative by ``2 s`` and the boundary
    conditions by ``s`` (:meth:`weight`, ``s = sqrt(3) tau``, whose square averages 1):
    the equation in ``s``, ``u_s = 2 s u_t``, where ``u_t ~ 1/s`` near the start. The plan
    sets it (:func:`pinn.plan._layer`)."""

    t0: float
    t1: float
    layer: bool = False

    def __post_init__(self):
        t0, t1 = float(self.t0), float(self.t1)
        if not (math.isfinite(t0) and math.isfinite(t1) and t0 < t1):
            raise ValueError(f"TimeInterval needs finite t0 < t1, got t0={self.t0!r}, "
                             f"t1={self.t1!r}")
        object.__setattr__(self, "t0", t0)
        object.__setattr__(self, "t1", t1)
        object.__setattr__(self, "layer", bool(self.layer))

    @property
    def dim(self) -> int:
        """1: time is one coordinate."""
        return 1

    def to_data(self) -> dict:
        """The constructor's arguments, for the run format (:mod:`pinn.serialize`)."""
        return {"t0": self.t0, "t1": self.t1, **({"layer": True} if self.layer else {})}

    @property
    def bounds(self):
        """``([t0], [t1])``."""
        return np.array([self.t0]), np.array([self.t1])

    def draw(self, key, n: int, dtype):
        """``[n, 1]`` times over the interval: uniform, or uniform in ``tau`` for a layer."""
        u = jax.random.uniform(key, (n, 1), dtype=dtype)
        return self.t0 + (self.t1 - self.t0) * (u * u if self.layer else u)

    def network_time(self, t):
        """The time a network takes in place of ``t``: ``t`` itself, or for a layer
        ``t0 + (t1 - t0) tau`` (the same interval; ``tau`` offset by 1e-6 at ``t0``, so that
        its derivative stays finite there)."""
        if not self.layer:
            return t
        span = self.t1 - self.t0
        tau = jnp.sqrt(jnp.maximum(t - self.t0, 0.0) / span + LAYER_OFFSET**2)
        return self.t0 + span * tau

    def weight(self, t):
        """``s`` at times ``t``: 1 but for a layer, ``sqrt(3 (t - t0)/(t1 - t0))``, whose
        square averages 1 over ``tau`` (:func:`pinn.train.loss._layer_weighted`)."""
        if not self.layer:
            return jnp.ones_like(t)
        return jnp.sqrt(3.0 * jnp.maximum(t - self.t0, 0.0) / (self.t1 - self.t0))

    @property
    def measure(self) -> float:
        """The length ``t1 - t0``."""
        return self.t1 - self.t0

    def contains(self, t, tol: float = 0.0):
        """Whether ``t0 - tol <= t <= t1 + tol``, elementwise."""
        t = jnp.asarray(t)
        return (t >= self.t0 - tol) & (t <= self.t1 + tol)

    def __mul__(self, other):
        raise TypeError("write the space first: shape * TimeInterval(t0, t1)")


@register("domain")
@dataclass(frozen=True)
class SpaceTime(Domain):
    """A spatial shape times a time interval (``space * time``)."""

    space: Shape
    time: TimeInterval

    def __post_init__(self):
        if not isinstance(self.space, Shape):
            raise TypeError(f"SpaceTime needs a spatial shape, got {self.space!r}")
        if not isinstance(self.time, TimeInterval):
            raise TypeError(f"SpaceTime needs a TimeInterval, got {self.time!r}")

    # -- geometry ---------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self.space.dim + 1

    @property
    def bounds(self):
        lo, hi = self.space.bounds
        return np.append(lo, self.time.t0), np.append(hi, self.time.t1)

    @property
    def measure(self) -> float | None:
        m = self.space.measure
        return None if m is None else m * self.time.measure

    @property
    def default_tol(self) -> float:
        return self.space.default_tol

    @property
    def params(self) -> tuple:
        return self.space.params

    def at(self, values) -> SpaceTime:
        return SpaceTime(self.space.at(values), self.time) if self.params else self

    @property
    def boundary_parts(self) -> tuple[str, ...]:
        return self.space.boundary_parts

    @property
    def part_measures(self) -> dict[str, float | None]:
        T = self.time.measure
        return {k: None if v is None else v * T for k, v in self.space.part_measures.items()}

    @property
    def boundary_measure(self) -> float | None:
        m = self.space.boundary_measure
        return None if m is None else m * self.time.measure

    def _contains(self, x, tol):
        return self.space._contains(x[..., :-1], tol) & self.time.contains(x[..., -1], tol)

    def _sdf(self, x):
        """Signed distance to the product set (exact where the space's sdf is)."""
        ds = self.space._sdf(x[..., :-1])
        t = x[..., -1]
        dt = jnp.maximum(self.time.t0 - t, t - self.time.t1)
        outside = jnp.sqrt(jnp.maximum(ds, 0.0) ** 2 + jnp.maximum(dt, 0.0) ** 2)
        return outside + jnp.minimum(jnp.maximum(ds, dt), 0.0)

    def periodic_shift(self, pair) -> np.ndarray:
        return np.append(self.space.periodic_shift(pair), 0.0)

    # -- selection and sampling ------------------------------------------------------
    def _default_coords(self) -> tuple[str, ...]:
        return self.space._default_coords() + ("t",)

    def _finish(self, x, u):
        t0, t1 = self.time.t0, self.time.t1
        return jnp.concatenate([x, t0 + (t1 - t0) * u[:, :1]], axis=1)

    def _select(self, on, coords, tol):
        parts = self._resolve_parts(on)
        keep = None
        if parts is None:
            keep = predicate_fn(on, coord_names(coords, self._default_coords()), tol)
            parts = self.space.boundary_parts
        return self.space._select(parts, None, tol) + (keep,)

    def _spec(self, kind, on, coords) -> Spec:
        boundary = kind == "boundary"
        space = self.space._spec(kind, self._space_on(on) if boundary else None, None)
        keep = None
        if kind == "boundary" and self._resolve_parts(on) is None:
            keep = predicate_fn(on, coord_names(coords, self._default_coords()), space.tol)
        return Spec(space.pieces, space.part, space.pdim, space.boundary, space.tol, extra=1,
                    finish=self._finish, keep=keep, accept=space.accept)

    def _rate_key(self, kind, on, coords):
        if kind == "boundary" and self._resolve_parts(on) is None:
            return self, kind, on, coords  # the predicate may use t
        return self.space._rate_key(kind, self._space_on(on) if kind == "boundary" else None,
                                    None)

    def _space_on(self, on):
        parts = self._resolve_parts(on)
        return self.space.boundary_parts if parts is None else parts

    def _part_of(self, x, tol):
        part = part_index(self.space, x[..., :-1], tol)
        return jnp.where(self.time.contains(x[..., -1], tol), part, -1)

    def _mask(self, x, on, tol, coords):
        chosen, _, _, keep = self._select(on, coords, tol)
        mask = piece_mask(self.space, chosen, x[..., :-1], tol)
        mask = mask & self.time.contains(x[..., -1], tol)
        if keep is not None:
            mask = mask & keep(x)
        return mask

    def _extra_measure(self) -> float:
        return self.time.measure
