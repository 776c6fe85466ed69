"""One writer discipline (issue 30): never onto a FIFO or a device, never through a planted
lock link, every writer of a run folder under its lock, a finished run never replaced
without ``overwrite``."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pinn
from pinn import io
from pinn.cli import main


@contextlib.contextmanager
def held_elsewhere(folder: Path):
    """``folder``'s lock held by another process while the block runs; yields its PID."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from pinn import io; import time\nio.lock_run_folder("
         f"{str(folder)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def test_no_write_replaces_a_fifo(tmp_path):
    fifo = tmp_path / "values.csv"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as err:
        io.write_values(fifo, np.zeros((2, 1)), ["x"], {"u": np.ones(2)})
    assert err.value.errno == errno.EEXIST and err.value.filename == str(fifo)
    assert "a FIFO is there" in err.value.strerror
    assert fifo.is_fifo() and os.listdir(tmp_path) == ["values.csv"]  # no temporary left
    link = tmp_path / "link.csv"  # a link is replaced, never written through
    target = tmp_path / "target.csv"
    target.write_text("keep")
    link.symlink_to(target)
    io.write_text(link, "new")
    assert target.read_text() == "keep" and link.read_text() == "new" and not link.is_symlink()


def test_a_planted_lock_link_is_refused_and_its_target_untouched(tmp_path, rod, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    fresh, done = tmp_path / "fresh", tmp_path / "done"
    fresh.mkdir()
    assert main(["solve", str(rod), "--out", str(done), "--quiet"]) == 0
    (done / io.LOCK_FILE).unlink()
    for run in (fresh, done):
        (run / io.LOCK_FILE).symlink_to(victim)
    for args in (["solve", str(rod), "--out", str(fresh), "--quiet"],
                 ["solve", "--resume", "--out", str(done), "--quiet"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "the lock file is a symbolic link" in err, err
    assert victim.read_text() == "precious"
    with pytest.raises(OSError, match="symbolic link"):
        io.lock_run_folder(fresh)


def test_the_lock_is_shared_within_a_process_and_refused_across(tmp_path):
    run = tmp_path / "run"
    outer = io.lock_run_folder(run)
    inner = io.lock_run_folder(run)  # a command, then the Python API inside it
    inner.release()
    assert io.folder_in_use(run) == str(os.getpid())  # the outer holder keeps it
    probe = [sys.executable, "-c", "import sys; from pinn import io\ntry:\n"
             f"    io.lock_run_folder({str(run)!r})\nexcept io.FolderInUse as e:\n"
             "    print(e); sys.exit(3)"]
    held = subprocess.run(probe, capture_output=True, text=True)
    assert held.returncode == 3 and f"in use by process {os.getpid()}" in held.stdout
    outer.release()
    assert io.folder_in_use(run) is None
    assert subprocess.run(probe, capture_output=True, text=True).returncode == 0


def test_the_python_api_refuses_a_finished_run_and_a_held_folder(tmp_path, rod):

    def solve(out, **kw):
        return pinn.config.load(str(rod)).setup(out_dir=out, progress=False, **kw).train()

    run = tmp_path / "run"
    first = solve(run)
    params = (run / "params.npz").read_bytes()
    with pytest.raises(ValueError, match="holds a run .*overwrite=True"):
        solve(run)
    assert (run / "params.npz").read_bytes() == params  # untouched
    again = solve(run, overwrite=True)
    assert again.metrics["steps_done"] == first.metrics["steps_done"] == 20
    with held_elsewhere(tmp_path / "busy") as pid:
        with pytest.raises(io.FolderInUse, match=f"in use by process {pid}"):
            solve(tmp_path / "busy")
    assert not (tmp_path / "busy" / "params.npz").exists()


def test_plot_waits_for_no_solve_it_refuses_a_held_run(tmp_path, rod, capsys):
    run = tmp_path / "run"
    assert main(["solve", str(rod), "--out", str(run), "--quiet"]) == 0
    before = (run / "metrics.json").read_bytes()
    with held_elsewhere(run) as pid:
        assert main(["plot", str(run)]) == 2
        assert f"in use by process {pid}" in capsys.readouterr().err
        assert main(["export", str(run), "--quiet"]) == 2
    assert (run / "metrics.json").read_bytes() == before and not (run / "export").exists()
    assert main(["plot", str(run)]) == 0
    assert not Path(run / "plots").is_symlink()


def test_the_python_api_says_what_it_takes(rod):
    with pytest.raises(TypeError, match=r"not the path .*pinn.config.load"):
        pinn.solve(str(rod))
    built = pinn.config.load(str(rod))
    with pytest.raises(TypeError, match="training: give a pinn.Training .* got dict"):
        pinn.solve(built.problem, training={"stages": []})
    with pytest.raises(TypeError, match="model: give a network spec .* got dict"):
        pinn.setup(built.problem, model={"width": 3})
    with pytest.raises(ValueError, match="precision: 32, 64 or None"):
        pinn.setup(built.problem, precision=16)


def test_a_resolved_config_plans_again_as_the_run_did(rod):
    """config.yaml (what --resume reads as the problem file) leaves out what the plan
    decided: reloaded, it plans the same points (a 1D run's 1024, not the default 4096 the
    checkpoint would not match)."""
    import yaml

    built = pinn.config.load(str(rod))
    resolved = built.resolved()
    assert "points" not in resolved["training"] and resolved["training"]["stages"]
    again = pinn.config.load(str(rod), text=yaml.safe_dump(resolved))
    assert again.plan().training.points == built.plan().training.points
    assert built.plan().training.points.interior == 1024  # planned (1 coordinate)
    given = pinn.config.load(str(rod), ["training.points.interior=333"])
    assert given.resolved()["training"]["points"]["interior"] == 333  # the user's: kept


def test_a_checkpoint_that_does_not_fit_is_the_folders_fault(tmp_path, rod, capsys):
    """A checkpoint whose arrays do not fit the run: one line naming it, exit 2 (was the
    internal-error exit 1)."""
    run = tmp_path / "run"
    assert main(["solve", str(rod), "--out", str(run), "--quiet",
                 "--set", "training.checkpoint_every=10"]) == 0
    (run / "metrics.json").unlink()  # as if killed after its last checkpoint
    (run / "params.npz").unlink()
    (run / "solution.json").unlink()
    *_, last, final = sorted((run / "checkpoints").glob("ckpt_*.npz"))
    final.unlink()  # the run was cut after step 10 of its 20
    with np.load(last) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["leaf_00000"] = np.zeros((7, 1), arrays["leaf_00000"].dtype)  # the batch,
    header = json.loads(bytes(arrays["__header__"]).decode())  # its header agreeing
    header["leaves"][0]["shape"] = [7, 1]
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez(last, **arrays)
    for old in sorted((run / "checkpoints").glob("ckpt_*.npz"))[:-1]:
        old.unlink()
    capsys.readouterr()
    assert main(["solve", "--resume", "--out", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err and last.name in err, err
