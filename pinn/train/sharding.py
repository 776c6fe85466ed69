"""Data parallel training on one host: the points sharded over a device mesh.

``Training(devices="all" | N)`` trains on a one-axis :class:`jax.sharding.Mesh` (axis
``"points"``): every leaf of the batch (collocation, boundary and initial points, and the
observed data, see :func:`shard_points`) is split along its first axis with a
:class:`~jax.sharding.NamedSharding`; parameters, optimiser state, weights and keys are
replicated. Each loss term is a mean over its points, so XLA computes the local sums on each
device and inserts the all-reduce; the gradient (and every Jacobian or Gramian product of a
second-order optimiser, a sum over points) is a global one, and every optimiser works
unchanged.

Resampling runs on device, each device drawing its own shard: JAX's random numbers are
partitionable (``jax_threefry_partitionable``, the default), so a sharded draw computes
only the local block and yields the very numbers of the unsharded draw. A run on 1, 2 or 4
devices therefore sees the same points and agrees to rounding (the order of the sums
differs); ``devices=None`` is the single-device program, unchanged.

Many processes (:mod:`pinn.distributed`): ``jax.devices()`` then lists every process's
devices and the mesh spans them all (``devices=None`` means ``"all"`` there, a count must be
all of them). Every process computes the same first batch from the same key and keeps only
its shard (:meth:`Sharding.place` builds each global array with
:func:`jax.make_array_from_callback`); later batches are drawn on device, shard by shard. So
``N`` processes of one device each train the very program of one process with ``N`` devices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["AXIS", "Sharding", "resolve_devices", "make_sharding", "shard_points",
           "check_devices"]

#: The mesh axis that the points are split over.
AXIS = "points"


def check_devices(devices: Any, owner: str = "Training") -> None:
    """Raise ``ValueError`` unless ``devices`` is None, ``"all"`` or an integer >= 1."""
    if devices is None or devices == "all":
        return
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"{owner}.devices must be 'all' or an integer >= 1 (None: one device, "
                         f"no mesh), got {devices!r}")


def resolve_devices(devices: Any) -> list | None:
    """The devices a run trains on: None (no mesh), ``"all"`` or the first ``N``."""
    check_devices(devices)
    if devices is None and jax.process_count() == 1:
        return None
    available = jax.devices()
    if devices is None or devices == "all":
        return list(available)
    if jax.process_count() > 1 and devices != len(available):
        raise ValueError(
            f"devices={devices}: a run over {jax.process_count()} processes trains on all "
            f"their {len(available)} devices; set training.devices to 'all' (or leave it "
            "unset).")
    if devices > len(available):
        raise ValueError(
            f"devices={devices}: only {len(available)} {available[0].platform} device(s) are "
            "visible; ask for fewer (or 'all'). On CPU, simulate more with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={devices} set before jax is "
            "imported.")
    return list(available[:devices])


@dataclass(frozen=True)
class Sharding:
    """Where a run's arrays live: the batch split over ``mesh``, everything else replicated.

    Hashable (by its mesh), so equal runs share one compiled chunk program.
    """

    mesh: Mesh

    @property
    def size(self) -> int:
        return int(self.mesh.devices.size)

    @property
    def points(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(AXIS))

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec())

    def _tree(self, state: Any) -> Any:
        """The sharding of every leaf of a training state (or of a bare batch)."""
        def of_batch(batch):
            return jax.tree.map(
                lambda x: self.points if np.ndim(x) >= 1 else self.replicated, batch)

        if isinstance(state, Mapping) and "batch" in state and "params" in state:
            return {k: of_batch(v) if k == "batch" else jax.tree.map(lambda _: self.replicated, v)
                    for k, v in state.items()}
        return of_batch(state)

    def check_batch(self, batch_shape: Any) -> None:
        """Every batch leaf must split evenly over the devices; say which does not."""
        n = self.size
        bad = []
        for path, leaf in jax.tree_util.tree_leaves_with_path(batch_shape):
            if len(leaf.shape) >= 1 and leaf.shape[0] % n:
                bad.append(f"{jax.tree_util.keystr(path)} ({leaf.shape[0]} points)")
        if bad:
            raise ValueError(
                f"devices={n}: the points split evenly over the devices only when every point "
                f"set is a multiple of {n}; these are not: {', '.join(bad)}. Choose "
                f"training.points counts that are multiples of {n}.")

    def place(self, state: Any) -> Any:
        """``state`` on the mesh: the batch sharded along its first axis, the rest replicated.

        Over several processes, each host value (the same on every process) becomes a global
        array of which each process holds only its part; arrays already spread over the
        mesh are resharded."""
        if jax.process_count() == 1:
            return jax.device_put(state, self._tree(state))
        return jax.tree.map(_global, state, self._tree(state))

    def constrain(self, state: Any) -> Any:
        """The same layout as :meth:`place`, inside a traced function."""
        return jax.lax.with_sharding_constraint(state, self._tree(state))

    def scope(self):
        """The context that lets :func:`shard_points` see the mesh while a program traces."""
        return jax.set_mesh(self.mesh)


def _global(x: Any, sharding: NamedSharding) -> jax.Array:
    """One leaf as a global array with ``sharding``: each process fills its own shards."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return jax.device_put(x, sharding)
    if hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = _global(jax.random.key_data(x), sharding)
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding,
                                        lambda index: np.asarray(host[index]))


def make_sharding(devices: Any) -> Sharding | None:
    """A :class:`Sharding` over ``devices`` (None, ``"all"`` or a count); None for None
    in a one-process run."""
    chosen = resolve_devices(devices)
    if chosen is None:
        return None
    axis_types = (jax.sharding.AxisType.Auto,)
    return Sharding(Mesh(np.asarray(chosen), (AXIS,), axis_types=axis_types))


def shard_points(x: jax.Array) -> jax.Array:
    """``x`` split along its first axis when a run traces on a mesh (else ``x`` itself).

    For point sets a loss term holds itself rather than receiving in the batch (observed
    data): constraining them lets XLA compute their residuals shard by shard too. Sets that
    do not split evenly stay replicated (correct, only not parallel).
    """
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty or AXIS not in mesh.axis_names or np.ndim(x) < 1:
        return x
    n = math.prod(mesh.shape[a] for a in (AXIS,))
    if n == 1 or x.shape[0] % n:
        return x
    return jax.lax.with_sharding_constraint(x, PartitionSpec(AXIS))
