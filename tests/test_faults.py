"""Faults: kill -9 at any moment, damaged checkpoints, two commands on one run folder,
stale temporary files, file modes, and divergence that must not pass silently.

The SIGKILL test kills a tiny ``pinn solve`` (heat2d: 8 hidden units, 240 Adam steps and
20 L-BFGS steps, a checkpoint every 10 steps) at seeded moments, half of them inside a
checkpoint write (``PINN_TEST_SLOW_WRITES`` holds every atomic write open for 50 ms before
its rename, so the test sees the temporary file and kills then), resumes from the run
folder alone (``pinn solve --resume --out RUN``) and asks for the uninterrupted run's
result bit for bit: every array of ``params.npz`` and every history row (wall times aside).
The default suite kills one run three times and then interrupts it with Ctrl-C, running
the hint it prints as is; the 20-kill version (each kill of a fresh run, then resumed to
the end) is marked slow.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pinn import io
from pinn.cli import main

ROOT = Path(__file__).resolve().parents[1]
HEAT = ROOT / "problems" / "heat2d.yaml"
# Adam, then self-scaled Broyden (the demo file itself trains self-scaled Broyden alone)
SETS = ["training.stages=[{adam: {lr: 5.0e-3}, steps: 240}, {ssbroyden: {}, steps: 20}]",
        "training.points.interior=64", "training.points.boundary=16",
        "training.points.initial=16", "training.points.resample_every=30",
        "training.chunk=10", "training.checkpoint_every=10", "model.mlp.width=8",
        "model.mlp.depth=1", "evaluation.resolution=9", "evaluation.snapshots=2"]
SET_ARGS = [a for s in SETS for a in ("--set", s)]
N_CHECKPOINTS = 26  # steps 10, 20, ..., 260
WALL_KEYS = ("time", "steps_per_s")


def pinn_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "pinn.cli", *map(str, args)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The children's environment: slow atomic writes, and one compilation cache (the
    same programs, compiled once: the kills and resumes then cost less)."""
    cache = tmp_path_factory.mktemp("jax-cache")
    return {**os.environ, "PINN_TEST_SLOW_WRITES": "0.05",
            "JAX_COMPILATION_CACHE_DIR": str(cache),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def _umask(mask: int):
    return lambda: os.umask(mask)


@pytest.fixture(scope="module")
def straight(tmp_path_factory, env):
    """The uninterrupted run (and, while it runs, a second solve into its folder)."""
    run_dir = tmp_path_factory.mktemp("faults") / "straight"
    t0 = time.monotonic()
    proc = subprocess.Popen(pinn_cmd("solve", HEAT, "--out", run_dir, "--quiet", *SET_ARGS),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=_umask(0o022))
    while proc.poll() is None and not (run_dir / "command.json").exists():
        time.sleep(0.01)
    busy = None
    if proc.poll() is None:  # a second solve into the running one's folder
        busy = subprocess.run(pinn_cmd("solve", HEAT, "--out", run_dir, "--resume", *SET_ARGS),
                              capture_output=True, text=True, env=env, timeout=120)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return run_dir, time.monotonic() - t0, busy


def history(run_dir: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in WALL_KEYS} for r in rows]


def assert_same_run(got: Path, want: Path) -> None:
    with np.load(got / "params.npz", allow_pickle=False) as a, \
            np.load(want / "params.npz", allow_pickle=False) as b:
        assert sorted(a.files) == sorted(b.files)
        for k in b.files:
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
            assert a[k].tobytes() == b[k].tobytes(), f"{k} differs after resume"
    assert history(got) == history(want)
    mg, mw = (json.loads((d / "metrics.json").read_text()) for d in (got, want))
    for key in ("loss", "rel_l2", "steps_done", "rollbacks", "converged"):
        assert mg[key] == mw[key], key


def temporaries(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.rglob(f"*{io.TMP_MARK}*")] if run_dir.exists() else []


def checkpoints(run_dir: Path) -> set[str]:
    folder = run_dir / "checkpoints"
    return {e.name for e in os.scandir(folder)} if folder.is_dir() else set()


def kill(run_dir: Path, env: dict, mode: str, value: float,
         sig: int = signal.SIGKILL) -> tuple[subprocess.Popen, bool]:
    """Start the run (or go on with it as a user would) and send it ``sig``: at ``value``
    seconds (``"time"``), inside its ``value``-th checkpoint write (``"write"``), once it
    wrote a new checkpoint (``"saved"``) or ``value`` seconds after that (``"after"``).
    Returns the process and whether it was still running when signalled."""
    proc = subprocess.Popen(resume_args(run_dir), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    t0, before, seen = time.monotonic(), checkpoints(run_dir), set()
    while proc.poll() is None:
        if mode == "time" and time.monotonic() - t0 >= value:
            break
        now = checkpoints(run_dir)
        seen |= {n for n in now if io.TMP_MARK in n}
        if mode == "write" and len(seen) >= value:
            break
        if mode in ("saved", "after") and any(io.TMP_MARK not in n for n in now - before):
            if mode == "after":
                time.sleep(value)
            break
        time.sleep(0.003)
    running = proc.poll() is None
    proc.send_signal(sig)
    proc.wait(timeout=300)
    return proc, running


def resume_args(run_dir: Path) -> list[str]:
    """How a user goes on: from the folder alone once it knows its command, else with the
    file and the overrides (killed before ``command.json`` was written)."""
    if (run_dir / io.COMMAND_FILE).exists() and (run_dir / "config.yaml").exists():
        return pinn_cmd("solve", "--resume", "--out", run_dir, "--quiet")
    again = ["--resume"] if run_dir.is_dir() else []
    return pinn_cmd("solve", HEAT, "--out", run_dir, "--quiet", *again, *SET_ARGS)


def sigkill(run_dir: Path, env: dict, mode: str, value: float) -> None:
    proc, running = kill(run_dir, env, mode, value)
    if mode == "write":  # killed inside the write: its temporary file is left
        assert running and proc.returncode == -signal.SIGKILL, proc.stderr.read()
        assert temporaries(run_dir), (mode, value)
    proc.stderr.close()


def finish(run_dir: Path, env: dict, argv: list[str] | None = None) -> None:
    proc = subprocess.run(argv or resume_args(run_dir), capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert temporaries(run_dir) == []  # the killed write's file was removed


def kill_plan(n: int, seed: int, wall: float) -> list[tuple[str, float]]:
    """``n`` seeded kill moments, every other one inside a checkpoint write (of the 26)."""
    rng = np.random.default_rng(seed)
    return [("write", int(rng.integers(1, N_CHECKPOINTS))) if i % 2 == 0 else
            ("time", float(rng.uniform(0.05, 1.0) * wall)) for i in range(n)]


def test_straight_run_locks_its_folder_follows_the_umask_and_converges(straight):
    run_dir, _, busy = straight
    if busy is not None:
        assert busy.returncode == 2, busy.stderr
        lines = busy.stderr.strip().splitlines()
        assert len(lines) == 1 and "is in use by process" in lines[0], lines
        assert str(run_dir) in lines[0] and "--out" in lines[0]
    modes = {p.relative_to(run_dir).as_posix(): p.stat().st_mode & 0o777
             for p in run_dir.rglob("*") if p.is_file()}
    assert modes and all(m == 0o644 for m in modes.values()), modes
    m = json.loads((run_dir / "metrics.json").read_text())
    assert m["converged"] is True and m["rollbacks"] == 0
    assert json.loads((run_dir / io.COMMAND_FILE).read_text())["overrides"] == SETS


@pytest.mark.slow  # 49 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_three_sigkills_and_a_ctrl_c_then_the_hint_ends_bit_exact(tmp_path, env, straight):
    """One run killed three times (twice inside a checkpoint write) and interrupted once;
    each time it goes on from the folder; the Ctrl-C hint is run as printed."""
    want, _, _ = straight
    run_dir = tmp_path / "run"
    for mode, value in (("write", 3), ("after", 0.2), ("write", 2)):
        sigkill(run_dir, env, mode, value)
    proc, running = kill(run_dir, env, "saved", 0, sig=signal.SIGINT)
    err = proc.stderr.read()
    proc.stderr.close()
    assert running and proc.returncode == 130, err
    hint = err.strip().splitlines()[-1].split("continue with: ", 1)[1]
    argv = shlex.split(hint)
    assert argv[:3] == ["pinn", "solve", "--resume"], hint
    finish(run_dir, env, pinn_cmd(*argv[1:]))
    assert_same_run(run_dir, want)


@pytest.mark.slow
def test_sigkill_at_20_seeded_moments_resume_bit_exact(tmp_path, env, straight):
    """20 seeded kills, each of a fresh run that is then resumed to its end."""
    want, wall, _ = straight
    for i, (mode, value) in enumerate(kill_plan(20, seed=2026, wall=wall)):
        run_dir = tmp_path / f"kill{i}"
        sigkill(run_dir, env, mode, value)
        finish(run_dir, env)
        assert_same_run(run_dir, want)


# ---------------------------------------------------------------------------
# the pieces, in this process


def test_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        for mask, mode in ((0o022, 0o644), (0o002, 0o664), (0o077, 0o600)):
            os.umask(mask)
            path = io.write_json(tmp_path / f"m{mask:o}.json", {"a": 1})
            assert path.stat().st_mode & 0o777 == mode, (oct(mask), oct(path.stat().st_mode))
    finally:
        os.umask(old)


def _locker(folder: Path) -> subprocess.Popen:
    code = ("import sys; from pinn.io import lock_run_folder; "
            f"lock = lock_run_folder({str(folder)!r}); print('locked', flush=True); "
            "sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_command_refuses_a_locked_folder_until_its_holder_is_killed(tmp_path,
                                                                              capsys):
    folder = tmp_path / "run"
    holder = _locker(folder)
    try:
        assert io.folder_in_use(folder) == str(holder.pid)
        for argv in (["solve", HEAT, "--out", folder], ["solve", HEAT, "--out", folder,
                                                       "--resume"],
                     ["fem", HEAT, "--out", folder], ["solve", "--resume", "--out", folder]):
            rc = main([str(a) for a in argv])
            err = capsys.readouterr().err.strip().splitlines()
            assert rc == 2, (argv, err)
            assert len(err) == 1, err
            assert err[0] == (f"pinn: {folder} is in use by process {holder.pid}; wait for "
                              "it to finish or use another --out"), err
        with pytest.raises(io.FolderInUse, match="in use by process"):
            io.lock_run_folder(folder)
        assert sorted(p.name for p in folder.iterdir()) == [io.LOCK_FILE]  # nothing written
    finally:
        holder.kill()
        holder.wait()
    assert io.folder_in_use(folder) is None  # a kill drops the lock
    with io.lock_run_folder(folder) as lock:
        assert lock.held and not lock.created
        assert (folder / io.LOCK_FILE).read_text().strip() == str(os.getpid())
    # a folder holding only the lock of a finished run counts as empty for a new run
    assert io.run_folder(folder, "x", resume=False) == folder


def test_a_new_default_folder_taken_by_a_running_solve_is_skipped(tmp_path):
    root = tmp_path / "runs"
    with io.lock_run_folder(root / "heat2d"):
        assert io.run_folder(None, "heat2d", False, root=root) == root / "heat2d-2"
    assert io.run_folder(None, "heat2d", False, root=root) == root / "heat2d"


def test_stale_temporaries_of_dead_writers_are_removed_by_the_lock_holder(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "run"
    (folder / "checkpoints").mkdir(parents=True)
    stale = [folder / f".metrics.json{io.TMP_MARK}{dead.pid}-0123abcd",
             folder / "checkpoints" / f".ckpt_000000010.npz{io.TMP_MARK}{dead.pid}-deadbeef"]
    kept = [folder / f".report.md{io.TMP_MARK}{os.getpid()}-0123abcd",  # a live writer's
            folder / f"notes{io.TMP_MARK}draft.txt",  # not ours: no PID-HEX tail
            folder / "metrics.json"]
    for p in stale + kept:
        p.write_text("x")
    with io.lock_run_folder(folder):
        pass
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept)


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = io.write_text(tmp_path / "a.txt", "old")

    def boom(fh):
        fh.write("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        io.atomic_write(path, boom, "w")
    assert path.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["a.txt"]


# --------------------------------------------------------- damaged checkpoints, in process


def _fit_terms(params, batch):
    import jax.numpy as jnp

    x = batch["x"]
    return {"fit": jnp.mean(((x[:, None] ** jnp.arange(3)) @ params["w"] - jnp.sin(x)) ** 2)}


def _fit_sample(key, params):
    import jax

    del params
    return {"x": jax.random.uniform(key, (16,), minval=-1.0, maxval=1.0)}


def _fit_run(**kwargs):
    import jax
    import jax.numpy as jnp

    from pinn.train import Adam, Points, Stage, Training, run

    return run(_fit_terms, {"w": jnp.zeros(3)},
               Training([Stage(Adam(lr=1e-2), 60)], points=Points(resample_every=7), chunk=5,
                        eval_every=None, checkpoint_every=10), sample_fn=_fit_sample,
               key=jax.random.key(3), progress=False, **kwargs)


def test_resume_skips_damaged_checkpoints_and_says_which_it_used(tmp_path):
    from pinn.train import Interrupted

    straight = _fit_run()
    out = tmp_path / "run"

    def stop(row):
        if row["step"] >= 40 and row["event"] is None:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(Interrupted):
        _fit_run(out_dir=out, on_chunk=stop, keep_checkpoints=None)
    ckpts = sorted((out / "checkpoints").glob("ckpt_*.npz"))
    assert [p.name for p in ckpts[-3:]] == [f"ckpt_0000000{s}.npz" for s in (20, 30, 40)]
    newest, second = ckpts[-1], ckpts[-2]
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # truncated
    with zipfile.ZipFile(second) as zf:  # one flipped bit in an array's last value
        end = zf.getinfo("leaf_00001.npy").header_offset - 1
    data = bytearray(second.read_bytes())
    data[end] ^= 0x10
    second.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = _fit_run(out_dir=out, resume=True, keep_checkpoints=None)
    lines = [str(w.message) for w in caught if "resume:" in str(w.message)]
    assert len(lines) == 2, lines
    assert newest.name in lines[0] and second.name in lines[1]
    assert all(str(ckpts[-3]) in line for line in lines)  # resumed from step 20
    assert resumed.step == straight.step == 60
    assert np.asarray(resumed.params["w"]).tobytes() == np.asarray(straight.params["w"]
                                                                   ).tobytes()
    strip = [{k: v for k, v in r.items() if k not in WALL_KEYS} for r in straight.history]
    assert [{k: v for k, v in r.items() if k not in WALL_KEYS} for r in resumed.history
            ] == strip


def test_no_intact_checkpoint_left_starts_afresh_with_a_warning(tmp_path):
    from pinn.train.checkpoint import CheckpointError, intact_checkpoint, verify_checkpoint

    _fit_run(out_dir=tmp_path)
    ckpts = sorted((tmp_path / "checkpoints").glob("ckpt_*.npz"))
    for p in ckpts:
        p.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(CheckpointError, match="unreadable"):
        verify_checkpoint(ckpts[-1])
    path, skipped = intact_checkpoint(tmp_path / "checkpoints")
    assert path is None and [p for p, _ in skipped] == ckpts[::-1]


# ---------------------------------------------------------------- divergence is reported


def test_divergence_reasons():
    from pinn.run import divergence

    rows = [{"step": 0, "loss": 9.6e5, "event": "stage_start"}, {"step": 10, "loss": 2.0}]
    assert divergence(rows, {"u": 0.1}) is None
    assert divergence(rows + [{"step": 20, "loss": 2.7e12}]) == \
        "the loss rose from 9.6e+05 to 2.7e+12"
    assert divergence(rows + [{"step": 20, "loss": float("nan")}]) == "the final loss is nan"
    assert divergence(rows + [{"step": 20, "loss": None}]) == "the final loss is None"
    assert divergence(rows, {"u": 0.95, "v": 0.2}) == "the relative L2 error of u is 0.95"
    assert divergence(rows, {"u": 1.0}) == "the relative L2 error of u is 1"
    # a roll-back row's loss is not where the run ended
    assert divergence(rows + [{"step": 20, "loss": 1e9, "event": "rollback"}]) is None


def test_divergence_advice_depends_on_why():
    """A loss that rose or became non-finite: the optimisation's advice. A loss that fell
    by orders of magnitude while an error stays near 1 (a pressure fixed only up to a
    function of time, an inverse problem): the conditions' advice, naming the field."""
    from types import SimpleNamespace

    import pinn
    from pinn.run import advice, finish

    lr = "lower the learning rate, train longer or check the problem scaling"
    rows = [{"step": 0, "loss": 9.6e5, "event": "stage_start"}, {"step": 10, "loss": 2.0}]
    fell = advice(rows, {"u": 1e-3, "p": 1.02})
    assert "the loss fell from 9.6e+05 to 2" in fell and "not the truth of p:" in fell
    assert "up to a constant or a function of time" in fell and "missing boundary" in fell
    assert advice(rows + [{"step": 20, "loss": 2.7e12}], {"p": 1.02}) == lr
    assert advice(rows + [{"step": 20, "loss": float("nan")}], {"p": 1.02}) == lr
    assert advice(rows[:1] + [{"step": 10, "loss": 1e5}], {"p": 1.02}) == lr  # hardly fell
    assert advice(rows + [{"step": 20, "loss": 1e9}], {"u": 0.1}) == lr  # the loss rose

    x, t = pinn.coords("x t")
    u = pinn.field("u")
    problem = pinn.Problem(domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
                           equations={"heat": pinn.D(u, t) - pinn.D(u, x, 2)},
                           conditions={"start": pinn.Initial(u, pinn.sin(pinn.pi * x))},
                           name="heat1d")
    for history, want in ((rows, "fits the equations but not the truth of u"),
                          (rows + [{"step": 20, "loss": 2.7e12}], lr)):
        sol = SimpleNamespace(precision=32, history=history, metrics={"rel_l2": {"u": 1.0}})
        with pytest.warns(RuntimeWarning, match="did not converge") as caught:
            finish(sol, problem)
        (w,) = [str(c.message) for c in caught if "did not converge" in str(c.message)]
        assert want in w and sol.metrics["converged"] is False, w
        assert sol.metrics["divergence"] in w and "relative L2 error of u is 1" in w
        assert (lr in w) is (want == lr)


def test_a_diverging_solve_warns_once_and_says_so_in_metrics(tmp_path, capsys):
    run_dir = tmp_path / "run"
    rc = main(["solve", str(HEAT), "--out", str(run_dir), "--quiet",
               "--set", "training.stages=[{adam: {lr: 3.0}, steps: 30}]", *SET_ARGS[2:]])
    err = capsys.readouterr().err
    assert rc == 0, err
    m = json.loads((run_dir / "metrics.json").read_text())
    warned = [ln for ln in err.splitlines() if "did not converge" in ln]
    assert m["converged"] is False and len(warned) == 1, (m.get("rel_l2"), err)
    assert warned[0].startswith("pinn: warning: heat2d: the run did not converge: ")
    assert "the loss rose from" in m["divergence"] and m["divergence"] in warned[0]


def test_a_run_the_nan_guard_gave_up_on_keeps_its_last_good_state(tmp_path, monkeypatch):
    """``Run.train`` when the loop raises ``TrainingDiverged`` after some steps (the loop's
    side is tested in test_train_loop): the folder holds the last good state, with
    ``converged: false`` and the reason, and one warning says so."""
    import pinn
    import pinn.config
    import pinn.run as R
    from pinn.train import TrainingDiverged

    real = R.run

    def gives_up(*args, **kwargs):
        res = real(*args, **kwargs)
        rows = [*res.history, {"step": res.step, "event": "rollback", "loss": None}]
        raise TrainingDiverged("training diverged", step=res.step, stage=0,
                               failures=rows[-1:], params=res.params, history=rows)

    monkeypatch.setattr(R, "run", gives_up)
    built = pinn.config.load(str(HEAT), ["training.stages=[{adam: {lr: 5.0e-3}, steps: 20}]",
                                         *SETS[1:]])
    run = pinn.setup(built.problem, built.model(), built.training(), progress=False,
                     out_dir=tmp_path / "run", resolution=9, snapshots=2)
    with pytest.warns(RuntimeWarning, match="the NaN guard gave up") as caught:
        sol = run.train(handle_signals=False)
    assert len([w for w in caught if "did not converge" in str(w.message)]) == 1
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert m["converged"] is False and m["steps_done"] == 20 and m["rollbacks"] == 1
    assert m["divergence"].startswith("the loss stayed non-finite from step 20 on")
    assert set(m["loss"]) == {"heat"} and m["rel_l2"] == sol.metrics["rel_l2"]
    # non-finite at the very start: nothing was trained, the error stands
    monkeypatch.setattr(R, "run", lambda *a, **k: (_ for _ in ()).throw(TrainingDiverged(
        "non-finite at the initial parameters", step=0, stage=0, failures=[],
        params=None, history=[])))
    with pytest.raises(TrainingDiverged, match="initial parameters"):
        dataclasses.replace(run, overwrite=True).train()  # the folder holds the first run
