"""The persistent compilation cache: compiled training programs kept on disk between runs.

A stage's program takes seconds to compile (a self-scaled Broyden stage 3-6 s on two CPU
cores) and is the same program the next time the same problem is trained with the same
shapes: a re-run, a resumed run, a sweep's next point, a notebook restarted. JAX can keep
compiled programs on disk (its persistent compilation cache); :func:`enable` turns it on for
``pinn``'s runs, in a folder of ``pinn``'s own, before the run compiles anything
(:func:`pinn.setup` calls it). The folder is chosen by the environment variable
``PINN_COMPILE_CACHE``:

- unset: ``xla`` in the project's cache folder (:func:`pinn.io.cache_dir`:
  ``$PINN_CACHE/xla``, ``~/.cache/pinn/xla`` without ``PINN_CACHE``), beside the cached
  references and FEM solutions;
- ``off`` (or ``0``, ``false``, ``no``, ``none``, empty): no cache;
- any other value: that folder.

A cache folder JAX was already given (``jax.config.update("jax_compilation_cache_dir",
...)`` or ``JAX_COMPILATION_CACHE_DIR``) is left as it is. The cache is bounded
(:data:`MAX_BYTES`, least recently used entries evicted first) unless JAX was given a bound;
a folder that cannot be created is skipped with one warning. What is cached is XLA's
compiled program for this machine and JAX version, keyed by the program itself: a changed
problem, network, optimiser or precision is a different key, never a stale hit.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

__all__ = ["enable", "folder", "MAX_BYTES", "ENV"]

#: The environment variable that chooses the folder (or ``off``).
ENV = "PINN_COMPILE_CACHE"
#: The cache's bound on disk, in bytes (least recently used entries go first).
MAX_BYTES = 2 * 1024**3
#: Programs that compile faster than this are not written (JAX's default is 1 s; a
#: warm run still pays every shorter compilation, and a stage's evaluation and sampling
#: programs each take a fraction of a second).
MIN_COMPILE_SECONDS = 0.2

_OFF = {"", "0", "off", "false", "no", "none"}


def folder() -> Path | None:
    """The folder ``PINN_COMPILE_CACHE`` asks for (None: off)."""
    value = os.environ.get(ENV)
    if value is None:
        from pinn.io import cache_dir

        return cache_dir("xla")
    if value.strip().lower() in _OFF:
        return None
    return Path(value).expanduser()


def enable() -> Path | None:
    """Turn JAX's persistent compilation cache on in :func:`folder` (unless JAX already has
    a folder, or the variable says ``off``); returns the folder in use, or None."""
    import jax

    given = jax.config.jax_compilation_cache_dir
    if given:
        return Path(given)
    path = folder()
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        warnings.warn(f"{ENV}: cannot create the compilation cache folder {str(path)!r} "
                      f"({err.strerror}); compiling without a cache. Set {ENV}=off or to "
                      "a writable folder.", RuntimeWarning, stacklevel=2)
        return None
    if jax.config.jax_compilation_cache_max_size == -1 and _has_filelock():
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_compilation_cache_dir", str(path))
    return path


def _has_filelock() -> bool:
    """JAX bounds the cache only with ``filelock`` (the entries' lock) installed."""
    try:
        import filelock  # noqa: F401
    except ImportError:
        return False
    return True
