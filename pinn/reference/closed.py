"""Closed-form solutions, each with its PDE, as PDE-language expressions and numpy.

Every factory returns a :class:`ClosedForm`: the equations (residual
expressions, ``= 0``, sources included), the exact solution of each field as
an expression (``exact``, usable as ``Problem(exact=...)`` and for the
manufactured-solution check: substitute the fields by ``exact`` and the
residuals vanish identically), and an independent float64 numpy
implementation (``form(points) -> {field: values}``, usable as
``Problem.reference``).  Physical constants are fixed parameters
(``pinn.param``), so printed equations read as usual.

========================  ======================================================
factory                   solution
========================  ======================================================
:func:`heat`              ``sum_j A_j exp(-alpha pi^2 |k_j|^2 t) prod_i sin(k_ji pi x_i)``
:func:`advection`         ``sin(k (x - c t))``
:func:`wave1d`            ``sin(pi x) cos(c pi t) + 0.5 sin(4 pi x) cos(4 c pi t)``
:func:`helmholtz`         ``sin(a1 pi x) sin(a2 pi y)``, source from ``Δu + k^2 u = q``
:func:`poisson`           ``sin(a1 pi x) sin(a2 pi y)``, ``-Δu = (a1^2 + a2^2) pi^2 u``
:func:`kovasznay`         Kovasznay (1948) flow, steady Navier–Stokes, ``Re = 40``
:func:`taylor_green`      decaying 2-D Taylor–Green vortex, Navier–Stokes
========================  ======================================================

Accuracy: exact (the tests check residuals < 1e-9 in float64 and that the
numpy and expression forms agree to 1e-12).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as _dc_field
from types import MappingProxyType

import numpy as np

import pinn.dsl as P
from pinn.data import NotData, register
from pinn.dsl import expr as E
from pinn.dsl.calculus import substitute

__all__ = [
    "CLOSED_FORMS", "ClosedForm", "advection", "heat", "helmholtz", "kovasznay", "poisson",
    "taylor_green", "wave1d",
]


@register("reference")
@dataclass(frozen=True, eq=False)
class ClosedForm:
    """An exact solution with its PDE.

    ``coords`` are the problem's coordinates (spatial first, then ``t`` for
    evolution problems), ``spatial`` the spatial ones, ``bounds = (lo, hi)`` a
    box over ``coords`` where the solution is meant to be used (the usual
    benchmark domain), ``equations`` the residual expressions, ``exact`` the
    solution per field, ``numpy_fn`` a float64 implementation ``points[N, d]
    -> {field_name: values[N]}`` and ``params`` the constants used. ``recipe``:
    ``(factory name, arguments)`` of the factory in :data:`CLOSED_FORMS` that made it
    (set by the factories; what the run format stores, :mod:`pinn.serialize`).
    """

    name: str
    coords: tuple[E.Coord, ...]
    spatial: tuple[E.Coord, ...]
    equations: Mapping[str, E.Expr]
    exact: Mapping[E.Field, E.Expr]
    numpy_fn: Callable[[np.ndarray], dict[str, np.ndarray]]
    bounds: tuple[tuple[float, ...], tuple[float, ...]]
    params: Mapping[str, float] = _dc_field(default_factory=dict)
    recipe: tuple[str, Mapping] | None = None

    def __post_init__(self):
        object.__setattr__(self, "equations", MappingProxyType(dict(self.equations)))
        object.__setattr__(self, "exact", MappingProxyType(dict(self.exact)))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def fields(self) -> tuple[E.Field, ...]:
        return tuple(self.exact)

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.exact)

    @property
    def time(self) -> E.Coord | None:
        return self.coords[-1] if len(self.coords) > len(self.spatial) else None

    def to_data(self) -> dict:
        """The factory and its arguments (the run format, :mod:`pinn.serialize`); a form
        built by hand holds a Python function and is not data."""
        if self.recipe is None:
            raise NotData(f"the closed form {self.name!r} was built by hand (its numpy_fn is "
                          f"Python code); make it with one of {', '.join(CLOSED_FORMS)}")
        factory, arguments = self.recipe
        return {"factory": factory, "arguments": dict(arguments)}

    @classmethod
    def from_data(cls, arguments: Mapping) -> ClosedForm:
        factory = arguments.get("factory")
        if factory not in CLOSED_FORMS:
            raise ValueError(f"unknown closed form {factory!r}; known: "
                             f"{', '.join(CLOSED_FORMS)}")
        return CLOSED_FORMS[factory](**dict(arguments.get("arguments") or {}))

    def residuals(self) -> dict[str, E.Expr]:
        """The equations with every field replaced by its exact solution (identically 0)."""
        return {k: substitute(v, self.exact) for k, v in self.equations.items()}

    def __call__(self, points) -> dict[str, np.ndarray]:
        p = np.asarray(points, dtype=np.float64)
        d = len(self.coords)
        if p.ndim != 2 or p.shape[1] != d:
            names = ", ".join(c.name for c in self.coords)
            raise ValueError(f"{self.name}: takes points[N, {d}] with columns ({names}), "
                             f"got shape {p.shape}")
        return self.numpy_fn(p)

    def __repr__(self) -> str:
        eqs = "; ".join(f"{k}: {v} = 0" for k, v in self.equations.items())
        sol = "; ".join(f"{f.name} = {v}" for f, v in self.exact.items())
        return f"ClosedForm({self.name!r}, {eqs}, exact: {sol})"


def _recorded(factory: Callable[..., ClosedForm]) -> Callable[..., ClosedForm]:
    """``factory``, with the form it returns recording ``(name, arguments)`` as its recipe."""
    signature = inspect.signature(factory)

    @functools.wraps(factory)
    def make(*args, **kwargs) -> ClosedForm:
        form = factory(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return replace(form, recipe=(factory.__name__, dict(bound.arguments)))

    return make


def _kpi(k: int) -> E.Expr:
    """``k*pi``, written ``pi`` when ``k == 1``."""
    return P.pi if k == 1 else k * P.pi


def _check_int_modes(modes, dim: int, what: str) -> tuple[tuple[int, ...], ...]:
    out = []
    for mode in modes:
        mode = tuple(mode)
        if len(mode) != dim or not all(isinstance(k, (int, np.integer)) and k > 0 for k in mode):
            raise ValueError(f"{what}: each mode must be {dim} positive integers, got {mode!r}")
        out.append(tuple(int(k) for k in mode))
    if not out:
        raise ValueError(f"{what}: give at least one mode")
    return tuple(out)


# ---------------------------------------------------------------------------
# scalar linear problems


@_recorded
def heat(dim: int = 2, alpha: float = 0.05, modes: Sequence[Sequence[int]] = ((1, 1),),
         amplitudes: Sequence[float] | None = None, t_end: float = 1.0) -> ClosedForm:
    """Heat equation ``u_t - alpha Δu = 0`` on ``[0, 1]^dim``, zero Dirichlet walls.

    ``u = sum_j A_j exp(-alpha pi^2 |k_j|^2 t) prod_i sin(k_ji pi x_i)``.  The
    default is the 2-D single mode ``exp(-2 alpha pi^2 t) sin(pi x) sin(pi y)``.
    """
    if dim not in (1, 2, 3):
        raise ValueError(f"heat: dim must be 1, 2 or 3, got {dim!r}")
    if modes == ((1, 1),) and dim != 2:
        modes = ((1,) * dim,)
    modes = _check_int_modes(modes, dim, "heat")
    amps = tuple(float(a) for a in (amplitudes or (1.0,) * len(modes)))
    if len(amps) != len(modes):
        raise ValueError(f"heat: {len(amps)} amplitudes for {len(modes)} modes")
    spatial = P.coords(["x", "y", "z"][:dim])
    spatial = (spatial,) if isinstance(spatial, E.Coord) else spatial
    t = P.coords("t")
    u = P.field("u")
    a = P.param("alpha", alpha)
    sol = None
    for amp, mode in zip(amps, modes, strict=True):
        k2 = sum(k * k for k in mode)
        term = P.exp((-a if k2 == 1 else -k2 * a) * P.pi**2 * t)
        for k, x in zip(mode, spatial, strict=True):
            term = term * P.sin(_kpi(k) * x)
        term = term if amp == 1.0 else amp * term
        sol = term if sol is None else sol + term

    def fn(p):
        out = np.zeros(p.shape[0])
        for amp, mode in zip(amps, modes, strict=True):
            term = amp * np.exp(-alpha * np.pi**2 * sum(k * k for k in mode) * p[:, -1])
            for i, k in enumerate(mode):
                term = term * np.sin(k * np.pi * p[:, i])
            out += term
        return {"u": out}

    return ClosedForm(
        name=f"heat{dim}d", coords=(*spatial, t), spatial=spatial,
        equations={"heat": P.D(u, t) - a * P.laplacian(u, spatial)}, exact={u: sol},
        numpy_fn=fn, bounds=((0.0,) * dim + (0.0,), (1.0,) * dim + (float(t_end),)),
        params={"alpha": float(alpha)},
    )


@_recorded
def advection(c: float = 1.0, k: int = 1, t_end: float = 1.0) -> ClosedForm:
    """Linear advection ``u_t + c u_x = 0`` on ``[0, 2 pi]`` periodic, ``u = sin(k (x - c t))``.

    ``c = 80`` (with ``u0 = sin x``) is the hard case of Wang, Sankaran & Perdikaris
    (JAX-PI, 2023).
    """
    if not (isinstance(k, (int, np.integer)) and k > 0):
        raise ValueError(f"advection: k must be a positive integer (periodic on [0, 2pi]), "
                         f"got {k!r}")
    x, t = P.coords("x t")
    u = P.field("u")
    cp = P.param("c", c)
    sol = P.sin(x - cp * t) if k == 1 else P.sin(k * (x - cp * t))

    def fn(p):
        return {"u": np.sin(k * (p[:, 0] - c * p[:, 1]))}

    return ClosedForm(
        name="advection", coords=(x, t), spatial=(x,),
        equations={"advection": P.D(u, t) + cp * P.D(u, x)}, exact={u: sol}, numpy_fn=fn,
        bounds=((0.0, 0.0), (2 * np.pi, float(t_end))), params={"c": float(c)},
    )


@_recorded
def wave1d(c: float = 2.0, t_end: float = 1.0) -> ClosedForm:
    """Wave equation ``u_tt - c^2 u_xx = 0`` on ``[0, 1]``, fixed ends, at rest initially.

    ``u = sin(pi x) cos(c pi t) + 0.5 sin(4 pi x) cos(4 c pi t)``; with ``c = 2`` this
    is PINNacle's Wave1D-C (Hao et al., NeurIPS 2024):
    ``sin(pi x) cos(2 pi t) + 0.5 sin(4 pi x) cos(8 pi t)``.
    """
    x, t = P.coords("x t")
    u = P.field("u")
    cp = P.param("c", c)
    sol = (P.sin(P.pi * x) * P.cos(cp * P.pi * t)
           + 0.5 * P.sin(4 * P.pi * x) * P.cos(4 * cp * P.pi * t))

    def fn(p):
        x_, t_ = p[:, 0], p[:, 1]
        return {"u": np.sin(np.pi * x_) * np.cos(c * np.pi * t_)
                + 0.5 * np.sin(4 * np.pi * x_) * np.cos(4 * c * np.pi * t_)}

    return ClosedForm(
        name="wave1d", coords=(x, t), spatial=(x,),
        equations={"wave": P.D(u, t, 2) - cp**2 * P.D(u, x, 2)}, exact={u: sol}, numpy_fn=fn,
        bounds=((0.0, 0.0), (1.0, float(t_end))), params={"c": float(c)},
    )


@_recorded
def helmholtz(k: float = 1.0, a1: int = 1, a2: int = 4) -> ClosedForm:
    """Helmholtz ``Δu + k^2 u - q = 0`` on ``[-1, 1]^2``, ``u = 0`` on the boundary.

    ``u = sin(a1 pi x) sin(a2 pi y)`` and ``q = (k^2 - (a1^2 + a2^2) pi^2) u``
    (the source is part of the equation).  Defaults ``k = 1, a1 = 1, a2 = 4``
    (Wang, Teng & Perdikaris, SIAM J. Sci. Comput. 43 (2021) A3055).
    """
    _check_int_modes([(a1, a2)], 2, "helmholtz")
    x, y = P.coords("x y")
    u = P.field("u")
    kp = P.param("k", k)
    shape = P.sin(_kpi(a1) * x) * P.sin(_kpi(a2) * y)
    q = (kp**2 - (a1**2 + a2**2) * P.pi**2) * shape

    def fn(p):
        return {"u": np.sin(a1 * np.pi * p[:, 0]) * np.sin(a2 * np.pi * p[:, 1])}

    return ClosedForm(
        name="helmholtz", coords=(x, y), spatial=(x, y),
        equations={"helmholtz": P.laplacian(u, (x, y)) + kp**2 * u - q}, exact={u: shape},
        numpy_fn=fn, bounds=((-1.0, -1.0), (1.0, 1.0)), params={"k": float(k)},
    )


@_recorded
def poisson(a1: int = 1, a2: int = 1) -> ClosedForm:
    """Poisson ``-Δu - f = 0`` on ``[0, 1]^2``, ``u = 0`` on the boundary.

    ``u = sin(a1 pi x) sin(a2 pi y)``, ``f = (a1^2 + a2^2) pi^2 u`` (default
    ``f = 2 pi^2 sin(pi x) sin(pi y)``).
    """
    _check_int_modes([(a1, a2)], 2, "poisson")
    x, y = P.coords("x y")
    u = P.field("u")
    shape = P.sin(_kpi(a1) * x) * P.sin(_kpi(a2) * y)
    f = (a1**2 + a2**2) * P.pi**2 * shape

    def fn(p):
        return {"u": np.sin(a1 * np.pi * p[:, 0]) * np.sin(a2 * np.pi * p[:, 1])}

    return ClosedForm(
        name="poisson", coords=(x, y), spatial=(x, y),
        equations={"poisson": -P.laplacian(u, (x, y)) - f}, exact={u: shape},
        numpy_fn=fn, bounds=((0.0, 0.0), (1.0, 1.0)),
    )


# ---------------------------------------------------------------------------
# Navier–Stokes


def _navier_stokes(u, v, p, spatial, nu, time=None) -> dict[str, E.Expr]:
    """Incompressible Navier–Stokes (density 1) residuals, written as usual."""
    x, y = spatial
    mx = P.D(u, time) + u * P.D(u, x) if time is not None else u * P.D(u, x)
    my = P.D(v, time) + u * P.D(v, x) if time is not None else u * P.D(v, x)
    mx = mx + v * P.D(u, y) + P.D(p, x) - nu * P.laplacian(u, spatial)
    my = my + v * P.D(v, y) + P.D(p, y) - nu * P.laplacian(v, spatial)
    return {"momentum_x": mx, "momentum_y": my, "continuity": P.D(u, x) + P.D(v, y)}


@_recorded
def kovasznay(re: float = 40.0) -> ClosedForm:
    """Kovasznay flow: steady incompressible Navier–Stokes, ``nu = 1/Re``.

    ``u = 1 - exp(lam x) cos(2 pi y)``, ``v = lam / (2 pi) exp(lam x) sin(2 pi y)``,
    ``p = (1 - exp(2 lam x)) / 2`` with ``lam = Re/2 - sqrt(Re^2/4 + 4 pi^2)``
    (Kovasznay, Proc. Camb. Phil. Soc. 44 (1948) 58); domain ``[-0.5, 1] x [-0.5, 1.5]``.
    """
    if not re > 0:
        raise ValueError(f"kovasznay: the Reynolds number must be > 0, got {re!r}")
    x, y = P.coords("x y")
    u, v, p = P.fields("u v p")
    rp = P.param("Re", re)
    lam = rp / 2 - P.sqrt(rp**2 / 4 + 4 * P.pi**2)
    ex = P.exp(lam * x)
    exact = {u: 1 - ex * P.cos(2 * P.pi * y),
             v: lam / (2 * P.pi) * ex * P.sin(2 * P.pi * y),
             p: (1 - P.exp(2 * lam * x)) / 2}
    lam_f = re / 2 - np.sqrt(re**2 / 4 + 4 * np.pi**2)

    def fn(pts):
        e = np.exp(lam_f * pts[:, 0])
        yy = 2 * np.pi * pts[:, 1]
        return {"u": 1 - e * np.cos(yy), "v": lam_f / (2 * np.pi) * e * np.sin(yy),
                "p": 0.5 * (1 - e * e)}

    return ClosedForm(
        name="kovasznay", coords=(x, y), spatial=(x, y),
        equations=_navier_stokes(u, v, p, (x, y), 1 / rp), exact=exact, numpy_fn=fn,
        bounds=((-0.5, -0.5), (1.0, 1.5)), params={"Re": float(re), "lambda": float(lam_f)},
    )


@_recorded
def taylor_green(nu: float = 0.01, t_end: float = 1.0) -> ClosedForm:
    """Decaying 2-D Taylor–Green vortex, incompressible Navier–Stokes (density 1).

    ``u = cos x sin y F``, ``v = -sin x cos y F``, ``p = -(cos 2x + cos 2y) F^2 / 4``
    with ``F = exp(-2 nu t)``, periodic on ``[0, 2 pi]^2``.
    """
    if not nu > 0:
        raise ValueError(f"taylor_green: viscosity nu must be > 0, got {nu!r}")
    x, y, t = P.coords("x y t")
    u, v, p = P.fields("u v p")
    nup = P.param("nu", nu)
    F = P.exp(-2 * nup * t)
    exact = {u: P.cos(x) * P.sin(y) * F,
             v: -P.sin(x) * P.cos(y) * F,
             p: -(P.cos(2 * x) + P.cos(2 * y)) / 4 * P.exp(-4 * nup * t)}

    def fn(pts):
        x_, y_, t_ = pts[:, 0], pts[:, 1], pts[:, 2]
        f = np.exp(-2 * nu * t_)
        return {"u": np.cos(x_) * np.sin(y_) * f, "v": -np.sin(x_) * np.cos(y_) * f,
                "p": -0.25 * (np.cos(2 * x_) + np.cos(2 * y_)) * f * f}

    return ClosedForm(
        name="taylor_green", coords=(x, y, t), spatial=(x, y),
        equations=_navier_stokes(u, v, p, (x, y), nup, time=t), exact=exact,
        numpy_fn=fn, bounds=((0.0, 0.0, 0.0), (2 * np.pi, 2 * np.pi, float(t_end))),
        params={"nu": float(nu)},
    )


#: name -> factory (default arguments give the standard benchmark case).
CLOSED_FORMS: dict[str, Callable[..., ClosedForm]] = {
    "heat": heat, "advection": advection, "wave1d": wave1d, "helmholtz": helmholtz,
    "poisson": poisson, "kovasznay": kovasznay, "taylor_green": taylor_green,
}
