"""The one seam between setting up and running: ``pinn.setup(...) -> Run``, ``Run.train()``.

The CLI, the notebooks, the benchmarks and ``pinn sweep`` all go through :func:`setup`, so
nothing re-types the set-up (network, loss assembly, weights, PRNG keys, evaluation). A run
with an ``out_dir`` owns that folder: history and checkpoints while it trains, then the
solution, ``metrics.json``, plots and ``report.md`` (:meth:`Solution.save`). Over several
processes (:mod:`pinn.distributed`) process 0 alone writes it; the others take part in each
checkpoint and resume from process 0's (the folder must be on a shared file system).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pinn import compile_cache, io, marching, serialize
from pinn import evaluate as ev
from pinn.distributed import is_main, to_host
from pinn.io import write_json, write_jsonl, write_npz
from pinn.network import build_network
from pinn.plan import Plan, Planning, make_plan
from pinn.report import write_run
from pinn.report.metrics import PER_NAME, peak_memory_mb
from pinn.solution import Solution
from pinn.train import Fixed, TrainingDiverged, TrainResult, run
from pinn.train.core import compiler_options
from pinn.train.history import read_history
from pinn.train.loss import Assembly, assemble
from pinn.train.microbatch import memory_per_point
from pinn.train.observers import KeepBest, Progress
from pinn.train.spec import MIXED, Training, precision_scope, run_bits
from pinn.train.weighting import Causal

__all__ = ["setup", "Run", "solve", "fem_run", "divergence", "advice", "train_windows",
           "ERROR_NEAR_ONE", "LOSS_FELL"]


#: A relative L2 error at or above this is "near 1": the network learned nothing useful.
ERROR_NEAR_ONE = 0.9
#: A loss that fell by at least this factor while an error stays near 1: the network fits
#: the equations, and the equations do not fix the truth.
LOSS_FELL = 100.0


def _count(tree) -> int:
    return int(sum(getattr(x, "size", 1) for x in jax.tree.leaves(tree)))


def divergence(history: Sequence[dict], rel_l2: dict | None = None) -> str | None:
    """Why a finished run did not converge, or ``None``: its last loss is non-finite or
    above its first (the history's ``loss``, roll-back rows aside), or a field's relative
    L2 error (``rel_l2``) is at least :data:`ERROR_NEAR_ONE`."""
    losses = _losses(history)
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


def _losses(history: Sequence[dict]) -> list:
    """The history's losses in order, roll-back rows aside."""
    return [r.get("loss") for r in history if r.get("event") != "rollback" and "loss" in r]


def advice(history: Sequence[dict], rel_l2: dict | None = None) -> str:
    """What to do about a run that :func:`divergence` says did not converge. A loss that
    fell by :data:`LOSS_FELL` or more while a field's error stays near 1: the network fits
    the equations but they do not fix the truth (check the conditions); otherwise (the
    loss rose, became non-finite or hardly fell): the optimisation's advice."""
    losses = _losses(history)
    near_one = [name for name, err in (rel_l2 or {}).items()
                if err is not None and math.isfinite(err) and err >= ERROR_NEAR_ONE]
    if losses and near_one:
        first, last = losses[0], losses[-1]
        if (first is not None and last is not None and math.isfinite(first)
                and math.isfinite(last) and first > 0 and last <= first / LOSS_FELL):
            which = ", ".join(near_one)
            return (f"the loss fell from {first:.3g} to {last:.3g}, so the network fits the "
                    f"equations but not the truth of {which}: check the conditions (a field "
                    "determined only up to a constant or a function of time, a missing "
                    "boundary or initial condition, a wrong sign)")
    return "lower the learning rate, train longer or check the problem scaling"


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
    plan: Plan | None = None
    overwrite: bool = False
    #: the selection by held-out observations (the plan's ``holdout``), or None
    keep_best: KeepBest | None = None

    def loop_arguments(self) -> dict:
        """The keyword arguments of :func:`pinn.train.run` for this run (after the terms,
        the parameters and the training)."""
        folder = {"out_dir": self.out_dir}
        if self.out_dir is not None and not is_main():  # many processes: process 0 writes,
            folder = {"checkpoint_dir": self.out_dir / "checkpoints"}  # the others gather
        return dict(sample_fn=self.assembly.sample_fn, key=self.key, weighting=self.weighting,
                    **folder, resume=self.resume, evaluate=self.evaluate,
                    progress=self.progress,
                    **({"keep_best": self.keep_best} if self.keep_best else {}),
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
        with self._take_folder():
            if self.training.windows > 1:  # time marching: window after window
                return train_windows(self, **loop_overrides)
            if self.plan is None or not self.plan.remarch:
                return self._train(**loop_overrides)
            with _held_warnings() as warned:  # warned again if kept
                sol = self._train(save=False, **loop_overrides)
            return remarch(self, sol, warned, **loop_overrides)

    def _take_folder(self):
        """The lock of ``out_dir`` for this process (shared with a command of this process
        that holds it), as a context; a finished run in it refused unless resuming or
        ``overwrite``. No lock where nothing is written here."""
        if self.out_dir is None or not is_main():
            return contextlib.nullcontext()
        lock = io.lock_run_folder(self.out_dir)
        done = [n for n in (serialize.PARAMS_FILE, "metrics.json", serialize.SOLUTION_FILE,
                            "checkpoints", "windows")
                if (self.out_dir / n).exists()]
        if done and not self.resume and not self.overwrite:
            lock.release()
            raise ValueError(f"{self.out_dir} holds a run ({done[0]}); pass resume=True to "
                             "continue it, overwrite=True to replace it, or another out_dir")
        if done and self.overwrite and not self.resume:
            import shutil

            for old in ("checkpoints", "windows"):  # a new run's, never resumed from these
                shutil.rmtree(self.out_dir / old, ignore_errors=True)
        return lock

    def _train(self, save: bool = True, **loop_overrides) -> Solution:
        t0 = time.perf_counter()
        gave_up = None
        precisions = self.training.stage_precisions(self.precision)
        with precision_scope(self.precision):
            if hasattr(self.evaluate, "ahead"):
                self.evaluate.ahead(self.params["net"])
            try:
                result = run(self.assembly.terms_fn, self.params, self.training,
                             **{**self.loop_arguments(), **loop_overrides})
            except TrainingDiverged as exc:
                if exc.step == 0:  # non-finite from the start: nothing was trained
                    raise
                result, gave_up = _gave_up(exc, time.perf_counter() - t0)
            wall = time.perf_counter() - t0
            # many processes: the (replicated) parameters as host arrays, so that what follows
            # (scoring, saving, the user's evaluations) runs in each process on its own
            params = result.params if jax.process_count() == 1 else to_host(result.params)
            # in the run's float type (a last stage in float32 of a float64 run: a "mixed"
            # stage that never stalled), as the saved solution is read back
            params = _in_dtype(params, jnp.float64 if self.precision == 64 else jnp.float32)
            sol = Solution(self.problem, self.model, params, seed=self.training.seed,
                           precision=self.precision, history=list(result.history),
                           training=self.training, resolution=self.resolution,
                           apply=self.assembly.apply)
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
                **({"kept": result.kept} if result.kept else {}),
                **({"stage_precisions": list(precisions)}
                   if len(set(precisions)) > 1 or MIXED in precisions else {}),
                **({"devices": self.training.devices} if self.training.devices else {}),
                **({"processes": jax.process_count()} if jax.process_count() > 1 else {}),
                **({"micro_batch": self.training.micro_batch}
                   if self.training.micro_batch else {}),
                **self.metrics,
            }
            finish(sol, self.problem, gave_up)
        if save and self.out_dir is not None and is_main():
            sol.save(self.out_dir, snapshots=self.snapshots)
        return sol


def _in_dtype(tree, dtype):
    """``tree`` with its floating leaves in ``dtype``."""
    def fix(a):
        return a.astype(dtype) if jnp.issubdtype(jnp.result_type(a), jnp.floating) else a

    return jax.tree.map(fix, tree)


def finish(sol: Solution, problem, gave_up: str | None = None) -> None:
    """Score a trained ``sol`` into its metrics (on the evaluation grid, at a file
    reference's own points, over a parametric problem's ranges) and judge convergence:
    ``metrics["converged"]``, ``metrics["divergence"]`` and a ``RuntimeWarning`` saying why
    not and what to do (:func:`advice`; ``gave_up``: the NaN guard's reason, if it gave
    up)."""
    with precision_scope(sol.precision):
        if ev.has_truth(problem):
            sol.metrics.update(sol.score().metrics())
            at_points = ev.score_at_points(problem, sol.evaluate)
            if at_points is not None:  # a file reference: scored at its own points too
                sol.metrics.update(at_points)
            if problem.ranged:  # a parametric problem: the errors over its ranges
                sol.metrics["param_grid"] = sol.errors_over_params()
    rel_l2 = sol.metrics.get("rel_l2")
    why = "; ".join(w for w in (gave_up, divergence(sol.history, rel_l2)) if w)
    why = why or None
    sol.metrics["converged"] = why is None
    if why is not None:
        sol.metrics["divergence"] = why
        todo = advice([] if gave_up else sol.history, rel_l2)
        warnings.warn(f"{problem.name}: the run did not converge: {why}; {todo}",
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
    weighting = weighting.with_residual_terms(tuple(problem.equations))
    return weighting.with_term_weights({k: float(v) for k, v in asm.weights.items()})


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
    shift, times = ev.up_to_constant(problem), ev.point_times(problem, pts)
    apply_j = jax.jit(apply, compiler_options=compiler_options())
    x = jnp.asarray(pts, dtype)

    def evaluate(p):
        # the network in the run's precision whatever its stage's (a float32 stage of a
        # float64 run), converted on the host: one program for the whole run
        net = jax.tree.map(lambda a: np.asarray(a, dtype), p["net"])
        out = np.asarray(apply_j(net, x))
        pred = {f: out[:, i] for i, f in enumerate(problem.field_names)}
        errs = ev.field_errors(pred, ref, shift, times)["rel_l2"]
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


def _keep_best(problem, apply, dtype, validation) -> KeepBest | None:
    """The selection by held-out observations (:func:`pinn.plan._holdout`): their misfit,
    each observed field's mean square relative to its values' (summed), lowest kept."""
    if not validation:
        return None
    apply_j = jax.jit(apply, compiler_options=compiler_options())
    names = list(problem.field_names)
    held = [(jnp.asarray(d.points, dtype), [(names.index(f.name), np.asarray(v, np.float64))
                                            for f, v in d.values]) for _, d in validation]

    def misfit(p) -> float:
        net = jax.tree.map(lambda a: np.asarray(a, dtype), p["net"])
        total = 0.0
        for x, fields in held:
            out = np.asarray(apply_j(net, x), np.float64)
            for i, v in fields:
                total += float(np.mean((out[:, i] - v) ** 2) / max(np.mean(v * v), 1e-300))
        return total

    return KeepBest(misfit, name="heldout")


def _check_arguments(problem, model, training, precision, out_dir) -> None:
    """``TypeError``/``ValueError`` saying what was given and what :func:`setup` takes."""
    from pinn.problem import Problem

    if isinstance(problem, (str, os.PathLike)):
        raise TypeError(f"setup/solve take a pinn.Problem, not the path {str(problem)!r}: for "
                        f"a problem file use pinn.config.load({str(problem)!r}).setup()"
                        ".train(), or `pinn solve FILE` from a shell")
    if not isinstance(problem, Problem):
        raise TypeError(f"setup/solve take a pinn.Problem, got {type(problem).__name__}")
    if isinstance(model, (str, int, float, dict, list, tuple)):
        raise TypeError(f"model: give a network spec (pinn.MLP(width=30, depth=3), ...), got "
                        f"{type(model).__name__}")
    if training is not None and not isinstance(training, Training):
        raise TypeError(f"training: give a pinn.Training (e.g. pinn.Training(stages=[pinn."
                        f"Stage(pinn.Adam(lr=1e-3), 2000)])), got {type(training).__name__}")
    if precision is not None and (isinstance(precision, bool) or precision not in (32, 64)):
        raise ValueError(f"precision: 32, 64 or None (auto), got {precision!r}")
    if out_dir is not None and not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir: give a folder path, got {type(out_dir).__name__}")


def setup(problem, model=None, training: Training | None = None, *,
          precision: int | None = None,
          out_dir: str | os.PathLike | None = None, resume: bool = False,
          progress: bool = True, resolution=None, snapshots: int = 4,
          observers: Sequence[Any] = (), metrics: dict | None = None,
          plan: Planning | bool | None = None, overwrite: bool = False) -> Run:
    """Set up a PINN run of ``problem``: the network, the loss, the weights, the keys.

    ``model``: a network spec (default ``pinn.MLP(width=30, depth=3)``, the size the
    default recipe is made for);
    ``training``: a :class:`Training` (default: Adam, then self-scaled Broyden);
    ``precision``: 32 or 64 (float64 for this run only; a stage's own ``precision`` wins);
    None: auto (:meth:`Training.stage_precisions`: first-order stages in float32, the
    quasi-Newton ones ``"mixed"``: float32 until the line search stalls at float32's
    rounding floor, then float64, the state converted once; Gauss-Newton in float64);
    ``out_dir``: the run folder (history, checkpoints, then solution, metrics, plots,
    report; None: nothing is written; locked while the run trains, and a folder holding a
    run is refused unless ``resume`` or ``overwrite``); ``resume``: continue from its last
    checkpoint; ``overwrite``: replace the run in ``out_dir`` (its checkpoints removed);
    ``resolution``: the evaluation grid's nodes per axis (None: the default grid);
    ``snapshots``: time snapshots in the plots of an evolution problem;
    ``observers``: extra training observers (:mod:`pinn.train.observers`);
    ``metrics``: entries added to the run's metrics (e.g. the problem file);
    ``plan``: which choices the plan made from the problem may make (:mod:`pinn.plan`;
    ``False``: none): it builds in the Dirichlet conditions that do not say ``hard``
    themselves where the geometry can, and sizes the points when no training is given. The
    choices are the run's ``plan`` (and ``metrics["plan"]``).
    """
    _check_arguments(problem, model, training, precision, out_dir)
    compile_cache.enable()  # before anything compiles: a re-run loads its programs
    planned = make_plan(problem, model, training, plan)
    problem, model, training = planned.problem, planned.model, planned.training
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
                   keep_best=_keep_best(problem, asm.apply, dtype, planned.validation),
                   out_dir=None if out_dir is None else Path(out_dir), resume=resume,
                   progress=progress, resolution=resolution, snapshots=snapshots,
                   observers=tuple(observers), overwrite=bool(overwrite),
                   metrics={**({"plan": planned.to_data()["choices"]} if planned.choices
                               else {}), **(metrics or {})}, plan=planned)


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


# ---------------------------------------------------------------------------
# training window by window (pinn.marching: the windows' logic)


def _say(run: Run, text: str) -> None:
    """A progress line between windows, where the run shows progress as lines or a bar."""
    shown = [o for o in run.observers if isinstance(o, Progress)]
    if not (run.progress or shown) or any(o.format == "json" for o in shown):
        return
    stream = next((o.stream for o in shown if o.stream is not None), None) or sys.stderr
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {text}", file=stream, flush=True)


#: a finished window's metrics kept beside its parameters (for a resumed run's totals)
WINDOW_METRICS = "window.json"
_KEPT = ("steps_done", "train_seconds", "compile_seconds", "rel_l2", "loss")


#: what ``window.json`` holds (each key optional; a resumed run adds them up)
_WINDOW = io.mapping({"steps_done": io.INTEGER, "train_seconds": io.NUMBER,
                      "compile_seconds": io.NUMBER, "rel_l2": PER_NAME, "loss": PER_NAME},
                     "an object (a window's metrics)")


def _read_metrics(wdir: Path) -> dict:
    """A finished window's ``window.json`` (``{}`` where it has none); a damaged one is
    :class:`pinn.io.BadFile`, naming it."""
    path = wdir / WINDOW_METRICS
    if not path.exists():
        return {}
    return io.check_json(io.read_json_file(path, "window's metrics"), _WINDOW, path,
                         f"the window's metrics are damaged: remove {wdir} to train that "
                         "window again")


def _window(run: Run, k: int, wrun: Run, wdir: Path | None, done: bool,
            loop_overrides: dict) -> tuple[Any, list, dict]:
    """Window ``k`` trained (or, ``done``, read back from ``wdir``): its network's
    parameters, its history and its metrics; a trained window is written to ``wdir``."""
    if done:  # finished before the run was cut: its parameters, history and metrics
        net = serialize.load_params(wdir, {"net": wrun.params["net"], "pde": {}})["net"]
        return net, read_history(wdir / serialize.HISTORY_FILE), _read_metrics(wdir)
    extra = {}
    if wdir is not None:
        extra = {"checkpoint_dir": wdir / "checkpoints", "resume": run.resume}
    with warnings.catch_warnings():  # judged once, on the whole interval
        warnings.filterwarnings("ignore", message=".*the run did not converge",
                                category=RuntimeWarning)
        sol_k = wrun.train(**{**extra, **loop_overrides})
    net, rows, metrics = sol_k.params["net"], sol_k.history, sol_k.metrics
    if wdir is not None and is_main():  # many processes: process 0 writes
        write_jsonl(wdir / serialize.HISTORY_FILE, rows)
        write_json(wdir / WINDOW_METRICS, {k: metrics[k] for k in _KEPT if k in metrics})
        # last: a window counts as finished once its parameters are written
        write_npz(wdir / serialize.PARAMS_FILE,
                  **serialize.flat_params(jax.device_get({"net": net})))
    return net, rows, metrics


def remarch(run: Run, first: Solution, warned: Sequence = (), **loop_overrides) -> Solution:
    """``first`` (``run`` trained in one window) or, where it misses a soft start by more
    than :data:`pinn.plan.MISSED_START` (:func:`pinn.plan.missed_start`), ``run`` trained
    again in :data:`pinn.plan.REMARCH_WINDOWS` windows, kept where it misses the start
    less. Under a time limit only where the time left is at least what ``first`` took (the
    marched run gets what is left). ``metrics["remarched"]`` says what was done and why,
    with the other run's numbers; ``wall_seconds`` and ``steps`` (done and planned) count
    both runs. The kept solution is saved (with ``run.out_dir``) and its warnings warned:
    ``warned`` holds those ``first``'s training recorded."""
    from pinn.plan import MISSED_START, REMARCH_WINDOWS, Choice, missed_start

    def miss_of(sol):
        with precision_scope(run.precision):
            return missed_start(run.problem, lambda x: ev.predict_in_chunks(sol.evaluate, x))

    miss = miss_of(first)
    kept, note = first, None
    if miss is not None and miss[2] > MISSED_START:
        name, fld, m = miss
        spent, limit = float(first.metrics.get("wall_seconds", 0.0)), run.training.time_limit
        said = (f"one window missed its start ({name}) by {m:.2g} in {fld} (rms, relative), "
                f"over {MISSED_START:g}")
        note = {"condition": name, "field": fld, "miss": m, "windows": REMARCH_WINDOWS}
        if limit is not None and limit - spent < spent:
            note["why"] = (f"{said}; not marched: {limit - spent:.0f} s of the time limit "
                           f"left, less than the {spent:.0f} s the window took")
        else:
            _say(run, f"{said}: trained again in {REMARCH_WINDOWS} windows")
            training = replace(run.training, windows=REMARCH_WINDOWS,
                               time_limit=None if limit is None else limit - spent)
            with _held_warnings() as warned_again:
                marched = train_windows(replace(run, training=training), save=False,
                                        **loop_overrides)
            again = miss_of(marched)
            note["marched_miss"] = None if again is None else again[2]
            better = again is None or again[2] < m
            kept, other = (marched, first) if better else (first, marched)
            warned = warned_again if better else warned
            note["kept"] = f"{REMARCH_WINDOWS} windows" if better else "one window"
            note["other"] = {k: other.metrics[k] for k in _OTHER_KEPT if k in other.metrics}
            by = "nothing" if again is None else f"{again[2]:.2g}"
            note["why"] = (f"{said}: trained again in {REMARCH_WINDOWS} windows, which miss "
                           f"it by {by}; kept {note['kept']}")
            for k in ("wall_seconds", "steps", "steps_done", "train_seconds", "compile_seconds"):
                kept.metrics[k] = (first.metrics.get(k, 0) or 0) + (marched.metrics.get(k, 0)
                                                                  or 0)
            if better:
                kept.metrics["plan"] = list(kept.metrics.get("plan", [])) + [dataclasses.asdict(
                    Choice("windows", REMARCH_WINDOWS, note["why"]))]
        kept.metrics["remarched"] = note
    _warn(warned)  # the kept run's
    if run.out_dir is not None and is_main():
        kept.save(run.out_dir, snapshots=run.snapshots)
    return kept


@contextlib.contextmanager
def _held_warnings():
    """The warnings raised in the block recorded into the list it yields, not shown; shown
    at once where the block raises (an interrupted or failed run loses none)."""
    held: list = []
    try:
        with warnings.catch_warnings(record=True) as held:
            warnings.simplefilter("always")
            yield held
    except BaseException:
        _warn(held)
        raise


def _warn(held) -> None:
    """Warn the recorded warnings ``held`` (:func:`_held_warnings`) again."""
    for w in held:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


#: the numbers of the run :func:`remarch` did not keep, kept in its note
_OTHER_KEPT = ("loss", "rel_l2", "rel_l2_ref_points", "steps_done", "wall_seconds")


def train_windows(run: Run, save: bool = True, **loop_overrides) -> Solution:
    """Train ``run`` (whose training has ``windows > 1``) window by window
    (:mod:`pinn.marching`); returns the piecewise :class:`~pinn.solution.Solution` of the
    whole problem (scored and, with ``run.out_dir``, saved as any run). Each finished
    window's parameters are kept in ``<out_dir>/windows/w<k>/params.npz`` and its
    checkpoints beside them, so that ``resume`` skips the finished windows and resumes the
    one that was cut. ``save=False``: the solution is not saved (the caller saves)."""
    problem, training = run.problem, run.training
    windows = training.windows
    marching.check_windows(problem, windows)
    edges = marching.window_edges(problem, windows)
    inner = replace(training, windows=1)
    t_start = time.perf_counter()
    nets, history, window_metrics, previous, step0 = {}, [], [], None, 0
    applies: list = []
    totals = {"steps_done": 0, "train_seconds": 0.0, "compile_seconds": 0.0}
    last = None
    for k in range(windows):
        a, b = edges[k], edges[k + 1]
        pk = marching.window_problem(problem, k, edges, previous=previous)
        if training.time_limit is not None:  # the time left, shared by the windows left
            left = training.time_limit - (time.perf_counter() - t_start)
            inner = replace(inner, time_limit=max(left, 1.0) / (windows - k))
        wrun = setup(pk, run.model, inner, precision=run.precision, progress=run.progress,
                     resolution=run.resolution, observers=run.observers, plan=False)
        wdir = None if run.out_dir is None else run.out_dir / "windows" / marching.window_key(k)
        done = wdir is not None and run.resume and (wdir / serialize.PARAMS_FILE).is_file()
        _say(run, f"window {k + 1}/{windows}: t in [{a:.6g}, {b:.6g}]"
             + (" (finished before: loaded)" if done else ""))
        net, rows, last = _window(run, k, wrun, wdir, done, loop_overrides)
        for key in totals:
            totals[key] += last.get(key, 0)
        window_metrics.append({"window": k, "t": [float(a), float(b)],
                               **{kk: last[kk] for kk in ("rel_l2", "steps_done",
                                                          "train_seconds", "loss")
                                  if kk in last}})
        history += [{**r, "step": r.get("step", 0) + step0, "window": k} for r in rows]
        step0 += int(last.get("steps_done", training.steps))
        nets[marching.window_key(k)] = net
        previous = (wrun.assembly.apply, jax.device_get(net))
        applies.append(wrun.assembly.apply)
    return _windows_solution(run, edges, nets, applies, history, totals, window_metrics, last,
                             time.perf_counter() - t_start, save)


def _windows_solution(run: Run, edges, nets: dict, applies: list, history: list, totals: dict,
                      window_metrics: list, last: dict | None, wall: float,
                      save: bool = True) -> Solution:
    """The piecewise solution of a marched run, scored and (with ``out_dir``) saved."""
    problem, training = run.problem, run.training
    sol = Solution(problem, run.model, {"net": nets, "pde": {}}, seed=training.seed,
                   precision=run.precision, history=history, training=training,
                   resolution=run.resolution, windows=tuple(float(e) for e in edges),
                   apply=marching.piecewise_apply(applies, edges, problem.time_index))
    sol.metrics = {
        "problem": problem.name, "method": "PINN", "steps": training.steps * training.windows,
        **totals, "wall_seconds": float(wall), "precision": run.precision,
        "seed": training.seed, "n_params": int(sum(np.size(v) for v in jax.tree.leaves(nets))),
        "loss": dict((last or {}).get("loss", {})), "params": {},
        "windows": training.windows, "window_metrics": window_metrics, **run.metrics,
    }
    finish(sol, problem)
    if save and run.out_dir is not None and is_main():
        sol.save(run.out_dir, snapshots=run.snapshots)
    return sol
