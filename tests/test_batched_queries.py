"""Batched parameter queries (issue 31): ``Solution(points, params=...)`` and
``Solution.evaluate`` answer many values of the ranged parameters in one call (a mapping of
arrays or an array ``[Q, p]``, values ``[Q, N, ...]``) and equal the one-by-one queries;
``pinn predict RUN --params FILE`` writes every query at every point and equals the
``--param NAME=VALUE`` runs; bad parameter values and files are one line naming them.

The solutions are built, not trained (a seeded network on a two-parameter heat problem):
the equalities hold for any network, and building takes a second."""

from __future__ import annotations

import numpy as np
import pytest

import pinn
from pinn.cli import main
from pinn.solution import _chunks

x, t = pinn.coords("x t")
u = pinn.field("u")
ALPHA, K = (0.01, 0.1), (0.5, 2.0)
ROWS = np.array([[0.01, 0.5], [0.037, 1.25], [0.1, 2.0], [0.055, 0.8]])  # [Q, p]: alpha, k
TEXT = [[repr(float(v)) for v in row] for row in ROWS]  # as a CSV file or --param gives them
EXPRS = {"u": "u", "u_t": "u_t", "residual": "u_t - alpha*laplacian(u)", "flux": "k*u_x"}
#: float64: equal to 1e-12; float32: to rounding (a few units in the last place)
TOL = {64: dict(rtol=1e-12, atol=1e-13), 32: dict(rtol=2e-6, atol=2e-6)}


def two_params():
    """u_t = alpha u_xx on [0, 1] x [0, 0.5], u(x, 0) = k sin(pi x); alpha and k ranged."""
    alpha = pinn.param("alpha", range=ALPHA)
    k = pinn.param("k", range=K)
    return pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 0.5),
        equations={"heat": pinn.D(u, t) - alpha * pinn.laplacian(u)},
        conditions={"ends": pinn.Dirichlet(u, 0.0, on="boundary"),
                    "start": pinn.Initial(u, k * pinn.sin(pinn.pi * x))},
        name="heat1d_two_params")


@pytest.fixture(scope="module", params=[64, 32], ids=["float64", "float32"])
def sol(request):
    problem, model = two_params(), pinn.MLP(width=12, depth=2)
    run = pinn.setup(problem, model, progress=False, precision=request.param)
    return pinn.Solution(problem, model, run.params, precision=request.param)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A float64 run folder of the two-parameter solution (what `pinn predict` reads)."""
    problem, model = two_params(), pinn.MLP(width=12, depth=2)
    run = pinn.setup(problem, model, progress=False, precision=64)
    out = tmp_path_factory.mktemp("batched") / "run"
    pinn.Solution(problem, model, run.params, precision=64).save(out, report=False)
    return out


def points(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform([0.0, 0.0], [1.0, 0.5], (n, 2))


def one_by_one(rows: np.ndarray) -> list[dict[str, float]]:
    return [{"alpha": a, "k": k} for a, k in rows]


# ---------------------------------------------------------------------------
# the library


def test_batched_values_equal_one_by_one(sol):
    pts = points(9)
    got = sol(pts, ROWS)
    assert got.shape == (len(ROWS), 9, 1) and got.dtype == np.dtype(f"float{sol.precision}")
    want = np.stack([sol(pts, q) for q in one_by_one(ROWS)])
    np.testing.assert_allclose(got, want, **TOL[sol.precision])
    # the same queries as a mapping of arrays, and a value held for every query
    np.testing.assert_array_equal(sol(pts, {"alpha": ROWS[:, 0], "k": ROWS[:, 1]}), got)
    held = sol(pts, {"alpha": ROWS[:, 0], "k": 1.25})
    np.testing.assert_array_equal(held, sol(pts, np.c_[ROWS[:, 0], np.full(len(ROWS), 1.25)]))
    np.testing.assert_allclose(held[1], sol(pts, {"alpha": 0.037, "k": 1.25}),
                               **TOL[sol.precision])
    # one query as an array of one row keeps its query axis; a single mapping has none
    assert sol(pts, ROWS[:1]).shape == (1, 9, 1)
    assert sol(pts, {"alpha": 0.037, "k": 1.25}).shape == (9, 1)
    assert sol(pts, {"alpha": [0.037], "k": [1.25]}).shape == (1, 9, 1)


def test_batched_expressions_equal_one_by_one_and_differentiate_along_the_coordinates(sol):
    pts = points(7, seed=1)
    got = sol.evaluate(pts, EXPRS, params={"alpha": ROWS[:, 0], "k": ROWS[:, 1]})
    singles = [sol.evaluate(pts, EXPRS, params=q) for q in one_by_one(ROWS)]
    for name in EXPRS:
        assert got[name].shape == (len(ROWS), 7), name
        np.testing.assert_allclose(got[name], np.stack([s[name] for s in singles]),
                                   err_msg=name, **TOL[sol.precision])
    fields = sol.evaluate(pts, params=ROWS)
    assert list(fields) == ["u"] and fields["u"].shape == (len(ROWS), 7)
    np.testing.assert_array_equal(fields["u"], sol(pts, ROWS)[..., 0])
    if sol.precision == 64:  # each query's u_t and k u_x against central differences
        h = 1e-5
        for step, want in (([0, h], got["u_t"]), ([h, 0], got["flux"] / ROWS[:, 1:2])):
            fd = (sol(pts + step, ROWS) - sol(pts - step, ROWS))[..., 0] / (2 * h)
            np.testing.assert_allclose(want, fd, rtol=1e-6, atol=1e-8)


def test_queries_across_chunks_equal_one_by_one(sol):
    """Q x N beyond one chunk of either evaluation (65536 for values, 16384 for
    expressions): the chunk edges fall inside queries."""
    pts = points(17_000, seed=2)
    rows = ROWS[:4]
    got = sol(pts, rows)
    exprs = sol.evaluate(pts, {"u_x": "u_x"}, params=rows)["u_x"]
    for i, q in enumerate(one_by_one(rows)):
        np.testing.assert_allclose(got[i], sol(pts, q), **TOL[sol.precision])
        np.testing.assert_allclose(exprs[i], sol.evaluate(pts, {"u_x": "u_x"}, params=q)["u_x"],
                                   **TOL[sol.precision])


def test_the_stacked_inputs_are_made_chunk_by_chunk_query_by_query():
    a = np.arange(10.0).reshape(5, 2)
    rows = np.array([[100.0], [200.0], [300.0]])
    chunks = list(_chunks(a, 4, rows))
    assert [len(c) for c in chunks] == [4, 4, 4, 3]
    want = np.concatenate([np.c_[a, np.full(5, r)] for r in rows[:, 0]])
    np.testing.assert_array_equal(np.concatenate(chunks), want)


@pytest.mark.parametrize("params, error, message", [
    ({"alpha": [0.02, 0.03], "kk": [1.0, 1.0]}, ValueError, r"\['kk'\] are not ranged"),
    ({"alpha": [0.02, 0.03]}, ValueError, r"give a value for \['k'\]"),
    ({"alpha": [0.02, 0.03], "k": [1.0, 1.0, 1.0]}, ValueError,
     r"different numbers of values \(alpha: 2, k: 3\)"),
    ({"alpha": [0.02, 0.5, 0.7], "k": 1.0}, ValueError,
     r"alpha=0.5 \(query 1, counting from 0; 2 of the 3 values of alpha are out of range "
     r"or not finite\) is outside the range it was trained on, \[0.01, 0.1\]"),
    ({"alpha": [0.02, np.nan], "k": 1.0}, ValueError,
     r"alpha=nan \(query 1, counting from 0\) is not a finite number; give values within"),
    (np.array([[0.02, np.inf]]), ValueError, r"k=inf \(query 0, counting from 0\) is not a "
     "finite"),
    (np.array([[0.02, 1.0, 3.0]]), ValueError,
     r"must be \[Q, 2\], one row per query with the columns alpha, k .* got shape \(1, 3\)"),
    (np.array([0.02, 1.0]), ValueError, r"got shape \(2,\); for one query pass a mapping"),
    (np.zeros((0, 2)), ValueError, r"no parameter values \(0 queries\)"),
    ({"alpha": [[0.02]], "k": 1.0}, ValueError, r"alpha has values of shape \(1, 1\)"),
    ({"alpha": ["0.02", "0.03"], "k": 1.0}, TypeError,
     r"params\['alpha'\]: expected numbers, got list of dtype <U4"),
    ("alpha=0.02", TypeError, "expected numbers, got the text 'alpha=0.02'"),
])
def test_bad_batched_params_say_what_was_given_and_what_is_expected(sol, params, error,
                                                                    message):
    pts = points(3)
    with pytest.raises(error, match=message):
        sol(pts, params)
    with pytest.raises(error, match=message):
        sol.evaluate(pts, {"u_x": "u_x"}, params=params)


def test_single_queries_keep_their_rule_and_messages(sol):
    pts = points(3)
    with pytest.raises(ValueError, match=r"^params: alpha=0.5 is outside the range it was "
                       r"trained on, \[0.01, 0.1\]$"):
        sol(pts, {"alpha": 0.5, "k": 1.0})
    with pytest.raises(ValueError, match=r"^params: k=nan is not a finite number"):
        sol(pts, {"alpha": 0.05, "k": float("nan")})
    # within 1e-9 of the range's width outside it: accepted, batched as single
    edge = {"alpha": 0.1 + 1e-11, "k": 0.5}
    np.testing.assert_array_equal(sol(pts, edge), sol(pts, {k: [v] for k, v in edge.items()})[0])
    plain = pinn.Problem(domain=pinn.Interval(0, 1), equations={"e": pinn.D(u, x, 2)},
                         conditions={"b": pinn.Dirichlet(u, 0.0, on="boundary")})
    model = pinn.MLP(width=4, depth=1)
    flat = pinn.Solution(plain, model, pinn.setup(plain, model, progress=False).params)
    with pytest.raises(ValueError, match=r"an array of shape \(2, 2\): this solution has no "
                       "ranged parameters"):
        flat(np.linspace(0, 1, 5), ROWS[:2])


# ---------------------------------------------------------------------------
# pinn predict RUN --params FILE


def _table(text: str) -> tuple[list[str], np.ndarray]:
    import csv
    import io

    header, *rows = list(csv.reader(io.StringIO(text)))
    return header, np.array(rows, dtype=np.float64)


@pytest.fixture
def files(tmp_path):
    pts = tmp_path / "points.csv"
    pts.write_text("x,t\n0.1,0.2\n0.5,0.25\n0.9,0.5\n")
    prm = tmp_path / "params.csv"  # the columns in another order than the problem's
    prm.write_text("k,alpha\n" + "".join(f"{k},{a}\n" for a, k in TEXT))
    return pts, prm


def test_predict_params_equals_the_one_row_runs(run_dir, files, tmp_path, capsys):
    pts, prm = files
    outputs = "u,u_t - alpha*laplacian(u)"
    assert main(["predict", str(run_dir), "--points", str(pts), "--params", str(prm),
                 "--outputs", outputs]) == 0
    header, got = _table(capsys.readouterr().out)
    assert header == ["query", "alpha", "k", "x", "t", "u", "u_t - alpha*laplacian(u)"]
    assert got.shape == (len(ROWS) * 3, 7)
    np.testing.assert_array_equal(got[:, 0], np.repeat(np.arange(len(ROWS)), 3))
    np.testing.assert_array_equal(got[:, 1:3], np.repeat(ROWS, 3, axis=0))
    for i, (a, k) in enumerate(TEXT):
        assert main(["predict", str(run_dir), "--points", str(pts), "--param", f"alpha={a}",
                     "--param", f"k={k}", "--outputs", outputs]) == 0
        h1, one = _table(capsys.readouterr().out)
        assert h1 == header[3:]
        np.testing.assert_allclose(got[3 * i:3 * i + 3, 3:], one, rtol=1e-12, atol=1e-13)
    # the same queries as .npy and .npz (and the npz written back as a parameter file)
    np.save(tmp_path / "p.npy", ROWS)
    np.savez(tmp_path / "p.npz", alpha=ROWS[:, 0], k=ROWS[:, 1])
    for f in ("p.npy", "p.npz"):
        assert main(["predict", str(run_dir), "--points", str(pts), "--params",
                     str(tmp_path / f), "--outputs", outputs]) == 0
        np.testing.assert_array_equal(_table(capsys.readouterr().out)[1], got)
    out = tmp_path / "values.npz"
    assert main(["predict", str(run_dir), "--points", str(pts), "--params", str(prm),
                 "--outputs", outputs, "--out", str(out)]) == 0
    assert f"wrote {len(ROWS)} queries x 3 points to {out}" in capsys.readouterr().out
    with np.load(out) as z:
        assert list(z["param_names"]) == ["alpha", "k"]
        np.testing.assert_array_equal(z["params"], ROWS)
        np.testing.assert_array_equal(z["points"], got[:3, 3:5])
        assert z["u"].shape == (len(ROWS), 3)
        np.testing.assert_array_equal(z["u"].reshape(-1), got[:, 5])
    assert main(["predict", str(run_dir), "--points", str(pts), "--params", str(out),
                 "--outputs", outputs]) == 0
    np.testing.assert_array_equal(_table(capsys.readouterr().out)[1], got)


BAD_FILES = {
    "missing column": ("p.csv", "alpha\n0.05\n", "no column for k (header: alpha)"),
    "extra column": ("p.csv", "alpha,k,beta\n0.05,1,2\n", "the column beta is not a ranged "
                     "parameter (header: alpha,k,beta); the columns are the ranged "
                     "parameters: alpha,k"),
    "NaN": ("p.csv", "alpha,k\n0.05,1\n0.05,nan\n",
            "k=nan in query 1 (counting from 0); every parameter value must be a finite"),
    "out of range": ("p.csv", "alpha,k\n0.05,1\n0.2,1\n", "alpha=0.2 (query 1, counting from "
                     "0) is outside the range it was trained on, [0.01, 0.1]"),
    "empty": ("p.csv", "", "empty; give a CSV with the header alpha,k"),
    "header only": ("p.csv", "alpha,k\n", "no queries"),
    "no header": ("p.csv", "0.05,1\n", "no header; the first line must name the ranged "
                  "parameters: alpha,k"),
    "not numbers": ("p.csv", "alpha,k\n0.05,one\n", "cannot read parameter values"),
    "npy of a wrong shape": ("p.npy", np.array([0.05, 1.0]), "got shape (2,)"),
    "npz columns in another order": ("p.npz", {"params": ROWS[:, ::-1],
                                               "param_names": np.array(["k", "alpha"])},
                                     "'param_names' (k, alpha) are not the ranged "
                                     "parameters in their order (alpha, k)"),
    "npz with another array": ("p.npz", {"alpha": ROWS[:, 0], "k": ROWS[:, 1],
                                         "beta": ROWS[:, 0]},
                               "the array beta is not a ranged parameter"),
    "a directory": ("p.csv", None, "a folder, not a regular file"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_params_file_is_one_line_naming_it(run_dir, files, tmp_path, capsys, case):
    name, content, message = BAD_FILES[case]
    bad = tmp_path / name
    if content is None:
        bad.mkdir()
    elif isinstance(content, str):
        bad.write_text(content)
    elif isinstance(content, dict):
        np.savez(bad, **content)
    else:
        np.save(bad, content)
    assert main(["predict", str(run_dir), "--points", str(files[0]), "--params",
                 str(bad)]) == 2
    io = capsys.readouterr()
    err = io.err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in io.err and not io.out, io
    assert err[0].startswith(f"pinn: {bad}") and message in err[0], err[0]


def test_predict_params_refuses_a_missing_file_both_options_and_too_many_queries(
        run_dir, files, tmp_path, capsys, monkeypatch):
    pts, prm = files
    cases = [
        (["--params", str(tmp_path / "none.csv")], f"{tmp_path / 'none.csv'}: no such file"),
        (["--params", str(prm), "--param", "alpha=0.05"], "give one of them"),
    ]
    for extra, message in cases:
        assert main(["predict", str(run_dir), "--points", str(pts), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    import pinn.io

    # Q x N bounded by what a points file may hold: 4 queries x 3 points x 6 numbers
    monkeypatch.setattr(pinn.io, "MAX_NPZ_BYTES", 4 * 3 * 6 * 8 - 1)
    assert main(["predict", str(run_dir), "--points", str(pts), "--params", str(prm)]) == 2
    err = capsys.readouterr().err
    assert f"{prm}: 4 queries x 3 points, 6 numbers each, make 576 bytes" in err, err


def test_predict_params_on_an_exported_graph(run_dir, files, capsys):
    pts, prm = files
    assert main(["export", str(run_dir)]) == 0
    capsys.readouterr()
    graph = run_dir / "export" / "heat1d_two_params.stablehlo"
    assert main(["predict", str(graph), "--points", str(pts), "--params", str(prm)]) == 0
    header, got = _table(capsys.readouterr().out)
    assert header == ["query", "alpha", "k", "x", "t", "u"]
    assert main(["predict", str(run_dir), "--points", str(pts), "--params", str(prm)]) == 0
    np.testing.assert_allclose(got, _table(capsys.readouterr().out)[1], rtol=1e-5, atol=1e-6)
    bad = prm.with_name("far.csv")
    bad.write_text("alpha,k\n0.05,3\n")
    assert main(["predict", str(graph), "--points", str(pts), "--params", str(bad)]) == 2
    assert "k=3.0 (query 0, counting from 0) is outside the range it was trained on, " \
           "[0.5, 2.0]" in capsys.readouterr().err
