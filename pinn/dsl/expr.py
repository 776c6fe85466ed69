"""Expression nodes of the PDE language.

Every node is an immutable, hashable frozen dataclass that compares
structurally.  Python operators build trees exactly as written (no
simplification), so ``parse(str(e)) == e``; the helpers in
:mod:`pinn.dsl.calculus` simplify while they differentiate.

Negative numbers are never stored in :class:`Number`: ``as_expr(-2)`` is
``Neg(Number(2))``, which is what the parser produces for ``-2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

__all__ = [
    "Expr", "Number", "Constant", "Coord", "Field", "Param",
    "Add", "Sub", "Mul", "Div", "Pow", "Neg",
    "Call", "Compare", "And", "Or", "Not",
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
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"Number holds finite non-negative values only, got {v!r}; use as_expr")


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
    """An unknown scalar field (one output of the network)."""

    name: str


@dataclass(frozen=True, repr=False)
class Param(Expr):
    """A named parameter: fixed, or learnable from ``value`` (inverse problems)."""

    name: str
    value: float | None = None
    learnable: bool = False


# ---------------------------------------------------------------------------
# operators


@dataclass(frozen=True, repr=False)
class _Binary(Expr):
    left: Expr
    right: Expr

    def children(self):
        return (self.left, self.right)

    def rebuild(self, children):
        return type(self)(*children)


class Add(_Binary):
    pass


class Sub(_Binary):
    pass


class Mul(_Binary):
    pass


class Div(_Binary):
    pass


class Pow(_Binary):
    pass


@dataclass(frozen=True, repr=False)
class Neg(Expr):
    arg: Expr

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
        if self.func not in FUNCTIONS:
            raise ValueError(f"unknown function {self.func!r}; known: {', '.join(FUNCTIONS)}")
        if len(self.args) != FUNCTIONS[self.func]:
            raise ValueError(
                f"{self.func} takes {FUNCTIONS[self.func]} argument(s), got {len(self.args)}"
            )

    def children(self):
        return self.args

    def rebuild(self, children):
        return Call(self.func, tuple(children))


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


@dataclass(frozen=True, repr=False)
class Derivative(Expr):
    """``D(expr, *wrt)``: the partial derivative of ``expr`` w.r.t. the coords in ``wrt``.

    ``D(u, x, 2)`` is ``Derivative(u, (x, x))``; ``D(u, x, y)`` is ``Derivative(u, (x, y))``.
    """

    expr: Expr
    wrt: tuple[Coord, ...]

    def __post_init__(self):
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

    def children(self):
        return (self.expr,)

    def rebuild(self, children):
        return Laplacian(children[0], self.coords)


@dataclass(frozen=True, repr=False)
class Grad(Expr):
    """Gradient (a vector) over ``coords`` (None: the problem's spatial coords)."""

    expr: Expr
    coords: tuple[Coord, ...] | None = None

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
