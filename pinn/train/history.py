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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pinn.io import (
    INTEGER,
    NUMBER,
    TEXT,
    BadFile,
    WriteError,
    check_json,
    mapping,
    read_text_file,
    write_text,
)

__all__ = ["HistoryWriter", "read_history", "history_row", "ROW"]

#: What a history row holds at the keys the package reads (other keys are free).
ROW = mapping({
    "step": INTEGER, "stage": INTEGER, "stage_step": INTEGER, "window": INTEGER,
    "optimizer": TEXT.or_null(), "event": TEXT.or_null(), "message": TEXT.or_null(),
    **dict.fromkeys(("loss", "lr", "grad_norm", "time", "steps_per_s", "loss.*", "weight.*",
                     "param.*", "aux.*", "eval.*"), NUMBER.or_null()),
}, "an object (a row of the training history)")


def _clean(value: Any) -> Any:
    """JSON-safe scalar: non-finite floats become ``None`` (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_history(path: str | os.PathLike) -> list[dict]:
    """Rows of a ``history.jsonl``. Only a torn last line (an append cut short by a kill or a
    full disk: no newline ends it) is skipped; a line that is not JSON anywhere else, or a
    row of the wrong kinds (:data:`ROW`), is a damaged file: :class:`pinn.io.BadFile`,
    naming the file, the line and what is wrong."""
    rows = []
    path = Path(path)
    if not path.exists():
        return rows
    fix = "the training history is damaged: remove that line, or the file (a run loads without it)"
    lines = read_text_file(path, "training history").split("\n")
    # (a file that ends with a newline splits into a last empty piece: no line is torn)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            if n == len(lines):  # the last line, without its newline: an append cut short
                continue
            why = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                   else "nested too deeply")
            raise BadFile(f"{path}, line {n}: not a JSON row ({why}); {fix}") from None
        rows.append(check_json(row, ROW, path, fix, line=n))
    return rows


class HistoryWriter:
    """Writes rows to ``<out_dir>/history.jsonl`` (one line each) and ``history.csv``."""

    def __init__(self, out_dir: str | os.PathLike, *, csv_file: bool = False) -> None:
        self.out_dir = Path(out_dir)
        self.csv_file = csv_file

    @property
    def jsonl_path(self) -> Path:
        return self.out_dir / "history.jsonl"

    @property
    def csv_path(self) -> Path:
        return self.out_dir / "history.csv"

    @staticmethod
    def _line(row: dict) -> str:
        return json.dumps({k: _clean(v) for k, v in row.items()}) + "\n"

    def reset(self, rows: list[dict]) -> None:
        """Rewrite the file with ``rows`` (fresh run: none; resume: up to the checkpoint)."""
        write_text(self.jsonl_path, "".join(self._line(r) for r in rows))

    def append(self, row: dict) -> None:
        try:
            with open(self.jsonl_path, "a") as fh:
                fh.write(self._line(row))
                fh.flush()
        except OSError as exc:  # (a torn last line is skipped when read)
            raise WriteError(self.jsonl_path, exc, "the rows before this one are kept"
                             ) from exc

    def write_csv(self, rows: list[dict]) -> None:
        if not self.csv_file:
            return
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if _clean(v) is None else v) for k, v in row.items()})
        write_text(self.csv_path, buffer.getvalue())


def as_float(x: Any) -> float:
    return float(np.asarray(x))


def float_or_none(x: Any) -> float | None:
    value = as_float(x)
    return value if math.isfinite(value) else None


def _scalar_leaves(prefix: str, tree: Any) -> dict[str, float]:
    """Flat ``{prefix.name: float}`` from a dict of scalars (arrays of size 1 included)."""
    out = {}
    if isinstance(tree, Mapping):
        for name, value in tree.items():
            arr = np.asarray(value)
            if arr.size == 1:
                out[f"{prefix}.{name}"] = float(arr.reshape(()))
            else:
                out.update({f"{prefix}.{name}[{i}]": float(v) for i, v in enumerate(arr.ravel())})
    return out


def history_row(
    info: Any, step: int, stage: int, report: dict, event: str | None, rate: float | None
) -> dict:
    """The row of a chunk report; ``info`` is the run's :class:`pinn.train.RunInfo`."""
    row = {
        "step": step,
        "stage": stage,
        "stage_step": step - info.starts[stage],
        "optimizer": type(info.stages[stage].optimizer).__name__,
        "event": event,
        "loss": as_float(report["loss"]),
    }
    row.update(_scalar_leaves("loss", report["terms"]))
    row.update(_scalar_leaves("weight", report["weights"]))
    row.update(_scalar_leaves("param", info.physical({"pde": report["pde"]})["pde"]))
    row.update(_scalar_leaves("aux", report["aux"]))
    row.update(
        {
            "lr": float_or_none(report["lr"]),
            "grad_norm": float_or_none(report["grad_norm"]),
            "time": round(info.elapsed(), 4),
        }
    )
    if rate is not None:
        row["steps_per_s"] = round(rate, 2)
    return row
