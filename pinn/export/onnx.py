"""ONNX through ``jax2onnx`` (the optional extra ``pip install "pinn[onnx]"``).

A consumer needs only ``onnxruntime`` and ``numpy``::

    sess = onnxruntime.InferenceSession("heat2d.onnx", providers=["CPUExecutionProvider"])
    values = sess.run(None, {"points": points.astype("float32")})[0]   # [N, d] -> [N, k]

jax2onnx traces a function itself, with its own versions of some ``jax.numpy`` functions
patched in (``jnp.shape`` returns an array there, which the derivative engine cannot use).
So the graph is traced by pinn first (:func:`pinn.export.graph.build_graph`), and jax2onnx
is given the replay of that jaxpr: primitives only, the symbolic batch size ``N`` kept.
``int8``: the float32 model with its constant weights quantised by onnxruntime's dynamic
quantisation (``MatMul`` -> ``MatMulInteger``; activations stay float).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from pathlib import Path

__all__ = ["SUFFIX", "OPSET", "INPUT", "OUTPUT", "require", "write", "load"]

SUFFIX = ".onnx"
OPSET = 21
INPUT, OUTPUT = "points", "values"
_NOISY = ("jax2onnx", "onnx_ir", "")  # "": onnxruntime.quantization logs on the root


def require(*modules: str):
    """Import the ONNX extra's modules, or ``ExportError`` naming the install command."""
    import importlib

    from pinn.export.graph import ExportError

    out = []
    for name in modules:
        try:
            out.append(importlib.import_module(name))
        except ImportError as exc:
            raise ExportError(f"ONNX export needs {name} ({exc}); install the extra: "
                              'pip install "pinn[onnx]"') from None
    return out[0] if len(out) == 1 else out


@contextlib.contextmanager
def _quiet_converter():
    """jax2onnx logs a warning with a traceback for each optional plugin it cannot import
    (dm_pix, ...), and onnx_ir one per untyped shape value: neither concerns this graph."""
    loggers = [logging.getLogger(n) for n in _NOISY]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, lv in zip(loggers, levels, strict=True):
            lg.setLevel(lv)


def _convert(graph, dtype: str, name: str):
    import jax
    import jax.numpy as jnp

    from pinn.export.graph import ExportError, in_dtype
    from pinn.train.spec import precision_scope

    to_onnx = require("jax2onnx").to_onnx
    with precision_scope(graph.precision), _quiet_converter():
        spec = jax.ShapeDtypeStruct(graph.spec.shape, jnp.float32)
        fn = in_dtype(graph.closed, dtype, io_dtype=jnp.float32)
        try:
            return to_onnx(fn, [spec], model_name=name, opset=OPSET,
                           enable_double_precision=False,
                           input_names=[INPUT], output_names=[OUTPUT])
        except (NotImplementedError, KeyError, TypeError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ExportError(f"jax2onnx cannot convert the graph of {graph.outputs} in "
                              f"{dtype}: {first}; export StableHLO (--format stablehlo) "
                              "instead") from None


def _retype_constants(model, dtype: str) -> int:
    """Give every float32 initializer and ``Constant`` of a reduced-precision graph that
    precision. jax2onnx 0.17 writes the zero bias of the ``Gemm`` it makes of a
    ``dot_general`` as float32 whatever the operands' type, which onnxruntime refuses
    ("Type parameter (T) of Optype (Gemm) bound to different types"); the replayed jaxpr
    holds no float32 constant, so none of them is one by design. Returns the count."""
    import numpy as np

    onnx = require("onnx")
    from onnx import numpy_helper

    target = {"float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16}[dtype]

    def convert(t):
        arr = numpy_helper.to_array(t).astype(np.float32)
        if dtype == "float16":
            new = numpy_helper.from_array(arr.astype(np.float16), t.name)
        else:
            new = onnx.helper.make_tensor(t.name, target, arr.shape,
                                          onnx.numpy_helper.from_array(arr).float_data
                                          or arr.reshape(-1).tolist())
        t.CopyFrom(new)

    count = 0
    for t in model.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT:
            convert(t)
            count += 1
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value" and a.t.data_type == onnx.TensorProto.FLOAT:
                    convert(a.t)
                    count += 1
    return count


def _gemm_to_matmul(model) -> int:
    """Rewrite each plain ``Gemm`` (alpha 1, no transposes, a zero bias: what jax2onnx makes
    of a ``dot_general``) as ``MatMul``, the operator onnxruntime's dynamic quantisation
    quantises (it leaves ``Gemm`` in float32). Returns the count."""
    import numpy as np

    onnx = require("onnx")
    from onnx import numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    count = 0
    for node in model.graph.node:
        if node.op_type != "Gemm":
            continue
        att = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if att.get("alpha", 1.0) != 1.0 or att.get("transA", 0) or att.get("transB", 0):
            continue
        if len(node.input) > 2 and node.input[2]:
            c = inits.get(node.input[2])
            if c is None or np.any(numpy_helper.to_array(c)) and att.get("beta", 1.0) != 0:
                continue
        node.op_type = "MatMul"
        del node.attribute[:]
        del node.input[2:]
        count += 1
    return count


def _quantize_int8(model, path: Path) -> dict:
    quant = require("onnxruntime.quantization")
    _gemm_to_matmul(model)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float32.onnx"
        src.write_bytes(model.SerializeToString())
        dst = Path(tmp) / "int8.onnx"
        with _quiet_converter():  # its advice to pre-process, for image models
            quant.quantize_dynamic(src, dst, weight_type=quant.QuantType.QInt8)
        data = dst.read_bytes()
    from pinn.io import write_bytes

    onnx = require("onnx")
    matmuls = sum(n.op_type == "MatMul" for n in model.graph.node)
    done = sum(n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul")
               for n in onnx.load_from_string(data).graph.node)
    if not done:
        warnings.warn(f"{Path(path).name}: onnxruntime quantised none of the {matmuls} "
                      "MatMul(s) (no constant weights); the file is the float32 model",
                      stacklevel=3)
    write_bytes(path, data)
    return {"quantization": "onnxruntime dynamic quantisation: MatMul weights int8 "
                            "(per tensor), activations quantised per call; float32 in and out",
            "quantized_matmuls": f"{done} of {matmuls}"}


def write(graph, path: str | os.PathLike, dtype: str = "float32") -> dict:
    """Convert ``graph`` computing in ``dtype`` (``int8``: quantised weights) to ONNX at
    ``path``; returns the sidecar entries of this format."""
    from pinn.export.graph import ExportError
    from pinn.io import write_bytes

    require("onnx", "onnxruntime")
    if dtype == "bfloat16":
        raise ExportError("ONNX cannot hold a bfloat16 PINN graph: its Sin, Cos and Tanh "
                          "take no bfloat16 (opset 21); export bfloat16 as StableHLO, or "
                          "ONNX as float16 or int8")
    name = Path(path).stem.replace(".", "_").replace("-", "_")
    model = _convert(graph, "float32" if dtype == "int8" else dtype, name)
    if dtype in ("float16", "bfloat16"):
        _retype_constants(model, dtype)
    entries = {"onnx": {"opset": OPSET, "input": INPUT, "output": OUTPUT,
                        "ir_version": int(model.ir_version)}}
    if dtype == "int8":
        entries.update(_quantize_int8(model, Path(path)))
    else:
        write_bytes(path, model.SerializeToString())
    return entries


def load(path: str | os.PathLike):
    """``f(points[N, d]) -> values[N, k]`` (NumPy in, NumPy out) from an ONNX file, on
    onnxruntime's CPU provider, as a :class:`pinn.export.graph.Program` (with the ``d`` and
    ``k`` the model declares)."""
    import numpy as np

    from pinn.export.graph import MAX_ARTEFACT_BYTES, Program, width
    from pinn.io import read_bytes_file

    ort = require("onnxruntime")
    p = Path(path)
    data = read_bytes_file(p, "ONNX file", limit=MAX_ARTEFACT_BYTES)
    try:
        opts = ort.SessionOptions()
        opts.log_severity_level = 3  # errors only: not the CPU provider's fp16 casts
        sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own error types
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{p}: onnxruntime {ort.__version__} cannot load it ({first})"
                         ) from None
    name = sess.get_inputs()[0].name

    def f(points):
        return sess.run(None, {name: np.asarray(points, dtype=np.float32)})[0]

    return Program(f, width(sess.get_inputs()[0].shape), width(sess.get_outputs()[0].shape))
