"""From a Problem to the loss: named terms, their point sets, and sampling.

``assemble(problem, apply, points=Points(...))`` returns an :class:`Assembly`:

- ``terms_fn(params, batch) -> {name: mean squared residual}``, one term per
  equation and per (soft) condition, named as in the problem;
- ``residuals_fn(params, batch) -> {name: 1-D array}``: the same terms as residual
  vectors, scaled so that ``terms[name] == sum(square(residuals[name]))`` (what
  Gauss-Newton methods differentiate); also ``terms_fn.residuals``;
- ``sample_fn(key, params) -> batch``: fresh collocation points for every
  term (a dict keyed like the terms), pure and jit-able so the training
  loop resamples on device;
- ``terms_fn.equation_residuals(params, batch) -> {equation: [N]}``: the equations'
  residuals at the interior points, unweighted (what RBA's multipliers follow). A batch
  may carry pointwise multipliers ``batch["__multipliers__"] = {equation: [N]}``
  (:class:`pinn.train.RBA`); the equation terms are then ``mean((lambda_i r_i)^2)``, in
  the residual vectors and the point-by-point form too;
- ``apply``: the field network with hard constraints built in.

``params`` is ``{"net": network parameters, "pde": {learnable name: value}}``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from pinn import conditions as C
from pinn.conditions import normal_symbols
from pinn.network import hard_transforms, periodic_embedding
from pinn.train.sharding import shard_points
from pinn.train.spec import Points
from pinn.train.weighting import MULTIPLIERS

__all__ = ["Points", "Assembly", "assemble", "normal_symbols"]


@dataclass
class Assembly:
    terms_fn: Callable
    sample_fn: Callable
    apply: Callable
    names: tuple[str, ...]
    weights: dict[str, float]
    periodic: dict[int, float] = field(default_factory=dict)
    residual_fn: Callable | None = None  # |equation residual| at points (for RAD)
    residuals_fn: Callable | None = None  # the terms as residual vectors (Gauss-Newton)


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
class _Draw:
    """Collocation points of ``problem`` drawn with ``sampler`` in the run's ``dtype``; for a
    parametric problem each point gets the ranged parameters' columns too (after the
    coordinates: ``problem.inputs``), drawn over their ranges jointly with the point."""

    problem: Any
    sampler: Any
    dtype: Any

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

    def interior(self, key, n):
        k1, k2 = jax.random.split(key)
        pts = jnp.asarray(self.problem.space.sample_interior(k1, n, self.sampler), self.dtype)
        if self.problem.is_evolution:
            pts = _append_time(k2, pts, self.problem.time, n)
        return self._with_params(key, pts)

    def boundary(self, key, n, on):
        k1, k2 = jax.random.split(key)
        bs = self.problem.space.sample_boundary(k1, n, self.sampler, on=on)
        pts = jnp.asarray(bs.points, self.dtype)
        normals = jnp.asarray(bs.normals, self.dtype)
        if self.problem.is_evolution:
            pts = _append_time(k2, pts, self.problem.time, n)
        return self._with_params(key, pts), normals

    def initial(self, key, n):
        pts = jnp.asarray(self.problem.space.sample_interior(key, n, self.sampler), self.dtype)
        t0 = jnp.full((n, 1), self.problem.time.t0, self.dtype)
        return self._with_params(key, jnp.concatenate([pts, t0], axis=1))


# ---------------------------------------------------------------------------
# the assembly


def _mean_sq(r):
    return jnp.mean(jnp.square(r))


def assemble(problem, apply, points: Points | None = None, *, causal=None,
             dtype=None) -> Assembly:
    """Build the named loss terms and the sampler of ``problem`` for the network ``apply``.

    ``apply(net_params, x[N, d]) -> [N, n_fields]`` is the raw network; hard
    conditions are built around it here.  ``causal``: a ``pinn.train.Causal``
    weighting applied inside the equation terms of evolution problems.  Each
    soft condition contributes the term its ``residuals(problem, name)``
    describes (see :mod:`pinn.conditions`).  ``dtype``: of the collocation points and
    data (default: the float type of the current precision).
    """
    from pinn.compile import compile_terms

    points = points or Points()
    sampler = _default_sampler(points)
    draw = _Draw(problem, sampler, jnp.dtype(dtype) if dtype is not None else
                 jnp.zeros(()).dtype)
    normals = normal_symbols(len(problem.spatial))
    field_apply = hard_transforms(problem, apply)

    def compiled(exprs, inputs=()):
        return compile_terms(exprs, coords=problem.inputs, fields=problem.fields,
                             apply=field_apply, spatial=problem.spatial, inputs=inputs)

    eq_fn = compiled(dict(problem.equations))
    eq_names = tuple(problem.equations)
    eq_terms = _equation_terms(problem, eq_fn, eq_names, causal)
    eq_vectors = _equation_residuals(problem, eq_fn, eq_names, causal)
    blocks = [_equation_pointwise(problem, eq_fn, eq_names, causal)]  # per-point residuals

    def residual_magnitude(params, x):
        res = eq_fn(params, x)
        return sum(jnp.abs(res[n]) for n in eq_names)

    sample_interior = _interior_sampler(draw, points, residual_magnitude)
    evaluators: dict[str, Callable] = {}   # name -> fn(params, batch_entry) -> scalar
    samplers: dict[str, Callable] = {}     # name -> fn(key, params) -> batch_entry (or None)
    vectors: dict[str, Callable] = {}      # name -> fn(params, batch_entry) -> 1-D residuals
    weights: dict[str, float] = {}
    for name, c in problem.conditions.items():
        if c.hard:
            continue  # satisfied exactly by the transformed network / embedding
        own = c.loss_term(problem, name, field_apply, functools.partial(
            _region_sampler, draw, points, sample_interior, name=name), draw.dtype)
        if own is not None:  # a term of the condition's own (pinn.LossTerm)
            evaluators[name], samplers[name] = own
            vectors[name] = _root_of(own[0])
            weights[name] = c.weight
            continue
        res = c.residuals(problem, name)
        fn = compiled(dict(res.exprs), inputs=normals if res.normals else ())
        evaluators[name], samplers[name] = _condition_term(draw, name, res, fn, points,
                                                           sample_interior)
        vectors[name] = _condition_residuals(res, fn, draw.dtype)
        blocks.append(_condition_pointwise(name, res, fn, draw.dtype))
        weights[name] = c.weight

    names = eq_names + tuple(evaluators)
    for n in eq_names:
        weights.setdefault(n, 1.0)

    def terms_fn(params, batch):
        out = dict(eq_terms(params, batch["__interior__"], batch.get(MULTIPLIERS)))
        for n, ev in evaluators.items():
            out[n] = ev(params, batch.get(n))
        return out

    def residuals_fn(params, batch):
        out = dict(eq_vectors(params, batch["__interior__"], batch.get(MULTIPLIERS)))
        for n, vec in vectors.items():
            out[n] = vec(params, batch.get(n))
        return out

    def equation_residuals(params, batch):
        res = eq_fn(params, batch["__interior__"])
        return {n: jnp.ravel(res[n]) for n in eq_names}

    residuals_fn.pointwise = tuple(blocks)  # the same, point by point (cheap Jacobians)
    terms_fn.residuals = residuals_fn  # how the training core finds the residual form
    terms_fn.equation_residuals = equation_residuals  # raw, per point (RBA)

    def sample_fn(key, params):
        keys = jax.random.split(key, len(samplers) + 1)
        batch = {"__interior__": sample_interior(keys[0], params)}
        for k, (n, s) in zip(keys[1:], samplers.items(), strict=True):
            if s is not None:
                batch[n] = s(k, params)
        return batch

    return Assembly(terms_fn=terms_fn, sample_fn=sample_fn, apply=field_apply, names=names,
                    weights=weights, periodic=periodic_embedding(problem),
                    residual_fn=residual_magnitude, residuals_fn=residuals_fn)


def _times(res, n, multipliers):
    """Equation ``n``'s residuals at the points, times their multipliers where given
    (``{equation: [N]}``, :class:`pinn.train.RBA`; no gradient flows through them)."""
    r = res[n]
    if multipliers is None or n not in multipliers:
        return r
    return jnp.ravel(r) * jax.lax.stop_gradient(multipliers[n]).astype(r.dtype)


def _time_chunks(problem, chunks: int):
    """``x -> (chunk index of each point, points per chunk (at least 1))``: the time window
    cut into ``chunks`` equal slabs (the causal weighting's)."""
    t0, t1 = problem.time.t0, problem.time.t1
    ti = problem.time_index

    def chunk_of(x):
        idx = jnp.clip(((x[:, ti] - t0) / (t1 - t0) * chunks).astype(jnp.int32), 0, chunks - 1)
        counts = jnp.maximum(jax.ops.segment_sum(jnp.ones_like(x[:, ti]), idx, chunks), 1.0)
        return idx, counts

    return chunk_of


def _equation_terms(problem, eq_fn, eq_names, causal):
    """``(params, x) -> {equation: mean squared residual}``, causally weighted if asked."""
    if causal is None or not problem.is_evolution:
        def eq_terms(params, x, multipliers=None):
            res = eq_fn(params, x)
            return {n: _mean_sq(_times(res, n, multipliers)) for n in eq_names}

        return eq_terms
    from pinn.train.weighting import causal_weights

    chunks = int(causal.chunks)
    chunk_of = _time_chunks(problem, chunks)

    def causal_terms(params, x, multipliers=None):
        res = eq_fn(params, x)
        idx, counts = chunk_of(x)
        out = {}
        for n in eq_names:
            r = jnp.ravel(_times(res, n, multipliers))
            per_chunk = jax.ops.segment_sum(jnp.square(r), idx, chunks) / counts
            w = causal_weights(jax.lax.stop_gradient(per_chunk), causal.eps)
            out[n] = jnp.mean(w * per_chunk)
        return out

    return causal_terms


def _interior_sampler(draw: _Draw, points: Points, residual_magnitude):
    n_int = points.interior
    if points.rad is None:
        def sample_interior(key, params):
            return draw.interior(key, n_int)

        return sample_interior
    from pinn.geometry import rad_select

    rad = points.rad
    pool = int(getattr(rad, "pool", None) or 8 * n_int)

    def sample_rad(key, params):
        k1, k2 = jax.random.split(key)
        cand = draw.interior(k1, pool)
        r = jax.lax.stop_gradient(residual_magnitude(params, cand))
        return rad_select(k2, cand, r, n_int, rad.k, rad.c)

    return sample_rad


def _region_sampler(draw: _Draw, points: Points, sample_interior, on, n=None, *, name=""):
    """``sample(key, params) -> x`` on a region: ``"interior"`` (the equations' points when
    ``n`` is None), ``"initial"`` or a boundary selection."""
    if on == "interior":
        if n is None:
            return sample_interior
        return lambda key, params: draw.interior(key, n)
    if on == "initial":
        m = points.initial if n is None else n
        return lambda key, params: draw.initial(key, m)
    return _boundary_sampler(draw, name, on, points.boundary if n is None else n, False)


def _condition_term(draw: _Draw, name, res: C.Residuals, fn, points: Points,
                    sample_interior):
    """``(evaluate, sample)`` of one condition's residuals (``sample`` None: fixed points)."""
    if res.points is not None:
        if draw.problem.ranged:
            raise ValueError(
                f"conditions.{name}: data at fixed points are not supported in a parametric "
                f"problem yet (the points would need a value of "
                f"{', '.join(p.name for p in draw.problem.ranged)}); give the parameters "
                f"fixed values or drop the data condition")
        return _fixed_points_term(fn, tuple(res.exprs), res.points, res.targets,
                                  draw.dtype), None
    region = res.on if isinstance(res.on, str) else None
    if res.match is None and region == "interior":
        return _sum_terms(fn), sample_interior
    if res.match is None and region == "initial":
        n = points.initial
        return _sum_terms(fn), lambda key, params: draw.initial(key, n)
    sample = _boundary_sampler(draw, name, res.on, points.boundary, res.normals)
    if res.match is not None:
        return _periodic_term(fn, *res.match), sample
    if res.normals:
        def with_normals(params, entry):
            x, nrm = entry
            return sum(_mean_sq(r) for r in fn(params, x, nrm).values())

        return with_normals, sample
    return _sum_terms(fn), sample


def _sum_terms(fn):
    def ev(params, x):
        res = fn(params, x)
        return sum(_mean_sq(r) for r in res.values())

    return ev


def _boundary_sampler(draw: _Draw, name, on, n, with_normals):
    # check the selection once, eagerly, so a bad part name fails before training
    try:
        draw.boundary(jax.random.PRNGKey(0), 8, on)
    except ValueError as err:
        raise ValueError(f"conditions.{name}.on: {err}") from None
    if with_normals:
        return lambda key, params: draw.boundary(key, n, on)
    return lambda key, params: draw.boundary(key, n, on)[0]


def _periodic_term(fn, axis, b_val):
    def ev(params, xa):
        # jnp.where, not a scatter: the Taylor-mode engine differentiates through it
        xb = jnp.where(jnp.arange(xa.shape[-1]) == axis, b_val, xa)
        ra, rb = fn(params, xa), fn(params, xb)
        return sum(_mean_sq(ra[k] - rb[k]) for k in ra)

    return ev


def _fixed_points_term(fn, keys, pts, targets, dtype):
    def ev(params, _):
        # on a device mesh, the data are split over the devices like the sampled points
        x = shard_points(jnp.asarray(pts, dtype=dtype))
        y = shard_points(jnp.asarray(targets, dtype=x.dtype))
        res = fn(params, x)
        out = jnp.stack([jnp.reshape(res[k], (-1,)) for k in keys], axis=1)
        return _mean_sq(out - y)

    return ev


# ---------------------------------------------------------------------------
# the terms as residual vectors: terms[name] == sum(square(residuals[name]))


def _scaled(r):
    """``r`` flattened and divided by the square root of its size: its squares sum to the
    mean of ``r``'s squares (the term ``_mean_sq(r)``)."""
    r = jnp.ravel(r)
    return r / jnp.sqrt(jnp.asarray(r.size, r.dtype))


def _stacked(res):
    return jnp.concatenate([_scaled(r) for r in res.values()])


def _root_of(evaluate):
    """A term known only as a scalar (a user's own ``LossTerm``) as the one residual
    ``sqrt(term)``: Gauss-Newton on it is Gauss-Newton on the term itself."""

    def vector(params, entry):
        value = evaluate(params, entry)
        return jnp.sqrt(jnp.maximum(value, jnp.finfo(value.dtype).tiny))[None]

    return vector


def _equation_residuals(problem, eq_fn, eq_names, causal):
    """``(params, x) -> {equation: residual vector}`` of :func:`_equation_terms`' terms."""
    if causal is None or not problem.is_evolution:
        def eq_vectors(params, x, multipliers=None):
            res = eq_fn(params, x)
            return {n: _scaled(_times(res, n, multipliers)) for n in eq_names}

        return eq_vectors
    from pinn.train.weighting import causal_weights

    chunks = int(causal.chunks)
    chunk_of = _time_chunks(problem, chunks)

    def causal_vectors(params, x, multipliers=None):
        # the term is mean_c w_c * (sum of r_i^2 over chunk c) / count_c
        res = eq_fn(params, x)
        idx, counts = chunk_of(x)
        out = {}
        for n in eq_names:
            r = jnp.ravel(_times(res, n, multipliers))
            per_chunk = jax.ops.segment_sum(jnp.square(r), idx, chunks) / counts
            w = causal_weights(jax.lax.stop_gradient(per_chunk), causal.eps)
            out[n] = r * jnp.sqrt(w / (chunks * counts))[idx]
        return out

    return causal_vectors


def _condition_residuals(res: C.Residuals, fn, dtype):
    """``vector(params, batch_entry)`` of the term :func:`_condition_term` evaluates."""
    if res.points is not None:
        keys = tuple(res.exprs)

        def fixed(params, _):
            x = shard_points(jnp.asarray(res.points, dtype=dtype))
            y = shard_points(jnp.asarray(res.targets, dtype=x.dtype))
            out = fn(params, x)
            return _scaled(jnp.stack([jnp.reshape(out[k], (-1,)) for k in keys], axis=1) - y)

        return fixed
    if res.match is not None:
        axis, b_val = res.match

        def periodic(params, xa):
            xb = jnp.where(jnp.arange(xa.shape[-1]) == axis, b_val, xa)
            ra, rb = fn(params, xa), fn(params, xb)
            return jnp.concatenate([_scaled(ra[k] - rb[k]) for k in ra])

        return periodic
    region = res.on if isinstance(res.on, str) else None
    if res.normals and region not in ("interior", "initial"):
        def with_normals(params, entry):
            x, nrm = entry
            return _stacked(fn(params, x, nrm))

        return with_normals
    return lambda params, x: _stacked(fn(params, x))


# ---------------------------------------------------------------------------
# the residuals point by point: a Jacobian row costs one point's backward pass


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
        residual, weights = self.residual, self.weights
        return PointwiseResiduals(self.names, self.points,
                                  lambda p, e: residual(f(p), e), lambda p, b: weights(f(p), b))


def _uniform(names, points):
    """Weights ``1/N`` for each of ``names`` (the mean over the ``N`` points)."""

    def weights(params, batch):
        n = jax.tree.leaves(points(batch))[0].shape[0]
        return {k: jnp.full((n,), 1.0 / n, jax.tree.leaves(points(batch))[0].dtype)
                for k in names}

    return weights


def _one(fn):
    """``fn(params, x[N, d], ...)`` at one point: the outputs flattened, in order."""

    def at(params, *point):
        out = fn(params, *(p[None] for p in point))
        return jnp.concatenate([jnp.ravel(v) for v in out.values()])

    return at


def _equation_pointwise(problem, eq_fn, eq_names, causal):
    def points(batch):
        return batch["__interior__"]

    def residual(params, xi):
        res = eq_fn(params, xi[None])
        return {n: jnp.ravel(res[n]) for n in eq_names}

    if causal is None or not problem.is_evolution:
        return PointwiseResiduals(eq_names, points, residual,
                                  _squared_multipliers(_uniform(eq_names, points)))
    from pinn.train.weighting import causal_weights

    t0, t1 = problem.time.t0, problem.time.t1
    chunks = int(causal.chunks)
    ti = problem.time_index

    def weights(params, batch):
        x = batch["__interior__"]
        res = eq_fn(params, x)
        idx = jnp.clip(((x[:, ti] - t0) / (t1 - t0) * chunks).astype(jnp.int32), 0, chunks - 1)
        counts = jnp.maximum(jax.ops.segment_sum(jnp.ones_like(x[:, ti]), idx, chunks), 1.0)
        out = {}
        for n in eq_names:
            r = jnp.ravel(_times(res, n, batch.get(MULTIPLIERS)))
            per_chunk = jax.ops.segment_sum(jnp.square(r), idx, chunks) / counts
            w = causal_weights(jax.lax.stop_gradient(per_chunk), causal.eps)
            out[n] = jax.lax.stop_gradient((w / (chunks * counts))[idx])
        return out

    return PointwiseResiduals(eq_names, points, residual, _squared_multipliers(weights))


def _squared_multipliers(weights):
    """Point weights times the squared multipliers the batch carries (if any): the
    point-by-point form of ``mean((lambda_i r_i)^2)``."""

    def with_multipliers(params, batch):
        out = weights(params, batch)
        m = batch.get(MULTIPLIERS) if isinstance(batch, dict) else None
        if m is None:
            return out
        return {n: v * jnp.square(jax.lax.stop_gradient(m[n]).astype(v.dtype)) if n in m
                else v for n, v in out.items()}

    return with_multipliers


def _condition_pointwise(name, res: C.Residuals, fn, dtype):
    """The :class:`PointwiseResiduals` of the term :func:`_condition_term` evaluates."""
    if res.points is not None:
        keys = tuple(res.exprs)

        def fixed_points(batch):
            x = shard_points(jnp.asarray(res.points, dtype=dtype))
            return x, shard_points(jnp.asarray(res.targets, dtype=x.dtype))

        def fixed(params, point):
            xi, yi = point
            out = fn(params, xi[None])
            return {name: jnp.stack([jnp.ravel(out[k])[0] for k in keys]) - yi}

        def fixed_weights(params, batch):  # the mean over points and outputs
            x, y = fixed_points(batch)
            return {name: jnp.full((x.shape[0],), 1.0 / y.size, x.dtype)}

        return PointwiseResiduals((name,), fixed_points, fixed, fixed_weights)

    def points(batch):
        return batch[name]

    if res.match is not None:
        axis, b_val = res.match

        def periodic(params, xa):
            xb = jnp.where(jnp.arange(xa.shape[-1]) == axis, b_val, xa)
            ra, rb = fn(params, xa[None]), fn(params, xb[None])
            return {name: jnp.concatenate([jnp.ravel(ra[k] - rb[k]) for k in ra])}

        return PointwiseResiduals((name,), points, periodic, _uniform((name,), points))
    region = res.on if isinstance(res.on, str) else None
    at = _one(fn)
    if res.normals and region not in ("interior", "initial"):
        def with_normals(params, point):
            return {name: at(params, *point)}

        return PointwiseResiduals((name,), points, with_normals, _uniform((name,), points))
    return PointwiseResiduals((name,), points, lambda p, xi: {name: at(p, xi)},
                              _uniform((name,), points))
