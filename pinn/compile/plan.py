"""Plan-time bookkeeping for derivatives: multi-indices, their lower sets, the
product tables of truncated multivariate Taylor series, and polarization.

A *multi-index* ``alpha = (a_1, ..., a_d)`` names the partial derivative
``d^|alpha| u / dx_1^a_1 ... dx_d^a_d`` over the network's ``d`` input
coordinates.  Everything here is plain Python/numpy, computed once when a
function is compiled, never inside a trace.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

MultiIndex = tuple[int, ...]


def multi_index(wrt: Sequence, coords: Sequence) -> MultiIndex:
    """The multi-index of ``D(u, *wrt)`` over ``coords`` (``wrt`` items must be in ``coords``)."""
    pos = {c: i for i, c in enumerate(coords)}
    out = [0] * len(coords)
    for c in wrt:
        out[pos[c]] += 1
    return tuple(out)


def order(alpha: MultiIndex) -> int:
    return sum(alpha)


def factorial(alpha: MultiIndex) -> int:
    """``alpha! = a_1! ... a_d!``: a normalized Taylor coefficient times it is the derivative."""
    return math.prod(math.factorial(a) for a in alpha)


def lower_set(alphas: Iterable[MultiIndex], d: int) -> tuple[MultiIndex, ...]:
    """All ``beta <= alpha`` for the given ``alphas`` (always with the zero index).

    Sorted by total order, then lexicographically from the *last* coordinate,
    so the zero index comes first and ``(1, 0, ...)`` before ``(0, 1, ...)``.
    """
    out = {(0,) * d}
    for a in alphas:
        if len(a) != d:
            raise ValueError(f"multi-index {a} does not have {d} entries")
        for beta in itertools.product(*(range(k + 1) for k in a)):
            out.add(tuple(beta))
    return tuple(sorted(out, key=lambda b: (sum(b), tuple(-x for x in b))))


@dataclass(frozen=True)
class IndexSet:
    """A lower set ``S`` of multi-indices and the tables needed to multiply
    truncated Taylor series supported on it.

    ``coeff[k]`` of a series is ``d^S[k] f / S[k]!`` (normalized Taylor
    coefficients), ``S[0]`` is the zero index (the value itself).  The
    product of two series is ``(ab)_k = sum over S[i] + S[j] = S[k] of
    a_i b_j``; because ``S`` is a lower set every term stays inside ``S``.
    """

    indices: tuple[MultiIndex, ...]
    pos: dict = field(init=False, repr=False, compare=False)
    orders: tuple[int, ...] = field(init=False, repr=False, compare=False)
    pairs: tuple[tuple[tuple[int, int], ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        idx = self.indices
        if not idx or any(idx[0]):
            raise ValueError("an IndexSet starts with the zero multi-index")
        pos = {a: i for i, a in enumerate(idx)}
        if len(pos) != len(idx):
            raise ValueError(f"repeated multi-indices in {idx}")
        for a in idx:
            for i, k in enumerate(a):
                if k and tuple(a[:i]) + (k - 1,) + tuple(a[i + 1:]) not in pos:
                    raise ValueError(f"{idx} is not a lower set (missing a predecessor of {a})")
        object.__setattr__(self, "pos", pos)
        object.__setattr__(self, "orders", tuple(sum(a) for a in idx))
        pairs = []
        for k, g in enumerate(idx):
            row = []
            for i in range(1, len(idx)):
                a = idx[i]
                if all(x <= y for x, y in zip(a, g)) and a != g:
                    j = pos[tuple(y - x for x, y in zip(a, g))]
                    row.append((i, j))
            pairs.append(tuple(row))
        object.__setattr__(self, "pairs", tuple(pairs))

    @classmethod
    def closure(cls, alphas: Iterable[MultiIndex], d: int) -> IndexSet:
        return cls(lower_set(alphas, d))

    @property
    def size(self) -> int:
        return len(self.indices)

    @property
    def max_order(self) -> int:
        return max(self.orders)

    @property
    def dim(self) -> int:
        return len(self.indices[0])


# ---------------------------------------------------------------------------
# polarization: mixed partials from directional derivatives


def homogeneous_indices(k: int, m: int) -> tuple[MultiIndex, ...]:
    """All multi-indices of total order ``k`` in ``m`` variables."""
    out = []
    for combo in itertools.combinations_with_replacement(range(m), k):
        a = [0] * m
        for c in combo:
            a[c] += 1
        out.append(tuple(a))
    return tuple(sorted(out, reverse=True))


def polarization(k: int, m: int) -> tuple[np.ndarray, np.ndarray, tuple[MultiIndex, ...]]:
    """Directions and the inverse system that turn directional derivatives
    of order ``k`` into all partials of order ``k`` in ``m`` variables.

    ``D_v^k u = sum_{|g| = k} k!/g! v^g d^g u``.  Taking the directions
    ``v = beta`` for every ``|beta| = k`` (the simplex lattice, unisolvent for
    homogeneous polynomials of degree ``k``) gives a square system ``A``.
    Returns ``(directions[n, m], inverse[n, n], gammas)`` with
    ``d^gammas[i] u = sum_j inverse[i, j] D_{directions[j]}^k u``.
    """
    gammas = homogeneous_indices(k, m)
    dirs = np.array(gammas, dtype=float)
    a = np.empty((len(gammas), len(gammas)))
    for r, v in enumerate(dirs):
        for c, g in enumerate(gammas):
            a[r, c] = math.factorial(k) / factorial(g) * np.prod(v ** np.array(g))
    return dirs, np.linalg.inv(a), gammas
