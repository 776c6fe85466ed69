"""The PDE language: expressions, parsing, printing and symbolic calculus."""

from pinn.dsl.builders import (
    D, abs_, arccos, arcsin, arctan, coords, cos, cosh, div, dot, e, eq, exp, field, fields,
    grad, heaviside, laplacian, log, logical_and, logical_not, logical_or, maximum, minimum,
    ne, param, pi, sign, sin, sinh, sqrt, tan, tanh, vector, where,
)
from pinn.dsl.calculus import (
    coords_of, derivative_orders, diff, expand, field_derivatives, fields_of, names_of,
    params_of, resolve, substitute, walk,
)
from pinn.dsl.expr import Coord, Derivative, Expr, Field, Number, Param

__all__ = [
    "D", "abs_", "arccos", "arcsin", "arctan", "coords", "cos", "cosh", "div", "dot", "e",
    "eq", "exp", "field", "fields", "grad", "heaviside", "laplacian", "log", "logical_and",
    "logical_not", "logical_or", "maximum", "minimum", "ne", "param", "pi", "sign", "sin",
    "sinh", "sqrt", "tan", "tanh", "vector", "where",
    "coords_of", "derivative_orders", "diff", "expand", "field_derivatives", "fields_of",
    "names_of", "params_of", "resolve", "substitute", "walk",
    "Coord", "Derivative", "Expr", "Field", "Number", "Param",
]
