"""Model specifications: networks described before the problem fixes their dimensions.

A spec is a frozen dataclass (hashable, printable, YAML-friendly). The problem
supplies the rest when the network is built::

    spec = MLP(width=64, depth=4, activation="tanh", fourier=Fourier(scale=2.0, features=64))
    module = spec.build(d_in=3, d_out=1, key=jax.random.key(0), bounds=domain.bounds)
    apply, params = split(module)

``spec.to_data()`` gives its constructor's arguments (the run format,
:mod:`pinn.serialize`); an activation given as a Python callable is not data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jax
import numpy as np
from flax import nnx

from pinn.data import init_fields, register
from pinn.nets._embeddings import _periods
from pinn.nets._fieldnets import FieldNetworksModule, field_groups
from pinn.nets._layers import ACTIVATIONS, Activation, activation_fn, check_positive_int
from pinn.nets._networks import MLPModule, ModifiedMLPModule, PirateNetModule


def _spec_data(spec) -> dict:
    """A spec's constructor arguments (the run format, :mod:`pinn.serialize`)."""
    return init_fields(spec)


@register("model")
@dataclass(frozen=True)
class Fourier:
    """Random Fourier features ``[cos(x B), sin(x B)]``, ``B ~ N(0, scale²)`` of shape
    ``[d, features]`` (so ``2·features`` outputs); fixed, never trained. ``scale``: an
    angular frequency in the normalised inputs' units (``[-1, 1]``), one number or a tuple
    with one per input coordinate (``B_ij ~ N(0, scale_i²)``; the plan sets it so from the
    frequencies of a problem's sources and values, :mod:`pinn.plan`)."""

    scale: float | tuple[float, ...] = 1.0
    features: int = 64
    to_data = _spec_data

    def __post_init__(self):
        scales = self.scale if isinstance(self.scale, (tuple, list)) else (self.scale,)
        if isinstance(self.scale, list):
            object.__setattr__(self, "scale", tuple(self.scale))
        if not scales or not all(
            isinstance(s, (int, float)) and math.isfinite(s) and s > 0 for s in scales
        ):
            raise ValueError(f"Fourier(scale=...) must be a positive number or a tuple of "
                             f"them, got {self.scale!r}")
        check_positive_int("Fourier(features=...)", self.features)


@register("model")
@dataclass(frozen=True)
class RWF:
    """Random weight factorisation ``W = V·diag(exp(s))``, ``s ~ N(mean, std)``
    (Wang et al. 2022; ``RWF(1.0, 0.1)`` is their usual choice)."""

    mean: float = 1.0
    std: float = 0.1
    to_data = _spec_data

    def __post_init__(self):
        if not math.isfinite(self.mean):
            raise ValueError(f"RWF(mean=...) must be finite, got {self.mean!r}")
        if not (math.isfinite(self.std) and self.std >= 0):
            raise ValueError(f"RWF(std=...) must be a non-negative number, got {self.std!r}")


@register("model")
@dataclass(frozen=True)
class Periodic:
    """Exact periodic input embedding: ``cos(2πk x_i/P), sin(2πk x_i/P)``, ``k = 1..harmonics``.

    ``periods`` maps an input index to its period (``{0: 2.0}``); periods given
    to ``build(periodic=...)`` (usually from the problem's hard periodic
    conditions) are added to these and win on the same index. (Not to be confused
    with the periodic *condition* :class:`pinn.conditions.Periodic`.)

    ``trainable``: input indices whose period is learnt, starting from the one given
    (JAX-PI's trainable time period: a solution periodic in time with a period nobody
    knows, e.g. transport on a periodic domain). The network stays exactly periodic in
    that input, with the period training finds (``frequency_scale`` in its parameters).
    """

    periods: tuple[tuple[int, float], ...] = ()
    harmonics: int = 1
    trainable: tuple[int, ...] = ()

    def __init__(self, periods: Mapping[int, float] | None = None, harmonics: int = 1,
                 trainable: Sequence[int] = ()):
        items = dict(periods or {})
        for i, p in items.items():
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
                raise ValueError(f"Periodic(periods=...) keys are input indices >= 0, got {i!r}")
            if not (math.isfinite(float(p)) and float(p) > 0):
                raise ValueError(f"the period of input {i} must be positive, got {p!r}")
        for i in trainable:
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i not in items:
                raise ValueError(
                    f"Periodic(trainable=...) lists inputs whose period is given in periods= "
                    f"(given: {sorted(items)}), got {i!r}")
        object.__setattr__(
            self, "periods", tuple(sorted((int(i), float(p)) for i, p in items.items()))
        )
        object.__setattr__(
            self, "harmonics", check_positive_int("Periodic(harmonics=...)", harmonics)
        )
        object.__setattr__(self, "trainable", tuple(sorted({int(i) for i in trainable})))

    def to_data(self) -> dict:
        data = {"periods": [list(p) for p in self.periods], "harmonics": self.harmonics}
        if self.trainable:
            data["trainable"] = list(self.trainable)
        return data

    @classmethod
    def from_data(cls, arguments: Mapping) -> Periodic:
        return cls(dict(arguments.get("periods") or ()), arguments.get("harmonics", 1),
                   arguments.get("trainable") or ())


def _check_activation(activation: Activation) -> None:
    if isinstance(activation, str) and activation not in ACTIVATIONS:
        raise ValueError(
            f"unknown activation {activation!r}; use one of {sorted(ACTIVATIONS)} or a callable"
        )
    activation_fn(activation)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Fields shared by every network spec (keyword-only); subclasses add the architecture.

    ``activation``: a name in :data:`ACTIVATIONS` or a callable. ``fourier``,
    ``rwf``, ``periodic``: optional :class:`Fourier`, :class:`RWF`, :class:`Periodic`.
    ``normalize``: map inputs from the domain's bounds to ``[-1, 1]`` (when bounds
    are given to :meth:`build`). ``per_field``: one network of this spec per output
    (field) instead of one shared network (PINNacle's PFNN); fields declared on a subset
    of the coordinates get their own network of those inputs in any case.
    ``output_scale``: one positive number per output (field), by which the network's output
    is multiplied, so that a field of size ``1e4`` is ``1e4`` times an output of order one
    (:func:`pinn.network.build_network` applies it; the plan sets it from the size of the
    field's boundary, initial and data values, :mod:`pinn.plan`); ``None``: 1.
    """

    activation: Activation = "tanh"
    fourier: Fourier | None = None
    rwf: RWF | None = None
    periodic: Periodic | None = None
    normalize: bool = True
    per_field: bool = False
    output_scale: tuple[float, ...] | None = None
    to_data = _spec_data

    def _fourier_scale(self, d_in: int, columns: list[int]):
        """The Fourier scale of a network whose inputs are the problem's ``columns``: one
        number, or one per input (a tuple given per problem coordinate, picked)."""
        scale = self.fourier.scale
        if not isinstance(scale, tuple):
            return scale
        if len(scale) == 1:
            return scale[0]
        if max(columns) >= len(scale) or (columns == list(range(d_in))
                                          and len(scale) != d_in):
            raise ValueError(f"Fourier(scale={scale}) gives {len(scale)} scales; the network "
                             f"has {max(columns) + 1 if columns else d_in} inputs")
        return tuple(scale[i] for i in columns)

    def _common(self, d_in, d_out, key, bounds, periodic, dtype, columns=None) -> dict:
        """The network's constructor arguments; ``periodic``: all periods, merged;
        ``columns``: the problem's input index of each of this network's inputs (a field's
        sub-network; None: all of them, in order)."""
        columns = list(range(d_in)) if columns is None else list(columns)
        trainable = self.periodic.trainable if self.periodic is not None else ()
        return dict(
            activation=self.activation,
            bounds=bounds if self.normalize else None,
            periodic=periodic,
            harmonics=self.periodic.harmonics if self.periodic is not None else 1,
            trainable_periods=[columns.index(i) for i in trainable if i in columns],
            fourier=(self._fourier_scale(d_in, columns), self.fourier.features)
            if self.fourier else None,
            rwf=(self.rwf.mean, self.rwf.std) if self.rwf else None,
            dtype=dtype,
            rngs=nnx.Rngs(params=key),
        )

    def build(
        self,
        d_in: int,
        d_out: int,
        *,
        key: jax.Array,
        bounds=None,
        periodic: Mapping[int, float] | None = None,
        dtype=None,
        inputs: Sequence[Sequence[int]] | None = None,
    ) -> nnx.Module:
        """The network for ``d_in`` inputs and ``d_out`` outputs.

        ``bounds=(lo, hi)``: the domain's bounding box, used to normalise inputs to
        ``[-1, 1]`` (unless ``normalize=False``). ``periodic={index: period}``:
        inputs embedded exactly periodically. ``dtype``: parameter type (default:
        float32, or float64 when x64 is enabled). Same key, same network.

        ``inputs[j]``: the input columns output ``j`` depends on (default: all). When
        some output sees fewer columns, or with ``per_field=True``, the network is a
        :class:`~pinn.nets.FieldNetworksModule`: one network of this spec per group of
        outputs sharing their columns (per output with ``per_field``), each fed only its
        columns (its derivatives along the others are exactly zero); its parameters are
        the sum of theirs.
        """
        check_positive_int("d_in", d_in)
        check_positive_int("d_out", d_out)
        if not isinstance(key, jax.Array):
            raise TypeError(
                f"build(key=...) needs a JAX PRNG key such as jax.random.key(0), got {key!r}"
            )
        periods = dict(self.periodic.periods) if self.periodic is not None else {}
        fixed = _periods(periodic, d_in)
        clash = sorted(set(fixed) & set(self.periodic.trainable if self.periodic else ()))
        if clash:
            raise ValueError(f"inputs {clash} have a hard periodic condition, whose period is "
                             "exact: their period cannot be trainable as well")
        periods.update(fixed)
        periods = _periods(periods, d_in)
        every = tuple(range(d_in))
        if inputs is None:
            inputs = [every] * d_out
        inputs = [tuple(cols) for cols in inputs]
        if len(inputs) != d_out:
            raise ValueError(f"build(inputs=...) needs one column list per output ({d_out}), "
                             f"got {len(inputs)}")
        for cols in inputs:
            if not cols or any(isinstance(c, bool) or not isinstance(c, (int, np.integer))
                               or not 0 <= c < d_in for c in cols):
                raise ValueError(f"build(inputs=...): the columns {list(cols)} must be input "
                                 f"indices in 0..{d_in - 1} (at least one)")
        groups = field_groups(inputs, self.per_field)
        if len(groups) == 1 and groups[0][0] == every:  # one network of all inputs
            return self._network(d_in, d_out, self._common(d_in, d_out, key, bounds, periods,
                                                           dtype))
        nets = []
        for g, (cols, outs) in enumerate(groups):
            sub_bounds = None
            if bounds is not None:
                lo, hi = (np.asarray(b, np.float64).reshape(-1) for b in bounds)
                sub_bounds = (lo[list(cols)], hi[list(cols)])
            sub_periods = {cols.index(i): p for i, p in periods.items() if i in cols}
            kw = self._common(len(cols), len(outs), jax.random.fold_in(key, g), sub_bounds,
                              sub_periods, dtype, columns=cols)
            nets.append(self._network(len(cols), len(outs), kw))
        return FieldNetworksModule(d_in, d_out, nets, [c for c, _ in groups],
                                   [o for _, o in groups])

    def _network(self, d_in: int, d_out: int, kw: dict) -> nnx.Module:
        """The one network of this architecture (``kw``: :meth:`_common`'s arguments)."""
        raise NotImplementedError

    def __post_init__(self):
        _check_activation(self.activation)
        if self.output_scale is not None:
            scale = self.output_scale
            ok = isinstance(scale, (list, tuple)) and len(scale) > 0 and all(
                isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)
                and math.isfinite(v) and v > 0 for v in scale)
            if not ok:
                raise ValueError(f"{type(self).__name__}(output_scale=...) takes one positive "
                                 f"number per field, got {scale!r}")
            object.__setattr__(self, "output_scale", tuple(float(v) for v in scale))
        if not isinstance(self.per_field, bool):
            raise TypeError(f"{type(self).__name__}(per_field=...) is True or False, got "
                            f"{self.per_field!r}")
        for name, kind in (("fourier", Fourier), ("rwf", RWF), ("periodic", Periodic)):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise TypeError(
                    f"{type(self).__name__}({name}=...) takes a {kind.__name__}(...) "
                    f"or None, got {value!r}"
                )


@register("model")
@dataclass(frozen=True)
class MLP(ModelSpec):
    """Multilayer perceptron with ``depth`` hidden layers of ``width`` units.

    >>> MLP(width=64, depth=4, activation="tanh", fourier=Fourier(1.0, 64), rwf=RWF(1.0, 0.1))
    """

    width: int = 64
    depth: int = 4

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("MLP(width=...)", self.width)
        check_positive_int("MLP(depth=...)", self.depth, minimum=0)

    def _network(self, d_in, d_out, kw) -> MLPModule:
        return MLPModule(d_in, d_out, self.width, self.depth, **kw)


@register("model")
@dataclass(frozen=True)
class ModifiedMLP(ModelSpec):
    """Gated MLP of Wang, Teng & Perdikaris (2021): ``H = (1 - Z) ⊙ U + Z ⊙ V``."""

    width: int = 64
    depth: int = 4

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("ModifiedMLP(width=...)", self.width)
        check_positive_int("ModifiedMLP(depth=...)", self.depth)

    def _network(self, d_in, d_out, kw) -> ModifiedMLPModule:
        return ModifiedMLPModule(d_in, d_out, self.width, self.depth, **kw)


@register("model")
@dataclass(frozen=True)
class PirateNet(ModelSpec):
    """Residual gated blocks with adaptive skips ``α`` (0 at start), Wang et al. (2024).

    Defaults follow the paper's recipe at a smaller size: Fourier features
    (scale 1, 64 frequencies) and random weight factorisation ``RWF(1.0, 0.1)``.
    """

    width: int = 64
    blocks: int = 3
    fourier: Fourier | None = field(default=Fourier(1.0, 64), kw_only=True)
    rwf: RWF | None = field(default=RWF(1.0, 0.1), kw_only=True)

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("PirateNet(width=...)", self.width)
        check_positive_int("PirateNet(blocks=...)", self.blocks)

    def _network(self, d_in, d_out, kw) -> PirateNetModule:
        return PirateNetModule(d_in, d_out, self.width, self.blocks, **kw)
