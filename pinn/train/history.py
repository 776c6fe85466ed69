"""Training history: one flat dict per row, written as JSON lines (and CSV on request).

Row keys: ``step``, ``stage``, ``stage_step``, ``optimizer``, ``event`` (``None``, or
``"stage_start"``, ``"rollback"``, ``"lbfgs_stop"``), ``loss`` (weighted total),
``loss.<term>`` (unweighted), ``weight.<term>``, ``param.<name>`` (learnable PDE
parameters), ``aux.<name>``, ``eval.<name>``, ``lr``, ``grad_norm``, ``time`` (wall seconds
since the run began, summed over resumes), ``steps_per_s``, ``message``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

from .checkpoint import atomic_write_text

__all__ = ["HistoryWriter", "read_history"]


def _clean(value: Any) -> Any:
    """JSON-safe scalar: non-finite floats become ``None`` (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_history(path: str | os.PathLike) -> list[dict]:
    """Rows of a ``history.jsonl``; a torn last line (killed writer) is skipped."""
    rows = []
    path = Path(path)
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


class HistoryWriter:
    """Collects rows in memory and appends them to ``<out_dir>/history.jsonl``."""

    def __init__(
        self,
        out_dir: str | os.PathLike | None,
        *,
        csv_file: bool = False,
        rows: list[dict] | None = None,
    ) -> None:
        self.rows: list[dict] = list(rows or [])
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.csv_file = csv_file
        if self.out_dir is not None:
            # Rewrite what we start from (fresh run: empty; resume: rows up to the checkpoint).
            atomic_write_text(self.jsonl_path, "".join(self._line(r) for r in self.rows))

    @property
    def jsonl_path(self) -> Path:
        return self.out_dir / "history.jsonl"

    @property
    def csv_path(self) -> Path:
        return self.out_dir / "history.csv"

    @staticmethod
    def _line(row: dict) -> str:
        return json.dumps({k: _clean(v) for k, v in row.items()}) + "\n"

    def append(self, row: dict) -> None:
        self.rows.append(row)
        if self.out_dir is not None:
            with open(self.jsonl_path, "a") as fh:
                fh.write(self._line(row))
                fh.flush()

    def write_csv(self) -> None:
        if self.out_dir is None or not self.csv_file:
            return
        columns: dict[str, None] = {}
        for row in self.rows:
            columns.update(dict.fromkeys(row))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: ("" if _clean(v) is None else v) for k, v in row.items()})
        atomic_write_text(self.csv_path, buffer.getvalue())
