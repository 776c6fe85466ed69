"""The training loop: stages of optimisers, many steps per jitted call, a NaN guard,
checkpoints, resume, progress and history.

``run`` keeps one pure training state (a dict pytree: parameters, optimiser state, weighting
state, PRNG key, current batch, counters) and advances it with one jitted call per chunk of
steps (a ``lax.fori_loop`` whose trip count is an argument, so a stage compiles once).
The host only sees chunk boundaries, where it checks for non-finite losses, writes history,
evaluates, checkpoints and reacts to signals.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    read_header,
    save_checkpoint,
)
from .history import HistoryWriter, read_history
from .optim import LBFGS, Stage
from .progress import TrainProgress
from .weighting import Fixed

__all__ = ["run", "TrainResult", "TrainingDiverged", "Interrupted"]

log = logging.getLogger(__name__)

# L-BFGS status codes (state["status"]).
_RUNNING, _CONVERGED, _STALLED, _NONFINITE = 0, 1, 2, 3
_STATUS_NAMES = {
    _RUNNING: "completed",
    _CONVERGED: "converged",
    _STALLED: "stalled",
    _NONFINITE: "nonfinite_linesearch",
}


class TrainingDiverged(RuntimeError):
    """The loss stayed non-finite after repeated roll-backs with lower learning rates.

    Attributes: ``step`` (where the last good state was), ``stage``, ``failures`` (the
    roll-back events), ``params`` (the last good parameters), ``history``.
    """

    def __init__(
        self,
        message: str,
        *,
        step: int,
        stage: int,
        failures: list[dict],
        params: Any,
        history: list[dict],
    ) -> None:
        super().__init__(message)
        self.step, self.stage, self.failures = step, stage, failures
        self.params, self.history = params, history


class Interrupted(KeyboardInterrupt):
    """Training stopped on SIGINT/SIGTERM after finishing a chunk and saving a checkpoint.

    A ``KeyboardInterrupt``, so ``except Exception`` does not swallow it; the CLI exits 130.
    Attributes: ``step``, ``signal`` (its name), ``checkpoint`` (path or ``None``),
    ``result`` (a :class:`TrainResult` of the run so far).
    """

    def __init__(
        self,
        message: str,
        *,
        step: int,
        signal_name: str,
        checkpoint: Path | None,
        result: TrainResult,
    ) -> None:
        super().__init__(message)
        self.step, self.signal, self.checkpoint, self.result = (
            step,
            signal_name,
            checkpoint,
            result,
        )


@dataclass
class TrainResult:
    """What :func:`run` returns.

    Attributes:
        params: the trained parameters (same structure as the input).
        history: rows (dicts), one per chunk plus event rows; see :mod:`pinn.train.history`.
        step: global steps done.
        stages: per stage: ``stage``, ``optimizer``, ``start``, ``end``, ``status``
            (``completed``, or for L-BFGS ``converged`` / ``stalled`` /
            ``nonfinite_linesearch``), ``stopped_at``, ``grad_norm``.
        rollbacks: the NaN roll-back events (also in ``history``).
        weights: final term weights.
        wall_time: seconds, summed over resumes.
        compile_seconds: seconds spent compiling (this call only).
        train_seconds: ``wall_time`` of this call minus ``compile_seconds``.
        final_terms: the unweighted loss terms at the end.
        checkpoint: the last checkpoint written, if any.
        state: the full final training state (for experts).
    """

    params: Any
    history: list[dict]
    step: int
    stages: list[dict]
    rollbacks: list[dict] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    wall_time: float = 0.0
    compile_seconds: float = 0.0
    train_seconds: float = 0.0
    final_terms: dict[str, float] = field(default_factory=dict)
    checkpoint: Path | None = None
    state: Any = None

    @property
    def stage_starts(self) -> list[int]:
        return [s["start"] for s in self.stages]


def _all_finite(tree: Any) -> jax.Array:
    leaves = [
        jnp.all(jnp.isfinite(x))
        for x in jax.tree.leaves(tree)
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)
    ]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


@dataclass(frozen=True)
class _PdeScale:
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
    def of(params: Any) -> _PdeScale:
        pde = params.get("pde") if isinstance(params, Mapping) else None
        if not isinstance(pde, Mapping):
            return _PdeScale(())
        scales = []
        for k in sorted(pde):
            v = np.asarray(jax.device_get(pde[k]))
            if v.shape == () and np.issubdtype(v.dtype, np.floating):
                a = float(abs(v))
                scales.append((k, a if math.isfinite(a) and a > 0 else 1.0))
        return _PdeScale(tuple(scales))


@dataclass(frozen=True)
class _Scaled:
    """``fn`` called with physical parameters while the optimiser holds scaled ones."""

    fn: Callable
    scale: _PdeScale
    at: int  # the position of params: 0 in terms_fn(params, batch), 1 in sample_fn(key, params)

    def __call__(self, a, b):
        if self.at == 0:
            return self.fn(self.scale.physical(a), b)
        return self.fn(a, self.scale.physical(b))


def _strong(tree: Any) -> Any:
    """The same pytree with weak types made strong, so the jitted chunk compiles once."""

    def fix(x: Any) -> Any:
        if not isinstance(x, jax.Array):
            return jnp.asarray(np.asarray(x))  # Python scalars and NumPy arrays: strong types
        return jnp.asarray(x, dtype=x.dtype) if getattr(x, "weak_type", False) else x

    return jax.tree.map(fix, tree)


def _select(pred: jax.Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)


def _float(x: Any) -> float:
    return float(np.asarray(x))


def _float_or_none(x: Any) -> float | None:
    value = _float(x)
    return value if math.isfinite(value) else None


def _scalar_leaves(prefix: str, tree: Any) -> dict[str, float]:
    """Flat ``{prefix.name: float}`` from a dict of scalars (arrays of size 1 included)."""
    out = {}
    if isinstance(tree, Mapping):
        for name, value in tree.items():
            arr = np.asarray(value)
            if arr.size == 1:
                out[f"{prefix}.{name}"] = float(arr.reshape(()))
            else:
                out.update({f"{prefix}.{name}[{i}]": float(v) for i, v in enumerate(arr.ravel())})
    return out


class _Signals:
    """Turns SIGINT/SIGTERM into a flag checked at chunk boundaries (main thread only)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.received is not None:  # second signal: stop now
            raise KeyboardInterrupt
        self.received = signum

    def __enter__(self) -> _Signals:
        if self.enabled:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _validate(
    stages: Sequence[Stage],
    chunk: int,
    resample_every: int | None,
    checkpoint_every: int | None,
    eval_every: int | None,
    max_retries: int,
    rollback_factor: float,
) -> list[Stage]:
    if isinstance(stages, Stage):
        stages = [stages]
    stages = list(stages)
    if not stages or not all(isinstance(s, Stage) for s in stages):
        raise ValueError(
            "run: stages must be a non-empty list of pinn.train.Stage(optimizer, steps), got "
            f"{stages!r}."
        )
    for name, value in (
        ("chunk", chunk),
        ("resample_every", resample_every),
        ("checkpoint_every", checkpoint_every),
        ("eval_every", eval_every),
    ):
        if value is None and name != "chunk":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"run: {name} must be an integer >= 1, got {value!r}.")
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"run: max_retries must be an integer >= 0, got {max_retries!r}.")
    if not 0 < rollback_factor < 1:
        raise ValueError(f"run: rollback_factor must lie in (0, 1), got {rollback_factor!r}.")
    return stages


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
        )

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Program) and self._key() == other._key()


@functools.lru_cache(maxsize=8)
def _chunk_program(spec: _Program) -> Callable:
    """The jitted chunk function for one stage (cached: equal specs share a compilation)."""
    terms_fn, sample_fn, weighting = spec.terms_fn, spec.sample_fn, spec.weighting
    resample_every, optimizer = spec.resample_every, spec.optimizer
    weighted = _make_weighted(terms_fn, spec.names, spec.has_aux)
    tx = optimizer.make(spec.steps)
    is_lbfgs = isinstance(optimizer, LBFGS)

    def first_order_step(state):
        p, step = state["params"], state["step"]
        k, batch = state["key"], state["batch"]
        if resample_every is not None:

            def resample(args):
                k, _ = args
                k, sub = jax.random.split(k)
                return k, sample_fn(sub, p)

            k, batch = jax.lax.cond(
                (step > 0) & (step % resample_every == 0), resample, lambda a: a, (k, batch)
            )
        wstate = weighting.update(
            state["weights"], params=p, batch=batch, terms_fn=terms_fn, step=step
        )
        w = wstate["weights"]
        (loss, _), grads = jax.value_and_grad(weighted, has_aux=True)(p, batch, w)
        updates, opt = tx.update(grads, state["opt"], p)
        scale = state["lr_scale"]
        updates = jax.tree.map(lambda u: u * scale.astype(u.dtype), updates)
        p = optax.apply_updates(p, updates)
        new = {
            **state,
            "params": p,
            "opt": opt,
            "weights": wstate,
            "key": k,
            "batch": batch,
            "step": step + 1,
        }
        # non-finite gradients show in the parameters, checked at the chunk's end
        return new, jnp.isfinite(loss), optax.tree.norm(grads)

    def lbfgs_step(state):
        def skip(state):
            nan = jnp.asarray(jnp.nan, state["lr_scale"].dtype)
            return {**state, "step": state["step"] + 1}, jnp.asarray(True), nan

        def do(state):
            p, opt, batch = state["params"], state["opt"], state["batch"]
            w = state["weights"]["weights"]
            f = lambda q: weighted(q, batch, w)[0]
            value, grad = optax.value_and_grad_from_state(f)(p, state=opt)
            gnorm = optax.tree.norm(grad)
            updates, new_opt = tx.update(grad, opt, p, value=value, grad=grad, value_fn=f)
            new_p = optax.apply_updates(p, updates)
            new_value = optax.tree.get(new_opt, "value")
            nonfinite = ~jnp.isfinite(new_value) | ~_all_finite(new_p)
            # stalled: the step leaves the parameters as they are, or the line search found
            # no decrease of the loss (in float32 the loss has reached its rounding floor;
            # going on would spend every step on a full line search for nothing)
            stalled = (optax.tree.norm(updates) == 0) | ~(new_value < value)
            status = jnp.where(
                gnorm <= optimizer.gtol,
                _CONVERGED,
                jnp.where(
                    nonfinite,
                    _NONFINITE,
                    jnp.where(stalled, _STALLED, _RUNNING),
                ),
            ).astype(jnp.int32)
            accept = status == _RUNNING
            new = {
                **state,
                "params": _select(accept, new_p, p),
                "opt": _select(accept, new_opt, opt),
                "step": state["step"] + 1,
                "status": status,
                "status_step": jnp.where(accept, state["status_step"], state["step"]),
            }
            return new, jnp.isfinite(value), gnorm.astype(state["lr_scale"].dtype)

        return jax.lax.cond(state["status"] != _RUNNING, skip, do, state)

    step_fn = lbfgs_step if is_lbfgs else first_order_step

    schedule = getattr(optimizer, "schedule", None)
    schedule = None if is_lbfgs or schedule is None else schedule(spec.steps)

    def chunk_fn(state, n, stage_start):
        def body(_, carry):
            state, finite, gnorm = carry
            state, ok, step_gnorm = step_fn(state)
            # the gradient norm of the last step taken (skipped L-BFGS steps keep it)
            gnorm = jnp.where(jnp.isnan(step_gnorm), gnorm, step_gnorm.astype(gnorm.dtype))
            return state, finite & ok, gnorm

        gnorm0 = jnp.asarray(jnp.nan, state["lr_scale"].dtype)
        state, finite, gnorm = jax.lax.fori_loop(0, n, body, (state, jnp.asarray(True), gnorm0))
        # the terms at the final parameters: a forward pass only (no second backward graph)
        w = state["weights"]["weights"]
        loss, (terms, aux) = weighted(state["params"], state["batch"], w)
        finite = finite & jnp.isfinite(loss) & _all_finite(state["params"])
        p = state["params"]
        report = {
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
        if is_lbfgs:
            stepsize = optax.tree.get(state["opt"], "learning_rate")
            report["lr"] = jnp.asarray(jnp.nan if stepsize is None else stepsize)
        elif schedule is not None:
            report["lr"] = schedule(state["step"] - stage_start) * state["lr_scale"]
        return state, report

    return jax.jit(chunk_fn)


def run(
    terms_fn: Callable[[Any, Any], Any],
    params: Any,
    *,
    stages: Sequence[Stage],
    sample_fn: Callable[[Any, Any], Any],
    key: jax.Array,
    weighting: Any = None,
    resample_every: int | None = 1000,
    chunk: int = 500,
    out_dir: str | os.PathLike | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    keep_checkpoints: int | None = 3,
    resume: bool = False,
    evaluate: Callable[[Any], Mapping[str, Any]] | None = None,
    eval_every: int | None = None,
    on_chunk: Callable[[dict], None] | None = None,
    progress: bool = True,
    history_csv: bool = False,
    max_retries: int = 5,
    rollback_factor: float = 0.5,
    handle_signals: bool = True,
) -> TrainResult:
    """Train ``params`` to minimise the weighted sum of the terms of ``terms_fn``.

    Args:
        terms_fn: ``terms_fn(params, batch) -> {name: scalar}`` (mean squared residual per
            named term), or ``-> (terms, aux)`` where ``aux`` is a dict of scalars that is
            logged (``aux.<name>``) but not minimised. Pure and traceable.
        params: initial parameters, a pytree; ``params["pde"]`` (learnable PDE parameters)
            trains with the network and is logged (``param.<name>``).
        stages: ``[Stage(Adam(...), 20_000), Stage(LBFGS(), 2_000)]``; parameters carry over.
        sample_fn: ``sample_fn(key, params) -> batch`` (a pytree), traceable; called on device
            every ``resample_every`` steps (never during full-batch stages such as L-BFGS)
            and at the start of every stage after the first (so several L-BFGS stages in a
            row each fit a batch of their own, drawn with the current parameters: with RAD,
            where the residual is large now).
        key: PRNG key for sampling.
        weighting: :class:`Fixed` (default), :class:`GradNorm` or :class:`Causal`.
        resample_every: steps between new batches (``None``: never, not even between
            stages).
        chunk: steps per jitted call (the host sees only chunk boundaries).
        out_dir: run folder: ``history.jsonl`` (and ``history.csv`` if ``history_csv``) and,
            unless ``checkpoint_dir`` is given, ``checkpoints/``.
        checkpoint_dir: folder for checkpoints; written every ``checkpoint_every`` steps, at
            the end, and on SIGINT/SIGTERM.
        keep_checkpoints: newest checkpoints kept (``None``: all).
        resume: continue from the newest checkpoint in ``checkpoint_dir`` (bit for bit as if
            never stopped); starts fresh if there is none.
        evaluate: ``evaluate(params) -> {name: number}`` (e.g. errors against the exact
            solution), run every ``eval_every`` steps and at the end; logged as ``eval.<name>``.
        on_chunk: called with each history row.
        progress: show a rich progress bar (only when stderr is a terminal).
        max_retries: consecutive roll-backs allowed before :class:`TrainingDiverged`.
        rollback_factor: learning-rate factor applied at each roll-back.
        handle_signals: catch SIGINT/SIGTERM (main thread only) and stop cleanly with
            :class:`Interrupted` after the current chunk.

    Returns:
        :class:`TrainResult`.

    Raises:
        TrainingDiverged: the loss stayed non-finite after ``max_retries`` roll-backs.
        Interrupted: on SIGINT/SIGTERM, after saving a checkpoint.
    """
    stages = _validate(
        stages, chunk, resample_every, checkpoint_every, eval_every, max_retries, rollback_factor
    )
    weighting = Fixed() if weighting is None else weighting
    if not (hasattr(weighting, "init") and hasattr(weighting, "update")):
        raise TypeError(
            "run: weighting must be a weighting object such as pinn.train.Fixed(), GradNorm() "
            f"or Causal(), got {weighting!r}."
        )
    if out_dir is not None and checkpoint_dir is None:
        checkpoint_dir = Path(out_dir) / "checkpoints"
    if resume and checkpoint_dir is None:
        raise ValueError("run: resume=True needs checkpoint_dir (or out_dir) to find checkpoints.")

    pde_scale = _PdeScale.of(params)
    if pde_scale.scales:
        terms_fn = _Scaled(terms_fn, pde_scale, 0)
        sample_fn = _Scaled(sample_fn, pde_scale, 1)
        params = pde_scale.internal(params)
        if evaluate is not None:
            user_evaluate = evaluate

            def evaluate(p):
                return user_evaluate(pde_scale.physical(p))

    starts = [0]
    for s in stages:
        starts.append(starts[-1] + s.steps)
    ends, total = starts[1:], starts[-1]
    starts = starts[:-1]
    txs = [s.optimizer.make(s.steps) for s in stages]

    # --- the shape of the problem: term names, dtype, aux ----------------------------------
    sample_key = key
    batch_shape = jax.eval_shape(sample_fn, sample_key, params)
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
    names = list(terms_shape)
    dtype = jnp.result_type(*[s.dtype for s in terms_shape.values()])
    param_dtypes = {
        np.dtype(getattr(x, "dtype", np.asarray(x).dtype)) for x in jax.tree.leaves(params)
    }
    if dtype == np.float64 and np.dtype(np.float32) in param_dtypes:
        warnings.warn(
            "run: the loss is float64 but some parameters are float32; build the model inside "
            "jax.enable_x64(True) so that all parameters are float64.",
            stacklevel=2,
        )

    def make_state(p, k, batch, stage_index):
        return _strong(
            {
                "params": p,
                "opt": txs[stage_index].init(p),
                "weights": weighting.init(names, dtype),
                "key": k,
                "batch": batch,
                "step": jnp.asarray(starts[stage_index], jnp.int32),
                "lr_scale": jnp.asarray(1.0, dtype),
                "status": jnp.asarray(_RUNNING, jnp.int32),
                "status_step": jnp.asarray(-1, jnp.int32),
            }
        )

    # --- chunk functions, one compiled program per stage -----------------------------------
    chunk_fns: dict[int, Callable] = {}
    compile_seconds = 0.0

    def call_chunk(stage_index: int, state: Any, n: int):
        nonlocal compile_seconds
        start = starts[stage_index]
        if stage_index not in chunk_fns:  # compile (timed) with a zero-step call
            chunk_fns[stage_index] = _chunk_program(
                _Program(
                    terms_fn,
                    sample_fn,
                    weighting,
                    stages[stage_index].optimizer,
                    stages[stage_index].steps,
                    resample_every,
                    tuple(names),
                    has_aux,
                )
            )
            t0 = time.perf_counter()
            jax.block_until_ready(chunk_fns[stage_index](state, np.int32(0), np.int32(start)))
            compile_seconds += time.perf_counter() - t0
        new_state, report = chunk_fns[stage_index](state, np.int32(n), np.int32(start))
        return new_state, jax.device_get(report)

    # --- fresh start or resume -------------------------------------------------------------
    stage_reports: list[dict] = []
    rollbacks: list[dict] = []
    elapsed_before = 0.0
    rows: list[dict] = []
    ckpt_path = latest_checkpoint(checkpoint_dir) if resume else None
    if ckpt_path is not None:
        meta = read_header(ckpt_path)["meta"]
        stage_index = int(meta["stage"])
        opt_names = [type(s.optimizer).__name__ for s in stages]
        if (
            stage_index >= len(stages)
            or starts[stage_index] != meta["stage_start"]
            or opt_names[: stage_index + 1] != meta["optimizers"][: stage_index + 1]
            or meta["names"] != names
        ):
            raise CheckpointError(
                f"checkpoint {str(ckpt_path)!r} was written by a run with stages "
                f"{meta['optimizers']} (stage {meta['stage']} starting at step "
                f"{meta['stage_start']}) and terms {meta['names']}; this run has stages "
                f"{opt_names} starting at {starts} and terms {names}. Resume with the same "
                "stages (later stages may change) or start without resume."
            )
        template = jax.eval_shape(
            lambda p, b: make_state(p, sample_key, b, stage_index), params, batch_shape
        )
        state, _ = load_checkpoint(ckpt_path, template)
        stage_reports = list(meta["stage_reports"])
        rollbacks = list(meta["rollbacks"])
        elapsed_before = float(meta["elapsed"])
        if out_dir is not None:
            rows = read_history(Path(out_dir) / "history.jsonl")[: int(meta["n_rows"])]
        step = int(meta["step"])
        log.info("resuming from %s at step %d (stage %d)", ckpt_path, step, stage_index)
    else:
        if resume:
            log.info("resume: no checkpoint in %s; starting a fresh run", checkpoint_dir)
        stale = list_checkpoints(checkpoint_dir) if checkpoint_dir is not None else []
        if stale:
            warnings.warn(
                f"run: removing {len(stale)} checkpoint(s) of an earlier run in "
                f"{str(checkpoint_dir)!r} before starting afresh (pass resume=True to continue "
                "that run instead).",
                stacklevel=2,
            )
            for old in stale:
                old.unlink(missing_ok=True)
        key, sub = jax.random.split(key)
        batch = sample_fn(sub, params)
        stage_index = 0
        state = make_state(params, key, batch, 0)
        step = 0

    history = HistoryWriter(out_dir, csv_file=history_csv, rows=rows)
    t_start = time.perf_counter()
    last_report: dict | None = None
    last_checkpoint: Path | None = ckpt_path

    def elapsed() -> float:
        return elapsed_before + time.perf_counter() - t_start

    def make_row(
        stage_index: int, step: int, report: dict, event: str | None, rate: float | None
    ) -> dict:
        stage = stages[stage_index]
        row = {
            "step": step,
            "stage": stage_index,
            "stage_step": step - starts[stage_index],
            "optimizer": type(stage.optimizer).__name__,
            "event": event,
            "loss": _float(report["loss"]),
        }
        row.update(_scalar_leaves("loss", report["terms"]))
        row.update(_scalar_leaves("weight", report["weights"]))
        row.update(_scalar_leaves("param", pde_scale.physical({"pde": report["pde"]})["pde"]))
        row.update(_scalar_leaves("aux", report["aux"]))
        row.update(
            {
                "lr": _float_or_none(report["lr"]),
                "grad_norm": _float_or_none(report["grad_norm"]),
                "time": round(elapsed(), 4),
            }
        )
        if rate is not None:
            row["steps_per_s"] = round(rate, 2)
        return row

    def checkpoint(state: Any, step: int, stage_index: int) -> Path | None:
        nonlocal last_checkpoint
        if checkpoint_dir is None:
            return None
        meta = {
            "step": step,
            "stage": stage_index,
            "stage_start": starts[stage_index],
            "optimizers": [type(s.optimizer).__name__ for s in stages],
            "names": names,
            "n_rows": len(history.rows),
            "elapsed": elapsed(),
            "stage_reports": stage_reports,
            "rollbacks": rollbacks,
        }
        last_checkpoint = save_checkpoint(checkpoint_dir, step, state, meta, keep=keep_checkpoints)
        history.write_csv()
        return last_checkpoint

    def result(state: Any, step: int) -> TrainResult:
        w = {n: _float(v) for n, v in jax.device_get(state["weights"]["weights"]).items()}
        terms = (
            {} if last_report is None else {n: _float(v) for n, v in last_report["terms"].items()}
        )
        return TrainResult(
            params=pde_scale.physical(state["params"]),
            history=history.rows,
            step=step,
            stages=list(stage_reports),
            rollbacks=list(rollbacks),
            weights=w,
            wall_time=elapsed(),
            compile_seconds=compile_seconds,
            train_seconds=time.perf_counter() - t_start - compile_seconds,
            final_terms=terms,
            checkpoint=last_checkpoint,
            state=state,
        )

    def next_boundary(step: int, stage_index: int) -> int:
        stop = min(step + chunk, ends[stage_index])
        for every in (checkpoint_every if checkpoint_dir is not None else None, eval_every):
            if every is not None:
                stop = min(stop, (step // every + 1) * every)
        return stop

    def due(step: int, every: int | None) -> bool:
        return step == total or (every is not None and step % every == 0)

    # --- the loop --------------------------------------------------------------------------
    failures = 0
    with (
        _Signals(handle_signals) as signals,
        TrainProgress(total, enabled=progress, start=step) as bar,
    ):
        if ckpt_path is None:
            _, report = call_chunk(0, state, 0)
            history.append(make_row(0, 0, report, "stage_start", None))
            last_report = report
            if not bool(report["finite"]):
                bad_terms = {n: _float(v) for n, v in report["terms"].items()}
                raise TrainingDiverged(
                    f"the loss is non-finite at the initial parameters (terms: {bad_terms}); "
                    "no step was taken. Check the problem (division by zero, log or sqrt of a "
                    "negative value at some points) and the initial parameters.",
                    step=0,
                    stage=0,
                    failures=[],
                    params=pde_scale.physical(state["params"]),
                    history=history.rows,
                )
        while True:
            if step >= ends[stage_index]:
                if len(stage_reports) <= stage_index:
                    if last_report is None:
                        _, last_report = call_chunk(stage_index, state, 0)
                    status = int(np.asarray(state["status"]))
                    stage_reports.append(
                        {
                            "stage": stage_index,
                            "optimizer": repr(stages[stage_index].optimizer),
                            "start": starts[stage_index],
                            "end": ends[stage_index],
                            "status": _STATUS_NAMES[status],
                            "stopped_at": (
                                int(np.asarray(state["status_step"]))
                                if status
                                else ends[stage_index]
                            ),
                            "grad_norm": _float_or_none(last_report["grad_norm"]),
                        }
                    )
                if stage_index == len(stages) - 1:
                    break
                stage_index += 1
                if resample_every is not None:
                    # a fresh batch for the new stage (with RAD: drawn where the current
                    # residual is large), so that a full-batch stage such as L-BFGS, and
                    # each of several L-BFGS stages in a row, fits points of its own
                    k, sub = jax.random.split(state["key"])
                    state = {**state, "key": k,
                             "batch": _strong(sample_fn(sub, state["params"]))}
                state = {
                    **state,
                    "opt": _strong(txs[stage_index].init(state["params"])),
                    "lr_scale": jnp.ones_like(state["lr_scale"]),
                    "status": jnp.asarray(_RUNNING, jnp.int32),
                    "status_step": jnp.asarray(-1, jnp.int32),
                }
                _, report = call_chunk(stage_index, state, 0)
                row = make_row(stage_index, step, report, "stage_start", None)
                history.append(row)
                last_report = report
                continue

            stop = next_boundary(step, stage_index)
            t0 = time.perf_counter()
            new_state, report = call_chunk(stage_index, state, stop - step)
            rate = (stop - step) / max(time.perf_counter() - t0, 1e-9)

            if not bool(report["finite"]):
                failures += 1
                bad_terms = sorted(
                    n for n, v in report["terms"].items() if not math.isfinite(_float(v))
                )
                old_scale = _float(state["lr_scale"])
                event = {
                    "step": step,
                    "stage": stage_index,
                    "stage_step": step - starts[stage_index],
                    "optimizer": type(stages[stage_index].optimizer).__name__,
                    "event": "rollback",
                    "failed_until": stop,
                    "lr_scale": old_scale * rollback_factor,
                    "time": round(elapsed(), 4),
                    "message": (
                        f"non-finite loss in steps {step}..{stop} (terms: "
                        f"{bad_terms or 'gradients/parameters'}); rolled back to step {step} "
                        f"and lowered the learning rate scale {old_scale:g} -> "
                        f"{old_scale * rollback_factor:g}"
                    ),
                }
                rollbacks.append(event)
                history.append(event)
                if on_chunk is not None:
                    on_chunk(event)
                if failures > max_retries:
                    history.write_csv()
                    raise TrainingDiverged(
                        f"training diverged: the loss was non-finite in {failures} consecutive "
                        f"attempts from step {step} (stage {stage_index}, "
                        f"{stages[stage_index].optimizer!r}), even with the learning rate "
                        f"scaled down to {old_scale:g}. Non-finite terms: {bad_terms or 'none'} "
                        "(then the gradients or parameters were). Lower the learning rate, "
                        "add gradient clipping (Adam(clip=1.0)), or check the problem scaling.",
                        step=step,
                        stage=stage_index,
                        failures=rollbacks,
                        params=pde_scale.physical(state["params"]),
                        history=history.rows,
                    )
                warnings.warn(event["message"], RuntimeWarning, stacklevel=2)
                state = {**state, "lr_scale": state["lr_scale"] * rollback_factor}
                if stages[stage_index].is_lbfgs:  # fresh curvature memory at the good point
                    state = {**state, "opt": _strong(txs[stage_index].init(state["params"]))}
                continue

            failures = 0
            state, step, last_report = new_state, stop, report
            row = make_row(stage_index, step, report, None, rate)
            if evaluate is not None and due(step, eval_every):
                metrics = evaluate(state["params"])
                row.update({f"eval.{k}": _float(v) for k, v in metrics.items()})
            history.append(row)
            bar.update(
                step,
                f"stage {stage_index + 1}/{len(stages)} "
                f"{type(stages[stage_index].optimizer).__name__}",
                row,
            )
            if on_chunk is not None:
                on_chunk(row)

            status = int(report["status"])
            if status != _RUNNING and step < ends[stage_index]:
                at = int(report["status_step"])
                message = (
                    f"L-BFGS stopped at step {at}: {_STATUS_NAMES[status]} "
                    f"(gradient norm {_float(report['grad_norm']):.3e}); "
                    f"skipping to the next stage at step {ends[stage_index]}"
                )
                if status == _NONFINITE:
                    warnings.warn(message, RuntimeWarning, stacklevel=2)
                stop_row = {**row, "event": "lbfgs_stop", "message": message}
                if (
                    evaluate is not None
                    and due(ends[stage_index], eval_every)
                    and not any(k.startswith("eval.") for k in row)
                ):
                    metrics = evaluate(state["params"])
                    stop_row.update({f"eval.{k}": _float(v) for k, v in metrics.items()})
                history.append(stop_row)
                step = ends[stage_index]
                state = {**state, "step": jnp.asarray(step, jnp.int32)}

            if checkpoint_dir is not None and due(step, checkpoint_every):
                checkpoint(state, step, stage_index)
            if signals.received is not None:
                name = signal.Signals(signals.received).name
                path = checkpoint(state, step, stage_index)
                history.write_csv()
                raise Interrupted(
                    f"training interrupted by {name} at step {step}"
                    + (f"; checkpoint saved to {path}" if path else "")
                    + ". Resume with resume=True.",
                    step=step,
                    signal_name=name,
                    checkpoint=path,
                    result=result(state, step),
                )

    if checkpoint_dir is not None and (
        last_checkpoint is None or not last_checkpoint.name.endswith(f"{step:09d}.npz")
    ):
        checkpoint(state, step, stage_index)
    history.write_csv()
    return result(state, step)
