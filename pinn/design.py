"""Design optimisation through a trained parametric network, and its check by FEM.

A parametric solution (:meth:`pinn.Problem.ranged`: parameters that are inputs of the
network) answers a quantity of interest (:mod:`pinn.qoi`) at any parameter value in
milliseconds, with its gradient along the parameters from JAX. :func:`optimize` minimises
(or maximises) one quantity over some of the ranged parameters, within the ranges the
network was trained on: scipy's L-BFGS-B with bounds, from several starts (a small Sobol
design of the box) so that one local minimum does not hide a better one.
:func:`fem_check` solves the problem once with the finite-element baseline at the design
found and computes the same quantity there, on the same quadrature points::

    sol = pinn.Solution.load("runs/plate")
    best = pinn.optimize(sol, "mean_T", over=["k"], minimize=True)
    best.params, best.value                    # {"k": 2.71, ...}, 0.1234
    check = pinn.design.fem_check(sol.problem, "mean_T", best.params)
    check.value                                # FEM's mean_T at that design

``pinn optimize FILE --run RUN --minimize QOI --over p1,p2`` does both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pinn.dsl import calculus
from pinn.dsl import expr as E
from pinn.qoi import Quantity

__all__ = ["Optimum", "FEMCheck", "optimize", "fem_check", "fixed_problem",
           "fem_quantity", "fem_quantity_check", "check_over", "MAX_STARTS"]

#: The most starts of one optimisation (each is a run of L-BFGS-B).
MAX_STARTS = 1024


@dataclass(frozen=True)
class Optimum:
    """What :func:`optimize` found.

    ``params``: every ranged parameter at the optimum (those in ``over`` optimised, the
    others held); ``value``: the quantity there (:meth:`pinn.Solution.quantities`);
    ``at_bounds``: the optimised parameters that ended on a bound of their range
    (``{"k": "upper"}``: the optimum may lie beyond what the network was trained on);
    ``iterations``: L-BFGS-B's iterations from the start that won, ``total_iterations`` and
    ``evaluations`` (of the quantity and its gradient) over all ``starts``; ``seconds``:
    wall time, compilation included; ``converged``/``message``: L-BFGS-B's own verdict on
    the winning start."""

    quantity: str
    minimize: bool
    over: tuple[str, ...]
    params: dict[str, float]
    value: float
    iterations: int
    total_iterations: int
    evaluations: int
    starts: int
    seconds: float
    at_bounds: dict[str, str] = field(default_factory=dict)
    converged: bool = True
    message: str = ""

    def to_data(self) -> dict:
        """As JSON-ready data (``pinn optimize --json``)."""
        return {"quantity": self.quantity, "goal": "minimize" if self.minimize else "maximize",
                "over": list(self.over), "params": dict(self.params), "value": self.value,
                "iterations": self.iterations, "total_iterations": self.total_iterations,
                "evaluations": self.evaluations, "starts": self.starts,
                "seconds": self.seconds, "at_bounds": dict(self.at_bounds),
                "converged": self.converged, "message": self.message}


def _quantity(problem, quantity) -> tuple[str, Quantity]:
    if isinstance(quantity, Quantity):
        quantity.validate(problem, "quantity")
        return "quantity", quantity
    own = dict(problem.quantities or {})
    if not isinstance(quantity, str) or quantity not in own:
        have = ", ".join(own) or "none; declare some (quantities: in the problem file)"
        raise ValueError(f"{quantity!r} is not a quantity of {problem.name} (its quantities: "
                         f"{have})")
    return quantity, own[quantity]


def check_over(problem, over, *, where: str = "over") -> tuple[str, ...]:
    """The ranged parameters to optimise, ``over`` (a name or names; None: all of them),
    checked: each a ranged parameter of ``problem``, once. ``ValueError`` naming ``where``
    and the fix."""
    names = [p.name for p in problem.ranged]
    if not names:
        raise ValueError(f"{problem.name} has no ranged parameters: there is nothing to "
                         "optimise over (give a parameter a range, params: {k: {range: [lo, "
                         "hi]}}, and train the network over it)")
    if over is None:
        return tuple(names)
    over = (over,) if isinstance(over, str) else tuple(over)
    if not over:
        raise ValueError(f"{where}: no parameter named; name some of {', '.join(names)}")
    bad = [o for o in over if o not in names]
    if bad:
        fixed = {p.name for p in problem.params if p.range is None} | {
            p.name for q in (problem.quantities or {}).values() for ex in q.expressions()
            for p in calculus.params_of(ex) if p.range is None}
        why = ("has a fixed value, not a range the network was trained over" if bad[0] in fixed
               else "is not a parameter of the problem")
        raise ValueError(f"{where}: {bad[0]!r} {why}; the ranged parameters are "
                         f"{', '.join(names)}")
    twice = sorted({o for o in over if over.count(o) > 1})
    if twice:
        raise ValueError(f"{where}: {twice[0]!r} is named twice")
    return over


def _starts(n: int, k: int) -> np.ndarray:
    """``[n, k]`` in the unit cube: a small Sobol design (each point at the centre of its
    cell, so the first is the centre of the box)."""
    from pinn.qoi import _unit

    return _unit(n, k)


def optimize(solution, quantity: str | Quantity, *, over: str | Sequence[str] | None = None,
             minimize: bool = True, fixed: Mapping[str, float] | None = None,
             starts: int = 8, max_iterations: int = 200) -> Optimum:
    """Minimise (``minimize=False``: maximise) a quantity of interest of a parametric
    ``solution`` over its ranged parameters ``over`` (default: all of them), each within the
    range the network was trained on.

    ``quantity``: a name of ``solution.problem.quantities``, or a
    :class:`pinn.qoi.Quantity`. ``fixed``: the values of the ranged parameters not in
    ``over`` (default: the centre of each range). L-BFGS-B (scipy) with bounds, the gradient
    by JAX through the network, from ``starts`` points of a Sobol design of the box (the
    first its centre); the best end point wins. ``ValueError`` naming the fix for an
    unknown quantity or parameter, a held value outside its range, a solution without
    ranged parameters, or a quantity that is not finite."""
    from scipy.optimize import minimize as scipy_minimize

    t_start = time.perf_counter()
    problem = solution.problem
    name, q = _quantity(problem, quantity)
    over = check_over(problem, over)
    if isinstance(starts, bool) or not isinstance(starts, int) or not 1 <= starts <= MAX_STARTS:
        raise ValueError(f"starts: a whole number from 1 to {MAX_STARTS}, got {starts!r}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or (
            max_iterations < 1):
        raise ValueError(f"max_iterations: a whole number >= 1, got {max_iterations!r}")
    objective = _Objective(solution, name, q, over, _held(problem, over, fixed),
                           1.0 if minimize else -1.0)
    eps = float(np.finfo(np.float32 if solution.precision == 32 else np.float64).eps)
    options = {"maxiter": max_iterations, "ftol": 10 * eps, "gtol": math.sqrt(eps) * 1e-2}
    best, total = None, 0
    for s0 in _starts(starts, len(over)):
        res = scipy_minimize(objective, s0, jac=True, method="L-BFGS-B",
                             bounds=[(0.0, 1.0)] * len(over), options=options)
        total += int(res.nit)
        if best is None or res.fun < best.fun:
            best = res
    s = np.clip(np.asarray(best.x, np.float64), 0.0, 1.0)
    params = objective.params(s)
    value = solution.quantities(params=params, which={name: q})[name]
    bounds = {o: ("lower" if x <= 1e-9 else "upper") for o, x in zip(over, s, strict=True)
              if x <= 1e-9 or x >= 1 - 1e-9}
    return Optimum(quantity=name, minimize=minimize, over=tuple(over), params=params,
                   value=float(value), iterations=int(best.nit), total_iterations=total,
                   evaluations=objective.evaluations, starts=starts,
                   seconds=time.perf_counter() - t_start, at_bounds=bounds,
                   converged=bool(best.success), message=str(best.message))


def _held(problem, over: tuple[str, ...], fixed) -> np.ndarray:
    """Every ranged parameter's value, ``[p]``: ``fixed``'s for those not optimised (default:
    the centre of the range); those in ``over`` at the centre (they start elsewhere)."""
    held = dict(fixed or {})
    both = sorted(set(held) & set(over))
    if both:
        raise ValueError(f"fixed: {both[0]!r} is optimised (over); hold it or optimise it, "
                         "not both")
    values = {p.name: held.get(p.name, 0.5 * (p.range[0] + p.range[1]))
              for p in problem.ranged}
    values.update({k: v for k, v in held.items() if k not in values})  # unknown: refused
    return problem.param_columns(values, 1, where="fixed")[0]


class _Objective:
    """``(value, gradient)`` of ``sign * quantity`` at the optimised parameters scaled to the
    unit box, ``s``, for scipy (float64 out); counts its ``evaluations``."""

    def __init__(self, solution, name: str, q: Quantity, over, base: np.ndarray,
                 sign: float):
        import jax
        import jax.numpy as jnp

        from pinn.train.spec import precision_scope

        ranged = solution.problem.ranged
        names = [p.name for p in ranged]
        self.names, self.over, self.name, self.base = names, over, name, base
        self.idx = np.asarray([names.index(o) for o in over])
        self.lo = np.asarray([ranged[i].range[0] for i in self.idx], np.float64)
        self.hi = np.asarray([ranged[i].range[1] for i in self.idx], np.float64)
        self.scope = lambda: precision_scope(solution.precision)
        self.evaluations = 0
        f = solution.quantity_function(q if name == "quantity" else name)
        with self.scope():
            self.dtype = jnp.zeros(()).dtype
            base_j, lo_j, width_j = (jnp.asarray(a, self.dtype)
                                     for a in (base, self.lo, self.hi - self.lo))
            idx = self.idx

            def objective(s):
                return sign * f(base_j.at[idx].set(lo_j + width_j * s))

            self._value_and_grad = jax.jit(jax.value_and_grad(objective))

    def __call__(self, s):
        import jax.numpy as jnp

        self.evaluations += 1
        with self.scope():
            v, g = self._value_and_grad(jnp.asarray(s, self.dtype))
        v, g = float(v), np.asarray(g, np.float64)
        if not (math.isfinite(v) and np.all(np.isfinite(g))):
            at = ", ".join(f"{k}={x:.6g}" for k, x in self.params(s).items())
            raise ValueError(f"{self.name} (or its gradient) is not finite at {at}; check the "
                             "quantity's expression and the trained network there")
        return v, g

    def params(self, s) -> dict[str, float]:
        """Every ranged parameter's value at ``s``."""
        theta = self.base.copy()
        theta[self.idx] = np.clip(self.lo + (self.hi - self.lo) * np.asarray(s), self.lo,
                                  self.hi)
        return {n: float(v) for n, v in zip(self.names, theta, strict=True)}


# ---------------------------------------------------------------------------
# the check by FEM


@dataclass(frozen=True)
class FEMCheck:
    """What :func:`fem_check` found: the quantity from one FEM solve at ``params``
    (``element``, ``cells`` along the longest side as asked, None: the FEM baseline's
    default; ``dofs``, ``seconds`` of the solve)."""

    quantity: str
    params: dict[str, float]
    value: float
    element: str
    cells: int | None
    dofs: int
    seconds: float

    def to_data(self) -> dict:
        """As JSON-ready data (``pinn optimize --json``)."""
        return {"quantity": self.quantity, "params": dict(self.params), "value": self.value,
                "element": self.element, "cells": self.cells, "dofs": self.dofs,
                "seconds": self.seconds}


def fixed_problem(problem, params: Mapping[str, float]):
    """``problem`` with each ranged parameter fixed at its value in ``params`` (checked by
    :meth:`pinn.Problem.param_rows`): what one FEM solve is. Made through the problem as
    data (:func:`pinn.problem.problem_to_data`), so every expression, condition and exact
    solution reads the value; a reference (which was of the parametric problem) is
    dropped. ``ValueError`` where the problem is not data (a user's own condition)."""
    import dataclasses

    from pinn.data import NotData
    from pinn.problem import problem_from_data, problem_to_data

    row = problem.param_columns(dict(params), 1)[0]
    values = {p.name: float(v) for p, v in zip(problem.ranged, row, strict=True)}
    try:
        data, arrays = problem_to_data(dataclasses.replace(problem, reference=None))
    except NotData as exc:
        raise ValueError(f"{problem.name}: its parameters cannot be fixed for a FEM solve "
                         f"({exc})") from None
    data["params"] = [
        {"name": p["name"], "value": values[p["name"]], "learnable": False}
        if "range" in p else p for p in data["params"]]
    return problem_from_data(data, arrays)


def fem_quantity(fem_solution, problem, quantity: Quantity) -> float:
    """A quantity of interest of a FEM solution of ``problem`` (no ranged parameters), on
    the quantity's own quadrature points: its expression from the fields' values and first
    space derivatives (:meth:`pinn.fem.FEMSolution.gradient`). ``ValueError`` for an
    expression that needs more (a second derivative, a time derivative)."""
    from pinn.dsl.evaluate import evaluate

    fem_quantity_check(problem, quantity)
    rule = quantity.quadrature(problem)
    ex = problem.expand(quantity.expr)
    spatial = list(problem.spatial)
    env: dict = {c: rule.points[:, i] for i, c in enumerate(problem.coords)}
    grads: dict = {}
    for f, wrt in calculus.field_derivatives(ex):
        if not wrt:
            env[f] = fem_solution.evaluate(rule.points, [f.name])[f.name]
        else:  # a first space derivative (fem_quantity_check)
            if f.name not in grads:
                grads[f.name] = fem_solution.gradient(rule.points, f.name)
            env[E.Derivative(f, wrt)] = grads[f.name][:, spatial.index(wrt[0])]
    with np.errstate(all="ignore"):
        values = np.broadcast_to(np.asarray(evaluate(ex, env, xp=np), np.float64),
                                 (len(rule.points),))
    return float(np.asarray(quantity.reduce(values, rule, np)))


def _at_values(quantity: Quantity, values: Mapping[str, float]) -> Quantity:
    """``quantity`` with each ranged parameter in its expression replaced by its value in
    ``values`` (a quantity of a parametric problem, computed on one of its fixed problems,
    :func:`fixed_problem`, where those parameters have no range)."""
    import dataclasses

    sub = {p: float(values[p.name]) for p in calculus.params_of(quantity.expr)
           if p.range is not None and p.name in values}
    return dataclasses.replace(quantity, expr=calculus.substitute(quantity.expr, sub)
                               ) if sub else quantity


def fem_check(problem, quantity: str | Quantity, params: Mapping[str, float], *,
              cells: int | None = None, element: str = "P2", dt: float | None = None,
              theta: float = 0.5) -> FEMCheck:
    """Solve the parametric ``problem`` once by FEM (:func:`pinn.fem.solve`) at the ranged
    parameters' values ``params`` and compute ``quantity`` there
    (:func:`fem_quantity`). Raises :class:`pinn.fem.UnsupportedProblem` where the FEM
    baseline cannot solve the problem and ``ValueError`` where it cannot evaluate the
    quantity."""
    from pinn import fem

    name, q = _quantity(problem, quantity)
    fixed = fixed_problem(problem, params)
    row = problem.param_columns(dict(params), 1)[0]
    values = {p.name: float(v) for p, v in zip(problem.ranged, row, strict=True)}
    q = _at_values(q, values)
    fem.translate(fixed, 2)  # UnsupportedProblem before anything is meshed
    fem_quantity_check(fixed, q)
    t0 = time.perf_counter()
    sol = fem.solve(fixed, cells=cells, element=element, dt=dt, theta=theta)
    seconds = time.perf_counter() - t0
    value = fem_quantity(sol, fixed, q)
    return FEMCheck(quantity=name, params=values, value=value, element=str(element),
                    cells=cells, dofs=int(sol.dofs), seconds=seconds)


def fem_quantity_check(problem, quantity: Quantity) -> None:
    """``ValueError`` (before any FEM solve) where :func:`fem_quantity` could not evaluate
    ``quantity``: derivatives beyond the first, or along time."""
    ex = problem.expand(quantity.expr)
    spatial = set(problem.spatial)
    for f, wrt in calculus.field_derivatives(ex):
        if wrt and not (len(wrt) == 1 and wrt[0] in spatial):
            d = E.to_string_safe(E.Derivative(f, wrt))
            raise ValueError(f"{E.to_string_safe(quantity.expr)} needs {d}; the FEM check "
                             "evaluates the fields and their first space derivatives only")
