"""How training progress is shown: a live bar, a notebook display, or timestamped lines.

:class:`pinn.train.Progress` (the observer) decides *what* to say at chunk boundaries; a
view here decides *how*:

* ``"bar"``: a rich progress bar (a terminal), with "compiling ..." in its description
  and one line per finished compilation above it;
* ``"notebook"``: one display in a Jupyter cell, updated in place (finished stages and
  compilations stay as lines above the current status), plain text so that it also reads
  in a saved notebook;
* ``"plain"``: timestamped lines on the progress stream (stderr) every ``interval``
  seconds, and at each compilation, stage end and the end; a heartbeat line says what is
  still running (a long compilation, a long chunk) when nothing was written for
  ``interval`` seconds;
* ``"json"``: the same lines as JSON objects (``time``, ``event``, ``message`` and the
  numbers), one per line, for log collectors.

``"auto"`` picks the bar on a terminal, the notebook display in Jupyter and plain lines
otherwise (piped, redirected to a file, a batch job).
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrainProgress", "format_terms", "FORMATS", "Status", "resolve_format",
           "in_notebook", "make_view", "status_text"]

FORMATS = ("auto", "bar", "notebook", "plain", "json")


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


def in_notebook() -> bool:
    """Running in a Jupyter kernel (IPython's ZMQ shell, Colab); never imports IPython."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    if shell is None:
        return False
    return type(shell).__name__ == "ZMQInteractiveShell" or "google.colab" in str(type(shell))


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def resolve_format(fmt: str, stream: Any = None) -> str:
    """The view ``"auto"`` stands for: ``bar`` on a terminal, ``notebook`` in Jupyter (when
    no ``stream`` is given), else ``plain``; any other format is returned as it is."""
    if fmt not in FORMATS:
        raise ValueError(f"progress format must be one of {', '.join(FORMATS)}, got {fmt!r}.")
    if fmt != "auto":
        return fmt
    if _isatty(sys.stderr if stream is None else stream):
        return "bar"
    if stream is None and in_notebook():
        return "notebook"
    return "plain"


@dataclass
class Status:
    """Where a run stands at a chunk boundary (what every view shows)."""

    step: int
    total: int
    stage: int  # 0-based
    stages: int
    optimizer: str
    row: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    steps_per_s: float | None = None
    elapsed: float = 0.0
    stage_eta: float | None = None

    @property
    def label(self) -> str:
        return f"stage {self.stage + 1}/{self.stages} {self.optimizer}"

    def numbers(self) -> dict:
        """The status as JSON-ready numbers (the ``json`` view's fields)."""
        row = self.row
        return {
            "step": self.step, "total": self.total, "stage": self.stage + 1,
            "stages": self.stages, "optimizer": self.optimizer,
            "loss": _num(row.get("loss")),
            "terms": {k[5:]: _num(v) for k, v in row.items() if k.startswith("loss.")},
            "params": {k[6:]: _num(v) for k, v in row.items() if k.startswith("param.")},
            "errors": {k: _num(v) for k, v in self.errors.items()},
            "lr": _num(row.get("lr")), "steps_per_s": _num(self.steps_per_s),
            "elapsed": round(self.elapsed, 3), "stage_eta": _num(self.stage_eta),
        }


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(round(s)), 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def errors_text(errors: dict) -> str:
    """``error u 3.1e-02 v 2.0e-02`` (relative L2 per field, other metrics by name)."""
    if not errors:
        return ""
    return "error " + " ".join(f"{k.removeprefix('rel_l2_')} {v:.2e}" for k, v in errors.items()
                               if isinstance(v, (int, float)))


def status_text(s: Status) -> str:
    """``step 500/3300 | stage 1/2 Adam | loss 1.2e-03 | heat 1.2e-03 | error u 3.1e-02 |
    2,345 steps/s | stage eta 1.2 s``."""
    parts = [f"step {s.step}/{s.total}", s.label, format_terms(s.row) if s.row else "",
             errors_text(s.errors),
             f"{s.steps_per_s:,.0f} steps/s" if s.steps_per_s else "",
             f"stage eta {_seconds(s.stage_eta)}" if s.stage_eta is not None else ""]
    return " | ".join(p for p in parts if p)


# ---------------------------------------------------------------------------
# views: start(), note(kind, text, **numbers), status(Status, force), activity(text), close()


class LineView:
    """Timestamped lines (``plain``) or JSON objects (``json``), with a heartbeat thread
    that writes "still <activity>" when nothing was written for ``interval`` seconds."""

    def __init__(self, stream: Any, fmt: str, interval: float) -> None:
        self.stream, self.json, self.interval = stream, fmt == "json", interval
        self._lock = threading.Lock()
        self._last = -math.inf  # when a line was last written (monotonic)
        self._last_status = -math.inf
        self._activity: tuple[str, float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="pinn-progress", daemon=True)
        self._thread.start()

    def _write(self, kind: str, text: str, numbers: dict | None = None) -> None:
        now = time.time()
        if self.json:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now))
            line = json.dumps({"time": f"{stamp}.{int(now % 1 * 1000):03d}", "event": kind,
                               "message": text, **(numbers or {})})
        else:
            line = f"[{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(now))}] {text}"
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except ValueError:  # the stream was closed under us (interpreter exit)
                return
            self._last = time.monotonic()

    def note(self, kind: str, text: str, **numbers: Any) -> None:
        self._write(kind, text, numbers)

    def status(self, s: Status, force: bool = False) -> bool:
        now = time.monotonic()
        if not (force or now - self._last_status >= self.interval):
            return False
        self._last_status = now
        self._write("progress", status_text(s), s.numbers())
        return True

    def activity(self, text: str | None) -> None:
        self._activity = None if text is None else (text, time.monotonic())

    def _beat(self) -> None:
        tick = min(1.0, max(0.05, self.interval / 2))
        # up to a tick early (at most a quarter of the interval): the line comes within
        # ``interval`` of the last, not a tick after it
        due = self.interval - min(tick, self.interval / 4)
        while not self._stop.wait(tick):
            activity = self._activity
            if activity is None or time.monotonic() - self._last < due:
                continue
            what, since = activity
            self._write("heartbeat", f"still {what} ({_seconds(time.monotonic() - since)})",
                        {"activity": what, "seconds": round(time.monotonic() - since, 1)})

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None


class BarView:
    """The rich bar: "compiling ..." as its description, finished compilations above it."""

    def __init__(self, stream: Any, total: int, start: int) -> None:
        self.bar = TrainProgress(total, start=start, stream=stream, force=True)

    def start(self) -> None:
        self.bar.__enter__()

    def note(self, kind: str, text: str, **numbers: Any) -> None:
        if kind == "compiling":
            self.bar.describe(text)
        else:
            self.bar.print(text)

    def status(self, s: Status, force: bool = False) -> bool:
        self.bar.update(s.step, s.label, s.row)
        return True

    def activity(self, text: str | None) -> None:
        pass

    def close(self) -> None:
        self.bar.__exit__(None, None, None)


class NotebookView:
    """One plain-text display in the cell, updated in place (at most every ``refresh`` s)."""

    def __init__(self, refresh: float = 0.5) -> None:
        self.refresh = refresh
        self.lines: list[str] = []
        self.current = ""
        self._handle: Any = None
        self._shown = -math.inf
        self._status = False  # current is a status line (not "compiling ...")

    def start(self) -> None:
        from IPython.display import display

        self._handle = display(_Text("starting …"), display_id=True)

    def _show(self, force: bool) -> bool:
        now = time.monotonic()
        if self._handle is None or not (force or now - self._shown >= self.refresh):
            return False
        self._shown = now
        self._handle.update(_Text("\n".join([*self.lines, self.current] if self.current
                                            else self.lines)))
        return True

    def note(self, kind: str, text: str, **numbers: Any) -> None:
        if kind in ("compiling", "done") and self._status:
            self.lines.append(self.current)  # a stage's last status stays as a line
        self._status = False
        if kind == "compiling":
            self.current = text
        else:
            self.lines.append(text)
            if kind == "compiled":
                self.current = ""
        self._show(True)

    def status(self, s: Status, force: bool = False) -> bool:
        self.current, self._status = status_text(s), True
        return self._show(force)

    def activity(self, text: str | None) -> None:
        pass

    def close(self) -> None:
        if self._status:
            self.lines.append(self.current)
        self.current, self._status = "", False
        self._show(True)


class _Text:
    """A plain-text object for ``IPython.display`` (shown as is, saved as text/plain)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def make_view(fmt: str, stream: Any, interval: float, total: int, start: int) -> Any:
    """The view of a resolved format (see :func:`resolve_format`)."""
    stream = sys.stderr if stream is None else stream
    if fmt == "bar":
        return BarView(stream, total, start)
    if fmt == "notebook":
        return NotebookView()
    return LineView(stream, fmt, interval)


class TrainProgress:
    """Context manager around a rich :class:`rich.progress.Progress` (or nothing).

    Quiet when ``enabled`` is false, or (unless ``force``) when ``stream`` (default stderr)
    is not a terminal."""

    def __init__(
        self, total: int, *, enabled: bool = True, start: int = 0, stream: Any = None,
        force: bool = False,
    ) -> None:
        stream = sys.stderr if stream is None else stream
        self.active = bool(enabled and (force or _isatty(stream)))
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

    def describe(self, description: str) -> None:
        """Change the description only (e.g. "compiling stage 2 (LBFGS)…")."""
        if self._progress is not None:
            self._progress.update(self._task, description=description)

    def print(self, text: str) -> None:
        """A line above the bar."""
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None
