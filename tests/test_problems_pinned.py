"""Every problem file pins a number: its error after training, as a user would train it.

Two tests per file in ``problems/``, both through the Python API
(``pinn.config.load`` -> ``pinn.setup(...).train()`` -> ``sol.metrics["rel_l2"]``):

* slow, full size: the file's own settings; the relative L2 error on the default
  evaluation grid is below two to three times the error measured in ``benchmarks/RESULTS.md``
  (the measured value and its run are quoted next to each bound). Those runs scored on
  ``evaluation_points(problem, 60000)``, a slightly different set of points: the factor
  covers that and the run-to-run spread (3 for the float64 quasi-Newton runs, whose path
  another CPU's rounding can move), and nothing else.
* default suite, tiny size (a few seconds each): the error after a short, seeded run is
  below a loose bound *and* a fixed fraction of the untrained network's error (same
  network, same seed, scored on the same grid), so a pipeline that stops learning fails.
  The tiny runs change the network, the stages and the points, and for the problems that
  do not learn in a few hundred steps at full scale a little more (said per problem).

``tests/test_cli_solve.py`` runs every file through ``pinn solve`` (the run folder, the
saved solution); this file checks the numbers.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import pytest

import pinn
import pinn.config
from pinn.solution import Solution

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEM_DIR = os.path.join(ROOT, "problems")
FILES = sorted(f[:-5] for f in os.listdir(PROBLEM_DIR) if f.endswith(".yaml"))
NU_BURGERS = 0.01 / math.pi  # inverse_burgers learns nu; its data come from this one


def path_of(name: str) -> str:
    return os.path.join(PROBLEM_DIR, f"{name}.yaml")


# ---------------------------------------------------------------------------
# full size: the file's own settings (slow)


@dataclass(frozen=True)
class Pin:
    rel_l2: dict[str, float]                 # field -> bound on the relative L2 error
    params: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (true, rel)


FULL = {
    # RESULTS.md: 1.23e-4 (advection, c = 80, 590 s, 32 time windows of 1000 Adam + 500
    # SSBroyden, float64, 2 cores, Intel Xeon, load ~2); a factor 3 as for heat2d
    "advection": Pin({"u": 3.7e-4}),
    # RESULTS.md: 3.58e-5 (allen_cahn1d, 399 s, 2000 Adam + 7000 SSBroyden, float64, 2
    # cores, Intel Xeon, load ~2); a factor 3 as for heat2d
    "allen_cahn1d": Pin({"u": 1.1e-4}),
    # RESULTS.md: 3.53e-6 (burgers1d, 131 s, 200 Adam in float32 + 7800 SSBroyden mixed
    # (precision auto), 2 cores, Intel Xeon, load ~2); a factor 3 as for heat2d
    "burgers1d": Pin({"u": 1.06e-5}),
    # burgers1d_parametric: 3.37e-5 at nu = 0.0175 (the centre of [0.01/pi, 0.1/pi], what
    # metrics["rel_l2"] scores; 3000 Adam + 5000 SSBroyden, float64, 1258 s on 2 cores
    # shared at load ~5), worst 1.25e-3 at nu = 0.01/pi (the shock) over 9 values; factor 3
    "burgers1d_parametric": Pin({"u": 1.0e-4}),
    # RESULTS.md: 5.93e-4 (kdv, 255 s, 2000 Adam + 4000 SSBroyden, float64, 2 cores, load
    # ~2); a factor 3 as for heat2d
    "kdv": Pin({"u": 1.8e-3}),
    # RESULTS.md: 2.21e-8 (heat2d, 16 s, 2000 SSBroyden, float64, 2 cores, Intel Xeon,
    # load ~2); a factor 3 for another CPU's rounding along the quasi-Newton path
    "heat2d": Pin({"u": 6.6e-8}),
    # heat2d_parametric: 5.33e-7 at alpha = 0.055 (the centre of [0.01, 0.1], what
    # metrics["rel_l2"] scores; 81 s, 1000 Adam + 2000 SSBroyden, float64, 2 cores, Intel
    # Xeon), worst 3.05e-6 (alpha = 0.01) over 9 alphas (tests/test_parametric.py pins
    # <= 1e-3 at every one); a factor 3 as for heat2d
    "heat2d_parametric": Pin({"u": 1.6e-6}),
    # RESULTS.md: 4.41e-6 (helmholtz2d, 115 s, 2000 Adam + 3000 SSBroyden, float64, 2
    # cores, Intel Xeon, load ~2); a factor 3 as for heat2d
    "helmholtz2d": Pin({"u": 1.3e-5}),
    # RESULTS.md: u 3.12e-6, nu off by 0.0006% (inverse_burgers, 160 s, 3000 Adam + 5000
    # SSBroyden, float64, 2 cores, Intel Xeon, load ~2); a factor 3 on u, and nu within
    # 0.05% (issue 14's target)
    "inverse_burgers": Pin({"u": 9.4e-6}, {"nu": (NU_BURGERS, 5e-4)}),
    # RESULTS.md: u 7.84e-2, v 9.00e-2, p 6.76e-1 (ns_cavity, 884 s, one core; the
    # reference is the file's FEM on 48 P2 cells). p is compared after removing the mean
    # (it is defined up to a constant), so any constant scores exactly 1: twice 6.76e-1
    # would be no check at all, and p is pinned at "better than a constant" instead.
    "ns_cavity": Pin({"u": 1.6e-1, "v": 1.8e-1, "p": 1.0}),
    # RESULTS.md: 2.44e-9 (poisson2d, 1000 Adam + 2000 SSBroyden, float64, 2 cores, Intel
    # Xeon, load ~2); a factor 3 as for heat2d
    "poisson2d": Pin({"u": 7.3e-9}),
    # poisson2d_parametric: 8.83e-6 at a = 0 (the centre of [-1, 1]; 1000 Adam + 2000
    # SSBroyden, float64, 247 s on 2 cores shared at load ~5), worst 3.30e-5 at a = 1 over
    # 9 values; a factor 3
    "poisson2d_parametric": Pin({"u": 2.7e-5}),
    # RESULTS.md: 1.64e-2 (poisson_lshape, 333 s, 5000 Adam + 1000 L-BFGS, one core)
    "poisson_lshape": Pin({"u": 3.3e-2}),
    # RESULTS.md: 5.30e-5 (wave1d, 154 s, 1000 Adam + 4000 SSBroyden, float64, 2 cores,
    # Intel Xeon, load ~2); a factor 3 as for heat2d. The plain PINN of PINNacle reports
    # 5.88e-1 on the same problem
    "wave1d": Pin({"u": 1.6e-4}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FULL))
def test_problem_file_reaches_its_measured_error(name):
    built = pinn.config.load(path_of(name), [])
    sol = pinn.setup(built.problem, built.model(), built.training(), precision=built.precision,
                     progress=False).train()
    err = sol.metrics["rel_l2"]
    pin = FULL[name]
    assert set(err) == set(pin.rel_l2), err
    for f, bound in pin.rel_l2.items():
        assert err[f] < bound, f"{name}: rel. L2 of {f} = {err[f]:.3e} (bound {bound:.1e})"
    learned = sol.learned_params()
    assert set(learned) == set(pin.params)
    for p, (true, tol) in pin.params.items():
        off = abs(learned[p] - true) / abs(true)
        assert off < tol, f"{name}: {p} = {learned[p]:.6g}, {off:.2%} off {true:.6g}"


# ---------------------------------------------------------------------------
# tiny size: the pipeline learns (default suite)


def adam(lr: float, steps: int) -> list[str]:
    """Overrides for one Adam stage of ``steps`` steps, trained in one chunk, no resampling."""
    return [f"training.stages=[{{adam: {{lr: {lr}}}, steps: {steps}}}]",
            f"training.chunk={steps}", "training.points.resample_every=0"]


def points(interior: int, boundary: int = 64, initial: int = 64) -> list[str]:
    return [f"training.points.interior={interior}", f"training.points.boundary={boundary}",
            f"training.points.initial={initial}"]


def net(kind: str, width: int, depth: int) -> list[str]:
    return [f"model.{kind}.width={width}", f"model.{kind}.depth={depth}"]


@dataclass(frozen=True)
class Tiny:
    overrides: list[str]
    bound: dict[str, float]  # field -> bound on the error after training
    ratio: float             # ... and error after < ratio * error of the untrained network
    resolution: int = 21     # the evaluation grid (nodes per axis)


# The measured errors (untrained -> trained) are from this seed on 2 CPU cores.
TINY = {
    # At c = 80 a short run learns nothing (the file's full run, 32 time windows: RESULTS.md);
    # at c = 4 (the exact solution follows c) the same embedding and hard start in two of
    # the file's time windows learn in 500 Adam steps each. Measured 1.507 -> 1.57e-2.
    "advection": Tiny([*adam(3e-3, 500), *points(512), *net("mlp", 20, 2),
                       "training.precision=32", "params.c=4", "training.windows=2"],
                      {"u": 3e-2}, 0.1),
    # Over t in [0, 1] the interfaces need thousands of steps (the untrained network, which
    # carries the initial profile, is as good as a short run); over [0, 0.25] the spectral
    # reference is recomputed for the shorter window. Measured 0.167 -> 1.86e-3 (before the
    # file's initial value carried its smoothed seam kink: 0.259 -> 7.0e-3).
    # (the tiny run keeps the file's earlier set-up, a modified MLP with causal weights:
    # the file's 3 x 30 MLP needs its quasi-Newton stage; with Adam alone it ends at
    # 9.6e-2 here)
    "allen_cahn1d": Tiny([*adam(3e-3, 1000), *points(512),
                          "model={modified_mlp: {width: 32, depth: 2}, periodic: [x]}",
                          "training.precision=32", "training.points.rad=null",
                          "training.weighting={causal: {eps: 1.0, chunks: 32}}",
                          "domain.time=[0, 0.25]"], {"u": 2e-2}, 0.1, 41),
    # Before the shock forms (t < 1/pi), in float64 (the file's precision auto trains Adam
    # in float32: 0.239 -> 2.69e-2 here). Measured 0.224 -> 8.2e-3.
    "burgers1d": Tiny([*adam(3e-3, 1000), *points(512), *net("mlp", 20, 3),
                       "training.precision=64", "domain.time=[0, 0.25]"], {"u": 2e-2}, 0.1,
                      41),
    # Before the shock, as burgers1d, over the whole viscosity range (scored at its
    # centre). Measured 0.211 -> 2.74e-3.
    "burgers1d_parametric": Tiny([*adam(3e-3, 1000), *points(512), *net("mlp", 20, 3),
                                  "domain.time=[0, 0.25]"], {"u": 2e-2}, 0.1, 41),
    # Measured 0.643 -> 1.54e-2.
    "heat2d": Tiny([*adam(1e-2, 200), *points(256), *net("mlp", 16, 2)], {"u": 4e-2}, 0.1),
    # Scored at alpha = 0.055, the centre of its range. Measured 0.702 -> 1.51e-2.
    "heat2d_parametric": Tiny([*adam(1e-2, 200), *points(256), *net("mlp", 16, 2)],
                              {"u": 4e-2}, 0.1),
    # Before the solitons form (t < 0.25; the cosine steepens from t ~ 0.1), in float32,
    # a smaller network than the file's. Measured 0.224 -> 1.56e-2.
    "kdv": Tiny([*adam(3e-3, 500), *points(512), *net("mlp", 20, 2), "training.precision=32",
                 "domain.time=[0, 0.25]"], {"u": 4e-2}, 0.15, 41),
    # The walls are built in (hard): with them as a loss term the residual, of size
    # (a1^2 + a2^2) pi^2 ~ 170, outweighs them for the first thousand steps and a short run
    # ends further from the solution than it started (measured 1.02 -> 2.3 with 500 steps).
    # A sin network (64 x 4, float32, the file's earlier one): the file's narrow tanh one
    # does not draw sin(4 pi y) in a few hundred Adam steps (its full run needs the
    # SSBroyden stage). Measured 1.002 -> 5.15e-2.
    "helmholtz2d": Tiny([*adam(1e-3, 500), *points(512, 128), *net("mlp", 64, 4),
                         "model.mlp.activation=sin", "training.precision=32"],
                        {"u": 0.1}, 0.1),
    # Before the shock, as burgers1d. The field is pinned; nu is weakly identified before
    # the shock and a short run moves it *up* (to 0.0179 from 0.01; the file's full run ends
    # within 0.24% of 0.01/pi, pinned above): here it is only checked to have trained.
    "inverse_burgers": Tiny([*adam(3e-3, 1000), *points(512), *net("mlp", 20, 3),
                             "domain.time=[0, 0.25]"], {"u": 5e-2}, 0.2, 41),
    # The lid's boundary layer comes first (u), the vortex (v, and p) needs thousands of
    # steps: v and p are pinned at "better than zero / a constant" (which score exactly 1)
    # and below the untrained network. Reference: the file's FEM on 8 P2 cells.
    # Measured u 0.883 -> 0.464, v 1.326 -> 0.955, p 2.064 -> 0.920.
    "ns_cavity": Tiny([*adam(3e-3, 1000), *points(512, 256), *net("mlp", 32, 3),
                       "reference.fem.cells=8"], {"u": 0.6, "v": 1.0, "p": 1.0}, 0.8),
    # Measured 1.028 -> 5.6e-3.
    "poisson2d": Tiny([*adam(1e-2, 200), *points(256), *net("mlp", 16, 2)], {"u": 2e-2}, 0.05),
    # The source's parameter is an input: a wider network and longer run than poisson2d
    # (scored at a = 0). Measured 1.012 -> 3.53e-2.
    "poisson2d_parametric": Tiny([*adam(1e-2, 500), *points(512), *net("mlp", 20, 2)],
                                 {"u": 0.1}, 0.1),
    # Soft walls (the corner singularity is in the boundary data). Measured 1.311 -> 0.138.
    "poisson_lshape": Tiny([*adam(1e-2, 200), *points(256), *net("mlp", 16, 2)],
                           {"u": 0.3}, 0.25),
    # Hard ends and initial value, the rate soft; a mode of 4 periods in t: the hardest
    # here. The file's 3 x 30 network and Adam rate, without its SSBroyden stage.
    # Measured 1.692 -> 0.658.
    "wave1d": Tiny([*adam(5e-3, 1000), *points(512, 128, 128)], {"u": 0.9}, 0.5, 41),
}


def test_every_problem_file_is_pinned():
    assert FILES, PROBLEM_DIR
    assert set(FULL) == set(FILES), "pin the new problem file's error in FULL (RESULTS.md)"
    assert set(TINY) == set(FILES), "give the new problem file a tiny run in TINY"
    for name in FILES:
        fields = pinn.config.load(path_of(name), []).problem.field_names
        assert set(FULL[name].rel_l2) == set(TINY[name].bound) == set(fields), name


@pytest.mark.parametrize("name", sorted(TINY))
def test_problem_file_learns_at_a_tiny_size(name):
    tiny = TINY[name]
    built = pinn.config.load(path_of(name), tiny.overrides)
    model, training = built.model(), built.training()
    run = pinn.setup(built.problem, model, training, precision=built.precision,
                     progress=False, resolution=tiny.resolution)
    untrained = Solution(built.problem, model, run.params, seed=training.seed,
                         precision=built.precision, resolution=tiny.resolution).score().rel_l2
    sol = run.train()
    err = sol.metrics["rel_l2"]
    assert sol.metrics["steps_done"] == training.steps * training.windows
    assert set(err) == set(untrained) == set(tiny.bound), (err, untrained)
    for f, bound in tiny.bound.items():
        assert err[f] < bound, f"{name}: {f} {untrained[f]:.3e} -> {err[f]:.3e}"
        assert err[f] < tiny.ratio * untrained[f], (
            f"{name}: {f} {untrained[f]:.3e} -> {err[f]:.3e}, not below {tiny.ratio} x")
    for p in built.problem.learnable:
        # a learnable parameter trains: it moves by more than a tenth of its start
        # (inverse_burgers: nu 0.01 -> 0.0179 measured)
        learned = sol.learned_params()[p.name]
        assert abs(learned - p.value) > 0.1 * abs(p.value), (p.name, p.value, learned)
