"""A reference solution read from a file of points and values."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from pinn.data import register


@register("reference")
class FileReference:
    """A reference from a file: an NPZ with ``points[N, d]`` and one array ``[N]`` per
    field, or a text table (:meth:`from_table`: PINNacle's and COMSOL's ``.dat``).

    A solution is scored at the file's own points (:func:`pinn.evaluate.score_at_points`:
    PINNacle's L2RE, ``rel_l2_ref_points`` in ``metrics.json``). ``ref(points[M, d]) ->
    {field: values[M]}`` serves the plots and the evaluation grid: multilinear
    interpolation when the file's points form a tensor grid, else the value at the
    nearest of the file's points (a k-d tree, built on first use: fast for 10^5 points
    and more, never a triangulation). At the file's own points it returns the stored
    values. The file is read once, when the reference is made (``allow_pickle=False``:
    the file is data, never code); a file with a NaN or infinite point or value is
    refused (a ``ValueError`` naming the file and the count: remove those rows).

        ref = FileReference("cavity_re100.npz")
        problem = dataclasses.replace(problem, reference=ref)
    """

    def __init__(self, path: str | os.PathLike):
        with np.load(path, allow_pickle=False) as z:
            if "points" not in z.files:
                raise ValueError(f"{path} has no 'points' array; a reference file holds "
                                 "points[N, d] and one array per field")
            points = z["points"]
            values = {k: z[k] for k in z.files if k != "points"}
        self._set(points, values, str(path))

    def _set(self, points, values: Mapping, path: str, finite: bool = True) -> None:
        self.points = np.asarray(points, dtype=np.float64)
        if self.points.ndim != 2:
            raise ValueError(f"{path}: reference points must be an [N, d] array, got shape "
                             f"{self.points.shape}")
        self.values = {str(k): np.asarray(v, dtype=np.float64).reshape(-1)
                       for k, v in dict(values).items()}
        for k, v in self.values.items():
            if v.shape[0] != self.points.shape[0]:
                raise ValueError(f"{path}: reference values of {k} have {v.shape[0]} entries "
                                 f"for {self.points.shape[0]} points")
        if finite:
            _check_finite(self.points, self.values, path)
        self.path = path
        self._interp: dict = {}

    @classmethod
    def from_table(cls, path: str | os.PathLike, coords, fields) -> FileReference:
        """The reference in a text table (``.dat``, ``.txt``, ``.csv``) for a problem on
        ``coords`` (names, time last if any) with ``fields`` (names).

        A header (a first line of names, or COMSOL's last ``%`` line) names the columns: the
        coordinates (any case), then the fields; COMSOL's time blocks ``u (1) @ t=0.5`` give
        one column per field and time level, expanded to space-time points (the time is
        the last coordinate). Field names that are not the problem's are taken in order.
        Without a header the columns are the coordinates, then the fields, in order."""
        from pinn.dsl.tables import read_text_table

        path = str(path)
        data, names = read_text_table(path)
        points, values = _table_columns(data, names, list(coords), list(fields), path)
        return cls.from_arrays(points, values, path)

    @classmethod
    def from_arrays(cls, points, values: Mapping, path: str | None = None, *,
                    finite: bool = True) -> FileReference:
        """The reference of ``points[N, d]`` and ``values`` ``{field: [N]}`` (``path``: the
        file they came from, for messages; ``finite``: refuse NaN or inf)."""
        ref = cls.__new__(cls)
        ref._set(points, values, "<arrays>" if path is None else str(path), finite)
        return ref

    def to_data(self) -> dict:
        """The points and values themselves (the file may move): the run format,
        :mod:`pinn.serialize`."""
        return {"points": self.points, "values": dict(self.values), "path": self.path}

    @classmethod
    def from_data(cls, arguments: Mapping) -> FileReference:
        # a run folder saved before non-finite references were refused still loads
        return cls.from_arrays(arguments["points"], arguments["values"], arguments.get("path"),
                               finite=False)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.values)

    @property
    def method(self) -> str:
        """How values between the file's points are taken: ``linear`` (a tensor grid) or
        ``nearest``."""
        self._build()
        return self._interp["method"]

    def _build(self) -> None:
        if self._interp:
            return
        from pinn.dsl.tables import Table, grid_axes

        grids = {}
        for k, v in self.values.items():
            found = grid_axes(self.points, v) if np.all(np.isfinite(v)) else None
            if found is None:
                grids = None
                break
            grids[k] = Table(found[0], found[1], "linear")
        if grids:
            self._interp.update(method="linear", tables=grids)
            return
        from scipy.spatial import cKDTree

        lo, hi = self.points.min(axis=0), self.points.max(axis=0)
        scale = np.where(hi > lo, hi - lo, 1.0)  # each axis on [0, 1]: no axis dominates
        self._interp.update(method="nearest", tree=cKDTree((self.points - lo) / scale),
                            lo=lo, scale=scale)

    def __call__(self, points) -> dict[str, np.ndarray]:
        p = np.asarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != self.points.shape[1]:
            raise ValueError(f"{self.path}: the reference has {self.points.shape[1]} "
                             f"coordinate(s); got points of shape {p.shape}")
        self._build()
        it = self._interp
        if it["method"] == "linear":
            cols = [p[:, j] for j in range(p.shape[1])]
            return {k: np.asarray(t(cols, xp=np), dtype=np.float64)
                    for k, t in it["tables"].items()}
        _, idx = it["tree"].query((p - it["lo"]) / it["scale"])
        return {k: v[idx] for k, v in self.values.items()}

    def __repr__(self) -> str:
        return f"FileReference({self.path!r}, fields={', '.join(self.values)})"


def _check_finite(points: np.ndarray, values: Mapping, path: str) -> None:
    """ValueError naming ``path`` and the count when a point or a value is NaN or inf."""
    n = len(points)
    bad = int(np.count_nonzero(~np.isfinite(points).all(axis=1)))
    if bad:
        raise ValueError(f"{path}: {bad} of {n} points are not finite (NaN or inf in a "
                         "coordinate); remove those rows")
    for k, v in values.items():
        bad = int(np.count_nonzero(~np.isfinite(v)))
        if bad:
            raise ValueError(f"{path}: {bad} of {n} values of {k} are not finite (NaN or "
                             "inf); remove those rows")


def _table_columns(data: np.ndarray, names, coords: list[str], fields: list[str], path: str):
    """``(points[N, d], {field: values[N]})`` from a table's numbers and header names."""
    import re

    ncols = data.shape[1]
    if names is None:
        want = len(coords) + len(fields)
        if ncols != want:
            raise ValueError(
                f"{path} has {ncols} columns and no header; the columns must be the "
                f"coordinates then the fields ({', '.join(coords + fields)}: {want}), or "
                "give a header line naming them")
        return data[:, :len(coords)], {f: data[:, len(coords) + i] for i, f in enumerate(fields)}
    lower = {c.lower(): c for c in coords}
    timed = [re.search(r"@\s*t\s*=\s*([-+0-9.eE]+)", n) for n in names]
    space = []
    for j, n in enumerate(names):
        if timed[j] is None and n.strip().lower() in lower:
            space.append(j)
    rest = [j for j in range(ncols) if j not in space]

    def field_of(n: str) -> str:
        return re.split(r"[\s(@\[]", n.strip(), maxsplit=1)[0]

    found = list(dict.fromkeys(field_of(names[j]) for j in rest))
    if all(f in fields for f in found):
        rename = {f: f for f in found}
    elif len(found) == len(fields):
        rename = dict(zip(found, fields, strict=True))
    else:
        raise ValueError(f"{path}: the columns name the fields {', '.join(found)}; the problem "
                         f"has {', '.join(fields)}")
    if any(timed[j] is not None for j in rest):  # COMSOL time blocks: u (1) @ t=0.5
        if any(timed[j] is None for j in rest):
            raise ValueError(f"{path}: some value columns have a time (@ t=...) and some do "
                             "not")
        want = coords[:-1]
        if len(space) != len(want):
            raise ValueError(f"{path}: {len(space)} coordinate column(s) "
                             f"({', '.join(names[j] for j in space)}) before the time "
                             f"blocks; the problem's space is {', '.join(want) or 'none'}")
        order = [lower[names[j].strip().lower()] for j in space]
        xs = data[:, [space[order.index(c)] for c in want]]
        times = list(dict.fromkeys(float(timed[j].group(1)) for j in rest))
        cols = {(rename[field_of(names[j])], float(timed[j].group(1))): j for j in rest}
        pts, vals = [], {f: [] for f in dict.fromkeys(rename.values())}
        for t in times:
            pts.append(np.concatenate([xs, np.full((len(xs), 1), t)], axis=1))
            for f in vals:
                j = cols.get((f, t))
                if j is None:
                    raise ValueError(f"{path}: no column for {f} at t={t:g}")
                vals[f].append(data[:, j])
        return np.concatenate(pts), {f: np.concatenate(v) for f, v in vals.items()}
    if len(space) != len(coords):
        missing = [c for c in coords if c.lower() not in
                   {names[j].strip().lower() for j in space}]
        raise ValueError(f"{path}: no column for the coordinate(s) {', '.join(missing)} "
                         f"(columns: {', '.join(names)})")
    order = {lower[names[j].strip().lower()]: j for j in space}
    points = data[:, [order[c] for c in coords]]
    return points, {rename[field_of(names[j])]: data[:, j] for j in rest}
