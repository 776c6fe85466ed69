"""A run's fields for ParaView, xarray and spreadsheets: VTU, XDMF, NetCDF, CSV.

:class:`Fields` holds values at the points of a mesh, at one time or at several: the
prediction of each field and, where the problem has a truth, ``<field>_exact`` (or
``<field>_reference``) and ``<field>_error`` (prediction minus truth; a field fixed only up
to a constant is compared after removing the mean difference, as the scores are). Two
sources:

- :func:`from_score`: a solution scored on the evaluation grid (a PINN, or FEM at a chosen
  resolution): the grid's space nodes, with line / quad / hexahedron cells joining nodes
  inside the domain (nodes outside it hold NaN);
- :func:`from_fem`: a FEM solution on its own mesh: values at the mesh vertices at every
  stored time step.

:func:`write` writes one of :data:`FORMATS`: ``vtu`` (one ``.vtu``; a time series is a
``.pvd`` collection of one ``.vtu`` per time, in the folder ``<name>_vtu`` beside it),
``xdmf`` (one ``.xdmf`` time series with its data inline as XML,
:class:`meshio.xdmf.TimeSeriesWriter`; a steady field is a series of one time), ``csv``
(one row per point and time) and ``netcdf`` (``.nc`` through :func:`to_xarray`). meshio
and xarray (the extra ``pinn[fields]``) are imported only inside the writers.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from pinn.io import WriteError, make_folder, write_bytes, write_values

__all__ = ["Fields", "FORMATS", "SUFFIXES", "from_score", "from_fem", "to_xarray", "write",
           "target", "check_writable", "series_folder", "require", "describe"]

FORMATS = ("vtu", "xdmf", "csv", "netcdf")
#: the file suffixes each format writes (a VTU time series is a ``.pvd`` collection)
SUFFIXES = {"vtu": (".vtu", ".pvd"), "xdmf": (".xdmf",), "csv": (".csv",),
            "netcdf": (".nc",)}
_NEEDS = {"vtu": "meshio", "xdmf": "meshio", "netcdf": "xarray"}
_MESH_CELLS = {"MeshLine1": "line", "MeshTri1": "triangle", "MeshTet1": "tetra"}


@dataclass(frozen=True)
class Fields:
    """Values at the points of a mesh, at one time or several.

    ``space``: the space coordinates' names; ``points[P, d]`` the mesh's points;
    ``cells``: meshio cell blocks ``(type, connectivity)``; ``values[name] -> [T, P]``
    (``T`` = 1 for a steady field); ``time``/``times``: the time coordinate's name and
    its values (None when steady); ``axes``: the space axes of a structured grid (``P`` is
    the product of their lengths, the last axis fastest), None on an unstructured mesh;
    ``attrs``: what the values are (problem, method, truth).
    """

    space: tuple[str, ...]
    points: np.ndarray
    cells: tuple[tuple[str, np.ndarray], ...]
    values: dict[str, np.ndarray]
    time: str | None = None
    times: np.ndarray | None = None
    axes: tuple[np.ndarray, ...] | None = None
    attrs: dict = field(default_factory=dict)

    @property
    def is_series(self) -> bool:
        """Whether the values are a time series (an evolution problem)."""
        return self.times is not None

    @property
    def n_times(self) -> int:
        """The number of times (1 when steady)."""
        return 1 if self.times is None else len(self.times)

    def at(self, k: int) -> dict[str, np.ndarray]:
        """Every value at the ``k``-th time, ``[P]`` each."""
        return {n: v[k] for n, v in self.values.items()}


# -- building ----------------------------------------------------------------------


def _grid_cells(axes, inside: np.ndarray) -> tuple[tuple[str, np.ndarray], ...]:
    """Cells of a structured grid (node index: C order) whose corners are all inside (none
    beyond three dimensions)."""
    shape = tuple(len(a) for a in axes)
    index = np.arange(int(np.prod(shape))).reshape(shape)
    if len(shape) == 1:
        kind, corners = "line", [index[:-1], index[1:]]
    elif len(shape) == 2:
        kind = "quad"  # counter-clockwise: VTK's order
        corners = [index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]]
    elif len(shape) == 3:
        kind = "hexahedron"
        s0, s1 = (slice(None, -1), slice(1, None))
        corners = [index[a, b, c] for c in (s0, s1)
                   for a, b in ((s0, s0), (s1, s0), (s1, s1), (s0, s1))]
    else:  # no VTK cell beyond 3-D: points and values only (CSV, NetCDF)
        return ()
    conn = np.stack([c.reshape(-1) for c in corners], axis=1)
    conn = conn[inside[conn].all(axis=1)]
    return ((kind, conn.astype(np.int64)),)


def _series(full: np.ndarray, has_time: bool) -> np.ndarray:
    """An array on the grid's shape (time last) -> ``[T, P]``."""
    return full.reshape(-1, full.shape[-1]).T if has_time else full.reshape(1, -1)


def from_score(score, *, problem: str = "", method: str = "PINN") -> Fields:
    """The fields of a :class:`pinn.evaluate.Score` on its evaluation grid: the prediction,
    and the truth and the error where the score has a truth."""
    grid = score.grid
    sd, has_time = grid.space_dim, grid.has_time
    axes = tuple(np.asarray(a, dtype=np.float64) for a in grid.axes[:sd])
    mesh = np.meshgrid(*axes, indexing="ij")
    points = np.stack([m.reshape(-1) for m in mesh], axis=1)
    mask = grid.mask.reshape(grid.shape)
    inside = (mask[..., 0] if has_time else mask).reshape(-1)
    values: dict[str, np.ndarray] = {}
    kind = None if score.truth is None else score.truth.kind
    aligned = score.aligned()
    for name, pred in score.pred.items():
        values[name] = _series(grid.full(pred), has_time)
        if kind is not None and name in score.truth.values:
            t = score.truth.values[name]
            values[f"{name}_{kind}"] = _series(grid.full(t), has_time)
            values[f"{name}_error"] = _series(grid.full(aligned[name] - t), has_time)
    attrs = {"problem": problem, "method": method, "compared_with": kind or "none"}
    if score.shift:
        attrs["up_to_constant"] = ", ".join(score.shift)
    if getattr(score, "params", None):
        attrs.update({f"param_{k}": float(v) for k, v in score.params.items()})
    return Fields(tuple(grid.names[:sd]), points, _grid_cells(axes, inside), values,
                  time=grid.names[-1] if has_time else None,
                  times=np.asarray(grid.axes[-1], dtype=np.float64) if has_time else None,
                  axes=axes, attrs=attrs)


def from_fem(sol, problem=None, *, name: str = "") -> Fields:
    """The fields of a :class:`pinn.fem.FEMSolution` at its mesh vertices, at every stored
    step; with ``problem`` (the one it solved) also its truth and the error there."""
    from pinn import evaluate as ev

    mesh = sol.mesh
    kind = _MESH_CELLS.get(type(mesh).__name__)
    if kind is None:
        raise ValueError(f"a {type(mesh).__name__} cannot be written (line, triangle or "
                         "tetrahedron meshes)")
    points = np.asarray(mesh.p, dtype=np.float64).T
    sd = points.shape[1]
    space = tuple(c for c in sol.coords if c != sol.time)[:sd]
    times = None if sol.times is None else np.asarray(sol.times, dtype=np.float64)
    n_t = 1 if times is None else len(times)
    values: dict[str, np.ndarray] = {f: sol.vertex_values(f) for f in sol.fields}
    truth = None
    if problem is not None and ev.has_truth(problem):
        cols = [np.tile(points, (n_t, 1))]
        if times is not None:
            cols.append(np.repeat(times, len(points))[:, None])
        truth = ev.truth(problem, np.concatenate(cols, axis=1))
    shift = tuple(sol.up_to_constant)
    if problem is not None:
        shift += tuple(f for f in ev.up_to_constant(problem) if f not in shift)
    out: dict[str, np.ndarray] = {}
    for f, v in values.items():
        out[f] = v
        if truth is not None and f in truth.values:
            t = truth.values[f].reshape(n_t, -1)
            diff = v - t
            if f in shift:  # the mean at each stored time (one row each)
                at = None if times is None else np.repeat(times, diff.shape[-1])
                diff = diff - ev.free_part(diff, at).reshape(diff.shape)
            out[f"{f}_{truth.kind}"] = t
            out[f"{f}_error"] = diff
    element = sol.info.get("element") or ""
    if isinstance(element, Mapping):
        element = ", ".join(f"{k}: {v}" for k, v in element.items())
    attrs = {"problem": name, "method": "FEM",
             "compared_with": "none" if truth is None else truth.kind,
             "element": str(element), "dofs": int(sol.dofs)}
    if shift:
        attrs["up_to_constant"] = ", ".join(shift)
    return Fields(space, points, ((kind, np.asarray(mesh.t.T, dtype=np.int64)),), out,
                  time=sol.time if times is not None else None, times=times, attrs=attrs)


# -- xarray -------------------------------------------------------------------------


def _long_name(var: str, fields: Fields) -> str:
    method = fields.attrs.get("method", "")
    for suffix, what in (("_error", "error (prediction - {})"), ("_exact", "exact solution"),
                         ("_reference", "reference solution")):
        base = var.removesuffix(suffix)
        if base != var and base in fields.values:
            return f"{base}: " + what.format(fields.attrs.get("compared_with", "truth"))
    return f"{var}: {method}".rstrip(": ")


def to_xarray(fields: Fields):
    """An :class:`xarray.Dataset` of ``fields``: on a grid, dimensions named like the
    coordinates (space, then time) with the axes as coordinates; on a mesh, a ``node``
    dimension (and time) with the vertex coordinates as ``node`` coordinates and the cells
    as the integer variable ``cells[cell, corner]``. One variable per value."""
    import xarray as xr

    has_t = fields.is_series
    tdims = (fields.time,) if has_t else ()
    if fields.axes is not None:
        shape = tuple(len(a) for a in fields.axes)
        dims = (*fields.space, *tdims)
        coords = {n: (n, a) for n, a in zip(fields.space, fields.axes, strict=True)}

        def arrange(v):
            v = v.reshape((fields.n_times, *shape))
            return np.moveaxis(v, 0, -1) if has_t else v[0]
    else:
        dims = ("node", *tdims)
        coords = {n: ("node", fields.points[:, i]) for i, n in enumerate(fields.space)}

        def arrange(v):
            return v.T if has_t else v[0]
    if has_t:
        coords[fields.time] = (fields.time, fields.times)
    data = {k: (dims, arrange(np.asarray(v, dtype=np.float64)),
                {"long_name": _long_name(k, fields)}) for k, v in fields.values.items()}
    if fields.axes is None:
        kind, conn = fields.cells[0]
        data["cells"] = (("cell", "corner"), conn.astype(np.int32), {"cell_type": kind})
    attrs = {k: v for k, v in fields.attrs.items() if v is not None}
    return xr.Dataset(data, coords=coords, attrs=attrs)


# -- writing ------------------------------------------------------------------------


def require(fmt: str) -> None:
    """Raise ``ModuleNotFoundError`` naming the extra when ``fmt`` needs a missing package."""
    mod = _NEEDS.get(fmt)
    if mod is None:
        return
    import importlib.util

    if importlib.util.find_spec(mod) is None:
        raise ModuleNotFoundError(f"--format {fmt} needs {mod}: pip install 'pinn[fields]' "
                                  f"(or pip install {mod})")


def target(path: str | os.PathLike | None, fmt: str, *, default_dir: str | os.PathLike,
           stem: str, series: bool) -> Path:
    """The file ``fmt`` writes: ``path`` itself (its suffix must be the format's), inside
    ``path`` when it is a folder (an existing one, or a name without a suffix), else
    ``default_dir``. A VTU time series is a ``.pvd`` collection."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    suffix = (".pvd" if series else ".vtu") if fmt == "vtu" else SUFFIXES[fmt][0]
    if path is None:
        return Path(default_dir) / f"{stem}{suffix}"
    p = Path(path)
    if p.is_dir() or not p.suffix:
        return p / f"{stem}{suffix}"
    if p.suffix.lower() not in SUFFIXES[fmt]:
        raise ValueError(f"--out {p}: a {fmt} file ends in "
                         f"{' or '.join(SUFFIXES[fmt])}; name it {p.with_suffix(suffix).name}")
    if fmt == "vtu" and series and p.suffix.lower() == ".vtu":
        raise ValueError(f"--out {p}: these fields are a time series, written as a ParaView "
                         f"collection of VTU files: name it {p.with_suffix('.pvd').name}")
    return p


def series_folder(path: str | os.PathLike) -> Path:
    """The folder holding the VTU files of the ``.pvd`` collection ``path``."""
    p = Path(path)
    return p.with_name(f"{p.stem}_vtu")


def check_writable(path: str | os.PathLike, elsewhere: str = "write it elsewhere") -> Path:
    """Raise ``ValueError`` unless ``path`` can be written: its nearest existing folder is a
    writable folder, and (a ``.pvd`` collection) its VTU folder holds nothing but an
    earlier export's VTU files. Nothing is created here. The message names ``path`` and
    ends with ``elsewhere``: how to write it elsewhere (``pinn export-fields``: its
    ``--out``)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{p}: a folder is in the way of the file; remove it or {elsewhere}")
    if p.suffix.lower() == ".pvd":
        folder = series_folder(p)
        mine = re.compile(re.escape(p.stem) + r"_\d{4}\.vtu")
        if folder.exists() and (not folder.is_dir() or any(
                not mine.fullmatch(q.name) for q in folder.iterdir())):
            raise ValueError(f"{p}: {folder} (where its VTU files go) holds other files; "
                             f"move them or {elsewhere}")
    parent = p.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{p}: {parent} is a file, not a folder; {elsewhere}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{p}: {parent} is not writable; make it writable or {elsewhere}")
    return p


def _points3(points: np.ndarray) -> np.ndarray:
    """VTK's points have three coordinates."""
    out = np.zeros((len(points), 3))
    out[:, :points.shape[1]] = points
    return out


def _cells(fields: Fields):
    import meshio

    return [meshio.CellBlock(kind, conn) for kind, conn in fields.cells]


def _write_vtu(fields: Fields, path: Path, tmp: Path) -> list[Path]:
    import meshio

    pts, cells = _points3(fields.points), _cells(fields)
    if path.suffix.lower() == ".vtu":
        meshio.write(tmp / path.name, meshio.Mesh(pts, cells, point_data=fields.at(0)),
                     file_format="vtu")
        return [path]
    stem, folder = path.stem, series_folder(path).name
    (tmp / folder).mkdir()
    times = fields.times if fields.is_series else np.zeros(1)
    rows = []
    for k, t in enumerate(times):
        name = f"{folder}/{stem}_{k:04d}.vtu"
        meshio.write(tmp / name, meshio.Mesh(pts, cells, point_data=fields.at(k)),
                     file_format="vtu")
        rows.append(f'    <DataSet timestep="{float(t)!r}" group="" part="0" '
                    f'file={quoteattr(name)}/>')
    text = ('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" '
            'byte_order="LittleEndian">\n  <Collection>\n' + "\n".join(rows)
            + "\n  </Collection>\n</VTKFile>\n")
    (tmp / path.name).write_text(text, encoding="utf-8")
    return [path, series_folder(path)]


def _write_xdmf(fields: Fields, path: Path, tmp: Path) -> list[Path]:
    import meshio

    times = fields.times if fields.is_series else np.zeros(1)
    with meshio.xdmf.TimeSeriesWriter(tmp / path.name, data_format="XML") as w:
        w.write_points_cells(_points3(fields.points), _cells(fields))
        for k, t in enumerate(times):
            w.write_data(float(t), point_data=fields.at(k))
    return [path]


def _rows(fields: Fields) -> tuple[np.ndarray, list[str], dict[str, np.ndarray]]:
    """One row per point (inside the domain) and time: coordinates, then the values."""
    keep = np.ones(len(fields.points), dtype=bool)
    if fields.axes is not None:  # grid nodes outside the domain hold no values
        keep = np.isfinite(next(iter(fields.values.values()))).any(axis=0)
    pts = fields.points[keep]
    names = list(fields.space)
    n_t = fields.n_times
    cols = [np.tile(pts, (n_t, 1))]
    if fields.is_series:
        names.append(fields.time)
        cols.append(np.repeat(fields.times, len(pts))[:, None])
    values = {k: v[:, keep].reshape(-1) for k, v in fields.values.items()}
    return np.concatenate(cols, axis=1), names, values


def write(fields: Fields, path: str | os.PathLike, fmt: str) -> list[Path]:
    """Write ``fields`` as ``fmt`` (one of :data:`FORMATS`) to ``path`` (see
    :func:`target`); returns the paths written (a VTU series: the ``.pvd`` and its
    folder). Files appear complete or not at all: they are written into a temporary folder
    beside ``path`` and moved into place."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    path = check_writable(path)
    if fmt == "csv":
        pts, names, values = _rows(fields)
        write_values(path, pts, names, values, digits=17)
        return [path]
    if fmt == "netcdf":
        data = to_xarray(fields).to_netcdf(engine="scipy")  # NetCDF 3, as bytes
        write_bytes(path, bytes(data))
        return [path]
    if not fields.cells or fields.points.shape[1] > 3:
        raise ValueError(f"--format {fmt}: VTK and XDMF meshes have 1 to 3 space dimensions, "
                         f"these fields have {fields.points.shape[1]} "
                         f"({', '.join(fields.space)}); use --format csv or netcdf")
    require(fmt)
    kept = (f"{path.name} keeps its previous contents" if os.path.lexists(path)
            else f"{path.name} was not created")
    make_folder(path.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    except OSError as exc:
        raise WriteError(path, exc, kept) from exc
    try:
        written = (_write_vtu if fmt == "vtu" else _write_xdmf)(fields, path, tmp)
        for p in written:
            if p.is_dir():
                shutil.rmtree(p)
            os.replace(tmp / p.name, p)
    except OSError as exc:
        raise WriteError(path, exc, kept) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written


def describe(fields: Fields) -> str:
    """``"N points, T times: u, u_exact, u_error"``."""
    times = f", {fields.n_times} times" if fields.is_series else ""
    return f"{len(fields.points)} points{times}: {', '.join(fields.values)}"

