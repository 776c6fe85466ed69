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

A problem with quantities of interest (:mod:`pinn.qoi`, ``quantities:`` in a problem file)
adds the optional key ``quantities``: ``{"mean_T": {"$type": "Mean", "expr": {"$expr":
"u"}, "on": "interior", "where": null, "time": null, "points": 4096}, "T_center":
{"$type": "Value", "expr": ..., "at": [0.5, 0.5]}}``; a fixed parameter that only a quantity
uses is listed in ``params`` with the others.

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

import os
from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np

from pinn import evaluate as ev
from pinn import io, marching, problem
from pinn.data import ANY, NUMERIC, NotData, Reader, Writer, init_fields, registered
from pinn.io import clean_json, read_json_file, read_npz_file, write_json, write_npz
from pinn.network import build_network
from pinn.problem import problem_to_data
from pinn.report.metrics import METRICS, versions
from pinn.train.history import read_history
from pinn.train.spec import precision_scope

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

#: What ``solution.json`` holds at the keys :func:`read_solution` reads (the problem and
#: the model are checked as they are read: :func:`problem_from_data`, :func:`from_data`).
_SOLUTION = io.mapping({
    "reloadable": io.BOOLEAN, "not_data": io.TEXT.or_null(),
    "problem": io.mapping({"name": io.TEXT}, "an object (the problem as data)").or_null(),
    "model": io.mapping({}, "an object (the network spec)").or_null(),
    "seed": io.INTEGER,
    "precision": io.Kind("32 or 64", lambda v: io.INTEGER.test(v) and v in (32, 64)),
    "resolution": io.Kind("an integer or a list of integers (grid points per axis)",
                          lambda v: io.INTEGER.test(v) or isinstance(v, list),
                          items=io.INTEGER, null=True),
    "metrics": METRICS.or_null(),
    "windows": io.list_of(io.NUMBER, "a list of the time windows' edges").or_null(),
}, "an object (a saved solution)")


def _load_kinds() -> None:
    """Import the packages whose classes a run folder may name, so that they register
    (:func:`pinn.data.register`) before anything is read."""
    import pinn.conditions
    import pinn.geometry
    import pinn.nets
    import pinn.problem
    import pinn.reference  # noqa: F401


def registry() -> dict[str, Mapping[str, type]]:
    """The classes a run folder may name, by kind (``domain``, ``condition``,
    ``reference``, ``model``) and name (:func:`pinn.data.registered`). Fixed: a file cannot
    add to it."""
    _load_kinds()
    return {k: registered(k) for k in (*_KINDS, ANY)}


def problem_from_data(d: Mapping, arrays: Mapping[str, np.ndarray] | None = None, *,
                      prefix: str = "problem"):
    """The :class:`~pinn.Problem` that :func:`problem_to_data` wrote (``arrays``: the
    arrays it returned; :func:`pinn.problem.problem_from_data`, with every class a problem
    may name registered). Raises ``ValueError`` naming the bad entry."""
    _load_kinds()
    return problem.problem_from_data(d, arrays, prefix=prefix)


def to_data(obj, kind: str, *, where: str = "") -> tuple[dict, dict[str, np.ndarray]]:
    """``obj`` (a domain, condition, reference or model spec: ``kind``) as data, and the
    arrays it refers to. Raises :class:`NotData` for a class that does not register."""
    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(_KINDS)}")
    w = Writer({})
    return w.object(obj, where or kind, kind), w.arrays


def from_data(d: dict, kind: str, arrays: Mapping[str, np.ndarray] | None = None, *,
              where: str = ""):
    """The object :func:`to_data` wrote (``kind``: domain, condition, reference, model)."""
    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(_KINDS)}")
    _load_kinds()
    return Reader(arrays or {}).object(d, where or kind, kind)


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
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (the run folder is incomplete; train "
                                "again with `pinn solve ...`)")
    arrays = read_npz_file(path, "parameter file")
    for k, v in arrays.items():
        if v.dtype.kind not in NUMERIC:
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
    d = Path(directory)
    arrays = flat_params(jax.device_get(solution.params))
    reasons = []
    try:
        prob, problem_arrays = problem_to_data(solution.problem)
        arrays.update(problem_arrays)
    except NotData as exc:
        prob = None
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
        "problem": prob,
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
    # (isdigit() also holds for '²': only ASCII digits are a version)
    if (name != FORMAT or not (version.isascii() and version.isdigit())
            or int(version) < 1):
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
    d = Path(directory)
    if d.is_file():
        d = d.parent
    path = d / SOLUTION_FILE
    if not path.exists():
        if (d / LEGACY_FILE).exists():
            raise ValueError(f"{d}: written by an older pinn that stored runs as pickles; they "
                             "are not loaded, since a pickle can run code: train again with "
                             "`pinn solve ...`")
        raise FileNotFoundError(f"{d}: no saved solution ({SOLUTION_FILE}); run `pinn solve` "
                                "first")
    doc = read_json_file(path, "saved solution")
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object (a saved solution), got "
                         f"{type(doc).__name__}")
    version = _format_version(doc, path)
    io.check_json(doc, _SOLUTION, path, "the saved solution is damaged: train again")
    seed, precision = doc.get("seed", 0), doc.get("precision", 32)
    if not doc.get("reloadable", False):
        raise ValueError(
            f"{d}: this solution was saved without its problem or model as data "
            f"({doc.get('not_data')}); rebuild it in Python from the same problem and model: "
            f"pinn.Solution(problem, model, pinn.serialize.load_params({str(d)!r}), "
            f"seed={seed!r}, precision={precision!r})")
    arrays = _read_npz(d / PARAMS_FILE)
    try:
        prob = problem_from_data(doc.get("problem"), arrays)
        model = from_data(doc.get("model"), "model", arrays, where="model")
    except ValueError as exc:  # (what the problem or the model holds: named by its key)
        raise io.BadFile(f"{path}: {exc}") from None
    _check_size(model, arrays, path)
    windows = doc.get("windows")
    if windows is not None and len(windows) < 3:
        raise io.BadFile(f"{path}: windows must list the time windows' edges (3 or more "
                         f"numbers), not {len(windows)}; the saved solution is damaged: "
                         "train again")
    resolution = doc.get("resolution")
    try:
        ev.check_resolution(resolution, len(prob.inputs))
    except ValueError as exc:
        raise io.BadFile(f"{path}: {exc}; the saved solution is damaged: train again"
                         ) from None
    with precision_scope(precision):
        _, net = build_network(prob, model, seed)
    if windows is not None:  # one network per time window, all of the same shape
        net = {marching.window_key(k): net for k in range(len(windows) - 1)}
    template = {"net": net, "pde": {p.name: np.asarray(p.value, _net_dtype(net))
                                    for p in prob.learnable}}
    params = restore_params({k: v for k, v in arrays.items()
                             if k.split("/")[0] in ("net", "pde")}, template,
                            where=str(d / PARAMS_FILE))
    return {"problem": prob, "model": model, "params": params, "seed": seed,
            "precision": precision, "metrics": doc.get("metrics") or {},
            "history": read_history(d / HISTORY_FILE),
            "resolution": tuple(resolution) if isinstance(resolution, list) else resolution,
            # format 2: hard initial values scale the network by (t - t0)/(t1 - t0)
            "time_span_scaled": version >= 2, "windows": windows}


def _check_size(model, arrays: Mapping[str, np.ndarray], path: Path) -> None:
    """Refuse a model whose size (width^2 x layers) is far above the parameters saved
    beside it, before a network of that size is built (a damaged or crafted file would
    otherwise make XLA allocate it and abort)."""
    width = getattr(model, "width", None)
    if not isinstance(width, int) or isinstance(width, bool):
        return
    layers = max(int(getattr(model, "depth", 1) or 1), 3 * int(getattr(model, "blocks", 0) or 0),
                 1)
    saved = sum(int(v.size) for k, v in arrays.items() if k.startswith("net/"))
    if width * width * layers > 10 * saved + 1_000_000:
        raise ValueError(f"{path}: the model (width {width}, {layers} layers) is far larger "
                         f"than the {saved} network parameters saved beside it; the file is "
                         "damaged: train again")


def _net_dtype(net) -> np.dtype:
    """The float dtype of a network's parameters (that of its learned PDE parameters)."""
    leaves = jax.tree.leaves(net)
    return np.dtype(leaves[0].dtype) if leaves else np.dtype(np.float32)
