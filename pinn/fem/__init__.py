"""Classical finite-element baselines (scikit-fem) built from the same :class:`pinn.Problem`.

``solve(problem, cells=..., element="P1"|"P2")`` reads the expanded equations
(not the problem's name) and builds a weak form for

- second-order equations linear in the second derivatives, with coefficients
  that may depend on the coordinates, time and the solution's values:
  Poisson, Helmholtz, diffusion-advection-reaction, semilinear (Allen-Cahn)
  and quasilinear (``-div((1 + u^2) grad u)``, Burgers ``u u_x``) problems,
  solved by Newton's method when nonlinear;
- first order in time: the theta-method (Crank-Nicolson by default,
  implicit Euler with ``theta=1``), one LU factorisation reused when the
  operator does not change;
- second order in time (``a(x, t) u_tt + m u_t + ... = f``: the wave equation,
  ``laplacian(u) - u_tt / c(x, y)`` with ``c`` from a table): Newmark's average
  acceleration (beta = 1/4, gamma = 1/2; Crank-Nicolson on ``u, u_t``), second
  order and energy-conserving, from the initial value and rate;
- evolution problems with constraints (equations without a time derivative:
  unsteady incompressible Navier-Stokes / Stokes): each constraint holds at the
  new time level and the pressure is taken fully implicitly, the other
  equations by the theta-method (:mod:`pinn.fem.constraints`);
- systems with one equation per field, e.g. steady incompressible
  Navier-Stokes / Stokes ``(u, v, p)`` with Taylor-Hood P2-P1 elements (a field
  that appears only differentiated, like the pressure, gets the lower degree
  and, without Dirichlet data, zero mean);
- Dirichlet, Neumann, Robin and periodic conditions on named parts or
  predicates, and initial conditions (values, and rates for second order in time).

Anything else raises :class:`UnsupportedProblem` naming the term.  Meshes are
built from the pinn geometries (:func:`build_mesh`) or passed as ``mesh=``.
``fem_reference(problem)`` caches a fine-mesh solution on disk for use as
``Problem.reference``.
"""

from pinn.fem.assemble import SolveCache
from pinn.fem.mesh import build_mesh
from pinn.fem.reference import fem_reference
from pinn.fem.solution import FEMSolution
from pinn.fem.solver import Newton, NewtonError, solve
from pinn.fem.weakform import UnsupportedProblem, translate

__all__ = [
    "solve", "FEMSolution", "fem_reference", "build_mesh", "Newton",
    "NewtonError", "UnsupportedProblem", "translate", "SolveCache",
]
