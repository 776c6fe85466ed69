"""Atomic file writes: a temporary file in the same folder, then ``os.replace``.

A run killed at any moment leaves either the old file or the new one, never a
torn one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _atomic(path: str | os.PathLike, write: Callable[[Any], None], mode: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    return _atomic(path, lambda fh: fh.write(text), "w")


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return _atomic(path, lambda fh: fh.write(data), "wb")


def clean_json(value: Any) -> Any:
    """JSON-safe copy: numpy scalars/arrays to Python, non-finite floats to None."""
    import numpy as np

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
    return write_text(path, json.dumps(clean_json(obj), indent=2, sort_keys=False) + "\n")


def write_yaml(path: str | os.PathLike, obj: Any, header: str = "") -> Path:
    import yaml

    text = yaml.safe_dump(clean_json(obj), sort_keys=False, default_flow_style=None, width=100)
    return write_text(path, header + text)


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """Save a matplotlib figure atomically (PNG) and close it."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", dpi=dpi)
    plt.close(fig)
    return write_bytes(path, buf.getvalue())


def write_npz(path: str | os.PathLike, **arrays) -> Path:
    import io

    import numpy as np

    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return write_bytes(path, buf.getvalue())
