"""Optimisers as objects, and training stages.

Each optimiser is a frozen description with defaults; ``make(total_steps)`` turns it into an
optax transformation for a stage of ``total_steps`` steps (the schedules need the length).
The loop (:func:`pinn.train.run`) treats first-order optimisers (:class:`Adam`,
:class:`AdamW`) and :class:`LBFGS` differently: L-BFGS runs full batch with a line search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax

__all__ = ["Adam", "AdamW", "LBFGS", "Optax", "Stage", "Optimizer", "as_optimizer"]

Decay = Literal["exponential", "cosine"] | None
_DECAYS = (None, "exponential", "cosine")


def _check_positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{owner}: {name} must be a finite number {bound}, got {value!r}.")


def _check_int(owner: str, name: str, value: Any, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}.")


def _pde_mask(params: Any) -> Any:
    """True for leaves that get weight decay: everything except ``params["pde"]``."""
    if isinstance(params, dict) and "pde" in params:
        return {k: jax.tree.map(lambda _, keep=(k != "pde"): keep, v) for k, v in params.items()}
    return jax.tree.map(lambda _: True, params)


@dataclass(frozen=True)
class Adam:
    """Adam with optional linear warm-up, a decay schedule and gradient clipping.

    Args:
        lr: peak learning rate.
        warmup: steps of linear warm-up from 0 to ``lr``.
        decay: ``None`` (constant after warm-up), ``"exponential"`` (``lr * decay_rate **
            (k / decay_steps)`` after warm-up) or ``"cosine"`` (to 0 over ``decay_steps``).
        decay_rate: factor per ``decay_steps`` for exponential decay.
        decay_steps: exponential: steps per factor ``decay_rate`` (default: a tenth of the
            stage after warm-up); cosine: length of the decay (default: the rest of the stage).
        b1, b2, eps: Adam's moment rates and denominator guard.
        clip: clip gradients to this global norm before Adam (``None``: no clipping).
    """

    lr: float = 1e-3
    warmup: int = 0
    decay: Decay = None
    decay_rate: float = 0.9
    decay_steps: int | None = None
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    clip: float | None = None

    full_batch = False  # resampling happens during this optimiser's stages

    def __post_init__(self) -> None:
        name = type(self).__name__
        _check_positive(name, "lr", self.lr)
        _check_int(name, "warmup", self.warmup, minimum=0)
        if self.decay not in _DECAYS:
            raise ValueError(
                f"{name}: decay must be None, 'exponential' or 'cosine', got {self.decay!r}."
            )
        _check_positive(name, "decay_rate", self.decay_rate)
        if self.decay_steps is not None:
            _check_int(name, "decay_steps", self.decay_steps, minimum=1)
        for field in ("b1", "b2"):
            value = getattr(self, field)
            if not (isinstance(value, (int, float)) and 0 <= value < 1):
                raise ValueError(f"{name}: {field} must lie in [0, 1), got {value!r}.")
        _check_positive(name, "eps", self.eps, allow_zero=True)
        if self.clip is not None:
            _check_positive(name, "clip", self.clip)

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


@dataclass(frozen=True)
class AdamW(Adam):
    """Adam with decoupled weight decay (:class:`Adam`'s arguments plus ``weight_decay``).

    The decay applies to the network only, never to learnable PDE parameters
    (``params["pde"]``), which would otherwise be pulled towards zero.
    """

    weight_decay: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_positive("AdamW", "weight_decay", self.weight_decay, allow_zero=True)

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
class LBFGS:
    """L-BFGS (optax) with a zoom line search, run full batch.

    It runs its stage's step count unless it has converged: the gradient norm fell to
    ``gtol``, or it has stalled: a step no longer changes the parameters or no longer
    lowers the loss (the line search found no decrease: the loss is at its rounding
    floor, which float32 reaches long before the optimum). A step whose line search
    lands on a non-finite loss is rejected and ends the stage with a warning. The reason
    and step are reported in ``TrainResult.stages``.

    Args:
        memory: number of curvature pairs kept.
        max_linesearch_steps: zoom line-search iterations per step.
        gtol: stop when the gradient norm of the weighted loss is at most this.
        linesearch: an optax line search to use instead of the zoom line search.
    """

    memory: int = 20
    max_linesearch_steps: int = 30
    gtol: float = 0.0
    linesearch: Any = None

    full_batch = True
    line_search = True  # the update takes the loss function (value_fn)
    supports_mixed = True  # Stage precision "mixed": float32, then float64 once stalled

    def __post_init__(self) -> None:
        _check_int("LBFGS", "memory", self.memory, minimum=1)
        _check_int("LBFGS", "max_linesearch_steps", self.max_linesearch_steps, minimum=1)
        _check_positive("LBFGS", "gtol", self.gtol, allow_zero=True)

    def make(self, total_steps: int) -> optax.GradientTransformationExtraArgs:
        """The optax transformation (its update needs ``value``, ``grad``, ``value_fn``)."""
        del total_steps
        linesearch = self.linesearch
        if linesearch is None:
            linesearch = optax.scale_by_zoom_linesearch(
                max_linesearch_steps=self.max_linesearch_steps, initial_guess_strategy="one"
            )
        return optax.lbfgs(memory_size=self.memory, linesearch=linesearch)

    def fresh_memory(self, opt_state: Any) -> jax.Array:
        """Whether the curvature memory is empty (at most one step since (re)start)."""
        return opt_state[0].count <= 1


@dataclass(frozen=True)
class Optax:
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

    full_batch = False

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


def as_optimizer(obj: Any) -> Any:
    """``obj`` as a stage optimiser: a pinn optimiser (anything with ``make(total_steps)``)
    as it is, an optax transformation or a factory ``steps -> transformation`` wrapped in
    :class:`Optax`."""
    if hasattr(obj, "make") and not _is_transformation(obj):
        return obj
    if _is_transformation(obj) or (callable(obj) and not isinstance(obj, type)):
        return Optax(obj)
    raise TypeError(
        "Stage: optimizer must be a pinn optimiser (pinn.Adam(), pinn.LBFGS()), an "
        "optax.GradientTransformation (optax.adamw(1e-3)) or a function steps -> "
        f"transformation, got {obj!r}."
    )


Optimizer = Adam | AdamW | LBFGS | Optax

#: A stage's precision that starts in float32 and goes on in float64 (:class:`Stage`).
MIXED = "mixed"


def precision_bits(precision: int | str | None, escalated: bool = False) -> int | None:
    """The float width a stage of ``precision`` runs in now: a ``"mixed"`` stage 32, or 64
    once ``escalated``; 32, 64 and ``None`` (the run's) as they are."""
    if precision == MIXED:
        return 64 if escalated else 32
    return precision


@dataclass(frozen=True)
class Stage:
    """One training stage: ``steps`` steps of ``optimizer``, starting from the last parameters.

    ``optimizer``: :class:`Adam`, :class:`AdamW`, :class:`LBFGS`, or any optax
    transformation (``Stage(optax.adamw(1e-3), 1000)``) or factory ``steps ->
    transformation`` (wrapped in :class:`Optax`). ``precision``: 32 or 64 to run this stage
    in float32 or float64 whatever the others do (the parameters and the optimiser-relevant
    state are converted once, when the stage starts); ``"mixed"`` (a line-search stage:
    L-BFGS, SSBroyden) to start it in float32, where each step costs about half, and go on
    in float64 from the step its float32 line search stalls (the loss at float32's rounding
    floor), the state converted once and the curvature memory kept; ``None``: the run's
    precision.
    """

    optimizer: Any
    steps: int
    precision: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "optimizer", as_optimizer(self.optimizer))
        _check_int("Stage", "steps", self.steps, minimum=1)
        if self.precision not in (None, 32, 64, MIXED) or isinstance(self.precision, bool):
            raise ValueError(f"Stage: precision must be 32, 64, 'mixed' or None (the run's), "
                             f"got {self.precision!r}.")
        if self.precision == MIXED and not getattr(self.optimizer, "supports_mixed", False):
            raise ValueError(
                f"Stage: precision 'mixed' (float32, then float64 once the line search stalls) "
                f"needs a quasi-Newton optimiser with a line search (LBFGS, SSBroyden, "
                f"SSBFGS), got "
                f"{type(self.optimizer).__name__}; give it 32 or 64.")

    @property
    def full_batch(self) -> bool:
        return bool(getattr(self.optimizer, "full_batch", False))

    @property
    def is_lbfgs(self) -> bool:
        """Whether the stage runs a line-search quasi-Newton optimiser (L-BFGS, SSBroyden)."""
        return bool(getattr(self.optimizer, "line_search", False))
