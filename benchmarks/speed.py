"""Per-step training time of ``pinn`` against hand-written JAX and DeepXDE.

    python benchmarks/speed.py                    # cases a, b; writes SPEED.md + JSON
    python benchmarks/speed.py --cases a,b,b10k --rounds 7
    python benchmarks/speed.py --smoke            # seconds: tiny sizes, no file written

Cases (same problem, network, point counts and optimiser, Adam lr 1e-3, float32):

* ``a``: Burgers 1D, 2 -> 3x20 tanh -> 1, 2540 interior + 80 boundary + 160 initial;
* ``b``: heat 2D, 3 -> 4x64 tanh -> 1, 8192 interior + 256 boundary + 256 initial;
* ``b10k``: as ``b`` with 10240 interior points.

Sides, each in its own process (so that allocator settings and DeepXDE's
backend choice apply to it alone):

* ``pinn``: the real training loop (``pinn.train.run`` on the terms that
  ``pinn.solve`` assembles), steps inside its jitted chunks, no resampling;
* ``jax-best`` / ``jax-jvp``: the hand-written JAX steps of ``engine.py``
  (hand-specialised Taylor mode / nested ``jax.jvp``, steps in ``lax.scan``),
  with the boundary and initial terms added;
* ``deepxde-pytorch`` / ``deepxde-jax``: DeepXDE on the same problem (only when
  the ``peers`` extra is installed; the JAX backend only if it runs).

Every side is started once per allocator setting (glibc default, and tuned:
``MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184``),
compiled and warmed up, then timed blocks of steps are interleaved round-robin
across the sides (``--rounds``), so that load from other processes hits all
sides alike.  The table reports the minimum and the median per-step time over
the rounds and ratios taken within one run.  ``GFLOP/s`` is XLA's cost analysis
of one compiled step divided by the minimum step time; ``%peak`` relates it to
the FP32 peak estimate of the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

ALLOCATORS = {"default": {}, "tuned": C.TUNED_MALLOC}
JAX_SIDES = ("pinn", "jax-best", "jax-jvp")
PEER_SIDES = ("deepxde-pytorch", "deepxde-jax")


@dataclass(frozen=True)
class Case:
    key: str
    problem: str          # 'burgers' | 'heat2d'
    width: int
    depth: int
    interior: int
    boundary: int
    initial: int
    block: int            # steps per timed block

    @property
    def label(self) -> str:
        d_in = 2 if self.problem == "burgers" else 3
        return (f"{self.problem} {d_in}->{self.depth}x{self.width}->1, {self.interior} + "
                f"{self.boundary} + {self.initial} points")


CASES = {
    "a": Case("a", "burgers", 20, 3, 2540, 80, 160, block=100),
    "b": Case("b", "heat2d", 64, 4, 8192, 256, 256, block=10),
    "b10k": Case("b10k", "heat2d", 64, 4, 10240, 256, 256, block=10),
}


# ---------------------------------------------------------------------------
# workers: one process per side; they talk over stdin/stdout ('@@ ' + JSON lines)


def _say(obj) -> None:
    sys.stdout.write("@@ " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def _env() -> dict:
    """What this worker runs under (allocator settings, DeepXDE backend, threads)."""
    keys = (*C.TUNED_MALLOC, "DDE_BACKEND", "XLA_FLAGS", "OMP_NUM_THREADS")
    return {k: os.environ[k] for k in keys if k in os.environ}


def _wait() -> str:
    line = sys.stdin.readline()
    return line.strip() or "quit"


def _step_flops(step, *args) -> float:
    import jax

    try:
        ca = jax.jit(step).lower(*args).compile().cost_analysis()
    except Exception:  # noqa: BLE001 - cost analysis is best effort
        return float("nan")
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return float((ca or {}).get("flops", float("nan")))


def worker_pinn(case: Case, blocks: int, flops: bool) -> None:
    import jax
    import optax

    import pinn

    t0 = time.perf_counter()
    problem = C.PROBLEMS[case.problem]()
    training = pinn.Training(
        stages=[pinn.Stage(pinn.Adam(lr=1e-3), case.block * (blocks + 1))],
        points=pinn.Points(interior=case.interior, boundary=case.boundary,
                           initial=case.initial),
        chunk=case.block, seed=0)
    model = pinn.MLP(width=case.width, depth=case.depth, activation="tanh")
    setup = pinn.setup(problem, model, training, progress=False)
    asm, params, weighting = setup.assembly, setup.params, setup.weighting
    info = {"flops": float("nan")}
    if flops:
        tx = optax.adam(1e-3)
        w = weighting.weights

        def step(p, s, batch):
            def loss(q):
                out = asm.terms_fn(q, batch)
                terms = out[0] if isinstance(out, tuple) else out
                return sum(w[k] * terms[k] for k in terms)

            val, g = jax.value_and_grad(loss)(p)
            upd, s = tx.update(g, s, p)
            return optax.apply_updates(p, upd), s, val

        batch = asm.sample_fn(jax.random.PRNGKey(0), params)
        info["flops"] = _step_flops(step, params, tx.init(params), batch)
    clock = {"chunks": 0, "t": None}

    def on_chunk(row):
        if row.get("event") is not None:
            return
        now = (time.perf_counter(), time.process_time())
        if clock["chunks"] == 0:
            _say({"ready": True, "setup_s": now[0] - t0, "env": _env(), **info})
        else:
            _say({"wall": now[0] - clock["t"][0], "cpu": now[1] - clock["t"][1],
                  "steps": case.block})
        clock["chunks"] += 1
        if clock["chunks"] > blocks or _wait() != "run":
            raise SystemExit(0)
        clock["t"] = (time.perf_counter(), time.process_time())

    t = setup.training
    setup.training = dataclasses.replace(  # one batch: the steps timed on the same points
        t, points=dataclasses.replace(t.points, resample_every=None))
    setup.train(evaluate=None, on_chunk=on_chunk, handle_signals=False)


def _hand_row(case: Case):
    """engine.py's row (a) or (b), resized, with boundary/initial terms added to (b)."""
    import engine as EG
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    if case.problem == "burgers":
        row = EG.row_a(jax.random.fold_in(key, ord("a")))
        if case.interior != row.batch["interior"].shape[0]:
            row.batch = {**row.batch, "interior": EG._pts(key, case.interior, (-1, 0), (1, 1))}
        return row
    row = EG.row_b(jax.random.fold_in(key, ord("b")))
    k1, k2, k3, k4 = jax.random.split(key, 4)
    side = jax.random.randint(k2, (case.boundary,), 0, 4)
    s = jax.random.uniform(k3, (case.boundary,))
    xb = jnp.where(side == 0, 0.0, jnp.where(side == 1, 1.0, s))
    yb = jnp.where(side == 2, 0.0, jnp.where(side == 3, 1.0, s))
    walls = jnp.stack([xb, yb, jax.random.uniform(k4, (case.boundary,))], 1)
    x0 = EG._pts(k1, case.initial, (0, 0), (1, 1))
    start = jnp.concatenate([x0, jnp.zeros((case.initial, 1))], 1).astype(jnp.float32)
    g0 = (jnp.sin(math.pi * x0[:, 0]) * jnp.sin(math.pi * x0[:, 1])).astype(jnp.float32)
    batch = {"interior": EG._pts(key, case.interior, (0, 0, 0), (1, 1, 1)),
             "walls": walls.astype(jnp.float32), "start": start, "g": g0}

    def with_bc(fn):
        def residuals(net, b):
            out = dict(fn(net, b))
            out["walls"] = EG.mlp(net, b["walls"])[:, 0]
            out["start"] = EG.mlp(net, b["start"])[:, 0] - b["g"]
            return out

        return residuals

    return replace(row, batch=batch, hand_jvp=with_bc(row.hand_jvp),
                   hand_best=with_bc(row.hand_best))


def worker_jax(case: Case, which: str, blocks: int, flops: bool) -> None:
    import engine as EG
    import jax

    t0 = time.perf_counter()
    row = _hand_row(case)
    sizes = [row.sizes[0]] + [case.width] * case.depth + [1]
    net = EG.init_mlp(jax.random.PRNGKey(1), sizes)
    residuals = row.hand_best if which == "jax-best" else row.hand_jvp
    opt, run, one = EG.make_runner(residuals, case.block)
    state = opt.init(net)
    EG.time_runner(run, net, state, row.batch)  # compile and warm up
    info = {"flops": EG.step_flops(one, net, state, row.batch) if flops else float("nan")}
    _say({"ready": True, "setup_s": time.perf_counter() - t0, "env": _env(), **info})
    for _ in range(blocks):
        if _wait() != "run":
            return
        c0 = time.process_time()
        wall = EG.time_runner(run, net, state, row.batch)
        _say({"wall": wall, "cpu": time.process_time() - c0, "steps": case.block})


def worker_deepxde(case: Case, blocks: int) -> None:
    import peers

    t0 = time.perf_counter()
    model = peers.build(case.problem, width=case.width, depth=case.depth,
                        interior=case.interior, boundary=case.boundary, initial=case.initial)
    model.compile("adam", lr=1e-3)
    peers.timed_steps(model, case.block)  # warm up (and compile, for the JAX backend)
    _say({"ready": True, "setup_s": time.perf_counter() - t0, "flops": float("nan"),
          "backend": peers.backend_name(), "env": _env()})
    for _ in range(blocks):
        if _wait() != "run":
            return
        wall, cpu = peers.timed_steps(model, case.block)
        _say({"wall": wall, "cpu": cpu, "steps": case.block})


def worker_main(args) -> None:
    if args.cpus:  # before jax or torch size their thread pools
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    case = replace(CASES[args.case], **json.loads(args.case_json or "{}"))
    if args.worker == "pinn":
        worker_pinn(case, args.blocks, not args.no_flops)
    elif args.worker in ("jax-best", "jax-jvp"):
        worker_jax(case, args.worker, args.blocks, not args.no_flops)
    else:
        worker_deepxde(case, args.blocks)


# ---------------------------------------------------------------------------
# the orchestrator


class Worker:
    """A side in its own process, driven block by block."""

    def __init__(self, side: str, case: Case, blocks: int, env: dict, log_dir: Path,
                 flops: bool, timeout: float, cpus: str | None = None):
        self.side, self.timeout = side, timeout
        overrides = {k: getattr(case, k) for k in ("interior", "boundary", "initial", "block")}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", side, "--case",
               case.key, "--case-json", json.dumps(overrides), "--blocks", str(blocks)]
        if not flops:
            cmd.append("--no-flops")
        full_env = {k: v for k, v in os.environ.items() if k not in C.TUNED_MALLOC}
        full_env.update(env)
        if cpus:
            cmd += ["--cpus", cpus]
            full_env["OMP_NUM_THREADS"] = str(len(cpus.split(",")))
        full_env["PYTHONUNBUFFERED"] = "1"
        if side.startswith("deepxde-"):
            full_env["DDE_BACKEND"] = side.split("-", 1)[1]
        self.log = log_dir / f"{case.key}-{side}-{'tuned' if env else 'default'}.log"
        self._err = open(self.log, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, cwd=C.HERE,
                                     env=full_env)
        self.error: str | None = None

    def read(self) -> dict:
        t_end = time.monotonic() + self.timeout
        while time.monotonic() < t_end:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("@@ "):
                return json.loads(line[3:])
        self.proc.kill()
        self._err.flush()
        tail = self.log.read_text().strip().splitlines()[-6:]
        raise RuntimeError(f"{self.side} stopped without a result (log {self.log}): "
                           + " | ".join(tail))

    def send(self, cmd: str) -> None:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.send("quit")
                self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self._err.close()


def measure(case: Case, sides: list[str], env: dict, rounds: int, log_dir: Path,
            flops: bool, timeout: float, cpus: str | None = None) -> dict:
    """Start every side, then interleave ``rounds`` timed blocks across them."""
    out: dict[str, dict] = {}
    live: list[Worker] = []
    # all sides compile at once (nothing is timed yet), then wait for each to be ready
    started = [Worker(side, case, rounds, env, log_dir, flops, timeout, cpus)
               for side in sides]
    for w in started:
        try:
            ready = w.read()
        except RuntimeError as exc:
            w.close()
            out[w.side] = {"error": str(exc)}
            print(f"  {w.side}: failed to start: {exc}", file=sys.stderr)
            continue
        out[w.side] = {**ready, "walls": [], "cpus": []}
        live.append(w)
    try:
        for r in range(rounds):
            order = live[r % len(live):] + live[:r % len(live)] if live else []
            for w in order:
                if "error" in out[w.side] and not out[w.side].get("walls"):
                    continue
                try:
                    w.send("run")
                    res = w.read()
                except (RuntimeError, OSError) as exc:
                    out[w.side]["error"] = str(exc)
                    continue
                out[w.side]["walls"].append(res["wall"] / res["steps"])
                out[w.side]["cpus"].append(res["cpu"] / res["steps"])
    finally:
        for w in live:
            w.close()
    for d in out.values():
        if d.get("walls"):
            d["ms_min"] = 1e3 * min(d["walls"])
            d["ms_median"] = 1e3 * statistics.median(d["walls"])
            i = d["walls"].index(min(d["walls"]))
            d["cpu_share"] = d["cpus"][i] / d["walls"][i]
    return out


def run_all(cases: list[Case], sides: list[str], allocators: list[str], rounds: int,
            flops: bool, log_dir: Path, timeout: float, cpus: str | None = None) -> dict:
    machine = C.machine()  # before the run: its load is other processes', not ours
    results = []
    for case in cases:
        for alloc in allocators:
            print(f"case {case.key} ({case.label}), allocator {alloc}: "
                  f"{', '.join(sides)}", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            sides_out = measure(case, sides, ALLOCATORS[alloc], rounds, log_dir, flops,
                                timeout, cpus)
            results.append({"case": asdict(case), "label": case.label, "allocator": alloc,
                            "sides": sides_out, "seconds": time.perf_counter() - t0})
            print(summary_lines(results[-1]), file=sys.stderr, flush=True)
    return {"machine": machine, "rounds": rounds, "sides": sides, "cpus": cpus,
            "allocators": allocators, "results": results}


def summary_lines(res: dict) -> str:
    lines = []
    for side, d in res["sides"].items():
        if "ms_min" in d:
            lines.append(f"  {side:<16} {d['ms_min']:9.2f} ms/step (median "
                         f"{d['ms_median']:.2f}, CPU use {d['cpu_share']:.2f} cores)")
        else:
            lines.append(f"  {side:<16} failed: {d.get('error', '?')[:200]}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# the report


def report(data: dict, command: str) -> str:
    m = data["machine"]
    peak = m.get("fp32_peak_gflops")
    lines = ["# pinn: training speed per step", "",
             C.generated_note("speed.py", command), "",
             f"Machine: {C.machine_line(m)}.", ""]
    load = m.get("load_average")
    if load and m.get("cores") and load[0] > 0.5 * m["cores"]:
        lines += [f"**The machine was loaded** (load average {load[0]:.1f} on {m['cores']} "
                  "cores when the run started): absolute times are inflated and noisy; "
                  "compare the ratios, measured in the same run with interleaved blocks.", ""]
    if data.get("cpus"):
        lines += [f"Every side was pinned to CPU(s) {data['cpus']} with OMP_NUM_THREADS = "
                  f"{len(str(data['cpus']).split(','))} (`--cpus`); `%peak` is still against "
                  "the whole machine.", ""]
    lines += [f"Adam (lr 1e-3), float32; {data['rounds']} interleaved timed blocks per side; "
              "`min` and `median` over the blocks. `x pinn` is the side's minimum time over "
              "pinn's (above 1: pinn is faster). `CPU use`: process CPU time over wall time "
              "in the fastest block (cores actually obtained). `GFLOP/s`: XLA cost analysis "
              "of one step over the minimum step time"
              + (f"; `%peak` against an FP32 peak of ~{peak:.0f} GFLOP/s "
                 "(FMA lanes x 2 pipes x clock x cores)." if peak else "."), ""]
    header = ("case", "allocator", "side", "ms/step min", "ms/step median", "x pinn",
              "GFLOP/s", "%peak", "CPU use")
    rows = []
    for res in data["results"]:
        sides = res["sides"]
        base = sides.get("pinn", {}).get("ms_min")
        for side, d in sides.items():
            if "ms_min" not in d:
                rows.append((res["case"]["key"], res["allocator"], side, "failed", "", "", "",
                             "", ""))
                continue
            gfs = d.get("flops")
            gfs = gfs / (d["ms_min"] * 1e6) if gfs and math.isfinite(gfs) else None
            rows.append((
                res["case"]["key"], res["allocator"], side, f"{d['ms_min']:.2f}",
                f"{d['ms_median']:.2f}",
                f"{d['ms_min'] / base:.2f}" if base else "–",
                C.fmt(gfs, ".1f"), C.fmt(100 * gfs / peak if gfs and peak else None, ".1f"),
                f"{d['cpu_share']:.2f}"))
    lines += [C.table(header, rows), ""]
    lines += ["Cases:", ""]
    seen = set()
    for res in data["results"]:
        if res["case"]["key"] not in seen:
            seen.add(res["case"]["key"])
            lines.append(f"- `{res['case']['key']}`: {res['label']}")
    peers_line = []
    for res in data["results"]:
        sides = res["sides"]
        base = sides.get("pinn", {}).get("ms_min")
        peer = [(d["ms_min"], s) for s, d in sides.items()
                if s.startswith("deepxde") and "ms_min" in d]
        if base and peer:
            best, name = min(peer)
            peers_line.append(f"- `{res['case']['key']}` ({res['allocator']} allocator): "
                              f"pinn {base:.2f} ms/step, fastest peer {name} {best:.2f} "
                              f"ms/step: pinn is {best / base:.2f}x faster (goal: >= 2x)")
    if peers_line:
        lines += ["", "Against the fastest peer:", ""] + peers_line
    failed = [(res["case"]["key"], res["allocator"], s, d.get("error", ""))
              for res in data["results"] for s, d in res["sides"].items() if "ms_min" not in d]
    if failed:
        lines += ["", "Sides that did not run:", ""]
        lines += [f"- `{k}` {a} {s}: {e[:300]}" for k, a, s, e in failed]
    lines += ["", "Notes: the pinn side is the real training loop (`pinn.train.run` on the "
              "terms `pinn.solve` assembles; per-chunk host work included), with resampling "
              "off as on the other sides. DeepXDE computes the PDE residual on its boundary "
              "and initial points as well (it stacks them with the domain points); its time "
              "excludes the test-loss evaluations at the start and end of `Model.train`. "
              "The hand-written JAX steps are those of `benchmarks/engine.py`.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="a,b", help=f"comma list of {', '.join(CASES)}")
    ap.add_argument("--sides", default=None,
                    help="comma list (default: pinn, jax-best, jax-jvp, and the DeepXDE "
                         "backends when deepxde is installed)")
    ap.add_argument("--allocators", default="default,tuned")
    ap.add_argument("--rounds", type=int, default=5, help="timed blocks per side")
    ap.add_argument("--block", type=int, default=None, help="steps per timed block")
    ap.add_argument("--no-flops", action="store_true", help="skip the XLA cost analysis")
    ap.add_argument("--cpus", default=None,
                    help="pin every side to these CPUs (e.g. 0) and set OMP_NUM_THREADS to "
                         "their number: fairer on a loaded machine, where PyTorch's OpenMP "
                         "threads spin while waiting for descheduled siblings")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, one round, pinn and jax-jvp, tuned allocator; writes nothing "
                         "unless --out is given")
    ap.add_argument("--out", default=None, help="markdown file (default benchmarks/SPEED.md)")
    ap.add_argument("--json", default=None,
                    help="raw results (default benchmarks/results/speed.json)")
    ap.add_argument("--from-json", default=None,
                    help="only regenerate the markdown (a comma list merges several runs)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds to wait for one worker answer")
    # worker mode (internal)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--case-json", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--blocks", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main(args)
        return 0

    command = C.command_line("speed.py", argv)
    out = Path(args.out) if args.out else (None if args.smoke else C.HERE / "SPEED.md")
    jpath = Path(args.json) if args.json else (
        None if args.smoke else C.HERE / "results" / "speed.json")
    if args.from_json:  # one file, or several runs (comma list) shown one after another
        runs = [C.read_json(p) for p in args.from_json.split(",")]
        data = {**runs[0], "results": [r for d in runs for r in d["results"]]}
        cmds = "; ".join(d.get("command", "?") for d in runs)
        if len(runs) > 1:
            cmds += f" (separate runs; ratios only within a case), merged by `{command}`"
            data["rounds"] = " / ".join(str(d["rounds"]) for d in runs)
            data["machine"]["load_average"] = max(
                (d["machine"].get("load_average") or [0, 0, 0] for d in runs),
                key=lambda v: v[0])
        C.write_text(out or C.HERE / "SPEED.md", report(data, cmds))
        return 0

    cases = [CASES[k.strip()] for k in args.cases.split(",") if k.strip()]
    if args.smoke:
        cases = [replace(CASES["a"], interior=128, boundary=16, initial=16, block=5)]
        sides = args.sides.split(",") if args.sides else ["pinn", "jax-jvp"]
        allocators = ["tuned"]  # checks that the settings reach the workers
        rounds = 1
    else:
        if args.sides:
            sides = [s.strip() for s in args.sides.split(",") if s.strip()]
        else:
            sides = list(JAX_SIDES)
            import peers

            if peers.available():
                sides += list(PEER_SIDES)
            else:
                print("deepxde/torch not installed: no peer sides (pip install -e "
                      "'.[peers]')", file=sys.stderr)
        allocators = [a.strip() for a in args.allocators.split(",") if a.strip()]
        rounds = args.rounds
    unknown = [s for s in sides if s not in JAX_SIDES + PEER_SIDES]
    if unknown:
        ap.error(f"unknown side(s) {unknown}; choose from {', '.join(JAX_SIDES + PEER_SIDES)}")
    if args.block:
        cases = [replace(c, block=args.block) for c in cases]
    log_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "pinn-speed-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    data = run_all(cases, sides, allocators, rounds, not args.no_flops, log_dir, args.timeout,
                   args.cpus)
    data["command"] = command
    text = report(data, command)
    if jpath is not None:
        C.write_json(jpath, data)
    if out is not None:
        C.write_text(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text)
    ok = all("ms_min" in d for res in data["results"] for d in res["sides"].values())
    return 0 if ok or not args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
