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
        for g in idx:
            row = []
            for i in range(1, len(idx)):
                a = idx[i]
                if all(x <= y for x, y in zip(a, g, strict=True)) and a != g:
                    j = pos[tuple(y - x for x, y in zip(a, g, strict=True))]
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


# ---------------------------------------------------------------------------
# the streams Taylor mode carries


Combo = tuple[tuple[MultiIndex, float], ...]


@dataclass(frozen=True)
class Collapsed:
    """The key of a collapsed derivative ``sum_g v_g d^g u`` in the results of
    :func:`pinn.compile.derivatives`: ``parts = ((g, v_g), ...)``.

    It sorts after every plain multi-index, so a result dict mixing both kinds
    of keys is a valid JAX pytree (``jit`` sorts dict keys)."""

    parts: Combo

    def __post_init__(self):
        object.__setattr__(self, "parts", tuple((tuple(int(i) for i in g), float(v))
                                                for g, v in self.parts))

    def __iter__(self):
        return iter(self.parts)

    def __len__(self):
        return len(self.parts)

    def __lt__(self, other):
        return isinstance(other, Collapsed) and self.parts < other.parts

    def __gt__(self, other):
        return not isinstance(other, Collapsed) or self.parts > other.parts


@dataclass(frozen=True)
class StreamSet:
    """The coefficient streams Taylor mode pushes through a network.

    Stream 0 is the value.  An *explicit* stream is one normalized Taylor
    coefficient ``d^g u / g!`` for ``g`` in the lower set ``explicit``.  A
    *collapsed* stream (``combos``) is a fixed linear combination
    ``sum_g v_g d^g u`` of derivatives whose multi-indices are maximal: no
    other stream needs them, so only their sum has to travel through the
    network (collapsed Taylor mode; e.g. the heat residual's
    ``u_t - a u_xx - a u_yy`` is one stream instead of three).
    """

    explicit: IndexSet
    combos: tuple[Combo, ...] = ()
    # per stream (1..): ((multi_index, weight on the normalized coefficient), ...)
    parts: tuple = field(init=False, repr=False, compare=False)
    orders: tuple[int, ...] = field(init=False, repr=False, compare=False)
    pairs: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        S = self.explicit
        parts = [((a, 1.0),) for a in S.indices]
        for combo in self.combos:
            if not combo:
                raise ValueError("an empty collapsed stream")
            row = []
            for g, v in combo:
                g = tuple(g)
                if g in S.pos:
                    raise ValueError(f"{g} is both an explicit and a collapsed derivative")
                for i, k in enumerate(g):
                    if k:
                        pred = g[:i] + (k - 1,) + g[i + 1:]
                        if pred not in S.pos:
                            raise ValueError(
                                f"collapsed derivative {g} needs its predecessor {pred} "
                                "as an explicit stream"
                            )
                row.append((g, float(v) * factorial(g)))
            parts.append(tuple(row))
        pairs = []
        for row in parts:
            acc: dict[tuple[int, int], float] = {}
            for g, w in row:
                for i in range(1, S.size):
                    a = S.indices[i]
                    if a != g and all(x <= y for x, y in zip(a, g, strict=True)):
                        b = tuple(y - x for x, y in zip(a, g, strict=True))
                        j = S.pos[b]
                        if j:
                            acc[(i, j)] = acc.get((i, j), 0.0) + w
            pairs.append(tuple((i, j, w) for (i, j), w in acc.items() if w != 0.0))
        object.__setattr__(self, "parts", tuple(parts))
        object.__setattr__(self, "orders", tuple(max(sum(g) for g, _ in r) for r in parts))
        object.__setattr__(self, "pairs", tuple(pairs))

    @property
    def size(self) -> int:
        return len(self.parts)

    @property
    def dim(self) -> int:
        return self.explicit.dim

    @property
    def max_order(self) -> int:
        return max(self.orders)

    def input_direction(self, k: int) -> np.ndarray | None:
        """Coefficient of stream ``k`` of the input ``x`` itself (a row of length ``dim``)."""
        v = np.zeros(self.dim)
        for g, w in self.parts[k]:
            if sum(g) == 1:
                v[g.index(1)] += w
        return v if np.any(v) else None

    def output_scale(self, k: int) -> float:
        """Factor from stream ``k`` to the derivative (``g!`` explicit, 1 collapsed)."""
        return float(factorial(self.explicit.indices[k])) if k < self.explicit.size else 1.0
