"""The facts a run records: package versions and the machine."""

from __future__ import annotations

import platform
import sys

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
