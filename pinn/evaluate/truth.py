"""The truth a solution is scored against: the exact solution, or the problem's reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pinn.dsl.evaluate import evaluate_points_numpy

__all__ = ["Truth", "truth", "exact_values", "has_truth"]


@dataclass(frozen=True)
class Truth:
    """``values[field] -> [N]`` (float64) at the points asked for; ``kind`` is ``"exact"``
    (a closed form of the problem) or ``"reference"`` (``problem.reference``)."""

    values: dict[str, np.ndarray]
    kind: str

    @property
    def label(self) -> str:
        return {"exact": "exact solution", "reference": "reference solution"}[self.kind]


def has_truth(problem) -> bool:
    """Whether ``problem`` has something to be scored against (an exact solution or a
    reference)."""
    return bool(problem.exact) or problem.reference is not None


def exact_values(problem, points: np.ndarray) -> dict[str, np.ndarray]:
    """The problem's closed-form solution at ``points[N, d]``, in NumPy float64. For a
    parametric problem the points carry the ranged parameters' columns after the
    coordinates (``problem.inputs``), and the exact solution is evaluated at those values."""
    cols = problem.inputs
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != len(cols):
        raise ValueError(f"points must be an array [N, {len(cols)}] with columns "
                         f"{', '.join(c.name for c in cols)}; got shape {points.shape}")
    return {f.name: evaluate_points_numpy(ex, cols, points, spatial=problem.spatial)
            for f, ex in problem.exact.items()}


def truth(problem, points: np.ndarray) -> Truth | None:
    """The exact solution (preferred) or the reference at ``points``; ``None`` without
    either. A parametric problem's points end with its ranged parameters' columns (the
    reference gets them too)."""
    if problem.exact:
        return Truth(exact_values(problem, points), "exact")
    if problem.reference is not None:
        ref = problem.reference(np.asarray(points, dtype=np.float64))
        return Truth({k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in ref.items()},
                     "reference")
    return None
