"""Partial derivatives of a network with respect to its inputs, by several
strategies that all return ``{alpha: d^alpha apply(params, x)}``.

* ``"taylor"`` -- Taylor mode over the jaxpr of ``apply``
  (:mod:`pinn.compile.taylor`): value and every needed coefficient stream go
  through each layer together, one matmul per layer, mixed partials exactly
  from the multivariate product table, and *collapsed* streams for fixed
  combinations of highest derivatives (a Laplacian, a whole linear residual).
* ``"jvp"`` -- nested forward mode, ``jax.jvp`` of ``jax.jvp`` ...: one
  nest per maximal derivative, every prefix of the nest is harvested (the
  way PINN code is usually written by hand).  Works for any JAX function.
* ``"jet"`` -- ``jax.experimental.jet`` along coordinate axes, mixed
  partials by polarization (directional derivatives along the simplex
  lattice of directions, inverted with numpy at plan time), directions of
  one order vmapped together.
* ``"auto"`` -- Taylor mode, falling back to nested ``jvp`` (with a
  warning) when the network uses a primitive Taylor mode has no rule for.

How ``auto`` was chosen (``benchmarks/engine.py``, one Adam training step,
2 CPU cores; see ``benchmarks/ENGINE.md``): collapsed Taylor mode was the
fastest on every row -- Burgers 1.56 ms vs 2.40 (DSL with nested jvp) and
2.84 (hand-written nested jvp); heat 2-D 33.9 vs 58.2 / 58.1 ms; steady NS
37.9 vs 58.4 / 71.2; KdV 38.3 vs 62.1 / 75.0; biharmonic 78 vs 134 ms --
and also on a GPU (1.4-2x over nested jvp).  ``jet`` was 3-10x slower than
nested jvp and is kept as an option only.

Every strategy assumes that rows of ``x`` are independent points (the
network acts row by row), which is what a PINN network does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np

from pinn.compile.plan import Collapsed, Combo, IndexSet, MultiIndex, StreamSet, order, polarization
from pinn.compile.taylor import UnsupportedPrimitive, taylor_derivatives

__all__ = ["STRATEGIES", "derivatives", "jvp_derivatives", "jet_derivatives"]

STRATEGIES = ("auto", "taylor", "jvp", "jet")


def _check(alphas, d) -> tuple[MultiIndex, ...]:
    out = []
    for a in alphas:
        a = tuple(int(k) for k in a)
        if len(a) != d or any(k < 0 for k in a):
            raise ValueError(f"multi-index {a} does not fit points with {d} coordinates")
        if a not in out:
            out.append(a)
    return tuple(out)


def _unit(x, i):
    return jnp.broadcast_to(jnp.asarray(np.eye(x.shape[-1])[i], dtype=x.dtype), x.shape)


def jvp_derivatives(apply: Callable, params, x, alphas: Iterable[MultiIndex]) -> dict:
    """Nested forward mode.  The maximal derivatives are nested ``jax.jvp``
    calls along coordinate axes; every derivative a nest passes through is
    reused for the other requested ``alphas``."""
    d = x.shape[-1]
    alphas = _check(alphas, d)
    zero = (0,) * d
    f = lambda z: {zero: apply(params, z)}
    done: dict = {}
    for alpha in sorted(alphas, key=order, reverse=True):
        if alpha in done:
            continue
        g = f
        for i, k in enumerate(alpha):
            for _ in range(k):
                g = _jvp_level(g, i, d)
        done.update(g(x))
    return {a: done[a] for a in alphas}


def _jvp_level(g, i, d):
    e = tuple(1 if j == i else 0 for j in range(d))

    def h(z):
        p, t = jax.jvp(g, (z,), (_unit(z, i),))
        out = dict(p)
        for a, v in t.items():
            out[tuple(x + y for x, y in zip(a, e, strict=True))] = v
        return out

    return h


def jet_derivatives(apply: Callable, params, x, alphas: Iterable[MultiIndex]) -> dict:
    """``jax.experimental.jet`` along directions; mixed partials by polarization."""
    from jax.experimental import jet

    d = x.shape[-1]
    alphas = _check(alphas, d)
    zero = (0,) * d
    f = lambda z: apply(params, z)
    out: dict = {}
    if zero in alphas or not alphas:
        out[zero] = f(x)

    def along(dirs: np.ndarray, k: int):
        """Directional derivatives of orders 1..k along each direction: [n, k, ...]."""
        def one(v):
            v = jnp.broadcast_to(v.astype(x.dtype), x.shape)
            series = [v] + [jnp.zeros_like(x)] * (k - 1)
            _, terms = jet.jet(f, (x,), (series,))
            return jnp.stack(terms)

        return jax.vmap(one)(jnp.asarray(dirs))

    # pure derivatives: one jet per axis, up to its highest needed order
    pure: dict[int, int] = {}
    mixed: dict[tuple[int, tuple[int, ...]], list] = {}
    for a in alphas:
        supp = tuple(i for i, k in enumerate(a) if k)
        if len(supp) == 1:
            pure[supp[0]] = max(pure.get(supp[0], 0), a[supp[0]])
        elif len(supp) > 1:
            mixed.setdefault((order(a), supp), []).append(a)
    by_order: dict[int, list[int]] = {}
    for i, k in pure.items():
        by_order.setdefault(k, []).append(i)
    for k, axes in by_order.items():
        terms = along(np.eye(d)[axes], k)
        for n, i in enumerate(axes):
            for m in range(1, k + 1):
                out[tuple(m if j == i else 0 for j in range(d))] = terms[n, m - 1]
    for (k, supp), wanted in mixed.items():
        dirs_v, inv, gammas = polarization(k, len(supp))
        dirs = np.zeros((len(dirs_v), d))
        dirs[:, list(supp)] = dirs_v
        top = along(dirs, k)[:, k - 1]  # [n_dirs, N, ...]
        for a in wanted:
            g = tuple(a[i] for i in supp)
            row = inv[gammas.index(g)]
            out[a] = jnp.tensordot(jnp.asarray(row, dtype=top.dtype), top, axes=1)
    return {a: out[a] for a in alphas}


def derivatives(apply: Callable, params, x, alphas: Iterable[MultiIndex], *,
                strategy: str = "auto", combos: Iterable[Combo] = ()) -> dict:
    """Partial derivatives of a network at the rows of ``x[N, d]``.

    Returns ``{alpha: d^alpha apply(params, x)}`` for each multi-index
    ``alpha`` over the ``d`` inputs (``(0,) * d`` is the value), and
    ``{Collapsed(combo): sum_g v_g d^g apply(params, x)}`` for each ``combo =
    ((g, v_g), ...)`` in ``combos``: a fixed combination of derivatives that the caller
    needs only as a whole, which Taylor mode carries as ONE stream
    (collapsed Taylor mode) when every ``g`` is maximal.  ``strategy``:
    ``"auto"`` (Taylor mode, falling back to nested jvp for networks with
    primitives Taylor mode does not know), ``"taylor"``, ``"jvp"``, ``"jet"``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(
            f"unknown derivative strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}"
        )
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"points must be a 2-D array [N, d], got shape {tuple(x.shape)}")
    d = x.shape[-1]
    alphas = _check(alphas, d)
    combos = tuple(c if isinstance(c, Collapsed) else Collapsed(c) for c in combos)
    for c in combos:
        _check([g for g, _ in c], d)
    if not combos and all(order(a) == 0 for a in alphas):
        return {a: apply(params, x) for a in alphas}
    if strategy in ("taylor", "auto"):
        try:
            return taylor_derivatives(apply, params, x, _stream_set(alphas, combos, d), alphas)
        except UnsupportedPrimitive as err:
            if strategy == "taylor":
                raise
            warnings.warn(f"{err}; using nested jvp instead", stacklevel=2)
    wanted = list(alphas) + [g for c in combos for g, _ in c if g not in alphas]
    fn = jet_derivatives if strategy == "jet" else jvp_derivatives
    got = fn(apply, params, x, wanted)
    out = {a: got[a] for a in alphas}
    for c in combos:
        out[c] = sum(v * got[g] for g, v in c)
    return out


def _stream_set(alphas, combos, d) -> StreamSet:
    """Explicit lower set for ``alphas`` and the predecessors of collapsed parts."""
    need = set(alphas)
    for c in combos:
        for g, _ in c:
            for i, k in enumerate(g):
                if k:
                    need.add(g[:i] + (k - 1,) + g[i + 1:])
    explicit = IndexSet.closure(need, d)
    for c in combos:
        for g, _ in c:
            if g in explicit.pos:
                raise ValueError(
                    f"derivative {g} cannot be collapsed: another requested derivative needs it"
                )
    return StreamSet(explicit, combos)
