"""pinn: physics-informed neural networks in JAX.

Write a PDE once in the PDE language, then train a PINN on it, solve it with
a finite-element baseline and compare both with an exact or reference
solution::

    import pinn
    x, y, t = pinn.coords("x y t")
    u = pinn.field("u")
    alpha = pinn.param("alpha", 0.05)
    heat = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - alpha * pinn.laplacian(u)},
        conditions={"walls": pinn.Dirichlet(u, 0, on="boundary"),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y))},
    )
    run = pinn.setup(heat, model=pinn.MLP(width=64, depth=4), out_dir="runs/heat")
    solution = run.train()     # or pinn.solve(heat, ...) in one call

Subpackages loaded on first use: ``pinn.fem`` (scikit-fem baselines),
``pinn.reference`` (exact and spectral references), ``pinn.config`` (YAML),
``pinn.report`` (plots and reports); ``pinn.evaluate`` is the one evaluation
(grid, truth, errors) every method is scored by.
"""

import importlib as _importlib

from pinn.conditions import (
    Constraint,
    Data,
    Dirichlet,
    Initial,
    LossTerm,
    Neumann,
    Periodic,
    Robin,
)
from pinn.dsl import (
    D,
    ParseError,
    arccos,
    arcsin,
    arctan,
    coords,
    cos,
    cosh,
    div,
    dot,
    e,
    eq,
    exp,
    field,
    fields,
    grad,
    heaviside,
    laplacian,
    log,
    maximum,
    minimum,
    param,
    parse,
    pi,
    sign,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    vector,
    where,
)
from pinn.dsl import abs_ as abs
from pinn.evaluate import evaluation_grid
from pinn.geometry import (
    RAD,
    Ball,
    Box,
    Disk,
    Ellipse,
    Grid,
    Halton,
    Interval,
    LatinHypercube,
    Polygon,
    Rectangle,
    Sobol,
    TimeInterval,
    Triangle,
    Uniform,
)
from pinn.nets import MLP, RWF, Fourier, ModifiedMLP, PirateNet
from pinn.problem import Problem, ProblemError
from pinn.run import Run, setup, solve
from pinn.solution import Solution
from pinn.train import (
    LBFGS,
    SOAP,
    Adam,
    AdamW,
    Callback,
    Causal,
    EarlyStopping,
    Fixed,
    GaussNewton,
    GradNorm,
    LevenbergMarquardt,
    Optax,
    Stage,
    TensorBoard,
)
from pinn.train.loss import Points
from pinn.training import Training

__version__ = "0.1.0"

_LAZY = ("fem", "reference", "config", "report", "compile", "cli", "io")


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f"pinn.{name}")
    raise AttributeError(f"module 'pinn' has no attribute {name!r}")


__all__ = [
    "Problem", "ProblemError", "setup", "Run", "solve", "Solution", "Training", "Points",
    "evaluation_grid",
    "coords", "field", "fields", "param", "D", "grad", "div", "laplacian", "vector", "dot",
    "sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "abs", "arctan",
    "arcsin", "arccos", "sign", "heaviside", "where", "minimum", "maximum", "eq", "pi", "e",
    "parse", "ParseError",
    "Dirichlet", "Neumann", "Robin", "Periodic", "Initial", "Constraint", "Data", "LossTerm",
    "Interval", "Rectangle", "Box", "Disk", "Ball", "Ellipse", "Triangle", "Polygon",
    "TimeInterval", "Uniform", "Sobol", "Halton", "LatinHypercube", "Grid", "RAD",
    "MLP", "ModifiedMLP", "PirateNet", "Fourier", "RWF",
    "Adam", "AdamW", "LBFGS", "SOAP", "LevenbergMarquardt", "GaussNewton",
    "Optax", "Stage", "Fixed", "GradNorm", "Causal",
    "EarlyStopping", "Callback", "TensorBoard",
]
