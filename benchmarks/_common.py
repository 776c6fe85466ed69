"""Shared pieces of the benchmark scripts: machine description, result files, tables,
and the two benchmark problems (Burgers 1D, heat 2D) built with the Python API.

Imported by ``accuracy.py``, ``speed.py`` and ``time_to_accuracy.py`` (run them as
scripts: ``python benchmarks/speed.py``; the folder is on ``sys.path`` then).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The wall times in the tables are a first run's, compilation included: the benchmarks and
# the runs they start compile without pinn's persistent compilation cache unless the
# environment asks for one (time_to_accuracy.py measures a re-run on its own, side
# pinn-warm)
os.environ.setdefault("PINN_COMPILE_CACHE", "off")

# glibc settings that keep large buffers in the heap (no mmap/munmap churn per step)
TUNED_MALLOC = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0",
                "MALLOC_TRIM_THRESHOLD_": "17179869184"}


# ---------------------------------------------------------------------------
# the machine


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    m = re.search(r"model name\s*:\s*(.+)", text)
    return m.group(1).strip() if m else (platform.processor() or platform.machine())


def cpu_mhz() -> float | None:
    try:
        mhz = [float(v) for v in re.findall(r"cpu MHz\s*:\s*([\d.]+)",
                                            Path("/proc/cpuinfo").read_text())]
    except OSError:
        return None
    return max(mhz) if mhz else None


def cpu_flags() -> set[str]:
    try:
        m = re.search(r"flags\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
    except OSError:
        return set()
    return set(m.group(1).split()) if m else set()


def fp32_peak_gflops(cores: int | None = None) -> float | None:
    """FP32 peak in GFLOP/s at the nominal clock: lanes x 2 (FMA) x 2 pipes per cycle.

    AVX-512: 16 lanes, AVX2: 8 lanes, else SSE 4 lanes. Turbo is ignored, so this is
    an estimate (the same one ``engine.py`` uses for AVX2 machines).
    """
    mhz = cpu_mhz()
    if mhz is None:
        return None
    flags = cpu_flags()
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    fma = 2 if ("fma" in flags or "avx512f" in flags) else 1
    return lanes * fma * 2 * (mhz / 1000.0) * (cores or os.cpu_count() or 1)


def load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "flax", "optax", "numpy", "skfem", "torch", "deepxde"):
        try:
            from importlib.metadata import version

            dist = {"skfem": "scikit-fem"}.get(name, name)
            out[name] = version(dist)
        except Exception:  # noqa: BLE001 - not installed
            continue
    return out


def git_commit() -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True, timeout=10).stdout.strip()
    return r.stdout.strip() + ("+dirty" if dirty else "")


def machine() -> dict:
    """Where and when: cores, CPU model, clock, load, versions, date, commit."""
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "cpu_mhz": cpu_mhz(),
        "fp32_peak_gflops": fp32_peak_gflops(),
        "load_average": load_average(),
        "platform": platform.platform(),
        "versions": versions(),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": git_commit(),
        "malloc_env": {k: os.environ[k] for k in TUNED_MALLOC if k in os.environ},
    }


def machine_line(m: dict) -> str:
    load = m.get("load_average")
    v = m.get("versions", {})
    return (f"{m['cores']} cores, {m['cpu']}"
            + (f" at {m['cpu_mhz']:.0f} MHz" if m.get("cpu_mhz") else "")
            + (f"; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)"
               if load else "")
            + f"; jax {v.get('jax', '?')}, Python {v.get('python', '?')}"
            + f"; {m['date']}" + (f"; commit {m['commit']}" if m.get("commit") else ""))


def run_worker(script: Path, args: Sequence[str], timeout: float) -> tuple[dict | None, str]:
    """Run ``python SCRIPT ARGS --worker-out FILE`` in its own process (a crash or a
    timeout of one problem does not stop a suite): ``(result, "")`` with the JSON it wrote
    and ``process_seconds``, or ``(None, why)``."""
    import time

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "entry.json"
        cmd = [sys.executable, str(Path(script).resolve()), *args, "--worker-out", str(out)]
        t0 = time.perf_counter()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f} s"
        if r.returncode != 0 or not out.exists():
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            return None, f"worker exited {r.returncode}: " + " | ".join(tail)
        res = read_json(out)
        res["process_seconds"] = time.perf_counter() - t0
        return res, ""


# ---------------------------------------------------------------------------
# files and tables


def write_text(path: Path, text: str) -> Path:
    """Atomic write (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


def write_json(path: Path, obj) -> Path:
    return write_text(path, json.dumps(_jsonable(obj), indent=1) + "\n")


def read_json(path: Path):
    return json.loads(Path(path).read_text())


def table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def fmt(v, spec: str = ".2e", missing: str = "–") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return missing
    if isinstance(v, (int, float)):
        return format(v, spec)
    return str(v)


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """How a benchmark was started: ``python benchmarks/<script> <arguments>``."""
    args = sys.argv[1:] if argv is None else list(argv)
    return shlex.join(["python", f"benchmarks/{script}", *args])


def generated_note(script: str, command: str) -> str:
    return (f"<!-- generated by benchmarks/{script}; do not edit by hand. -->\n"
            f"Generated by `{command}`.")


# ---------------------------------------------------------------------------
# the two benchmark problems, with the Python API


NU_BURGERS = 0.01 / math.pi
ALPHA_HEAT = 0.05


def burgers_problem():
    """Viscous Burgers 1D (Raissi et al. 2019) with the exact Cole-Hopf reference."""
    import pinn
    from pinn.reference import Burgers

    x, t = pinn.coords("x t")
    u = pinn.field("u")
    nu = pinn.param("nu", NU_BURGERS)
    return pinn.Problem(
        domain=pinn.Interval(-1, 1) * pinn.TimeInterval(0, 1),
        equations={"burgers": pinn.D(u, t) + u * pinn.D(u, x) - nu * pinn.D(u, x, 2)},
        conditions={"walls": pinn.Dirichlet(u, 0, on="boundary"),
                    "start": pinn.Initial(u, -pinn.sin(pinn.pi * x))},
        coords=(x, t), fields=(u,), reference=Burgers(nu=NU_BURGERS, field="u"),
        name="burgers1d")


def heat_problem():
    """Heat 2D on the unit square, u = exp(-2 pi^2 alpha t) sin(pi x) sin(pi y)."""
    import pinn

    x, y, t = pinn.coords("x y t")
    u = pinn.field("u")
    alpha = pinn.param("alpha", ALPHA_HEAT)
    return pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - alpha * pinn.laplacian(u)},
        conditions={"walls": pinn.Dirichlet(u, 0, on="boundary"),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y))},
        coords=(x, y, t), fields=(u,),
        exact={u: pinn.exp(-2 * pinn.pi ** 2 * alpha * t) * pinn.sin(pinn.pi * x)
               * pinn.sin(pinn.pi * y)},
        name="heat2d")


PROBLEMS = {"burgers": burgers_problem, "heat2d": heat_problem}


def eval_points(problem):
    """The points and truth ``pinn`` evaluates on during training (``pinn.evaluate``)."""
    from pinn import evaluate as ev

    pts = ev.evaluation_points(problem)
    return pts, ev.truth(problem, pts).values
