"""Taylor mode: push truncated multivariate Taylor series through a network.

``taylor_derivatives(apply, params, x, streams)`` traces ``apply`` to a jaxpr
once and re-evaluates it on *series*: every intermediate value that depends
on ``x`` carries its value plus coefficient streams (see
:class:`pinn.compile.plan.StreamSet`): the normalized Taylor coefficients
``d^g v / g!`` for every multi-index ``g`` of a lower set, and optionally
*collapsed* streams, fixed combinations of highest derivatives that only
travel as a sum.  Hence

* the value (the primal) is computed once and shared by every derivative;
* a weight matrix multiplies the value and all coefficient streams in ONE
  matrix product (``[(1 + streams) * N, width] @ [width, width']``);
* nonlinear elementwise functions use the multivariate Faa di Bruno formula
  ``phi(z0 + h) = sum_m phi^(m)(z0)/m! h^m`` with the powers of ``h``
  built from the product table of the lower set (exact mixed partials, no
  polarization);
* coefficient streams that are identically zero are tracked (``None``) and
  skipped; constant streams (the inputs' unit directions) stay unbroadcast.

Rules cover dot_general, the elementwise arithmetic (add, sub, mul, div,
neg, integer_pow, pow, square, max/min, abs), tanh, logistic, sin, cos, tan,
exp, log, sqrt and friends (others smooth elementwise ones by nested jvp of
the scalar function), the linear shape operations (broadcast, reshape,
slice, concatenate, gather, pad, select, reduce_sum, ...) and call
primitives (jit, custom_jvp/vjp, remat).  Primitives without a rule raise
:class:`UnsupportedPrimitive`; ``strategy="auto"`` then falls back to nested
``jax.jvp``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

from pinn.compile.plan import Collapsed, IndexSet, StreamSet

__all__ = ["UnsupportedPrimitive", "taylor_derivatives", "taylor_series", "supported_primitives"]


class UnsupportedPrimitive(NotImplementedError):
    """The network uses a JAX primitive that Taylor mode has no rule for."""

    def __init__(self, name: str, why: str = ""):
        self.primitive = name
        super().__init__(
            f"Taylor-mode derivatives have no rule for the JAX primitive {name!r}"
            + (f" ({why})" if why else "")
            + "; use strategy='jvp' (nested forward mode works for any network), or 'auto' "
            "which falls back to it"
        )


class Series:
    """A value with its Taylor coefficient streams (``None`` = identically zero).

    ``c[k - 1]`` is the coefficient of ``S[k]``; each stream broadcasts to
    ``p.shape`` (it may be smaller, e.g. ``[1, d]`` for the inputs' unit
    directions, which are the same at every point).
    """

    __slots__ = ("p", "c")

    def __init__(self, p, c):
        self.p = p
        self.c = list(c)

    def full(self, k: int):
        s = self.c[k]
        if s is None:
            return jnp.zeros(jnp.shape(self.p), jnp.result_type(self.p))
        return jnp.broadcast_to(s, jnp.shape(self.p))


def _is_series(v) -> bool:
    return isinstance(v, Series)


def _primal(v):
    return v.p if isinstance(v, Series) else v


def _sum(terms):
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _scaled(w: float, v):
    return v if w == 1.0 else w * v


def _mul(a, b):
    if a is None or b is None:
        return None
    return a * b


class _Ctx:
    """The streams and cached tables for one interpretation."""

    def __init__(self, streams: StreamSet):
        self.S = streams
        self.M = streams.size - 1
        self.K = streams.max_order
        # stream k (0-based) is stream k + 1 of the StreamSet; products only
        # ever pair explicit streams (i, j >= 1), with a weight w
        self.orders = streams.orders[1:]
        self.pairs = [tuple((i - 1, j - 1, w) for i, j, w in streams.pairs[k + 1])
                      for k in range(self.M)]

    def series(self, p, c) -> Series | object:
        if all(s is None for s in c):
            return p
        return Series(p, c)

    # -- products of coefficient streams ------------------------------------
    def cauchy(self, a: Series | object, b: Series | object, mul=_mul) -> list:
        """Coefficient streams of ``a * b`` (``mul`` multiplies two blocks)."""
        ap, bp = _primal(a), _primal(b)
        ac = a.c if _is_series(a) else [None] * self.M
        bc = b.c if _is_series(b) else [None] * self.M
        out = []
        for k in range(self.M):
            terms = [mul(ap, bc[k]) if bc[k] is not None else None,
                     mul(ac[k], bp) if ac[k] is not None else None]
            for i, j, w in self.pairs[k]:
                if ac[i] is not None and bc[j] is not None:
                    terms.append(_scaled(w, mul(ac[i], bc[j])))
            out.append(_sum(terms))
        return out

    def powers(self, h: list) -> list[list]:
        """``[h^1, h^2, ..., h^K]`` for a series ``h`` without constant term."""
        out = [list(h)]
        for m in range(2, self.K + 1):
            prev = out[-1]
            cur = []
            for k in range(self.M):
                if self.orders[k] < m:
                    cur.append(None)
                    continue
                terms = []
                if m == 2:
                    # symmetric square: each unordered pair once
                    for i, j, w in self.pairs[k]:
                        if i < j and h[i] is not None and h[j] is not None:
                            terms.append(_scaled(2.0 * w, h[i] * h[j]))
                        elif i == j and h[i] is not None:
                            terms.append(_scaled(w, h[i] * h[i]))
                else:
                    for i, j, w in self.pairs[k]:
                        if self.orders[j] >= m - 1 and h[i] is not None and prev[j] is not None:
                            terms.append(_scaled(w, h[i] * prev[j]))
                cur.append(_sum(terms))
            out.append(cur)
        return out

    def compose(self, z: Series, y0, coeffs: Callable[[int], object]) -> Series | object:
        """``phi(z)`` from ``y0 = phi(z0)`` and ``coeffs(m) = phi^(m)(z0)/m!`` (or None for 0).

        Only the orders that occur are requested, each once.
        """
        if all(s is None for s in z.c):
            return y0
        # a stream of order o only receives powers h^m with m <= o
        pw = self.powers(z.c) if self.K > 1 else [z.c]
        cm: dict[int, object] = {}

        def coef(m):
            if m not in cm:
                cm[m] = coeffs(m)
            return cm[m]

        out = []
        for k in range(self.M):
            terms = []
            for m in range(1, self.orders[k] + 1):
                if m - 1 >= len(pw) or pw[m - 1][k] is None:
                    continue
                c = coef(m)
                if c is not None:
                    terms.append(c * pw[m - 1][k])
            out.append(_sum(terms))
        return self.series(y0, out)


# ---------------------------------------------------------------------------
# derivative tables of elementwise functions: phi^(m)(z0) / m!


def _ode_polys(q: Sequence[float], K: int) -> list[np.ndarray]:
    """For ``y' = Q(y)``: polynomials ``P_m`` with ``y^(m) = P_m(y)``, divided by ``m!``."""
    q = np.polynomial.Polynomial(q)
    p = np.polynomial.Polynomial([0.0, 1.0])
    out = [None]
    for m in range(1, K + 1):
        p = p.deriv() * q
        out.append(p.coef / math.factorial(m))
    return out


_POLY_CACHE: dict[tuple, list] = {}


def _horner(coef: np.ndarray, y):
    """``sum_i coef[i] y^i`` (a Python float for constants, None for zero)."""
    coef = [float(c) for c in coef]
    while coef and coef[-1] == 0.0:
        coef.pop()
    if not coef:
        return None
    acc = coef[-1]
    for c in reversed(coef[:-1]):
        acc = acc * y + c if c != 0.0 else acc * y
    return acc


def _poly_coeffs(key: str, q: Sequence[float], K: int, y0):
    ck = (key, K)
    if ck not in _POLY_CACHE:
        _POLY_CACHE[ck] = _ode_polys(q, K)
    polys = _POLY_CACHE[ck]
    return lambda m: _horner(polys[m], y0)


def _cyclic(values: Sequence, m: int):
    return values[m % len(values)]


def _unary_rule(name: str, ctx: _Ctx, z: Series, params: dict, prim):
    z0 = z.p
    K = ctx.K
    fact = math.factorial
    if name == "tanh":
        y0 = jnp.tanh(z0)
        return ctx.compose(z, y0, _poly_coeffs("tanh", (1.0, 0.0, -1.0), K, y0))
    if name == "logistic":
        y0 = jax.nn.sigmoid(z0)
        return ctx.compose(z, y0, _poly_coeffs("logistic", (0.0, 1.0, -1.0), K, y0))
    if name == "tan":
        y0 = jnp.tan(z0)
        return ctx.compose(z, y0, _poly_coeffs("tan", (1.0, 0.0, 1.0), K, y0))
    if name in ("sin", "cos", "sinh", "cosh"):
        s, c = {
            "sin": (jnp.sin, jnp.cos), "cos": (jnp.sin, jnp.cos),
            "sinh": (jnp.sinh, jnp.cosh), "cosh": (jnp.sinh, jnp.cosh),
        }[name]
        sv, cv = s(z0), c(z0)
        cyc = {
            "sin": (sv, cv, -sv, -cv), "cos": (cv, -sv, -cv, sv),
            "sinh": (sv, cv), "cosh": (cv, sv),
        }[name]
        return ctx.compose(z, cyc[0], lambda m: _cyclic(cyc, m) / fact(m))
    if name == "exp":
        y0 = jnp.exp(z0)
        return ctx.compose(z, y0, lambda m: y0 / fact(m))
    if name == "exp2":
        y0 = jnp.exp2(z0)
        ln2 = math.log(2.0)
        return ctx.compose(z, y0, lambda m: y0 * (ln2 ** m / fact(m)))
    if name == "expm1":
        e0 = jnp.exp(z0)
        return ctx.compose(z, jnp.expm1(z0), lambda m: e0 / fact(m))
    if name in ("log", "log1p"):
        w = z0 if name == "log" else 1.0 + z0
        y0 = jnp.log(w) if name == "log" else jnp.log1p(z0)
        r = 1.0 / w
        return ctx.compose(z, y0, lambda m: ((-1.0) ** (m - 1) / m) * r ** m)
    if name in ("sqrt", "rsqrt", "cbrt", "pow_const"):
        expo = {"sqrt": 0.5, "rsqrt": -0.5, "cbrt": 1.0 / 3.0}.get(name, params.get("y"))
        y0 = {"sqrt": jnp.sqrt, "rsqrt": lax.rsqrt, "cbrt": jnp.cbrt}.get(
            name, lambda v: jnp.power(v, expo))(z0)
        r = 1.0 / z0

        def power_coef(m):
            f = math.prod(expo - i for i in range(m)) / fact(m)
            return None if f == 0.0 else (y0 * r ** m) * f

        return ctx.compose(z, y0, power_coef)
    if name in ("integer_pow", "square"):
        n = 2 if name == "square" else int(params["y"])
        y0 = lax.integer_pow(z0, n)
        if n < 0:
            r = 1.0 / z0

            def neg_coef(m):
                return (y0 * r ** m) * (math.prod(n - i for i in range(m)) / fact(m))

            return ctx.compose(z, y0, neg_coef)

        def int_coef(m):
            if m > n:
                return None
            f = math.comb(n, m)
            base = lax.integer_pow(z0, n - m) if n - m > 1 else (z0 if n - m == 1 else None)
            return f if base is None else base * float(f)

        return ctx.compose(z, y0, int_coef)
    # anything else elementwise and smooth: derivatives by nested jvp of the
    # scalar function itself (elementwise work only, 2^K evaluations)
    if name in _GENERIC_SMOOTH:
        f = lambda v: prim.bind(v, **params)
        derivs = [f]
        for _ in range(K):
            g = derivs[-1]
            derivs.append(lambda v, g=g: jax.jvp(g, (v,), (jnp.ones_like(v),))[1])
        y0 = f(z0)
        return ctx.compose(z, y0, lambda m: derivs[m](z0) / fact(m))
    raise UnsupportedPrimitive(name)


_UNARY = {"tanh", "logistic", "tan", "sin", "cos", "sinh", "cosh", "exp", "exp2", "expm1", "log",
          "log1p", "sqrt", "rsqrt", "cbrt", "integer_pow", "square"}
_GENERIC_SMOOTH = {"atan", "asin", "acos", "asinh", "acosh", "atanh", "erf", "erfc", "erf_inv",
                   "lgamma", "digamma"}
# derivative-free: evaluated on the primal, result is a constant
_PIECEWISE_CONSTANT = {"sign", "floor", "ceil", "round", "is_finite", "lt", "le", "gt", "ge",
                       "eq", "ne", "not", "and", "or", "argmax", "argmin", "nextafter",
                       "stop_gradient"}
# linear in the listed operand positions (others must be constant); a
# constant at a linear position contributes zero to the coefficient streams
_LINEAR = {
    "neg": (0,), "reshape": (0,), "broadcast_in_dim": (0,), "squeeze": (0,),
    "expand_dims": (0,), "transpose": (0,), "slice": (0,), "rev": (0,), "reduce_sum": (0,),
    "copy": (0,), "copy_p": (0,), "cumsum": (0,), "real": (0,), "imag": (0,),
    "reduce_precision": (0,), "gather": (0,), "dynamic_slice": (0,), "split": (0,),
    "unstack": (0,),
    "concatenate": "all", "stack": "all", "pad": (0, 1), "select_n": "cases", "add": "all",
    "sub": "all", "add_any": "all", "dynamic_update_slice": (0, 1), "scatter-add": (0, 2),
    "scatter_add": (0, 2), "conj": (0,), "optimization_barrier": "all",
}
_CALLS = {"jit", "pjit", "closed_call", "core_call", "remat", "remat2", "checkpoint",
          "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin"}


def supported_primitives() -> frozenset[str]:
    """Names of the JAX primitives Taylor mode can push series through."""
    return frozenset(_UNARY | _GENERIC_SMOOTH | _PIECEWISE_CONSTANT | set(_LINEAR) | _CALLS
                     | {"mul", "div", "dot_general", "convert_element_type", "pow", "max", "min",
                        "abs"})


# ---------------------------------------------------------------------------
# rules


def _bind(prim, params):
    return lambda *a: prim.bind(*a, **params)


def _linear_rule(ctx: _Ctx, prim, params, invals, lin):
    name = prim.name
    n = len(invals)
    if lin == "all":
        lin = tuple(range(n))
    elif lin == "cases":
        lin = tuple(range(1, n))
    for i, v in enumerate(invals):
        if i not in lin and _is_series(v):
            raise UnsupportedPrimitive(name, f"operand {i} may not depend on the inputs")
    primal = prim.bind(*[_primal(v) for v in invals], **params)
    # fast paths for elementwise add/sub/neg (the bias add of every layer)
    if name in ("add", "sub", "add_any", "neg"):
        sign = -1.0 if name == "sub" else 1.0
        out = []
        for k in range(ctx.M):
            a = invals[0].c[k] if _is_series(invals[0]) else None
            if name == "neg":
                out.append(None if a is None else -a)
                continue
            b = invals[1].c[k] if _is_series(invals[1]) else None
            if b is not None and sign < 0:
                b = -b
            out.append(_sum([a, b]))
        return ctx.series(primal, out)
    ks = [k for k in range(ctx.M)
          if any(_is_series(invals[i]) and invals[i].c[k] is not None for i in lin)]
    if not ks:
        return primal
    ops, axes = [], []
    for i, v in enumerate(invals):
        if i in lin:
            shape, dtype = jnp.shape(_primal(v)), jnp.result_type(_primal(v))
            rows = []
            for k in ks:
                s = v.c[k] if _is_series(v) else None
                rows.append(jnp.zeros(shape, dtype) if s is None else jnp.broadcast_to(s, shape))
            ops.append(jnp.stack(rows))
            axes.append(0)
        else:
            ops.append(v)
            axes.append(None)
    res = jax.vmap(_bind(prim, params), in_axes=tuple(axes))(*ops)
    if prim.multiple_results:
        outs = []
        for p, r in zip(primal, res, strict=True):
            r = _unstack(r)
            c = [None] * ctx.M
            for row, k in enumerate(ks):
                c[k] = r[row]
            outs.append(ctx.series(p, c))
        return outs
    res = _unstack(res)
    c = [None] * ctx.M
    for row, k in enumerate(ks):
        c[k] = res[row]
    return ctx.series(primal, c)


def _unstack(stack) -> list:
    """Rows of ``stack`` along axis 0 via ``split``, whose transpose is one
    concatenate (indexing would transpose to one zero-padded copy per row)."""
    n = stack.shape[0]
    if n == 1:
        return [stack[0]]
    return [jnp.squeeze(r, 0) for r in jnp.split(stack, n, axis=0)]


def _same_contract(stream_shape, full_shape, dims) -> bool:
    (contract, _), (batch, _) = dims
    if len(stream_shape) != len(full_shape):
        return False
    return all(stream_shape[i] == full_shape[i] for i in (*contract, *batch))


def _bilinear_streams(ctx: _Ctx, f, a, b, batched_f):
    """Streams of a bilinear ``f(a, b)`` where exactly one of ``a``, ``b`` is a Series.

    Full-size streams go through ``batched_f`` together with the primal (one
    batched product); the primal result is returned first.
    """
    if _is_series(a):
        s, other, left = a, b, True
    else:
        s, other, left = b, a, False
    full_shape = jnp.shape(s.p)
    fulls = [k for k in range(ctx.M) if s.c[k] is not None and jnp.shape(s.c[k]) == full_shape]
    stacked = jnp.stack([s.p] + [s.c[k] for k in fulls])
    res = _unstack(batched_f(stacked, other, left))
    primal = res[0]
    c = [None] * ctx.M
    for row, k in enumerate(fulls, start=1):
        c[k] = res[row]
    for k in range(ctx.M):
        if s.c[k] is not None and k not in fulls:
            c[k] = f(s.c[k], other) if left else f(other, s.c[k])
    return primal, c


def _dot_general_rule(ctx: _Ctx, prim, params, a, b):
    dims = params["dimension_numbers"]
    f = _bind(prim, params)
    if _is_series(a) and _is_series(b):
        primal = f(a.p, b.p)
        c = ctx.cauchy(Series(a.p, [None if s is None else a.full(k) for k, s in enumerate(a.c)]),
                       Series(b.p, [None if s is None else b.full(k) for k, s in enumerate(b.c)]),
                       mul=f)
        return ctx.series(primal, c)
    s = a if _is_series(a) else b
    # streams smaller than the primal: allowed when only free dimensions broadcast
    full_shape = jnp.shape(s.p)
    sdims = dims if _is_series(a) else ((dims[0][1], dims[0][0]), (dims[1][1], dims[1][0]))
    c = [st if st is None or jnp.shape(st) == full_shape
         or _same_contract(jnp.shape(st), full_shape, sdims) else s.full(k)
         for k, st in enumerate(s.c)]
    s = Series(s.p, c)
    a, b = (s, b) if _is_series(a) else (a, s)

    def batched(stack, other, left):
        (lc, _), (lb, _) = dims
        if left and stack.ndim == 3 and tuple(lc) == (1,) and not lb:
            # [S, N, K] @ W as one plain [S*N, K] matmul: XLA then keeps one
            # cotangent buffer per layer in the backward pass (a 3-D
            # dot_general makes it materialise extra copies/transposes)
            s_, n_, k_ = stack.shape
            flat = f(stack.reshape(s_ * n_, k_), other)
            return flat.reshape((s_, n_) + flat.shape[1:])
        if left:
            return jax.vmap(lambda l: f(l, other))(stack)
        return jax.vmap(lambda r: f(other, r))(stack)

    primal, c = _bilinear_streams(ctx, f, a, b, batched)
    return ctx.series(primal, c)


def _mul_rule(ctx: _Ctx, a, b):
    primal = _primal(a) * _primal(b)
    if _is_series(a) and _is_series(b):
        return ctx.series(primal, ctx.cauchy(a, b))
    s, other = (a, b) if _is_series(a) else (b, a)
    return ctx.series(primal, [None if st is None else st * other for st in s.c])


def _div_rule(ctx: _Ctx, a, b, prim):
    if not _is_series(b):
        return ctx.series(_primal(a) / b, [None if st is None else st / b for st in a.c])
    recip = _unary_rule("integer_pow", ctx, b, {"y": -1}, prim)
    return _mul_rule(ctx, a, recip) if _is_series(a) or _is_series(recip) else a * recip


def _select_by(ctx: _Ctx, mask, a, b):
    """Streams of ``where(mask, a, b)`` with the mask fixed by the primal."""
    primal = jnp.where(mask, _primal(a), _primal(b))
    c = []
    for k in range(ctx.M):
        sa = a.c[k] if _is_series(a) else None
        sb = b.c[k] if _is_series(b) else None
        if sa is None and sb is None:
            c.append(None)
        else:
            c.append(jnp.where(mask, 0.0 if sa is None else sa, 0.0 if sb is None else sb))
    return ctx.series(primal, c)


def _sub_jaxpr(params):
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        if key in params:
            j = params[key]
            if isinstance(j, jcore.ClosedJaxpr):
                return j.jaxpr, j.consts
            return j, ()
    return None, None


def _eval(ctx: _Ctx, jaxpr, consts, args):
    env: dict = {}

    def read(v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for v, val in zip(jaxpr.constvars, consts, strict=True):
        # a float64 constant (NumPy bounds or centres, a buffer made in float64) traced
        # while float64 is off keeps its dtype in the jaxpr, and the equations use it as
        # float32: give it the canonical dtype, as JAX's own evaluation does
        dt = getattr(val, "dtype", None)
        if dt is not None and jnp.issubdtype(dt, jnp.floating):
            want = jax.dtypes.canonicalize_dtype(dt)
            if want != dt:
                val = val.astype(want) if isinstance(val, jax.Array) else np.asarray(
                    val).astype(want)
        env[v] = val
    for v, val in zip(jaxpr.invars, args, strict=True):
        env[v] = val
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        prim, params = eqn.primitive, eqn.params
        if not any(_is_series(v) for v in invals):
            with eqn.ctx.manager:
                out = prim.bind(*invals, **prim.get_bind_params(params))
        else:
            out = _apply_rule(ctx, prim, params, invals)
        if prim.multiple_results:
            for v, o in zip(eqn.outvars, out, strict=True):
                env[v] = o
        else:
            env[eqn.outvars[0]] = out
    return [read(v) for v in jaxpr.outvars]


def _apply_rule(ctx: _Ctx, prim, params, invals):
    name = prim.name
    if name in _CALLS:
        sub, consts = _sub_jaxpr(params)
        if sub is None:
            raise UnsupportedPrimitive(name, "no inner jaxpr")
        n_in = len(sub.invars)
        return _eval(ctx, sub, consts, invals[len(invals) - n_in:])
    if name in _PIECEWISE_CONSTANT:
        return prim.bind(*[_primal(v) for v in invals], **params)
    if name in _UNARY or name in _GENERIC_SMOOTH:
        return _unary_rule(name, ctx, invals[0], params, prim)
    if name == "convert_element_type":
        z = invals[0]
        p = prim.bind(z.p, **params)
        if not jnp.issubdtype(jnp.result_type(p), jnp.floating):
            return p
        dt = jnp.result_type(p)
        return ctx.series(p, [None if s is None else s.astype(dt) for s in z.c])
    if name == "mul":
        return _mul_rule(ctx, *invals)
    if name == "div":
        return _div_rule(ctx, invals[0], invals[1], lax.integer_pow_p)
    if name == "dot_general":
        return _dot_general_rule(ctx, prim, params, *invals)
    if name == "pow":
        a, b = invals
        if not _is_series(b) and not isinstance(b, jax.core.Tracer) and jnp.ndim(b) == 0:
            return _unary_rule("pow_const", ctx, a, {"y": float(b)}, prim)
        return _exp_log_pow(ctx, a, b)
    if name in ("max", "min"):
        a, b = invals
        pa, pb = _primal(a), _primal(b)
        mask = (pa >= pb) if name == "max" else (pa <= pb)
        return _select_by(ctx, mask, a, b)
    if name == "abs":
        z = invals[0]
        sg = jnp.sign(z.p)
        return ctx.series(jnp.abs(z.p), [None if s is None else sg * s for s in z.c])
    if name in _LINEAR:
        return _linear_rule(ctx, prim, params, invals, _LINEAR[name])
    raise UnsupportedPrimitive(name)


def _exp_log_pow(ctx: _Ctx, a, b):
    """``a ** b`` as ``exp(b * log(a))`` on series."""
    log_a = _unary_rule("log", ctx, a, {}, None) if _is_series(a) else jnp.log(a)
    prod = _mul_rule(ctx, log_a, b) if (_is_series(log_a) or _is_series(b)) else log_a * b
    if not _is_series(prod):
        return jnp.exp(prod)
    return _unary_rule("exp", ctx, prod, {}, None)


# ---------------------------------------------------------------------------
# entry points


def taylor_series(apply: Callable, params, x, streams: StreamSet | IndexSet) -> list:
    """The streams of ``apply(params, x)`` at each row of ``x[N, d]``.

    Stream ``k`` of an explicit multi-index ``g`` is the normalized
    coefficient ``d^g u / g!``; a collapsed stream is its combination.
    Returns a list of ``streams.size`` arrays shaped like ``apply(params, x)``.
    """
    if isinstance(streams, IndexSet):
        streams = StreamSet(streams)
    x = jnp.asarray(x)
    if x.ndim != 2 or x.shape[-1] != streams.dim:
        raise ValueError(
            f"Taylor mode expects points of shape [N, {streams.dim}], got {tuple(x.shape)}"
        )
    ctx = _Ctx(streams)
    inp = []
    for k in range(1, streams.size):
        v = streams.input_direction(k)
        inp.append(None if v is None else jnp.asarray(v[None, :], dtype=x.dtype))  # [1, d]
    closed = jax.make_jaxpr(apply)(params, x)
    leaves = jax.tree_util.tree_leaves(params)
    outs = _eval(ctx, closed.jaxpr, closed.consts, [*leaves, Series(x, inp)])
    if len(outs) != 1:
        raise ValueError(f"apply must return one array, got {len(outs)} outputs")
    out = outs[0]
    if not _is_series(out):
        zero = jnp.zeros_like(out)
        return [out] + [zero] * ctx.M
    return [out.p] + [out.full(k) for k in range(ctx.M)]


def taylor_derivatives(apply: Callable, params, x, streams: StreamSet | IndexSet,
                       alphas: Sequence[tuple[int, ...]] | None = None) -> dict:
    """``{alpha: d^alpha apply(params, x)}`` for the explicit multi-indices
    ``alphas`` (default: all), plus ``{combo: sum_g v_g d^g apply}`` for each
    collapsed stream ``combo`` of ``streams``."""
    if isinstance(streams, IndexSet):
        streams = StreamSet(streams)
    coeffs = taylor_series(apply, params, x, streams)
    S = streams.explicit
    alphas = S.indices if alphas is None else alphas
    out = {}
    for a in alphas:
        k = S.pos[tuple(a)]
        f = streams.output_scale(k)
        out[tuple(a)] = coeffs[k] if f == 1.0 else coeffs[k] * f
    for n, combo in enumerate(streams.combos):
        out[combo if isinstance(combo, Collapsed) else Collapsed(combo)] = coeffs[S.size + n]
    return out
