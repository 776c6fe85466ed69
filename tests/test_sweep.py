"""``pinn sweep``: the Cartesian product of --vary specs, run as independent processes."""

from __future__ import annotations

import csv
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pinn import sweep as S

ROOT = Path(__file__).resolve().parents[1]
HEAT = ROOT / "problems/heat2d.yaml"
TINY = ["training.points.interior=128", "training.points.boundary=32",
        "training.points.initial=32", "model.mlp.width=8", "model.mlp.depth=2",
        "training.stages=[{adam: {lr: 1.0e-3}, steps: 30}]", "evaluation.resolution=[9, 9, 3]",
        "evaluation.snapshots=1", "training.eval_every=0"]
VARY = ["training.seed=0..1", "params.alpha=0.05,0.1"]


def test_expand_and_parse():
    points = S.expand(["training.seed=0..2", "params.nu=0.01,0.02"])
    assert len(points) == 6
    assert points[0] == {"training.seed": "0", "params.nu": "0.01"}
    assert points[-1] == {"training.seed": "2", "params.nu": "0.02"}
    assert S.parse_vary("a.b=3").values == ("3",)
    for bad, match in [("seed", "KEY=VALUES"), ("a=2..1", "empty"), ("a=1,,2", "empty"),
                       ("a=1,1", "repeated")]:
        with pytest.raises(ValueError, match=match):
            S.parse_vary(bad)
    with pytest.raises(ValueError, match="twice"):
        S.expand(["a=1", "a=2"])


def _kill_first_run(folder: Path, killed: list) -> None:
    """Kill the first run whose process id is recorded (while the others go on)."""
    deadline = time.time() + 120
    while time.time() < deadline and not killed:
        for rec_path in sorted(folder.glob("*/sweep.json")):
            try:
                rec = json.loads(rec_path.read_text())
            except (OSError, ValueError):
                continue
            if rec.get("status") == "running":
                os.kill(rec["pid"], signal.SIGKILL)
                killed.append(rec_path.parent.name)
                return
        time.sleep(0.05)


def _sweep_with_a_kill(folder: Path, **options) -> S.SweepResult:
    killed: list = []
    folder.mkdir(parents=True, exist_ok=True)
    killer = threading.Thread(target=_kill_first_run, args=(folder, killed))
    killer.start()
    # the folder exists (empty) for the killer to watch: a new sweep accepts an empty one
    result = S.sweep(HEAT, VARY, folder, sets=TINY, timeout=300, **options)
    killer.join()
    assert len(killed) == 1
    rows = {r["run"]: r for r in result.rows}
    assert len(rows) == 4
    assert rows[killed[0]]["status"] == "failed"
    assert "signal 9" in rows[killed[0]]["error"]
    done = [r for r in result.rows if r["status"] == "done"]
    assert len(done) == 3  # the others went on
    for r in done:
        assert 0 < r["rel_l2_u"] < 1.5 and r["steps"] == 30
    return result


@pytest.mark.slow  # 66 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_sweep_local_kill_and_resume(tmp_path, monkeypatch):
    # the runs share one compilation cache (as a user's sweep does by default; the suite
    # turns it off): the later runs and the resumed one load the programs the first two
    # compiled, which costs the five runs ~15% less
    monkeypatch.setenv("PINN_COMPILE_CACHE", str(tmp_path / "xla"))
    folder = tmp_path / "sweep"
    result = _sweep_with_a_kill(folder, workers=2)
    with open(folder / "summary.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 4 and {r["params.alpha"] for r in table} == {"0.05", "0.1"}
    md = (folder / "summary.md").read_text()
    assert md.startswith("# Sweep: 3 of 4 runs done") and md.count("\n| 0") == 4
    assert (folder / "sweep.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="--resume"):
        S.sweep(HEAT, VARY, folder, sets=TINY)
    finished = {r["run"]: (folder / r["run"] / "metrics.json").stat().st_mtime_ns
                for r in result.rows if r["status"] == "done"}
    again = S.sweep(HEAT, VARY, folder, sets=TINY, resume=True, workers=2)
    assert [r["status"] for r in again.rows] == ["done"] * 4
    for run, mtime in finished.items():  # finished runs are kept, not rerun
        assert (folder / run / "metrics.json").stat().st_mtime_ns == mtime


def test_sweep_cli_reports_bad_input(tmp_path, capsys):
    from pinn.cli import main

    assert main(["sweep", str(HEAT), "--vary", "training.seed=3..1"]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["sweep", str(HEAT), "--vary", "params.alpha=0.05", "--backend", "dask"]) == 2
    assert main(["sweep", str(HEAT), "--vary", "training.nope=1", "--out",
                 str(tmp_path / "s")]) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.slow  # 40 s; the same kill-and-resume sweep as the local one, on Ray
def test_sweep_ray(tmp_path):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        _sweep_with_a_kill(tmp_path / "sweep", backend="ray")
    finally:
        ray.shutdown()


def test_ctrl_c_stops_the_scheduling_at_once(monkeypatch, tmp_path):
    """A KeyboardInterrupt while runs are queued: no queued run starts (before, the pool's
    shutdown waited for every queued run, each started in turn)."""
    import threading
    import time

    from pinn import sweep as S

    started = []
    lock = threading.Lock()

    def fake(spec, timeout=None):
        with lock:
            started.append(spec.index)
        time.sleep(0.2)
        return {"index": spec.index, "point": spec.point, "status": "done"}

    monkeypatch.setattr(S, "_run_one", fake)
    specs = [S.RunSpec(i, {"training.seed": str(i)}, tmp_path / f"r{i}", tmp_path / "p.yaml")
             for i in range(10)]

    def interrupt(rec):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        S._local(specs, 2, None, interrupt)
    time.sleep(0.5)  # a run that was queued would have started by now (all 10 did before)
    # the first two, and at most the two their workers took up as they finished, before the
    # interrupt was raised
    assert len(started) <= 4, started
