"""PINNacle's main table, trained and scored here: ``benchmarks/pinnacle/*.yaml`` ->
``benchmarks/PINNACLE.md`` (and ``benchmarks/results/pinnacle.json``).

Each problem file is loaded with ``pinn.config.load`` and trained with its own settings
(network, points, stages) under a wall-clock budget per problem (``--budget-seconds``,
default 120 s, compilation included): a stage ends when its share of the budget is spent
(the budget split evenly between the stages), and the run ends with the budget. The score
is PINNacle's L2RE, ``||pred - ref|| / ||ref||`` over all fields together (PINNacle scores
its outputs as one array), at the reference's own points where the reference is a file
(PINNacle's, converted, or one we generate: ``rel_l2_ref_points``), else on the evaluation
grid against the closed form or our FEM solution; per-field errors go in the JSON. Beside
it: PINNacle's vanilla PINN and best method (Hao et al., NeurIPS 2024 D&B, Table 3 "Mean
L2RE"), where this project has the number on record, else "–".

    python benchmarks/pinnacle.py --smoke                      # every problem, a few steps
    python benchmarks/pinnacle.py --problems burgers1d_c,poisson2d_c --budget-seconds 300

Rows of problems not run keep their last result in the JSON (and say in which mode it was
made), so a partial run regenerates the whole table. Each problem runs in its own process.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common as C  # noqa: E402

from pinn.train import Observer  # noqa: E402

PROBLEM_DIR = HERE / "pinnacle"
RESULTS = HERE / "results" / "pinnacle.json"
OUT_MD = HERE / "PINNACLE.md"
DEFAULT_BUDGET = 120.0

PINNACLE = ("Hao et al., *PINNacle: A comprehensive benchmark of physics-informed neural "
            "networks for solving PDEs*, NeurIPS 2024 (Datasets and Benchmarks), Table 3 "
            "(mean L2RE)")


@dataclass(frozen=True)
class Entry:
    key: str            # file stem in benchmarks/pinnacle/
    label: str          # PINNacle's name in its table
    reference: str      # where the truth comes from
    pinn: float | None = None      # PINNacle's vanilla PINN, mean L2RE
    best: float | None = None      # PINNacle's best method, mean L2RE
    best_source: str = ""          # where the project has the numbers from
    note: str = ""                 # what differs from PINNacle
    exact_at_points: str | None = None   # also score against this closed form there


ISSUE14 = "as recorded in issue #14 and benchmarks/accuracy.py"

SUITE = (
    Entry("burgers1d_c", "Burgers 1d-C", "PINNacle's (burgers1d.dat)", 1.45e-2, None, ISSUE14,
          exact_at_points="cole_hopf"),
    Entry("burgers2d_c", "Burgers 2d-C",
          "ours (finite volume, MUSCL-Rusanov 1024^2; good to ~3e-2)",
          note="stand-in initial data (make_data.py)"),
    Entry("poisson2d_c", "Poisson 2d-C", "PINNacle's (poisson1_cg_data.dat)", 6.94e-1, 1.2e-2,
          ISSUE14),
    Entry("poisson2d_cg", "Poisson 2d-CG", "PINNacle's (poisson_boltzmann2d.dat)"),
    Entry("poisson3d_cg", "Poisson 3d-CG", "ours (FEM, P2 h = 0.05; good to ~1e-2)"),
    Entry("poisson2d_ms", "Poisson 2d-MS", "ours (FEM, P2 160x160)"),
    Entry("heat2d_vc", "Heat 2d-VC", "ours (FEM, P2 96 cells)",
          note="PINNacle's coefficient (regenerated); its COMSOL reference does not solve "
          "the stated PDE with it, so ours is used; k linear, not nearest"),
    Entry("heat2d_ms", "Heat 2d-MS", "closed form"),
    Entry("heat2d_cg", "Heat 2d-CG", "ours (FEM, P2 128 cells)"),
    Entry("heat2d_lt", "Heat 2d-LT", "PINNacle's (heat_longtime.dat, every 5th time level)"),
    Entry("ns2d_c", "NS 2d-C", "PINNacle's (lid_driven_a4.dat)"),
    Entry("ns2d_cg", "NS 2d-CG", "PINNacle's (ns_0_obstacle.dat)"),
    Entry("ns2d_lt", "NS 2d-LT", "ours (FEM, P2-P1 64 x 32, CN dt 0.01; v good to ~2 %)"),
    Entry("wave1d_c", "Wave 1d-C", "closed form", 5.88e-1, 9.8e-2, ISSUE14),
    Entry("wave2d_cg", "Wave 2d-CG", "ours (FEM, P2 128 cells, Newmark; good to ~2e-3)",
          note="PINNacle's wave speed table (regenerated); its reference is not public"),
    Entry("wave2d_ms", "Wave 2d-MS", "ours (sine series; PINNacle's closed form misses the PDE)",
          note="scored against the PDE's solution, not PINNacle's closed form"),
    Entry("gs", "GS", "ours (ETDRK4 spectral, 512^2; v good to a few %)",
          note="periodic reference (PINNacle: no BC)"),
    Entry("ks", "KS", "ours (pinn.reference.kuramoto_sivashinsky, ETDRK4)",
          note="periodic network (PINNacle: no BC)"),
    Entry("poisson_nd", "PNd", "closed form"),
    Entry("heat_nd", "HNd", "closed form"),
    Entry("pinv", "PInv", "closed form", note="source corrected ((2x-1), (2y-1))"),
    Entry("hinv", "HInv", "closed form", note="a(x, y): its own sub-network of (x, y), as "
          "PINNacle's PFNN"),
)
BY_KEY = {e.key: e for e in SUITE}


# ---------------------------------------------------------------------------
# one problem


def smoke_overrides(spec) -> list[str]:
    """One Adam stage of 10 steps, a tiny network and few points: checks that the problem
    trains and is scored, in seconds."""
    out = ["training.stages=[{adam: {lr: 0.001}, steps: 10}]", "training.chunk=5",
           "training.eval_every=0", "training.points.interior=128",
           "training.points.boundary=64", "training.points.initial=64",
           "training.points.resample_every=0"]
    if spec.training.points.rad is not None:
        out += ["training.points.rad.pool=1024"]
    if spec.training.windows > 1:  # time marching: two windows show it
        out += ["training.windows=2"]
    kind = spec.model.kind
    out += [f"model.{kind}.width=8",
            f"model.{kind}.blocks=1" if kind == "pirate" else f"model.{kind}.depth=1"]
    if spec.evaluation.resolution is not None:
        res = spec.evaluation.resolution
        cap = 13 if len(spec.coords or ()) <= 3 else 5  # 13: not a divisor grid of sin(20 pi x)
        res = [min(r, cap) for r in res] if isinstance(res, list) else min(res, cap)
        out += [f"evaluation.resolution={json.dumps(res)}"]
    return out


def _size(model) -> str:
    a = model.args
    return f"{a.width}x{getattr(a, 'depth', getattr(a, 'blocks', '?'))}"


def budget_overrides(spec) -> list[str]:
    return ["training.chunk=100", "training.eval_every=0"]


def default_recipe_overrides(spec) -> list[str]:
    """The file with ``pinn``'s default recipe in place of its own training stages: what a
    problem file with no ``training.stages`` (and no network size) gets, the recipe of the
    accuracy issue (Adam, then self-scaled Broyden in float64) on a 3 x 30 MLP. The file's
    points, conditions, weighting and network structure (periodic, per-field) stay."""
    from pinn.config.schema import _default_stages

    stages = json.dumps([st.model_dump(exclude_defaults=True) for st in _default_stages()])
    out = [f"training.stages={stages}", "training.precision=auto"]
    if spec.model.kind == "mlp":
        out += ["model.mlp.width=30", "model.mlp.depth=3"]
    return out


def uses_default_recipe(spec) -> bool:
    """Whether the file's own stages are already a second-order recipe (then its own row is
    the default recipe's row too, and it is not run twice)."""
    return any(st.kind in ("ssbroyden", "ssbfgs", "lm") for st in spec.training.stages)


class Budget(Observer):
    """End each stage when its share of ``seconds`` is spent, and the run at ``seconds``
    (wall time since training started, compilation included). A run in ``windows`` time
    windows (``training.windows``) gives each window an equal share, ``seconds /
    windows``, on one clock: window ``k`` ends at ``(k + 1) seconds / windows`` from the
    start, its stages at even shares of that."""

    every = None

    def __init__(self, seconds: float, n_stages: int, windows: int = 1) -> None:
        self.seconds, self.n = float(seconds), max(1, n_stages)
        self.windows = max(1, int(windows))
        self.stopped_by: str | None = None
        self._start: float | None = None
        self._window = -1

    def init(self, info) -> None:
        self.info = info
        self._window += 1
        if self._start is None:
            self._start = time.perf_counter()

    def on_chunk(self, event) -> None:
        if event.kind != "chunk":
            return
        share = self.seconds / self.windows
        w = min(self._window, self.windows - 1)
        t = time.perf_counter() - self._start - w * share  # into this window's share
        if t >= share:
            self.stopped_by = (f"budget of {self.seconds:.0f} s spent at step {event.step}"
                               + (f" of window {w + 1}/{self.windows}"
                                  if self.windows > 1 else ""))
            event.stop()
        elif t >= share * (event.stage + 1) / self.n and event.stage < self.n - 1:
            event.end_stage("budget", f"stage {event.stage + 1}'s share of the budget spent "
                            f"at step {event.step}")

    def close(self, result) -> None:
        pass


def joint_l2re(pred: dict, truth: dict, shift=(), times=None) -> float | None:
    """PINNacle's L2RE: all fields as one array, ``||pred - truth|| / ||truth||`` (a field
    defined up to a constant compared after removing the mean of the difference, at each
    time with ``times``: pinn.evaluate.free_part)."""
    import numpy as np

    from pinn import evaluate as ev

    num = den = 0.0
    used = False
    for name, t in (truth or {}).items():
        if name not in pred:
            continue
        p = np.asarray(pred[name], dtype=np.float64).reshape(-1)
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        ok = np.isfinite(t) & np.isfinite(p)
        d, t = p[ok] - t[ok], t[ok]
        if name in shift and d.size:
            at = None if times is None else np.asarray(times, dtype=np.float64)[ok]
            d, t = d - ev.free_part(d, at), t - ev.free_part(t, at)
        num, den, used = num + float(d @ d), den + float(t @ t), True
    if not used or den == 0:
        return None
    return math.sqrt(num / den)


def run_entry(key: str, mode: str, budget: float, recipe: str = "file") -> dict:
    """Train and score one problem; never raises (a failure is a result).

    ``recipe``: ``"file"`` (the file's own stages) or ``"default"`` (pinn's default
    recipe, :func:`default_recipe_overrides`)."""
    import numpy as np

    import pinn
    import pinn.config
    import pinn.evaluate as ev

    entry = BY_KEY[key]
    path = PROBLEM_DIR / f"{key}.yaml"
    out: dict = {"key": key, "label": entry.label, "file": f"benchmarks/pinnacle/{key}.yaml",
                 "mode": mode, "budget_seconds": None if mode == "smoke" else budget,
                 "date": C.machine()["date"], "load_start": C.load_average()}
    try:
        spec, _ = pinn.config.load_spec(str(path))
        sets = smoke_overrides(spec) if mode == "smoke" else budget_overrides(spec)
        if recipe == "default":
            sets = default_recipe_overrides(spec) + sets
        out["recipe_kind"] = recipe
        out["overrides"] = sets
        built = pinn.config.load(str(path), sets)
        problem = built.problem
        ref = problem.reference
        kind = type(ref).__name__ if ref is not None else ("exact" if problem.exact else None)
        if mode == "smoke" and kind == "FEMReference":
            problem = dataclasses.replace(problem, reference=None)  # minutes: not in a smoke
            out["note"] = "smoke: the FEM reference is not computed"
            kind = None
        out["truth"] = kind
        model, training = built.model(), built.training()
        out["model"] = repr(model)
        out["stages"] = [f"{type(s.optimizer).__name__} x {s.steps}" for s in training.stages]
        # the file's own stages (or the default recipe's), not the smoke's
        full, _ = pinn.config.load_spec(str(path), default_recipe_overrides(spec)
                                        if recipe == "default" else [])
        out["recipe"] = " + ".join(f"{st.kind} {st.steps}" for st in full.training.stages) + (
            f", {full.model.kind} {_size(full.model)}")
        budget_obs = Budget(budget if mode != "smoke" else math.inf, len(training.stages),
                            training.windows)
        if training.windows > 1:
            out["windows"] = training.windows
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sol = pinn.solve(problem, model, training, precision=built.precision,
                             progress=False, observers=[budget_obs],
                             resolution=built.spec.evaluation.resolution)
        out["wall_seconds"] = time.perf_counter() - t0
        m = sol.metrics
        out["steps"] = m.get("steps_done", m.get("steps"))  # the steps run, not planned
        out["steps_planned"] = m.get("steps")
        out["train_seconds"] = m.get("train_seconds")
        out["compile_seconds"] = m.get("compile_seconds")
        out["stopped_by"] = budget_obs.stopped_by
        out["precision"] = built.precision
        out["loss"] = (sol.history[-1].get("loss") if sol.history else None)
        out["rel_l2_grid"] = m.get("rel_l2") or {}
        shift = ev.up_to_constant(problem)
        if m.get("rel_l2_ref_points"):
            pts = np.asarray(problem.reference.points, dtype=np.float64)
            pred = ev.predict_in_chunks(sol.evaluate, pts)
            out["l2re"] = joint_l2re(pred, problem.reference.values, shift,
                                     ev.point_times(problem, pts))
            out["where"] = f"the reference's {len(pts)} points"
            out["rel_l2_ref_points"] = m["rel_l2_ref_points"]
            if entry.exact_at_points == "cole_hopf":  # Burgers: the exact solution there
                import pinn.reference as R

                # nu = 0.01/pi, burgers1d_c.yaml's and R.burgers' default
                exact = {"u": np.asarray(R.burgers(pts[:, 0], pts[:, 1])).reshape(-1)}
                out["l2re_exact"] = joint_l2re(pred, exact)
                out["ref_vs_exact"] = joint_l2re(problem.reference.values, exact)
        elif problem.reference is not None or problem.exact:
            s = sol.score()
            out["l2re"] = joint_l2re(s.pred, None if s.truth is None else s.truth.values,
                                     s.shift, s.times)
            out["where"] = f"the evaluation grid ({int(s.grid.mask.sum())} points)"
        else:
            out["l2re"] = None
            out["where"] = None
    except Exception as exc:  # noqa: BLE001 - one problem's failure is a result
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc(limit=8)
    return out


def run_in_subprocess(key: str, mode: str, budget: float, timeout: float,
                      recipe: str = "file") -> dict:
    args = ["--worker", key, "--budget-seconds", str(budget), "--recipe", recipe] + (
        ["--smoke"] if mode == "smoke" else [])
    res, why = C.run_worker(Path(__file__), args, timeout)
    return res if res is not None else {"key": key, "label": BY_KEY[key].label, "mode": mode,
                                        "error": why}


# ---------------------------------------------------------------------------
# the table


def sci(v) -> str:
    return C.fmt(v, ".2e")


def best_of(*rows) -> float | None:
    """The lower budget-mode L2RE of our rows (file recipe, default recipe)."""
    vals = [r["l2re"] for r in rows if r and r.get("mode") == "budget"
            and r.get("l2re") is not None]
    return min(vals) if vals else None


def verdict(e: Entry, *rows) -> str:
    ours = best_of(*rows)
    if ours is None or e.best is None:
        return "–"
    return "yes" if ours < e.best else "no"


def _score_cell(r: dict | None) -> str:
    if not r or r.get("l2re") is None:
        return "–"
    return sci(r["l2re"]) if r.get("mode") == "budget" else f"({sci(r['l2re'])})"


def _default_cells(r: dict | None) -> list[str]:
    """Steps, time and L2RE of the default-recipe row (or of the file's, when the same)."""
    if r is not None and r.get("same_as_file"):
        return ["(the file's)", "", ""]
    if r is None:
        return ["not run", "–", "–"]
    if r.get("error"):
        return ["failed", "–", "–"]
    return [C.fmt(r.get("steps"), "d"), C.fmt(r.get("wall_seconds"), ".0f"), _score_cell(r)]


def report(results: dict, command: str, machine: dict,
           defaults: dict | None = None) -> str:
    defaults = defaults or {}
    lines = ["# PINNacle's main table on this machine", "",
             C.generated_note("pinnacle.py", command), "",
             f"Machine: {C.machine_line(machine)}.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()) + ".",
             "",
             "Every problem of PINNacle's main table is a file in `benchmarks/pinnacle/` "
             "(see each file's header for what differs from PINNacle and where its data come "
             "from). Each row is one training run of that file's own settings under a "
             "wall-clock budget (compilation included; a stage ends when its even share of "
             "the budget is spent), and beside it one run of the same file with `pinn`'s "
             "default recipe in place of its stages (what a file with no `training.stages` "
             "gets: Adam 2000, then self-scaled Broyden 3000 in float64 on a 3 x 30 MLP, "
             "the file's points, conditions and network structure kept; `(the file's)` "
             "where the file's own stages are already that recipe), under the same budget; "
             "**mode** says how the row was made: `budget` (a real run at the budget in "
             "the column), `smoke` (a tiny network and 10 steps: only "
             "checks that the problem trains and is scored; its error, in parentheses, means "
             "nothing) or `not run`. The machine line is the last run's; each row's date and "
             "load average at its start are in `results/pinnacle.json` (the rows of one "
             "table may come from different runs).", "",
             "**L2RE** is PINNacle's metric, `||pred - ref|| / ||ref||` over all fields "
             "together, at the reference's own points where the reference is a file, else on "
             "the evaluation grid. PINNacle's columns: " + PINNACLE + "; only the numbers "
             "this project has on record (issue #14, `benchmarks/accuracy.py`) are filled "
             "in: the table itself could not be retrieved in the session that wrote this "
             "script, and no number is guessed (\"–\").", ""]
    header = ["problem", "PINNacle", "reference", "our recipe (the file's)", "mode",
              "budget (s)", "steps", "time (s)", "L2RE (ours)", "PINNacle PINN",
              "PINNacle best", "default recipe: steps", "time (s)", "L2RE", "beats best",
              "notes"]
    rows = []
    for e in SUITE:
        r = results.get(e.key)
        if r is None:
            rows.append([f"`{e.key}`", e.label, e.reference, "–", "not run", "–", "–", "–", "–",
                         sci(e.pinn), sci(e.best),
                         *_default_cells(defaults.get(e.key)),
                         verdict(e, defaults.get(e.key)), e.note])
            continue
        exact_note = (f"against the Cole-Hopf solution at the same points: "
                      f"{sci(r['l2re_exact'])} (PINNacle's reference is itself "
                      f"{sci(r['ref_vs_exact'])} from it, the floor of the L2RE column)"
                      if r.get("l2re_exact") is not None else None)
        d = defaults.get(e.key)
        # where the score was taken: the file's row, else the default recipe's (a smoke
        # row of the file may predate the reference)
        scored = next((x for x in (r, d) if x and x.get("mode") == "budget"
                       and x.get("where")), r)
        note = "; ".join(x for x in (e.note, r.get("note") if r.get("mode") == "budget"
                                     else None, exact_note,
                                     f"FAILED: {r['error'][:160]}" if r.get("error") else None,
                                     f"scored on {scored['where']}" if scored.get("where")
                                     else None)
                         if x)
        if not any(x and x.get("error") is None and x.get("l2re") is not None for x in (r, d)):
            note = "; ".join(x for x in (note, "not scored: no reference") if x)
        if d and d.get("error"):
            note = "; ".join(x for x in (note, f"default recipe FAILED: {d['error'][:160]}")
                             if x)
        rows.append([f"`{e.key}`", e.label, e.reference, r.get("recipe", "–"), r.get("mode", "?"),
                     C.fmt(r.get("budget_seconds"), ".0f"), C.fmt(r.get("steps"), "d"),
                     C.fmt(r.get("wall_seconds"), ".0f"),
                     _score_cell(r), sci(e.pinn), sci(e.best), *_default_cells(d),
                     verdict(e, r, d), note])
    lines += [C.table(header, rows), ""]
    ours = {e.key: best_of(results.get(e.key), defaults.get(e.key)) for e in SUITE}
    real = [e for e in SUITE if ours[e.key] is not None]
    comparable = [e for e in real if e.best is not None]
    beaten = [e.label for e in comparable if ours[e.key] < e.best]
    lines += ["## Summary", "",
              f"- Problem files: {len(SUITE)}; problems with a real (budget) run and a score: "
              f"{len(real)}; of those with PINNacle's best on record: {len(comparable)}, "
              f"beaten: {len(beaten)}" + (f" ({', '.join(beaten)})" if beaten else "") + ".",
              "- Failed (the best of our rows no better than predicting zero, L2RE >= 1): "
              + (", ".join(e.label for e in real if ours[e.key] >= 1.0) or "none") + ".",
              "- Not scored (no reference in the public snapshot and none generated yet): "
              + (", ".join(e.label for e in SUITE if e.reference == "missing") or "none")
              + ".",
              "- Stand-in data (PINNacle's table is not public), so the score is not "
              "comparable with PINNacle's: Burgers 2d-C (initial values). The coefficient "
              "tables of Heat 2d-VC and Wave 2d-CG are PINNacle's own, regenerated from its "
              "seeded generator (make_data.py; they match the images PINNacle published of "
              "them pixel for pixel), but Heat 2d-VC is scored against our FEM solution: "
              "PINNacle's COMSOL table is 4.7 (relative L2) from the solution of the stated "
              "PDE with that coefficient (heat2d_vc.yaml says how this was measured).",
              "- PINNacle's Burgers 1d-C reference (burgers1d.dat) is itself 1.33e-2 from the "
              "exact (Cole-Hopf) solution at its own points, so an L2RE against it below "
              "about 1e-2 measures the reference, not the PINN; its row gives both.",
              "- Corrections of PINNacle: Wave 2d-MS is scored against the solution of its "
              "PDE (its closed form misses the PDE by -2 pi^2 U); PInv's source uses "
              "(2x - 1), (2y - 1).", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="a few steps per problem (seconds)")
    ap.add_argument("--problems", default=None,
                    help="comma-separated file stems (default: all): " + ",".join(BY_KEY))
    ap.add_argument("--budget-seconds", type=float, default=DEFAULT_BUDGET,
                    help=f"wall-clock budget per problem (default {DEFAULT_BUDGET:.0f})")
    ap.add_argument("--out", default=str(OUT_MD), help="the Markdown table")
    ap.add_argument("--results", default=str(RESULTS), help="the JSON results (merged)")
    ap.add_argument("--fresh", action="store_true", help="do not keep earlier rows")
    ap.add_argument("--from-json", default=None, help="only write the table from this JSON")
    ap.add_argument("--recipe", choices=("file", "default", "both"), default="both",
                    help="train with each file's own stages, with pinn's default recipe "
                         "(Adam, then self-scaled Broyden, 3 x 30 MLP), or both (default)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "budget"
    if args.worker:
        recipe = "file" if args.recipe == "both" else args.recipe
        C.write_json(Path(args.worker_out), run_entry(args.worker, mode, args.budget_seconds,
                                                      recipe))
        return 0
    if args.from_json:
        data = C.read_json(Path(args.from_json))
        C.write_text(Path(args.out), report(data["results"], C.command_line("pinnacle.py", argv),
                                            data["machine"], data.get("defaults")) + "\n")
        print(f"wrote {args.out}")
        return 0
    keys = list(BY_KEY) if not args.problems else [k.strip() for k in args.problems.split(",")
                                                   if k.strip()]
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        ap.error(f"unknown problem(s) {', '.join(unknown)}; choose from {', '.join(BY_KEY)}")
    res_path = Path(args.results)
    old = {} if args.fresh or not res_path.exists() else C.read_json(res_path)
    results, defaults = old.get("results", {}), old.get("defaults", {})
    machine = C.machine()
    timeout = 300 if mode == "smoke" else 3 * args.budget_seconds + 600
    recipes = ("file", "default") if args.recipe == "both" else (args.recipe,)
    failed = False
    for k in keys:
        for recipe in recipes:
            table = results if recipe == "file" else defaults
            if recipe == "default":
                import pinn.config

                spec, _ = pinn.config.load_spec(str(PROBLEM_DIR / f"{k}.yaml"))
                if uses_default_recipe(spec):
                    table[k] = {"key": k, "same_as_file": True}
                    continue
            r = run_in_subprocess(k, mode, args.budget_seconds, timeout, recipe)
            table[k] = r
            failed |= bool(r.get("error"))
            msg = (f"FAILED: {r['error'][:200]}" if r.get("error") else
                   f"L2RE {sci(r.get('l2re'))} in {C.fmt(r.get('wall_seconds'), '.1f')} s "
                   f"({r.get('steps')} steps)")
            print(f"{k} [{mode}, {recipe} recipe]: {msg}", flush=True)
            C.write_json(res_path, {"machine": machine, "results": results,
                                    "defaults": defaults})
    command = C.command_line("pinnacle.py", argv)
    C.write_text(Path(args.out), report(results, command, machine, defaults) + "\n")
    print(f"wrote {args.out} and {res_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
