"""Run a pinn ONNX export with onnxruntime and numpy alone (no pinn, no jax):

    python load_onnx.py heat2d.onnx points.csv [values.npy]

points.csv: a header naming the sidecar's inputs (any order), one point per row.
"""
import json
import sys

import numpy as np
import onnxruntime as ort


def load(path):
    """(sidecar, f): f(points[N, d]) -> values[N, k], float32, columns as in the sidecar."""
    meta = json.load(open(path + ".json"))
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only (not the CPU provider's notes on float16)
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return meta, lambda points: sess.run(None, {name: np.asarray(points, np.float32)})[0]


if __name__ == "__main__":
    meta, f = load(sys.argv[1])
    header = open(sys.argv[2]).readline().strip().split(",")
    table = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1, ndmin=2)
    points = table[:, [header.index(name) for name in meta["inputs"]]]
    values = f(points)
    if len(sys.argv) > 3:
        np.save(sys.argv[3], values)
    print(",".join(meta["inputs"] + meta["outputs"]))
    np.savetxt(sys.stdout, np.hstack([points, values]), delimiter=",", fmt="%.9g")
