"""The evaluation grid: a regular grid over the domain's bounding box (and time).

Errors and plots use the points of the grid that lie inside the domain; the
mask keeps the rest out (an L-shape plots as an L).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Grid:
    """``axes[i]`` are the grid values of coordinate ``names[i]``; ``points[N, d]``
    lists every grid point (C order, last coordinate fastest); ``mask[N]`` says
    which lie inside the domain."""

    names: tuple[str, ...]
    axes: tuple[np.ndarray, ...]
    points: np.ndarray
    mask: np.ndarray
    space_dim: int
    has_time: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def inside(self) -> np.ndarray:
        return self.points[self.mask]

    def full(self, values_inside: np.ndarray) -> np.ndarray:
        """Values at the inside points -> an array of ``shape`` with NaN outside."""
        out = np.full(self.points.shape[0], np.nan)
        out[self.mask] = np.asarray(values_inside, dtype=np.float64).reshape(-1)
        return out.reshape(self.shape)


def default_resolution(space_dim: int, has_time: bool, n: int) -> list[int]:
    """Points per axis for a single number ``n``: ``n`` along space (fewer in 3D) and
    ``n`` in time for 1D+time (an x-t map), 11 snapshots' worth otherwise."""
    if space_dim >= 3:
        n_space = min(n, 41)
    elif space_dim == 2:
        n_space = min(n, 201)
    else:
        n_space = n
    res = [n_space] * space_dim
    if has_time:
        res.append(n if space_dim == 1 else 11)
    return res


def evaluation_grid(problem, resolution: int | list[int] = 101) -> Grid:
    """The grid of ``problem`` at ``resolution`` (a number, or one per coordinate)."""
    space = problem.space
    lo, hi = (np.atleast_1d(np.asarray(b, dtype=np.float64)) for b in space.bounds)
    dim = len(lo)
    has_time = problem.time is not None
    names = tuple(c.name for c in problem.coords)
    if isinstance(resolution, int):
        res = default_resolution(dim, has_time, resolution)
    else:
        res = list(resolution)
        if len(res) != len(names):
            raise ValueError(
                f"evaluation.resolution has {len(res)} numbers for {len(names)} coordinates "
                f"({', '.join(names)}); give one number per coordinate or a single number"
            )
    axes = [np.linspace(lo[i], hi[i], res[i]) for i in range(dim)]
    if has_time:
        axes.append(np.linspace(problem.time.t0, problem.time.t1, res[-1]))
    mesh = np.meshgrid(*axes, indexing="ij")
    points = np.stack([m.reshape(-1) for m in mesh], axis=1)
    inside_space = np.asarray(space.contains(points[:, :dim]), dtype=bool)
    # boundary points count as inside (contains may exclude them)
    if hasattr(space, "sdf"):
        try:
            d = np.asarray(space.sdf(points[:, :dim]), dtype=np.float64)
            scale = float(np.max(hi - lo))
            inside_space |= d <= 1e-9 * scale
        except (NotImplementedError, TypeError, ValueError):
            pass
    return Grid(names, tuple(axes), points, inside_space, dim, has_time)
