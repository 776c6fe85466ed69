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
* ``FEM (equal accuracy)``: the scikit-fem solution of the same problem at the PINN's
  accuracy: the coarsest P2 mesh of ``CELLS_SEQUENCE`` whose relative L2 error
  (``pinn.evaluate.score``, the PINN's grid and rule) is at or below the PINN's, then the
  fewest time steps (halving) that keep it there; evaluated at the same points by
  ``FEMSolution.evaluate`` (a KD-tree cell search and the element basis, in chunks of 8192
  points) and, a second row, by scikit-fem's ``Basis.probes`` (its cell search builds a
  dense points x candidate-cells array: ``PROBES_CHUNK`` points per call);
* ``FEM (accurate reference)``: the file's FEM settings (``pinn.run.fem_run``), about 100x
  more accurate than the PINN, evaluated by ``FEMSolution.evaluate``.

Latency: one point, the median and the 90th percentile of ``--calls`` calls after a warm-up,
in ``LATENCY_ROUNDS`` blocks of consecutive calls per side (the sides take turns by block).
Throughput: points per second for 1e3, 1e5 and 1e6 points, the best of ``--repeats`` calls
after one warm-up call of the same size (so compilation for a new batch size is not
counted); the sides take turns, so that load from other processes hits them alike.
File size: the artefact (``pinn predict``: the run's ``params.npz`` + ``solution.json``;
FEM: ``fem.npz``). Ratios: against the FEM of equal accuracy (``FEMSolution.evaluate``),
throughput also against the accurate reference. Error: each side against the float32
model (the sidecar's ``check``) and, for pinn and FEM, against the exact solution on the
evaluation grid.
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
        sets = ["training.stages=[{adam: {lr: 5.0e-3}, steps: 20}, {ssbroyden: {}, steps: 2}]",
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


CELLS_SEQUENCE = (4, 8, 16, 32, 64)  # P2 meshes tried for the FEM of the PINN's accuracy
LATENCY_ROUNDS = 10  # turns the sides take for the 1-point latency
PROBES_CHUNK = 1024  # points per skfem ``probes`` call (it builds points x candidate cells)


def _equal_accuracy_fem(problem, target: float | None, fem_opts, resolution, smoke: bool):
    """The FEM solution of the PINN's accuracy: the coarsest mesh of ``CELLS_SEQUENCE`` (the
    file's element, its time step rule) whose relative L2 error on the evaluation grid is at
    or below ``target``, then the fewest time steps (halving the default count) that keep it
    there. Returns ``(FEMSolution, facts, sequence)``; every try is in ``sequence``."""
    from pinn import evaluate as ev
    from pinn import fem as F

    seq = []

    def attempt(cells, steps=None):
        t0 = time.perf_counter()
        s = F.solve(problem, cells=cells, element=fem_opts.element, theta=fem_opts.theta,
                    dt=None if steps is not None else fem_opts.dt, steps=steps)
        seconds = time.perf_counter() - t0
        err = ev.score(problem, s.evaluate, resolution=resolution).metrics()["rel_l2"]["u"]
        seq.append({"cells_per_side": cells, "cells": s.n_cells, "dofs": s.dofs,
                    "steps": s.info.get("steps"), "dt": s.info.get("dt"),
                    "seconds": seconds, "rel_l2_exact": err,
                    "meets": target is not None and err <= target})
        return s, seq[-1]

    chosen = None
    for cells in CELLS_SEQUENCE[:3] if smoke else CELLS_SEQUENCE:
        s, f = attempt(cells)
        if f["meets"]:
            chosen = (s, f)
            break
    if chosen is None:  # none reached the PINN's error: the finest one tried
        chosen = (s, f)
    elif problem.is_evolution:  # fewer stored time steps: a smaller file, same evaluation
        steps = chosen[1]["steps"]
        while steps // 2 >= 1:
            s, f = attempt(chosen[1]["cells_per_side"], steps // 2)
            if not f["meets"]:
                break
            chosen, steps = (s, f), steps // 2
    chosen[1]["chosen"] = True
    return chosen[0], chosen[1], seq


def _probes_evaluator(fem):
    """Values of ``u`` through scikit-fem's ``Basis.probes`` (a sparse points x dofs matrix;
    its cell search builds a dense points x candidate-cells array, so ``PROBES_CHUNK`` points
    at a time), interpolated linearly between stored time steps as ``FEMSolution.evaluate``."""
    import numpy as np
    import skfem

    basis = skfem.Basis(fem.mesh, fem._elements["u"])
    S, off, sd = fem.snapshots, fem.offsets["u"], fem.mesh.p.shape[0]

    def evaluate(points):
        pts = np.asarray(points, dtype=np.float64)
        out = np.empty(len(pts))
        for a in range(0, len(pts), PROBES_CHUNK):
            c = pts[a: a + PROBES_CHUNK]
            P = basis.probes(c[:, :sd].T).tocoo()
            r, col = P.row, P.col + off
            if fem.is_evolution:
                k, w = fem._time_weights(c[:, sd])
                v = P.data * ((1 - w[r]) * S[k[r], col] + w[r] * S[k[r] + 1, col])
            else:
                v = P.data * S[0, col]
            out[a: a + PROBES_CHUNK] = np.bincount(r, v, minlength=len(c))
        return out

    return evaluate


def _sides(run_dir: Path, work: Path, smoke: bool, cells: int | None):
    """``[(name, dtype, fn(points) -> array, bytes, facts)]`` and the shared facts."""
    import numpy as np

    import pinn.export as X
    from pinn import config
    from pinn import evaluate as ev
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
    pinn_err = sol.metrics.get("rel_l2", {}).get("u")
    eq, eq_facts, sequence = _equal_accuracy_fem(sol.problem, pinn_err, fem_opts,
                                                 sol.resolution, smoke)
    eq_dir = work / "fem-equal"
    eq.save(eq_dir)
    probes = _probes_evaluator(eq)
    probes_err = ev.score(sol.problem, lambda p: {"u": probes(p)},
                          resolution=sol.resolution).metrics()["rel_l2"]["u"]
    arts = X.export(sol, work / "export", formats="all",
                    dtypes=sorted(set(STABLEHLO_DTYPES) | set(ONNX_DTYPES)),
                    source=X.source_of(run_dir), run=run_dir)
    by = {(a.meta["kind"], a.path.name.split(".")[0].partition("-")[2] or "float32"): a
          for a in arts}

    def pinn_predict(points):
        return sol.evaluate(points)["u"]

    def fem_eval(points):
        return fem.evaluate(points)["u"]

    def eq_eval(points):
        return eq.evaluate(points)["u"]

    sides = [("pinn predict", f"float{sol.precision}", pinn_predict,
              _size(run_dir / "params.npz", run_dir / "solution.json"),
              {"rel_l2_exact": pinn_err})]
    for kind, dtypes, label in (("stablehlo", STABLEHLO_DTYPES, "StableHLO"),
                                ("onnx", ONNX_DTYPES, "ONNX")):
        for dt in dtypes:
            a = by[(kind, dt)]
            loaded = X.load(a.path)
            sides.append((label, dt, lambda p, f=loaded.fn: np.asarray(f(p))[:, 0],
                          a.meta["bytes"], {"rel_l2_model": a.check["rel_l2"]["u"]}))
    eq_label = (f"{fem_opts.element}, {eq.n_cells} cells, {eq.dofs} dofs, "
                f"{eq_facts['steps']} steps")
    sides.append(("FEM", eq_label, eq_eval, _size(eq_dir / "fem.npz"),
                  {"role": "equal accuracy", "evaluator": "FEMSolution.evaluate",
                   "rel_l2_exact": eq_facts["rel_l2_exact"],
                   "solve_seconds": eq_facts["seconds"]}))
    sides.append(("FEM", eq_label, probes, _size(eq_dir / "fem.npz"),
                  {"role": "equal accuracy", "evaluator": "skfem probes",
                   "rel_l2_exact": probes_err, "solve_seconds": eq_facts["seconds"]}))
    sides.append(("FEM", f"{fem_opts.element}, {fem.n_cells} cells, {fem.dofs} dofs, "
                  f"{fem.info.get('steps')} steps", fem_eval, _size(fem_dir / "fem.npz"),
                  {"role": "accurate reference", "evaluator": "FEMSolution.evaluate",
                   "rel_l2_exact": fem_facts.get("rel_l2", {}).get("u"),
                   "solve_seconds": fem_seconds}))
    facts = {"problem": sol.problem.name, "pinn": {
        "steps": sol.metrics.get("steps"), "n_params": sol.metrics.get("n_params"),
        "train_seconds": sol.metrics.get("train_seconds"),
        "rel_l2_exact": pinn_err},
        "fem": {"cells": fem.n_cells, "dofs": fem.dofs, "element": fem_opts.element,
                "steps": fem.info.get("steps"),
                "seconds": fem_seconds, "rel_l2_exact": fem_facts.get("rel_l2", {}).get("u")},
        "fem_equal": {**eq_facts, "element": fem_opts.element, "sequence": sequence,
                      "probes_chunk": PROBES_CHUNK, "probes_rel_l2_exact": probes_err}}
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
    # in blocks: each side makes an untimed call, then calls // LATENCY_ROUNDS timed ones in
    # a row, and the sides take turns block by block. Calls interleaved one by one slowed
    # the side just after ONNX (the FEM of equal accuracy: 0.22 ms interleaved, 0.087 ms
    # alone in a process of its own; onnxruntime's spinning threads, presumably).
    lat = [[] for _ in sides]
    rounds = min(LATENCY_ROUNDS, calls)
    for r in range(rounds):
        for i, s in enumerate(sides):
            np.asarray(s[2](one))
            for _ in range(calls // rounds + (r < calls % rounds)):
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


def _side_name(r: dict) -> str:
    if r["side"] != "FEM" or not r.get("role"):
        return r["side"]
    how = ", skfem probes" if r.get("evaluator") == "skfem probes" else ""
    return f"FEM ({r['role']}{how})"


def render(res: dict) -> str:
    rows, sizes = res["rows"], res["sizes"]
    fems = [r for r in rows if r["side"] == "FEM"]
    fem_eq = next((r for r in fems if r.get("role") == "equal accuracy"
                   and r.get("evaluator") != "skfem probes"), fems[0])
    fem_ref = next((r for r in fems if r.get("role") == "accurate reference"), None)
    big = str(sizes[min(1, len(sizes) - 1)])
    e = f"{int(big):.0e}".replace("e+0", "e")
    header = ["side", "precision", "file", "1 point: median ms", "p90 ms",
              *[f"{int(n):.0e} pts/s".replace("e+0", "e") for n in sizes],
              f"x FEM (equal accuracy) at {e}", "1-pt latency x FEM (equal accuracy)",
              *([f"x FEM (accurate reference) at {e}"] if fem_ref else []),
              "rel L2 vs float32 model", "rel L2 vs exact"]
    body = []
    for r in rows:
        tp = r["throughput"]
        body.append([_side_name(r), r["dtype"], f"{r['bytes'] / 1024:.0f} KiB",
                     C.fmt(r["latency_ms_median"], ".3g"), C.fmt(r["latency_ms_p90"], ".3g"),
                     *[_pps(tp.get(str(n))) for n in sizes],
                     C.fmt(tp[big] / fem_eq["throughput"][big], ".3g"),
                     C.fmt(fem_eq["latency_ms_median"] / r["latency_ms_median"], ".3g"),
                     *([C.fmt(tp[big] / fem_ref["throughput"][big], ".3g")] if fem_ref else []),
                     C.fmt(r.get("rel_l2_model"), ".2e"), C.fmt(r.get("rel_l2_exact"), ".2e")])
    f, p = res["facts"]["fem"], res["facts"]["pinn"]
    q = res["facts"].get("fem_equal")
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
        "exact solution. "
        + (f"FEM of equal accuracy: {q['element']}, {q['cells']} cells, {q['dofs']} dofs "
           f"per time level, {q['steps']} time steps, solved in {q['seconds']:.2g} s, "
           f"relative L2 {C.fmt(q['rel_l2_exact'])} (the coarsest of the sequence below at "
           "or below the PINN's error). " if q else "")
        + f"FEM, accurate reference: {f['element']}, {f['cells']} cells, {f['dofs']} dofs "
        f"per time level, {f.get('steps') or '–'} time steps, solved in {f['seconds']:.1f} s "
        "(scoring included), relative L2 "
        f"{C.fmt(f['rel_l2_exact'])}. All errors: `pinn.evaluate.score`, the problem's "
        "evaluation grid and rule. "
        f"Latency: one point, median and 90th percentile of {res['calls']} calls "
        f"({res.get('latency_rounds', 1)} blocks of consecutive calls per side, the sides "
        "taking turns by block, an untimed call before each block). "
        f"Throughput: best of {res['repeats']} calls per size after a warm-up call of that "
        "size (no compilation counted); sides take turns. `x FEM (equal accuracy)`: "
        "throughput over that of the FEM of equal accuracy through `FEMSolution.evaluate`; "
        "`1-pt latency x FEM (equal accuracy)`: its latency over the side's (above 1: faster "
        "than that FEM). `rel L2 vs float32 model`: the export's own check on the run's "
        "evaluation grid (the sidecar). `file`: the artefact's size (pinn: params.npz + "
        "solution.json; FEM: fem.npz, every stored time step). Versions: "
        + ", ".join(f"{k} {v}" for k, v in res["versions"].items() if v) + ".",
        "", C.table(header, body), "",
        "`pinn predict` here is `Solution.evaluate` in a warm process (fields in chunks of "
        "65536 points); StableHLO and ONNX take all the points in one call. int8: "
        "onnxruntime's dynamic quantisation of the MatMul weights, activations quantised "
        "per call.", ""]
    if q:
        probe = next((r for r in fems if r.get("evaluator") == "skfem probes"), None)
        if probe:
            ratio = fem_eq["throughput"][big] / probe["throughput"][big]
            lat = probe["latency_ms_median"] / fem_eq["latency_ms_median"]
            faster = ratio >= 1 and lat >= 1
            lines += [
                "Two evaluators of the same FEM solution: `FEMSolution.evaluate` (pinn's: a "
                "KD-tree on cell centres, barycentric tests on the 12 nearest cells, the "
                "element basis, 8192 points per chunk) and scikit-fem's `Basis.probes` (its "
                "`element_finder` tests each point against the union of the 5 nearest cells "
                "of all points in the call, a dense points x candidate-cells array, so "
                f"{q['probes_chunk']} points per call; then a sparse points x dofs matrix "
                "applied to the two stored time steps around each point). Same values "
                f"(relative L2 {C.fmt(probe['rel_l2_exact'])} against "
                f"{C.fmt(fem_eq['rel_l2_exact'])}); at {e} points pinn's evaluator is "
                f"{ratio:.3g}x the throughput of `probes`, for one point {lat:.3g}x faster. "
                + ("So the ratios against FEM are taken against pinn's evaluator, the "
                   "stronger baseline." if faster else
                   "`probes` is faster here in at least one of the two; its row is the "
                   "stronger baseline there."), ""]
        lines += ["## The FEM of the PINN's accuracy: the refinement sequence", "",
                  f"{q['element']} on meshes of n x n squares cut in two triangles, the "
                  "default time step (Crank-Nicolson, about the cell size to the power 1.5); "
                  "the first mesh at or below the PINN's error "
                  f"({C.fmt(p['rel_l2_exact'])}), then the number of time steps halved while "
                  "the error stays there (fewer stored steps: a smaller file; evaluation "
                  "interpolates linearly in time, which the grid's times test).", "",
                  C.table(["cells per side", "cells", "dofs", "time steps", "solve s",
                           "rel L2 vs exact", "at or below the PINN's", "chosen"],
                          [[s["cells_per_side"], s["cells"], s["dofs"], s["steps"],
                            C.fmt(s["seconds"], ".2g"), C.fmt(s["rel_l2_exact"]),
                            "yes" if s["meets"] else "no",
                            "yes" if s.get("chosen") else ""] for s in q["sequence"]]), ""]
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
           "repeats": repeats, "latency_rounds": min(LATENCY_ROUNDS, calls), "facts": facts,
           "rows": rows, "cold": cold,
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
