"""The one seam between setting up and running: ``pinn.setup(...) -> Run``, ``Run.train()``.

The CLI, the notebooks, the benchmarks and ``pinn sweep`` all go through :func:`setup`, so
nothing re-types the set-up (network, loss assembly, weights, PRNG keys, evaluation). A run
with an ``out_dir`` owns that folder: history and checkpoints while it trains, then the
solution, ``metrics.json``, plots and ``report.md`` (:meth:`Solution.save`). Over several
processes (:mod:`pinn.distributed`) process 0 alone writes it; the others take part in each
checkpoint and resume from process 0's (the folder must be on a shared file system).
"""

from __future__ import annotations

import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pinn import compile_cache
from pinn import evaluate as ev
from pinn.distributed import is_main, to_host
from pinn.nets import MLP
from pinn.report import write_run
from pinn.report.metrics import peak_memory_mb
from pinn.solution import Solution, build_network
from pinn.train import Fixed, TrainingDiverged, TrainResult, run
from pinn.train.core import compiler_options
from pinn.train.loss import Assembly, assemble
from pinn.train.microbatch import memory_per_point
from pinn.train.weighting import Causal, with_residual_terms, with_term_weights
from pinn.training import MIXED, Training, precision_scope, run_bits

__all__ = ["setup", "Run", "solve", "fem_run", "divergence", "ERROR_NEAR_ONE"]

#: A relative L2 error at or above this is "near 1": the network learned nothing useful.
ERROR_NEAR_ONE = 0.9


def _count(tree) -> int:
    return int(sum(getattr(x, "size", 1) for x in jax.tree.leaves(tree)))


def divergence(history: Sequence[dict], rel_l2: dict | None = None) -> str | None:
    """Why a finished run did not converge, or ``None``: its last loss is non-finite or
    above its first (the history's ``loss``, roll-back rows aside), or a field's relative
    L2 error (``rel_l2``) is at least :data:`ERROR_NEAR_ONE`."""
    losses = [r.get("loss") for r in history if r.get("event") != "rollback" and "loss" in r]
    reasons = []
    if losses:
        first, last = losses[0], losses[-1]
        if last is None or not math.isfinite(last):
            reasons.append(f"the final loss is {last}")
        elif first is not None and math.isfinite(first) and last > first:
            reasons.append(f"the loss rose from {first:.3g} to {last:.3g}")
    for name, err in (rel_l2 or {}).items():
        if err is None or not math.isfinite(err) or err >= ERROR_NEAR_ONE:
            reasons.append(f"the relative L2 error of {name} is {err:.3g}" if err is not None
                           else f"the relative L2 error of {name} is not finite")
    return "; ".join(reasons) or None


@dataclass
class Run:
    """A PINN run, set up and ready to :meth:`train`.

    Everything the training loop gets is here, so a benchmark or a notebook can look at
    (or time) the pieces: ``assembly`` (the loss terms, sampler and network apply),
    ``params`` (``{"net": ..., "pde": ...}``), ``weighting`` (with each condition's
    weight), ``key`` (the sampling key) and ``evaluate`` (errors during training).
    """

    problem: Any
    model: Any
    training: Training
    precision: int
    assembly: Assembly
    params: dict
    weighting: Any
    key: jax.Array
    evaluate: Callable | None
    out_dir: Path | None = None
    resume: bool = False
    progress: bool = True
    resolution: Any = None
    snapshots: int = 4
    observers: Sequence[Any] = ()
    metrics: dict = field(default_factory=dict)

    def loop_arguments(self) -> dict:
        """The keyword arguments of :func:`pinn.train.run` for this run."""
        t = self.training
        folder = {"out_dir": self.out_dir}
        if self.out_dir is not None and not is_main():  # many processes: process 0 writes,
            folder = {"checkpoint_dir": self.out_dir / "checkpoints"}  # the others gather
        return dict(stages=t.stages, sample_fn=self.assembly.sample_fn, key=self.key,
                    weighting=self.weighting, resample_every=t.points.resample_every,
                    chunk=t.chunk, **folder, checkpoint_every=t.checkpoint_every,
                    resume=self.resume, evaluate=self.evaluate, eval_every=t.eval_every,
                    progress=self.progress, devices=t.devices, micro_batch=t.micro_batch,
                    **({"observers": list(self.observers)} if self.observers else {}))

    def memory_per_point(self) -> dict:
        """XLA's memory estimate of one gradient step of this run, per collocation point
        (:func:`pinn.train.microbatch.memory_per_point` on the run's first batch)."""
        with precision_scope(self.precision):
            batch = self.assembly.sample_fn(self.key, self.params)
            return memory_per_point(self.assembly.terms_fn, self.params, jax.device_get(batch))

    def train(self, **loop_overrides) -> Solution:
        """Train, score on the evaluation grid, and (with ``out_dir``) save the run folder.

        ``loop_overrides`` go to :func:`pinn.train.run` (e.g. ``on_chunk=``,
        ``handle_signals=False``). Raises what the loop raises (``Interrupted`` after a
        checkpoint; ``TrainingDiverged`` when the loss is non-finite at the start). A run
        whose loss stays non-finite later (the NaN guard gave up) ends with its last good
        parameters, like a run whose loss rose: ``metrics["converged"]`` is false,
        ``metrics["divergence"]`` says why, and a ``RuntimeWarning`` says so."""
        if self.training.windows > 1:  # time marching: window after window
            from pinn.marching import train_windows

            return train_windows(self, **loop_overrides)
        t0 = time.perf_counter()
        gave_up = None
        precisions = self.training.stage_precisions(self.precision)
        with precision_scope(self.precision):
            if hasattr(self.evaluate, "ahead"):
                self.evaluate.ahead(self.params["net"])
            try:
                result = run(self.assembly.terms_fn, self.params,
                             **{**self.loop_arguments(), **loop_overrides})
            except TrainingDiverged as exc:
                if exc.step == 0:  # non-finite from the start: nothing was trained
                    raise
                result, gave_up = _gave_up(exc, time.perf_counter() - t0)
            wall = time.perf_counter() - t0
            # many processes: the (replicated) parameters as host arrays, so that what follows
            # (scoring, saving, the user's evaluations) runs in each process on its own
            params = result.params if jax.process_count() == 1 else to_host(result.params)
            sol = Solution(self.problem, self.model, params, seed=self.training.seed,
                           precision=self.precision, history=list(result.history),
                           training=self.training, resolution=self.resolution)
            sol._apply = self.assembly.apply
            sol.metrics = {
                "problem": self.problem.name, "method": "PINN",
                "steps": self.training.steps, "steps_done": int(result.step),
                "train_seconds": float(result.train_seconds),
                "compile_seconds": float(result.compile_seconds),
                "wall_seconds": float(wall), "precision": self.precision,
                "seed": self.training.seed, "n_params": _count(result.params["net"]),
                "loss": {k: float(v) for k, v in result.final_terms.items()},
                "params": sol.learned_params(), "rollbacks": len(result.rollbacks),
                "stages": result.stages, "peak_memory_mb": peak_memory_mb(),
                **({"stage_precisions": list(precisions)}
                   if len(set(precisions)) > 1 or MIXED in precisions else {}),
                **({"devices": self.training.devices} if self.training.devices else {}),
                **({"processes": jax.process_count()} if jax.process_count() > 1 else {}),
                **({"micro_batch": self.training.micro_batch}
                   if self.training.micro_batch else {}),
                **self.metrics,
            }
            finish(sol, self.problem, gave_up)
        if self.out_dir is not None and is_main():
            sol.save(self.out_dir, snapshots=self.snapshots)
        return sol


def finish(sol: Solution, problem, gave_up: str | None = None) -> None:
    """Score a trained ``sol`` into its metrics (on the evaluation grid, at a file
    reference's own points, over a parametric problem's ranges) and judge convergence:
    ``metrics["converged"]``, ``metrics["divergence"]`` and a ``RuntimeWarning`` saying why
    not (``gave_up``: the NaN guard's reason, if it gave up)."""
    with precision_scope(sol.precision):
        if ev.has_truth(problem):
            sol.metrics.update(sol.score().metrics())
            at_points = ev.score_at_points(problem, sol.evaluate)
            if at_points is not None:  # a file reference: scored at its own points too
                sol.metrics.update(at_points)
            if problem.ranged:  # a parametric problem: the errors over its ranges
                sol.metrics["param_grid"] = sol.errors_over_params()
    why = "; ".join(w for w in (gave_up, divergence(sol.history,
                                                     sol.metrics.get("rel_l2"))) if w)
    why = why or None
    sol.metrics["converged"] = why is None
    if why is not None:
        sol.metrics["divergence"] = why
        warnings.warn(f"{problem.name}: the run did not converge: {why}; lower "
                      "the learning rate, train longer or check the problem scaling",
                      RuntimeWarning, stacklevel=3)


def _gave_up(exc: TrainingDiverged, seconds: float) -> tuple[TrainResult, str]:
    """The run up to the last good state of a run the NaN guard gave up on, and why."""
    rows = list(exc.history)
    last = next((r for r in reversed(rows) if r.get("event") != "rollback"), {})
    terms = {k[5:]: v for k, v in last.items() if k.startswith("loss.") and v is not None}
    result = TrainResult(params=exc.params, history=rows, step=exc.step, stages=[],
                         rollbacks=list(exc.failures), wall_time=seconds,
                         train_seconds=seconds, final_terms=terms)
    return result, (f"the loss stayed non-finite from step {exc.step} on (the NaN guard gave "
                    "up), so the run kept the parameters of that step")


def _weighting(training: Training, asm: Assembly, problem):
    """The training's weighting, started from each condition's weight and (a balancing
    weighting) told that the equations are the residual terms it holds fixed."""
    weighting = training.weighting if training.weighting is not None else Fixed()
    weighting = with_residual_terms(weighting, tuple(problem.equations))
    return with_term_weights(weighting, {k: float(v) for k, v in asm.weights.items()})


def _evaluator(problem, apply, dtype) -> Callable | None:
    """``evaluate(params) -> {rel_l2_<field>: v}`` on a fixed subset of the evaluation grid,
    or of a file reference's own points (the training history's error column)."""
    if not ev.has_truth(problem):
        return None
    pts = ev.evaluation_points(problem)
    ref = ev.truth(problem, pts).values
    own = getattr(problem.reference, "points", None)
    if not problem.exact and not problem.ranged and own is not None \
            and np.ndim(own) == 2 and np.shape(own)[1] == len(problem.inputs):
        # a file reference: its own points (a fixed subset), nothing interpolated; those
        # in the problem's time interval (a time window's, pinn.marching)
        inside = np.flatnonzero(ev.in_time_window(problem, own))
        n = len(inside)
        keep = inside[np.random.default_rng(0).choice(n, len(pts), replace=False)
                      if n > len(pts) else np.arange(n)]
        pts = np.asarray(own, dtype=np.float64)[keep]
        ref = {k: np.asarray(v, dtype=np.float64)[keep]
               for k, v in problem.reference.values.items()}
    shift = ev.up_to_constant(problem)
    apply_j = jax.jit(apply, compiler_options=compiler_options())
    x = jnp.asarray(pts, dtype)

    def evaluate(p):
        # the network in the run's precision whatever its stage's (a float32 stage of a
        # float64 run), converted on the host: one program for the whole run
        net = jax.tree.map(lambda a: np.asarray(a, dtype), p["net"])
        out = np.asarray(apply_j(net, x))
        pred = {f: out[:, i] for i, f in enumerate(problem.field_names)}
        errs = ev.field_errors(pred, ref, shift)["rel_l2"]
        return {f"rel_l2_{k}": v for k, v in errs.items()}

    def ahead(net) -> threading.Thread:
        """Compile the program in a background thread, beside the first stage's (XLA
        compiles on one core): the first evaluation then finds it compiled."""
        shapes = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), dtype), net)
        x64 = bool(jax.config.read("jax_enable_x64"))

        def work():
            try:
                with jax.enable_x64(x64):
                    apply_j.lower(shapes, x).compile()
            except Exception as err:  # noqa: BLE001 - the first evaluation compiles again
                warnings.warn(f"compiling the evaluation ahead failed: {err!r}",
                              RuntimeWarning, stacklevel=2)

        thread = threading.Thread(target=work, name="pinn-compile-eval", daemon=True)
        thread.start()
        return thread

    evaluate.ahead = ahead
    return evaluate


def setup(problem, model=None, training: Training | None = None, *,
          precision: int | None = None,
          out_dir: str | os.PathLike | None = None, resume: bool = False,
          progress: bool = True, resolution=None, snapshots: int = 4,
          observers: Sequence[Any] = (), metrics: dict | None = None) -> Run:
    """Set up a PINN run of ``problem``: the network, the loss, the weights, the keys.

    ``model``: a network spec (default ``pinn.MLP(width=30, depth=3)``, the size the
    default recipe is made for);
    ``training``: a :class:`Training` (default: Adam, then self-scaled Broyden);
    ``precision``: 32 or 64 (float64 for this run only; a stage's own ``precision`` wins);
    None: auto (:meth:`Training.stage_precisions`: first-order stages in float32, the
    quasi-Newton ones ``"mixed"``: float32 until the line search stalls at float32's
    rounding floor, then float64, the state converted once; Gauss-Newton in float64);
    ``out_dir``: the run folder (history, checkpoints, then solution, metrics, plots,
    report; None: nothing is written); ``resume``: continue from its last checkpoint;
    ``resolution``: the evaluation grid's nodes per axis (None: the default grid);
    ``snapshots``: time snapshots in the plots of an evolution problem;
    ``observers``: extra training observers (:mod:`pinn.train.observers`);
    ``metrics``: entries added to the run's metrics (e.g. the problem file).
    """
    compile_cache.enable()  # before anything compiles: a re-run loads its programs
    model = model if model is not None else MLP(width=30, depth=3)
    training = training if training is not None else Training()
    # each stage's precision (its own, else the run's or auto's), written into the stages
    # where they differ; the run's is the highest
    training = training.with_stage_precisions(precision)
    precision = run_bits(training.stage_precisions(precision))
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir, the folder holding the checkpoints")
    with precision_scope(precision):
        dtype = jnp.dtype(jnp.float64 if precision == 64 else jnp.float32)
        apply, net_params = build_network(problem, model, training.seed)
        causal = training.weighting if isinstance(training.weighting, Causal) else None
        asm = assemble(problem, apply, training.points, causal=causal, dtype=dtype)
        params = {"net": net_params,
                  "pde": {p.name: jnp.asarray(p.value, dtype) for p in problem.learnable}}
        return Run(problem, model, training, precision, asm, params,
                   _weighting(training, asm, problem),
                   key=jax.random.fold_in(jax.random.PRNGKey(training.seed), 2),
                   evaluate=_evaluator(problem, asm.apply, dtype),
                   out_dir=None if out_dir is None else Path(out_dir), resume=resume,
                   progress=progress, resolution=resolution, snapshots=snapshots,
                   observers=tuple(observers),
                   metrics=dict(metrics or {}))


def solve(problem, model=None, training: Training | None = None, **options) -> Solution:
    """Train a PINN on ``problem`` and return the :class:`Solution`:
    ``setup(problem, model, training, **options).train()`` (see :func:`setup`)."""
    return setup(problem, model, training, **options).train()


def fem_run(problem, *, cells: int = 64, element: str = "P2", dt: float | None = None,
            theta: float = 0.5, out_dir: str | os.PathLike | None = None, resolution=None,
            snapshots: int = 4, metrics: dict | None = None):
    """Solve ``problem`` with the FEM baseline and score it like a PINN run (the same grid
    and error rule); with ``out_dir``, write its run folder (``fem.npz``, ``fem.json``,
    plots, ``metrics.json``, ``report.md``). Returns ``(FEMSolution, metrics)``; raises
    ``pinn.fem.UnsupportedProblem`` for a term FEM cannot handle."""
    from pinn import fem  # scikit-fem: only for FEM runs

    t0 = time.perf_counter()
    sol = fem.solve(problem, cells=cells, element=element, dt=dt, theta=theta)
    facts = {"problem": problem.name, **sol.metrics(), "element": element,
             "wall_seconds": time.perf_counter() - t0, "peak_memory_mb": peak_memory_mb(),
             **(metrics or {})}
    score = ev.score(problem, sol.evaluate, resolution=resolution)
    facts.update(score.metrics())
    facts.update(ev.score_at_points(problem, sol.evaluate) or {})
    if out_dir is not None:
        sol.save(out_dir)
        facts = write_run(out_dir, problem, score, facts, snapshots=snapshots, method="FEM",
                          title=f"{problem.name}: FEM ({element}, {sol.n_cells} cells)")
    return sol, facts
