"""Deploy a trained solution: a static graph that runs without ``pinn``.

:func:`export` writes any expressions of a :class:`pinn.Solution` (fields, derivatives,
fluxes, PDE residuals: the derivative engine compiles them into the graph) as

- StableHLO (:mod:`pinn.export.stablehlo`, through ``jax.export``): a consumer needs only
  ``jax``;
- ONNX (:mod:`pinn.export.onnx`, through ``jax2onnx``, the extra ``pinn[onnx]``): a
  consumer needs only ``onnxruntime`` and ``numpy``;

each with a JSON sidecar (:mod:`pinn.export.sidecar`). One calling convention for every
format and precision: ``f(points[N, d] float32) -> values[N, k] float32``, the columns of
``points`` being the sidecar's ``inputs`` (the coordinates in order, then the parametric
inputs) and those of ``values`` its ``outputs``; ``N`` is any number of points. Every
artefact is run at export time on the run's evaluation grid against
:meth:`pinn.Solution.evaluate`, and its error is stored in the sidecar (``check``).
:func:`load` reads an artefact back (what ``pinn predict FILE`` uses).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pinn.export import sidecar
from pinn.export.graph import DTYPES, ExportError, Graph, Program, build_graph, split_outputs

__all__ = ["export", "export_run", "load", "source_of", "Artefact", "Loaded", "ExportError",
           "Graph", "Program", "build_graph", "split_outputs", "FORMATS", "DTYPES",
           "FLOAT32_TOLERANCE"]

FORMATS = sidecar.KINDS
#: a float32 artefact further than this (relative L2, any output) from the model is warned of
FLOAT32_TOLERANCE = 1e-5


def _module(kind: str):
    if kind == "stablehlo":
        from pinn.export import stablehlo as m
    elif kind == "onnx":
        from pinn.export import onnx as m
    else:
        raise ExportError(f"unknown export format {kind!r}; choose stablehlo, onnx or all")
    return m


@dataclass(frozen=True)
class Artefact:
    """One exported file: ``path``, its ``sidecar`` and what the sidecar holds (``meta``)."""

    path: Path
    sidecar: Path
    meta: dict

    @property
    def check(self) -> dict:
        return self.meta.get("check") or {}


@dataclass(frozen=True)
class Loaded:
    """An exported file read back: ``fn(points[N, d]) -> values[N, k]`` (its format's
    :class:`~pinn.export.graph.Program`) and its sidecar."""

    path: Path
    meta: dict
    fn: Program

    @property
    def inputs(self) -> list[str]:
        return list(self.meta["inputs"])

    @property
    def outputs(self) -> list[str]:
        return list(self.meta["outputs"])

    def __call__(self, points) -> np.ndarray:
        pts = np.asarray(points, dtype=np.float32)
        if pts.ndim != 2 or pts.shape[1] != len(self.inputs):
            raise ValueError(f"points must be an array [N, {len(self.inputs)}] with columns "
                             f"{', '.join(self.inputs)}; got shape {pts.shape}")
        return np.asarray(self.fn(pts))

    def evaluate(self, points) -> dict[str, np.ndarray]:
        """``{output: values[N]}``, as :meth:`pinn.Solution.evaluate` gives them."""
        vals = self(points)
        return {k: vals[:, i] for i, k in enumerate(self.outputs)}


def load(path: str | os.PathLike) -> Loaded:
    """Read an artefact written by :func:`export` (its kind from the sidecar); a sidecar
    that does not describe it (its columns, its digest) is refused, naming the sidecar
    (:func:`pinn.export.sidecar.check_artefact`)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such exported file")
    meta = sidecar.read(p)
    program = _module(meta["kind"]).load(p)
    sidecar.check_artefact(meta, p, program.inputs, program.outputs)
    return Loaded(p, meta, program)


def _errors(values: np.ndarray, ref: np.ndarray, names: Sequence[str]) -> dict:
    rel, mx = {}, {}
    for i, n in enumerate(names):
        a = np.asarray(values[:, i], np.float64)
        b = np.asarray(ref[:, i], np.float64)
        diff = a - b
        norm = float(np.linalg.norm(b))
        rel[n] = (float(np.linalg.norm(diff) / norm) if norm > 0
                  else float(np.sqrt(np.mean(diff ** 2))))
        mx[n] = float(np.max(np.abs(diff))) if diff.size else 0.0
    return {"rel_l2": rel, "max_abs": mx}


def _names(formats, dtypes) -> list[tuple[str, str]]:
    fs = list(FORMATS) if formats in ("all", ("all",), ["all"]) else (
        [formats] if isinstance(formats, str) else list(formats))
    ds = [dtypes] if isinstance(dtypes, str) else list(dtypes)
    for f in fs:
        _module(f)
    bad = [d for d in ds if d not in DTYPES]
    if bad:
        raise ExportError(f"unknown dtype {bad[0]!r}; choose from {', '.join(DTYPES)}")
    pairs = [(f, d) for f in fs for d in ds]
    if len(pairs) > 1:  # combinations a format cannot hold are left out, not refused
        kept = [(f, d) for f, d in pairs if (f, d) not in _UNSUPPORTED]
        if len(kept) < len(pairs):
            left = ", ".join(f"{f} {d}" for f, d in pairs if (f, d) in _UNSUPPORTED)
            warnings.warn(f"not exported: {left} (see `pinn export --help`)", stacklevel=3)
        pairs = kept or pairs[:1]
    return pairs


#: format and precision pairs that cannot be exported (the writer says why)
_UNSUPPORTED = (("stablehlo", "int8"), ("onnx", "bfloat16"))


def _file_name(problem: str, kind: str, dtype: str) -> str:
    return problem + ("" if dtype == "float32" else f"-{dtype}") + _module(kind).SUFFIX


def _meta(solution, graph: Graph, kind: str, dtype: str, source: str | None, run) -> dict:
    problem = solution.problem
    lo, hi = problem.input_box
    learned = solution.learned_params()
    params = {p.name: learned.get(p.name, p.value) for p in problem.params
              if p.range is None}
    extra = ("jax2onnx", "onnx", "onnxruntime") if kind == "onnx" else ()
    return {
        "kind": kind, "problem": problem.name, "run": None if run is None else str(run),
        "inputs": graph.inputs + graph.parametric, "coordinates": graph.inputs,
        "parametric_inputs": graph.parametric, "outputs": graph.outputs,
        "expressions": graph.exprs,
        "calling_convention": f"values[N, {len(graph.outputs)}] = f(points[N, "
                              f"{len(graph.inputs) + len(graph.parametric)}]), float32 in "
                              "and out; columns in the order of inputs and outputs",
        "io_dtype": "float32", "dtype": "float32" if dtype == "int8" else dtype,
        "quantization": None,
        "normalisation": {
            "inputs": "the problem's own coordinates (then its ranged parameters), in its "
                      "units; the graph maps the box below to [-1, 1] itself",
            "box": {n: [float(a), float(b)] for n, a, b in zip(graph.inputs + graph.parametric,
                                                             lo, hi, strict=True)},
            "outputs": "the problem's units (no output scaling)"},
        "parameters": params, "trained_precision": f"float{solution.precision}",
        "versions": sidecar.versions(*extra), "source": source,
    }


def export(solution, out: str | os.PathLike, *, formats: str | Sequence[str] = "stablehlo",
           outputs: Sequence[str] | str | None = None,
           dtypes: str | Sequence[str] = "float32", source: str | None = None, run=None,
           resolution=None) -> list[Artefact]:
    """Export ``outputs`` of a trained ``solution`` into the folder ``out`` (or, for one
    artefact, the file ``out`` when it ends in that format's suffix).

    ``formats``: ``"stablehlo"``, ``"onnx"``, a list of them, or ``"all"``;
    ``outputs``: names or expressions in the PDE language (a list, or one comma-separated
    string; default: the fields); ``dtypes``: the precision inside the graph, one or
    several of ``float32``, ``float16``, ``bfloat16`` and ``int8`` (ONNX only: dynamic
    quantisation of the weights); ``source``: the problem's source text for the sidecar;
    ``resolution``: the evaluation grid of the check (default: the run's).
    Raises :class:`ExportError` (a ``ValueError``) for bad input, naming the fix.
    """
    from pinn import evaluate as ev

    outputs = split_outputs(outputs) if isinstance(outputs, str) else outputs
    pairs = _names(formats, dtypes)
    if any(k == "onnx" for k, _ in pairs):
        _module("onnx").require("jax2onnx", "onnx", "onnxruntime")
    graph = build_graph(solution, outputs)
    out = Path(out)
    single = len(pairs) == 1 and out.suffix == _module(pairs[0][0]).SUFFIX
    grid = ev.evaluation_grid(solution.problem,
                              solution.resolution if resolution is None else resolution)
    pts = grid.points
    if solution.problem.ranged:  # parametric: the grid at both ends and the centre
        values = [{p.name: p.range[0] + f * (p.range[1] - p.range[0])
                   for p in solution.problem.ranged} for f in (0.0, 0.5, 1.0)]
        pts = np.concatenate([ev.with_params(solution.problem, pts, v) for v in values])
    ref_d = solution.evaluate(pts, {k: k for k in graph.outputs})
    ref = np.stack([np.broadcast_to(np.asarray(ref_d[k], np.float64), (len(pts),))
                    for k in graph.outputs], axis=1)
    done = []
    for kind, dtype in pairs:
        path = out if single else out / _file_name(solution.problem.name, kind, dtype)
        meta = _meta(solution, graph, kind, dtype, source, run)
        meta.update(_module(kind).write(graph, path, dtype))
        fn = _module(kind).load(path)
        errs = _errors(fn(pts.astype(np.float32)), ref, graph.outputs)
        meta["check"] = {"against": f"pinn.Solution.evaluate (float{solution.precision} "
                                    "model)" + (", the grid at the ranges' ends and centre"
                                                if graph.parametric else ""),
                         "points": int(len(pts)),
                         "grid": list(grid.shape), **errs}
        if dtype == "float32" and max(errs["rel_l2"].values()) > FLOAT32_TOLERANCE:
            worst = max(errs["rel_l2"], key=errs["rel_l2"].get)
            warnings.warn(f"{path.name}: {worst} is {errs['rel_l2'][worst]:.2e} (relative L2) "
                          "from the model on the evaluation grid, above "
                          f"{FLOAT32_TOLERANCE:g}", stacklevel=2)
        done.append(Artefact(path, sidecar.write(path, meta), meta))
    return done


def export_run(run_dir: str | os.PathLike, out: str | os.PathLike | None = None,
               **options) -> list[Artefact]:
    """:func:`export` the solution saved in the run folder ``run_dir`` (default ``out``:
    ``run_dir/export``), with the run's ``config.yaml`` as the source text."""
    from pinn.solution import Solution

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir}: not a run folder (train one with `pinn solve FILE`)")
    try:
        solution = Solution.load(run_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise ExportError(str(exc)) from None
    return export(solution, run_dir / "export" if out is None else out,
                  source=source_of(run_dir), run=run_dir, **options)


def source_of(run_dir: str | os.PathLike) -> str | None:
    """The problem's source text of a run folder: its resolved ``config.yaml``, or None."""
    from pinn.io import read_text_file

    cfg = Path(run_dir) / "config.yaml"
    return read_text_file(cfg, "run's configuration") if cfg.is_file() else None
