"""Sampling machinery shared by all shapes (internal).

A shape describes its interior and its boundary as lists of :class:`Piece`:
each piece has a measure (area, length, ...) and a measure-preserving map
from the unit cube ``[0, 1]^pdim`` onto it.  To sample, the first unit
coordinate ``s`` picks a piece with probability proportional to its measure
and is rescaled to ``[0, 1]`` inside that piece's slice (so the whole map stays
measure preserving and quasi-random points stay well spread); the remaining
coordinates are passed on.  CSG shapes add an ``accept`` test to the pieces of
their operands (keep only what lies on the CSG boundary / in its interior).

Rejection with fixed shapes (jit-friendly): each round proposes ``m``
candidates, ``m`` sized at trace time from an estimate of the acceptance rate
so that one round is almost always enough; the accepted ones are written in
order of proposal into a buffer of ``n`` slots with a ``cumsum`` rank
(stable: the first ``n`` accepted, which keeps quasi-random sequences
balanced).  A ``lax.while_loop`` runs further rounds (keys ``fold_in(key, r)``)
until ``n`` are filled, at most ``MAX_ROUNDS``; if still short, the accepted
points are repeated cyclically (only possible when almost nothing is
accepted, which the trace-time estimate rejects with an error first).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from pinn.geometry.samplers import Grid, float_dtype, lattice, lattice_counts, thin

MAX_ROUNDS = 256
RATE_CANDIDATES = 1 << 15
MIN_RATE = 1e-4


@dataclass(frozen=True, eq=False)
class Piece:
    """A region (interior) or a part of the boundary with a unit-cube parameterisation.

    ``map(loc[m, pdim]) -> x[m, dim]``; boundary pieces also give
    ``normal(x) -> n[m, dim]`` (outward, unit) and ``on(x, tol) -> bool[m]``;
    ``accept(x, n, tol) -> bool[m]`` (or None) restricts an interior piece
    (CSG).  Boundary pieces of CSG shapes are restricted by the owner's
    ``_accept_leaf(x, n, leaf, tol)`` instead, evaluated once per point with
    the piece's ``leaf`` (its primitive's index in the CSG tree); ``group`` is
    the index used for naming (a renamed CSG shape counts as one group).
    """

    name: str | None
    measure: float
    pdim: int
    map: Callable
    normal: Callable | None = None
    on: Callable | None = None
    accept: Callable | None = None
    leaf: int = 0
    group: int = 0
    affine: tuple | None = None  # (origin[dim], axes[pdim, dim], normal[dim]): flat pieces

    def restrict(self, keep: Callable, *, flip: bool = False) -> Piece:
        """Keep only points where ``keep(x, n, tol)``; ``flip`` reverses the normals."""
        prev, normal = self.accept, self.normal
        if flip and normal is not None:
            normal = _negated(self.normal)

        def accept(x, n, tol):
            ok = keep(x, n, tol)
            if prev is None:
                return ok
            return ok & prev(x, None if n is None else (-n if flip else n), tol)

        return replace(self, normal=normal, accept=accept)


def _negated(f):
    return lambda x: -f(x)


@dataclass(frozen=True, eq=False)
class Spec:
    """What to sample: pieces, how to finish the points, an extra predicate."""

    pieces: tuple[Piece, ...]
    part: tuple[int, ...]  # part id of each piece
    pdim: int
    boundary: bool
    tol: float
    extra: int = 0  # unit coordinates passed to `finish` (time)
    finish: Callable | None = None  # (x_core, u_extra) -> x_full
    keep: Callable | None = None  # x_full -> bool (predicates)
    accept: Callable | None = None  # (x_core, normals, leaf[m], tol) -> bool (CSG boundary)

    @property
    def dunit(self) -> int:
        return max(self.pdim, 1) + self.extra

    @property
    def rejects(self) -> bool:
        return (self.keep is not None or self.accept is not None
                or any(p.accept is not None for p in self.pieces))


def propose(spec: Spec, u):
    """Map unit points ``u[m, dunit]`` -> (x_full, normals | None, part ids, ok | None)."""
    pieces = spec.pieces
    m = u.shape[0]
    dt = u.dtype
    meas = np.array([p.measure for p in pieces], dtype=np.float64)
    frac = meas / meas.sum()
    cum = np.cumsum(frac)
    start = cum - frac
    core = max(spec.pdim, 1)
    if len(pieces) == 1:
        idx = jnp.zeros((m,), jnp.int32)
        loc = u[:, : spec.pdim]
    else:
        s = u[:, 0]
        idx = jnp.sum(s[:, None] >= jnp.asarray(cum[:-1], dt)[None, :], axis=1)
        idx = jnp.minimum(idx, len(pieces) - 1).astype(jnp.int32)
        loc0 = jnp.clip((s - jnp.asarray(start, dt)[idx]) / jnp.asarray(frac, dt)[idx], 0.0, 1.0)
        loc = jnp.concatenate([loc0[:, None], u[:, 1: spec.pdim]], axis=1)[:, : spec.pdim]
    # flat pieces (faces, edges, end points) all at once by gathering their
    # affine maps; curved pieces one by one, selected with `where`
    flat = [j for j, p in enumerate(pieces) if p.affine is not None]
    curved = [j for j, p in enumerate(pieces) if p.affine is None]
    x = normals = None
    if flat:
        pos = np.zeros(len(pieces), np.int32)
        pos[flat] = np.arange(len(flat))
        ia = jnp.asarray(pos)[idx]
        origin = jnp.asarray(np.stack([pieces[j].affine[0] for j in flat]), dt)[ia]
        x = origin
        if spec.pdim:
            axes = jnp.asarray(np.stack([pieces[j].affine[1] for j in flat]), dt)[ia]
            x = origin + jnp.einsum("mk,mkd->md", loc, axes)
        if spec.boundary:
            normals = jnp.asarray(np.stack([pieces[j].affine[2] for j in flat]), dt)[ia]
    for j in curved:
        xj = pieces[j].map(loc)
        nj = pieces[j].normal(xj) if spec.boundary else None
        if x is None:
            x, normals = xj, nj
        else:
            sel = (idx == j)[:, None]
            x = jnp.where(sel, xj, x)
            if spec.boundary:
                normals = jnp.where(sel, nj, normals)
    ok = None
    if any(p.accept is not None for p in pieces):
        ok = jnp.ones((m,), bool)
        for j, p in enumerate(pieces):
            if p.accept is not None:
                ok = jnp.where(idx == j, p.accept(x, normals, spec.tol), ok)
    if spec.accept is not None:
        leaf = jnp.asarray(np.array([p.leaf for p in pieces], np.int32))[idx]
        a = spec.accept(x, normals, leaf, spec.tol)
        ok = a if ok is None else ok & a
    if spec.finish is not None:
        x = spec.finish(x, u[:, core:])
    if spec.keep is not None:
        k = spec.keep(x)
        ok = k if ok is None else ok & k
    part = jnp.asarray(np.array(spec.part, np.int32))[idx]
    return x, normals, part, ok


@functools.lru_cache(maxsize=256)
def acceptance_rate(owner, kind: str, on, coords, dtype_name: str) -> float:
    """Fraction of proposals accepted (trace time, numpy randomness, cached); for a shape
    that depends on ranged parameters, the lowest over its probe values
    (:func:`pinn.geometry.parametric.row_acceptance`)."""
    if owner.params:
        from pinn.geometry.parametric import row_acceptance

        return row_acceptance(owner, kind, on, coords, dtype_name)
    spec = owner._spec(kind, on, coords)
    if not spec.rejects:
        return 1.0
    rng = np.random.default_rng(12345)
    u = rng.random((RATE_CANDIDATES, spec.dunit))
    with jax.ensure_compile_time_eval():
        ok = jax.jit(lambda v: propose(spec, v)[3])(jnp.asarray(u, dtype=dtype_name))
        count = int(np.asarray(ok).sum())
    rate = count / RATE_CANDIDATES
    what = "boundary part(s) " + _describe(on) if kind == "boundary" else "interior"
    if count == 0:
        raise ValueError(
            f"the {what} of {owner!r} has no measurable size: none of {RATE_CANDIDATES} "
            "candidate points were accepted; check the part name or predicate (a predicate "
            "such as x == 0.5 that meets the boundary only at isolated points selects nothing)"
        )
    if rate < 1e-3:
        warnings.warn(
            f"only {rate:.2e} of the candidate points lie on the {what} of {owner!r}; sampling "
            "it is slow", stacklevel=4,
        )
    return max(rate, MIN_RATE)


def _describe(on) -> str:
    return repr(on) if isinstance(on, (str, tuple)) else f"where {on}"


def fill(key, n: int, m: int, prop: Callable):
    """First ``n`` accepted of rounds of ``m`` proposals; ``prop(key) -> (values, ok)``."""
    shapes, _ = jax.eval_shape(prop, key)
    buf = jax.tree.map(lambda v: jnp.zeros((n,) + v.shape[1:], v.dtype), shapes)

    def cond(state):
        r, _, count = state
        return (count < n) & (r < MAX_ROUNDS)

    def body(state):
        r, buf, count = state
        vals, ok = prop(jax.random.fold_in(key, r))
        ok = ok.astype(jnp.int32)
        rank = count + jnp.cumsum(ok, dtype=jnp.int32) - 1
        slot = jnp.where((ok > 0) & (rank < n), rank, n)
        buf = jax.tree.map(lambda b, v: b.at[slot].set(v, mode="drop"), buf, vals)
        return r + 1, buf, jnp.minimum(count + jnp.sum(ok, dtype=jnp.int32), n)

    _, buf, count = jax.lax.while_loop(cond, body, (jnp.int32(0), buf, jnp.int32(0)))
    i = jnp.arange(n)
    take = jnp.where(i < count, i, i % jnp.maximum(count, 1))
    return jax.tree.map(lambda b: b[take], buf)


def candidates_for(n: int, rate: float) -> int:
    """Proposals per round so that ``n`` are accepted with a margin of ~4 sigma."""
    m = (n + 4.0 * math.sqrt(n) + 8.0) / (0.95 * rate)
    return int(min(math.ceil(m), 64 * n + 4096))


def draw(owner, key, n: int, sampler, kind: str, on, coords):
    """(points, normals | None, part) for ``owner._spec(kind, on, coords)``."""
    dtype = np.dtype(float_dtype()).name
    if isinstance(sampler, Grid):
        pts, nrm, part = grid_points(owner, n, kind, on, coords, dtype)
        return (jnp.asarray(pts), None if nrm is None else jnp.asarray(nrm), jnp.asarray(part))
    spec = owner._spec(kind, on, coords)
    if not spec.rejects:
        x, nrm, part, _ = propose(spec, sampler.unit(key, n, spec.dunit))
        return x, nrm, part
    rate = acceptance_rate(*owner._rate_key(kind, on, coords), dtype)
    m = candidates_for(n, rate)

    def prop(k):
        x, nrm, part, ok = propose(spec, sampler.unit(k, m, spec.dunit))
        return (x, nrm, part), ok

    return fill(key, n, m, prop)


@functools.lru_cache(maxsize=128)
def grid_points(owner, n: int, kind: str, on, coords, dtype: str):
    """Regular points (numpy), see :class:`pinn.geometry.samplers.Grid`."""
    with jax.ensure_compile_time_eval():
        if kind == "interior":
            lo, hi = (np.asarray(b, np.float64) for b in owner.bounds)
            aspect = hi - lo

            def make(target):
                counts = lattice_counts(target, aspect)
                pts = lo + lattice(counts) * aspect
                ok = np.asarray(owner.contains(jnp.asarray(pts, dtype)))
                return pts[ok].astype(dtype), None, np.zeros(int(ok.sum()), np.int32)
        else:
            spec = owner._spec(kind, on, coords)
            aspect = _boundary_aspect(owner, spec)

            prop = jax.jit(lambda v: propose(spec, v))

            def make(target):
                u = lattice(lattice_counts(target, aspect))
                x, nrm, part, ok = prop(jnp.asarray(u, dtype))
                ok = np.ones(u.shape[0], bool) if ok is None else np.asarray(ok)
                return (np.asarray(x)[ok], np.asarray(nrm)[ok], np.asarray(part)[ok])

        target = n
        for _ in range(60):
            pts, nrm, part = make(target)
            count = pts.shape[0]
            if count >= n:
                break
            target = int(math.ceil(target * 1.05 * n / max(count, 1))) + 1
        else:  # pragma: no cover - only for sets of (almost) no measure
            raise ValueError(f"a regular grid found only {count} of {n} points on {owner!r}")
    keep = thin(count, n)
    return pts[keep], (None if nrm is None else nrm[keep]), part[keep].astype(np.int32)


def _boundary_aspect(owner, spec: Spec):
    total = sum(p.measure for p in spec.pieces)
    core = max(spec.pdim, 1)
    if core == 1:
        aspect = [total]
    else:
        side = math.sqrt(total / len(spec.pieces))
        aspect = [side * len(spec.pieces)] + [side] * (core - 1)
    if spec.extra:
        span = owner.bounds[1][-1] - owner.bounds[0][-1]
        aspect += [float(span)] * spec.extra
    return aspect
