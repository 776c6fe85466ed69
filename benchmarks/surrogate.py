"""The many-query benchmark: one parametric PINN training against one FEM solve per query,
at equal accuracy, for N = 1 ... 10^4 queries.

    python benchmarks/surrogate.py                          # the three problems (~30 min)
    python benchmarks/surrogate.py --problems poisson2d_parametric
    python benchmarks/surrogate.py --smoke --out /tmp/s.md  # seconds (tests)

For each parametric problem file (heat 2D over a 10x range of the diffusivity, Poisson 2D
with a source parameter, Burgers over a 10x range of the viscosity):

1. the PINN trains once with the file's own settings (wall time, compilation included);
   its errors are taken at 9 parameter values across the range;
2. a query is one new parameter value answered on the file's evaluation grid: for the
   PINN, one network evaluation there (timed over repeated queries at fresh values);
3. FEM at equal accuracy: at each of 5 test values (ends, quartiles, centre) a refinement
   study (``pinn.fem.study.refine``, P1-P3, doubling meshes, dt following h) finds the
   levels at least as accurate as the PINN at that value; the FEM a user would run for a
   campaign is the cheapest single level (element, cells) that meets the PINN's error at
   all 5. Each FEM query is a solve on that mesh (built once) with a shared
   ``SolveCache``: an operator that does not change with the parameter (Poisson's source)
   is factorised once, and later queries pay assembly and triangular solves only. The FEM
   time is the solve's; reading its values at the grid points is not counted (in FEM's
   favour);
4. total cost for N queries: PINN ``T_train + N t_pinn``, FEM ``t_first + (N - 1) t_fem``;
   the break-even N is where the PINN's total falls below FEM's.

Both run on this machine's CPU cores in one process, one after the other. Results:
``benchmarks/results/surrogate.json``, ``benchmarks/SURROGATE.md`` and
``benchmarks/surrogate.png`` (total time against N).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

PROBLEMS = {
    "heat2d_parametric": "heat 2D, alpha in [0.01, 0.1]",
    "poisson2d_parametric": "Poisson 2D, source parameter a in [-1, 1]",
    "burgers1d_parametric": "Burgers 1D, nu in [0.01/pi, 0.1/pi]",
}
NS = (1, 10, 100, 1000, 10000)
SMOKE = ["training.stages.0.steps=30", "training.stages.1.steps=5",
         "training.points.interior=256", "training.points.boundary=64",
         "training.points.initial=64", "evaluation.resolution=12"]


def _fixed(path, name: str, value: float, sets):
    """The problem with its ranged parameter fixed at ``value`` (what one FEM solve is)."""
    import pinn.config

    return pinn.config.load(path, [*sets, f"params.{name}={value!r}"]).problem


def _pinn_query_seconds(sol, problem, grid, values, repeats: int) -> float:
    """Seconds per query: the field on the grid at a parameter value never asked before."""
    import numpy as np

    name = problem.ranged[0].name
    lo, hi = problem.ranged[0].range
    sol.evaluate(grid.points, params={name: float(values[0])})  # compile
    rng = np.random.default_rng(1)
    fresh = rng.uniform(lo, hi, repeats)
    t0 = time.perf_counter()
    for v in fresh:
        out = sol.evaluate(grid.points, params={name: float(v)})
        next(iter(out.values())).sum()
    return (time.perf_counter() - t0) / repeats


def _matched_level(studies: list, errors: list[float]):
    """The cheapest level (element, cells, time step) that meets each test value's PINN
    error: a level meets a value when that value's study reached the error with the same
    element and time-step factor on as many cells or fewer (errors fall as the mesh and
    the time step are refined together). Returns a ``Level`` (its time: the slowest of
    the test values') or None."""
    candidates: dict = {}
    for study, err in zip(studies, errors, strict=True):
        for lv in study.levels:
            if lv.error <= err:
                candidates.setdefault(lv.key, []).append(lv)
    ok = []
    for (element, cells, coarser), found in candidates.items():
        meets_all = all(any(lv.element == element and lv.coarser == coarser
                            and lv.cells <= cells and lv.error <= err for lv in s.levels)
                        for s, err in zip(studies, errors, strict=True))
        if meets_all:
            slowest = max(found, key=lambda lv: lv.seconds)
            ok.append((slowest.seconds, slowest.key, slowest))
    return min(ok, key=lambda t: (t[0], t[1]))[2] if ok else None


def run_problem(key: str, smoke: bool, max_level_seconds: float) -> dict:
    import numpy as np

    import pinn
    import pinn.config
    from pinn import evaluate as ev
    from pinn import fem
    from pinn.fem.study import refine

    path = C.ROOT / "problems" / f"{key}.yaml"
    sets = SMOKE if smoke else []
    built = pinn.config.load(path, sets)
    problem = built.problem
    name = problem.ranged[0].name
    res = built.spec.evaluation.resolution
    grid = ev.evaluation_grid(problem, res)
    out: dict = {"problem": key, "title": PROBLEMS.get(key, key), "param": name,
                 "range": list(problem.ranged[0].range), "grid": list(grid.shape),
                 "load_start": C.load_average()}
    print(f"{key}: training the PINN", flush=True)
    t0 = time.perf_counter()
    run = built.setup(problem=problem, progress=False, resolution=res)
    sol = run.train()
    out["train_seconds"] = time.perf_counter() - t0
    over = sol.errors_over_params(9)
    out["pinn_errors"] = [{name: r[name], "rel_l2": max(r["rel_l2"].values())} for r in over]
    tests = [r[name] for r in over][::2]  # 5 values: ends, quartiles, centre
    pinn_err = [sol.errors(params={name: v})["rel_l2"] for v in tests]
    pinn_err = [max(e.values()) for e in pinn_err]
    out["pinn_query_seconds"] = _pinn_query_seconds(sol, problem, grid, tests,
                                                    5 if smoke else 50)
    print(f"  trained in {out['train_seconds']:.1f} s; errors {min(pinn_err):.2e} .. "
          f"{max(pinn_err):.2e}; {1e3 * out['pinn_query_seconds']:.2f} ms per query",
          flush=True)
    # FEM: a study per test value, at that value's PINN error
    studies = []
    for v, err in zip(tests, pinn_err, strict=True):
        fixed = _fixed(path, name, v, sets)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = refine(fixed, target_error=err, budget_seconds=0.0, resolution=res,
                       max_level_seconds=max_level_seconds,
                       cells=(4, 8) if smoke and problem.space.dim > 1 else
                       (8, 16) if smoke else None)
        studies.append(s)
        best = min(s.levels, key=lambda lv: lv.error)
        print(f"  FEM study at {name}={v:.4g}: {len(s.levels)} levels, best {best.error:.2e}",
              flush=True)
    out["studies"] = [s.to_data() for s in studies]
    out["load_fem"] = C.load_average()
    level = _matched_level(studies, pinn_err)
    if level is None:
        out["fem_level"] = None
        out["verdict"] = "no FEM level of the studies met the PINN's error at every test value"
        return out
    element, cells, steps = level.element, level.cells, level.steps
    out["fem_level"] = [element, cells]
    out["fem_dt"], out["fem_steps"] = level.dt, steps
    fixed = [_fixed(path, name, v, sets) for v in tests]
    mesh = fem.build_mesh(problem.space, cells=cells)
    cache = fem.SolveCache()
    secs, errs = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fem.solve(fixed[0], mesh=fem.build_mesh(problem.space, cells=4), element=element)
        for prob in fixed:
            t1 = time.perf_counter()
            fs = fem.solve(prob, mesh=mesh, element=element, cache=cache,
                           **({"steps": steps} if steps else {}))
            secs.append(time.perf_counter() - t1)
            errs.append(max(ev.score(prob, fs.evaluate, grid).rel_l2.values()))
    out.update(fem_first_seconds=secs[0], fem_query_seconds=float(np.mean(secs[1:])),
               fem_errors=errs, fem_dofs=int(fs.dofs), factor_reuses=cache.hits,
               factorisations=cache.misses)
    t_train, t_p = out["train_seconds"], out["pinn_query_seconds"]
    t_f1, t_f = out["fem_first_seconds"], out["fem_query_seconds"]
    out["speedup_per_query"] = t_f / t_p
    # PINN total <= FEM total: t_train + N t_p <= t_f1 + (N - 1) t_f
    if t_f > t_p:
        out["break_even"] = max(1, math.ceil((t_train - t_f1 + t_f) / (t_f - t_p)))
    else:
        out["break_even"] = None
    out["totals"] = {str(n): {"pinn": t_train + n * t_p, "fem": t_f1 + (n - 1) * t_f}
                     for n in NS}
    be = out["break_even"]
    print(f"  FEM {element} {cells} cells ({out['fem_dofs']} dofs): {t_f1:.3g} s first, "
          f"{t_f:.3g} s per query; break-even N = {be}", flush=True)
    return out


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    done = [r for r in results if r.get("totals")]
    if not done:
        return
    fig, axes = plt.subplots(1, len(done), figsize=(4.6 * len(done), 3.8), squeeze=False)
    n = np.logspace(0, 4, 60)
    for ax, r in zip(axes[0], done, strict=True):
        ax.loglog(n, r["train_seconds"] + n * r["pinn_query_seconds"], lw=2,
                  label="PINN: training + N queries")
        ax.loglog(n, r["fem_first_seconds"] + (n - 1) * r["fem_query_seconds"], lw=2,
                  label=f"FEM {r['fem_level'][0]}, {r['fem_level'][1]} cells: N solves")
        if r.get("break_even"):
            be = r["break_even"]
            ax.axvline(be, color="gray", ls=":", lw=1)
            ax.text(be, ax.get_ylim()[0] * 1.5, f" N = {be}", fontsize=8, color="gray")
        ax.set_title(r["title"], fontsize=9)
        ax.set_xlabel("queries N")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("total wall time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(results: list[dict], machine: dict, command: str, image: str | None) -> str:
    lines = ["# Parametric PINN against FEM, many queries at equal accuracy", "",
             C.generated_note("surrogate.py", command), "",
             f"Machine: {C.machine_line(machine)}.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()) + ".",
             "", "A query is one new parameter value, answered on the problem file's evaluation "
             "grid. The PINN trains once (the file's own settings, compilation included) and "
             "answers a query with one network evaluation; FEM solves once per query on the "
             "cheapest mesh and element that are at least as accurate as the PINN at each of "
             "5 test values of the parameter (refinement studies, P1-P3), reusing the mesh and, "
             "when the operator does not change with the parameter, the factorisation. FEM's "
             "time is its solve's only (reading its values at the grid points is not counted). "
             "Both run on the same CPU cores, one after the other, in one process.", "",
             C.table(("problem", "PINN training (s)", "PINN rel. L2 (9 values)",
                      "PINN per query (ms)", "FEM at equal accuracy", "FEM rel. L2 (5 values)",
                      "FEM per query (ms)", "per-query speed-up", "break-even N"),
                     [_row(r) for r in results]), ""]
    if image:
        lines += [f"![total time against the number of queries]({image})", ""]
    lines += ["## Where each wins", ""]
    for r in results:
        lines.append("- " + _verdict(r))
    loads = [f"{r['title']}: {r['load_start'][0]:.1f} when its training began, "
             f"{r['load_fem'][0]:.1f} when its FEM queries began" for r in results
             if r.get("load_start") and r.get("load_fem")]
    if loads:
        lines += ["", "Load average (over the last minute, so it lags the moment it names): "
                  + "; ".join(loads) + "."]
    lines += ["", "Total wall time (s) for N queries (PINN: training + N evaluations; FEM: N "
              "solves):", "",
              C.table(("problem", *[f"N = {n}" for n in NS]),
                      [(r["title"], *[f"{r['totals'][str(n)]['pinn']:.3g} / "
                                      f"{r['totals'][str(n)]['fem']:.3g}" for n in NS])
                       for r in results if r.get("totals")]), "",
              "Each cell: PINN / FEM.", ""]
    return "\n".join(lines)


def _row(r: dict) -> tuple:
    errs = [e["rel_l2"] for e in r.get("pinn_errors", [])]
    perr = f"{min(errs):.2e} .. {max(errs):.2e}" if errs else "–"
    if not r.get("fem_level"):
        return (r["title"], C.fmt(r.get("train_seconds"), ".3g"), perr,
                C.fmt(1e3 * r["pinn_query_seconds"], ".3g") if "pinn_query_seconds" in r
                else "–", r.get("verdict", r.get("error", "–")), "–", "–", "–", "–")
    fe = r["fem_errors"]
    el, cells = r["fem_level"]
    reuse = f", LU reused {r['factor_reuses']}x" if r.get("factor_reuses") else ""
    if r.get("fem_steps"):
        reuse = f", {r['fem_steps']} time steps" + reuse
    sp = r["speedup_per_query"]
    return (r["title"], f"{r['train_seconds']:.3g}", perr, f"{1e3 * r['pinn_query_seconds']:.3g}",
            f"{el}, {cells} cells, {r['fem_dofs']} dofs{reuse}",
            f"{min(fe):.2e} .. {max(fe):.2e}", f"{1e3 * r['fem_query_seconds']:.3g}",
            f"{sp:.3g}x" if sp >= 1 else f"1/{1 / sp:.3g}x (FEM faster)",
            str(r["break_even"]) if r.get("break_even") else "never")


def _verdict(r: dict) -> str:
    if "error" in r:
        return f"{r['title']}: failed: {r['error']}"
    if not r.get("fem_level"):
        return f"{r['title']}: {r.get('verdict')}"
    be = r.get("break_even")
    if be is None:
        return (f"{r['title']}: **FEM wins at every N**: a FEM query "
                f"({1e3 * r['fem_query_seconds']:.3g} ms) is cheaper than a PINN evaluation "
                f"({1e3 * r['pinn_query_seconds']:.3g} ms), so training never pays off.")
    tail = ("FEM wins below that" if be > 1 else "the PINN wins at every N")
    return (f"{r['title']}: the PINN's training ({r['train_seconds']:.3g} s) pays off after "
            f"**N = {be}** queries ({tail}); each query is {r['speedup_per_query']:.3g}x "
            "cheaper than a FEM solve of equal accuracy.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--smoke", action="store_true", help="tiny training (tests)")
    ap.add_argument("--out", type=Path, default=None, help="the Markdown file (default: "
                    "benchmarks/SURROGATE.md; with --smoke nothing else is written)")
    ap.add_argument("--max-level-seconds", type=float, default=60.0,
                    help="stop refining an element when its next solve would take longer")
    ap.add_argument("--from-json", type=Path, default=None,
                    help="re-render SURROGATE.md and the plot from a results file")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.problems.split(",") if k.strip()]
    if args.from_json is not None:
        saved = C.read_json(args.from_json)
        plot(saved["results"], C.HERE / "surrogate.png")
        out = args.out or C.HERE / "SURROGATE.md"
        C.write_text(out, render(saved["results"], saved["machine"], saved["command"],
                                 "surrogate.png"))
        print(f"wrote {out}")
        return 0
    machine = C.machine()
    results = []
    for key in keys:
        try:
            results.append(run_problem(key, args.smoke, args.max_level_seconds))
        except Exception as exc:  # noqa: BLE001 - one problem's failure is reported
            results.append({"problem": key, "title": PROBLEMS.get(key, key),
                            "error": f"{type(exc).__name__}: {exc}"})
            print(f"{key}: failed: {exc}", flush=True)
    command = C.command_line("surrogate.py", argv)
    out = args.out or C.HERE / "SURROGATE.md"
    image = None
    if not args.smoke:
        plot(results, C.HERE / "surrogate.png")
        image = "surrogate.png"
        C.write_json(C.HERE / "results" / "surrogate.json",
                     {"machine": machine, "command": command, "results": results})
    C.write_text(out, render(results, machine, command, image))
    print(f"wrote {out}")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
