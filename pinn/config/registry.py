"""Names in a problem file -> library constructors.

Each registry is a ``name -> constructor`` dict, made on first use so that
reading and checking a file does not import the training stack.  The keys
are the kinds of the schema (:mod:`pinn.config.schema`); the schema's option
names are the constructors' keyword arguments, so most entries are the class
itself.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

#: how CSG kinds combine their shapes
CSG: dict[str, Callable] = {"union": operator.or_, "difference": operator.sub,
                            "intersection": operator.and_}


def kwargs(args) -> dict:
    """The options of a schema model as keyword arguments (``None`` for an absent model)."""
    return {} if args is None else {k: getattr(args, k) for k in type(args).model_fields}


@functools.cache
def shapes() -> dict[str, Callable]:
    """Shape kind -> ``constructor(args)`` (args: the kind's schema model)."""
    import pinn.geometry as G

    def annulus(a):  # no Annulus primitive: a disk with a hole (parts circle, circle_2)
        if not a.inner < a.outer:
            raise ValueError(f"an annulus needs inner < outer, got {a.inner}, {a.outer}")
        return G.Disk(tuple(a.center), a.outer) - G.Disk(tuple(a.center), a.inner)

    def l_shape(a):  # the square [min, max] without the quarter named by cut
        (x0, y0), (x1, y1) = a.min, a.max
        xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
        return G.Polygon({
            "lower_right": [(x0, y0), (xm, y0), (xm, ym), (x1, ym), (x1, y1), (x0, y1)],
            "lower_left": [(xm, y0), (x1, y0), (x1, y1), (x0, y1), (x0, ym), (xm, ym)],
            "upper_right": [(x0, y0), (x1, y0), (x1, ym), (xm, ym), (xm, y1), (x0, y1)],
            "upper_left": [(x0, y0), (x1, y0), (x1, y1), (xm, y1), (xm, ym), (x0, ym)],
        }[a.cut])

    return {
        "interval": lambda a: G.Interval(a.min, a.max),
        "rectangle": lambda a: G.Rectangle(tuple(a.min), tuple(a.max)),
        "box": lambda a: G.Box(tuple(a.min), tuple(a.max)),
        "hypercube": lambda a: G.Box(tuple(a.min), tuple(a.max)),
        "disk": lambda a: G.Disk(tuple(a.center), a.radius),
        "ball": lambda a: G.Ball(tuple(a.center), a.radius),
        "hyperball": lambda a: G.Ball(tuple(a.center), a.radius),
        "annulus": annulus,
        "ellipse": lambda a: G.Ellipse(tuple(a.center), tuple(a.semi_axes)),
        "triangle": lambda a: G.Triangle(*a.vertices),
        "polygon": lambda a: G.Polygon([tuple(v) for v in a.vertices]),
        "l_shape": l_shape,
    }


@functools.cache
def samplers() -> dict[str, Callable]:
    import pinn.geometry as G

    return {"uniform": G.Uniform, "sobol": G.Sobol, "halton": G.Halton,
            "lhs": G.LatinHypercube, "grid": G.Grid}


@functools.cache
def optimizers() -> dict[str, Callable]:
    import pinn.train as T

    return {"lm": T.LevenbergMarquardt, "gauss_newton": T.GaussNewton,
            "adam": T.Adam, "adamw": T.AdamW, "soap": T.SOAP, "lbfgs": T.LBFGS,
            "ssbroyden": T.SSBroyden, "ssbfgs": T.SSBFGS}


@functools.cache
def weightings() -> dict[str, Callable]:
    import pinn.train as T

    return {"fixed": T.Fixed, "gradnorm": T.GradNorm, "annealing": T.Annealing,
            "causal": T.Causal, "rba": T.RBA, "vrba": T.VRBA}


@functools.cache
def models() -> dict[str, Callable]:
    import pinn.nets as N

    return {"mlp": N.MLP, "modified_mlp": N.ModifiedMLP, "pirate": N.PirateNet}


@functools.cache
def references() -> dict[str, tuple[Callable, frozenset, frozenset]]:
    """Reference kind -> (``constructor(field, options)``, its real options, its integer
    options).  ``file`` and ``fem`` take other arguments (a path; the problem itself)."""
    from pinn.reference import Burgers, SpectralReference

    def spectral(kind):
        return lambda field, options: SpectralReference(kind, options, field)

    return {
        "burgers": (lambda field, options: Burgers(field=field, **options), frozenset({"nu"}),
                    frozenset({"n_nodes"})),
        "allen_cahn": (spectral("allen_cahn"), frozenset({"diffusion", "reaction", "dt", "t_end"}),
                       frozenset({"n"})),
        "kdv": (spectral("kdv"), frozenset({"delta", "dt", "t_end"}), frozenset({"n"})),
        "kuramoto_sivashinsky": (spectral("kuramoto_sivashinsky"),
                                 frozenset({"alpha", "beta", "gamma", "dt", "t_end"}),
                                 frozenset({"n"})),
    }
