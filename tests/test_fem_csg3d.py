"""The FEM baseline's 3-D CSG mesher (boxes minus balls): valid meshes and FEM rates on them.

Manufactured solution in the unit cube minus a ball, -laplacian(u) + u = f, with
u = u_e on the sphere (Dirichlet) and du/dn = grad(u_e).n on the six walls (Neumann,
nonzero). u_e is smooth across the sphere, so the polyhedral mesh boundary costs no
order: P1 converges at h^2 and P2 at h^3 in L2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pinn
import pinn.fem as fem
from pinn.fem.mesh import _tet_volumes

x, y, z = pinn.coords("x y z")
u = pinn.field("u")
sin, cos, pi = pinn.sin, pinn.cos, pinn.pi

CENTER, RADIUS = (0.45, 0.5, 0.55), 0.3


def rate(ns, errs) -> float:
    """Slope of log(err) against log(h), h = 1/n."""
    return float(-np.polyfit(np.log(ns), np.log(errs), 1)[0])


def cube_minus_ball():
    return pinn.Box((0, 0, 0), (1, 1, 1)) - pinn.Ball(CENTER, RADIUS)


def manufactured():
    ue = sin(pi * x) * cos(pi * y) * (1 + z * z) + x * y
    walls = {"left": (x, -1), "right": (x, 1), "bottom": (y, -1), "top": (y, 1),
             "front": (z, -1), "back": (z, 1)}
    conds = {f"flux_{part}": pinn.Neumann(u, sign * pinn.D(ue, c), on=part)
             for part, (c, sign) in walls.items()}
    conds["hole"] = pinn.Dirichlet(u, ue, on="sphere")
    f = -pinn.laplacian(ue, (x, y, z)) + ue
    return pinn.Problem(cube_minus_ball(), {"pde": -pinn.laplacian(u) + u - f}, conds,
                        exact={u: ue}, name="cube_minus_ball")


def test_cube_minus_four_balls_mesh_is_valid():
    balls = [((0.4, 0.3, 0.6), 0.2), ((0.6, 0.7, 0.6), 0.2), ((0.2, 0.8, 0.7), 0.1),
             ((0.6, 0.2, 0.3), 0.1)]
    shape = pinn.Box((0, 0, 0), (1, 1, 1))
    for c, r in balls:
        shape = shape - pinn.Ball(c, r)
    m = fem.build_mesh(shape, cells=20)
    assert m.is_valid()
    vol = _tet_volumes(m.p.T, m.t.T)
    assert vol.min() > 1e-4 * (1 / 20) ** 3          # positively oriented, none flat
    exact = 1 - sum(4 / 3 * math.pi * r**3 for _, r in balls)
    # the inscribed polyhedra leave a little of each ball: O(h^2) too much volume
    # (2.5e-3 at h = 1/20, 0.27 %)
    assert 0 < vol.sum() - exact < 3e-3
    mid = m.p[:, m.t].mean(axis=1).T
    assert np.all(np.asarray(shape.contains(mid)))
    # every boundary node lies on a wall or on a sphere (no holes inside the mesh)
    p = m.p[:, m.boundary_nodes()].T
    wall = np.min(np.minimum(p, 1 - p), axis=1)
    sphere = np.min([np.abs(np.linalg.norm(p - c, axis=1) - r) for c, r in balls], axis=0)
    assert np.max(np.minimum(wall, sphere)) < 1e-12
    # the sphere nodes are spread over each sphere at about the cell size
    for c, r in balls:
        on = np.abs(np.linalg.norm(p - c, axis=1) - r) < 1e-12
        expected = 4 * math.pi * r**2 / (math.sqrt(3) / 2 * (1 / 20) ** 2)
        assert abs(on.sum() / expected - 1) < 0.05


def test_refined_meshes_keep_the_sphere():
    shape = cube_minus_ball()
    coarse = fem.build_mesh(shape, cells=6)
    fine = fem.build_mesh(shape, cells=6, refine=1)
    assert fine.t.shape[1] == 8 * coarse.t.shape[1]
    p = fine.p[:, fine.boundary_nodes()].T
    wall = np.min(np.minimum(p, 1 - p), axis=1)
    sphere = np.abs(np.linalg.norm(p - np.asarray(CENTER), axis=1) - RADIUS)
    assert np.max(np.minimum(wall, sphere)) < 1e-10
    hole = 4 / 3 * math.pi * RADIUS**3
    gaps = [np.abs(_tet_volumes(m.p.T, m.t.T)).sum() - (1 - hole) for m in (coarse, fine)]
    assert 0 < gaps[1] < gaps[0] / 3                  # the polyhedral error falls as h^2


@pytest.mark.parametrize("element, base, levels, expected", [
    ("P1", 4, [0, 1, 2], 2.0),
    ("P2", 6, [0, 1], 3.0),
])
def test_manufactured_l2_rate_in_a_cube_minus_a_ball(element, base, levels, expected):
    problem = manufactured()
    errs = [fem.solve(problem, mesh=fem.build_mesh(problem.space, cells=base, refine=r),
                      element=element).l2_error(problem.exact)["u"] for r in levels]
    ns = [base * 2**r for r in levels]
    assert abs(rate(ns, errs) - expected) < 0.15, errs
