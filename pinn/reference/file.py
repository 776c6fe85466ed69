"""A reference solution read from a file of points and values."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np


class FileReference:
    """A reference from an NPZ file: ``points[N, d]`` and one array ``[N]`` per field.

    ``ref(points[M, d]) -> {field: values[M]}`` interpolates linearly inside
    the convex hull of the file's points and takes the nearest value outside
    it; at the file's own points it returns the stored values.  The file is
    read once, when the reference is made (``allow_pickle=False``: the file is
    data, never code).

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

    def _set(self, points, values: Mapping, path: str) -> None:
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
        self.path = path
        self._interp: dict = {}

    @classmethod
    def from_arrays(cls, points, values: Mapping, path: str | None = None) -> FileReference:
        """The reference of ``points[N, d]`` and ``values`` ``{field: [N]}`` (``path``: the
        file they came from, for messages)."""
        ref = cls.__new__(cls)
        ref._set(points, values, "<arrays>" if path is None else str(path))
        return ref

    def to_data(self) -> dict:
        """The points and values themselves (the file may move): the run format,
        :mod:`pinn.serialize`."""
        return {"points": self.points, "values": dict(self.values), "path": self.path}

    @classmethod
    def from_data(cls, arguments: Mapping) -> FileReference:
        return cls.from_arrays(arguments["points"], arguments["values"], arguments.get("path"))

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.values)

    def __call__(self, points) -> dict[str, np.ndarray]:
        from scipy.interpolate import LinearNDInterpolator, NearestNDInterpolator

        p = np.asarray(points, dtype=np.float64)
        out = {}
        for k, v in self.values.items():
            if k not in self._interp:
                self._interp[k] = (LinearNDInterpolator(self.points, v),
                                   NearestNDInterpolator(self.points, v))
            lin, near = self._interp[k]
            val = lin(p)
            bad = ~np.isfinite(val)
            if bad.any():
                val[bad] = near(p[bad])
            out[k] = val
        return out

    def __repr__(self) -> str:
        return f"FileReference({self.path!r}, fields={', '.join(self.values)})"
