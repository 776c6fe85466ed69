"""How to train: the :class:`Training` settings, and the float precision of a run."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pinn.train.loss import Points
from pinn.train.optim import MIXED

__all__ = ["Training", "precision_scope", "stage_precisions", "run_bits", "MIXED",
           "DEFAULT_CHUNK"]

#: Steps per jitted call unless ``Training.chunk`` says otherwise.
DEFAULT_CHUNK = 500


def _default_stages():
    """The default recipe: a short Adam stage to reach the basin, then self-scaled Broyden
    (full batch, float64, the points redrawn every 500 steps): on the shipped problems it
    ends 2-4 orders of magnitude below Adam + L-BFGS in float32, in less time
    (benchmarks/RESULTS.md). Made for networks of up to a few thousand parameters (the
    default 3 x 30 MLP has ~2 000): its inverse Hessian is dense."""
    from pinn.train import Adam, SSBroyden, Stage

    return (Stage(Adam(lr=5e-3, decay="exponential", decay_rate=0.98, decay_steps=1000), 2000),
            Stage(SSBroyden(resample_every=500), 3000))


@dataclass(frozen=True)
class Training:
    """How to train: optimiser stages, collocation points, weighting, seed.

    ``chunk``: steps per jitted call (the host sees only chunk boundaries);
    ``eval_every``: steps between evaluations against the exact solution or reference
    (None: at the end of each stage); ``checkpoint_every``: steps between checkpoints when
    the run has an output folder; ``devices``: ``None`` (one device, the single-device
    program), ``"all"`` or a count: data parallel over a device mesh, the points sharded
    and the parameters replicated (:mod:`pinn.train.sharding`); ``micro_batch``: at most
    this many points per device in one pass, the gradient accumulated over micro-batches
    (:mod:`pinn.train.microbatch`; ``None``: the whole batch at once); ``windows``: an
    evolution problem trained in that many time windows one after another, each by these
    stages, the next starting from the previous one's values (:mod:`pinn.marching`).
    """

    stages: Sequence[Any] = field(default_factory=_default_stages)
    points: Points = field(default_factory=Points)
    weighting: Any = None
    seed: int = 0
    chunk: int = DEFAULT_CHUNK
    eval_every: int | None = None
    checkpoint_every: int | None = None
    devices: int | str | None = None
    micro_batch: int | None = None
    windows: int = 1

    def __post_init__(self):
        object.__setattr__(self, "stages", tuple(self.stages))
        if not self.stages:
            raise ValueError("Training needs at least one stage, e.g. Stage(Adam(1e-3), 5000)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"Training.seed must be an integer, got {self.seed!r}")
        if self.chunk is None:
            object.__setattr__(self, "chunk", DEFAULT_CHUNK)
        from pinn.train.sharding import check_devices

        check_devices(self.devices)
        w = self.windows
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise ValueError(f"Training.windows must be an integer >= 1 (time windows trained "
                             f"one after another; 1: the whole interval at once), got {w!r}")
        mb = self.micro_batch
        if mb is not None and (isinstance(mb, bool) or not isinstance(mb, int) or mb < 1):
            raise ValueError(f"Training.micro_batch must be an integer >= 1 (points per "
                             f"micro-batch and device) or None (the whole batch), got {mb!r}")

    @property
    def steps(self) -> int:
        """The total number of steps over all stages."""
        return int(sum(s.steps for s in self.stages))

    @property
    def auto_precision(self) -> int:
        """The run's precision under ``auto``: 64 when a stage runs in float64 (its own
        ``precision``, or an optimiser that wants float64: the second-order methods, whose
        line search stops at the loss's rounding floor in float32), else 32."""
        return run_bits(self.stage_precisions())

    def stage_precisions(self, precision: int | str | None = None) -> tuple[int | str, ...]:
        """Each stage's float precision (32, 64 or ``"mixed"``) for a run of ``precision``
        (32, 64, or ``None``/``"auto"``): :func:`stage_precisions`."""
        return stage_precisions(
            [getattr(s.optimizer, "prefers_float64", False) for s in self.stages],
            [s.precision for s in self.stages], precision,
            [getattr(s.optimizer, "supports_mixed", False) for s in self.stages])

    def with_stage_precisions(self, precision: int | str | None = None) -> Training:
        """These settings with each stage's precision written into it where the stages
        differ (:meth:`stage_precisions`), else as they are (one precision for the run)."""
        precisions = self.stage_precisions(precision)
        if len(set(precisions)) == 1 and precisions[0] != MIXED:
            return self
        stages = [replace(s, precision=p) for s, p in zip(self.stages, precisions, strict=True)]
        return replace(self, stages=stages)


#: Whether ``precision: auto`` trains first-order stages in float32 and the second-order
#: ones ``"mixed"`` (line-search methods: float32 until the line search stalls at float32's
#: rounding floor, then float64 with the curvature memory kept; Gauss-Newton: float64),
#: rather than the whole run in float64 as soon as one stage wants it.
MIXED_AUTO = True


def run_bits(precisions: Sequence[int | str]) -> int:
    """The run's float width from its stages' precisions: the highest (``"mixed"``: 64)."""
    return max(64 if p == MIXED else int(p) for p in precisions)


def stage_precisions(prefers_float64: Sequence[bool], own: Sequence[int | str | None],
                     precision: int | str | None = None,
                     mixable: Sequence[bool] | None = None) -> tuple[int | str, ...]:
    """The precision of each stage: its ``own`` (32, 64 or ``"mixed"``) where it has one,
    else the run's ``precision`` (32 or 64); under ``auto`` (``None`` or ``"auto"``), 32 for
    a first-order stage and, for one whose optimiser ``prefers_float64``, ``"mixed"`` when it
    is ``mixable`` (its optimiser ``supports_mixed``: SSBroyden, SSBFGS) and 64 otherwise
    (:data:`MIXED_AUTO`; without it, 64 for every stage as soon as one prefers float64)."""
    if precision not in (None, "auto", 32, 64):
        raise ValueError(f"precision must be 32, 64 or 'auto', got {precision!r}")
    mixable = list(mixable) if mixable is not None else [False] * len(own)
    if precision in (32, 64):
        base = [precision] * len(own)
    elif MIXED_AUTO:
        base = [(MIXED if m else 64) if p else 32
                for p, m in zip(prefers_float64, mixable, strict=True)]
    else:
        base = [64 if any(prefers_float64) else 32] * len(own)
    return tuple(o if o is not None else b for o, b in zip(own, base, strict=True))


@contextlib.contextmanager
def precision_scope(precision: int):
    """Run a block in float32 (default) or float64; never changes the global default."""
    import jax

    if precision not in (32, 64):
        raise ValueError(f"precision must be 32 or 64, got {precision!r}")
    with jax.enable_x64(precision == 64):
        yield
