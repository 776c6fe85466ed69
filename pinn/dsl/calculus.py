"""Symbolic calculus on expressions: traversal, substitution, vector-operator
resolution and differentiation.

``expand(e, spatial)`` is what every consumer uses: it resolves ``grad``,
``div``, ``laplacian``, ``dot`` and components over the spatial coordinates,
then pushes every derivative down the tree (product, quotient and chain
rules) so that derivatives are left only on fields, as ``Derivative(Field,
wrt)`` with ``wrt`` sorted in the order of ``coords`` (or by name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from pinn.dsl import expr as E

# ---------------------------------------------------------------------------
# traversal


def walk(e: E.Expr) -> Iterator[E.Expr]:
    """Every node of ``e``, parents before children."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def transform(e: E.Expr, fn: Callable[[E.Expr], E.Expr | None]) -> E.Expr:
    """Rebuild ``e`` bottom-up; ``fn(node)`` may return a replacement (or None)."""
    memo: dict[E.Expr, E.Expr] = {}

    def go(node: E.Expr) -> E.Expr:
        if node in memo:
            return memo[node]
        kids = node.children()
        new = node.rebuild(tuple(go(k) for k in kids)) if kids else node
        out = fn(new)
        memo[node] = new if out is None else out
        return memo[node]

    return go(e)


def substitute(e: E.Expr, mapping: Mapping[E.Expr, E.ExprLike]) -> E.Expr:
    """Replace every occurrence of each key (compared structurally) by its value.

    Keys may be any node: ``substitute(e, {u: sin(x)})``, ``{alpha: 0.1}``.
    Replacements are not themselves searched again.
    """
    repl = {k: E.as_expr(v) for k, v in mapping.items()}

    def go(node: E.Expr) -> E.Expr:
        if node in repl:
            return repl[node]
        kids = node.children()
        if not kids:
            return node
        return node.rebuild(tuple(go(k) for k in kids))

    return go(e)


def symbols(e: E.Expr, kind: type) -> tuple:
    """Distinct nodes of type ``kind`` in ``e`` (in order of first appearance)."""
    seen: dict = {}
    for node in walk(e):
        if isinstance(node, kind):
            seen.setdefault(node, None)
    return tuple(seen)


def coords_of(e: E.Expr) -> tuple[E.Coord, ...]:
    """The coordinates ``e`` uses, in order of appearance (also those it differentiates by)."""
    found = list(symbols(e, E.Coord))
    for d in symbols(e, E.Derivative):
        for c in d.wrt:
            if c not in found:
                found.append(c)
    for kind in (E.Laplacian, E.Grad, E.Div_):
        for node in symbols(e, kind):
            for c in node.coords or ():
                if c not in found:
                    found.append(c)
    return tuple(found)


def fields_of(e: E.Expr) -> tuple[E.Field, ...]:
    """The fields ``e`` uses, in order of appearance: ``fields_of(u*v + u) == (u, v)``."""
    return symbols(e, E.Field)


def params_of(e: E.Expr) -> tuple[E.Param, ...]:
    """The parameters ``e`` uses, in order of appearance."""
    return symbols(e, E.Param)


def names_of(e: E.Expr) -> set[str]:
    """Names of all coordinates, fields, parameters and constants used."""
    out = {n.name for n in walk(e) if isinstance(n, (E.Coord, E.Field, E.Param, E.Constant))}
    return out | {c.name for c in coords_of(e)}


def derivative_orders(e: E.Expr) -> dict[E.Field, int]:
    """The highest derivative order of each field in ``e`` (0 if it appears underived).

    Vector operators count too: ``laplacian(u)`` is order 2 in ``u``.
    """
    out: dict[E.Field, int] = {}

    def go(node: E.Expr, order: int) -> None:
        if isinstance(node, E.Field):
            out[node] = max(out.get(node, 0), order)
            return
        if isinstance(node, E.Derivative):
            go(node.expr, order + node.order)
            return
        if isinstance(node, E.Laplacian):
            go(node.expr, order + 2)
            return
        if isinstance(node, (E.Grad, E.Div_)):
            go(node.expr, order + 1)
            return
        for k in node.children():
            go(k, order)

    go(e, 0)
    return out


def coord_orders(e: E.Expr, spatial: Sequence[E.Coord] = ()) -> dict[E.Coord, int]:
    """The highest derivative order taken with respect to each coordinate."""
    out: dict[E.Coord, int] = {}
    for node in walk(expand(e, spatial)):
        if isinstance(node, E.Derivative):
            for c in set(node.wrt):
                out[c] = max(out.get(c, 0), node.wrt.count(c))
    return out


# ---------------------------------------------------------------------------
# simplifying constructors (used by differentiation and resolution)


def _num(e: E.Expr) -> float | None:
    if isinstance(e, E.Number):
        return e.value
    if isinstance(e, E.Neg) and isinstance(e.arg, E.Number):
        return -e.arg.value
    return None


def _clean(v: float) -> float | int:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    return v


def add(a: E.Expr, b: E.Expr) -> E.Expr:
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        return E.as_expr(_clean(na + nb))
    if na == 0:
        return b
    if nb == 0:
        return a
    if isinstance(b, E.Neg):
        return E.Sub(a, b.arg)
    return E.Add(a, b)


def sub(a: E.Expr, b: E.Expr) -> E.Expr:
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        return E.as_expr(_clean(na - nb))
    if nb == 0:
        return a
    if na == 0:
        return neg(b)
    if isinstance(b, E.Neg):
        return E.Add(a, b.arg)
    return E.Sub(a, b)


def neg(a: E.Expr) -> E.Expr:
    na = _num(a)
    if na is not None:
        return E.as_expr(_clean(-na))
    if isinstance(a, E.Neg):
        return a.arg
    return E.Neg(a)


def mul(a: E.Expr, b: E.Expr) -> E.Expr:
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        return E.as_expr(_clean(na * nb))
    if na == 0 or nb == 0:
        return E.Number(0)
    if na == 1:
        return b
    if nb == 1:
        return a
    if na == -1:
        return neg(b)
    if nb == -1:
        return neg(a)
    if nb is not None:  # keep numbers in front: 2*u, not u*2
        return mul(b, a)
    if isinstance(a, E.Neg):
        return neg(mul(a.arg, b))
    if isinstance(b, E.Neg):
        return neg(mul(a, b.arg))
    return E.Mul(a, b)


def div(a: E.Expr, b: E.Expr) -> E.Expr:
    na, nb = _num(a), _num(b)
    if nb == 0:
        raise ZeroDivisionError(f"division by zero in {a}/{b}")
    if na == 0:
        return E.Number(0)
    if nb == 1:
        return a
    if na is not None and nb is not None and (na / nb) == _clean(na / nb) and isinstance(
        _clean(na / nb), int
    ):
        return E.as_expr(_clean(na / nb))
    if isinstance(a, E.Neg):
        return neg(div(a.arg, b))
    return E.Div(a, b)


def power(a: E.Expr, b: E.Expr) -> E.Expr:
    nb = _num(b)
    if nb == 0:
        return E.Number(1)
    if nb == 1:
        return a
    na = _num(a)
    if na == 0 and nb is not None and nb > 0:
        return E.Number(0)
    if na == 1:
        return E.Number(1)
    return E.Pow(a, b)


def call(func: str, *args: E.Expr) -> E.Expr:
    return E.Call(func, tuple(args))


# ---------------------------------------------------------------------------
# vector operators


def _spatial_for(node_coords, spatial: Sequence[E.Coord], node: E.Expr) -> tuple[E.Coord, ...]:
    coords = tuple(node_coords) if node_coords is not None else tuple(spatial)
    if not coords:
        raise ValueError(
            f"{node} needs the spatial coordinates: pass them (e.g. laplacian(u, (x, y))) or "
            "use the expression inside a Problem, which knows them"
        )
    return coords


def resolve(e: E.Expr, spatial: Sequence[E.Coord] = ()) -> E.Expr:
    """Rewrite grad/div/laplacian/dot/components into scalar expressions.

    The result of a vector-valued ``e`` is a :class:`Vector` of scalars.
    """
    spatial = tuple(spatial)

    def vec(node: E.Expr) -> tuple[E.Expr, ...]:
        """Components of a vector-valued node."""
        if isinstance(node, E.Vector):
            return tuple(scal(i) for i in node.items)
        if isinstance(node, E.Grad):
            inner = scal(node.expr)
            over = _spatial_for(node.coords, spatial, node)
            return tuple(E.Derivative(inner, (c,)) for c in over)
        if isinstance(node, E.Neg):
            return tuple(E.Neg(a) for a in vec(node.arg))
        if isinstance(node, (E.Add, E.Sub)):
            a, b = vec(node.left), vec(node.right)
            if len(a) != len(b):
                raise ValueError(f"{node}: vectors of sizes {len(a)} and {len(b)}")
            return tuple(type(node)(p, q) for p, q in zip(a, b, strict=True))
        if isinstance(node, E.Mul):
            if node.left.is_vector:
                s = scal(node.right)
                return tuple(E.Mul(p, s) for p in vec(node.left))
            s = scal(node.left)
            return tuple(E.Mul(s, q) for q in vec(node.right))
        if isinstance(node, E.Div):
            s = scal(node.right)
            return tuple(E.Div(p, s) for p in vec(node.left))
        if isinstance(node, E.Laplacian):  # componentwise
            return tuple(scal(E.Laplacian(c, node.coords)) for c in vec(node.expr))
        raise TypeError(f"{node} is not a vector expression")

    def scal(node: E.Expr) -> E.Expr:
        if node.is_vector:
            raise TypeError(f"{node} is a vector where a scalar is expected")
        if isinstance(node, E.Laplacian):
            inner = scal(node.expr)
            terms = [E.Derivative(inner, (c, c)) for c in _spatial_for(node.coords, spatial, node)]
            out = terms[0]
            for t in terms[1:]:
                out = E.Add(out, t)
            return out
        if isinstance(node, E.Div_):
            comps = vec(node.expr)
            coords = _spatial_for(node.coords, spatial, node)
            if len(comps) != len(coords):
                raise ValueError(
                    f"div() of a {len(comps)}-vector over {len(coords)} coordinates "
                    f"({', '.join(c.name for c in coords)}): the sizes must match"
                )
            out = E.Derivative(comps[0], (coords[0],))
            for comp, c in zip(comps[1:], coords[1:], strict=True):
                out = E.Add(out, E.Derivative(comp, (c,)))
            return out
        if isinstance(node, E.Dot):
            a, b = vec(node.left), vec(node.right)
            if len(a) != len(b):
                raise ValueError(f"dot() of vectors of sizes {len(a)} and {len(b)}")
            out = E.Mul(a[0], b[0])
            for p, q in zip(a[1:], b[1:], strict=True):
                out = E.Add(out, E.Mul(p, q))
            return out
        if isinstance(node, E.Component):
            comps = vec(node.vector)
            if node.index >= len(comps):
                raise IndexError(
                    f"{node}: component {node.index} of a {len(comps)}-vector does not exist"
                )
            return comps[node.index]
        kids = node.children()
        if not kids:
            return node
        return node.rebuild(tuple(scal(k) for k in kids))

    if e.is_vector:
        return E.Vector(vec(e))
    return scal(e)


# ---------------------------------------------------------------------------
# differentiation


def _sort_wrt(wrt: Sequence[E.Coord], order: Sequence[E.Coord]) -> tuple[E.Coord, ...]:
    rank = {c: i for i, c in enumerate(order)}
    return tuple(sorted(wrt, key=lambda c: (rank.get(c, len(rank)), c.name)))


def diff(e: E.Expr, c: E.Coord, coords: Sequence[E.Coord] = ()) -> E.Expr:
    """Symbolic partial derivative of a resolved scalar expression w.r.t. ``c``.

    Fields depend on every coordinate; their derivatives stay as
    ``Derivative(field, wrt)`` nodes (``wrt`` sorted by ``coords``).
    """
    memo: dict[E.Expr, E.Expr] = {}

    def d(node: E.Expr) -> E.Expr:
        if node in memo:
            return memo[node]
        out = _d(node)
        memo[node] = out
        return out

    def _d(node: E.Expr) -> E.Expr:
        t = type(node)
        if t in (E.Number, E.Constant, E.Param):
            return E.Number(0)
        if t is E.Coord:
            return E.Number(1 if node == c else 0)
        if t is E.Field:
            return E.Derivative(node, (c,))
        if t is E.Derivative:
            if isinstance(node.expr, E.Field):
                return E.Derivative(node.expr, _sort_wrt((*node.wrt, c), coords))
            return d(push(node, coords))
        if t is E.Add:
            return add(d(node.left), d(node.right))
        if t is E.Sub:
            return sub(d(node.left), d(node.right))
        if t is E.Neg:
            return neg(d(node.arg))
        if t is E.Mul:
            a, b = node.left, node.right
            return add(mul(d(a), b), mul(a, d(b)))
        if t is E.Div:
            a, b = node.left, node.right
            da, db = d(a), d(b)
            if _num(db) == 0:
                return div(da, b)
            return div(sub(mul(da, b), mul(a, db)), power(b, E.Number(2)))
        if t is E.Pow:
            a, b = node.left, node.right
            da, db = d(a), d(b)
            nb = _num(b)
            if _num(db) == 0:
                if _num(da) == 0:
                    return E.Number(0)
                # b * a^(b-1) * a'
                expo = E.as_expr(_clean(nb - 1)) if nb is not None else sub(b, E.Number(1))
                return mul(mul(b, power(a, expo)), da)
            # general: a^b * (b' log a + b a'/a)
            return mul(node, add(mul(db, call("log", a)), div(mul(b, da), a)))
        if t is E.Call:
            return _d_call(node, d)
        if t is E.Tabulated:  # data: the chain rule over its arguments
            out = E.Number(0)
            if getattr(node.table, "method", None) == "nearest":
                return out  # piecewise constant: every derivative is zero
            for i, arg in enumerate(node.args):
                da = d(arg)
                orders = list(node.deriv or (0,) * len(node.args))
                orders[i] += 1
                if _num(da) == 0 or orders[i] > 1:  # multilinear: linear along each axis
                    continue
                out = add(out, mul(E.Tabulated(node.name, node.table, node.args,
                                               tuple(orders)), da))
            return out
        if t in (E.Compare, E.And, E.Or, E.Not):
            return E.Number(0)
        if node.is_vector or t in (E.Laplacian, E.Div_, E.Dot, E.Component):
            raise TypeError(f"resolve vector operators before differentiating: {node}")
        raise TypeError(f"cannot differentiate node {t.__name__}")

    return d(e)


def _d_call(node: E.Call, d) -> E.Expr:
    f, args = node.func, node.args
    if f in ("where", "min", "max"):
        if f == "where":
            cond, a, b = args
        else:
            a, b = args
            cond = E.Compare("<=" if f == "min" else ">=", a, b)
        da, db = d(a), d(b)
        return da if da == db else call("where", cond, da, db)
    (a,) = args
    da = d(a)
    if _num(da) == 0 or f in ("sign", "heaviside"):
        return E.Number(0)
    two = E.Number(2)
    one = E.Number(1)
    outer = {
        "sin": lambda: call("cos", a),
        "cos": lambda: neg(call("sin", a)),
        "tan": lambda: add(one, power(call("tan", a), two)),
        "exp": lambda: node,
        "log": lambda: div(one, a),
        "sqrt": lambda: div(one, mul(two, node)),
        "tanh": lambda: sub(one, power(node, two)),
        "sinh": lambda: call("cosh", a),
        "cosh": lambda: call("sinh", a),
        "abs": lambda: call("sign", a),
        "arctan": lambda: div(one, add(one, power(a, two))),
        "arcsin": lambda: div(one, call("sqrt", sub(one, power(a, two)))),
        "arccos": lambda: neg(div(one, call("sqrt", sub(one, power(a, two))))),
    }[f]()
    return mul(outer, da)


def push(node: E.Derivative, coords: Sequence[E.Coord] = ()) -> E.Expr:
    """Expand ``D(expr, wrt)`` by symbolic differentiation down to field derivatives."""
    out = node.expr
    for c in node.wrt:
        out = diff(out, c, coords)
    return out


def expand(e: E.Expr, spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = ()) -> E.Expr:
    """Resolve vector operators, then leave derivatives only on fields.

    ``coords`` fixes the order of coordinates inside each ``Derivative.wrt``
    (default: ``spatial`` then the rest by name).
    """
    order = tuple(coords) or tuple(spatial)
    r = resolve(e, spatial)

    def fn(node: E.Expr) -> E.Expr | None:
        if isinstance(node, E.Derivative):
            if isinstance(node.expr, E.Field):
                return E.Derivative(node.expr, _sort_wrt(node.wrt, order))
            return push(node, order)
        return None

    return transform(r, fn)


def field_derivatives(e: E.Expr) -> set[tuple[E.Field, tuple[E.Coord, ...]]]:
    """``(field, wrt)`` pairs needed by an *expanded* expression (``wrt == ()``: the value)."""
    out: set = set()
    for node in walk(e):
        if isinstance(node, E.Derivative):
            if not isinstance(node.expr, E.Field):
                raise ValueError("field_derivatives needs an expanded expression (use expand)")
            out.add((node.expr, node.wrt))
        elif isinstance(node, E.Field):
            out.add((node, ()))
    # plain fields under a Derivative were added too; keep them only if used bare
    bare = set()
    for node in walk(e):
        if isinstance(node, E.Derivative):
            continue
        for k in node.children():
            if isinstance(k, E.Field):
                bare.add(k)
    if isinstance(e, E.Field):
        bare.add(e)
    return {(f, w) for f, w in out if w or f in bare}


#: Highest total derivative order of any term or output. Every order multiplies the size of
#: the compiled derivative program; past 8 it compiles for minutes (and float32 holds no
#: useful digits of an eighth derivative of a network).
MAX_DERIVATIVE_ORDER = 8


def derivative_order(e: E.Expr) -> int:
    """The highest total derivative order along any path of ``e`` (``laplacian``: 2)."""
    own = 0
    if isinstance(e, E.Derivative):
        own = e.order
    elif isinstance(e, E.Laplacian):
        own = 2
    elif isinstance(e, (E.Grad, E.Div_)):
        own = 1
    return own + max((derivative_order(k) for k in e.children()), default=0)


def jumps_in_space(e: E.Expr, spatial: Sequence[E.Coord]) -> bool:
    """Whether ``e`` may jump in space: a comparison of the coordinates inside it (``where``,
    ``piecewise``, ``cells``) or a nearest-node table."""
    for node in walk(e):
        if isinstance(node, E.Compare) and any(isinstance(a, E.Coord) and a in spatial
                                               for a in walk(node)):
            return True
        if isinstance(node, E.Tabulated) and getattr(node.table, "method", "") == "nearest":
            return True
    return False


def jump_surfaces(e: E.Expr, spatial: Sequence[E.Coord]) -> tuple[E.Expr, ...] | None:
    """The surfaces across which ``e`` may jump, each as the zero set of an expression
    ``phi`` of the coordinates (``x < 2`` gives ``x - 2``; ``x^2 + y^2 <= 1`` gives
    ``x^2 + y^2 - 1``), once each, in order of appearance; ``()`` where ``e`` does not jump;
    ``None`` where it jumps where no comparison says (a nearest-node table) or a comparison
    involves more than the coordinates and parameters (the fields)."""
    out: list[E.Expr] = []
    for node in walk(e):
        if isinstance(node, E.Tabulated) and getattr(node.table, "method", "") == "nearest":
            return None
        if not isinstance(node, E.Compare) or not any(
                isinstance(a, E.Coord) and a in spatial for a in walk(node)):
            continue
        if fields_of(node):
            return None
        phi = sub(node.left, node.right)
        if phi not in out:
            out.append(phi)
    return tuple(out)
