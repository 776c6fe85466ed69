"""Primitive shapes: Interval, Rectangle, Box, Disk, Ball, Ellipse.

Boundary part names:

- ``Interval(a, b)``: ``left`` (x = a), ``right`` (x = b);
- ``Rectangle(lo, hi)``: ``left``/``right`` (x = lo/hi), ``bottom``/``top`` (y = lo/hi);
- ``Box(lo, hi)``: ``left``/``right`` (x), ``bottom``/``top`` (y), ``front``/``back``
  (z = lo / z = hi); in 4 or more dimensions ``x1_min``/``x1_max``, ...,
  ``xN_min``/``xN_max`` (the default coordinate names there are ``x1``, ..., ``xN``);
- ``Disk``: ``circle``; ``Ball``: ``sphere`` (any dimension >= 3); ``Ellipse``: ``ellipse``.

``Box`` and ``Ball`` take any dimension: in one and two dimensions they give the
``Interval`` / ``Rectangle`` and the ``Interval`` / ``Disk`` of the same set (with those
shapes' part names).  Points on the N-sphere come from the unit cube by a
measure-preserving map: the last coordinate ``z`` by the inverse of its distribution
(density ``(1 - z^2)^((N-3)/2)``, tabulated from the regularised incomplete beta
function), the others by the same map on the (N-1)-sphere scaled by ``sqrt(1 - z^2)``.

Signed distances are exact (the ellipse's by bisection on Eberly's
equation, to machine precision), as are measures (the ellipse perimeter by
the complete elliptic integral of the second kind).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from pinn.data import register
from pinn.geometry._core import Piece
from pinn.geometry.base import Shape
from pinn.geometry.parametric import Bound, Parametric, plain, ranged_in

__all__ = ["Interval", "Rectangle", "Box", "Disk", "Ball", "Ellipse"]

_FACE_NAMES = (("left", "right"), ("bottom", "top"), ("front", "back"))


def face_names(dim: int) -> tuple[tuple[str, str], ...]:
    """``(lo, hi)`` part names of each axis of a ``dim``-dimensional box."""
    if dim <= len(_FACE_NAMES):
        return _FACE_NAMES[:dim]
    return tuple((f"x{i + 1}_min", f"x{i + 1}_max") for i in range(dim))


def _vec(value, dim: int | None, what: str, cls: str) -> tuple[float, ...]:
    value = plain(value, f"{cls}: {what}")
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.ndim != 1 or (dim is not None and arr.size != dim):
        want = f"{dim} numbers" if dim is not None else "a list of numbers"
        raise ValueError(f"{cls}: {what} must be {want}, got {value!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{cls}: {what} must be finite, got {value!r}")
    return tuple(float(v) for v in arr)


def _positive(value, what: str, cls: str) -> float:
    v = float(plain(value, f"{cls}: {what}"))
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{cls}: {what} must be a positive number, got {value!r}")
    return v


def _norm(v):
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _unit(v):
    r = _norm(v)[..., None]
    return v / jnp.where(r > 0, r, 1.0)


# ----------------------------------------------------------------- boxes ----
class _BoxLike(Shape):
    """Axis-aligned boxes in any dimension (exact sdf, faces as parts)."""

    @property
    def _lo(self):
        return np.asarray(self.lo, np.float64)

    @property
    def _hi(self):
        return np.asarray(self.hi, np.float64)

    def _validate(self, dim: int, cls: str):
        lo = _vec(self.lo, dim, "lo", cls)
        hi = _vec(self.hi, dim, "hi", cls)
        for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
            if not a < b:
                raise ValueError(f"{cls}: need lo < hi on every axis, got lo={lo}, hi={hi} "
                                 f"(axis {i})")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def dim(self) -> int:
        return len(self.lo)

    @property
    def bounds(self):
        return self._lo.copy(), self._hi.copy()

    @property
    def measure(self) -> float:
        return float(np.prod(self._hi - self._lo))

    def _sdf(self, x):
        c = (self._lo + self._hi) / 2
        h = (self._hi - self._lo) / 2
        q = jnp.abs(x - c) - h
        outside = _norm(jnp.maximum(q, 0.0))
        inside = jnp.minimum(jnp.max(q, axis=-1), 0.0)
        return outside + inside

    def _outward(self, x):
        c = (self._lo + self._hi) / 2
        h = (self._hi - self._lo) / 2
        q = jnp.abs(x - c) - h
        i = jnp.argmax(q, axis=-1)
        s = jnp.where(jnp.take_along_axis(x - c, i[..., None], -1) >= 0, 1.0, -1.0)
        return jax.nn.one_hot(i, self.dim, dtype=x.dtype) * s

    def _interior_pieces(self):
        lo, hi = self._lo, self._hi
        return [Piece(None, self.measure, self.dim, lambda u: lo + u * (hi - lo),
                      affine=(lo, np.diag(hi - lo), np.zeros(self.dim)))]

    def _boundary_pieces(self):
        lo, hi, d = self._lo, self._hi, self.dim
        names = face_names(d)
        pieces = []
        for axis in range(d):
            others = [j for j in range(d) if j != axis]
            area = float(np.prod([hi[j] - lo[j] for j in others])) if others else 1.0
            for side, value in ((0, lo[axis]), (1, hi[axis])):
                origin = lo.copy()
                origin[axis] = value
                axes = np.zeros((d - 1, d))
                for k, j in enumerate(others):
                    axes[k, j] = hi[j] - lo[j]
                normal = np.zeros(d)
                normal[axis] = 1.0 if side else -1.0
                pieces.append(Piece(
                    names[axis][side], area, d - 1,
                    _face_map(lo, hi, axis, value, others),
                    normal=_face_normal(d, axis, normal[axis]),
                    on=_face_on(lo, hi, axis, value, others),
                    affine=(origin, axes, normal),
                ))
        return pieces

    def face(self, name: str) -> tuple[int, str]:
        """``(axis, "lo" | "hi")`` of the face called ``name``."""
        for axis, pair in enumerate(face_names(self.dim)):
            if name in pair:
                return axis, ("lo", "hi")[pair.index(name)]
        raise ValueError(f"{self!r} has no face {name!r}; its faces are "
                         f"{', '.join(self.boundary_parts)}")

    def periodic_shift(self, pair) -> np.ndarray:
        """Translation taking part ``pair[0]`` onto the opposite part ``pair[1]``."""
        a, b = pair
        for axis in range(self.dim):
            lo_name, hi_name = face_names(self.dim)[axis]
            if (a, b) in ((lo_name, hi_name), (hi_name, lo_name)):
                shift = np.zeros(self.dim)
                shift[axis] = (self._hi[axis] - self._lo[axis]) * (1 if a == lo_name else -1)
                return shift
        raise ValueError(
            f"parts {a!r} and {b!r} of {self!r} are not opposite faces; periodic pairs are "
            f"{list(face_names(self.dim))}"
        )


def _face_map(lo, hi, axis, value, others):
    d = len(lo)

    def f(loc):
        cols = [None] * d
        cols[axis] = jnp.full(loc.shape[:1], value, loc.dtype)
        for k, j in enumerate(others):
            cols[j] = lo[j] + loc[:, k] * (hi[j] - lo[j])
        return jnp.stack(cols, axis=-1)

    return f


def _face_normal(d, axis, sign):
    n = np.zeros(d)
    n[axis] = sign

    def f(x):
        return jnp.broadcast_to(jnp.asarray(n, x.dtype), x.shape)

    return f


def _face_on(lo, hi, axis, value, others):
    def f(x, tol):
        m = jnp.abs(x[..., axis] - value) <= tol
        for j in others:
            m = m & (x[..., j] >= lo[j] - tol) & (x[..., j] <= hi[j] + tol)
        return m

    return f


@register("domain")
@dataclass(frozen=True)
class Interval(_BoxLike):
    """The interval ``[a, b]`` (parts ``left``, ``right``)."""

    a: float
    b: float

    def __new__(cls, a=None, b=None):
        if ranged_in(a, b):
            return _ParametricInterval(a, b)
        return super().__new__(cls)

    def __post_init__(self):
        a, b = float(plain(self.a, "Interval: a")), float(plain(self.b, "Interval: b"))
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise ValueError(f"Interval needs finite a < b, got a={self.a!r}, b={self.b!r}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @property
    def lo(self):
        return (self.a,)

    @property
    def hi(self):
        return (self.b,)

    @property
    def dim(self) -> int:
        return 1


@register("domain")
@dataclass(frozen=True)
class Rectangle(_BoxLike):
    """The rectangle ``[lo_x, hi_x] x [lo_y, hi_y]`` (parts left, right, bottom, top)."""

    lo: tuple[float, float]
    hi: tuple[float, float]

    def __new__(cls, lo=None, hi=None):
        if ranged_in(lo, hi):
            return _ParametricRectangle(lo, hi)
        return super().__new__(cls)

    def __post_init__(self):
        if np.size(plain(self.lo, "Rectangle: lo")) == 3:
            raise ValueError("Rectangle is 2-D; use Box(lo, hi) for a 3-D box")
        self._validate(2, "Rectangle")


@register("domain")
@dataclass(frozen=True)
class Box(_BoxLike):
    """The box ``[lo, hi]`` in 3 or more dimensions: parts left/right (x), bottom/top (y),
    front/back (z) in 3-D; ``x1_min``/``x1_max``, ..., ``xN_min``/``xN_max`` beyond.

    ``Box(lo, hi)`` with one or two numbers per corner gives the ``Interval`` or the
    ``Rectangle``.
    """

    lo: tuple[float, ...]
    hi: tuple[float, ...]

    def __new__(cls, lo=None, hi=None):
        if ranged_in(lo, hi):
            lo, hi = tuple(lo), tuple(hi)
            if len(lo) == 1 and len(hi) == 1:
                return _ParametricInterval(lo[0], hi[0])
            if len(lo) == 2:
                return _ParametricRectangle(lo, hi)
            return _ParametricBox(lo, hi)
        lo, hi = plain(lo, "Box: lo"), plain(hi, "Box: hi")
        n = np.size(lo)
        if n == 1 and np.size(hi) == 1:
            return Interval(*_vec(lo, 1, "lo", "Box"), *_vec(hi, 1, "hi", "Box"))
        if n == 2:
            return Rectangle(lo, hi)
        return super().__new__(cls)

    def __post_init__(self):
        dim = len(_vec(self.lo, None, "lo", "Box"))
        if dim < 1:
            raise ValueError(f"Box needs at least one coordinate per corner, got lo={self.lo!r}")
        self._validate(dim, "Box")


# ----------------------------------------------------------------- balls ----
class _Round(Shape):
    @property
    def dim(self) -> int:
        return len(self.center)

    @property
    def bounds(self):
        c = np.asarray(self.center)
        return c - self.radius, c + self.radius

    def _sdf(self, x):
        return _norm(x - np.asarray(self.center)) - self.radius

    def _outward(self, x):
        return _unit(x - np.asarray(self.center))

    def _on(self, x, tol):
        return jnp.abs(_norm(x - np.asarray(self.center)) - self.radius) <= tol


@register("domain")
@dataclass(frozen=True)
class Disk(_Round):
    """The disk ``|x - center| <= radius`` (part ``circle``)."""

    center: tuple[float, float]
    radius: float

    def __new__(cls, center=None, radius=None):
        if ranged_in(center, radius):
            return _ParametricDisk(center, radius)
        return super().__new__(cls)

    def __post_init__(self):
        if np.size(plain(self.center, "Disk: center")) == 3:
            raise ValueError("Disk is 2-D; use Ball(center, radius) in 3-D")
        object.__setattr__(self, "center", _vec(self.center, 2, "center", "Disk"))
        object.__setattr__(self, "radius", _positive(self.radius, "radius", "Disk"))

    @property
    def measure(self) -> float:
        return math.pi * self.radius**2

    def _interior_pieces(self):
        c, r = np.asarray(self.center), self.radius

        def f(u):
            rho = r * jnp.sqrt(u[:, 0])
            th = 2 * jnp.pi * u[:, 1]
            return c + jnp.stack([rho * jnp.cos(th), rho * jnp.sin(th)], -1)

        return [Piece(None, self.measure, 2, f)]

    def _boundary_pieces(self):
        c, r = np.asarray(self.center), self.radius

        def f(loc):
            th = 2 * jnp.pi * loc[:, 0]
            return c + r * jnp.stack([jnp.cos(th), jnp.sin(th)], -1)

        return [Piece("circle", 2 * math.pi * r, 1, f, normal=self._outward, on=self._on)]


@register("domain")
@dataclass(frozen=True)
class Ball(_Round):
    """The ball ``|x - center| <= radius`` in 3 or more dimensions (part ``sphere``).

    ``Ball(center, radius)`` with a center of one or two numbers gives the ``Interval``
    or the ``Disk``.
    """

    center: tuple[float, ...]
    radius: float

    def __new__(cls, center=None, radius=None):
        if ranged_in(center, radius):
            center = tuple(center)
            if len(center) == 1:
                return _ParametricInterval(center[0] - radius, center[0] + radius)
            if len(center) == 2:
                return _ParametricDisk(center, radius)
            return _ParametricBall(center, radius)
        center = plain(center, "Ball: center")
        n = np.size(center)
        if n == 1:
            (c,) = _vec(center, 1, "center", "Ball")
            r = _positive(radius, "radius", "Ball")
            return Interval(c - r, c + r)
        if n == 2:
            return Disk(center, radius)
        return super().__new__(cls)

    def __post_init__(self):
        center = _vec(self.center, None, "center", "Ball")
        if not center:
            raise ValueError("Ball needs a center of at least one coordinate, got []")
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "radius", _positive(self.radius, "radius", "Ball"))

    @property
    def measure(self) -> float:
        d = self.dim
        return math.pi ** (d / 2) / math.gamma(d / 2 + 1) * self.radius**d

    @staticmethod
    def _direction(a, b):
        z = 1 - 2 * a
        rho = jnp.sqrt(jnp.clip(1 - z * z, 0.0, 1.0))
        ph = 2 * jnp.pi * b
        return jnp.stack([rho * jnp.cos(ph), rho * jnp.sin(ph), z], -1)

    def _interior_pieces(self):
        c, r, d = np.asarray(self.center), self.radius, self.dim

        def f(u):
            rho = r * (jnp.cbrt(u[:, 0]) if d == 3 else u[:, 0] ** (1.0 / d))
            return c + rho[:, None] * sphere_direction(u[:, 1:], d)

        return [Piece(None, self.measure, d, f)]

    def _boundary_pieces(self):
        c, r, d = np.asarray(self.center), self.radius, self.dim

        def f(loc):
            return c + r * sphere_direction(loc, d)

        return [Piece("sphere", d * self.measure / r, d - 1, f, normal=self._outward,
                      on=self._on)]


def sphere_direction(u, dim: int):
    """Unit vectors ``[m, dim]`` from unit-cube points ``u[m, dim - 1]``, uniform on the
    sphere when ``u`` is uniform (``dim >= 2``; see the module docstring)."""
    if dim == 2:
        th = 2 * jnp.pi * u[:, 0]
        return jnp.stack([jnp.cos(th), jnp.sin(th)], -1)
    if dim == 3:
        return Ball._direction(u[:, 0], u[:, 1])
    probs, zs = _last_coordinate_table(dim)
    z = jnp.interp(u[:, 0], jnp.asarray(probs, u.dtype), jnp.asarray(zs, u.dtype))
    rho = jnp.sqrt(jnp.clip(1 - z * z, 0.0, 1.0))
    return jnp.concatenate([rho[:, None] * sphere_direction(u[:, 1:], dim - 1), z[:, None]],
                           axis=-1)


@functools.lru_cache(maxsize=32)
def _last_coordinate_table(dim: int, k: int = 8193):
    """``(P(Z <= z), z)`` for the last coordinate ``Z`` of a uniform point on the unit
    ``(dim - 1)``-sphere: ``(1 + Z) / 2 ~ Beta(a, a)``, ``a = (dim - 1) / 2``."""
    from scipy.special import betainc

    t = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, k))  # nodes crowd at the ends
    a = (dim - 1) / 2
    return betainc(a, a, t), 2 * t - 1


# --------------------------------------------------------------- ellipse ----
@functools.lru_cache(maxsize=64)
def _arc_table(a: float, b: float, k: int = 4097):
    """(s in [0, 1], theta) with s the normalised arc length of (a cos t, b sin t)."""
    t = np.linspace(0.0, 2 * np.pi, 64 * (k - 1) + 1)
    speed = np.hypot(a * np.sin(t), b * np.cos(t))
    arc = np.concatenate([[0.0], np.cumsum((speed[1:] + speed[:-1]) / 2 * np.diff(t))])
    s = np.linspace(0.0, 1.0, k)
    return s, np.interp(s * arc[-1], arc, t)


def _ellipse_distance(y0, y1, e0, e1, iters: int = 96):
    """Unsigned distance from (y0, y1) >= 0 to the ellipse with semi-axes e0 >= e1 (Eberly)."""
    z0, z1 = y0 / e0, y1 / e1
    g = z0 * z0 + z1 * z1 - 1
    r0 = (e0 / e1) ** 2
    n0 = r0 * z0
    s0 = z1 - 1
    s1 = jnp.where(g < 0, 0.0, jnp.sqrt(n0 * n0 + z1 * z1) - 1)

    def body(_, bracket):
        lo, hi = bracket
        s = (lo + hi) / 2
        ra, rb = n0 / (s + r0), z1 / (s + 1)
        gs = ra * ra + rb * rb - 1
        return jnp.where(gs > 0, s, lo), jnp.where(gs > 0, hi, s)

    lo, hi = jax.lax.fori_loop(0, iters, body, (s0, s1))
    s = (lo + hi) / 2
    x0, x1 = r0 * y0 / (s + r0), y1 / (s + 1)
    generic = jnp.sqrt((x0 - y0) ** 2 + (x1 - y1) ** 2)
    # y1 == 0: the closest point is on the major axis end or inside the evolute
    numer, denom = e0 * y0, e0 * e0 - e1 * e1
    xde = jnp.where(numer < denom, numer / denom, 1.0)
    ax0 = jnp.where(numer < denom,
                    jnp.sqrt((e0 * xde - y0) ** 2 + (e1 * e1) * (1 - xde * xde)),
                    jnp.abs(y0 - e0))
    out = jnp.where(y1 > 0, jnp.where(y0 > 0, generic, jnp.abs(y1 - e1)), ax0)
    return out


@register("domain")
@dataclass(frozen=True)
class Ellipse(Shape):
    """The axis-aligned ellipse ``sum(((x - center) / semi_axes)^2) <= 1`` (part ``ellipse``)."""

    center: tuple[float, float]
    semi_axes: tuple[float, float]

    def __post_init__(self):
        object.__setattr__(self, "center", _vec(self.center, 2, "center", "Ellipse"))
        axes = _vec(self.semi_axes, 2, "semi_axes", "Ellipse")
        for v in axes:
            _positive(v, "semi_axes", "Ellipse")
        object.__setattr__(self, "semi_axes", axes)

    @property
    def dim(self) -> int:
        return 2

    @property
    def bounds(self):
        c, ax = np.asarray(self.center), np.asarray(self.semi_axes)
        return c - ax, c + ax

    @property
    def measure(self) -> float:
        return math.pi * self.semi_axes[0] * self.semi_axes[1]

    @property
    def perimeter(self) -> float:
        from scipy.special import ellipe

        a, b = max(self.semi_axes), min(self.semi_axes)
        return float(4 * a * ellipe(1 - (b / a) ** 2))

    def _sdf(self, x):
        y = jnp.abs(x - np.asarray(self.center))
        a, b = self.semi_axes
        if a >= b:
            d = _ellipse_distance(y[..., 0], y[..., 1], a, b)
        else:
            d = _ellipse_distance(y[..., 1], y[..., 0], b, a)
        g = (y[..., 0] / a) ** 2 + (y[..., 1] / b) ** 2 - 1
        return jnp.where(g < 0, -d, d)

    def _outward(self, x):
        ax = np.asarray(self.semi_axes)
        return _unit((x - np.asarray(self.center)) / ax**2)

    def _interior_pieces(self):
        c, ax = np.asarray(self.center), np.asarray(self.semi_axes)

        def f(u):
            rho = jnp.sqrt(u[:, 0])
            th = 2 * jnp.pi * u[:, 1]
            return c + ax * jnp.stack([rho * jnp.cos(th), rho * jnp.sin(th)], -1)

        return [Piece(None, self.measure, 2, f)]

    def _boundary_pieces(self):
        c, ax = np.asarray(self.center), np.asarray(self.semi_axes)
        s_tab, t_tab = _arc_table(*self.semi_axes)

        def f(loc):
            th = jnp.interp(loc[:, 0], jnp.asarray(s_tab, loc.dtype), jnp.asarray(t_tab, loc.dtype))
            return c + ax * jnp.stack([jnp.cos(th), jnp.sin(th)], -1)

        def on(x, tol):  # first-order distance g / |grad g| (error O(d^2)), cheap
            q = (x - c) / ax
            g = jnp.sum(q * q, -1) - 1
            return jnp.abs(g) <= tol * 2 * _norm(q / ax)

        return [Piece("ellipse", self.perimeter, 1, f, normal=self._outward, on=on)]


# ------------------------------------------------------------ parametric ----
# Interval, Rectangle, Box, Disk and Ball with expressions of ranged parameters among their
# numbers (families of shapes, :mod:`pinn.geometry.parametric`): the constructors return
# these, written as data under the fixed class's name (read back through its constructor).


@register("domain", "Interval", read=False)
@dataclass(frozen=True, repr=False)
class _ParametricInterval(Parametric):
    KIND: ClassVar = Interval

    a: object
    b: object

    @property
    def dim(self) -> int:
        return 1

    def _part_names(self):
        return ("left", "right")

    def _bound(self, a, b):
        return _BoundBox(a[..., None], b[..., None])


@register("domain", "Rectangle", read=False)
@dataclass(frozen=True, repr=False)
class _ParametricRectangle(Parametric):
    KIND: ClassVar = Rectangle

    lo: tuple
    hi: tuple

    @property
    def dim(self) -> int:
        return 2

    def _part_names(self):
        return tuple(n for pair in face_names(2) for n in pair)

    def _bound(self, lo, hi):
        return _BoundBox(lo, hi)


@register("domain", "Box", read=False)
@dataclass(frozen=True, repr=False)
class _ParametricBox(Parametric):
    KIND: ClassVar = Box

    lo: tuple
    hi: tuple

    @property
    def dim(self) -> int:
        return len(self.lo)

    def _part_names(self):
        return tuple(n for pair in face_names(self.dim) for n in pair)

    def _bound(self, lo, hi):
        return _BoundBox(lo, hi)


@register("domain", "Disk", read=False)
@dataclass(frozen=True, repr=False)
class _ParametricDisk(Parametric):
    KIND: ClassVar = Disk

    center: tuple
    radius: object

    @property
    def dim(self) -> int:
        return 2

    def _part_names(self):
        return ("circle",)

    def _bound(self, center, radius):
        return _BoundRound(center, radius, "circle")


@register("domain", "Ball", read=False)
@dataclass(frozen=True, repr=False)
class _ParametricBall(Parametric):
    KIND: ClassVar = Ball

    center: tuple
    radius: object

    @property
    def dim(self) -> int:
        return len(self.center)

    def _part_names(self):
        return ("sphere",)

    def _bound(self, center, radius):
        return _BoundRound(center, radius, "sphere")


class _BoundBox(Bound):
    """A box with corners ``lo, hi[..., d]``, one per point (the faces of :class:`_BoxLike`,
    in its order)."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    @property
    def dim(self) -> int:
        return self.lo.shape[-1]

    def _row_bounds(self):
        return self.lo, self.hi

    def _sdf(self, x):
        q = jnp.abs(x - (self.lo + self.hi) / 2) - (self.hi - self.lo) / 2
        return _norm(jnp.maximum(q, 0.0)) + jnp.minimum(jnp.max(q, axis=-1), 0.0)

    def _outward(self, x):
        c = (self.lo + self.hi) / 2
        q = jnp.abs(x - c) - (self.hi - self.lo) / 2
        i = jnp.argmax(q, axis=-1)
        s = jnp.where(jnp.take_along_axis(x - c, i[..., None], -1) >= 0, 1.0, -1.0)
        return jax.nn.one_hot(i, self.dim, dtype=x.dtype) * s

    def _boundary_pieces(self):
        lo, hi, d = self.lo, self.hi, self.dim
        names = face_names(d)
        pieces = []
        for axis in range(d):
            others = [j for j in range(d) if j != axis]
            area = 1.0
            for j in others:
                area = area * (hi[..., j] - lo[..., j])
            for side, value in ((0, lo[..., axis]), (1, hi[..., axis])):
                normal = np.zeros(d)
                normal[axis] = 1.0 if side else -1.0
                pieces.append(Piece(names[axis][side], area, d - 1,
                                    self._face_map(axis, value, others),
                                    normal=_face_normal(d, axis, normal[axis]),
                                    on=self._face_on(axis, value, others)))
        return pieces

    def _face_map(self, axis, value, others):
        lo, hi, d = self.lo, self.hi, self.dim

        def f(loc):
            cols = [None] * d
            cols[axis] = jnp.broadcast_to(value, loc.shape[:1]).astype(loc.dtype)
            for k, j in enumerate(others):
                cols[j] = lo[..., j] + loc[:, k] * (hi[..., j] - lo[..., j])
            return jnp.stack(cols, axis=-1)

        return f

    def _face_on(self, axis, value, others):
        lo, hi = self.lo, self.hi

        def f(x, tol):
            m = jnp.abs(x[..., axis] - value) <= tol
            for j in others:
                m = m & (x[..., j] >= lo[..., j] - tol) & (x[..., j] <= hi[..., j] + tol)
            return m

        return f

    def adf_inside(self, x):
        from pinn.geometry.adf import r_and

        out = None
        for i in range(self.dim):
            for s in (x[..., i] - self.lo[..., i], self.hi[..., i] - x[..., i]):
                out = s if out is None else r_and(out, s)
        return out

    def adf_pieces(self):
        from pinn.geometry.adf import r_and

        lo, hi, d = self.lo, self.hi, self.dim
        out = []
        for axis in range(d):
            others = [j for j in range(d) if j != axis]
            for value in (lo[..., axis], hi[..., axis]):
                def f(x, axis=axis, value=value):
                    return x[..., axis] - value

                def t(x, others=others):
                    out = None
                    for j in others:
                        for w in (x[..., j] - lo[..., j], hi[..., j] - x[..., j]):
                            out = w if out is None else r_and(out, w)
                    return out

                out.append((f, t if others else None))
        return out


class _BoundRound(Bound):
    """A disk or ball with ``center[..., d]`` and ``radius[...]``, one per point."""

    def __init__(self, center, radius, name: str):
        self.center, self.radius, self.name = center, radius, name

    @property
    def dim(self) -> int:
        return self.center.shape[-1]

    def _row_bounds(self):
        r = self.radius[..., None]
        return self.center - r, self.center + r

    def _sdf(self, x):
        return _norm(x - self.center) - self.radius

    def _outward(self, x):
        return _unit(x - self.center)

    def _on(self, x, tol):
        return jnp.abs(_norm(x - self.center) - self.radius) <= tol

    def _boundary_pieces(self):
        c, r, d = self.center, self.radius, self.dim
        area = d * math.pi ** (d / 2) / math.gamma(d / 2 + 1) * r ** (d - 1)

        def f(loc):
            return c + r[..., None] * sphere_direction(loc, d)

        return [Piece(self.name, area, d - 1, f, normal=self._outward, on=self._on)]

    def adf_inside(self, x):
        r = self.radius
        return (r * r - jnp.sum((x - self.center) ** 2, -1)) / (2 * r)

    def adf_pieces(self):
        return [(self.adf_inside, None)]
