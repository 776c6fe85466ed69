"""Messages met while writing PINNacle's problems (issue 19): each is one clear line, exit 2,
naming the place and the fix, and nothing is written."""

from __future__ import annotations

import numpy as np

from pinn.cli import main

POISSON = """\
name: p
fields: [u]
domain: {rectangle: {min: [0, 0], max: [1, 1]}}
equations:
  poisson: "-laplacian(u) = 2*pi^2*sin(pi*x)*sin(pi*y)"
conditions:
  walls: {dirichlet: {u: 0}, on: boundary}
exact:
  u: "sin(pi*x)*sin(pi*y)"
model: {mlp: {width: 8, depth: 1}}
training:
  points: {interior: 64, boundary: 32}
  stages:
    - {adam: {lr: 1.0e-3}, steps: 2}
"""


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def write(tmp_path, text, name="p.yaml"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_validate_lists_every_problem_without_pointing_at_itself(capsys, tmp_path):
    f = write(tmp_path, POISSON.replace("max: [1, 1]", "max: [1, 1, 1]")
              .replace("on: boundary}", "on: boundary, weight: -1}"))
    rc, out, err = run(capsys, "validate", f)
    lines = err.strip().splitlines()
    assert rc == 2 and out == ""
    assert len(lines) == 2, err
    assert "domain.rectangle.max" in lines[0] and "conditions.walls.weight" in lines[1]
    assert "run `pinn validate`" not in err and "more problem" not in err
    # the other commands name the problem count and the command that lists them, with the file
    rc, _, err = run(capsys, "solve", f, "--out", tmp_path / "run")
    assert rc == 2 and "1 more problem: `pinn validate p.yaml` lists them all" in err
    assert not (tmp_path / "run").exists()


def test_a_rectangle_with_three_numbers_points_at_box(capsys, tmp_path):
    f = write(tmp_path, POISSON.replace("max: [1, 1]", "max: [1, 1, 1]"))
    rc, _, err = run(capsys, "validate", f)
    assert rc == 2 and "domain.rectangle.max" in err and "box" in err


def test_a_failing_exact_solution_is_not_called_valid(capsys, tmp_path):
    f = write(tmp_path, POISSON.replace('u: "sin(pi*x)', 'u: "2*sin(pi*x)'))
    rc, out, err = run(capsys, "validate", f)
    assert rc == 2
    assert "valid" not in out.splitlines()[0] and "fails" in out.splitlines()[0]
    assert "FAIL poisson" in out and "does not satisfy poisson" in err


def test_solve_refuses_a_failing_exact_solution(capsys, tmp_path):
    f = write(tmp_path, POISSON.replace('u: "sin(pi*x)', 'u: "2*sin(pi*x)'))
    rc, _, err = run(capsys, "solve", f, "--out", tmp_path / "run", "--quiet")
    assert rc == 2 and "does not satisfy poisson" in err and "--no-check" in err
    assert err.count("\n") == 1 and not (tmp_path / "run").exists()


def test_fem_into_a_used_folder_does_not_suggest_resume(capsys, tmp_path):
    f = write(tmp_path, POISSON)
    used = tmp_path / "used"
    used.mkdir()
    (used / "metrics.json").write_text("{}")
    for command in ("fem", "compare"):
        rc, _, err = run(capsys, command, f, "--out", used)
        assert rc == 2 and "not empty" in err and "has no --resume" in err, err
        assert "continue it with --resume" not in err
    assert sorted(p.name for p in used.iterdir()) == ["metrics.json"]


def test_validate_names_a_file_reference(capsys, tmp_path):
    xy = np.random.default_rng(0).random((50, 2))
    np.savez(tmp_path / "ref.npz", points=xy, u=np.sin(np.pi * xy[:, 0]))
    text = POISSON.replace('exact:\n  u: "sin(pi*x)*sin(pi*y)"\n', "reference: {file: ref.npz}\n")
    rc, out, _ = run(capsys, "validate", write(tmp_path, text))
    assert rc == 0
    line = next(s for s in out.splitlines() if s.strip().startswith("reference"))
    assert "ref.npz" in line and "object at 0x" not in line


def test_hard_dirichlet_it_cannot_build_fails_at_its_yaml_path(capsys, tmp_path):
    """A hole is fine (distance functions); a predicate is not: exit 2 at the YAML path."""
    hole = POISSON.replace(
        "domain: {rectangle: {min: [0, 0], max: [1, 1]}}",
        "domain: {difference: [{rectangle: {min: [0, 0], max: [1, 1]}}, "
        "{ellipse: {center: [0.5, 0.5], semi_axes: [0.2, 0.1]}}]}",
    ).replace("on: boundary}", "on: boundary, hard: true}").replace(
        'exact:\n  u: "sin(pi*x)*sin(pi*y)"\n', "")
    rc, out, err = run(capsys, "validate", write(tmp_path, hole))
    assert rc == 0 and "valid" in out, err
    f = write(tmp_path, hole.replace("on: boundary, hard: true}", 'on: "x == 0", hard: true}'))
    rc, _, err = run(capsys, "validate", f)
    assert rc == 2 and "p.yaml:7 conditions.walls.hard:" in err and "internal" not in err, err
    assert "named parts" in err
    rc, _, err = run(capsys, "solve", f, "--out", tmp_path / "run")
    assert rc == 2 and "conditions.walls.hard" in err
    assert not (tmp_path / "run").exists()
