"""Building blocks: activations, fixed buffers and the dense layer (with optional RWF)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

Activation = str | Callable[[jax.Array], jax.Array]

#: Activation names accepted by the networks (a callable is accepted as well).
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "sin": jnp.sin,
    "gelu": jax.nn.gelu,
    "swish": jax.nn.silu,
    "silu": jax.nn.silu,
    "softplus": jax.nn.softplus,
    "sigmoid": jax.nn.sigmoid,
    "relu": jax.nn.relu,
}


def activation_fn(activation: Activation) -> Callable[[jax.Array], jax.Array]:
    """The function for an activation name (or the callable itself)."""
    if callable(activation):
        return activation
    try:
        return ACTIVATIONS[activation]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown activation {activation!r}; use one of {sorted(ACTIVATIONS)} or a callable"
        ) from None


def default_dtype(dtype=None) -> jnp.dtype:
    """``dtype``, or the default float type (float64 only when x64 is enabled)."""
    if dtype is None:
        return jax.dtypes.canonicalize_dtype(jnp.float64)
    return jnp.dtype(dtype)


class Buffer(nnx.Variable):
    """A fixed array that belongs to a model but is never trained.

    Input bounds and Fourier matrices are buffers. :func:`pinn.nets.split` keeps
    them out of the trainable parameters (they are closed over by ``apply``).
    """


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def check_input(x: jax.Array, d_in: int, who: str) -> None:
    if x.ndim < 1 or x.shape[-1] != d_in:
        raise ValueError(
            f"{who} takes points of shape [N, {d_in}], got shape {tuple(x.shape)}; "
            f"pass one row per point with its {d_in} coordinates"
        )


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _draw(key: jax.Array, size: int, dtype: np.dtype, truncated: bool) -> jax.Array:
    if truncated:
        return jax.random.truncated_normal(key, -2.0, 2.0, (size,), dtype)
    return jax.random.normal(key, (size,), dtype)


def standard_normal(key: jax.Array, shape: tuple[int, ...], dtype, *, truncated: bool = False):
    """``N(0, 1)`` draws (truncated to ``[-2, 2]`` if asked) of any shape.

    XLA compiles a random kernel for every new shape, and on small CPUs those
    compiles dominate the time to build a network. Drawing a power-of-two size
    (at least 256) and cutting it to shape needs one kernel per size bucket.
    With a concrete key the result is a numpy array (so the arithmetic of the
    initialisers compiles nothing either); under tracing it is a traced array.
    """
    n = math.prod(shape)
    size = max(256, 1 << max(n - 1, 0).bit_length())
    flat = _draw(key, size, np.dtype(dtype), truncated)
    if isinstance(flat, jax.core.Tracer):
        return flat[:n].reshape(shape)
    return np.asarray(flat)[:n].reshape(shape)


def _xp(a):
    return np if isinstance(a, np.ndarray) else jnp


def glorot_normal(key: jax.Array, d_in: int, d_out: int, dtype):
    """Glorot/Xavier normal ``[d_in, d_out]``: truncated normal with variance ``2/(d_in+d_out)``
    (as ``jax.nn.initializers.glorot_normal``)."""
    std = math.sqrt(2.0 / (d_in + d_out)) / 0.87962566103423978  # std of N(0,1) on [-2, 2]
    return standard_normal(key, (d_in, d_out), dtype, truncated=True) * std


class Dense(nnx.Module):
    """``y = x W + b`` with Glorot-normal ``W`` and zero ``b``.

    With random weight factorisation (``rwf=(mean, std)``, Wang et al. 2022) the
    kernel is stored as ``W = V · diag(exp(s))`` (one scale per output neuron),
    ``s ~ N(mean, std)``, and ``V = W0 / exp(s)`` so that ``W`` starts at the
    Glorot draw ``W0``; ``V`` and ``s`` are the trained parameters.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        *,
        rwf: tuple[float, float] | None = None,
        dtype=None,
        rngs: nnx.Rngs,
    ):
        dtype = default_dtype(dtype)
        w = glorot_normal(rngs.params(), d_in, d_out, dtype)
        self.bias = nnx.Param(jnp.asarray(np.zeros((d_out,), dtype)))
        if rwf is None:
            self.log_scale = nnx.data(None)
            self.kernel = nnx.Param(jnp.asarray(w, dtype))
        else:
            mean, std = rwf
            s = mean + std * standard_normal(rngs.params(), (d_out,), dtype)
            self.log_scale = nnx.Param(jnp.asarray(s, dtype))
            self.kernel = nnx.Param(jnp.asarray(w / _xp(s).exp(s), dtype))

    def weight(self) -> jax.Array:
        """The effective kernel ``W`` (``V · diag(exp(s))`` under RWF)."""
        if self.log_scale is None:
            return self.kernel[...]
        return self.kernel[...] * jnp.exp(self.log_scale[...])

    def __call__(self, x: jax.Array) -> jax.Array:
        return x @ self.weight() + self.bias[...]
