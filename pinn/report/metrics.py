"""The facts a run records: package versions and the machine; what ``metrics.json`` holds
(:data:`METRICS`) and its reader (:func:`read_metrics`)."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from pinn.io import (
    BOOLEAN,
    INTEGER,
    NUMBER,
    TEXT,
    check_json,
    list_of,
    mapping,
    mapping_of,
    read_json_file,
)

#: One number (or null: not finite) per field, term or parameter: ``{"u": 1.2e-3}``.
PER_NAME = mapping_of(NUMBER.or_null(), "an object of numbers ({name: number})")

#: What a run's ``metrics.json`` (and ``solution.json``'s ``metrics``) holds at the keys
#: the package reads; other keys are free (docs/run-folder.md lists them all).
METRICS = mapping({
    **dict.fromkeys(("rel_l2", "max_abs_error", "rel_l2_ref_points",
                     "max_abs_error_ref_points", "loss", "params", "param_values"),
                    PER_NAME.or_null()),
    **dict.fromkeys(("steps", "steps_done", "n_params", "dofs", "ref_points"),
                    INTEGER.or_null()),
    **dict.fromkeys(("wall_seconds", "train_seconds", "compile_seconds", "peak_memory_mb"),
                    NUMBER.or_null()),
    "problem": TEXT.or_null(), "method": TEXT.or_null(), "compared_with": TEXT.or_null(),
    "divergence": TEXT.or_null(), "converged": BOOLEAN.or_null(),
    "plots": list_of(TEXT).or_null(), "up_to_constant": list_of(TEXT).or_null(),
    "stages": list_of(mapping({}, "an object (a stage)")).or_null(),
    "param_grid": list_of(mapping({"rel_l2": PER_NAME, "max_abs_error": PER_NAME},
                                  "an object (errors at one parameter value)",
                                  required=("rel_l2", "max_abs_error"))).or_null(),
}, "an object (a run's metrics)")


def read_metrics(run_dir: str | os.PathLike) -> dict:
    """A run folder's ``metrics.json``, checked (:data:`METRICS`): ``FileNotFoundError``
    when it has none, :class:`pinn.io.BadFile` naming the fault."""
    path = Path(run_dir) / "metrics.json"
    return check_json(read_json_file(path, "run's metrics"), METRICS, path,
                      f"the run's metrics are damaged: write them again with `pinn plot "
                      f"{run_dir}`")

PACKAGES = ("pinn", "jax", "jaxlib", "flax", "optax", "numpy", "scipy",
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
    """The machine a measurement ran on: ``{"cpu": model name, "cores": n, "platform": ...}``."""
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


def peak_memory_mb() -> float | None:
    """The peak resident memory of this process so far, in MB."""
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20
