"""Accuracy suite: PINN (``pinn.solve``) and the FEM baseline against exact or reference
solutions, with published results as anchors.

    python benchmarks/accuracy.py                       # full suite (up to an hour)
    python benchmarks/accuracy.py --quick               # minutes: short training
    python benchmarks/accuracy.py --problems burgers1d,heat2d
    python benchmarks/accuracy.py --smoke --out /tmp/r.md   # seconds (tests)
    python benchmarks/accuracy.py --from-json benchmarks/results/accuracy.json

Each problem is a file in ``problems/`` loaded with ``pinn.config.load`` (full mode:
its own settings, the "defaults a user would get"; quick mode: a short Adam stage;
smoke: a tiny network and a few steps).  Each problem runs in its own process (a
crash or a timeout in one does not stop the others).  The PINN and the FEM solution
are evaluated on the same points (``pinn.evaluation_grid``).

Results: raw JSON in ``benchmarks/results/accuracy.json`` (``accuracy-quick.json`` in
quick mode; entries are merged by problem, so the suite can be run piecewise), and
the generated ``benchmarks/RESULTS.md`` (``RESULTS-quick.md``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

PROBLEMS_DIR = C.ROOT / "problems"

# ---------------------------------------------------------------------------
# published anchors


@dataclass(frozen=True)
class Anchor:
    problem: str      # our suite key, or a problem we do not run
    what: str
    rel_l2: float
    source: str       # short citation
    note: str = ""


PINNACLE = ("Hao et al., *PINNacle: A comprehensive benchmark of physics-informed neural "
            "networks for solving PDEs*, NeurIPS 2024 (Datasets and Benchmarks), plain PINN")
RAISSI = ("Raissi, Perdikaris and Karniadakis, *Physics-informed neural networks*, "
          "J. Comput. Phys. 378 (2019) 686-707")
JAXPI = ("Wang, Sankaran, Wang and Perdikaris, *An expert's guide to training "
         "physics-informed neural networks*, arXiv:2308.08468 (2023), JAX-PI")
PIRATE = ("Wang, Li, Chen and Perdikaris, *PirateNets: physics-informed deep learning with "
          "residual adaptive networks*, JMLR 25 (2024), arXiv:2402.00326")

VRBA = ("vRBA weights + SSBroyden in float64: the repository jdtoscano94/vRBA (Burgers: "
        "BG_100pi.py), the numbers as quoted in issue #14")
RBA = ("Anagnostopoulos, Toscano, Stergiopulos and Karniadakis, *Residual-based attention in "
       "physics-informed neural networks*, CMAME 421 (2024); soanagno/rba-pinns")
ENGD = ("Müller and Zeinhofer, *Achieving high accuracy with PINNs via energy natural "
        "gradient descent*, ICML 2023 (about 1000 s of training)")

ANCHORS = (
    Anchor("burgers1d", "vRBA + SSBroyden, float64", 8.3e-9, VRBA),
    Anchor("allen_cahn1d", "vRBA + SSBroyden, float64", 1.9e-6, VRBA),
    Anchor("helmholtz2d", "RBA + Fourier features", 5.8e-6, RBA),
    Anchor("poisson2d", "energy natural gradient", 6.2e-8, ENGD),
    Anchor("burgers1d", "plain PINN (PINNacle Burgers1d-C)", 1.45e-2, PINNACLE),
    Anchor("burgers1d", "original PINN", 6.7e-4, RAISSI),
    Anchor("wave1d", "plain PINN (PINNacle Wave1d-C)", 5.88e-1, PINNACLE),
    Anchor("poisson2d-c", "plain PINN (PINNacle Poisson2d-C)", 6.94e-1, PINNACLE,
           "PINNacle's Poisson 2d-C is on a rectangle with circular holes: not one of our "
           "problems (ours: poisson2d on the unit square, poisson_lshape)"),
    Anchor("allen_cahn1d", "best published (JAX-PI)", 5.4e-5, JAXPI),
    Anchor("allen_cahn1d", "best published (PirateNet)", 2.2e-5, PIRATE),
    Anchor("kdv", "best published (JAX-PI)", 4.3e-4, JAXPI),
    Anchor("advection", "best published (JAX-PI), advection c = 80", 6.9e-4, JAXPI),
)

# ---------------------------------------------------------------------------
# the suite


@dataclass(frozen=True)
class Entry:
    key: str
    title: str
    file: str                                   # in problems/
    fem: bool = True                            # try the FEM baseline
    reference: str | None = None                # attach a reference the file lacks
    quick_steps: int = 500
    quick: tuple[str, ...] = ()                 # extra overrides in quick mode
    notes: str = ""


SUITE = {e.key: e for e in (
    Entry("heat2d", "Heat 2D", "heat2d.yaml"),
    Entry("burgers1d", "Burgers 1D (nu = 0.01/pi)", "burgers1d.yaml"),
    Entry("poisson2d", "Poisson 2D (unit square)", "poisson2d.yaml"),
    Entry("helmholtz2d", "Helmholtz 2D (a1 = 1, a2 = 4)", "helmholtz2d.yaml"),
    Entry("allen_cahn1d", "Allen-Cahn 1D", "allen_cahn1d.yaml", reference="allen_cahn"),
    Entry("wave1d", "Wave 1D (c = 2)", "wave1d.yaml"),
    Entry("poisson_lshape", "Laplace on the L-shape (corner singularity)",
          "poisson_lshape.yaml"),
    Entry("inverse_burgers", "Inverse Burgers (learn nu from 2000 samples)",
          "inverse_burgers.yaml", fem=False),
    Entry("ns_cavity", "Lid-driven cavity Re = 100 (reference: fine FEM)", "ns_cavity.yaml",
          fem=False, notes="the reference is itself the FEM baseline on a fine mesh"),
    Entry("kdv", "KdV (delta = 0.022, JAX-PI's setting)", "kdv.yaml"),
    Entry("advection", "Advection c = 80 (JAX-PI's setting)", "advection.yaml"),
)}

TRUE_PARAMS = {"inverse_burgers": {"nu": C.NU_BURGERS}}


def overrides_for(entry: Entry, mode: str, spec) -> list[str]:
    """``--set``-style overrides for the mode (the file's own settings in full mode)."""
    if mode == "full":
        return []
    n_stages = len(spec.training.stages)
    # time marching: the quick and smoke runs train two windows
    windows = ["training.windows=2"] if spec.training.windows > 2 else []
    if mode == "quick":
        out = [f"training.stages.0.steps={entry.quick_steps}"]
        out += [f"training.stages.{i}.steps=0" for i in range(1, n_stages)]
        out += ["training.eval_every=100"] + windows
        return out + list(entry.quick)
    # smoke: a tiny network, a few steps, few points
    out = ["training.stages.0.steps=20", "training.eval_every=10", "training.chunk=10",
           "training.points.interior=128", "training.points.boundary=32",
           "training.points.initial=32"]
    out += [f"training.stages.{i}.steps=0" for i in range(1, n_stages)]
    kind = spec.model.kind
    out += [f"model.{kind}.width=8"]
    out += [f"model.{kind}.blocks=1" if kind == "pirate" else f"model.{kind}.depth=1"]
    return out + windows


#: ``--max-level-seconds``: a cap on one FEM solve of a study (None: the rule below)
MAX_LEVEL_SECONDS: float | None = None


def study_options(mode: str, pinn_seconds: float) -> dict:
    """The FEM refinement study's settings: full mode refines P1-P3 until it matches the
    PINN at equal accuracy and at equal time (a level may take up to 1.5x the PINN's time,
    at least 60 s, at most 600 s, or ``--max-level-seconds``); quick and smoke modes two
    small meshes of P1 and P2."""
    if mode == "full":
        cap = MAX_LEVEL_SECONDS or min(600.0, max(60.0, 1.5 * pinn_seconds))
        return {"max_level_seconds": cap}
    return {"elements": ("P1", "P2"), "cells": (4, 8), "max_level_seconds": 30.0}


def _reference(name: str):
    import pinn.reference as R

    if name == "allen_cahn":
        return R.allen_cahn()
    raise ValueError(f"unknown reference {name!r}")


def run_entry(entry: Entry, mode: str) -> dict:
    """Train the PINN, solve with FEM; errors on the same points. Never raises."""
    import pinn
    import pinn.config

    out: dict = {"key": entry.key, "title": entry.title, "file": f"problems/{entry.file}",
                 "mode": mode, "date": C.machine()["date"], "load_start": C.load_average()}
    path = str(PROBLEMS_DIR / entry.file)
    try:
        spec, _ = pinn.config.load_spec(path)
        sets = overrides_for(entry, mode, spec)
        out["overrides"] = sets
        built = pinn.config.load(path, sets)
        problem = built.problem
        if entry.reference:
            problem = dataclasses.replace(problem, reference=_reference(entry.reference))
        model, training = built.model(), built.training()
        out["model"] = repr(model)
        out["stages"] = [f"{type(s.optimizer).__name__} x {s.steps}" for s in training.stages]
        out["points"] = {k: getattr(training.points, k)
                         for k in ("interior", "boundary", "initial")}
        if training.windows > 1:
            out["windows"] = training.windows
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sol = built.setup(problem=problem, model=model, training=training,
                              progress=False).train()
        out["pinn_wall_seconds"] = time.perf_counter() - t0
        m = sol.metrics  # pinn.evaluate.score on the evaluation grid: metrics.json's numbers
        out["n_eval_points"] = (m.get("grid") or {}).get("points_inside")
        out["pinn"] = {
            "rel_l2": m.get("rel_l2", {}), "max_abs_error": m.get("max_abs_error", {}),
            "steps": m.get("steps"), "train_seconds": m.get("train_seconds"),
            "compile_seconds": m.get("compile_seconds"), "wall_seconds": m.get("wall_seconds"),
            "precision": built.precision, "stage_precisions": list(built.stage_precisions),
            "params": sol.learned_params(),
            "history": [{k: r.get(k) for k in ("step", "time", "loss") + tuple(
                c for c in r if c.startswith("eval."))} for r in sol.history
                if r.get("event") is None],
        }
        if entry.key in TRUE_PARAMS:
            out["pinn"]["param_rel_error"] = {
                k: abs(sol.learned_params().get(k, math.nan) - v) / abs(v)
                for k, v in TRUE_PARAMS[entry.key].items()}
    except Exception as exc:  # noqa: BLE001 - one problem's failure is a result
        out["pinn_error"] = f"{type(exc).__name__}: {exc}"
        out["pinn_traceback"] = traceback.format_exc(limit=8)
        return out
    if entry.fem:
        out["fem"] = run_fem(problem, mode, out["pinn"], built.spec.evaluation.resolution)
    return out


def run_fem(problem, mode: str, pinn_result: dict, resolution=None) -> dict:
    """The FEM matched with the PINN: a refinement study (``pinn.fem.study.refine``), its
    cheapest level at least as accurate as the PINN and its most accurate level within
    the PINN's wall time (the comparisons ``pinn compare`` makes). Never raises."""
    from pinn import fem
    from pinn.fem.study import refine, worst

    err = worst(pinn_result.get("rel_l2"))
    secs = float(pinn_result.get("wall_seconds") or 0.0)
    kw = study_options(mode, secs)
    res: dict = {"date": C.machine()["date"], "load_start": C.load_average(),
                 "options": {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study = refine(problem, target_error=err, budget_seconds=secs,
                           resolution=resolution, **kw)
        res["study"] = study.to_data()
        acc, tim = study.equal_accuracy(err), study.equal_time(secs)
        res["equal_accuracy"] = None if acc is None else dataclasses.asdict(acc)
        res["equal_time"] = None if tim is None else dataclasses.asdict(tim)
        if not study.levels:
            res["error"] = "no level solved: " + "; ".join(f"{k}: {v}" for k, v in
                                                           study.stopped.items())
    except fem.UnsupportedProblem as exc:
        res["unsupported"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - recorded, the suite goes on
        res["error"] = f"{type(exc).__name__}: {exc}"
    return res


def rematch_fem(entry: Entry, r: dict, mode: str) -> dict:
    """``--fem-only``: the FEM side again, against a stored PINN result."""
    import pinn.config

    path = str(PROBLEMS_DIR / entry.file)
    built = pinn.config.load(path, r.get("overrides") or [])
    problem = built.problem
    if entry.reference:
        problem = dataclasses.replace(problem, reference=_reference(entry.reference))
    fem_res = run_fem(problem, mode, r["pinn"], built.spec.evaluation.resolution)
    fem_res["separate_run"] = True
    return fem_res


# ---------------------------------------------------------------------------
# orchestration


def run_in_subprocess(key: str, mode: str, timeout: float) -> dict:
    args = ["--worker", key, "--mode", mode]
    if MAX_LEVEL_SECONDS:
        args += ["--max-level-seconds", str(MAX_LEVEL_SECONDS)]
    res, why = C.run_worker(Path(__file__), args, timeout)
    return res if res is not None else {"key": key, "title": SUITE[key].title, "mode": mode,
                                        "pinn_error": why}


def summary(res: dict) -> str:
    if "pinn_error" in res:
        return f"{res['key']}: PINN failed: {res['pinn_error'][:300]}"
    p = res["pinn"]
    s = (f"{res['key']}: PINN rel L2 {_field_errs(p.get('rel_l2'))} in "
         f"{C.fmt(p.get('wall_seconds'), '.1f')} s ({p.get('steps')} steps)")
    f = res.get("fem")
    if f:
        if "study" in f:
            s += f"; FEM at equal accuracy: {_equal_accuracy(f, p)}; at equal time: " \
                 f"{_equal_time(f, p)}"
        else:
            s += f"; FEM: {(f.get('unsupported') or f.get('error', ''))[:120]}"
    return s


def _worst(d) -> float:
    vals = [v for v in (d or {}).values() if v is not None]
    return max(vals) if vals else math.nan


def _equal_accuracy(f: dict, p: dict) -> str:
    lv = f.get("equal_accuracy")
    if lv is None:
        levels = (f.get("study") or {}).get("levels") or []
        best = min(levels, key=lambda v: _worst(v["rel_l2"]), default=None)
        return ("not reached" + (f" (best {C.fmt(_worst(best['rel_l2']))}, {best['element']} "
                                 f"{best['cells']} cells, {best['seconds']:.3g} s)"
                                 if best else ""))
    secs = p.get("wall_seconds") or math.nan
    ratio = secs / lv["seconds"] if lv["seconds"] > 0 else math.inf
    dt = f", dt {lv['dt']:.2g}" if lv.get("dt") else ""
    return (f"{lv['element']} {lv['cells']} cells{dt}, {lv['seconds']:.3g} s "
            + (f"({ratio:.3g}x faster)" if ratio >= 1 else f"({1 / ratio:.3g}x slower)"))


def _equal_time(f: dict, p: dict) -> str:
    lv = f.get("equal_time")
    if lv is None:
        return "every level took longer"
    e, mine = _worst(lv["rel_l2"]), _worst(p.get("rel_l2"))
    ratio = mine / e if e > 0 else math.inf
    dt = f", dt {lv['dt']:.2g}" if lv.get("dt") else ""
    return (f"{C.fmt(e)} ({lv['element']} {lv['cells']} cells{dt}; "
            + (f"{ratio:.3g}x lower)" if ratio >= 1 else f"{1 / ratio:.3g}x higher)"))


def sci(v: float) -> str:
    """1.45e-2 (the way the papers print it)."""
    mant, exp = f"{v:.2e}".split("e")
    return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"


def _field_errs(d) -> str:
    if not d:
        return "–"
    if len(d) == 1:
        return C.fmt(next(iter(d.values())))
    return ", ".join(f"{k} {C.fmt(v)}" for k, v in d.items())


# ---------------------------------------------------------------------------
# the report


def report(data: dict, command: str) -> str:
    m = data["machine"]
    mode = data["mode"]
    lines = ["# pinn: accuracy results", "", C.generated_note("accuracy.py", command), ""]
    # entries that predate this invocation's start were merged from earlier runs
    started = m.get("date", "")
    if any(r.get("date", "") < started for r in data["entries"].values()):
        lines += ["Results are merged by problem from several runs (the last one above; each "
                  "problem's run, date and load are under Settings below).", ""]
    if mode != "full":
        lines += [f"**{mode} mode**: short training, for checking the pipeline; these are "
                  "not the suite's results (run `python benchmarks/accuracy.py`).", ""]
    lines += [f"Machine: {C.machine_line(m)}.", ""]
    cpus = {r["machine"].split(";")[0] for r in data["entries"].values() if r.get("machine")}
    if len(cpus) > 1:
        lines += [f"The rows were measured on {len(cpus)} different machines ("
                  + "; ".join(sorted(cpus)) + "; each row's under Settings): compare times "
                  "only between rows of one machine. Errors of a seeded run can differ in the "
                  "last digits between machines (another CPU rounds float32 sums in another "
                  "order).", ""]
    load = m.get("load_average")
    if load and m.get("cores") and load[0] > 0.5 * m["cores"]:
        lines += [f"The machine was shared (load average {load[0]:.1f} on {m['cores']} cores "
                  "at the start): training times are longer than on an idle machine; the "
                  "errors do not depend on it.", ""]
    lines += ["Relative L2 error ||u - u_ref|| / ||u_ref|| on the evaluation grid "
              "(`pinn.evaluation_grid`, the same points for PINN and FEM), float32 training "
              "unless noted. PINN time: wall time of `pinn.solve` (compilation included; "
              "compile seconds in brackets). FEM is matched with each PINN as `pinn compare` "
              "does it: a refinement study (P1-P3 on doubling meshes; evolution problems: the "
              "time step follows the cell size; `pinn.fem.study`) gives the cheapest FEM at "
              "least as accurate as the PINN (its `pinn.fem.solve` wall time, and how much "
              "sooner than the PINN it is done) and the most accurate FEM within the PINN's "
              "wall time (its error, and how much lower than the PINN's it is). The whole "
              "sequences are in `benchmarks/results/accuracy.json`.", ""]
    header = ("problem", "PINN rel. L2", "PINN time (s)", "steps", "FEM at equal accuracy",
              "FEM at equal time", "published (rel. L2)")
    rows = []
    for key in [k for k in SUITE if k in data["entries"]] + [
            k for k in data["entries"] if k not in SUITE]:
        r = data["entries"][key]
        anchors = "; ".join(f"{sci(a.rel_l2)} ({a.what})" for a in ANCHORS if a.problem == key)
        if "pinn_error" in r:
            rows.append((r.get("title", key), "failed", "–", "–", "–", "–", anchors or "–"))
            continue
        p = r["pinn"]
        err = _field_errs(p.get("rel_l2"))
        if p.get("param_rel_error"):
            err += "; " + ", ".join(f"{k} off by {100 * v:.2g}%"
                                    for k, v in p["param_rel_error"].items())
        if "mixed" in (p.get("stage_precisions") or ()):
            err += " (mixed: float32, then float64)"
        elif p.get("precision") == 64:
            err += " (float64)"
        ptime = (f"{C.fmt(p.get('wall_seconds'), '.0f')} "
                 f"({C.fmt(p.get('compile_seconds'), '.0f')})")
        f = r.get("fem")
        if f is None:
            fem_cells = ("–", "–")
        elif "study" in f and f["study"].get("levels"):
            fem_cells = (_equal_accuracy(f, p), _equal_time(f, p))
        elif "study" not in f and "rel_l2" in f:  # an old result: one fixed mesh
            fem_cells = ("not matched (an old fixed-mesh result)", "–")
        else:
            why = "not supported" if "unsupported" in f else "failed"
            fem_cells = (why + " (see below)", "–")
        rows.append((r.get("title", key), err, ptime, str(p.get("steps")), *fem_cells,
                     anchors or "–"))
    lines += [C.table(header, rows), ""]

    lines += ["## Published anchors", "",
              "Relative L2 errors reported in the literature for the same problems (the "
              "original papers' settings, not re-run here).", ""]
    arows = []
    for a in ANCHORS:
        ours = data["entries"].get(a.problem, {}).get("pinn", {}).get("rel_l2")
        arows.append((a.problem, a.what, sci(a.rel_l2), _field_errs(ours) if ours else "–",
                      a.source + (f". *{a.note}*" if a.note else "")))
    lines += [C.table(("problem", "method", "rel. L2", "ours (this run)", "source"), arows),
              ""]

    notes = []
    for key, r in data["entries"].items():
        if "pinn_error" in r:
            notes.append(f"- {key}: PINN failed: `{r['pinn_error'][:400]}`")
        f = r.get("fem") or {}
        if "unsupported" in f:
            notes.append(f"- {key}: FEM baseline not supported: {f['unsupported'][:300]}")
        elif "error" in f:
            notes.append(f"- {key}: FEM failed: `{f['error'][:300]}`")
        if f.get("separate_run"):
            load = f.get("load_start")
            notes.append(f"- {key}: the FEM study ran on {f.get('date')}"
                         + (f" (load average {load[0]:.1f} at its start)" if load else "")
                         + ", in a later run than the PINN (`--fem-only`): their times come "
                         "from two runs of this machine")
        if r.get("run_note"):
            notes.append(f"- {key}: {r['run_note']}")
        if SUITE.get(key) and SUITE[key].notes:
            notes.append(f"- {key}: {SUITE[key].notes}")
    missing = [k for k in SUITE if k not in data["entries"]]
    if missing:
        notes.append(f"- not run in this run (no results): {', '.join(missing)}; "
                     f"`python benchmarks/accuracy.py --problems {','.join(missing)}` adds them")
    if notes:
        lines += ["## Notes", ""] + notes + [""]
    lines += ["## Settings", ""]
    for key, r in data["entries"].items():
        if "pinn" not in r:
            continue
        load = r.get("load_start")
        lines.append(f"- {key} (`{r.get('file')}`, run {r.get('date')}"
                     + (f" on {r['machine'].split(';')[0]}" if r.get("machine") else "")
                     + (f", load average {load[0]:.1f} at its start" if load else "")
                     + (f", by `{r['command']}`" if r.get("command") else "")
                     + f"): {r.get('model')}; "
                     f"stages {', '.join(r.get('stages', []))}"
                     + (f" in each of {r['windows']} time windows" if r.get("windows") else "")
                     + f"; points {r.get('points')}"
                     + (f"; overrides `{' '.join(r['overrides'])}`" if r.get("overrides")
                        else ""))
    lines.append("")
    return "\n".join(lines)


def _merge_newer(jpath: Path, data: dict, mode: str, keys) -> None:
    """Take into ``data`` the entries of other problems that ``jpath`` holds now: runs of
    different problems at the same time (one per process) each keep their rows."""
    if not jpath.exists():
        return
    now = C.read_json(jpath)
    if now.get("mode") != mode:
        return
    for key, entry in now.get("entries", {}).items():
        if key not in keys:
            data["entries"][key] = entry


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short training (minutes in all)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny networks, 20 steps, one problem by default (seconds)")
    ap.add_argument("--problems", default=None,
                    help=f"comma list of {', '.join(SUITE)} (default: all; smoke: poisson2d)")
    ap.add_argument("--out", default=None, help="markdown (default benchmarks/RESULTS.md, "
                    "RESULTS-quick.md with --quick)")
    ap.add_argument("--json", default=None, help="raw results (default "
                    "benchmarks/results/accuracy[-quick].json); merged by problem")
    ap.add_argument("--from-json", default=None, help="only regenerate the markdown")
    ap.add_argument("--inline", action="store_true",
                    help="run the problems in this process (default: one process each)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per problem")
    ap.add_argument("--note", default=None,
                    help="a note on how these problems ran (e.g. pinned to one core beside "
                         "other jobs), printed with their results")
    ap.add_argument("--fem-only", action="store_true",
                    help="only redo the FEM matching, against the PINN results on record")
    ap.add_argument("--max-level-seconds", type=float, default=None,
                    help="cap one FEM solve of a study (default: 1.5x the PINN's time, "
                         "60-600 s); the equal-time row is then a bound where it binds")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    global MAX_LEVEL_SECONDS
    MAX_LEVEL_SECONDS = args.max_level_seconds
    if args.worker:
        C.write_json(Path(args.worker_out), run_entry(SUITE[args.worker], args.mode))
        return 0

    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    suffix = "" if mode == "full" else f"-{mode}"
    command = C.command_line("accuracy.py", argv)
    out = Path(args.out) if args.out else C.HERE / f"RESULTS{suffix}.md"
    jpath = Path(args.json) if args.json else C.HERE / "results" / f"accuracy{suffix}.json"
    if args.from_json:
        data = C.read_json(args.from_json)
        C.write_text(out, report(data, data.get("command", command)))
        print(f"wrote {out}", file=sys.stderr)
        return 0
    default = "poisson2d" if mode == "smoke" else ",".join(SUITE)
    keys = [k.strip() for k in (args.problems or default).split(",") if k.strip()]
    unknown = [k for k in keys if k not in SUITE]
    if unknown:
        ap.error(f"unknown problem(s) {unknown}; choose from {', '.join(SUITE)}")

    data = {"mode": mode, "entries": {}}
    if jpath.exists():
        old = C.read_json(jpath)
        if old.get("mode") == mode:
            data["entries"] = old.get("entries", {})
            if args.fem_only:  # the PINN side's run stays the record's
                data["machine"], data["command"] = old["machine"], old.get("command")
            # entries from before machines were recorded per entry ran on the old file's
            for r in data["entries"].values():
                r.setdefault("machine", C.machine_line(old["machine"]))
    if args.fem_only:
        for key in keys:
            r = data["entries"].get(key)
            if r is None or "pinn" not in r or not SUITE[key].fem:
                continue
            print(f"[{mode}] {key}: FEM study ...", file=sys.stderr, flush=True)
            r["fem"] = rematch_fem(SUITE[key], r, mode)
            print("  " + summary(r), file=sys.stderr, flush=True)
            C.write_json(jpath, data)
            C.write_text(out, report(data, data.get("command", command)))
        print(f"wrote {out} and {jpath}", file=sys.stderr)
        return 0
    data["machine"] = C.machine()
    data["command"] = command
    failed = 0
    for key in keys:
        print(f"[{mode}] {key} ...", file=sys.stderr, flush=True)
        res = (run_entry(SUITE[key], mode) if args.inline or mode == "smoke"
               else run_in_subprocess(key, mode, args.timeout))
        res["command"] = command
        res["machine"] = C.machine_line(data["machine"])
        if args.note:
            res["run_note"] = args.note
        data["entries"][key] = res
        failed += "pinn_error" in res
        print("  " + summary(res), file=sys.stderr, flush=True)
        _merge_newer(jpath, data, mode, keys)  # rows another run wrote meanwhile stay
        C.write_json(jpath, data)            # after every problem: nothing is lost
        C.write_text(out, report(data, command))
    print(f"wrote {out} and {jpath}", file=sys.stderr)
    return 1 if failed and mode == "smoke" else 0


if __name__ == "__main__":
    sys.exit(main())
