"""Overhead of ``pinn.train.run`` against a bare hand-written jitted Adam loop.

A 2-D Poisson residual (-laplacian u = f) on an MLP, resampled on device every 100 steps.
Both loops run the same number of steps after compiling; the bare loop has no NaN guard,
no weighting, no history. Prints one JSON line per configuration.

    python benchmarks/bench_train_loop.py --points 1024 --steps 2000 --width 64
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from pinn.train import Adam, Fixed, GradNorm, Points, Stage, Training, run


def init_mlp(key, sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        key, k = jax.random.split(key)
        layers.append({"w": jax.random.normal(k, (a, b)) * np.sqrt(1.0 / a), "b": jnp.zeros(b)})
    return layers


def mlp(layers, x):
    for layer in layers[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return (x @ layers[-1]["w"] + layers[-1]["b"])[..., 0]


def make_problem(n_points: int):
    def u_single(net, x):
        return mlp(net, x[None])[0]

    def laplacian(net, x):
        return jnp.trace(jax.hessian(lambda y: u_single(net, y))(x))

    def terms_fn(params, batch):
        x, xb = batch["interior"], batch["boundary"]
        f = 2 * jnp.pi**2 * jnp.sin(jnp.pi * x[:, 0]) * jnp.sin(jnp.pi * x[:, 1])
        lap = jax.vmap(lambda p: laplacian(params["net"], p))(x)
        return {
            "poisson": jnp.mean((-lap - f) ** 2),
            "walls": jnp.mean(mlp(params["net"], xb) ** 2),
        }

    def sample_fn(key, params):
        k1, k2, k3 = jax.random.split(key, 3)
        x = jax.random.uniform(k1, (n_points, 2))
        t = jax.random.uniform(k2, (n_points // 4,))
        side = jax.random.randint(k3, (n_points // 4,), 0, 4)
        xb = jnp.stack(
            [
                jnp.where(side == 0, 0.0, jnp.where(side == 1, 1.0, t)),
                jnp.where(side == 2, 0.0, jnp.where(side == 3, 1.0, t)),
            ],
            axis=1,
        )
        return {"interior": x, "boundary": xb}

    return terms_fn, sample_fn


def bare_loop(terms_fn, sample_fn, params, key, steps, lr, resample_every):
    tx = optax.adam(lr)

    def loss(p, batch):
        return sum(terms_fn(p, batch).values())

    def body(i, carry):
        p, opt, key, batch = carry

        def resample(args):
            key, _ = args
            key, sub = jax.random.split(key)
            return key, sample_fn(sub, p)

        key, batch = jax.lax.cond(i % resample_every == 0, resample, lambda a: a, (key, batch))
        g = jax.grad(loss)(p, batch)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, key, batch

    @jax.jit
    def chunk(carry, n):
        return jax.lax.fori_loop(0, n, body, carry)

    key, sub = jax.random.split(key)
    carry = (params, tx.init(params), key, sample_fn(sub, params))
    t0 = time.perf_counter()
    jax.block_until_ready(chunk(carry, 1))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = jax.block_until_ready(chunk(carry, steps))
    run_s = time.perf_counter() - t0
    return compile_s, run_s, float(loss(out[0], out[3]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--x64", action="store_true")
    args = ap.parse_args()
    with jax.enable_x64(args.x64):
        terms_fn, sample_fn = make_problem(args.points)
        sizes = [2] + [args.width] * args.depth + [1]
        params = {"net": init_mlp(jax.random.key(0), sizes)}
        key = jax.random.key(1)
        compile_s, run_s, bare_loss = bare_loop(
            terms_fn, sample_fn, params, key, args.steps, 1e-3, 100
        )
        base = {
            "device": jax.devices()[0].device_kind,
            "points": args.points,
            "width": args.width,
            "depth": args.depth,
            "steps": args.steps,
            "x64": args.x64,
        }
        print(
            json.dumps(
                {
                    **base,
                    "loop": "bare",
                    "compile_s": round(compile_s, 2),
                    "steps_per_s": round(args.steps / run_s, 1),
                    "loss": bare_loss,
                }
            ),
            flush=True,
        )
        for name, weighting in (("run/Fixed", Fixed()), ("run/GradNorm", GradNorm(every=100))):
            t0 = time.perf_counter()
            training = Training([Stage(Adam(lr=1e-3), args.steps)],
                                points=Points(resample_every=100), chunk=args.chunk,
                                eval_every=None, checkpoint_every=None)
            result = run(terms_fn, params, training, sample_fn=sample_fn, key=key,
                         weighting=weighting, progress=False)
            wall = time.perf_counter() - t0
            print(
                json.dumps(
                    {
                        **base,
                        "loop": name,
                        "compile_s": round(result.compile_seconds, 2),
                        "steps_per_s": round(args.steps / result.train_seconds, 1),
                        "wall_s": round(wall, 2),
                        "loss": result.history[-1]["loss"],
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
