"""A trained PINN: data (problem, model, parameters) plus evaluation and scoring.

Saving, plots, reports and field exports are functions of the modules below it (the run
format :mod:`pinn.serialize`, :mod:`pinn.report`); :class:`Solution`'s ``save``, ``load``,
``plot``, ``report`` and ``to_xarray`` only call them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from pinn import evaluate as ev
from pinn import serialize
from pinn.compile import compile_terms
from pinn.dsl import expr as E
from pinn.dsl import parse
from pinn.dsl.calculus import MAX_DERIVATIVE_ORDER, derivative_order
from pinn.io import write_jsonl
from pinn.network import field_apply, namespace_of
from pinn.qoi import Quantity, inside
from pinn.report import fields as F
from pinn.report import plots, true_params, write_run
from pinn.train.spec import Training, precision_scope

__all__ = ["Solution"]


#: Parameter values: one mapping ``{name: value}``, or many at once (a mapping ``{name:
#: array of Q values}``, or an array ``[Q, p]`` in the problem's ranged-parameter order).
Params = Mapping[str, float] | Mapping[str, np.ndarray] | np.ndarray


def _batched(params) -> bool:
    """Whether ``params`` holds many queries: an array, or a mapping with an array value."""
    return params is not None and (not isinstance(params, Mapping)
                                   or any(np.ndim(v) > 0 for v in params.values()))


def _chunks(a: np.ndarray, size: int, rows: np.ndarray | None = None):
    """``a`` in chunks of ``size`` rows; with ``rows`` (``[Q, p]``), the network's inputs of
    every query stacked query by query (``a[n]`` with ``rows[q]`` appended, row ``q * N + n``),
    made chunk by chunk so that only one chunk of them is ever held."""
    if rows is None:
        for i in range(0, max(len(a), 1), size):
            yield a[i:i + size]
        return
    n = max(len(a), 1)
    total = len(rows) * len(a)
    for i in range(0, max(total, 1), size):
        k = np.arange(i, min(i + size, total))
        yield np.concatenate([a[k % n], rows[k // n]], axis=1)


class Solution:
    """A trained PINN: evaluate fields and derivative expressions, errors, save/load.

    ``metrics`` holds what the run measured (steps, times, the errors of :meth:`score` on
    the evaluation grid); it is what ``metrics.json`` holds when the solution is saved.
    """

    def __init__(self, problem, model, params, *, seed: int = 0, precision: int = 32,
                 history: list | None = None, metrics: dict | None = None,
                 training: Training | None = None, resolution=None,
                 time_span_scaled: bool = True, windows: Sequence[float] | None = None,
                 apply: Callable | None = None):
        self.problem = problem
        # time marching (pinn.marching): the window edges; the network is one per window,
        # params["net"] = {"w0": ..., "w1": ...}
        self.windows = None if windows is None else tuple(float(e) for e in windows)
        # hard initial values scale the network by (t - t0)/(t1 - t0); False for
        # solutions saved in format 1, trained with the factor t - t0
        self.time_span_scaled = time_span_scaled
        self.model = model
        self.params = params
        self.seed = seed
        self.precision = precision
        self.history = list(history or [])
        self.metrics = dict(metrics or {})
        self.training = training
        self.resolution = resolution
        # the network with its hard conditions (built on first use when not given: the
        # run that trained it hands over its own)
        self._apply = apply
        self._compiled: dict = {}
        self._scores: dict = {}
        self._rules: dict = {}  # the quantities' quadrature rules, by quantity

    # -- the network ----------------------------------------------------------
    @property
    def apply(self):
        """``apply(net_params, x[N, d]) -> [N, n_fields]`` with hard constraints."""
        if self._apply is None:
            with precision_scope(self.precision):
                self._apply = field_apply(self.problem, self.model, self.seed,
                                          windows=self.windows,
                                          time_span=self.time_span_scaled,
                                          net=self.params["net"] if self.windows else None)
        return self._apply

    def _as_points(self, points, params: Mapping[str, float] | None = None) -> np.ndarray:
        """The network's inputs ``[N, d + p]``: ``points`` (the coordinates) with a
        parametric problem's ranged parameters appended from ``params``; without
        ``params`` the points may carry those columns themselves."""
        pts = self._points(points, params)
        return ev.with_params(self.problem, pts, params) if params is not None else pts

    def _points(self, points, params) -> np.ndarray:
        """``points`` as ``[N, d]`` float64 (``[N, d + p]`` where no ``params`` is given: a
        parametric solution's points may carry the parameters' columns)."""
        p = self.problem
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim == 1 and len(p.coords) == 1:
            pts = pts[:, None]
        if params is not None and not p.ranged:
            shown = (dict(params) if isinstance(params, Mapping) else
                     f"an array of shape {np.shape(params)}")
            raise ValueError(f"params={shown}: this solution has no ranged parameters "
                             "(evaluate it at points alone)")
        cols = p.coords if params is not None else p.inputs
        if pts.ndim != 2 or pts.shape[1] != len(cols):
            hint = ""
            if p.ranged and params is None and pts.ndim == 2 and pts.shape[1] == len(p.coords):
                hint = (f"; this solution is parametric: pass params={{"
                        f"{', '.join(repr(q.name) + ': ...' for q in p.ranged)}}} "
                        f"(ranges: {', '.join(f'{q.name} in {list(q.range)}' for q in p.ranged)})")
            raise ValueError(
                f"points must be an array [N, {len(cols)}] with columns "
                f"{', '.join(c.name for c in cols)}; got shape {pts.shape}{hint}")
        return pts

    def _inputs(self, points, params) -> tuple[np.ndarray, np.ndarray | None]:
        """``(inputs, None)``: the network's inputs ``[N, d + p]`` for one value of the
        parameters (or none); or, for many (:func:`_batched`), ``(points[N, d],
        rows[Q, p])``, the parameters' values checked by :meth:`Problem.param_rows
        <pinn.problem.Problem.param_rows>`."""
        if not _batched(params):
            return self._as_points(points, params), None
        pts = self._points(points, params)
        return pts, self.problem.param_rows(params)

    def __call__(self, points, params: Params | None = None) -> np.ndarray:
        """Field values ``[N, n_fields]`` at ``points[N, d]`` (a parametric solution: at the
        ranged parameters' values ``params``, or points ``[N, d + p]`` carrying them).

        Many parameter values at once: ``params`` a mapping ``{name: array of Q values}``
        (a single value is held for every query) or an array ``[Q, p]`` (columns in the
        order of ``problem.ranged``) gives ``[Q, N, n_fields]``, every point at every row
        of parameters, in one jitted evaluation (in chunks of points)."""
        pts, rows = self._inputs(points, params)
        with precision_scope(self.precision):
            fn = self._compiled.get("__apply__")
            if fn is None:
                fn = self._compiled["__apply__"] = jax.jit(self.apply)
            outs = [np.asarray(fn(self.params["net"], jnp.asarray(c)))
                    for c in _chunks(pts, 65536, rows)]
        out = np.concatenate(outs, axis=0)
        return out if rows is None else out.reshape(len(rows), len(pts), *out.shape[1:])

    def evaluate(self, points, exprs: Mapping[str, E.Expr | str] | Sequence | None = None,
                 params: Params | None = None) -> dict[str, np.ndarray]:
        """Values at ``points``: every field (default), or any expressions of the fields.

        ``exprs`` maps names to expressions (or strings in the PDE language), e.g.
        ``{"u_x": D(u, x), "residual": "u_t - alpha*laplacian(u)"}``. A parametric
        solution is evaluated at the ranged parameters' values ``params``
        (``{"alpha": 0.03}``), or at points ``[N, d + p]`` that carry them after the
        coordinates; derivatives are taken along the coordinates only.

        Many parameter values at once (``{"alpha": [0.02, 0.03, 0.05]}``, or an array
        ``[Q, p]`` in the order of ``problem.ranged``): each value ``[Q, N]``, every point
        at every query, from one jitted evaluation over the stacked inputs.
        """
        pts, rows = self._inputs(points, params)
        if exprs is None:
            vals = self(pts) if rows is None else self(pts, rows)
            return {f: vals[..., i] for i, f in enumerate(self.problem.field_names)}
        if not isinstance(exprs, Mapping):
            exprs = {str(e): e for e in exprs}
        parsed = {k: self._parse(v) for k, v in exprs.items()}
        key = tuple(sorted((k, str(v)) for k, v in parsed.items()))
        with precision_scope(self.precision):
            fn = self._compiled.get(key)
            if fn is None:
                fn = jax.jit(compile_terms(parsed, coords=self.problem.inputs,
                                           fields=self.problem.fields, apply=self.apply,
                                           spatial=self.problem.spatial))
                self._compiled[key] = fn
            parts = [fn(self.params, jnp.asarray(c)) for c in _chunks(pts, 16384, rows)]
        out = {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parsed}
        if rows is None:
            return out
        return {k: v.reshape(len(rows), len(pts), *v.shape[1:]) for k, v in out.items()}

    def _parse(self, e) -> E.Expr:
        ex = e if isinstance(e, E.Expr) else parse(str(e), namespace_of(self.problem))
        k = derivative_order(ex)
        if k > MAX_DERIVATIVE_ORDER:
            raise ValueError(f"{e}: a derivative of order {k}; outputs take derivatives up to "
                             f"order {MAX_DERIVATIVE_ORDER} (each order multiplies the "
                             "compiled program): lower the order")
        return ex

    # -- quantities of interest ------------------------------------------------------
    def quantities(self, params: Params | None = None,
                   which: Sequence[str] | Mapping[str, Quantity] | None = None, *,
                   key=None) -> dict[str, float | np.ndarray]:
        """The problem's quantities of interest (:mod:`pinn.qoi`: integrals, means,
        extremes over a region, point values), each one number: ``{name: value}``.

        ``which``: names of the problem's quantities (default: all of them), or quantities
        of one's own, ``{name: pinn.qoi.Mean(u, on="left"), ...}``. A parametric solution
        is evaluated at ``params`` as in :meth:`evaluate`: one value per ranged parameter
        gives floats; many at once (a mapping of arrays, or an array ``[Q, p]``) give an
        array ``[Q]`` per quantity, from one batched evaluation. ``key``: a random digital
        shift of the quadrature's Sobol points (None: the fixed rule, the same numbers
        every time)."""
        chosen = self._chosen_quantities(which)
        if self.problem.ranged and params is None:
            rng = ", ".join(f"{q.name} in {list(q.range)}" for q in self.problem.ranged)
            raise ValueError(f"this solution is parametric ({rng}): give params={{"
                             + ", ".join(f"{q.name!r}: ..." for q in self.problem.ranged)
                             + "}")
        out: dict[str, float | np.ndarray] = {}
        for name, q in chosen.items():
            rule = self._rule(name, q, key)
            vals = self.evaluate(rule.points, {name: q.expr}, params=params)[name]
            mask = None
            if rule.shape is not None:  # the domain follows the parameters: each its own
                theta = (self.problem.param_rows(params) if _batched(params)
                         else self.problem.param_columns(params, 1)[0])
                with precision_scope(self.precision):
                    mask = inside(rule, self.problem, theta)
            v = np.asarray(q.reduce(np.asarray(vals, np.float64), rule, np, mask=mask),
                           np.float64)
            out[name] = float(v) if v.ndim == 0 else v
        return out

    def quantity_function(self, quantity: str | Quantity, *, key=None) -> Callable:
        """A quantity of interest as a JAX function of the ranged parameters:
        ``f(theta[p]) -> scalar`` (``theta`` in the order of ``problem.ranged``), made of
        the network, so ``jax.grad(f)`` is its gradient along the parameters (what
        :func:`pinn.optimize` follows). ``quantity``: a name of the problem's quantities or
        a :class:`pinn.qoi.Quantity`. Trace and run it in the solution's precision
        (``pinn.train.spec.precision_scope(solution.precision)``)."""
        name, q = next(iter(self._chosen_quantities(
            [quantity] if isinstance(quantity, str) else {"quantity": quantity}).items()))
        rule = self._rule(name, q, key)
        p = self.problem
        fn = compile_terms({name: self._parse(q.expr)}, coords=p.inputs, fields=p.fields,
                           apply=self.apply, spatial=p.spatial)
        points, net = rule.points, self.params

        def f(theta):
            theta = jnp.asarray(theta)
            x = jnp.asarray(points, theta.dtype)
            cols = jnp.broadcast_to(theta.reshape(1, -1), (x.shape[0], theta.size))
            return q.reduce(fn(net, jnp.concatenate([x, cols], axis=1))[name], rule, jnp,
                            mask=inside(rule, p, theta, jnp))

        return f

    def _chosen_quantities(self, which) -> dict[str, Quantity]:
        own = dict(self.problem.quantities or {})
        if isinstance(which, Mapping):
            bad = [k for k, q in which.items() if not isinstance(q, Quantity)]
            if bad:
                raise TypeError(f"which[{bad[0]!r}]: expected a quantity (pinn.qoi.Integral, "
                                f"Mean, Max, Min or Value), got {type(which[bad[0]]).__name__}")
            for k, q in which.items():
                q.validate(self.problem, str(k))
            return {str(k): q for k, q in which.items()}
        if which is None:
            if not own:
                raise ValueError(f"{self.problem.name} declares no quantities of interest; add "
                                 "some (quantities: in the problem file, Problem(quantities="
                                 "...)) or pass which={name: pinn.qoi.Mean(u), ...}")
            return own
        if isinstance(which, str):
            which = [which]
        unknown = [k for k in which if k not in own]
        if unknown:
            have = ", ".join(own) or "none"
            raise ValueError(f"{unknown[0]!r} is not a quantity of {self.problem.name} "
                             f"(its quantities: {have})")
        return {k: own[k] for k in which}

    def _rule(self, name: str, q: Quantity, key):
        """The quadrature rule of ``q`` (cached for the fixed rule, ``key`` None)."""
        if key is not None:
            return q.quadrature(self.problem, key=key)
        cache_key = (name, id(q))
        if cache_key not in self._rules:
            self._rules[cache_key] = (q, q.quadrature(self.problem))
        return self._rules[cache_key][1]

    def learned_params(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.params.get("pde", {}).items()}

    # -- errors ------------------------------------------------------------------
    def reference(self, points, params: Mapping[str, float] | None = None
                  ) -> dict[str, np.ndarray] | None:
        """The truth at ``points`` (:func:`pinn.evaluate.truth`): exact or reference values
        per field, or None (``params``: as in :meth:`evaluate`)."""
        t = ev.truth(self.problem, self._as_points(points, params))
        return None if t is None else t.values

    def score(self, resolution=None, params: Mapping[str, float] | None = None) -> ev.Score:
        """This solution on the evaluation grid against the truth (:func:`pinn.evaluate.score`;
        ``resolution`` default: the run's). The same numbers as ``metrics``. A parametric
        solution is scored at ``params`` (default: the centre of each range)."""
        resolution = self.resolution if resolution is None else resolution
        key = (repr(resolution), None if params is None else tuple(sorted(params.items())))
        if key not in self._scores:
            self._scores[key] = ev.score(self.problem, self.evaluate, resolution=resolution,
                                         params=params)
        return self._scores[key]

    def errors_over_params(self, n: int = 9, resolution=None) -> list[dict]:
        """A parametric solution's errors at ``n`` equally spaced values of each ranged
        parameter (:func:`pinn.evaluate.score_over_params`, on the evaluation grid):
        ``[{"alpha": 0.01, "rel_l2": {"u": ...}, "max_abs_error": {"u": ...}}, ...]``;
        ``[]`` for a problem without ranged parameters. ``metrics["param_grid"]`` holds it
        (``n=9``) after training."""
        resolution = self.resolution if resolution is None else resolution
        return ev.score_over_params(self.problem, self.evaluate, n, resolution=resolution)

    def rescore(self, resolution=None) -> dict:
        """Score on another evaluation grid and make it the run's: ``metrics`` then hold
        its errors (what ``pinn plot --resolution`` does before saving). ``ValueError`` for a
        resolution below 2 or a grid of more than :data:`pinn.evaluate.MAX_GRID_POINTS`
        points (:func:`pinn.evaluate.check_resolution`)."""
        ev.check_resolution(resolution, len(self.problem.inputs))
        self.resolution = resolution
        self.metrics.update(self.score().metrics())
        return self.metrics

    def errors(self, points=None, params: Mapping[str, float] | None = None
               ) -> dict[str, dict[str, float]]:
        """Relative L2 and max abs errors per field against the exact solution or reference:
        on the evaluation grid (default, as :meth:`score`), or at ``points`` (``params``:
        as in :meth:`evaluate`)."""
        if points is None:
            s = self.score(params=params)
            return {"rel_l2": s.rel_l2, "max_abs_error": s.max_abs_error}
        pts = self._as_points(points, params)
        truth = ev.truth(self.problem, pts)
        if truth is None:
            return {"rel_l2": {}, "max_abs_error": {}}
        return ev.field_errors(self.evaluate(pts), truth.values, ev.up_to_constant(self.problem),
                               ev.point_times(self.problem, pts))

    # -- persistence ----------------------------------------------------------------
    def save(self, directory, *, report: bool = True, snapshots: int = 4) -> Path:
        """Write the solution into the run folder ``directory`` as data: ``solution.json``
        and ``params.npz`` (the layout: :mod:`pinn.serialize`); with ``report`` also the
        errors, plots, ``metrics.json``, ``history.jsonl`` and ``report.md``
        (:func:`pinn.report.write_run`), without it ``history.jsonl``. Returns the folder."""
        d = Path(directory)
        serialize.save_solution(d, self)
        if report:
            write_run(d, self.problem, self.score(), self.metrics, history=self.history,
                      method="PINN", snapshots=snapshots,
                      true_params=true_params(self.problem))
        elif self.history:
            write_jsonl(d / serialize.HISTORY_FILE, self.history)
        return d

    @classmethod
    def load(cls, directory) -> Solution:
        """Load a solution saved by :meth:`save`: data only (``solution.json``,
        ``params.npz``, ``history.jsonl``), nothing in the folder is run. Raises
        ``FileNotFoundError`` when there is none and ``ValueError`` naming the fix when it
        cannot be loaded (an old ``solution.pkl``, a tampered or newer file, a problem or
        model that was not saved as data)."""
        return cls(**serialize.read_solution(directory))

    # -- fields, figures, reports ---------------------------------------------------
    def to_xarray(self, resolution=None):
        """The solution on the evaluation grid (``resolution`` default: the run's) as an
        :class:`xarray.Dataset`: dimensions and coordinates named like the problem's
        coordinates, one variable per field and, where the problem has a truth,
        ``<field>_exact`` (or ``<field>_reference``) and ``<field>_error`` (solution minus
        truth); NaN outside the domain. Needs xarray (``pip install 'pinn[fields]'``);
        ``.to_netcdf(path)`` writes it (what ``pinn export-fields RUN -f netcdf`` does)."""
        return F.to_xarray(F.from_score(self.score(resolution), problem=self.problem.name,
                                        method="PINN"))

    def plot(self, field=None, *, resolution=None, snapshots: int = 4):
        """A :class:`matplotlib.figure.Figure` of one field (a name or a field; default: the
        first) on the evaluation grid: the solution and, where the problem has a truth, the
        truth and the pointwise error beside it (the run folder's ``field_<name>.png``);
        ``snapshots``: times shown of an evolution problem."""
        s = self.score(resolution)
        names = self.problem.field_names
        name = names[0] if field is None else getattr(field, "name", field)
        if name not in s.pred:
            raise ValueError(f"field {name!r}: this solution's fields are {', '.join(names)}")
        truth = None
        if s.truth is not None and name in s.truth.values:
            truth = s.grid.full(s.truth.values[name])
        return plots.field_plot(s.grid, name, s.grid.full(s.aligned()[name]), truth,
                                labels=("PINN", "truth" if s.truth is None else s.truth.kind),
                                snapshots=snapshots)

    def report(self, directory, *, resolution=None, snapshots: int = 4) -> Path:
        """Write the report of this solution into ``directory``, as a run folder has it
        (:func:`pinn.report.write_run`): plots, ``metrics.json``, ``solution_grid.npz``,
        ``report.md`` and the self-contained ``report.html``; returns ``report.md``'s path.
        ``resolution``: the evaluation grid (default: the run's)."""
        d = Path(directory)
        write_run(d, self.problem, self.score(resolution), self.metrics,
                  history=self.history, method="PINN", snapshots=snapshots,
                  true_params=true_params(self.problem))
        return d / "report.md"

    def __repr__(self) -> str:
        err = self.metrics.get("rel_l2")
        return f"Solution({self.problem.name!r}, steps={self.metrics.get('steps')}, rel_l2={err})"
