"""A reference solution read from a file of points and values."""

from __future__ import annotations

import os

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
            self.points = np.asarray(z["points"], dtype=np.float64)
            self.values = {k: np.asarray(z[k], dtype=np.float64) for k in z.files
                           if k != "points"}
        self.path = str(path)
        self._interp: dict = {}

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
