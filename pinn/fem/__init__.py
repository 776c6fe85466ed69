"""Classical finite-element baselines (scikit-fem) built from the same :class:`pinn.Problem`.

``solve(problem, cells=..., element="P1"|"P2")`` translates the equations into
a weak form (linear and semilinear/quasilinear second-order scalar equations,
theta-method time stepping, steady incompressible Navier-Stokes with
Taylor-Hood elements) and returns a :class:`FEMSolution`;
``fem_reference(problem)`` caches a fine-mesh solution for use as a reference.
"""

from pinn.fem.mesh import build_mesh
from pinn.fem.reference import fem_reference
from pinn.fem.solution import FEMSolution
from pinn.fem.solver import Newton, NewtonError, solve
from pinn.fem.weakform import UnsupportedProblem, translate

__all__ = [
    "solve", "FEMSolution", "fem_reference", "build_mesh", "Newton",
    "NewtonError", "UnsupportedProblem", "translate",
]
