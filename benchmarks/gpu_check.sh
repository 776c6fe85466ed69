#!/usr/bin/env bash
# A short GPU check (< 10 minutes on one H200): devices, the derivative-engine rows
# (a) Burgers and (b) heat 2D of benchmarks/engine.py, pinn against hand-written JAX
# per step (benchmarks/speed.py, JAX sides only), and a short heat 2D solve.
#
# It needs JAX with its CUDA plugin, matching the installed jaxlib, e.g. on a machine
# with network access:
#     pip install -e . "jax[cuda12]==$(python -c 'import jax; print(jax.__version__)')"
# (or let this script do it: bash benchmarks/gpu_check.sh --install).  Nothing else is
# installed; DeepXDE is not needed.  Run from anywhere:
#     bash benchmarks/gpu_check.sh 2>&1 | tee gpu_check.log
# Every step has its own timeout, so one hang cannot eat the whole budget.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--install" ]]; then
    jv=$(python -c 'import jax; print(jax.__version__)' 2>/dev/null || echo "")
    python -m pip install -q -e . "jax[cuda12]${jv:+==$jv}" || exit 1
fi

echo "== devices"
timeout 60 python - <<'EOF' || exit 1
import jax
devs = jax.devices()
print("jax", jax.__version__, "backend", jax.default_backend(), devs)
if jax.default_backend() != "gpu":
    raise SystemExit("no GPU backend: install the CUDA plugin (see the top of this script)")
for d in devs:
    stats = getattr(d, "memory_stats", lambda: None)() or {}
    print(d, "memory limit %.1f GiB" % (stats.get("bytes_limit", 0) / 2**30))
EOF
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv 2>/dev/null || true

echo "== engine.py rows a, b (DSL vs hand-written JAX, 200 Adam steps per call)"
timeout 150 python benchmarks/engine.py --rows a,b --steps 200 --repeats 3

echo "== speed.py: pinn training loop vs hand-written JAX (200-step blocks)"
timeout 150 python benchmarks/speed.py --cases a,b,b10k --sides pinn,jax-best,jax-jvp \
    --allocators default --rounds 3 --block 200 --out "${TMPDIR:-/tmp}/SPEED-gpu.md" \
    --json "${TMPDIR:-/tmp}/speed-gpu.json" && cat "${TMPDIR:-/tmp}/SPEED-gpu.md"

echo "== heat 2D: short solve (problems/heat2d.yaml, 3000 Adam + 300 L-BFGS steps)"
timeout 120 python - <<'EOF'
import time
import jax
import pinn
import pinn.config

built = pinn.config.load("problems/heat2d.yaml", ["training.eval_every=500"])
t0 = time.perf_counter()
sol = pinn.solve(built.problem, built.model(), built.training(), progress=False)
m = sol.metrics
print(f"device {jax.devices()[0]}: heat2d rel L2 {m['rel_l2']['u']:.3e} after {m['steps']} steps;"
      f" wall {time.perf_counter() - t0:.1f} s (compile {m['compile_seconds']:.1f} s, "
      f"train {m['train_seconds']:.1f} s)")
for r in sol.history:
    if "eval.rel_l2_u" in r:
        print(f"  step {r['step']:6d}  t {r['time']:7.1f} s  rel L2 {r['eval.rel_l2_u']:.3e}"
              f"  {r.get('steps_per_s', float('nan')):8.0f} steps/s")
EOF
echo "== scaling (issue 16): 1e5-1e7 points, Adam and L-BFGS steps/s, memory per point"
# benchmarks/scaling.py --gpu: the visible GPUs as a mesh (points sharded), micro-batches
# where a batch does not fit (from the measured memory per point); ~3 minutes on one H200
timeout 300 python benchmarks/scaling.py --gpu --points 100000,1000000,10000000 \
    --adam 50 --lbfgs 5 --out "${TMPDIR:-/tmp}/SCALING-gpu.md" \
    && cat "${TMPDIR:-/tmp}/SCALING-gpu.md"
timeout 120 python -m pinn.cli info problems/heat2d.yaml \
    --set training.points.interior=1000000 | tail -n 1

echo "== done"
