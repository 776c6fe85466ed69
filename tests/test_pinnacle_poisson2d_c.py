"""PINNacle's Poisson2d-C (issue 14): Laplace on the square minus four disks, u = 1 on the
square and 0 on the holes, scored at PINNacle's own reference points (its COMSOL solution,
benchmarks/pinnacle/poisson2d_c_ref.npz from ref/poisson1_cg_data.dat)."""

import os

import numpy as np
import pytest

import pinn
from pinn import config
from pinn.train.spec import precision_scope

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = os.path.join(ROOT, "benchmarks", "pinnacle", "poisson2d_c.yaml")
REF = os.path.join(ROOT, "benchmarks", "pinnacle", "poisson2d_c_ref.npz")


def error_at_reference_points(sol) -> float:
    """The relative L2 error at the 1246 points of PINNacle's reference."""
    with np.load(REF) as z:
        points, ref = z["points"], z["u"]
    u = np.asarray(sol.evaluate(points)["u"]).reshape(-1)
    return float(np.linalg.norm(u - ref) / np.linalg.norm(ref))


def test_the_lift_holds_both_boundary_values():
    """The hard condition's lift is 1 on the square and 0 on the circles (so the network's
    output is too, whatever its weights), and PINNacle's reference agrees."""
    built = config.load(FILE)
    with np.load(REF) as z:
        points, ref = z["points"], z["u"]
    outer = np.isclose(np.abs(points).max(axis=1), 0.5)
    centres = np.array([[0.3, 0.3], [-0.3, 0.3], [0.3, -0.3], [-0.3, -0.3]])
    r = np.min(np.linalg.norm(points[:, None] - centres[None], axis=2), axis=1)
    holes = np.isclose(r, 0.1, atol=1e-6)
    assert outer.sum() > 50 and holes.sum() > 50
    assert np.allclose(ref[outer], 1) and np.allclose(ref[holes], 0)
    run = pinn.setup(built.problem, built.model(), built.training(), progress=False)
    with precision_scope(run.precision):
        u = np.asarray(run.assembly.apply(run.params["net"], points[outer | holes]))[:, 0]
    # the file's points lie on the circles to ~1e-7 (COMSOL's mesh nodes): the lift's slope
    # there (40) makes that up to ~4e-6
    np.testing.assert_allclose(u, np.where(outer, 1.0, 0.0)[outer | holes], atol=1e-5)


@pytest.mark.slow
def test_poisson2d_c_default_recipe_reaches_pinnacles_best():
    """The file's own settings (the default recipe and weighting): PINNacle's best is 1.2e-2
    at these points. Measured 9.82e-4 in 233 s (``pinn solve``, 2 shared cores, Intel Xeon,
    float64); a factor 3 as for the other float64 quasi-Newton runs
    (tests/test_problems_pinned.py)."""
    built = config.load(FILE)
    sol = pinn.setup(built.problem, built.model(), built.training(),
                     precision=built.precision, progress=False).train()
    err = error_at_reference_points(sol)
    assert err < 3 * 9.82e-4, err
    np.testing.assert_allclose(sol.metrics["rel_l2_ref_points"]["u"], err, rtol=1e-6)
