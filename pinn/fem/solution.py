"""FEMSolution: a finite-element solution that can be evaluated anywhere, compared and saved."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import skfem
from scipy.spatial import cKDTree

from pinn import evaluate as ev
from pinn import io
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_points_numpy
from pinn.io import write_npz, write_text

__all__ = ["FEMSolution"]

_MESHES = {"MeshLine1": skfem.MeshLine1, "MeshTri1": skfem.MeshTri1, "MeshTet1": skfem.MeshTet1}
_ELEMENTS = {
    ("MeshLine1", 1): skfem.ElementLineP1, ("MeshLine1", 2): skfem.ElementLineP2,
    ("MeshTri1", 1): skfem.ElementTriP1, ("MeshTri1", 2): skfem.ElementTriP2,
    ("MeshTri1", 3): skfem.ElementTriP3, ("MeshTri1", 4): skfem.ElementTriP4,
    ("MeshTet1", 1): skfem.ElementTetP1, ("MeshTet1", 2): skfem.ElementTetP2,
}
CHUNK = 8192

#: The format of ``fem.json`` (:meth:`FEMSolution.save`).
FORMAT = "pinn.fem/1"
#: Vertices of a cell of each mesh (the rows of ``t``).
_VERTICES = {"MeshLine1": 2, "MeshTri1": 3, "MeshTet1": 4}
_NAMES = io.list_of(io.TEXT, "a list of names")
#: What ``fem.json`` holds (:meth:`FEMSolution.save`), checked by :meth:`FEMSolution.load`.
_META = io.mapping({
    "format": io.Kind(f"{FORMAT!r} (a FEM solution of this pinn)", lambda v: v == FORMAT),
    "mesh": io.Kind(f"one of {', '.join(_MESHES)}",
                    lambda v: isinstance(v, str) and v in _MESHES),
    "fields": _NAMES, "coords": _NAMES, "up_to_constant": _NAMES,
    "degrees": io.mapping_of(io.INTEGER, "an object of integers (each field's degree)"),
    "time": io.TEXT.or_null(), "solve_seconds": io.NUMBER,
    "info": io.mapping({
        "element": io.Kind("text or an object of texts", lambda v: isinstance(v, str) or (
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values()))).or_null(),
        "dt": io.NUMBER.or_null(), "theta": io.NUMBER.or_null(),
        "newton_iterations": io.INTEGER.or_null()}, "an object (the solver's facts)").or_null(),
}, "an object (a FEM solution's description)",
    required=("format", "mesh", "fields", "degrees", "coords", "time", "solve_seconds",
              "up_to_constant"))


class _Locator:
    """Finds the cell and the reference coordinates of points (no dense points x cells array).

    Points outside the mesh (e.g. just outside a polygonal approximation of a
    curved boundary) are evaluated by extending the polynomial of the nearest
    cell.
    """

    def __init__(self, mesh: skfem.Mesh):
        p, t = mesh.p, mesh.t
        self.dim = p.shape[0]
        self.ne = t.shape[1]
        if self.dim == 1:
            x0, x1 = p[0, t[0]], p[0, t[1]]
            self.left = np.minimum(x0, x1)
            self.order = np.argsort(self.left)
            self.sorted_left = self.left[self.order]
            self.x0, self.len = x0, x1 - x0
        else:
            self.v0 = p[:, t[0]].T                                   # ne, d
            A = np.stack([p[:, t[k]].T - self.v0 for k in range(1, self.dim + 1)], axis=2)
            self.Ainv = np.linalg.inv(A)                             # ne, d, d
            self.tree = cKDTree(p[:, t].mean(axis=1).T)
            self.k = min(self.ne, 12 if self.dim == 2 else 24)

    def locate(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Cells ``[n]``, reference coordinates ``[d, n]`` and the worst outside distance."""
        if self.dim == 1:
            idx = np.clip(np.searchsorted(self.sorted_left, x[:, 0], side="right") - 1,
                          0, self.ne - 1)
            cells = self.order[idx]
            X = (x[:, 0] - self.x0[cells]) / self.len[cells]
            worst = float(np.max(np.maximum(-X, X - 1), initial=0.0))
            return cells, X[None, :], worst
        _, cand = self.tree.query(x, self.k)
        cand = cand.reshape(len(x), -1)
        loc = np.einsum("nkij,nkj->nki", self.Ainv[cand], x[:, None, :] - self.v0[cand])
        bary = np.concatenate([1 - loc.sum(axis=2, keepdims=True), loc], axis=2)
        score = bary.min(axis=2)                                     # n, k
        best = np.argmax(score, axis=1)
        rows = np.arange(len(x))
        cells = cand[rows, best]
        X = loc[rows, best].T
        worst = float(max(0.0, -np.min(score[rows, best], initial=0.0)))
        return cells, X, worst


class FEMSolution:
    """A finite-element solution: ``evaluate(points)``, ``errors()``, ``save()``/``load()``.

    ``snapshots[k]`` holds all degrees of freedom at ``times[k]`` (``times`` is
    None for a steady problem).  Fields in ``up_to_constant`` are determined
    up to an additive constant (a pressure with velocity Dirichlet conditions
    everywhere); they are stored with zero mean and compared after removing
    the mean difference.
    """

    def __init__(self, mesh: skfem.Mesh, fields: tuple[str, ...], degrees: Mapping[str, int],
                 snapshots: np.ndarray, *, coords: tuple[str, ...], time: str | None = None,
                 times: np.ndarray | None = None, solve_seconds: float = 0.0,
                 up_to_constant: tuple[str, ...] = (), info: Mapping | None = None,
                 problem=None):
        self.mesh = mesh
        self.fields = tuple(fields)
        self.degrees = dict(degrees)
        self.snapshots = np.atleast_2d(np.asarray(snapshots, dtype=np.float64))
        self.coords = tuple(coords)
        self.time = time
        self.times = None if times is None else np.asarray(times, dtype=np.float64)
        self.solve_seconds = float(solve_seconds)
        self.up_to_constant = tuple(up_to_constant)
        self.info = dict(info or {})
        self.problem = problem
        mname = type(mesh).__name__
        self._elements = {f: _ELEMENTS[(mname, self.degrees[f])]() for f in self.fields}
        self._dofs = {}
        off = 0
        self.offsets = {}
        for f in self.fields:
            dofs = skfem.Dofs(mesh, self._elements[f])
            self._dofs[f] = dofs.element_dofs
            self.offsets[f] = off
            off += dofs.N
        if self.snapshots.shape[1] != off:
            raise ValueError(f"snapshots have {self.snapshots.shape[1]} values per step, the "
                             f"mesh and elements need {off}")
        self._locator: _Locator | None = None

    # -- basic properties ------------------------------------------------------
    @property
    def dofs(self) -> int:
        """Number of degrees of freedom (all fields, one time level)."""
        return int(self.snapshots.shape[1])

    @property
    def n_cells(self) -> int:
        """Number of mesh cells (``solve(cells=n)`` sets the cells along the longest side)."""
        return int(self.mesh.t.shape[1])

    @property
    def is_evolution(self) -> bool:
        return self.times is not None

    def values(self, field: str | E.Field, step: int = -1) -> np.ndarray:
        """The dof vector of one field at a stored step."""
        name = field.name if isinstance(field, E.Field) else field
        off = self.offsets[name]
        n = self._dofs[name].max() + 1
        return self.snapshots[step, off: off + n]

    def vertex_values(self, field: str | E.Field) -> np.ndarray:
        """One field at the mesh vertices at every stored step, ``[steps, n_vertices]``
        (the Lagrange element's vertex degrees of freedom; what ``pinn export-fields``
        writes)."""
        name = field.name if isinstance(field, E.Field) else field
        nodal = skfem.Dofs(self.mesh, self._elements[name]).nodal_dofs[0]
        return self.snapshots[:, self.offsets[name] + nodal]

    def __repr__(self) -> str:
        deg = ", ".join(f"{f}: P{k}" for f, k in self.degrees.items())
        steps = f", {len(self.times)} stored steps" if self.is_evolution else ""
        return (f"FEMSolution({type(self.mesh).__name__} with {self.n_cells} cells, {deg}, "
                f"{self.dofs} dofs{steps}, solved in {self.solve_seconds:.3g} s)")

    # -- evaluation --------------------------------------------------------------
    def __call__(self, points) -> dict[str, np.ndarray]:
        return self.evaluate(points)

    def _points(self, points) -> tuple[np.ndarray, int]:
        """``points`` as float64 ``[N, d]`` (checked: spatial coordinates, then time for an
        evolution) and the spatial dimension."""
        pts = np.asarray(points, dtype=np.float64)
        sd = self.mesh.p.shape[0]
        want = sd + (1 if self.is_evolution else 0)
        if pts.ndim != 2 or pts.shape[1] != want:
            raise ValueError(f"points must have shape [N, {want}] ({', '.join(self.coords)}), got "
                             f"{pts.shape}")
        return pts, sd

    def evaluate(self, points, fields=None) -> dict[str, np.ndarray]:
        """Values at ``points[N, d]`` (``d`` spatial coordinates, then time for evolution).

        Evaluated in chunks of 8192 points with a cell search (KD-tree on
        cell centres, then barycentric tests); evolution problems interpolate
        linearly between stored steps.
        """
        pts, sd = self._points(points)
        names = self.fields if fields is None else tuple(
            f.name if isinstance(f, E.Field) else f for f in fields)
        if self._locator is None:
            self._locator = _Locator(self.mesh)
        out = {f: np.empty(len(pts)) for f in names}
        worst = 0.0
        for s in range(0, len(pts), CHUNK):
            chunk = pts[s: s + CHUNK]
            cells, X, w = self._locator.locate(chunk[:, :sd])
            worst = max(worst, w)
            if self.is_evolution:
                k, wt = self._time_weights(chunk[:, sd])
            for f in names:
                el = self._elements[f]
                edofs = self._dofs[f][:, cells] + self.offsets[f]       # nb, n
                phi = np.stack([el.lbasis(X, i)[0] for i in range(edofs.shape[0])])
                phi = phi.reshape(edofs.shape)
                if self.is_evolution:
                    a = np.sum(phi * self.snapshots[k[None, :], edofs], axis=0)
                    b = np.sum(phi * self.snapshots[k[None, :] + 1, edofs], axis=0)
                    out[f][s: s + CHUNK] = (1 - wt) * a + wt * b
                else:
                    out[f][s: s + CHUNK] = np.sum(phi * self.snapshots[0][edofs], axis=0)
        if worst > 0.25:
            warnings.warn(f"some points lie outside the mesh (up to {worst:.2g} cell sizes); "
                          "their values are extrapolated", stacklevel=2)
        return out

    def gradient(self, points, field: str | E.Field) -> np.ndarray:
        """The spatial gradient of one field at ``points[N, d]`` (as :meth:`evaluate`
        takes them): ``[N, space dim]``, the derivative of the element's polynomial in the
        cell holding each point (discontinuous across cells; evolution problems interpolate
        linearly between stored steps)."""
        pts, sd = self._points(points)
        name = field.name if isinstance(field, E.Field) else field
        if name not in self._elements:
            raise ValueError(f"field {name!r}: this solution's fields are "
                             f"{', '.join(self.fields)}")
        if self._locator is None:
            self._locator = _Locator(self.mesh)
        loc, el = self._locator, self._elements[name]
        out = np.empty((len(pts), sd))
        for s in range(0, len(pts), CHUNK):
            chunk = pts[s: s + CHUNK]
            cells, X, _ = loc.locate(chunk[:, :sd])
            edofs = self._dofs[name][:, cells] + self.offsets[name]    # nb, n
            dref = np.stack([np.asarray(el.lbasis(X, i)[1]).reshape(sd, -1)
                             for i in range(edofs.shape[0])])            # nb, sd, n
            if sd == 1:  # X = (x - x0) / len
                dphi = dref / loc.len[cells][None, None, :]
            else:  # X = Ainv (x - v0): d phi / dx_j = sum_k d phi / dX_k Ainv[k, j]
                dphi = np.einsum("bkn,nkj->bjn", dref, loc.Ainv[cells])
            if self.is_evolution:
                k, wt = self._time_weights(chunk[:, sd])
                a = np.einsum("bjn,bn->nj", dphi, self.snapshots[k[None, :], edofs])
                b = np.einsum("bjn,bn->nj", dphi, self.snapshots[k[None, :] + 1, edofs])
                out[s: s + CHUNK] = (1 - wt)[:, None] * a + wt[:, None] * b
            else:
                out[s: s + CHUNK] = np.einsum("bjn,bn->nj", dphi, self.snapshots[0][edofs])
        return out

    def _time_weights(self, t: np.ndarray):
        ts = self.times
        if len(ts) == 1:
            return np.zeros(len(t), dtype=np.int64), np.zeros(len(t))
        k = np.clip(np.searchsorted(ts, t, side="right") - 1, 0, len(ts) - 2)
        w = np.clip((t - ts[k]) / (ts[k + 1] - ts[k]), 0.0, 1.0)
        return k, w

    # -- errors --------------------------------------------------------------------
    def _reference_fn(self, exact) -> Callable:
        if exact is None and self.problem is not None:
            if self.problem.exact:
                exact = self.problem.exact
            elif self.problem.reference is not None:
                exact = self.problem.reference
        if exact is None:
            raise ValueError("no exact solution or reference to compare with: pass exact= "
                             "({field: expr} or a callable points -> {field: values})")
        if isinstance(exact, Mapping):
            exprs = {(f.name if isinstance(f, E.Field) else str(f)): E.as_expr(v)
                     for f, v in exact.items()}
            coords = [E.Coord(c) for c in self.coords]
            tc = E.Coord(self.time) if self.time else None
            spatial = [c for c in coords if c != tc]

            def fn(points):
                pts = np.asarray(points, dtype=np.float64)
                cs = spatial + ([tc] if tc is not None else [])
                return {f: evaluate_points_numpy(ex, cs, pts, time_coord=tc)
                        for f, ex in exprs.items()}

            return fn
        if callable(exact):
            return exact
        raise TypeError(f"exact must be a mapping or a callable, got {type(exact).__name__}")

    def errors(self, exact=None, points=None) -> dict[str, dict[str, float]]:
        """``{"rel_l2": {field: v}, "max_abs_error": {field: v}}``.

        By default on the problem's evaluation grid against its exact solution or reference
        (:func:`pinn.evaluate.score`: the numbers a PINN's errors are); ``exact``:
        ``{field: expr}`` or a callable ``points -> {field: values}`` to compare with
        instead; ``points``: other points. Fields defined up to a constant are compared
        after removing the mean of the difference.
        """
        if self.problem is None and (exact is None or points is None):
            raise ValueError("pass exact= and points= (this solution has no problem attached)")
        if exact is None and points is None:
            s = ev.score(self.problem, self.evaluate)
            return {"rel_l2": s.rel_l2, "max_abs_error": s.max_abs_error}
        shift = tuple(self.up_to_constant)
        if self.problem is not None:
            shift += tuple(f for f in ev.up_to_constant(self.problem) if f not in shift)
        pts = np.asarray(ev.evaluation_grid(self.problem).points if points is None else points,
                         dtype=np.float64)
        if exact is None:
            t = ev.truth(self.problem, pts)
            want = {} if t is None else t.values
        else:
            want = self._reference_fn(exact)(pts)
        got = self.evaluate(pts, [f for f in self.fields if f in want])
        times = pts[:, self.coords.index(self.time)] if self.is_evolution else None
        return ev.field_errors(got, want, shift, times)

    def l2_error(self, exact: Mapping, *, t: float | None = None, relative: bool = False,
                 intorder: int | None = None) -> dict[str, float]:
        """L2(Omega) norms of ``u_h - u`` by quadrature on the mesh (at time ``t``).

        ``exact``: ``{field: expr}``.  For evolution problems ``t`` defaults to
        the final time (interpolating between stored steps otherwise).
        """
        coords = [E.Coord(c) for c in self.coords]
        tc = E.Coord(self.time) if self.time else None
        spatial = [c for c in coords if c != tc]
        if self.is_evolution:
            t = float(self.times[-1]) if t is None else float(t)
            k, w = self._time_weights(np.array([t]))
            U = (1 - w[0]) * self.snapshots[k[0]] + w[0] * self.snapshots[k[0] + 1] if len(
                self.times) > 1 else self.snapshots[0]
        else:
            U = self.snapshots[0]
        out = {}
        for f, ex in exact.items():
            name = f.name if isinstance(f, E.Field) else str(f)
            el = self._elements[name]
            q = intorder if intorder is not None else 2 * self.degrees[name] + 3
            basis = skfem.CellBasis(self.mesh, el, intorder=q)
            uh = np.asarray(basis.interpolate(U[self.offsets[name]: self.offsets[name] + basis.N]))
            X = np.asarray(basis.global_coordinates())
            flat = X.reshape(X.shape[0], -1).T
            ue = evaluate_points_numpy(E.as_expr(ex), spatial, flat, t=t, time_coord=tc)
            ue = ue.reshape(uh.shape)
            diff = uh - ue
            if name in self.up_to_constant:
                vol = np.sum(basis.dx)
                diff = diff - np.sum(diff * basis.dx) / vol
            err = float(np.sqrt(np.sum(diff**2 * basis.dx)))
            if relative:
                err /= max(float(np.sqrt(np.sum(ue**2 * basis.dx))), 1e-300)
            out[name] = err
        return out

    def metrics(self) -> dict:
        """What a FEM run records (``metrics.json`` of ``pinn fem``), besides its errors."""
        info = self.info
        return {"method": "FEM", "element": info.get("element"), "cells": self.n_cells,
                "dofs": self.dofs, "dt": info.get("dt"), "theta": info.get("theta"),
                "newton_iterations": info.get("newton_iterations"),
                "solve_seconds": self.solve_seconds, "precision": 64}

    # -- persistence -------------------------------------------------------------
    def save(self, directory) -> Path:
        """Write ``fem.npz`` and ``fem.json`` into ``directory`` (atomically)."""
        d = Path(directory)
        arrays = {"p": self.mesh.p, "t": self.mesh.t, "snapshots": self.snapshots}
        if self.times is not None:
            arrays["times"] = self.times
        meta = {
            "format": "pinn.fem/1", "mesh": type(self.mesh).__name__, "fields": self.fields,
            "degrees": self.degrees, "coords": self.coords, "time": self.time,
            "solve_seconds": self.solve_seconds, "dofs": self.dofs, "n_cells": self.n_cells,
            "up_to_constant": self.up_to_constant, "info": _jsonable(self.info),
        }
        write_npz(d / "fem.npz", **arrays)
        write_text(d / "fem.json", json.dumps(meta, indent=2))
        return d

    @classmethod
    def load(cls, directory, problem=None) -> FEMSolution:
        """The solution saved in ``directory`` (``fem.json``, ``fem.npz``), read by
        :func:`pinn.io.read_json_file` / :func:`pinn.io.read_npz_file` and checked before
        anything is built from it: the kinds of ``fem.json``'s values, the arrays' kinds
        and shapes against the mesh and the elements it names, the cells (inside the mesh,
        none flat), the stored times; with ``problem``, that it is this problem's (its
        coordinates and fields). A fault is :class:`pinn.io.BadFile`, one line naming the
        file; a missing file ``FileNotFoundError``."""
        d = Path(directory)
        jpath, npath = d / "fem.json", d / "fem.npz"
        redo = "the FEM solution is damaged: solve again (pinn fem FILE --out DIR)"
        meta = io.check_json(io.read_json_file(jpath, "FEM solution"), _META, jpath, redo)
        _check_meta(meta, jpath, redo)
        arrays = io.read_npz_file(npath, "FEM solution")
        p, t, snaps, times = _checked_arrays(arrays, meta, npath, redo)
        if problem is not None:
            _check_problem(meta, problem, jpath)
        mesh = _MESHES[meta["mesh"]](p, t)
        try:
            return cls(mesh, tuple(meta["fields"]), meta["degrees"], snaps,
                       coords=tuple(meta["coords"]), time=meta["time"], times=times,
                       solve_seconds=meta["solve_seconds"],
                       up_to_constant=tuple(meta["up_to_constant"]), info=meta.get("info"),
                       problem=problem)
        except ValueError as exc:  # (the snapshots' width against the mesh's dofs)
            raise io.BadFile(f"{npath}: {exc}; {redo}") from None


def _check_meta(meta: dict, path: Path, redo: str) -> None:
    """What ``fem.json`` says, beyond its values' kinds: each field once, with a degree the
    mesh has an element for; the coordinates, as many as the mesh's dimension (and the
    time); the fields defined up to a constant among the fields."""
    mesh, fields, coords, time = meta["mesh"], meta["fields"], meta["coords"], meta["time"]
    if not fields or len(set(fields)) != len(fields):
        raise io.BadFile(f"{path}: fields must name each field once, not {fields}; {redo}")
    for f in fields:
        k = meta["degrees"].get(f)
        if (mesh, k) not in _ELEMENTS:
            have = ", ".join(str(j) for m, j in _ELEMENTS if m == mesh)
            shown = "missing" if k is None else f"{k}"
            raise io.BadFile(f"{path}: degrees[{json.dumps(f)}] must be one of {have} (a {mesh} "
                             f"element), not {shown}; {redo}")
    dim = _VERTICES[mesh] - 1
    want = dim + (time is not None)
    if len(coords) != want or len(set(coords)) != len(coords) or (
            time is not None and time not in coords):
        raise io.BadFile(f"{path}: coords must name the {dim} coordinate(s) of a {mesh}"
                         + (f" and the time {time!r}" if time is not None else "")
                         + f" once each, not {coords}; {redo}")
    extra = [f for f in meta["up_to_constant"] if f not in fields]
    if extra:
        raise io.BadFile(f"{path}: up_to_constant names {', '.join(extra)}, not among the "
                         f"fields ({', '.join(fields)}); {redo}")


def _array(arrays: dict, key: str, path: Path, redo: str, kinds: str, ndim: int,
           what: str) -> np.ndarray:
    """``arrays[key]``, a ``ndim``-D array of numbers of ``kinds`` (NumPy's dtype kinds)."""
    if key not in arrays:
        raise io.BadFile(f"{path}: no array {key!r} ({what}); {redo}")
    a = arrays[key]
    if a.dtype.kind not in kinds or a.ndim != ndim:
        raise io.BadFile(f"{path}: {key} must be a {ndim}-D array of "
                         f"{'integers' if kinds == 'iu' else 'numbers'} ({what}), not "
                         f"{a.ndim}-D {a.dtype}; {redo}")
    return a


def _checked_arrays(arrays: dict, meta: dict, path: Path, redo: str):
    """``(p, t, snapshots, times)`` of ``fem.npz``, checked against the mesh ``meta``
    names: ``p`` [dim, vertices] finite, ``t`` [vertices per cell, cells] indices of
    vertices, no cell flat (it could not be inverted); ``snapshots`` [steps, dofs];
    ``times`` [steps] increasing, present exactly for an evolution problem."""
    mesh = meta["mesh"]
    nv = _VERTICES[mesh]
    dim = nv - 1
    p = _array(arrays, "p", path, redo, "iuf", 2, "the mesh's vertices")
    t = _array(arrays, "t", path, redo, "iu", 2, "the mesh's cells")
    snaps = _array(arrays, "snapshots", path, redo, "iuf", 2, "the values at each step")
    if p.shape[0] != dim or p.shape[1] < nv:
        raise io.BadFile(f"{path}: p must hold {dim} coordinate(s) of at least {nv} vertices "
                         f"(a {mesh}), not an array of shape {p.shape}; {redo}")
    if not np.all(np.isfinite(p)):
        k = int(np.argmin(np.all(np.isfinite(p), axis=0)))
        raise io.BadFile(f"{path}: p must hold finite coordinates, not {p[:, k].tolist()} "
                         f"(vertex {k}); {redo}")
    if t.shape[0] != nv or t.shape[1] < 1:
        raise io.BadFile(f"{path}: t must hold {nv} vertices per cell (a {mesh}), not an "
                         f"array of shape {t.shape}; {redo}")
    if t.min() < 0 or t.max() >= p.shape[1]:
        raise io.BadFile(f"{path}: t names vertices {t.min()}..{t.max()}, but p has "
                         f"{p.shape[1]} (0..{p.shape[1] - 1}); {redo}")
    p = p.astype(np.float64)
    edges = np.stack([p[:, t[k]] - p[:, t[0]] for k in range(1, nv)], axis=0)  # d, d, ne
    size = np.abs(np.linalg.det(np.moveaxis(edges, -1, 0)))                     # ne
    if not np.all(size > 0):
        k = int(np.argmin(size))
        raise io.BadFile(f"{path}: cell {k} of the mesh is flat (its vertices "
                         f"{t[:, k].tolist()} span no {('length', 'area', 'volume')[dim - 1]})"
                         f"; {redo}")
    if snaps.shape[0] < 1:
        raise io.BadFile(f"{path}: snapshots holds no step; {redo}")
    times = None
    if meta["time"] is not None:
        times = _array(arrays, "times", path, redo, "iuf", 1, "the stored times")
        if len(times) != snaps.shape[0] or not np.all(np.isfinite(times)) or np.any(
                np.diff(times) <= 0):
            raise io.BadFile(f"{path}: times must be {snaps.shape[0]} finite, increasing "
                             f"times (one per snapshot), not {len(times)} value(s) from "
                             f"{times[:1].tolist()} to {times[-1:].tolist()}; {redo}")
    elif "times" in arrays:
        raise io.BadFile(f"{path}: times are stored but fem.json names no time coordinate "
                         f"(time: null); {redo}")
    return p, t, snaps.astype(np.float64), times


def _check_problem(meta: dict, problem, path: Path) -> None:
    """The saved solution must be of ``problem``: its coordinates, time and fields."""
    coords = tuple(c.name for c in problem.coords)
    time = problem.time_coord.name if problem.time_coord is not None else None
    if (tuple(meta["coords"]), meta["time"]) != (coords, time) or set(meta["fields"]) != set(
            problem.field_names):
        raise io.BadFile(f"{path}: a FEM solution of {', '.join(meta['fields'])} in "
                         f"({', '.join(meta['coords'])}), not of the problem "
                         f"{problem.name!r} ({', '.join(problem.field_names)} in "
                         f"({', '.join(coords)})); give a `pinn fem` run of that problem")


def _jsonable(x):
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)

