"""Fine-mesh FEM references, cached on disk (for problems without a closed form)."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from pathlib import Path

from pinn import io
from pinn.fem.solution import FEMSolution

__all__ = ["fem_reference", "cache_dir", "problem_key"]

log = logging.getLogger(__name__)
_FORMAT = "pinn.fem.reference/2"  # 2: base meshes that resolve small holes


def cache_dir() -> Path:
    """``$PINN_CACHE`` or ``~/.cache/pinn`` (:func:`pinn.io.cache_dir`)."""
    return io.cache_dir()


def problem_key(problem, settings: dict) -> str:
    """A hash of everything that determines the FEM solution (not the problem's name)."""
    desc = {
        "format": _FORMAT,
        "domain": repr(problem.domain),
        "coords": [c.name for c in problem.coords],
        "fields": list(problem.field_names),
        "equations": {k: str(v) for k, v in problem.equations.items()},
        "conditions": {k: repr(v) for k, v in problem.conditions.items()},
        "params": sorted((p.name, p.value) for p in problem.params),
        "settings": {k: repr(v) for k, v in sorted(settings.items())},
    }
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:24]


def fem_reference(problem, *, cells: int | None = None, h: float | None = None,
                  refine: int | None = None, element: str = "P2", dt: float | None = None,
                  theta: float = 0.5, cache: bool = True, directory=None,
                  **solve_kwargs) -> FEMSolution:
    """A fine-mesh FEM solution of ``problem``, cached under :func:`cache_dir`.

    The result is callable (``points -> {field: values}``), so it can serve as
    ``Problem.reference``::

        ref = pinn.fem.fem_reference(problem, cells=128)
        problem = dataclasses.replace(problem, reference=ref)

    The cache key hashes the domain, equations, conditions, parameter values
    and the solver settings.
    """
    from pinn.fem.solver import solve

    if cells is None and h is None and refine is None:
        cells = {1: 2048, 2: 128, 3: 24}.get(problem.space.dim, 16)
    settings = dict(cells=cells, h=h, refine=refine, element=element, dt=dt, theta=theta,
                    **solve_kwargs)
    key = problem_key(problem, settings)
    where = Path(directory) if directory is not None else cache_dir() / "fem" / key
    if cache and (where / "fem.json").exists():
        try:
            sol = FEMSolution.load(where, problem=problem)
            log.info("FEM reference for %s loaded from %s", problem.name, where)
            return sol
        except (OSError, ValueError, KeyError) as err:
            log.warning("ignoring the unreadable cached FEM reference in %s (%s)", where, err)
    sol = solve(problem, cells=cells, h=h, refine=refine, element=element, dt=dt, theta=theta,
                **solve_kwargs)
    if cache:
        try:
            sol.save(where)
            log.info("FEM reference for %s stored in %s", problem.name, where)
        except OSError as err:
            warnings.warn(f"could not cache the FEM reference of {problem.name} in {where}: "
                          f"{err}; set PINN_CACHE to a writable folder", stacklevel=2)
    return sol
