"""The run format: a saved solution is data (JSON and npz), never code.

A run folder written by :meth:`pinn.Solution.save` holds, besides the plots and
``report.md``:

``solution.json``
    ``format``: ``"pinn.solution/<version>"`` (now ``pinn.solution/2``; in format 2
    hard initial values scale the network by ``(t - t0)/(t1 - t0)``, in format 1 by
    ``t - t0``: both are read);
    ``reloadable``: whether :meth:`pinn.Solution.load` can rebuild the solution, and
    ``not_data``: why not (a user's own class, a Python callable), else null;
    ``problem``: the problem as data (below), or null when it is not data;
    ``model``: the network spec (``{"$type": "MLP", "width": 64, ...}``), or null;
    ``seed``, ``precision`` (32 or 64), ``resolution`` (the evaluation grid, null:
    the default); ``metrics`` (what the run measured, as in ``metrics.json``);
    ``training``: a human-readable summary of the stages, points and weighting (read
    by people, not by ``load``); ``summary``: the problem and model as text;
    ``versions``: Python and the packages the result depends on.
``params.npz``
    Every array, under a path-like key, read with ``allow_pickle=False``: the network
    parameters ``net/<path in the nnx state>`` (``net/hidden/0/kernel``), the learned
    PDE parameters ``pde/<name>``, and the arrays of the problem
    ``problem/<where>`` (``problem/conditions/observed/points``, a file reference's
    points and values).
``history.jsonl``
    The training history, one JSON object per row (written by
    :func:`pinn.report.write_run` and the training loop; read back by ``load``).

The problem as data (:func:`problem_to_data`)::

    {"name": "heat2d", "coords": ["x", "y", "t"], "fields": ["u"],
     "params": [{"name": "alpha", "value": 0.05, "learnable": false}],
     "domain": {"$type": "SpaceTime", "space": {"$type": "Rectangle", "lo": [0.0, 0.0],
                "hi": [1.0, 1.0]}, "time": {"$type": "TimeInterval", "t0": 0.0, "t1": 1.0}},
     "equations": {"heat": "D(u, t) - alpha*laplacian(u)"},
     "conditions": {"walls": {"$type": "Dirichlet", "values": {"u": {"$expr": "0"}},
                              "on": "boundary", "weight": 1.0, "hard": false}},
     "exact": {"u": "..."}, "reference": null}

(a ranged parameter of a parametric problem is ``{"name": "alpha", "range": [0.01, 0.1]}``)

A problem with fields declared on a subset of the coordinates adds the optional key
``field_coords``: ``{"a": ["x", "y"]}`` (the other fields depend on every coordinate).

A problem with coefficients given as data (``pinn.coefficient``, ``coefficients: {k: {file:
...}}``, initial values from a file) adds the optional key ``coefficients``: ``[{"name": "k",
"args": ["x", "y"], "axes": [{"$array": ...}, ...], "values": {"$array": ...}, "method":
"linear", "source": "k.dat"}]``, read before the expressions, which name them.

Values are JSON numbers, strings, booleans, null and lists, and three tagged
objects: ``{"$expr": TEXT}`` (an expression in the PDE language, read by the safe
parser :func:`pinn.dsl.parse` with the problem's names), ``{"$array": KEY}`` (an
array of ``params.npz``) and ``{"$type": NAME, ...arguments}`` (an object: NAME is
looked up in a fixed registry of ``pinn`` classes, :func:`registry`, and built
from its arguments with ``from_data`` or the constructor; nothing named by a file
is ever imported or called). Each class gives its arguments with ``to_data()``.

Version rule: the version goes up when a reader of the old version would misread a
file of the new one (a key changes meaning, a required key is added); new optional
keys keep it. :meth:`~pinn.Solution.load` reads every version up to its own and
refuses newer ones, naming the fix (upgrade pinn). Folders of older pinn versions
hold ``solution.pkl``, which is never opened (a pickle can run code).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pinn.dsl import expr as E

__all__ = ["FORMAT", "VERSION", "SOLUTION_FILE", "PARAMS_FILE", "HISTORY_FILE",
           "LEGACY_FILE", "NotData", "registry", "init_fields", "problem_to_data",
           "problem_from_data", "to_data", "from_data", "save_solution", "read_solution",
           "load_params", "restore_params", "flat_params"]

FORMAT = "pinn.solution"
VERSION = 2
#: the format of a solution trained in time windows (pinn.marching): 2 plus ``windows``
WINDOWS_VERSION = 3
SOLUTION_FILE = "solution.json"
PARAMS_FILE = "params.npz"
HISTORY_FILE = "history.jsonl"
LEGACY_FILE = "solution.pkl"

_KINDS = ("domain", "condition", "reference", "model")
_NUMERIC = "biufc"  # numpy dtype kinds an array of params.npz may have


class NotData(ValueError):
    """An object that cannot be written as data (a user's own class, a Python callable)."""


def init_fields(obj) -> dict:
    """The ``__init__`` fields of a dataclass ``obj``: its constructor's arguments."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


@functools.cache
def registry() -> dict[str, dict[str, type]]:
    """The classes a run folder may name, by kind (``domain``, ``condition``,
    ``reference``, ``model``) and name. Fixed: a file cannot add to it."""
    import pinn.conditions as C
    import pinn.geometry as G
    import pinn.nets as N
    import pinn.reference as R

    kinds = {
        "domain": (G.Interval, G.Rectangle, G.Box, G.Disk, G.Ball, G.Ellipse, G.Polygon,
                   G.Triangle, G.Union, G.Difference, G.Intersection, G.Renamed,
                   G.TimeInterval, G.SpaceTime),
        "condition": (C.Dirichlet, C.Neumann, C.Robin, C.Periodic, C.Initial, C.Constraint,
                      C.Data),
        "reference": (R.Burgers, R.ClosedForm, R.FileReference, R.FEMReference,
                      R.SpectralReference),
        "model": (N.MLP, N.ModifiedMLP, N.PirateNet, N.Fourier, N.RWF, N.Periodic),
    }
    return {k: {cls.__name__: cls for cls in classes} for k, classes in kinds.items()}


@functools.cache
def _writers() -> dict[str, dict[type, str]]:
    """Class -> the registry name its data is read back under (``data_name`` if set)."""
    from pinn.reference.spectral import PeriodicSolution

    out = {k: {cls: name for name, cls in table.items()} for k, table in registry().items()}
    out["reference"][PeriodicSolution] = PeriodicSolution.data_name
    return out


def _allowed(kind: str) -> str:
    return ", ".join(registry()[kind])


# ---------------------------------------------------------------------------
# writing


@dataclasses.dataclass
class _Writer:
    arrays: dict[str, np.ndarray]
    problem: Any = None
    namespace: Any = None

    def expr(self, e: E.Expr, where: str) -> str:
        """``str(e)``, checked to read back as ``e`` (or as the same expanded expression)."""
        from pinn.dsl import parse

        text = str(e)
        try:
            back = parse(text, self.namespace)
        except ValueError as exc:
            raise NotData(f"{where}: the expression {text!r} does not read back ({exc})") from None
        if back != e and (self.problem is None
                          or self.problem.expand(back) != self.problem.expand(e)):
            raise NotData(f"{where}: the expression {text!r} does not read back as written")
        return text

    def value(self, v, where: str, kind: str):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.generic) and v.dtype.kind in "biuf":
            v = v.item()
        if isinstance(v, (int, float)):
            if isinstance(v, float) and not math.isfinite(v):
                raise NotData(f"{where}: the number {v!r} is not finite")
            return v
        if isinstance(v, E.Expr):
            return {"$expr": self.expr(v, where)}
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in _NUMERIC:
                raise NotData(f"{where}: an array of {v.dtype} is not numeric data")
            self.arrays[where] = v
            return {"$array": where}
        from pinn.problem import Problem

        if type(v) is Problem:
            data, arrays = problem_to_data(v, prefix=where)
            self.arrays.update(arrays)
            return {"$type": "Problem", **data}
        if isinstance(v, Mapping):
            out = {}
            for k, x in v.items():
                if not isinstance(k, str) or k.startswith("$"):
                    raise NotData(f"{where}: the key {k!r} is not a name")
                out[k] = self.value(x, f"{where}/{k}", kind)
            return out
        if isinstance(v, (list, tuple)):
            return [self.value(x, f"{where}/{i}", kind) for i, x in enumerate(v)]
        return self.object(v, where, kind)

    def object(self, obj, where: str, kind: str) -> dict:
        name = _writers()[kind].get(type(obj))
        if name is None or not hasattr(obj, "to_data"):
            what = (f"the Python callable {getattr(obj, '__name__', obj)!r}" if callable(obj)
                    and not hasattr(obj, "to_data") else
                    f"{type(obj).__module__}.{type(obj).__qualname__}")
            raise NotData(f"{where}: {what} is not one of the {kind} classes of pinn that save "
                          f"as data ({_allowed(kind)})")
        try:
            arguments = obj.to_data()
        except NotImplementedError:
            raise NotData(f"{where}: {type(obj).__name__} does not define to_data()") from None
        return {"$type": name, **{k: self.value(x, f"{where}/{k}", kind)
                                  for k, x in arguments.items()}}


def to_data(obj, kind: str, *, where: str = "") -> tuple[dict, dict[str, np.ndarray]]:
    """``obj`` (a domain, condition, reference or model spec: ``kind``) as data, and the
    arrays it refers to. Raises :class:`NotData` for a class outside :func:`registry`."""
    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(_KINDS)}")
    w = _Writer({})
    return w.object(obj, where or kind, kind), w.arrays


def problem_to_data(problem, *, prefix: str = "problem") -> tuple[dict, dict[str, np.ndarray]]:
    """``problem`` as data, and its arrays keyed ``<prefix>/<where>`` (for ``params.npz``).

    Raises :class:`NotData` naming the part that is not data (a user's own condition
    class, a reference that is a Python function)."""
    from pinn.dsl import Namespace

    tabulated = _tabulated(problem)
    try:
        ns = Namespace({**{n.name: n for n in (*problem.coords, *problem.fields,
                                                 *problem.params)}, **tabulated})
    except (TypeError, ValueError) as exc:
        raise NotData(f"{prefix}: the problem's names do not make a namespace ({exc})") from None
    w = _Writer({}, problem, ns)
    data = {
        "name": problem.name,
        "coords": [c.name for c in problem.coords],
        "fields": list(problem.field_names),
        "params": [{"name": p.name, "range": [float(p.range[0]), float(p.range[1])]}
                   if p.range is not None else
                   {"name": p.name, "value": w.value(p.value, f"{prefix}/params/{p.name}",
                                                     "domain"),
                    "learnable": bool(p.learnable)} for p in problem.params],
        "domain": w.object(problem.domain, f"{prefix}/domain", "domain"),
        "equations": {k: w.expr(v, f"{prefix}/equations/{k}")
                      for k, v in problem.equations.items()},
        "conditions": {k: w.object(c, f"{prefix}/conditions/{k}", "condition")
                       for k, c in problem.conditions.items()},
        "exact": {f.name: w.expr(v, f"{prefix}/exact/{f.name}")
                  for f, v in problem.exact.items()},
        "reference": (None if problem.reference is None else
                      w.object(problem.reference, f"{prefix}/reference", "reference")),
    }
    subset = {f.name: list(f.coords) for f in problem.fields if f.coords is not None}
    if subset:  # fields on a subset of the coordinates
        data["field_coords"] = subset
    if tabulated:  # coefficients given as data: their tables, read back before the rest
        data["coefficients"] = [
            {"name": name, "args": [w.expr(a, f"{prefix}/coefficients/{name}/args")
                                    for a in node.args],
             **w.value(node.table.to_data(), f"{prefix}/coefficients/{name}", "domain")}
            for name, node in tabulated.items()]
    return data, w.arrays


def _tabulated(problem) -> dict:
    """The coefficients given as data (:class:`~pinn.dsl.expr.Tabulated` values) that the
    problem's expressions use, by name; two different tables of one name are not data."""
    from pinn.dsl.calculus import walk

    found: dict = {}

    def visit(v):
        if isinstance(v, E.Expr):
            for node in walk(v):
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
    for c in problem.conditions.values():
        try:
            visit(c.to_data())
        except NotImplementedError:
            pass
    return found


# ---------------------------------------------------------------------------
# reading


@dataclasses.dataclass
class _Reader:
    arrays: Mapping[str, np.ndarray]
    namespace: Any = None

    def expr(self, text, where: str) -> E.Expr:
        from pinn.dsl import parse

        if not isinstance(text, str):
            raise ValueError(f"{where}: expected an expression as text, got {text!r}")
        try:
            return parse(text, self.namespace)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def value(self, v, where: str, kind: str):
        if isinstance(v, list):
            return tuple(self.value(x, f"{where}/{i}", kind) for i, x in enumerate(v))
        if not isinstance(v, dict):
            return v
        if "$expr" in v:
            return self.expr(v["$expr"], where)
        if "$array" in v:
            key = v["$array"]
            if not isinstance(key, str) or key not in self.arrays:
                raise ValueError(f"{where}: the array {key!r} is not in {PARAMS_FILE}")
            return self.arrays[key]
        if "$type" in v:
            return self.object(v, where, kind)
        return {k: self.value(x, f"{where}/{k}", kind) for k, x in v.items()}

    def object(self, d, where: str, kind: str):
        if not isinstance(d, dict) or "$type" not in d:
            raise ValueError(f"{where}: expected an object {{\"$type\": NAME, ...}}, got {d!r}")
        name = d["$type"]
        arguments = {k: v for k, v in d.items() if k != "$type"}
        if name == "Problem" and kind == "reference":
            return problem_from_data(arguments, self.arrays, prefix=where)
        cls = registry()[kind].get(name) if isinstance(name, str) else None
        if cls is None:
            raise ValueError(f"{where}: unknown {kind} class {name!r}; the run format knows "
                             f"{_allowed(kind)}")
        arguments = {k: self.value(v, f"{where}/{k}", kind) for k, v in arguments.items()}
        make = getattr(cls, "from_data", None)
        try:
            return make(arguments) if make is not None else cls(**arguments)
        except (TypeError, KeyError) as exc:
            raise ValueError(f"{where}: cannot build {name} from {sorted(arguments)} "
                             f"({exc})") from None
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None


def from_data(d: dict, kind: str, arrays: Mapping[str, np.ndarray] | None = None, *,
              where: str = ""):
    """The object :func:`to_data` wrote (``kind``: domain, condition, reference, model)."""
    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(_KINDS)}")
    return _Reader(arrays or {}).object(d, where or kind, kind)


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
        from pinn.dsl.builders import param_range

        return E.Param(p["name"], None, False, param_range(p["name"], r))
    if not (isinstance(p, dict) and isinstance(p.get("name"), str)
            and isinstance(p.get("value"), (int, float)) and not isinstance(p["value"], bool)
            and isinstance(p.get("learnable", False), bool)):
        raise ValueError(f"{where}: expected {{\"name\": ..., \"value\": number, "
                         f"\"learnable\": bool}}, got {p!r}")
    return E.Param(p["name"], p["value"], p.get("learnable", False))


def _coefficient(r: _Reader, c, where: str) -> tuple[str, E.Expr]:
    """``(name, Tabulated node)`` of one saved coefficient given as data."""
    from pinn.dsl.tables import Table

    if not (isinstance(c, Mapping) and isinstance(c.get("name"), str)
            and isinstance(c.get("args"), list)):
        raise ValueError(f"{where}: expected {{\"name\": ..., \"args\": [...], \"axes\": "
                         f"[...], \"values\": ...}}, got {c!r}")
    table = Table.from_data({k: r.value(v, f"{where}/{k}", "domain") for k, v in c.items()
                             if k in ("axes", "values", "method", "source")})
    args = tuple(r.expr(a, f"{where}/args") for a in c["args"])
    return c["name"], E.Tabulated(c["name"], table, args)


def problem_from_data(d: Mapping, arrays: Mapping[str, np.ndarray] | None = None, *,
                      prefix: str = "problem"):
    """The :class:`~pinn.Problem` that :func:`problem_to_data` wrote (``arrays``: the
    arrays it returned). Raises ``ValueError`` naming the bad entry."""
    from pinn.dsl import Namespace
    from pinn.problem import Problem

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
    try:
        ns = Namespace([*coords, *fields, *params])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{prefix}: {exc}") from None
    r = _Reader(arrays or {}, ns)
    if d.get("coefficients"):  # tables first: the expressions below name them
        table = {n.name: n for n in (*coords, *fields, *params)}
        for i, c in enumerate(d["coefficients"]):
            table.update([_coefficient(r, c, f"{prefix}/coefficients/{i}")])
        try:
            r = _Reader(arrays or {}, Namespace(table))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{prefix}/coefficients: {exc}") from None

    def exprs(key: str) -> dict[str, E.Expr]:
        table = d.get(key) or {}
        if not isinstance(table, dict):
            raise ValueError(f"{prefix}/{key}: expected an object, got {table!r}")
        return {k: r.expr(v, f"{prefix}/{key}/{k}") for k, v in table.items()}

    exact = exprs("exact")
    unknown = [k for k in exact if k not in ns.names or E.Field(k) not in fields]
    if unknown:
        raise ValueError(f"{prefix}/exact: {unknown} are not fields of the problem "
                         f"({', '.join(f.name for f in fields)})")
    conditions = d.get("conditions") or {}
    if not isinstance(conditions, dict):
        raise ValueError(f"{prefix}/conditions: expected an object, got {conditions!r}")
    reference = d.get("reference")
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
    )


# ---------------------------------------------------------------------------
# parameters


def _flatten(tree, prefix: str, out: dict[str, np.ndarray], where: str) -> None:
    if isinstance(tree, Mapping):
        for k, v in tree.items():
            k = str(k)
            if not k or "/" in k:
                raise ValueError(f"{where}: the key {k!r} cannot be part of a path")
            _flatten(v, f"{prefix}/{k}", out, where)
        return
    out[prefix] = np.asarray(tree)


def flat_params(params: Mapping) -> dict[str, np.ndarray]:
    """Every leaf of ``params`` (``{"net": ..., "pde": ...}``) under ``net/...``, ``pde/...``."""
    out: dict[str, np.ndarray] = {}
    for top in ("net", "pde"):
        _flatten(params.get(top, {}), top, out, "params")
    return out


def _nest(flat: Mapping[str, np.ndarray], top: str) -> dict:
    tree: dict = {}
    for key, v in flat.items():
        parts = key.split("/")
        if parts[0] != top:
            continue
        node = tree
        for p in parts[1:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return tree


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (the run folder is incomplete; train "
                                "again with `pinn solve ...`)")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not an npz of numeric arrays ({exc})") from None
    for k, v in arrays.items():
        if v.dtype.kind not in _NUMERIC:
            raise ValueError(f"{path}: the array {k!r} holds {v.dtype}, not numbers")
    return arrays


def load_params(directory: str | os.PathLike, template: Mapping | None = None) -> dict:
    """The parameters ``{"net": ..., "pde": {...}}`` of a run folder's ``params.npz``.

    With ``template`` (the ``{"net": ..., "pde": ...}`` of a freshly built network, e.g.
    ``pinn.setup(problem, model, training).params``), each array is checked against it
    (names, shapes, dtypes) and put into its structure. Use it to rebuild a solution
    whose problem or model is not data::

        pinn.Solution(problem, model, pinn.serialize.load_params(run_dir), seed=...)
    """
    arrays = _read_npz(Path(directory) / PARAMS_FILE)
    params = {k: v for k, v in arrays.items() if k.split("/")[0] in ("net", "pde")}
    if template is not None:
        return restore_params(params, template, where=str(Path(directory) / PARAMS_FILE))
    return {"net": _nest(params, "net"), "pde": _nest(params, "pde")}


def restore_params(flat: Mapping[str, np.ndarray], template: Mapping, *,
                   where: str = PARAMS_FILE) -> dict:
    """``flat`` (path-like keys) in the structure of ``template``, checking that the names,
    shapes and dtypes agree (``ValueError`` naming the first difference)."""
    want = flat_params(template)
    missing = sorted(set(want) - set(flat))
    extra = sorted(k for k in flat if k not in want)
    if missing or extra:
        raise ValueError(f"{where}: the arrays do not fit the network the solution describes "
                         f"(missing: {missing[:5] or 'none'}; unexpected: {extra[:5] or 'none'})")
    for k, t in want.items():
        a = flat[k]
        if a.shape != t.shape or a.dtype != t.dtype:
            raise ValueError(f"{where}: {k} has shape {a.shape} and dtype {a.dtype}; the "
                             f"network needs {t.shape} {t.dtype}")

    def fill(tree, prefix):
        if isinstance(tree, Mapping):
            return {k: fill(v, f"{prefix}/{k}") for k, v in tree.items()}
        return flat[prefix]

    return {top: fill(template.get(top, {}), top) for top in ("net", "pde")}


# ---------------------------------------------------------------------------
# the solution


def _training_summary(training) -> dict | None:
    if training is None:
        return None
    return {"stages": [f"{type(s.optimizer).__name__} x {s.steps}: {s.optimizer!r}"
                       for s in training.stages],
            "points": repr(training.points), "weighting": repr(training.weighting),
            "seed": training.seed, "chunk": training.chunk}


def save_solution(directory: str | os.PathLike, solution) -> Path:
    """Write ``solution.json`` and ``params.npz`` of ``solution`` into ``directory``
    (atomically; ``params.npz`` first, so a ``solution.json`` is always complete).
    A problem or model that is not data is recorded as such: the parameters, metrics
    and summary are still written, and ``load`` explains how to rebuild it."""
    import jax

    from pinn.io import clean_json, write_json, write_npz
    from pinn.report.metrics import versions

    d = Path(directory)
    arrays = flat_params(jax.device_get(solution.params))
    reasons = []
    try:
        problem, problem_arrays = problem_to_data(solution.problem)
        arrays.update(problem_arrays)
    except NotData as exc:
        problem = None
        reasons.append(str(exc))
    try:
        model, _ = to_data(solution.model, "model")
    except NotData as exc:
        model = None
        reasons.append(str(exc))
    write_npz(d / PARAMS_FILE, **arrays)
    windows = getattr(solution, "windows", None)
    doc = {
        # a solution in time windows is format 3 (older pinn cannot read it); others 2
        "format": f"{FORMAT}/{VERSION if windows is None else WINDOWS_VERSION}",
        "reloadable": not reasons,
        "not_data": "; ".join(reasons) or None,
        "problem": problem,
        "model": model,
        "seed": solution.seed,
        "precision": solution.precision,
        "resolution": clean_json(solution.resolution),
        "metrics": solution.metrics,
        "training": _training_summary(solution.training),
        **({"windows": list(windows)} if windows is not None else {}),
        "summary": {"problem": repr(solution.problem), "model": repr(solution.model)},
        "versions": versions(),
    }
    return write_json(d / SOLUTION_FILE, doc)


def _format_version(doc, path: Path) -> int:
    fmt = doc.get("format") if isinstance(doc, dict) else None
    name, _, version = str(fmt).partition("/")
    if name != FORMAT or not version.isdigit() or int(version) < 1:
        raise ValueError(f"{path}: not a saved pinn solution (format {fmt!r}; expected "
                         f"'{FORMAT}/{VERSION}')")
    if int(version) > WINDOWS_VERSION:
        raise ValueError(f"{path}: written by a newer pinn (format {fmt}; this pinn reads up "
                         f"to {FORMAT}/{WINDOWS_VERSION}): upgrade pinn to load it")
    return int(version)


def read_solution(directory: str | os.PathLike) -> dict:
    """The keyword arguments of :class:`pinn.Solution` saved in ``directory`` (see the
    module docstring). Raises ``FileNotFoundError`` when there is no saved solution and
    ``ValueError`` (naming the fix) for anything else; an old ``solution.pkl`` is refused
    and never opened."""
    from pinn.solution import build_network
    from pinn.train.history import read_history
    from pinn.training import precision_scope

    d = Path(directory)
    if d.is_file():
        d = d.parent
    path = d / SOLUTION_FILE
    if not path.is_file():
        if (d / LEGACY_FILE).exists():
            raise ValueError(f"{d}: written by an older pinn that stored runs as pickles; they "
                             "are not loaded, since a pickle can run code: train again with "
                             "`pinn solve ...`")
        raise FileNotFoundError(f"{d}: no saved solution ({SOLUTION_FILE}); run `pinn solve` "
                                "first")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not readable JSON ({exc})") from None
    version = _format_version(doc, path)
    seed, precision = doc.get("seed", 0), doc.get("precision", 32)
    if not doc.get("reloadable", False):
        raise ValueError(
            f"{d}: this solution was saved without its problem or model as data "
            f"({doc.get('not_data')}); rebuild it in Python from the same problem and model: "
            f"pinn.Solution(problem, model, pinn.serialize.load_params({str(d)!r}), "
            f"seed={seed!r}, precision={precision!r})")
    if isinstance(seed, bool) or not isinstance(seed, int) or precision not in (32, 64):
        raise ValueError(f"{path}: seed {seed!r} / precision {precision!r} are not an integer "
                         "and 32 or 64")
    arrays = _read_npz(d / PARAMS_FILE)
    problem = problem_from_data(doc.get("problem"), arrays)
    model = from_data(doc.get("model"), "model", arrays, where="model")
    windows = doc.get("windows")
    if windows is not None and (not isinstance(windows, list) or len(windows) < 3 or not all(
            isinstance(e, (int, float)) and not isinstance(e, bool) for e in windows)):
        raise ValueError(f"{path}: 'windows' must list the time windows' edges (3 or more "
                         f"numbers), got {windows!r}")
    with precision_scope(precision):
        _, net = build_network(problem, model, seed)
    if windows is not None:  # one network per time window, all of the same shape
        from pinn.marching import window_key

        net = {window_key(k): net for k in range(len(windows) - 1)}
    template = {"net": net, "pde": {p.name: np.asarray(p.value, _net_dtype(net))
                                    for p in problem.learnable}}
    params = restore_params({k: v for k, v in arrays.items()
                             if k.split("/")[0] in ("net", "pde")}, template,
                            where=str(d / PARAMS_FILE))
    resolution = doc.get("resolution")
    return {"problem": problem, "model": model, "params": params, "seed": seed,
            "precision": precision, "metrics": doc.get("metrics") or {},
            "history": read_history(d / HISTORY_FILE),
            "resolution": tuple(resolution) if isinstance(resolution, list) else resolution,
            # format 2: hard initial values scale the network by (t - t0)/(t1 - t0)
            "time_span_scaled": version >= 2, "windows": windows}


def _net_dtype(net) -> np.dtype:
    """The float dtype of a network's parameters (that of its learned PDE parameters)."""
    import jax

    leaves = jax.tree.leaves(net)
    return np.dtype(leaves[0].dtype) if leaves else np.dtype(np.float32)
