"""The persistent compilation cache (pinn.compile_cache): the folder the environment asks
for, and a second run of the same problem loading its programs instead of compiling them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinn import compile_cache

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import json, sys, jax, jax.monitoring
import pinn, pinn.config, pinn.compile_cache
# every program stored, however fast it compiled: which ones pass the 0.2 s bar depends on
# the machine's load, and the check below is that none is missing from the second run
pinn.compile_cache.MIN_COMPILE_SECONDS = 0.0
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
b = pinn.config.load(sys.argv[1], [
    "training.stages=[{ssbroyden: {}, steps: 5}]",
    "training.chunk=10", "training.points.interior=64", "training.points.boundary=16",
    "training.points.initial=16", "model.mlp.width=8", "model.mlp.depth=1",
    "evaluation.resolution=[5,5,3]"])
sol = pinn.solve(b.problem, b.model(), b.training(), progress=False)
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir,
                  "hits": sum("cache_hits" in e for e in events),
                  "misses": sum("cache_misses" in e for e in events),
                  "error": float(sol.metrics["rel_l2"]["u"])}))
"""


def _run(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN, str(ROOT / "problems" / "heat2d.yaml")],
                         env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(compile_cache.ENV, raising=False)
    monkeypatch.setenv("PINN_CACHE", str(tmp_path))  # the project's cache folder
    assert compile_cache.folder() == tmp_path / "xla"
    for off in ("off", "0", "False", " none ", ""):
        monkeypatch.setenv(compile_cache.ENV, off)
        assert compile_cache.folder() is None
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    assert compile_cache.folder() == tmp_path / "c"


@pytest.mark.slow  # 26 s; moved from the default suite to keep it within 10 minutes on 2 cores
def test_a_second_run_loads_its_programs(tmp_path):
    cache = tmp_path / "cache"
    first = _run({compile_cache.ENV: str(cache)})
    assert first["dir"] == str(cache)
    stored = sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache"))
    assert first["misses"] >= 1 and len(stored) >= 1  # at least the stage's program
    assert any(name.startswith("jit_chunk_fn-") for name in stored), stored
    second = _run({compile_cache.ENV: str(cache)})
    # every program stored by the first run is loaded, none compiled and stored again
    assert second["hits"] >= len(stored)
    assert sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache")) == stored
    assert second["error"] == pytest.approx(first["error"], rel=1e-12)  # the same programs


ENABLE = """
import json, jax
from pinn import compile_cache
print(json.dumps({"returned": str(compile_cache.enable()),
                  "dir": jax.config.jax_compilation_cache_dir}))
"""


def _enable(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", ENABLE], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_off_and_jax_own_folder_are_respected(tmp_path):
    assert _enable({compile_cache.ENV: "off"}) == {"returned": "None", "dir": None}
    own, ours = tmp_path / "jax", tmp_path / "ours"
    got = _enable({compile_cache.ENV: str(ours), "JAX_COMPILATION_CACHE_DIR": str(own)})
    assert got == {"returned": str(own), "dir": str(own)} and not ours.exists()
    assert _enable({compile_cache.ENV: str(ours)}) == {"returned": str(ours), "dir": str(ours)}
    assert ours.is_dir()


def test_an_unwritable_folder_is_skipped_with_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(compile_cache.ENV, str(blocker / "xla"))
    with pytest.warns(RuntimeWarning, match="cannot create the compilation cache folder"):
        assert compile_cache.enable() is None
