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


# ---------------------------------------------------------------------------
# the history: only a torn last line is an interrupted append; any other line that is not
# JSON is damage, named by its file and line


def test_a_bad_line_inside_the_history_is_damage_a_torn_last_line_is_not(base, tmp_path,
                                                                        capsys):
    from pinn.train import read_history

    run = _copy(base, tmp_path)
    path = run / "history.jsonl"
    good = path.read_text()
    lines = good.splitlines(keepends=True)
    n = len(lines)
    for bad, says in [('{"step": 30, "lo', "not a JSON row (Unterminated string"),
                      ("\x00\x00\x00", "not a JSON row (Expecting value at column 1)"),
                      ("[" * 50_000, "not a JSON row (nested too deeply)")]:
        # inside the file (line 2), and last but ended by its newline: both damage
        for text, at in [(lines[0] + bad + "\n" + "".join(lines[1:]), 2),
                         (good + bad + "\n", n + 1)]:
            path.write_text(text)
            with pytest.raises(io.BadFile) as err:
                read_history(path)
            assert str(err.value).startswith(f"{path}, line {at}: {says}"), err.value
        path.write_text(good + bad)  # the last line, cut short: an interrupted append
        assert len(read_history(path)) == n
    path.write_text(lines[0] + '{"step": 5, "lo\n' + "".join(lines[1:]))
    _line(capsys, ["plot", run], f"{path}, line 2: not a JSON row", "remove that line, or "
          "the file")


def test_resume_after_a_kill_that_tore_the_last_line(base, tmp_path, capsys):
    """Killed after the checkpoint of step 20, half way through appending a row: --resume
    drops the torn row and finishes; the history it leaves is whole."""
    from pinn.train import read_history

    run = _copy(base, tmp_path)
    for p in ("solution.json", "params.npz", "metrics.json"):
        (run / p).unlink()
    path = run / "history.jsonl"
    rows = read_history(path)
    path.write_text(path.read_text() + '{"step": 21, "stage": 0, "loss": 0.0')
    assert main(["solve", "--resume", "--out", str(run), "--quiet"]) == 0, capsys.readouterr()
    assert path.read_text().endswith("}\n")
    assert [r["step"] for r in read_history(path)] == [r["step"] for r in rows]
    assert json.loads((run / "metrics.json").read_text())["steps_done"] == 20


# ---------------------------------------------------------------------------
# export-fields: what to do says --out as the command takes it


def test_export_fields_says_out_only_as_given(base, tmp_path, monkeypatch, capsys):
    run = _copy(base, tmp_path)
    (run / "fields" / "rod.csv").mkdir(parents=True)  # a folder in the way of the default
    _line(capsys, ["export-fields", run, "-f", "csv"],
          f"{run / 'fields' / 'rod.csv'}: a folder is in the way of the file; remove it or "
          "give --out FILE (or a folder) to write the fields elsewhere",
          absent=[f"--out {run}", "another --out"])
    _line(capsys, ["export-fields", run, "-f", "csv", "--out", run / "fields"],
          "a folder is in the way of the file; remove it or choose another --out")
    (run / "fields" / "rod.csv").rmdir()
    real = os.access  # the folder is not writable (root passes any chmod)
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: not (
        mode & os.W_OK and Path(path) == run / "fields") and real(path, mode, *a, **k))
    _line(capsys, ["export-fields", run, "-f", "csv"],
          f"{run / 'fields'} is not writable; make it writable or give --out FILE",
          absent=["--out " + str(run)])
    monkeypatch.undo()
    (run / "fields").rmdir()
    (run / "fields").write_text("x")
    _line(capsys, ["export-fields", run, "-f", "csv"],
          f"{run / 'fields'} is a file, not a folder; give --out FILE")


# ---------------------------------------------------------------------------
# pinn sweep's per-run log: a new file (never through a link, never a FIFO), read from its
# end; a failure names it


def _quick_runs(monkeypatch, stderr: str, code: int = 2) -> None:
    """Each run of a sweep is a process that writes the text of the Python expression
    ``stderr`` and exits with ``code``."""
    import sys

    from pinn import sweep as S

    script = f"import sys; sys.stderr.write({stderr}); sys.exit({code})"
    monkeypatch.setattr(S.RunSpec, "command", lambda self: [sys.executable, "-c", script])


def test_a_sweep_log_is_never_written_through_a_link_nor_a_fifo(tmp_path, rod, monkeypatch):
    from pinn import sweep as S

    _quick_runs(monkeypatch, "'x' * 300_000 + '\\npinn: the last words\\n'")
    spec = S.plan(rod, ["training.seed=0"], tmp_path / "sw")[0]
    spec.folder.mkdir(parents=True)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    (spec.folder / "sweep.log").symlink_to(outside)
    rec = S._run_one(spec)
    assert rec["status"] == "failed" and rec["error"] == "the last words"  # (its end only)
    assert outside.read_text() == "keep me"
    log = spec.folder / "sweep.log"
    assert log.is_file() and not log.is_symlink() and log.stat().st_size > 300_000
    log.unlink()
    os.mkfifo(log)  # opening it to write would wait for a reader for ever
    with pytest.raises(OSError, match="a FIFO is there") as err:
        S._run_one(spec)
    assert err.value.filename == str(log)
    log.unlink()
    _quick_runs(monkeypatch, "__import__('time').sleep(60) or ''")  # stopped by the timeout
    rec = S._run_one(spec, timeout=0.5)
    assert rec["error"] == "killed by signal 9"
    assert log.read_text().endswith("pinn sweep: stopped after the timeout of 0.5 s\n")


def test_a_sweep_log_that_cannot_be_written_names_it(tmp_path, rod, monkeypatch, capsys):
    _quick_runs(monkeypatch, "'pinn: never run'")
    real = os.open

    def denied(path, *a, **k):
        if str(path).endswith("sweep.log"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    log = tmp_path / "sw" / "000-seed=0" / "sweep.log"
    _line(capsys, ["sweep", rod, "--vary", "training.seed=0..1", "--out", tmp_path / "sw",
                   "--quiet"],
          f"{log}: cannot be written (Permission denied); sweep.log was not created; make its "
          "folder writable or give another --out")
    assert not list((tmp_path / "sw").glob("*/sweep.json"))  # no run was started


# ---------------------------------------------------------------------------
# the loggers: a full disk or no permission names the event file / the MLflow store


class _Info:
    resume_meta, start_step = None, 0
    stages = ()


class _Event:
    kind, step = "chunk", 10
    row = {"step": 10, "loss": 0.5, "loss.pde": 0.25, "message": "stage 1 stopped"}


def _tensorboardx(monkeypatch) -> None:
    """tensorboardX, or (where the extra is not installed) a stand-in for the three things
    the logger takes from it: its Event protobufs, its summaries and its CRC."""
    try:
        import tensorboardX  # noqa: F401
        return
    except ImportError:
        pass
    import importlib.machinery
    import sys
    import types

    class Event:
        def __init__(self, **fields):
            self.fields = fields

        def SerializeToString(self):
            return repr(sorted(self.fields)).encode()

    class SessionLog:
        START = 1

        def __init__(self, **fields):
            pass

    mods = {name: types.ModuleType(name) for name in (
        "tensorboardX", "tensorboardX.proto", "tensorboardX.proto.event_pb2",
        "tensorboardX.summary", "tensorboardX.record_writer")}
    mods["tensorboardX"].__spec__ = importlib.machinery.ModuleSpec("tensorboardX", None)
    mods["tensorboardX.proto.event_pb2"].Event = Event
    mods["tensorboardX.proto.event_pb2"].SessionLog = SessionLog
    mods["tensorboardX.summary"].scalar = lambda tag, value: (tag, value)
    mods["tensorboardX.summary"].text = lambda tag, text: (tag, text)
    mods["tensorboardX.record_writer"].masked_crc32c = lambda data: 0
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)


def test_tensorboard_full_disk_and_no_permission_name_the_event_file(tmp_path, monkeypatch):
    from pinn.train import TensorBoard

    _tensorboardx(monkeypatch)
    logdir = tmp_path / "tb"
    tb = TensorBoard(logdir, flush_secs=0)
    tb.init(_Info())
    tb.on_chunk(_Event())
    _fail_writes(monkeypatch, "tfevents")  # the disk fills up
    with pytest.raises(io.WriteError) as err:
        tb.on_chunk(_Event())
    assert err.value.filename == str(tb.path) and tb.path.parent == logdir
    assert str(err.value).endswith("cannot be written (No space left on device); the "
                                   "scalars written before are kept")
    tb.close(None)  # the run's error wins: closing says nothing more
    monkeypatch.undo()
    _tensorboardx(monkeypatch)
    real = os.open

    def denied(path, *a, **k):
        if "tfevents" in str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    tb = TensorBoard(logdir)
    with pytest.raises(io.WriteError, match="Permission denied.*was not created") as err:
        tb.init(_Info())
    assert Path(err.value.filename).name.startswith("events.out.tfevents.")


def test_solve_log_tensorboard_on_a_full_disk(base, tmp_path, monkeypatch, capsys):
    """No traceback from a writer thread, no hang: one line naming the event file and how
    to continue."""
    _tensorboardx(monkeypatch)
    run = tmp_path / "run"
    _fail_writes(monkeypatch, "tfevents")
    _line(capsys, ["solve", base / "rod.yaml", "--out", run, "--quiet", "--log", "tensorboard"],
          f"{run / 'tensorboard' / 'events.out.tfevents.'}",
          "cannot be written (No space left on device); the scalars written before are kept",
          f"free some space, then continue with: pinn solve --resume --out {run}")


def _mlflow(monkeypatch, fault: BaseException):
    """A stand-in for mlflow whose store fails with ``fault`` when metrics are logged (MLflow
    raises its own exception while handling the OSError, as its file store does)."""
    import importlib.machinery
    import sys
    import types

    class MlflowException(Exception):
        pass

    class Client:
        def __init__(self, tracking_uri=None):
            self.ended = False

        def create_run(self, exp_id, run_name=None):
            return types.SimpleNamespace(info=types.SimpleNamespace(run_id="r1"))

        def log_param(self, *a):
            pass

        def log_batch(self, run_id, metrics=()):
            try:
                raise fault
            except OSError as exc:
                raise MlflowException(f"INTERNAL_ERROR: {exc}") from None  # (its context)

        set_tag = log_param

        def set_terminated(self, run_id):
            self.ended = True

    mods = {name: types.ModuleType(name) for name in ("mlflow", "mlflow.tracking",
                                                      "mlflow.entities")}
    mods["mlflow"].__spec__ = importlib.machinery.ModuleSpec("mlflow", None)
    mods["mlflow.tracking"].MlflowClient = Client
    mods["mlflow.entities"].Metric = lambda *a: a
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return MlflowException


@pytest.mark.parametrize("fault, named", [
    (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "mlruns"),
    (PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/store/0/r1/metrics/loss"),
     "/store/0/r1/metrics/loss")], ids=["full", "denied"])
def test_mlflow_store_that_cannot_be_written_names_it(tmp_path, monkeypatch, fault, named):
    from pinn.train import MLflow

    _mlflow(monkeypatch, fault)
    store = tmp_path / "my store" / "mlruns"
    logger = MLflow(store.as_uri())
    logger.init(_Info())
    with pytest.raises(io.WriteError) as err:
        logger.on_chunk(_Event())
    assert err.value.filename == (str(store) if named == "mlruns" else named)
    assert f"cannot be written ({fault.strerror}); the metrics logged before are kept" in str(
        err.value)
    logger.close(None)  # nothing more is sent to a store that failed


def test_mlflow_errors_that_are_not_the_file_systems_pass_unchanged(monkeypatch):
    from pinn.train import MLflow

    broken = _mlflow(monkeypatch, OSError())
    logger = MLflow("http://tracking.invalid")
    logger.init(_Info())
    logger._client.log_batch = lambda *a, **k: (_ for _ in ()).throw(broken("bad metric"))
    with pytest.raises(broken, match="bad metric"):
        logger.on_chunk(_Event())
