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
    g = f
    for v in dirs:
        g = (lambda g, v: lambda z: jax.jvp(g, (z,), (v,))[1])(g, v)
    return g(x)


def taylor_mlp(params, x, first, second=(), third=(), fourth=(), mixed22=()):
    """Hand-specialised Taylor mode for ``mlp``.

    Streams (normalized Taylor coefficients): value; d/dx_i for i in ``first``;
    pure orders 2..4 along axes in ``second``/``third``/``fourth`` (each implies
    the lower ones along that axis); ``mixed22``: pairs (i, j) for
    d^4/dx_i^2 dx_j^2 (needs (i,j) first-order mixed and the (2,1), (1,2)
    coefficients, all carried).  Returns a dict name -> [N, out] of
    *normalized* coefficients: keys ('v',), ('1', i), ('2', i), ('3', i),
    ('4', i), ('11', i, j), ('21', i, j), ('12', i, j), ('22', i, j).
    """
    keys = [("v",)] + [("1", i) for i in first] + [("2", i) for i in second]
    keys += [("3", i) for i in third] + [("4", i) for i in fourth]
    for i, j in mixed22:
        keys += [("11", i, j), ("21", i, j), ("12", i, j), ("22", i, j)]
    w0, b0 = params[0]
    n = x.shape[0]
    # first layer: linear in x
    z = {k: None for k in keys}
    z[("v",)] = x @ w0 + b0
    for i in first:
        z[("1", i)] = w0[i][None, :]
    for li, (w, b) in enumerate(params[1:]):
        t = jnp.tanh(z[("v",)])
        d1 = 1.0 - t * t                       # phi'
        d2 = -t * d1                           # phi''/2
        d3 = d1 * (t * t - 1.0 / 3.0)          # phi'''/6 = (1-t^2)(3t^2-1)/3
        d4 = t * d1 * (2.0 / 3.0 - t * t)      # phi''''/24
        y = {("v",): t}

        def g(k):
            return z.get(k)

        for i in first:
            y[("1", i)] = d1 * g(("1", i))
        for i in second:
            h1, h2 = g(("1", i)), g(("2", i))
            y[("2", i)] = d2 * h1 * h1 + (d1 * h2 if h2 is not None else 0.0)
        for i in third:
            h1, h2, h3 = g(("1", i)), g(("2", i)), g(("3", i))
            if h2 is None:
                y[("3", i)] = d3 * h1 * h1 * h1
            else:
                y[("3", i)] = d1 * h3 + 2.0 * d2 * h1 * h2 + d3 * h1 * h1 * h1
        for i in fourth:
            h1, h2, h3, h4 = (g(("1", i)), g(("2", i)), g(("3", i)), g(("4", i)))
            if h2 is None:
                y[("4", i)] = d4 * h1 ** 4
            else:
                y[("4", i)] = (d1 * h4 + d2 * (2.0 * h1 * h3 + h2 * h2)
                               + 3.0 * d3 * h1 * h1 * h2 + d4 * h1 ** 4)
        for i, j in mixed22:
            a1, b1 = g(("1", i)), g(("1", j))
            a2, b2 = g(("2", i)), g(("2", j))
            ab, a2b, ab2, a2b2 = (g(("11", i, j)), g(("21", i, j)), g(("12", i, j)),
                                  g(("22", i, j)))
            if ab is None:  # first hidden layer: only first-order streams are nonzero
                y[("11", i, j)] = 2.0 * d2 * a1 * b1
                y[("21", i, j)] = 3.0 * d3 * a1 * a1 * b1
                y[("12", i, j)] = 3.0 * d3 * a1 * b1 * b1
                y[("22", i, j)] = 6.0 * d4 * a1 * a1 * b1 * b1
            else:
                y[("11", i, j)] = d1 * ab + 2.0 * d2 * a1 * b1
                y[("21", i, j)] = (d1 * a2b + d2 * (2.0 * a1 * ab + 2.0 * a2 * b1)
                                   + 3.0 * d3 * a1 * a1 * b1)
                y[("12", i, j)] = (d1 * ab2 + d2 * (2.0 * b1 * ab + 2.0 * b2 * a1)
                                   + 3.0 * d3 * a1 * b1 * b1)
                y[("22", i, j)] = (
                    d1 * a2b2
                    + d2 * (2.0 * a2 * b2 + 2.0 * a1 * ab2 + 2.0 * b1 * a2b + ab * ab)
                    + d3 * (3.0 * a1 * a1 * b2 + 3.0 * b1 * b1 * a2 + 6.0 * a1 * b1 * ab)
                    + 6.0 * d4 * a1 * a1 * b1 * b1
                )
        stack = jnp.stack([jnp.broadcast_to(y[k], (n, t.shape[1])) for k in keys])
        out = (stack.reshape(-1, stack.shape[-1]) @ w).reshape(len(keys), n, w.shape[1])
        z = dict(zip(keys, (o[0] for o in jnp.split(out, len(keys), axis=0)), strict=True))
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
        z = taylor_mlp(net, b["interior"], first=(0, 1), second=(0,))
        uu, ux, ut, uxx = (z[("v",)][:, 0], z[("1", 0)][:, 0], z[("1", 1)][:, 0],
                           2.0 * z[("2", 0)][:, 0])
        ub = mlp(net, b["boundary"])[:, 0]
        return {"pde": ut + uu * ux - nu * uxx, "bc": ub - b["g"]}

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
        z = taylor_mlp(net, b["interior"], first=(0, 1, 2), second=(0, 1))
        lap = 2.0 * (z[("2", 0)] + z[("2", 1)])
        return {"pde": (z[("1", 2)] - alpha * lap)[:, 0]}

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
        z = taylor_mlp(net, b["interior"], first=(0, 1), second=(0, 1))
        o, ox, oy = z[("v",)], z[("1", 0)], z[("1", 1)]
        lap = 2.0 * (z[("2", 0)] + z[("2", 1)])
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
        z = taylor_mlp(net, b["interior"], first=(0, 1), second=(0,), third=(0,))
        r = z[("1", 1)] + l1 * z[("v",)] * z[("1", 0)] + l2 * 6.0 * z[("3", 0)]
        return {"pde": r[:, 0]}

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
        z = taylor_mlp(net, b["interior"], first=(0, 1), second=(0, 1), third=(0, 1),
                       fourth=(0, 1), mixed22=((0, 1),))
        # normalized -> derivatives: u_xxxx = 24 c4, u_xxyy = 4 c22
        r = 24.0 * (z[("4", 0)] + z[("4", 1)]) + 2.0 * 4.0 * z[("22", 0, 1)]
        return {"pde": r[:, 0] - f_src(b["interior"])}

    return Row("e", "biharmonic 2D 2-4x64-1, 4096", [2, 64, 64, 64, 64, 1], (x, y), (u,),
               {"pde": (res, "interior")}, {"interior": _pts(key, 4096, (0, 0), (1, 1))},
               hand_jvp, hand_best)


ROWS = {"a": row_a, "b": row_b, "c": row_c, "d": row_d, "e": row_e}


# ---------------------------------------------------------------------------
# DSL side


def dsl_residuals(row: Row, strategy: str = "auto"):
    by_batch: dict[str, dict] = {}
    for name, (ex, bk) in row.terms.items():
        by_batch.setdefault(bk, {})[name] = ex
    fns = {bk: compile_terms(exprs, coords=row.coords, fields=row.fields, apply=mlp,
                             strategy=strategy)
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


def cpu_ghz() -> float:
    """Nominal clock from /proc/cpuinfo ('cpu MHz'), else 2.45 GHz."""
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(m) for m in re.findall(r"cpu MHz\s*:\s*([\d.]+)", f.read())]
        if mhz:
            return max(mhz) / 1000.0
    except OSError:
        pass
    return 2.45


def n_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def fp32_peak(cores: int | None = None) -> float:
    """FP32 peak in GFLOP/s, assuming AVX2 + FMA with two 256-bit FMA pipes per
    core (AMD Zen 2/3, Intel Haswell and later): 2 pipes x 8 lanes x 2 flops =
    32 flop/cycle/core, at the nominal clock (turbo ignored)."""
    cores = cores or n_cores()
    return 32.0 * cpu_ghz() * cores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="a,b,c,d,e")
    ap.add_argument("--quick", action="store_true", help="few steps and one repeat")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--strategies", default="",
                    help="also time the DSL with these strategies forced, e.g. taylor,jvp,jet")
    args = ap.parse_args(argv)
    steps = args.steps or (10 if args.quick else 200)
    repeats = args.repeats or (1 if args.quick else 3)
    extra = [s for s in args.strategies.split(",") if s]
    peak = fp32_peak()
    malloc = {k: os.environ[k] for k in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                                         "MALLOC_ARENA_MAX") if k in os.environ}
    print(f"jax {jax.__version__}, {platform.processor() or platform.machine()}, "
          f"{n_cores()} cores, {jax.devices()[0].platform}, FP32 peak ~{peak:.0f} GFLOP/s "
          f"(32 flop/cycle/core at {cpu_ghz():.2f} GHz), malloc env {malloc or 'default'}")
    print(f"{steps} Adam steps per timed call in lax.scan, min of {repeats} interleaved calls")
    head = (f"{'row':<36}{'dsl ms':>9}{'jvp ms':>9}{'best ms':>9}"
            + "".join(f"{'dsl-' + s:>11}" for s in extra)
            + f"{'ratio':>7}{'GFLOP/s':>9}{'%peak':>7}")
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
        ref = min(v for k, v in ms.items() if k != "dsl")
        gfs = flops / (best["dsl"] * 1e9)
        print(f"({rk}) {row.name:<32}{ms['dsl']:9.2f}{ms['jvp']:9.2f}{ms['best']:9.2f}"
              + "".join(f"{ms['dsl-' + s]:11.2f}" for s in extra)
              + f"{ms['dsl'] / ref:7.2f}{gfs:9.1f}{100 * gfs / peak:6.1f}%", flush=True)


if __name__ == "__main__":
    main()
