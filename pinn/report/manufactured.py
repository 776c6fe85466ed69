"""The manufactured-solution check: residuals of a problem on its exact solution.

Every equation and condition is evaluated with the fields replaced by the
declared exact solution, differentiated symbolically and evaluated in float64
at sampled points; the largest absolute residual of each is reported next to
the size of the terms it is made of.  A wrong sign or a typo in a problem
statement shows up as a residual of the order of the terms themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pinn.conditions import normal_symbols
from pinn.dsl import calculus as K
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_numpy
from pinn.points import ProblemPoints

REL_TOL = 1e-7


@dataclass(frozen=True)
class TermCheck:
    name: str
    kind: str  # "equation", "dirichlet", "neumann", ...
    max_residual: float
    scale: float
    points: int
    note: str = ""

    @property
    def ok(self) -> bool:
        if self.kind == "data" or not np.isfinite(self.max_residual):
            return self.kind == "data"
        return self.max_residual <= REL_TOL * max(self.scale, 1.0)

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "max_residual": self.max_residual,
                "scale": self.scale, "points": self.points, "ok": self.ok, "note": self.note}


def _substitute_exact(problem, e: E.Expr) -> E.Expr:
    """``e`` with every field (and derivative of a field) replaced by the exact solution."""
    ex = problem.expand(e)
    mapping: dict[E.Expr, E.Expr] = {}
    for f, wrt in K.field_derivatives(ex):
        if not wrt or f not in problem.exact:
            continue
        d = problem.exact[f]
        for c in wrt:
            d = K.diff(d, c, problem.coords)
        mapping[E.Derivative(f, tuple(wrt))] = d
    for f in problem.fields:
        if f in problem.exact:
            mapping[f] = problem.exact[f]
    return K.substitute(ex, mapping)


def _terms(e: E.Expr) -> list[E.Expr]:
    """The additive pieces of ``e`` (to measure the size of a residual's terms)."""
    if isinstance(e, (E.Add, E.Sub)):
        return _terms(e.left) + _terms(e.right)
    if isinstance(e, E.Neg):
        return _terms(e.arg)
    return [e]


def _eval(problem, e: E.Expr, pts, extra=None) -> np.ndarray:
    """Float64 values with NumPy (no JAX dispatch or compilation per operation)."""
    env = {c: pts[:, i] for i, c in enumerate(problem.coords)}
    for i, p in enumerate(problem.ranged):  # a parametric problem: over each range (seeded)
        env[E.Coord(p.name)] = np.random.default_rng(i).uniform(*p.range, pts.shape[0])
    if extra:
        env.update(extra)
    with np.errstate(all="ignore"):  # where(r > 0, f(r), 0): the other branch may be NaN
        out = evaluate_numpy(K.expand(e, problem.spatial, problem.coords), env)
    return np.broadcast_to(np.asarray(out, dtype=np.float64), (pts.shape[0],))


def _measure(problem, e: E.Expr, pts, extra=None) -> tuple[float, float]:
    r = _eval(problem, e, pts, extra)
    scale = 0.0
    for t in _terms(e):
        v = _eval(problem, t, pts, extra)
        fin = v[np.isfinite(v)]
        if fin.size:
            scale = max(scale, float(np.max(np.abs(fin))))
    fin = r[np.isfinite(r)]
    worst = float(np.max(np.abs(fin))) if fin.size else float("nan")
    if fin.size < r.size:
        worst = float("nan") if not fin.size else worst
    return worst, scale


def check(problem, n: int = 1000, seed: int = 0) -> list[TermCheck]:
    """Largest residual of each equation and condition on ``problem.exact`` (float64)."""
    import jax

    if not problem.exact:
        raise ValueError("the manufactured-solution check needs an exact solution (exact:)")
    out: list[TermCheck] = []
    with jax.enable_x64(True):
        key = jax.random.key(seed)
        k_int, key = jax.random.split(key)
        pts = np.asarray(ProblemPoints(problem, dtype=np.float64).interior(k_int, n))
        missing = [f.name for f in problem.fields if f not in problem.exact]
        for name, eq in problem.equations.items():
            used = {f.name for f in K.fields_of(eq)}
            if used & set(missing):
                out.append(TermCheck(name, "equation", float("nan"), 0.0, 0,
                                     f"no exact solution for {', '.join(sorted(used))}"))
                continue
            worst, scale = _measure(problem, _substitute_exact(problem, eq), pts)
            out.append(TermCheck(name, "equation", worst, scale, n))
        for name, c in problem.conditions.items():
            key, k1 = jax.random.split(key)
            out.append(_check_condition(problem, name, c, k1, n))
    return out


def _region_points(problem, res, key, n):
    """Points (and the normal symbols' values) where a condition's residuals hold."""
    draw = ProblemPoints(problem, dtype=np.float64)
    on = res.on if isinstance(res.on, str) else None
    if on == "interior":
        return np.asarray(draw.interior(key, n)), {}
    if on == "initial":
        return np.asarray(draw.initial(key, n)), {}
    pts, normals = (np.asarray(a) for a in draw.boundary(key, n, res.on))
    syms = normal_symbols(len(problem.spatial))
    return pts, {s: normals[:, i] for i, s in enumerate(syms)}


def _check_condition(problem, name, c, key, n) -> TermCheck:
    kind = c.kind
    try:
        res = c.residuals(problem, name)
        if res.points is not None:
            return _check_observations(problem, name, c, res)
        pts, extra = _region_points(problem, res, key, n)
        exprs = [_substitute_exact(problem, e) for e in res.exprs.values()]
        if res.match is None:
            checks = [_measure(problem, e, pts, extra) for e in exprs]
        else:
            axis, position = res.match
            image = pts.copy()
            image[:, axis] = position
            checks = [_match(problem, e, pts, image) for e in exprs]
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        return TermCheck(name, kind, float("nan"), 0.0, 0, f"not checked: {exc}")
    worst = max((r[0] for r in checks), default=0.0)
    scale = max((r[1] for r in checks), default=0.0)
    return TermCheck(name, kind, worst, scale, n)


def _check_observations(problem, name, c, res) -> TermCheck:
    """Observed values against the exact solution (the noise is included)."""
    pts = np.asarray(res.points)
    checks = []
    for k, e in enumerate(res.exprs.values()):
        if not set(K.fields_of(e)) <= set(problem.exact):
            continue
        v = _eval(problem, _substitute_exact(problem, e), pts)
        vals = res.targets[:, k]
        checks.append((float(np.max(np.abs(v - vals))), float(np.max(np.abs(vals)))))
    worst = max((r[0] for r in checks), default=0.0)
    scale = max((r[1] for r in checks), default=0.0)
    noise = getattr(c, "noise", None)
    note = "observations vs exact (noise included)" if noise else "observations vs exact"
    return TermCheck(name, "data", worst, scale, len(pts), note)


def _match(problem, e: E.Expr, pa, pb) -> tuple[float, float]:
    """Periodic matching: ``e`` at the points ``pa`` against ``e`` at their images ``pb``."""
    va, vb = _eval(problem, e, pa), _eval(problem, e, pb)
    return (float(np.max(np.abs(va - vb))),
            float(max(np.max(np.abs(va)), np.max(np.abs(vb)))))
