"""The Problem: a domain, equations, named conditions and parameters. Data only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from pinn import conditions as C
from pinn import qoi as Q
from pinn.data import ANY, NotData, Reader, Writer, register
from pinn.dsl import calculus
from pinn.dsl import expr as E
from pinn.dsl.builders import param_range
from pinn.dsl.parser import DataNames, Namespace, expr_text, text_expr
from pinn.dsl.tables import Table

_DEFAULT_SPATIAL = ("x", "y", "z")


class ProblemError(ValueError):
    """A problem is inconsistent (unknown names, missing parts, wrong sizes)."""


def _freeze(m: Mapping | None) -> Mapping:
    return MappingProxyType(dict(m or {}))


@register(ANY)  # inside another object's data (a FEM reference's problem)
@dataclass(frozen=True, eq=False)
class Problem:
    """A PDE problem.

    ``domain`` is a spatial shape, or a shape times a time interval
    (``Rectangle(...) * TimeInterval(0, 1)``).  ``coords`` defaults to
    ``x, y, z`` (as many as the space has dimensions) followed by ``t`` for
    evolution problems; ``fields`` defaults to the fields in order of
    first appearance.  ``exact`` maps fields to closed-form solutions (used
    for errors, plots and the manufactured-solution check); ``reference`` is a
    callable ``points[N, d] -> {field_name: values[N]}`` where no closed form
    exists. ``quantities`` names outputs computed from the fields (:mod:`pinn.qoi`:
    integrals, means, extremes over a region, point values), evaluated by
    :meth:`pinn.Solution.quantities` and optimised by :func:`pinn.optimize`.
    """

    domain: object
    equations: Mapping[str, E.Expr]
    conditions: Mapping[str, C.Condition] = field(default_factory=dict)
    coords: tuple[E.Coord, ...] | None = None
    fields: tuple[E.Field, ...] | None = None
    exact: Mapping[E.Field, E.Expr] | None = None
    reference: Callable | None = None
    name: str = "problem"
    quantities: Mapping[str, Q.Quantity] | None = None

    def __post_init__(self):
        eqs = {str(k): E.as_expr(v) for k, v in dict(self.equations).items()}
        if not eqs:
            raise ProblemError("a problem needs at least one equation")
        conds = dict(self.conditions or {})
        for k, c in conds.items():
            if not isinstance(c, C.Condition):
                raise ProblemError(
                    f"conditions.{k}: expected a condition (pinn.Dirichlet, pinn.Neumann, "
                    f"pinn.Robin, pinn.Periodic, pinn.Initial, pinn.Constraint, pinn.Data or "
                    f"a pinn.conditions.Condition subclass), got {type(c).__name__}"
                )
        clash = set(eqs) & set(conds)
        if clash:
            raise ProblemError(f"names used for both an equation and a condition: {sorted(clash)}")
        object.__setattr__(self, "equations", _freeze(eqs))
        object.__setattr__(self, "conditions", _freeze(conds))
        object.__setattr__(self, "exact", _freeze(
            {f: E.as_expr(v) for f, v in dict(self.exact or {}).items()}))

        space, time = self.space, self.time
        if self.coords is None:
            dim = space.dim
            if dim > 3:
                raise ProblemError(f"a {dim}-D domain needs explicit coords=")
            names = list(_DEFAULT_SPATIAL[:dim]) + (["t"] if time is not None else [])
            object.__setattr__(self, "coords", tuple(E.Coord(n) for n in names))
        else:
            cs = tuple(self.coords)
            want = space.dim + (1 if time is not None else 0)
            if len(cs) != want:
                raise ProblemError(
                    f"coords {', '.join(c.name for c in cs)} ({len(cs)}) do not match the "
                    f"domain's {want} dimensions"
                )
            object.__setattr__(self, "coords", cs)

        found: list[E.Field] = []
        for ex in self._all_exprs():
            for f in calculus.fields_of(ex):
                if f not in found:
                    found.append(f)
        if self.fields is None:
            object.__setattr__(self, "fields", tuple(found))
        else:
            fs = tuple(self.fields)
            bad = [f for f in fs if not isinstance(f, E.Field)]
            if bad:
                raise ProblemError(f"fields: {bad[0]} is not a field; declare fields with "
                                   "pinn.field('u') or pinn.fields('u v')")
            missing = [f.name for f in found if f not in fs]
            if missing:
                raise ProblemError(f"undeclared fields {missing}; declared: {[f.name for f in fs]}")
            object.__setattr__(self, "fields", fs)
        if not self.fields:
            raise ProblemError("the equations use no field: nothing to solve for")
        self._resolve_field_coords(found)

        known = set(self.coords)
        for name, ex in self._named_exprs():
            bad = [c.name for c in calculus.coords_of(ex) if c not in known]
            if bad:
                raise ProblemError(
                    f"{name}: unknown coordinate(s) {bad}; this problem's coordinates are "
                    f"{[c.name for c in self.coords]}"
                )
        self._check_params()
        for k, c in self.conditions.items():
            try:
                c.validate(self, k)
            except ProblemError:
                raise
            except ValueError as err:
                raise ProblemError(str(err)) from None
        self._check_quantities()

    # -- pickling (MappingProxyType does not pickle) ----------------------
    def __getstate__(self):
        return {k: dict(v) if isinstance(v, MappingProxyType) else v
                for k, v in self.__dict__.items()}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, MappingProxyType(v) if isinstance(v, dict) else v)

    # -- structure -------------------------------------------------------
    @property
    def space(self):
        return getattr(self.domain, "space", self.domain)

    @property
    def time(self):
        return getattr(self.domain, "time", None)

    @property
    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``, float64: the bounding box over all coordinates (space, then time)."""
        lo, hi = self.domain.bounds
        return np.asarray(lo, np.float64).reshape(-1), np.asarray(hi, np.float64).reshape(-1)

    @property
    def is_evolution(self) -> bool:
        return self.time is not None

    @property
    def spatial(self) -> tuple[E.Coord, ...]:
        return self.coords[: self.space.dim]

    @property
    def time_coord(self) -> E.Coord | None:
        return self.coords[-1] if self.is_evolution else None

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def field_coords(self) -> dict[str, tuple[E.Coord, ...]]:
        """``{field name: the coordinates it depends on}``, in the problem's order: all of
        them, or the subset its declaration names (``field("a", coords="x y")``,
        ``fields: {a: [x, y]}``)."""
        return {f.name: self.coords if f.coords is None else
                tuple(c for c in self.coords if c.name in f.coords) for f in self.fields}

    @property
    def field_inputs(self) -> tuple[tuple[int, ...], ...]:
        """Per field (in order), the network input columns it is a function of: its
        coordinates' columns, then every ranged parameter's (:attr:`inputs`)."""
        index = {c: i for i, c in enumerate(self.coords)}
        extra = tuple(range(len(self.coords), len(self.inputs)))
        return tuple(tuple(index[c] for c in cs) + extra for cs in self.field_coords.values())

    @property
    def params(self) -> tuple[E.Param, ...]:
        seen: dict[str, E.Param] = {}
        for _, ex in self._named_exprs():
            for p in calculus.params_of(ex):
                seen.setdefault(p.name, p)
        return tuple(seen.values())

    @property
    def learnable(self) -> tuple[E.Param, ...]:
        return tuple(p for p in self.params if p.learnable)

    @property
    def ranged(self) -> tuple[E.Param, ...]:
        """The parameters given a range (``param("alpha", range=(lo, hi))``): inputs of the
        network after the coordinates, sampled with the points (a parametric problem)."""
        return tuple(p for p in self.params if p.range is not None)

    @property
    def inputs(self) -> tuple[E.Coord, ...]:
        """The network's input columns: the coordinates, then one column per ranged
        parameter (named like it). Derivatives are taken along the coordinates only."""
        return self.coords + tuple(E.Coord(p.name) for p in self.ranged)

    @property
    def input_box(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` over :attr:`inputs`: :attr:`box`, then each ranged parameter's range
        (the network's input scaling, the hard-wall distance)."""
        lo, hi = self.box
        r = self.ranged
        return (np.concatenate([lo, [p.range[0] for p in r]]),
                np.concatenate([hi, [p.range[1] for p in r]]))

    @property
    def time_index(self) -> int | None:
        """The column of time in the points (and the network's inputs), or None."""
        return len(self.coords) - 1 if self.is_evolution else None

    def param_columns(self, params: Mapping[str, float] | None, n: int, *,
                      where: str = "params") -> np.ndarray:
        """``[n, len(ranged)]`` float64: the ranged parameters' values ``params`` (a value
        per name, each finite and within its range up to 1e-9 of its width) repeated for
        ``n`` points. ValueError naming the fix for a missing, unknown or out-of-range name
        (many values per name: :meth:`param_rows`)."""
        params = dict(params or {})
        many = {k: np.shape(v) for k, v in params.items() if np.ndim(v) > 0}
        if many:
            k, shape = next(iter(many.items()))
            raise ValueError(f"{where}: {k} has values of shape {shape}; give one value per "
                             "name here (many queries at once: Solution(points, params=...) "
                             "and Solution.evaluate take arrays)")
        return np.tile(self._param_rows(params, where, one=True), (n, 1))

    def param_rows(self, params, *, where: str = "params") -> np.ndarray:
        """``[Q, len(ranged)]`` float64: values of the ranged parameters for ``Q`` queries,
        one row each, columns in :attr:`ranged`'s order. ``params``: a mapping ``{name:
        value or 1-D array of Q values}`` (a single value is held for every query) or an
        array ``[Q, len(ranged)]``. Every value finite and within its range up to 1e-9 of
        its width. ``ValueError`` (``TypeError`` for what is not numbers) saying what was
        given and what is expected."""
        return self._param_rows(params, where, one=False)

    def _param_rows(self, params, where: str, one: bool) -> np.ndarray:
        names = [p.name for p in self.ranged]
        columns = f"the columns {', '.join(names)}" if names else "no columns"
        if isinstance(params, Mapping):
            unknown = sorted(set(params) - set(names))
            if unknown:
                raise ValueError(f"{where}: {unknown} are not ranged parameters of this "
                                 f"problem (ranged: {names or 'none'})")
            missing = [k for k in names if k not in params]
            if missing:
                rng = ", ".join(f"{p.name} in {list(p.range)}" for p in self.ranged)
                raise ValueError(f"{where}: give a value for {missing} (this problem is "
                                 f"parametric: {rng})")
            cols = {k: _numbers(params[k], f"{where}[{k!r}]") for k in names}
            deep = {k: v.shape for k, v in cols.items() if v.ndim > 1}
            if deep:
                k, shape = next(iter(deep.items()))
                raise ValueError(f"{where}: {k} has values of shape {shape}; give one value "
                                 "or a 1-D array of Q values (one per query) per name")
            lengths = {k: len(v) for k, v in cols.items() if v.ndim == 1}
            if len(set(lengths.values())) > 1:
                raise ValueError(f"{where}: the names have different numbers of values ("
                                 + ", ".join(f"{k}: {n}" for k, n in lengths.items())
                                 + "); give Q values (one per query) for every name, or "
                                 "one value, held for every query")
            q = next(iter(lengths.values()), 1)
            rows = (np.stack([np.broadcast_to(cols[k], (q,)) for k in names], axis=1)
                    if names else np.zeros((q, 0)))
        else:
            arr = _numbers(params, where)
            if arr.ndim != 2 or arr.shape[1] != len(names):
                hint = ("; for one query pass a mapping {name: value}" if arr.ndim < 2 else "")
                if arr.ndim == 1 and len(names) == 1:
                    hint = (f"; for {len(arr)} values of {names[0]} pass "
                            f"{{{names[0]!r}: values}} or values[:, None]")
                raise ValueError(f"{where}: an array of parameter values must be [Q, "
                                 f"{len(names)}], one row per query with {columns} (the "
                                 f"ranged parameters' order); got shape {arr.shape}{hint}")
            rows = arr
        if len(rows) == 0:
            raise ValueError(f"{where}: no parameter values (0 queries); give at least one "
                             f"row of {columns}")
        for j, p in enumerate(self.ranged):
            v = rows[:, j]
            lo, hi = p.range
            tol = 1e-9 * (hi - lo)
            bad = ~np.isfinite(v) | (v < lo - tol) | (v > hi + tol)
            if bad.any():
                i = int(np.argmax(bad))
                more = (f"; {int(bad.sum())} of the {len(v)} values of {p.name} are out of "
                        "range or not finite" if bad.sum() > 1 else "")
                at = "" if one else f" (query {i}, counting from 0{more})"
                what = (f"is not a finite number; give values within [{lo}, {hi}]"
                        if not np.isfinite(v[i]) else
                        f"is outside the range it was trained on, [{lo}, {hi}]")
                raise ValueError(f"{where}: {p.name}={float(v[i])}{at} {what}")
        return rows

    def expand(self, e: E.Expr) -> E.Expr:
        """Resolve vector operators over this problem's spatial coords and push derivatives."""
        return calculus.expand(e, self.spatial, self.coords)

    # -- helpers ---------------------------------------------------------
    def _named_exprs(self):
        for k, v in self.equations.items():
            yield f"equations.{k}", v
        for k, c in self.conditions.items():
            for i, ex in enumerate(c.expressions()):
                yield f"conditions.{k}[{i}]", ex
        for f, v in self.exact.items():
            yield f"exact.{f.name}", v
        for p in self.space.params:  # sizes and positions of the domain (parametric geometry)
            yield "domain", p

    def _all_exprs(self):
        for _, ex in self._named_exprs():
            yield ex
        for c in self.conditions.values():
            yield from c.fields_used()

    def _resolve_field_coords(self, found) -> None:
        """Each field's coordinates from its declarations (in ``fields``, then in the
        expressions): checked against the problem's coordinates, stored on the fields of
        :attr:`fields` in the problem's order (``None``: all of them)."""
        names = [c.name for c in self.coords]
        given: dict[str, tuple[str, ...]] = {}
        for f in (*self.fields, *found):
            if f.coords is None:
                continue
            if f.name in given and set(given[f.name]) != set(f.coords):
                raise ProblemError(
                    f"fields.{f.name}: declared on [{', '.join(given[f.name])}] and on "
                    f"[{', '.join(f.coords)}]; declare its coordinates once")
            given.setdefault(f.name, f.coords)
        for fname, cs in given.items():
            bad = [c for c in cs if c not in names]
            if bad:
                raise ProblemError(
                    f"fields.{fname}: unknown coordinate '{bad[0]}'; this problem's "
                    f"coordinates are [{', '.join(names)}]")
        object.__setattr__(self, "fields", tuple(
            E.Field(f.name, None if f.name not in given or set(given[f.name]) == set(names)
                    else tuple(n for n in names if n in given[f.name]))
            for f in self.fields))
        for f in self.fields:
            if f.coords is not None and f in self.exact:
                bad = [c.name for c in calculus.coords_of(self.exact[f])
                       if c.name not in f.coords]
                if bad:
                    raise ProblemError(
                        f"exact.{f.name}: uses {', '.join(bad)}, but field {f.name} is "
                        f"declared on [{', '.join(f.coords)}] only")

    def _check_quantities(self) -> None:
        qs = dict(self.quantities or {})
        for k, q in qs.items():
            if not isinstance(k, str) or not k.isidentifier():
                raise ProblemError(f"quantities: {k!r} is not a name (letters, digits and _, "
                                   "not starting with a digit)")
            if not isinstance(q, Q.Quantity):
                raise ProblemError(
                    f"quantities.{k}: expected a quantity (pinn.qoi.Integral, Mean, Max, Min "
                    f"or Value), got {type(q).__name__}")
            clash = {c.name for c in self.coords} | set(self.field_names)
            if k in clash:
                raise ProblemError(f"quantities.{k}: '{k}' is a coordinate or field of the "
                                   "problem; name the quantity otherwise")
            try:
                q.validate(self, k)
            except (TypeError, ValueError) as err:
                raise ProblemError(str(err)) from None
        object.__setattr__(self, "quantities", _freeze(qs))

    def _check_params(self) -> None:
        by_name: dict[str, E.Param] = {}
        for where, ex in self._named_exprs():
            for p in calculus.params_of(ex):
                if p.name in by_name and by_name[p.name] != p:
                    q = by_name[p.name]
                    raise ProblemError(
                        f"{where}: parameter {p.name!r} is defined twice with different "
                        f"values ({q.range or q.value} and {p.range or p.value})"
                    )
                by_name[p.name] = p
                if p.value is None and p.range is None:
                    raise ProblemError(f"{where}: parameter {p.name!r} has no value")
        names = {c.name for c in self.coords} | {f.name for f in self.fields}
        clash = names & set(by_name)
        if clash:
            raise ProblemError(f"names used both as parameters and coords/fields: {sorted(clash)}")

    # -- as data (pinn.data: {"$type": "Problem", ...}) ---------------------------
    def write_data(self, writer: Writer, where: str) -> dict:
        return _write_problem(self, writer, where)

    @staticmethod
    def read_data(arguments, reader: Reader, where: str) -> Problem:
        return _read_problem(arguments, reader, where)

    def __repr__(self) -> str:
        eqs = "; ".join(f"{k}: {v} = 0" for k, v in self.equations.items())
        return (f"Problem({self.name!r}, coords={[c.name for c in self.coords]}, "
                f"fields={list(self.field_names)}, {eqs}, conditions={list(self.conditions)})")



# ---------------------------------------------------------------------------
# the problem as data (the run format, pinn.serialize; a FEM reference's problem)
#
#     {"name": "heat2d", "coords": ["x", "y", "t"], "fields": ["u"],
#      "params": [{"name": "alpha", "value": 0.05, "learnable": false}],
#      "domain": {"$type": "SpaceTime", ...}, "equations": {"heat": "D(u, t) - ..."},
#      "conditions": {"walls": {"$type": "Dirichlet", ...}}, "exact": {"u": "..."},
#      "reference": null}
#
# plus ``field_coords`` ({"a": ["x", "y"]}) for fields on a subset of the coordinates and
# ``coefficients`` (tables given as data, read before the expressions that name them).


def problem_tables(problem) -> dict:
    """The coefficients given as data (:class:`~pinn.dsl.expr.Tabulated` values) that the
    problem's expressions use, by name; two different tables of one name are not data."""
    found: dict = {}

    def visit(v):
        if isinstance(v, E.Expr):
            for node in calculus.walk(v):
                if isinstance(node, E.Tabulated) and not node.deriv:
                    old = found.setdefault(node.name, node)
                    if old != node:
                        raise NotData(f"two different tables are both named {node.name!r}")
        elif isinstance(v, Mapping):
            for x in v.values():
                visit(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)

    visit(list(problem.equations.values()))
    visit(list(problem.exact.values()))
    visit([q.expressions() for q in (problem.quantities or {}).values()])
    for c in problem.conditions.values():
        try:
            visit(c.to_data())
        except NotImplementedError:
            pass
    return found


def problem_to_data(problem, *, prefix: str = "problem") -> tuple[dict, dict[str, np.ndarray]]:
    """``problem`` as data, and its arrays keyed ``<prefix>/<where>`` (for ``params.npz``).

    Raises :class:`~pinn.data.NotData` naming the part that is not data (a user's own
    condition class, a reference that is a Python function)."""
    w = Writer({})
    return _write_problem(problem, w, prefix), w.arrays


def _written_params(problem) -> tuple[E.Param, ...]:
    """The problem's parameters, then those only its quantities use (fixed values: a
    quantity's ranged or learnable parameters are the problem's own)."""
    out = {p.name: p for p in problem.params}
    for q in (problem.quantities or {}).values():
        for ex in q.expressions():
            for p in calculus.params_of(ex):
                out.setdefault(p.name, p)
    return tuple(out.values())


def _write_problem(problem, w: Writer, prefix: str) -> dict:
    tabulated = problem_tables(problem)
    params = _written_params(problem)
    try:
        ns = Namespace({**{n.name: n for n in (*problem.coords, *problem.fields,
                                                 *params)}, **tabulated})
    except (TypeError, ValueError) as exc:
        raise NotData(f"{prefix}: the problem's names do not make a namespace ({exc})") from None
    w = Writer(w.arrays, DataNames(ns, problem))

    def text(e, where):
        return expr_text(e, w.context, f"{prefix}/{where}")

    data = {
        "name": problem.name,
        "coords": [c.name for c in problem.coords],
        "fields": list(problem.field_names),
        "params": [{"name": p.name, "range": [float(p.range[0]), float(p.range[1])]}
                   if p.range is not None else
                   {"name": p.name, "value": w.value(p.value, f"{prefix}/params/{p.name}",
                                                     "domain"),
                    "learnable": bool(p.learnable)} for p in params],
        "domain": w.object(problem.domain, f"{prefix}/domain", "domain"),
        "equations": {k: text(v, f"equations/{k}") for k, v in problem.equations.items()},
        "conditions": {k: w.object(c, f"{prefix}/conditions/{k}", "condition")
                       for k, c in problem.conditions.items()},
        "exact": {f.name: text(v, f"exact/{f.name}") for f, v in problem.exact.items()},
        "reference": (None if problem.reference is None else
                      w.object(problem.reference, f"{prefix}/reference", "reference")),
    }
    subset = {f.name: list(f.coords) for f in problem.fields if f.coords is not None}
    if subset:  # fields on a subset of the coordinates
        data["field_coords"] = subset
    if problem.quantities:  # outputs computed from the fields (pinn.qoi)
        data["quantities"] = {k: w.object(q, f"{prefix}/quantities/{k}", "quantity")
                              for k, q in problem.quantities.items()}
    if tabulated:  # coefficients given as data: their tables, read back before the rest
        data["coefficients"] = [
            {"name": name, "args": [text(a, f"coefficients/{name}/args") for a in node.args],
             **w.value(node.table.to_data(), f"{prefix}/coefficients/{name}", "domain")}
            for name, node in tabulated.items()]
    return data


def _names(d: dict, key: str, where: str) -> list[str]:
    names = d.get(key)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{where}/{key}: expected a list of names, got {names!r}")
    return names


def _param(p, where: str) -> E.Param:
    if isinstance(p, dict) and "range" in p:  # a ranged parameter (a parametric problem)
        r = p["range"]
        if not (isinstance(p.get("name"), str) and set(p) == {"name", "range"}
                and isinstance(r, list) and len(r) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in r)):
            raise ValueError(f"{where}: expected {{\"name\": ..., \"range\": [lo, hi]}}, "
                             f"got {p!r}")
        return E.Param(p["name"], None, False, param_range(p["name"], r))
    if not (isinstance(p, dict) and isinstance(p.get("name"), str)
            and isinstance(p.get("value"), (int, float)) and not isinstance(p["value"], bool)
            and isinstance(p.get("learnable", False), bool)):
        raise ValueError(f"{where}: expected {{\"name\": ..., \"value\": number, "
                         f"\"learnable\": bool}}, got {p!r}")
    return E.Param(p["name"], p["value"], p.get("learnable", False))


def _coefficient(r: Reader, c, where: str) -> tuple[str, E.Expr]:
    """``(name, Tabulated node)`` of one saved coefficient given as data."""
    if not (isinstance(c, Mapping) and isinstance(c.get("name"), str)
            and isinstance(c.get("args"), list)):
        raise ValueError(f"{where}: expected {{\"name\": ..., \"args\": [...], \"axes\": "
                         f"[...], \"values\": ...}}, got {c!r}")
    table = Table.from_data({k: r.value(v, f"{where}/{k}", "domain") for k, v in c.items()
                             if k in ("axes", "values", "method", "source")})
    args = tuple(text_expr(a, r.context, f"{where}/args") for a in c["args"])
    return c["name"], E.Tabulated(c["name"], table, args)


def problem_from_data(d: Mapping, arrays: Mapping[str, np.ndarray] | None = None, *,
                      prefix: str = "problem") -> Problem:
    """The :class:`Problem` that :func:`problem_to_data` wrote (``arrays``: the arrays it
    returned). Raises ``ValueError`` naming the bad entry."""
    return _read_problem(d, Reader(arrays or {}), prefix)


def _read_problem(d, reader: Reader, prefix: str) -> Problem:
    if not isinstance(d, Mapping):
        raise ValueError(f"{prefix}: expected the problem as an object, got {d!r}")
    d = dict(d)
    coords = [E.Coord(n) for n in _names(d, "coords", prefix)]
    subset = d.get("field_coords") or {}
    if not isinstance(subset, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in subset.values()):
        raise ValueError(f"{prefix}/field_coords: expected an object of coordinate name "
                         f"lists, got {subset!r}")
    fields = [E.Field(n, tuple(subset[n]) if n in subset else None)
              for n in _names(d, "fields", prefix)]
    params = [_param(p, f"{prefix}/params/{i}") for i, p in enumerate(d.get("params") or [])]
    table = {n.name: n for n in (*coords, *fields, *params)}
    r = _reader_in(reader, table, prefix)
    for i, c in enumerate(d.get("coefficients") or ()):  # tables first: expressions name them
        table.update([_coefficient(r, c, f"{prefix}/coefficients/{i}")])
    if d.get("coefficients"):
        r = _reader_in(reader, table, f"{prefix}/coefficients")

    def exprs(key: str) -> dict[str, E.Expr]:
        entries = d.get(key) or {}
        if not isinstance(entries, dict):
            raise ValueError(f"{prefix}/{key}: expected an object, got {entries!r}")
        return {k: text_expr(v, r.context, f"{prefix}/{key}/{k}") for k, v in entries.items()}

    exact = exprs("exact")
    unknown = [k for k in exact if E.Field(k) not in fields]
    if unknown:
        raise ValueError(f"{prefix}/exact: {unknown} are not fields of the problem "
                         f"({', '.join(f.name for f in fields)})")
    conditions = d.get("conditions") or {}
    if not isinstance(conditions, dict):
        raise ValueError(f"{prefix}/conditions: expected an object, got {conditions!r}")
    reference = d.get("reference")
    quantities = d.get("quantities") or {}
    if not isinstance(quantities, dict):
        raise ValueError(f"{prefix}/quantities: expected an object, got {quantities!r}")
    return Problem(
        domain=r.object(d.get("domain"), f"{prefix}/domain", "domain"),
        equations=exprs("equations"),
        conditions={k: r.object(c, f"{prefix}/conditions/{k}", "condition")
                    for k, c in conditions.items()},
        coords=tuple(coords), fields=tuple(fields),
        exact={E.Field(k): v for k, v in exact.items()} or None,
        reference=None if reference is None else r.object(reference, f"{prefix}/reference",
                                                          "reference"),
        name=str(d.get("name", "problem")),
        quantities={k: r.object(q, f"{prefix}/quantities/{k}", "quantity")
                    for k, q in quantities.items()} or None,
    )


def _reader_in(reader: Reader, table: Mapping, where: str) -> Reader:
    """``reader`` reading expressions in the names of ``table``."""
    try:
        ns = Namespace(table)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    return Reader(reader.arrays, DataNames(ns), reader.source)


def _numbers(value, where: str) -> np.ndarray:
    """``value`` as a float64 array; ``TypeError`` for what is not numbers."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{where}: expected numbers, got the text {value!r}")
    try:
        arr = np.asarray(value)
    except ValueError as exc:  # ragged nested lists
        raise TypeError(f"{where}: expected numbers (a value, a 1-D array or a 2-D array), "
                        f"got {type(value).__name__} ({exc})") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{where}: expected numbers, got {type(value).__name__} of dtype "
                        f"{arr.dtype}")
    return arr.astype(np.float64)
