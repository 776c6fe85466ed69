"""The JSON sidecar next to every exported file: what goes in, what comes out, how exact.

``<artefact>.json`` (``heat2d.stablehlo`` -> ``heat2d.stablehlo.json``) holds:

- ``format``: ``"pinn-export"``, ``version``: 1, ``kind``: ``"stablehlo"`` or ``"onnx"``,
  ``artefact``: the file's name, ``sha256``: its digest, ``bytes``: its size;
- ``inputs``: the columns of ``points[N, d]`` (the coordinates in order, listed again in
  ``coordinates``, then the parametric inputs, in ``parametric_inputs``: none until
  ranged parameters exist); ``outputs``: the columns of
  ``values[N, k]``; ``expressions``: each output's expression in the PDE language;
- ``io_dtype`` (always ``float32``), ``dtype`` (the precision inside the graph),
  ``quantization`` (``null`` or how the weights were quantised);
- ``normalisation``: the units of the inputs and outputs and the box the graph maps to
  ``[-1, 1]`` itself; ``parameters``: the PDE parameters baked into the graph;
- ``check``: the artefact run on the run's evaluation grid against the trained model
  (:meth:`pinn.Solution.evaluate`, in the run's precision): ``rel_l2`` and ``max_abs`` per
  output, the number of ``points`` and the ``grid`` shape;
- ``stablehlo`` (platforms, calling convention version, shapes) or ``onnx`` (opset,
  input and output names), ``trained_precision``, ``calling_convention`` (in words);
- ``versions`` (JAX, jaxlib, pinn and the exporter's libraries), ``problem``, ``run``,
  ``created`` and ``source``: the problem's source text (the run's ``config.yaml``).

:func:`read` checks the sidecar and :func:`sidecar_path` names it; nothing here imports
JAX.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path

__all__ = ["SUFFIX", "FORMAT", "VERSION", "sidecar_path", "write", "read", "digest",
           "versions"]

SUFFIX = ".json"
FORMAT = "pinn-export"
VERSION = 1


def sidecar_path(artefact: str | os.PathLike) -> Path:
    p = Path(artefact)
    return p.with_name(p.name + SUFFIX)


def digest(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def versions(*extra: str) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("jax", "jaxlib", "pinn", *extra):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def write(artefact: str | os.PathLike, meta: dict) -> Path:
    """Write ``meta`` as the sidecar, adding (in place) the file's name, size, digest and
    the date; returns the sidecar's path."""
    from pinn.io import clean_json, write_text

    p = Path(artefact)
    meta.update({"artefact": p.name, "bytes": p.stat().st_size, "sha256": digest(p),
                 "created": _dt.datetime.now().astimezone().isoformat(timespec="seconds")})
    full = {"format": FORMAT, "version": VERSION, **meta}
    out = sidecar_path(p)
    write_text(out, json.dumps(clean_json(full), indent=1) + "\n")
    return out


def read(artefact: str | os.PathLike) -> dict:
    """The sidecar of ``artefact``; ``ValueError`` naming the fix when it is missing or is
    not a pinn export's."""
    p = sidecar_path(artefact)
    if not p.is_file():
        raise ValueError(f"{artefact}: no sidecar {p.name} next to it; export with "
                         "`pinn export RUN` (it writes both files)")
    from pinn.io import read_json_file

    meta = read_json_file(p, "export sidecar", limit=16 * 2**20)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{p}: not a pinn export sidecar (no format: {FORMAT!r})")
    version = meta.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"{p}: the sidecar's version must be an integer, got {version!r}; "
                         "export again")
    if version > VERSION:
        raise ValueError(f"{p}: sidecar version {meta.get('version')} is newer than this "
                         f"pinn reads ({VERSION}); upgrade pinn")
    for key in ("kind", "inputs", "outputs"):
        if key not in meta:
            raise ValueError(f"{p}: the sidecar has no {key!r}; export again")
    return meta
