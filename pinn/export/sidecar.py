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

:func:`read` checks the sidecar (the kinds of its values: :data:`SIDECAR`; names given
once; inputs and outputs that agree with ``coordinates``, ``parametric_inputs`` and
``expressions``), :func:`check_artefact` that it describes the file beside it (the number
of columns the graph takes and gives, and its digest), and :func:`sidecar_path` names it;
nothing here imports JAX.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path

from pinn import io

__all__ = ["SUFFIX", "FORMAT", "VERSION", "KINDS", "SIDECAR", "sidecar_path", "write", "read",
           "check_artefact", "digest", "versions"]

SUFFIX = ".json"
FORMAT = "pinn-export"
VERSION = 1
#: the formats an artefact may be (``kind``)
KINDS = ("stablehlo", "onnx")

_NAMES = io.list_of(io.TEXT, "a list of names")
_PAIR = io.Kind("a pair of numbers [lo, hi]", lambda v: isinstance(v, list) and len(v) == 2,
                items=io.NUMBER)

#: What a sidecar holds at the keys pinn reads (other keys are free).
SIDECAR = io.mapping({
    "version": io.INTEGER,
    "kind": io.Kind(f"one of {', '.join(KINDS)}", lambda v: v in KINDS),
    "inputs": _NAMES, "outputs": _NAMES, "coordinates": _NAMES,
    "parametric_inputs": _NAMES.or_null(),
    "expressions": io.mapping_of(io.TEXT, "an object ({output: expression})"),
    "normalisation": io.mapping({"box": io.mapping_of(_PAIR, "an object ({input: [lo, hi]})")}),
    "check": io.mapping(dict.fromkeys(("rel_l2", "max_abs"), io.mapping_of(
        io.NUMBER.or_null(), "an object ({output: number})"))),
    "sha256": io.Kind("a SHA-256 digest (64 hexadecimal digits)", lambda v: isinstance(
        v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)),
}, "an object (an export sidecar)", required=("kind", "inputs", "outputs", "sha256"))

_AGAIN = "export again (`pinn export RUN` writes the file and its sidecar together)"


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
    """The sidecar of ``artefact``; ``ValueError`` naming the fix when it is missing, and
    :class:`pinn.io.BadFile` (one) when it is not a pinn export's or its values are not of
    the kinds :data:`SIDECAR` names, or its names do not agree."""
    p = sidecar_path(artefact)
    if not p.is_file():
        raise ValueError(f"{artefact}: no sidecar {p.name} next to it; export with "
                         "`pinn export RUN` (it writes both files)")
    meta = io.read_json_file(p, "export sidecar", limit=16 * 2**20)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise io.BadFile(f"{p}: not a pinn export sidecar (no format: {FORMAT!r})")
    version = meta.get("version", 0)
    if io.INTEGER.test(version) and version > VERSION:
        raise io.BadFile(f"{p}: sidecar version {version} is newer than this pinn reads "
                         f"({VERSION}); upgrade pinn")
    io.check_json(meta, SIDECAR, p, f"the sidecar is damaged: {_AGAIN}")
    inputs, outputs = meta["inputs"], meta["outputs"]
    for key, names in (("inputs", inputs), ("outputs", outputs)):
        twice = sorted({n for n in names if names.count(n) > 1})
        if not names or twice:
            raise io.BadFile(f"{p}: {key} must name each column once, "
                             + (f"{', '.join(twice)} appears twice" if twice else "none named")
                             + f"; {_AGAIN}")
    ranged = meta.get("parametric_inputs") or []
    coords = meta.get("coordinates", inputs[:len(inputs) - len(ranged)])
    if coords + ranged != inputs:
        raise io.BadFile(f"{p}: inputs ({', '.join(inputs)}) are not the coordinates "
                         f"({', '.join(coords)}) then the parametric inputs "
                         f"({', '.join(ranged) or 'none'}); {_AGAIN}")
    check = meta.get("check") or {}
    for key, named in (("expressions", meta.get("expressions")),
                       ('check["rel_l2"]', check.get("rel_l2")),
                       ('check["max_abs"]', check.get("max_abs"))):
        if named is not None and list(named) != outputs:
            raise io.BadFile(f"{p}: outputs are ({', '.join(outputs)}) but the keys of {key} "
                             f"are ({', '.join(named)}); {_AGAIN}")
    return meta


def check_artefact(meta: dict, artefact: str | os.PathLike, inputs: int | None,
                   outputs: int | None) -> None:
    """Refuse (:class:`pinn.io.BadFile`, naming the sidecar) a sidecar ``meta`` that does not
    describe ``artefact``, whose graph takes ``inputs`` columns and gives ``outputs`` (None:
    the graph leaves it open): another number of columns, or another file's digest."""
    p, a = sidecar_path(artefact), Path(artefact)
    for key, graph in (("inputs", inputs), ("outputs", outputs)):
        names = meta[key]
        if graph is not None and graph != len(names):
            columns = f"{len(names)} column" + ("" if len(names) == 1 else "s")
            raise io.BadFile(f"{p}: its {key} name {columns} ({', '.join(names)}) but "
                             f"{a.name} {'takes' if key == 'inputs' else 'gives'} {graph}; "
                             f"the sidecar is not this file's: {_AGAIN}")
    try:
        found = digest(a)
    except OSError as exc:
        raise io.BadFile(f"{a}: cannot be read ({exc.strerror or exc}); make it readable"
                         ) from None
    if found != meta["sha256"]:
        raise io.BadFile(f"{p}: its sha256 is not that of {a.name} (the sidecar describes "
                         f"another file, or the file was changed); {_AGAIN}")
