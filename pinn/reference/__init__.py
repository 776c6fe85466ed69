"""Exact and high-accuracy reference solutions, computed locally (no downloads).

* :func:`burgers` / :class:`Burgers` — viscous Burgers 1D by Cole–Hopf and
  Gauss–Hermite quadrature (error < 1e-14).
* :func:`allen_cahn`, :func:`kdv`, :func:`kuramoto_sivashinsky` — Fourier
  pseudo-spectral + ETDRK4, cached on disk (relative L2 errors 3e-9, 3e-11 and 1.6e-8),
  returned as :class:`PeriodicSolution`.
* :mod:`closed forms <pinn.reference.closed>` — heat, advection, wave 1D,
  Helmholtz, Poisson, Kovasznay, Taylor–Green: PDE and solution as
  expressions plus numpy.
* :func:`ghia_re100` — lid-driven cavity centreline data (Ghia et al. 1982).
* :class:`FileReference` — points and values from an NPZ file.
* :class:`FEMReference`, :class:`SpectralReference` — the FEM solution of a
  problem, or a spectral solver, computed on first use (:mod:`pinn.reference.lazy`).

Every reference is a callable ``points[N, d] -> {field: values[N]}`` in
float64, usable as ``Problem.reference``.
"""

from pinn.reference.burgers import NU, Burgers, burgers
from pinn.reference.closed import (
    CLOSED_FORMS,
    ClosedForm,
    advection,
    heat,
    helmholtz,
    kovasznay,
    poisson,
    taylor_green,
    wave1d,
)
from pinn.reference.file import FileReference
from pinn.reference.ghia import (
    GHIA_RE100_U,
    GHIA_RE100_V,
    GHIA_RE100_X,
    GHIA_RE100_Y,
    ghia_re100,
)
from pinn.reference.lazy import FEMReference, LazyReference, SpectralReference
from pinn.reference.spectral import (
    AllenCahn,
    KdV,
    KuramotoSivashinsky,
    PeriodicSolution,
    allen_cahn,
    etdrk4,
    etdrk4_coefficients,
    kdv,
    kuramoto_sivashinsky,
)

__all__ = [
    "NU", "Burgers", "burgers",
    "CLOSED_FORMS", "ClosedForm", "advection", "heat", "helmholtz", "kovasznay", "poisson",
    "taylor_green", "wave1d",
    "GHIA_RE100_U", "GHIA_RE100_V", "GHIA_RE100_X", "GHIA_RE100_Y", "ghia_re100",
    "FileReference", "FEMReference", "LazyReference", "SpectralReference",
    "AllenCahn", "KdV", "KuramotoSivashinsky", "PeriodicSolution", "allen_cahn", "etdrk4",
    "etdrk4_coefficients", "kdv", "kuramoto_sivashinsky",
]
