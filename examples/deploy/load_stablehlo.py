"""Run a pinn StableHLO export with jax alone (no pinn; `pip install jax flatbuffers`):

    python load_stablehlo.py heat2d.stablehlo points.csv [values.npy]

points.csv: a header naming the sidecar's inputs (any order), one point per row.
"""
import json
import sys

import numpy as np
from jax import export


def load(path):
    """(sidecar, f): f(points[N, d]) -> values[N, k], float32, columns as in the sidecar."""
    meta = json.load(open(path + ".json"))
    exp = export.deserialize(bytearray(open(path, "rb").read()))
    return meta, lambda points: np.asarray(exp.call(np.asarray(points, np.float32)))


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
