"""Point samplers: strategies that turn a key into points of the unit cube.

A sampler is an object (never a string) passed to ``sample_interior`` /
``sample_boundary``.  Shapes map the unit points ``u[n, d]`` to the domain
through measure-preserving maps (polar maps for disks, the square-root map
for triangles, arc length for boundaries, ...), so every sampler gives
points distributed by area / length.

What runs where (``n`` and ``d`` are static Python ints):

- ``Uniform``: ``jax.random.uniform``; fully jitted.
- ``LatinHypercube``: one random permutation per dimension plus jitter; fully
  jitted.
- ``Sobol``: the first ``n`` points of the unscrambled Sobol sequence are
  computed once per ``(n, d)`` with ``scipy.stats.qmc`` when the function is
  traced (cached), and embedded as a constant; inside jit, a **random digital
  shift** (XOR of every coordinate's 32 bits with random bits drawn from the
  key) randomises them.  Each key gives a different, equally balanced net.
- ``Halton``: likewise the first ``n`` Halton points (radical inverses in the
  first ``d`` primes, numpy, at trace time) with a key-dependent **random shift modulo 1**
  (Cranley-Patterson rotation) inside jit.
- ``Grid``: a regular, deterministic lattice (the key is ignored); the whole
  point set is computed at trace time and is a constant of the jitted
  function.  See :class:`Grid`.
- ``RAD``: residual-based adaptive sampling.  A shape given ``RAD`` draws from
  its ``base`` sampler; the training loop draws ``pool_size(n)`` candidates,
  evaluates the residual on them and keeps ``n`` with :func:`rad_select`.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from pinn.data import register

__all__ = [
    "Sampler", "Uniform", "Sobol", "Halton", "LatinHypercube", "Grid", "RAD", "rad_select",
    "float_dtype",
]


def float_dtype():
    """The default floating dtype now (float64 inside ``jax.enable_x64(True)``)."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def _u32_to_unit(v):
    """uint32 -> floats in (0, 1): the centre of the bit cell (never 0 or 1)."""
    if float_dtype() == jnp.float64:
        return (v.astype(jnp.float64) + 0.5) * 2.0**-32
    return ((v >> 8).astype(jnp.float32) + 0.5) * 2.0**-24


class Sampler:
    """Base class: ``unit(key, n, d) -> u[n, d]`` in the unit cube (jit-friendly)."""

    def unit(self, key, n: int, d: int):  # pragma: no cover - interface
        raise NotImplementedError


@register("sampler")
@dataclass(frozen=True)
class Uniform(Sampler):
    """Independent uniform random points."""

    def unit(self, key, n: int, d: int):
        """``n`` points in the unit cube ``[0, 1)^d``: ``[n, d]``."""
        return jax.random.uniform(key, (n, d), dtype=float_dtype())


@functools.lru_cache(maxsize=64)
def _sobol_table(n: int, d: int) -> np.ndarray:
    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balance warning when n is not a power of 2
        pts = qmc.Sobol(d, scramble=False, bits=32).random(n)
    return np.floor(pts * 2.0**32).astype(np.uint64).astype(np.uint32)


def _primes(d: int) -> list[int]:
    out: list[int] = []
    k = 2
    while len(out) < d:
        if all(k % p for p in out if p * p <= k):
            out.append(k)
        k += 1
    return out


@functools.lru_cache(maxsize=64)
def _halton_table(n: int, d: int) -> np.ndarray:
    """The first ``n`` points of the Halton sequence (radical inverses in the first primes)."""
    out = np.zeros((n, d))
    for j, b in enumerate(_primes(d)):
        i = np.arange(n)
        f = 1.0
        while np.any(i > 0):
            f /= b
            out[:, j] += f * (i % b)
            i //= b
    return out


@register("sampler")
@dataclass(frozen=True)
class Sobol(Sampler):
    """Sobol' points with a key-dependent random digital shift.

    Best with ``n`` a power of two (the net is then balanced); other ``n`` take
    the first ``n`` points of the sequence.
    """

    def unit(self, key, n: int, d: int):
        """``n`` points in the unit cube ``[0, 1)^d``: ``[n, d]``."""
        base = jnp.asarray(_sobol_table(int(n), int(d)))
        shift = jax.random.bits(key, (d,), dtype=jnp.uint32)
        return _u32_to_unit(base ^ shift[None, :])


@register("sampler")
@dataclass(frozen=True)
class Halton(Sampler):
    """Halton points with a key-dependent random shift modulo 1."""

    def unit(self, key, n: int, d: int):
        """``n`` points in the unit cube ``[0, 1)^d``: ``[n, d]``."""
        dt = float_dtype()
        base = jnp.asarray(_halton_table(int(n), int(d)), dtype=dt)
        shift = jax.random.uniform(key, (d,), dtype=dt)
        u = base + shift[None, :]
        return u - jnp.floor(u)


@register("sampler")
@dataclass(frozen=True)
class LatinHypercube(Sampler):
    """Latin hypercube: each of the ``n`` slabs of every axis holds exactly one point."""

    def unit(self, key, n: int, d: int):
        """``n`` points in the unit cube ``[0, 1)^d``: ``[n, d]``."""
        dt = float_dtype()
        kp, kj = jax.random.split(key)
        # a uniformly random permutation per axis: the ranks of iid uniform numbers
        perms = jnp.argsort(jax.random.uniform(kp, (d, n), dtype=dt), axis=1)
        jitter = jax.random.uniform(kj, (n, d), dtype=dt)
        return (perms.T.astype(dt) + jitter) / n


def lattice_counts(n: int, aspect) -> np.ndarray:
    """Points per axis of the smallest near-isotropic lattice with at least ``n`` points.

    ``aspect``: the extent of each axis (the spacing is made as equal as
    possible across axes).
    """
    a = np.maximum(np.asarray(aspect, dtype=np.float64), 1e-300)
    d = a.size
    base = (n / np.prod(a)) ** (1.0 / d)
    k = np.maximum(1, np.floor(a * base)).astype(np.int64)
    while np.prod(k) < n:
        k[np.argmax(a / k)] += 1
    return k


def lattice(counts) -> np.ndarray:
    """Cell-centred lattice in the unit cube with ``counts[i]`` points along axis ``i``."""
    axes = [(np.arange(k) + 0.5) / k for k in counts]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.reshape(-1) for m in mesh], axis=-1)


def thin(m: int, n: int) -> np.ndarray:
    """Indices of ``n`` of ``m >= n`` items, evenly spread (all of them when ``m == n``)."""
    return np.floor((np.arange(n) + 0.5) * m / n).astype(np.int64)


@register("sampler")
@dataclass(frozen=True)
class Grid(Sampler):
    """A regular, deterministic grid (the key is ignored).

    Interior: the cell-centred Cartesian lattice on the bounding box whose
    spacing is as equal as possible across axes, refined until at least ``n``
    lattice points lie in the shape; when more than ``n`` do, ``n`` of them are
    kept, evenly spread in lattice order.  On a rectangle or box with ``n``
    equal to the lattice size (``n = k^d`` for a cube, 20 x 10 = 200 for a
    2 x 1 rectangle) this is exactly the full lattice.
    Boundary: equally spaced in arc length along the whole boundary in 2-D; a
    lattice in the faces' parameters in 3-D; restricted and thinned likewise.
    The point set is computed once at trace time and is a constant in jit.
    """

    def unit(self, key, n: int, d: int):
        """``n`` points in the unit cube ``[0, 1)^d``: ``[n, d]``."""
        counts = lattice_counts(n, np.ones(d))
        pts = lattice(counts)
        return jnp.asarray(pts[thin(pts.shape[0], n)], dtype=float_dtype())


@register("sampler")
@dataclass(frozen=True)
class RAD(Sampler):
    """Residual-based adaptive distribution (Wu et al. 2023).

    The training loop draws ``pool_size(n)`` candidates with ``base``, evaluates
    the PDE residual ``r`` on them and keeps ``n`` drawn without replacement with
    probability proportional to ``|r|^k / mean(|r|^k) + c`` (:func:`rad_select`).
    ``k = 0`` or a large ``c`` is close to uniform; ``c = 0`` follows the
    residual only.  ``pool``: number of candidates (default ``max(100_000, 10 * n)``).
    Used directly as a shape's sampler, it samples like ``base``.
    """

    k: float = 1.0
    c: float = 1.0
    pool: int | None = None
    base: Sampler = field(default_factory=Uniform)

    def __post_init__(self):
        if not (math.isfinite(self.k) and self.k >= 0):
            raise ValueError(f"RAD k must be a finite number >= 0, got {self.k!r}")
        if not (math.isfinite(self.c) and self.c >= 0):
            raise ValueError(f"RAD c must be a finite number >= 0, got {self.c!r}")
        if self.pool is not None and (not isinstance(self.pool, int) or self.pool < 1):
            raise ValueError(f"RAD pool must be a positive int (candidates), got {self.pool!r}")
        if isinstance(self.base, RAD):
            raise ValueError("RAD base must be a plain sampler (Uniform, Sobol, ...), not RAD")

    def pool_size(self, n: int) -> int:
        """How many candidates are drawn for ``n`` points (``pool``, default ``max(100_000,
        10 * n)``)."""
        size = max(100_000, 10 * n) if self.pool is None else self.pool
        if size < n:
            raise ValueError(
                f"RAD pool of {size} candidates cannot give {n} points; set pool >= {n}"
            )
        return size

    def unit(self, key, n: int, d: int):
        """The candidates: ``n`` points of the ``base`` sampler, ``[n, d]``."""
        return self.base.unit(key, n, d)

    def select(self, key, candidates, residual, n: int):
        """``rad_select`` with this sampler's ``k`` and ``c``."""
        return rad_select(key, candidates, residual, n, self.k, self.c)


def rad_select(key, candidates, residual, n: int, k: float = 1.0, c: float = 1.0):
    """Keep ``n`` of ``candidates[M, d]``, denser where ``|residual[M]|`` is large.

    Density ``p ∝ |r|^k / mean(|r|^k) + c``; drawn without replacement by
    Gumbel top-k (``argtop_n(log p + Gumbel noise)``), so the result has fixed
    shape ``[n, d]`` and is jit-friendly.  The residual is not differentiated
    through (``stop_gradient``); NaN residuals count as zero.
    """
    m = candidates.shape[0]
    if not isinstance(n, int) or n < 1 or n > m:
        raise ValueError(f"rad_select needs a static int 1 <= n <= {m} candidates, got n={n!r}")
    if residual.shape[0] != m:
        raise ValueError(
            f"rad_select: {residual.shape[0]} residuals for {m} candidates; give one per point"
        )
    r = jnp.abs(jnp.nan_to_num(jax.lax.stop_gradient(residual).reshape(m)))
    rk = r**k if k != 1.0 else r
    w = rk / (jnp.mean(rk) + jnp.finfo(rk.dtype).tiny) + c
    logits = jnp.log(w)
    g = jax.random.gumbel(key, (m,), dtype=logits.dtype)
    _, idx = jax.lax.top_k(logits + g, n)
    return candidates[idx]
