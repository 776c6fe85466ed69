"""Files: atomic writes, JSON that is data, and the cache folder.

Every file ``pinn`` writes goes through :func:`atomic_write`: a temporary name in the same
folder (``.NAME.tmp-PID-HEX``, which readers ignore), flushed to disk, then renamed with
:func:`os.replace`, so a run killed at any moment leaves the old file or the new one, never
a torn one. Files are data (JSON, npz without pickles), never code.
"""

from __future__ import annotations

import io
import json
import math
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "atomic_write",
    "write_text",
    "write_bytes",
    "write_json",
    "write_yaml",
    "write_npz",
    "clean_json",
    "cache_dir",
    "TMP_MARK",
]

#: Part of every temporary file's name (``.NAME.tmp-PID-HEX``): readers skip such files.
TMP_MARK = ".tmp-"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "wb") -> Path:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(text), "w")


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(data), "wb")


def clean_json(value: Any) -> Any:
    """A JSON-safe copy: NumPy/JAX scalars and arrays to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if hasattr(value, "__array__") and not isinstance(value, (str, bytes)):
        return clean_json(np.asarray(value).tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """``obj`` as indented JSON (see :func:`clean_json`), written atomically."""
    return write_text(path, json.dumps(clean_json(obj), indent=2, sort_keys=False) + "\n")


def write_yaml(path: str | os.PathLike, obj: Any, header: str = "") -> Path:
    """``obj`` as YAML (safe dump) after ``header``, written atomically."""
    import yaml

    text = yaml.safe_dump(clean_json(obj), sort_keys=False, default_flow_style=None, width=100)
    return write_text(path, header + text)


def write_npz(path: str | os.PathLike, *, compress: bool = True, **arrays: Any) -> Path:
    """Arrays into one ``.npz`` (compressed unless ``compress=False``), written atomically."""
    buf = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(buf, **arrays)
    return write_bytes(path, buf.getvalue())


def cache_dir(kind: str | None = None, override: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``override``, else ``$PINN_CACHE``, else ``~/.cache/pinn``; with
    ``kind`` (``"fem"``, ``"reference"``) its sub-folder for that kind (not with override)."""
    if override is not None:
        return Path(override).expanduser()
    root = Path(os.environ.get("PINN_CACHE") or "~/.cache/pinn").expanduser()
    return root / kind if kind else root
