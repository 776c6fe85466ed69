"""Data parallel training over forced host devices, and micro-batched gradients.

The device tests run in a subprocess with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``
(the flag only acts before jax is imported), which trains the same run on no mesh and on
meshes of 1, 2 and 4 devices and writes the parameters at chosen steps. This file is its own
worker: ``python tests/test_sharding.py CASE PRECISION OUT.npz``.

What the numbers say: after 200 Adam steps the device counts agree to a few float32 (or
float64) roundings. L-BFGS amplifies rounding: after 50 of its steps a run on 2 devices is as
far from the one-device run as a run on one device with its points in the reverse order
(the same sums, rounded in another order, which is all that sharding changes); so the L-BFGS
check is strict for its first steps (float64) and, over 50 steps, bounds the device-count
difference by that rounding sensitivity.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["training.points.interior=256", "training.points.boundary=64", "model.mlp.width=16",
         "model.mlp.depth=2"]
CASES = {
    "poisson": ("problems/poisson2d.yaml", []),
    "cavity": ("problems/ns_cavity.yaml", []),
    "inverse": ("problems/inverse_burgers.yaml", [
        "training.points.rad.pool=1024", "training.points.resample_every=50",
        "conditions.observed.data.generate.n=256"]),
}
ADAM, LBFGS_STEPS = 200, 50
CHECK = (ADAM, ADAM + 10, ADAM + LBFGS_STEPS)  # steps at which the parameters are compared
RUNS = ("none", "1", "2", "4", "reversed")
TOL = {32: 1e-6, 64: 1e-12}


def _worker(case: str, precision: int, out: str) -> None:  # pragma: no cover - a subprocess
    from dataclasses import replace

    import jax

    import pinn
    from pinn import config
    from pinn.train import LBFGS, Adam, Observer, Stage
    from pinn.train.spec import precision_scope

    assert len(jax.devices()) == 4, jax.devices()

    class Grab(Observer):
        def __init__(self):
            self.at = {}

        def on_chunk(self, event):
            if event.kind in ("boundary", "stage_start") and event.step in CHECK:
                leaves = jax.tree.leaves(event.state["params"])
                self.at[event.step] = np.concatenate(
                    [np.ravel(np.asarray(x, np.float64)) for x in leaves])

    file, extra = CASES[case]
    built = config.load(str(ROOT / file), [*SMALL, *extra, f"training.precision={precision}"])
    results = {}
    for name in RUNS:
        devices = int(name) if name.isdigit() else None
        training = replace(built.training(), devices=devices, chunk=10,
                           stages=[Stage(Adam(1e-3), ADAM), Stage(LBFGS(), LBFGS_STEPS)])
        run = pinn.setup(built.problem, built.model(), training, precision=precision,
                         progress=False)
        grab = Grab()
        args = {**run.loop_arguments(), "evaluate": None, "handle_signals": False,
                "observers": [grab]}
        if name == "reversed":  # the points in the reverse order: the sums rounded otherwise
            sample = args["sample_fn"]
            args["sample_fn"] = lambda k, p, sample=sample: jax.tree.map(
                lambda x: x[::-1], sample(k, p))
        with precision_scope(precision):
            pinn.train.run(run.assembly.terms_fn, run.params, run.training, **args)
        for step, value in grab.at.items():
            results[f"{name}/{step}"] = value
    np.savez(out, **results)


def _devices_run(case: str, precision: int, tmp_path: Path) -> dict:
    out = tmp_path / f"{case}{precision}.npz"
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, __file__, case, str(precision), str(out)], env=env,
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as f:
        return dict(f)


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _print(res: dict) -> None:  # shown by pytest -s, and on failure
    ref = {s: res[f"none/{s}"] for s in CHECK}
    for name in RUNS[1:]:
        print(name, " ".join(f"{s}:{_rel(res[f'{name}/{s}'], ref[s]):.1e}" for s in CHECK))


def _check(res: dict, precision: int) -> None:
    _print(res)
    tol = TOL[precision]
    ref = {s: res[f"none/{s}"] for s in CHECK}
    # one device on a mesh runs the single-device first-order program, bit for bit; its
    # L-BFGS program may fuse otherwise (the cavity in float32: 4.8e-7 after 10 steps, as
    # far as 2 devices), so from there on it is held to the bounds of the other counts
    np.testing.assert_array_equal(res[f"1/{ADAM}"], ref[ADAM])
    for d in ("1", "2", "4"):
        assert _rel(res[f"{d}/{ADAM}"], ref[ADAM]) < tol, (d, "Adam")
        if precision == 64:  # the first L-BFGS steps, before rounding has grown
            assert _rel(res[f"{d}/{ADAM + 10}"], ref[ADAM + 10]) < 100 * tol, (d, "L-BFGS 10")
        # after 50 L-BFGS steps the rounding of a reordered sum has grown by orders of
        # magnitude, and one reordering (the points reversed) is one draw of that growth:
        # measured (2026-12-04) 4 devices 29x the reversed run's deviation (inverse, float64:
        # 7.7e-11 against 2.6e-12) and 2 devices 10.2x (poisson, float32: 2.3e-2 against
        # 2.3e-3), on main before and after that day's changes. A sharding fault shows at the
        # first-order steps above, at 1e-6 / 1e-12.
        end = ADAM + LBFGS_STEPS
        sensitivity = _rel(res[f"reversed/{end}"], ref[end])
        assert _rel(res[f"{d}/{end}"], ref[end]) < max(100 * sensitivity, tol), (d, "L-BFGS")


@pytest.mark.slow  # 60 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_devices_agree_scalar_float32(tmp_path):
    _check(_devices_run("poisson", 32, tmp_path), 32)


@pytest.mark.slow
@pytest.mark.parametrize("case,precision", [("poisson", 64), ("cavity", 32), ("cavity", 64),
                                            ("inverse", 32), ("inverse", 64)])
def test_devices_agree(case, precision, tmp_path):
    _check(_devices_run(case, precision, tmp_path), precision)


# ---------------------------------------------------------------------------
# micro-batches (one device, in process)


def _poisson_run(**training):
    from dataclasses import replace

    import pinn
    from pinn import config
    from pinn.train import Adam, Stage

    built = config.load(str(ROOT / "problems/poisson2d.yaml"),
                        ["training.points.interior=512", "training.points.boundary=128",
                         "model.mlp.width=16", "model.mlp.depth=2"])
    t = replace(built.training(), stages=[Stage(Adam(1e-3), 20)], chunk=10, **training)
    return pinn.setup(built.problem, built.model(), t, progress=False)


def test_micro_batched_gradient_equals_full_batch():
    import jax

    from pinn.train.core import _make_weighted
    from pinn.train.microbatch import accumulated, count

    run = _poisson_run()
    asm, params = run.assembly, run.params
    batch = asm.sample_fn(jax.random.PRNGKey(3), params)
    assert count(100, jax.eval_shape(lambda: batch)) == 8  # 512 / 8 = 64 <= 100; 128 / 8
    names = tuple(asm.names)
    weighted = _make_weighted(asm.terms_fn, names, False)
    w = {n: jax.numpy.asarray(2.0 if i else 1.0) for i, n in enumerate(names)}
    (full, full_terms), g_full = jax.jit(jax.value_and_grad(weighted, has_aux=True))(
        params, batch, w)
    for m in (2, 8):
        micro = accumulated(weighted, m)
        (loss, (terms, _)), g = jax.jit(jax.value_and_grad(micro, has_aux=True))(
            params, batch, w)
        np.testing.assert_allclose(loss, full, rtol=1e-6)
        for n in names:
            np.testing.assert_allclose(terms[n], full_terms[0][n] if isinstance(
                full_terms, tuple) else full_terms[n], rtol=1e-6)
        flat = np.concatenate([np.ravel(x) for x in jax.tree.leaves(g)])
        ref = np.concatenate([np.ravel(x) for x in jax.tree.leaves(g_full)])
        assert np.linalg.norm(flat - ref) / np.linalg.norm(ref) < 1e-6
        np.testing.assert_allclose(flat, ref, rtol=1e-5, atol=1e-6 * np.abs(ref).max())


def test_micro_batched_training_matches_and_validates():
    import jax

    a = _poisson_run().train()
    b = _poisson_run(micro_batch=64).train()
    pa = np.concatenate([np.ravel(x) for x in jax.tree.leaves(a.params)])
    pb = np.concatenate([np.ravel(x) for x in jax.tree.leaves(b.params)])
    assert np.linalg.norm(pa - pb) / np.linalg.norm(pa) < 1e-5
    assert b.metrics["micro_batch"] == 64
    with pytest.raises(ValueError, match="micro_batch"):
        _poisson_run(micro_batch=0)
    from pinn.train.microbatch import count

    shapes = {"a": jax.ShapeDtypeStruct((512, 2), "float32"),
              "b": jax.ShapeDtypeStruct((96, 2), "float32")}
    assert count(100, shapes) == 8 and count(600, shapes) == 1
    assert count(64, shapes, devices=2) == 4  # 512 / (2 * 4) = 64 per device; 96 = 2 * 4 * 12
    with pytest.raises(ValueError, match="common factor"):
        count(10, shapes)  # 52 or more equal parts: 96 has no such divisor
    with pytest.raises(ValueError, match="devices"):
        _poisson_run(devices=0)
    with pytest.raises(ValueError, match="xla_force_host_platform_device_count"):
        _poisson_run(devices=64).train()


if __name__ == "__main__":  # the device worker (see the module docstring)
    _worker(sys.argv[1], int(sys.argv[2]), sys.argv[3])
