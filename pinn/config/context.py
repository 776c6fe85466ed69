"""What expressions in a problem file may refer to, and where to report errors.

:class:`Context` parses the strings of the PDE language against the names
declared so far (parameters, coordinates, fields, definitions) and turns
every failure into a :class:`~pinn.config.errors.ConfigError` that names the
file, the line, the YAML path and, inside an expression, the column.
"""

from __future__ import annotations

import math

from pinn.config.errors import ConfigError, Issue, suggest
from pinn.config.yamlio import Source
from pinn.dsl import expr as E

RESERVED = {"pi", "e", "D", "grad", "div", "laplacian", "vector", "dot", "and", "or", "not",
            "true", "false"} | set(E.FUNCTIONS)


class Context:
    """The namespace of one problem file and the :class:`Source` that locates its values."""

    def __init__(self, source: Source, base_dir: str):
        self.source = source
        self.base_dir = base_dir
        self.namespace: dict[str, E.Expr] = {}
        self.coords: tuple[E.Coord, ...] = ()
        self.fields: tuple[E.Field, ...] = ()
        self.params: dict[str, E.Param] = {}
        self.hint = ""  # added to "unknown name" errors

    def error(self, path, message: str, column: int | None = None) -> ConfigError:
        path = tuple(path)
        loc = (self.source.expression_location(path, column) if column is not None
               else self.source.location(path))
        return ConfigError(Issue(message, path, loc))

    def expr(self, value, path, *, what: str = "expression", allow_equals: bool = False) -> E.Expr:
        """A number or a string of the PDE language (``lhs = rhs`` where allowed)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return E.as_expr(value)
        text = str(value)
        at = equals_at(text)
        if at is None:
            return self._parse(text, path, 0, what)
        if not allow_equals:
            raise self.error(path, f"'=' is not allowed in this {what}; write a value, or "
                             "'==' for a comparison", at + 1)
        from pinn.dsl.calculus import sub

        return sub(self._parse(text[:at], path, 0, what),
                   self._parse(text[at + 1:], path, at + 1, what))

    def _parse(self, text: str, path, offset: int, what: str) -> E.Expr:
        from pinn.dsl.parser import ParseError, parse

        try:
            return parse(text, self.namespace)
        except ParseError as exc:
            msg = exc.reason.splitlines()[0] if exc.reason else "invalid expression"
            if msg.startswith("unknown name") and self.hint:
                msg += f" ({self.hint})"
            column = exc.column + offset
            raise self.error(path, f"{msg} (column {column} of the {what})", column) from None

    def no_fields(self, ex: E.Expr, path, message: str, *, coords: bool = False) -> None:
        """Raise ``message (names)`` if ``ex`` uses fields (or, with ``coords``, coordinates)."""
        from pinn.dsl.calculus import symbols

        bad = {n.name for n in symbols(ex, (E.Field, E.Coord) if coords else E.Field)}
        if bad:
            raise self.error(path, message.format(names=", ".join(sorted(bad))))

    def number(self, value, path, *, what="value") -> float:
        """A number, or an expression of the parameters (``"0.01/pi"``) evaluated now."""
        import numpy as np

        from pinn.dsl.evaluate import UnboundError, evaluate

        ex = self.expr(value, path, what=what)
        self.no_fields(ex, path, f"{what} must be a number or an expression of parameters; "
                       "it uses {names}", coords=True)
        try:
            with np.errstate(all="ignore"):
                v = float(evaluate(ex, {}, xp=np))
        except (UnboundError, ValueError, ZeroDivisionError, OverflowError) as exc:
            raise self.error(path, f"cannot evaluate {what} {ex}: {exc}") from None
        if not math.isfinite(v):
            kind = "not a real number" if math.isnan(v) else "infinite"
            raise self.error(path, f"{what} {ex} is {kind} ({v}); write a finite value")
        return v

    def field(self, name: str, path, *, where: str = "fields") -> E.Field:
        """The declared field ``name``; ``path`` is the key's path (the error names its parent)."""
        for f in self.fields:
            if f.name == name:
                return f
        names = ", ".join(f.name for f in self.fields)
        path = tuple(path)
        hint = suggest(name, [f.name for f in self.fields])
        raise ConfigError(Issue(f"unknown field '{name}'{hint} ({where}: {names})", path[:-1],
                                self.source.location(path)))

    def check_options(self, path, options, allowed) -> None:
        """Every key of ``options`` is one of ``allowed`` (else: did you mean ...)."""
        for k in options:
            if k not in allowed:
                raise self.error(tuple(path) + (k,), f"unknown option '{k}'{suggest(k, allowed)}"
                                 f"; expected: {', '.join(sorted(allowed))}")


def equals_at(text: str) -> int | None:
    """The index of a single top-level ``=`` (not ``==``, ``<=``, ``>=``, ``!=``)."""
    found = []
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "=" and depth == 0:
            prev = text[i - 1] if i else ""
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if prev in "<>!=" or nxt == "=":
                continue
            found.append(i)
    return found[0] if len(found) == 1 else None
