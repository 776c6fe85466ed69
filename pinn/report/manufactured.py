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

from pinn.dsl import calculus as K
from pinn.dsl import expr as E

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
    from pinn.fem._numeric import evaluate_np

    env = {c: pts[:, i] for i, c in enumerate(problem.coords)}
    if extra:
        env.update(extra)
    with np.errstate(all="ignore"):  # where(r > 0, f(r), 0): the other branch may be NaN
        out = evaluate_np(K.expand(e, problem.spatial, problem.coords), env)
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


def _with_time(problem, key, pts_space, n):
    pts_space = np.asarray(pts_space, dtype=np.float64)
    if problem.time is None:
        return pts_space
    import jax

    seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
    t = np.random.default_rng(seed).uniform(problem.time.t0, problem.time.t1, (n, 1))
    return np.concatenate([pts_space, t], axis=1)


def check(problem, n: int = 1000, seed: int = 0) -> list[TermCheck]:
    """Largest residual of each equation and condition on ``problem.exact`` (float64)."""
    import jax

    from pinn import conditions as C

    if not problem.exact:
        raise ValueError("the manufactured-solution check needs an exact solution (exact:)")
    out: list[TermCheck] = []
    with jax.enable_x64(True):
        key = jax.random.key(seed)
        k_int, k_t, key = jax.random.split(key, 3)
        space = problem.space
        pts = np.asarray(_with_time(problem, k_t, space.sample_interior(k_int, n), n))
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
            key, k1, k2 = jax.random.split(key, 3)
            out.append(_check_condition(problem, name, c, k1, k2, n, C))
    return out


def _boundary(problem, k1, k2, n, on):
    bs = problem.space.sample_boundary(k1, n, on=on, coords=[c.name for c in problem.spatial])
    pts = _with_time(problem, k2, bs.points, n)
    normals = np.asarray(bs.normals, dtype=np.float64)
    return np.asarray(pts, dtype=np.float64), normals


def _normal_derivative(problem, f: E.Field, normals) -> tuple[E.Expr, dict]:
    syms = [E.Coord(f"__n{i}") for i in range(len(problem.spatial))]
    ex = problem.exact[f]
    dn = None
    for s, c in zip(syms, problem.spatial, strict=True):
        term = s * K.diff(ex, c, problem.coords)
        dn = term if dn is None else dn + term
    return dn, {s: normals[:, i] for i, s in enumerate(syms)}


def _check_condition(problem, name, c, k1, k2, n, C) -> TermCheck:
    kind = type(c).__name__.lower()

    def sub(e):
        return _substitute_exact(problem, e)

    try:
        if isinstance(c, C.Dirichlet):
            pts, _ = _boundary(problem, k1, k2, n, c.on)
            res = [_measure(problem, sub(f - v), pts) for f, v in c.values]
        elif isinstance(c, (C.Neumann, C.Robin)):
            pts, normals = _boundary(problem, k1, k2, n, c.on)
            dn, extra = _normal_derivative(problem, c.field, normals)
            if isinstance(c, C.Neumann):
                e = dn - sub(c.value)
            else:
                e = sub(c.a) * problem.exact[c.field] + sub(c.b) * dn - sub(c.value)
            res = [_measure(problem, e, pts, extra)]
        elif isinstance(c, C.Initial):
            t0 = problem.time.t0
            xs = np.asarray(problem.space.sample_interior(k1, n), dtype=np.float64)
            pts = np.concatenate([xs, np.full((n, 1), t0)], axis=1)
            res = [_measure(problem, sub(f - v), pts) for f, v in c.values]
            tc = problem.time_coord
            res += [_measure(problem, K.diff(problem.exact[f], tc, problem.coords) - sub(v), pts)
                    for f, v in c.rates]
        elif isinstance(c, C.Constraint):
            if c.on == "interior":
                pts = np.asarray(_with_time(problem, k2, problem.space.sample_interior(k1, n),
                                            n))
            else:
                pts, _ = _boundary(problem, k1, k2, n, c.on)
            res = [_measure(problem, sub(c.expr), pts)]
        elif isinstance(c, C.Periodic):
            res = _periodic(problem, c, k1, k2, n)
        elif isinstance(c, C.Data):
            pts = np.asarray(c.points)
            res = []
            for f, vals in c.values:
                if f not in problem.exact:
                    continue
                v = _eval(problem, problem.exact[f], pts)
                res.append((float(np.max(np.abs(v - vals))), float(np.max(np.abs(vals)))))
            worst = max((r[0] for r in res), default=0.0)
            scale = max((r[1] for r in res), default=0.0)
            note = "observations vs exact (noise included)" if c.noise else \
                "observations vs exact"
            return TermCheck(name, "data", worst, scale, len(pts), note)
        else:
            return TermCheck(name, kind, float("nan"), 0.0, 0, "not checked")
    except (ValueError, TypeError, KeyError) as exc:
        return TermCheck(name, kind, float("nan"), 0.0, 0, f"not checked: {exc}")
    worst = max((r[0] for r in res), default=0.0)
    scale = max((r[1] for r in res), default=0.0)
    return TermCheck(name, kind, worst, scale, n)


def _periodic(problem, c, k1, k2, n):
    """Values (and the derivative across the pair, for order >= 1) match between the parts."""
    a, b = c.pair
    pa, _ = _boundary(problem, k1, k2, n, a)
    pb_side, _ = _boundary(problem, k2, k1, 8, b)
    d = len(problem.spatial)
    spread = np.ptp(pa[:, :d], axis=0)
    axis = int(np.argmin(spread))
    pb = pa.copy()
    pb[:, axis] = float(np.mean(pb_side[:, axis]))
    res = []
    for f in c.fields:
        ex = problem.exact[f]
        exprs = [ex]
        cur = ex
        for _ in range(c.order):
            cur = K.diff(cur, problem.spatial[axis], problem.coords)
            exprs.append(cur)
        for e in exprs:
            va, vb = _eval(problem, e, pa), _eval(problem, e, pb)
            res.append((float(np.max(np.abs(va - vb))),
                        float(max(np.max(np.abs(va)), np.max(np.abs(vb))))))
    return res
