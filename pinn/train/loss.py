"""From a Problem to the loss: named terms, their point sets, and sampling.

``assemble(problem, apply, points=Points(...))`` returns an :class:`Assembly`:

- ``terms_fn(params, batch) -> {name: mean squared residual}``, one term per
  equation and per (soft) condition, named as in the problem;
- ``sample_fn(key, params) -> batch``: fresh collocation points for every
  term (a dict keyed like the terms), pure and jit-able so the training
  loop resamples on device;
- ``apply``: the field network with hard constraints built in.

``params`` is ``{"net": network parameters, "pde": {learnable name: value}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pinn import conditions as C
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_on_points

__all__ = ["Points", "Assembly", "assemble", "normal_symbols"]


@dataclass(frozen=True)
class Points:
    """How many collocation points each term gets, and how they are drawn.

    ``interior``: points in the (space-time) domain for the equations;
    ``boundary``: points for each boundary condition; ``initial``: points at
    the initial time for each initial condition.  ``resample_every``: draw new
    points every K steps (0: never).  ``sampler``: a geometry sampler object
    (default uniform random); ``rad``: residual-based adaptive sampling of
    the interior points (a ``pinn.geometry.RAD``), or None.
    """

    interior: int = 4096
    boundary: int = 1024
    initial: int = 1024
    resample_every: int = 100
    sampler: Any = None
    rad: Any = None

    def __post_init__(self):
        for name in ("interior", "boundary", "initial"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Points.{name} must be a positive integer, got {v!r}")
        if self.resample_every < 0:
            raise ValueError(f"Points.resample_every must be >= 0, got {self.resample_every}")


def normal_symbols(dim: int) -> tuple[E.Coord, ...]:
    """The per-point symbols of the outward normal used by Neumann and Robin terms."""
    return tuple(E.Coord(f"n__{i}") for i in range(dim))


@dataclass
class Assembly:
    terms_fn: Callable
    sample_fn: Callable
    apply: Callable
    names: tuple[str, ...]
    weights: dict[str, float]
    periodic: dict[int, float] = field(default_factory=dict)
    residual_fn: Callable | None = None


# ---------------------------------------------------------------------------
# sampling helpers


def _default_sampler(points: Points):
    if points.sampler is not None:
        return points.sampler
    from pinn.geometry import Uniform

    return Uniform()


def _append_time(key, pts, time, n):
    t = jax.random.uniform(key, (n, 1), dtype=pts.dtype, minval=time.t0, maxval=time.t1)
    return jnp.concatenate([pts, t], axis=1)


def _interior(problem, key, n, sampler):
    dtype = jnp.zeros(()).dtype
    k1, k2 = jax.random.split(key)
    pts = jnp.asarray(problem.space.sample_interior(k1, n, sampler), dtype)
    if problem.is_evolution:
        pts = _append_time(k2, pts, problem.time, n)
    return pts


def _boundary(problem, key, n, sampler, on):
    dtype = jnp.zeros(()).dtype
    k1, k2 = jax.random.split(key)
    bs = problem.space.sample_boundary(k1, n, sampler, on=on)
    pts = jnp.asarray(bs.points, dtype)
    normals = jnp.asarray(bs.normals, dtype)
    if problem.is_evolution:
        pts = _append_time(k2, pts, problem.time, n)
    return pts, normals


def _initial(problem, key, n, sampler):
    dtype = jnp.zeros(()).dtype
    pts = jnp.asarray(problem.space.sample_interior(key, n, sampler), dtype)
    t0 = jnp.full((n, 1), problem.time.t0, dtype)
    return jnp.concatenate([pts, t0], axis=1)


# ---------------------------------------------------------------------------
# hard constraints


_WALLS = {"left": (0, "lo"), "right": (0, "hi"), "bottom": (1, "lo"), "top": (1, "hi"),
          "front": (2, "lo"), "back": (2, "hi")}


def _box_walls(problem, name, on):
    """The ``box_distance`` walls of a hard Dirichlet condition on a box's parts."""
    from pinn import geometry as G

    space = problem.space
    if not isinstance(space, (G.Interval, G.Rectangle, G.Box)):
        raise ValueError(
            f"conditions.{name}: hard Dirichlet conditions are supported on intervals, "
            f"rectangles and boxes, not on {type(space).__name__}; use hard=False"
        )
    if on == "boundary":
        return list(range(space.dim))
    parts = (on,) if isinstance(on, str) else on
    if not isinstance(parts, tuple) or not all(isinstance(p, str) for p in parts):
        raise ValueError(
            f"conditions.{name}: a hard Dirichlet condition needs named parts (or 'boundary'), "
            f"not a predicate; use hard=False with on={on}"
        )
    walls = []
    for p in parts:
        if p not in space.boundary_parts or p not in _WALLS:
            raise ValueError(f"conditions.{name}.on: unknown part {p!r}; this "
                             f"{type(space).__name__} has {', '.join(space.boundary_parts)}")
        walls.append(_WALLS[p])
    return walls


def _hard_transforms(problem, apply, spatial_dim):
    """Wrap ``apply`` so hard Dirichlet/initial conditions hold exactly."""
    from pinn.nets import box_distance, hard_dirichlet, hard_dirichlet_initial, hard_initial

    coords = problem.coords
    fidx = {f: i for i, f in enumerate(problem.fields)}
    dirichlet: dict[int, tuple] = {}
    initial: dict[int, tuple] = {}
    for name, c in problem.conditions.items():
        if isinstance(c, C.Dirichlet) and c.hard:
            lo, hi = (np.asarray(b, dtype=np.float64) for b in problem.space.bounds)
            if problem.is_evolution:  # the distance ignores time; the box needs its column
                lo, hi = np.append(lo, problem.time.t0), np.append(hi, problem.time.t1)
            dist = box_distance(lo, hi, walls=_box_walls(problem, name, c.on))
            for f, v in c.values:
                if fidx[f] in dirichlet:
                    raise ValueError(f"conditions.{name}: field {f.name} already has a hard "
                                     "Dirichlet condition; merge them into one")
                dirichlet[fidx[f]] = (dist, v)
        if isinstance(c, C.Initial) and c.hard:
            if not problem.is_evolution:
                raise ValueError(f"conditions.{name}: an initial condition needs a time interval")
            rates = dict(c.rates)
            for f, v in c.values:
                initial[fidx[f]] = (v, rates.get(f))
    if not dirichlet and not initial:
        return apply
    t0 = problem.time.t0 if problem.is_evolution else 0.0

    def value(e):
        def fn(x):
            return evaluate_on_points(e, coords, x, spatial=problem.spatial).astype(x.dtype)

        return fn

    out = apply
    for j in sorted(set(dirichlet) | set(initial)):
        if j in dirichlet and j in initial:
            (dist, g), (u0, rate) = dirichlet[j], initial[j]
            if rate is not None:
                raise ValueError("hard initial conditions with a rate cannot be combined with "
                                 "hard Dirichlet conditions on the same field; make one soft")
            out = hard_dirichlet_initial(out, dist, value(g), value(u0), t_index=-1, t0=t0,
                                         outputs=[j])
        elif j in dirichlet:
            dist, g = dirichlet[j]
            out = hard_dirichlet(out, dist, value(g), outputs=[j])
        else:
            u0, rate = initial[j]
            out = hard_initial(out, value(u0), t_index=-1, t0=t0,
                               rate_fn=None if rate is None else value(rate), outputs=[j])
    return out


def periodic_embedding(problem) -> dict[int, float]:
    """``{input index: period}`` for hard periodic conditions (opposite faces of a box)."""
    out: dict[int, float] = {}
    for name, c in problem.conditions.items():
        if isinstance(c, C.Periodic) and c.hard:
            axis, a_val, b_val = _periodic_axis(problem, name, c)
            out[axis] = abs(b_val - a_val)
    return out


def _periodic_axis(problem, name, cond):
    """The coordinate axis normal to a periodic pair and its two positions."""
    space = problem.space
    key = jax.random.PRNGKey(0)
    from pinn.geometry import Uniform

    positions = []
    axes = []
    for part in cond.pair:
        try:
            bs = space.sample_boundary(key, 64, Uniform(), on=part)
        except ValueError as err:
            raise ValueError(f"conditions.{name}.pair: {err}") from None
        normals = np.asarray(bs.normals)
        pts = np.asarray(bs.points)
        axis = int(np.argmax(np.abs(normals).mean(axis=0)))
        if not np.allclose(np.abs(normals[:, axis]), 1.0, atol=1e-6) or np.ptp(pts[:, axis]) > 1e-9:
            raise ValueError(
                f"conditions.{name}: periodic part {part!r} is not a flat face perpendicular to a "
                "coordinate axis; periodic pairs must be opposite faces (e.g. left/right)"
            )
        axes.append(axis)
        positions.append(float(pts[0, axis]))
    if axes[0] != axes[1]:
        raise ValueError(
            f"conditions.{name}: parts {cond.pair} are not opposite faces (normals along "
            f"different axes)"
        )
    return axes[0], positions[0], positions[1]


# ---------------------------------------------------------------------------
# the assembly


def _mean_sq(r):
    return jnp.mean(jnp.square(r))


def assemble(problem, apply, points: Points | None = None, *, causal=None,
             data_dtype=None) -> Assembly:
    """Build the named loss terms and the sampler of ``problem`` for the network ``apply``.

    ``apply(net_params, x[N, d]) -> [N, n_fields]`` is the raw network; hard
    conditions are built around it here.  ``causal``: a ``pinn.train.Causal``
    weighting applied inside the equation terms of evolution problems.
    """
    from pinn.compile import compile_terms

    points = points or Points()
    sampler = _default_sampler(points)
    coords, fields = problem.coords, problem.fields
    spatial = problem.spatial
    dim = len(spatial)
    normals = normal_symbols(dim)
    field_apply = _hard_transforms(problem, apply, dim)

    def compiled(exprs, inputs=()):
        return compile_terms(exprs, coords=coords, fields=fields, apply=field_apply,
                             spatial=spatial, inputs=inputs)

    # -- equations on interior points ---------------------------------------
    eq_fn = compiled(dict(problem.equations))
    eq_names = tuple(problem.equations)

    evaluators: dict[str, Callable] = {}   # name -> fn(params, batch_entry) -> scalar
    samplers: dict[str, Callable] = {}     # name -> fn(key, params) -> batch_entry
    weights: dict[str, float] = {}

    use_causal = causal is not None and problem.is_evolution
    if use_causal:
        from pinn.train.weighting import causal_weights

        t0, t1 = problem.time.t0, problem.time.t1
        chunks = int(causal.chunks)

    def eq_terms(params, x):
        res = eq_fn(params, x)
        if not use_causal:
            return {n: _mean_sq(res[n]) for n in eq_names}
        idx = jnp.clip(((x[:, -1] - t0) / (t1 - t0) * chunks).astype(jnp.int32), 0, chunks - 1)
        counts = jnp.maximum(jax.ops.segment_sum(jnp.ones_like(x[:, -1]), idx, chunks), 1.0)
        out = {}
        for n in eq_names:
            per_chunk = jax.ops.segment_sum(jnp.square(res[n]), idx, chunks) / counts
            w = causal_weights(jax.lax.stop_gradient(per_chunk), causal.eps)
            out[n] = jnp.mean(w * per_chunk)
        return out

    def residual_magnitude(params, x):
        res = eq_fn(params, x)
        return sum(jnp.abs(res[n]) for n in eq_names)

    n_int = points.interior
    if points.rad is not None:
        from pinn.geometry import rad_select

        rad = points.rad
        pool = int(getattr(rad, "pool", None) or 8 * n_int)

        def sample_interior(key, params):
            k1, k2 = jax.random.split(key)
            cand = _interior(problem, k1, pool, sampler)
            r = jax.lax.stop_gradient(residual_magnitude(params, cand))
            return rad_select(k2, cand, r, n_int, rad.k, rad.c)
    else:
        def sample_interior(key, params):
            return _interior(problem, key, n_int, sampler)

    # -- conditions ------------------------------------------------------------
    fidx = {f: i for i, f in enumerate(fields)}
    for name, c in problem.conditions.items():
        if getattr(c, "hard", False):
            continue  # satisfied exactly by the transformed network / embedding
        weights[name] = c.weight
        where = f"conditions.{name}"
        if isinstance(c, C.Dirichlet):
            exprs = {f"{i}": f - v for i, (f, v) in enumerate(c.values)}
            _add_boundary_term(problem, name, compiled(exprs), c.on, points, sampler,
                               evaluators, samplers, with_normals=False)
        elif isinstance(c, (C.Neumann, C.Robin)):
            pairs = zip(normals, spatial, strict=True)
            dn = sum((n_i * E.Derivative(c.field, (x_i,)) for n_i, x_i in pairs),
                     start=E.Number(0))
            if isinstance(c, C.Neumann):
                expr = dn - c.value
            else:
                expr = c.a * c.field + c.b * dn - c.value
            _add_boundary_term(problem, name, compiled({"0": expr}, inputs=normals), c.on,
                               points, sampler, evaluators, samplers, with_normals=True)
        elif isinstance(c, C.Initial):
            if not problem.is_evolution:
                raise ValueError(f"{where}: initial conditions need a time interval in the domain")
            exprs = {f"v{i}": f - v for i, (f, v) in enumerate(c.values)}
            exprs.update({f"r{i}": E.Derivative(f, (problem.time_coord,)) - v
                          for i, (f, v) in enumerate(c.rates)})
            fn = compiled(exprs)
            evaluators[name] = _sum_terms(fn)
            samplers[name] = (lambda fn_n: lambda key, params: _initial(
                problem, key, fn_n, sampler))(points.initial)
        elif isinstance(c, C.Constraint):
            fn = compiled({"0": c.expr})
            if c.on == "interior":
                evaluators[name] = _sum_terms(fn)
                samplers[name] = sample_interior
            else:
                _add_boundary_term(problem, name, fn, c.on, points, sampler,
                                   evaluators, samplers, with_normals=False)
        elif isinstance(c, C.Periodic):
            axis, a_val, b_val = _periodic_axis(problem, name, c)
            x_axis = coords[axis]
            exprs = {}
            for f in c.fields:
                exprs[f"{f.name}:0"] = f
                for k in range(1, c.order + 1):
                    exprs[f"{f.name}:{k}"] = E.Derivative(f, (x_axis,) * k)
            fn = compiled(exprs)
            evaluators[name] = _periodic_term(fn, axis, b_val)
            samplers[name] = _part_sampler(problem, points.boundary, sampler, c.pair[0])
        elif isinstance(c, C.Data):
            if c.points.shape[1] != len(coords):
                raise ValueError(
                    f"{where}: data points have {c.points.shape[1]} columns, the problem has "
                    f"{len(coords)} coordinates ({', '.join(x.name for x in coords)})"
                )
            cols = [fidx[f] for f, _ in c.values]
            vals = np.stack([v for _, v in c.values], axis=1)
            evaluators[name] = _data_term(field_apply, c.points, vals, cols)
            samplers[name] = None
        else:  # pragma: no cover - guarded by Problem
            raise TypeError(f"{where}: unknown condition type {type(c).__name__}")

    names = eq_names + tuple(evaluators)
    for n in eq_names:
        weights.setdefault(n, 1.0)

    def terms_fn(params, batch):
        out = dict(eq_terms(params, batch["__interior__"]))
        for n, ev in evaluators.items():
            out[n] = ev(params, batch.get(n))
        return out

    def sample_fn(key, params):
        keys = jax.random.split(key, len(samplers) + 1)
        batch = {"__interior__": sample_interior(keys[0], params)}
        for k, (n, s) in zip(keys[1:], samplers.items(), strict=True):
            if s is not None:
                batch[n] = s(k, params)
        return batch

    return Assembly(terms_fn=terms_fn, sample_fn=sample_fn, apply=field_apply, names=names,
                    weights=weights, periodic=periodic_embedding(problem),
                    residual_fn=residual_magnitude)


def _part_sampler(problem, n, sampler, part):
    return lambda key, params: _boundary(problem, key, n, sampler, part)[0]


def _sum_terms(fn):
    def ev(params, x):
        res = fn(params, x)
        return sum(_mean_sq(r) for r in res.values())

    return ev


def _add_boundary_term(problem, name, fn, on, points, sampler, evaluators, samplers,
                       with_normals):
    # check the selection once, eagerly, so a bad part name fails before training
    try:
        _boundary(problem, jax.random.PRNGKey(0), 8, sampler, on)
    except ValueError as err:
        raise ValueError(f"conditions.{name}.on: {err}") from None
    n = points.boundary
    if with_normals:
        samplers[name] = lambda key, params: _boundary(problem, key, n, sampler, on)

        def ev(params, entry):
            x, nrm = entry
            res = fn(params, x, nrm)
            return sum(_mean_sq(r) for r in res.values())
    else:
        samplers[name] = lambda key, params: _boundary(problem, key, n, sampler, on)[0]

        def ev(params, x):
            res = fn(params, x)
            return sum(_mean_sq(r) for r in res.values())

    evaluators[name] = ev


def _periodic_term(fn, axis, b_val):
    def ev(params, xa):
        # jnp.where, not a scatter: the Taylor-mode engine differentiates through it
        xb = jnp.where(jnp.arange(xa.shape[-1]) == axis, b_val, xa)
        ra, rb = fn(params, xa), fn(params, xb)
        return sum(_mean_sq(ra[k] - rb[k]) for k in ra)

    return ev


def _data_term(field_apply, pts, vals, cols):
    def ev(params, _):
        x = jnp.asarray(pts, dtype=jnp.zeros(()).dtype)
        y = jnp.asarray(vals, dtype=x.dtype)
        out = field_apply(params["net"], x)[:, jnp.asarray(cols)]
        return _mean_sq(out - y)

    return ev
