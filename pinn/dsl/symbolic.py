"""Classification and linearisation of PDE expressions.

Everything here works on the *expanded* form of an expression
(:func:`pinn.dsl.calculus.expand`): vector operators resolved over the
spatial coordinates and derivatives pushed down to the fields, so that the
unknowns appear only as *field atoms*: a field ``u`` itself, or
``Derivative(u, wrt)`` with ``wrt`` sorted in the order of ``coords``.  A
field atom is named by the key ``(field, wrt)`` (``wrt == ()`` for the value).

- :func:`jacobian`: ``{(field, wrt): de/d(atom)}``, the partial derivative
  of the expression with respect to each field atom;
- :func:`linearize`: the Gateaux derivative
  ``dE[u; w] = d/de E(u + e w)|_{e=0}`` as an expression in new direction
  fields (``du`` for ``u``), which is what Newton's method needs;
- :func:`coefficients`: a linear expression split as
  ``sum_k c_k * atom_k + source``; it raises :class:`NonlinearError` naming
  the offending term when the expression is not linear;
- :func:`is_linear`, :func:`order`, :func:`orders`, :func:`time_order`,
  :func:`is_time_dependent`, :func:`classify`: questions a solver asks.

Example (Burgers)::

    e = D(u, t) + u*D(u, x) - nu*D(u, x, 2)
    linearize(e, spatial=(x,), coords=(x, t))
    # D(du, t) + D(u, x)*du + u*D(du, x) - nu*D(du, x, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pinn.dsl import calculus as K
from pinn.dsl import expr as E

__all__ = [
    "NonlinearError", "Atom", "field_atoms", "atom_expr", "simplify", "summands",
    "jacobian", "linearize", "coefficients", "is_linear",
    "order", "orders", "time_order", "is_time_dependent", "Classification", "classify",
]

#: ``(field, wrt)``: the field itself when ``wrt == ()``, else ``Derivative(field, wrt)``.
Atom = tuple[E.Field, tuple[E.Coord, ...]]


class NonlinearError(ValueError):
    """An expression is not linear in the fields; ``term`` is the offending subterm."""

    def __init__(self, message: str, term: E.Expr | None = None):
        super().__init__(message)
        self.term = term


# ---------------------------------------------------------------------------
# helpers


def _fields(fields: Iterable[E.Field | str] | E.Field | None, e: E.Expr) -> tuple[E.Field, ...]:
    if fields is None:
        return K.fields_of(e)
    if isinstance(fields, (E.Field, str)):
        fields = (fields,)
    out = []
    for f in fields:
        if isinstance(f, str):
            f = E.Field(f)
        if not isinstance(f, E.Field):
            raise TypeError(f"expected fields (pinn.field(...)), got {f!r}")
        out.append(f)
    return tuple(out)


def _expanded(e: E.ExprLike, spatial: Sequence[E.Coord], coords: Sequence[E.Coord]) -> E.Expr:
    return K.expand(E.as_expr(e), tuple(spatial), tuple(coords))


def atom_expr(atom: Atom) -> E.Expr:
    """The node of a field atom: ``(u, ())`` -> ``u``, ``(u, (x, x))`` -> ``D(u, x, 2)``."""
    f, wrt = atom
    return E.Derivative(f, tuple(wrt)) if wrt else f


def field_atoms(e: E.Expr, fields: Iterable[E.Field] | None = None) -> tuple[Atom, ...]:
    """Field atoms of an *expanded* expression, in order of first appearance.

    ``fields`` restricts them to those fields.  Unlike
    :func:`pinn.dsl.calculus.field_derivatives`, a field that appears only
    under a derivative does not count as an atom of its own.
    """
    keep = None if fields is None else set(fields)
    seen: dict[Atom, None] = {}
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, E.Derivative):
            if not isinstance(node.expr, E.Field):
                raise ValueError(f"{node}: expand the expression first (pinn.dsl.expand)")
            if keep is None or node.expr in keep:
                seen.setdefault((node.expr, node.wrt), None)
            continue
        if isinstance(node, E.Field):
            if keep is None or node in keep:
                seen.setdefault((node, ()), None)
            continue
        stack.extend(reversed(node.children()))
    return tuple(seen)


def _sorted_atoms(atoms: Iterable[Atom], fields: Sequence[E.Field],
                  coords: Sequence[E.Coord]) -> list[Atom]:
    frank = {f: i for i, f in enumerate(fields)}
    crank = {c: i for i, c in enumerate(coords)}
    return sorted(atoms, key=lambda a: (
        frank.get(a[0], len(frank)), a[0].name, len(a[1]),
        tuple((crank.get(c, len(crank)), c.name) for c in a[1]),
    ))


def _is_zero(e: E.Expr) -> bool:
    return isinstance(e, E.Number) and e.value == 0


def simplify(e: E.Expr) -> E.Expr:
    """Light simplification: fold numbers, drop ``0`` and ``1``, cancel ``a - a``,
    ``where(c, a, a) -> a``.

    It never changes the value of an expression where the original is defined
    (it does not reorder or distribute).
    """

    def fn(node: E.Expr) -> E.Expr | None:
        t = type(node)
        if t is E.Add:
            a, b = node.left, node.right
            if isinstance(b, E.Neg) and b.arg == a or isinstance(a, E.Neg) and a.arg == b:
                return E.Number(0)
            return K.add(a, b)
        if t is E.Sub:
            if node.left == node.right:
                return E.Number(0)
            return K.sub(node.left, node.right)
        if t is E.Mul:
            return K.mul(node.left, node.right)
        if t is E.Div:
            try:
                return K.div(node.left, node.right)
            except ZeroDivisionError:
                return node
        if t is E.Pow:
            return K.power(node.left, node.right)
        if t is E.Neg:
            return K.neg(node.arg)
        if t is E.Call and node.func == "where" and node.args[1] == node.args[2]:
            return node.args[1]
        return None

    return K.transform(e, fn)


def summands(e: E.Expr) -> list[E.Expr]:
    """The signed terms of a sum: ``a - b + c`` -> ``[a, -b, c]`` (products are not distributed)."""
    out: list[E.Expr] = []
    stack: list[tuple[E.Expr, bool]] = [(e, False)]
    while stack:
        node, negated = stack.pop()
        if isinstance(node, E.Add):
            stack.append((node.right, negated))
            stack.append((node.left, negated))
        elif isinstance(node, E.Sub):
            stack.append((node.right, not negated))
            stack.append((node.left, negated))
        elif isinstance(node, E.Neg) and isinstance(node.arg, (E.Add, E.Sub, E.Neg)):
            stack.append((node.arg, not negated))
        else:
            out.append(K.neg(node) if negated else node)
    return out


# ---------------------------------------------------------------------------
# Jacobian and Gateaux derivative


def _placeholders(ex: E.Expr, atoms: Sequence[Atom]) -> tuple[E.Expr, dict, dict]:
    """Replace every field atom by a fresh coordinate (independent scalar symbols)."""
    to_ph: dict[E.Expr, E.Expr] = {}
    back: dict[E.Expr, E.Expr] = {}
    for i, a in enumerate(atoms):
        ph = E.Coord(f"@atom{i}")  # not an identifier: cannot clash with a user's name
        node = atom_expr(a)
        to_ph[node] = ph
        back[ph] = node
    return K.substitute(ex, to_ph), to_ph, back


def jacobian(e: E.ExprLike, fields: Iterable[E.Field] | None = None,
             spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = ()
             ) -> dict[Atom, E.Expr]:
    """Partial derivatives of ``e`` with respect to each atom of ``fields``.

    Returns ``{(field, wrt): expression}`` with the non-zero entries, sorted by
    field, then derivative order, then ``coords``.  ``fields`` defaults to all
    fields of ``e``; other fields are treated as given functions.
    ``spatial`` resolves ``grad``/``div``/``laplacian``; ``coords`` orders
    ``wrt`` (default: ``spatial``).
    """
    ex = _expanded(e, spatial, coords)
    targets = _fields(fields, ex)
    order = tuple(coords) or tuple(spatial)
    all_atoms = field_atoms(ex)
    sub, to_ph, back = _placeholders(ex, all_atoms)
    out: dict[Atom, E.Expr] = {}
    for atom in _sorted_atoms(field_atoms(ex, targets), targets, order):
        d = K.diff(sub, to_ph[atom_expr(atom)], order)
        d = simplify(K.substitute(d, back))
        if not _is_zero(d):
            out[atom] = d
    return out


def _direction_map(ex: E.Expr, targets: Sequence[E.Field],
                   directions: Mapping[E.Field, E.Field] | None) -> dict[E.Field, E.Field]:
    if directions is None:
        dirs = {f: E.Field("d" + f.name) for f in targets}
    else:
        dirs = dict(directions)
        missing = [f.name for f in targets if f not in dirs]
        if missing:
            raise ValueError(f"no direction field for {missing}; pass directions={{u: du, ...}}")
    present = set(K.fields_of(ex))
    clash = [w.name for w in dirs.values() if w in present]
    if clash:
        raise ValueError(
            f"direction field(s) {clash} already appear in the expression; pass "
            "directions={field: pinn.field('w'), ...} with fresh names"
        )
    return dirs


def linearize(e: E.ExprLike, fields: Iterable[E.Field] | None = None,
              spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = (), *,
              directions: Mapping[E.Field, E.Field] | None = None) -> E.Expr:
    """The Gateaux derivative ``dE[u; w] = d/de E(u + e*w)|_{e=0}``.

    ``w`` are direction fields: ``directions[u]``, by default ``Field("d" + u.name)``.
    The result is linear in the directions and their derivatives, with
    coefficients that depend on ``u`` (the current Newton iterate)::

        sum over atoms a of fields:  (dE/da)(u) * a[w]

    ``fields`` defaults to all fields of ``e`` (for systems, every unknown);
    the others are treated as given.  Use :func:`coefficients` on the result
    (with the direction fields) to get the coefficient of each direction
    derivative, e.g. to assemble the Newton matrix.
    """
    ex = _expanded(e, spatial, coords)
    targets = _fields(fields, ex)
    dirs = _direction_map(ex, targets, directions)
    out: E.Expr = E.Number(0)
    for (f, wrt), coef in jacobian(ex, targets, spatial, coords).items():
        out = K.add(out, K.mul(coef, atom_expr((dirs[f], wrt))))
    return out


# ---------------------------------------------------------------------------
# linear forms


def _degree(node: E.Expr, atoms: set[E.Expr], memo: dict) -> int:
    """Syntactic degree in the atoms: 0 (free of them), 1 (affine) or 2 (anything else)."""
    if node in memo:
        return memo[node]
    if node in atoms:
        d = 1
    elif isinstance(node, (E.Field, E.Derivative)) or not node.children():
        d = 0
    else:
        ks = [_degree(k, atoms, memo) for k in node.children()]
        t = type(node)
        if t in (E.Add, E.Sub):
            d = max(ks)
        elif t is E.Neg:
            d = ks[0]
        elif t is E.Mul:
            d = min(2, ks[0] + ks[1])
        elif t is E.Div:
            d = ks[0] if ks[1] == 0 else 2
        elif t is E.Pow:
            n = K._num(node.right)
            if ks[1] == 0 and (ks[0] == 0 or n == 0):
                d = 0
            elif ks[1] == 0 and n == 1:
                d = ks[0]
            else:
                d = 2 if max(ks) else 0
        elif t is E.Call and node.func == "where":
            d = max(ks[1:]) if ks[0] == 0 else 2
        else:
            d = 0 if max(ks) == 0 else 2
    memo[node] = d
    return d


def _offending(ex: E.Expr, atoms: set[E.Expr]) -> E.Expr:
    """The smallest subterm that is not affine in the atoms (its children are)."""
    memo: dict = {}
    if _degree(ex, atoms, memo) < 2:
        return ex
    node = ex
    while True:
        bad = [k for k in node.children() if _degree(k, atoms, memo) >= 2]
        if not bad:
            return node
        node = bad[0]


def coefficients(e: E.ExprLike, fields: Iterable[E.Field] | None = None,
                 spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = ()
                 ) -> tuple[dict[Atom, E.Expr], E.Expr]:
    """Split a linear expression as ``sum_k coef_k * atom_k + source``.

    Returns ``(coefs, source)``: ``coefs`` maps ``(field, wrt)`` to its
    coefficient (free of the fields, possibly depending on coordinates and
    parameters), ``source`` is what remains when every field atom is zero.
    For ``e = 0`` this reads ``sum_k coef_k * atom_k = -source``.

    Heat: ``D(u, t) - alpha*laplacian(u)`` over (x, y) gives
    ``{(u, (t,)): 1, (u, (x, x)): -alpha, (u, (y, y)): -alpha}`` and ``0``.

    Raises :class:`NonlinearError` (naming the offending term) when ``e`` is
    not linear in ``fields`` (default: all its fields); fields not listed are
    treated as given and may appear in the coefficients.
    """
    ex = _expanded(e, spatial, coords)
    targets = _fields(fields, ex)
    jac = jacobian(ex, targets, spatial, coords)
    atom_nodes = {atom_expr(a) for a in field_atoms(ex, targets)}
    for atom, coef in jac.items():
        if field_atoms(coef, targets):
            term = _offending(ex, atom_nodes)
            names = ", ".join(f.name for f in targets)
            raise NonlinearError(
                f"{e} is not linear in {names}: the term {term} is nonlinear (the coefficient "
                f"of {atom_expr(atom)} is {coef}); use linearize() for Newton's method",
                term,
            )
    zero = {n: E.Number(0) for n in atom_nodes}
    source = simplify(K.substitute(ex, zero))
    return jac, source


def is_linear(e: E.ExprLike, fields: Iterable[E.Field] | None = None,
              spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = ()) -> bool:
    """Whether ``e`` is linear (affine: a source term is allowed) in the fields and derivatives."""
    try:
        coefficients(e, fields, spatial, coords)
    except NonlinearError:
        return False
    return True


# ---------------------------------------------------------------------------
# orders and time


def order(e: E.ExprLike, fields: Iterable[E.Field] | None = None,
          spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = ()) -> int:
    """The highest total derivative order of the fields in ``e`` (0: no derivatives)."""
    ex = _expanded(e, spatial, coords)
    atoms = field_atoms(ex, None if fields is None else _fields(fields, ex))
    return max((len(w) for _, w in atoms), default=0)


def orders(e: E.ExprLike, spatial: Sequence[E.Coord] = (),
           coords: Sequence[E.Coord] = ()) -> dict[E.Field, dict[E.Coord, int]]:
    """Per field, the highest derivative order taken with respect to each coordinate.

    Burgers ``u_t + u*u_x - nu*u_xx`` gives ``{u: {t: 1, x: 2}}``; a field that
    appears without derivatives maps to ``{}``.
    """
    ex = _expanded(e, spatial, coords)
    out: dict[E.Field, dict[E.Coord, int]] = {}
    for f, wrt in field_atoms(ex):
        per = out.setdefault(f, {})
        for c in wrt:
            per[c] = max(per.get(c, 0), wrt.count(c))
    return out


def time_order(e: E.ExprLike, time: E.Coord, spatial: Sequence[E.Coord] = (),
               coords: Sequence[E.Coord] = ()) -> int:
    """The highest order of a time derivative of any field (0: a steady expression)."""
    ex = _expanded(e, spatial, coords)
    return max((w.count(time) for _, w in field_atoms(ex)), default=0)


def is_time_dependent(e: E.ExprLike, time: E.Coord | None, spatial: Sequence[E.Coord] = (),
                      coords: Sequence[E.Coord] = ()) -> bool:
    """Whether ``e`` involves time: a time derivative of a field, or ``time`` explicitly.

    A field's own dependence on time does not count (``u`` alone is not
    time-dependent); use :func:`time_order` to ask only about derivatives.
    """
    if time is None:
        return False
    ex = _expanded(e, spatial, coords)
    if time_order(ex, time) > 0:
        return True
    return any(node == time for node in K.walk(ex) if isinstance(node, E.Coord))


@dataclass(frozen=True)
class Classification:
    """What a solver needs to know about one equation."""

    order: int  # highest total derivative order
    time_order: int  # highest time-derivative order (0: steady)
    linear: bool  # affine in the fields and their derivatives
    homogeneous: bool  # linear with a zero source
    fields: tuple[E.Field, ...]
    orders: dict  # {field: {coord: order}}

    @property
    def steady(self) -> bool:
        return self.time_order == 0


def classify(e: E.ExprLike, fields: Iterable[E.Field] | None = None,
             spatial: Sequence[E.Coord] = (), coords: Sequence[E.Coord] = (),
             time: E.Coord | None = None) -> Classification:
    """Order, time order, linearity and homogeneity of ``e`` in one call."""
    ex = _expanded(e, spatial, coords)
    targets = _fields(fields, ex)
    try:
        _, source = coefficients(ex, targets)
        linear, homogeneous = True, _is_zero(source)
    except NonlinearError:
        linear, homogeneous = False, False
    return Classification(
        order=order(ex, targets),
        time_order=time_order(ex, time) if time is not None else 0,
        linear=linear,
        homogeneous=homogeneous,
        fields=targets,
        orders=orders(ex),
    )
