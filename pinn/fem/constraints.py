"""Evolution problems with constraints: equations without a time derivative.

Such a system has a zero block in its mass matrix: a differential-algebraic system, of
index 2 for incompressible flow (the continuity equation ``u_x + v_y = 0`` holds the
velocity in the divergence-free space and the pressure, its Lagrange multiplier, appears
in no constraint) or of index 1 (an algebraic field that a constraint determines). Writing
``y`` for the fields with a time derivative, ``z`` for the *multipliers* (fields with no
time derivative that no constraint contains, such as the pressure) and ``R = (R_d, R_c)``
for the spatial residual of the differential and constraint equations, a step of the
theta-method is

    M (y1 - y0) / h + theta R_d(y1, z1, t1) + (1 - theta) R_d(y0, z1, t0) = 0,
    R_c(y1, z1, t1) = 0:

every constraint holds at the new time level, and the multipliers are taken fully
implicitly (at the new level in both halves). The velocity then evolves by the
theta-method (Crank-Nicolson: second order, A-stable) in the discretely divergence-free
space, and no recursion on the pressure is left (the Crank-Nicolson average
``(p0 + p1) / 2`` would leave its ``(-1)^n`` mode undamped). The multiplier of a step
approximates its value at ``t0 + theta h``; the stored snapshots carry it at ``t1``,
linearly extrapolated from the last two steps (second order), and at the initial time
extrapolated back from the first two: an initial value of a multiplier is not data of the
system (the pressure is whatever the flow's acceleration needs). Index-1 fields (in some
constraint) keep the plain theta-method: their constraint at each level makes their old
values consistent.
"""

from __future__ import annotations

import warnings

import numpy as np

from pinn.dsl import symbolic as S
from pinn.dsl.calculus import coords_of

__all__ = ["Constraints"]


class Constraints:
    """The constraint rows and multiplier columns of one :class:`Discretisation`."""

    def __init__(self, disc, wf, t0: float):
        self.disc = disc
        N = disc.N

        def dofs(f):
            return slice(disc.offsets[f], disc.offsets[f] + disc.bases[f].N)

        alg_rows = np.zeros(N, dtype=bool)
        for form in wf.constraint_equations:
            alg_rows[dofs(form.test)] = True
        zcols = np.zeros(N, dtype=bool)
        for f in wf.multipliers:
            zcols[dofs(f)] = True
        self.alg_rows, self.zcols = alg_rows, zcols
        self.zdofs = np.nonzero(zcols)[0]
        given = [f.name for f in wf.multipliers if f in wf.initial]
        if given:
            warnings.warn(
                f"{disc.problem.name}: the initial value of {', '.join(given)} is not used by "
                "the FEM baseline: a field without a time derivative that no constraint "
                "contains (a pressure) is set by the flow; its values at the initial time "
                "are extrapolated from the first steps", stacklevel=4)
        nnz_row = np.repeat(np.arange(N), np.diff(disc.indptr))
        alg_nnz, z_nnz = alg_rows[nnz_row], zcols[disc.indices]
        self._full = alg_nnz | z_nnz                       # weight 1: new level only
        self._diff_z = ~alg_nnz & z_nnz                    # R_d's multiplier columns
        tc = disc.problem.time_coord
        # the multipliers' coefficients: constant when free of fields and of t
        self.constant = all(
            not S.field_atoms(jx) and tc not in coords_of(jx)
            for form in wf.equations for it in (form.source, *form.flux)
            for (g, _), jx in it.jac.items() if g in wf.multipliers)
        self._Kz = None
        if self.constant and self.zdofs.size:
            J0 = disc.jacobian_data(disc.interpolate(wf.initial, t=t0), t0)
            self._Kz = disc.matrix(np.where(self._diff_z, J0, 0.0))
        self._last: tuple[float, np.ndarray] | None = None   # (tau, z) of the last step
        self._first: list[tuple[float, np.ndarray]] = []     # those of the first two steps
        self._t_first: float | None = None                   # the first step's t1

    # -- one step --------------------------------------------------------------
    def residual(self, r_new: np.ndarray, V: np.ndarray, U0: np.ndarray, r0: np.ndarray,
                 R, t0: float, theta: float) -> np.ndarray:
        """``theta R(V, t1) + (1 - theta) R(y0, z1, t0)``, and ``R(V, t1)`` on constraint
        rows (``r_new = R(V, t1)``, ``r0 = R(U0, t0)``)."""
        if theta == 1.0:
            return r_new
        if self._Kz is not None:
            r_old = r0 + self._Kz @ (V - U0)
        elif self.zdofs.size:
            W = U0.copy()
            W[self.zdofs] = V[self.zdofs]
            r_old = R(W, t0)
        else:
            r_old = r0
        out = theta * r_new + (1 - theta) * r_old
        out[self.alg_rows] = r_new[self.alg_rows]
        return out

    def jacobian(self, J_new: np.ndarray, V: np.ndarray, U0: np.ndarray, t0: float,
                 theta: float) -> np.ndarray:
        """The derivative of :meth:`residual` on the pattern (``J_new``: that of ``R`` at
        ``V``, ``t1``)."""
        if theta == 1.0:
            return J_new
        out = np.where(self._full, J_new, theta * J_new)
        if not self.constant and self.zdofs.size:
            W = U0.copy()
            W[self.zdofs] = V[self.zdofs]
            J_old = self.disc.jacobian_data(W, t0)
            d = self._diff_z
            out[d] = theta * J_new[d] + (1 - theta) * J_old[d]
        return out

    def guess(self, Ug: np.ndarray, U: np.ndarray, tau: float) -> np.ndarray:
        """``Ug`` (the Dirichlet values at t1) with the multipliers' at ``tau``, their time."""
        if not self.zdofs.size:
            return Ug
        Ut = self.disc.dirichlet_values(U, tau)
        Ug = Ug.copy()
        Ug[self.zdofs] = Ut[self.zdofs]
        return Ug

    def snapshot(self, U: np.ndarray, t1: float, tau: float) -> np.ndarray:
        """A copy of ``U`` (just computed, at ``t1``) with the multipliers moved from
        ``tau`` to ``t1``; call once per step, in order."""
        S_ = U.copy()
        z = U[self.zdofs].copy()
        last, self._last = self._last, (tau, z)
        if len(self._first) < 2:
            self._first.append((tau, z))
            if self._t_first is None:
                self._t_first = t1
        if tau < t1 and last is not None and last[0] < tau:
            t_prev, z_prev = last
            S_[self.zdofs] = z + (t1 - tau) / (tau - t_prev) * (z - z_prev)
        return S_

    def finish(self, snaps: list[np.ndarray], times: list[float]) -> None:
        """Give the snapshots at the initial time and after the first step (which had no
        earlier multiplier) the multipliers of the first two steps, linearly extrapolated
        (the initial ones are not data of the system: the flow determines them)."""
        if not self.zdofs.size or not self._first:
            return
        (ta, za), (tb, zb) = (self._first * 2)[:2] if len(self._first) == 1 else self._first
        for i, ti in enumerate(times):
            if ti == times[0] or ti == self._t_first:
                w = (ti - ta) / (tb - ta) if tb > ta else 0.0
                snaps[i][self.zdofs] = za + w * (zb - za)
