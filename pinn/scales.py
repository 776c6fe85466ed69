"""A problem's own scales, read from what it states: the frequencies of its sources and
values, and how fast an evolution moves against its time span.

:func:`problem_scales` returns :class:`Scales`, which the plan (:mod:`pinn.plan`) reads:

- **frequency** of each input, an angular frequency in the network's normalised units (the
  coordinate mapped to ``[-1, 1]``): ``sqrt(mean(g_c²) / mean(g²))``, the
  root-mean-square rate of change of ``g`` along ``c`` against its size, for every
  source (an equation with its fields set to zero), Dirichlet, initial and rate value
  ``g`` over the domain; the largest. For ``sin(k x)`` it is exactly ``k`` (times the
  half-width); a constant has none, a line ``1 + x`` on ``[0, 1]`` 0.33; small ripples on a
  large value count little.
- **rate** of an evolution (per unit time): each equation with its fields replaced by
  their initial values, held still in time, is what the time derivatives must balance:
  ``rate = (rms(residual) / rms(initial value)) ^ (1 / order in time)`` (a heat equation
  ``u_t = a u_xx`` from ``sin(k x)``: ``a k²``; a wave ``u_tt = c² u_xx``: ``c k``), and
  a time-dependent source's or boundary value's frequency in ``t``; the largest.
- **horizon**: the time span times that rate (radians of an oscillation, or e-folds of a
  decay or growth, the evolution goes through).

All of it is evaluated symbolically (derivatives by :mod:`pinn.dsl.calculus`) in float64
NumPy at seeded points: no network, no compilation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import numpy as np

from pinn import conditions as C
from pinn.dsl import calculus as K
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_numpy
from pinn.points import ProblemPoints

__all__ = ["Scales", "problem_scales", "frequency"]


@dataclass(frozen=True)
class Scales:
    """What :func:`problem_scales` read: ``frequency`` ``{input: (ω, where)}`` (normalised
    units, and what showed it), ``rate`` (per unit time, ``None`` for a steady problem or
    none seen), ``horizon`` (time span times rate) and ``rate_from`` (what gave it)."""

    frequency: dict = field(default_factory=dict)
    rate: float | None = None
    horizon: float | None = None
    rate_from: str = ""


def _env(problem, pts: np.ndarray) -> dict:
    env = {c: pts[:, i] for i, c in enumerate(problem.coords)}
    for i, p in enumerate(problem.ranged):
        env[E.Coord(p.name)] = np.random.default_rng(i).uniform(*p.range, pts.shape[0])
    return env


def _eval(problem, e: E.Expr, pts: np.ndarray, extra: dict | None = None) -> np.ndarray:
    """``e`` at ``pts`` in float64 (NumPy); ``extra``: more symbols' values (normals)."""
    with np.errstate(all="ignore"):
        out = evaluate_numpy(K.expand(problem.expand(e), problem.spatial, problem.coords),
                             {**_env(problem, pts), **(extra or {})})
    return np.broadcast_to(np.asarray(out, np.float64), (pts.shape[0],))


def _rms(v: np.ndarray) -> float:
    v = v[np.isfinite(v)]
    return float(np.sqrt(np.mean(v * v))) if v.size else 0.0


def frequency(problem, g: E.Expr, pts: np.ndarray) -> dict[str, float]:
    """``{input: ω}`` of the expression ``g`` over ``pts`` (see the module docstring), in
    the units of the input mapped to ``[-1, 1]``; inputs ``g`` does not vary along are
    left out."""
    g = problem.expand(g)
    values = _eval(problem, g, pts)
    fin = values[np.isfinite(values)]
    if fin.size < 2:
        return {}
    spread = _rms(fin)
    if spread <= 0:
        return {}
    lo, hi = problem.input_box
    out = {}
    for i, c in enumerate(problem.inputs):
        if c not in K.coords_of(g) and E.Coord(c.name) not in K.coords_of(g):
            continue
        rate = _rms(_eval(problem, K.diff(g, E.Coord(c.name), problem.coords), pts)) / spread
        w = rate * (float(hi[i]) - float(lo[i])) / 2
        if math.isfinite(w) and w > 0:
            out[c.name] = w
    return out


def _zeroed(problem, e: E.Expr, values: dict | None = None) -> E.Expr:
    """``e`` with each field replaced by ``values[field]`` (an expression of the
    coordinates, its derivatives taken symbolically), or by zero."""
    values = values or {}
    ex = problem.expand(e)
    mapping: dict = {}
    for f, wrt in K.field_derivatives(ex):
        if wrt:
            d = values.get(f, E.Number(0.0))
            for c in wrt:
                d = K.diff(d, c, problem.coords)
            mapping[E.Derivative(f, tuple(wrt))] = d
    for f in problem.fields:
        mapping[f] = values.get(f, E.Number(0.0))
    return K.substitute(ex, mapping)


def _values(problem) -> list[tuple[str, E.Expr]]:
    """Every value the problem states as a formula: sources, Dirichlet, initial, rates."""
    out = []
    for name, eq in problem.equations.items():
        out.append((f"the source of {name}", _zeroed(problem, eq)))
    for name, c in problem.conditions.items():
        pairs = []
        if isinstance(c, C.Dirichlet):
            pairs = list(c.values)
        elif isinstance(c, C.Initial):
            pairs = list(c.values) + list(c.rates)
        for f, v in pairs:
            if not K.fields_of(v):
                out.append((f"{name}'s {f.name}", v))
    return out


def _time_order(problem, e: E.Expr) -> int:
    t = problem.time_coord
    orders = K.coord_orders(problem.expand(e), problem.spatial)
    return int(orders.get(t, 0)) if t is not None else 0


def _rate(problem, pts: np.ndarray) -> tuple[float | None, str]:
    """The evolution's rate from its initial values (see the module docstring)."""
    t = problem.time_coord
    start = {}
    for c in problem.conditions.values():
        if isinstance(c, C.Initial):
            for f, v in c.values:
                if not K.fields_of(v):
                    t0 = E.Number(float(problem.time.t0))
                    start[f] = K.substitute(problem.expand(v), {t: t0})
    best, why = None, ""
    for name, eq in problem.equations.items():
        order = _time_order(problem, eq)
        held = [f for f in K.fields_of(problem.expand(eq)) if f in start]
        if order < 1 or not held:
            continue
        size = max(_rms(_eval(problem, start[f], pts)) for f in held)
        r = _rms(_eval(problem, _zeroed(problem, eq, start), pts))
        if size > 0 and math.isfinite(r) and r > 0:
            rate = (r / size) ** (1.0 / order)
            if best is None or rate > best:
                best, why = rate, f"{name} at the initial values"
    return best, why


def problem_scales(problem, n: int = 512, seed: int = 0) -> Scales:
    """The :class:`Scales` of ``problem`` (``n`` seeded interior points)."""
    pts = np.asarray(ProblemPoints(problem).interior(jax.random.PRNGKey(seed), n),
                     np.float64)
    freq: dict = {}
    for where, g in _values(problem):
        for c, w in frequency(problem, g, pts).items():
            if w > freq.get(c, (0.0, ""))[0]:
                freq[c] = (w, where)
    if problem.time is None:
        return Scales({c: v for c, v in freq.items()})
    rate, why = _rate(problem, pts)
    t = problem.time_coord.name
    half = (problem.time.t1 - problem.time.t0) / 2
    if t in freq and (rate is None or freq[t][0] / half > rate):
        rate, why = freq[t][0] / half, f"{freq[t][1]}, in time"
    horizon = None if rate is None else rate * (problem.time.t1 - problem.time.t0)
    return Scales(freq, rate, horizon, why)
