"""Many hosts: two processes joined by jax.distributed reproduce one process on two devices.

Three ``pinn solve`` subprocesses train the same small Poisson run (50 Adam, then 20 L-BFGS
steps, a checkpoint after each stage): one process with two forced host devices
(``--devices 2``), and two processes of one device each joined over 127.0.0.1
(``--coordinator --num-processes --process-id``, CPU collectives through gloo). The
checkpoints (parameters, optimiser state and the gathered batch), the loss history and the
saved solution must agree to 1e-6 relative in float32 (1e-12 in float64): the two layouts
run the same sharded program, only the all-reduce goes through gloo instead of within one
process (measured: bit-identical, float64, Adam then L-BFGS). Process 1
trains under an audit hook (:func:`sys.addaudithook`) that records every file it opens for
writing, creates, renames or removes, and must touch nothing under the test's folder.

This file is also the worker: ``python tests/test_multihost.py ARGS...`` runs
``pinn ARGS...`` under the audit hook and prints what it wrote as the last stdout line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ["problems/poisson2d.yaml", "--quiet",
       "--set", "training.points.interior=64", "--set", "training.points.boundary=16",
       "--set", "model.mlp.width=8", "--set", "model.mlp.depth=2",
       "--set", "training.chunk=10", "--set", "evaluation.resolution=16"]
AUDIT = "pinn-audit: "
TOL = {32: 1e-6, 64: 1e-12}  # relative, by precision


def _worker(args: list[str]) -> int:  # pragma: no cover - a subprocess
    writes: list[str] = []
    flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def name(path) -> str:
        return os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else repr(path)

    def hook(event, args):
        if event == "open":
            path, mode, oflags = args
            writing = (any(c in mode for c in "wax+") if isinstance(mode, str)
                       else bool((oflags or 0) & flags))
            if writing:
                writes.append(f"open {name(path)}")
        elif event in ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink",
                       "os.link", "os.truncate", "shutil.rmtree"):
            writes.append(f"{event} {' '.join(name(a) for a in args[:2])}")

    sys.addaudithook(hook)
    from pinn.cli import main

    code = main(args)
    sys.stdout.write(AUDIT + json.dumps(writes) + "\n")
    return code


def _free_port(lo: int | None = None) -> int:
    """A free TCP port on 127.0.0.1 (from ``lo`` up, or any)."""
    for port in range(lo, 65536) if lo else [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port")


def _start(args: list[str], devices: int, cwd: Path, env: dict | None = None
           ) -> subprocess.Popen:
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           **(env or {})}
    env.pop("PINN_DISTRIBUTED", None)
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, __file__, "solve", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, name: str) -> list[str]:
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{err[-3000:]}"
    lines = [ln for ln in out.splitlines() if ln.startswith(AUDIT)]
    assert lines, f"{name}: no audit line\n{out[-2000:]}"
    return json.loads(lines[-1][len(AUDIT):])


def _runs(tmp_path: Path, tag: str, inputs: list[str], single: Path | None, multi: Path,
          launch: str = "flags") -> dict[str, list[str]]:
    """Train ``inputs`` as one process on two devices (into ``single``, unless None) and as
    two processes of one device (into ``multi``), all at once; each one's audited writes."""
    procs = {}
    if single is not None:
        procs["single"] = _start([*inputs, "--devices", "2", "--out", str(single)], 2,
                                 tmp_path / f"{tag}_cwd_single")
    port = _free_port(61440 if launch == "slurm" else None)
    for i in (0, 1):
        if launch == "slurm":  # what srun sets; jax derives the port from the job id
            env = {"SLURM_JOB_ID": str(port - 61440), "SLURM_STEP_NODELIST": "localhost",
                   "SLURM_NTASKS": "2", "SLURM_PROCID": str(i), "SLURM_LOCALID": str(i),
                   "SLURM_STEP_NUM_NODES": "1"}
            args = [*inputs, "--out", str(multi), "--distributed", "auto"]
        else:
            env, args = {}, [*inputs, "--out", str(multi), "--coordinator",
                             f"127.0.0.1:{port}", "--num-processes", "2", "--process-id",
                             str(i)]
        procs[f"process {i}"] = _start(args, 1, tmp_path / f"{tag}_cwd_{i}", env)
    try:
        writes = {name: _finish(proc, name) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    # process 1 wrote nothing: not in the shared run folder, not in its own directory
    mine = [w for w in writes["process 1"] if str(tmp_path) in w]
    assert mine == [], mine
    assert not any((tmp_path / f"{tag}_cwd_1").iterdir())
    assert any(str(multi) in w for w in writes["process 0"])  # the hook sees writes
    return writes


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def _leaves(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files if k != "__header__"}


def _losses(run: Path) -> list[tuple[int, float]]:
    rows = [json.loads(ln) for ln in (run / "history.jsonl").read_text().splitlines() if ln]
    return [(r["step"], r["loss"]) for r in rows if "loss" in r]


def _stages(adam: int, lbfgs: int, every: int) -> list[str]:
    stages = [f"{{adam: {{lr: 1.0e-3}}, steps: {adam}}}"]
    stages += [f"{{lbfgs: {{}}, steps: {lbfgs}}}"] if lbfgs else []
    return ["--set", f"training.stages=[{', '.join(stages)}]",
            "--set", f"training.checkpoint_every={every}"]


def _same(multi: Path, single: Path, names: list[str], tol: float = TOL[32]) -> None:
    """The two run folders hold the same checkpoints, history, metrics and solution."""
    for name in names:  # parameters, optimiser state, weights, key and the gathered batch
        a, b = _leaves(multi / "checkpoints" / name), _leaves(single / "checkpoints" / name)
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].shape == b[k].shape, (name, k)
            assert _rel(a[k], b[k]) <= tol, (name, k, _rel(a[k], b[k]))
    la, lb = _losses(multi), _losses(single)
    assert [s for s, _ in la] == [s for s, _ in lb]
    for (step, a), (_, b) in zip(la, lb, strict=True):
        assert abs(a - b) <= tol * abs(b), (step, a, b)
    ma = json.loads((multi / "metrics.json").read_text())
    mb = json.loads((single / "metrics.json").read_text())
    assert ma["processes"] == 2 and "processes" not in mb
    assert abs(ma["rel_l2"]["u"] - mb["rel_l2"]["u"]) <= tol * mb["rel_l2"]["u"]
    pa, pb = _leaves(multi / "params.npz"), _leaves(single / "params.npz")
    assert pa.keys() == pb.keys() and all(_rel(pa[k], pb[k]) <= tol for k in pa)


@pytest.mark.parametrize("adam,lbfgs,launch,precision", [
    # the short check, two checkpoints of Adam (34 s: under -m slow with the others, to
    # keep the default suite within 10 minutes on 2 cores)
    pytest.param(20, 0, "flags", 32, marks=pytest.mark.slow),
    pytest.param(50, 20, "flags", 32, marks=pytest.mark.slow),  # Adam, then L-BFGS (~2 min)
    pytest.param(50, 20, "flags", 64, marks=pytest.mark.slow),  # the same in float64
    pytest.param(20, 0, "slurm", 32, marks=pytest.mark.slow),  # srun's variables, detected
])
def test_two_processes_reproduce_two_devices(tmp_path, adam, lbfgs, launch, precision):
    every = adam if lbfgs else adam // 2
    inputs = [str(ROOT / RUN[0]), *RUN[1:], *_stages(adam, lbfgs, every),
              "--precision", str(precision)]
    single, multi = tmp_path / "single", tmp_path / "multi"
    _runs(tmp_path, "run", inputs, single, multi, launch)
    names = sorted(p.name for p in (single / "checkpoints").iterdir())
    assert names == [f"ckpt_{every:09d}.npz", f"ckpt_{adam + lbfgs:09d}.npz"]
    assert sorted(p.name for p in (multi / "checkpoints").iterdir()) == names
    _same(multi, single, names, TOL[precision])
    losses = _losses(single)
    assert losses[-1][0] == adam + lbfgs
    assert losses[-1][1] < (0.1 if lbfgs else 0.9) * losses[0][1]  # it trained


@pytest.mark.slow
def test_two_processes_resume_from_process_0s_checkpoint(tmp_path):
    """20 Adam steps, then 20 more resumed from the checkpoint: on two processes (both
    reading process 0's) as on one process with two devices."""
    base = [str(ROOT / RUN[0]), *RUN[1:]]
    single, multi = tmp_path / "single", tmp_path / "multi"
    _runs(tmp_path, "first", [*base, *_stages(20, 0, 10)], single, multi)
    _runs(tmp_path, "resumed", [*base, *_stages(40, 0, 10), "--resume"], single, multi)
    names = [f"ckpt_{s:09d}.npz" for s in (20, 30, 40)]
    assert sorted(p.name for p in (multi / "checkpoints").iterdir()) == names
    _same(multi, single, names)


def test_join_settings_are_checked():
    from pinn import distributed

    assert distributed.initialize() is False  # nothing asked: nothing joined, JAX untouched
    with pytest.raises(ValueError, match="go together"):
        distributed.initialize("127.0.0.1:1234", 2)
    with pytest.raises(ValueError, match="HOST:PORT"):
        distributed.initialize("127.0.0.1", 2, 0)
    with pytest.raises(ValueError, match=r"0\.\.1"):
        distributed.initialize("127.0.0.1:1234", 2, 2)
    assert distributed.wanted({}) is False
    assert distributed.wanted({"PINN_DISTRIBUTED": "1"}) is True
    with pytest.raises(ValueError, match="PINN_DISTRIBUTED"):
        distributed.wanted({"PINN_DISTRIBUTED": "maybe"})


def test_cli_join_flags_go_together(capsys):
    from pinn.cli import EXIT_INPUT, main

    code = main(["solve", str(ROOT / RUN[0]), "--coordinator", "127.0.0.1:1234"])
    assert code == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--num-processes, --process-id" in err[0], err


if __name__ == "__main__":  # the worker (see the module docstring)
    sys.exit(_worker(sys.argv[1:]))
