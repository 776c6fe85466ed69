"""The command line: exit codes, one-line errors, validate, info (no training here)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from pinn.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEMS = sorted(glob.glob(os.path.join(ROOT, "problems", "*.yaml")))
HEAT = os.path.join(ROOT, "problems", "heat2d.yaml")


def run(capsys, *argv):
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def heat_text(old: str = "", new: str = "") -> str:
    text = open(HEAT, encoding="utf-8").read()
    if old:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


@pytest.mark.parametrize("command", ["solve", "validate", "plot", "predict", "info", "fem",
                                     "compare"])
def test_every_command_has_help_with_examples(capsys, command):
    rc, out, err = run(capsys, command, "--help")
    assert rc == 0 and err == ""
    assert "Example" in out


def test_no_arguments_shows_help(capsys):
    rc, out, _ = run(capsys)
    assert rc in (0, 2) and "solve" in out


BROKEN = {
    # name: (text, needle on the line named, text expected in the message)
    "unknown_key": (heat_text("model: {mlp:", "modle: {mlp:"), "modle:",
                    "unknown key 'modle' (did you mean 'model'?)"),
    "unknown_nested_key": (heat_text("{dirichlet: {u: 0}, on: boundary, hard: true}",
                                     "{dirichlet: {u: 0}, on: boundary, hard: true, wieght: 2}"),
                           "walls:",
                           "conditions.walls: unknown key 'wieght' (did you mean 'weight'?)"),
    "wrong_type": (heat_text("depth: 3", "depth: [3]"), "depth:",
                   "model.mlp.depth: expected a whole number, got a list"),
    "undeclared_name": (heat_text("u_t - alpha*", "u_t - beta*"), "heat:",
                        "equations.heat: unknown name 'beta'"),
    "undeclared_field": (heat_text("{dirichlet: {u: 0}", "{dirichlet: {w: 0}"), "walls:",
                         "conditions.walls.dirichlet: unknown field 'w' (fields: u)"),
    "bad_expression": (heat_text("u_t - alpha*(u_xx + u_yy)", "u_t - alpha*(u_xx + + u_yy"),
                       "heat:", "equations.heat:"),
    "missing_boundary": (heat_text("on: boundary", "on: north"), "walls:",
                         "unknown boundary part 'north'"),
    "huge_number": (heat_text("alpha: 0.05", "alpha: 1.0e999"), "params:",
                    "params.alpha: the number is too large"),
    "huge_count": (heat_text("interior: 2048", "interior: 99999999999999999999"), "interior",
                   "training.points.interior: must be ≤"),
    "negative_count": (heat_text("interior: 2048", "interior: -2048"), "interior",
                       "training.points.interior: must be ≥ 1, got -2048"),
    "bad_yaml": (heat_text("fields: [u]", "fields: [u"), None, "YAML syntax error"),
    "list_not_mapping": ("- heat\n- wave\n", None, "not a list"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_files_give_one_line_and_exit_2(capsys, tmp_path, name):
    text, needle, expected = BROKEN[name]
    f = tmp_path / "bad.yaml"
    f.write_text(text, encoding="utf-8")
    rc, out, err = run(capsys, "validate", str(f))
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("pinn: bad.yaml")
    if needle is not None:
        assert err.startswith(f"pinn: bad.yaml:{line_of(text, needle)}"), err
    assert expected in err, err
    # solve stops at the same place, before any training
    rc2, _, err2 = run(capsys, "solve", str(f), "--out", str(tmp_path / "run"))
    assert rc2 == 2 and err2 == err


def test_expression_errors_carry_the_column(capsys, tmp_path):
    text = heat_text("u_t - alpha*", "u_t - alhpa*")
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    rc, _, err = run(capsys, "validate", str(f))
    line = line_of(text, "heat:")
    col = text.splitlines()[line - 1].index("alhpa") + 1
    assert rc == 2
    assert err.startswith(f"pinn: bad.yaml:{line}:{col} equations.heat: unknown name 'alhpa': "
                          "did you mean 'alpha'?"), err


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00"],
                         ids=["empty", "binary"])
def test_empty_and_binary_files(capsys, tmp_path, content):
    f = tmp_path / "bad.yaml"
    f.write_bytes(content)
    rc, _, err = run(capsys, "validate", str(f))
    assert rc == 2 and err.count("\n") == 1 and err.startswith("pinn: bad.yaml")


def test_missing_file_and_bad_override(capsys, tmp_path):
    rc, _, err = run(capsys, "validate", str(tmp_path / "nope.yaml"))
    assert rc == 2 and "no such file" in err and err.count("\n") == 1
    rc, _, err = run(capsys, "validate", HEAT, "--set", "training.stages.0.steps=-1")
    assert rc == 2
    assert err.startswith("pinn: --set training.stages.0.steps=-1 training.stages.0.steps: "
                          "must be ≥ 0"), err
    rc, _, err = run(capsys, "solve", HEAT, "--precision", "16", "--out", str(tmp_path / "r"))
    assert rc == 2 and err.startswith("pinn: --precision 16: give 32 or 64"), err
    assert err.count("\n") == 1
    rc, _, err = run(capsys, "solve", HEAT, "--bogus")
    assert rc == 2 and "--bogus" in err and err.count("\n") == 1


def test_bad_input_through_the_console_script(tmp_path):
    """The real process: exit code 2, one line on stderr, no traceback."""
    f = tmp_path / "bad.yaml"
    f.write_bytes(b"\x00\xff binary \x00")
    proc = subprocess.run([sys.executable, "-m", "pinn.cli", "validate", str(f)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "bad.yaml" in proc.stderr and "binary" in proc.stderr


@pytest.mark.parametrize("path", PROBLEMS, ids=[os.path.basename(p) for p in PROBLEMS])
def test_every_problem_validates(capsys, path):
    rc, out, err = run(capsys, "validate", path, "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["ok"] is True
    for c in result["manufactured"]:
        assert c["ok"], c


def test_validate_reports_the_manufactured_check(capsys):
    rc, out, _ = run(capsys, "validate", HEAT)
    assert rc == 0
    assert "manufactured-solution check" in out
    assert out.count(" ok ") >= 3


def test_validate_catches_a_sign_error(capsys, tmp_path):
    f = tmp_path / "heat_sign.yaml"
    f.write_text(heat_text("u_t - alpha*", "u_t + alpha*"))
    rc, out, err = run(capsys, "validate", str(f), "--json")
    assert rc == 2
    result = json.loads(out)
    heat = next(c for c in result["manufactured"] if c["name"] == "heat")
    # residual 2*u_t = -4 pi^2 alpha u: of the order of the terms, not round-off
    assert not heat["ok"] and heat["max_residual"] > 0.5
    assert "does not satisfy heat" in err and err.count("\n") == 1


DIFFUSION = """coords: [x, t]
fields: [u]
params: {C: {value: 2, learnable: true}}
domain: {interval: [0, 1], time: [0, 1]}
equations: {diffusion: "u_t - C*u_xx"}
conditions: {walls: {dirichlet: {u: 0}}, start: {initial: {u: "sin(pi*x)"}}}
exact: {u: "exp(-pi^2*t)*sin(pi*x)"}
"""


def test_validate_fits_a_learnable_parameter_to_the_exact_solution(capsys, tmp_path):
    """An inverse problem u_t = C u_xx (the truth C = 1, the initial guess 2): the check
    fits C to the exact solution instead of refusing the file at C = 2."""
    f = tmp_path / "diffusion.yaml"
    f.write_text(DIFFUSION)
    rc, out, err = run(capsys, "validate", str(f), "--json")
    assert rc == 0, err
    (eq,) = [c for c in json.loads(out)["manufactured"] if c["name"] == "diffusion"]
    assert eq["ok"] and eq["max_residual"] < 1e-12
    assert eq["params"]["C"] == pytest.approx(1.0, abs=1e-10)
    rc, out, err = run(capsys, "validate", str(f))
    assert rc == 0 and "fitted to the exact solution: C = 1 (initial 2)" in out, out
    # no value of C makes a wrong equation hold: refused, the best fit named
    f.write_text(DIFFUSION.replace("u_t - C*u_xx", "u_t - C*u_xx + 1"))
    rc, out, err = run(capsys, "validate", str(f))
    assert rc == 2 and "does not satisfy diffusion for any value of C (best fit" in err, err
    assert "FAIL diffusion" in out


def test_validate_takes_a_non_affine_learnable_parameter_as_given(capsys, tmp_path):
    """u_t = C^2 u_xx is not affine in C: the check says it took C's initial value and
    does not refuse the file."""
    f = tmp_path / "diffusion.yaml"
    f.write_text(DIFFUSION.replace("C*u_xx", "C^2*u_xx"))
    rc, out, err = run(capsys, "validate", str(f))
    assert rc == 0, err
    assert "warning: the manufactured-solution check took the learnable parameters at " \
           "their initial values (C = 2)" in err
    assert "--   diffusion" in out and "C = 2 as initially given: not affine" in out


def test_validate_json_on_an_invalid_file(capsys, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(heat_text("depth: 3", "depth: deep").replace("width: 20", "width: -1"))
    rc, out, err = run(capsys, "validate", str(f), "--json")
    assert rc == 2
    result = json.loads(out)
    assert result["ok"] is False
    assert [e["path"] for e in result["errors"]] == ["model.mlp.width", "model.mlp.depth"]
    assert all(e["line"] == line_of(f.read_text(), "mlp") for e in result["errors"])


def test_info(capsys):
    rc, out, _ = run(capsys, "info", "--json")
    assert rc == 0
    d = json.loads(out)
    assert d["versions"]["jax"] and d["devices"]
    assert d["precision"].startswith("float32")


def test_info_measures_the_planned_run(capsys, tmp_path):
    """A file without ``training:`` trains on the plan's points (by dimension), and
    ``pinn info``'s memory per point is measured on that run, not on the YAML's defaults."""
    f = tmp_path / "p1d.yaml"
    f.write_text("name: p1d\ncoords: [x]\nfields: [u]\ndomain: {interval: [0, 1]}\n"
                 "equations: {p: \"u_xx + 1\"}\n"
                 "conditions: {ends: {dirichlet: {u: 0}, on: boundary}}\n")
    rc, out, _ = run(capsys, "info", str(f), "--json")
    assert rc == 0
    # the plan's 1D interior points; the ends are built into the network (no boundary term)
    assert json.loads(out)["memory"]["points"] == 1024


def test_malloc_switch(monkeypatch):
    from pinn.cli import tune_malloc

    monkeypatch.delenv("PINN_MALLOC", raising=False)
    assert tune_malloc() is False  # off unless asked for
    monkeypatch.setenv("PINN_MALLOC", "1")
    assert tune_malloc() is sys.platform.startswith("linux")


def test_predict_and_plot_need_a_finished_run(capsys, tmp_path):
    rc, _, err = run(capsys, "plot", str(tmp_path))
    assert rc == 2 and "no solution.json" in err
    rc, _, err = run(capsys, "predict", str(tmp_path / "none"), "--points", "p.csv")
    assert rc == 2 and "no such run folder" in err


def test_solve_refuses_to_mix_runs(capsys, tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "metrics.json").write_text("{}")
    rc, _, err = run(capsys, "solve", HEAT, "--out", str(old))
    assert rc == 2 and "exists and is not empty" in err and "--resume" in err
    rc, _, err = run(capsys, "solve", HEAT, "--out", str(tmp_path / "nothing"), "--resume")
    assert rc == 2 and "no run folder to resume" in err


def test_fem_refusing_a_problem_leaves_nothing_behind(capsys, tmp_path):
    """A problem the FEM baseline cannot solve (a 4-D box: no mesher) is found only after
    the run folder is prepared: exit 2, one line, and the folder (new) or the files that
    were written into it (an empty --out that existed) are gone."""
    f = tmp_path / "nd.yaml"
    f.write_text("fields: [u]\ndomain: {box: [[0, 0, 0, 0], [1, 1, 1, 1]]}\n"
                 "equations: {poisson: \"-laplacian(u) = 1\"}\n"
                 "conditions: {walls: {dirichlet: {u: 0}}}\n")
    rc, _, err = run(capsys, "fem", str(f), "--out", str(tmp_path / "new"))
    assert rc == 2 and "cannot mesh Box in 4-D" in err and err.count("\n") == 1, err
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    rc, _, err = run(capsys, "fem", str(f), "--out", str(tmp_path / "empty"))
    assert rc == 2 and list((tmp_path / "empty").iterdir()) == []


def _nan_reference(tmp_path, kind: str) -> str:
    """A heat-like 1-D problem whose reference file (``kind``: npz or dat) holds 3 NaN
    values of u among 1200 (or one infinite point); its YAML's name."""
    import numpy as np

    x, t = np.meshgrid(np.linspace(0, 1, 12), np.linspace(0, 1, 100))
    pts = np.stack([x.ravel(), t.ravel()], axis=1)
    u = np.sin(np.pi * pts[:, 0]) * np.exp(-pts[:, 1])
    if kind == "points":
        pts[5, 1] = np.inf
    else:
        u[[3, 50, 700]] = np.nan
    name = "ref.dat" if kind == "dat" else "ref.npz"
    if kind == "dat":
        np.savetxt(tmp_path / name, np.column_stack([pts, u]), header="x t u", comments="")
    else:
        np.savez(tmp_path / name, points=pts, u=u)
    f = tmp_path / "p.yaml"
    f.write_text("coords: [x, t]\ndomain: {interval: [0, 1], time: [0, 1]}\n"
                 "equations: {heat: \"u_t - u_xx/pi^2\"}\n"
                 "conditions: {walls: {dirichlet: {u: 0}}, start: {initial: {u: sin(pi*x)}}}\n"
                 f"reference: {{file: {name}}}\n")
    return str(f)


@pytest.mark.parametrize("kind", ["npz", "dat", "points"])
def test_a_reference_with_nan_is_refused(capsys, tmp_path, kind):
    f = _nan_reference(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = run(capsys, "validate", f)
    want = ("1 of 1200 points are not finite" if kind == "points"
            else "3 of 1200 values of u are not finite (NaN or inf); remove those rows")
    assert rc == 2 and want in err and err.count("\n") == 1, err
    assert ("ref.dat" if kind == "dat" else "ref.npz") in err and "Traceback" not in err
    rc, out, err = run(capsys, "solve", f, "--out", str(tmp_path / "run"))
    assert rc == 2 and want in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
