"""Input embeddings: normalisation, exact periodic features and Fourier features.

All three are fixed maps (their arrays are :class:`Buffer`, never trained), except the
periods of periodic inputs marked trainable (a :class:`nnx.Param` scale on their
frequency, as JAX-PI's trainable time period). :class:`Embedding` chains them:
non-periodic coordinates are normalised to ``[-1, 1]``, periodic coordinates become
``cos``/``sin`` harmonics, and the result optionally passes through random Fourier
features.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pinn.nets._layers import (
    Buffer,
    check_input,
    check_positive_int,
    default_dtype,
    standard_normal,
)


def _bounds_arrays(bounds, d_in: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        lo, hi = bounds
        lo = np.asarray(lo, dtype=np.float64).reshape(-1)
        hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must be a pair (lo, hi) of length-{d_in} sequences, got {bounds!r}"
        ) from None
    if lo.shape != (d_in,) or hi.shape != (d_in,):
        raise ValueError(
            f"bounds must give {d_in} lower and {d_in} upper values (one per input), "
            f"got lo={lo.tolist()}, hi={hi.tolist()}"
        )
    if not np.all(np.isfinite(lo)) or not np.all(np.isfinite(hi)) or np.any(hi <= lo):
        raise ValueError(
            f"bounds need finite lo < hi for every input, got lo={lo.tolist()}, hi={hi.tolist()}"
        )
    return lo, hi


class Normalization(nnx.Module):
    """Affine map of the box ``[lo, hi]`` onto ``[-1, 1]^d``: ``2 (x - lo) / (hi - lo) - 1``."""

    def __init__(self, lo: Sequence[float], hi: Sequence[float], *, dtype=None):
        lo, hi = _bounds_arrays((lo, hi), len(np.atleast_1d(lo)))
        dtype = default_dtype(dtype)
        self.d_in = len(lo)
        self.center = Buffer(jnp.asarray((lo + hi) / 2, dtype))
        self.inv_half_width = Buffer(jnp.asarray(2.0 / (hi - lo), dtype))

    def __call__(self, x: jax.Array) -> jax.Array:
        return (x - self.center[...]) * self.inv_half_width[...]


def _periods(periodic: Mapping[int, float] | None, d_in: int) -> dict[int, float]:
    out: dict[int, float] = {}
    for index, period in dict(periodic or {}).items():
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise ValueError(f"periodic maps an input index to a period, got key {index!r}")
        i = int(index) % d_in if -d_in <= int(index) < d_in else None
        if i is None:
            raise ValueError(
                f"periodic input index {index} is out of range for {d_in} inputs "
                f"(valid: 0..{d_in - 1})"
            )
        p = float(period)
        if not np.isfinite(p) or p <= 0:
            raise ValueError(f"the period of input {index} must be positive, got {period!r}")
        out[i] = p
    return dict(sorted(out.items()))


class PeriodicEmbedding(nnx.Module):
    """Exact periodic features of chosen inputs.

    Input ``x_i`` with period ``P`` becomes ``cos(2πk x_i/P), sin(2πk x_i/P)`` for
    ``k = 1..harmonics`` (``2·harmonics`` features), so any function of these
    features is exactly ``P``-periodic in ``x_i``. The phase ``x_i/P`` is reduced
    to ``[-1/2, 1/2]`` before scaling, which keeps high harmonics accurate.
    Takes the periodic columns ``x[..., i]`` in index order, returns ``[..., 2·K·p]``.

    ``trainable``: the columns ``j`` whose period is learnt: its frequency ``1/P`` is the
    given one times a trained factor ``frequency_scale`` (starting at 1), so the network
    stays exactly periodic with whatever period training finds (JAX-PI's trainable time
    period, Wang et al. 2023, for solutions periodic in time of unknown period).
    """

    def __init__(self, periods: Sequence[float], harmonics: int = 1, *,
                 trainable: Sequence[int] = (), dtype=None):
        check_positive_int("harmonics", harmonics)
        dtype = default_dtype(dtype)
        self.d_in = len(periods)
        self.harmonics = harmonics
        self.inv_period = Buffer(jnp.asarray(1.0 / np.asarray(periods, np.float64), dtype))
        self.trainable = tuple(sorted({int(j) for j in trainable}))
        if any(not 0 <= j < self.d_in for j in self.trainable):
            raise ValueError(f"trainable columns {list(self.trainable)} out of range for "
                             f"{self.d_in} periodic inputs")
        self.frequency_scale = (nnx.Param(jnp.ones(len(self.trainable), dtype))
                                if self.trainable else None)

    def periods(self) -> jax.Array:
        """The periods in use (the trained ones included), in column order."""
        return 1.0 / self._inv_period()

    def _inv_period(self) -> jax.Array:
        inv = self.inv_period[...]
        if self.frequency_scale is not None:
            scale = self.frequency_scale[...]
            parts = [scale[self.trainable.index(j)] if j in self.trainable
                     else jnp.ones((), inv.dtype) for j in range(self.d_in)]
            inv = inv * jnp.stack(parts)
        return inv

    def __call__(self, x: jax.Array) -> jax.Array:
        phase = x * self._inv_period()
        phase = phase - jnp.round(phase)
        k = jnp.arange(1, self.harmonics + 1, dtype=phase.dtype)
        angle = (2 * jnp.pi) * (phase[..., :, None] * k)  # [..., p, K]
        features = jnp.concatenate([jnp.cos(angle), jnp.sin(angle)], axis=-1)
        return features.reshape(*x.shape[:-1], 2 * self.harmonics * self.d_in)


class FourierFeatures(nnx.Module):
    """Random Fourier features ``[cos(x B), sin(x B)]``, ``B_ij ~ N(0, scale_i²)``.

    ``B`` has shape ``[d_in, features]`` and is fixed (a :class:`Buffer`); the
    output has ``2·features`` columns. No ``2π`` factor (as in Wang et al.), so
    ``scale`` is an angular frequency in the units of the (normalised) input: one number,
    or one per input (a problem oscillating fast in time but not in space).
    """

    def __init__(self, d_in: int, features: int, scale, *, dtype=None, rngs: nnx.Rngs):
        check_positive_int("features", features)
        scales = np.broadcast_to(np.asarray(scale, np.float64), (d_in,)) if np.ndim(
            scale) == 0 or np.size(scale) == d_in else None
        if scales is None:
            raise ValueError(f"the Fourier feature scale needs one number or one per input "
                             f"({d_in}), got {scale!r}")
        if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
            raise ValueError(f"the Fourier feature scale must be positive, got {scale!r}")
        dtype = default_dtype(dtype)
        self.d_in = d_in
        self.d_out = 2 * features
        B = jnp.asarray(scales, dtype)[:, None] * standard_normal(rngs.params(),
                                                                  (d_in, features), dtype)
        self.B = Buffer(jnp.asarray(B, dtype))

    def __call__(self, x: jax.Array) -> jax.Array:
        z = x @ self.B[...]
        return jnp.concatenate([jnp.cos(z), jnp.sin(z)], axis=-1)


class Embedding(nnx.Module):
    """The input map shared by all networks: ``x[..., d_in] -> features[..., d_out]``.

    1. inputs not in ``periodic`` are normalised with ``bounds`` (when given);
    2. inputs in ``periodic`` (``{index: period}``) become exact periodic features
       (those in ``trainable_periods`` with a learnt period);
    3. the concatenation ``[normalised, periodic]`` goes through Fourier features
       when ``fourier=(scale, features)`` is given.
    """

    def __init__(
        self,
        d_in: int,
        *,
        bounds=None,
        periodic: Mapping[int, float] | None = None,
        harmonics: int = 1,
        trainable_periods: Sequence[int] = (),
        fourier: tuple[float | Sequence[float], int] | None = None,
        dtype=None,
        rngs: nnx.Rngs,
    ):
        check_positive_int("d_in", d_in)
        periods = _periods(periodic, d_in)
        unknown = sorted(set(trainable_periods) - set(periods))
        if unknown:
            raise ValueError(f"trainable periods of inputs {unknown} need those inputs in "
                             f"periodic= (periodic inputs: {sorted(periods)})")
        self.d_in = d_in
        self.periodic_index = tuple(periods)
        self.plain_index = tuple(i for i in range(d_in) if i not in periods)
        normalization = None
        if bounds is not None:
            lo, hi = _bounds_arrays(bounds, d_in)
            if self.plain_index:
                idx = list(self.plain_index)
                normalization = Normalization(lo[idx], hi[idx], dtype=dtype)
        self.normalization = nnx.data(normalization)
        self.periodic = nnx.data(
            PeriodicEmbedding(tuple(periods.values()), harmonics, dtype=dtype,
                              trainable=[j for j, i in enumerate(periods)
                                         if i in trainable_periods])
            if periods else None
        )
        d = len(self.plain_index) + 2 * harmonics * len(periods)
        fourier_features = None
        if fourier is not None:
            scale, features = fourier
            if np.ndim(scale):  # one per input: each feature column's input
                if len(scale) != d_in:
                    raise ValueError(f"the Fourier feature scale needs one number or one "
                                     f"per input ({d_in}), got {scale!r}")
                scale = [scale[i] for i in self.plain_index] + [
                    scale[i] for i in self.periodic_index for _ in range(2 * harmonics)]
            fourier_features = FourierFeatures(d, features, scale, dtype=dtype, rngs=rngs)
            d = fourier_features.d_out
        self.fourier = nnx.data(fourier_features)
        self.d_out = d

    def __call__(self, x: jax.Array) -> jax.Array:
        check_input(x, self.d_in, "the network")
        parts = []
        if self.plain_index:
            h = x if not self.periodic_index else x[..., list(self.plain_index)]
            parts.append(h if self.normalization is None else self.normalization(h))
        if self.periodic is not None:
            parts.append(self.periodic(x[..., list(self.periodic_index)]))
        h = parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-1)
        return h if self.fourier is None else self.fourier(h)
