"""The notebooks are tested artefacts: each runs top to bottom at its small size
(``PINN_NOTEBOOK_SMALL=1``) and its last cell pins one number; committed notebooks carry
no outputs.

Run one notebook: ``python -m pytest tests/test_notebooks.py -k quickstart``.
"""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ["01_quickstart", "02_burgers", "03_your_own_pde", "04_inverse_problem",
            "05_pinn_vs_fem"]
CELL_TIMEOUT = 900  # seconds per cell: generous, the CI machine may be shared
KERNEL = "pinn-notebooks"
# what the progress display leaves in a training cell's saved outputs (plain text, so that
# it reads in a saved notebook): a status line and the closing line of the run
PROGRESS_LINE = re.compile(r"step \d+/\d+ \| stage \d+/\d+ \S+ \| loss \d\.\d+e[-+]\d+")
TRAINED_LINE = re.compile(r"trained \d+/\d+ steps in ")


def training_cells(nb) -> list:
    """The code cells that train with the progress display on (``pinn.solve(...)`` or
    ``.train(...)`` without ``progress=False``)."""
    return [c for c in nb.cells if c.cell_type == "code"
            and re.search(r"pinn\.solve\(|\.train\(", c.source)
            and "progress=False" not in c.source]


def output_text(cell) -> str:
    """All the text a cell printed or displayed (streams and text/plain data)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        else:
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def test_the_five_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(path):
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert not cell.get("outputs") and cell.get("execution_count") is None, (
            f"{path.name}, cell {i}: outputs are committed; strip them (Jupyter: 'Clear All "
            "Outputs', or `jupyter nbconvert --clear-output --inplace notebooks/*.ipynb`)"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_reads_the_size_switch_first_and_pins_a_number_last(path):
    nb = nbformat.read(path, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert "PINN_NOTEBOOK_SMALL" in code[0], f"{path.name}: the first code cell sets SMALL"
    assert "assert " in code[-1], f"{path.name}: the last code cell pins a number"


def test_the_quickstart_trains_with_its_progress_shown():
    nb = nbformat.read(NOTEBOOK_DIR / "01_quickstart.ipynb", as_version=4)
    assert training_cells(nb), "01_quickstart: one training cell shows its progress"


@pytest.fixture
def kernel_env(tmp_path, monkeypatch, request):
    """A kernelspec running this very interpreter, the small size, and a JAX compilation
    cache kept between test sessions (it only skips recompiling identical programs)."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "pinn notebooks (test)", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PINN_NOTEBOOK_SMALL", "1")
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        name = request.node.callspec.id if hasattr(request.node, "callspec") else "jax"
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(cache.mkdir(f"jax-{name}")))
        monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    return tmp_path


#: run in the default suite; the others (20-25 s each, the quickstart 55 s on a loaded
#: machine) under ``-m slow``, to keep the default suite within its 10 minutes on 2 cores
#: (test_the_quickstart_trains_with_its_progress_shown runs the quickstart's training there)
FAST_NOTEBOOKS: tuple[str, ...] = ()


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=() if p.stem in FAST_NOTEBOOKS else pytest.mark.slow)
    for p in NOTEBOOKS], ids=lambda p: p.stem)
def test_notebook_runs_at_small_size(path, kernel_env):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError (with the cell and traceback) on failure
    saved = kernel_env / path.name  # the executed notebook as a file, read back
    nbformat.write(nb, saved)
    for cell in training_cells(nbformat.read(saved, as_version=4)):  # issue 20: progress
        text = output_text(cell)
        assert PROGRESS_LINE.search(text) and TRAINED_LINE.search(text), (
            f"{path.name}: no progress in the outputs of the cell\n{cell.source}\n"
            f"outputs: {text[:1000]!r}")
