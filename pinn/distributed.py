"""Many hosts: one training run over the devices of several processes (``jax.distributed``).

Every process runs the same program (``pinn solve FILE --coordinator HOST:PORT
--num-processes N --process-id I`` on each host, or the same script after
:func:`initialize`). Once joined, ``jax.devices()`` lists the devices of all processes and a
run trains on one mesh over all of them (:mod:`pinn.train.sharding`): every process draws the
same global batch from the same seed and keeps its shard, the parameters are replicated, and
the result is the single-process run on as many devices. Process 0 writes the run folder
(history, checkpoints, solution, metrics, plots, report); the others write nothing, take part
in gathering each checkpoint, and read process 0's checkpoints to resume, so the run folder
must lie on a file system all hosts share.

Nothing here runs at import, and nothing joins unless asked: :func:`initialize` with the
three settings, or with ``auto=True`` (or ``PINN_DISTRIBUTED=1`` for the command line) to let
``jax.distributed.initialize()`` read them from the cluster's environment (SLURM, Open MPI,
Cloud TPU, Kubernetes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["ENV", "initialize", "wanted", "is_main", "to_host", "agree", "largest",
           "broadcast_text"]

#: ``PINN_DISTRIBUTED=1`` (or ``auto``): join the processes the cluster environment describes.
ENV = "PINN_DISTRIBUTED"

_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``PINN_DISTRIBUTED`` asks to join the processes of the cluster environment."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip().lower()
    if value in ("", "0", "off", "no", "false"):
        return False
    if value in ("1", "auto", "on", "yes", "true"):
        return True
    raise ValueError(f"{ENV}={value!r}: use 1 (or auto) to join the processes of the cluster "
                     "environment, or 0 to run one process")


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, auto: bool = False,
               timeout: int = 300) -> bool:
    """Join this process to a multi-process run; call it before any other use of JAX.

    ``coordinator`` (``HOST:PORT`` of process 0, reachable from every host),
    ``num_processes`` and ``process_id`` (``0 .. N-1``) go together; with none of them,
    ``auto=True`` lets :func:`jax.distributed.initialize` detect them (SLURM's ``srun``,
    Open MPI's ``mpirun``, Cloud TPU, Kubernetes), and ``auto=False`` joins nothing.
    ``timeout``: seconds to wait for all processes. On CPU the processes exchange data
    through gloo (``jax_cpu_collectives_implementation``) unless another one is set.
    Returns whether this process joined a multi-process run (True also if it already had).
    """
    given = {"coordinator": coordinator, "num_processes": num_processes,
             "process_id": process_id}
    if all(v is None for v in given.values()) and not auto:
        return False
    missing = [k for k, v in given.items() if v is None]
    if len(missing) < len(given) and missing:
        raise ValueError(f"initialize: {', '.join(missing)} missing; coordinator, "
                         "num_processes and process_id go together (or give none of them "
                         "and auto=True to read them from the cluster environment)")
    if not missing:
        coordinator = coordinator.strip() if isinstance(coordinator, str) else coordinator
        _check(coordinator, num_processes, process_id)

    import jax

    if jax.distributed.is_initialized():
        return True
    if jax.config.jax_cpu_collectives_implementation is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator_address=coordinator,
                                   num_processes=num_processes, process_id=process_id,
                                   initialization_timeout=int(timeout))
    except ValueError as exc:
        if not missing:
            raise
        raise ValueError(f"auto: no cluster environment to join ({exc}); launch with srun or "
                         "mpirun, or give coordinator, num_processes and process_id") from None
    return True


def _check(coordinator: str, num_processes: int, process_id: int) -> None:
    if not isinstance(coordinator, str) or not _ADDRESS.match(coordinator) or not (
            0 < int(coordinator.rsplit(":", 1)[1]) < 65536):
        raise ValueError(f"coordinator {coordinator!r}: give HOST:PORT of process 0, e.g. "
                         "node001:12345 (a port free on that host, reachable from the others)")
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"num_processes must be an integer >= 1, got {num_processes!r}")
    if (isinstance(process_id, bool) or not isinstance(process_id, int)
            or not 0 <= process_id < num_processes):
        raise ValueError(f"process_id must be an integer in 0..{num_processes - 1} "
                         f"(num_processes={num_processes}), got {process_id!r}")


def is_main() -> bool:
    """True in the process that writes (process 0; the only process of a one-process run)."""
    import jax

    return jax.process_index() == 0


def to_host(tree: Any) -> Any:
    """NumPy values of a pytree's arrays, also of arrays spread over several processes.

    An array sharded over other processes' devices is gathered
    (:func:`jax.experimental.multihost_utils.process_allgather`), a collective: every process
    must call this with the same tree. Other leaves come back as :func:`jax.device_get` gives
    them.
    """
    import jax

    def one(x):
        if (isinstance(x, jax.Array) and not x.is_fully_addressable
                and not x.is_fully_replicated):
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return jax.device_get(x)

    return jax.tree.map(one, tree)


def agree(ok: bool) -> bool:
    """Whether ``ok`` holds in every process (a collective; ``ok`` itself in one process)."""
    import jax

    if jax.process_count() == 1:
        return bool(ok)
    from jax.experimental import multihost_utils

    return bool(np.all(multihost_utils.process_allgather(np.asarray(bool(ok)))))


def largest(value: int) -> int:
    """The largest of every process's ``value`` (a collective; ``value`` in one process)."""
    import jax

    if jax.process_count() == 1:
        return int(value)
    from jax.experimental import multihost_utils

    return int(np.max(multihost_utils.process_allgather(np.asarray(int(value), np.int32))))


def broadcast_text(text: str | None, size: int = 4096) -> str:
    """Process 0's ``text`` on every process (the others' argument is ignored); a collective.

    At most ``size`` bytes of UTF-8 (e.g. the run folder process 0 chose)."""
    import jax

    if jax.process_count() == 1:
        return text or ""
    from jax.experimental import multihost_utils

    data = (text or "").encode()
    if len(data) > size:
        raise ValueError(f"broadcast_text: {len(data)} bytes, more than {size}")
    buf = np.zeros(size + 4, np.uint8)
    buf[:4] = np.frombuffer(np.uint32(len(data)).tobytes(), np.uint8)
    buf[4:4 + len(data)] = np.frombuffer(data, np.uint8)
    out = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    n = int(np.frombuffer(out[:4].tobytes(), np.uint32)[0])
    return out[4:4 + n].tobytes().decode()
