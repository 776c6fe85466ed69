"""Printing expressions back to the string syntax (``parse(to_string(e)) == e``).

LaTeX lives in :mod:`pinn.dsl.latex`.
"""

from __future__ import annotations

from pinn.dsl import expr as E

# precedence: higher binds tighter
_PREC = {
    E.Or: 1, E.And: 2, E.Not: 3, E.Compare: 4,
    E.Add: 5, E.Sub: 5, E.Mul: 6, E.Div: 6, E.Neg: 7, E.Pow: 8,
}
_SYMBOL = {E.Add: " + ", E.Sub: " - ", E.Mul: "*", E.Div: "/", E.Pow: "^",
           E.And: " and ", E.Or: " or "}
_ATOM = 10


def precedence(e: E.Expr) -> int:
    return _PREC.get(type(e), _ATOM)


def format_number(v: float) -> str:
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def to_string(e: E.Expr) -> str:
    """The expression as PDE-language text that :func:`pinn.parse` reads back
    (``str(expr)`` is the same): ``to_string(a*D(u, x, 2)) == "a*D(u, x, 2)"``."""
    t = type(e)
    if t is E.Number:
        return format_number(e.value)
    if t in (E.Coord, E.Field, E.Param, E.Constant):
        return e.name
    if t in _SYMBOL:
        p = _PREC[t]
        right_assoc = t is E.Pow
        left, right = e.left, e.right
        ls, rs = to_string(left), to_string(right)
        lp, rp = precedence(left), precedence(right)
        if lp < p or (right_assoc and lp <= p) or (t is E.Pow and isinstance(left, E.Neg)):
            ls = f"({ls})"
        if rp < p or (not right_assoc and rp <= p) or isinstance(right, E.Neg):
            rs = f"({rs})"
        return f"{ls}{_SYMBOL[t]}{rs}"
    if t is E.Neg:
        s = to_string(e.arg)
        if precedence(e.arg) < _PREC[E.Neg] or isinstance(e.arg, E.Neg):
            s = f"({s})"
        return f"-{s}"
    if t is E.Not:
        s = to_string(e.arg)
        if precedence(e.arg) < _PREC[E.Not]:
            s = f"({s})"
        return f"not {s}"
    if t is E.Compare:
        p = _PREC[t]
        ls, rs = to_string(e.left), to_string(e.right)
        if precedence(e.left) <= p:
            ls = f"({ls})"
        if precedence(e.right) <= p:
            rs = f"({rs})"
        return f"{ls} {e.op} {rs}"
    if t is E.Call:
        return f"{e.func}({', '.join(to_string(a) for a in e.args)})"
    if t is E.Tabulated:  # data prints by its name (what the namespace maps to it)
        s = e.name
        if e.deriv:
            parts = [c if k == 1 else f"{c}, {k}" for c, k in
                     zip((to_string(a) for a in e.args), e.deriv, strict=True) if k]
            s = f"D({s}, {', '.join(parts)})"
        return s
    if t is E.Derivative:
        # runs of one coordinate print with their order: (x, x, y) -> "x, 2, y"
        parts: list[str] = []
        wrt, i = e.wrt, 0
        while i < len(wrt):
            j = i
            while j < len(wrt) and wrt[j] == wrt[i]:
                j += 1
            parts.append(wrt[i].name if j - i == 1 else f"{wrt[i].name}, {j - i}")
            i = j
        return f"D({to_string(e.expr)}, {', '.join(parts)})"
    if t in (E.Laplacian, E.Grad, E.Div_):
        name = {E.Laplacian: "laplacian", E.Grad: "grad", E.Div_: "div"}[t]
        inner = to_string(e.expr)
        if e.coords is not None:
            inner += "".join(f", {c.name}" for c in e.coords)
        return f"{name}({inner})"
    if t is E.Vector:
        return f"vector({', '.join(to_string(a) for a in e.items)})"
    if t is E.Dot:
        return f"dot({to_string(e.left)}, {to_string(e.right)})"
    if t is E.Component:
        s = to_string(e.vector)
        if precedence(e.vector) < _ATOM:
            s = f"({s})"
        return f"{s}[{e.index}]"
    raise TypeError(f"cannot print node {t.__name__}")


def to_latex(e: E.Expr) -> str:
    from pinn.dsl.latex import latex

    return latex(e)
