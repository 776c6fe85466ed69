"""Coefficients given as data: values on a tensor grid, interpolated.

A :class:`Table` holds values on a tensor grid (one sorted axis per argument) and
evaluates them, or their derivatives, at any points, with NumPy or jax.numpy (so the
same table serves the PINN residual, the FEM baseline and the checks):

* ``linear``: multilinear interpolation. Its first derivative along an axis is the
  slope of the grid cell (piecewise constant, what autodiff of the formula gives);
  second derivatives along one axis are zero, mixed ones (``k_xy``) are the cell's
  bilinear twist.
* ``nearest``: the value of the nearest grid node; every derivative is zero.

Outside the grid the value of the nearest edge is used (constant extension), with
zero derivative. A table whose points are scattered (not a tensor grid) is supported
with ``nearest`` only: :func:`table_from_points` resamples it once on a regular grid
(``resample`` nodes per axis) by nearest neighbour; ``linear`` on scattered points is
refused with the fix (resample the data on a grid).

:func:`read_table` reads a text table (``.dat``, ``.txt``, ``.csv``: whitespace or
comma separated, ``%`` and ``#`` comment lines, an optional header line of names) or
an ``.npz`` file (``points[N, d]`` and ``values[N]``).
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

__all__ = ["Table", "TableError", "table_from_points", "read_table", "grid_axes"]

METHODS = ("linear", "nearest")


class TableError(ValueError):
    """A table's data cannot be used (wrong shape, scattered points with ``linear``)."""


class Table:
    """Values on the tensor grid ``axes`` (each sorted, strictly increasing, at least 2
    nodes), ``values.shape == tuple(len(a) for a in axes)``, interpolated by ``method``.

    Tables compare and hash by content, so expressions holding equal tables are equal.
    """

    def __init__(self, axes, values, method: str = "linear", source: str | None = None):
        if method not in METHODS:
            raise TableError(f"unknown interpolation {method!r}; choose linear or nearest")
        axes = tuple(np.asarray(a, dtype=np.float64).reshape(-1) for a in axes)
        values = np.asarray(values, dtype=np.float64)
        if not axes:
            raise TableError("a table needs at least one axis")
        if values.shape != tuple(len(a) for a in axes):
            raise TableError(f"table values have shape {values.shape}; the axes need "
                             f"{tuple(len(a) for a in axes)}")
        for i, a in enumerate(axes):
            if len(a) < 2:
                raise TableError(f"axis {i} of the table has {len(a)} node(s); it needs two "
                                 "or more")
            if not np.all(np.diff(a) > 0):
                raise TableError(f"axis {i} of the table is not strictly increasing")
        if not np.all(np.isfinite(values)):
            raise TableError("the table holds values that are not finite (NaN or inf)")
        self.axes, self.values, self.method = axes, values, method
        self.source = source
        # uniform axes: the cell index by floor((x - a0) / h), a derivative-free primitive
        # that Taylor mode passes (searchsorted lowers to a scan, which it does not)
        self._uniform = tuple(bool(np.allclose(np.diff(a), (a[-1] - a[0]) / (len(a) - 1),
                                               rtol=1e-9, atol=0)) for a in axes)
        h = hashlib.sha1(method.encode())
        for a in axes:
            h.update(a.tobytes())
        h.update(values.tobytes())
        self.digest = h.hexdigest()

    @property
    def dim(self) -> int:
        return len(self.axes)

    def __eq__(self, other) -> bool:
        return isinstance(other, Table) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        shape = "x".join(str(len(a)) for a in self.axes)
        where = f" from {os.path.basename(self.source)}" if self.source else ""
        return f"Table({shape} {self.method}{where})"

    def to_data(self) -> dict:
        return {"axes": list(self.axes), "values": self.values, "method": self.method,
                "source": self.source}

    @classmethod
    def from_data(cls, d) -> Table:
        return cls(d["axes"], d["values"], d.get("method", "linear"), d.get("source"))

    def __call__(self, cols, deriv=None, xp=None):
        """The table (or, with ``deriv`` = the derivative order per axis, its derivative)
        at the points whose coordinates are ``cols`` (one array per axis, broadcast
        together). ``xp``: ``numpy`` or ``jax.numpy`` (the default)."""
        if xp is None:
            import jax.numpy as xp
        if len(cols) != self.dim:
            raise TableError(f"a table of {self.dim} argument(s) was given {len(cols)}")
        deriv = tuple(deriv or (0,) * self.dim)
        cols = xp.broadcast_arrays(*[xp.asarray(c) for c in cols])
        if self.method == "nearest" or any(k > 1 for k in deriv):
            if any(deriv):  # piecewise constant (or linear along each axis): zero
                return xp.zeros(cols[0].shape, dtype=xp.result_type(cols[0], float))
        idx, weights = [], []
        for a, x, k, uniform in zip(self.axes, cols, deriv, self._uniform, strict=True):
            ax = xp.asarray(a, dtype=xp.result_type(x, float))
            n = len(a)
            xc = xp.clip(x, ax[0], ax[-1])
            if uniform:
                i = xp.floor((xc - a[0]) * ((n - 1) / (a[-1] - a[0])))
                i = xp.clip(i.astype(np.int32), 0, n - 2)
            elif xp is np:
                i = np.clip(np.searchsorted(a, xc, side="right") - 1, 0, n - 2)
            else:  # count the inner nodes at or left of x: comparisons, no scan (Taylor
                # mode); memory N x n, fine for the non-uniform tables of modest size
                i = xp.sum((xc[..., None] >= ax[1:-1]).astype(np.int32), axis=-1)
            lo, hi = ax[i], ax[i + 1]
            t = (xc - lo) / (hi - lo)
            if self.method == "nearest":
                idx.append((xp.where(t >= 0.5, i + 1, i),))
                weights.append((None,))
                continue
            idx.append((i, i + 1))
            if k == 0:
                weights.append((1 - t, t))
            else:  # the cell's slope inside the grid, zero outside (constant extension)
                inside = (x >= ax[0]) & (x <= ax[-1])
                s = xp.where(inside, 1.0 / (hi - lo), 0.0)
                weights.append((-s, s))
        vals = xp.asarray(self.values, dtype=xp.result_type(cols[0], float))
        if self.method == "nearest":
            return vals[tuple(ix[0] for ix in idx)]
        out = 0.0
        for corner in np.ndindex(*(2,) * self.dim):
            w = 1.0
            for d, b in enumerate(corner):
                w = w * weights[d][b]
            out = out + w * vals[tuple(idx[d][b] for d, b in enumerate(corner))]
        return out


def grid_axes(points: np.ndarray, values: np.ndarray, *, decimals: int = 10):
    """``(axes, grid_values)`` when ``points[N, d]`` are the nodes of a tensor grid (each
    node once, in any order), else None."""
    points = np.asarray(points, dtype=np.float64)
    n, d = points.shape
    keys, axes = [], []
    for j in range(d):  # nodes equal to ``decimals`` places are one; the axis keeps a value
        col = np.round(points[:, j], decimals)
        _, first, inv = np.unique(col, return_index=True, return_inverse=True)
        axes.append(points[first, j])
        keys.append(inv.reshape(-1))
    shape = tuple(len(a) for a in axes)
    if int(np.prod(shape)) != n or any(s < 2 for s in shape):
        return None
    flat = np.ravel_multi_index(tuple(keys), shape)
    if len(np.unique(flat)) != n:
        return None
    grid = np.empty(n)
    grid[flat] = np.asarray(values, dtype=np.float64).reshape(-1)
    return tuple(axes), grid.reshape(shape)


def table_from_points(points, values, method: str = "linear", *, resample: int | None = None,
                      source: str | None = None) -> Table:
    """A :class:`Table` from ``points[N, d]`` and ``values[N]``: the grid itself when the
    points form a tensor grid; scattered points only with ``nearest``, resampled on a
    regular grid of ``resample`` nodes per axis (default ``ceil(N**(1/d))``, at least 2,
    at most 1024) over their bounding box."""
    where = f"{source}: " if source else ""
    if method not in METHODS:
        raise TableError(f"{where}unknown interpolation {method!r}; choose linear or nearest")
    points = np.asarray(points, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if points.ndim == 1:
        points = points[:, None]
    if points.ndim != 2 or points.shape[0] != values.shape[0]:
        raise TableError(f"{where}expected points[N, d] and values[N], got shapes "
                         f"{points.shape} and {values.shape}")
    if not (np.all(np.isfinite(points)) and np.all(np.isfinite(values))):
        raise TableError(f"{where}the table holds numbers that are not finite (NaN or inf)")
    found = grid_axes(points, values)
    if found is not None:
        return Table(found[0], found[1], method, source)
    n, d = points.shape
    if method == "linear":
        raise TableError(
            f"{where}the {n} points do not form a tensor grid (each combination of the "
            "distinct coordinate values exactly once), and linear interpolation is done on "
            "grids only; use interpolation: nearest (resampled on a regular grid), or "
            "resample the data on a grid first")
    from scipy.spatial import cKDTree

    m = resample or min(1024, max(2, int(np.ceil(n ** (1.0 / d)))))
    lo, hi = points.min(axis=0), points.max(axis=0)
    if np.any(hi <= lo):
        raise TableError(f"{where}the points do not span every coordinate (a flat table); "
                         "drop the constant column")
    axes = [np.linspace(lo[j], hi[j], m) for j in range(d)]
    mesh = np.stack([g.reshape(-1) for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    # scale each axis to [0, 1] so that the nearest node does not favour one coordinate
    scale = hi - lo
    _, nearest = cKDTree((points - lo) / scale).query((mesh - lo) / scale)
    return Table(axes, values[nearest].reshape((m,) * d), "nearest", source)


def read_table(path: str | os.PathLike) -> tuple[np.ndarray, list[str] | None]:
    """The numbers of a table file as ``array[N, columns]`` and the header's column names
    (or None): text (``%``/``#`` comments, whitespace or commas, an optional header line)
    or ``.npz`` (``points[N, d]`` and ``values[N]``; names ``None``)."""
    path = str(path)
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            if "points" not in z.files or "values" not in z.files:
                raise TableError(f"{path} holds {', '.join(z.files) or 'no arrays'}; a table "
                                 "file holds points[N, d] and values[N]")
            pts = np.asarray(z["points"], dtype=np.float64)
            vals = np.asarray(z["values"], dtype=np.float64).reshape(-1, 1)
        if pts.ndim == 1:
            pts = pts[:, None]
        if pts.ndim != 2 or pts.shape[0] != vals.shape[0]:
            raise TableError(f"{path}: points must be [N, d] with one value per point; got "
                             f"{pts.shape} and {vals.shape[0]} values")
        return np.concatenate([pts, vals], axis=1), None
    return read_text_table(path)


def read_text_table(path: str) -> tuple[np.ndarray, list[str] | None]:
    """A text table: ``array[N, columns]`` and the header's names (None without one).

    The header is the first line that is not a number row, or the last ``%`` comment line
    (COMSOL's and PINNacle's ``% X  Y  u (1) @ t=0 ...``)."""
    names: list[str] | None = None
    last_comment = None
    rows_start = 0
    sep = "," if path.endswith(".csv") else None
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = []
        for i, line in enumerate(fh):
            s = line.strip()
            if not s or s[0] in "%#":
                if s[:1] in "%#" and len(s) > 1:
                    last_comment = s[1:].strip()
                continue
            head.append((i, s))
            break
    if head:
        i, s = head[0]
        try:
            [float(v) for v in (s.split(sep) if sep else s.replace(",", " ").split())]
            rows_start = i
        except ValueError:
            names = [v.strip() for v in (s.split(sep) if sep else s.replace(",", " ").split())]
            rows_start = i + 1
    if names is None and last_comment is not None:
        names = _comment_names(last_comment)
    try:
        data = np.loadtxt(path, comments=("%", "#"), delimiter=sep, skiprows=rows_start,
                          ndmin=2, dtype=np.float64)
    except ValueError as exc:
        raise TableError(f"{path} is not a table of numbers ({str(exc).splitlines()[0]})"
                         ) from None
    if data.size == 0:
        raise TableError(f"{path} holds no rows of numbers")
    if names is not None and len(names) != data.shape[1]:
        names = None  # a comment that is not a header
    return data, names


def _comment_names(text: str) -> list[str]:
    """Column names of a COMSOL header (``X   Y   u (1) @ t=0.5``): split on runs of two or
    more spaces (names hold single spaces)."""
    import re

    return [p.strip() for p in re.split(r"\s{2,}|\t", text) if p.strip()]
