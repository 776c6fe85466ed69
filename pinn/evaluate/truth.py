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
    """The problem's closed-form solution at ``points[N, d]``, in NumPy float64."""
    return {f.name: evaluate_points_numpy(ex, problem.coords, points, spatial=problem.spatial)
            for f, ex in problem.exact.items()}


def truth(problem, points: np.ndarray) -> Truth | None:
    """The exact solution (preferred) or the reference at ``points``; ``None`` without
    either."""
    if problem.exact:
        return Truth(exact_values(problem, points), "exact")
    if problem.reference is not None:
        ref = problem.reference(np.asarray(points, dtype=np.float64))
        return Truth({k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in ref.items()},
                     "reference")
    return None
