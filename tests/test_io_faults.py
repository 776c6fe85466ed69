"""Faults of the file system and of the files' contents (issue 30), tried as an attacker
would: a disk that fills up or a folder that turns read-only while a command writes (the
line names the file, never its temporary, says what was kept and what to do, and --out
only where the command has it), files that cannot be read, values of the wrong kind in
the files a run folder holds (each named by its file and key, exit 2), and export sidecars
that do not describe the graph beside them."""

from __future__ import annotations

import builtins
import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from pinn import io
from pinn.cli import main


@pytest.fixture(scope="module")
def base(tmp_path_factory, rod_text):
    """A finished rod run (checkpoints every 10 of its 20 steps) and two exports of it: the
    field (``export/``) and the field with its derivative (``two/rod.stablehlo``)."""
    d = tmp_path_factory.mktemp("faults")
    (d / "rod.yaml").write_text(rod_text)
    (d / "pts.csv").write_text("x\n0.25\n0.5\n")
    assert main(["solve", str(d / "rod.yaml"), "--out", str(d / "run"), "--quiet",
                 "--set", "training.checkpoint_every=10"]) == 0
    assert main(["export", str(d / "run"), "--quiet"]) == 0
    assert main(["export", str(d / "run"), "--quiet", "--outputs", "u,D(u, x)",
                 "--out", str(d / "two" / "rod.stablehlo")]) == 0
    (d / "run" / io.LOCK_FILE).unlink()
    return d


def _copy(base, tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(base / "run", run)
    return run


def _line(capsys, args, *needles, absent=()) -> str:
    """Run ``pinn ARGS``: exit 2 with one line holding every needle and none of ``absent``
    (never a temporary's name, never an internal error)."""
    assert main([str(a) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    assert io.TMP_MARK not in err, err
    for n in needles:
        assert n in err, err
    for n in absent:
        assert n not in err, err
    return err


def _fail_writes(monkeypatch, match: str, code: int = errno.ENOSPC) -> None:
    """Every write of a file whose name holds ``match`` fails as a full disk (``code``)
    would: when its data is flushed to the disk (``os.fsync``), after the temporary file was
    written."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to tell which file is flushed")
    real = os.fsync

    def fsync(fd):
        if match in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def _no_temporaries(folder: Path) -> None:
    left = [p for p in folder.rglob(f"*{io.TMP_MARK}*")]
    assert not left, left


# ---------------------------------------------------------------------------
# writes: the file, what was kept, what to do


def test_a_failed_write_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    old = io.write_text(tmp_path / "a.txt", "old")
    _fail_writes(monkeypatch, "a.txt")
    with pytest.raises(io.WriteError) as err:
        io.write_text(old, "new")
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(old)
    assert str(err.value) == (f"{old}: cannot be written (No space left on device); a.txt "
                              "keeps its previous contents")
    _fail_writes(monkeypatch, "b.txt")
    with pytest.raises(io.WriteError, match="b.txt was not created"):
        io.write_text(tmp_path / "b.txt", "new")
    assert old.read_text() == "old" and os.listdir(tmp_path) == ["a.txt"]
    (tmp_path / "file").write_text("x")  # a file where a folder must be made
    with pytest.raises(io.WriteError, match="c.txt was not created") as err:
        io.write_text(tmp_path / "file" / "sub" / "c.txt", "x")
    assert err.value.filename == str(tmp_path / "file" / "sub" / "c.txt")


def test_a_full_disk_while_training_keeps_the_last_checkpoint(base, tmp_path, monkeypatch,
                                                             capsys):
    """The checkpoint of step 20 does not fit: the line names it, says the one of step 10 is
    kept and how to continue from it; continued once there is space, the run finishes."""
    run = tmp_path / "run"
    _fail_writes(monkeypatch, "ckpt_000000020")
    err = _line(capsys, ["solve", base / "rod.yaml", "--out", run, "--quiet", "--set",
                         "training.checkpoint_every=10"],
                f"{run / 'checkpoints' / 'ckpt_000000020.npz'}: cannot be written (No space "
                "left on device); ckpt_000000020.npz was not created",
                "the last good checkpoint, checkpoints/ckpt_000000010.npz, is kept",
                f"free some space, then continue with: pinn solve --resume --out {run}",
                absent=["--out another", "give another --out"])
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["ckpt_000000010.npz"], err
    assert not (run / "params.npz").exists()
    _no_temporaries(run)
    monkeypatch.undo()
    assert main(["solve", "--resume", "--out", str(run), "--quiet"]) == 0
    assert json.loads((run / "metrics.json").read_text())["steps_done"] == 20


def test_a_full_disk_before_the_first_checkpoint(base, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _fail_writes(monkeypatch, "ckpt_")
    _line(capsys, ["solve", base / "rod.yaml", "--out", run, "--quiet", "--set",
                   "training.checkpoint_every=10"],
          "ckpt_000000010.npz was not created", "no checkpoint was written yet",
          f"then continue with: pinn solve --resume --out {run}")
    _no_temporaries(run)


@pytest.mark.parametrize("code, fix", [
    (errno.ENOSPC, "free some space"), (errno.EACCES, "make its folder writable"),
    (errno.EROFS, "the file system is read-only")], ids=["full", "denied", "read-only"])
def test_plot_says_what_was_kept_and_never_mentions_out(base, tmp_path, monkeypatch, capsys,
                                                         code, fix):
    """``pinn plot`` has no --out: its fixes do not offer one; the metrics it would have
    replaced are the old ones, byte for byte."""
    run = _copy(base, tmp_path)
    before = (run / "metrics.json").read_bytes()
    _fail_writes(monkeypatch, "metrics.json", code)
    _line(capsys, ["plot", run], f"{run / 'metrics.json'}: cannot be written",
          "metrics.json keeps its previous contents", fix, absent=["--out"])
    assert (run / "metrics.json").read_bytes() == before
    _no_temporaries(run)


def test_commands_with_out_offer_another(base, tmp_path, monkeypatch, capsys):
    run = _copy(base, tmp_path)
    _fail_writes(monkeypatch, "v.csv")
    _line(capsys, ["predict", run, "--points", base / "pts.csv", "--out", tmp_path / "v.csv"],
          f"{tmp_path / 'v.csv'}: cannot be written (No space left on device); v.csv was not "
          "created; free some space or give another --out")
    _fail_writes(monkeypatch, "rod.stablehlo", errno.EROFS)
    _line(capsys, ["export", run, "--quiet"],
          f"{run / 'export' / 'rod.stablehlo'}: cannot be written (Read-only file system); "
          "rod.stablehlo keeps its previous contents",
          "the file system is read-only: make it writable or give another --out")
    _fail_writes(monkeypatch, "rod.csv", errno.EACCES)
    _line(capsys, ["export-fields", run, "-f", "csv", "--quiet"],
          f"{run / 'fields' / 'rod.csv'}: cannot be written (Permission denied); rod.csv was "
          "not created; make its folder writable or give another --out")
    assert not (tmp_path / "v.csv").exists() and not (run / "fields" / "rod.csv").exists()
    _no_temporaries(tmp_path)


def test_a_run_folder_whose_lock_cannot_be_made(base, tmp_path, monkeypatch, capsys):
    run = _copy(base, tmp_path)
    real = os.open

    def denied(path, *a, **k):
        if str(path).endswith(io.LOCK_FILE):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    _line(capsys, ["plot", run], f"{run / io.LOCK_FILE}: cannot be written (Permission "
          "denied); nothing in the folder was changed; make its folder writable",
          absent=["--out"])


# ---------------------------------------------------------------------------
# reads: "cannot be read", never "give a writable --out"


def _closed(monkeypatch, name: str) -> None:
    """Opening a file called ``name`` for reading fails as without read permission (the
    tests may run as root, whom chmod does not stop)."""
    real = builtins.open

    def fake(file, mode="r", *a, **k):
        if isinstance(file, (str, os.PathLike)) and Path(file).name == name and "r" in mode:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real(file, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", fake)


@pytest.mark.parametrize("name, command", [
    ("params.npz", "predict"), ("solution.json", "plot"), ("history.jsonl", "plot"),
    ("config.yaml", "export"), ("rod.stablehlo", "predict-file"),
    ("rod.stablehlo.json", "predict-file"), ("pts.csv", "predict"),
    ("metrics.json", "compare")])
def test_a_file_that_cannot_be_read_says_so(base, tmp_path, monkeypatch, capsys, name,
                                             command):
    run = base / "run"
    args = {"predict": ["predict", run, "--points", base / "pts.csv"],
            "plot": ["plot", run],
            "export": ["export", run, "--out", tmp_path / "e.stablehlo", "-q"],
            "predict-file": ["predict", run / "export" / "rod.stablehlo", "--points",
                             base / "pts.csv"],
            "compare": ["compare", base / "rod.yaml", "--pinn", run, "--out",
                        tmp_path / "c", "-q"]}[command]
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}
    _closed(monkeypatch, name)
    _line(capsys, args, f"{name}: cannot be read (Permission denied); make it",
          "readable", absent=["--out", "writable", "damaged"])
    monkeypatch.undo()
    (run / io.LOCK_FILE).unlink(missing_ok=True)
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()
            and p.name != io.LOCK_FILE} == {p: t for p, t in before.items()
                                            if p.name != io.LOCK_FILE}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="chmod stops no one but a user other than root")
def test_chmod_000(base, tmp_path, capsys):
    run = _copy(base, tmp_path)
    (run / "params.npz").chmod(0)
    try:
        _line(capsys, ["predict", run, "--points", base / "pts.csv"],
              "params.npz: cannot be read (Permission denied)", absent=["--out"])
    finally:
        (run / "params.npz").chmod(0o644)


# ---------------------------------------------------------------------------
# the kinds of value inside the files a run folder holds


def _edit(path: Path, key_path: list, value) -> None:
    doc = json.loads(path.read_text())
    node = doc
    for k in key_path[:-1]:
        node = node[k]
    node[key_path[-1]] = value
    path.write_text(json.dumps(doc))


SOLUTION = [  # (keys, value, what the line says)
    (["metrics"], [], "metrics must be an object (a run's metrics) or null, not a list"),
    (["metrics", "rel_l2"], "x", 'metrics["rel_l2"] must be an object of numbers'),
    (["metrics", "rel_l2", "u"], "0.1", 'metrics["rel_l2"]["u"] must be a number or null, '
                                        'not the text "0.1"'),
    (["metrics", "params"], [1], 'metrics["params"] must be an object of numbers'),
    (["metrics", "loss"], {"pde": {"a": 1}}, 'metrics["loss"]["pde"] must be a number'),
    (["metrics", "plots"], "loss.png", 'metrics["plots"] must be a list'),
    (["metrics", "stages"], [1], 'metrics["stages"][0] must be an object'),
    (["resolution"], "201", "resolution must be an integer or a list of integers"),
    (["resolution"], [201, "a"], 'resolution[1] must be an integer, not the text "a"'),
    (["resolution"], -5, "resolution -5: give an integer of at least 2"),
    (["resolution"], [10**9], "more than 50,000,000"),
    (["seed"], "0", 'seed must be an integer, not the text "0"'),
    (["precision"], 32.0, "precision must be 32 or 64, not the number 32.0"),
    (["reloadable"], "yes", "reloadable must be true or false"),
    (["problem"], [], "problem must be an object (the problem as data) or null, not a list"),
    (["problem", "name"], 5, "problem[\"name\"] must be text, not the number 5"),
    (["windows"], {"a": 1}, "windows must be a list of the time windows' edges"),
    (["model", "width"], "30", "model: MLP(width=...) must be an integer"),
]


@pytest.mark.parametrize("keys, value, says", SOLUTION,
                         ids=["/".join(map(str, k)) + f"={v!r}"[:20] for k, v, _ in SOLUTION])
def test_wrong_kinds_in_solution_json(base, tmp_path, capsys, keys, value, says):
    run = _copy(base, tmp_path)
    _edit(run / "solution.json", keys, value)
    _line(capsys, ["predict", run, "--points", base / "pts.csv"],
          f"{run / 'solution.json'}: ", says)


def test_wrong_kinds_in_history_rows(base, tmp_path, capsys):
    from pinn.train import read_history

    run = _copy(base, tmp_path)
    path = run / "history.jsonl"
    good = path.read_text()
    n = good.count("\n") + 1
    for row, says in [({"step": "20"}, 'step must be an integer, not the text "20"'),
                      ({"step": 5, "loss": [1]}, "loss must be a number or null, not a list"),
                      ({"step": 5, "loss.pde": "x"}, "loss.pde must be a number or null"),
                      ({"step": 5, "eval.rel_l2_u": {}}, "eval.rel_l2_u must be a number"),
                      ({"step": 5, "event": 7}, "event must be text or null"),
                      ({"step": True}, "step must be an integer, not true"),
                      ([1, 2], "must hold an object (a row of the training history), not a "
                               "list")]:
        path.write_text(good + json.dumps(row) + "\n")
        with pytest.raises(io.BadFile, match=f"line {n}: ") as err:
            read_history(path)
        assert says in str(err.value)
    path.write_text(good + '{"step": 30, "loss": 0.1, "lo')  # a torn last line: skipped
    assert len(read_history(path)) == n - 1
    path.write_text(good + json.dumps({"step": 25, "loss": "low"}) + "\n")
    _line(capsys, ["plot", run], f"{path}, line {n}: loss must be a number or null, not the "
          'text "low"', "remove that line, or the file")
    for p in ("solution.json", "params.npz", "metrics.json"):  # as if cut after step 20
        (run / p).unlink()
    _line(capsys, ["solve", "--resume", "--out", run, "--quiet"], f"{path}, line {n}: ")


def test_wrong_kinds_in_metrics_json(base, tmp_path, capsys):
    from pinn.report.metrics import read_metrics

    run = _copy(base, tmp_path)
    path = run / "metrics.json"
    good = json.loads(path.read_text())
    for key, value, says in [("rel_l2", {"u": "small"}, 'rel_l2["u"] must be a number'),
                             ("wall_seconds", "1 s", "wall_seconds must be a number or null"),
                             ("n_params", 1.5, "n_params must be an integer or null"),
                             ("param_grid", [{"a": 1}], 'param_grid[0]["rel_l2"] is missing'),
                             ("up_to_constant", "u", "up_to_constant must be a list")]:
        path.write_text(json.dumps({**good, key: value}))
        with pytest.raises(io.BadFile, match="pinn plot") as err:
            read_metrics(run)
        assert str(err.value).startswith(f"{path}: {says}"), err.value
    path.write_text("[]")
    _line(capsys, ["compare", base / "rod.yaml", "--pinn", run, "--out", tmp_path / "c", "-q"],
          f"{path}: must hold an object (a run's metrics), not a list")
    assert not (tmp_path / "c" / "compare.md").exists()


def test_wrong_kinds_in_command_json(base, tmp_path, capsys):
    run = _copy(base, tmp_path)
    for p in ("solution.json", "params.npz", "metrics.json"):
        (run / p).unlink()
    path = run / io.COMMAND_FILE
    for doc, says in [({"file": 5, "overrides": []}, "file must be text, not the number 5"),
                      ({"file": "a.yaml", "overrides": "x"}, "overrides must be a list"),
                      ({"file": "a.yaml", "overrides": [None]}, "overrides[0] must be text"),
                      ({"file": "a.yaml"}, "overrides is missing"),
                      ([], "must hold an object")]:
        path.write_text(json.dumps(doc))
        _line(capsys, ["solve", "--resume", "--out", run, "--quiet"], f"{path}: {says}",
              "pinn solve FILE --out")


# ---------------------------------------------------------------------------
# export sidecars: their values, and whether they describe the graph beside them


def _artefact(base, tmp_path, which: str = "two") -> Path:
    src = base / "two" / "rod.stablehlo" if which == "two" else base / "run" / "export" / (
        "rod.stablehlo")
    dst = tmp_path / which / "rod.stablehlo"
    dst.parent.mkdir()
    shutil.copy(src, dst)
    shutil.copy(src.with_name(src.name + ".json"), dst.with_name(dst.name + ".json"))
    return dst


@pytest.mark.parametrize("outputs", [["u"], ["u", "u_x", "u_xx"]], ids=["fewer", "more"])
def test_a_sidecar_with_other_outputs_than_its_graph_is_refused(base, tmp_path, capsys,
                                                                 outputs):
    """A sidecar edited to agree with itself (outputs, expressions, check) but not with the
    graph, which gives u and D(u, x): refused, naming the sidecar and both counts."""
    art = _artefact(base, tmp_path)
    side = art.with_name(art.name + ".json")
    meta = json.loads(side.read_text())
    meta.update(outputs=outputs, expressions={o: o for o in outputs})
    meta["check"].update(rel_l2=dict.fromkeys(outputs, 0.0), max_abs=dict.fromkeys(outputs, 0.0))
    side.write_text(json.dumps(meta))
    _line(capsys, ["predict", art, "--points", base / "pts.csv"],
          f"{side}: its outputs name {len(outputs)} column", "but rod.stablehlo gives 2; "
          "the sidecar is not this file's: export again")


def test_a_sidecar_next_to_another_graph_is_refused(base, tmp_path, capsys):
    one, two = _artefact(base, tmp_path, "one"), _artefact(base, tmp_path, "two")
    shutil.copy(two, one)  # the graph of u and D(u, x) under the sidecar of u alone
    _line(capsys, ["predict", one, "--points", base / "pts.csv"],
          f"{one}.json: its outputs name 1 column (u) but rod.stablehlo gives 2")
    _edit(two.with_name(two.name + ".json"), ["sha256"], "0" * 64)  # another file's digest
    _line(capsys, ["predict", two, "--points", base / "pts.csv"],
          f"{two}.json: its sha256 is not that of rod.stablehlo")


SIDECAR = [  # (key, value, what the line says)
    ("outputs", ["v", "w"], "outputs are (v, w) but the keys of expressions are (u, D(u, x))"),
    ("outputs", "u", 'outputs must be a list of names, not the text "u"'),
    ("outputs", ["u", "u"], "outputs must name each column once, u appears twice"),
    ("outputs", [], "outputs must name each column once, none named"),
    ("inputs", ["x", 1], "inputs[1] must be text, not the number 1"),
    ("inputs", ["x", "y"], "inputs (x, y) are not the coordinates (x) then the parametric"),
    ("kind", "tflite", 'kind must be one of stablehlo, onnx, not the text "tflite"'),
    ("version", "1", 'version must be an integer, not the text "1"'),
    ("normalisation", [], "normalisation must be an object, not a list"),
    ("parametric_inputs", {"a": 1}, "parametric_inputs must be a list of names or null"),
    ("sha256", None, "sha256 must be a SHA-256 digest"),
]


@pytest.mark.parametrize("key, value, says", SIDECAR,
                         ids=[f"{k}={v!r}"[:24] for k, v, _ in SIDECAR])
def test_wrong_kinds_in_a_sidecar(base, tmp_path, capsys, key, value, says):
    art = _artefact(base, tmp_path)
    side = art.with_name(art.name + ".json")
    _edit(side, [key], value)
    _line(capsys, ["predict", art, "--points", base / "pts.csv"], f"{side}: {says}",
          "export again")


def test_a_box_of_the_wrong_kind_under_param(base, tmp_path, capsys):
    art = _artefact(base, tmp_path, "one")
    side = art.with_name(art.name + ".json")
    _edit(side, ["normalisation", "box", "x"], [0])
    _line(capsys, ["predict", art, "--points", base / "pts.csv", "--param", "a=1"],
          f'{side}: normalisation["box"]["x"] must be a pair of numbers [lo, hi], not a list')
