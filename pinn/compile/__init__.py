"""The derivative engine: PDE-language expressions -> pure JAX functions.

``compile_terms(exprs, coords=, fields=, apply=)`` is the front door (see
:mod:`pinn.compile.terms`): it plans every field derivative the expressions
need, collapses highest derivatives used only in one fixed combination, and
computes them once per point.  :func:`derivatives` gives raw partial
derivatives of a network by one of the strategies of
:mod:`pinn.compile.derivatives` (Taylor mode by default).
"""

from pinn.compile.derivatives import STRATEGIES, derivatives, jet_derivatives, jvp_derivatives
from pinn.compile.plan import Collapsed, IndexSet, StreamSet, multi_index, polarization
from pinn.compile.taylor import UnsupportedPrimitive, supported_primitives, taylor_derivatives
from pinn.compile.terms import (
    CompileError,
    Plan,
    collapse_terms,
    compile_expressions,
    compile_fields,
    compile_terms,
    initial_pde_params,
    plan_terms,
)

__all__ = [
    "STRATEGIES", "Collapsed", "CompileError", "IndexSet", "Plan", "StreamSet",
    "UnsupportedPrimitive", "collapse_terms", "compile_expressions", "compile_fields",
    "compile_terms", "derivatives", "initial_pde_params", "jet_derivatives", "jvp_derivatives",
    "multi_index", "plan_terms", "polarization", "supported_primitives", "taylor_derivatives",
]
