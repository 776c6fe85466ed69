"""The design study of issue 31: a parametric PINN over three parameters, one of them the
domain's shape, against FEM solved per query, and a design optimisation through each.

    python benchmarks/design.py                            # the study (~10 min on 2 cores)
    python benchmarks/design.py --smoke --out /tmp/design  # the pipeline in ~40 s
    python benchmarks/design.py --from-json benchmarks/results/design.json  # the markdown

The problem (``benchmarks/design/plate_hole.yaml``): steady heat conduction in a square
plate heated by a source ``s`` and cooled by a channel of radius ``r`` through its middle
(held at the coolant's temperature) and by convection at its edges; conductivity ``k``.
``r``, ``k`` and ``s`` are ranged: one network answers every plate.

1. The PINN trains once over the parameter box with the file's settings (the library's
   default recipe; only the points are raised for five inputs). Wall time, compilation
   included.
2. Test set: 32 parameter values from a scrambled Sobol net with its own seed (apart from
   the training points). At each, FEM on a fine mesh (P3, 128 cells along a side, its own
   DistMesh of that plate) is the reference; the PINN's error is the relative L2 over the
   points of a 101 x 101 grid of the plate's box that lie in that plate (worst and median
   over the test set), and the errors of its quantities of interest (same quadrature
   points on both sides).
3. FEM at equal accuracy: a refinement study at every test value (P1-P3, 4 ... 64 cells),
   each level's error against the fine FEM on the same points; the FEM a user would run is
   the cheapest level whose median error is at most the PINN's median (the level meeting
   the PINN's worst error is reported too). Its mesh per query is not meshed again: the
   mesh of the middle radius is built once and its nodes are moved along rays from the
   channel's centre (a linear blend between the channel and the plate's edge), so a query
   costs the move and the solve (assembly included). Remeshing each plate (DistMesh, what
   ``pinn fem`` does) is timed beside it at the same level.
4. Per-query time of the PINN: the field on the whole grid at one new parameter value
   (single), and at all test values in one call (batched), after compilation; FEM's: the
   move and the solve at the matched level (its values at the grid points are not
   counted, in FEM's favour). Speed-up = FEM per query / PINN per query; break-even =
   training time / (FEM per query - PINN per query).
5. Design: minimise ``objective`` (mean temperature + c_r r^2 + c_k k) over (r, k) at the
   heat load s = 1.5. The PINN: :func:`pinn.design.optimize` (L-BFGS-B, the gradient by
   JAX through the network, 8 starts) and one FEM check (:func:`pinn.design.fem_check`
   at the matched level). FEM: L-BFGS-B with forward finite differences (no adjoint: the
   shape derivative of the assembled system was not built), from the centre of the box,
   on the matched level's moved mesh, the objective integrated exactly on the mesh (a
   smooth function of (r, k), so finite differences work). Each optimum's objective is
   then computed by the fine FEM, and the relative gap taken against FEM's. Wall times:
   PINN training + optimisation + check; FEM all its solves (the reference mesh
   included). A reference optimum (the same FEM optimisation on the fine mesh, not timed
   against anything) shows how close both came.

Results: ``benchmarks/results/design.json`` and ``benchmarks/DESIGN.md`` (``--out DIR``:
``DIR/design.json`` and ``DIR/DESIGN.md``; ``--smoke`` writes only there). Both sides run
on this machine's CPU cores in one process, one after the other; the load is recorded.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

PROBLEM = C.HERE / "design" / "plate_hole.yaml"
JSON_NAME, MD_NAME = "design.json", "DESIGN.md"
CENTRE, PLATE = (0.5, 0.5), ((0.0, 0.0), (1.0, 1.0))  # the file's channel centre and plate
DESIGN = {"quantity": "objective", "over": ("r", "k"), "fixed": {"s": 1.5}}
TEST_SEED = 20260531  # the test set's Sobol scramble (training draws from seed 0)
TARGETS = {"speedup": 1000.0, "break_even": 1000.0, "gap": 0.01, "sooner": 10.0}


@dataclass(frozen=True)
class Settings:
    queries: int = 32
    grid: int = 101
    elements: tuple = ("P1", "P2", "P3")
    cells: tuple = (4, 8, 16, 32, 64)
    fine: tuple = ("P3", 128)
    starts: int = 8
    repeats: int = 3
    max_level_seconds: float = 20.0
    reference_optimum: bool = True
    sets: tuple = ()


SMOKE = Settings(queries=3, grid=21, elements=("P1", "P2"), cells=(8, 16), fine=("P2", 32),
                 starts=2, repeats=1, reference_optimum=False,
                 sets=("training.stages.0.steps=30", "training.stages.1.steps=5",
                       "training.points.interior=256", "training.points.boundary=64"))


# ---------------------------------------------------------------------------
# FEM pieces: moved meshes, exact means, solves


def moved_mesh(mesh, r0: float, r: float):
    """``mesh`` of the plate with a channel of radius ``r0`` with its nodes moved along rays
    from the channel's centre so that the channel has radius ``r``: a node at distance
    ``rho`` goes to ``r + (rho - r0) (L - r) / (L - r0)``, ``L`` the distance to the plate's
    edge along its ray (the edge's nodes stay, the channel's land on the new circle)."""
    import numpy as np
    import skfem

    c = np.asarray(CENTRE)[:, None]
    x = mesh.p - c
    rho = np.hypot(x[0], x[1])
    d = x / np.maximum(rho, 1e-300)
    half = np.asarray(PLATE[1]) - np.asarray(CENTRE)
    edge = 1.0 / np.max(np.abs(d) / half[:, None], axis=0)
    new = r + (rho - r0) * (edge - r) / (edge - r0)
    return skfem.MeshTri(c + d * new, mesh.t)


def fem_mean(fs, field_name: str = "u") -> float:
    """The mean of a FEM field over its mesh, integrated exactly (the element's own
    quadrature): a smooth function of a moved mesh's radius."""
    import skfem

    from pinn.fem.assemble import element_for

    deg = fs.degrees[field_name]
    basis = skfem.Basis(fs.mesh, element_for(fs.mesh, deg), intorder=deg + 2)

    @skfem.Functional
    def value(w):
        return w["u"]

    @skfem.Functional
    def one(w):
        return 1.0 + 0.0 * w.x[0]

    return float(value.assemble(basis, u=basis.interpolate(fs.values(field_name)))
                 / one.assemble(basis))


def objective_fem(fs, values: dict, costs: dict) -> float:
    """The design objective from a FEM solution: its exact mean temperature + the costs."""
    return fem_mean(fs) + costs["c_r"] * values["r"] ** 2 + costs["c_k"] * values["k"]


def _rel_l2(a, b) -> float:
    import numpy as np

    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ---------------------------------------------------------------------------
# the steps


def load(settings: Settings):
    import pinn.config

    return pinn.config.load(PROBLEM, list(settings.sets))


def train(built) -> tuple:
    t0 = time.perf_counter()
    run = built.setup(progress=False)
    sol = run.train()
    seconds = time.perf_counter() - t0
    info = {"seconds": seconds, "steps": sol.metrics.get("steps"),
            "model": str(built.spec.model), "stages": [str(s) for s in built.spec.training.stages],
            "points": built.spec.training.points.model_dump(), "precision": sol.precision}
    return sol, info


def test_set(problem, n: int):
    """``[n, p]`` parameter rows (``problem.ranged``'s order): a scrambled Sobol net."""
    import numpy as np
    from scipy.stats import qmc

    lo = np.array([p.range[0] for p in problem.ranged])
    hi = np.array([p.range[1] for p in problem.ranged])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balance warning for n not a power of 2
        u = qmc.Sobol(len(lo), scramble=True, seed=TEST_SEED).random(n)
    return lo + u * (hi - lo)


def grid_points(problem, g: int):
    import numpy as np

    lo, hi = (np.asarray(b, np.float64) for b in problem.space.bounds)
    xs, ys = np.linspace(lo[0], hi[0], g), np.linspace(lo[1], hi[1], g)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    return np.stack([X.ravel(), Y.ravel()], axis=1)


def fine_reference(problem, queries: list[dict], grid, settings: Settings) -> list[dict]:
    """Per query: the fixed problem, the grid points in its plate, the fine FEM's values
    there and its quantities (on their quadrature points), and its cost."""
    import numpy as np

    from pinn import design, fem

    element, cells = settings.fine
    out = []
    for i, values in enumerate(queries):
        fixed = design.fixed_problem(problem, values)
        inside = np.asarray(fixed.space.contains(grid), bool)
        t0 = time.perf_counter()
        fs = fem.solve(fixed, cells=cells, element=element)
        seconds = time.perf_counter() - t0
        qs = {n: design.fem_quantity(fs, fixed, q) for n, q in fixed.quantities.items()
              if n != "objective"}
        out.append({"values": values, "fixed": fixed, "inside": inside,
                    "grid_in": grid[inside], "u": fs.evaluate(grid[inside])["u"],
                    "quantities": qs, "seconds": seconds, "dofs": int(fs.dofs)})
        print(f"  fine FEM {i + 1}/{len(queries)}: {element}, {cells} cells, {fs.dofs} dofs, "
              f"{seconds:.2f} s", flush=True)
    return out


def pinn_accuracy(sol, rows, grid, refs: list[dict]) -> dict:
    import numpy as np

    field = sol.evaluate(grid, params=rows)["u"]  # [Q, N]
    errors = [_rel_l2(field[i][ref["inside"]], ref["u"]) for i, ref in enumerate(refs)]
    names = [n for n in refs[0]["quantities"]]
    qs = sol.quantities(params=rows, which=names)
    q_err = {n: [abs(float(qs[n][i]) - ref["quantities"][n]) / abs(ref["quantities"][n])
                 for i, ref in enumerate(refs)] for n in names}
    return {"errors": errors, "median": float(np.median(errors)), "worst": float(max(errors)),
            "quantity_errors": q_err,
            "quantity_median": {n: float(np.median(v)) for n, v in q_err.items()},
            "quantity_worst": {n: float(max(v)) for n, v in q_err.items()}}


def refinement_study(problem, refs: list[dict], settings: Settings) -> list[dict]:
    """Every (element, cells) level at every test value: the moved mesh's solve time and
    its error against the fine FEM. An element's sequence stops after a level whose median
    time exceeds ``max_level_seconds``."""
    import numpy as np

    from pinn import fem

    r0 = 0.5 * sum(problem.space.params[0].range)
    name = problem.space.params[0].name
    levels = []
    for element in settings.elements:
        fem.solve(refs[0]["fixed"], cells=4, element=element)  # warm-up (imports, caches)
        seen = set()
        for cells in settings.cells:
            t0 = time.perf_counter()
            base = fem.build_mesh(problem.space.at({name: r0}), cells=cells)
            mesh_seconds = time.perf_counter() - t0
            if base.t.shape[1] in seen:  # the mesher gave the same mesh (a floor on h)
                continue
            seen.add(base.t.shape[1])
            secs, errs, dofs = [], [], 0
            for ref in refs:
                t1 = time.perf_counter()
                fs = fem.solve(ref["fixed"], mesh=moved_mesh(base, r0, ref["values"][name]),
                               element=element)
                secs.append(time.perf_counter() - t1)
                errs.append(_rel_l2(fs.evaluate(ref["grid_in"])["u"], ref["u"]))
                dofs = int(fs.dofs)
            lv = {"element": element, "cells": cells, "dofs": dofs,
                  "base_mesh_seconds": mesh_seconds, "seconds": secs, "errors": errs,
                  "median_seconds": float(np.median(secs)),
                  "median_error": float(np.median(errs)), "worst_error": float(max(errs))}
            levels.append(lv)
            print(f"  FEM {element} {cells:>3} cells ({dofs} dofs): error median "
                  f"{lv['median_error']:.2e}, worst {lv['worst_error']:.2e}; "
                  f"{1e3 * lv['median_seconds']:.1f} ms per query", flush=True)
            if lv["median_seconds"] > settings.max_level_seconds:
                break
    return levels


def cheapest(levels: list[dict], key: str, bound: float) -> dict | None:
    """The cheapest level (median time per query) whose ``key`` error is at most ``bound``."""
    ok = [lv for lv in levels if lv[key] <= bound]
    return min(ok, key=lambda lv: lv["median_seconds"]) if ok else None


def remeshed(refs: list[dict], level: dict) -> dict:
    """The matched level with each plate meshed again (DistMesh) per query."""
    import numpy as np

    from pinn import fem

    secs, errs = [], []
    for ref in refs:
        t0 = time.perf_counter()
        fs = fem.solve(ref["fixed"], cells=level["cells"], element=level["element"])
        secs.append(time.perf_counter() - t0)
        errs.append(_rel_l2(fs.evaluate(ref["grid_in"])["u"], ref["u"]))
    return {"median_seconds": float(np.median(secs)), "median_error": float(np.median(errs)),
            "worst_error": float(max(errs)), "seconds": secs, "errors": errs}


def pinn_timing(sol, problem, rows, grid, repeats: int) -> dict:
    """Seconds per query: the field on the grid at one parameter value (a fresh value each
    call; compiled first), and at all ``rows`` in one call."""
    import numpy as np

    names = [p.name for p in problem.ranged]
    one = [dict(zip(names, (float(v) for v in row), strict=True)) for row in rows]
    sol.evaluate(grid, params=one[0])  # compile
    single = []
    for q in one:
        t0 = time.perf_counter()
        sol.evaluate(grid, params=q)["u"].sum()
        single.append(time.perf_counter() - t0)
    sol.evaluate(grid, params=rows)  # compile the batched shapes
    batched = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sol.evaluate(grid, params=rows)["u"].sum()
        batched.append((time.perf_counter() - t0) / len(rows))
    return {"single": float(np.median(single)), "single_all": single,
            "batched": float(np.median(batched)), "batched_all": batched,
            "batch": len(rows), "points": len(grid)}


def fem_optimize(problem, level: dict, s_value: float, costs: dict, *,
                 max_iterations: int = 200) -> dict:
    """FEM's optimisation of the objective over (r, k): L-BFGS-B with forward finite
    differences on the moved mesh of ``level``; every solve counted."""
    import numpy as np
    from scipy.optimize import minimize

    from pinn import design, fem

    r_rng = next(p.range for p in problem.ranged if p.name == "r")
    k_rng = next(p.range for p in problem.ranged if p.name == "k")
    r0 = 0.5 * sum(r_rng)
    t0 = time.perf_counter()
    base = fem.build_mesh(problem.space.at({"r": r0}), cells=level["cells"])
    count = [0]

    def values(z):
        return {"r": r_rng[0] + (r_rng[1] - r_rng[0]) * float(z[0]),
                "k": k_rng[0] + (k_rng[1] - k_rng[0]) * float(z[1]), "s": s_value}

    def objective(z):
        count[0] += 1
        v = values(np.clip(z, 0.0, 1.0))
        fixed = design.fixed_problem(problem, v)
        fs = fem.solve(fixed, mesh=moved_mesh(base, r0, v["r"]), element=level["element"])
        return objective_fem(fs, v, costs)

    res = minimize(objective, np.array([0.5, 0.5]), method="L-BFGS-B",
                   bounds=[(0.0, 1.0)] * 2, options={"maxiter": max_iterations})
    seconds = time.perf_counter() - t0
    best = values(np.clip(res.x, 0.0, 1.0))
    return {"params": best, "value": float(res.fun), "solves": count[0],
            "iterations": int(res.nit), "seconds": seconds, "message": str(res.message),
            "element": level["element"], "cells": level["cells"]}


def fine_objective(problem, values: dict, costs: dict, settings: Settings) -> float:
    from pinn import design, fem

    element, cells = settings.fine
    fixed = design.fixed_problem(problem, values)
    return objective_fem(fem.solve(fixed, cells=cells, element=element), values, costs)


def costs_of(problem) -> dict:
    """The objective's fixed prices ``{"c_r": ..., "c_k": ...}`` (from the file)."""
    from pinn.dsl import calculus

    expr = problem.quantities[DESIGN["quantity"]].expr
    return {p.name: float(p.value) for p in calculus.params_of(expr) if p.range is None}


def design_study(sol, problem, level: dict, settings: Settings, train_seconds: float) -> dict:
    """Both optimisations, each optimum's objective by the fine FEM, the gap, the times."""
    import pinn
    from pinn import design

    costs = costs_of(problem)
    s_value = DESIGN["fixed"]["s"]
    print("design: the PINN's optimisation", flush=True)
    t0 = time.perf_counter()
    best = pinn.design.optimize(sol, DESIGN["quantity"], over=list(DESIGN["over"]),
                                fixed=DESIGN["fixed"], starts=settings.starts)
    t_opt = time.perf_counter() - t0
    t0 = time.perf_counter()
    check = design.fem_check(problem, DESIGN["quantity"], best.params, cells=level["cells"],
                             element=level["element"])
    t_check = time.perf_counter() - t0
    print(f"  r = {best.params['r']:.4f}, k = {best.params['k']:.4f}: objective "
          f"{best.value:.6g} (PINN), {check.value:.6g} (FEM check); {t_opt:.2f} s + "
          f"{t_check:.2f} s", flush=True)
    print("design: FEM's optimisation (finite differences)", flush=True)
    fem_best = fem_optimize(problem, level, s_value, costs)
    print(f"  r = {fem_best['params']['r']:.4f}, k = {fem_best['params']['k']:.4f}: "
          f"objective {fem_best['value']:.6g}; {fem_best['solves']} solves, "
          f"{fem_best['seconds']:.2f} s", flush=True)
    pinn_at = {n: best.params[n] for n in ("r", "k", "s")}
    j_pinn = fine_objective(problem, pinn_at, costs, settings)
    j_fem = fine_objective(problem, fem_best["params"], costs, settings)
    out = {"quantity": DESIGN["quantity"], "over": list(DESIGN["over"]),
           "fixed": DESIGN["fixed"], "costs": costs,
           "pinn": {"params": pinn_at, "value": best.value, "optimize_seconds": t_opt,
                    "iterations": best.total_iterations, "evaluations": best.evaluations,
                    "starts": best.starts, "at_bounds": best.at_bounds,
                    "check_value": check.value, "check_seconds": t_check,
                    "check_dofs": check.dofs, "fine_value": j_pinn,
                    "total_seconds": train_seconds + t_opt + t_check},
           "fem": {**fem_best, "fine_value": j_fem, "total_seconds": fem_best["seconds"]},
           "gap": (j_pinn - j_fem) / abs(j_fem)}
    if settings.reference_optimum:
        print("design: the reference optimum (the same optimisation on the fine mesh)",
              flush=True)
        ref = fem_optimize(problem, {"element": settings.fine[0], "cells": settings.fine[1]},
                           s_value, costs)
        out["reference"] = ref
        out["pinn"]["gap_to_reference"] = (j_pinn - ref["value"]) / abs(ref["value"])
        out["fem"]["gap_to_reference"] = (j_fem - ref["value"]) / abs(ref["value"])
    print(f"  fine FEM objective: PINN's optimum {j_pinn:.6g}, FEM's {j_fem:.6g}; gap "
          f"{100 * out['gap']:.3g}%", flush=True)
    return out


def per_query(res: dict) -> dict:
    """Speed-ups and break-evens from the measured times (FEM: the moved mesh at the level
    of the PINN's median error)."""
    t_train = res["training"]["seconds"]
    out = {}
    lv = res["fem"]["used"]
    t_fem = lv["median_seconds"]
    for mode in ("single", "batched"):
        t_p = res["pinn_timing"][mode]
        out[mode] = {"pinn_seconds": t_p, "fem_seconds": t_fem, "speedup": t_fem / t_p,
                     "break_even": (math.ceil(t_train / (t_fem - t_p)) if t_fem > t_p
                                    else None)}
    rm = res["fem"].get("remeshed")
    if rm:
        t_p = res["pinn_timing"]["batched"]
        out["batched_vs_remeshed"] = {
            "pinn_seconds": t_p, "fem_seconds": rm["median_seconds"],
            "speedup": rm["median_seconds"] / t_p,
            "break_even": (math.ceil(t_train / (rm["median_seconds"] - t_p))
                           if rm["median_seconds"] > t_p else None)}
    return out


def targets(res: dict) -> list[dict]:
    """Issue 31's four targets: the value, met or not, and by what factor it is missed
    (``short_by``: goal / value for the ratios, value / goal for the others)."""
    q = res.get("per_query", {}).get("batched")
    d = res.get("design")
    sp = q["speedup"] if q else None
    be = q["break_even"] if q else None
    gap = d["gap"] if d else None
    sooner = d["fem"]["total_seconds"] / d["pinn"]["total_seconds"] if d else None
    rows = [("speedup", "batched per-query speed-up at equal accuracy", ">= 1000x", sp,
             sp is not None and sp >= TARGETS["speedup"],
             TARGETS["speedup"] / sp if sp else None),
            ("break_even", "break-even number of queries (batched)", "<= 1000", be,
             be is not None and be <= TARGETS["break_even"],
             be / TARGETS["break_even"] if be else None),
            ("gap", "PINN's design optimum against FEM's (objective, fine FEM)", "within 1%",
             gap, gap is not None and gap <= TARGETS["gap"],
             max(gap, 0.0) / TARGETS["gap"] if gap is not None else None),
            ("sooner", "design optimum sooner, training included", ">= 10x", sooner,
             sooner is not None and sooner >= TARGETS["sooner"],
             TARGETS["sooner"] / sooner if sooner else None)]
    return [{"key": k, "target": t, "goal": g, "value": v, "met": bool(m), "short_by": s}
            for k, t, g, v, m, s in rows]


def run_study(settings: Settings) -> dict:
    import numpy as np

    built = load(settings)
    problem = built.problem
    names = [p.name for p in problem.ranged]
    res: dict = {"problem": str(PROBLEM.relative_to(C.ROOT)), "settings": asdict(settings),
                 "ranged": {p.name: list(p.range) for p in problem.ranged},
                 "load_start": C.load_average()}
    ranges = ", ".join(f"{p.name} in {list(p.range)}" for p in problem.ranged)
    print(f"training the PINN ({ranges})", flush=True)
    sol, res["training"] = train(built)
    print(f"  trained in {res['training']['seconds']:.1f} s", flush=True)
    rows = test_set(problem, settings.queries)
    queries = [dict(zip(names, (float(v) for v in row), strict=True)) for row in rows]
    res["test"] = {"seed": TEST_SEED, "queries": queries}
    grid = grid_points(problem, settings.grid)
    res["load_fem"] = C.load_average()
    print(f"the fine FEM at {len(queries)} test values", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refs = fine_reference(problem, queries, grid, settings)
        res["fine"] = {"element": settings.fine[0], "cells": settings.fine[1],
                       "dofs": [r["dofs"] for r in refs], "seconds": [r["seconds"] for r in refs]}
        res["pinn"] = pinn_accuracy(sol, rows, grid, refs)
        print(f"PINN error against the fine FEM: median {res['pinn']['median']:.2e}, worst "
              f"{res['pinn']['worst']:.2e}", flush=True)
        print("FEM refinement study", flush=True)
        levels = refinement_study(problem, refs, settings)
        med = cheapest(levels, "median_error", res["pinn"]["median"])
        worst = cheapest(levels, "worst_error", res["pinn"]["worst"])
        finest = min(levels, key=lambda lv: lv["median_error"])
        # the FEM compared: the cheapest at the PINN's median accuracy, else (the PINN more
        # accurate than every level studied) the most accurate level, a lower bound of
        # FEM's cost at equal accuracy
        used = med if med is not None else finest
        if med is None:
            print("no FEM level reached the PINN's median error: FEM's most accurate level "
                  "is compared (its cost is a lower bound)", flush=True)
        res["fem"] = {"levels": levels, "matched_median": med, "matched_worst": worst,
                      "used": used, "equal_accuracy": med is not None,
                      "finest_error": finest["median_error"]}
        res["fem"]["remeshed"] = remeshed(refs, used)
    res["load_timing"] = C.load_average()
    res["pinn_timing"] = pinn_timing(sol, problem, rows, grid, settings.repeats)
    res["per_query"] = per_query(res)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res["load_design"] = C.load_average()
        res["design"] = design_study(sol, problem, used, settings, res["training"]["seconds"])
    res["targets"] = targets(res)
    res["grid_points"] = int(len(grid))
    res["inside_points_median"] = float(np.median([r["inside"].sum() for r in refs]))
    return res


# ---------------------------------------------------------------------------
# the markdown


def _x(v) -> str:
    return "–" if v is None else (f"{v:.3g}x" if v >= 1 else f"1/{1 / v:.3g}x")


def _target_value(t: dict) -> str:
    v = t["value"]
    if v is None:
        return "–" if t["key"] != "break_even" else "never"
    return {"speedup": _x, "sooner": _x, "gap": lambda g: f"{100 * g:.3g}%"}.get(
        t["key"], str)(v)


def _short_by(t: dict) -> str:
    if t["met"]:
        return "met"
    if t["short_by"] is None:
        return "not reached" if t["value"] is None and t["key"] == "break_even" else (
            "not measured")
    if t["key"] == "gap":
        return f"missed: {t['short_by']:.3g} times the 1% allowed"
    return f"missed by a factor {t['short_by']:.3g}"


def _why(res: dict) -> list[str]:
    """One line per missed target: where the time goes."""
    lines = []
    q = res.get("per_query", {}).get("batched")
    lv = res["fem"]["used"]
    t_train = res["training"]["seconds"]
    by = {t["key"]: t for t in res["targets"]}
    fastest = min(lv["median_seconds"] for lv in res["fem"]["levels"]) if lv else None
    if lv and q and not by["speedup"]["met"]:
        lines.append(
            ("Speed-up: FEM at the PINN's median accuracy is " if res["fem"]["equal_accuracy"]
             else "Speed-up (a lower bound: no FEM level studied was as accurate as the "
             "PINN): FEM's most accurate level is ") + f"{lv['element']} on "
            f"{lv['cells']} cells ({lv['dofs']} dofs), {1e3 * lv['median_seconds']:.3g} ms "
            "per query (one small sparse solve of a 2-D steady linear problem, the mesh "
            f"moved, not rebuilt; pinn.fem's cheapest level takes {1e3 * fastest:.3g} ms, its "
            "fixed cost per solve: translating the equations, assembling, selecting the "
            f"boundary facets); the batched PINN takes {1e3 * q['pinn_seconds']:.3g} ms per "
            f"query for {res['pinn_timing']['points']} points. A 1000x speed-up would need FEM "
            f"queries of {1000 * q['pinn_seconds']:.3g} s at the PINN's accuracy (a problem of "
            "~1e5-1e6 unknowns per solve: 3-D, time-dependent or nonlinear) or a network "
            f"query {1000 * q['pinn_seconds'] / lv['median_seconds']:.3g}x cheaper than this "
            "one on these 2 cores (an accelerator, fewer points per query); a more accurate "
            "network does not help by itself: FEM's matched level grows slowly with the "
            f"accuracy asked ({_fem_growth(res['fem']['levels'], lv)}).")
    if lv and q and not by["break_even"]["met"]:
        lines.append(
            f"Break-even: the training ({t_train:.3g} s) costs as much as "
            f"{t_train / lv['median_seconds']:.3g} FEM queries at equal accuracy.")
    d = res.get("design")
    if d and not by["gap"]["met"]:
        p, f = d["pinn"], d["fem"]
        lines.append(
            f"Optimum: the PINN's design (r = {p['params']['r']:.4g}, k = "
            f"{p['params']['k']:.4g}) against FEM's (r = {f['params']['r']:.4g}, k = "
            f"{f['params']['k']:.4g}); the PINN's objective at its optimum is "
            f"{p['value']:.5g} where the fine FEM says {p['fine_value']:.5g} (the network's "
            "error in the quantity moves the optimum).")
    if d and not by["sooner"]["met"]:
        lines.append(
            f"Design time: FEM's optimisation took {d['fem']['solves']} solves in "
            f"{d['fem']['seconds']:.3g} s; the PINN's training alone took {t_train:.3g} s "
            f"(its optimisation {d['pinn']['optimize_seconds']:.3g} s, the check "
            f"{d['pinn']['check_seconds']:.3g} s). Training pays off over many designs: "
            + _designs_break_even(d, t_train) + ".")
    return lines


def _fem_growth(levels: list, used: dict) -> str:
    """How FEM's cost grows with its accuracy past the matched level: the most accurate
    level studied against the matched one."""
    best = min(levels, key=lambda v: v["median_error"])
    if best["median_error"] >= used["median_error"]:
        return "no studied level is more accurate than the matched one"
    return (f"{best['element']} on {best['cells']} cells is "
            f"{used['median_error'] / best['median_error']:.3g}x as accurate for "
            f"{best['median_seconds'] / used['median_seconds']:.3g}x the time")


def _designs_break_even(d: dict, t_train: float) -> str:
    per_pinn = d["pinn"]["optimize_seconds"] + d["pinn"]["check_seconds"]
    per_fem = d["fem"]["seconds"]
    if per_fem <= per_pinn:
        return "never here (one FEM optimisation is cheaper than the PINN's optimisation + check)"
    m = math.ceil(t_train / (per_fem - per_pinn))
    return (f"for {m} or more designs (say, one per heat load s) the PINN, trained once, is "
            "sooner")


def render(res: dict, machine: dict, command: str) -> str:
    s = res["settings"]
    rng = ", ".join(f"{k} in {v}" for k, v in res["ranged"].items())
    tr = res["training"]
    lines = ["# Design study: a plate with a cooling channel, PINN against FEM", "",
             C.generated_note("design.py", command), "",
             f"Machine: {C.machine_line(machine)}.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
             + ".", "",
             f"Problem: `{res['problem']}`: -div(k grad u) = s on the unit square minus a disk "
             "of radius r (the cooling channel, u = 0 on its wall), convection k du/dn + h u = 0 "
             f"at the four edges; {rng}. One network, five inputs (x, y, k, s, r), trained "
             f"once in {tr['seconds']:.3g} s ({tr.get('steps')} steps, compilation included). "
             f"Test set: {s['queries']} parameter values of a scrambled Sobol net apart from "
             f"the training points. Reference: FEM {s['fine'][0]} on {s['fine'][1]} cells per "
             "side, each plate meshed. A query is the field on a "
             f"{s['grid']} x {s['grid']} grid of the plate's box (errors on its points inside "
             "the plate). Both sides run on the same CPU cores, one after the other, in one "
             "process; the method is in the script's docstring.", "",
             "## Issue 31's targets", "",
             C.table(("target", "goal", "measured", "verdict"),
                     [(t["target"], t["goal"], _target_value(t), _short_by(t))
                      for t in res["targets"]]), ""]
    lines += [f"- {w}" for w in _why(res)]
    lines += ["", "## Accuracy over the parameter box", "", _accuracy_table(res), "",
              "## FEM refinement study (the mesh of the middle radius, moved per query)", "",
              _levels_table(res), "", "## Per-query cost at equal accuracy", "",
              _cost_table(res), ""]
    if res.get("design"):
        lines += ["## Design optimisation", "", _design_text(res["design"]), "",
                  _design_table(res), ""]
    loads = [(k, res.get(k)) for k in ("load_start", "load_fem", "load_timing", "load_design")]
    shown = [f"{w} {v[0]:.1f}" for (k, v), w in zip(loads, (
        "when training began", "when the FEM began", "when the PINN was timed",
        "when the design began"), strict=True) if v]
    if shown:
        lines += ["Load average over the last minute (it lags the moment it names): "
                  + "; ".join(shown) + ".", ""]
    return "\n".join(lines)


def _accuracy_table(res: dict) -> str:
    p = res["pinn"]
    rows = [("field u, relative L2 against the fine FEM", f"{p['median']:.2e}",
             f"{p['worst']:.2e}")]
    for n in p["quantity_median"]:
        rows.append((f"quantity {n}, relative error", f"{p['quantity_median'][n]:.2e}",
                     f"{p['quantity_worst'][n]:.2e}"))
    fe = res["fem"]
    rows.append(("finest studied FEM level's error (the reference's margin)",
                 f"{fe['finest_error']:.2e}", "–"))
    return C.table(("PINN over the test set", "median", "worst"), rows)


def _levels_table(res: dict) -> str:
    fe = res["fem"]
    med, worst = fe.get("matched_median"), fe.get("matched_worst")

    def same(a, b):
        return a is not None and (a["element"], a["cells"]) == (b["element"], b["cells"])

    def mark(lv):
        tags = [t for t, m in (("PINN's median", med), ("PINN's worst", worst)) if same(m, lv)]
        if tags:
            return "cheapest meeting the " + " and ".join(tags)
        return ("compared: the most accurate (none met the PINN's median)"
                if same(fe["used"], lv) else "")

    return C.table(("element", "cells", "dofs", "error median", "error worst",
                    "ms per query", "matched"),
                   [(lv["element"], lv["cells"], lv["dofs"], f"{lv['median_error']:.2e}",
                     f"{lv['worst_error']:.2e}", f"{1e3 * lv['median_seconds']:.3g}", mark(lv))
                    for lv in fe["levels"]])


def _cost_table(res: dict) -> str:
    t = res["pinn_timing"]
    pq = res.get("per_query", {})
    fe = res["fem"]
    lv, rm = fe["used"], fe.get("remeshed")

    def be(v):
        return "never" if v is None else str(v)

    rows = [("PINN, one query per call", f"{1e3 * t['single']:.3g}",
             _x(pq["single"]["speedup"]) if pq else "–",
             be(pq["single"]["break_even"]) if pq else "–"),
            (f"PINN, {t['batch']} queries in one call", f"{1e3 * t['batched']:.3g}",
             _x(pq["batched"]["speedup"]) if pq else "–",
             be(pq["batched"]["break_even"]) if pq else "–")]
    if lv:
        rows.append((f"FEM {lv['element']}, {lv['cells']} cells, {lv['dofs']} dofs (mesh "
                     "moved)", f"{1e3 * lv['median_seconds']:.3g}", "1x", "–"))
    if rm:
        b = pq.get("batched_vs_remeshed", {})
        rows.append((f"FEM {lv['element']}, {lv['cells']} cells, each plate meshed again "
                     f"(error median {rm['median_error']:.2e})",
                     f"{1e3 * rm['median_seconds']:.3g}",
                     f"batched PINN {_x(b.get('speedup'))}" if b else "–",
                     be(b.get("break_even")) if b else "–"))
    return (C.table(("side", "ms per query", "speed-up of the PINN", "break-even N"), rows)
            + f"\n\nTraining: {res['training']['seconds']:.3g} s. Break-even N = training / "
            "(FEM per query - PINN per query); speed-ups against the moved-mesh FEM unless "
            "said. PINN times are medians after compilation; FEM's the median over the "
            "test values of moving the mesh and solving (assembly included).")


def _design_text(d: dict) -> str:
    fixed = ", ".join(f"{k} = {v}" for k, v in d["fixed"].items())
    costs = ", ".join(f"{k} = {v}" for k, v in d["costs"].items())
    return (f"Minimise `{d['quantity']}` (mean temperature + c_r r^2 + c_k k; {costs}) over "
            f"{', '.join(d['over'])} at {fixed}. PINN: `pinn.design.optimize` "
            f"({d['pinn']['starts']} starts of L-BFGS-B, gradients by JAX through the "
            "network) and one `pinn.design.fem_check`. FEM: L-BFGS-B with forward finite "
            "differences from the centre of the box on the matched level's moved mesh, the "
            "mean integrated exactly on the mesh. Each optimum's objective recomputed by the "
            "fine FEM; the gap is relative to FEM's optimum.")


def _design_table(res: dict) -> str:
    d = res["design"]
    p, f = d["pinn"], d["fem"]
    rows = [(f"PINN (training {res['training']['seconds']:.3g} s + optimisation "
             f"{p['optimize_seconds']:.3g} s + FEM check {p['check_seconds']:.3g} s)",
             f"{p['params']['r']:.4f}", f"{p['params']['k']:.4f}",
             f"{p['value']:.6g} (check {p['check_value']:.6g})", f"{p['fine_value']:.6g}",
             f"{100 * d['gap']:+.3g}%", f"{p['total_seconds']:.3g}",
             f"{p['evaluations']} network evaluations, 1 FEM solve"),
            (f"FEM {f['element']}, {f['cells']} cells, finite differences",
             f"{f['params']['r']:.4f}", f"{f['params']['k']:.4f}", f"{f['value']:.6g}",
             f"{f['fine_value']:.6g}", "0", f"{f['total_seconds']:.3g}",
             f"{f['solves']} FEM solves")]
    ref = d.get("reference")
    if ref:
        rows.append((f"reference: the same on the fine mesh ({ref['element']}, {ref['cells']} "
                     "cells)", f"{ref['params']['r']:.4f}", f"{ref['params']['k']:.4f}",
                     f"{ref['value']:.6g}", f"{ref['value']:.6g}",
                     f"PINN {100 * p['gap_to_reference']:+.3g}%, FEM "
                     f"{100 * f['gap_to_reference']:+.3g}%", f"{ref['seconds']:.3g}",
                     f"{ref['solves']} FEM solves"))
    return C.table(("method", "r", "k", "objective (its own)", "objective (fine FEM)",
                    "gap", "wall time (s)", "work"), rows)


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true",
                    help="tiny training, 3 test values, coarse meshes (a minute or two); "
                         "needs --out")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"a folder for {JSON_NAME} and {MD_NAME} (default: benchmarks/"
                         f"results/{JSON_NAME} and benchmarks/{MD_NAME})")
    ap.add_argument("--from-json", type=Path, default=None,
                    help=f"only write {MD_NAME} from this results file")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="an override of the problem file's settings (repeatable), e.g. "
                         "training.stages.1.steps=5000")
    ap.add_argument("--queries", type=int, default=None, help="test values (default 32)")
    args = ap.parse_args(argv)
    md_path = (args.out / MD_NAME) if args.out else C.HERE / MD_NAME
    if args.from_json is not None:
        saved = C.read_json(args.from_json)
        C.write_text(md_path, render(saved["results"], saved["machine"], saved["command"]))
        print(f"wrote {md_path}")
        return 0
    if args.smoke and args.out is None:
        ap.error("--smoke writes only into a folder of its own: give --out DIR")
    settings = SMOKE if args.smoke else Settings()
    settings = replace(settings, sets=tuple(settings.sets) + tuple(args.sets),
                       **({"queries": args.queries} if args.queries else {}))
    machine = C.machine()
    res = run_study(settings)
    command = C.command_line("design.py", argv)
    json_path = (args.out / JSON_NAME) if args.out else C.HERE / "results" / JSON_NAME
    C.write_json(json_path, {"machine": machine, "command": command, "results": res})
    C.write_text(md_path, render(res, machine, command))
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
