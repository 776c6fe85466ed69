"""Data inside the language (issue 19): coefficients and initial values from tables,
piecewise and cell-table coefficients, and file references scored at their own points.

The mathematics: a table sampled from a bilinear function is reproduced exactly by the
multilinear interpolant, with its exact gradient (from the derivative engine and from
autodiff alike); a 10^5-point reference loads and is queried in well under 2 s; bad
tables are refused with one line (exit 2, no traceback, nothing written)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import yaml

import pinn
from pinn.cli import main
from pinn.dsl import D, expand, tables
from pinn.dsl.evaluate import evaluate, evaluate_points_numpy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

x, y, t = pinn.coords("x y t")


def bilinear(X, Y):
    return 1 + 2 * X - 3 * Y + 4 * X * Y


def grid_table():
    xs, ys = np.linspace(0, 1, 5), np.linspace(0, 2, 7) ** 1.5  # a non-uniform y axis
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    return xs, ys, X, Y


@pytest.fixture
def pts():
    rng = np.random.default_rng(0)
    return rng.uniform(0, 1, 200), rng.uniform(0, 2 ** 1.5, 200)


def test_linear_table_reproduces_a_bilinear_function_and_its_gradient(pts):
    xs, ys, X, Y = grid_table()
    k = pinn.coefficient("k", grid=(xs, ys), values=bilinear(X, Y), over=(x, y))
    px, py = pts
    env = {x: px, y: py}
    np.testing.assert_allclose(evaluate(k, env, xp=np), bilinear(px, py), rtol=1e-13)
    kx, ky, kxy, kxx = (evaluate(expand(e, (x, y)), env, xp=np)
                        for e in (D(k, x), D(k, y), D(k, x, y), D(k, x, 2)))
    np.testing.assert_allclose(kx, 2 + 4 * py, rtol=1e-12)
    np.testing.assert_allclose(ky, -3 + 4 * px, rtol=1e-12)
    np.testing.assert_allclose(kxy, 4.0, rtol=1e-12)
    np.testing.assert_allclose(kxx, 0.0, atol=0)
    # autodiff of the JAX interpolant gives the same slopes (in float32)
    import jax
    import jax.numpy as jnp

    gx, gy = jax.jit(jax.vmap(jax.grad(lambda a, b: evaluate(k, {x: a, y: b}), (0, 1))))(
        jnp.asarray(px, jnp.float32), jnp.asarray(py, jnp.float32))
    np.testing.assert_allclose(gx, 2 + 4 * py, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(gy, -3 + 4 * px, rtol=2e-5, atol=2e-5)


def test_linear_table_slopes_are_the_cells_and_constant_outside():
    xs = np.array([0.0, 1.0, 3.0])
    k = pinn.coefficient("k", grid=(xs,), values=[0.0, 1.0, 5.0], over=(x,))
    p = np.array([-1.0, 0.5, 2.0, 4.0])
    np.testing.assert_allclose(evaluate(k, {x: p}, xp=np), [0.0, 0.5, 3.0, 5.0])
    np.testing.assert_allclose(evaluate(expand(D(k, x), (x,)), {x: p}, xp=np),
                               [0.0, 1.0, 2.0, 0.0])


def test_nearest_table_and_a_scattered_table(pts):
    xs, ys, X, Y = grid_table()
    k = pinn.coefficient("k", grid=(xs, ys), values=bilinear(X, Y), over=(x, y),
                         interpolation="nearest")
    px, py = pts
    i = np.abs(px[:, None] - xs).argmin(1)
    j = np.abs(py[:, None] - ys).argmin(1)
    np.testing.assert_allclose(evaluate(k, {x: px, y: py}, xp=np), bilinear(xs[i], ys[j]))
    assert np.all(evaluate(expand(D(k, x), (x, y)), {x: px, y: py}, xp=np) == 0)
    # scattered points: nearest resamples once on a regular grid; linear is refused
    rng = np.random.default_rng(1)
    P = rng.uniform(0, 1, (400, 2))
    s = pinn.coefficient("s", points=P, values=P[:, 0] + P[:, 1], interpolation="nearest",
                         resample=64)
    got = evaluate(s, {x: P[:, 0], y: P[:, 1]}, xp=np)
    assert np.abs(got - P.sum(1)).max() < 0.25
    with pytest.raises(ValueError, match="do not form a tensor grid.*interpolation: nearest"):
        pinn.coefficient("s", points=P, values=P[:, 0])


def test_a_table_file_in_any_row_order(tmp_path, pts):
    xs, ys, X, Y = grid_table()
    rows = np.c_[X.ravel(), Y.ravel(), bilinear(X, Y).ravel()]
    rows = rows[np.random.default_rng(2).permutation(len(rows))]
    np.savetxt(tmp_path / "k.dat", rows, header="x y k", comments="% ")
    k = pinn.coefficient("k", file=str(tmp_path / "k.dat"), over=(x, y))
    px, py = pts
    np.testing.assert_allclose(evaluate(k, {x: px, y: py}, xp=np), bilinear(px, py),
                               rtol=1e-12)


def test_the_derivative_engine_differentiates_a_data_coefficient():
    """-div(k grad u) compiled against a known 'network' u = x^2 y: the engine's residual
    equals the closed form with k's exact slopes."""
    import jax
    import jax.numpy as jnp

    from pinn.compile import compile_terms

    xs, ys, X, Y = grid_table()
    k = pinn.coefficient("k", grid=(xs, ys), values=bilinear(X, Y), over=(x, y))
    u = pinn.field("u")
    fn = compile_terms({"r": -pinn.div(k * pinn.grad(u))}, coords=(x, y), fields=(u,),
                       apply=lambda p, q: (q[:, 0] ** 2 * q[:, 1])[:, None])
    rng = np.random.default_rng(3)
    q = np.c_[rng.uniform(0.05, 0.95, 64), rng.uniform(0.05, 2.7, 64)].astype(np.float32)
    got = np.asarray(jax.jit(fn)({"net": {}}, jnp.asarray(q))["r"])
    X_, Y_ = q[:, 0].astype(float), q[:, 1].astype(float)
    want = -((2 + 4 * Y_) * 2 * X_ * Y_ + bilinear(X_, Y_) * 2 * Y_ + (-3 + 4 * X_) * X_**2)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_piecewise_and_cells():
    k = pinn.piecewise((x < 0.5, 1), (y < 0.5, 4), 16)
    assert str(k) == "where(x < 0.5, 1, where(y < 0.5, 4, 16))"
    px, py = np.array([0.2, 0.7, 0.7]), np.array([0.9, 0.2, 0.9])
    np.testing.assert_allclose(evaluate(k, {x: px, y: py}, xp=np), [1, 4, 16])
    a = pinn.cells((x, y), ([0, 0.5, 1], [0, 1, 2, 3]), [[1, 2, 3], [4, 5, x + 6]])
    cx, cy = np.array([0.25, 0.25, 0.75, 0.75, 1.2, -1]), np.array([0.5, 2.5, 1.5, 2.5, 2.9, 9])
    np.testing.assert_allclose(evaluate(a, {x: cx, y: cy}, xp=np),
                               [1, 3, 5, 6.75, 7.2, 3])
    with pytest.raises(ValueError, match="2 x 3 cells"):
        pinn.cells((x, y), ([0, 0.5, 1], [0, 1, 2, 3]), [[1, 2], [3, 4]])


def _write(tmp_path, doc) -> str:
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(f)


PROBLEM = {
    "name": "vc",
    "coords": ["x", "y", "t"],
    "domain": {"rectangle": {"min": [0, 0], "max": [1, 1]}, "time": [0, 1]},
    "coefficients": {
        "k": {"file": "k.dat"},
        "s": {"piecewise": [{"where": "x < 0.5", "value": 1}, {"value": 16}]},
        "a": {"cells": {"edges": {"x": [0, 0.5, 1]}, "values": [2, "3 + y"]}},
    },
    "equations": {"heat": "D(u, t) - div(k*grad(u)) - s*a"},
    "conditions": {"walls": {"dirichlet": {"u": 0}, "on": "boundary"},
                   "start": {"initial": {"u": {"file": "u0.dat"}}}},
    "model": {"mlp": {"width": 8, "depth": 1}},
    "training": {"points": {"interior": 64, "boundary": 32, "initial": 32},
                 "stages": [{"adam": {}, "steps": 2}], "eval_every": 0,
                 "checkpoint_every": 0},
    "evaluation": {"resolution": [5, 5, 3]},
}


def _tables(tmp_path):
    xs = np.linspace(0, 1, 9)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    np.savetxt(tmp_path / "k.dat", np.c_[X.ravel(), Y.ravel(), bilinear(X, Y).ravel()])
    np.savetxt(tmp_path / "u0.dat", np.c_[X.ravel(), Y.ravel(), (X * Y).ravel()])


def test_yaml_coefficients_and_initial_values_from_a_file(tmp_path):
    from pinn.config import load

    _tables(tmp_path)
    b = load(_write(tmp_path, PROBLEM))
    p = b.problem
    P = np.array([[0.3, 0.6, 0.1], [0.8, 0.2, 0.5]])
    eq = p.expand(p.equations["heat"])
    assert any(isinstance(n, pinn.dsl.expr.Tabulated) and n.deriv
               for n in pinn.dsl.walk(eq))
    # with u = 0 the residual is -s*a: the piecewise value times the table of cells
    rest = pinn.dsl.substitute(p.equations["heat"], {pinn.field("u"): 0})
    s_a = evaluate_points_numpy(rest, p.coords, P, spatial=p.spatial)
    np.testing.assert_allclose(s_a, [-1 * 2, -16 * (3 + 0.2)])
    init = p.conditions["start"]
    ((_, value),) = init.values
    np.testing.assert_allclose(evaluate_points_numpy(value, p.coords, P, spatial=p.spatial),
                               P[:, 0] * P[:, 1], rtol=1e-12)


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def run(*args):
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def _refused(cli, tmp_path, doc, expect):
    f = _write(tmp_path, doc)
    before = {str(p) for p in tmp_path.rglob("*")}
    for command in ("validate", "solve"):
        rc, _, err = cli(command, f, *(("-q",) if command == "solve" else ()))
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
        assert expect.lower() in err.lower(), err
        assert {str(p) for p in tmp_path.rglob("*")} == before, f"{command} wrote files"


BAD = {
    "missing coefficient file": ({"coefficients.k": {"file": "nope.dat"}}, "no file 'nope.dat'"),
    "missing initial file": ({"conditions.start": {"initial": {"u": {"file": "no.dat"}}}},
                             "no file 'no.dat'"),
    "wrong columns": ({"coefficients.k": {"file": "five.dat"}}, "needs 3"),
    "linear on scattered points": ({"coefficients.k": {"file": "scattered.dat"}},
                                   "interpolation: nearest"),
    "not numbers": ({"coefficients.k": {"file": "words.dat"}}, "not a table of numbers"),
    "interpolation without a file": (
        {"coefficients.s": {"piecewise": [{"value": 1}], "interpolation": "linear"}},
        "belongs to a coefficient read from a file"),
    "piece without where in the middle": (
        {"coefficients.s": {"piecewise": [{"value": 1}, {"value": 2}]}},
        "only the last piece"),
    "cells of the wrong shape": (
        {"coefficients.a": {"cells": {"edges": {"x": [0, 0.5, 1]}, "values": [1, 2, 3]}}},
        "2 cells"),
    "unknown interpolation": ({"coefficients.k": {"file": "k.dat", "interpolation": "cubic"}},
                              "linear"),
    "reference with wrong columns": ({"reference": {"file": "five.dat"}}, "columns"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_tables_are_one_clear_line(cli, tmp_path, case):
    import copy

    _tables(tmp_path)
    np.savetxt(tmp_path / "five.dat", np.ones((4, 5)))
    np.savetxt(tmp_path / "scattered.dat", np.random.default_rng(0).uniform(size=(20, 3)))
    (tmp_path / "words.dat").write_text("1 2 3\n4 five 6\n")
    edits, expect = BAD[case]
    doc = copy.deepcopy(PROBLEM)
    for path, value in edits.items():
        node = doc
        *head, last = path.split(".")
        for k in head:
            node = node[k]
        node[last] = value
    _refused(cli, tmp_path, doc, expect)


def _comsol_file(path, n_space: int, n_times: int) -> tuple[np.ndarray, np.ndarray]:
    """A COMSOL-style space-time reference: X, Y, then one column per time level."""
    rng = np.random.default_rng(4)
    xy = rng.uniform(0, 1, (n_space, 2))
    times = np.linspace(0, 1, n_times)
    vals = np.sin(np.pi * xy[:, :1]) * np.sin(np.pi * xy[:, 1:]) * np.exp(-times)[None, :]
    head = ("% Model: test\n% X                       Y                        "
            + "".join(f"u (1) @ t={tt:g}              " for tt in times) + "\n")
    with open(path, "w") as fh:
        fh.write(head)
        np.savetxt(fh, np.c_[xy, vals], fmt="%.10g")
    return xy, vals


def test_a_1e5_point_reference_loads_fast_and_scores_at_its_own_points(tmp_path):
    from pinn.config import load
    from pinn.evaluate import evaluation_points, score_at_points

    _comsol_file(tmp_path / "ref.dat", 2000, 50)  # 10^5 space-time points
    doc = {"name": "r", "coords": ["x", "y", "t"],
           "domain": {"rectangle": {"min": [0, 0], "max": [1, 1]}, "time": [0, 1]},
           "equations": {"heat": "D(u, t) - laplacian(u)"},
           "reference": {"file": "ref.dat"}}
    f = _write(tmp_path, doc)
    t0 = time.perf_counter()
    p = load(f).problem
    ref = p.reference
    pts = evaluation_points(p)
    got = ref(pts)  # the interpolant of the plots (a k-d tree, built on first use)
    seconds = time.perf_counter() - t0
    assert ref.points.shape == (100_000, 3) and ref.method == "nearest"
    assert seconds < 2.0, f"loading a 10^5-point reference took {seconds:.2f} s"
    assert np.all(np.isfinite(got["u"]))
    # at its own points the reference is exact, and the score is PINNacle's L2RE
    exact = {"u": np.sin(np.pi * ref.points[:, 0]) * np.sin(np.pi * ref.points[:, 1])
             * np.exp(-ref.points[:, 2])}
    np.testing.assert_allclose(ref(ref.points)["u"], ref.values["u"])
    m = score_at_points(p, lambda q: {"u": 1.1 * ref(q)["u"]})
    assert m["ref_points"] == 100_000
    assert m["rel_l2_ref_points"]["u"] == pytest.approx(0.1, rel=1e-9)
    np.testing.assert_allclose(ref.values["u"], exact["u"], rtol=1e-5, atol=1e-9)


def test_fem_evaluates_a_data_coefficient_at_its_quadrature_points(tmp_path):
    """-div(k grad u) = f with k from a bilinear table and u = sin(pi x) sin(pi y):
    P2 FEM with the tabulated k matches the closed form as it does with k written out."""
    from pinn import fem

    xs = np.linspace(0, 1, 6)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    kd = pinn.coefficient("k", grid=(xs, xs), values=1 + X + 2 * Y + X * Y, over=(x, y))
    ke = 1 + x + 2 * y + x * y
    u = pinn.field("u")
    ue = pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y)
    f = -pinn.div(ke * pinn.grad(ue))
    errs = []
    for k in (kd, ke):
        prob = pinn.Problem(domain=pinn.Rectangle((0, 0), (1, 1)),
                            equations={"p": -pinn.div(k * pinn.grad(u)) - f},
                            conditions={"w": pinn.Dirichlet(u, 0, on="boundary")},
                            exact={u: ue})
        errs.append(fem.solve(prob, cells=16).errors()["rel_l2"]["u"])
    assert errs[0] < 2e-2
    assert errs[0] == pytest.approx(errs[1], rel=1e-6)


def test_a_problem_with_data_coefficients_saves_as_data(tmp_path):
    """The run format keeps the tables (arrays in params.npz), so a run reloads."""
    from pinn.config import load
    from pinn.serialize import problem_from_data, problem_to_data

    _tables(tmp_path)
    p = load(_write(tmp_path, PROBLEM)).problem
    data, arrays = problem_to_data(p)
    assert [c["name"] for c in data["coefficients"]] == ["k", "u0"]
    back = problem_from_data(data, arrays)
    assert back.equations == p.equations
    assert back.conditions["start"].values == p.conditions["start"].values


PINNACLE = __import__("os").path.join(__import__("os").path.dirname(__file__), "..",
                                      "benchmarks", "pinnacle")
DATA_PROBLEMS = ["heat2d_vc.yaml", "poisson2d_ms.yaml", "burgers2d_c.yaml", "wave2d_cg.yaml"]


def test_pinnacle_problems_with_data_validate():
    import os

    from pinn.config import load
    from pinn.dsl.expr import Tabulated

    built = {n: load(os.path.join(PINNACLE, n)) for n in DATA_PROBLEMS}
    heat = built["heat2d_vc.yaml"].problem
    (k,) = {n for n in pinn.dsl.walk(heat.equations["heat"]) if isinstance(n, Tabulated)}
    assert [len(a) for a in k.table.axes] == [256, 256] and k.table.method == "linear"
    ms = built["poisson2d_ms.yaml"].problem
    wheres = [n for n in pinn.dsl.walk(ms.equations["poisson"])
              if isinstance(n, pinn.dsl.expr.Expr) and getattr(n, "func", None) == "where"]
    assert len(wheres) == 2 * 5 * 5 - 2 * 1  # two 5 x 5 tables: 4 + 5*4 wheres each
    # the centre of block (0, 0): a from PINNacle's poisson_a_coef.dat (u = (x^2 + y^2)/4
    # has laplacian 1, so the residual minus the one at u = 0 is a)
    u = pinn.field("u")
    x_, y_ = ms.coords
    at = np.array([[-8.000008, -8.000008]])
    res = [evaluate_points_numpy(pinn.dsl.substitute(ms.equations["poisson"], {u: v}),
                                 ms.coords, at)[0] for v in ((x_**2 + y_**2) / 4, 0)]
    assert res[0] - res[1] == pytest.approx(46.117281846004595, rel=1e-12)
    burgers = built["burgers2d_c.yaml"].problem
    assert len(burgers.conditions["start"].values) == 2
    wave = built["wave2d_cg.yaml"].problem
    (c,) = {n for n in pinn.dsl.walk(wave.equations["wave"]) if isinstance(n, Tabulated)}
    assert c.table.method == "linear" and set(np.unique(c.table.values)) == {1.0, 12.0}


def test_pinnacle_coefficient_tables_are_regenerated_by_make_data():
    """The committed tables are what make_data.py's re-implementation of PINNacle's seeded
    generator writes (float32), laid out as PINNacle's: value[i, j] at (x_j, y_i)."""
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("make_data",
                                                  os.path.join(PINNACLE, "make_data.py"))
    make_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_data)
    state = np.random.get_state()
    for name, fn, lo in (("heat2d_vc_coef.npz", make_data.heat_coefficient, 0.0),
                         ("wave2d_cg_coef.npz", make_data.wave_coefficient, -1.0)):
        points, values = fn()
        stored = np.load(os.path.join(PINNACLE, name))
        np.testing.assert_array_equal(stored["points"], points.astype(np.float32))
        np.testing.assert_array_equal(stored["values"], values.astype(np.float32))
        assert points[1].tolist() == [lo + (1 - lo) / 255, lo]  # x varies fastest
    # PINNacle's generator: exp of a unit-variance field (heat), thresholded at 0 (Darcy)
    heat = make_data.heat_coefficient()[1]
    assert np.log(heat).mean() == pytest.approx(0.0, abs=1e-12)
    assert np.log(heat).std() == pytest.approx(1.0, rel=1e-12)
    assert np.random.get_state()[1].tolist() == state[1].tolist()  # global state restored


@pytest.mark.slow
@pytest.mark.parametrize("name", DATA_PROBLEMS)
def test_pinnacle_problems_with_data_train(name):
    """A few steps of each with the file's loss: the loss falls."""
    import os

    from pinn.config import load

    built = load(os.path.join(PINNACLE, name), [
        "training.stages.0.steps=40", "training.points.interior=256",
        "training.points.boundary=128", "training.points.initial=128",
        "model.mlp.width=16", "model.mlp.depth=2"])
    problem = built.problem
    if problem.reference is not None:  # no FEM reference at this size
        import dataclasses

        problem = dataclasses.replace(problem, reference=None)
    sol = pinn.setup(problem, built.model(), built.training(), progress=False,
                     resolution=[5] * len(built.coords)).train()
    losses = [h["loss"] for h in sol.history if "loss" in h]
    assert np.isfinite(losses[-1]) and losses[-1] < losses[0]


def test_taylor_mode_passes_through_a_table():
    """A table inside the network (a hard initial value from a file) is differentiated by
    Taylor mode itself (no scan in it): the slopes of a bilinear table, exactly."""
    import jax.numpy as jnp

    from pinn.compile.derivatives import derivatives

    xs, ys = np.linspace(0, 1, 5), np.array([0, 0.1, 0.5, 0.6, 1.0])  # uniform, not
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    table = tables.Table((xs, ys), bilinear(X, Y))
    q = jnp.asarray(np.random.default_rng(5).uniform(0.01, 0.99, (16, 2)), jnp.float32)
    out = derivatives(lambda p, z: table([z[:, 0], z[:, 1]])[:, None], {}, q,
                      [(1, 0), (0, 1), (1, 1)], strategy="taylor")
    qx, qy = np.asarray(q[:, 0], float), np.asarray(q[:, 1], float)
    np.testing.assert_allclose(np.asarray(out[(1, 0)])[:, 0], 2 + 4 * qy, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(out[(0, 1)])[:, 0], -3 + 4 * qx, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(out[(1, 1)])[:, 0], 4.0, rtol=1e-4)
