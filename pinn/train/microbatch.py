"""Large batches on one device: micro-batches with gradient accumulation.

``Training(micro_batch=S)`` streams each batch through the loss in ``m`` micro-batches of at
most ``S`` points per device (in the largest point set); every point set is split into the
same ``m`` equal parts (micro-batch ``j`` holds rows ``j, j + m, j + 2m, ...``, so each part
keeps the device sharding), and the loss and its gradient are the means over the parts. A
loss term is a mean over its points, so this is the full-batch loss and gradient to rounding,
while only one micro-batch's derivatives and activations are alive at a time.

The accumulation is a ``custom_vjp``: the forward pass of the differentiated loss computes
the accumulated gradient, so it serves any optimiser that differentiates the loss once (Adam,
L-BFGS and its line search). Terms that are not means over points (causal weighting) cannot
be split; :func:`count` refuses them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from .result import warn
from .weighting import Causal

__all__ = ["count", "split", "accumulated", "batch_points"]


def batch_points(batch_shape: Any) -> int:
    """The largest first-axis length among the batch's leaves (0 for an empty batch)."""
    return max((x.shape[0] for x in jax.tree.leaves(batch_shape) if len(x.shape) >= 1),
               default=0)


def count(micro_batch: int | None, batch_shape: Any, devices: int = 1) -> int:
    """The number of micro-batches ``m`` for at most ``micro_batch`` points per device.

    ``m`` is the smallest count that gives micro-batches of at most ``micro_batch`` points
    and splits every point set evenly over ``devices * m``; 1 when ``micro_batch`` is None
    or the batch already fits.
    """
    if micro_batch is None:
        return 1
    lengths = [x.shape[0] for x in jax.tree.leaves(batch_shape) if len(x.shape) >= 1]
    if not lengths:
        return 1
    need = math.ceil(max(lengths) / (devices * micro_batch))
    if need <= 1:
        return 1
    g = math.gcd(*lengths)
    for m in range(need, g // devices + 1):
        if g % (devices * m) == 0:
            return m
    raise ValueError(
        f"micro_batch={micro_batch}: the point sets ({', '.join(map(str, sorted(set(lengths))))}"
        f" points) cannot be split into {need} or more equal micro-batches"
        + (f" on each of {devices} devices" if devices > 1 else "")
        + "; choose point counts with a large common factor (e.g. powers of two: "
        "interior 65536, boundary 8192) or a larger micro_batch.")


def split(batch: Any, m: int) -> Any:
    """``[n, ...] -> [m, n / m, ...]`` for every leaf: part ``j`` holds rows ``j::m``."""

    def one(x):
        parts = jnp.reshape(x, (x.shape[0] // m, m, *x.shape[1:]))
        return jnp.moveaxis(parts, 1, 0)

    return jax.tree.map(one, batch)


def _mean_over(fn: Callable, p: Any, batch: Any, w: Any, m: int) -> Any:
    parts = split(batch, m)
    first = jax.tree.map(lambda x: x[0], parts)
    zero = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(fn, p, first, w))

    def body(total, part):
        return jax.tree.map(jnp.add, total, fn(p, part, w)), None

    total, _ = jax.lax.scan(body, zero, parts)
    return jax.tree.map(lambda t: t / jnp.asarray(m, t.dtype), total)


def accumulated(weighted: Callable, m: int) -> Callable:
    """``weighted(params, batch, weights) -> (loss, aux)`` computed over ``m`` micro-batches.

    The value is the mean of the micro-batches' values; the gradient with respect to
    ``params`` is accumulated in the same pass (only the loss is differentiable: ``aux`` gets
    no gradient, nor do ``batch`` and ``weights``).
    """
    if m == 1:
        return weighted
    value_and_grad = jax.value_and_grad(weighted, has_aux=True)

    @jax.custom_vjp
    def micro(p, batch, w):
        return _mean_over(weighted, p, batch, w, m)

    def fwd(p, batch, w):
        out, grads = _mean_over(value_and_grad, p, batch, w, m)
        return out, (grads, batch, w)

    def bwd(res, ct):
        grads, batch, w = res
        ct_loss = ct[0]
        return (jax.tree.map(lambda g: (ct_loss * g).astype(g.dtype), grads),
                jax.tree.map(jnp.zeros_like, batch), jax.tree.map(jnp.zeros_like, w))

    micro.defvjp(fwd, bwd)
    return micro


def _points(batch: Any) -> int:
    """Points in a batch: one count per entry (a boundary entry's points and normals: one)."""
    if isinstance(batch, dict):
        return int(sum(jax.tree.leaves(v)[0].shape[0] for v in batch.values()
                       if jax.tree.leaves(v)))
    return batch_points(batch)


def _step_bytes(loss: Callable, params: Any, batch: Any) -> int:
    compiled = jax.jit(jax.grad(loss)).lower(params, batch).compile()
    m = compiled.memory_analysis()
    if m is None:
        raise ValueError("memory per point: this backend gives no memory analysis")
    return int(m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)


def memory_per_point(terms_fn: Callable, params: Any, batch: Any) -> dict:
    """Device memory of one gradient of the loss per collocation point, measured.

    XLA's memory analysis of the compiled gradient (buffers of arguments, outputs and
    temporaries) at ``batch`` and at half of it; the slope is the bytes per point, what a
    micro-batch of ``n`` points costs beyond the parameters. Returns ``{"bytes_per_point",
    "fixed_bytes", "points", "device", "device_bytes", "points_that_fit"}`` (the last two None
    where the device does not say its memory, as on CPU).
    """

    def loss(p, b):
        out = terms_fn(p, b)
        terms = out[0] if isinstance(out, tuple) else out
        return sum(terms.values())

    half = jax.tree.map(lambda x: x[: max(1, x.shape[0] // 2)], batch)
    n_full, n_half = _points(batch), _points(half)
    full, low = _step_bytes(loss, params, batch), _step_bytes(loss, params, half)
    per_point = max(0.0, (full - low) / max(1, n_full - n_half))
    device = jax.devices()[0]
    stats = getattr(device, "memory_stats", lambda: None)() or {}
    limit = stats.get("bytes_limit")
    fixed = max(0.0, full - per_point * n_full)
    fits = int((limit - fixed) / per_point) if limit and per_point > 0 else None
    return {"bytes_per_point": per_point, "fixed_bytes": fixed, "points": n_full,
            "device": f"{device.platform}:{getattr(device, 'device_kind', '')}",
            "device_bytes": limit, "points_that_fit": fits}


def for_weighting(micro_batch: int | None, batch_shape: Any, sharding: Any, weighting: Any) -> int:
    """Micro-batches per step; refuses a weighting whose terms are not means over points."""
    if micro_batch is None:
        return 1
    if isinstance(micro_batch, bool) or not isinstance(micro_batch, int) or micro_batch < 1:
        raise ValueError(f"run: micro_batch must be an integer >= 1 (points per micro-batch "
                         f"and device) or None, got {micro_batch!r}.")
    m = count(micro_batch, batch_shape, 1 if sharding is None else sharding.size)
    if m > 1 and isinstance(weighting, Causal):
        raise ValueError(
            "run: micro_batch cannot split causally weighted terms (their weights depend on "
            "every point of the batch); use a larger micro_batch (or none) with Causal, or "
            "another weighting.")
    if m > 1 and type(weighting).__name__ == "GradNorm":
        warn("run: GradNorm recomputes its weights on the whole batch (not in micro-batches); "
             "its memory is that of one full-batch gradient per term.", RuntimeWarning)
    return m
