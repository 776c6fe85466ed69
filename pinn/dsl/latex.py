"""LaTeX for expressions: ``latex(e)`` (also ``e.to_latex()``).

Conventions follow SymPy's printer where they make sense for PDEs:
fractions as ``\\frac``, powers as ``x^{2}``, functions as ``\\sin{\\left(x \\right)}``,
partial derivatives as ``\\frac{\\partial^2 u}{\\partial x^2}`` (mixed:
``\\frac{\\partial^2 u}{\\partial x \\partial y}``), ``\\Delta u``, ``\\nabla u``,
``\\nabla \\cdot v``, ``a \\cdot b``; Greek names (``alpha``, ``nu``, ``Omega``)
become Greek letters, ``nu_0`` becomes ``\\nu_{0}`` and other multi-letter
names are set upright (``\\mathrm{Re}``).
"""

from __future__ import annotations

import re

from pinn.dsl import expr as E

__all__ = ["latex", "latex_name"]

_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "pi", "varpi", "rho", "varrho",
    "sigma", "varsigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega",
    "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega",
}
_ALIASES = {"eps": r"\varepsilon", "lam": r"\lambda", "lmbda": r"\lambda"}

# precedence for parenthesisation (as in pinn.dsl.printing)
_PREC = {
    E.Or: 1, E.And: 2, E.Not: 3, E.Compare: 4,
    E.Add: 5, E.Sub: 5, E.Mul: 6, E.Div: 6, E.Neg: 7, E.Pow: 8,
}
_ATOM = 10
_CMP = {"<": "<", "<=": r"\leq", ">": ">", ">=": r"\geq", "==": "=", "!=": r"\neq"}
_FUNC = {
    "sin": r"\sin", "cos": r"\cos", "tan": r"\tan", "log": r"\log", "tanh": r"\tanh",
    "sinh": r"\sinh", "cosh": r"\cosh", "arctan": r"\arctan", "arcsin": r"\arcsin",
    "arccos": r"\arccos", "sign": r"\operatorname{sign}", "heaviside": r"\theta",
    "min": r"\min", "max": r"\max",
}


def latex_name(name: str) -> str:
    """LaTeX for a name: ``alpha`` -> ``\\alpha``, ``nu_0`` -> ``\\nu_{0}``, ``x1`` -> ``x_{1}``."""
    base, sep, sub = name.partition("_")
    if not base:  # leading underscore: keep the name literal
        return r"\mathrm{" + name.replace("_", r"\_") + "}"
    if not sep:
        m = re.fullmatch(r"([A-Za-z]+?)(\d+)", base)
        if m and (len(m.group(1)) == 1 or m.group(1) in _GREEK or m.group(1) in _ALIASES):
            base, sub = m.group(1), m.group(2)
    if base in _GREEK:
        head = "\\" + base
    elif base in _ALIASES:
        head = _ALIASES[base]
    elif len(base) == 1:
        head = base
    else:
        head = r"\mathrm{" + base + "}"
    if sub:
        parts = [latex_name(p) if p else "" for p in sub.split("_")]
        return head + "_{" + ",".join(p for p in parts if p) + "}"
    return head


def _prec(e: E.Expr) -> int:
    if isinstance(e, E.Number) and not isinstance(e.value, int) and "e" in repr(float(e.value)):
        return _PREC[E.Mul]  # 1.5 \cdot 10^{-5}
    if isinstance(e, E.Div):
        return _ATOM  # \frac{a}{b} needs no parentheses as a factor
    return _PREC.get(type(e), _ATOM)


_POW_BASES = (E.Coord, E.Field, E.Param, E.Constant, E.Vector)


def _paren(s: str) -> str:
    return r"\left(" + s + r"\right)"


def _number(v: float | int) -> str:
    if isinstance(v, int):
        return str(v)
    text = repr(float(v))
    if "e" not in text:
        return text
    mant, _, exp = text.partition("e")
    exp = str(int(exp))
    if mant in ("1", "1.0"):
        return "10^{" + exp + "}"
    return mant + r" \cdot 10^{" + exp + "}"


def _derivative(e: E.Derivative) -> str:
    groups: list[tuple[E.Coord, int]] = []
    for c in e.wrt:
        if groups and groups[-1][0] == c:
            groups[-1] = (c, groups[-1][1] + 1)
        else:
            groups.append((c, 1))
    n = len(e.wrt)
    top = r"\partial" + (f"^{_sup(n)}" if n > 1 else "")
    bottom = " ".join(
        r"\partial " + latex_name(c.name) + (f"^{_sup(k)}" if k > 1 else "") for c, k in groups
    )
    inner = e.expr
    if isinstance(inner, (E.Field, E.Coord, E.Param)):
        return r"\frac{" + top + " " + latex_name(inner.name) + "}{" + bottom + "}"
    body = latex(inner)
    if _prec(inner) < _ATOM:
        body = _paren(body)
    return r"\frac{" + top + "}{" + bottom + "} " + body


def _sup(k: int) -> str:
    return str(k) if k < 10 else "{" + str(k) + "}"


def _operand(e: E.Expr, limit: int) -> str:
    s = latex(e)
    return _paren(s) if _prec(e) < limit else s


def _call(e: E.Call) -> str:
    f, args = e.func, e.args
    if f == "exp":
        return "e^{" + latex(args[0]) + "}"
    if f == "sqrt":
        return r"\sqrt{" + latex(args[0]) + "}"
    if f == "abs":
        return r"\left|" + latex(args[0]) + r"\right|"
    if f == "where":
        c, a, b = (latex(x) for x in args)
        return (r"\begin{cases} " + a + r" & \text{if } " + c + r" \\ " + b
                + r" & \text{otherwise} \end{cases}")
    return _FUNC[f] + "{" + _paren(", ".join(latex(a) for a in args)) + "}"


def _sum(e: E.Add | E.Sub) -> str:
    p = _PREC[type(e)]
    left = _operand(e.left, p)
    right = latex(e.right)
    if _prec(e.right) <= p or isinstance(e.right, E.Neg):
        right = _paren(right)
    return f"{left} {'+' if type(e) is E.Add else '-'} {right}"


def _product(e: E.Mul) -> str:
    p = _PREC[E.Mul]
    left = _operand(e.left, p)
    right = latex(e.right)
    if _prec(e.right) <= p or isinstance(e.right, E.Neg):
        right = _paren(right)
    # a \cdot between numbers (2 \cdot 3) and before a leading digit; else juxtapose
    sep = r" \cdot " if right[:1].isdigit() or isinstance(e.right, E.Number) else " "
    return left + sep + right


def _power(e: E.Pow) -> str:
    base, expo = e.left, e.right
    if isinstance(base, E.Call) and base.func in _FUNC and len(base.args) == 1:
        # sin^{2}(x), as SymPy writes it
        return (_FUNC[base.func] + "^{" + latex(expo) + "}{"
                + _paren(latex(base.args[0])) + "}")
    b = latex(base)
    plain = isinstance(base, _POW_BASES) or (
        isinstance(base, E.Number) and _prec(base) == _ATOM
    ) or (isinstance(base, E.Call) and base.func in ("abs", "sqrt"))
    if not plain:
        b = _paren(b)
    return b + "^{" + latex(expo) + "}"


def _tabulated(e: E.Tabulated) -> str:
    name = latex_name(e.name)
    if not e.deriv:
        return name
    n = sum(e.deriv)
    den = " ".join(r"\partial " + latex(a) + (f"^{{{k}}}" if k > 1 else "")
                   for a, k in zip(e.args, e.deriv, strict=True) if k)
    return r"\frac{\partial" + (f"^{{{n}}}" if n > 1 else "") + " " + name + "}{" + den + "}"


def _comparison(e: E.Compare) -> str:
    p = _PREC[E.Compare]
    left, right = latex(e.left), latex(e.right)
    if _prec(e.left) <= p:
        left = _paren(left)
    if _prec(e.right) <= p:
        right = _paren(right)
    return f"{left} {_CMP[e.op]} {right}"


def _logical(e: E.And | E.Or) -> str:
    p = _PREC[type(e)]
    left = _operand(e.left, p)
    right = latex(e.right)
    if _prec(e.right) <= p:
        right = _paren(right)
    op = r"\wedge" if type(e) is E.And else r"\vee"
    return f"{left} {op} {right}"


def _vector_operator(e: E.Laplacian | E.Grad | E.Div_) -> str:
    op = {E.Laplacian: r"\Delta", E.Grad: r"\nabla", E.Div_: r"\nabla \cdot"}[type(e)]
    if e.coords is not None:
        op += "_{" + ", ".join(latex_name(c.name) for c in e.coords) + "}"
    return op + " " + _operand(e.expr, _ATOM)


def latex(e: E.Expr) -> str:
    """LaTeX source for ``e`` (no surrounding ``$``)."""
    t = type(e)
    if t is E.Number:
        return _number(e.value)
    if t is E.Constant:
        return r"\pi" if e.name == "pi" else "e"
    if t in (E.Coord, E.Field, E.Param):
        return latex_name(e.name)
    if t in (E.Add, E.Sub):
        return _sum(e)
    if t is E.Mul:
        return _product(e)
    if t is E.Div:
        return r"\frac{" + latex(e.left) + "}{" + latex(e.right) + "}"
    if t is E.Pow:
        return _power(e)
    if t is E.Neg:
        limit = _PREC[E.Neg] + 1 if isinstance(e.arg, E.Neg) else _PREC[E.Mul]
        return "- " + _operand(e.arg, limit)
    if t is E.Call:
        return _call(e)
    if t is E.Tabulated:  # a coefficient given as data
        return _tabulated(e)
    if t is E.Compare:
        return _comparison(e)
    if t in (E.And, E.Or):
        return _logical(e)
    if t is E.Not:
        return r"\neg " + _operand(e.arg, _ATOM)
    if t is E.Derivative:
        return _derivative(e)
    if t in (E.Laplacian, E.Grad, E.Div_):
        return _vector_operator(e)
    if t is E.Vector:
        return _paren(", ".join(latex(i) for i in e.items))
    if t is E.Dot:
        return _operand(e.left, _ATOM) + r" \cdot " + _operand(e.right, _ATOM)
    if t is E.Component:
        vec = latex(e.vector)
        if not isinstance(e.vector, E.Vector):
            vec = _paren(vec)
        return vec + "_{" + str(e.index) + "}"
    raise TypeError(f"cannot write LaTeX for node {t.__name__}")
