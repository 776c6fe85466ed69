"""The one evaluation grid: where every error and every plot of a run is computed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["EvaluationGrid", "evaluation_grid", "evaluation_points", "default_resolution",
           "check_resolution", "MAX_GRID_POINTS", "param_grid", "default_params",
           "with_params", "grid_at"]

#: Nodes per space axis by space dimension when no resolution is given.
_SPACE_NODES = {1: 201, 2: 101, 3: 41}

#: The most points an evaluation grid may have (a run's resolution, ``pinn plot
#: --resolution``).
MAX_GRID_POINTS = 50_000_000


@dataclass(frozen=True)
class EvaluationGrid:
    """A regular grid over the domain's bounding box (and time), masked to the domain.

    ``axes[i]`` are the values of coordinate ``names[i]`` (space axes, then time);
    ``nodes[M, d]`` every node (C order, the last coordinate fastest); ``mask[M]`` which
    nodes lie in the closed domain; ``points`` the inside nodes, where errors are taken.
    """

    names: tuple[str, ...]
    axes: tuple[np.ndarray, ...]
    nodes: np.ndarray
    mask: np.ndarray
    space_dim: int
    has_time: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def points(self) -> np.ndarray:
        """The nodes inside the domain, ``[N, d]``."""
        return self.nodes[self.mask]

    inside = points  # the name the plots use

    def full(self, values_inside: np.ndarray) -> np.ndarray:
        """Values at :attr:`points` -> an array of :attr:`shape` with NaN outside."""
        out = np.full(self.nodes.shape[0], np.nan)
        out[self.mask] = np.asarray(values_inside, dtype=np.float64).reshape(-1)
        return out.reshape(self.shape)


def _nd_nodes(space_dim: int) -> int:
    """Nodes per axis beyond 3-D: about 2e5 nodes in space (11 per axis in 5-D)."""
    return max(3, round(2e5 ** (1 / space_dim)))


def default_resolution(space_dim: int, has_time: bool, n: int | None = None) -> list[int]:
    """Nodes per axis. Without ``n``: 201 (1-D), 101 (2-D), 41 (3-D), about 2e5 nodes in all
    beyond (11 per axis in 5-D), and in time 101 for 1-D (an x-t map) or 11 snapshots
    otherwise. With ``n``: ``n`` per space axis (at most 201 in 2-D, 41 in 3-D and the
    default beyond) and ``n`` in time for 1-D."""
    if n is None:
        res = [_SPACE_NODES.get(space_dim) or _nd_nodes(space_dim)] * space_dim
        n_time = 101 if space_dim == 1 else 11
    else:
        cap = {2: 201, 3: 41}.get(space_dim, _nd_nodes(space_dim) if space_dim > 3 else n)
        res = [min(n, cap)] * space_dim
        n_time = n if space_dim == 1 else 11
    return res + ([n_time] if has_time else [])


def check_resolution(resolution, dims: int) -> None:
    """Raise ``ValueError`` unless ``resolution`` (None, an integer, or one integer per
    coordinate) gives at least 2 nodes per axis and a grid of at most
    :data:`MAX_GRID_POINTS` points over ``dims`` inputs."""
    if resolution is None:
        return
    per = [resolution] if isinstance(resolution, int) else list(resolution)
    if not per or any(isinstance(r, bool) or not isinstance(r, int) or r < 2 for r in per):
        raise ValueError(f"resolution {resolution!r}: give an integer of at least 2 "
                         "(grid points per axis)")
    n = float(np.prod([float(r) for r in per])) * (
        float(per[0]) ** (dims - 1) if len(per) == 1 else 1.0)
    if n > MAX_GRID_POINTS:
        raise ValueError(f"resolution {resolution!r}: a grid of {n:.3g} points over {dims} "
                         f"inputs, more than {MAX_GRID_POINTS:,}; give a smaller resolution")


def evaluation_grid(problem, resolution: int | Sequence[int] | None = None,
                    params=None) -> EvaluationGrid:
    """The evaluation grid of ``problem``: ``resolution`` nodes per axis (one number, or
    one per coordinate; ``None``: :func:`default_resolution`). Boundary nodes count as
    inside (within 1e-9 of the domain's size). A domain whose shape depends on ranged
    parameters: the box holding every shape, masked to the shape at ``params`` (default:
    the centre of each range; :func:`grid_at` masks it at other values)."""
    space = problem.space
    lo, hi = (np.atleast_1d(np.asarray(b, dtype=np.float64)) for b in space.bounds)
    dim, has_time = len(lo), problem.time is not None
    names = tuple(c.name for c in problem.coords)
    if resolution is None or isinstance(resolution, int):
        res = default_resolution(dim, has_time, resolution)
    else:
        res = [int(r) for r in resolution]
        if len(res) != len(names):
            raise ValueError(
                f"evaluation.resolution has {len(res)} numbers for {len(names)} coordinates "
                f"({', '.join(names)}); give one number per coordinate or a single number")
    axes = [np.linspace(lo[i], hi[i], res[i]) for i in range(dim)]
    if has_time:
        axes.append(np.linspace(problem.time.t0, problem.time.t1, res[-1]))
    mesh = np.meshgrid(*axes, indexing="ij")
    nodes = np.stack([m.reshape(-1) for m in mesh], axis=1)
    tol = 1e-9 * float(np.max(hi - lo))
    if space.params:
        mask = _mask_at(problem, nodes, dim, params)
    else:
        mask = np.asarray(space.contains(nodes[:, :dim], tol=tol), dtype=bool)
    return EvaluationGrid(names, tuple(axes), nodes, mask, dim, has_time)


def _mask_at(problem, nodes: np.ndarray, dim: int, params) -> np.ndarray:
    space = problem.space
    at = default_params(problem) if params is None else dict(params)
    lo, hi = (np.atleast_1d(np.asarray(b, dtype=np.float64)) for b in space.bounds)
    tol = 1e-9 * float(np.max(hi - lo))
    values = {p.name: float(at[p.name]) for p in space.params}
    return np.asarray(space.contains(nodes[:, :dim], tol=tol, params=values), dtype=bool)


def grid_at(problem, grid: EvaluationGrid, params) -> EvaluationGrid:
    """``grid`` masked to the domain at the ranged parameters' values ``params``: itself
    unless the domain's shape depends on them (:mod:`pinn.geometry.parametric`)."""
    if not problem.space.params:
        return grid
    from dataclasses import replace

    return replace(grid, mask=_mask_at(problem, grid.nodes, grid.space_dim, params))


def param_grid(problem, n: int = 9) -> list[dict[str, float]]:
    """The parameter values a parametric problem is scored at: ``n`` equally spaced values
    over each ranged parameter's range (ends included), every combination (the last
    parameter fastest); ``[]`` for a problem without ranged parameters."""
    import itertools

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (values per parameter), got {n!r}")
    ranged = problem.ranged
    if not ranged:
        return []
    axes = [np.linspace(p.range[0], p.range[1], int(n)) if n > 1
            else np.array([0.5 * (p.range[0] + p.range[1])]) for p in ranged]
    return [{p.name: float(v) for p, v in zip(ranged, combo, strict=True)}
            for combo in itertools.product(*axes)]


def default_params(problem) -> dict[str, float]:
    """The centre of each ranged parameter's range: where a parametric solution is scored
    and plotted when no values are given."""
    return {p.name: 0.5 * (p.range[0] + p.range[1]) for p in problem.ranged}


def with_params(problem, points: np.ndarray, params=None) -> np.ndarray:
    """``points[N, d]`` (the coordinates) with the ranged parameters' columns appended:
    ``[N, d + p]``, the network's inputs (``problem.inputs``). Without ranged parameters the
    points come back unchanged."""
    points = np.asarray(points, dtype=np.float64)
    if not problem.ranged:
        return points
    return np.concatenate([points, problem.param_columns(params, len(points))], axis=1)


def evaluation_points(problem, max_points: int | None = 30_000, seed: int = 0) -> np.ndarray:
    """The points of :func:`evaluation_grid`, or a fixed random subset of ``max_points`` of
    them (``seed``): the errors in a training history estimate the final error on the same
    points every time. For a parametric problem: the grid at 5 values of each ranged
    parameter (:func:`param_grid`), with the parameters' columns."""
    grid = evaluation_grid(problem)
    pts = grid.points
    if problem.ranged:
        pts = np.concatenate([with_params(problem, grid_at(problem, grid, v).points, v)
                              for v in param_grid(problem, 5)])
    if max_points is not None and len(pts) > max_points:
        pts = pts[np.random.default_rng(seed).choice(len(pts), max_points, replace=False)]
    return pts
