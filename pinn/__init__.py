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

__version__ = "0.1.0"

# Every public name is imported on first use (PEP 562), so that ``import pinn`` (and
# ``pinn validate`` on a bad file) does not load JAX: ``pinn.X`` and ``from pinn import X``
# work as before. name -> (module, attribute in it)
_EXPORTS = {
    **{n: ("pinn.conditions", n) for n in (
        "Constraint", "Data", "Dirichlet", "Energy", "Initial", "LossTerm", "Neumann",
        "Periodic", "Robin")},
    **{n: ("pinn.dsl", n) for n in (
        "D", "ParseError", "arccos", "arcsin", "arctan", "coords", "cos", "cosh", "div", "dot",
        "e", "eq", "exp", "field", "fields", "grad", "heaviside", "laplacian", "log",
        "maximum", "minimum", "param", "parse", "pi", "sign", "sin", "sinh", "sqrt", "tan",
        "tanh", "vector", "where", "piecewise", "cells", "coefficient")},
    "abs": ("pinn.dsl", "abs_"),
    "evaluation_grid": ("pinn.evaluate", "evaluation_grid"),
    **{n: ("pinn.geometry", n) for n in (
        "RAD", "Ball", "Box", "Disk", "Ellipse", "Grid", "Halton", "Interval",
        "LatinHypercube", "Polygon", "Rectangle", "Sobol", "TimeInterval", "Triangle",
        "Uniform")},
    **{n: ("pinn.nets", n) for n in ("MLP", "RWF", "Fourier", "ModifiedMLP", "PirateNet")},
    "Problem": ("pinn.problem", "Problem"),
    "optimize": ("pinn.design", "optimize"),
    "ProblemError": ("pinn.problem", "ProblemError"),
    **{n: ("pinn.run", n) for n in ("Run", "setup", "solve")},
    "Solution": ("pinn.solution", "Solution"),
    **{n: ("pinn.train", n) for n in (
        "LBFGS", "Adam", "AdamW", "Annealing", "Callback", "Causal", "EarlyStopping", "Fixed",
        "GradNorm", "GaussNewton", "LevenbergMarquardt", "Optax", "RBA", "SOAP", "SSBFGS",
        "SSBroyden", "Stage", "Stop", "TensorBoard", "VRBA", "MLflow")},
    "Points": ("pinn.train.spec", "Points"),
    "Training": ("pinn.train.spec", "Training"),
}

#: subpackages loaded on first use
_LAZY = ("fem", "reference", "config", "report", "compile", "cli", "io", "evaluate",
         "geometry", "nets", "dsl", "train", "conditions", "problem", "run", "solution",
         "serialize", "sweep", "export", "distributed", "network", "marching", "data",
         "compare", "qoi", "design")


def __getattr__(name):
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = getattr(_importlib.import_module(module), attr)
        globals()[name] = value  # the next access is a plain attribute
        return value
    if name in _LAZY:
        return _importlib.import_module(f"pinn.{name}")
    raise AttributeError(f"module 'pinn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_LAZY))


__all__ = [
    "Problem", "ProblemError", "setup", "Run", "solve", "Solution", "Training", "Points",
    "evaluation_grid", "optimize",
    "coords", "field", "fields", "param", "D", "grad", "div", "laplacian", "vector", "dot",
    "sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "abs", "arctan",
    "arcsin", "arccos", "sign", "heaviside", "where", "minimum", "maximum", "eq", "pi", "e",
    "piecewise", "cells", "coefficient", "parse", "ParseError",
    "Dirichlet", "Neumann", "Robin", "Periodic", "Initial", "Constraint", "Energy", "Data",
    "LossTerm", "Interval", "Rectangle", "Box", "Disk", "Ball", "Ellipse", "Triangle", "Polygon",
    "TimeInterval", "Uniform", "Sobol", "Halton", "LatinHypercube", "Grid", "RAD",
    "MLP", "ModifiedMLP", "PirateNet", "Fourier", "RWF",
    "Adam", "AdamW", "LBFGS", "SSBroyden", "SSBFGS", "SOAP", "LevenbergMarquardt",
    "GaussNewton", "Optax", "Stage", "Stop", "Fixed", "GradNorm", "Annealing", "Causal", "RBA",
    "VRBA", "EarlyStopping", "Callback", "TensorBoard", "MLflow",
]
