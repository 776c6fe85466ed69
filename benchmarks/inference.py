"""Inference speed of a trained solution: pinn, its exported graphs, and the FEM solution.

    python benchmarks/inference.py                    # trains heat2d + FEM; INFERENCE.md + JSON
    python benchmarks/inference.py --run runs/heat2d  # an existing run folder
    python benchmarks/inference.py --smoke            # seconds: tiny sizes, no file written
    python benchmarks/inference.py --from-json benchmarks/results/inference.json

On CPU always (``JAX_PLATFORMS=cpu``). One problem (heat2d, the problem file's settings
unless ``--steps``), one set of points: uniform in the space-time box, seeded. Sides:

* ``pinn predict``: :meth:`pinn.Solution.evaluate`, jitted, what ``pinn predict RUN`` runs;
* ``StableHLO <dtype>``: the file of ``pinn export`` loaded with ``jax.export.deserialize``
  and called through ``jax.jit`` (what examples/deploy/load_stablehlo.py does), float32,
  float16 and bfloat16 inside the graph;
* ``ONNX <dtype>``: onnxruntime's CPU provider on the ``.onnx`` file (float32, float16,
  int8 weights), as examples/deploy/load_onnx.py;
* ``FEM``: the scikit-fem solution of the same problem (``pinn.run.fem_run``, the file's FEM
  settings) evaluated at the same points: a KD-tree cell search and the element basis, in
  chunks of 8192 points (``skfem``'s ``probes`` would build a points x cells array).

Latency: one point, the median and the 90th percentile of ``--calls`` calls after a warm-up.
Throughput: points per second for 1e3, 1e5 and 1e6 points, the best of ``--repeats`` calls
after one warm-up call of the same size (so compilation for a new batch size is not
counted); the sides take turns, so that load from other processes hits them alike.
File size: the artefact (``pinn predict``: the run's ``params.npz`` + ``solution.json``;
FEM: ``fem.npz``). Error: each side against the float32 model (the sidecar's ``check``) and,
for pinn and FEM, against the exact solution on the evaluation grid.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

HEAT = C.ROOT / "problems" / "heat2d.yaml"
OUT_MD = C.HERE / "INFERENCE.md"
OUT_JSON = C.HERE / "results" / "inference.json"
SIZES = (1_000, 100_000, 1_000_000)
STABLEHLO_DTYPES = ("float32", "float16", "bfloat16")
ONNX_DTYPES = ("float32", "float16", "int8")


def _train(run_dir: Path, steps: int | None, smoke: bool) -> None:
    from pinn.cli import main

    sets = []
    if smoke:
        sets = ["training.stages.0.steps=20", "training.stages.1.steps=2",
                "training.points.interior=256", "training.points.boundary=64",
                "training.points.initial=64", "evaluation.resolution=10"]
    elif steps is not None:
        sets = [f"training.stages.0.steps={steps}"]
    rc = main(["solve", str(HEAT), "--out", str(run_dir), "--quiet",
               *[a for s in sets for a in ("--set", s)]])
    if rc != 0:
        raise SystemExit(f"training heat2d failed (exit code {rc})")


def _size(*paths: Path) -> int:
    return int(sum(p.stat().st_size for p in paths if p.exists()))


def _sides(run_dir: Path, work: Path, smoke: bool, cells: int | None):
    """``[(name, dtype, fn(points) -> array, bytes, facts)]`` and the shared facts."""
    import numpy as np

    import pinn.export as X
    from pinn import config
    from pinn.run import fem_run
    from pinn.solution import Solution

    sol = Solution.load(run_dir)
    built = config.load(str(HEAT), [])
    fem_opts = built.spec.fem
    cells = cells or (8 if smoke else fem_opts.cells)
    fem_dir = work / "fem"
    t0 = time.perf_counter()
    fem, fem_facts = fem_run(sol.problem, cells=cells, element=fem_opts.element,
                             dt=fem_opts.dt, theta=fem_opts.theta, out_dir=None,
                             resolution=sol.resolution)
    fem_seconds = time.perf_counter() - t0
    fem.save(fem_dir)
    arts = X.export(sol, work / "export", formats="all",
                    dtypes=sorted(set(STABLEHLO_DTYPES) | set(ONNX_DTYPES)),
                    source=X.source_of(run_dir), run=run_dir)
    by = {(a.meta["kind"], a.path.name.split(".")[0].partition("-")[2] or "float32"): a
          for a in arts}

    def pinn_predict(points):
        return sol.evaluate(points)["u"]

    def fem_eval(points):
        return fem.evaluate(points)["u"]

    sides = [("pinn predict", f"float{sol.precision}", pinn_predict,
              _size(run_dir / "params.npz", run_dir / "solution.json"),
              {"rel_l2_exact": sol.metrics.get("rel_l2", {}).get("u")})]
    for kind, dtypes, label in (("stablehlo", STABLEHLO_DTYPES, "StableHLO"),
                                ("onnx", ONNX_DTYPES, "ONNX")):
        for dt in dtypes:
            a = by[(kind, dt)]
            loaded = X.load(a.path)
            sides.append((label, dt, lambda p, f=loaded.fn: np.asarray(f(p))[:, 0],
                          a.meta["bytes"], {"rel_l2_model": a.check["rel_l2"]["u"]}))
    sides.append(("FEM", f"{fem_opts.element}, {fem.n_cells} cells, {fem.dofs} dofs",
                  fem_eval, _size(fem_dir / "fem.npz"),
                  {"rel_l2_exact": fem_facts.get("rel_l2", {}).get("u"),
                   "solve_seconds": fem_seconds}))
    facts = {"problem": sol.problem.name, "pinn": {
        "steps": sol.metrics.get("steps"), "n_params": sol.metrics.get("n_params"),
        "train_seconds": sol.metrics.get("train_seconds"),
        "rel_l2_exact": sol.metrics.get("rel_l2", {}).get("u")},
        "fem": {"cells": fem.n_cells, "dofs": fem.dofs, "element": fem_opts.element,
                "seconds": fem_seconds, "rel_l2_exact": fem_facts.get("rel_l2", {}).get("u")}}
    files = {k: by[(k, "float32")].path for k in ("stablehlo", "onnx")}
    return sides, facts, sol.problem, files


def _points(problem, n: int, seed: int = 0):
    import numpy as np

    lo, hi = (np.asarray(b, float) for b in problem.space.bounds)
    rng = np.random.default_rng(seed)
    pts = lo + (hi - lo) * rng.random((n, len(lo)))
    if problem.is_evolution:
        pts = np.hstack([pts, rng.uniform(problem.time.t0, problem.time.t1, (n, 1))])
    return pts


def measure(sides, problem, sizes, calls: int, repeats: int) -> list[dict]:
    import numpy as np

    pts_all = _points(problem, max(sizes))
    rows = [{"side": s[0], "dtype": s[1], "bytes": s[3], **s[4], "throughput": {}}
            for s in sides]
    one = pts_all[:1]
    for s in sides:  # warm-up: compile for one point
        np.asarray(s[2](one))
    lat = [[] for _ in sides]
    for _ in range(calls):
        for i, s in enumerate(sides):
            t0 = time.perf_counter()
            np.asarray(s[2](one))
            lat[i].append(time.perf_counter() - t0)
    for i, r in enumerate(rows):
        r["latency_ms_median"] = 1e3 * statistics.median(lat[i])
        r["latency_ms_p90"] = 1e3 * float(np.quantile(lat[i], 0.9))
    for n in sizes:
        pts = pts_all[:n]
        for s in sides:
            np.asarray(s[2](pts))
        best = [float("inf")] * len(sides)
        for _ in range(repeats):
            for i, s in enumerate(sides):
                t0 = time.perf_counter()
                np.asarray(s[2](pts))
                best[i] = min(best[i], time.perf_counter() - t0)
        for i, r in enumerate(rows):
            r["throughput"][str(n)] = n / best[i]
    return rows


def cold_start(run_dir: Path, files: dict, problem, repeats: int) -> list[dict]:
    """Wall time of one process that loads the artefact and predicts one point: the
    ``pinn predict`` command (run folder, StableHLO, ONNX) and the shipped loaders."""
    import subprocess

    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "one.csv"
        np.savetxt(csv, _points(problem, 1), delimiter=",", comments="",
                   header=",".join(c.name for c in problem.coords))
        deploy = C.ROOT / "examples" / "deploy"
        cases = [("pinn predict RUN", ["-m", "pinn.cli", "predict", str(run_dir)]),
                 ("pinn predict heat2d.stablehlo", ["-m", "pinn.cli", "predict",
                                                   str(files["stablehlo"])]),
                 ("pinn predict heat2d.onnx", ["-m", "pinn.cli", "predict",
                                              str(files["onnx"])]),
                 ("python load_stablehlo.py (jax only)", [str(deploy / "load_stablehlo.py"),
                                                          str(files["stablehlo"])]),
                 ("python load_onnx.py (onnxruntime only)", [str(deploy / "load_onnx.py"),
                                                             str(files["onnx"])])]
        times: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _ in range(repeats):
            for name, args in cases:
                argv = [sys.executable, *args, *(["-p", str(csv)] if "pinn.cli" in args
                                                 else [str(csv)])]
                t0 = time.perf_counter()
                r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                times[name].append(time.perf_counter() - t0)
                if r.returncode != 0:
                    raise SystemExit(f"{name} failed: {r.stderr[-1000:]}")
    return [{"case": k, "seconds_median": statistics.median(v), "seconds_min": min(v)}
            for k, v in times.items()]


def _pps(v) -> str:
    if v is None:
        return "–"
    for unit, k in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= k:
            return f"{v / k:.3g} {unit}"
    return f"{v:.3g}"


def render(res: dict) -> str:
    rows, sizes = res["rows"], res["sizes"]
    fem = next(r for r in rows if r["side"] == "FEM")
    big = str(sizes[min(1, len(sizes) - 1)])
    header = ["side", "precision", "file", "1 point: median ms", "p90 ms",
              *[f"{int(n):.0e} pts/s".replace("e+0", "e") for n in sizes],
              f"x FEM at {int(big):.0e}".replace("e+0", "e"), "1-pt latency x FEM",
              "rel L2 vs float32 model", "rel L2 vs exact"]
    body = []
    for r in rows:
        tp = r["throughput"]
        body.append([r["side"], r["dtype"], f"{r['bytes'] / 1024:.0f} KiB",
                     C.fmt(r["latency_ms_median"], ".3g"), C.fmt(r["latency_ms_p90"], ".3g"),
                     *[_pps(tp.get(str(n))) for n in sizes],
                     C.fmt(tp[big] / fem["throughput"][big], ".3g"),
                     C.fmt(fem["latency_ms_median"] / r["latency_ms_median"], ".3g"),
                     C.fmt(r.get("rel_l2_model"), ".2e"), C.fmt(r.get("rel_l2_exact"), ".2e")])
    f, p = res["facts"]["fem"], res["facts"]["pinn"]
    lines = [
        "# pinn: inference speed (a trained PINN, its exported graphs, and FEM)", "",
        C.generated_note("inference.py", res["command"]), "",
        f"Machine: {C.machine_line(res['machine'])}. Load average before the timing: "
        f"{res['load_before']}, after: {res['load_after']} (1/5/15 min); the machine is "
        "shared, so read ratios taken within this one run rather than absolute numbers.",
        "",
        f"Problem `{res['facts']['problem']}` on CPU (`JAX_PLATFORMS=cpu`), the field `u` at "
        f"points uniform in the space-time box (seeded). PINN: {p['steps']} steps, "
        f"{p['n_params']} parameters, relative L2 {C.fmt(p['rel_l2_exact'])} against the "
        f"exact solution. FEM: {f['element']}, {f['cells']} cells, {f['dofs']} dofs per time "
        f"level, solved in {f['seconds']:.1f} s, relative L2 {C.fmt(f['rel_l2_exact'])}. "
        f"Latency: one point, median and 90th percentile of {res['calls']} calls. "
        f"Throughput: best of {res['repeats']} calls per size after a warm-up call of that "
        "size (no compilation counted); sides take turns. `x FEM`: throughput over FEM's; "
        "`1-pt latency x FEM`: FEM's latency over the side's (above 1: faster than FEM). "
        "`rel L2 vs float32 model`: the export's own check on the run's evaluation grid "
        "(the sidecar). `file`: the artefact's size (pinn: params.npz + solution.json; FEM: "
        "fem.npz). Versions: " + ", ".join(f"{k} {v}" for k, v in res["versions"].items()
                                            if v) + ".",
        "", C.table(header, body), "",
        "`pinn predict` here is `Solution.evaluate` in a warm process (fields in chunks of "
        "65536 points); StableHLO and ONNX take all the points in one call. int8: "
        "onnxruntime's dynamic quantisation of the MatMul weights, activations quantised "
        "per call.", ""]
    if res.get("cold"):
        lines += ["## Cold start: one process, load the artefact, predict one point", "",
                  f"Wall time of the whole process (Python start, imports, loading, "
                  f"compilation, one point from a CSV file), median and minimum of "
                  f"{res['cold_repeats']} runs.", "",
                  C.table(["command", "median s", "min s"],
                          [[c["case"], C.fmt(c["seconds_median"], ".2f"),
                            C.fmt(c["seconds_min"], ".2f")] for c in res["cold"]]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    os.environ["JAX_PLATFORMS"] = "cpu"  # on CPU always, before JAX is imported
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a heat2d run folder (default: train one)")
    ap.add_argument("--steps", type=int, help="Adam steps when training (default: the file's)")
    ap.add_argument("--cells", type=int, help="FEM cells per side (default: the file's)")
    ap.add_argument("--calls", type=int, default=200, help="calls for the 1-point latency")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per size")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, no file written")
    ap.add_argument("--out", type=Path, help=f"the table (default: {OUT_MD.name}; "
                                             "--smoke: none)")
    ap.add_argument("--from-json", type=Path, help="render the table from a JSON result")
    a = ap.parse_args(argv)
    command = C.command_line("inference.py", argv)
    if a.from_json:
        res = C.read_json(a.from_json)
        C.write_text(a.out or OUT_MD, render(res))
        return 0
    sizes = (10, 1000) if a.smoke else SIZES
    calls, repeats = (5, 1) if a.smoke else (a.calls, a.repeats)
    with tempfile.TemporaryDirectory(prefix="pinn-inference-") as tmp:
        work = Path(tmp)
        run_dir = a.run
        if run_dir is None:
            run_dir = work / "heat2d"
            _train(run_dir, a.steps, a.smoke)
        sides, facts, problem, files = _sides(run_dir, work, a.smoke, a.cells)
        load_before = C.load_average()
        rows = measure(sides, problem, sizes, calls, repeats)
        load_after = C.load_average()
        cold_repeats = 1 if a.smoke else 3
        cold = cold_start(run_dir, files, problem, cold_repeats)
    from pinn.export.sidecar import versions

    res = {"command": command, "machine": C.machine(), "load_before": load_before,
           "load_after": load_after, "sizes": list(sizes), "calls": calls,
           "repeats": repeats, "facts": facts, "rows": rows, "cold": cold,
           "cold_repeats": cold_repeats,
           "versions": versions("jax2onnx", "onnx", "onnxruntime", "scikit-fem")}
    text = render(res)
    print(text)
    if not a.smoke or a.out:
        C.write_json(OUT_JSON if not a.smoke else Path(a.out).with_suffix(".json"), res)
        C.write_text(a.out or OUT_MD, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
