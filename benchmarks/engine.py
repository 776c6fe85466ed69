"""Speed of the derivative engine: one jitted PINN training step built from
the PDE language against hand-written JAX, same network, points and run.

    python benchmarks/engine.py               # all rows, 200 steps each
    python benchmarks/engine.py --quick       # a few steps, for a smoke test
    python benchmarks/engine.py --rows a,e    # some rows only

A step is: the loss (mean squared residuals, plus boundary/initial terms
where a row lists them), its gradient, and an optax Adam update; ``steps``
steps run inside one ``lax.scan`` per timed call, for every side alike.
Columns:

* ``dsl``: ``pinn.compile.compile_terms`` with ``strategy="auto"``;
* ``jvp``: hand-written nested forward mode (``jax.jvp`` of ``jax.jvp``),
  the way PINN code is usually written;
* ``best``: the fastest hand-written JAX we could write: Taylor mode
  specialised by hand to the MLP and to the derivatives of the row (value
  and all derivative streams through each layer as one batched matmul);
* ``ratio``: dsl / min(jvp, best, other strategies);
* ``GFLOP/s``: XLA's cost analysis of the compiled DSL step (flops) over its
  time; ``%peak``: that over the machine's FP32 peak (see :func:`fp32_peak`).

Extra columns ``taylor``/``jvp*``/``jet`` time the DSL with each strategy
forced (``--strategies``).  Times are the minimum over ``--repeats``
interleaved measurements (the machine may be shared; compare ratios within
one run).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

import pinn.dsl as P
from pinn.compile import compile_terms

# ---------------------------------------------------------------------------
# network


def init_mlp(key, sizes):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        key, k = jax.random.split(key)
        w = jax.random.normal(k, (a, b), jnp.float32) * math.sqrt(2.0 / (a + b))
        params.append((w, jnp.zeros((b,), jnp.float32)))
    return params


def mlp(params, x):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return h @ w + b


# ---------------------------------------------------------------------------
# hand-written derivatives


def unit(x, i):
    return jnp.zeros_like(x).at[:, i].set(1.0)


def jvp_n(f, x, dirs):
    """Nested jvp: derivative of f along dirs[0], dirs[1], ... (all at x)."""
    def along(g, v):
        return lambda z: jax.jvp(g, (z,), (v,))[1]

    g = f
    for v in dirs:
        g = along(g, v)
    return g(x)


def _m(*xs):
    """Product treating None as zero."""
    out = 1.0
    for v in xs:
        if v is None:
            return None
        out = out * v
    return out


def _a(*xs):
    """Sum treating None as zero."""
    xs = [v for v in xs if v is not None]
    if not xs:
        return None
    out = xs[0]
    for v in xs[1:]:
        out = out + v
    return out


def _rest(key, h, d):
    """Faa di Bruno for tanh minus its linear part: y_key = d1*h_key + _rest(key)."""
    _, d2, d3, d4 = d
    kind = key[0]
    if kind == "1":
        return None
    if kind in ("2", "3", "4"):
        i = key[1]
        h1, h2, h3 = h.get(("1", i)), h.get(("2", i)), h.get(("3", i))
        if kind == "2":
            return _m(d2, h1, h1)
        if kind == "3":
            return _a(_m(2.0 * d2, h1, h2), _m(d3, h1, h1, h1))
        return _a(_m(d2, _a(_m(2.0, h1, h3), _m(h2, h2))), _m(3.0 * d3, h1, h1, h2),
                  _m(d4, h1, h1, h1, h1))
    i, j = key[1], key[2]
    a1, b1, a2, b2 = h.get(("1", i)), h.get(("1", j)), h.get(("2", i)), h.get(("2", j))
    ab, a2b, ab2 = h.get(("11", i, j)), h.get(("21", i, j)), h.get(("12", i, j))
    if kind == "11":
        return _m(2.0 * d2, a1, b1)
    if kind == "21":
        return _a(_m(d2, _a(_m(2.0, a1, ab), _m(2.0, a2, b1))), _m(3.0 * d3, a1, a1, b1))
    if kind == "12":
        return _a(_m(d2, _a(_m(2.0, b1, ab), _m(2.0, b2, a1))), _m(3.0 * d3, a1, b1, b1))
    # "22"
    return _a(_m(d2, _a(_m(2.0, a2, b2), _m(2.0, a1, ab2), _m(2.0, b1, a2b), _m(ab, ab))),
              _m(d3, _a(_m(3.0, a1, a1, b2), _m(3.0, b1, b1, a2), _m(6.0, a1, b1, ab))),
              _m(6.0 * d4, a1, a1, b1, b1))


def taylor_mlp(params, x, keys, combo=None):
    """Hand-specialised (collapsed) Taylor mode for ``mlp`` with tanh.

    Streams are normalized Taylor coefficients ``d^g u / g!``: the value
    ``("v",)`` and ``keys``: ``("1", i)``, ``("2", i)``, ``("3", i)``,
    ``("4", i)`` (pure, along axis i), ``("11"|"21"|"12"|"22", i, j)`` (mixed
    x_i^a x_j^b).  ``combo``: ``{key: weight}`` of highest coefficients used
    only in that combination, carried as one stream ``("L",)``.  Value and all
    streams go through each weight matrix as ONE [S*N, width] matmul.
    """
    combo = combo or {}
    order = [("v",)] + list(keys) + ([("L",)] if combo else [])
    w0, b0 = params[0]
    n = x.shape[0]
    z = {("v",): x @ w0 + b0}
    for k in keys:
        if k[0] == "1":
            z[k] = w0[k[1]][None, :]
    lin = [w * w0[k[1]] for k, w in combo.items() if k[0] == "1"]
    if lin:
        z[("L",)] = sum(lin)[None, :]
    for w, b in params[1:]:
        t = jnp.tanh(z[("v",)])
        d1 = 1.0 - t * t  # phi'; then phi''/2, phi'''/6, phi''''/24
        d = (d1, -t * d1, d1 * (t * t - 1.0 / 3.0), t * d1 * (2.0 / 3.0 - t * t))
        y = {("v",): t}
        for k in keys:
            y[k] = _a(_m(d1, z.get(k)), _rest(k, z, d))
        if combo:
            y[("L",)] = _a(_m(d1, z.get(("L",))),
                           *[_m(wt, _rest(k, z, d)) for k, wt in combo.items()])
        stack = jnp.stack([jnp.broadcast_to(y[k], (n, t.shape[1])) for k in order])
        out = (stack.reshape(-1, stack.shape[-1]) @ w).reshape(len(order), n, w.shape[1])
        z = dict(zip(order, (o[0] for o in jnp.split(out, len(order), axis=0)), strict=True))
        z[("v",)] = z[("v",)] + b
    return z


# ---------------------------------------------------------------------------
# rows


@dataclass
class Row:
    key: str
    name: str
    sizes: list
    coords: tuple
    fields: tuple
    terms: dict                # name -> (expr, batch key)
    batch: dict                # batch key -> points (and targets)
    hand_jvp: Callable         # (net, batch) -> dict name -> residual[N]
    hand_best: Callable


def _pts(key, n, lo, hi):
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    return jnp.asarray(jax.random.uniform(key, (n, len(lo))) * (hi - lo) + lo, jnp.float32)


def row_a(key):
    x, t = P.coords("x t")
    u = P.field("u")
    nu = 0.01 / math.pi
    k1, k2, k3, k4 = jax.random.split(key, 4)
    interior = _pts(k1, 2540, (-1, 0), (1, 1))
    tb = _pts(k2, 160, (0,), (1,))[:, 0]
    xb = jnp.where(jnp.arange(160) < 80, -1.0, 1.0)
    x0 = _pts(k3, 80, (-1,), (1,))[:, 0]
    bnd = jnp.concatenate([jnp.stack([xb, tb], 1), jnp.stack([x0, jnp.zeros(80)], 1)])
    g = jnp.concatenate([jnp.zeros(160), -jnp.sin(math.pi * x0)]).astype(jnp.float32)
    del k4
    res = P.D(u, t) + u * P.D(u, x) - nu * P.D(u, x, 2)
    bc = u - P.where(P.eq(t, 0), -P.sin(P.pi * x), 0)

    def hand_jvp(net, b):
        z = b["interior"]
        f = lambda q: mlp(net, q)[:, 0]
        ex, et = unit(z, 0), unit(z, 1)
        uu, ux = jax.jvp(f, (z,), (ex,))
        uxx = jvp_n(f, z, [ex, ex])
        ut = jvp_n(f, z, [et])
        ub = f(b["boundary"])
        return {"pde": ut + uu * ux - nu * uxx, "bc": ub - b["g"]}

    def hand_best(net, b):
        # u_t - nu u_xx travels as one stream (normalized: c_t - 2 nu c_xx)
        z = taylor_mlp(net, b["interior"], [("1", 0)], {("1", 1): 1.0, ("2", 0): -2.0 * nu})
        uu, ux, lin = z[("v",)][:, 0], z[("1", 0)][:, 0], z[("L",)][:, 0]
        ub = mlp(net, b["boundary"])[:, 0]
        return {"pde": lin + uu * ux, "bc": ub - b["g"]}

    return Row("a", "Burgers 1D 2-3x20-1, 2540+240", [2, 20, 20, 20, 1], (x, t), (u,),
               {"pde": (res, "interior"), "bc": (bc, "boundary")},
               {"interior": interior, "boundary": bnd, "g": g}, hand_jvp, hand_best)


def row_b(key):
    x, y, t = P.coords("x y t")
    u = P.field("u")
    alpha = 0.05
    res = P.D(u, t) - alpha * P.laplacian(u)

    def hand_jvp(net, b):
        z = b["interior"]
        f = lambda q: mlp(net, q)[:, 0]
        ex, ey, et = unit(z, 0), unit(z, 1), unit(z, 2)
        return {"pde": jvp_n(f, z, [et]) - alpha * (jvp_n(f, z, [ex, ex]) + jvp_n(f, z, [ey, ey]))}

    def hand_best(net, b):
        z = taylor_mlp(net, b["interior"], [("1", 0), ("1", 1)],
                       {("1", 2): 1.0, ("2", 0): -2.0 * alpha, ("2", 1): -2.0 * alpha})
        return {"pde": z[("L",)][:, 0]}

    return Row("b", "heat 2D 3-4x64-1, 8192", [3, 64, 64, 64, 64, 1], (x, y, t), (u,),
               {"pde": (res, "interior")}, {"interior": _pts(key, 8192, (0, 0, 0), (1, 1, 1))},
               hand_jvp, hand_best)


def row_c(key):
    x, y = P.coords("x y")
    u, v, p = P.fields("u v p")
    nu = 0.01
    vel = P.vector(u, v)
    mx = P.dot(vel, P.grad(u)) + P.D(p, x) - nu * P.laplacian(u)
    my = P.dot(vel, P.grad(v)) + P.D(p, y) - nu * P.laplacian(v)
    cont = P.div(vel)

    def hand_jvp(net, b):
        z = b["interior"]
        f = lambda q: mlp(net, q)
        ex, ey = unit(z, 0), unit(z, 1)
        o, ox = jax.jvp(f, (z,), (ex,))
        oy = jvp_n(f, z, [ey])
        oxx = jvp_n(f, z, [ex, ex])
        oyy = jvp_n(f, z, [ey, ey])
        uu, vv = o[:, 0], o[:, 1]
        return {
            "mx": uu * ox[:, 0] + vv * oy[:, 0] + ox[:, 2] - nu * (oxx[:, 0] + oyy[:, 0]),
            "my": uu * ox[:, 1] + vv * oy[:, 1] + oy[:, 2] - nu * (oxx[:, 1] + oyy[:, 1]),
            "cont": ox[:, 0] + oy[:, 1],
        }

    def hand_best(net, b):
        z = taylor_mlp(net, b["interior"], [("1", 0), ("1", 1)], {("2", 0): 2.0, ("2", 1): 2.0})
        o, ox, oy, lap = z[("v",)], z[("1", 0)], z[("1", 1)], z[("L",)]
        uu, vv = o[:, 0], o[:, 1]
        return {
            "mx": uu * ox[:, 0] + vv * oy[:, 0] + ox[:, 2] - nu * lap[:, 0],
            "my": uu * ox[:, 1] + vv * oy[:, 1] + oy[:, 2] - nu * lap[:, 1],
            "cont": ox[:, 0] + oy[:, 1],
        }

    return Row("c", "steady NS 2D 2-4x64-3, 8192", [2, 64, 64, 64, 64, 3], (x, y), (u, v, p),
               {"mx": (mx, "interior"), "my": (my, "interior"), "cont": (cont, "interior")},
               {"interior": _pts(key, 8192, (0, 0), (1, 1))}, hand_jvp, hand_best)


def row_d(key):
    x, t = P.coords("x t")
    u = P.field("u")
    l1, l2 = 1.0, 0.0025
    res = P.D(u, t) + l1 * u * P.D(u, x) + l2 * P.D(u, x, 3)

    def hand_jvp(net, b):
        z = b["interior"]
        f = lambda q: mlp(net, q)[:, 0]
        ex, et = unit(z, 0), unit(z, 1)
        uu, ux = jax.jvp(f, (z,), (ex,))
        return {"pde": jvp_n(f, z, [et]) + l1 * uu * ux + l2 * jvp_n(f, z, [ex, ex, ex])}

    def hand_best(net, b):
        z = taylor_mlp(net, b["interior"], [("1", 0), ("2", 0)],
                       {("1", 1): 1.0, ("3", 0): 6.0 * l2})
        return {"pde": (z[("L",)] + l1 * z[("v",)] * z[("1", 0)])[:, 0]}

    return Row("d", "KdV 2-4x64-1, 8192", [2, 64, 64, 64, 64, 1], (x, t), (u,),
               {"pde": (res, "interior")}, {"interior": _pts(key, 8192, (-1, 0), (1, 1))},
               hand_jvp, hand_best)


def row_e(key):
    x, y = P.coords("x y")
    u = P.field("u")
    src = 4 * P.pi ** 4 * P.sin(P.pi * x) * P.sin(P.pi * y)
    res = P.laplacian(P.laplacian(u)) - src

    def f_src(z):
        return 4 * math.pi ** 4 * jnp.sin(math.pi * z[:, 0]) * jnp.sin(math.pi * z[:, 1])

    def hand_jvp(net, b):
        z = b["interior"]
        f = lambda q: mlp(net, q)[:, 0]
        ex, ey = unit(z, 0), unit(z, 1)
        r = (jvp_n(f, z, [ex] * 4) + 2.0 * jvp_n(f, z, [ex, ex, ey, ey])
             + jvp_n(f, z, [ey] * 4))
        return {"pde": r - f_src(z)}

    def hand_best(net, b):
        keys = [("1", 0), ("1", 1), ("2", 0), ("11", 0, 1), ("2", 1), ("3", 0), ("21", 0, 1),
                ("12", 0, 1), ("3", 1)]
        # u_xxxx + 2 u_xxyy + u_yyyy = 24 c40 + 8 c22 + 24 c04, as one stream
        z = taylor_mlp(net, b["interior"], keys, {("4", 0): 24.0, ("22", 0, 1): 8.0,
                                                   ("4", 1): 24.0})
        return {"pde": z[("L",)][:, 0] - f_src(b["interior"])}

    return Row("e", "biharmonic 2D 2-4x64-1, 4096", [2, 64, 64, 64, 64, 1], (x, y), (u,),
               {"pde": (res, "interior")}, {"interior": _pts(key, 4096, (0, 0), (1, 1))},
               hand_jvp, hand_best)


ROWS = {"a": row_a, "b": row_b, "c": row_c, "d": row_d, "e": row_e}


# ---------------------------------------------------------------------------
# DSL side


def dsl_residuals(row: Row, strategy: str = "auto"):
    """The row's residuals from the PDE language (``strategy`` ``"nocollapse"``:
    Taylor mode without collapsing highest derivatives)."""
    by_batch: dict[str, dict] = {}
    for name, (ex, bk) in row.terms.items():
        by_batch.setdefault(bk, {})[name] = ex
    collapse = strategy != "nocollapse"
    strategy = "taylor" if strategy == "nocollapse" else strategy
    fns = {bk: compile_terms(exprs, coords=row.coords, fields=row.fields, apply=mlp,
                             strategy=strategy, collapse=collapse)
           for bk, exprs in by_batch.items()}

    def residuals(net, b):
        out = {}
        for bk, fn in fns.items():
            out.update(fn({"net": net}, b[bk]))
        return out

    return residuals


# ---------------------------------------------------------------------------
# timing


def make_runner(residuals: Callable, steps: int, lr: float = 1e-3):
    opt = optax.adam(lr)

    def loss(net, b):
        r = residuals(net, b)
        return sum(jnp.mean(v ** 2) for v in r.values())

    def step(carry, b):
        net, state = carry
        val, g = jax.value_and_grad(loss)(net, b)
        upd, state = opt.update(g, state, net)
        return (optax.apply_updates(net, upd), state), val

    @jax.jit
    def run(net, state, b):
        return lax.scan(lambda c, _: step(c, b), (net, state), None, length=steps)

    def one(net, state, b):
        return step((net, state), b)

    return opt, run, one


def time_runner(run, net, state, b) -> float:
    t0 = time.perf_counter()
    (net2, _), losses = run(net, state, b)
    jax.block_until_ready(losses)
    return time.perf_counter() - t0


def step_flops(one, net, state, b) -> float:
    try:
        ca = jax.jit(one).lower(net, state, b).compile().cost_analysis()
    except Exception:  # noqa: BLE001 - cost analysis is best effort
        return float("nan")
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return float((ca or {}).get("flops", float("nan")))


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def cpu_ghz() -> float:
    """Nominal clock from /proc/cpuinfo ('cpu MHz'), else 2.45 GHz."""
    mhz = [float(m) for m in re.findall(r"cpu MHz\s*:\s*([\d.]+)", _cpuinfo())]
    return max(mhz) / 1000.0 if mhz else 2.45


def n_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def flop_per_cycle() -> int:
    """FP32 flop/cycle/core: two FMA pipes x lanes x 2.  AVX2 + FMA (AMD Zen 2/3,
    Intel Haswell and later): 2 x 8 x 2 = 32.  With AVX-512 we assume two
    512-bit pipes (64), an upper bound: many parts have one, and XLA may not
    use 512-bit vectors."""
    return 64 if re.search(r"\bavx512f\b", _cpuinfo()) else 32


def fp32_peak(cores: int | None = None) -> float:
    """FP32 peak in GFLOP/s: ``flop_per_cycle() x nominal clock x cores``
    (turbo ignored; under a hypervisor 'cpu MHz' is the nominal clock)."""
    cores = cores or n_cores()
    return flop_per_cycle() * cpu_ghz() * cores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="a,b,c,d,e")
    ap.add_argument("--quick", action="store_true", help="few steps and one repeat")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--strategies", default="",
                    help="also time the DSL with these strategies forced: taylor, jvp, jet, "
                    "nocollapse (Taylor mode without collapsed streams)")
    args = ap.parse_args(argv)
    steps = args.steps or (10 if args.quick else 200)
    repeats = args.repeats or (1 if args.quick else 3)
    extra = [s for s in args.strategies.split(",") if s]
    peak = fp32_peak()
    malloc = {k: os.environ[k] for k in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                                         "MALLOC_ARENA_MAX") if k in os.environ}
    device = jax.devices()[0].platform
    print(f"jax {jax.__version__}, {platform.processor() or platform.machine()}, "
          f"{n_cores()} cores, {device}, FP32 peak ~{peak:.0f} GFLOP/s "
          f"({flop_per_cycle()} flop/cycle/core at {cpu_ghz():.2f} GHz), "
          f"malloc env {malloc or 'default'}")
    print(f"{steps} Adam steps per timed call in lax.scan, min of {repeats} interleaved calls")
    head = (f"{'row':<36}{'dsl ms':>9}{'jvp ms':>9}{'best ms':>9}"
            + "".join(f"{'dsl-' + s:>11}" for s in extra)
            + f"{'ratio':>7}{'GFLOP/s':>9}{'%peak':>7}")
    print("ratio = dsl / min(jvp, best): the DSL against the fastest hand-written step")
    print(head)
    key = jax.random.PRNGKey(0)
    for rk in args.rows.split(","):
        row = ROWS[rk](jax.random.fold_in(key, ord(rk)))
        net = init_mlp(jax.random.fold_in(key, 1), row.sizes)
        sides = {"dsl": dsl_residuals(row), "jvp": row.hand_jvp, "best": row.hand_best}
        for s in extra:
            sides["dsl-" + s] = dsl_residuals(row, s)
        runners = {k: make_runner(v, steps) for k, v in sides.items()}
        states = {k: r[0].init(net) for k, r in runners.items()}
        for k, (_, run, _) in runners.items():  # compile + warm up
            time_runner(run, net, states[k], row.batch)
        best = {k: float("inf") for k in runners}
        for _ in range(repeats):
            for k, (_, run, _) in runners.items():
                best[k] = min(best[k], time_runner(run, net, states[k], row.batch) / steps)
        flops = step_flops(runners["dsl"][2], net, states["dsl"], row.batch)
        ms = {k: 1e3 * v for k, v in best.items()}
        ref = min(ms["jvp"], ms["best"])
        gfs = flops / (best["dsl"] * 1e9)
        frac = f"{100 * gfs / peak:6.1f}%" if device == "cpu" else "    n/a"
        print(f"({rk}) {row.name:<32}{ms['dsl']:9.2f}{ms['jvp']:9.2f}{ms['best']:9.2f}"
              + "".join(f"{ms['dsl-' + s]:11.2f}" for s in extra)
              + f"{ms['dsl'] / ref:7.2f}{gfs:9.1f}{frac}", flush=True)


if __name__ == "__main__":
    main()
