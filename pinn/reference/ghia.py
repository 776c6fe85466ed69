"""Lid-driven cavity benchmark data of Ghia, Ghia & Shin (1982), Re = 100.

U. Ghia, K. N. Ghia and C. T. Shin, "High-Re solutions for incompressible
flow using the Navier–Stokes equations and a multigrid method", J. Comput.
Phys. 48 (1982) 387–411.  Unit square, lid ``y = 1`` moving with ``u = 1``;
the numbers are from their 129 x 129 multigrid vorticity–stream-function
solution (Table I: ``u`` on the vertical centreline ``x = 0.5``; Table II:
``v`` on the horizontal centreline ``y = 0.5``), as printed (5 decimals;
positions rounded to 4 decimals, grid nodes ``j/128``).  They are a
reference to a few 1e-3, not an exact solution.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GHIA_RE100_U", "GHIA_RE100_V", "GHIA_RE100_X", "GHIA_RE100_Y", "ghia_re100"]

#: Table I, Re = 100: y positions on the vertical centreline x = 0.5 (top to bottom).
GHIA_RE100_Y: tuple[float, ...] = (
    1.0000, 0.9766, 0.9688, 0.9609, 0.9531, 0.8516, 0.7344, 0.6172, 0.5000,
    0.4531, 0.2813, 0.1719, 0.1016, 0.0703, 0.0625, 0.0547, 0.0000,
)
#: Table I, Re = 100: u(0.5, y).
GHIA_RE100_U: tuple[float, ...] = (
    1.00000, 0.84123, 0.78871, 0.73722, 0.68717, 0.23151, 0.00332, -0.13641, -0.20581,
    -0.21090, -0.15662, -0.10150, -0.06434, -0.04775, -0.04192, -0.03717, 0.00000,
)
#: Table II, Re = 100: x positions on the horizontal centreline y = 0.5 (right to left).
GHIA_RE100_X: tuple[float, ...] = (
    1.0000, 0.9688, 0.9609, 0.9531, 0.9453, 0.9063, 0.8594, 0.8047, 0.5000,
    0.2344, 0.2266, 0.1563, 0.0938, 0.0781, 0.0703, 0.0625, 0.0000,
)
#: Table II, Re = 100: v(x, 0.5).
GHIA_RE100_V: tuple[float, ...] = (
    0.00000, -0.05906, -0.07391, -0.08864, -0.10313, -0.16914, -0.22445, -0.24533, 0.05454,
    0.17527, 0.17507, 0.16077, 0.12317, 0.10890, 0.10091, 0.09233, 0.00000,
)


def ghia_re100() -> dict[str, np.ndarray]:
    """The Re = 100 tables as arrays sorted by position.

    Returns ``{"y": y, "u": u(0.5, y), "x": x, "v": v(x, 0.5)}`` (17 values each,
    increasing ``y`` and ``x``).  Evaluate a cavity solution at
    ``(0.5, y)`` and ``(x, 0.5)`` and compare.
    """
    y, u = np.array(GHIA_RE100_Y[::-1]), np.array(GHIA_RE100_U[::-1])
    x, v = np.array(GHIA_RE100_X[::-1]), np.array(GHIA_RE100_V[::-1])
    return {"y": y, "u": u, "x": x, "v": v}
