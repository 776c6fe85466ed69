"""How to train, as data: :class:`Training` (stages, points, weighting, seed, the loop's
cadences), :class:`Points`, :class:`Stage`, the one precision rule and its scope.

The defaults here are the library's and the problem files' alike: the YAML schema
(:mod:`pinn.config.schema`) reads them from these classes.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pinn.geometry.samplers import Uniform

from .optim import Adam, Optimizer, as_optimizer, check_int
from .quasi_newton import SSBroyden
from .weighting import Fixed

__all__ = ["Training", "Points", "Stage", "Stop", "MIXED", "precision_scope", "stage_precisions",
           "run_bits", "precision_bits", "DEFAULT_CHUNK", "default_stages"]

#: Steps per jitted call unless ``Training.chunk`` says otherwise.
DEFAULT_CHUNK = 500
#: A stage's precision that starts in float32 and goes on in float64 (:class:`Stage`).
MIXED = "mixed"


@dataclass(frozen=True)
class Points:
    """How many collocation points each term gets, and how they are drawn.

    ``interior``: points in the (space-time) domain for the equations;
    ``boundary``: points for each boundary condition; ``initial``: points at
    the initial time for each initial condition.  ``resample_every``: draw new
    points every K steps (``None``, or 0 as in YAML: never; stored as ``None``).
    ``sampler``: a geometry sampler object (default :class:`~pinn.geometry.Uniform`); ``rad``:
    residual-based adaptive sampling of the interior points (a ``pinn.geometry.RAD``),
    or None.
    """

    interior: int = 4096
    boundary: int = 1024
    initial: int = 1024
    resample_every: int | None = 100
    sampler: Any = field(default_factory=Uniform)
    rad: Any = None

    def __post_init__(self):
        for name in ("interior", "boundary", "initial"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Points.{name} must be a positive integer, got {v!r}")
        r = self.resample_every
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 0):
            raise ValueError(f"Points.resample_every must be an integer >= 1, or None (never), "
                             f"got {r!r}")
        if r == 0:
            object.__setattr__(self, "resample_every", None)


@dataclass(frozen=True)
class Stage:
    """One training stage: ``steps`` steps of ``optimizer``, starting from the last parameters.

    ``optimizer``: a :class:`~pinn.train.optim.Optimizer` (:class:`~pinn.train.Adam`,
    :class:`~pinn.train.LBFGS`, :class:`~pinn.train.SSBroyden`, ...), or any optax
    transformation (``Stage(optax.adamw(1e-3), 1000)``) or factory ``steps ->
    transformation`` (wrapped in :class:`~pinn.train.Optax`). ``precision``: 32 or 64 to run
    this stage in float32 or float64 whatever the others do (the parameters and the
    optimiser-relevant state are converted once, when the stage starts); ``"mixed"`` (an
    optimiser that ``supports_mixed``: L-BFGS, SSBroyden) to start it in float32, where each
    step costs about half, and go on in float64 from the step its float32 line search stalls
    (the loss at float32's rounding floor), the state converted once and the curvature
    memory kept; ``None``: the run's precision.
    """

    optimizer: Any
    steps: int
    precision: int | str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "optimizer", as_optimizer(self.optimizer))
        check_int("Stage", "steps", self.steps, minimum=1)
        if self.precision not in (None, 32, 64, MIXED) or isinstance(self.precision, bool):
            raise ValueError(f"Stage: precision must be 32, 64, 'mixed' or None (the run's), "
                             f"got {self.precision!r}.")
        if self.precision == MIXED and not self.optimizer.supports_mixed:
            raise ValueError(
                f"Stage: precision 'mixed' (float32, then float64 once the line search stalls) "
                f"needs a quasi-Newton optimiser with a line search (LBFGS, SSBroyden, "
                f"SSBFGS), got {type(self.optimizer).__name__}; give it 32 or 64.")

    @property
    def full_batch(self) -> bool:
        return self.optimizer.full_batch


@dataclass(frozen=True)
class Stop:
    """When a stage is done before its steps run out (checked every ``every`` steps); the
    rest of its steps are not spent, and its report says why it ended.

    - ``residual``: converged once the loss has fallen to ``residual**2`` times the run's
      first loss (at the start the network is near zero, so the residuals are the size of
      the problem's own terms: the residuals are then ``residual`` times smaller than those
      terms); ``None``: never;
    - ``improvement``, ``patience``: the last stage ends on a plateau once the lowest loss
      of the last ``patience`` steps (at least ``patience_fraction`` of the stage) is not
      ``improvement`` (relative) below the lowest before them; ``None``: never. An earlier
      stage is not ended by a plateau (only by convergence): it runs its steps, because
      where the next stage starts matters more than the steps saved (Adam's loss often
      rests for hundreds of steps before it finds, say, a shock: ended there, the
      quasi-Newton stage that follows converges to the smooth wrong solution; DeepXDE's
      Burgers measured 0.37 so, 1.5e-3 without). A ``"mixed"`` stage still in float32
      is not judged before its planned end (its stall at float32's floor sends it on in
      float64); at that end it is, as any stage: a last stage still improving under a time
      limit goes on, in float32 until it stalls.
    """

    residual: float | None = 1e-8
    improvement: float | None = 0.01
    patience: int = 300
    patience_fraction: float = 0.2
    every: int = 100

    def __post_init__(self):
        for name in ("residual", "improvement"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool)
                                      and 0 < v < 1):
                raise ValueError(f"Stop.{name} must be a number in (0, 1) or None, got {v!r}")
        check_int("Stop", "patience", self.patience, minimum=1)
        check_int("Stop", "every", self.every, minimum=1)
        f = self.patience_fraction
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 <= f <= 1:
            raise ValueError(f"Stop.patience_fraction must lie in [0, 1], got {f!r}")

    def window(self, stage_steps: int) -> int:
        """The steps a plateau is judged over in a stage of ``stage_steps``."""
        return max(self.patience, int(self.patience_fraction * stage_steps))


def default_stages() -> tuple[Stage, ...]:
    """The default recipe: a short Adam stage to reach the basin, then self-scaled Broyden
    (full batch, float64, the points redrawn every 500 steps): on the shipped problems it
    ends 2-4 orders of magnitude below Adam + L-BFGS in float32, in less time
    (benchmarks/RESULTS.md). Made for networks of up to a few thousand parameters (the
    default 3 x 30 MLP has ~2 000): its inverse Hessian is dense."""
    return (Stage(Adam(lr=5e-3, decay="exponential", decay_rate=0.98, decay_steps=1000), 2000),
            Stage(SSBroyden(resample_every=500), 3000))


@dataclass(frozen=True)
class Training:
    """How to train: optimiser stages, collocation points, weighting, seed.

    ``chunk``: steps per jitted call (the host sees only chunk boundaries);
    ``eval_every``: steps between evaluations against the exact solution or reference
    (``None``: at the end of each stage); ``checkpoint_every``: steps between checkpoints
    when the run has an output folder (``None``: at the end and on a signal only);
    ``devices``: ``None`` (one device, the single-device program), ``"all"`` or a count:
    data parallel over a device mesh, the points sharded and the parameters replicated
    (:mod:`pinn.train.sharding`); ``micro_batch``: at most this many points per device in
    one pass, the gradient accumulated over micro-batches (:mod:`pinn.train.microbatch`;
    ``None``: the whole batch at once); ``windows``: an evolution problem trained in that
    many time windows one after another, each by these stages, the next starting from the
    previous one's values (:mod:`pinn.marching`); ``stop``: when a stage is done before its
    steps run out (:class:`Stop`; ``None``: every stage runs all its steps);
    ``time_limit``: seconds of wall time for the run (compilation included, summed over
    resumes; ``None``: no limit): each stage but the last ends when its share of the limit
    (its share of the steps) is spent, the run ends at the limit (its report says so, the
    checkpoint is kept), and a last stage that has run its steps while its loss still falls
    (not on ``stop``'s plateau) goes on, a plateau window at a time, until it is done or
    the limit is reached (its report gives the steps it added).
    """

    stages: Sequence[Any] = field(default_factory=default_stages)
    points: Points = field(default_factory=Points)
    weighting: Any = field(default_factory=Fixed)
    seed: int = 0
    chunk: int = DEFAULT_CHUNK
    eval_every: int | None = 1000
    checkpoint_every: int | None = 1000
    devices: int | str | None = None
    micro_batch: int | None = None
    windows: int = 1
    stop: Stop | None = field(default_factory=Stop)
    time_limit: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "stages", tuple(self.stages))
        if self.stop is not None and not isinstance(self.stop, Stop):
            raise TypeError(f"Training.stop must be a pinn.train.Stop(...) or None, got "
                            f"{self.stop!r}")
        if not self.stages:
            raise ValueError("Training needs at least one stage, e.g. Stage(Adam(1e-3), 5000)")
        if not all(isinstance(s, Stage) for s in self.stages):
            raise TypeError(f"Training.stages must be pinn.Stage(optimizer, steps) objects, "
                            f"got {list(self.stages)!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"Training.seed must be an integer, got {self.seed!r}")
        if self.chunk is None:
            object.__setattr__(self, "chunk", DEFAULT_CHUNK)
        for name in ("chunk", "eval_every", "checkpoint_every"):
            v = getattr(self, name)
            if v is not None:
                check_int("Training", name, v, minimum=1)
        from .sharding import check_devices

        check_devices(self.devices)
        w = self.windows
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise ValueError(f"Training.windows must be an integer >= 1 (time windows trained "
                             f"one after another; 1: the whole interval at once), got {w!r}")
        lim = self.time_limit
        if lim is not None and (isinstance(lim, bool) or not isinstance(lim, (int, float))
                                or not math.isfinite(lim) or lim <= 0):
            raise ValueError(f"Training.time_limit must be a number of seconds > 0 (wall time "
                             f"for the run) or None (no limit), got {lim!r}")
        mb = self.micro_batch
        if mb is not None and (isinstance(mb, bool) or not isinstance(mb, int) or mb < 1):
            raise ValueError(f"Training.micro_batch must be an integer >= 1 (points per "
                             f"micro-batch and device) or None (the whole batch), got {mb!r}")

    @property
    def steps(self) -> int:
        """The total number of steps over all stages."""
        return int(sum(s.steps for s in self.stages))

    def stage_precisions(self, precision: int | str | None = None) -> tuple[int | str, ...]:
        """Each stage's float precision (32, 64 or ``"mixed"``) for a run of ``precision``
        (32, 64, or ``None``/``"auto"``): :func:`stage_precisions`."""
        return stage_precisions([s.optimizer for s in self.stages],
                                [s.precision for s in self.stages], precision)

    def with_stage_precisions(self, precision: int | str | None = None) -> Training:
        """These settings with each stage's precision written into it where the stages
        differ (:meth:`stage_precisions`), else as they are (one precision for the run)."""
        precisions = self.stage_precisions(precision)
        if len(set(precisions)) == 1 and precisions[0] != MIXED:
            return self
        stages = [replace(s, precision=p) for s, p in zip(self.stages, precisions, strict=True)]
        return replace(self, stages=stages)


# ---------------------------------------------------------------------------
# precision


def stage_precisions(optimizers: Sequence[Optimizer | type[Optimizer]],
                     own: Sequence[int | str | None],
                     precision: int | str | None = None) -> tuple[int | str, ...]:
    """The precision of each stage: its ``own`` (32, 64 or ``"mixed"``) where it has one,
    else the run's ``precision`` (32 or 64). Under ``auto`` (``None`` or ``"auto"``): 32
    for a stage whose optimiser (an instance or class) does not declare ``prefers_float64``;
    for one that does, ``"mixed"`` where it ``supports_mixed`` (L-BFGS, SSBroyden, SSBFGS:
    float32 until the line search stalls at float32's rounding floor, then float64 with the
    curvature memory kept), else 64 (Gauss-Newton)."""
    if precision not in (None, "auto", 32, 64):
        raise ValueError(f"precision must be 32, 64 or 'auto', got {precision!r}")
    if precision in (32, 64):
        base = [precision] * len(own)
    else:
        base = [(MIXED if o.supports_mixed else 64) if o.prefers_float64 else 32
                for o in optimizers]
    return tuple(o if o is not None else b for o, b in zip(own, base, strict=True))


def run_bits(precisions: Sequence[int | str]) -> int:
    """The run's float width from its stages' precisions: the highest (``"mixed"``: 64)."""
    return max(64 if p == MIXED else int(p) for p in precisions)


def precision_bits(precision: int | str | None, escalated: bool = False) -> int | None:
    """The float width a stage of ``precision`` runs in now: a ``"mixed"`` stage 32, or 64
    once ``escalated``; 32, 64 and ``None`` (the run's) as they are."""
    if precision == MIXED:
        return 64 if escalated else 32
    return precision


@contextlib.contextmanager
def precision_scope(precision: int | None):
    """Trace and run a block in float32 or float64 (``precision``; ``None``: the current
    one, nothing changes); never changes the global default. In float32 the float64
    constants of a problem (sampler and data dtypes) are truncated to float32, so JAX's
    warning that it truncates them is silenced here."""
    if precision is None:
        yield
        return
    if precision not in (32, 64):
        raise ValueError(f"precision must be 32 or 64, got {precision!r}")
    import jax

    with jax.enable_x64(precision == 64), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Explicitly requested dtype",
                                category=UserWarning)
        yield
