"""Learnable PDE parameters in the optimiser's units: :class:`PdeScale`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["PdeScale", "Sampled"]


@dataclass(frozen=True)
class PdeScale:
    """Learnable PDE parameters trained in units of their initial magnitude.

    The optimiser sees ``theta = value / scale`` (``scale = |initial value|``, 1 for 0), so
    that an Adam step of ``lr`` changes a parameter by the fraction ``lr`` of its size
    whatever its units (a viscosity of 3e-3 would otherwise jump by 30% per step at
    ``lr = 1e-3``). Hashable, so that equal runs share one compiled program.
    """

    scales: tuple[tuple[str, float], ...]

    def physical(self, p: Any) -> Any:
        return self._apply(p, jnp.multiply)

    def internal(self, p: Any) -> Any:
        return self._apply(p, jnp.divide)

    def _apply(self, p: Any, op: Callable) -> Any:
        if not self.scales:
            return p
        pde = dict(p["pde"])
        for k, s in self.scales:
            pde[k] = op(pde[k], jnp.asarray(s, jnp.result_type(pde[k])))
        return {**p, "pde": pde}

    @staticmethod
    def of(params: Any) -> PdeScale:
        pde = params.get("pde") if isinstance(params, Mapping) else None
        if not isinstance(pde, Mapping):
            return PdeScale(())
        scales = []
        for k in sorted(pde):
            v = np.asarray(jax.device_get(pde[k]))
            if v.shape == () and np.issubdtype(v.dtype, np.floating):
                a = float(abs(v))
                scales.append((k, a if math.isfinite(a) and a > 0 else 1.0))
        return PdeScale(tuple(scales))


@dataclass(frozen=True)
class Sampled:
    """``sample_fn(key, f(params))``: a sampler called with the parameters mapped by ``f``
    (equal when ``fn`` and ``f`` are: equal runs share a compiled program)."""

    fn: Callable
    f: Callable

    def __call__(self, key, params):
        return self.fn(key, self.f(params))
