"""The pure core of training: the state layout and one jitted chunk program per stage.

A training state is a dict pytree: ``params``, ``opt`` (optimiser state), ``weights``
(weighting state), ``key``, ``batch``, ``step``, ``lr_scale`` (lowered by roll-backs),
``status`` and ``status_step`` (L-BFGS). A chunk program advances it by ``n`` steps in one
``lax.fori_loop`` (the trip count is an argument, so a stage compiles once) and returns a
report of the final point: loss, terms, aux, weights, gradient norm, finiteness, learnable
PDE parameters, L-BFGS status, learning rate. :class:`Core` holds what a run's programs
depend on; the loop (:mod:`pinn.train.loop`) only calls it at chunk boundaries.

A stage with a ``precision`` of its own (``Stage(..., precision=32)``) is traced and run in
that precision (:func:`~pinn.train.spec.precision_scope`), its state converted once when the
stage starts (:meth:`Core.enter_stage`): float32 Adam, then float64 SSBroyden in one run.

A ``"mixed"`` stage (line-search methods) starts in float32 and, once its line search
stalls at float32's rounding floor, goes on in float64 (:meth:`Core.escalate`).

The later stages' programs, and the programs that enter them, compile in a background
thread from the start of a run (:meth:`Core.compile_ahead`), so that a stage change waits
only for what is left of its compilation; the programs are those the stages run (tested:
one compilation per stage).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import microbatch as _micro
from .result import warn
from .scaling import PdeScale, Sampled
from .sharding import make_sharding
from .spec import MIXED, Stage, Training, precision_bits, precision_scope
from .steps import RUNNING, all_finite, strong
from .terms import Loss
from .weighting import with_multipliers

__all__ = ["Core", "compiler_options"]

log = logging.getLogger(__name__)

def _cast(tree: Any, dtype: Any) -> Any:
    """``tree`` with its floating leaves in ``dtype`` (integers, booleans and keys as they
    are): a stage's state converted once to that stage's precision."""

    def fix(x: Any) -> Any:
        dt = getattr(x, "dtype", None)
        if dt is None or not jnp.issubdtype(dt, jnp.floating) or dt == dtype:
            return x
        return x.astype(dtype)

    return jax.tree.map(fix, tree)


def _make_weighted(terms_fn: Callable, names: tuple[str, ...], has_aux: bool) -> Callable:
    """``weighted(params, batch, weights) -> (sum_i w_i L_i, (terms, aux))``."""

    def weighted(p, batch, w):
        out = terms_fn(p, batch)
        terms, aux = out if has_aux else (out, {})
        loss = sum(w[n].astype(terms[n].dtype) * terms[n] for n in names)
        return loss, (terms, aux)

    return weighted


def _ident(obj: Any) -> tuple:
    """Cache identity of a spec member: by value when hashable, else by object identity."""
    try:
        hash(obj)
    except TypeError:
        return ("id", id(obj))
    return ("value", obj)


@dataclass(frozen=True, eq=False)
class _Program:
    """Everything a stage's chunk program depends on (holds the objects, so ids stay valid)."""

    terms_fn: Callable
    sample_fn: Callable
    weighting: Any
    optimizer: Any
    steps: int
    resample_every: int | None
    names: tuple[str, ...]
    has_aux: bool
    sharding: Any = None  # a pinn.train.sharding.Sharding, or None: one device, no mesh
    micro: int = 1  # micro-batches per step (gradient accumulation); 1: the whole batch

    def _key(self) -> tuple:
        return (
            self.terms_fn,
            self.sample_fn,
            _ident(self.weighting),
            _ident(self.optimizer),
            type(self.optimizer),
            self.steps,
            self.resample_every,
            self.names,
            self.has_aux,
            self.sharding,
            self.micro,
        )

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Program) and self._key() == other._key()


def _report(state: Any, weighted: Callable, finite: jax.Array, gnorm: jax.Array) -> dict:
    """The terms at the final parameters: a forward pass only (no second backward graph)."""
    w = state["weights"]["weights"]
    batch = with_multipliers(state["batch"], state["weights"])
    loss, (terms, aux) = weighted(state["params"], batch, w)
    finite = finite & jnp.isfinite(loss) & all_finite(state["params"])
    p = state["params"]
    return {
        "loss": loss,
        "terms": terms,
        "aux": aux,
        "weights": w,
        "grad_norm": gnorm,
        "finite": finite,
        "pde": p.get("pde", {}) if isinstance(p, Mapping) else {},
        "status": state["status"],
        "status_step": state["status_step"],
        "lr": state["lr_scale"],
    }


def compiler_options() -> dict[str, Any]:
    """XLA options for the training programs on the default backend. On CPU, XLA's older
    loop emitters instead of its MLIR fusion emitters: measured on 2 cores (jax 0.10.2),
    the self-scaled Broyden chunk of heat2d compiles in 2.1 s instead of 3.1 s and that of
    burgers1d in 2.0 s instead of 2.8 s, each step as fast (benchmarks/TIME_TO_ACCURACY.md).
    None elsewhere."""
    return {"xla_cpu_use_fusion_emitters": False} if jax.default_backend() == "cpu" else {}


@functools.lru_cache(maxsize=8)
def _chunk_program(spec: _Program) -> Callable:
    """The jitted chunk function for one stage (cached: equal specs share a compilation)."""
    weighted = _make_weighted(spec.terms_fn, spec.names, spec.has_aux)
    weighted = _micro.accumulated(weighted, spec.micro)
    optimizer = spec.optimizer
    step_fn = optimizer.step(spec, weighted)  # the optimiser's kind of step (pinn.train.steps)

    place = (lambda s: s) if spec.sharding is None else spec.sharding.constrain

    def chunk_fn(state, n, stage_start):
        def body(_, carry):
            state, finite, gnorm = carry
            state, ok, step_gnorm = step_fn(state)
            state = place(state)  # the loop carry keeps its layout (points sharded)
            # the gradient norm of the last step taken (skipped L-BFGS steps keep it)
            gnorm = jnp.where(jnp.isnan(step_gnorm), gnorm, step_gnorm.astype(gnorm.dtype))
            return state, finite & ok, gnorm

        gnorm0 = jnp.asarray(jnp.nan, state["lr_scale"].dtype)
        state, finite, gnorm = jax.lax.fori_loop(0, n, body, (state, jnp.asarray(True), gnorm0))
        report = _report(state, weighted, finite, gnorm)
        report["lr"] = jnp.asarray(optimizer.rate(state, state["step"] - stage_start,
                                                  spec.steps))
        return state, report

    return jax.jit(chunk_fn, compiler_options=compiler_options())


def _terms_shape(terms_fn: Callable, params: Any, batch_shape: Any) -> tuple[dict, bool]:
    """The abstract terms of ``terms_fn`` and whether it returns ``(terms, aux)``; checked."""
    out_shape = jax.eval_shape(terms_fn, params, batch_shape)
    has_aux = isinstance(out_shape, tuple)
    terms_shape = out_shape[0] if has_aux else out_shape
    if not isinstance(terms_shape, Mapping) or not terms_shape:
        raise TypeError(
            "run: terms_fn(params, batch) must return a non-empty dict {name: scalar} (or a "
            f"pair (terms, aux)), got {out_shape!r}."
        )
    bad = {n: s.shape for n, s in terms_shape.items() if s.shape != ()}
    if bad:
        raise ValueError(
            f"run: every loss term must be a scalar (a mean over points); these are not: {bad}."
        )
    return terms_shape, has_aux


@dataclass(eq=False)
class Core:
    """A run's pure side: term names, the state layout and its chunk programs.

    Build it with :meth:`Core.build`; :meth:`call` runs ``n`` steps of a stage (compiling
    that stage's program on first use, timed in ``compile_seconds``).
    """

    terms_fn: Loss
    sample_fn: Callable
    weighting: Any
    stages: list[Stage]
    resample_every: int | None
    names: list[str]
    has_aux: bool
    dtype: Any
    pde_scale: PdeScale
    batch_shape: Any
    compile_seconds: float = 0.0
    _programs: dict = field(default_factory=dict)
    _ahead: dict = field(default_factory=dict)  # {(stage, bits): Future} compiling ahead
    escalated: dict = field(default_factory=dict)  # "mixed" stage -> float64 from step
    _entries: dict = field(default_factory=dict)  # {stage: jitted enter_stage}
    sharding: Any = None  # pinn.train.sharding.Sharding: the points split over a mesh
    micro: int = 1  # micro-batches per step (pinn.train.microbatch)

    @staticmethod
    def build(terms_fn: Callable, params: Any, training: Training, *, sample_fn: Callable,
              key: jax.Array, weighting: Any) -> tuple[Core, Any]:
        """The core of a run of ``training`` and the parameters in the optimiser's
        (PDE-scaled) units. ``training.devices``: None (one device, no mesh), ``"all"`` or
        a count (the points sharded over a mesh, :mod:`pinn.train.sharding`);
        ``training.micro_batch``: at most this many points per device in one pass
        (gradient accumulation, :mod:`pinn.train.microbatch`)."""
        loss, pde_scale = Loss.of(terms_fn), PdeScale.of(params)
        if pde_scale.scales:  # the optimiser's units -> the physical ones
            loss = loss.mapped(pde_scale.physical)
            sample_fn = Sampled(sample_fn, pde_scale.physical)
            params = pde_scale.internal(params)
        batch_shape = jax.eval_shape(sample_fn, key, params)
        terms_shape, has_aux = _terms_shape(loss, params, batch_shape)
        dtype = jnp.result_type(*[s.dtype for s in terms_shape.values()])
        param_dtypes = {
            np.dtype(getattr(x, "dtype", np.asarray(x).dtype)) for x in jax.tree.leaves(params)
        }
        if dtype == np.float64 and np.dtype(np.float32) in param_dtypes:
            warn(
                "run: the loss is float64 but some parameters are float32; build the model "
                "inside jax.enable_x64(True) so that all parameters are float64."
            )
        sharding = make_sharding(training.devices)
        if sharding is not None:
            sharding.check_batch(batch_shape)
        micro = _micro.for_weighting(training.micro_batch, batch_shape, sharding, weighting)
        core = Core(loss, sample_fn, weighting, list(training.stages),
                    training.points.resample_every,
                    list(terms_shape), has_aux, dtype, pde_scale, batch_shape,
                    sharding=sharding, micro=micro)
        return core, params

    def place(self, state: Any) -> Any:
        """``state`` on the run's devices (the batch sharded); itself without a mesh."""
        return state if self.sharding is None else self.sharding.place(state)

    @functools.cached_property
    def starts(self) -> list[int]:
        return [sum(s.steps for s in self.stages[:i]) for i in range(len(self.stages))]

    @functools.cached_property
    def ends(self) -> list[int]:
        return [start + s.steps for start, s in zip(self.starts, self.stages, strict=True)]

    def bits(self, stage: int) -> int | None:
        """The float width ``stage`` runs in now (``None``: the run's); a ``"mixed"`` stage
        32 until :meth:`escalate`, then 64."""
        return precision_bits(self.stages[stage].precision, stage in self.escalated)

    def _precision(self, stage: int, bits: int | None = None):
        """The precision scope of ``stage`` (:func:`~pinn.train.spec.precision_scope`), now
        or at ``bits``."""
        return precision_scope(self.bits(stage) if bits is None else bits)

    def convert(self, tree: Any, stage: int, bits: int | None = None) -> Any:
        """``tree`` in ``stage``'s float type now, or at ``bits`` (as it is when the stage
        has no precision of its own)."""
        p = self.bits(stage) if bits is None else bits
        return tree if p is None else _cast(tree, jnp.float64 if p == 64 else jnp.float32)

    def can_escalate(self, stage: int) -> bool:
        """Whether ``stage`` is ``"mixed"`` and still in float32."""
        return self.stages[stage].precision == MIXED and stage not in self.escalated

    def escalate(self, state: Any, stage: int, at: int) -> Any:
        """``state`` of a ``"mixed"`` stage whose float32 line search stalled (at step ``at``,
        recorded in :attr:`escalated`), converted once
        to float64 to go on: parameters, batch and curvature memory kept; the line search's
        stored loss dropped (recomputed in float64) and the next pair not taken as a
        curvature pair (:meth:`SSBroyden.refresh`, where the optimiser has it)."""
        like = self.template(state["params"], state["key"], stage, 64)
        self.escalated[stage] = at
        with self._precision(stage):
            # every leaf in the float64 program's type (its integer counters too: int64
            # where JAX's float64 mode makes them so)
            state = jax.tree.map(lambda x, t: jnp.asarray(x, t.dtype), state, like)
            # a "mixed" stage is a line search (Stage checks supports_mixed)
            opt = self.stages[stage].optimizer.refresh(state["opt"])
            return self.place({**state, "opt": strong(opt),
                               "status": jnp.asarray(RUNNING, jnp.int32),
                               "status_step": jnp.asarray(-1, jnp.int32)})

    def _init_opt(self, params: Any, stage: int) -> Any:
        s = self.stages[stage]
        return s.optimizer.init(params, s.steps)

    def make_state(self, params: Any, key: jax.Array, batch: Any, stage: int) -> dict:
        with self._precision(stage):
            return self.place(self._make_state(params, key, batch, stage))

    def _make_state(self, params: Any, key: jax.Array, batch: Any, stage: int) -> dict:
        params, batch = self.convert(params, stage), self.convert(batch, stage)
        return self.convert(strong(
            {
                "params": params,
                "opt": self._init_opt(params, stage),
                "weights": self.weighting.init(self.names, self.dtype, batch=batch),
                "key": key,
                "batch": batch,
                "step": jnp.asarray(self.starts[stage], jnp.int32),
                "lr_scale": jnp.asarray(1.0, self.dtype),
                "status": jnp.asarray(RUNNING, jnp.int32),
                "status_step": jnp.asarray(-1, jnp.int32),
            }
        ), stage)

    @functools.cached_property
    def _sample(self) -> Callable:
        """``sample_fn`` compiled as one program: drawn outside the chunk programs (the
        first batch, each stage's), it would otherwise run op by op, and each op compiles
        once per precision (RAD's residual on its whole pool: seconds)."""
        return jax.jit(self.sample_fn, compiler_options=compiler_options())

    def fresh_state(self, params: Any, key: jax.Array) -> dict:
        """The state at step 0: a first batch drawn with a key split from ``key``."""
        with self._precision(0):
            params = self.convert(params, 0)
            key, sub = jax.random.split(key)
            return self.make_state(params, key, self._sample(sub, params), 0)

    def template(self, params: Any, key: jax.Array, stage: int,
                 bits: int | None = None) -> Any:
        """The abstract state of ``stage`` now, or at ``bits`` (what a checkpoint is loaded
        into)."""
        with self._precision(stage, bits):
            return jax.eval_shape(
                lambda p, b: self.convert(self._make_state(p, key, b, stage), stage, bits),
                params, self.batch_shape)

    def _program(self, stage: int) -> Callable:
        s = self.stages[stage]
        return _chunk_program(
            _Program(self.terms_fn, self.sample_fn, self.weighting, s.optimizer, s.steps,
                     self.resample_every, tuple(self.names), self.has_aux,
                     self.sharding, self.micro)
        )

    def compile_ahead(self, params: Any, key: jax.Array, current: int) -> None:
        """Compile the programs of the stages after ``current`` (those with steps) in a
        background thread, one after another, while the ``current`` stage compiles and
        trains: :meth:`call` then waits only for what is left of a stage's compilation.
        XLA's compilation of a second-order stage (seconds) then runs beside the first
        stage's steps (on two cores, both slowed: one compilation beside another gains
        little, beside training it hides up to half the training's time), each after the
        program that enters it from the previous stage (:meth:`_entry`). Not the float64
        program of a ``"mixed"`` stage: needed only once its float32 line search stalls, it
        compiles then (compiled beside the float32 steps, it would slow them by as much).
        Only on one device without a mesh; a failure here is left to :meth:`call`, which
        compiles (and raises) as before. ``params``: the run's (internal) parameters, whose
        shapes fix each stage's state (:meth:`template`)."""
        todo = [i for i in range(current + 1, len(self.stages))
                if self.stages[i].steps > 0 and (i, self.bits(i)) not in self._programs]
        if self.sharding is not None or not todo:
            return
        params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)),
                              params)
        # the thread traces in the caller's precision (JAX's float64 switch is per thread)
        x64 = bool(jax.config.read("jax_enable_x64"))
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pinn-compile")
        for i in todo:
            self._ahead["enter", i] = pool.submit(self._compile_entry, params, key, i, x64)
            self._ahead[i, self.bits(i)] = pool.submit(self._compile, params, key, i, x64)
        pool.shutdown(wait=False)

    def _compile(self, params: Any, key: jax.Array, stage: int, x64: bool) -> None:
        try:
            with jax.enable_x64(x64):
                state = self.template(params, key, stage)
                with self._precision(stage):
                    self._program(stage).lower(state, np.int32(0), np.int32(0)).compile()
        except Exception as err:  # noqa: BLE001 - call() compiles again and reports it
            log.debug("compiling stage %d ahead failed: %r", stage, err)

    def _compile_entry(self, params: Any, key: jax.Array, stage: int, x64: bool) -> None:
        """Compile the way into ``stage`` (:meth:`_entry`) from the previous stage's state
        (a ``"mixed"`` one's in float64, where it ends)."""
        try:
            with jax.enable_x64(x64):
                before = self.stages[stage - 1].precision == MIXED
                prev = self.template(params, key, stage - 1, 64 if before else None)
                with self._precision(stage):
                    self._entry(stage).lower(prev).compile()
        except Exception as err:  # noqa: BLE001 - enter_stage() compiles again
            log.debug("compiling the entry of stage %d ahead failed: %r", stage, err)

    def call(self, stage: int, state: Any, n: int) -> tuple[Any, dict]:
        """``n`` steps of ``stage`` from ``state``: the new state and the (host) report."""
        start, key = self.starts[stage], (stage, self.bits(stage))
        if key not in self._programs:  # compile (timed) with a zero-step call
            t0 = time.perf_counter()
            ahead = self._ahead.pop(key, None)
            if ahead is not None:  # compiled in the background: wait for what is left
                ahead.result()
            self._programs[key] = self._program(stage)
            with self._scope(), self._precision(stage):
                jax.block_until_ready(self._programs[key](state, np.int32(0), np.int32(start)))
            self.compile_seconds += time.perf_counter() - t0
        with self._scope(), self._precision(stage):
            new_state, report = self._programs[key](state, np.int32(n), np.int32(start))
            return new_state, jax.device_get(report)

    def _scope(self):
        return contextlib.nullcontext() if self.sharding is None else self.sharding.scope()

    def enter_stage(self, state: Any, stage: int) -> Any:
        """The state at the start of ``stage`` (fresh optimiser; a fresh batch if resampling),
        converted once to the stage's precision where it has its own."""
        with self._precision(stage):
            if self.sharding is not None:
                return self._enter_stage(self.convert(state, stage), stage, self._sample)
            ahead = self._ahead.pop(("enter", stage), None)
            if ahead is not None:  # compiled in the background: wait for what is left
                ahead.result()
            return self._entry(stage)(state)

    def _entry(self, stage: int) -> Callable:
        """:meth:`enter_stage` on one device as one program: run op by op, the conversions
        and the optimiser's fresh state compile an operation at a time (0.5-1.5 s at a
        stage change on 2 cores); compiled ahead with the stage's chunk program."""
        if stage not in self._entries:
            def enter(state):
                return strong(self._enter_stage(self.convert(state, stage), stage,
                                                 self.sample_fn))

            self._entries[stage] = jax.jit(enter, compiler_options=compiler_options())
        return self._entries[stage]

    def _enter_stage(self, state: Any, stage: int, sample: Callable) -> Any:
        if self.resample_every is not None:
            # a fresh batch for the new stage (with RAD: drawn where the current residual is
            # large), so that a full-batch stage such as L-BFGS, and each of several L-BFGS
            # stages in a row, fits points of its own
            k, sub = jax.random.split(state["key"])
            state = {**state, "key": k, "batch": strong(sample(sub, state["params"]))}
        return self.place({
            **state,
            "opt": strong(self._init_opt(state["params"], stage)),
            "lr_scale": jnp.ones_like(state["lr_scale"]),
            "status": jnp.asarray(RUNNING, jnp.int32),
            "status_step": jnp.asarray(-1, jnp.int32),
        })

    def roll_back(self, state: Any, stage: int, factor: float) -> Any:
        """``state`` (the last good one) with the learning rate scaled by ``factor``."""
        state = {**state, "lr_scale": state["lr_scale"] * factor}
        if self.stages[stage].full_batch:  # a fresh state (curvature memory) at the point
            with self._precision(stage):
                state = {**state, "opt": strong(self._init_opt(state["params"], stage))}
        return self.place(state)

    def skip_to(self, state: Any, step: int) -> Any:
        """``state`` with its step counter moved to ``step`` (a stage stopped early)."""
        return self.place({**state, "step": jnp.asarray(step, jnp.int32)})
