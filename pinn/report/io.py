"""Report files: the atomic writers of :mod:`pinn.io`, and figures."""

from __future__ import annotations

import io
import os
from pathlib import Path

from pinn.io import clean_json, write_bytes, write_json, write_npz, write_text, write_yaml

__all__ = ["clean_json", "write_bytes", "write_json", "write_npz", "write_text", "write_yaml",
           "save_figure"]


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """Save a matplotlib figure atomically (PNG) and close it."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", dpi=dpi)
    plt.close(fig)
    return write_bytes(path, buf.getvalue())
