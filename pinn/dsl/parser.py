"""The PDE language as strings: a small, safe parser.

``parse(text, namespace)`` turns ``"u_t + u*u_x - nu*u_xx"`` into the same
expression tree the Python operators build.  It is a hand-written tokenizer
and a precedence-climbing parser: nothing is ever evaluated, no Python
object is reached, and every failure is a :class:`ParseError` that names the
problem, its column and, where one exists, a suggestion.

Grammar (loosest first; it mirrors :mod:`pinn.dsl.printing`, so
``parse(str(e), ns) == e`` for every expression)::

    expr       := or
    or         := and ("or" and)*
    and        := not ("and" not)*
    not        := "not" not | comparison
    comparison := sum [("<" | "<=" | ">" | ">=" | "==" | "!=") sum]   (no chains)
    sum        := term (("+" | "-") term)*
    term       := unary (("*" | "/") unary)*
    unary      := ("-" | "+") unary | power
    power      := postfix [("^" | "**") unary]                        (right-assoc.)
    postfix    := primary ("[" INTEGER "]")*
    primary    := NUMBER | NAME | NAME "(" args ")" | "(" expr ")"

As in Python, unary minus binds looser than the power and tighter than
``*``: ``-x^2`` is ``-(x^2)``, ``2^-1`` is ``2^(-1)`` and ``-a*b`` is
``(-a)*b``.  Numbers are non-negative (``-2`` is ``Neg(Number(2))``);
integers stay integers (``2`` is ``Number(2)``, ``2.0`` is ``Number(2.0)``).

Calls: the elementary functions of :data:`pinn.dsl.expr.FUNCTIONS` and the
operators ``D(u, x)``, ``D(u, x, 2)``, ``D(u, x, y)``, ``D(u, x, 2, y)``,
``laplacian(u)`` / ``laplacian(u, x, y)``, ``grad(u[, x, y])``,
``div(v[, x, y])``, ``vector(a, b, ...)`` and ``dot(a, b)``.

Limits: at most :data:`MAX_LENGTH` characters, and :data:`MAX_DEPTH` levels
of nesting and of tree depth, so that no input can exhaust the stack.

Names come from a :class:`Namespace` (coordinates, fields, parameters and
optional named definitions).  ``pi`` and ``e`` are built in; a declared name
shadows them (a parameter called ``e`` is that parameter).  Subscript
shorthand: ``u_xx`` is ``D(u, x, 2)``, ``u_xy`` is ``D(u, x, y)``, ``u_t`` is
``D(u, t)`` when ``u`` is a declared field and every letter after the last
``_`` is a declared one-letter coordinate; a declared name containing ``_``
(a parameter ``nu_0``) always wins over the shorthand, and a name that could
be read two ways (``u_tx`` when a field ``u_t`` is declared) is an error.
"""

from __future__ import annotations

import difflib
import keyword
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from pinn.data import NotData, register_tag
from pinn.dsl import expr as E

__all__ = ["parse", "ParseError", "Namespace", "MAX_LENGTH", "MAX_DEPTH", "RESERVED",
           "split_expressions", "DataNames", "expr_text", "text_expr"]

#: Longest accepted input, in characters.
MAX_LENGTH = 10_000
#: Deepest accepted nesting (parentheses, unary operators, operands; a call counts
#: twice) and deepest accepted expression tree.
MAX_DEPTH = 200

#: Operators of the language that are called like functions.
OPERATORS = ("D", "laplacian", "grad", "div", "vector", "dot")
#: Words of the language.
KEYWORDS = ("and", "or", "not")
#: Names a namespace may not declare.
RESERVED = frozenset(E.FUNCTIONS) | frozenset(OPERATORS) | frozenset(KEYWORDS)
_CONSTANTS = ("pi", "e")

_ALLOWED = (
    "numbers, declared names, the constants pi and e, + - * / ^ (or **), parentheses, "
    "comparisons < <= > >= == !=, and/or/not, functions f(...) and component indices v[i]"
)
_COMPARISONS = ("<=", ">=", "==", "!=", "<", ">")
# binding powers (higher binds tighter); they mirror pinn.dsl.printing._PREC
_NOT, _UNARY = 3, 7
_INFIX = {"or": 1, "and": 2, **dict.fromkeys(_COMPARISONS, 4), "+": 5, "-": 5, "*": 6, "/": 6,
          "^": 8, "[": 9}


class ParseError(ValueError):
    """A string is not a valid expression.

    ``column`` is 1-based; ``text`` is the whole input; ``reason`` is the
    one-line problem without the caret display.
    """

    def __init__(self, reason: str, text: str, column: int):
        self.reason = reason
        self.text = text
        self.column = column
        super().__init__(_format(reason, text, column))

    def __reduce__(self):  # picklable (multiprocessing, pytest-xdist)
        return (type(self), (self.reason, self.text, self.column))


def _format(reason: str, text: str, column: int) -> str:
    line = text.replace("\n", " ").replace("\r", " ").replace("\t", " ")
    # printable window of at most ~70 characters around the column
    lo = max(0, column - 1 - 35)
    hi = min(len(line), lo + 70)
    shown = "".join(ch if " " <= ch <= "~" else "?" for ch in line[lo:hi])
    prefix = "..." if lo > 0 else ""
    suffix = "..." if hi < len(line) else ""
    caret = " " * (len(prefix) + column - 1 - lo) + "^"
    return f"{reason} (column {column})\n  {prefix}{shown}{suffix}\n  {caret}"


# ---------------------------------------------------------------------------
# namespace


class Namespace:
    """The names a string may use: coordinates, fields, parameters, definitions.

    Build it from nodes, or from a mapping ``name -> node``::

        Namespace([x, t, u, nu])
        Namespace({"x": x, "t": t, "u": u, "nu": nu, "r": sqrt(x**2 + y**2)})
        Namespace.of(problem)          # anything with .coords, .fields, .params

    Values that are not coordinates, fields or parameters (expressions or
    numbers) are named definitions: the name stands for that expression (so
    ``str()`` prints the definition, not the name).  Names must be
    identifiers, not start with ``__``, and not be a function, operator or
    keyword of the language (:data:`RESERVED`).
    """

    def __init__(self, symbols: Iterable[E.Expr] | Mapping[str, E.ExprLike] = ()):
        table: dict[str, E.Expr] = {}
        if isinstance(symbols, Mapping):
            items = list(symbols.items())
        else:
            items = []
            for node in symbols:
                if not isinstance(node, (E.Coord, E.Field, E.Param)):
                    raise TypeError(
                        f"a namespace lists coordinates, fields and parameters, got {node!r}; "
                        "use a mapping {name: expression} for named definitions"
                    )
                items.append((node.name, node))
        for name, value in items:
            if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
                raise ValueError(f"{name!r} is not a valid name: use ASCII letters, digits and _")
            if name.startswith("__"):
                raise ValueError(f"{name!r}: names starting with '__' are not allowed")
            if name in RESERVED:
                raise ValueError(
                    f"{name!r} is a function, operator or keyword of the PDE language and "
                    "cannot be declared; choose another name"
                )
            node = E.as_expr(value)
            if isinstance(node, (E.Coord, E.Field, E.Param)) and node.name != name:
                raise ValueError(f"the name {name!r} is mapped to {type(node).__name__} "
                                 f"{node.name!r}; the names must agree")
            if name in table and table[name] != node:
                raise ValueError(f"the name {name!r} is declared twice, as {table[name]!r} "
                                 f"and {node!r}")
            table[name] = node
        self._table = table

    @classmethod
    def of(cls, obj: object) -> Namespace:
        """A namespace from None, a Namespace, a mapping, nodes, or a Problem-like object."""
        if obj is None:
            return cls()
        if isinstance(obj, Namespace):
            return obj
        if isinstance(obj, Mapping):
            return cls(obj)
        if all(hasattr(obj, a) for a in ("coords", "fields", "params")):
            return cls([*obj.coords, *obj.fields, *obj.params])
        if isinstance(obj, (str, bytes)):
            raise TypeError(
                "a namespace is not a string: pass nodes, e.g. Namespace([x, t, u]) or "
                "[*pinn.coords('x t'), pinn.field('u')]"
            )
        try:
            items = list(obj)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(
                f"cannot make a namespace from {obj!r}; pass a Namespace, a mapping "
                "{name: node} or a list of coordinates, fields and parameters"
            ) from None
        return cls(items)

    def get(self, name: str) -> E.Expr | None:
        return self._table.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._table)

    @property
    def coords(self) -> tuple[E.Coord, ...]:
        return tuple(v for v in self._table.values() if isinstance(v, E.Coord))

    @property
    def fields(self) -> tuple[E.Field, ...]:
        return tuple(v for v in self._table.values() if isinstance(v, E.Field))

    @property
    def params(self) -> tuple[E.Param, ...]:
        return tuple(v for v in self._table.values() if isinstance(v, E.Param))

    def __repr__(self) -> str:
        return f"Namespace({', '.join(self._table)})"


# ---------------------------------------------------------------------------
# tokens


@dataclass(frozen=True)
class _Tok:
    kind: str  # "num", "name", "op", "end"
    text: str
    col: int  # 1-based
    value: object = None


_OPS2 = ("**", "<=", ">=", "==", "!=")
_OPS1 = "+-*/^()[],<>"
_BAD_CHARS = {
    ".": "'.' is not allowed here: no attribute access (numbers are written 0.5, 1.0)",
    "'": "strings are not allowed in expressions",
    '"': "strings are not allowed in expressions",
    "=": "'=' is not allowed: write an equation as its residual, e.g. 'u_t - nu*u_xx' for "
         "u_t = nu*u_xx (use == for a comparison)",
    ":": "':' is not allowed (no lambdas, slices or dictionaries)",
    ";": "';' is not allowed: give one expression",
    "{": "braces are not allowed",
    "}": "braces are not allowed",
    "%": "'%' is not supported",
    "&": "'&' is not supported: write 'and'",
    "|": "'|' is not supported: write 'or' (abs(x) for an absolute value)",
    "~": "'~' is not supported: write 'not'",
    "!": "'!' is not supported: write 'not' (or != for a comparison)",
    "@": "'@' is not supported: use dot(a, b)",
    "\\": "'\\' is not allowed",
    "#": "comments are not allowed",
    "`": "'`' is not allowed",
    "$": "'$' is not allowed",
    "?": "'?' is not allowed",
}


class _Lexer:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def error(self, reason: str, pos: int) -> ParseError:
        return ParseError(reason, self.text, pos + 1)

    def next(self) -> _Tok:
        s, n = self.text, len(self.text)
        i = self.pos
        while i < n and s[i] in " \t\n\r":
            i += 1
        if i >= n:
            self.pos = i
            return _Tok("end", "", i + 1)
        ch = s[i]
        if ch.isascii() and (ch.isdigit() or (ch == "." and i + 1 < n and s[i + 1].isdigit())):
            return self._number(i)
        if ch.isascii() and (ch.isalpha() or ch == "_"):
            j = i
            while j < n and s[j].isascii() and (s[j].isalnum() or s[j] == "_"):
                j += 1
            self.pos = j
            return _Tok("name", s[i:j], i + 1)
        two = s[i:i + 2]
        if two in _OPS2:
            self.pos = i + 2
            return _Tok("op", "^" if two == "**" else two, i + 1)
        if two == "//":
            raise self.error("floor division '//' is not supported: use '/'", i)
        if ch in _OPS1:
            self.pos = i + 1
            return _Tok("op", ch, i + 1)
        if not ch.isascii():
            hint = " (write Greek letters by name, e.g. alpha)" if ch.isalpha() else ""
            raise self.error(
                f"non-ASCII character {ch!r} (U+{ord(ch):04X}) is not allowed{hint}", i)
        if not ch.isprintable():
            raise self.error(f"control character {ch!r} is not allowed", i)
        reason = _BAD_CHARS.get(ch, f"character {ch!r} is not allowed")
        raise self.error(f"{reason}; allowed: {_ALLOWED}", i)

    def _number(self, i: int) -> _Tok:
        s, n = self.text, len(self.text)
        j = i
        while j < n and s[j].isascii() and s[j].isdigit():
            j += 1
        is_float = False
        if j < n and s[j] == ".":
            is_float = True
            j += 1
            while j < n and s[j].isascii() and s[j].isdigit():
                j += 1
        if j < n and s[j] in "eE":
            k = j + 1
            if k < n and s[k] in "+-":
                k += 1
            if k < n and s[k].isascii() and s[k].isdigit():
                while k < n and s[k].isascii() and s[k].isdigit():
                    k += 1
                j = k
                is_float = True
            else:
                raise self.error(
                    f"malformed number {s[i:k]!r}: an exponent needs digits, e.g. 1e-5", i)
        text = s[i:j]
        if j < n and (s[j] == "." or (s[j].isascii() and s[j].isdigit())):
            raise self.error(f"malformed number starting {text!r}", i)
        if j < n and s[j].isascii() and (s[j].isalpha() or s[j] == "_"):
            m = j
            while m < n and s[m].isascii() and (s[m].isalnum() or s[m] == "_"):
                m += 1
            raise self.error(
                f"'{s[i:m]}': implicit multiplication is not supported; write "
                f"{text}*{s[j:m]}", i)
        if is_float:
            value: float | int = float(text)
            if not math.isfinite(value):
                raise self.error(f"number {text!r} is too large", i)
        else:
            if len(text.lstrip("0")) > 308:
                raise self.error(f"integer {text[:20]}... is too large", i)
            value = int(text)
            if value > 1.7976931348623157e308:
                raise self.error(f"integer {text[:20]}... is too large", i)
        self.pos = j
        return _Tok("num", text, i + 1, value)


# ---------------------------------------------------------------------------
# parser


def _suggest(name: str, candidates: Iterable[str], calls: Iterable[str] = ()) -> str:
    """``": did you mean 'alpha'?"`` (or ``""``); ``calls`` are shown as ``name(...)``."""
    calls = set(calls)
    pool = sorted(set(candidates) | calls)
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    close = [f"{c}(...)" if c in calls and c not in candidates else c for c in close]
    if not close:
        return ""
    if len(close) == 1:
        return f": did you mean '{close[0]}'?"
    return ": did you mean " + ", ".join(f"'{c}'" for c in close[:-1]) + f" or '{close[-1]}'?"


def _kind(node: E.Expr) -> str:
    return {E.Coord: "a coordinate", E.Field: "a field", E.Param: "a parameter",
            E.Constant: "a constant"}.get(type(node), "a defined expression")


def _tree_depth(e: E.Expr, limit: int) -> int:
    """Depth of ``e`` without recursion; stops early once it exceeds ``limit``."""
    best = 0
    stack = [(e, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        if best > limit:
            return best
        stack.extend((k, d + 1) for k in node.children())
    return best


class _Parser:
    def __init__(self, text: str, ns: Namespace):
        self.text = text
        self.ns = ns
        self.lex = _Lexer(text)
        self.tok = self.lex.next()
        self.nesting = 0
        self.depth: dict[int, int] = {}  # id(node) -> tree depth, for nodes in _made
        self._made: list[E.Expr] = []  # keeps those ids alive and unique

    # -- helpers ---------------------------------------------------------
    def error(self, reason: str, col: int) -> ParseError:
        return ParseError(reason, self.text, col)

    def advance(self) -> _Tok:
        tok = self.tok
        self.tok = self.lex.next()
        return tok

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.tok.kind == kind and (text is None or self.tok.text == text)

    def expect_close(self, close: str, open_tok: _Tok) -> None:
        if self.at("op", close):
            self.advance()
            return
        if self.tok.kind == "end":
            raise self.error(
                f"unbalanced parentheses: '{open_tok.text}' at column {open_tok.col} is never "
                f"closed; add '{close}'", open_tok.col)
        self.check_keyword(self.tok)
        raise self.error(f"expected '{close}' (to close '{open_tok.text}' at column "
                         f"{open_tok.col}), found {self.describe(self.tok)}", self.tok.col)

    @staticmethod
    def describe(tok: _Tok) -> str:
        if tok.kind == "end":
            return "the end of the input"
        if tok.kind == "num":
            return f"number {tok.text}"
        if tok.kind == "name":
            return f"'{tok.text}'"
        return f"'{tok.text}'"

    def enter(self, col: int) -> None:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise self.error(f"expression nested too deeply (more than {MAX_DEPTH} levels)", col)

    def leave(self) -> None:
        self.nesting -= 1

    def make(self, col: int, ctor, *args) -> E.Expr:
        """Build a node; constructor errors and excessive depth become ParseErrors."""
        try:
            node = ctor(*args)
        except (TypeError, ValueError, IndexError) as err:
            raise self.error(str(err), col) from None
        d = 1
        for k in node.children():
            kd = self.depth.get(id(k))
            if kd is None:
                kd = _tree_depth(k, MAX_DEPTH)
            d = max(d, kd + 1)
        if d > MAX_DEPTH:
            raise self.error(f"expression too deep (tree depth above {MAX_DEPTH}); split it "
                             "into smaller parts", col)
        self.depth[id(node)] = d
        self._made.append(node)
        return node

    # -- grammar (Pratt / precedence climbing) -----------------------------
    def parse(self) -> E.Expr:
        if self.tok.kind == "end":
            raise self.error("empty expression: write e.g. 'u_t - nu*u_xx'", 1)
        e = self.expr(0)
        if self.tok.kind != "end":
            tok = self.tok
            if tok.kind == "op" and tok.text in ")]":
                raise self.error(f"unmatched '{tok.text}'", tok.col)
            self.check_keyword(tok)
            extra = ""
            if tok.kind in ("name", "num") or (tok.kind == "op" and tok.text in "(["):
                extra = (" (a missing operator? implicit multiplication is not supported: "
                         "write a*b)")
            raise self.error(f"unexpected {self.describe(tok)} after a complete expression"
                             f"{extra}", tok.col)
        return e

    def lbp(self) -> int:
        """Left binding power of the current token as an infix/postfix operator."""
        tok = self.tok
        if tok.kind == "op":
            return _INFIX.get(tok.text, 0)
        if tok.kind == "name" and tok.text in ("and", "or"):
            return _INFIX[tok.text]
        return 0

    def expr(self, rbp: int) -> E.Expr:
        """Parse while the next operator binds tighter than ``rbp``."""
        self.enter(self.tok.col)
        try:
            left = self.prefix(rbp)
            while self.lbp() > rbp:
                left = self.infix(left)
            return left
        finally:
            self.leave()

    def prefix(self, rbp: int) -> E.Expr:
        tok = self.tok
        if tok.kind == "name" and tok.text == "not":
            if rbp > _NOT:
                raise self.error("'not' cannot appear inside arithmetic or a comparison; put it "
                                 "in parentheses: (not a)", tok.col)
            self.advance()
            return self.make(tok.col, E.Not, self.expr(_NOT))
        if tok.kind == "op" and tok.text in "+-":
            self.advance()
            arg = self.expr(_UNARY)
            return arg if tok.text == "+" else self.make(tok.col, E.Neg, arg)
        return self.primary()

    def infix(self, left: E.Expr) -> E.Expr:
        op = self.advance()
        text = op.text
        if text == "[":
            return self.index(left, op)
        if text in ("or", "and"):
            right = self.expr(_INFIX[text])
            return self.make(op.col, E.Or if text == "or" else E.And, left, right)
        if text in _COMPARISONS:
            right = self.expr(_INFIX[text])
            if self.tok.kind == "op" and self.tok.text in _COMPARISONS:
                raise self.error(
                    f"chained comparisons are not supported ('{text}' then '{self.tok.text}'): "
                    "write 'a < b and b < c'", self.tok.col)
            return self.make(op.col, E.Compare, text, left, right)
        if text == "^":
            # the exponent is a unary expression: 2^-1, and a^b^c is a^(b^c)
            return self.make(op.col, E.Pow, left, self.expr(_UNARY))
        ctor = {"+": E.Add, "-": E.Sub, "*": E.Mul, "/": E.Div}[text]
        return self.make(op.col, ctor, left, self.expr(_INFIX[text]))

    def index(self, e: E.Expr, open_tok: _Tok) -> E.Expr:
        if self.tok.kind != "num" or not isinstance(self.tok.value, int):
            raise self.error(
                f"a component index is a non-negative integer, e.g. v[0]; found "
                f"{self.describe(self.tok)}", self.tok.col)
        index = self.advance().value
        self.expect_close("]", open_tok)
        if not e.is_vector:
            raise self.error(
                f"'{e}' is a scalar and has no components; index vectors such as grad(u)[0] or "
                "vector(a, b)[1]", open_tok.col)
        return self.make(open_tok.col, E.Component, e, index)

    def primary(self) -> E.Expr:
        tok = self.tok
        if tok.kind == "num":
            self.advance()
            return E.Number(tok.value)
        if tok.kind == "name":
            self.advance()
            if self.at("op", "("):
                return self.call(tok)
            return self.name(tok)
        if tok.kind == "op" and tok.text == "(":
            self.advance()
            if self.at("op", ")"):
                raise self.error("empty parentheses '()'", tok.col)
            e = self.expr(0)
            if self.at("op", ","):
                raise self.error("tuples are not allowed: use vector(a, b) for a vector",
                                 self.tok.col)
            self.expect_close(")", tok)
            return e
        if tok.kind == "end":
            raise self.error("unexpected end of the input: an operand is missing", tok.col)
        if tok.kind == "op" and tok.text == "[":
            raise self.error(
                "'[' is only allowed after a vector, as a component index (grad(u)[0]); "
                "lists and comprehensions are not part of the language", tok.col)
        if tok.kind == "op" and tok.text in ")]":
            raise self.error(f"unexpected '{tok.text}': an operand is missing", tok.col)
        if tok.kind == "op" and tok.text == ",":
            raise self.error("unexpected ',': commas only separate function arguments",
                             tok.col)
        raise self.error(f"unexpected {self.describe(tok)}: an operand is missing", tok.col)

    # -- names -------------------------------------------------------------
    def name(self, tok: _Tok) -> E.Expr:
        name = tok.text
        node = self.ns.get(name)
        if node is not None:
            return node
        if name in _CONSTANTS:
            return E.Constant(name)
        if name == "not":
            raise self.error("'not' cannot appear inside arithmetic; put it in parentheses: "
                             "(not a)", tok.col)
        if name in KEYWORDS:
            raise self.error(f"'{name}' needs an operand before it", tok.col)
        if name in E.FUNCTIONS or name in OPERATORS:
            raise self.error(f"'{name}' is a function: call it as {name}(...)", tok.col)
        self.check_forbidden(tok)
        short = self.shorthand(tok)
        if short is not None:
            return short
        cands = [*self.ns.names, *_CONSTANTS]
        hint = _suggest(name, cands, [*E.FUNCTIONS, *OPERATORS])
        if not hint:
            known = ", ".join(self.ns.names) if self.ns.names else "none"
            hint = f"; declared names: {known}" if len(known) < 200 else "; not declared"
        raise self.error(f"unknown name '{name}'{hint}", tok.col)

    def check_forbidden(self, tok: _Tok) -> None:
        name = tok.text
        if name.startswith("__"):
            raise self.error(f"'{name}': names starting with '__' are not allowed; allowed: "
                             f"{_ALLOWED}", tok.col)
        if name == "lambda":
            raise self.error("lambdas are not part of the PDE language; write the expression "
                             "itself", tok.col)
        if keyword.iskeyword(name):
            raise self.error(f"'{name}' is a Python keyword, not part of the PDE language; "
                             f"allowed: {_ALLOWED}", tok.col)

    def check_keyword(self, tok: _Tok) -> None:
        """A clear error for Python syntax (``for``, ``if``, ``lambda``...) found mid-expression."""
        if tok.kind == "name" and tok.text not in KEYWORDS and tok.text not in self.ns:
            if keyword.iskeyword(tok.text):
                what = {"for": "comprehensions", "if": "conditional expressions (use "
                        "where(cond, a, b))", "lambda": "lambdas"}.get(tok.text, "statements")
                raise self.error(f"'{tok.text}' is a Python keyword: {what} are not part of the "
                                 f"PDE language; allowed: {_ALLOWED}", tok.col)

    def shorthand(self, tok: _Tok) -> E.Expr | None:
        """``u_xx`` -> D(u, x, 2); None when the name has no shorthand shape."""
        name = tok.text
        if "_" not in name.strip("_"):
            return None
        base, _, suffix = name.rpartition("_")
        if not base or not suffix:
            return None
        node = self.ns.get(base)
        if node is None:
            return None
        if not isinstance(node, E.Field):
            raise self.error(
                f"unknown name '{name}': '{base}' is {_kind(node)}, and the derivative "
                f"shorthand {base}_... applies to fields only", tok.col)
        for k in range(1, len(suffix)):
            other = self.ns.get(f"{base}_{suffix[:k]}")
            if isinstance(other, E.Field):
                letters = ", ".join(suffix)
                raise self.error(
                    f"ambiguous name '{name}': it could be D({base}, {letters}) or "
                    f"D({other.name}, {', '.join(suffix[k:])}); write D(...) explicitly",
                    tok.col)
        coords = {c.name: c for c in self.ns.coords}
        wrt = []
        for k, ch in enumerate(suffix):
            c = coords.get(ch)
            if c is None:
                one = sorted(n for n in coords if len(n) == 1)
                if one:
                    allowed = f"the one-letter coordinates are {', '.join(one)}"
                else:
                    allowed = "no one-letter coordinate is declared"
                raise self.error(
                    f"unknown name '{name}': in the derivative shorthand, '{ch}' is not a "
                    f"declared coordinate ({allowed}); write D({base}, ...) instead",
                    tok.col + len(base) + 1 + k)
            wrt.append(c)
        return self.make(tok.col, E.Derivative, node, tuple(wrt))

    # -- calls -------------------------------------------------------------
    def call(self, tok: _Tok) -> E.Expr:
        name = tok.text
        if name not in E.FUNCTIONS and name not in OPERATORS:
            node = self.ns.get(name)
            if node is not None:
                raise self.error(
                    f"'{name}' is {_kind(node)}, not a function: write {name}*(...) to multiply",
                    tok.col)
            self.check_forbidden(tok)
            hint = _suggest(name, [*E.FUNCTIONS, *OPERATORS])
            raise self.error(
                f"unknown function '{name}'{hint or '.'} Functions: "
                f"{', '.join([*E.FUNCTIONS, *OPERATORS])}", tok.col)
        # the argument list, inline (fewer Python frames per nesting level); a call
        # counts as two nesting levels
        open_tok = self.advance()
        cols: list[int] = []
        vals: list[E.Expr] = []
        self.enter(open_tok.col)
        try:
            if self.at("op", ")"):
                self.advance()
            else:
                while True:
                    if self.at("op", ",") or self.at("op", ")"):
                        raise self.error("missing argument", self.tok.col)
                    cols.append(self.tok.col)
                    vals.append(self.expr(0))
                    if self.at("op", ","):
                        self.advance()
                        continue
                    self.expect_close(")", open_tok)
                    break
        finally:
            self.leave()
        if name in E.FUNCTIONS:
            want = E.FUNCTIONS[name]
            if len(vals) != want:
                raise self.error(f"{name}() takes {want} argument{'s' * (want != 1)}, got "
                                 f"{len(vals)}", tok.col)
            return self.make(tok.col, E.Call, name, tuple(vals))
        if name == "D":
            return self.derivative(tok, cols, vals)
        if name in ("laplacian", "grad", "div"):
            if not vals:
                raise self.error(f"{name}() needs an expression, e.g. {name}(u)", tok.col)
            over = None
            if len(vals) > 1:
                over = tuple(self.coord_arg(name, c, v)
                             for c, v in zip(cols[1:], vals[1:], strict=True))
            ctor = {"laplacian": E.Laplacian, "grad": E.Grad, "div": E.Div_}[name]
            return self.make(tok.col, ctor, vals[0], over)
        if name == "vector":
            if not vals:
                raise self.error("vector() needs at least one component", tok.col)
            return self.make(tok.col, E.Vector, tuple(vals))
        # dot
        if len(vals) != 2:
            raise self.error(f"dot() takes 2 arguments, got {len(vals)}", tok.col)
        return self.make(tok.col, E.Dot, vals[0], vals[1])

    def coord_arg(self, func: str, col: int, value: E.Expr) -> E.Coord:
        if isinstance(value, E.Coord):
            return value
        coords = ", ".join(c.name for c in self.ns.coords) or "none declared"
        raise self.error(f"{func}(): expected a coordinate ({coords}), got '{value}'", col)

    def derivative(self, tok: _Tok, cols: list[int], vals: list[E.Expr]) -> E.Expr:
        if len(vals) < 2:
            raise self.error("D() needs an expression and at least one coordinate, e.g. "
                             "D(u, x), D(u, x, 2) or D(u, x, y)", tok.col)
        wrt: list[E.Coord] = []
        prev_was_coord = False
        for col, v in zip(cols[1:], vals[1:], strict=True):
            if isinstance(v, E.Coord):
                wrt.append(v)
                prev_was_coord = True
                continue
            if isinstance(v, E.Number) and isinstance(v.value, int):
                if not prev_was_coord:
                    raise self.error(
                        "in D(), an order must follow a coordinate: D(u, x, 2)", col)
                if v.value < 1:
                    raise self.error(f"derivative order must be >= 1, got {v.value}", col)
                if len(wrt) + v.value - 1 > MAX_DEPTH:
                    raise self.error(f"derivative order {v.value} is too high", col)
                wrt.extend([wrt[-1]] * (v.value - 1))
                prev_was_coord = False
                continue
            if isinstance(v, E.Number) or (isinstance(v, E.Neg) and isinstance(v.arg, E.Number)):
                raise self.error(f"derivative order must be a positive integer, got {v}", col)
            coords = ", ".join(c.name for c in self.ns.coords) or "none declared"
            raise self.error(
                f"D() takes an expression, then coordinates ({coords}) and integer orders; "
                f"got '{v}'", col)
        return self.make(tok.col, E.Derivative, vals[0], tuple(wrt))


def parse(text: str | E.ExprLike, namespace: object = None) -> E.Expr:
    """Parse ``text`` in the PDE language; names come from ``namespace``.

    ``namespace``: a :class:`Namespace`, a mapping ``{name: node}``, a list
    of coordinates/fields/parameters, or an object with ``.coords``,
    ``.fields`` and ``.params`` (a Problem).  An expression or a number is
    returned as an expression unchanged (convenient for config values).

    Raises :class:`ParseError` (a ValueError) for every invalid string.
    """
    if isinstance(text, E.Expr):
        return text
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return E.as_expr(text)
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a string, got {type(text).__name__} {text!r}")
    ns = Namespace.of(namespace)
    if len(text) > MAX_LENGTH:
        raise ParseError(f"expression too long ({len(text)} characters; at most {MAX_LENGTH})",
                         text, MAX_LENGTH + 1)
    try:
        return _Parser(text, ns).parse()
    except RecursionError:  # a safety net: the nesting limits keep well below the stack
        raise ParseError(f"expression nested too deeply (at most {MAX_DEPTH} levels)",
                         text, 1) from None


def split_expressions(text: str) -> list[str]:
    """``"u,v,D(u, x)"`` -> ``["u", "v", "D(u, x)"]``: a comma-separated list of expressions
    (commas inside brackets do not split). An empty entry is a ``ValueError``."""
    out, depth, cur = [], 0, []
    for ch in text:
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    if any(not s for s in out):
        raise ValueError(f"{text!r} has an empty entry; give names or expressions separated "
                         "by commas, e.g. u,v,u_x")
    return out


# ---------------------------------------------------------------------------
# expressions as data: {"$expr": TEXT} (pinn.data)


class DataNames(NamedTuple):
    """What expressions written as data are read in: the names (a :class:`Namespace` or
    mapping), and the problem whose :meth:`~pinn.Problem.expand` decides whether an
    expression read back means what was written (``None``: it must read back equal)."""

    namespace: object = None
    problem: object = None


def expr_text(e: E.Expr, names: DataNames | None, where: str) -> str:
    """``str(e)``, checked to read back as ``e`` in ``names`` (or, with a problem, as the
    same expanded expression); :class:`~pinn.data.NotData` naming ``where`` otherwise."""
    names = names or DataNames()
    text = str(e)
    try:
        back = parse(text, names.namespace)
    except ValueError as exc:
        raise NotData(f"{where}: the expression {text!r} does not read back ({exc})") from None
    if back != e and (names.problem is None
                      or names.problem.expand(back) != names.problem.expand(e)):
        raise NotData(f"{where}: the expression {text!r} does not read back as written")
    return text


def text_expr(text, names: DataNames | None, where: str) -> E.Expr:
    """The expression ``text`` (written by :func:`expr_text`) read in ``names``; a
    ``ValueError`` naming ``where`` otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"{where}: expected an expression as text, got {text!r}")
    try:
        return parse(text, (names or DataNames()).namespace)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


register_tag("$expr", E.Expr, lambda e, writer, where: expr_text(e, writer.context, where),
             lambda text, reader, where: text_expr(text, reader.context, where))
