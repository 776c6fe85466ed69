"""Optimisers as objects: the :class:`Optimizer` protocol and the first-order ones.

Each optimiser is a frozen description with defaults that declares what it can do in class
variables (``full_batch``, ``prefers_float64``, ``supports_mixed``), read by the training
core and the precision rule, never probed. It gives the state a stage starts from
(:meth:`Optimizer.init`) and the step the core runs (:meth:`Optimizer.step`):

- :class:`FirstOrder` (:class:`Adam`, :class:`AdamW`, SOAP, :class:`Optax`): an optax
  transformation (``make(total_steps)``; the schedules need the stage's length), on a
  batch redrawn every ``Points.resample_every`` steps;
- :class:`pinn.train.quasi_newton.LineSearch` (L-BFGS, SSBroyden, SSBFGS): a quasi-Newton
  direction and one strong-Wolfe line search, full batch;
- Gauss-Newton and Levenberg-Marquardt (:mod:`pinn.train.gauss_newton`): their own step on
  the residual vector, full batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import optax

from pinn.data import register

__all__ = ["Optimizer", "FirstOrder", "Adam", "AdamW", "Optax", "as_optimizer"]

Decay = Literal["exponential", "cosine"] | None
_DECAYS = (None, "exponential", "cosine")


def check_positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    """``ValueError`` naming ``owner.name`` unless ``value`` is a finite number > 0 (>= 0)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{owner}: {name} must be a finite number {bound}, got {value!r}.")


def check_int(owner: str, name: str, value: Any, *, minimum: int) -> None:
    """``ValueError`` naming ``owner.name`` unless ``value`` is an integer >= ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}.")


def _pde_mask(params: Any) -> Any:
    """True for leaves that get weight decay: everything except ``params["pde"]``."""
    if isinstance(params, dict) and "pde" in params:
        return {k: jax.tree.map(lambda _, keep=(k != "pde"): keep, v) for k, v in params.items()}
    return jax.tree.map(lambda _: True, params)


class Optimizer:
    """The protocol of a stage's optimiser.

    Capabilities (class variables, read by the core and the precision rule):

    - ``full_batch``: its stage keeps its batch between steps (not redrawn every
      ``Points.resample_every`` steps; it may redraw on its own schedule), and a roll-back
      restarts its state at the last good point;
    - ``prefers_float64``: ``precision: auto`` ends its stage in float64;
    - ``supports_mixed``: its stage may run ``"mixed"`` (float32 until its line search
      stalls at float32's rounding floor, then float64 with the state kept: it provides
      ``refresh``, :class:`~pinn.train.quasi_newton.LineSearch`).

    Methods: :meth:`init` (the state a stage starts from), :meth:`step` (the core's step
    function) and :meth:`rate` (the history's ``lr`` column).
    """

    full_batch: ClassVar[bool] = False
    prefers_float64: ClassVar[bool] = False
    supports_mixed: ClassVar[bool] = False

    def init(self, params: Any, total_steps: int) -> Any:
        """The optimiser's state at the start of a stage of ``total_steps`` steps."""
        raise NotImplementedError(f"{type(self).__name__} does not define init()")

    def step(self, spec: Any, weighted: Callable) -> Callable:
        """The training core's step ``state -> (state, finite, gradient norm)``
        (:mod:`pinn.train.steps`) for the stage ``spec`` (its terms, sampler, weighting,
        length) on the weighted loss ``weighted(params, batch, weights) -> (loss, aux)``."""
        raise NotImplementedError(f"{type(self).__name__} does not define step()")

    def rate(self, state: Any, n: jax.Array, total_steps: int) -> jax.Array:
        """The learning rate (or step length) of the core's ``state`` after ``n`` steps of
        a stage of ``total_steps``, for the history; NaN when it has none."""
        return jnp.asarray(jnp.nan)


class FirstOrder(Optimizer):
    """A first-order optimiser: the optax transformation :meth:`make` gives for a stage."""

    def make(self, total_steps: int) -> optax.GradientTransformation:
        """The optax transformation for a stage of ``total_steps`` steps."""
        raise NotImplementedError(f"{type(self).__name__} does not define make()")

    def schedule(self, total_steps: int) -> optax.Schedule:
        """The learning rate as a function of the step within a stage (NaN: not known)."""
        return lambda step: jnp.asarray(jnp.nan)

    def init(self, params: Any, total_steps: int) -> Any:
        return self.make(total_steps).init(params)

    def step(self, spec: Any, weighted: Callable) -> Callable:
        from .steps import first_order_step

        return first_order_step(spec, weighted, self.make(spec.steps))

    def rate(self, state: Any, n: jax.Array, total_steps: int) -> jax.Array:
        return self.schedule(total_steps)(n) * state["lr_scale"]


@register("optimizer")
@dataclass(frozen=True)
class Adam(FirstOrder):
    """Adam with optional linear warm-up, a decay schedule and gradient clipping.

    Args:
        lr: peak learning rate.
        warmup: steps of linear warm-up from 0 to ``lr``.
        decay: ``"exponential"`` (the default: ``lr * decay_rate ** (k / decay_steps)`` after
            warm-up), ``"cosine"`` (to 0 over ``decay_steps``) or ``None`` (constant after
            warm-up).
        decay_rate: factor per ``decay_steps`` for exponential decay.
        decay_steps: exponential: steps per factor ``decay_rate`` (default: a tenth of the
            stage after warm-up); cosine: length of the decay (default: the rest of the stage).
        b1, b2, eps: Adam's moment rates and denominator guard.
        clip: clip gradients to this global norm before Adam (``None``: no clipping).
    """

    lr: float = 1e-3
    warmup: int = 0
    decay: Decay = "exponential"
    decay_rate: float = 0.9
    decay_steps: int | None = None
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    clip: float | None = None

    def __post_init__(self) -> None:
        name = type(self).__name__
        check_positive(name, "lr", self.lr)
        check_int(name, "warmup", self.warmup, minimum=0)
        if self.decay not in _DECAYS:
            raise ValueError(
                f"{name}: decay must be None, 'exponential' or 'cosine', got {self.decay!r}."
            )
        check_positive(name, "decay_rate", self.decay_rate)
        if self.decay_steps is not None:
            check_int(name, "decay_steps", self.decay_steps, minimum=1)
        for field in ("b1", "b2"):
            value = getattr(self, field)
            if not (isinstance(value, (int, float)) and 0 <= value < 1):
                raise ValueError(f"{name}: {field} must lie in [0, 1), got {value!r}.")
        check_positive(name, "eps", self.eps, allow_zero=True)
        if self.clip is not None:
            check_positive(name, "clip", self.clip)

    def schedule(self, total_steps: int) -> optax.Schedule:
        """The learning rate as a function of the step within a stage of ``total_steps``."""
        rest = max(1, total_steps - self.warmup)
        if self.decay is None:
            if self.warmup == 0:
                return optax.constant_schedule(self.lr)
            return optax.linear_schedule(0.0, self.lr, self.warmup)
        if self.decay == "exponential":
            steps = self.decay_steps or max(1, rest // 10)
            return optax.warmup_exponential_decay_schedule(
                0.0 if self.warmup else self.lr, self.lr, self.warmup, steps, self.decay_rate
            )
        steps = self.decay_steps or rest
        return optax.warmup_cosine_decay_schedule(
            0.0 if self.warmup else self.lr, self.lr, self.warmup, self.warmup + steps
        )

    def _core(self, schedule: optax.Schedule) -> optax.GradientTransformation:
        return optax.adam(schedule, b1=self.b1, b2=self.b2, eps=self.eps)

    def make(self, total_steps: int) -> optax.GradientTransformation:
        """The optax transformation for a stage of ``total_steps`` steps."""
        tx = self._core(self.schedule(total_steps))
        if self.clip is not None:
            tx = optax.chain(optax.clip_by_global_norm(self.clip), tx)
        return tx


@register("optimizer")
@dataclass(frozen=True)
class AdamW(Adam):
    """Adam with decoupled weight decay (:class:`Adam`'s arguments plus ``weight_decay``).

    The decay applies to the network only, never to learnable PDE parameters
    (``params["pde"]``), which would otherwise be pulled towards zero.
    """

    weight_decay: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("AdamW", "weight_decay", self.weight_decay, allow_zero=True)

    def _core(self, schedule: optax.Schedule) -> optax.GradientTransformation:
        return optax.adamw(
            schedule,
            b1=self.b1,
            b2=self.b2,
            eps=self.eps,
            weight_decay=self.weight_decay,
            mask=_pde_mask,
        )


@dataclass(frozen=True)
class Optax(FirstOrder):
    """Any optax transformation as a stage optimiser (first order, mini-batch).

    ``transform``: an ``optax.GradientTransformation`` (``optax.adamw(1e-3)``), or a
    factory ``steps -> transformation`` for one that needs the stage's length (a schedule:
    ``lambda n: optax.adam(optax.cosine_decay_schedule(1e-3, n))``). ``learning_rate``: a
    number or a schedule ``step -> rate``, only for the history's ``lr`` column (an optax
    transformation does not tell its rate; without it ``lr`` is ``None``). ``name``: how
    logs and checkpoints name it (default: ``"Optax"``). :class:`Stage` wraps a bare
    transformation or factory in this for you. Not for ``optax.lbfgs``: its update needs
    the loss function (use :class:`LBFGS`).
    """

    transform: Any
    learning_rate: Any = None
    name: str = "Optax"

    def __post_init__(self) -> None:
        if not (_is_transformation(self.transform) or callable(self.transform)):
            raise TypeError(
                "Optax: transform must be an optax.GradientTransformation (e.g. "
                f"optax.adamw(1e-3)) or a function steps -> transformation, got "
                f"{self.transform!r}."
            )

    def make(self, total_steps: int) -> optax.GradientTransformation:
        """The transformation (the factory called with ``total_steps``)."""
        if _is_transformation(self.transform):
            return self.transform
        tx = self.transform(total_steps)
        if not _is_transformation(tx):
            raise TypeError(
                f"Optax: the factory {self.transform!r} returned {tx!r} for {total_steps} "
                "steps; it must return an optax.GradientTransformation."
            )
        return tx

    def schedule(self, total_steps: int) -> optax.Schedule:
        """The learning rate for the history (``nan`` when not given)."""
        lr = self.learning_rate
        if lr is None:
            return lambda step: jnp.asarray(jnp.nan)
        return lr if callable(lr) else optax.constant_schedule(lr)

    def __repr__(self) -> str:
        return f"Optax({self.transform!r})" if self.name == "Optax" else self.name


def _is_transformation(obj: Any) -> bool:
    return isinstance(obj, optax.GradientTransformation) or (
        callable(getattr(obj, "init", None)) and callable(getattr(obj, "update", None))
        and not isinstance(obj, type)
    )


def as_optimizer(obj: Any) -> Optimizer:
    """``obj`` as a stage optimiser: an :class:`Optimizer` as it is, an optax
    transformation or a factory ``steps -> transformation`` wrapped in :class:`Optax`."""
    if isinstance(obj, Optimizer):
        return obj
    if _is_transformation(obj) or (callable(obj) and not isinstance(obj, type)):
        return Optax(obj)
    raise TypeError(
        "Stage: optimizer must be a pinn optimiser (pinn.Adam(), pinn.LBFGS()), an "
        "optax.GradientTransformation (optax.adamw(1e-3)) or a function steps -> "
        f"transformation, got {obj!r}."
    )
