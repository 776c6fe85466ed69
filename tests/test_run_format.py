"""The run format is data: problems, models and solutions round-trip through JSON + npz,
and nothing in a run folder is ever run (old pickles, object arrays, unknown classes and
tampered shapes are refused)."""

import dataclasses
import glob
import json
import os
import pickle
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

import pinn
import pinn.config
from pinn import serialize as S
from pinn.cli import main
from pinn.dsl import parse
from pinn.nets import RWF, Fourier, Periodic

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = sorted(glob.glob(str(ROOT / "problems" / "*.yaml")))
LAZY = (pinn.reference.FEMReference, pinn.reference.SpectralReference)


def through_json(problem):
    """``problem`` written as data, through JSON text, and read back."""
    data, arrays = S.problem_to_data(problem)
    text = json.dumps(data)
    return S.problem_from_data(json.loads(text), arrays), data


def same_condition(a, b):
    assert type(a) is type(b)
    if isinstance(a, pinn.Data):
        np.testing.assert_array_equal(a.points, b.points)
        assert [f for f, _ in a.values] == [f for f, _ in b.values]
        for (_, va), (_, vb) in zip(a.values, b.values, strict=True):
            np.testing.assert_array_equal(va, vb)
        assert (a.noise, a.weight, a.source) == (b.noise, b.weight, b.source)
    else:
        assert a == b


def check_same_problem(p, q, data):
    assert (q.name, q.coords, q.fields, q.params) == (p.name, p.coords, p.fields, p.params)
    assert dict(q.equations) == dict(p.equations)
    assert dict(q.exact) == dict(p.exact)
    assert list(q.conditions) == list(p.conditions)
    for k in p.conditions:
        same_condition(p.conditions[k], q.conditions[k])
    assert q.domain == p.domain
    key = jax.random.PRNGKey(3)
    np.testing.assert_array_equal(q.space.sample_interior(key, 64),
                                  p.space.sample_interior(key, 64))
    np.testing.assert_array_equal(q.space.sample_boundary(key, 32).points,
                                  p.space.sample_boundary(key, 32).points)
    # every expression reads back as written
    for e in [*p.equations.values(), *p.exact.values(),
              *(x for c in p.conditions.values() for x in c.expressions())]:
        back = parse(str(e), p)
        assert back == e or p.expand(back) == p.expand(e), str(e)
    # and writing the read problem gives the same data: a fixed point
    assert S.problem_to_data(q)[0] == data
    assert type(q.reference) is type(p.reference)
    if p.reference is not None and not isinstance(p.reference, LAZY):
        lo, hi = (np.asarray(b, float) for b in p.space.bounds)
        pts = np.random.default_rng(0).uniform(lo, hi, (20, len(lo)))
        if p.is_evolution:
            pts = np.column_stack([pts, np.linspace(p.time.t0, p.time.t1, 20)])
        for r in p.ranged:  # a parametric reference reads the parameters' columns too
            pts = np.column_stack([pts, np.linspace(*r.range, 20)])
        want, got = p.reference(pts), q.reference(pts)
        assert want.keys() == got.keys()
        for f in want:
            np.testing.assert_array_equal(got[f], want[f])


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: os.path.basename(p))
def test_every_problem_file_round_trips(path):
    built = pinn.config.load(path, [])
    q, data = through_json(built.problem)
    check_same_problem(built.problem, q, data)
    model = built.model()
    m, _ = S.to_data(model, "model")
    assert S.from_data(json.loads(json.dumps(m)), "model") == model


x, y, t = pinn.coords("x y t")
u, v, p_ = pinn.fields("u v p")


def python_problems(tmp_path):
    """Problems as the notebooks and tests build them, covering every shape, condition type
    and reference class."""
    alpha = pinn.param("alpha", 0.05)
    kappa = pinn.param("kappa", 0.5, learnable=True)
    nu = pinn.param("nu", 0.01 / np.pi)
    heat = pinn.Problem(  # notebook 01
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - alpha * pinn.laplacian(u)},
        conditions={"walls": pinn.Dirichlet(u, 0, on="boundary"),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y))},
        exact={u: pinn.exp(-2 * pinn.pi**2 * alpha * t)
               * pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y)})
    burgers = pinn.Problem(  # notebook 02
        domain=pinn.Interval(-1, 1) * pinn.TimeInterval(0, 1),
        equations={"burgers": pinn.D(u, t) + u * pinn.D(u, x) - nu * pinn.D(u, x, 2)},
        conditions={"walls": pinn.Dirichlet(u, 0, on="boundary", hard=True),
                    "start": pinn.Initial(u, -pinn.sin(pinn.pi * x), hard=True)},
        reference=pinn.reference.Burgers(nu=0.01 / np.pi), name="burgers")
    re = pinn.param("Re", 100)
    vel = pinn.vector(u, v)
    cavity = pinn.Problem(  # notebook 03
        domain=pinn.Rectangle((0, 0), (1, 1)),
        equations={"mx": pinn.dot(vel, pinn.grad(u)) + pinn.D(p_, x) - pinn.laplacian(u) / re,
                   "my": pinn.dot(vel, pinn.grad(v)) + pinn.D(p_, y) - pinn.laplacian(v) / re,
                   "mass": pinn.div(vel)},
        conditions={"lid": pinn.Dirichlet({u: 1, v: 0}, on="top"),
                    "walls": pinn.Dirichlet({u: 0, v: 0}, on=("left", "right", "bottom")),
                    "pin": pinn.Constraint(p_, on=pinn.dsl.eq(x, 0))},
        name="cavity")
    plate = pinn.Rectangle((0, 0), (1, 1)) - pinn.Disk((0.5, 0.5), 0.2).rename({"circle": "hole"})
    ex = pinn.sin(pinn.pi * x) * pinn.cos(pinn.pi * y) + x * y
    holed = pinn.Problem(  # notebook 03, the plate with a hole
        domain=plate, coords=(x, y),
        equations={"poisson": -pinn.laplacian(u)
                   - 2 * pinn.pi**2 * pinn.sin(pinn.pi * x) * pinn.cos(pinn.pi * y)},
        conditions={"outside": pinn.Dirichlet(u, ex, on=("left", "right", "bottom", "top")),
                    "hole": pinn.Neumann(u, 0.5, on="hole", weight=2.0)},
        exact={u: ex})
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1, (30, 2))
    inverse = pinn.Problem(  # notebook 04
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - kappa * pinn.D(u, x, 2)},
        conditions={"observed": pinn.Data(pts, {u: np.sin(pts[:, 0])}, noise=0.01,
                                          source="made up")},
        name="inverse_heat")
    wave = pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"wave": pinn.D(u, t, 2) - 4 * pinn.D(u, x, 2)},
        conditions={"ends": pinn.Robin(u, 1, 0.5, 0, on=("left", "right")),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x), rate=0)},
        reference=pinn.reference.wave1d(), name="wave")
    periodic = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (2, 1)),
        equations={"eq": -pinn.laplacian(u) + u - pinn.where(x < 1, 1, -1)},
        conditions={"lr": pinn.Periodic(u, ("left", "right"), order=1, hard=True),
                    "tb": pinn.Dirichlet(u, 0, on=("bottom", "top")),
                    "mask": pinn.Constraint(u - 0.1, on=x**2 + y**2 < 0.25, weight=0.5)})
    shapes = [pinn.Box((0, 0, 0), (1, 2, 3)), pinn.geometry.Ball((0, 0, 0), 1.0),
              pinn.geometry.Ellipse((0, 0), (2, 1)), pinn.geometry.Triangle((0, 0), (1, 0), (0, 1)),
              pinn.geometry.Polygon([(0, 0), (2, 0), (2, 1), (1, 2), (0, 1)]),
              pinn.Disk((0, 0), 1) | pinn.Disk((1, 0), 1),
              pinn.Rectangle((0, 0), (2, 2)) & pinn.Disk((1, 1), 1.2)]
    on_shapes = [pinn.Problem(domain=s, equations={"eq": pinn.laplacian(u) + 1},
                              conditions={"b": pinn.Dirichlet(u, 0)}, name=f"shape{i}")
                 for i, s in enumerate(shapes)]
    f = tmp_path / "ref.npz"
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 1, 5)), -1).reshape(-1, 2)
    np.savez(f, points=grid, u=grid[:, 0] * grid[:, 1])
    filed = pinn.Problem(domain=pinn.Rectangle((0, 0), (1, 1)),
                         equations={"eq": pinn.laplacian(u)}, reference=pinn.reference
                         .FileReference(f))
    closed = pinn.reference.heat(dim=1, alpha=0.1, modes=((1,), (2,)), amplitudes=(1.0, 0.5))
    heat1 = pinn.Problem(domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
                         coords=closed.coords, equations=dict(closed.equations),
                         conditions={"walls": pinn.Dirichlet(u, 0)},
                         exact=dict(closed.exact), reference=closed, name="closed")
    fem = dataclasses.replace(heat, reference=pinn.reference.FEMReference(heat, cells=8, dt=0.1))
    spectral = dataclasses.replace(
        burgers, conditions={}, reference=pinn.reference.SpectralReference("kdv", {"n": 64}))
    return [heat, burgers, cavity, holed, inverse, wave, periodic, *on_shapes, filed, heat1,
            fem, spectral]


def test_python_problems_round_trip(tmp_path):
    for problem in python_problems(tmp_path):
        q, data = through_json(problem)
        check_same_problem(problem, q, data)
    fem = python_problems(tmp_path)[-2]
    again = through_json(fem)[0].reference
    assert (again.cells, again.element, again.dt) == (8, "P2", 0.1)
    check_same_problem(fem.reference.problem, again.problem,
                       S.problem_to_data(fem.reference.problem)[0])


def test_a_periodic_solution_is_saved_as_the_solver_that_makes_it():
    xs = np.linspace(-1, 1, 8, endpoint=False)
    ts = np.linspace(0, 1, 4)
    sol = pinn.reference.PeriodicSolution(
        x=xs, t=ts, u=np.zeros((4, 8)), period=(-1.0, 1.0),
        info={"name": "kdv", "params": {"n": 64, "dt": 1e-3}})
    data, _ = S.to_data(sol, "reference")
    back = S.from_data(json.loads(json.dumps(data)), "reference")
    assert isinstance(back, pinn.reference.SpectralReference)
    assert (back.kind, back.options, back.field) == ("kdv", {"n": 64, "dt": 1e-3}, "u")


def test_model_specs_round_trip():
    for model in [pinn.MLP(width=8, depth=1, activation="sin", fourier=Fourier(2.0, 8),
                           rwf=RWF(1.0, 0.1), periodic=Periodic({0: 2.0}, harmonics=2),
                           normalize=False),
                  pinn.nets.ModifiedMLP(width=16, depth=2), pinn.nets.PirateNet(width=8)]:
        data, _ = S.to_data(model, "model")
        assert S.from_data(json.loads(json.dumps(data)), "model") == model


# ---------------------------------------------------------------------------
# a trained solution


def tiny_problem():
    k = pinn.param("k", 0.5, learnable=True)
    return pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - k * pinn.D(u, x, 2)},
        conditions={"walls": pinn.Dirichlet(u, 0),
                    "start": pinn.Initial(u, pinn.sin(pinn.pi * x))},
        exact={u: pinn.exp(-0.5 * pinn.pi**2 * t) * pinn.sin(pinn.pi * x)}, name="tiny")


TRAINING = pinn.Training(stages=[pinn.Stage(pinn.Adam(1e-3), 20)],
                         points=pinn.Points(interior=64, boundary=8, initial=8), chunk=10)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "tiny"
    model = pinn.MLP(width=8, depth=2, fourier=Fourier(1.0, 4))
    sol = pinn.setup(tiny_problem(), model, TRAINING, out_dir=out, progress=False).train()
    return out, sol


def saved_arrays(run) -> dict:
    with np.load(run / "params.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def copy_of(run_dir, tmp_path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(run_dir, dst)
    return dst


def test_saved_solution_loads_with_identical_values(run_dir):
    out, sol = run_dir
    assert (out / "solution.json").exists() and (out / "params.npz").exists()
    assert not (out / "solution.pkl").exists()
    doc = json.loads((out / "solution.json").read_text())
    assert doc["format"] == "pinn.solution/2" and doc["reloadable"] is True
    assert doc["model"]["$type"] == "MLP" and doc["versions"]["jax"]
    assert doc["training"]["stages"][0].startswith("Adam x 20")
    with np.load(out / "params.npz", allow_pickle=False) as z:
        assert "net/output/kernel" in z.files and "pde/k" in z.files
    back = pinn.Solution.load(out)
    pts = np.random.default_rng(1).uniform(0, 1, (40, 2))
    exprs = {"u_x": pinn.D(u, x), "res": "u_t - k*u_xx"}
    for a, b in [(sol.evaluate(pts), back.evaluate(pts)),
                 (sol.evaluate(pts, exprs), back.evaluate(pts, exprs))]:
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert back.learned_params() == sol.learned_params()
    assert back.metrics == json.loads(json.dumps(sol.metrics))
    assert back.history == json.loads(json.dumps(sol.history))
    assert (back.seed, back.precision) == (sol.seed, sol.precision)


def test_float64_solution_without_report(tmp_path):
    model = pinn.MLP(width=4, depth=1)
    sol = pinn.solve(tiny_problem(), model, dataclasses.replace(
        TRAINING, stages=[pinn.Stage(pinn.Adam(1e-3), 10)]), precision=64, progress=False)
    sol.save(tmp_path, report=False)
    assert (tmp_path / "history.jsonl").exists() and not (tmp_path / "report.md").exists()
    back = pinn.Solution.load(tmp_path)
    assert back.params["net"]["output"]["kernel"].dtype == np.float64
    pts = np.linspace(0, 1, 22).reshape(11, 2)
    np.testing.assert_array_equal(sol(pts), back(pts))


def predict_error(run, tmp_path, capsys) -> str:
    """``pinn predict RUN`` fails with exit 2; its one-line error."""
    pts = tmp_path / "p.csv"
    pts.write_text("x,t\n0.5,0.5\n")
    assert main(["predict", str(run), "--points", str(pts)]) == 2
    return capsys.readouterr().err


class Payload:
    """Unpickling it would create the file ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_an_old_pickle_is_refused_and_never_opened(tmp_path, capsys):
    marker = tmp_path / "pwned"
    run = tmp_path / "old"
    run.mkdir()
    (run / "solution.pkl").write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(ValueError, match="older pinn that stored runs as pickles"):
        pinn.Solution.load(run)
    assert "train again with `pinn solve" in predict_error(run, tmp_path, capsys)
    assert main(["plot", str(run)]) == 2
    assert not marker.exists()
    pickle.loads(pickle.dumps(Payload(marker)))  # the payload is real
    assert marker.exists()


def test_an_object_array_is_refused(run_dir, tmp_path):
    run = copy_of(run_dir[0], tmp_path)
    arrays = saved_arrays(run)
    arrays["net/output/bias"] = np.array([{"a": 1}], dtype=object)
    np.savez(run / "params.npz", **arrays)
    with pytest.raises(ValueError, match="params.npz"):
        pinn.Solution.load(run)


def test_an_unknown_class_is_refused_with_the_allowed_names(run_dir, tmp_path):
    run = copy_of(run_dir[0], tmp_path)
    doc = json.loads((run / "solution.json").read_text())
    doc["model"]["$type"] = "os.system"
    (run / "solution.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"'os.system'.*MLP, ModifiedMLP, PirateNet"):
        pinn.Solution.load(run)
    doc["model"]["$type"] = "MLP"
    doc["problem"]["conditions"]["walls"]["$type"] = "Evil"
    (run / "solution.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"problem/conditions/walls.*'Evil'.*Dirichlet"):
        pinn.Solution.load(run)


def test_a_tampered_shape_or_a_newer_format_is_refused(run_dir, tmp_path, capsys):
    run = copy_of(run_dir[0], tmp_path)
    arrays = saved_arrays(run)
    arrays["net/output/kernel"] = np.zeros((3, 3), np.float32)
    np.savez(run / "params.npz", **arrays)
    with pytest.raises(ValueError, match=r"net/output/kernel has shape \(3, 3\)"):
        pinn.Solution.load(run)
    doc = json.loads((run / "solution.json").read_text())
    doc["format"] = "pinn.solution/99"
    (run / "solution.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="newer pinn"):
        pinn.Solution.load(run)
    assert "upgrade pinn" in predict_error(run, tmp_path, capsys)


def test_a_format_1_solution_keeps_its_hard_initial_factor(run_dir, tmp_path):
    # format 1 was trained with u0 + (t - t0) N; format 2 scales by (t - t0)/(t1 - t0)
    run = copy_of(run_dir[0], tmp_path)
    assert pinn.Solution.load(run).time_span_scaled is True
    doc = json.loads((run / "solution.json").read_text())
    doc["format"] = "pinn.solution/1"
    (run / "solution.json").write_text(json.dumps(doc))
    assert pinn.Solution.load(run).time_span_scaled is False


class Mine(pinn.conditions.Constraint):
    """A user's own condition class: not data."""


def test_what_is_not_data_is_saved_but_not_reloadable(run_dir, tmp_path):
    _, sol = run_dir
    problem = dataclasses.replace(sol.problem,
                                  conditions={**sol.problem.conditions, "mine": Mine(u)})
    own = pinn.Solution(problem, sol.model, sol.params, seed=sol.seed, metrics=sol.metrics)
    own.save(tmp_path, report=False)
    doc = json.loads((tmp_path / "solution.json").read_text())
    assert doc["reloadable"] is False and "Mine" in doc["not_data"]
    with pytest.raises(ValueError, match=r"Mine.*load_params"):
        pinn.Solution.load(tmp_path)
    rebuilt = pinn.Solution(problem, sol.model, S.load_params(tmp_path), seed=sol.seed)
    pts = np.random.default_rng(2).uniform(0, 1, (10, 2))
    np.testing.assert_array_equal(rebuilt(pts), sol(pts))
    checked = S.load_params(tmp_path, template=jax.device_get(sol.params))
    np.testing.assert_array_equal(checked["pde"]["k"], sol.params["pde"]["k"])
    # a Python callable as activation is not data either
    fn = pinn.Solution(sol.problem, pinn.MLP(width=8, depth=2, fourier=Fourier(1.0, 4),
                                             activation=np.tanh), sol.params)
    fn.save(tmp_path / "fn", report=False)
    with pytest.raises(ValueError, match="callable"):
        pinn.Solution.load(tmp_path / "fn")


def test_no_pickle_in_the_package():
    hits = [str(p) for p in (ROOT / "pinn").rglob("*.py")
            if "import pickle" in p.read_text(encoding="utf-8")]
    assert not hits
