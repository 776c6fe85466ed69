"""Boxes and balls in any dimension (issue 19): sampling, parts, normals, measures, hard
walls, the YAML forms, and PINNacle's 5-D problems (PNd, HNd)."""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn import config
from pinn.geometry import Ball, Box, Disk, Grid, Interval, Rectangle, Sobol, TimeInterval

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PINNACLE = os.path.join(ROOT, "benchmarks", "pinnacle")
KEY = jax.random.PRNGKey(0)
LO, HI = np.array([0.0, -1.0, 0.5, 0.0, 2.0]), np.array([1.0, 1.0, 1.0, 3.0, 2.5])


def test_box_5d_parts_measures_and_lower_dimensions():
    box = Box(LO, HI)
    assert box.dim == 5
    assert box.boundary_parts == tuple(f"x{i}_{s}" for i in range(1, 6) for s in ("min", "max"))
    side = HI - LO
    assert math.isclose(box.measure, float(np.prod(side)))
    faces = 2 * sum(np.prod(np.delete(side, i)) for i in range(5))
    assert math.isclose(box.boundary_measure, float(faces))
    assert box.face("x4_max") == (3, "hi")
    np.testing.assert_allclose(box.periodic_shift(("x2_max", "x2_min")), [0, -2, 0, 0, 0])
    # one and two numbers per corner: the interval and the rectangle (their part names)
    assert Box([0], [2]) == Interval(0, 2)
    assert Box((0, 0), (1, 2)) == Rectangle((0, 0), (1, 2))
    assert Box((0, 0, 0), (1, 1, 1)).boundary_parts[:2] == ("left", "right")
    with pytest.raises(ValueError, match="hi must be 5 numbers"):
        Box(LO, HI[:3])


def test_box_5d_sampling_lies_inside_and_on_its_faces():
    box = Box(LO, HI)
    for sampler in (None, Sobol(), Grid()):
        x = np.asarray(box.sample_interior(KEY, 500, sampler))
        assert x.shape == (500, 5)
        assert np.all(x >= LO) and np.all(x <= HI)
    b = box.sample_boundary(KEY, 4000)
    x, n, part = (np.asarray(v) for v in b)
    assert np.all(x >= LO - 1e-6) and np.all(x <= HI + 1e-6)
    for k, name in enumerate(box.boundary_parts):  # every face is drawn, on its own plane
        axis, side = box.face(name)
        on = part == k
        assert on.sum() > 20
        value = (LO if side == "lo" else HI)[axis]
        np.testing.assert_allclose(x[on, axis], value, atol=1e-6)
        want = np.zeros(5)
        want[axis] = -1.0 if side == "lo" else 1.0  # outward
        np.testing.assert_array_equal(n[on], np.broadcast_to(want, n[on].shape))
    np.testing.assert_allclose(np.asarray(box.sdf(x)), 0.0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(box.normal(x)), n)
    # a face by name: the points have the face's value and the part's index
    f = box.sample_boundary(KEY, 300, on="x3_max")
    np.testing.assert_allclose(np.asarray(f.points)[:, 2], HI[2])
    assert set(np.asarray(f.part).tolist()) == {box.boundary_parts.index("x3_max")}


def test_ball_5d_measure_moments_and_normals():
    c, r = np.array([0.5, -1.0, 0.0, 2.0, 1.0]), 0.75
    ball = Ball(c, r)
    v5 = 8 * math.pi**2 / 15 * r**5  # volume of the 5-ball
    assert math.isclose(ball.measure, v5) and math.isclose(ball.boundary_measure, 5 * v5 / r)
    assert ball.boundary_parts == ("sphere",)
    assert Ball((0, 0), 1) == Disk((0, 0), 1) and Ball([1.0], 0.5) == Interval(0.5, 1.5)
    n = 40_000
    x = np.asarray(ball.sample_interior(KEY, n), np.float64) - c
    rad = np.linalg.norm(x, axis=1)
    assert rad.max() <= r * (1 + 1e-6)
    # |x|^2 / r^2 of a uniform point in the d-ball has mean d / (d + 2)
    assert abs(np.mean(rad**2) / r**2 - 5 / 7) < 4 * 0.2 / math.sqrt(n)
    b = ball.sample_boundary(KEY, n)
    y = (np.asarray(b.points, np.float64) - c) / r
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-6)
    normals = np.asarray(b.normals, np.float64)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(normals, y, atol=1e-6)  # outward: (x - c) / r
    # uniform on the 4-sphere: E y_i = 0, E y_i^2 = 1/5, E y_i^4 = 3 / (d (d + 2)) = 3/35
    np.testing.assert_allclose(y.mean(0), 0.0, atol=4 * math.sqrt(0.2 / n))
    np.testing.assert_allclose((y**2).mean(0), 0.2, atol=4 * math.sqrt(3 / 35 / n))
    np.testing.assert_allclose((y**4).mean(0), 3 / 35, atol=4 * math.sqrt(15 / 315 / n))
    assert bool(ball.contains(c[None])[0]) and not bool(ball.contains((c + r * 1.01)[None])[0])


def test_ball_5d_volume_fraction_by_monte_carlo():
    """A 5-ball of radius 1 fills pi^2 / 60 of the cube [-1, 1]^5."""
    ball = Ball(np.zeros(5), 1.0)
    n = 200_000
    u = np.asarray(Box(-np.ones(5), np.ones(5)).sample_interior(KEY, n))
    frac = float(np.mean(np.asarray(ball.contains(u))))
    p = math.pi**2 / 60
    assert abs(frac - p) < 4 * math.sqrt(p * (1 - p) / n)
    est = float(Box(-np.ones(5), np.ones(5)).__sub__(ball).estimate_measure(KEY, 100_000))
    assert abs(est / 32 - (1 - p)) < 4 * math.sqrt(p * (1 - p) / 100_000)


def test_ball_in_space_time_samples_its_sphere_and_start():
    domain = Ball(np.zeros(5), 1.0) * TimeInterval(0.0, 2.0)
    x = np.asarray(domain.sample_interior(KEY, 1000, Sobol()))
    assert x.shape == (1000, 6) and np.linalg.norm(x[:, :5], axis=1).max() <= 1 + 1e-6
    assert 0 <= x[:, 5].min() and x[:, 5].max() <= 2
    b = domain.sample_boundary(KEY, 500)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(b.points)[:, :5], axis=1), 1, atol=1e-6)
    assert b.normals.shape == (500, 5)


def _hard_apply(text, tmp_path):
    from pinn.network import hard_transforms

    f = tmp_path / "p.yaml"
    f.write_text(text)
    problem = config.load(str(f)).problem

    def apply(params, x):  # any network: a smooth function that is not zero on the walls
        return jnp.cos(x @ params)[:, None] + 1.5

    return problem, hard_transforms(problem, apply)


HARD_5D = """\
coords: [p, q, r, s, w]
domain: {box: [[0, 0, 0, 0, 0], [1, 2, 1, 1, 1]]}
equations: {poisson: "-laplacian(u) = 1"}
conditions:
  walls: {dirichlet: {u: "p + q*r"}, on: ON, hard: true}
"""


@pytest.mark.parametrize("on", ["boundary", "[x1_min, x2_max, x5_max]"])
def test_hard_dirichlet_on_a_5d_box(tmp_path, on):
    problem, u = _hard_apply(HARD_5D.replace("ON", on), tmp_path)
    params = jnp.asarray([0.3, -1.1, 0.7, 2.0, 0.4])
    parts = problem.space.boundary_parts if on == "boundary" else on.strip("[]").split(", ")
    b = problem.space.sample_boundary(KEY, 2000, on=tuple(parts))
    x = np.asarray(b.points, np.float64)
    got = np.asarray(u(params, jnp.asarray(x)))[:, 0]
    np.testing.assert_allclose(got, x[:, 0] + x[:, 1] * x[:, 2], atol=1e-5)
    if on != "boundary":  # the other faces are free
        other = problem.space.sample_boundary(KEY, 200, on="x1_max")
        y = np.asarray(other.points, np.float64)
        free = np.asarray(u(params, jnp.asarray(y)))[:, 0] - (y[:, 0] + y[:, 1] * y[:, 2])
        assert np.abs(free).max() > 1e-2


def test_yaml_forms_of_nd_shapes(tmp_path):
    def load(domain, coords="[p, q, r, s, w]"):
        f = tmp_path / "s.yaml"
        f.write_text(f"coords: {coords}\ndomain: {domain}\n"
                     "equations: {poisson: \"-laplacian(u) = 1\"}\n")
        return config.load(str(f)).problem.domain

    box = Box(np.zeros(5), np.ones(5))
    assert load("{box: [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]}") == box
    assert load("{hypercube: {min: [0, 0, 0, 0, 0], max: [1, 1, 1, 1, 1]}}") == box
    assert load("{hyperball: {center: [0, 0, 0, 0, 0], radius: 2}}") == Ball(np.zeros(5), 2)
    assert load("{ball: {center: [0, 0, 0, 0], radius: 1}}", "[p, q, r, s]").dim == 4
    # default coordinates beyond 3-D: x1 ... xN, the names of the faces
    f = tmp_path / "d.yaml"
    f.write_text("domain: {box: [[0, 0, 0, 0], [1, 1, 1, 1]], time: [0, 1]}\n"
                 "equations: {heat: \"u_t - laplacian(u)\"}\n")
    assert [c.name for c in config.load(str(f)).problem.coords] == ["x1", "x2", "x3", "x4", "t"]
    with pytest.raises(config.ConfigError, match="min has 5 numbers and max 4"):
        load("{box: [[0, 0, 0, 0, 0], [1, 1, 1, 1]]}")
    with pytest.raises(config.ConfigError, match="disk needs 2 numbers here, got 5 .*ball"):
        load("{disk: {center: [0, 0, 0, 0, 0], radius: 1}}")


def _pinnacle(name):
    built = config.load(os.path.join(PINNACLE, name))
    from pinn.report.manufactured import check

    checks = check(built.problem)
    assert checks and all(c.ok for c in checks), [c.as_dict() for c in checks if not c.ok]
    return built


def test_pinnacle_5d_problems_validate():
    pnd = _pinnacle("poisson_nd.yaml")
    assert pnd.problem.space == Box(np.zeros(5), np.ones(5))
    hnd = _pinnacle("heat_nd.yaml")
    assert hnd.problem.space == Ball(np.zeros(5), 1.0) and hnd.problem.is_evolution


@pytest.mark.slow
@pytest.mark.parametrize("name", ["poisson_nd.yaml", "heat_nd.yaml"])
def test_pinnacle_5d_problems_train(name):
    """A few steps of each, with the file's loss: the loss falls and the error is finite."""
    built = config.load(os.path.join(PINNACLE, name), [
        "training.stages.0.steps=30", "training.points.interior=256",
        "training.points.boundary=128", "training.points.initial=128",
        "model.mlp.width=16", "model.mlp.depth=2"])
    run = pinn.setup(built.problem, built.model(), built.training(), progress=False,
                     resolution=[5] * len(built.coords))
    sol = run.train()
    losses = [h["loss"] for h in sol.history if "loss" in h]
    assert losses[-1] < losses[0]
    assert np.isfinite(sol.metrics["rel_l2"]["u"])


# --------------------------------------------------------------- bounds as expressions


def _domain(tmp_path, text):
    f = tmp_path / "b.yaml"
    f.write_text(text + 'equations: {p: "-laplacian(u) = 1"}\n')
    return config.load(str(f))


def test_bounds_may_be_expressions_of_constants_and_parameters(tmp_path):
    b = _domain(tmp_path, 'params: {L: 2, r: 0.25}\ncoords: [x, t]\n'
                'domain: {interval: [0, "2*pi"], time: ["L/4", "L"]}\n')
    assert b.problem.domain.space == Interval(0, 2 * math.pi)
    assert (b.problem.time.t0, b.problem.time.t1) == (0.5, 2.0)
    assert b.resolved()["domain"]["interval"] == {"min": 0, "max": "2*pi"}  # kept as written
    b = _domain(tmp_path, 'params: {r: 0.25}\ndomain: {difference: [{rectangle: [[0, 0], '
                '["pi", "pi/2"]]}, {disk: {center: ["pi/2", "pi/4"], radius: "r*pi/4"}}]}\n')
    assert b.problem.domain.a == Rectangle((0, 0), (math.pi, math.pi / 2))
    assert b.problem.domain.b == Disk((math.pi / 2, math.pi / 4), math.pi / 16)
    box = _domain(tmp_path, 'coords: [p, q, r, s, w]\n'
                  'domain: {hypercube: [[0, 0, 0, 0, "-sqrt(2)"], [1, 1, 1, 1, "exp(0)"]]}\n')
    assert box.problem.domain == Box((0, 0, 0, 0, -math.sqrt(2)), (1, 1, 1, 1, 1))


@pytest.mark.parametrize(("domain", "where", "says"), [
    ('{interval: [0, "2*pie"]}', "domain.interval.max", "did you mean 'pi'"),
    ('{interval: ["pi", 1]}', "domain.interval", "a < b"),
    ('{disk: {center: [0, 0], radius: "x"}}', "domain.disk.radius", "x"),
    ('{disk: {center: [0, 0], radius: "cos(pi)"}}', "domain.disk", "positive"),
    ('{interval: [0, "1/0"]}', "domain.interval.max", "division by zero"),
    ('{interval: [0, 1], time: [0, "T"]}', "domain.time.1", "unknown name 'T'"),
])
def test_bad_bound_expressions_name_their_place(tmp_path, domain, where, says):
    with pytest.raises(config.ConfigError) as info:
        _domain(tmp_path, f"domain: {domain}\n")
    msg = str(info.value)
    assert f" {where}: " in msg and says in msg, msg
