"""Time to accuracy: the wall time at which the relative L2 error first falls below
1e-2 ... 1e-6, for ``pinn`` and for DeepXDE, on Burgers 1D and heat 2D.

    python benchmarks/time_to_accuracy.py                 # the problem files' settings
    python benchmarks/time_to_accuracy.py --quick         # short training
    python benchmarks/time_to_accuracy.py --problems heat2d --sides pinn
    python benchmarks/time_to_accuracy.py --smoke --out-dir /tmp/tta   # seconds (tests)

Both sides train the same network (width and depth of ``problems/<name>.yaml``),
on the same numbers of interior, boundary and initial points, resampled as often
(DeepXDE: ``PDEPointResampler``), with the same Adam stage (the same
learning-rate schedule).  The optimisers after it are each side's best: ``pinn``
runs the file's own stages (self-scaled Broyden, ...); DeepXDE, which has no
second-order method but L-BFGS, runs its L-BFGS for as many iterations as the
file's later stages have steps.  DeepXDE runs twice: in float32, its default and
its fast setting, and in float64 (``dde.config.set_default_float``, side
``deepxde-pytorch-f64``), the precision of ``pinn``'s second-order stage.  The
report's ratio table is the comparison the issue asks for: the time DeepXDE took
to reach its own best error, over the time ``pinn`` took to reach that error.
Errors are measured every
``eval_every`` steps against the same reference at the same points (the points
``pinn.solve`` evaluates on during training); ``pinn`` through its training
loop's ``evaluate`` hook (history rows carry ``eval.rel_l2_u`` and ``time``),
DeepXDE through a callback.  Clocks start when training starts and include
compilation and the evaluations on both sides.  Each side runs in its own
process, one after the other.  ``pinn`` runs twice: with an empty persistent
compilation cache (``pinn``, every program compiled) and again with the programs
that run stored (``pinn-warm``, what a re-run of the same file costs).

Writes ``benchmarks/TIME_TO_ACCURACY.md``, one figure per problem
(``benchmarks/time_to_accuracy_<problem>.png``: error against wall time) and the
raw curves in ``benchmarks/results/time_to_accuracy.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

THRESHOLDS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
PROBLEM_FILES = {"burgers": "burgers1d.yaml", "heat2d": "heat2d.yaml"}
SIDES = ("pinn", "pinn-warm", "deepxde-pytorch", "deepxde-pytorch-f64")
OURS = SIDES[:2]
PEERS = SIDES[2:]


def overrides(mode: str, n_stages: int = 2) -> list[str]:
    """The settings of a mode for a file of ``n_stages`` stages: full, the file's own;
    quick, the first stage 1000 steps and each later one 100; smoke, the first 20 steps
    and no later stage, on a tiny network."""
    if mode == "full":
        return ["training.eval_every=100", "training.chunk=100"]
    if mode == "quick":
        return ["training.stages.0.steps=1000",
                *(f"training.stages.{i}.steps=100" for i in range(1, n_stages)),
                "training.eval_every=50", "training.chunk=50"]
    return ["training.stages.0.steps=20",
            *(f"training.stages.{i}.steps=0" for i in range(1, n_stages)),
            "training.eval_every=10", "training.chunk=10", "training.points.interior=64",
            "training.points.boundary=16", "training.points.initial=16", "model.mlp.width=8",
            "model.mlp.depth=1"]


def load(problem: str, mode: str):
    import pinn.config
    from pinn.config import load_spec

    path = str(C.ROOT / "problems" / PROBLEM_FILES[problem])
    n_stages = len(load_spec(path)[0].training.stages)
    return pinn.config.load(path, overrides(mode, n_stages))


def hard_conditions(problem) -> bool:
    """Whether the problem's walls and start are hard constraints (DeepXDE mirrors it)."""
    flags = {bool(getattr(c, "hard", False)) for c in problem.conditions.values()}
    if len(flags) > 1:
        raise ValueError("the DeepXDE side mirrors all-hard or all-soft conditions, not a mix")
    return flags == {True}


def first_below(curve: list[dict], level: float) -> dict | None:
    for p in curve:
        if p["rel_l2"] is not None and p["rel_l2"] < level:
            return p
    return None


# ---------------------------------------------------------------------------
# the two sides


def run_pinn(problem: str, mode: str) -> dict:
    built = load(problem, mode)
    training = built.training()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sol = built.setup(training=training, progress=False).train()
    curve = [{"time": r["time"], "step": r["step"], "rel_l2": r.get("eval.rel_l2_u")}
             for r in sol.history if r.get("event") is None and "eval.rel_l2_u" in r]
    return {"curve": curve, "steps": sol.metrics.get("steps"),
            "compile_seconds": sol.metrics.get("compile_seconds"),
            "wall_seconds": sol.metrics.get("wall_seconds"),
            "settings": _settings(built, training)}


def _settings(built, training) -> dict:
    a = built.spec.model.args
    return {"width": a.width, "depth": getattr(a, "depth", None),
            "points": {k: getattr(training.points, k) for k in
                       ("interior", "boundary", "initial", "resample_every")},
            "stages": [repr(s) for s in training.stages], "eval_every": training.eval_every,
            "precision": str(built.precision),
            "hard_conditions": hard_conditions(built.problem),
            "pinn_sampling": repr(training.points.rad) if training.points.rad is not None
            else "uniform (DeepXDE: uniform, PDEPointResampler)"}


def run_deepxde(problem: str, mode: str, budget: float | None = None,
                bits: int = 32) -> dict:
    import numpy as np
    import peers

    from pinn.train import Adam

    built = load(problem, mode)
    if bits == 64:
        import deepxde as dde

        dde.config.set_default_float("float64")
    training = built.training()
    a = built.spec.model.args
    pts, ref = C.eval_points(built.problem)
    ref_u = np.asarray(ref["u"], np.float64)
    every = training.eval_every or 100
    p = training.points
    model = peers.build(problem, width=a.width, depth=a.depth, interior=p.interior,
                        boundary=p.boundary, initial=p.initial, seed=training.seed,
                        hard=hard_conditions(built.problem))
    curve: list[dict] = []
    t0 = time.perf_counter()
    nxt = {"step": every}

    def evaluate(step: int) -> None:
        err = float(np.linalg.norm(peers.predict(model, pts) - ref_u) / np.linalg.norm(ref_u))
        curve.append({"time": time.perf_counter() - t0, "step": int(step), "rel_l2": err})

    def on_end(step: int) -> None:
        if step >= nxt["step"]:
            evaluate(step)
            nxt["step"] = (step // every + 1) * every

    import deepxde as dde

    stopped = {"at": None}

    class _Eval(dde.callbacks.Callback):
        def on_batch_end(self):
            on_end(self.model.train_state.step)
            if budget is not None and time.perf_counter() - t0 > budget:
                stopped["at"] = int(self.model.train_state.step)
                self.model.stop_training = True

    done = 0
    ran = []
    for stage in training.stages:
        if stopped["at"] is not None:
            break
        if not stage.steps:
            continue
        opt = stage.optimizer
        if not isinstance(opt, Adam):
            ran.append(f"L-BFGS x {stage.steps} (for {type(opt).__name__})")
            peers.set_lbfgs(stage.steps, every)
            model.compile("L-BFGS")
            model.train(display_every=10**9, verbose=0, callbacks=[_Eval()])
        else:
            ran.append(f"Adam x {stage.steps}")
            model.compile("adam", lr=opt.lr, decay=peers.adam_decay(opt, stage.steps))
            cbs = [_Eval()]
            if p.resample_every:
                cbs.append(dde.callbacks.PDEPointResampler(period=p.resample_every))
            model.train(iterations=stage.steps, display_every=10**9, verbose=0, callbacks=cbs)
        done = model.train_state.step
    if not curve or curve[-1]["step"] != done:
        evaluate(done)
    out = {"curve": curve, "steps": int(done), "wall_seconds": time.perf_counter() - t0,
           "backend": peers.backend_name(),
           "settings": {**_settings(built, training), "stages": ran,
                        "precision": str(bits), "float": str(dde.config.real(np).__name__)}}
    if stopped["at"] is not None:
        out["stopped_at_budget"] = {"step": stopped["at"], "budget_seconds": budget}
    return out


def ratio_to_peer(sides: dict, peer: str = "deepxde-pytorch", ours: str = "pinn") -> dict | None:
    """DeepXDE's time to its own best error over ``pinn``'s time to that error.

    ``None`` when a side is missing or failed; ``ratio`` is ``None`` (with
    ``pinn_time`` ``None``) when ``pinn`` never reached DeepXDE's best error.
    """
    ours, peer = sides.get(ours), sides.get(peer)
    if not ours or not peer or "error" in ours or "error" in peer:
        return None
    curve = [p for p in peer.get("curve") or [] if p["rel_l2"] is not None]
    if not curve:
        return None
    best = min(curve, key=lambda p: p["rel_l2"])
    # the peer's best counts as reached at the first point within 1 % of it
    reached = next(p for p in curve if p["rel_l2"] <= best["rel_l2"] * 1.01)
    mine = first_below(ours.get("curve") or [], best["rel_l2"] * 1.01)
    return {"peer_best": best["rel_l2"], "peer_time": reached["time"],
            "peer_step": reached["step"], "pinn_time": mine["time"] if mine else None,
            "pinn_step": mine["step"] if mine else None,
            "ratio": reached["time"] / mine["time"] if mine else None}


def run_side(side: str, problem: str, mode: str, timeout: float,
             budget: float | None = None, cache: Path | None = None) -> dict:
    """One side in its own process; ``pinn``'s sides compile with the persistent
    compilation cache in ``cache`` (``pinn``: a fresh folder, every program compiled;
    ``pinn-warm``: the folder ``pinn`` filled, as a re-run finds it)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "side.json"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if side in OURS:
            env["PINN_COMPILE_CACHE"] = str(cache) if cache is not None else "off"
        if side.startswith("deepxde-"):
            env["DDE_BACKEND"] = side.split("-")[1]
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", side, "--problem",
               problem, "--mode", mode, "--worker-out", str(out)]
        if budget is not None and side.startswith("deepxde-"):
            cmd += ["--budget", str(budget)]
        if side.endswith("-f64"):
            cmd += ["--float", "64"]
        load_before = C.load_average()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               cwd=C.HERE, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        if r.returncode != 0 or not out.exists():
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            return {"error": f"exited {r.returncode}: " + " | ".join(tail)}
        res = C.read_json(out)
        res["load_before"] = load_before
        return res


def analyse(res: dict) -> dict:
    curve = res.get("curve") or []
    res["first_below"] = {f"{lvl:g}": first_below(curve, lvl) for lvl in THRESHOLDS}
    finals = [p["rel_l2"] for p in curve if p["rel_l2"] is not None]
    res["final_rel_l2"] = finals[-1] if finals else None
    res["best_rel_l2"] = min(finals) if finals else None
    return res


# ---------------------------------------------------------------------------
# outputs


def plot(problem: str, sides: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for side, res in sides.items():
        curve = [p for p in res.get("curve") or [] if p["rel_l2"] is not None]
        if curve:
            ax.plot([p["time"] for p in curve], [p["rel_l2"] for p in curve], marker=".",
                    ms=3, lw=1.2, label=side)
    for lvl in THRESHOLDS:
        ax.axhline(lvl, color="0.6", lw=0.7, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel("wall time (s), compilation included")
    ax.set_ylabel("relative L2 error")
    ax.set_title(f"{problem}: error against wall time")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def report(data: dict, command: str, figures: dict[str, str]) -> str:
    m = data["machine"]
    lines = ["# pinn: time to accuracy", "", C.generated_note("time_to_accuracy.py", command),
             ""]
    if data["mode"] != "full":
        lines += [f"**{data['mode']} mode**: short training, for checking the pipeline.", ""]
    lines += [f"Machine: {C.machine_line(m)}.", ""]
    load = m.get("load_average")
    if load and m.get("cores") and load[0] > 0.5 * m["cores"]:
        lines += [f"**The machine was shared** (load average {load[0]:.1f} on {m['cores']} "
                  "cores at the start; the load before each side is in the JSON): the sides "
                  "ran one after the other, so their times are only roughly comparable.", ""]
    lines += ["Wall time (s) from the start of training (compilation and evaluations "
              "included) at which the relative L2 error first fell below each level, "
              "checked every `eval_every` steps; `–`: not reached. `pinn` compiles its "
              "stages with an empty persistent compilation cache (`pinn.compile_cache`: a "
              "first run); `pinn-warm` is the same run again with the programs the first one "
              "stored (a re-run: tracing and loading, no XLA compilation). DeepXDE (PyTorch) "
              "compiles nothing.", ""]
    header = ("problem", "side", *(f"< {lvl:.0e}".replace("e-0", "e-") for lvl in THRESHOLDS),
              "final rel. L2", "steps", "total (s)")
    rows = []
    for problem, sides in data["problems"].items():
        for side, res in sides.items():
            if "error" in res:
                rows.append((problem, side, "failed", *[""] * (len(THRESHOLDS) + 2)))
                continue
            fb = res["first_below"]
            cells = [(f"{fb[k]['time']:.1f} (step {fb[k]['step']})" if fb.get(k) else "–")
                     for k in (f"{lvl:g}" for lvl in THRESHOLDS)]
            steps = str(res.get("steps"))
            stop = res.get("stopped_at_budget")
            if stop:
                steps += f" (stopped at the {stop['budget_seconds']:.0f} s budget)"
            rows.append((problem, side, *cells, C.fmt(res.get("final_rel_l2")), steps,
                         C.fmt(res.get("wall_seconds"), ".1f")))
    lines += [C.table(header, rows), ""]
    ratios = [((problem, peer, ours), ratio_to_peer(sides, peer, ours))
              for problem, sides in data["problems"].items() for peer in PEERS
              for ours in OURS]
    ratios = [(p, r) for p, r in ratios if r]
    if ratios:
        lines += ["**`pinn` against DeepXDE at DeepXDE's own best error** (the first evaluation "
                  "within 1 % of the lowest error DeepXDE reached; the ratio is DeepXDE's time "
                  "to it over `pinn`'s):", ""]
        rows = [(*p, C.fmt(r["peer_best"]), f"{r['peer_time']:.1f} (step {r['peer_step']})",
                 f"{r['pinn_time']:.1f} (step {r['pinn_step']})" if r["pinn_time"] is not None
                 else "not reached",
                 f"{r['ratio']:.1f}x" if r["ratio"] is not None else "–")
                for p, r in ratios]
        lines += [C.table(("problem", "DeepXDE side", "pinn side", "its best rel. L2",
                           "reached it at (s)", "pinn reached it (s)", "pinn sooner by"),
                          rows), ""]
    for problem, fig in figures.items():
        lines += [f"![{problem}]({fig})", ""]
    errs = [(p, s, r["error"]) for p, sides in data["problems"].items()
            for s, r in sides.items() if "error" in r]
    if errs:
        lines += ["Sides that failed:", ""] + [f"- {p} {s}: `{e[:300]}`" for p, s, e in errs]
        lines.append("")
    lines += ["Settings:", ""]
    for problem, sides in data["problems"].items():
        for side, res in sides.items():
            if "settings" in res:
                lines.append(f"- {problem} / {side}: {res['settings']}")
    lines.append("")
    return "\n".join(lines)


def write_report(data: dict, out_dir: Path, suffix: str = "") -> Path:
    """``TIME_TO_ACCURACY<suffix>.md`` from the stored data (figures beside it)."""
    figures = {p: f"time_to_accuracy_{p}{suffix}.png" for p in data["problems"]}
    md = out_dir / f"TIME_TO_ACCURACY{suffix}.md"
    C.write_text(md, report(data, data["command"], figures))
    return md


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="burgers,heat2d")
    ap.add_argument("--sides", default=None,
                    help="comma list of pinn, deepxde-pytorch (float32), deepxde-pytorch-f64 "
                         "(default: all when deepxde is installed)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out-dir", default=None,
                    help="where the markdown, figures and JSON go (default: benchmarks/)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per side")
    ap.add_argument("--budget", type=float, default=None,
                    help="DeepXDE sides stop training after this many seconds (the curve so "
                         "far is kept and the stop is reported)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--float", type=int, default=32, help=argparse.SUPPRESS)
    ap.add_argument("--problem", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        res = (run_pinn(args.problem, args.mode) if args.worker in OURS
               else run_deepxde(args.problem, args.mode, args.budget, args.float))
        C.write_json(Path(args.worker_out), res)
        return 0

    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    command = C.command_line("time_to_accuracy.py", argv)
    problems = [p.strip() for p in args.problems.split(",") if p.strip()]
    bad = [p for p in problems if p not in PROBLEM_FILES]
    if bad:
        ap.error(f"unknown problem(s) {bad}; choose from {', '.join(PROBLEM_FILES)}")
    if args.sides:
        sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    else:
        import peers

        sides = list(SIDES) if peers.available() else ["pinn"]
    bad = [s for s in sides if s not in SIDES]
    if bad:
        ap.error(f"unknown side(s) {bad}; choose from {', '.join(SIDES)}")
    if "pinn-warm" in sides and "pinn" not in sides:
        ap.error("the side pinn-warm re-runs pinn with the compilation cache that pinn "
                 "filled: ask for pinn too")
    sides.sort(key=SIDES.index)
    out_dir = Path(args.out_dir) if args.out_dir else C.HERE
    suffix = "" if mode == "full" else f"-{mode}"
    jpath = (out_dir / "results" if args.out_dir is None else out_dir) / (
        f"time_to_accuracy{suffix}.json")

    data = {"mode": mode, "machine": C.machine(), "command": command, "problems": {}}
    failed = False
    for problem in problems:
        data["problems"][problem] = {}
        cache = Path(tempfile.mkdtemp(prefix="pinn-xla-"))  # cold for pinn, then warm
        for side in sides:
            print(f"[{mode}] {problem} / {side} ...", file=sys.stderr, flush=True)
            res = analyse(run_side(side, problem, mode, args.timeout, args.budget, cache))
            failed |= "error" in res
            data["problems"][problem][side] = res
            print("  " + (res.get("error") or
                          f"final {C.fmt(res.get('final_rel_l2'))} after "
                          f"{C.fmt(res.get('wall_seconds'), '.1f')} s; first below "
                          + ", ".join(f"{k}: {C.fmt(v['time'], '.1f') if v else '–'}"
                                      for k, v in res["first_below"].items())),
                  file=sys.stderr, flush=True)
        shutil.rmtree(cache, ignore_errors=True)
        plot(problem, data["problems"][problem],
             out_dir / f"time_to_accuracy_{problem}{suffix}.png")
        C.write_json(jpath, data)
    md = write_report(data, out_dir, suffix)
    print(f"wrote {md}, {jpath}", file=sys.stderr)
    return 1 if failed and mode == "smoke" else 0


if __name__ == "__main__":
    sys.exit(main())
