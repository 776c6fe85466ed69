"""One reader for every file the package reads (issue 30): what is not a regular file, a
damaged or oversized file, and limits checked before work starts each get one line naming
the file or the value, exit 2, and nothing hangs or crashes."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from pinn import io
from pinn.cli import main


@pytest.fixture(scope="module")
def base(tmp_path_factory, rod_text):
    d = tmp_path_factory.mktemp("readers")
    (d / "rod.yaml").write_text(rod_text)
    (d / "pts.csv").write_text("x\n0.25\n0.5\n")
    assert main(["solve", str(d / "rod.yaml"), "--out", str(d / "run"), "--quiet"]) == 0
    return d


def _copy(base, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(base / "run", run)
    (run / io.LOCK_FILE).unlink(missing_ok=True)
    return run


def _refused(capsys, args, *needles):
    assert main([str(a) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    for n in needles:
        assert n in err, err
    return err


def test_special_files_in_a_run_folder_are_refused_not_opened(base, tmp_path, capsys):
    run = _copy(base, tmp_path)
    (run / "history.jsonl").unlink()
    os.mkfifo(run / "history.jsonl")  # reading it would block for ever
    for cmd in (["predict", run, "--points", base / "pts.csv"],
                ["export-fields", run, "--out", tmp_path / "f.npz"]):
        _refused(capsys, cmd, "history.jsonl", "a FIFO, not a regular file")
    fifo = tmp_path / "points.csv"
    os.mkfifo(fifo)
    _refused(capsys, ["predict", base / "run", "--points", fifo], "points.csv", "a FIFO")
    run2 = tmp_path / "run2"
    shutil.copytree(run, run2, ignore=shutil.ignore_patterns("history.jsonl"))
    (run2 / "config.yaml").unlink()
    (run2 / "config.yaml").symlink_to("/dev/zero")  # endless
    _refused(capsys, ["plot", run2], "config.yaml", "a character device")


def test_damaged_files_name_themselves(base, tmp_path, capsys):
    run = _copy(base, tmp_path)
    pts = base / "pts.csv"
    (run / "params.npz").write_bytes(b"")  # (read as an EOF, it was reported "interrupted")
    _refused(capsys, ["predict", run, "--points", pts], "params.npz", "not a readable npz")
    shutil.copy(base / "run" / "params.npz", run / "params.npz")
    data = (base / "run" / "params.npz").read_bytes()
    (run / "params.npz").write_bytes(data[: len(data) // 2])
    _refused(capsys, ["predict", run, "--points", pts], "params.npz")
    shutil.copy(base / "run" / "params.npz", run / "params.npz")
    (run / "solution.json").write_text("[" * 100_000 + "]" * 100_000)
    _refused(capsys, ["predict", run, "--points", pts], "solution.json", "nested too deeply")
    (run / "solution.json").write_text((base / "run" / "solution.json").read_text()
                                       .replace('"width": 30', '"width": 100000000'))
    _refused(capsys, ["predict", run, "--points", pts], "solution.json", "far larger")
    shutil.copy(base / "run" / "solution.json", run / "solution.json")
    (run / "config.yaml").write_text("a: [1, 2\n")
    _refused(capsys, ["plot", run], "config.yaml", "not YAML (line 2")


def test_points_files(base, tmp_path, capsys):
    run = base / "run"
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffx\n0.5\n".encode())
    assert main(["predict", str(run), "--points", str(bom)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "x,u" and abs(float(out[1].split(",")[1]) - 0.125) < 0.05
    twice = tmp_path / "twice.csv"
    twice.write_text("x,x\n0.5,0.2\n")
    _refused(capsys, ["predict", run, "--points", twice], "twice.csv", "appears twice")
    npy = tmp_path / "p.npy"
    np.save(npy, np.ones((2, 1)))
    _refused(capsys, ["predict", run, "--points", npy], "p.npy", "a .npy file")


def test_limits_are_checked_before_work(base, tmp_path, capsys):
    run, rod = base / "run", base / "rod.yaml"
    for cmd in (["predict", run, "--points", base / "pts.csv", "--outputs", "D(u, x, 40)"],
                ["export", run, "--out", tmp_path / "e.stablehlo", "--outputs",
                 "D(u, x, 40)"]):
        _refused(capsys, cmd, "order 40", "up to order 8")
    for res in ("0", "-3"):
        _refused(capsys, ["plot", run, "--resolution", res], "at least 2")
    _refused(capsys, ["plot", run, "--resolution", "100000000"], "more than 50,000,000")
    many = "training.stages=[" + ", ".join(["{adam: {lr: 1.0e-3}, steps: 1}"] * 1000) + "]"
    _refused(capsys, ["solve", rod, "--out", tmp_path / "a", "-q", "--set", many],
             "training.stages")
    _refused(capsys, ["solve", rod, "--out", tmp_path / "b", "-q", "--set", "name=a\x01b"],
             "control character")
    _refused(capsys, ["solve", rod, "--out", tmp_path / "c", "-q", "--set", "name=a\udcffb"],
             "not UTF-8")
    _refused(capsys, ["sweep", rod, "--vary", "training.seed=0..100000000000"],
             "more than a sweep runs (10,000)")
    _refused(capsys, ["sweep", rod, "--vary", "training.seed=0..999", "--vary",
                      "params.a=" + ",".join(str(i) for i in range(11))], "11,000 runs")
    for d in ("a", "b", "c"):
        assert not (tmp_path / d).exists()


def test_odd_versions_and_output_names(base, tmp_path, capsys):
    import csv

    run = _copy(base, tmp_path)
    text = (base / "run" / "solution.json").read_text()
    for version in ("²", "abc"):
        (run / "solution.json").write_text(text.replace('"pinn.solution/2"',
                                                        f'"pinn.solution/{version}"'))
        _refused(capsys, ["predict", run, "--points", base / "pts.csv"],
                 "not a saved pinn solution")
    # an output whose name holds a comma is quoted in the CSV header: one column each
    h = 1e-3
    pts = tmp_path / "pts.csv"
    pts.write_text(f"x\n0.25\n{0.25 + h}\n0.5\n{0.5 + h}\n")
    assert main(["predict", str(base / "run"), "--points", str(pts),
                 "--outputs", "u,D(u, x)"]) == 0
    rows = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert rows[0] == ["x", "u", "D(u, x)"] and all(len(r) == 3 for r in rows)
    u, ux = [float(r[1]) for r in rows[1:]], [float(r[2]) for r in rows[1:]]
    for i in (0, 2):  # the column is the derivative of u: a forward difference, O(h)
        assert abs((u[i + 1] - u[i]) / h - ux[i]) < 1e-2 * max(1.0, abs(ux[i]))


# ---------------------------------------------------------------------------
# a `pinn fem` run folder, crafted: fem.json, fem.npz and solution_grid.npz are read by the
# checked readers and their values checked before anything is built from them


@pytest.fixture(scope="module")
def fem(base):
    """A `pinn fem` run of the rod (P2 on 64 cells: ``fem.json``, ``fem.npz``, ...)."""
    assert main(["fem", str(base / "rod.yaml"), "--out", str(base / "fem"), "--quiet"]) == 0
    (base / "fem" / io.LOCK_FILE).unlink(missing_ok=True)
    return base / "fem"


def _fem_copy(fem, tmp_path):
    run = tmp_path / "fem"
    shutil.copytree(fem, run)
    return run


def _json_edit(path, **changes):
    import json

    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def _npz_edit(path, **changes):
    """Rewrite ``path`` with ``changes`` (an array, or None: removed)."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})


def _header_bomb(run):
    """``fem.npz`` whose snapshots declare 2**40 float64 (8 TiB) in a few bytes."""
    import io as _io
    import zipfile

    path = run / "fem.npz"
    with np.load(path) as z:
        p, t = z["p"], z["t"]
    head = _io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False,
                                                "shape": (2**40,)})
    np.savez(path, p=p, t=t)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("snapshots.npy", head.getvalue() + b"\0" * 64)


def _special(run, name, kind):
    (run / name).unlink()
    if kind == "fifo":
        os.mkfifo(run / name)  # reading it would block for ever
    else:
        (run / name).symlink_to("/dev/zero")  # endless


def _nested(run):
    (run / "fem.json").write_text("[" * 100_000 + "]" * 100_000)


def _flat(run):  # the first cell's two vertices are one: no length, no inverse
    with np.load(run / "fem.npz") as z:
        t = z["t"].copy()
    t[1, 0] = t[0, 0]
    _npz_edit(run / "fem.npz", t=t)


def _wide(run, n):
    with np.load(run / "fem.npz") as z:
        p = z["p"]
    return np.vstack([p] * n)


FEM_RUNS = {  # name: (how the folder is crafted, the file named, what the line says)
    "json-fifo": (lambda r: _special(r, "fem.json", "fifo"), "fem.json",
                  "a FIFO, not a regular file"),
    "json-dev-zero": (lambda r: _special(r, "fem.json", "zero"), "fem.json",
                      "a character device"),
    "npz-fifo": (lambda r: _special(r, "fem.npz", "fifo"), "fem.npz", "a FIFO"),
    "npz-dev-zero": (lambda r: _special(r, "fem.npz", "zero"), "fem.npz", "a character device"),
    "npz-empty": (lambda r: (r / "fem.npz").write_bytes(b""), "fem.npz", "not a readable npz"),
    "npz-truncated": (lambda r: (r / "fem.npz").write_bytes((r / "fem.npz").read_bytes()[:300]),
                      "fem.npz", "not a readable npz"),
    "npz-header-bomb": (_header_bomb, "fem.npz", "declares (1099511627776,) float64"),
    "npz-object": (lambda r: _npz_edit(r / "fem.npz", t=np.array([{"a": 1}], dtype=object)),
                   "fem.npz", "holds Python objects"),
    "json-nested": (_nested, "fem.json", "nested too deeply"),
    "json-not-json": (lambda r: (r / "fem.json").write_text("{'mesh': 1"), "fem.json",
                      "not JSON"),
    "json-list": (lambda r: (r / "fem.json").write_text("[]"), "fem.json",
                  "must hold an object (a FEM solution's description), not a list"),
    "format": (lambda r: _json_edit(r / "fem.json", format="pinn.fem/9"), "fem.json",
               "format must be 'pinn.fem/1'"),
    "mesh": (lambda r: _json_edit(r / "fem.json", mesh="MeshQuad1"), "fem.json",
             'mesh must be one of MeshLine1, MeshTri1, MeshTet1, not the text "MeshQuad1"'),
    "mesh-list": (lambda r: _json_edit(r / "fem.json", mesh=["MeshLine1"]), "fem.json",
                  "mesh must be one of MeshLine1, MeshTri1, MeshTet1, not a list"),
    "fields-text": (lambda r: _json_edit(r / "fem.json", fields="u"), "fem.json",
                    'fields must be a list of names, not the text "u"'),
    "fields-twice": (lambda r: _json_edit(r / "fem.json", fields=["u", "u"]), "fem.json",
                     "fields must name each field once"),
    "degree-text": (lambda r: _json_edit(r / "fem.json", degrees={"u": "2"}), "fem.json",
                    'degrees["u"] must be an integer, not the text "2"'),
    "degree-9": (lambda r: _json_edit(r / "fem.json", degrees={"u": 9}), "fem.json",
                 'degrees["u"] must be one of 1, 2 (a MeshLine1 element), not 9'),
    "degree-missing": (lambda r: _json_edit(r / "fem.json", degrees={}), "fem.json",
                       'degrees["u"] must be one of 1, 2 (a MeshLine1 element), not missing'),
    "coords": (lambda r: _json_edit(r / "fem.json", coords=["x", "y"]), "fem.json",
               "coords must name the 1 coordinate(s) of a MeshLine1"),
    "time": (lambda r: _json_edit(r / "fem.json", time=5), "fem.json",
             "time must be text or null, not the number 5"),
    "time-not-a-coord": (lambda r: _json_edit(r / "fem.json", time="t"), "fem.json",
                         "coords must name the 1 coordinate(s) of a MeshLine1 and the time"),
    "seconds": (lambda r: _json_edit(r / "fem.json", solve_seconds="fast"), "fem.json",
                'solve_seconds must be a number, not the text "fast"'),
    "up-to-constant": (lambda r: _json_edit(r / "fem.json", up_to_constant=["p"]), "fem.json",
                       "up_to_constant names p, not among the fields (u)"),
    "info": (lambda r: _json_edit(r / "fem.json", info={"element": 5}), "fem.json",
             'info["element"] must be text or an object of texts or null, not the number 5'),
    "missing-key": (lambda r: (r / "fem.json").write_text('{"format": "pinn.fem/1"}'),
                    "fem.json", "mesh is missing"),
    "another-problem": (lambda r: _json_edit(r / "fem.json", fields=["v"], degrees={"v": 2}),
                        "fem.json", "a FEM solution of v in (x), not of the problem 'rod'"),
    "no-snapshots": (lambda r: _npz_edit(r / "fem.npz", snapshots=None), "fem.npz",
                     "no array 'snapshots'"),
    "p-2d": (lambda r: _npz_edit(r / "fem.npz", p=_wide(r, 2)), "fem.npz",
             "p must hold 1 coordinate(s) of at least 2 vertices (a MeshLine1), not an "
             "array of shape (2, 65)"),
    "p-nan": (lambda r: _npz_edit(r / "fem.npz", p=_wide(r, 1) * np.nan), "fem.npz",
              "p must hold finite coordinates, not [nan] (vertex 0)"),
    "t-float": (lambda r: _npz_edit(r / "fem.npz", t=np.zeros((2, 3))), "fem.npz",
                "t must be a 2-D array of integers (the mesh's cells), not 2-D float64"),
    "t-outside": (lambda r: _npz_edit(r / "fem.npz", t=np.array([[0], [65]])), "fem.npz",
                  "t names vertices 0..65, but p has 65 (0..64)"),
    "t-negative": (lambda r: _npz_edit(r / "fem.npz", t=np.array([[-1], [3]])), "fem.npz",
                   "t names vertices -1..3"),
    "t-flat-cell": (_flat, "fem.npz", "cell 0 of the mesh is flat"),
    "snapshots-width": (lambda r: _npz_edit(r / "fem.npz", snapshots=np.zeros((1, 128))),
                        "fem.npz", "snapshots have 128 values per step, the mesh and elements "
                                   "need 129"),
    "snapshots-1d": (lambda r: _npz_edit(r / "fem.npz", snapshots=np.zeros(129)), "fem.npz",
                     "snapshots must be a 2-D array of numbers"),
    "times-steady": (lambda r: _npz_edit(r / "fem.npz", times=np.zeros(1)), "fem.npz",
                     "times are stored but fem.json names no time coordinate"),
}


@pytest.mark.parametrize("case", sorted(FEM_RUNS))
def test_a_crafted_fem_run_folder_is_refused_naming_its_file(base, fem, tmp_path, capsys,
                                                             case):
    """export-fields (which builds the solution) and the Python API: one line naming the
    file, exit 2; nothing is written."""
    from pinn.fem import FEMSolution

    craft, name, says = FEM_RUNS[case]
    run = _fem_copy(fem, tmp_path)
    craft(run)
    before = sorted(p.name for p in run.iterdir())
    _refused(capsys, ["export-fields", run, "-f", "csv", "--out", tmp_path / "f.csv"],
             f"{run / name}: ", says)
    assert not (tmp_path / "f.csv").exists()
    assert sorted(p.name for p in run.iterdir()) == before
    if case != "another-problem":  # (the API without a problem: that check is the CLI's)
        with pytest.raises(io.BadFile, match="fem") as err:
            FEMSolution.load(run)
        assert str(err.value).startswith(f"{run / name}: "), err.value


def test_the_fem_run_as_written_reads_back(base, fem, tmp_path, capsys):
    from pinn import config
    from pinn.compare import check_run
    from pinn.fem import FEMSolution

    sol = FEMSolution.load(fem)
    assert abs(sol.evaluate([[0.5]])["u"][0] - 0.125) < 1e-9  # x(1 - x)/2 at 1/2, P2: exact
    check_run(fem, config.load(str(base / "rod.yaml")).problem)  # what compare --fem reads
    assert main(["export-fields", str(fem), "-f", "csv", "--out", str(tmp_path / "f.csv"),
                 "--quiet"]) == 0
    assert (tmp_path / "f.csv").read_text().splitlines()[0] == "x,u,u_exact,u_error"


def _bad_grid(run, **changes):
    _npz_edit(run / "solution_grid.npz", **changes)


COMPARED = {  # name: (how the --fem folder is crafted, the file named, what the line says)
    "fem-header-bomb": (_header_bomb, "fem.npz", "declares"),
    "fem-another-problem": (lambda r: _json_edit(r / "fem.json", coords=["y"]), "fem.json",
                            "not of the problem 'rod'"),
    "fem-json-fifo": (lambda r: _special(r, "fem.json", "fifo"), "fem.json", "a FIFO"),
    "grid-field-bomb": (lambda r: _bad_grid(r, field_u=np.zeros((201, 1))),
                        "solution_grid.npz", "field_u must hold one number per point (201)"),
    "grid-no-mask": (lambda r: _bad_grid(r, mask=None), "solution_grid.npz",
                     "no array 'mask'"),
    "grid-shape": (lambda r: _bad_grid(r, shape=np.array([0])), "solution_grid.npz",
                   "shape must be the grid's nodes per axis"),
    "metrics-dev-zero": (lambda r: _special(r, "metrics.json", "zero"), "metrics.json",
                         "a character device"),
}


@pytest.mark.parametrize("case", sorted(COMPARED))
def test_compare_refuses_a_crafted_fem_run_before_any_work(base, fem, tmp_path, capsys, case):
    """``pinn compare --fem RUN`` reads the run before it trains or refines anything: one
    line naming the file, and no report folder."""
    craft, name, says = COMPARED[case]
    run = _fem_copy(fem, tmp_path)
    craft(run)
    _refused(capsys, ["compare", base / "rod.yaml", "--pinn", base / "run", "--fem", run,
                      "--out", tmp_path / "c", "-q"], f"{run / name}: ", says)
    assert not (tmp_path / "c").exists()


def test_what_a_fem_run_folder_is_not(base, fem, tmp_path, capsys):
    """A FEM run is no PINN (plot, predict); a folder without metrics is no finished run
    (compare --fem); a FEM run without its fem.npz says which file is missing."""
    for args in (["plot", fem], ["predict", fem, "--points", base / "pts.csv"]):
        _refused(capsys, args, f"{fem}: a `pinn fem` run (fem.npz), not a trained PINN",
                 f"pinn export-fields {fem}")
    empty = tmp_path / "empty"
    empty.mkdir()
    compare = ["compare", base / "rod.yaml", "--pinn", base / "run", "--out", tmp_path / "c",
               "-q", "--fem"]
    _refused(capsys, [*compare, empty], f"--fem {empty}: no metrics.json there")
    run = _fem_copy(fem, tmp_path)
    (run / "fem.npz").unlink()
    _refused(capsys, [*compare, run], f"--fem {run}: no fem.npz there")
    assert not (tmp_path / "c").exists()
