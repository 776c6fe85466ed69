"""StableHLO through :mod:`jax.export`: one serialized file, a symbolic batch size.

A consumer needs only ``jax``::

    exp = jax.export.deserialize(open("heat2d.stablehlo", "rb").read())
    values = exp.call(points.astype("float32"))      # [N, d] -> [N, k]

The module is lowered for CPU, CUDA, ROCm and TPU at once where the graph allows (else CPU
only, with a warning), so the one file runs on any of them.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

__all__ = ["SUFFIX", "PLATFORMS", "write", "load"]

SUFFIX = ".stablehlo"
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def write(graph, path: str | os.PathLike, dtype: str = "float32") -> dict:
    """Serialize ``graph`` (:class:`pinn.export.graph.Graph`) computing in ``dtype`` to
    ``path``; returns the sidecar entries of this format."""
    import jax
    import jax.numpy as jnp
    from jax import export as jex

    from pinn.export.graph import ExportError, in_dtype
    from pinn.io import write_bytes
    from pinn.train.spec import precision_scope

    if dtype == "int8":
        raise ExportError("int8 is an ONNX quantisation (onnxruntime); export StableHLO "
                          "as float32, float16 or bfloat16")
    try:
        import flatbuffers  # noqa: F401 - jax.export serializes with it
    except ImportError:
        raise ExportError("StableHLO serialization needs flatbuffers (a dependency of pinn): "
                          "pip install flatbuffers") from None
    with precision_scope(graph.precision):
        spec = jax.ShapeDtypeStruct(graph.spec.shape, jnp.float32)
        fn = in_dtype(graph.closed, dtype, io_dtype=jnp.float32)
        try:
            exp = jex.export(jax.jit(fn), platforms=PLATFORMS)(spec)
        except Exception as exc:  # noqa: BLE001 - a platform's lowering rule is missing
            warnings.warn(f"StableHLO for {', '.join(PLATFORMS)} failed ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''}); exporting for "
                          "CPU only", stacklevel=2)
            exp = jex.export(jax.jit(fn), platforms=("cpu",))(spec)
        blob = exp.serialize()
    write_bytes(path, blob)
    return {"stablehlo": {"platforms": list(exp.platforms),
                          "calling_convention_version": int(exp.calling_convention_version),
                          "in_shape": [str(s) for s in exp.in_avals[0].shape],
                          "out_shape": [str(s) for s in exp.out_avals[0].shape]}}


def load(path: str | os.PathLike):
    """``f(points[N, d]) -> values[N, k]`` (NumPy in, NumPy out) from a StableHLO file, as a
    :class:`pinn.export.graph.Program` (with the ``d`` and ``k`` the module declares)."""
    import jax
    import numpy as np
    from jax import export as jex

    from pinn.export.graph import MAX_ARTEFACT_BYTES, Program, width
    from pinn.io import read_bytes_file

    p = Path(path)
    data = read_bytes_file(p, "StableHLO file", limit=MAX_ARTEFACT_BYTES)
    try:
        exp = jex.deserialize(bytearray(data))
    except Exception as exc:  # noqa: BLE001 - anything that is not a serialized module
        raise ValueError(f"{p}: not a StableHLO file written by jax.export ({exc}); "
                         "export it with `pinn export RUN --format stablehlo`") from None
    call = jax.jit(exp.call)

    def f(points):
        return np.asarray(call(np.asarray(points, dtype=np.float32)))

    return Program(f, width(exp.in_avals[0].shape) if exp.in_avals else None,
                   width(exp.out_avals[0].shape) if exp.out_avals else None)
