"""Time marching: an evolution problem trained window by window in time.

The time interval ``[t0, t1]`` is cut into ``windows`` equal slabs, trained one after
another, each by the run's own recipe (stages, points, weighting) on its slab alone: the
first from the problem's initial conditions, each later one from the previous window's
solution at its start time, fitted as a soft initial condition (as JAX-PI's time marching,
Wang, Sankaran, Wang & Perdikaris 2023, "An expert's guide to training PINNs"; Wight & Zhao
2020). A slab of length ``(t1 - t0)/windows`` is a problem ``windows`` times shorter: a
transport over many wavelengths, a long-time diffusion or a stiff reaction becomes a
sequence of easy problems. Each window's network sees its own slab scaled to ``[-1, 1]``
and starts from the previous window's parameters (the solution a moment earlier), except
after a first window with a hard initial value, whose network means something else.

The result is one :class:`~pinn.solution.Solution` of the whole problem whose network is
piecewise in time (``windows`` networks; :func:`piecewise_apply`): it evaluates, scores,
saves, loads and exports as any other (a window's boundary belongs to the later window).

Conditions in a window: boundary conditions and equations as given (their expressions see
the true time); data (observations) restricted to the points inside the slab; a hard
initial value of the problem stays hard in the first window and is soft (a loss term of
the condition's weight) in the others. Problems with learnable or ranged parameters are
refused (a window would learn its own value, or need the previous one at every parameter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from pinn import conditions as C
from pinn.dsl import expr as E

__all__ = ["window_edges", "window_problem", "piecewise_apply", "check_windows",
           "WindowStart", "window_key", "train_windows"]


def check_windows(problem, windows: int) -> None:
    """Raise ``ValueError`` naming the fix when ``problem`` cannot be marched in
    ``windows`` time windows."""
    if isinstance(windows, bool) or not isinstance(windows, (int, np.integer)) or windows < 1:
        raise ValueError(f"windows must be an integer >= 1, got {windows!r}")
    if windows == 1:
        return
    if not problem.is_evolution:
        raise ValueError(f"{problem.name}: time windows need an evolution problem (a domain "
                         "with a time interval); this one is steady: drop windows")
    if problem.learnable:
        raise ValueError(f"{problem.name}: time windows with learnable parameters "
                         f"({', '.join(p.name for p in problem.learnable)}) would learn one "
                         "value per window: train the inverse problem in one window")
    if problem.ranged:
        raise ValueError(f"{problem.name}: time windows of a parametric problem (ranged "
                         f"{', '.join(p.name for p in problem.ranged)}) are not supported: "
                         "train it in one window")
    if not any(isinstance(c, C.Initial) for c in problem.conditions.values()):
        raise ValueError(f"{problem.name}: time windows start each window from the previous "
                         "one's values, and the first from the initial condition: this "
                         "problem has none")


def window_edges(problem, windows: int) -> np.ndarray:
    """The ``windows + 1`` times that cut ``[t0, t1]`` into equal windows."""
    return np.linspace(problem.time.t0, problem.time.t1, int(windows) + 1)


class WindowStart:
    """The previous window's solution at the start time ``t`` of the next one, as a
    coefficient of the spatial coordinates (a :class:`~pinn.dsl.expr.Tabulated` table):
    ``field`` (or, ``rate=True``, its time derivative) of ``apply(params, ·)`` at
    ``(x, t)``. Compares by identity; it is not data (a window's problem is not saved)."""

    def __init__(self, apply, params, field_index: int, t: float, dim: int, *,
                 rate: bool = False):
        self.apply, self.params = apply, params
        self.field_index, self.t, self.dim, self.rate = int(field_index), float(t), dim, rate

    def _value(self, x):  # one point x[dim] -> scalar
        def u(tt):
            pt = jnp.concatenate([x, jnp.reshape(tt, (1,))])[None, :]
            params = jax.tree.map(lambda a: jnp.asarray(a, x.dtype), self.params)
            return self.apply(params, pt)[0, self.field_index]

        t = jnp.asarray(self.t, x.dtype)
        return jax.grad(u)(t) if self.rate else u(t)

    def __call__(self, cols, deriv=None, xp=None):
        cols = jnp.broadcast_arrays(*[jnp.asarray(c) for c in cols])
        shape = cols[0].shape
        dtype = jnp.result_type(cols[0], float)
        x = jnp.stack([jnp.ravel(c).astype(dtype) for c in cols], axis=-1)
        fn = self._value
        for axis, k in enumerate(tuple(deriv or ())):  # spatial derivatives, by autodiff
            for _ in range(int(k)):
                fn = _partial(fn, axis)
        out = jax.vmap(fn)(jax.lax.stop_gradient(x)).reshape(shape)
        return np.asarray(out) if xp is np else out

    def __repr__(self) -> str:
        what = "rate" if self.rate else "value"
        return f"WindowStart(field {self.field_index} {what} at t={self.t:g})"


def _partial(fn, axis: int):
    def d(x):
        return jax.grad(fn)(x)[axis]

    return d


def window_problem(problem, k: int, edges: Sequence[float], previous=None):
    """The problem of window ``k`` (``[edges[k], edges[k+1]]``).

    ``previous``: ``(apply, net_params)`` of window ``k - 1``, whose values at the
    window's start become its initial values (soft, with each initial condition's weight);
    ``None`` for the first window, or to build a later window's problem only to evaluate
    its network (the initial values are then left as the problem's, made soft: a soft
    condition does not enter the network)."""
    from pinn.geometry.spacetime import SpaceTime, TimeInterval

    a, b = float(edges[k]), float(edges[k + 1])
    conds = {}
    spatial = problem.spatial
    fidx = {f: i for i, f in enumerate(problem.fields)}
    for name, c in problem.conditions.items():
        if isinstance(c, C.Data):
            t = c.points[:, problem.time_index]
            last = k == len(edges) - 2
            keep = (t >= a) & ((t <= b) if last else (t < b))
            if keep.any():
                conds[name] = C.Data(c.points[keep], {f: v[keep] for f, v in c.values},
                                     noise=c.noise, weight=c.weight, source=c.source)
            continue
        if isinstance(c, C.Initial) and k > 0:
            if previous is None:
                conds[name] = C.Initial(dict(c.values), rate=dict(c.rates) or None,
                                        weight=c.weight, hard=False)
                continue
            rates = {f: _start(previous, fidx[f], f, a, spatial, rate=True)
                     for f, _ in c.rates}
            conds[name] = C.Initial({f: _start(previous, fidx[f], f, a, spatial)
                                     for f, _ in c.values},
                                    rate=rates or None, weight=c.weight, hard=False)
            continue
        conds[name] = c
    return replace(problem, domain=SpaceTime(problem.space, TimeInterval(a, b)),
                   conditions=conds)


def _start(previous, index: int, f, t: float, spatial, *, rate: bool = False) -> E.Expr:
    """The previous window's ``f`` (or its rate) at time ``t``, as an expression of the
    spatial coordinates."""
    apply, params = previous
    table = WindowStart(apply, params, index, t, len(spatial), rate=rate)
    label = f"{f.name}_t" if rate else f.name
    return E.Tabulated(f"{label}(t={t:g})", table, spatial)


def piecewise_apply(applies: Sequence, edges: Sequence[float], time_index: int):
    """``apply(net, x)`` of a solution piecewise in time: window ``k``'s network
    ``applies[k](net["w<k>"], x)`` where ``edges[k] <= t < edges[k+1]`` (the first window
    also before ``edges[0]``, the last also from ``edges[-1]``). Every window is evaluated
    at every point and one is selected (``where``): exact derivatives inside a window, a
    static graph that exports."""
    applies = tuple(applies)
    inner = [float(e) for e in edges[1:-1]]

    def apply(net, x):
        t = x[:, time_index:time_index + 1]
        y = applies[0](net[window_key(0)], x)
        for k, edge in enumerate(inner, start=1):
            y = jnp.where(t >= edge, applies[k](net[window_key(k)], x), y)
        return y

    return apply


def window_key(k: int) -> str:
    """The parameters' key of window ``k`` in a piecewise network (``w<k>``)."""
    return f"w{k}"


# ---------------------------------------------------------------------------
# training window by window


def _cast_like(tree, like, precision: int):
    from pinn.training import precision_scope

    with precision_scope(precision):
        return jax.tree.map(lambda a, b: jnp.asarray(np.asarray(a), b.dtype), tree, like)


def _say(run, text: str) -> None:
    """A progress line between windows, where the run shows progress as lines or a bar."""
    import sys
    import time

    from pinn.train.observers import Progress

    shown = [o for o in run.observers if isinstance(o, Progress)]
    if not (run.progress or shown) or any(o.format == "json" for o in shown):
        return
    stream = next((o.stream for o in shown if o.stream is not None), None) or sys.stderr
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {text}", file=stream, flush=True)


#: a finished window's metrics kept beside its parameters (for a resumed run's totals)
WINDOW_METRICS = "window.json"
_KEPT = ("steps_done", "train_seconds", "compile_seconds", "rel_l2", "loss")


def _read_metrics(wdir) -> dict:
    import json

    try:
        data = json.loads((wdir / WINDOW_METRICS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def train_windows(run, **loop_overrides):
    """Train ``run`` (a :class:`pinn.run.Run` whose training has ``windows > 1``) window by
    window; returns the piecewise :class:`~pinn.solution.Solution` of the whole problem
    (scored and, with ``run.out_dir``, saved as any run). Each finished window's parameters
    are kept in ``<out_dir>/windows/w<k>/params.npz`` and its checkpoints beside them, so
    that ``resume`` skips the finished windows and resumes the one that was cut."""
    import time
    import warnings

    from pinn import serialize
    from pinn.distributed import is_main
    from pinn.io import write_json, write_jsonl, write_npz
    from pinn.run import finish, setup
    from pinn.solution import Solution
    from pinn.train.history import read_history

    problem, training = run.problem, run.training
    windows = training.windows
    check_windows(problem, windows)
    edges = window_edges(problem, windows)
    inner = replace(training, windows=1)
    hard_start = any(isinstance(c, C.Initial) and c.hard for c in problem.conditions.values())
    t_start = time.perf_counter()
    nets, history, window_metrics = {}, [], []
    previous, step0 = None, 0
    totals = {"steps_done": 0, "train_seconds": 0.0, "compile_seconds": 0.0}
    last = None
    for k in range(windows):
        a, b = edges[k], edges[k + 1]
        pk = window_problem(problem, k, edges, previous=previous)
        wrun = setup(pk, run.model, inner, precision=run.precision, progress=run.progress,
                     resolution=run.resolution, observers=run.observers)
        if previous is not None and not (k == 1 and hard_start):
            # the solution a moment earlier: a better start than a random network
            wrun.params = {"net": _cast_like(previous[1], wrun.params["net"],
                                              run.precision),
                           "pde": wrun.params["pde"]}
        wdir = None if run.out_dir is None else run.out_dir / "windows" / window_key(k)
        done = wdir is not None and run.resume and (wdir / serialize.PARAMS_FILE).is_file()
        _say(run, f"window {k + 1}/{windows}: t in [{a:.6g}, {b:.6g}]"
             + (" (finished before: loaded)" if done else ""))
        if done:  # finished before the run was cut: its parameters, history and metrics
            net = serialize.load_params(wdir, {"net": wrun.params["net"], "pde": {}})["net"]
            rows = read_history(wdir / serialize.HISTORY_FILE)
            metrics = _read_metrics(wdir)
        else:
            extra = {}
            if wdir is not None:
                extra = {"checkpoint_dir": wdir / "checkpoints", "resume": run.resume}
            with warnings.catch_warnings():  # judged once, on the whole interval
                warnings.filterwarnings("ignore", message=".*the run did not converge",
                                        category=RuntimeWarning)
                sol_k = wrun.train(**{**extra, **loop_overrides})
            net, rows, metrics = sol_k.params["net"], sol_k.history, sol_k.metrics
            if wdir is not None and is_main():  # many processes: process 0 writes
                wdir.mkdir(parents=True, exist_ok=True)
                write_jsonl(wdir / serialize.HISTORY_FILE, rows)
                write_json(wdir / WINDOW_METRICS, {k: metrics[k] for k in _KEPT
                                                   if k in metrics})
                # last: a window counts as finished once its parameters are written
                write_npz(wdir / serialize.PARAMS_FILE,
                          **serialize.flat_params(jax.device_get({"net": net})))
        for key in totals:
            totals[key] += metrics.get(key, 0)
        window_metrics.append({"window": k, "t": [float(a), float(b)],
                               **{kk: metrics[kk] for kk in ("rel_l2", "steps_done",
                                                             "train_seconds", "loss")
                                  if kk in metrics}})
        history += [{**r, "step": r.get("step", 0) + step0, "window": k} for r in rows]
        step0 += int(metrics.get("steps_done", training.steps))
        nets[window_key(k)] = net
        previous = (wrun.assembly.apply, jax.device_get(net))
        last = metrics
    sol = Solution(problem, run.model, {"net": nets, "pde": {}}, seed=training.seed,
                   precision=run.precision, history=history, training=training,
                   resolution=run.resolution, windows=tuple(float(e) for e in edges))
    sol.metrics = {
        "problem": problem.name, "method": "PINN", "steps": training.steps * windows, **totals,
        "wall_seconds": float(time.perf_counter() - t_start), "precision": run.precision,
        "seed": training.seed, "n_params": int(sum(np.size(v) for v in jax.tree.leaves(nets))),
        "loss": dict((last or {}).get("loss", {})), "params": {}, "windows": windows,
        "window_metrics": window_metrics, **run.metrics,
    }
    finish(sol, problem)
    if run.out_dir is not None and is_main():
        sol.save(run.out_dir, snapshots=run.snapshots)
    return sol
