"""Hard constraints: output transforms that satisfy a condition exactly.

Each transform wraps an ``apply(params, x[N, d]) -> [N, d_out]`` and returns
another with the same signature, so transforms compose and the derivative
engine sees an ordinary network. ``outputs`` selects the output columns a
transform acts on (default: all); the other columns pass through unchanged.
Exact periodicity is not a transform but an input embedding: build the network
with ``periodic={index: period}`` (see :class:`pinn.nets.Periodic`).

>>> d = box_distance([0.0, 0.0], [1.0, 1.0])              # vanishes on the square's walls
>>> u = hard_dirichlet(apply, d, lambda x: jnp.sin(x[:, 0]))
>>> u = hard_initial(apply, lambda x: jnp.sin(jnp.pi * x[:, 0]), t_index=1, t0=0.0)
>>> # both on a space-time box (x, t): walls in x only, initial data at t = 0
>>> d = box_distance([0.0, 0.0], [1.0, 1.0], walls=[0])
>>> u = hard_dirichlet_initial(apply, d, 0.0, lambda x: jnp.sin(jnp.pi * x[:, 0]), t_index=1)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pinn.geometry.spacetime import LAYER_OFFSET
from pinn.nets._split import ApplyFn, Params

PointFn = Callable[[jax.Array], jax.Array]
#: A function of the points ``x[N, d]`` returning ``[N]`` or ``[N, k]``, or a constant.
Value = PointFn | float | int


def _columns(outputs, d_out: int) -> list[int]:
    if outputs is None:
        return list(range(d_out))
    cols = [outputs] if isinstance(outputs, (int, np.integer)) else list(outputs)
    for c in cols:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < d_out:
            raise ValueError(
                f"outputs must be column indices in 0..{d_out - 1} of the network output, "
                f"got {outputs!r}"
            )
    if len(set(cols)) != len(cols):
        raise ValueError(f"outputs lists a column twice: {outputs!r}")
    return [int(c) for c in cols]


def _as_columns(value, x: jax.Array, k: int, what: str) -> jax.Array:
    """``value`` (a function of ``x`` or a constant) as an array ``[..., k]``."""
    v = jnp.asarray(value(x) if callable(value) else value)
    batch = x.shape[:-1]
    if v.ndim == 0:
        return jnp.broadcast_to(v, (*batch, k))
    if v.shape == batch:
        return jnp.broadcast_to(v[..., None], (*batch, k))
    if v.shape in ((*batch, k), (*batch, 1)):
        return jnp.broadcast_to(v, (*batch, k))
    raise ValueError(
        f"{what} returned shape {tuple(v.shape)} for points of shape {tuple(x.shape)}; it must "
        f"return shape {batch}, {(*batch, 1)} or {(*batch, k)} (one value per point and "
        f"constrained output) or a constant"
    )


def _combine(apply: ApplyFn, outputs, rule) -> ApplyFn:
    """``y[..., cols] = rule(x, y[..., cols])`` for the selected columns."""

    def constrained(params: Params, x: jax.Array) -> jax.Array:
        y = apply(params, x)
        cols = _columns(outputs, y.shape[-1])
        if cols == list(range(y.shape[-1])):
            return rule(x, y)
        # assembled column by column rather than with ``.at[].set`` (a scatter), so
        # that the Taylor-mode derivative engine can differentiate it
        new = rule(x, y[..., cols])
        where = {c: i for i, c in enumerate(cols)}
        return jnp.stack([new[..., where[j]] if j in where else y[..., j]
                          for j in range(y.shape[-1])], axis=-1)

    return constrained


def _check_t_index(t_index) -> None:
    if isinstance(t_index, bool) or not isinstance(t_index, (int, np.integer)):
        raise TypeError(f"t_index must be the column index of time in the points, got {t_index!r}")


def _check_t_range(t_index: int, x: jax.Array) -> None:
    if not -x.shape[-1] <= t_index < x.shape[-1]:
        raise ValueError(f"t_index={t_index} is out of range for points with {x.shape[-1]} columns")


def hard_dirichlet(
    apply: ApplyFn,
    distance_fn: PointFn,
    boundary_value_fn: Value,
    *,
    outputs: int | Sequence[int] | None = None,
) -> ApplyFn:
    """``u(x) = g(x) + d(x) · N(x)``: equals ``g`` wherever ``d`` vanishes.

    ``distance_fn(x) -> [N]`` must be zero on the constrained boundary and
    nonzero inside (use :func:`box_distance` for boxes, or a smooth distance of
    your own: its derivatives enter the PDE residual). ``boundary_value_fn(x)``
    gives ``g`` (``[N]``, ``[N, k]`` or a constant) and should extend the boundary
    data smoothly into the domain.
    """
    if not callable(distance_fn):
        raise TypeError(f"distance_fn must be a function of the points, got {distance_fn!r}")

    def rule(x, n):
        k = n.shape[-1]
        d = _as_columns(distance_fn, x, k, "distance_fn")
        g = _as_columns(boundary_value_fn, x, k, "boundary_value_fn")
        return g + d * n

    return _combine(apply, outputs, rule)




def _check_root(root: bool, rate_fn, who: str) -> None:
    if root and rate_fn is not None:
        raise ValueError(f"{who}: root=True is for a start of values only (a first-order "
                         "evolution), not one with a rate")


def _root(x, t_index: int, t0: float, span: float):
    """``[N, 1]``: ``sqrt((t - t0)/span + o^2) - o`` (``o``: the network's own offset of
    ``tau``, :data:`pinn.geometry.spacetime.LAYER_OFFSET`): 0 at ``t0``, a finite slope
    there."""
    frac = jnp.maximum(x[..., t_index] - t0, 0.0) / span
    return (jnp.sqrt(frac + LAYER_OFFSET**2) - LAYER_OFFSET)[..., None]


def _span_scale(span: float, power: int) -> float | None:
    """``1/span**power`` (None for a unit span: the product is then left out, bit for bit)."""
    span = float(span)
    if not span > 0 or not math.isfinite(span):
        raise ValueError(f"span must be a positive time-interval length, got {span!r}")
    return None if span == 1.0 else 1.0 / span**power


def hard_initial(
    apply: ApplyFn,
    initial_fn: Value,
    t_index: int,
    t0: float = 0.0,
    *,
    rate_fn: Value | None = None,
    span: float = 1.0,
    outputs: int | Sequence[int] | None = None,
    root: bool = False,
) -> ApplyFn:
    """``u(x, t) = u0(x) + (t - t0)/T · N(x, t)``: equals ``u0`` at ``t = t0``.

    With ``rate_fn`` (``v0``, for equations of second order in time):
    ``u = u0 + (t - t0) · v0 + ((t - t0)/T)² · N``, so that ``u = u0`` and
    ``∂u/∂t = v0`` at ``t0``. ``initial_fn``/``rate_fn`` take the full points
    ``x[N, d]`` (time column included) and return ``[N]``, ``[N, k]`` or a constant.
    ``span`` (``T``): the length of the time interval, so that the factor in front of
    the network runs from 0 to 1 whatever the time scale (on ``[0, 200]`` it would
    otherwise multiply the network by 200).

    ``root=True`` (a start that is a layer, :class:`pinn.geometry.TimeInterval`):
    ``u = u0 + sqrt((t - t0)/T) · N``, the factor of a solution that moves like
    ``sqrt(t - t0)`` (first order in time only; offset by 1e-6 inside the root so that
    its derivative stays finite at ``t0``, and by 1e-6 outside so that it is 0 there).
    """
    _check_t_index(t_index)
    t0 = float(t0)
    _check_root(root, rate_fn, "hard_initial")
    scale = _span_scale(span, 2 if rate_fn is not None else 1)

    def rule(x, n):
        _check_t_range(t_index, x)
        k = n.shape[-1]
        u0 = _as_columns(initial_fn, x, k, "initial_fn")
        if root:
            return u0 + _root(x, t_index, t0, span) * n
        tau = (x[..., t_index] - t0)[..., None]
        n = n if scale is None else n * scale
        if rate_fn is None:
            return u0 + tau * n
        v0 = _as_columns(rate_fn, x, k, "rate_fn")
        return u0 + tau * (v0 + tau * n)

    return _combine(apply, outputs, rule)


def hard_dirichlet_initial(
    apply: ApplyFn,
    distance_fn: PointFn,
    boundary_value_fn: Value,
    initial_fn: Value,
    t_index: int,
    t0: float = 0.0,
    *,
    span: float = 1.0,
    rate_fn: Value | None = None,
    outputs: int | Sequence[int] | None = None,
    root: bool = False,
) -> ApplyFn:
    """Boundary and initial data at once, for evolution problems:

    ``u(x, t) = u0(x) + g(x, t) - g(x, t0) + d(x) · (t - t0)/T · N(x, t)``

    (``span``: ``T``, the length of the time interval, as in :func:`hard_initial`); with
    ``rate_fn`` (``v0``, the initial ``D(u, t)``, a second-order evolution) also

    ``u(x, t) = u0 + g - g(x, t0) + (t - t0) (v0 - g_t(x, t0)) + d (t - t0)²/T² N``.

    At ``t = t0`` this is ``u0`` exactly; where ``d`` vanishes it is
    ``g + (u0 - g(·, t0))``, i.e. ``g`` when the data are compatible
    (``u0 = g(·, t0)`` on the boundary, up to rounding). Nesting
    :func:`hard_dirichlet` and :func:`hard_initial` instead would satisfy only
    the outer constraint exactly. ``root=True``: ``sqrt((t - t0)/T)`` in place of
    ``(t - t0)/T`` (as :func:`hard_initial`'s).
    """
    if not callable(distance_fn):
        raise TypeError(f"distance_fn must be a function of the points, got {distance_fn!r}")
    _check_t_index(t_index)
    t0 = float(t0)
    _check_root(root, rate_fn, "hard_dirichlet_initial")
    scale = None if root else _span_scale(span, 2 if rate_fn is not None else 1)

    def rule(x, n):
        _check_t_range(t_index, x)
        k = n.shape[-1]
        n = n if scale is None else n * scale
        # the time column set to t0 (jnp.where, not a scatter: see _combine)
        x0 = jnp.where(jnp.arange(x.shape[-1]) == t_index % x.shape[-1], t0, x)
        tau = (x[..., t_index] - t0)[..., None]
        u0 = _as_columns(initial_fn, x, k, "initial_fn")
        g = _as_columns(boundary_value_fn, x, k, "boundary_value_fn")
        g0 = _as_columns(boundary_value_fn, x0, k, "boundary_value_fn")
        d = _as_columns(distance_fn, x, k, "distance_fn")
        if root:
            return u0 + (g - g0) + d * _root(x, t_index, t0, span) * n
        if rate_fn is None:
            return u0 + (g - g0) + d * tau * n
        v0 = _as_columns(rate_fn, x, k, "rate_fn")
        along_t = jnp.where(jnp.arange(x.shape[-1]) == t_index % x.shape[-1], 1.0, 0.0)
        _, g_t0 = jax.jvp(lambda y: _as_columns(boundary_value_fn, y, k, "boundary_value_fn"),
                          (x0,), (jnp.broadcast_to(along_t, x0.shape).astype(x0.dtype),))
        return u0 + (g - g0) + tau * (v0 - g_t0 + d * tau * n)

    return _combine(apply, outputs, rule)


def box_distance(
    lo: Sequence[float],
    hi: Sequence[float],
    *,
    walls: Sequence[int | tuple[int, str]] | None = None,
) -> PointFn:
    """A smooth function ``d(x) -> [N]`` that vanishes exactly on walls of a box.

    ``d(x) = Π_i (x_i - lo_i)(hi_i - x_i) / ((hi_i - lo_i)/2)²`` over the chosen
    dimensions (1 at the centre, 0 on the walls, positive inside). ``walls``
    chooses which walls: an index ``i`` means both walls of dimension ``i``,
    ``(i, "lo")``/``(i, "hi")`` one wall (factor ``(x_i - lo_i)/(hi_i - lo_i)`` or
    ``(hi_i - x_i)/(hi_i - lo_i)``); default: every wall. For a space-time domain
    pass only the spatial dimensions, e.g. ``walls=[0]`` for ``x`` in ``(x, t)``.
    """
    lo = np.asarray(lo, dtype=np.float64).reshape(-1)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    if lo.shape != hi.shape or np.any(hi <= lo):
        raise ValueError(
            f"box_distance needs lo < hi of equal length, got lo={lo.tolist()}, hi={hi.tolist()}"
        )
    dim = len(lo)
    chosen: dict[int, set[str]] = {}
    for w in range(dim) if walls is None else walls:
        i, sides = (w, ("lo", "hi")) if isinstance(w, (int, np.integer)) else (w[0], (w[1],))
        if (
            isinstance(i, bool)
            or not isinstance(i, (int, np.integer))
            or not 0 <= i < dim
            or not set(sides) <= {"lo", "hi"}
        ):
            raise ValueError(
                f"walls entries are a dimension index in 0..{dim - 1} or "
                f"(index, 'lo'|'hi'), got {w!r}"
            )
        chosen.setdefault(int(i), set()).update(sides)

    def distance(x: jax.Array) -> jax.Array:
        if x.shape[-1] != dim:
            raise ValueError(
                f"box_distance was made for {dim} coordinates, got points of shape {tuple(x.shape)}"
            )
        d = jnp.ones(x.shape[:-1], x.dtype)
        for i, sides in sorted(chosen.items()):
            a, b = float(lo[i]), float(hi[i])
            scale = (b - a) if len(sides) == 1 else (b - a) / 2
            if "lo" in sides:
                d = d * ((x[..., i] - a) / scale)
            if "hi" in sides:
                d = d * ((b - x[..., i]) / scale)
        return d

    return distance
