"""Expression nodes of the PDE language.

Every node is an immutable, hashable frozen dataclass that compares
structurally.  Python operators build trees exactly as written (no
simplification), so ``parse(str(e)) == e``; the helpers in
:mod:`pinn.dsl.calculus` simplify while they differentiate.

Negative numbers are never stored in :class:`Number`: ``as_expr(-2)`` is
``Neg(Number(2))``, which is what the parser produces for ``-2``.

Vectors (``vector(...)``, ``grad(u)``) combine with ``+``/``-`` (two vectors),
``*`` (a scalar and a vector), ``/`` (a vector by a scalar) and unary minus, so
``div(k*grad(u))`` reads as written; ``laplacian`` of a vector is taken
componentwise.  Shapes are checked when a node is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Union

__all__ = [
    "Expr", "Number", "Constant", "Coord", "Field", "Param",
    "Add", "Sub", "Mul", "Div", "Pow", "Neg",
    "Call", "Compare", "And", "Or", "Not", "Tabulated",
    "Derivative", "Laplacian", "Grad", "Div_", "Vector", "Dot", "Component",
    "FUNCTIONS", "COMPARISONS", "as_expr", "ExprLike",
]

ExprLike = Union["Expr", int, float]

#: Elementary functions of one argument (name -> number of arguments).
#: ``where(cond, a, b)`` is the piecewise form; ``smoothstep``-like forms
#: are written with tanh by the user.
FUNCTIONS: dict[str, int] = {
    "sin": 1, "cos": 1, "tan": 1, "exp": 1, "log": 1, "sqrt": 1,
    "tanh": 1, "sinh": 1, "cosh": 1, "abs": 1, "arctan": 1,
    "arcsin": 1, "arccos": 1, "sign": 1, "heaviside": 1,
    "where": 3, "min": 2, "max": 2,
}

COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_MAX_FLOAT = 1.7976931348623157e308


def as_expr(value: ExprLike) -> Expr:
    """Turn a Python number (or an expression) into an expression."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        raise TypeError(f"cannot use the boolean {value!r} in an expression; write 1 or 0")
    if isinstance(value, (int, float)) or hasattr(value, "__float__"):
        v = float(value) if not isinstance(value, int) else value
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"cannot use the non-finite number {v!r} in an expression")
        if v < 0:
            return Neg(Number(-v))
        return Number(v)
    raise TypeError(
        f"cannot use {value!r} (type {type(value).__name__}) in an expression; "
        "use numbers, pinn.coords(...), pinn.field(...) or pinn.param(...)"
    )


class Expr:
    """Base class of all nodes.  Subclasses are frozen dataclasses."""

    __slots__ = ()

    # -- structure -------------------------------------------------------
    def children(self) -> tuple[Expr, ...]:
        return ()

    def rebuild(self, children: tuple[Expr, ...]) -> Expr:
        """A node of the same kind with new children (leaves return self)."""
        return self

    @property
    def is_vector(self) -> bool:
        return False

    # -- arithmetic ------------------------------------------------------
    def __add__(self, other: ExprLike) -> Expr:
        return Add(self, as_expr(other))

    def __radd__(self, other: ExprLike) -> Expr:
        return Add(as_expr(other), self)

    def __sub__(self, other: ExprLike) -> Expr:
        return Sub(self, as_expr(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return Sub(as_expr(other), self)

    def __mul__(self, other: ExprLike) -> Expr:
        return Mul(self, as_expr(other))

    def __rmul__(self, other: ExprLike) -> Expr:
        return Mul(as_expr(other), self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return Div(self, as_expr(other))

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return Div(as_expr(other), self)

    def __pow__(self, other: ExprLike) -> Expr:
        return Pow(self, as_expr(other))

    def __rpow__(self, other: ExprLike) -> Expr:
        return Pow(as_expr(other), self)

    def __neg__(self) -> Expr:
        return Neg(self)

    def __pos__(self) -> Expr:
        return self

    # -- comparisons build predicate nodes (== stays structural equality) --
    def __lt__(self, other: ExprLike) -> Expr:
        return Compare("<", self, as_expr(other))

    def __le__(self, other: ExprLike) -> Expr:
        return Compare("<=", self, as_expr(other))

    def __gt__(self, other: ExprLike) -> Expr:
        return Compare(">", self, as_expr(other))

    def __ge__(self, other: ExprLike) -> Expr:
        return Compare(">=", self, as_expr(other))

    def __bool__(self) -> bool:  # pragma: no cover - guard against `if u < 1:`
        raise TypeError(
            "an expression has no truth value; use pinn.where(cond, a, b) for piecewise "
            "expressions"
        )

    def __getitem__(self, index: int) -> Expr:
        if not self.is_vector:
            raise TypeError(f"{self} is a scalar expression and has no components")
        return Component(self, index)

    def __iter__(self):
        # without this, `x, = pinn.coords("x")` fails in __getitem__ with a puzzling message
        if not self.is_vector:
            hint = (f"pinn.coords({self.name!r}) with one name returns the coordinate itself: "
                    f"write `{self.name} = pinn.coords({self.name!r})` (or `x, y = "
                    "pinn.coords('x y')` for several)" if isinstance(self, Coord) else
                    f"pinn.field({self.name!r}) returns the field itself: write `{self.name} = "
                    f"pinn.field({self.name!r})`" if isinstance(self, Field) else
                    "only a vector expression has components (v[0])")
            raise TypeError(f"{self} is one scalar expression and cannot be unpacked or "
                            f"iterated; {hint}")
        if hasattr(self, "__len__"):
            return iter([self[i] for i in range(len(self))])
        raise TypeError(f"{self} is a vector expression of unknown length; take its "
                        "components by index (v[0], v[1])")

    def __str__(self) -> str:
        from pinn.dsl.printing import to_string

        return to_string(self)

    def __repr__(self) -> str:
        return f"Expr({to_string_safe(self)!r})"

    def to_latex(self) -> str:
        from pinn.dsl.printing import to_latex

        return to_latex(self)

    def _repr_latex_(self) -> str:  # Jupyter
        return f"${self.to_latex()}$"


def to_string_safe(e: Expr) -> str:
    try:
        from pinn.dsl.printing import to_string

        return to_string(e)
    except Exception:  # noqa: BLE001 - repr must never fail
        return object.__repr__(e)


# ---------------------------------------------------------------------------
# leaves


@dataclass(frozen=True, repr=False)
class Number(Expr):
    value: float

    def __post_init__(self):
        v = self.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"Number needs an int or float, got {v!r}")
        # plain Python numbers only (numpy scalars print and hash differently); no -0.0
        v = int(v) if isinstance(v, int) else float(v) + 0.0
        if isinstance(v, int) and v > _MAX_FLOAT:
            raise ValueError(f"Number {str(v)[:20]}... is too large (above the largest float)")
        if isinstance(v, float) and not math.isfinite(v) or v < 0:
            raise ValueError(
                f"Number holds finite non-negative values only, got {v!r}; use as_expr")
        object.__setattr__(self, "value", v)


@dataclass(frozen=True, repr=False)
class Constant(Expr):
    """A named mathematical constant: ``pi`` or ``e``."""

    name: str

    VALUES = {"pi": math.pi, "e": math.e}

    def __post_init__(self):
        if self.name not in self.VALUES:
            raise ValueError(f"unknown constant {self.name!r}; known: pi, e")

    @property
    def value(self) -> float:
        return self.VALUES[self.name]


@dataclass(frozen=True, repr=False)
class Coord(Expr):
    """An independent variable (``x``, ``y``, ``z``, ``t``)."""

    name: str


@dataclass(frozen=True, repr=False)
class Field(Expr):
    """An unknown scalar field (one output of the network).

    ``coords``: the names of the coordinates the field depends on, when it depends on a
    subset of the problem's coordinates (a coefficient ``a(x, y)`` of a time-dependent
    problem); ``None``: all of them. It is a declaration, not part of the field's
    identity: two fields of the same name are equal (``parse`` gives ``Field("a")``), and
    the problem resolves each field's coordinates from its declaration
    (:attr:`pinn.Problem.field_coords`).
    """

    name: str
    coords: tuple[str, ...] | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.coords is not None:
            cs = self.coords
            if isinstance(cs, (str, Expr)):
                cs = (cs,)
            names = tuple(c.name if isinstance(c, Coord) else c for c in cs)
            bad = [c for c in names if not isinstance(c, str) or not c.isidentifier()]
            if bad:
                raise TypeError(f"field {self.name!r}: coords must be coordinates or their "
                                f"names, got {bad[0]!r}")
            if not names:
                raise ValueError(f"field {self.name!r}: give at least one coordinate (a "
                                 "constant unknown is a learnable parameter)")
            dup = sorted({c for c in names if names.count(c) > 1})
            if dup:
                raise ValueError(f"field {self.name!r}: coordinate {dup[0]!r} is listed twice")
            object.__setattr__(self, "coords", names)


@dataclass(frozen=True, repr=False)
class Param(Expr):
    """A named parameter: fixed, learnable from ``value`` (inverse problems), or ranged
    over ``range = (lo, hi)`` (parametric problems: an input of the network, read from the
    input column of that name, never differentiated)."""

    name: str
    value: float | None = None
    learnable: bool = False
    range: tuple[float, float] | None = None


# ---------------------------------------------------------------------------
# operators


@dataclass(frozen=True, repr=False)
class _Binary(Expr):
    left: Expr
    right: Expr

    def __post_init__(self):
        self._check()

    def _check(self) -> None:
        pass

    def children(self):
        return (self.left, self.right)

    def rebuild(self, children):
        return type(self)(*children)


def _set_vector(node: Expr, value: bool) -> None:
    object.__setattr__(node, "_vector", value)  # cached shape; not a dataclass field


class _Arith(_Binary):
    """Arithmetic: scalars, or vectors where it makes sense (``k*grad(u)``, ``a + b``)."""

    def _check(self) -> None:
        lv, rv = self.left.is_vector, self.right.is_vector
        t = type(self)
        if t in (Add, Sub):
            if lv != rv:
                op = "add" if t is Add else "subtract"
                raise TypeError(f"cannot {op} a vector and a scalar: {self.left} and {self.right}")
            vec = lv
        elif t is Mul:
            if lv and rv:
                raise TypeError(
                    f"cannot multiply two vectors ({self.left} and {self.right}); use dot(a, b)")
            vec = lv or rv
        elif t is Div:
            if rv:
                raise TypeError(f"cannot divide by the vector {self.right}")
            vec = lv
        else:  # Pow
            if lv or rv:
                raise TypeError(f"cannot raise vectors to powers: {self.left}, {self.right}")
            vec = False
        _set_vector(self, vec)

    @property
    def is_vector(self) -> bool:
        return self.__dict__.get("_vector", False)


class Add(_Arith):
    pass


class Sub(_Arith):
    pass


class Mul(_Arith):
    pass


class Div(_Arith):
    pass


class Pow(_Arith):
    pass


@dataclass(frozen=True, repr=False)
class Neg(Expr):
    arg: Expr

    @property
    def is_vector(self) -> bool:
        return self.arg.is_vector

    def children(self):
        return (self.arg,)

    def rebuild(self, children):
        return Neg(*children)


@dataclass(frozen=True, repr=False)
class Call(Expr):
    """An elementary function applied to arguments, e.g. ``sin(x)``."""

    func: str
    args: tuple[Expr, ...]

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        if self.func not in FUNCTIONS:
            raise ValueError(f"unknown function {self.func!r}; known: {', '.join(FUNCTIONS)}")
        if len(self.args) != FUNCTIONS[self.func]:
            raise ValueError(
                f"{self.func} takes {FUNCTIONS[self.func]} argument(s), got {len(self.args)}"
            )
        for a in self.args:
            if not isinstance(a, Expr):
                raise TypeError(f"{self.func}() arguments must be expressions, got {a!r}")
            if a.is_vector:
                raise TypeError(f"{self.func}() takes scalars; {a} is a vector")

    def children(self):
        return self.args

    def rebuild(self, children):
        return Call(self.func, tuple(children))


@dataclass(frozen=True, repr=False)
class Tabulated(Expr):
    """A coefficient given as data: ``table`` (a :class:`pinn.dsl.tables.Table`) at the
    arguments ``args`` (usually coordinates), or its partial derivative of orders
    ``deriv`` (one per argument; ``()``: the value). ``name`` is how it prints."""

    name: str
    table: object
    args: tuple[Expr, ...]
    deriv: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "deriv", tuple(int(k) for k in self.deriv))
        dim = getattr(self.table, "dim", None)
        if dim is not None and len(self.args) != dim:
            raise ValueError(f"{self.name}: a table of {dim} argument(s) was given "
                             f"{len(self.args)}")
        if self.deriv and (len(self.deriv) != len(self.args) or min(self.deriv) < 0):
            raise ValueError(f"{self.name}: deriv needs one order >= 0 per argument")
        if self.deriv and not any(self.deriv):
            object.__setattr__(self, "deriv", ())
        for a in self.args:
            if not isinstance(a, Expr) or a.is_vector:
                raise TypeError(f"{self.name}() takes scalar expressions, got {a!r}")

    def children(self):
        return self.args

    def rebuild(self, children):
        return Tabulated(self.name, self.table, tuple(children), self.deriv)


@dataclass(frozen=True, repr=False)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr

    def __post_init__(self):
        if self.op not in COMPARISONS:
            raise ValueError(f"unknown comparison {self.op!r}")

    def children(self):
        return (self.left, self.right)

    def rebuild(self, children):
        return Compare(self.op, *children)


class And(_Binary):
    pass


class Or(_Binary):
    pass


@dataclass(frozen=True, repr=False)
class Not(Expr):
    arg: Expr

    def children(self):
        return (self.arg,)

    def rebuild(self, children):
        return Not(*children)


# ---------------------------------------------------------------------------
# derivatives and vector calculus


def _check_coords(node) -> None:
    """``coords`` of laplacian/grad/div: None (the spatial coords) or a non-empty tuple."""
    cs = node.coords
    if cs is None:
        return
    if isinstance(cs, Coord):
        cs = (cs,)
    cs = tuple(cs)
    if not cs:
        raise ValueError(f"{type(node).__name__}: give at least one coordinate, or None for "
                         "the problem's spatial coordinates")
    for c in cs:
        if not isinstance(c, Coord):
            raise TypeError(f"{type(node).__name__}: expected coordinates, got {c!r}")
    object.__setattr__(node, "coords", cs)


@dataclass(frozen=True, repr=False)
class Derivative(Expr):
    """``D(expr, *wrt)``: the partial derivative of ``expr`` w.r.t. the coords in ``wrt``.

    ``D(u, x, 2)`` is ``Derivative(u, (x, x))``; ``D(u, x, y)`` is ``Derivative(u, (x, y))``.
    """

    expr: Expr
    wrt: tuple[Coord, ...]

    def __post_init__(self):
        object.__setattr__(self, "wrt", tuple(self.wrt))
        if not self.wrt:
            raise ValueError("a derivative needs at least one coordinate")
        for c in self.wrt:
            if not isinstance(c, Coord):
                raise TypeError(f"derivatives are taken with respect to coordinates, not {c}")
        if self.expr.is_vector:
            raise TypeError(f"D() takes a scalar expression; {self.expr} is a vector")

    def children(self):
        return (self.expr,)

    def rebuild(self, children):
        return Derivative(children[0], self.wrt)

    @property
    def order(self) -> int:
        return len(self.wrt)


@dataclass(frozen=True, repr=False)
class Laplacian(Expr):
    """Sum of second derivatives over ``coords`` (None: the problem's spatial coords)."""

    expr: Expr
    coords: tuple[Coord, ...] | None = None

    def __post_init__(self):
        _check_coords(self)

    def children(self):
        return (self.expr,)

    def rebuild(self, children):
        return Laplacian(children[0], self.coords)

    @property
    def is_vector(self) -> bool:  # the Laplacian of a vector is taken componentwise
        return self.expr.is_vector


@dataclass(frozen=True, repr=False)
class Grad(Expr):
    """Gradient (a vector) over ``coords`` (None: the problem's spatial coords)."""

    expr: Expr
    coords: tuple[Coord, ...] | None = None

    def __post_init__(self):
        _check_coords(self)
        if self.expr.is_vector:
            raise TypeError(f"grad() takes a scalar expression; {self.expr} is a vector")

    def children(self):
        return (self.expr,)

    def rebuild(self, children):
        return Grad(children[0], self.coords)

    @property
    def is_vector(self) -> bool:
        return True


@dataclass(frozen=True, repr=False)
class Div_(Expr):
    """Divergence of a vector expression over ``coords`` (None: spatial coords)."""

    expr: Expr
    coords: tuple[Coord, ...] | None = None

    def __post_init__(self):
        _check_coords(self)
        if not self.expr.is_vector:
            raise TypeError(f"div() takes a vector expression; {self.expr} is a scalar")

    def children(self):
        return (self.expr,)

    def rebuild(self, children):
        return Div_(children[0], self.coords)


@dataclass(frozen=True, repr=False)
class Vector(Expr):
    items: tuple[Expr, ...]

    def __post_init__(self):
        object.__setattr__(self, "items", tuple(self.items))
        if not self.items:
            raise ValueError("a vector needs at least one component")
        for it in self.items:
            if it.is_vector:
                raise TypeError("vectors of vectors are not supported")

    def children(self):
        return self.items

    def rebuild(self, children):
        return Vector(tuple(children))

    @property
    def is_vector(self) -> bool:
        return True

    def __getitem__(self, index: int) -> Expr:
        return Component(self, index)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True, repr=False)
class Dot(Expr):
    left: Expr
    right: Expr

    def __post_init__(self):
        if not (self.left.is_vector and self.right.is_vector):
            raise TypeError("dot() takes two vector expressions")

    def children(self):
        return (self.left, self.right)

    def rebuild(self, children):
        return Dot(*children)


@dataclass(frozen=True, repr=False)
class Component(Expr):
    vector: Expr
    index: int

    def __post_init__(self):
        if not self.vector.is_vector:
            raise TypeError(f"{self.vector} is a scalar and has no components")
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 0:
            raise TypeError(f"component index must be a non-negative integer, got {self.index!r}")
        if isinstance(self.vector, Vector) and self.index >= len(self.vector.items):
            raise IndexError(
                f"component {self.index} of a {len(self.vector.items)}-vector does not exist"
            )

    def children(self):
        return (self.vector,)

    def rebuild(self, children):
        return Component(children[0], self.index)
