"""Errors against the exact or reference solution, and the facts a run records."""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping

import numpy as np

PACKAGES = ("pinn", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "scipy",
            "scikit-fem", "pydantic", "matplotlib")


def versions() -> dict[str, str]:
    """Versions of Python and of the packages a result depends on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict:
    import os

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": sys.platform}


def truth_on(problem, points: np.ndarray) -> tuple[dict[str, np.ndarray] | None, str | None]:
    """The exact solution (float64) or the reference at ``points``; and which it is."""
    points = np.asarray(points, dtype=np.float64)
    if problem.exact:
        import jax

        from pinn.dsl.evaluate import evaluate_on_points

        out = {}
        with jax.enable_x64(True):
            for f, ex in problem.exact.items():
                out[f.name] = np.asarray(
                    evaluate_on_points(ex, problem.coords, points, spatial=problem.spatial),
                    dtype=np.float64)
        return out, "exact"
    if problem.reference is not None:
        ref = problem.reference(points)
        return {k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in ref.items()}, \
            "reference"
    return None, None


def up_to_constant(problem) -> tuple[str, ...]:
    """Fields that the problem fixes only up to a constant (a pressure with no condition),
    as the reference says (``FEMSolution.up_to_constant``)."""
    ref = getattr(problem, "reference", None)
    if ref is None or getattr(problem, "exact", None):
        return ()
    try:
        return tuple(getattr(ref, "up_to_constant", ()) or ())
    except (RuntimeError, ValueError):
        return ()


def field_errors(pred: Mapping[str, np.ndarray], truth: Mapping[str, np.ndarray] | None,
                 shift: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """``{"rel_l2": {field: v}, "max_abs_error": {field: v}}`` over the common fields.

    The relative L2 error is ``||pred - truth|| / ||truth||`` over the grid points;
    where the truth is zero everywhere it is the absolute RMS error instead.  Fields
    in ``shift`` are compared after removing their means (defined up to a constant).
    """
    rel, mx = {}, {}
    for name, t in (truth or {}).items():
        if name not in pred:
            continue
        p = np.asarray(pred[name], dtype=np.float64).reshape(-1)
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        ok = np.isfinite(t)
        diff = p[ok] - t[ok]
        if name in shift and diff.size:
            diff = diff - diff.mean()
            t = t - t[ok].mean()
        norm = float(np.linalg.norm(t[ok]))
        rel[name] = float(np.linalg.norm(diff) / norm) if norm > 0 else float(
            np.sqrt(np.mean(diff**2)))
        mx[name] = float(np.max(np.abs(diff))) if diff.size else float("nan")
    return {"rel_l2": rel, "max_abs_error": mx}
