"""How to train: the :class:`Training` settings, and the float precision of a run."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pinn.train.loss import Points

__all__ = ["Training", "precision_scope", "stage_precisions", "DEFAULT_CHUNK"]

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
        return max(self.stage_precisions())

    def stage_precisions(self, precision: int | str | None = None) -> tuple[int, ...]:
        """Each stage's float precision (32 or 64) for a run of ``precision`` (32, 64, or
        ``None``/``"auto"``): :func:`stage_precisions`."""
        return stage_precisions(
            [getattr(s.optimizer, "prefers_float64", False) for s in self.stages],
            [s.precision for s in self.stages], precision)

    def with_stage_precisions(self, precision: int | str | None = None) -> Training:
        """These settings with each stage's precision written into it where the stages
        differ (:meth:`stage_precisions`), else as they are (one precision for the run)."""
        precisions = self.stage_precisions(precision)
        if len(set(precisions)) == 1:
            return self
        stages = [replace(s, precision=p) for s, p in zip(self.stages, precisions, strict=True)]
        return replace(self, stages=stages)


#: Whether ``precision: auto`` trains the first-order stages in float32 and only the stages
#: whose optimiser prefers float64 in float64 (the parameters converted once between them),
#: rather than the whole run in float64. Off: measured (issue 14, one seeded run each, 2
#: cores), the mixed run was not better: heat2d 2.36e-7 in 29.5 s mixed, 1.54e-7 in 25.7 s
#: float64; burgers1d 7.76e-6 in 173 s mixed, 4.89e-6 in 212 s float64 (its float32 Adam
#: stage is 2.3x faster; heat2d's is too short to pay for the switch); with the default
#: recipe (no training section, 3 x 30 MLP, 2000 Adam + 3000 SSBroyden; 2026-12-02, load
#: ~1): poisson2d 2.20e-10 in 117 s mixed, 2.39e-10 in 127 s float64; helmholtz2d 5.82e-6
#: in 119 s, 2.89e-6 in 120 s; burgers1d 1.86e-3 in 112 s, 1.80e-3 in 113 s (the
#: quasi-Newton stage takes most of the time, and it is float64 either way). Ask for it
#: per stage: ``Stage(Adam(), n, precision=32)``.
MIXED_AUTO = False


def stage_precisions(prefers_float64: Sequence[bool], own: Sequence[int | None],
                     precision: int | str | None = None) -> tuple[int, ...]:
    """The precision of each stage: its ``own`` (32 or 64) where it has one, else the run's
    ``precision`` (32 or 64); under ``auto`` (``None`` or ``"auto"``), 64 for a stage whose
    optimiser ``prefers_float64`` and 32 for the others (:data:`MIXED_AUTO`; without it, 64
    for every stage as soon as one prefers float64)."""
    if precision not in (None, "auto", 32, 64):
        raise ValueError(f"precision must be 32, 64 or 'auto', got {precision!r}")
    if precision in (32, 64):
        base = [precision] * len(own)
    elif MIXED_AUTO:
        base = [64 if p else 32 for p in prefers_float64]
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
