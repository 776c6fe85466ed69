"""The words of a problem file -> library classes.

The classes come from the one registry of ``pinn`` (:mod:`pinn.data`: each class registers
itself where it is defined, the run format reads the same); this module keeps only the
YAML vocabulary: which word names which registered class. The registries are made on first
use, so that reading and checking a file does not import the training stack. The schema's
option names are the constructors' keyword arguments.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

from pinn.data import registered

#: how CSG kinds combine their shapes
CSG: dict[str, Callable] = {"union": operator.or_, "difference": operator.sub,
                            "intersection": operator.and_}

#: YAML word -> registered name, by kind
OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "soap": "SOAP", "lbfgs": "LBFGS",
              "lm": "LevenbergMarquardt", "gauss_newton": "GaussNewton",
              "ssbroyden": "SSBroyden", "ssbfgs": "SSBFGS"}
WEIGHTINGS = {"fixed": "Fixed", "gradnorm": "GradNorm", "annealing": "Annealing",
              "causal": "Causal", "rba": "RBA", "vrba": "VRBA"}
MODELS = {"mlp": "MLP", "modified_mlp": "ModifiedMLP", "pirate": "PirateNet"}
SAMPLERS = {"uniform": "Uniform", "sobol": "Sobol", "halton": "Halton",
            "lhs": "LatinHypercube", "grid": "Grid"}


def kwargs(args) -> dict:
    """The options of a schema model as keyword arguments (``None`` for an absent model)."""
    return {} if args is None else {k: getattr(args, k) for k in type(args).model_fields}


def _words(kind: str, vocabulary: dict[str, str]) -> dict[str, type]:
    classes = registered(kind)
    return {word: classes[name] for word, name in vocabulary.items()}


@functools.cache
def shapes() -> dict[str, Callable]:
    """Shape kind -> ``constructor(args)`` (args: the kind's schema model)."""
    import pinn.geometry  # noqa: F401 - its shapes register

    G = registered("domain")

    def annulus(a):  # no Annulus primitive: a disk with a hole (parts circle, circle_2)
        numbers = all(isinstance(v, (int, float)) for v in (a.inner, a.outer))
        if numbers and not a.inner < a.outer:  # ranged radii: checked over their ranges
            raise ValueError(f"an annulus needs inner < outer, got {a.inner}, {a.outer}")
        return G["Disk"](tuple(a.center), a.outer) - G["Disk"](tuple(a.center), a.inner)

    def l_shape(a):  # the square [min, max] without the quarter named by cut
        (x0, y0), (x1, y1) = a.min, a.max
        xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
        return G["Polygon"]({
            "lower_right": [(x0, y0), (xm, y0), (xm, ym), (x1, ym), (x1, y1), (x0, y1)],
            "lower_left": [(xm, y0), (x1, y0), (x1, y1), (x0, y1), (x0, ym), (xm, ym)],
            "upper_right": [(x0, y0), (x1, y0), (x1, ym), (xm, ym), (xm, y1), (x0, y1)],
            "upper_left": [(x0, y0), (x1, y0), (x1, y1), (xm, y1), (xm, ym), (x0, ym)],
        }[a.cut])

    def box(a):
        return G["Box"](tuple(a.min), tuple(a.max))

    def ball(a):
        return G["Ball"](tuple(a.center), a.radius)

    return {
        "interval": lambda a: G["Interval"](a.min, a.max),
        "rectangle": lambda a: G["Rectangle"](tuple(a.min), tuple(a.max)),
        "box": box,
        "hypercube": box,
        "disk": lambda a: G["Disk"](tuple(a.center), a.radius),
        "ball": ball,
        "hyperball": ball,
        "annulus": annulus,
        "ellipse": lambda a: G["Ellipse"](tuple(a.center), tuple(a.semi_axes)),
        "triangle": lambda a: G["Triangle"](*a.vertices),
        "polygon": lambda a: G["Polygon"]([tuple(v) for v in a.vertices]),
        "l_shape": l_shape,
    }


@functools.cache
def samplers() -> dict[str, type]:
    import pinn.geometry  # noqa: F401 - its samplers register

    return _words("sampler", SAMPLERS)


@functools.cache
def optimizers() -> dict[str, type]:
    import pinn.train  # noqa: F401 - its optimisers register

    return _words("optimizer", OPTIMIZERS)


@functools.cache
def weightings() -> dict[str, type]:
    import pinn.train  # noqa: F401 - its weightings register

    return _words("weighting", WEIGHTINGS)


@functools.cache
def models() -> dict[str, type]:
    import pinn.nets  # noqa: F401 - its network specs register

    return _words("model", MODELS)


@functools.cache
def references() -> dict[str, tuple[Callable, frozenset, frozenset]]:
    """Reference kind -> (``constructor(field, options)``, its real options, its integer
    options).  ``file`` and ``fem`` take other arguments (a path; the problem itself)."""
    import pinn.reference  # noqa: F401 - its references register

    R = registered("reference")

    def spectral(kind):
        return lambda field, options: R["SpectralReference"](kind, options, field)

    return {
        "burgers": (lambda field, options: R["Burgers"](field=field, **options),
                    frozenset({"nu"}), frozenset({"n_nodes"})),
        "allen_cahn": (spectral("allen_cahn"), frozenset({"diffusion", "reaction", "dt", "t_end"}),
                       frozenset({"n"})),
        "kdv": (spectral("kdv"), frozenset({"delta", "dt", "t_end"}), frozenset({"n"})),
        "kuramoto_sivashinsky": (spectral("kuramoto_sivashinsky"),
                                 frozenset({"alpha", "beta", "gamma", "dt", "t_end"}),
                                 frozenset({"n"})),
    }
