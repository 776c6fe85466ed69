"""`pinn export-fields` (VTU, XDMF, CSV, NetCDF), Solution.to_xarray / plot / report and
the self-contained report.html, at tiny sizes.

The values read back are compared with what the runs recorded by another path: the PINN's
``solution_grid.npz`` (written when it was trained), the FEM solution evaluated at its
vertices by its cell search and basis functions, and the closed-form solutions.
"""

from __future__ import annotations

import base64
import csv
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import pinn
import pinn.config
from pinn.cli import main
from pinn.fem import FEMSolution
from pinn.report import load_grid
from pinn.solution import Solution

meshio = pytest.importorskip("meshio")
xr = pytest.importorskip("xarray")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAT = os.path.join(ROOT, "problems", "heat2d.yaml")
POISSON = os.path.join(ROOT, "problems", "poisson2d.yaml")
ALPHA = 0.05  # heat2d's diffusivity


def heat_exact(x, y, t):
    return np.exp(-2 * np.pi**2 * ALPHA * t) * np.sin(np.pi * x) * np.sin(np.pi * y)


def poisson_exact(x, y):
    return np.sin(np.pi * x) * np.sin(np.pi * y)


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def cli(*argv):
    """``pinn ARGV`` outside a test's capsys (for module fixtures)."""
    rc = main([str(a) for a in argv])
    assert rc == 0, argv


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Four run folders: heat2d trained for 10 Adam steps by `pinn solve`, poisson2d's
    untrained network saved as a run (Solution.save), and `pinn fem` of both on a 6x6
    mesh."""
    base = tmp_path_factory.mktemp("runs")
    sets = ["training.stages=[{adam: {lr: 1.0e-3}, steps: 10}]",
            "training.points.interior=128", "training.points.boundary=32",
            "training.points.initial=32", "training.chunk=10", "evaluation.resolution=10"]
    cli("solve", HEAT, "--out", base / "heat", "--quiet",
        *[a for s in sets for a in ("--set", s)])
    built = pinn.config.load(POISSON, ["evaluation.resolution=12"])
    setup = pinn.setup(built.problem, built.model(), built.training(), progress=False,
                       precision=built.precision)
    Solution(built.problem, built.model(), setup.params, seed=built.training().seed,
             resolution=12, precision=built.precision).save(base / "poisson")
    for name, path, extra in (("heat-fem", HEAT, ["--dt", "0.1"]),
                              ("poisson-fem", POISSON, [])):
        cli("fem", path, "--cells", "6", "--out", base / name, "--quiet", *extra,
            "--set", "evaluation.resolution=10")
    return base


def test_vtu_of_a_pinn_run_holds_its_grid_values(capsys, runs):
    rc, out, err = run(capsys, "export-fields", runs / "poisson", "--format", "vtu")
    assert rc == 0, err
    path = runs / "poisson" / "fields" / "poisson2d.vtu"
    assert out.startswith(f"{path}: 144 points: u, u_exact, u_error")
    m = meshio.read(path)
    pts, fields, meta = load_grid(runs / "poisson" / "solution_grid.npz")
    assert meta["shape"] == (12, 12) and meta["mask"].all()
    np.testing.assert_array_equal(m.points[:, :2], pts)
    assert np.all(m.points[:, 2] == 0)
    u = m.point_data["u"]
    assert np.std(u) > 1e-3  # an untrained network: not zero, not constant
    np.testing.assert_allclose(u, fields["u"], rtol=1e-6, atol=1e-7)
    exact = poisson_exact(*pts.T)
    np.testing.assert_allclose(m.point_data["u_exact"], exact, atol=1e-15)
    np.testing.assert_allclose(m.point_data["u_error"], u - exact, atol=1e-12)
    (kind, quads), = [(b.type, b.data) for b in m.cells]
    assert kind == "quad" and quads.shape == (11 * 11, 4)
    # each quad: corners (i,j), (i+1,j), (i+1,j+1), (i,j+1), counter-clockwise
    c = m.points[quads[:, :, None], :2].squeeze(2)
    h = 1 / 11
    np.testing.assert_allclose(c[:, 1] - c[:, 0], np.tile([h, 0], (len(c), 1)), atol=1e-12)
    np.testing.assert_allclose(c[:, 2] - c[:, 0], np.tile([h, h], (len(c), 1)), atol=1e-12)


def test_vtu_of_a_fem_run_holds_its_vertex_values(capsys, runs):
    rc, _, err = run(capsys, "export-fields", runs / "poisson-fem", "-f", "vtu")
    assert rc == 0, err
    m = meshio.read(runs / "poisson-fem" / "fields" / "poisson2d-fem.vtu")
    fem = FEMSolution.load(runs / "poisson-fem")
    vertices = fem.mesh.p.T
    np.testing.assert_array_equal(m.points[:, :2], vertices)
    (kind, tri), = [(b.type, b.data) for b in m.cells]
    assert kind == "triangle"
    np.testing.assert_array_equal(tri, fem.mesh.t.T)
    # the P2 solution interpolated at the vertices (cell search + basis functions)
    want = fem.evaluate(vertices)["u"]
    assert np.max(np.abs(want)) > 0.9  # sin(pi x) sin(pi y) peaks at 1
    np.testing.assert_allclose(m.point_data["u"], want, atol=1e-12)
    exact = poisson_exact(*vertices.T)
    np.testing.assert_allclose(m.point_data["u_exact"], exact, atol=1e-15)
    np.testing.assert_allclose(m.point_data["u_error"], want - exact, atol=1e-12)
    assert np.max(np.abs(want - exact)) < 1e-2  # P2 on a 6x6 mesh


def _pvd(path):
    """``[(time, vtu path)]`` of a ParaView collection."""
    root = ET.parse(path).getroot()
    assert root.attrib["type"] == "Collection"
    return [(float(d.attrib["timestep"]), path.parent / d.attrib["file"])
            for d in root.iter("DataSet")]


def test_pinn_time_series_as_pvd_and_xdmf(capsys, runs):
    pts, fields, meta = load_grid(runs / "heat" / "solution_grid.npz")
    assert meta["shape"] == (10, 10, 11) and meta["mask"].all()
    times = np.linspace(0, 1, 11)
    space = pts.reshape(100, 11, 3)[:, 0, :2]
    u = fields["u"].reshape(100, 11)  # the grid's nodes: time fastest
    rc, _, err = run(capsys, "export-fields", runs / "heat")
    assert rc == 0, err
    series = _pvd(runs / "heat" / "fields" / "heat2d.pvd")
    assert [t for t, _ in series] == pytest.approx(times)
    for k, (t, vtu) in enumerate(series):
        assert vtu.parent.name == "heat2d_vtu"
        m = meshio.read(vtu)
        np.testing.assert_array_equal(m.points[:, :2], space)
        np.testing.assert_allclose(m.point_data["u"], u[:, k], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(m.point_data["u_exact"], heat_exact(*space.T, t),
                                   atol=1e-15)
    rc, _, err = run(capsys, "export-fields", runs / "heat", "-f", "xdmf", "--out",
                     runs / "heat" / "x" / "heat.xdmf")
    assert rc == 0, err
    with meshio.xdmf.TimeSeriesReader(runs / "heat" / "x" / "heat.xdmf") as reader:
        points, cells = reader.read_points_cells()
        np.testing.assert_array_equal(points[:, :2], space)
        assert reader.num_steps == 11
        for k in range(reader.num_steps):
            t, pd, _ = reader.read_data(k)
            assert t == pytest.approx(times[k])
            np.testing.assert_allclose(pd["u"], u[:, k], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(pd["u_error"], pd["u"] - heat_exact(*space.T, t),
                                       atol=1e-12)


def test_fem_time_series_as_pvd(capsys, runs):
    rc, _, err = run(capsys, "export-fields", runs / "heat-fem")
    assert rc == 0, err
    fem = FEMSolution.load(runs / "heat-fem")
    series = _pvd(runs / "heat-fem" / "fields" / "heat2d-fem.pvd")
    np.testing.assert_allclose([t for t, _ in series], fem.times)
    assert len(series) == 11  # dt 0.1 over [0, 1]
    vertices = fem.mesh.p.T
    for t, vtu in series[::5]:
        m = meshio.read(vtu)
        want = fem.evaluate(np.column_stack([vertices, np.full(len(vertices), t)]))["u"]
        np.testing.assert_allclose(m.point_data["u"], want, atol=1e-12)
        np.testing.assert_allclose(m.point_data["u_exact"], heat_exact(*vertices.T, t),
                                   atol=1e-15)


def test_to_xarray_round_trips_through_netcdf(runs, tmp_path):
    sol = Solution.load(runs / "poisson")
    ds = sol.to_xarray()
    assert ds["u"].dims == ("x", "y") and set(ds.data_vars) == {"u", "u_exact", "u_error"}
    np.testing.assert_allclose(ds["x"], np.linspace(0, 1, 12))
    _, fields, _ = load_grid(runs / "poisson" / "solution_grid.npz")
    np.testing.assert_allclose(ds["u"].values.reshape(-1), fields["u"], rtol=1e-6, atol=1e-7)
    X, Y = np.meshgrid(ds["x"], ds["y"], indexing="ij")
    np.testing.assert_allclose(ds["u_exact"], poisson_exact(X, Y), atol=1e-15)
    ds.to_netcdf(tmp_path / "p.nc")
    with xr.open_dataset(tmp_path / "p.nc") as back:
        for name in ("u", "u_exact", "u_error", "x", "y"):
            np.testing.assert_array_equal(back[name].values, ds[name].values)
        assert back.attrs["problem"] == "poisson2d" and back.attrs["compared_with"] == "exact"
    # a time-dependent problem: time is the last dimension
    heat = Solution.load(runs / "heat").to_xarray()
    assert heat["u"].dims == ("x", "y", "t") and heat["u"].shape == (10, 10, 11)


def test_netcdf_of_a_fem_run(capsys, runs):
    out = runs / "heat-fem" / "n.nc"
    rc, _, err = run(capsys, "export-fields", runs / "heat-fem", "-f", "netcdf", "-o", out)
    assert rc == 0, err
    fem = FEMSolution.load(runs / "heat-fem")
    with xr.open_dataset(out) as ds:
        assert ds["u"].dims == ("node", "t")
        np.testing.assert_array_equal(ds["x"], fem.mesh.p[0])
        np.testing.assert_array_equal(ds["t"], fem.times)
        np.testing.assert_array_equal(ds["cells"], fem.mesh.t.T)
        k = 7
        want = fem.evaluate(np.column_stack([fem.mesh.p.T, np.full(fem.mesh.p.shape[1],
                                                                    fem.times[k])]))["u"]
        np.testing.assert_allclose(ds["u"].values[:, k], want, atol=1e-12)


def test_fem_on_the_evaluation_grid(capsys, runs):
    out = runs / "heat-fem" / "grid.nc"
    rc, _, err = run(capsys, "export-fields", runs / "heat-fem", "-f", "netcdf", "-o", out,
                     "--resolution", "5")
    assert rc == 0, err
    fem = FEMSolution.load(runs / "heat-fem")
    with xr.open_dataset(out) as ds:
        assert ds["u"].dims == ("x", "y", "t") and ds["u"].shape == (5, 5, 11)
        assert ds.attrs["method"] == "FEM"
        X, Y, T = np.meshgrid(ds["x"], ds["y"], ds["t"], indexing="ij")
        pts = np.column_stack([X.ravel(), Y.ravel(), T.ravel()])
        np.testing.assert_allclose(ds["u"].values.ravel(), fem.evaluate(pts)["u"],
                                   atol=1e-12)
        np.testing.assert_allclose(ds["u_exact"].values.ravel(), heat_exact(*pts.T),
                                   atol=1e-15)


def test_csv_round_trip(capsys, runs):
    rc, _, err = run(capsys, "export-fields", runs / "heat", "-f", "csv", "-o",
                     runs / "heat" / "heat.csv")
    assert rc == 0, err
    with open(runs / "heat" / "heat.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["x", "y", "t", "u", "u_exact", "u_error"]
    table = np.array(rows[1:], dtype=np.float64)
    assert table.shape == (100 * 11, 6)
    x, y, t, u, exact, error = table.T
    np.testing.assert_allclose(exact, heat_exact(x, y, t), atol=1e-15)
    np.testing.assert_array_equal(error, u - exact)  # 17 digits: floats read back the same
    # the same points and values as the run's grid (in another order: time slowest here)
    pts, fields, _ = load_grid(runs / "heat" / "solution_grid.npz")
    order = np.lexsort((pts[:, 1], pts[:, 0], pts[:, 2]))
    np.testing.assert_array_equal(table[:, :3], pts[order])
    np.testing.assert_allclose(u, fields["u"][order], rtol=1e-6, atol=1e-7)


def test_html_report_is_self_contained(runs, tmp_path):
    from pinn.compare import write_comparison

    write_comparison(tmp_path, pinn.config.load(HEAT).problem,
                     {"PINN": runs / "heat", "FEM": runs / "heat-fem"}, resolution=10)
    for folder, name in ((runs / "heat", "report"), (runs / "heat-fem", "report"),
                         (tmp_path, "compare")):
        md = (folder / f"{name}.md").read_text()
        page = (folder / f"{name}.html").read_text()
        images = re.findall(r'<img src="([^"]*)"', page)
        assert len(images) == md.count("![") >= 1
        for src in images:
            assert src.startswith("data:image/png;base64,")
            assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<table>" in page and "L2" in page
        assert not re.search(r'src="(?!data:)', page)


def test_solution_plot_and_report(runs, tmp_path):
    from matplotlib.figure import Figure

    sol = Solution.load(runs / "poisson")
    fig = sol.plot()
    assert isinstance(fig, Figure)
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"  # what a notebook shows
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["u: PINN", "u: exact", "u: |error|"]
    np.testing.assert_allclose(panels[0].images[0].get_array().T.filled(np.nan),
                               sol.to_xarray()["u"].values.T.T, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="fields are u"):
        sol.plot("v")
    path = sol.report(tmp_path / "rep")
    assert path == tmp_path / "rep" / "report.md"
    for f in ("report.md", "report.html", "field_u.png", "metrics.json"):
        assert (tmp_path / "rep" / f).exists(), f
    assert "(field_u.png)" in path.read_text()


def _listing(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("case", ["missing", "not_a_run", "format", "suffix", "under_a_file",
                                  "series_as_vtu", "resolution"])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, runs, tmp_path, case):
    (tmp_path / "empty").mkdir()
    (tmp_path / "afile").write_text("x")
    fem = runs / "heat-fem"
    argv = {
        "missing": [tmp_path / "nope"],
        "not_a_run": [tmp_path / "empty"],
        "format": [fem, "--format", "vtk"],
        "suffix": [fem, "-f", "netcdf", "--out", tmp_path / "f.vtu"],
        "under_a_file": [fem, "-f", "csv", "--out", tmp_path / "afile" / "f.csv"],
        "series_as_vtu": [fem, "-f", "vtu", "--out", tmp_path / "f.vtu"],
        "resolution": [fem, "--resolution", "1"],
    }[case]
    before, before_fem = _listing(tmp_path), _listing(fem)
    rc, out, err = run(capsys, "export-fields", *argv)
    assert rc == 2, (out, err)
    assert err.startswith("pinn: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    hint = {"missing": "no such run folder", "not_a_run": "not a run folder",
            "format": "choose one of vtu, xdmf, csv, netcdf", "suffix": "name it f.nc",
            "under_a_file": "is a file, not a folder", "series_as_vtu": "name it f.pvd",
            "resolution": "at least 2"}[case]
    assert hint in err
    assert _listing(tmp_path) == before and _listing(fem) == before_fem


DOMAINS = {  # domain and exact solution (as in tests/test_cli_report.py)
    "1d": ("{interval: [0, 1]}", "sin(pi*x)"),
    "l_shape": ("{l_shape: {}}", "x*y"),
    "3d": ("{box: {min: [0, 0, 0], max: [1, 2, 1]}}", "x*y*z"),
    "1d_time": ("{interval: [-1, 1], time: [0, 1]}", "exp(-t)*sin(pi*x)"),
}


@pytest.mark.parametrize("kind", sorted(DOMAINS))
def test_grid_cells_for_every_dimension(tmp_path, kind):
    from pinn.evaluate import score, truth
    from pinn.report import fields as F

    dom, exact = DOMAINS[kind]
    p = pinn.config.load(f"{kind}.yaml", text=f"domain: {dom}\nequations: {{eq: \"u - "
                         f"({exact})\"}}\nexact: {{u: \"{exact}\"}}\n").problem

    def predict(points):  # the truth plus a known error
        return {"u": truth(p, points).values["u"] + 1e-3 * points[:, 0]}

    s = score(p, predict, resolution=9)
    fields = F.from_score(s, problem=kind)
    path = F.write(fields, F.target(tmp_path, "vtu", default_dir=tmp_path, stem=kind,
                                    series=fields.is_series), "vtu")[0]
    vtus = [v for _, v in _pvd(path)] if fields.is_series else [path]
    assert len(vtus) == (9 if kind == "1d_time" else 1)
    m = meshio.read(vtus[-1])
    (cell, conn), = [(b.type, b.data) for b in m.cells]
    xyz = m.points[conn]  # cells, corners, 3
    if kind in ("1d", "1d_time"):
        assert cell == "line" and len(conn) == 8
        assert np.all(xyz[:, 1, 0] > xyz[:, 0, 0])
    elif kind == "l_shape":
        assert cell == "quad"
        assert len(conn) == 8 * 8 - 4 * 4  # the cut quarter's cells are left out
        centre = xyz.mean(axis=1)
        assert not np.any((centre[:, 0] > 0) & (centre[:, 1] < 0))
        outside = ~s.grid.mask
        assert np.all(np.isnan(m.point_data["u"][outside]))
        assert np.all(np.isfinite(m.point_data["u"][~outside]))
    else:
        assert cell == "hexahedron" and len(conn) == 8**3
        a, b, d = (xyz[:, k] - xyz[:, 0] for k in (1, 3, 4))
        volume = np.einsum("ij,ij->i", np.cross(a, b), d)  # VTK's order: positive
        np.testing.assert_allclose(volume, (1 / 8) * (2 / 8) * (1 / 8), rtol=1e-12)
    inside = np.isfinite(m.point_data["u"])
    x = m.points[inside, 0]
    np.testing.assert_allclose(m.point_data["u_error"][inside], 1e-3 * x, atol=1e-12)


def test_more_than_three_space_dimensions_go_to_csv_and_netcdf(tmp_path):
    from pinn.report import fields as F

    rng = np.random.default_rng(0)
    points = rng.uniform(size=(6, 4))
    fields = F.Fields(("a", "b", "c", "d"), points, (), {"u": points.sum(axis=1)[None]})
    for fmt, name in (("vtu", "f.vtu"), ("xdmf", "f.xdmf")):
        with pytest.raises(ValueError, match="use --format csv or netcdf"):
            F.write(fields, tmp_path / name, fmt)
    assert not list(tmp_path.iterdir())
    F.write(fields, tmp_path / "f.csv", "csv")
    table = np.loadtxt(tmp_path / "f.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(table[:, :4], points)
    np.testing.assert_array_equal(table[:, 4], points.sum(axis=1))
