"""From a Problem to the loss: named terms, their point sets, and sampling.

``assemble(problem, apply, points=Points(...))`` returns an :class:`Assembly`:

- ``terms_fn``: the :class:`~pinn.train.terms.Loss`, ``terms_fn(params, batch) -> {name:
  mean squared residual}``, one term per equation and per (soft) condition, named as in
  the problem; the same terms as residual vectors (``terms_fn.residuals``, scaled so that
  ``terms[name] == sum(square(residuals[name]))``: what Gauss-Newton methods
  differentiate) and point by point (``terms_fn.pointwise``), all derived from one
  description of each term (:class:`~pinn.train.terms.Block`); and the equations'
  residuals at the interior points, unweighted (``terms_fn.equation_residuals``: what
  RBA's multipliers follow). A batch may carry pointwise multipliers
  ``batch["__multipliers__"] = {equation: [N]}`` (:class:`pinn.train.RBA`); the equation
  terms are then ``mean((lambda_i r_i)^2)``, in every form;
- ``sample_fn(key, params) -> batch``: fresh collocation points for every term (a dict
  keyed like the terms; the equations' under ``"__interior__"``), pure and jit-able so the
  training loop resamples on device (:class:`pinn.points.ProblemPoints`);
- ``apply``: the field network with hard constraints built in.

``params`` is ``{"net": network parameters, "pde": {learnable name: value}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from pinn import conditions as C
from pinn.compile import compile_terms
from pinn.conditions import normal_symbols
from pinn.dsl import calculus
from pinn.network import hard_transforms, periodic_embedding
from pinn.points import ProblemPoints
from pinn.train.sharding import shard_points
from pinn.train.spec import Points
from pinn.train.terms import Average, Block, CausalMean, Loss, Mean, own_term

__all__ = ["Points", "Assembly", "assemble", "normal_symbols"]

INTERIOR = "__interior__"  # the batch key of the equations' points
#: An energy term's quadrature points per equation (or condition) point.
ENERGY_POINTS = 4


@dataclass
class Assembly:
    terms_fn: Loss
    sample_fn: Callable
    apply: Callable
    names: tuple[str, ...]
    weights: dict[str, float]
    periodic: dict[int, float] = field(default_factory=dict)
    residual_fn: Callable | None = None  # |equation residual| at points (for RAD)

    @property
    def residuals_fn(self) -> Callable:
        """The terms as residual vectors (``terms_fn.residuals``)."""
        return self.terms_fn.residuals


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
    points = points or Points()
    draw = ProblemPoints(problem, points.sampler, dtype)
    field_apply = hard_transforms(problem, apply)

    def compiled(exprs, inputs=()):
        return compile_terms(exprs, coords=problem.inputs, fields=problem.fields,
                             apply=field_apply, spatial=problem.spatial, inputs=inputs)

    eq_fn = _equations(problem, compiled)
    eq_names = tuple(problem.equations)

    def residual_magnitude(params, x):
        res = eq_fn(params, x)
        return sum(jnp.abs(res[n]) for n in eq_names)

    sample_interior = _interior_sampler(draw, points, residual_magnitude)
    blocks = [_equation_block(problem, eq_fn, eq_names, causal)]
    own: dict[str, tuple] = {}  # name -> (scalar, vector) of a condition's own term
    samplers: dict[str, Callable] = {}  # name -> fn(key, params) -> batch entry (or None)
    weights = dict.fromkeys(eq_names, 1.0)
    for name, c in problem.conditions.items():
        if c.hard:
            continue  # satisfied exactly by the transformed network / embedding
        weights[name] = c.weight
        term = c.loss_term(problem, name, field_apply, _RegionSampler(
            draw, points, sample_interior, name), draw.dtype)
        if term is not None:  # a term of the condition's own (pinn.LossTerm)
            own[name], samplers[name] = own_term(term[0]), term[1]
            continue
        res = c.residuals(problem, name)
        fn = compiled(dict(res.exprs), inputs=normal_symbols(len(problem.spatial))
                      if res.normals else ())
        block, samplers[name] = _condition_block(draw, c, name, res, fn, points, sample_interior)
        blocks.append(block)
    names = tuple(n for b in blocks for n in b.names) + tuple(own)
    order = {n: i for i, n in enumerate((*eq_names, *problem.conditions))}
    names = tuple(sorted(names, key=order.__getitem__))

    def terms_fn(params, batch):
        out = {}
        for b in blocks:
            out.update(b.terms(params, batch))
        out.update({n: scalar(params, batch.get(n)) for n, (scalar, _) in own.items()})
        return {n: out[n] for n in names}

    def residuals_fn(params, batch):
        out = {}
        for b in blocks:
            out.update(b.vectors(params, batch))
        out.update({n: vector(params, batch.get(n)) for n, (_, vector) in own.items()})
        return {n: out[n] for n in names}

    def equation_residuals(params, batch):
        res = eq_fn(params, batch[INTERIOR])
        return {n: jnp.ravel(res[n]) for n in eq_names}

    def sample_fn(key, params):
        keys = jax.random.split(key, len(samplers) + 1)
        batch = {INTERIOR: sample_interior(keys[0], params)}
        for k, (n, s) in zip(keys[1:], samplers.items(), strict=True):
            if s is not None:
                batch[n] = s(k, params)
        return batch

    loss = Loss(terms_fn, residuals_fn, tuple(b.pointwise() for b in blocks),
                equation_residuals)
    return Assembly(terms_fn=loss, sample_fn=sample_fn, apply=field_apply, names=names,
                    weights=weights, periodic=periodic_embedding(problem),
                    residual_fn=residual_magnitude)


def _layer_weighted(problem, fn, factor: float = 1.0, names=None):
    """``fn`` (residuals by name, of ``(params, x, ...)``) with the residuals ``names``
    (None: all) times ``factor`` times the time interval's
    :meth:`~pinn.geometry.TimeInterval.weight` ``s`` where the start is a layer; ``fn``
    itself otherwise. The equations with a time derivative take ``2 s``: the equation in
    ``s``, ``u_s = 2 s u_t`` (the chain rule's ``2 s``; its ``u_t ~ 1/s`` near the start
    cancelled); the boundary conditions ``s`` (at the layer's corner the start and the
    boundary data disagree, and the boundary's side may not pull the start's). Measured
    (PINNacle's Heat 2d-CG, user file, idle): equations ``2 s`` 3.40e-2, ``s`` 4.04e-2 (they
    then weigh a quarter as much against the Robin conditions); with the start soft, the
    Robin terms unweighted 6.23e-2, weighted by ``s`` 4.93e-2."""
    time = problem.time
    if time is None or not time.layer:
        return fn
    ti = problem.time_index

    def weighted(params, x, *rest):
        res = dict(fn(params, x, *rest))
        w = factor * time.weight(x[..., ti])
        for n in res if names is None else names:
            r = res[n]
            res[n] = r * w.reshape(w.shape + (1,) * (r.ndim - w.ndim)).astype(r.dtype)
        return res

    return weighted


def _equations(problem, compiled):
    """The equations' residuals, ``fn(params, x) -> {name: [N]}``: those with a time
    derivative weighted by ``2 s`` where the start is a layer (the equation in
    ``s = sqrt(3 (t - t0)/span)``: ``u_s = 2 s u_t``, :func:`_layer_weighted`)."""
    return _layer_weighted(problem, compiled(dict(problem.equations)), 2.0,
                           _with_rate(problem))


def _with_rate(problem) -> set:
    """The names of the equations that hold a time derivative (none in a steady problem)."""
    t = problem.time_coord
    if t is None:
        return set()
    return {n for n, e in problem.equations.items()
            if calculus.coord_orders(problem.expand(e), problem.spatial).get(t, 0)}


def _equation_block(problem, eq_fn, eq_names, causal) -> Block:
    """The equations: their residuals at the interior points, each a term (causally
    weighted over time for an evolution problem where ``causal`` asks)."""
    reduction = Mean()
    if causal is not None and problem.is_evolution:
        reduction = CausalMean(problem.time.t0, problem.time.t1, problem.time_index,
                               int(causal.chunks), causal.eps)

    def outputs(params, x):
        res = eq_fn(params, x)
        return {n: {"": res[n]} for n in eq_names}

    return Block(eq_names, lambda batch: batch[INTERIOR], outputs, reduction, multiplied=True)


# ---------------------------------------------------------------------------
# the conditions' terms


def _condition_block(draw: ProblemPoints, c, name, res: C.Residuals, fn, points: Points,
                     sample_interior) -> tuple[Block, Callable | None]:
    """One condition's term and its sampler (``None``: fixed points, nothing to draw)."""
    if isinstance(c, C.Energy):  # an integral over a quadrature, not a mean square
        return _energy_block(draw, name, res, fn, points, c.measure)
    if res.points is not None:
        return _fixed_points_block(draw, name, res, fn), None
    region = res.on if isinstance(res.on, str) else None
    if res.match is None and region == "interior":
        sample = sample_interior
    elif res.match is None and region == "initial":
        n = points.initial
        sample = lambda key, params: draw.initial(key, n)  # noqa: E731
    else:
        sample = _boundary_sampler(draw, name, res.on, points.boundary, res.normals)

    def entry(batch):
        return batch[name]

    if res.match is not None:
        axis, b_val = res.match

        def periodic(params, xa):
            # jnp.where, not a scatter: the Taylor-mode engine differentiates through it
            xb = jnp.where(jnp.arange(xa.shape[-1]) == axis, b_val, xa)
            ra, rb = fn(params, xa), fn(params, xb)
            return {name: {k: ra[k] - rb[k] for k in ra}}

        return Block((name,), entry, periodic), sample
    if region not in ("interior", "initial"):  # a boundary condition
        fn = _layer_weighted(draw.problem, fn)
    if res.normals and region not in ("interior", "initial"):
        return Block((name,), entry, lambda params, e: {name: fn(params, *e)}), sample
    return Block((name,), entry, lambda params, x: {name: fn(params, x)}), sample


def _energy_block(draw: ProblemPoints, name, res: C.Residuals, fn, points: Points,
                  measure: float) -> tuple[Block, Callable]:
    """An energy's term (:class:`pinn.conditions.Energy`): ``measure`` times the mean of
    its density over randomly shifted Sobol points (never residual-adapted: a quadrature
    of error ~1/N, not the 1/sqrt(N) of uniform draws), :data:`ENERGY_POINTS` times as
    many as the equations' (interior) or the conditions' (boundary) points (the density
    takes first derivatives only: cheaper than the residuals' second)."""
    from pinn.geometry import Sobol

    quad = ProblemPoints(draw.problem, Sobol(), draw.dtype)
    if res.on == "interior":
        n = ENERGY_POINTS * points.interior
        sample = lambda key, params: quad.interior(key, n)  # noqa: E731
    else:
        sample = _boundary_sampler(quad, name, res.on, ENERGY_POINTS * points.boundary, False)
    return Block((name,), lambda batch: batch[name],
                 lambda params, x: {name: fn(params, x)}, Average(measure)), sample


def _fixed_points_block(draw: ProblemPoints, name, res: C.Residuals, fn) -> Block:
    """Observations at fixed points: the mean square misfit over points and outputs."""
    if draw.problem.ranged:
        raise ValueError(
            f"conditions.{name}: data at fixed points are not supported in a parametric "
            f"problem yet (the points would need a value of "
            f"{', '.join(p.name for p in draw.problem.ranged)}); give the parameters "
            f"fixed values or drop the data condition")
    keys = tuple(res.exprs)

    def at(_batch):
        # on a device mesh, the data are split over the devices like the sampled points
        x = shard_points(jnp.asarray(res.points, dtype=draw.dtype))
        return x, shard_points(jnp.asarray(res.targets, dtype=x.dtype))

    def misfit(params, xy):
        x, y = xy
        out = fn(params, x)
        return {name: {"": jnp.stack([jnp.reshape(out[k], (-1,)) for k in keys], axis=1) - y}}

    return Block((name,), at, misfit)


# ---------------------------------------------------------------------------
# sampling


def _interior_sampler(draw: ProblemPoints, points: Points, residual_magnitude):
    n_int = points.interior
    if points.rad is None:
        def sample_interior(key, params):
            return draw.interior(key, n_int)

        return sample_interior
    from pinn.geometry import rad_select

    rad = points.rad
    pool = rad.pool_size(n_int)

    def sample_rad(key, params):
        k1, k2 = jax.random.split(key)
        cand = draw.interior(k1, pool)
        r = jax.lax.stop_gradient(residual_magnitude(params, cand))
        return rad_select(k2, cand, r, n_int, rad.k, rad.c)

    return sample_rad


@dataclass(frozen=True)
class _RegionSampler:
    """``sampler(on, n)``: a ``sample(key, params) -> x`` on a region, for a condition's own
    term (:meth:`pinn.conditions.Condition.loss_term`): ``"interior"`` (the equations'
    points when ``n`` is None), ``"initial"`` or a boundary selection."""

    draw: ProblemPoints
    points: Points
    sample_interior: Callable
    name: str

    def __call__(self, on, n=None):
        draw = self.draw
        if on == "interior":
            if n is None:
                return self.sample_interior
            return lambda key, params: draw.interior(key, n)
        if on == "initial":
            m = self.points.initial if n is None else n
            return lambda key, params: draw.initial(key, m)
        return _boundary_sampler(draw, self.name, on, self.points.boundary if n is None else n,
                                 False)


def _boundary_sampler(draw: ProblemPoints, name, on, n, with_normals):
    # check the selection once, eagerly, so a bad part name fails before training
    try:
        draw.boundary(jax.random.PRNGKey(0), 8, on)
    except ValueError as err:
        raise ValueError(f"conditions.{name}.on: {err}") from None
    if with_normals:
        return lambda key, params: draw.boundary(key, n, on)
    return lambda key, params: draw.boundary(key, n, on)[0]
