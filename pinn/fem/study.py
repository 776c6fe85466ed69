"""A refinement study of the FEM baseline: error against wall time along a sequence of meshes
and elements, and the FEM that matches a PINN at equal accuracy or at equal time.

``refine(problem, target_error=e, budget_seconds=s)`` solves ``problem`` with P1, P2 and P3
elements on meshes of 4, 8, 16, ... cells per side (evolution problems: the time step
follows the cell size, ``dt ~ h^((k+1)/2)``, so that Crank-Nicolson's O(dt^2) error keeps
pace with the O(h^(k+1)) of P_k; wave-type equations: per crossing of the domain at the
fastest wave speed, with Newmark's average acceleration, also O(dt^2)), times every solve
and scores it on the evaluation grid.
Evolution problems also try each mesh with 4 and 16 times the rule's time step (a smooth
solution may need far fewer steps than the rule gives): the comparisons pick among all
levels. An element's sequence stops once refining further can help neither comparison (its error
is at most ``target_error`` and its time at least ``budget_seconds``), when the next solve
would exceed ``max_level_seconds`` (predicted from the last two), when the error stops
falling (the truth's own accuracy), or when the solver fails.

:meth:`Study.equal_accuracy` is the cheapest level whose error is at most a given one;
:meth:`Study.equal_time` the most accurate level within a given time;
:meth:`Study.rates` the observed orders of convergence.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["Level", "Study", "refine", "worst"]


def worst(errors: dict | None) -> float:
    """The largest of a run's per-field errors (``{"u": 1e-3, "v": 2e-3}`` -> 2e-3): the
    number a comparison matches on; ``nan`` when there is none."""
    vals = [float(v) for v in (errors or {}).values() if v is not None]
    return max(vals) if vals else math.nan


@dataclass(frozen=True)
class Level:
    """One FEM solve of a study: ``seconds`` is its wall time (mesh, assembly and solve,
    not the scoring); ``h`` the cell size relative to the domain's longest side."""

    element: str
    cells: int
    dofs: int
    seconds: float
    rel_l2: dict
    max_abs_error: dict
    h: float
    dt: float | None = None
    steps: int | None = None
    coarser: int = 1  # evolution: the time step is this many times the rule's


    @property
    def error(self) -> float:
        return worst(self.rel_l2)

    @property
    def label(self) -> str:
        return f"{self.element}, {self.cells} cells" + (f", dt {self.dt:.3g}" if self.dt else "")

    @property
    def key(self) -> tuple:
        return (self.element, self.cells, self.coarser)


@dataclass
class Study:
    """The levels of a refinement study, in the order solved, and why each element's
    sequence stopped (``stopped[element]``)."""

    problem: str
    levels: list[Level] = field(default_factory=list)
    stopped: dict = field(default_factory=dict)
    #: each level's values on the evaluation grid, by ``(element, cells)`` (not saved)
    values: dict = field(default_factory=dict, repr=False)

    def equal_accuracy(self, error: float) -> Level | None:
        """The cheapest level (least wall time) whose error is at most ``error``; None when
        no level reaches it."""
        ok = [lv for lv in self.levels if lv.error <= error]
        return min(ok, key=lambda lv: lv.seconds) if ok else None

    def equal_time(self, seconds: float) -> Level | None:
        """The most accurate level solved within ``seconds``; None when every level took
        longer."""
        ok = [lv for lv in self.levels if lv.seconds <= seconds and math.isfinite(lv.error)]
        return min(ok, key=lambda lv: lv.error) if ok else None

    def by_element(self) -> dict[str, list[Level]]:
        """Each element's levels on the time-step rule (``coarser == 1``), coarsest mesh
        first."""
        out: dict[str, list[Level]] = {}
        for lv in self.levels:
            if lv.coarser == 1:
                out.setdefault(lv.element, []).append(lv)
        return out

    def rates(self, element: str) -> list[float]:
        """The observed orders ``log(e_i / e_{i+1}) / log(h_i / h_{i+1})`` between
        consecutive levels of ``element`` (P_k, smooth solution: k + 1 in the L2 norm)."""
        seq = self.by_element().get(element, [])
        return [math.log(a.error / b.error) / math.log(a.h / b.h)
                for a, b in zip(seq, seq[1:], strict=False) if a.error > 0 and b.error > 0]

    def to_data(self) -> dict:
        return {"problem": self.problem, "levels": [asdict(lv) for lv in self.levels],
                "stopped": dict(self.stopped)}

    @classmethod
    def from_data(cls, data: dict) -> Study:
        return cls(data["problem"], [Level(**lv) for lv in data["levels"]],
                   dict(data.get("stopped", {})))


def _start_cells(dim: int) -> tuple[int, int]:
    """(first, largest) cells per side of a study in ``dim`` space dimensions."""
    return {1: (8, 8192), 2: (4, 512), 3: (2, 48)}.get(dim, (2, 16))


def refine(problem, *, elements: Sequence[str] = ("P1", "P2", "P3"),
           cells: Sequence[int] | None = None, target_error: float | None = None,
           budget_seconds: float | None = None, max_level_seconds: float = 120.0,
           resolution=None, theta: float = 0.5,
           progress: Callable[[Level], None] | None = None) -> Study:
    """Solve ``problem`` along a refinement sequence (see the module's docstring) and
    score each level against the exact solution or the reference on the evaluation grid
    (``resolution``). ``cells``: the sequence of cells per side (default: doubling from 4
    in 2D, 8 in 1D, 2 in 3D); ``progress(level)`` is called after each solve. Raises
    :class:`~pinn.fem.UnsupportedProblem` when FEM cannot solve the problem and
    ``ValueError`` when it has nothing to be scored against."""
    from pinn import evaluate as ev

    if not ev.has_truth(problem):
        raise ValueError(f"{problem.name}: a refinement study needs an exact solution or a "
                         "reference to measure the FEM error against")
    dim = problem.space.dim
    first, largest = _start_cells(dim)
    seq = list(cells) if cells is not None else [first * 2 ** i for i in range(20)
                                                 if first * 2 ** i <= largest]
    grid = ev.evaluation_grid(problem, resolution)
    truth = ev.truth(problem, grid.points).values
    shift = ev.up_to_constant(problem)
    with warnings.catch_warnings():
        # a fine level keeps every n-th of its many time steps (memory): said by each
        # fem.solve, not wanted in a study's output (its errors are measured as they are)
        warnings.filterwarnings("ignore", message=r".*storing every \d+\w* of \d+ steps")
        return _refine(problem, elements, seq, grid, truth, shift, target_error,
                       budget_seconds, max_level_seconds, theta, progress)


def _refine(problem, elements, seq, grid, truth, shift, target_error, budget_seconds,
            max_level_seconds, theta, progress) -> Study:
    from pinn import evaluate as ev
    from pinn import fem
    from pinn.fem.solver import NewtonError

    fem.solve(problem, cells=seq[0], element="P1", theta=theta)  # warm-up: imports, caches
    study = Study(problem.name)

    def solved(element, n, sol, seconds, coarser):
        pred = ev.predict_in_chunks(sol.evaluate, grid.points)
        errs = ev.field_errors(pred, truth, shift, ev.point_times(problem, grid.points))
        info = sol.info
        lv = Level(element, n, int(sol.dofs), seconds, errs["rel_l2"], errs["max_abs_error"],
                   1.0 / n, info.get("dt"), info.get("steps"), coarser)
        study.levels.append(lv)
        study.values[lv.key] = pred
        if progress is not None:
            progress(lv)
        return lv

    for element in elements:
        last: list[Level] = []
        for n in seq:
            if len(last) >= 2:
                growth = max(2.0, last[-1].seconds / max(last[-2].seconds, 1e-6))
                if last[-1].seconds * growth > max_level_seconds:
                    study.stopped[element] = (f"the next mesh ({n} cells) would take more than "
                                              f"{max_level_seconds:g} s")
                    break
            t0 = time.perf_counter()
            try:
                sol = fem.solve(problem, cells=n, element=element, theta=theta)
            except fem.UnsupportedProblem as exc:  # e.g. no P3 element on a 1D mesh
                study.stopped[element] = f"not available: {exc}"
                break
            except (NewtonError, MemoryError, np.linalg.LinAlgError, RuntimeError) as exc:
                study.stopped[element] = f"{n} cells: {type(exc).__name__}: {exc}"
                break
            lv = solved(element, n, sol, time.perf_counter() - t0, 1)
            last.append(lv)
            for coarser in (4, 16) if problem.is_evolution and lv.steps else ():
                if lv.steps // coarser < 4:
                    break
                t0 = time.perf_counter()
                try:
                    coarse = fem.solve(problem, cells=n, element=element, theta=theta,
                                       steps=lv.steps // coarser)
                except (NewtonError, MemoryError, np.linalg.LinAlgError, RuntimeError):
                    break  # too large a step for Newton: the finer ones stand
                solved(element, n, coarse, time.perf_counter() - t0, coarser)
            if not math.isfinite(lv.error):
                study.stopped[element] = f"{n} cells: the error is not finite"
                break
            done_acc = target_error is None or lv.error <= target_error
            done_time = budget_seconds is None or lv.seconds >= budget_seconds
            aimed = target_error is not None or budget_seconds is not None
            if aimed and done_acc and done_time:
                study.stopped[element] = "finer meshes would help neither comparison"
                break
            if len(last) >= 3 and last[-1].error > 0.8 * last[-2].error \
                    and last[-2].error > 0.8 * last[-3].error:
                study.stopped[element] = (f"the error stopped falling at {lv.error:.2e} (the "
                                          "accuracy of the truth it is measured against?)")
                break
        else:
            study.stopped.setdefault(element, f"the largest mesh of the sequence ({seq[-1]} "
                                     "cells)")
    return study
