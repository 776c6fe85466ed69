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
