"""pinn.io: atomic writes, the run folder's place and configuration, points files."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pinn import io


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "a.txt"
    io.write_text(target, "old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        io.write_text(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["a.txt"]


def test_run_folder_numbers_new_runs_and_finds_the_newest_to_resume(tmp_path):
    root = tmp_path / "runs"
    first = io.run_folder(None, "heat", False, root=root)
    assert first == root / "heat"
    first.mkdir(parents=True)
    (first / "x").write_text("1")
    second = io.run_folder(None, "heat", False, root=root)
    assert second == root / "heat-2"
    second.mkdir()
    os.utime(first, (1, 1))
    assert io.run_folder(None, "heat", True, root=root) == second
    with pytest.raises(ValueError, match="not empty"):
        io.run_folder(first, "heat", False)
    with pytest.raises(ValueError, match="no run folder"):
        io.run_folder(tmp_path / "nowhere", "heat", True)


def test_resume_accepts_more_steps_and_other_devices_but_not_another_problem(tmp_path):
    cfg = {"params": {"alpha": 0.05},
           "training": {"seed": 0, "stages": [{"steps": 10}], "chunk": 100}}
    io.write_config(tmp_path, cfg)
    more = {**cfg, "training": {**cfg["training"], "stages": [{"steps": 20}], "chunk": 500,
                                "devices": 2, "micro_batch": 64}}
    io.write_config(tmp_path, more, resume=True)
    other = {**more, "params": {"alpha": 0.1}}
    with pytest.raises(ValueError, match="problem differs"):
        io.write_config(tmp_path, other, resume=True)
    reseeded = {**more, "training": {**more["training"], "seed": 1}}
    with pytest.raises(ValueError, match="problem differs"):
        io.write_config(tmp_path, reseeded, resume=True)


def test_points_files(tmp_path):
    csv = tmp_path / "p.csv"
    csv.write_text("t,x\n0.5,0.25\n1.0,0.75\n")
    np.testing.assert_array_equal(io.read_points(csv, ["x", "t"]), [[0.25, 0.5], [0.75, 1.0]])
    bare = tmp_path / "b.csv"
    bare.write_text("0.1,0.2\n")
    assert io.read_points(bare, ["x", "t"]).shape == (1, 2)
    npz = tmp_path / "p.npz"
    np.savez(npz, x=np.arange(3.0), t=np.ones(3))
    assert io.read_points(npz, ["x", "t"])[:, 0].tolist() == [0.0, 1.0, 2.0]
    for text, match in (("x\n0.1\n", "no column for t"), ("0.1,nan\n", "NaN"),
                        ("0.1,0.2,0.3\n", "2 columns")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(ValueError, match=match):
            io.read_points(bad, ["x", "t"])
    with pytest.raises(ValueError, match="no such file"):
        io.read_points(tmp_path / "missing.csv", ["x"])
