"""Geometry: shapes, CSG, space-time domains, boundary parts and point samplers.

    from pinn.geometry import Rectangle, Disk, TimeInterval, Sobol
    domain = Rectangle((0, 0), (1, 1)) - Disk((0.5, 0.5), 0.2)
    x = domain.sample_interior(key, 1000, Sobol())
    b = domain.sample_boundary(key, 200, on="circle")   # points, normals, part

``boundary_distance(shape, on)`` is a smooth function vanishing exactly on boundary
parts (for hard Dirichlet conditions on any shape, :mod:`pinn.geometry.adf`).

Sizes and positions may be expressions of ranged parameters (``Disk((0.5, 0.5), r)``
with ``r = pinn.param("r", range=(0.1, 0.3))``): a family of shapes, sampled with one
value per point, each point in (on) its own shape (``shape.sample_interior(key, n,
params={"r": values})``; ``shape.at({"r": 0.2})`` is one fixed shape); see
:mod:`pinn.geometry.parametric`.

See :mod:`pinn.geometry.base` for the conventions, :mod:`pinn.geometry.csg`
for how CSG shapes name their boundary parts, :mod:`pinn.geometry.samplers`
for what each sampler computes inside jit, and :mod:`pinn.geometry._core` for
rejection sampling with fixed shapes.

Inside ``jax.jit`` (``n``, the sampler and ``on`` are static; the key is
traced): everything that depends on the key.  At trace time, once per
(shape, task) and cached: Sobol/Halton point tables, regular grids, and for CSG
shapes and predicates an estimate of the acceptance rate (one small jitted
evaluation on 32768 fixed candidates) that sizes the proposal rounds.
"""

from pinn.geometry.adf import boundary_distance
from pinn.geometry.base import BoundarySample, Domain, Shape
from pinn.geometry.csg import Difference, Intersection, Renamed, Union
from pinn.geometry.polygon import Polygon, Triangle
from pinn.geometry.primitives import Ball, Box, Disk, Ellipse, Interval, Rectangle
from pinn.geometry.samplers import (
    RAD,
    Grid,
    Halton,
    LatinHypercube,
    Sampler,
    Sobol,
    Uniform,
    rad_select,
)
from pinn.geometry.spacetime import SpaceTime, TimeInterval

__all__ = [
    "Shape", "Domain", "BoundarySample",
    "Interval", "Rectangle", "Box", "Disk", "Ball", "Ellipse", "Triangle", "Polygon",
    "Union", "Difference", "Intersection", "Renamed", "TimeInterval", "SpaceTime",
    "Sampler", "Uniform", "Sobol", "Halton", "LatinHypercube", "Grid", "RAD", "rad_select",
    "boundary_distance",
]
