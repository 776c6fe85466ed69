"""The ``pinn`` command line: a thin shell over the Python API.

    pinn solve problems/heat2d.yaml          # train, evaluate, plot, report
    pinn validate problems/heat2d.yaml       # check the file (and its exact solution)
    pinn fem problems/heat2d.yaml            # classical FEM baseline, same problem
    pinn compare problems/heat2d.yaml        # PINN vs FEM, one table

Exit codes: 0 success, 2 bad input (one line on stderr, no traceback), 1 an
internal error, 130 interrupted (the checkpoint is kept; ``--resume`` goes on).
Set ``PINN_DEBUG=1`` to see tracebacks; ``PINN_MALLOC=1`` tunes glibc's
allocator (see :func:`tune_malloc`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import TyperException

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """Bad input found by the CLI itself (a missing run folder, a bad points file)."""


app = typer.Typer(
    name="pinn",
    help="Physics-informed neural networks in JAX: one PDE description, PINN and FEM.\n\n"
         "\b\nExamples:\n"
         "  pinn solve problems/heat2d.yaml       # train, evaluate, plot, report\n"
         "  pinn validate problems/heat2d.yaml    # check a file and its exact solution\n"
         "  pinn fem problems/heat2d.yaml         # finite-element baseline\n"
         "  pinn compare problems/heat2d.yaml     # PINN vs FEM, one table",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

def _examples(*lines: str) -> str:
    """An epilog that click prints verbatim (``\\b`` stops re-wrapping)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", "-s", metavar="KEY=VALUE",
    help="Override a value of the file, e.g. training.stages.0.steps=500 (repeatable; "
         "values are YAML: 1e-3, true, [1, 2]).")]


def _err(msg: str) -> None:
    """One line on stderr."""
    line = " ".join(str(msg).split("\n")[0].split())
    sys.stderr.write(f"pinn: {line}\n")
    sys.stderr.flush()


def _out(msg: str = "", quiet: bool = False) -> None:
    if not quiet:
        sys.stdout.write(msg + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------------------
# malloc tuning


def tune_malloc() -> bool:
    """Keep large buffers in glibc's heap (``mallopt``: no mmap, no trimming).

    Off by default: on ``pinn solve`` (many steps per compiled call) it made no
    measurable difference (poisson2d, 1500 Adam steps, 2048 points, A/B twice:
    29-35 steps/s either way, same system time).  ``PINN_MALLOC=1`` switches it
    on; it only acts on glibc.  (glibc reads ``MALLOC_MMAP_MAX_`` and friends
    before Python starts, so the CLI calls ``mallopt`` instead.)
    """
    if os.environ.get("PINN_MALLOC", "0").strip().lower() not in ("1", "on", "true", "yes"):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_max = -1, -4
        ok = libc.mallopt(m_mmap_max, 0) == 1
        ok &= libc.mallopt(m_trim_threshold, 2**30) == 1
        return bool(ok)
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------------------
# helpers


def _overrides(sets, seed=None, precision=None) -> list[str]:
    out = list(sets or [])
    if seed is not None:
        out.append(f"training.seed={seed}")
    if precision is not None:
        out.append(f"training.precision={precision}")
    return out


def _load(file: Path, sets):
    from pinn import config

    if not file.exists():
        raise UserError(f"{file}: no such file")
    return config.load(str(file), sets)


def _run_dir(base: Path | None, name: str, resume: bool, kind: str = "") -> Path:
    """``--out`` or ``runs/<name>``; a new ``-2``, ``-3`` folder when not resuming."""
    if base is not None:
        if resume and not base.exists():
            raise UserError(f"{base}: no run folder to resume")
        if not resume and base.is_dir() and any(base.iterdir()):
            raise UserError(f"{base}: the run folder exists and is not empty; continue it with "
                            "--resume, or give a new --out")
        return base
    root = Path("runs") / (name + kind)
    if resume:
        candidates = [root] + sorted(Path("runs").glob(f"{name + kind}-*"),
                                     key=lambda p: p.stat().st_mtime)
        found = [p for p in candidates if p.is_dir()]
        if not found:
            raise UserError(f"no run folder {root} to resume; give --out DIR")
        return max(found, key=lambda p: p.stat().st_mtime)
    if not root.exists() or not any(root.iterdir()):
        return root
    k = 2
    while (root.parent / f"{root.name}-{k}").exists():
        k += 1
    return root.parent / f"{root.name}-{k}"


def _peak_memory_mb() -> float | None:
    try:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20
    except (ImportError, OSError):
        return None


def _count_params(params) -> int:
    import jax

    return int(sum(getattr(x, "size", 1) for x in jax.tree.leaves(params)))


def _write_config(run_dir: Path, built, resume: bool) -> None:
    from pinn.report.io import write_yaml

    resolved = built.resolved()
    path = run_dir / "config.yaml"
    if resume and path.exists():
        import yaml

        old = yaml.safe_load(path.read_text(encoding="utf-8"))
        if old and _problem_part(old) != _problem_part(resolved):
            raise UserError(f"{path}: the problem differs from the one this run was started "
                            "with; resume with the same file and overrides, or start a new run")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_yaml(path, resolved, header=f"# resolved configuration of {built.name} "
               "(every default filled in); `pinn solve` accepts this file as is\n")


def _problem_part(d: dict) -> dict:
    d = dict(d)
    tr = dict(d.get("training") or {})
    tr.pop("stages", None)  # more steps on resume are fine
    d["training"] = tr
    return d


# ---------------------------------------------------------------------------
# solve


@app.command(epilog=_examples(
    "pinn solve problems/heat2d.yaml",
    "pinn solve problems/burgers1d.yaml --set training.stages.0.steps=500 --seed 1",
    "pinn solve problems/heat2d.yaml --precision 64 --out runs/heat64",
    "pinn solve problems/heat2d.yaml --out runs/heat64 --resume      # after Ctrl-C"))
def solve(
    file: Annotated[Path, typer.Argument(help="Problem file (YAML).", show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run folder "
                                             "(default: runs/<name>, or runs/<name>-2, ...).")
                   ] = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (training.seed).")] = None,
    precision: Annotated[int | None, typer.Option(help="32 or 64 (training.precision).")
                         ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint "
                                         "in the run folder.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")
                     ] = False,
):
    """Train a PINN on a problem file and write a run folder (config, metrics, plots, report)."""
    built = _load(file, _overrides(set_, seed, precision))
    model = built.model()
    training = built.training()
    run_dir = _run_dir(out, built.name, resume)
    _write_config(run_dir, built, resume)
    _out(f"{built.name}: training in float{built.precision}, "
         f"{sum(s.steps for s in training.stages)} steps -> {run_dir}", quiet)

    from pinn.solve import precision_scope
    from pinn.solve import solve as train

    t0 = time.perf_counter()
    try:
        with precision_scope(built.precision):
            sol = train(built.problem, model, training, precision=built.precision,
                          out_dir=run_dir, resume=resume, progress=not quiet)
    except KeyboardInterrupt as exc:
        ckpt = getattr(exc, "checkpoint", None)
        ckpt_dir = run_dir / "checkpoints"
        if ckpt or (ckpt_dir.is_dir() and any(ckpt_dir.iterdir())):
            where = f" at step {exc.step}" if getattr(exc, "step", None) is not None else ""
            _err(f"interrupted{where}, checkpoint kept; continue with: pinn solve {file} "
                 f"--out {run_dir} --resume")
        else:
            _err("interrupted before the first checkpoint; nothing to resume")
        return EXIT_INTERRUPTED
    wall = time.perf_counter() - t0
    _finish_run(run_dir, built, sol, wall)
    sol.save(run_dir)
    m = json.loads((run_dir / "metrics.json").read_text())
    errs = ", ".join(f"{k} {v:.3e}" for k, v in (m.get("rel_l2") or {}).items())
    _out(f"done in {wall:.1f} s" + (f"; relative L2: {errs}" if errs else "")
         + (f"; learned {', '.join(f'{k}={v:.6g}' for k, v in m['params'].items())}"
            if m.get("params") else ""), quiet)
    _out(f"report: {run_dir / 'report.md'}", quiet)
    return EXIT_OK


def _finish_run(run_dir: Path, built, sol, wall: float) -> dict:
    from pinn.report import versions, write_run_report
    from pinn.report.io import write_text

    metrics = dict(sol.metrics)
    metrics.update({
        "problem": built.name, "method": "PINN",
        "steps": metrics.get("steps"), "precision": built.precision, "seed": built.seed,
        "wall_seconds": wall, "peak_memory_mb": _peak_memory_mb(),
        "n_params": _count_params(sol.params.get("net", sol.params)),
        "params": {k: float(v) for k, v in sol.learned_params().items()},
        "versions": versions(),
    })
    if sol.history:  # the whole history (a resumed run's too), one JSON object per row
        from pinn.report.io import clean_json

        write_text(run_dir / "history.jsonl",
                   "".join(json.dumps(clean_json(r)) + "\n" for r in sol.history))
    true_params = _true_params(built)
    ev = built.spec.evaluation
    return write_run_report(run_dir, built.problem, sol.evaluate, metrics=metrics,
                            history=sol.history, resolution=ev.resolution,
                            snapshots=ev.snapshots, method="PINN", true_params=true_params,
                            title=f"{built.name}: PINN")


def _true_params(built) -> dict | None:
    """For inverse problems whose reference states the parameter (Burgers' nu)."""
    ref = built.problem.reference
    out = {}
    for p in built.problem.learnable:
        v = getattr(ref, p.name, None)
        if isinstance(v, (int, float)):
            out[p.name] = float(v)
    return out or None


# ---------------------------------------------------------------------------
# validate


@app.command(epilog=_examples("pinn validate problems/heat2d.yaml",
                             "pinn validate problems/wave1d.yaml --json",
                             "pinn validate my.yaml --set params.alpha=0.1"))
def validate(
    file: Annotated[Path, typer.Argument(help="Problem file (YAML).", show_default=False)],
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    set_: SetOpt = None,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Run the manufactured-"
                                        "solution check when the file has an exact "
                                        "solution.")] = True,
):
    """Check a problem file; with an exact solution, run the manufactured-solution check.

    The check evaluates every equation and condition on the exact solution in
    float64 and reports the largest residual of each; a wrong sign or a typo
    shows up as a residual of the size of the terms.  Exit code 2 when the file
    is invalid or a residual is too large.
    """
    from pinn import config

    try:
        built = _load(file, _overrides(set_))
    except config.ConfigError as exc:
        if json_:
            sys.stdout.write(json.dumps(exc.as_dict()) + "\n")
            _err(str(exc))
            return EXIT_INPUT
        raise
    summary = _summary(built)
    checks = []
    if check and built.problem.exact:
        from pinn.report.manufactured import check as mms

        checks = mms(built.problem)
    failed = [c for c in checks if not c.ok]
    if json_:
        result = {"ok": not failed, "file": str(file), **summary,
                  "manufactured": [c.as_dict() for c in checks]}
        from pinn.report.io import clean_json

        sys.stdout.write(json.dumps(clean_json(result)) + "\n")
    else:
        _print_summary(file, summary)
        if checks:
            _out("manufactured-solution check (float64, largest |residual| on the exact "
                 "solution):")
            for c in checks:
                flag = "ok" if c.ok else ("--" if c.kind == "data" else "FAIL")
                note = f"  ({c.note})" if c.note else ""
                _out(f"  {flag:4} {c.name:<16} {c.kind:<10} {c.max_residual:10.3e}   "
                     f"(terms up to {c.scale:.3g}){note}")
        elif check and not built.problem.exact:
            _out("no exact solution: manufactured-solution check skipped")
    if failed:
        names = ", ".join(c.name for c in failed)
        _err(f"{file}: the exact solution does not satisfy {names} (largest residual "
             f"{max(c.max_residual for c in failed):.3e}); check signs and coefficients")
        return EXIT_INPUT
    return EXIT_OK


def _summary(built) -> dict:
    p = built.problem
    spec = built.spec
    conds = {}
    for name, c in p.conditions.items():
        on = getattr(c, "on", None)
        conds[name] = {"type": type(c).__name__.lower(),
                       **({"on": on if isinstance(on, (str, tuple)) else str(on)}
                          if on is not None else {})}
    return {
        "name": built.name,
        "coords": [c.name for c in p.coords],
        "fields": list(p.field_names),
        "params": {k: {"value": v.value, "learnable": v.learnable}
                   for k, v in built.params.items()},
        "domain": repr(p.domain),
        "equations": {k: f"{v} = 0" for k, v in p.equations.items()},
        "conditions": conds,
        "exact": {f.name: str(v) for f, v in p.exact.items()},
        "reference": None if p.reference is None else repr(p.reference),
        "model": spec.model.kind,
        "steps": sum(s.steps for s in spec.training.stages),
        "precision": spec.training.precision,
    }


def _print_summary(file: Path, s: dict) -> None:
    _out(f"{file}: valid")
    _out(f"  problem     {s['name']}: coords {', '.join(s['coords'])}; fields "
         f"{', '.join(s['fields'])}")
    if s["params"]:
        _out("  params      " + ", ".join(
            f"{k} = {v['value']:.6g}" + (" (learnable)" if v["learnable"] else "")
            for k, v in s["params"].items()))
    _out(f"  domain      {s['domain']}")
    for k, v in s["equations"].items():
        _out(f"  equation    {k}: {v}")
    for k, v in s["conditions"].items():
        _out(f"  condition   {k}: {v['type']}" + (f" on {v['on']}" if "on" in v else ""))
    if s["exact"]:
        for k, v in s["exact"].items():
            _out(f"  exact       {k} = {v}")
    if s["reference"]:
        _out(f"  reference   {s['reference']}")
    _out(f"  training    {s['model']}, {s['steps']} steps, float{s['precision']}")


# ---------------------------------------------------------------------------
# plot, predict


def _need_run(run_dir: Path) -> Path:
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    if not (run_dir / "solution.pkl").exists():
        raise UserError(f"{run_dir}: no solution.pkl (the run did not finish; resume it with "
                        "`pinn solve FILE --out DIR --resume`)")
    return run_dir


def _load_run(run_dir: Path):
    from pinn.solve import Solution

    return Solution.load(_need_run(run_dir))


@app.command(epilog=_examples("pinn plot runs/heat2d"))
def plot(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `pinn solve`.",
                                            show_default=False)],
    resolution: Annotated[int | None, typer.Option(help="Grid points per axis (default: "
                                                   "the run's evaluation.resolution).")] = None,
):
    """Redraw the plots, metrics and report of a finished run."""
    sol = _load_run(run_dir)
    cfg = _run_config(run_dir)
    ev = (cfg or {}).get("evaluation") or {}
    res = resolution or ev.get("resolution", 101)
    metrics_path = run_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else dict(sol.metrics)
    from pinn.report import write_run_report

    m = write_run_report(run_dir, sol.problem, sol.evaluate, metrics=metrics,
                         history=sol.history, resolution=res,
                         snapshots=ev.get("snapshots", 4), method="PINN",
                         title=f"{sol.problem.name}: PINN")
    _out(f"wrote {len(m.get('plots', []))} plot(s) and {run_dir / 'report.md'}")
    return EXIT_OK


def _run_config(run_dir: Path) -> dict | None:
    p = run_dir / "config.yaml"
    if not p.exists():
        return None
    import yaml

    return yaml.safe_load(p.read_text(encoding="utf-8"))


def read_points(path: Path, names: list[str]):
    """Points from CSV (header naming the coordinates, or bare numbers) or NPZ."""
    import numpy as np

    if not path.exists():
        raise UserError(f"{path}: no such file")
    try:
        if path.suffix.lower() == ".npz":
            with np.load(path, allow_pickle=False) as z:
                if "points" in z.files:
                    pts = np.asarray(z["points"], dtype=np.float64)
                elif all(n in z.files for n in names):
                    pts = np.stack([np.asarray(z[n], dtype=np.float64).reshape(-1)
                                    for n in names], axis=1)
                else:
                    raise UserError(f"{path}: expected an array 'points' [N, {len(names)}] or "
                                    f"arrays {', '.join(names)}; found {', '.join(z.files)}")
        else:
            with open(path, encoding="utf-8") as fh:
                first = fh.readline()
            cells = [c.strip() for c in first.split(",")]
            try:
                [float(c) for c in cells]
                header = None
            except ValueError:
                header = cells
            arr = np.loadtxt(path, delimiter=",", skiprows=0 if header is None else 1, ndmin=2)
            if header is not None:
                missing = [n for n in names if n not in header]
                if missing:
                    raise UserError(f"{path}: no column for {', '.join(missing)} (header: "
                                    f"{', '.join(header)})")
                pts = np.stack([arr[:, header.index(n)] for n in names], axis=1)
            else:
                pts = arr
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read points ({exc})") from None
    if pts.ndim != 2 or pts.shape[1] != len(names):
        raise UserError(f"{path}: points must have {len(names)} columns ({', '.join(names)}), "
                        f"got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise UserError(f"{path}: points contain NaN or infinite values")
    return pts


@app.command(epilog=_examples("pinn predict runs/heat2d --points pts.csv    # CSV on stdout",
                             "pinn predict runs/heat2d --points pts.npz --out values.npz"))
def predict(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `pinn solve`.",
                                            show_default=False)],
    points: Annotated[Path, typer.Option("--points", "-p", help="CSV (header naming the "
                                         "coordinates) or NPZ ('points' [N, d]).",
                                         show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output .csv or .npz "
                                             "(default: CSV on stdout).")] = None,
):
    """Evaluate a trained solution at given points."""
    import numpy as np

    sol = _load_run(run_dir)
    names = [c.name for c in sol.problem.coords]
    pts = read_points(points, names)
    vals = sol.evaluate(pts)
    cols = {n: pts[:, i] for i, n in enumerate(names)}
    cols.update({k: np.asarray(v) for k, v in vals.items()})
    if out is not None and out.suffix.lower() == ".npz":
        from pinn.report.io import write_npz

        write_npz(out, points=pts, **{k: np.asarray(v) for k, v in vals.items()})
    else:
        import io

        buf = io.StringIO()
        buf.write(",".join(cols) + "\n")
        np.savetxt(buf, np.stack(list(cols.values()), axis=1), delimiter=",", fmt="%.17g")
        if out is None:
            sys.stdout.write(buf.getvalue())
        else:
            from pinn.report.io import write_text

            write_text(out, buf.getvalue())
    if out is not None:
        _out(f"wrote {len(pts)} rows to {out}")
    return EXIT_OK


# ---------------------------------------------------------------------------
# info


@app.command(epilog=_examples("pinn info"))
def info(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """Versions, devices and the precision in use."""
    import jax
    import jax.numpy as jnp

    from pinn.report.metrics import machine, versions

    devs = [f"{d.platform}:{d.id} ({getattr(d, 'device_kind', '')})" for d in jax.devices()]
    d = {
        "versions": versions(),
        "devices": devs,
        "default_backend": jax.default_backend(),
        "precision": "float64" if jnp.zeros(()).dtype == jnp.float64 else
        "float32 (float64 per run: --precision 64)",
        "machine": machine(),
        "malloc_tuned": os.environ.get("PINN_MALLOC", "0").lower() in ("1", "on", "true", "yes"),
    }
    if json_:
        sys.stdout.write(json.dumps(d) + "\n")
        return EXIT_OK
    for k, v in d["versions"].items():
        _out(f"{k:<18} {v or '-'}")
    _out(f"{'devices':<18} {', '.join(devs)}")
    _out(f"{'precision':<18} {d['precision']}")
    _out(f"{'machine':<18} {d['machine']['cpu']}, {d['machine']['cores']} cores")
    _out(f"{'malloc tuning':<18} {'on' if d['malloc_tuned'] else 'off'} (PINN_MALLOC)")
    return EXIT_OK


# ---------------------------------------------------------------------------
# fem, compare


@app.command(epilog=_examples("pinn fem problems/poisson2d.yaml",
                             "pinn fem problems/heat2d.yaml --cells 32 --element P2 --dt 0.01",
                             "pinn fem problems/ns_cavity.yaml --out runs/cavity-fem"))
def fem(
    file: Annotated[Path, typer.Argument(help="Problem file (YAML).", show_default=False)],
    cells: Annotated[int | None, typer.Option(help="Cells per side (default: fem.cells).")
                     ] = None,
    element: Annotated[str | None, typer.Option(help="P1 or P2 (default: fem.element).")
                       ] = None,
    dt: Annotated[float | None, typer.Option(help="Time step for evolution problems.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run folder (default: "
                                             "runs/<name>-fem).")] = None,
    set_: SetOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """Solve the same problem with the finite-element baseline (scikit-fem)."""
    sets = list(set_ or [])
    if cells is not None:
        sets.append(f"fem.cells={cells}")
    if element is not None:
        sets.append(f"fem.element={element}")
    if dt is not None:
        sets.append(f"fem.dt={dt}")
    built = _load(file, sets)
    run_dir = _run_dir(out, built.name, False, "-fem")
    metrics = run_fem(built, run_dir)
    errs = ", ".join(f"{k} {v:.3e}" for k, v in (metrics.get("rel_l2") or {}).items())
    _out(f"{built.name}: FEM {built.spec.fem.element}, {metrics.get('dofs')} dofs, "
         f"{metrics.get('wall_seconds', 0):.1f} s" + (f"; relative L2: {errs}" if errs else ""),
         quiet)
    _out(f"report: {run_dir / 'report.md'}", quiet)
    return EXIT_OK


def run_fem(built, run_dir: Path) -> dict:
    """Solve with ``pinn.fem`` and write a run folder like ``pinn solve`` does."""
    from pinn import fem as F
    from pinn.report import versions, write_run_report

    opts = built.spec.fem
    _write_config(run_dir, built, False)
    t0 = time.perf_counter()
    try:
        sol = F.solve(built.problem, cells=opts.cells, element=opts.element, dt=opts.dt,
                      theta=opts.theta)
    except F.UnsupportedProblem as exc:
        raise UserError(f"{built.name}: the FEM baseline cannot solve this problem: {exc}"
                        ) from None
    wall = time.perf_counter() - t0
    try:
        sol.save(run_dir)
    except (OSError, TypeError, ValueError) as exc:  # the report matters more
        import warnings

        warnings.warn(f"could not save the FEM solution: {exc}", stacklevel=2)
    info = dict(getattr(sol, "info", {}) or {})
    metrics = {
        "problem": built.name, "method": "FEM", "element": opts.element,
        "cells": getattr(sol, "n_cells", opts.cells), "dofs": getattr(sol, "dofs", None),
        "dt": info.get("dt", opts.dt), "theta": info.get("theta"),
        "newton_iterations": info.get("newton_iterations"),
        "solve_seconds": float(getattr(sol, "solve_seconds", wall)), "wall_seconds": wall,
        "peak_memory_mb": _peak_memory_mb(), "precision": 64, "versions": versions(),
    }
    ev = built.spec.evaluation
    return write_run_report(run_dir, built.problem, sol.evaluate, metrics=metrics,
                            resolution=ev.resolution, snapshots=ev.snapshots, method="FEM",
                            title=f"{built.name}: FEM ({opts.element}, {metrics['cells']} "
                            "cells)")


@app.command(epilog=_examples(
    "pinn compare problems/heat2d.yaml",
    "pinn compare problems/heat2d.yaml --pinn runs/heat2d --fem runs/heat2d-fem",
    "pinn compare problems/poisson2d.yaml --set training.stages.0.steps=500"))
def compare(
    file: Annotated[Path, typer.Argument(help="Problem file (YAML).", show_default=False)],
    pinn_run: Annotated[Path | None, typer.Option("--pinn", help="A finished `pinn solve` "
                                                  "run (default: train one now).")] = None,
    fem_run: Annotated[Path | None, typer.Option("--fem", help="A finished `pinn fem` run "
                                                 "(default: solve now).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the table "
                                             "(default: runs/<name>-compare).")] = None,
    set_: SetOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """PINN against FEM on one problem: a Markdown + PNG table and error maps side by side."""
    built = _load(file, _overrides(set_))
    out_dir = _run_dir(out, built.name, False, "-compare")
    out_dir.mkdir(parents=True, exist_ok=True)
    # each method runs in its own process, so that its wall time and peak memory are its own
    sets = [a for item in (set_ or []) for a in ("--set", item)]
    if pinn_run is None:
        pinn_run = out_dir / "pinn"
        _out(f"training the PINN -> {pinn_run}", quiet)
        _subcommand(["solve", str(file), "--out", str(pinn_run), "--quiet", *sets])
    if fem_run is None:
        fem_run = out_dir / "fem"
        _out(f"solving with FEM -> {fem_run}", quiet)
        _subcommand(["fem", str(file), "--out", str(fem_run), "--quiet", *sets])
    from pinn.report.compare import write_comparison

    table = write_comparison(out_dir, built.problem, {"PINN": pinn_run, "FEM": fem_run},
                             resolution=built.spec.evaluation.resolution,
                             snapshots=min(built.spec.evaluation.snapshots, 3))
    _out(table, quiet)
    _out(f"report: {out_dir / 'compare.md'}", quiet)
    return EXIT_OK


def _subcommand(args: list[str]) -> None:
    """Run ``pinn ARGS`` in a child process; its errors become ours."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "pinn.cli", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        msg = lines[-1].removeprefix("pinn: ") if lines else f"exit code {proc.returncode}"
        if proc.returncode == EXIT_INPUT:
            raise UserError(f"pinn {args[0]}: {msg}")
        raise RuntimeError(f"pinn {args[0]} failed: {msg}")


# ---------------------------------------------------------------------------
# entry point


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code (the console script exits with it)."""
    tune_malloc()
    debug = os.environ.get("PINN_DEBUG", "") not in ("", "0")
    try:
        rv = app(args=argv, prog_name="pinn", standalone_mode=False)
        return rv if isinstance(rv, int) else EXIT_OK
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except TyperException as exc:  # click's usage errors (typer vendors click)
        if debug:
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stdout.write(exc.format_message() + "\n")
            return EXIT_INPUT
        code = getattr(exc, "exit_code", EXIT_INPUT)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if getattr(ctx, "command_path", None) else ""
        _err(exc.format_message() + hint)
        return EXIT_INPUT if code == 2 else code
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except UserError as exc:
        _err(str(exc))
        return EXIT_INPUT
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 1
        from pinn.config import ConfigError

        if isinstance(exc, ConfigError):
            _err(str(exc))
            return EXIT_INPUT
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set PINN_DEBUG=1 for the "
             "traceback; please report it)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
