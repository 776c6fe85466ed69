"""The networks: plain MLP, modified (gated) MLP and PirateNet.

Every network maps points ``x[N, d_in]`` to outputs ``[N, d_out]`` (any leading
batch shape works) and starts with an :class:`~pinn.nets._embeddings.Embedding`
(normalisation, periodic and Fourier features). ``rwf=(mean, std)`` turns on
random weight factorisation in every dense layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from pinn.nets._embeddings import Embedding
from pinn.nets._layers import Activation, Dense, activation_fn, check_positive_int, default_dtype


def gate(z: jax.Array, u: jax.Array, v: jax.Array) -> jax.Array:
    """``(1 - z) ⊙ u + z ⊙ v``: the gating of the modified MLP and of PirateNet."""
    return u + z * (v - u)


class _Network(nnx.Module):
    """Shared constructor part: dimensions, activation and the embedding."""

    def _setup(
        self, d_in, d_out, activation, bounds, periodic, harmonics, fourier, dtype, rngs,
        trainable_periods=(),
    ) -> int:
        check_positive_int("d_out", d_out)
        self.d_in = d_in
        self.d_out = d_out
        self.activation = activation_fn(activation)
        self.embedding = Embedding(
            d_in,
            bounds=bounds,
            periodic=periodic,
            harmonics=harmonics,
            trainable_periods=trainable_periods,
            fourier=fourier,
            dtype=dtype,
            rngs=rngs,
        )
        return self.embedding.d_out


class MLPModule(_Network):
    """Multilayer perceptron: ``depth`` hidden layers of ``width`` units, linear output.

    ``h_0 = embed(x)``, ``h_k = σ(h_{k-1} W_k + b_k)`` for ``k = 1..depth``,
    ``y = h_depth W + b``. Weights are Glorot-normal, biases zero.

    >>> net = MLPModule(2, 1, width=32, depth=3, bounds=([0, 0], [1, 1]), rngs=nnx.Rngs(0))
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        width: int = 64,
        depth: int = 4,
        activation: Activation = "tanh",
        *,
        bounds=None,
        periodic: Mapping[int, float] | None = None,
        harmonics: int = 1,
        trainable_periods: Sequence[int] = (),
        fourier: tuple[float, int] | None = None,
        rwf: tuple[float, float] | None = None,
        dtype=None,
        rngs: nnx.Rngs,
    ):
        check_positive_int("width", width)
        check_positive_int("depth", depth, minimum=0)
        d = self._setup(d_in, d_out, activation, bounds, periodic, harmonics, fourier, dtype, rngs,
                        trainable_periods)
        layers = []
        for _ in range(depth):
            layers.append(Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs))
            d = width
        self.hidden = nnx.List(layers)
        self.output = Dense(d, d_out, rwf=rwf, dtype=dtype, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        h = self.embedding(x)
        for layer in self.hidden:
            h = self.activation(layer(h))
        return self.output(h)


class ModifiedMLPModule(_Network):
    """Modified MLP of Wang, Teng & Perdikaris (2021), with two gating encoders.

    ``U = σ(h_0 W_u + b_u)``, ``V = σ(h_0 W_v + b_v)`` with ``h_0 = embed(x)``; then
    for ``k = 1..depth``: ``Z_k = σ(h_{k-1} W_k + b_k)``, ``h_k = (1 - Z_k) ⊙ U + Z_k ⊙ V``;
    output ``y = h_depth W + b``. (Layer count as in the authors' code, jaxpi.)
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        width: int = 64,
        depth: int = 4,
        activation: Activation = "tanh",
        *,
        bounds=None,
        periodic: Mapping[int, float] | None = None,
        harmonics: int = 1,
        trainable_periods: Sequence[int] = (),
        fourier: tuple[float, int] | None = None,
        rwf: tuple[float, float] | None = None,
        dtype=None,
        rngs: nnx.Rngs,
    ):
        check_positive_int("width", width)
        check_positive_int("depth", depth)
        d = self._setup(d_in, d_out, activation, bounds, periodic, harmonics, fourier, dtype, rngs,
                        trainable_periods)
        self.encoder_u = Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs)
        self.encoder_v = Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs)
        layers = []
        for _ in range(depth):
            layers.append(Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs))
            d = width
        self.hidden = nnx.List(layers)
        self.output = Dense(width, d_out, rwf=rwf, dtype=dtype, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        h = self.embedding(x)
        u = self.activation(self.encoder_u(h))
        v = self.activation(self.encoder_v(h))
        for layer in self.hidden:
            h = gate(self.activation(layer(h)), u, v)
        return self.output(h)


class PirateBlock(nnx.Module):
    """One PirateNet residual block (Wang, Sankaran, Wang & Perdikaris 2024).

    ``f = σ(x W_1 + b_1)``, ``z_1 = gate(f, U, V)``, ``g = σ(z_1 W_2 + b_2)``,
    ``z_2 = gate(g, U, V)``, ``h = σ(z_2 W_3 + b_3)``, ``x' = α h + (1 - α) x``
    with the trainable scalar ``α`` starting at 0 (the block starts as identity).
    """

    def __init__(self, d: int, width: int, activation, *, rwf, dtype, rngs: nnx.Rngs):
        self.activation = activation
        self.dense_1 = Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs)
        self.dense_2 = Dense(width, width, rwf=rwf, dtype=dtype, rngs=rngs)
        self.dense_3 = Dense(width, d, rwf=rwf, dtype=dtype, rngs=rngs)
        self.alpha = nnx.Param(jnp.asarray(0.0, default_dtype(dtype)))

    def __call__(self, x: jax.Array, u: jax.Array, v: jax.Array) -> jax.Array:
        z = gate(self.activation(self.dense_1(x)), u, v)
        z = gate(self.activation(self.dense_2(z)), u, v)
        h = self.activation(self.dense_3(z))
        alpha = self.alpha[...]
        return alpha * h + (1 - alpha) * x


class PirateNetModule(_Network):
    """PirateNet: gated residual blocks with adaptive skip weights ``α`` (initially 0).

    ``x_0 = embed(x)`` (Fourier features in the paper), ``U = σ(x_0 W_u + b_u)``,
    ``V = σ(x_0 W_v + b_v)``, ``x_l = block_l(x_{l-1}, U, V)`` for ``l = 1..blocks``,
    ``y = x_blocks W + b``. Because every ``α`` starts at 0, at initialisation the
    network is exactly the linear read-out of the embedding,
    ``y = embed(x) W + b`` (see :meth:`embedding_map`).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        width: int = 64,
        blocks: int = 3,
        activation: Activation = "tanh",
        *,
        bounds=None,
        periodic: Mapping[int, float] | None = None,
        harmonics: int = 1,
        trainable_periods: Sequence[int] = (),
        fourier: tuple[float, int] | None = None,
        rwf: tuple[float, float] | None = None,
        dtype=None,
        rngs: nnx.Rngs,
    ):
        check_positive_int("width", width)
        check_positive_int("blocks", blocks)
        d = self._setup(d_in, d_out, activation, bounds, periodic, harmonics, fourier, dtype, rngs,
                        trainable_periods)
        self.encoder_u = Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs)
        self.encoder_v = Dense(d, width, rwf=rwf, dtype=dtype, rngs=rngs)
        self.blocks = nnx.List(
            [
                PirateBlock(d, width, self.activation, rwf=rwf, dtype=dtype, rngs=rngs)
                for _ in range(blocks)
            ]
        )
        self.output = Dense(d, d_out, rwf=rwf, dtype=dtype, rngs=rngs)

    def embedding_map(self, x: jax.Array) -> jax.Array:
        """``embed(x) W + b``: what the network computes while every ``α`` is 0."""
        return self.output(self.embedding(x))

    def __call__(self, x: jax.Array) -> jax.Array:
        h = self.embedding(x)
        u = self.activation(self.encoder_u(h))
        v = self.activation(self.encoder_v(h))
        for block in self.blocks:
            h = block(h, u, v)
        return self.output(h)
