"""A rich progress bar for training: steps, loss terms, step rate and time left.

Quiet (no output at all) when ``enabled`` is false or stderr is not a terminal.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["TrainProgress", "format_terms"]


def format_terms(row: dict, limit: int = 6) -> str:
    """``loss 1.2e-03 | heat 1.0e-03 walls 2.0e-04`` from a history row."""
    loss = row.get("loss")
    parts = [f"loss {loss:.2e}" if isinstance(loss, float) else "loss ?"]
    terms = [(k[5:], v) for k, v in row.items() if k.startswith("loss.")]
    shown = " ".join(f"{n} {v:.1e}" for n, v in terms[:limit] if isinstance(v, float))
    if len(terms) > limit:
        shown += " …"
    params = " ".join(
        f"{k[6:]}={v:.4g}"
        for k, v in row.items()
        if k.startswith("param.") and isinstance(v, float)
    )
    return " | ".join(p for p in (parts[0], shown, params) if p)


class TrainProgress:
    """Context manager around a rich :class:`rich.progress.Progress` (or nothing)."""

    def __init__(
        self, total: int, *, enabled: bool = True, start: int = 0, stream: Any = None
    ) -> None:
        stream = sys.stderr if stream is None else stream
        isatty = getattr(stream, "isatty", None)
        self.active = bool(enabled and isatty is not None and isatty())
        self.total, self.start = total, start
        self._progress = None
        self._task = None
        self._stream = stream

    def __enter__(self) -> TrainProgress:
        if not self.active:
            return self
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class RateColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text("" if speed is None else f"{speed:,.0f} it/s")

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TextColumn("<"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[terms]}"),
            console=Console(file=self._stream),
            transient=False,
        )
        self._progress.__enter__()
        self._task = self._progress.add_task(
            "train", total=self.total, completed=self.start, terms=""
        )
        return self

    def update(self, step: int, description: str, row: dict | None = None) -> None:
        if self._progress is None:
            return
        fields = {"terms": format_terms(row)} if row else {}
        self._progress.update(self._task, completed=step, description=description, **fields)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None
