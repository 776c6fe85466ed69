"""One sub-network per group of outputs, each fed only the input columns it depends on.

A field declared on a subset of the coordinates (``a(x, y)`` in a problem in ``x, y, t``)
is the output of a network that never sees the other columns, so its derivatives along
them are exactly zero by construction (the input selection is a slice, whose derivative
along an unselected column is zero). ``per_field`` (PINNacle's PFNN) gives every output its
own network even when all of them share the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx
from jax import lax


def _runs(columns: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """``columns`` as ``(start, stop)`` runs of consecutive indices (``0, 1, 3`` ->
    ``(0, 2), (3, 4)``): one slice each."""
    runs: list[list[int]] = []
    for c in columns:
        if runs and runs[-1][1] == c:
            runs[-1][1] = c + 1
        else:
            runs.append([c, c + 1])
    return tuple((a, b) for a, b in runs)


def _take(x: jax.Array, runs: tuple[tuple[int, int], ...]) -> jax.Array:
    """The columns ``runs`` of ``x[..., d]``: static slices, then one concatenate (both
    linear, so Taylor mode, ``jax.export`` and ONNX handle them; no gather)."""
    axis = x.ndim - 1
    parts = [lax.slice_in_dim(x, a, b, axis=axis) for a, b in runs]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=axis)


def field_groups(inputs: Sequence[Sequence[int]], per_field: bool = False
                 ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """``((input columns, outputs), ...)``: the outputs that share their input columns
    (in order of first appearance), or one group per output with ``per_field``.
    ``inputs[j]``: the input columns of output ``j``."""
    groups: dict[tuple[int, ...], list[int]] = {}
    out = []
    for j, cols in enumerate(inputs):
        cols = tuple(sorted(int(c) for c in cols))
        if per_field:
            out.append((cols, (j,)))
        else:
            groups.setdefault(cols, []).append(j)
    if per_field:
        return tuple(out)
    return tuple((cols, tuple(js)) for cols, js in groups.items())


class FieldNetworksModule(nnx.Module):
    """``y[..., d_out]``: the outputs of ``nets[g]`` applied to the columns ``columns[g]``
    of ``x[..., d_in]``, placed at the output indices ``outputs[g]``.

    The number of parameters is the sum of the sub-networks'. Build it through a spec
    (``MLP(...).build(d_in, d_out, inputs=..., key=...)`` or ``per_field=True``)."""

    def __init__(self, d_in: int, d_out: int, nets: Sequence[nnx.Module],
                 columns: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]]):
        if not (len(nets) == len(columns) == len(outputs)) or not nets:
            raise ValueError("FieldNetworksModule needs one column list and one output list "
                             "per sub-network")
        placed = sorted(j for js in outputs for j in js)
        if placed != list(range(d_out)):
            raise ValueError(f"the sub-networks' outputs {list(outputs)} must cover 0..{d_out - 1} "
                             "once each")
        for cols in columns:
            if not cols or any(not 0 <= c < d_in for c in cols):
                raise ValueError(f"input columns {list(cols)} must be within 0..{d_in - 1}")
        self.d_in = d_in
        self.d_out = d_out
        self.nets = nnx.List(list(nets))
        self.runs = tuple(_runs(tuple(c)) for c in columns)
        self.columns = tuple(tuple(int(c) for c in cols) for cols in columns)
        self.outputs = tuple(tuple(int(j) for j in js) for js in outputs)
        order = [j for js in self.outputs for j in js]
        # where output j sits in the concatenation of the sub-networks' outputs
        self.gather = _runs([order.index(j) for j in range(d_out)])

    def __call__(self, x: jax.Array) -> jax.Array:
        ys = [net(x if len(cols) == self.d_in and runs == ((0, self.d_in),) else _take(x, runs))
              for net, cols, runs in zip(self.nets, self.columns, self.runs, strict=True)]
        y = ys[0] if len(ys) == 1 else jnp.concatenate(ys, axis=-1)
        if self.gather == ((0, self.d_out),):
            return y
        return _take(y, self.gather)
