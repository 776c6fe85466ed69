"""`pinn export`: StableHLO and ONNX graphs of a trained solution that run without pinn.

heat2d (one field) and the lid-driven cavity (three fields) are trained for a few
hundred steps, exported with derivatives and PDE residuals among the outputs, and run by
the shipped loaders (examples/deploy/) in a Python where pinn cannot be imported. The
values must match ``Solution.evaluate`` (what ``pinn predict`` prints): 1e-6 (StableHLO)
and 1e-5 (ONNX) relative to each output's largest value, float32. Reduced precisions are
measured against the float32 model on the evaluation grid and bounded.
Parametric inputs (ranged parameters as extra columns) wait for ranged parameters in the
language: no problem has one yet, and `--params` says so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pinn.cli import main

ROOT = Path(__file__).resolve().parent.parent
# the ONNX side needs the optional extra pinn[onnx]; without it the StableHLO side is tested
HAVE_ONNX = all(importlib.util.find_spec(m) is not None
                for m in ("jax2onnx", "onnx", "onnxruntime"))
KINDS = ("stablehlo", "onnx") if HAVE_ONNX else ("stablehlo",)
DEPLOY = ROOT / "examples" / "deploy"
HEAT, CAVITY = ROOT / "problems" / "heat2d.yaml", ROOT / "problems" / "ns_cavity.yaml"
HEAT_OUT = ["u", "u_x", "D(u, y, 2)", "u_t", "u_t - alpha*laplacian(u)"]
CAVITY_OUT = ["u", "v", "p", "u_x", "v_y", "p_y", "u_x + v_y",
              "u*u_x + v*u_y + p_x - (u_xx + u_yy)/Re"]

# a Python in which pinn is not importable: the editable install's finder and the checkout
# are taken off the import system before the loader runs, and the loader must not import
# pinn (nothing may bring it into sys.modules)
HIDE = """
import importlib.util, runpy, sys
root = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path_hooks[:] = [h for h in sys.path_hooks if "editable" not in repr(h).lower()]
sys.path[:] = [p for p in sys.path if not p or not p.startswith(root)]
sys.path_importer_cache.clear()
assert importlib.util.find_spec("pinn") is None, "pinn is still importable"
for job in sys.argv[1:]:
    loader, *args = job.split("|")
    sys.argv = [loader, *args]
    runpy.run_path(loader, run_name="__main__")
assert not [m for m in sys.modules if m.split(".")[0] == "pinn"], "the loader imported pinn"
"""


def _tiny(steps: int, own_stages: bool = True, second: str | None = "lbfgs") -> list[str]:
    """The file's first stage for ``steps`` steps and its second for 2; ``own_stages=False``
    (the heat demo, which trains self-scaled Broyden alone): Adam for ``steps`` steps, then
    2 steps of ``second`` (L-BFGS; None: Adam alone). Two SSBroyden steps (a dense 13k x 13k
    matrix for heat2d's 64 x 4 network) cost ~5 s more and gave the same checked numbers."""
    adam = (f"{{adam: {{lr: 5.0e-3, decay: exponential, decay_rate: 0.98, decay_steps: 1000}}, "
            f"steps: {steps}}}")
    stages = [f"training.stages.0.steps={steps}", "training.stages.1.steps=2"] if own_stages \
        else [f"training.stages=[{adam}" + (f", {{{second}: {{}}, steps: 2}}]" if second
                                            else "]")]
    sets = [*stages, "training.points.interior=256", "training.points.boundary=64",
            "training.points.initial=64", "training.points.resample_every=50",
            "training.chunk=50", "evaluation.resolution=12", "evaluation.snapshots=2",
            # float32 training: the float32 graph is then the model itself (a float64 run's
            # float32 export is a reduced precision, measured like float16)
            "training.precision=32"]
    return [a for s in sets for a in ("--set", s)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """heat2d and the cavity, trained for 200 Adam steps (+2 L-BFGS) each."""
    base = tmp_path_factory.mktemp("export-runs")
    out = {}
    # heat2d at its earlier 64 x 4 size: the int8 export must have weights worth shrinking
    wide = ["--set", "model.mlp.width=64", "--set", "model.mlp.depth=4"]
    for name, path, extra in (("heat2d", HEAT, wide),
                              ("ns_cavity", CAVITY, ["--set", "reference.fem.cells=6"])):
        rc = main(["solve", str(path), "--out", str(base / name), "--quiet",
                   *_tiny(200, own_stages=name != "heat2d"), *extra])
        assert rc == 0
        out[name] = base / name
    return out


def _cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _rel(values, ref):
    """Largest difference per column over that column's largest magnitude."""
    values, ref = np.asarray(values, np.float64), np.asarray(ref, np.float64)
    return np.max(np.abs(values - ref), axis=0) / np.maximum(np.max(np.abs(ref), axis=0),
                                                             1e-30)


@pytest.fixture(scope="module")
def exported(runs, tmp_path_factory):
    """Both problems exported in both formats; heat2d also in float16 and int8."""
    import pinn.export as X
    from pinn.solution import Solution

    base = tmp_path_factory.mktemp("exports")
    arts = {}
    heat_dtypes = ["float32", "float16"] + (["int8"] if HAVE_ONNX else [])
    for name, outputs, dtypes in (("heat2d", HEAT_OUT, heat_dtypes),
                                  ("ns_cavity", CAVITY_OUT, ["float32"])):
        with pytest.warns(UserWarning, match="not exported: stablehlo int8") \
                if "int8" in dtypes else _nothing():
            done = X.export_run(runs[name], base / name,
                                formats="all" if HAVE_ONNX else "stablehlo", outputs=outputs,
                                dtypes=dtypes)
        arts[name] = {(a.meta["kind"], a.path.name.split(".")[0].partition("-")[2]
                       or "float32"): a for a in done}
        arts[name]["solution"] = Solution.load(runs[name])
    return arts


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _points(problem, n=257, seed=3):
    from pinn.evaluate import evaluation_grid

    lo, hi = (np.asarray(b, float) for b in problem.space.bounds)
    rng = np.random.default_rng(seed)
    pts = lo + (hi - lo) * rng.random((n, len(lo)))
    if problem.is_evolution:
        pts = np.hstack([pts, rng.uniform(problem.time.t0, problem.time.t1, (n, 1))])
    return np.vstack([pts, evaluation_grid(problem, 5).points])  # boundaries and corners too


def test_sidecar_names_the_graph(exported, runs):
    a = exported["heat2d"][("stablehlo", "float32")]
    meta = json.loads(a.sidecar.read_text())
    assert meta["format"] == "pinn-export" and meta["kind"] == "stablehlo"
    assert meta["inputs"] == ["x", "y", "t"] and meta["parametric_inputs"] == []
    assert meta["outputs"] == HEAT_OUT and meta["io_dtype"] == "float32"
    assert meta["versions"]["jax"] and meta["parameters"] == {"alpha": 0.05}
    assert meta["normalisation"]["box"] == {"x": [0.0, 1.0], "y": [0.0, 1.0], "t": [0.0, 1.0]}
    assert "u_t - alpha*(u_xx + u_yy)" in meta["source"]  # the problem's text
    assert meta["bytes"] == a.path.stat().st_size > 0
    assert "cpu" in meta["stablehlo"]["platforms"]
    assert meta["check"]["points"] == 12 * 12 * 11
    c = json.loads(exported["ns_cavity"][(KINDS[-1], "float32")].sidecar.read_text())
    assert c["inputs"] == ["x", "y"] and c["outputs"] == CAVITY_OUT
    assert c["onnx"]["opset"] if HAVE_ONNX else c["stablehlo"]["platforms"]


@pytest.mark.parametrize("name", ["heat2d", "ns_cavity"])
def test_runs_without_pinn_and_matches_evaluate(exported, name, tmp_path):
    """The shipped loaders, in a Python without pinn, give Solution.evaluate's values."""
    sol = exported[name]["solution"]
    outputs = HEAT_OUT if name == "heat2d" else CAVITY_OUT
    pts = _points(sol.problem)
    names = [c.name for c in sol.problem.coords]
    csv = tmp_path / "points.csv"
    # shuffled columns: the loaders read the header
    order = list(reversed(range(len(names))))
    np.savetxt(csv, pts[:, order], delimiter=",", header=",".join(names[i] for i in order),
               comments="", fmt="%.17g")
    ref_d = sol.evaluate(pts, outputs)
    ref = np.stack([np.broadcast_to(ref_d[k], (len(pts),)) for k in outputs], axis=1)
    jobs = []
    for kind, loader, tol in (("stablehlo", "load_stablehlo.py", 1e-6),
                              ("onnx", "load_onnx.py", 1e-5)):
        if kind not in KINDS:
            continue
        art = exported[name][(kind, "float32")]
        jobs.append((kind, tol, tmp_path / f"{kind}.npy",
                     f"{DEPLOY / loader}|{art.path}|{csv}|{tmp_path / f'{kind}.npy'}"))
    proc = subprocess.run([sys.executable, "-I", "-c", HIDE, str(ROOT), *(j[3] for j in jobs)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(",".join(names + outputs)) == len(jobs)  # each loader's header
    for kind, tol, npy, _ in jobs:
        got = np.load(npy)
        assert got.shape == ref.shape and got.dtype == np.float32
        rel = _rel(got, ref)
        assert np.all(rel <= tol), (kind, dict(zip(outputs, rel, strict=True)))


def test_predict_on_exported_file_as_on_run_folder(exported, runs, capsys, tmp_path):
    pts = _points(exported["heat2d"]["solution"].problem, n=50)
    np.savez(tmp_path / "pts.npz", points=pts)
    rc, _, err = _cli(capsys, "predict", runs["heat2d"], "-p", tmp_path / "pts.npz", "-o",
                      tmp_path / "run.npz")
    assert rc == 0, err
    run_u = np.load(tmp_path / "run.npz")["u"]
    for kind, tol in (("stablehlo", 1e-6), ("onnx", 1e-5))[:len(KINDS)]:
        art = exported["heat2d"][(kind, "float32")]
        rc, _, err = _cli(capsys, "predict", art.path, "-p", tmp_path / "pts.npz", "-o",
                          tmp_path / f"{kind}.npz")
        assert rc == 0, err
        z = np.load(tmp_path / f"{kind}.npz")
        assert set(HEAT_OUT) <= set(z.files)
        assert _rel(z["u"][:, None], run_u[:, None])[0] <= tol
    # CSV on stdout: the sidecar's columns
    rc, out, err = _cli(capsys, "predict", exported["heat2d"][(KINDS[-1], "float32")].path,
                        "-p", tmp_path / "pts.npz")
    assert rc == 0, err
    import csv  # (a name with a comma, D(u, y, 2), is quoted)

    assert next(csv.reader(out.splitlines()[:1])) == ["x", "y", "t", *HEAT_OUT]
    assert len(out.splitlines()) == len(pts) + 1


def test_reduced_precision_is_measured_and_bounded(exported):
    heat = exported["heat2d"]
    f32 = heat[("stablehlo", "float32")].check["rel_l2"]
    assert max(f32.values()) <= 1e-6  # the float32 graph is the model
    for kind in KINDS:
        a = heat[(kind, "float16")]
        meta = json.loads(a.sidecar.read_text())
        assert meta["dtype"] == "float16" and meta["io_dtype"] == "float32"
        err = meta["check"]["rel_l2"]
        assert set(err) == set(HEAT_OUT) and all(np.isfinite(v) for v in err.values())
        assert 0 < err["u"] <= 1e-2 and err["u_x"] <= 1e-2, (kind, err)
        assert err["u_t - alpha*laplacian(u)"] <= 1e-1, (kind, err)  # cancellation: looser
    if not HAVE_ONNX:
        return
    q = json.loads(heat[("onnx", "int8")].sidecar.read_text())
    assert q["quantization"] and q["dtype"] == "float32"
    done, _, total = q["quantized_matmuls"].partition(" of ")
    assert 0 < int(done) <= int(total)  # the weights of the network's layers, at least
    assert 0 < q["check"]["rel_l2"]["u"] <= 5e-2, q["check"]
    # the quantised file is smaller than the float32 one
    assert heat[("onnx", "int8")].path.stat().st_size < heat[("onnx", "float32")].path.stat(
    ).st_size


def test_export_cli_prints_each_error(runs, capsys, tmp_path):
    rc, out, err = _cli(capsys, "export", runs["heat2d"], "--outputs", "u,D(u, x)",
                        "--dtype", "float32,bfloat16", "--out", tmp_path)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 2 and "heat2d.stablehlo" in lines[0] and "bfloat16" in lines[1]
    assert "D(u, x)" in lines[1] and "relative L2" in lines[1]
    meta = json.loads((tmp_path / "heat2d-bfloat16.stablehlo.json").read_text())
    assert 0 < meta["check"]["rel_l2"]["u"] <= 5e-2
    # one artefact to a named file
    rc, _, err = _cli(capsys, "export", runs["heat2d"], "--out", tmp_path / "one.stablehlo",
                      "-q")
    assert rc == 0, err
    assert (tmp_path / "one.stablehlo").is_file()
    assert (tmp_path / "one.stablehlo.json").is_file()


@pytest.mark.parametrize("args, message", [
    (["{tmp}/nowhere"], "no such run folder"),
    (["{tmp}"], "no solution"),
    (["{run}", "--outputs", "u,w"], "output 'w' is not an expression of heat2d"),
    (["{run}", "--outputs", "grad(u)"], "grad(u) is a vector"),
    (["{run}", "--outputs", "u,,u_x"], "empty entry"),
    (["{run}", "--format", "tflite"], "unknown export format 'tflite'"),
    (["{run}", "--dtype", "float8"], "unknown dtype 'float8'"),
    (["{run}", "--dtype", "int8"], "int8 is an ONNX quantisation"),
    (["{run}", "--format", "onnx", "--dtype", "bfloat16"], "ONNX cannot hold a bfloat16"),
    (["{run}", "--params", "alpha"], "no parametric (ranged) parameter"),
])
def test_bad_export_input_is_one_line_exit_2(runs, capsys, tmp_path, args, message):
    if "onnx" in args and not HAVE_ONNX:
        message = 'pip install "pinn[onnx]"'  # the missing extra is said first
    argv = [a.format(tmp=tmp_path, run=runs["heat2d"]) for a in args]
    rc, out, err = _cli(capsys, "export", *argv, "--out", tmp_path / "x")
    assert rc == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("pinn: ") and message in err, err


def test_missing_onnx_extra_is_one_line_exit_2(runs, capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax2onnx", None)  # import jax2onnx -> ImportError
    rc, _, err = _cli(capsys, "export", runs["heat2d"], "--format", "onnx", "--out", tmp_path)
    assert rc == 2
    assert err.count("\n") == 1 and 'pip install "pinn[onnx]"' in err, err
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_predict_bad_exported_file_is_exit_2(capsys, tmp_path):
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    np.savez(tmp_path / "p.npz", points=np.zeros((2, 3)))
    rc, _, err = _cli(capsys, "predict", bogus, "-p", tmp_path / "p.npz")
    assert rc == 2 and "no sidecar" in err


def test_readme_deploy_numbers_are_in_inference_md():
    """Every measured number the README's Deploy section quotes is in the generated table."""
    import re

    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Deploy")
    end = readme.find("\n## ", start + 1)
    deploy = readme[start:end if end >= 0 else len(readme)]
    table = (ROOT / "benchmarks" / "INFERENCE.md").read_text()
    quoted = (re.findall(r"(?<![\w.])(\d+\.\d+)(?:×| s\b)", deploy)
              + re.findall(r"(?<![\w.])(\d+(?:\.\d+)?e-\d+)", deploy)
              + re.findall(r"(?<![\w.])(\d+ KiB)", deploy)
              + list(re.findall(r"load average\s+(\d+\.\d+) before and (\d+\.\d+) after",
                                deploy)[0]))
    assert len(quoted) >= 10, quoted
    missing = [q for q in quoted if q not in table]
    assert not missing, f"README Deploy numbers not in benchmarks/INFERENCE.md: {missing}"
    assert "generated by benchmarks/inference.py" in table


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_ONNX, reason="the benchmark compares ONNX: pip install -e '.[onnx]'")
def test_inference_benchmark_smoke(tmp_path):
    """benchmarks/inference.py end to end at tiny sizes (tens of seconds)."""
    out = tmp_path / "INFERENCE.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "inference.py"), "--smoke",
                        "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    text = out.read_text()
    for side in ("pinn predict", "StableHLO", "ONNX", "FEM", "load_onnx.py"):
        assert side in text
    res = json.loads(out.with_suffix(".json").read_text())
    assert {r["side"] for r in res["rows"]} == {"pinn predict", "StableHLO", "ONNX", "FEM"}
    assert all(v > 0 for r in res["rows"] for v in r["throughput"].values())


def test_a_parametric_solution_exports_with_its_parameter_as_an_input(capsys, tmp_path):
    """heat2d_parametric: the graph takes (x, y, t, alpha); at alpha values across the range
    it equals Solution.evaluate, and `pinn predict FILE --param` appends the column."""
    import pinn.export as X
    from pinn.solution import Solution

    path = HEAT.parent / "heat2d_parametric.yaml"
    run = tmp_path / "run"
    # 20 Adam steps alone (the file's Adam + SSBroyden compile a second stage): what is
    # checked is that the graph equals Solution.evaluate, whatever the training reached
    assert main(["solve", str(path), "--out", str(run), "--quiet",
                 *_tiny(20, own_stages=False, second=None)]) == 0
    art = X.export_run(run, tmp_path / "x")[0]
    assert art.meta["inputs"] == ["x", "y", "t", "alpha"]
    assert art.meta["parametric_inputs"] == ["alpha"] and "alpha" not in art.meta["parameters"]
    assert art.meta["normalisation"]["box"]["alpha"] == [0.01, 0.1]
    graph, sol = X.load(art.path), Solution.load(run)
    pts = np.random.default_rng(0).random((50, 3))
    for alpha in (0.01, 0.037, 0.1):
        want = sol.evaluate(pts, params={"alpha": alpha})["u"]
        got = graph.evaluate(np.column_stack([pts, np.full(50, alpha)]))["u"]
        assert _rel(got[:, None], want[:, None])[0] < 1e-5, alpha
    np.savetxt(tmp_path / "p.csv", pts, delimiter=",", header="x,y,t", comments="")
    rc, out, err = _cli(capsys, "predict", art.path, "-p", tmp_path / "p.csv", "--param",
                        "alpha=0.037")
    assert rc == 0, err
    rows = np.loadtxt(out.splitlines()[1:], delimiter=",")
    np.testing.assert_allclose(rows[:, 3], 0.037)
    want = sol.evaluate(pts, params={"alpha": 0.037})["u"]
    assert _rel(rows[:, 4:5], want[:, None])[0] < 1e-5
    rc, _, err = _cli(capsys, "predict", art.path, "-p", tmp_path / "p.csv", "--param",
                      "alpha=0.5")
    assert rc == 2 and "outside the range it was trained on" in err
