"""How to train: the :class:`Training` settings, and the float precision of a run."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pinn.train.loss import Points

__all__ = ["Training", "precision_scope", "DEFAULT_CHUNK"]

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
    (:mod:`pinn.train.microbatch`; ``None``: the whole batch at once).
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
        """64 when a stage's optimiser wants float64 (the second-order methods: in float32
        their line search stops at the loss's rounding floor), else 32."""
        wants = any(getattr(s.optimizer, "prefers_float64", False) for s in self.stages)
        return 64 if wants else 32


@contextlib.contextmanager
def precision_scope(precision: int):
    """Run a block in float32 (default) or float64; never changes the global default."""
    import jax

    if precision not in (32, 64):
        raise ValueError(f"precision must be 32 or 64, got {precision!r}")
    with jax.enable_x64(precision == 64):
        yield
