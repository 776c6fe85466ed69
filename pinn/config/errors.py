"""Configuration errors that point at the place in the file.

A :class:`ConfigError` holds one or more :class:`Issue` s, each with a
:class:`Location` (file and line, or the ``--set`` override it came from) and
the YAML path (``conditions.walls.dirichlet``).  ``str(error)`` is one line:

    heat2d.yaml:9 conditions.walls.dirichlet: unknown field 'w' (fields: u)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

Path = tuple  # tuple[str | int, ...]


@dataclass(frozen=True)
class Location:
    """Where a value came from: ``file:line[:column]`` or an override ``--set a.b=c``."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    override: str | None = None

    def __str__(self) -> str:
        if self.override is not None:
            return f"--set {self.override}"
        out = self.file or "<config>"
        if self.line is not None:
            out += f":{self.line}"
            if self.column is not None:
                out += f":{self.column}"
        return out


def format_path(path: Sequence) -> str:
    """``("training", "stages", 0, "steps")`` -> ``training.stages.0.steps``."""
    return ".".join(str(p) for p in path)


@dataclass(frozen=True)
class Issue:
    message: str
    path: Path = ()
    location: Location = field(default_factory=Location)

    def __str__(self) -> str:
        where = str(self.location)
        p = format_path(self.path)
        return f"{where} {p}: {self.message}" if p else f"{where}: {self.message}"

    def as_dict(self) -> dict:
        loc = self.location
        return {
            "file": loc.file, "line": loc.line, "column": loc.column, "override": loc.override,
            "path": format_path(self.path), "message": self.message,
        }


class ConfigError(ValueError):
    """The problem file (or an override) is wrong; ``str()`` is one line naming the place."""

    def __init__(self, issues: Issue | Iterable[Issue]):
        issues = [issues] if isinstance(issues, Issue) else list(issues)
        if not issues:
            raise ValueError("ConfigError needs at least one issue")
        self.issues = issues
        super().__init__(str(self))

    def __str__(self) -> str:
        first = str(self.issues[0])
        more = len(self.issues) - 1
        if more:
            file = self.issues[0].location.file
            cmd = f"pinn validate {file}" if file else "pinn validate FILE"
            first += (f" (and {more} more problem{'s' if more > 1 else ''}: `{cmd}` lists "
                      "them all)")
        return first

    def lines(self) -> list[str]:
        """Every issue, one line each (``pinn validate`` prints them all)."""
        return [str(i) for i in self.issues]

    def as_dict(self) -> dict:
        return {"ok": False, "errors": [i.as_dict() for i in self.issues]}


def suggest(name: str, options: Iterable[str]) -> str:
    """`` (did you mean 'alpha'?)`` or ``''``."""
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
