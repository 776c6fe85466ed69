"""``pinn.solve``: train a network on a Problem and return a :class:`Solution`."""

from __future__ import annotations

import contextlib
import os
import pickle
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_on_points
from pinn.train.loss import Points, assemble

__all__ = ["Training", "Solution", "solve", "evaluation_grid", "evaluation_points", "Grid",
           "precision_scope"]


def _default_stages():
    from pinn.train import LBFGS, Adam, Stage

    return (Stage(Adam(lr=1e-3, decay="exponential", decay_rate=0.9, decay_steps=1000), 5000),
            Stage(LBFGS(), 500))


@dataclass(frozen=True)
class Training:
    """How to train: optimiser stages, collocation points, weighting, seed.

    ``chunk``: steps per jitted call (the host sees only chunk boundaries);
    ``eval_every``: steps between evaluations against the exact solution or
    reference (None: at the end of each stage); ``checkpoint_every``: steps
    between checkpoints when the run has an output folder.
    """

    stages: Sequence[Any] = field(default_factory=_default_stages)
    points: Points = field(default_factory=Points)
    weighting: Any = None
    seed: int = 0
    chunk: int | None = None
    eval_every: int | None = None
    checkpoint_every: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "stages", tuple(self.stages))
        if not self.stages:
            raise ValueError("Training needs at least one stage, e.g. Stage(Adam(1e-3), 5000)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"Training.seed must be an integer, got {self.seed!r}")

    @property
    def steps(self) -> int:
        return int(sum(s.steps for s in self.stages))


@contextlib.contextmanager
def precision_scope(precision: int):
    """Run a block in float32 (default) or float64; never changes the global default."""
    if precision not in (32, 64):
        raise ValueError(f"precision must be 32 or 64, got {precision!r}")
    with jax.enable_x64(precision == 64):
        yield


# ---------------------------------------------------------------------------
# evaluation grid


@dataclass(frozen=True)
class Grid:
    """Points of a regular grid over the domain (masked to the shape).

    ``points[M, d]`` are the grid nodes inside the domain; ``axes`` the 1-D
    coordinates of every axis (space axes then time), ``mask`` the boolean
    array of shape ``[len(a) for a in axes]`` saying which nodes are inside.
    """

    points: np.ndarray
    axes: tuple[np.ndarray, ...]
    mask: np.ndarray


def evaluation_grid(problem, n: int | None = None, n_time: int | None = None) -> Grid:
    """A grid for errors and plots: ``n`` nodes per space axis, ``n_time`` times."""
    dim = problem.space.dim
    n = n or {1: 201, 2: 101, 3: 41}.get(dim, 21)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in problem.space.bounds)
    axes = [np.linspace(lo[i], hi[i], n) for i in range(dim)]
    if problem.is_evolution:
        n_time = n_time or (101 if dim == 1 else 11)
        axes.append(np.linspace(problem.time.t0, problem.time.t1, n_time))
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    flat = mesh.reshape(-1, len(axes))
    inside = np.asarray(problem.space.contains(jnp.asarray(flat[:, :dim])), dtype=bool)
    on_edge = np.zeros_like(inside)
    try:  # keep boundary nodes (contains may exclude them)
        on_edge = np.asarray(
            problem.space.boundary_mask(jnp.asarray(flat[:, :dim]), "boundary", 1e-9), dtype=bool)
    except (AttributeError, TypeError, ValueError):
        pass
    mask = (inside | on_edge).reshape(mesh.shape[:-1])
    return Grid(points=flat[mask.reshape(-1)], axes=tuple(axes), mask=mask)


def evaluation_points(problem, max_points: int | None = 30000, seed: int = 0) -> np.ndarray:
    """The nodes of :func:`evaluation_grid` inside the domain, or a fixed random subset
    of ``max_points`` of them (``seed``): the errors in the history, and the benchmarks'
    errors, estimate the final error on the same points every time."""
    pts = evaluation_grid(problem).points
    if max_points is not None and len(pts) > max_points:
        pts = pts[np.random.default_rng(seed).choice(len(pts), max_points, replace=False)]
    return pts


# ---------------------------------------------------------------------------
# the solution


class Solution:
    """A trained PINN: evaluate fields and derivative expressions, errors, save/load."""

    def __init__(self, problem, model, params, *, seed: int = 0, precision: int = 32,
                 history: list | None = None, metrics: dict | None = None,
                 training: Training | None = None):
        self.problem = problem
        self.model = model
        self.params = params
        self.seed = seed
        self.precision = precision
        self.history = list(history or [])
        self.metrics = dict(metrics or {})
        self.training = training
        self._apply = None
        self._compiled: dict = {}

    # -- the network ----------------------------------------------------------
    @property
    def apply(self):
        """``apply(net_params, x[N, d]) -> [N, n_fields]`` with hard constraints."""
        if self._apply is None:
            with precision_scope(self.precision):
                raw, _ = build_network(self.problem, self.model, self.seed)
                from pinn.train.loss import _hard_transforms

                self._apply = _hard_transforms(self.problem, raw, self.problem.space.dim)
        return self._apply

    def _as_points(self, points) -> jax.Array:
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim == 1 and len(self.problem.coords) == 1:
            pts = pts[:, None]
        if pts.ndim != 2 or pts.shape[1] != len(self.problem.coords):
            raise ValueError(
                f"points must be an array [N, {len(self.problem.coords)}] with columns "
                f"{', '.join(c.name for c in self.problem.coords)}; got shape {pts.shape}"
            )
        return pts

    def __call__(self, points) -> np.ndarray:
        """Field values ``[N, n_fields]`` at ``points[N, d]``."""
        pts = self._as_points(points)
        with precision_scope(self.precision):
            fn = self._compiled.get("__apply__")
            if fn is None:
                fn = self._compiled["__apply__"] = jax.jit(self.apply)
            outs = [np.asarray(fn(self.params["net"], jnp.asarray(c)))
                    for c in _chunks(pts, 65536)]
        return np.concatenate(outs, axis=0)

    def evaluate(self, points, exprs: Mapping[str, E.Expr | str] | Sequence | None = None
                 ) -> dict[str, np.ndarray]:
        """Values at ``points``: every field (default), or any expressions of the fields.

        ``exprs`` maps names to expressions (or strings in the PDE language), e.g.
        ``{"u_x": D(u, x), "residual": "u_t - alpha*laplacian(u)"}``.
        """
        pts = self._as_points(points)
        if exprs is None:
            vals = self(pts)
            return {f: vals[:, i] for i, f in enumerate(self.problem.field_names)}
        if not isinstance(exprs, Mapping):
            exprs = {str(e): e for e in exprs}
        parsed = {k: self._parse(v) for k, v in exprs.items()}
        key = tuple(sorted((k, str(v)) for k, v in parsed.items()))
        with precision_scope(self.precision):
            fn = self._compiled.get(key)
            if fn is None:
                from pinn.compile import compile_terms

                fn = jax.jit(compile_terms(parsed, coords=self.problem.coords,
                                           fields=self.problem.fields, apply=self.apply,
                                           spatial=self.problem.spatial))
                self._compiled[key] = fn
            parts = [fn(self.params, jnp.asarray(c)) for c in _chunks(pts, 16384)]
        return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parsed}

    def _parse(self, e) -> E.Expr:
        if isinstance(e, E.Expr):
            return e
        from pinn.dsl import parse

        return parse(str(e), namespace_of(self.problem))

    def learned_params(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.params.get("pde", {}).items()}

    # -- errors ------------------------------------------------------------------
    def reference(self, points) -> dict[str, np.ndarray] | None:
        return reference_values(self.problem, points)

    def errors(self, points=None) -> dict[str, dict[str, float]]:
        """Relative L2 and max abs errors per field against the exact solution or reference."""
        pts = evaluation_grid(self.problem).points if points is None else self._as_points(points)
        ref = self.reference(pts)
        if ref is None:
            return {}
        pred = self.evaluate(pts)
        return field_errors(pred, ref, self.problem)

    # -- persistence ----------------------------------------------------------------
    def save(self, directory) -> Path:
        """Write ``solution.pkl`` (atomically) into ``directory``."""
        from pinn.train.checkpoint import atomic_write_bytes

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        blob = pickle.dumps({
            "problem": self.problem, "model": self.model,
            "params": jax.device_get(self.params), "seed": self.seed,
            "precision": self.precision, "history": self.history, "metrics": self.metrics,
            "training": self.training, "version": 1,
        })
        return atomic_write_bytes(d / "solution.pkl", blob)

    @classmethod
    def load(cls, directory) -> Solution:
        """Load a solution saved by :meth:`save` (only load files you trust: pickle)."""
        p = Path(directory)
        p = p / "solution.pkl" if p.is_dir() else p
        if not p.exists():
            raise FileNotFoundError(f"no saved solution at {p}; run `pinn solve` first")
        with open(p, "rb") as fh:
            d = pickle.load(fh)
        return cls(d["problem"], d["model"], d["params"], seed=d["seed"],
                   precision=d["precision"], history=d["history"], metrics=d["metrics"],
                   training=d.get("training"))

    def __repr__(self) -> str:
        err = self.metrics.get("rel_l2")
        return f"Solution({self.problem.name!r}, steps={self.metrics.get('steps')}, rel_l2={err})"


def _chunks(a: np.ndarray, size: int):
    for i in range(0, max(len(a), 1), size):
        yield a[i:i + size]


def field_errors(pred: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray],
                 problem=None) -> dict:
    """Relative L2 and max abs errors per field (``pinn.report.field_errors``); fields the
    problem fixes only up to a constant (a pressure, per the reference) are compared after
    removing their means."""
    from pinn.report.metrics import field_errors as errors
    from pinn.report.metrics import up_to_constant

    return errors(pred, ref, up_to_constant(problem) if problem is not None else ())


def reference_values(problem, points) -> dict[str, np.ndarray] | None:
    """The exact (closed form) or reference solution at ``points``, per field."""
    pts = np.asarray(points, dtype=np.float64)
    if problem.exact:
        with jax.enable_x64(True):
            return {f.name: np.asarray(evaluate_on_points(e, problem.coords, jnp.asarray(pts),
                                                          spatial=problem.spatial))
                    for f, e in problem.exact.items()}
    if problem.reference is not None:
        out = problem.reference(pts)
        return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}
    return None


def namespace_of(problem) -> dict[str, E.Expr]:
    ns: dict[str, E.Expr] = {c.name: c for c in problem.coords}
    ns.update({f.name: f for f in problem.fields})
    ns.update({p.name: p for p in problem.params})
    return ns


# ---------------------------------------------------------------------------
# solve


def _domain_bounds(problem):
    lo, hi = (np.asarray(b, dtype=np.float64) for b in problem.space.bounds)
    if problem.is_evolution:
        lo = np.append(lo, problem.time.t0)
        hi = np.append(hi, problem.time.t1)
    return lo, hi


def build_network(problem, model, seed: int):
    """Build ``model`` for ``problem``; returns ``(apply, net_params)``."""
    from pinn.nets import split
    from pinn.train.loss import periodic_embedding

    key = jax.random.fold_in(jax.random.PRNGKey(seed), 1)
    module = model.build(len(problem.coords), len(problem.fields), key=key,
                         bounds=_domain_bounds(problem),
                         periodic=periodic_embedding(problem) or None)
    return split(module)


def solve(problem, model=None, training: Training | None = None, *, precision: int = 32,
          out_dir: str | os.PathLike | None = None, resume: bool = False,
          progress: bool = True) -> Solution:
    """Train a PINN on ``problem`` and return the :class:`Solution`.

    ``model``: a network spec (default ``pinn.MLP(width=64, depth=4)``);
    ``training``: a :class:`Training` (default: Adam then L-BFGS);
    ``precision``: 32 or 64 (float64 for this run only);
    ``out_dir``: where checkpoints and history go (None: keep in memory);
    ``resume``: continue from the last checkpoint in ``out_dir``.
    """
    from pinn.nets import MLP
    from pinn.train import Fixed, run
    from pinn.train.weighting import Causal

    model = model if model is not None else MLP(width=64, depth=4)
    training = training if training is not None else Training()
    if resume and out_dir is None:
        raise ValueError("resume=True needs out_dir, the folder holding the checkpoints")
    with precision_scope(precision):
        apply, net_params = build_network(problem, model, training.seed)
        weighting = training.weighting if training.weighting is not None else Fixed()
        causal = weighting if isinstance(weighting, Causal) else None
        asm = assemble(problem, apply, training.points, causal=causal)
        dtype = jnp.zeros(()).dtype
        params = {"net": net_params,
                  "pde": {p.name: jnp.asarray(p.value, dtype) for p in problem.learnable}}
        if isinstance(weighting, Fixed) and weighting.weights is None:
            weighting = Fixed({k: float(v) for k, v in asm.weights.items()})
        elif causal is not None:
            weighting = replace(causal, base=Fixed(dict(asm.weights))) if hasattr(
                causal, "base") and causal.base is None else causal
        evaluate = None
        if problem.exact or problem.reference is not None:
            pts_eval = evaluation_points(problem)
            ref_eval = reference_values(problem, pts_eval)
            apply_j = jax.jit(asm.apply)
            x_eval = jnp.asarray(pts_eval, dtype)

            def evaluate(p):
                out = np.asarray(apply_j(p["net"], x_eval))
                pred = {f: out[:, i] for i, f in enumerate(problem.field_names)}
                errs = field_errors(pred, ref_eval, problem)["rel_l2"]
                return {f"rel_l2_{k}": v for k, v in errs.items()}

        key = jax.random.fold_in(jax.random.PRNGKey(training.seed), 2)
        t_start = time.perf_counter()
        result = run(
            asm.terms_fn, params, stages=training.stages, sample_fn=asm.sample_fn, key=key,
            weighting=weighting, resample_every=training.points.resample_every or None,
            chunk=training.chunk or 500, out_dir=out_dir,
            checkpoint_every=training.checkpoint_every,
            resume=resume, evaluate=evaluate, eval_every=training.eval_every,
            progress=progress,
        )
        wall = time.perf_counter() - t_start
        sol = Solution(problem, model, result.params, seed=training.seed, precision=precision,
                       history=list(result.history), training=training)
        sol._apply = asm.apply
        metrics: dict[str, Any] = {
            "steps": int(training.steps),
            "train_seconds": float(getattr(result, "train_seconds", wall)),
            "compile_seconds": float(getattr(result, "compile_seconds", 0.0)),
            "wall_seconds": float(wall),
            "loss": {k: float(v) for k, v in (getattr(result, "final_terms", None) or {}).items()},
            "params": sol.learned_params(),
            "precision": precision,
            "seed": training.seed,
        }
        errs = sol.errors()
        metrics.update(errs)
        sol.metrics = metrics
    return sol

