"""``pinn.fem.solve``: steady problems by Newton's method, evolution by the theta-method
(first order in time) or Newmark's average acceleration (second order in time)."""

from __future__ import annotations

import math
import time as _time
import warnings
from dataclasses import dataclass

import numpy as np

from pinn.fem.assemble import Discretisation, SolveCache
from pinn.fem.constraints import Constraints
from pinn.fem.mesh import build_mesh
from pinn.fem.solution import FEMSolution
from pinn.fem.weakform import UnsupportedProblem, translate

__all__ = ["solve", "NewtonError", "Newton"]

_ELEMENTS = {"P1": 1, "P2": 2, "P3": 3, "P4": 4}


class NewtonError(RuntimeError):
    """Newton's method did not converge."""


@dataclass(frozen=True)
class Newton:
    """Newton settings: stop when ``max|dU| <= tol * max(1, max|U|)``."""

    tol: float = 1e-10
    max_iter: int = 30
    max_halvings: int = 8


def _degree(element) -> int:
    if isinstance(element, int):
        return element
    key = str(element).upper()
    if key not in _ELEMENTS:
        raise ValueError(f"unknown element {element!r}; use one of {', '.join(_ELEMENTS)}")
    return _ELEMENTS[key]


def _newton(disc: Discretisation, U: np.ndarray, F, J, newton: Newton, what: str,
            linear: bool, solve_with=None, reuse: dict | None = None,
            factors: SolveCache | None = None):
    """Solve ``F(U) = 0`` on the free dofs from ``U`` (whose fixed dofs are already set).

    ``J(U)`` returns the Jacobian's values on the discretisation's sparsity
    pattern; ``solve_with``: a factorisation to reuse (linear problems).
    ``reuse``: a dict that keeps the last factorisation between calls (time
    steps); it is used while it reduces the residual at least twofold per
    iteration, and refreshed otherwise (a chord/Newton hybrid). ``factors``: a
    :class:`SolveCache` that a linear solve takes its factorisation from.
    """
    if linear:
        if solve_with is None:
            solve_with = disc.factor(J(U), factors)
        return U - solve_with(F(U)), 1
    r = F(U)
    rnorm = disc.residual_norm(r)
    step = np.inf
    keep = reuse if reuse is not None else {}
    for it in range(1, newton.max_iter + 1):
        fresh = keep.get("solve") is None
        if fresh:
            keep["solve"] = disc.factor(J(U))
        dU = -keep["solve"](r)
        V = U + dU
        rv = F(V)
        rvn = disc.residual_norm(rv)
        if not fresh and not (np.isfinite(rvn) and rvn <= 0.5 * rnorm):
            keep["solve"] = disc.factor(J(U))
            fresh = True
            dU = -keep["solve"](r)
            V = U + dU
            rv = F(V)
            rvn = disc.residual_norm(rv)
        if not np.all(np.isfinite(dU)):
            raise NewtonError(f"{what}: the Newton step is not finite (singular Jacobian?) at "
                              f"iteration {it}; check the boundary conditions and parameters")
        lam = 1.0
        for _ in range(newton.max_halvings):
            if np.isfinite(rvn) and (rvn <= rnorm * (1 - 1e-4 * lam) or rnorm < 1e-13):
                break
            lam /= 2
            V = U + lam * dU
            rv = F(V)
            rvn = disc.residual_norm(rv)
        U, r, rnorm = V, rv, rvn
        if lam < 1:
            keep["solve"] = None
        step = lam * np.max(np.abs(dU), initial=0.0)
        if step <= newton.tol * max(1.0, np.max(np.abs(U), initial=0.0)):
            return U, it
    raise NewtonError(
        f"{what}: Newton's method did not converge in {newton.max_iter} iterations (last step "
        f"{step:.3g}, residual {rnorm:.3g}); try a finer mesh, a smaller dt, more iterations "
        "(newton=Newton(max_iter=...)) or continuation in the nonlinear parameter"
    )


def solve(problem, *, cells: int | None = None, h: float | None = None,
          refine: int | None = None, mesh=None, element: str | int = "P1",
          dt: float | None = None, theta: float = 0.5, steps: int | None = None,
          startup: int = 0, store_every: int | None = None, newton: Newton = Newton(),
          intorder: int | None = None, cache: SolveCache | None = None) -> FEMSolution:
    """Solve ``problem`` with continuous Lagrange finite elements.

    Mesh: ``cells`` (cells along the longest side), ``h`` (target size),
    ``refine`` (uniform refinements of a 2-cell base mesh), or a ready
    scikit-fem simplex ``mesh``.  ``element``: ``"P1"`` or ``"P2"`` (systems
    with a pressure-like field use Taylor-Hood P2-P1).

    Evolution problems: the theta-method (``theta=0.5`` Crank-Nicolson,
    ``theta=1`` implicit Euler) with step ``dt`` (or ``steps``); default
    ``dt`` ~ the cell size (P1) or its 1.5th power (P2).  ``startup`` implicit
    Euler half-steps damp the start for rough data (Rannacher). Equations without a
    time derivative (constraints such as incompressibility) hold at each new time level,
    with the pressure fully implicit (:mod:`pinn.fem.constraints`).  Equations second
    order in time (``u_tt``) step by Newmark's average acceleration (Crank-Nicolson on
    ``u, u_t``; ``theta`` and ``startup`` do not apply), from the initial value and
    rate, with a default ``dt`` of the same rule per crossing of the domain at the
    fastest wave speed (P1: Courant number ~1).  One LU
    factorisation is reused when the operator does not change in time.
    ``store_every``: keep every n-th step (default: all steps while they fit
    in ~400 MB).  ``cache``: a :class:`~pinn.fem.SolveCache` shared by many
    solves on one ``mesh`` (parametric queries): the discretisation is rebuilt only
    when the weak form's structure changes, and a linear operator equal to one
    already factorised is not factorised again.

    Raises :class:`~pinn.fem.UnsupportedProblem` for equations outside the
    supported classes and :class:`NewtonError` if Newton's method fails.
    """
    if problem.ranged:  # one FEM solve is one parameter value
        ranges = ", ".join(f"{p.name} in {list(p.range)}" for p in problem.ranged)
        first = problem.ranged[0]
        raise UnsupportedProblem(
            f"{problem.name} is parametric ({ranges}): the FEM baseline solves one parameter "
            f"value; fix it, e.g. --set params.{first.name}={first.range[0]} (in Python: "
            f"pinn.design.fixed_problem(problem, {{{first.name!r}: {first.range[0]}}}))")
    degree = _degree(element)
    if not 0.0 <= theta <= 1.0:
        raise ValueError(f"theta must be in [0, 1] (0.5: Crank-Nicolson, 1: implicit Euler), "
                         f"got {theta}")
    wf = translate(problem, degree)
    shape = problem.space
    if mesh is None:
        mesh = build_mesh(shape, cells=cells, h=h, refine=refine)
    t_start = _time.perf_counter()
    disc = (Discretisation(problem, wf, mesh, intorder=intorder) if cache is None
            else cache.discretisation(problem, wf, mesh, intorder))
    _warn_natural(problem, wf, disc)
    info = {"element": {f.name: f"P{k}" for f, k in wf.degree.items()}, "linear": wf.linear,
            "mesh_cells": int(mesh.t.shape[1]), "theta": None, "dt": None, "newton_iterations": 0}
    if not problem.is_evolution:
        U0 = disc.dirichlet_values(np.zeros(disc.N))
        if not wf.linear:
            U0 = disc.harmonic_lift(U0)
        U, its = _newton(disc, U0, disc.residual, disc.jacobian_data, newton,
                         f"{problem.name} (steady)", wf.linear, factors=cache)
        info["newton_iterations"] = its
        U = _zero_means(disc, U)
        snapshots, times = U[None, :], None
    else:
        snapshots, times = _evolve(problem, disc, wf, dt=dt, theta=theta, steps=steps,
                                   startup=startup, store_every=store_every, newton=newton,
                                   info=info, factors=cache)
        if disc.pinned:  # a pressure determined up to a constant: mean zero at each time
            snapshots = np.array([_zero_means(disc, s) for s in snapshots])
    seconds = _time.perf_counter() - t_start
    return FEMSolution(
        mesh, problem.field_names, {f.name: k for f, k in wf.degree.items()}, snapshots,
        coords=tuple(c.name for c in problem.coords),
        time=problem.time_coord.name if problem.time_coord is not None else None,
        times=times, solve_seconds=seconds,
        up_to_constant=tuple(f.name for f in disc.pinned), info=info, problem=problem,
    )


def _zero_means(disc: Discretisation, U: np.ndarray) -> np.ndarray:
    if not disc.pinned:
        return U
    U = U.copy()
    means = disc.mean_values(U)
    for f in disc.pinned:
        off = disc.offsets[f]
        U[off: off + disc.bases[f].N] -= means[f]
    return U


def _warn_natural(problem, wf, disc: Discretisation) -> None:
    """Say which boundary facets get the natural (zero-flux) condition."""
    bf = disc.mesh.boundary_facets()
    if bf.size == 0 or disc.mesh.dim() == 0:
        return
    covered: dict = {f: set() for f in wf.fields}
    for ds in wf.dirichlet:
        covered[ds.field].update(disc._facets(ds.on).tolist())
    for bt in wf.boundary:
        covered[bt.test].update(disc._facets(bt.on).tolist())
    for _, fields, pair in wf.periodic:
        for f in fields:
            for part in pair:
                covered[f].update(disc._facets(part).tolist())
    for f in wf.fields:
        if f in wf.value_free or wf.degree[f] < max(wf.degree.values()):
            continue  # pressure-like fields carry no boundary condition
        missing = len(set(bf.tolist()) - covered[f])
        if missing:
            warnings.warn(
                f"{problem.name}: {missing} of {bf.size} boundary facets have no condition on "
                f"{f.name}; the FEM baseline applies the natural (zero-flux) condition there",
                stacklevel=3)


def _evolve(problem, disc: Discretisation, wf, *, dt, theta, steps, startup, store_every, newton,
            info, factors=None):
    tI = problem.time
    t0, t1 = float(tI.t0), float(tI.t1)
    T = t1 - t0
    if steps is None:
        steps = _step_count(problem, disc, wf, dt, t0, T)
    dt = T / steps
    info.update(theta=theta, dt=dt, steps=steps)
    if store_every is None:
        store_every = _store_every(problem, disc, steps)
    if wf.inertial:
        if theta != 0.5 or startup:
            warnings.warn(f"{problem.name}: theta={theta} and startup={startup} are for first "
                          "order in time; a second-order-in-time equation is stepped by "
                          "Newmark's average acceleration (Crank-Nicolson on u, u_t)",
                          stacklevel=3)
        info.update(theta=0.5, scheme="newmark")
        return _evolve_second_order(problem, disc, wf, dt=dt, steps=steps,
                                    store_every=store_every, newton=newton, info=info,
                                    factors=factors)
    return _evolve_first_order(problem, disc, wf, t0=t0, dt=dt, theta=theta, steps=steps,
                               startup=startup, store_every=store_every, newton=newton,
                               info=info, factors=factors)


def _step_count(problem, disc: Discretisation, wf, dt, t0: float, T: float) -> int:
    """The number of time steps: ``T / dt`` rounded up when ``dt`` is given, else
    ``(L/h)^((k+1)/2)`` (``h`` the cell size, ``L`` the domain's, ``k`` the highest degree)
    per crossing of the domain for waves, once otherwise, between 50 and 20000."""
    if dt is None:
        lo, hi = (np.atleast_1d(np.asarray(b, dtype=np.float64)) for b in problem.space.bounds)
        L = float(np.max(hi - lo))
        hcell = L / max(1.0, disc.mesh.t.shape[1] ** (1 / disc.mesh.dim()))
        k = max(wf.degree.values())
        rel = (hcell / L) ** ((k + 1) / 2)
        # waves: per crossing of the domain at the fastest speed (P1: Courant number ~1)
        crossings = _crossings(disc, wf, t0, T, L) if wf.inertial else 1.0
        return int(min(20000, max(50, math.ceil(crossings / rel))))
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    return max(1, int(math.ceil(T / dt - 1e-9)))


def _store_every(problem, disc: Discretisation, steps: int) -> int:
    """Store every how many steps so that the stored snapshots stay within memory (warns
    when that is more than every step)."""
    budget = 5e7
    store_every = max(1, int(math.ceil((steps + 1) * disc.N / budget)))
    if store_every > 1:
        warnings.warn(f"{problem.name}: storing every {store_every}th of {steps} steps "
                      "(memory); pass store_every= to change", stacklevel=4)
    return store_every


def _evolve_first_order(problem, disc: Discretisation, wf, *, t0, dt, theta, steps, startup,
                        store_every, newton, info, factors=None):
    """``M U' + R(U, t) = 0`` by the theta scheme (the first ``startup`` steps as two implicit
    Euler half-steps each), constraints (no time derivative) holding at each new level."""
    U = disc.interpolate(wf.initial, t=t0)
    snaps, times = [U.copy()], [t0]
    mass_const = not any(
        problem.time_coord in _coords(m) for form in wf.equations for m in form.mass.values())
    M0data = disc.mass_data(t0) if mass_const else None
    K, R = _spatial_residual(disc, wf, U, t0)
    step_factors: dict = {}
    reuse: dict = {}
    total_its = 0

    R_prev = R(U, t0)
    # constraints (no time derivative) at each new level, multipliers fully implicit
    dae = Constraints(disc, wf, t0) if wf.constraint_equations else None
    if dae is not None:
        info["constraints"] = [form.name for form in wf.constraint_equations]
    startup = max(0, min(int(startup), steps))
    n_half = 2 * startup
    schedule = [(0.5 * dt, 1.0)] * n_half + [(dt, theta)] * (steps - startup)
    t = t0
    for k_step, (h, th) in enumerate(schedule, start=1):
        t_new = t0 + (dt * (k_step / 2) if k_step <= n_half else dt * (startup + k_step - n_half))
        Mdata = M0data if mass_const else disc.mass_data(t + 0.5 * h)
        Mmat = disc.matrix(Mdata)
        Ug = disc.dirichlet_values(U, t_new)
        if dae is not None:
            Ug = dae.guess(Ug, U, t_new - (1 - th) * h)
        F, J = _step_system(disc, K, R, dae, U, R_prev, Mmat, Mdata, h, th, t_new, t)
        solve_with = None
        if K is not None and mass_const:
            key = (h, th)
            if key not in step_factors:
                step_factors[key] = disc.factor(J(Ug), factors)
            solve_with = step_factors[key]
        if reuse.get("key") != (h, th):
            reuse.clear()
            reuse["key"] = (h, th)
        U, its = _newton(disc, Ug, F, J, newton, f"{problem.name} (step to t={t_new:.6g})",
                         wf.linear, solve_with, reuse)
        total_its += its
        R_prev = R(U, t_new)
        t = t_new
        snap = dae.snapshot(U, t_new, t_new - (1 - th) * h) if dae is not None else U
        if k_step < n_half:
            continue
        j = startup + max(0, k_step - n_half)
        if j % store_every == 0 or k_step == len(schedule):
            snaps.append(snap.copy())
            times.append(t)
    if dae is not None:
        dae.finish(snaps, times)
    info["newton_iterations"] = total_its
    return np.array(snaps), np.array(times)


def _step_system(disc: Discretisation, K, R, dae, Un, Rp, Mmat, Mdata, h, th, t_new, t_old):
    """``(F, J)``: the residual of one theta step from ``(t_old, Un)`` (``Rp`` its spatial
    residual) to ``t_new``, and the data of its Jacobian."""

    def F(V):
        if dae is not None:
            return Mmat @ (V - Un) / h + dae.residual(R(V, t_new), V, Un, Rp, R, t_old, th)
        return Mmat @ (V - Un) / h + th * R(V, t_new) + (1 - th) * Rp

    def J(V):
        Jr = K if K is not None else disc.jacobian_data(V, t_new)
        if dae is not None:
            return Mdata / h + dae.jacobian(Jr, V, Un, t_old, th)
        return Mdata / h + th * Jr

    return F, J


def _spatial_residual(disc: Discretisation, wf, U, t0: float):
    """``(K, R)``: the spatial residual ``R(V, t)``, which is ``K V + r0(t)`` (``K`` the
    constant Jacobian's data, ``r0`` cached when it does not depend on time) when the
    operator is linear and constant in time; else ``K`` is None and ``R`` assembles."""
    if not (wf.linear and not wf.operator_depends_on_time):
        return None, disc.residual
    K = disc.jacobian_data(U, t0)
    Kmat = disc.matrix(K)
    r0_cache = []

    def R(V, t):
        if wf.depends_on_time:
            return Kmat @ V + disc.residual(np.zeros_like(V), t)
        if not r0_cache:
            r0_cache.append(disc.residual(np.zeros_like(V), t))
        return Kmat @ V + r0_cache[0]

    return K, R


def _coords(e):
    from pinn.dsl.calculus import coords_of

    return coords_of(e)


def _crossings(disc: Discretisation, wf, t0: float, T: float, L: float) -> float:
    """How many times the fastest wave crosses the domain (size ``L``) in time ``T``: the
    speed is ``sqrt(max |c_ii| / |a|)`` over the quadrature points, ``a`` the coefficient of
    ``u_tt`` and ``c_ii`` those of ``u_xx``, ``u_yy``, ... (1 when it cannot be told)."""
    env = disc._env(disc.interpolate(wf.initial, t=t0), t0)
    shape = disc.dx.shape
    speed2 = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for form in wf.equations:
            for g, a in form.inertia.items():
                av = np.abs(_num(a, env, shape))
                for i, row in enumerate(form.second.get(g, ())):
                    ratio = np.abs(_num(row[i], env, shape)) / av
                    ratio = ratio[np.isfinite(ratio)]
                    if ratio.size:
                        speed2 = max(speed2, float(np.max(ratio)))
    return max(1.0, T * math.sqrt(speed2) / L) if speed2 > 0 else 1.0


def _num(e, env, shape) -> np.ndarray:
    from pinn.dsl.evaluate import evaluate_numpy

    return np.broadcast_to(np.asarray(evaluate_numpy(e, env), dtype=np.float64), shape)


def _evolve_second_order(problem, disc: Discretisation, wf, *, dt, steps, store_every, newton,
                         info, factors=None):
    """``A U'' + M U' + R(U, t) = 0`` (``A``: the inertia matrix of the ``u_tt``
    coefficients, ``M``: the mass matrix of the ``u_t`` ones, ``R``: the spatial residual)
    by Newmark's average-acceleration scheme (beta = 1/4, gamma = 1/2), written as
    Crank-Nicolson on the first-order system ``U' = V``, ``A V' + M V + R = 0``:

        A (4/dt^2) (U1 - U0 - dt V0) + M (2/dt) (U1 - U0) + R(U1, t1) + R(U0, t0) = 0,
        V1 = (2/dt) (U1 - U0) - V0,

    second order in ``dt``, unconditionally stable, and for ``A U'' + K U = 0`` (``A``, ``K``
    symmetric) it keeps ``V.A V + U.K U`` exactly. No initial acceleration is needed. The
    operator ``4/dt^2 A + 2/dt M + dR/dU`` is factorised once when the problem is linear and
    its coefficients do not change in time. The rates at Dirichlet dofs follow the same
    recurrence from the prescribed values."""
    t0 = float(problem.time.t0)
    U = disc.interpolate(wf.initial, t=t0)
    V = disc.interpolate(wf.rates, t=t0)
    snaps, times = [U.copy()], [t0]
    coeffs = [m for form in wf.equations for m in (*form.mass.values(), *form.inertia.values())]
    const_mass = not any(problem.time_coord in _coords(m) for m in coeffs)
    K, R = _spatial_residual(disc, wf, U, t0)  # K: None unless linear and constant

    def scaled(t):
        """``(4/dt^2 A + 2/dt M)`` on the pattern, and the two as matrices (at time t)."""
        a, m = 4.0 / dt**2 * disc.inertia_data(t), 2.0 / dt * disc.mass_data(t)
        return a + m, disc.matrix(a), disc.matrix(m)

    fixed = scaled(t0) if const_mass else None
    solve_with = (disc.factor(fixed[0] + K, factors) if K is not None and const_mass
                  else None)
    R_prev = R(U, t0)
    reuse: dict = {}
    total_its = 0
    for n in range(1, steps + 1):
        t_new = t0 + dt * n
        A_data, Ai, Mi = fixed if const_mass else scaled(t_new - 0.5 * dt)
        guess = disc.dirichlet_values(U + dt * V, t_new)
        U0, V0, Rp = U, V, R_prev

        def F(W, U0=U0, V0=V0, Rp=Rp, Ai=Ai, Mi=Mi, t_new=t_new):
            return Ai @ (W - U0 - dt * V0) + Mi @ (W - U0) + R(W, t_new) + Rp

        def J(W, A_data=A_data, t_new=t_new):
            return A_data + (K if K is not None else disc.jacobian_data(W, t_new))

        U, its = _newton(disc, guess, F, J, newton, f"{problem.name} (step to t={t_new:.6g})",
                         wf.linear, solve_with, reuse)
        total_its += its
        V = disc.enforce(2.0 / dt * (U - U0) - V0)
        R_prev = R(U, t_new)
        if n % store_every == 0 or n == steps:
            snaps.append(U.copy())
            times.append(t_new)
    info["newton_iterations"] = total_its
    return np.array(snaps), np.array(times)
