"""Exact solution of the viscous Burgers equation by the Cole–Hopf transformation.

    u_t + u u_x = nu u_xx,   u(x, 0) = -sin(pi x),   x in R (periodic on [-1, 1])

Cole–Hopf (``u = -2 nu phi_x / phi`` with ``phi`` solving the heat equation)
and one integration by parts give (Basdevant et al., Comput. Fluids 14 (1986) 23)

    u(x, t) = - ∫ sin(pi y) f(y) G(x - y) dy / ∫ f(y) G(x - y) dy,
    f(y) = exp(-cos(pi y) / (2 pi nu)),   G(s) = exp(-s² / (4 nu t)).

With ``y = x - sqrt(4 nu t) z`` both integrals are Gauss–Hermite integrals in
``z``.  The exponents ``log w_i - cos(pi y_i) / (2 pi nu)`` span ~1/(pi nu) = 100
for nu = 0.01/pi, so they are shifted by their maximum per point before
``exp`` (no overflow for any nu); nodes whose weight cannot matter (more than
``1/(pi nu) + 45`` below the largest, i.e. below 1e-19 relative) are dropped.

Accuracy (measured, tests/test_reference_burgers.py): agrees with adaptive
quadrature of the same integrals (scipy.integrate.quad, rel. tol. 1e-13)
to < 2e-15 at points across [-1, 1] x [0, 1], including the shock at x = 0;
200 nodes are already converged (100 nodes give the same digits).  It
reproduces Basdevant et al.'s max |u_x(0, t)| = 152.00516 at t = 1.6037/pi.
``t = 0`` returns ``-sin(pi x)`` exactly.  Speed: about 0.6-0.9 s (CPU) per
10^5 points.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pinn.data import register

NU = 0.01 / np.pi

__all__ = ["NU", "Burgers", "burgers"]


@lru_cache(maxsize=8)
def _nodes(n: int, nu: float) -> tuple[np.ndarray, np.ndarray]:
    z, w = np.polynomial.hermite.hermgauss(n)
    logw = np.log(w)
    keep = logw >= logw.max() - (1.0 / (np.pi * nu) + 45.0)
    return z[keep], logw[keep]


def burgers(x, t, nu: float = NU, *, n_nodes: int = 200, chunk: int = 4096) -> np.ndarray:
    """``u(x, t)`` of viscous Burgers with ``u0 = -sin(pi x)`` (float64, broadcast).

    ``x`` and ``t`` are array-likes that broadcast together; ``t >= 0``.
    ``nu`` is the viscosity (default 0.01/pi), ``n_nodes`` the Gauss–Hermite
    order, ``chunk`` how many points are processed at once (memory
    ``chunk * n_nodes`` doubles).
    """
    if not nu > 0:
        raise ValueError(f"burgers: viscosity nu must be > 0, got {nu!r}")
    if int(n_nodes) < 2:
        raise ValueError(f"burgers: n_nodes must be >= 2, got {n_nodes!r}")
    x, t = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(t, dtype=np.float64))
    shape = x.shape
    x, t = x.ravel(), t.ravel()
    if np.any(t < 0) or not np.all(np.isfinite(t)) or not np.all(np.isfinite(x)):
        bad = t[(t < 0) | ~np.isfinite(t)]
        raise ValueError(
            "burgers: times must be finite and >= 0 and x finite"
            + (f"; got t = {bad[:3]}" if bad.size else "; got a non-finite x")
        )
    z, logw = _nodes(int(n_nodes), float(nu))
    out = np.empty_like(x)
    c = 1.0 / (2.0 * np.pi * nu)
    step = max(1, int(chunk))
    for i in range(0, x.size, step):
        xs, ts = x[i:i + step], t[i:i + step]
        y = xs[:, None] - np.sqrt(4.0 * nu * ts)[:, None] * z[None, :]
        py = np.pi * y
        a = logw[None, :] - c * np.cos(py)
        a -= a.max(axis=1, keepdims=True)
        e = np.exp(a)
        out[i:i + step] = -np.einsum("ij,ij->i", np.sin(py), e) / e.sum(axis=1)
    zero = t == 0
    out[zero] = -np.sin(np.pi * x[zero])
    return out.reshape(shape)


@register("reference")
@dataclass(frozen=True)
class Burgers:
    """Burgers 1D reference as a ``Problem.reference``: ``ref(points[N, 2]) -> {"u": u[N]}``.

    Columns of ``points`` are ``(x, t)``.  See :func:`burgers` for the
    method and its accuracy (< 1e-14 against adaptive quadrature).  ``nu=None``: the
    viscosity is a ranged parameter (a parametric problem), read from a third column
    ``(x, t, nu)``.
    """

    nu: float | None = NU
    n_nodes: int = 200
    field: str = "u"

    def u(self, x, t) -> np.ndarray:
        return burgers(x, t, self.nu, n_nodes=self.n_nodes)

    def to_data(self) -> dict:
        """The constructor's arguments (the run format, :mod:`pinn.serialize`)."""
        return {"nu": self.nu, "n_nodes": self.n_nodes, "field": self.field}

    def __call__(self, points) -> dict[str, np.ndarray]:
        p = np.asarray(points, dtype=np.float64)
        cols = 2 if self.nu is not None else 3
        if p.ndim != 2 or p.shape[1] != cols:
            names = "(x, t)" if cols == 2 else "(x, t, nu)"
            raise ValueError(f"Burgers reference takes points[N, {cols}] with columns {names}, "
                             f"got shape {p.shape}")
        if self.nu is not None:
            return {self.field: self.u(p[:, 0], p[:, 1])}
        out = np.empty(p.shape[0])
        values, which = np.unique(p[:, 2], return_inverse=True)
        for i, nu in enumerate(values):  # one quadrature per viscosity (a grid per value)
            sel = which == i
            out[sel] = burgers(p[sel, 0], p[sel, 1], float(nu), n_nodes=self.n_nodes)
        return {self.field: out}
