"""The manufactured-solution check: residuals of a problem on its exact solution.

Every equation and condition is evaluated with the fields replaced by the
declared exact solution, differentiated symbolically and evaluated in float64
at sampled points; the largest absolute residual of each is reported next to
the size of the terms it is made of.  A wrong sign or a typo in a problem
statement shows up as a residual of the order of the terms themselves.

Learnable parameters (an inverse problem) are unknowns, not their initial guesses:
where the residuals are affine in them (``a(x) + nu * b(x)``, the usual case) they are
fitted to the exact solution by linear least squares and the check fails only when no
values make the residuals small; where they are not, the check takes the initial values,
says so (a warning), and the terms that hold them do not fail it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

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
    #: The learnable parameters' values the residual was taken at (``{name: value}``):
    #: fitted to the exact solution, or their initial values where it is not affine in them.
    params: dict = field(default_factory=dict)
    #: False where a large residual does not fail the check (a residual not affine in the
    #: learnable parameters, taken at their initial values).
    binding: bool = True

    @property
    def small(self) -> bool:
        """Whether the residual is within the tolerance (relative to its terms' size)."""
        return bool(np.isfinite(self.max_residual)
                    and self.max_residual <= REL_TOL * max(self.scale, 1.0))

    @property
    def ok(self) -> bool:
        return self.kind == "data" or not self.binding or self.small

    def as_dict(self) -> dict:
        out = {"name": self.name, "kind": self.kind, "max_residual": self.max_residual,
               "scale": self.scale, "points": self.points, "ok": self.ok, "note": self.note}
        if self.params:
            out["params"] = dict(self.params)
        return out


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
    k = len(problem.coords)
    for i, p in enumerate(problem.ranged):  # a parametric problem: over each range (seeded)
        if problem.space.params:  # the points' own values: the domain's shape follows them
            env[E.Coord(p.name)] = pts[:, k + i]
        else:
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


@dataclass(frozen=True)
class _Term:
    """One equation or condition to check: its residuals with the exact solution
    substituted, where they are taken (``image``: a periodic match's other side)."""

    name: str
    kind: str
    exprs: tuple[E.Expr, ...]
    pts: np.ndarray
    extra: dict
    image: np.ndarray | None = None

    @property
    def params(self) -> set:
        return {p for e in self.exprs for p in K.params_of(e)}

    def residual(self, problem, values: dict) -> np.ndarray:
        """All its residuals at its points, one vector (``values``: {Param: value})."""
        env = {**self.extra, **values}
        if self.image is None:
            return np.concatenate([_eval(problem, e, self.pts, env) for e in self.exprs])
        return np.concatenate([_eval(problem, e, self.pts, values)
                               - _eval(problem, e, self.image, values) for e in self.exprs])

    def measure(self, problem, values: dict) -> tuple[float, float]:
        env = {**self.extra, **values}
        if self.image is None:
            checks = [_measure(problem, e, self.pts, env) for e in self.exprs]
        else:
            checks = [_match(problem, e, self.pts, self.image, values) for e in self.exprs]
        return (max((r[0] for r in checks), default=0.0),
                max((r[1] for r in checks), default=0.0))


def check(problem, n: int = 1000, seed: int = 0) -> list[TermCheck]:
    """Largest residual of each equation and condition on ``problem.exact`` (float64),
    with the learnable parameters fitted to it (see the module doc)."""
    import jax

    if not problem.exact:
        raise ValueError("the manufactured-solution check needs an exact solution (exact:)")
    items: list[_Term | TermCheck] = []
    with jax.enable_x64(True):
        key = jax.random.key(seed)
        k_int, key = jax.random.split(key)
        pts = np.asarray(ProblemPoints(problem, dtype=np.float64).interior(k_int, n))
        missing = [f.name for f in problem.fields if f not in problem.exact]
        for name, eq in problem.equations.items():
            used = {f.name for f in K.fields_of(eq)}
            if used & set(missing):
                items.append(TermCheck(name, "equation", float("nan"), 0.0, 0,
                                       f"no exact solution for {', '.join(sorted(used))}"))
                continue
            items.append(_Term(name, "equation", (_substitute_exact(problem, eq),), pts, {}))
        for name, c in problem.conditions.items():
            key, k1 = jax.random.split(key)
            items.append(_condition_term(problem, name, c, k1, n))
        values, binding, note = _learnable_values(
            problem, [t for t in items if isinstance(t, _Term)])
        return [t if isinstance(t, TermCheck) else _term_check(problem, t, n, values,
                                                               binding, note)
                for t in items]


def _term_check(problem, t: _Term, n: int, values: dict, binding: bool,
                note: str) -> TermCheck:
    """``t``'s largest residual at the learnable parameters' ``values`` (a condition that
    cannot be evaluated: not checked)."""
    held = {p: v for p, v in values.items() if p in t.params}
    try:
        worst, scale = t.measure(problem, values)
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        if t.kind == "equation":
            raise
        return TermCheck(t.name, t.kind, float("nan"), 0.0, 0, f"not checked: {exc}")
    return TermCheck(t.name, t.kind, worst, scale, n, note if held else "",
                     {p.name: v for p, v in held.items()}, binding or not held)


def _learnable_values(problem, terms: list[_Term]) -> tuple[dict, bool, str]:
    """``({Param: value}, fitted, note)``: the learnable parameters' values the residuals
    are taken at. Fitted by linear least squares where the residuals are affine in them
    (each residual scaled by the size of its terms); else their initial values, with a
    warning."""
    learnable = [p for p in problem.learnable if any(p in t.params for t in terms)]
    if not learnable:
        return {}, True, ""
    start = {p: float(p.value) for p in learnable}
    fit = _affine_fit(problem, [t for t in terms if t.params & set(learnable)], start)
    if fit is None:
        said = ", ".join(f"{p.name} = {v:.6g}" for p, v in start.items())
        warnings.warn(f"the manufactured-solution check took the learnable parameters at "
                      f"their initial values ({said}): the residuals are not affine in "
                      "them, so they could not be fitted to the exact solution; the terms "
                      "that hold them are reported but do not fail the check",
                      UserWarning, stacklevel=3)
        return start, False, f"learnable {said} as initially given: not affine, not checked"
    said = ", ".join(f"{p.name} = {fit[p]:.6g} (initial {start[p]:.6g})" for p in learnable)
    return fit, True, f"fitted to the exact solution: {said}"


def _affine_fit(problem, terms: list[_Term], start: dict) -> dict | None:
    """The learnable parameters' values that minimise the residuals (scaled per term) when
    the residuals are affine in them: ``r(theta) = r0 + B (theta - theta0)``, ``B`` taken
    from one step along each parameter and checked at a third point; None when they are
    not affine (or cannot be evaluated)."""
    params = list(start)
    steps = {p: max(abs(start[p]), 1.0) for p in params}

    def at(delta):  # the residuals at theta0 + delta, each term's scaled
        values = {p: start[p] + d for p, d in zip(params, delta, strict=True)}
        return [t.residual(problem, values) for t in terms]

    try:
        with np.errstate(all="ignore"):
            r0 = at([0.0] * len(params))
            cols = [at([steps[q] if q is p else 0.0 for q in params]) for p in params]
            probe = [0.37 * steps[p] * (1 + 0.5 * k) for k, p in enumerate(params)]
            r_probe = at(probe)
            scales = [max(t.measure(problem, start)[1], 1.0) for t in terms]
    except (ValueError, TypeError, KeyError, NotImplementedError):
        return None
    rows_a, rows_b = [], []
    for k, scale in enumerate(scales):
        slope = [(c[k] - r0[k]) / steps[p] for c, p in zip(cols, params, strict=True)]
        guess = r0[k] + sum(s * d for s, d in zip(slope, probe, strict=True))
        keep = np.isfinite(r0[k]) & np.isfinite(r_probe[k]) & np.isfinite(guess)
        if np.any(np.abs(r_probe[k] - guess)[keep] > REL_TOL * scale * 10):
            return None
        rows_a.append(np.stack([s[keep] for s in slope], axis=1) / scale)
        rows_b.append(-r0[k][keep] / scale)
    delta = np.linalg.lstsq(np.concatenate(rows_a), np.concatenate(rows_b), rcond=None)[0]
    return {p: start[p] + float(d) for p, d in zip(params, delta, strict=True)}


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


def _condition_term(problem, name, c, key, n) -> _Term | TermCheck:
    kind = c.kind
    try:
        res = c.residuals(problem, name)
        if res.points is not None:
            return _check_observations(problem, name, c, res)
        pts, extra = _region_points(problem, res, key, n)
        exprs = tuple(_substitute_exact(problem, e) for e in res.exprs.values())
        if res.match is None:
            return _Term(name, kind, exprs, pts, extra)
        axis, position = res.match
        image = pts.copy()
        image[:, axis] = position
        return _Term(name, kind, exprs, pts, {}, image)
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        return TermCheck(name, kind, float("nan"), 0.0, 0, f"not checked: {exc}")


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


def _match(problem, e: E.Expr, pa, pb, extra=None) -> tuple[float, float]:
    """Periodic matching: ``e`` at the points ``pa`` against ``e`` at their images ``pb``."""
    va, vb = _eval(problem, e, pa, extra), _eval(problem, e, pb, extra)
    return (float(np.max(np.abs(va - vb))),
            float(max(np.max(np.abs(va)), np.max(np.abs(vb)))))
