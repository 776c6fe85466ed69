"""On-disk cache for computed references, keyed by their parameters.

The directory is ``$PINN_CACHE/reference`` (default ``~/.cache/pinn/reference``).
Each entry is one ``.npz`` file named by the kind and a hash of the
parameters; it also stores the parameters as JSON, and they are compared on
load.  Writes go to a temporary file in the same directory, then
``os.replace``: a killed run never leaves a partial entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from pinn import io

#: Bump when a solver changes in a way that changes its output.
VERSION = 1


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """Where references are cached (``override``, else ``$PINN_CACHE/reference``)."""
    return io.cache_dir("reference", override)


def _key(kind: str, params: Mapping) -> tuple[str, str]:
    text = json.dumps({"kind": kind, "version": VERSION, **params}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16], text


def cached(kind: str, params: Mapping, compute: Callable[[], dict[str, np.ndarray]],
           cache: bool | str | os.PathLike = True) -> dict[str, np.ndarray]:
    """``compute()`` once per distinct ``(kind, params)``; later calls read the file.

    ``cache``: ``True`` (default directory), ``False`` (always compute, write
    nothing) or a directory.  An unreadable entry is recomputed (with a
    warning); a directory that cannot be written only costs a warning.
    """
    if cache is False or cache is None:
        return compute()
    folder = cache_dir(None if cache is True else cache)
    digest, text = _key(kind, params)
    path = folder / f"{kind}-{digest}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as f:
                data = {k: f[k] for k in f.files}
            if str(data.pop("_params")) == text:
                return data
            warnings.warn(f"cache entry {path} holds other parameters; recomputing",
                          stacklevel=3)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
            warnings.warn(f"cache entry {path} is unreadable ({err}); recomputing", stacklevel=3)
    data = compute()
    try:
        io.write_npz(path, compress=False, _params=np.array(text), **data)
    except OSError as err:
        warnings.warn(
            f"could not write the reference cache in {folder} ({err}); set PINN_CACHE to a "
            "writable directory to keep references between runs", stacklevel=3)
    return data
