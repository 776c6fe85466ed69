"""Time marching: an evolution problem trained window by window in time.

The time interval ``[t0, t1]`` is cut into ``windows`` equal slabs, trained one after
another, each by the run's own recipe (stages, points, weighting) on its slab alone: the
first from the problem's initial conditions, each later one from the previous window's
solution (and its rate) at its start time, built into the window's network, so carried over
exactly (JAX-PI's time marching fits it as a soft condition,
Wang, Sankaran, Wang & Perdikaris 2023, "An expert's guide to training PINNs"; Wight & Zhao
2020). A slab of length ``(t1 - t0)/windows`` is a problem ``windows`` times shorter: a
transport over many wavelengths, a long-time diffusion or a stiff reaction becomes a
sequence of easy problems. Each window's network sees its own slab scaled to ``[-1, 1]``
and starts from the previous window's parameters (the solution a moment earlier), except
after a first window with a hard initial value, whose network means something else.

The result is one :class:`~pinn.solution.Solution` of the whole problem whose network is
piecewise in time (``windows`` networks; :func:`piecewise_apply`): it evaluates, scores,
saves, loads and exports as any other (a window's boundary belongs to the later window).

Conditions in a window are each condition's own ``for_window`` (:class:`pinn.conditions.
Window`): boundary conditions and equations as given (their expressions see the true
time); data (observations) restricted to the points inside the slab; the first window
starts from the problem's own initial condition (hard or soft as it says), each later one
from the previous window's values and rates, built in (hard; tabulated once as a Chebyshev
series, :class:`WindowStart`, so a window costs one network however many came before).
Problems with learnable or ranged parameters are refused (a window would learn its own
value, or need the previous one at every parameter).

This module is the windows' logic (edges, each window's problem, the piecewise network);
the loop that trains them one after another is :func:`pinn.run.train_windows`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from pinn import conditions as C
from pinn.dsl import expr as E
from pinn.geometry.spacetime import SpaceTime, TimeInterval

__all__ = ["window_edges", "window_problem", "piecewise_apply", "check_windows",
           "WindowStart", "window_key"]


def check_windows(problem, windows: int) -> None:
    """Raise ``ValueError`` naming the fix when ``problem`` cannot be marched in
    ``windows`` time windows."""
    if isinstance(windows, bool) or not isinstance(windows, (int, np.integer)) or windows < 1:
        raise ValueError(f"windows must be an integer >= 1, got {windows!r}")
    if windows == 1:
        return
    if not problem.is_evolution:
        raise ValueError(f"{problem.name}: time windows need an evolution problem (a domain "
                         "with a time interval); this one is steady: drop windows")
    if problem.learnable:
        raise ValueError(f"{problem.name}: time windows with learnable parameters "
                         f"({', '.join(p.name for p in problem.learnable)}) would learn one "
                         "value per window: train the inverse problem in one window")
    if problem.ranged:
        raise ValueError(f"{problem.name}: time windows of a parametric problem (ranged "
                         f"{', '.join(p.name for p in problem.ranged)}) are not supported: "
                         "train it in one window")
    if not any(c.initial for c in problem.conditions.values()):
        raise ValueError(f"{problem.name}: time windows start each window from the previous "
                         "one's values, and the first from the initial condition: this "
                         "problem has none")


def window_edges(problem, windows: int) -> np.ndarray:
    """The ``windows + 1`` times that cut ``[t0, t1]`` into equal windows."""
    return np.linspace(problem.time.t0, problem.time.t1, int(windows) + 1)


#: Chebyshev nodes per spatial axis of a window start's table, by the space's dimension.
START_NODES = {1: 257, 2: 65, 3: 25}


class WindowStart:
    """The previous window's solution at the start time ``t`` of the next one, as a
    coefficient of the spatial coordinates (a :class:`~pinn.dsl.expr.Tabulated` table):
    ``field`` (or, ``rate=True``, its time derivative) of ``apply(params, ·)`` at
    ``(x, t)``, interpolated once by a tensor Chebyshev series over the space's bounding
    ``box`` (:data:`START_NODES` nodes per axis): a later window then costs one network,
    not the whole chain of the windows before it (each of which would evaluate its own
    predecessor at every point). ``error``: the largest difference from the network itself
    at seeded points of the box, relative to the largest value (1e-13 to 1e-10 in 1D for a
    smooth start). Compares by identity; it is not data (a window's problem is not
    saved)."""

    def __init__(self, apply, params, field_index: int, t: float, dim: int, *,
                 rate: bool = False, box=None):
        self.field_index, self.t, self.dim, self.rate = int(field_index), float(t), dim, rate
        lo, hi = (np.full(dim, -1.0), np.full(dim, 1.0)) if box is None else box
        self.lo, self.hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        n = START_NODES.get(dim, 17)
        nodes = np.cos(np.pi * np.arange(n) / (n - 1))  # Chebyshev points of the 2nd kind
        grids = np.meshgrid(*[self._from_unit(nodes, i) for i in range(dim)], indexing="ij")
        pts = np.stack([g.ravel() for g in grids], axis=-1)
        with jax.enable_x64(True):
            direct = self._direct(apply, params)
            values = np.asarray(direct(jnp.asarray(pts)), np.float64).reshape((n,) * dim)
            self.coef = _cheb_coefficients(values)
            check = np.random.default_rng(0).uniform(self.lo, self.hi, (256, dim))
            want = np.asarray(direct(jnp.asarray(check)), np.float64)
            got = np.asarray(self._series(jnp.asarray(check), (0,) * dim), np.float64)
        size = max(float(np.max(np.abs(values))), 1e-300)
        self.error = float(np.max(np.abs(got - want))) / size

    def _from_unit(self, s, axis: int):
        return self.lo[axis] + (np.asarray(s) + 1) * (self.hi[axis] - self.lo[axis]) / 2

    def _direct(self, apply, params):
        """The previous window's value (or rate) at points ``x[N, dim]``, by its network."""
        def one(x):
            def u(tt):
                pt = jnp.concatenate([x, jnp.reshape(tt, (1,))])[None, :]
                p = jax.tree.map(lambda a: jnp.asarray(a, x.dtype), params)
                return apply(p, pt)[0, self.field_index]

            t = jnp.asarray(self.t, x.dtype)
            return jax.grad(u)(t) if self.rate else u(t)

        return jax.jit(jax.vmap(one))

    def _series(self, x, deriv):
        """The Chebyshev series (differentiated ``deriv[i]`` times along axis ``i``) at
        ``x[N, dim]``."""
        dtype = jnp.result_type(x, float)
        coef = self.coef
        for axis, k in enumerate(deriv):
            for _ in range(int(k)):
                coef = np.polynomial.chebyshev.chebder(coef, axis=axis) * (
                    2.0 / (self.hi[axis] - self.lo[axis]))
        out = jnp.asarray(coef, dtype)
        lo, hi = jnp.asarray(self.lo, dtype), jnp.asarray(self.hi, dtype)
        s = (2 * x.astype(dtype) - (lo + hi)) / (hi - lo)  # [N, dim] in [-1, 1]
        # contract the last axis first: out[..., j] with T_j(s[:, axis])
        for axis in reversed(range(self.dim)):
            V = _cheb_vander(s[:, axis], out.shape[-1])  # [N, n]
            out = V @ out.reshape(-1, out.shape[-1]).T if axis == self.dim - 1 else \
                jnp.einsum("nj,n...j->n...", V, out)
            if axis == self.dim - 1:
                out = out.reshape((x.shape[0],) + coef.shape[:-1])
        return out

    def __call__(self, cols, deriv=None, xp=None):
        cols = jnp.broadcast_arrays(*[jnp.asarray(c) for c in cols])
        shape = cols[0].shape
        dtype = jnp.result_type(cols[0], float)
        x = jnp.stack([jnp.ravel(c).astype(dtype) for c in cols], axis=-1)
        deriv = tuple(deriv or ()) + (0,) * (self.dim - len(tuple(deriv or ())))
        # differentiable in x: a hard window start takes the PDE's derivatives through it
        out = self._series(x, deriv).reshape(shape)
        return np.asarray(out) if xp is np else out

    def __repr__(self) -> str:
        what = "rate" if self.rate else "value"
        return f"WindowStart(field {self.field_index} {what} at t={self.t:g})"


def _cheb_coefficients(values: np.ndarray) -> np.ndarray:
    """Tensor Chebyshev coefficients of ``values`` given at the Chebyshev points of the
    second kind ``cos(pi k / (n - 1))`` along every axis (a type-I DCT per axis)."""
    import scipy.fft

    c = np.asarray(values, np.float64)
    for axis in range(c.ndim):
        n = c.shape[axis]
        c = scipy.fft.dct(c, type=1, axis=axis) / (n - 1)
        edge = [slice(None)] * c.ndim
        for i in (0, n - 1):
            edge[axis] = i
            c[tuple(edge)] /= 2
    return c


def _cheb_vander(s, n: int):
    """``[T_0(s), ..., T_{n-1}(s)]`` (``[N, n]``) by doubling: from ``T_0 .. T_m``,
    ``T_2k = 2 T_k^2 - 1`` and ``T_2k+1 = 2 T_k T_k+1 - s`` give ``T_0 .. T_2m`` (log2 n
    rounds of elementwise products, slices and a reshape; finite and differentiable at
    ``s = ±1``). Every derivative strategy differentiates it: Taylor mode has no rule for a
    scan (the three-term recurrence written as one made each later window's steps ~9x
    slower under nested jvp), and the recurrence unrolled is n operations that compile
    slowly into gigabytes. Its rounding: 2e-12 at n = 257 (the recurrence's 7e-13)."""
    T = jnp.stack([jnp.ones_like(s), s], axis=-1)
    while T.shape[-1] < n:
        m = T.shape[-1] - 1
        even = 2 * T * T - 1  # T_0, T_2, ..., T_2m
        odd = 2 * T[:, :-1] * T[:, 1:] - s[:, None]  # T_1, T_3, ..., T_2m-1
        odd = jnp.concatenate([odd, jnp.zeros_like(odd[:, :1])], axis=-1)
        T = jnp.stack([even, odd], axis=-1).reshape(s.shape[0], 2 * m + 2)[:, :2 * m + 1]
    return T[:, :n]


def window_problem(problem, k: int, edges: Sequence[float], previous=None):
    """The problem of window ``k`` (``[edges[k], edges[k+1]]``): each condition's
    ``for_window`` (:class:`pinn.conditions.Window`).

    ``previous``: ``(apply, net_params)`` of window ``k - 1``, whose values (and rates)
    at the window's start become its initial values, built into its network (hard);
    ``None`` for the first window, or to build a later window's problem only to evaluate
    its network (the initial values are then left as the problem's, made soft: a soft
    condition does not enter the network)."""
    a, b = float(edges[k]), float(edges[k + 1])
    start = None
    if previous is not None:
        fidx = {f: i for i, f in enumerate(problem.fields)}

        def start(f, rate):
            return _start(previous, fidx[f], f, a, problem.spatial, rate=rate,
                          box=problem.space.bounds)

    window = C.Window(a, b, first=k == 0, last=k == len(edges) - 2, start=start)
    conds = {}
    for name, c in problem.conditions.items():
        w = c.for_window(problem, name, window)
        if w is not None:
            conds[name] = w
    layer = problem.time.layer and k == 0  # a later window starts from the last one's end
    return replace(problem, domain=SpaceTime(problem.space, TimeInterval(a, b, layer)),
                   conditions=conds)


def _start(previous, index: int, f, t: float, spatial, *, rate: bool = False,
           box=None) -> E.Expr:
    """The previous window's ``f`` (or its rate) at time ``t``, as an expression of the
    spatial coordinates."""
    apply, params = previous
    table = WindowStart(apply, params, index, t, len(spatial), rate=rate, box=box)
    label = f"{f.name}_t" if rate else f.name
    return E.Tabulated(f"{label}(t={t:g})", table, spatial)


def piecewise_apply(applies: Sequence, edges: Sequence[float], time_index: int):
    """``apply(net, x)`` of a solution piecewise in time: window ``k``'s network
    ``applies[k](net["w<k>"], x)`` where ``edges[k] <= t < edges[k+1]`` (the first window
    also before ``edges[0]``, the last also from ``edges[-1]``). Every window is evaluated
    at every point and one is selected (``where``): exact derivatives inside a window, a
    static graph that exports."""
    applies = tuple(applies)
    inner = [float(e) for e in edges[1:-1]]

    def apply(net, x):
        t = x[:, time_index:time_index + 1]
        y = applies[0](net[window_key(0)], x)
        for k, edge in enumerate(inner, start=1):
            y = jnp.where(t >= edge, applies[k](net[window_key(k)], x), y)
        return y

    return apply


def window_key(k: int) -> str:
    """The parameters' key of window ``k`` in a piecewise network (``w<k>``)."""
    return f"w{k}"
