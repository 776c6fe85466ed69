"""Command-line details: --version, -q explained on every command that has it, predict
evaluating expressions with the digits the run's precision holds, and the one-name
coords unpacking error."""

import re

import numpy as np
import pytest

import pinn
from pinn.cli import app, main

x = pinn.coords("x")
u = pinn.field("u")


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"pinn {pinn.__version__}"


@pytest.mark.parametrize("command", ["solve", "fem", "compare", "export"])
def test_quiet_is_explained_on_every_command(command, capsys):
    if command not in {c.name or c.callback.__name__ for c in app.registered_commands}:
        pytest.skip(f"no `pinn {command}` in this tree")
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"-q, --quiet\s+\S", text), text


def test_solve_help_names_the_log_options(capsys):
    assert main(["solve", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--log-format" in text and "json" in text and "--log" in text and "tensorboard" in text


def test_bad_log_options_are_one_line_errors(capsys, tmp_path):
    assert main(["solve", "problems/heat2d.yaml", "--log-format", "xml"]) == 2
    assert "use one of auto, bar, plain, json" in capsys.readouterr().err
    assert main(["solve", "problems/heat2d.yaml", "--log", "wandb"]) == 2
    assert "use one of tensorboard" in capsys.readouterr().err


@pytest.fixture(scope="module", params=[32, 64])
def run_folder(request, tmp_path_factory):
    problem = pinn.Problem(domain=pinn.Interval(0, 1),
                           equations={"poisson": pinn.D(u, x, 2) + pinn.sin(pinn.pi * x)},
                           conditions={"ends": pinn.Dirichlet(u, 0, on="boundary", hard=True)},
                           name="p1")
    out = tmp_path_factory.mktemp(f"run{request.param}")
    training = pinn.Training(stages=[pinn.Stage(pinn.Adam(lr=1e-2), 5)],
                             points=pinn.Points(interior=16, boundary=4))
    sol = pinn.solve(problem, pinn.MLP(width=8, depth=1), training, precision=request.param,
                     progress=False)
    sol.save(out, report=False)
    return out, request.param, sol


def test_predict_evaluates_expressions_with_the_runs_digits(run_folder, tmp_path, capsys):
    out, precision, sol = run_folder
    pts = tmp_path / "pts.csv"
    pts.write_text("x\n0.1\n0.25\n")
    assert main(["predict", str(out), "--points", str(pts), "--outputs", "u,u_x,D(u, x, 2)"]
                ) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == 'x,u,u_x,"D(u, x, 2)"'  # a name with a comma quoted (CSV)
    assert lines[1].startswith("0.1,")  # the points as given, not 0.10000000000000001
    values = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    want = sol.evaluate(np.array([[0.1], [0.25]]), {"u_x": "u_x", "u_xx": "D(u, x, 2)"})
    np.testing.assert_allclose(values[:, 2], want["u_x"], rtol=1e-7 if precision == 32 else 0)
    digits = max(len(re.sub(r"e.*|[-.]", "", v).lstrip("0")) for v in lines[1].split(",")[1:])
    assert digits <= (9 if precision == 32 else 17)
    assert digits >= (7 if precision == 32 else 15)


def test_predict_names_a_bad_expression(run_folder, tmp_path, capsys):
    out, _, _ = run_folder
    pts = tmp_path / "pts.csv"
    pts.write_text("x\n0.1\n")
    assert main(["predict", str(out), "--points", str(pts), "--outputs", "u_q"]) == 2
    assert "u_q" in capsys.readouterr().err


def test_unpacking_one_coordinate_names_the_fix():
    with pytest.raises(TypeError, match=r"write `x = pinn.coords\('x'\)`"):
        (y,) = pinn.coords("x")
    with pytest.raises(TypeError, match=r"write `u = pinn.field\('u'\)`"):
        (v,) = pinn.field("u")
    a, b = pinn.coords("a b")
    assert (a.name, b.name) == ("a", "b")
    assert [str(c) for c in pinn.vector(x, 2 * x)] == [str(pinn.vector(x, 2 * x)[i])
                                                       for i in range(2)]


def test_validate_prints_a_many_holed_domain_in_one_short_line():
    """A plate minus 17 disks (PINNacle's Heat 2d-CG) was printed as seventeen nested
    Difference reprs; now the chain is flattened and its like pieces counted."""
    from pinn.geometry import Disk, Rectangle, SpaceTime, TimeInterval
    from pinn.report.summary import shape_text

    plate = Rectangle((-8.0, -12.0), (8.0, 12.0))
    shape = plate
    for k in range(17):
        shape = shape - Disk((float(k % 4), float(k // 4)), 0.1 + 0.01 * k)
    assert shape_text(shape) == f"{plate!r} minus 17 disks"
    assert shape_text(SpaceTime(shape, TimeInterval(0.0, 3.0))) == (
        f"{plate!r} minus 17 disks x time [0, 3]")
    two = Disk((0.0, 0.0), 1.0) | Rectangle((0.0, 0.0), (1.0, 1.0))
    assert shape_text(two).startswith("union of ") and "Disk(" in shape_text(two)
