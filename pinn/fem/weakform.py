"""From the PDE language to a weak form.

The translation reads the expanded equations, not the problem's name.  Each
equation ``e = 0`` is written with *jet symbols* (one placeholder coordinate
for each field value, first, second and time derivative), and split into

    e = sum_g m_g u_t + sum_{g,i,j} c^g_ij d_ij g + e0(x, t, g, grad g)

where the ``c^g_ij`` (the second-order coefficients) and the ``m_g`` must not
depend on second derivatives.  Integrating the second-order part by parts
against a test function ``phi`` gives the weak residual

    R(U; phi) = int  S phi + sum_i F_i d_i phi  dx  +  boundary terms,
    F_i = -sum_{g,j} c^g_ij d_j g,    S = e0 - sum_{g,i,j} (d_i c^g_ij) d_j g,

which holds for variable (even solution-dependent) coefficients.  Newton's
Jacobian is the symbolic derivative of ``S`` and ``F_i`` with respect to each
jet symbol; the problem is linear when those derivatives contain no jets.

Anything outside these classes raises :class:`UnsupportedProblem` naming the
term that is the reason.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pinn import conditions as C
from pinn.dsl import calculus
from pinn.dsl import expr as E

if TYPE_CHECKING:  # pragma: no cover
    from pinn.problem import Problem

__all__ = ["UnsupportedProblem", "WeakForm", "translate", "term_name"]

_ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}


class UnsupportedProblem(ValueError):
    """The problem is outside what the FEM baseline can solve; the message names the term."""


def term_name(f: E.Field, wrt: tuple[E.Coord, ...]) -> str:
    """``u_xx`` for ``D(u, x, 2)``; ``u`` for the value."""
    return f.name + ("_" + "".join(c.name for c in wrt) if wrt else "")


def _order_words(wrt: tuple[E.Coord, ...]) -> str:
    names = []
    for c in wrt:
        if c.name not in names:
            names.append(c.name)
    word = _ORDINAL.get(len(wrt), f"order-{len(wrt)}")
    return f"{word} order in {', '.join(names)}"


# ---------------------------------------------------------------------------
# jet symbols


@dataclass(frozen=True)
class Jets:
    """Placeholder coordinates for field values and derivatives."""

    fields: tuple[E.Field, ...]
    spatial: tuple[E.Coord, ...]
    time: E.Coord | None

    def value(self, f: E.Field) -> E.Coord:
        return E.Coord(f"{f.name}@")

    def d1(self, f: E.Field, i: int) -> E.Coord:
        return E.Coord(f"{f.name}@{self.spatial[i].name}")

    def d2(self, f: E.Field, i: int, j: int) -> E.Coord:
        i, j = min(i, j), max(i, j)
        return E.Coord(f"{f.name}@{self.spatial[i].name}{self.spatial[j].name}")

    def dt(self, f: E.Field) -> E.Coord:
        return E.Coord(f"{f.name}@t")

    def first(self, f: E.Field, a: int) -> E.Coord:
        """Jet ``a`` of the first-order jet: 0 the value, ``i + 1`` the derivative along i."""
        return self.value(f) if a == 0 else self.d1(f, a - 1)

    @property
    def dim(self) -> int:
        return len(self.spatial)

    def first_order_symbols(self) -> set[E.Coord]:
        return {self.first(f, a) for f in self.fields for a in range(self.dim + 1)}

    def second_order_symbols(self) -> set[E.Coord]:
        return {self.d2(f, i, j) for f in self.fields
                for i in range(self.dim) for j in range(i, self.dim)}

    def time_symbols(self) -> set[E.Coord]:
        return {self.dt(f) for f in self.fields}

    def all_symbols(self) -> set[E.Coord]:
        return self.first_order_symbols() | self.second_order_symbols() | self.time_symbols()

    def to_jets(self, e: E.Expr) -> E.Expr:
        """Replace fields and their derivatives (in an expanded expression) by jet symbols."""
        idx = {c: i for i, c in enumerate(self.spatial)}
        repl: dict[E.Expr, E.Expr] = {}
        for node in calculus.walk(e):
            if isinstance(node, E.Field):
                repl[node] = self.value(node)
            elif isinstance(node, E.Derivative) and node not in repl:
                f, wrt = node.expr, node.wrt
                if not isinstance(f, E.Field):  # pragma: no cover - expand guarantees it
                    raise UnsupportedProblem(f"{node}: expand the expression first")
                n_t = sum(1 for c in wrt if c == self.time)
                space = [c for c in wrt if c != self.time]
                if n_t and space:
                    raise UnsupportedProblem(
                        f"term {term_name(f, wrt)} (a mixed space-time derivative) is not "
                        "supported by the FEM baseline"
                    )
                if n_t > 1:
                    raise UnsupportedProblem(
                        f"term {term_name(f, wrt)} ({_order_words(wrt)}) is not supported by "
                        "the FEM baseline: time stepping is for first order in time (heat-type "
                        "equations); write a wave equation as a first-order system"
                    )
                if n_t == 1:
                    repl[node] = self.dt(f)
                    continue
                unknown = [c.name for c in space if c not in idx]
                if unknown:
                    raise UnsupportedProblem(f"term {term_name(f, wrt)}: unknown coordinate(s) "
                                             f"{unknown}")
                if len(space) > 2:
                    raise UnsupportedProblem(
                        f"term {term_name(f, wrt)} ({_order_words(wrt)}) is not supported by "
                        "the FEM baseline: it handles equations of at most second order in "
                        "space (H1 Lagrange elements)"
                    )
                if len(space) == 1:
                    repl[node] = self.d1(f, idx[space[0]])
                else:
                    repl[node] = self.d2(f, idx[space[0]], idx[space[1]])
        return calculus.substitute(e, repl)

    def from_jets(self, e: E.Expr) -> E.Expr:
        """Inverse of :meth:`to_jets` for first-order jets (used to differentiate in x)."""
        repl: dict[E.Expr, E.Expr] = {}
        for f in self.fields:
            repl[self.value(f)] = f
            for i, c in enumerate(self.spatial):
                repl[self.d1(f, i)] = E.Derivative(f, (c,))
        return calculus.substitute(e, repl)


def _uses(e: E.Expr, syms: set[E.Coord]) -> set[E.Coord]:
    return {n for n in calculus.walk(e) if isinstance(n, E.Coord) and n in syms}


def _is_zero(e: E.Expr) -> bool:
    return isinstance(e, E.Number) and e.value == 0


def _simplify(e: E.Expr) -> E.Expr:
    from pinn.dsl.symbolic import simplify

    return simplify(e)


def _diff(e: E.Expr, sym: E.Coord) -> E.Expr:
    return _simplify(calculus.diff(e, sym))


# ---------------------------------------------------------------------------
# the weak form


@dataclass
class Integrand:
    """``expr`` (in jet symbols) with its derivatives w.r.t. first-order jets.

    ``jac[(g, a)]``: derivative of ``expr`` w.r.t. jet ``a`` of field ``g``
    (0: value, ``i + 1``: derivative along spatial coordinate ``i``).
    """

    expr: E.Expr
    jac: dict[tuple[E.Field, int], E.Expr] = field(default_factory=dict)

    @classmethod
    def build(cls, expr: E.Expr, jets: Jets, max_a: int) -> Integrand:
        expr = _simplify(expr)
        jac = {}
        for g in jets.fields:
            for a in range(max_a + 1):
                d = _diff(expr, jets.first(g, a))
                if not _is_zero(d):
                    jac[(g, a)] = d
        return cls(expr, jac)


@dataclass
class EquationForm:
    """One equation tested with the test functions of ``test``."""

    name: str
    test: E.Field
    source: Integrand                      # multiplies phi
    flux: tuple[Integrand, ...]            # flux[i] multiplies d_i phi
    mass: dict[E.Field, E.Expr]            # coefficient of D(g, t)
    second: dict[E.Field, tuple[tuple[E.Expr, ...], ...]]  # c^g_ij (symmetric)


@dataclass
class BoundaryTerm:
    """``int_part expr * phi`` added to the residual of the equation tested by ``test``."""

    name: str
    test: E.Field
    on: object
    integrand: Integrand


@dataclass
class DirichletSpec:
    name: str
    field: E.Field
    value: E.Expr
    on: object


@dataclass
class WeakForm:
    jets: Jets
    equations: list[EquationForm]
    boundary: list[BoundaryTerm]
    dirichlet: list[DirichletSpec]
    initial: dict[E.Field, E.Expr]
    degree: dict[E.Field, int]             # polynomial degree of each field's element
    linear: bool
    depends_on_time: bool                  # coefficients or sources depend on t
    operator_depends_on_time: bool         # the Jacobian (or mass) depends on t
    value_free: set[E.Field]               # fields that appear only differentiated
    periodic: list[tuple[str, tuple[E.Field, ...], tuple[str, str]]] = field(default_factory=list)

    @property
    def fields(self) -> tuple[E.Field, ...]:
        return self.jets.fields


def _pair_equations(names, diffused_in: dict[str, set[E.Field]], fields, diffused_any):
    """Match each equation with the field whose test functions it uses."""
    cand = {}
    for n in names:
        if diffused_in[n]:
            cand[n] = [f for f in fields if f in diffused_in[n]]
        else:
            cand[n] = [f for f in fields if f not in diffused_any]
    match: dict[E.Field, str] = {}

    def augment(n, seen):
        for f in cand[n]:
            if f in seen:
                continue
            seen.add(f)
            if f not in match or augment(match[f], seen):
                match[f] = n
                return True
        return False

    for n in names:
        if not augment(n, set()):
            raise UnsupportedProblem(
                f"cannot pair equation {n!r} with a field of its own (candidates: "
                f"{[f.name for f in cand[n]] or 'none'}; fields: {[f.name for f in fields]}): "
                "the FEM baseline needs one second-order equation per diffused field and one "
                "constraint equation per field that appears only with first derivatives "
                "(such as a pressure)"
            )
    return {n: f for f, n in match.items()}


def translate(problem: Problem, degree: int = 1) -> WeakForm:
    """Build the weak form of ``problem`` (raises :class:`UnsupportedProblem`)."""
    fields = tuple(problem.fields)
    spatial = tuple(problem.spatial)
    tcoord = problem.time_coord
    jets = Jets(fields, spatial, tcoord)
    d = len(spatial)
    names = list(problem.equations)
    if len(names) != len(fields):
        raise UnsupportedProblem(
            f"{problem.name}: {len(names)} equation(s) for {len(fields)} field(s) "
            f"({', '.join(problem.field_names)}); the FEM baseline needs one equation per field"
        )
    for p in problem.learnable:
        warnings.warn(f"{problem.name}: learnable parameter {p.name!r} is held at its initial "
                      f"value {p.value} by the FEM baseline (forward solve only)", stacklevel=3)

    jet_eqs: dict[str, E.Expr] = {}
    for n in names:
        ex = problem.expand(problem.equations[n])
        try:
            jet_eqs[n] = jets.to_jets(ex)
        except UnsupportedProblem as err:
            raise UnsupportedProblem(f"{problem.name}, equation {n!r}: {err}") from None
        stray = [c.name for c in calculus.walk(jet_eqs[n]) if isinstance(c, E.Derivative)]
        if stray:  # pragma: no cover - to_jets replaces every derivative
            raise UnsupportedProblem(f"equation {n!r}: derivatives left over: {stray}")

    second_syms = jets.second_order_symbols()
    time_syms = jets.time_symbols()
    first_syms = jets.first_order_symbols()

    # -- second-order and time coefficients --------------------------------
    coeffs: dict[str, dict[E.Field, list[list[E.Expr]]]] = {}
    masses: dict[str, dict[E.Field, E.Expr]] = {}
    diffused_in: dict[str, set[E.Field]] = {}
    for n, ej in jet_eqs.items():
        cs: dict[E.Field, list[list[E.Expr]]] = {}
        for g in fields:
            mat = [[E.Number(0)] * d for _ in range(d)]
            any_nz = False
            for i in range(d):
                for j in range(i, d):
                    s = jets.d2(g, i, j)
                    c = _diff(ej, s)
                    if _is_zero(c):
                        continue
                    bad = _uses(c, second_syms | time_syms)
                    if bad:
                        raise UnsupportedProblem(
                            f"{problem.name}, equation {n!r}: term {_jet_term(s)} appears "
                            f"nonlinearly (its coefficient {_jet_str(jets, c)} contains "
                            f"{sorted(_jet_term(b) for b in bad)}); the FEM baseline handles "
                            "equations linear in the second and time derivatives"
                        )
                    any_nz = True
                    if i == j:
                        mat[i][i] = c
                    else:
                        half = calculus.div(c, E.Number(2))
                        mat[i][j] = half
                        mat[j][i] = half
            if any_nz:
                cs[g] = mat
        coeffs[n] = cs
        diffused_in[n] = set(cs)
        ms: dict[E.Field, E.Expr] = {}
        for g in fields:
            s = jets.dt(g)
            m = _diff(ej, s)
            if _is_zero(m):
                continue
            bad = _uses(m, jets.all_symbols())
            if bad:
                raise UnsupportedProblem(
                    f"{problem.name}, equation {n!r}: the coefficient of {_jet_term(s)} depends "
                    f"on the solution ({sorted(_jet_term(b) for b in bad)}); the FEM baseline "
                    "needs it to depend on the coordinates only"
                )
            ms[g] = m
        masses[n] = ms

    diffused_any = set().union(*diffused_in.values())
    for n in names:
        if not diffused_in[n] and len(fields) == 1:
            raise UnsupportedProblem(
                f"{problem.name}, equation {n!r} has no second-order term in "
                f"{fields[0].name} (a first-order, hyperbolic equation): the FEM baseline "
                "(continuous Galerkin without stabilisation) needs a diffusion term"
            )
    if problem.is_evolution:
        for n in names:
            if not masses[n]:
                raise UnsupportedProblem(
                    f"{problem.name}, equation {n!r} has no time derivative in a time-dependent "
                    "problem (an algebraic constraint such as incompressibility): the FEM "
                    "baseline's time stepping handles equations with a time derivative each"
                )
    pairing = _pair_equations(names, diffused_in, fields, diffused_any)

    # -- domain integrands ---------------------------------------------------
    forms: list[EquationForm] = []
    for n in names:
        ej = jet_eqs[n]
        zero = {s: 0 for s in (second_syms | time_syms)}
        e0 = calculus.substitute(ej, zero)
        flux_exprs = [E.Number(0)] * d
        src = e0
        for g, mat in coeffs[n].items():
            for i in range(d):
                for j in range(d):
                    c = mat[i][j]
                    if _is_zero(c):
                        continue
                    gj = jets.d1(g, j)
                    flux_exprs[i] = calculus.sub(flux_exprs[i], calculus.mul(c, gj))
                    # d_i c, by the chain rule through the fields
                    dc = problem.expand(E.Derivative(jets.from_jets(c), (spatial[i],)))
                    dcj = jets.to_jets(dc)
                    bad = _uses(dcj, second_syms)
                    if bad:
                        raise UnsupportedProblem(
                            f"{problem.name}, equation {n!r}: the coefficient "
                            f"{_jet_str(jets, c)} of {_jet_term(jets.d2(g, i, j))} depends on "
                            "the gradient of the solution; the FEM baseline supports "
                            "coefficients that depend on the coordinates and the solution's "
                            "values only"
                        )
                    src = calculus.sub(src, calculus.mul(dcj, gj))
        leftover = _uses(src, second_syms | time_syms)
        if leftover:  # pragma: no cover - guarded by the linearity checks
            raise UnsupportedProblem(f"equation {n!r}: terms left over: {sorted(leftover)}")
        forms.append(EquationForm(
            name=n, test=pairing[n],
            source=Integrand.build(src, jets, d),
            flux=tuple(Integrand.build(fx, jets, d) for fx in flux_exprs),
            mass=masses[n], second={g: tuple(map(tuple, m)) for g, m in coeffs[n].items()},
        ))

    by_test = {f.test: f for f in forms}
    bterms, dirichlet, initial, periodic = _conditions(problem, jets, by_test)

    # -- element degrees: Taylor-Hood when some field only appears differentiated
    constrained = [f for f in fields if f not in diffused_any]
    deg: dict[E.Field, int] = {}
    if constrained:
        top = max(2, degree)
        if degree < 2:
            warnings.warn(
                f"{problem.name}: fields {[f.name for f in constrained]} act as constraints "
                f"(like a pressure): using Taylor-Hood elements P{top}-P{top - 1} instead of "
                f"P{degree}", stacklevel=3)
        for f in fields:
            deg[f] = top if f in diffused_any else top - 1
    else:
        deg = {f: degree for f in fields}

    # -- properties ----------------------------------------------------------
    all_first = first_syms
    linear = True
    time_dep = False
    op_time = False
    used_values: set[E.Field] = set()
    for form in forms:
        integrands = [form.source, *form.flux]
        for it in integrands:
            for jx in it.jac.values():
                if _uses(jx, all_first):
                    linear = False
                if tcoord is not None and tcoord in calculus.coords_of(jx):
                    op_time = True
            if tcoord is not None and tcoord in calculus.coords_of(it.expr):
                time_dep = True
            for g in fields:
                if jets.value(g) in calculus.coords_of(it.expr):
                    used_values.add(g)
        for m in form.mass.values():
            if tcoord is not None and tcoord in calculus.coords_of(m):
                op_time = True
                time_dep = True
    for b in bterms:
        for jx in b.integrand.jac.values():
            if _uses(jx, all_first):
                linear = False
            if tcoord is not None and tcoord in calculus.coords_of(jx):
                op_time = True
        if tcoord is not None and tcoord in calculus.coords_of(b.integrand.expr):
            time_dep = True
        for g in fields:
            if jets.value(g) in calculus.coords_of(b.integrand.expr):
                used_values.add(g)
    time_dep = time_dep or op_time
    with_dirichlet = {s.field for s in dirichlet}
    value_free = {f for f in fields if f not in used_values and f not in with_dirichlet}
    if problem.is_evolution:
        value_free = set()
    return WeakForm(jets, forms, bterms, dirichlet, initial, deg, linear, time_dep, op_time,
                    value_free, periodic)


def _jet_term(s: E.Coord) -> str:
    name, _, rest = s.name.partition("@")
    return name + ("_" + rest if rest else "")


def _jet_str(jets: Jets, e: E.Expr) -> str:
    return str(jets.from_jets(calculus.substitute(
        e, {s: E.Coord(_jet_term(s)) for s in jets.all_symbols()})))


def _conditions(problem, jets: Jets, by_test: dict[E.Field, EquationForm]):
    bterms: list[BoundaryTerm] = []
    dirichlet: list[DirichletSpec] = []
    initial: dict[E.Field, E.Expr] = {}
    periodic: list = []
    d = jets.dim

    def flux_coefficient(name: str, f: E.Field) -> E.Expr:
        form = by_test.get(f)
        if form is None or f not in form.second:
            raise UnsupportedProblem(
                f"{problem.name}, condition {name!r}: a flux condition on {f.name} needs an "
                f"equation with second derivatives of {f.name}; none has them"
            )
        others = [g.name for g in form.second if g != f]
        if others:
            raise UnsupportedProblem(
                f"{problem.name}, condition {name!r}: equation {form.name!r} also has second "
                f"derivatives of {others}, so n·grad({f.name}) is not its natural flux; the FEM "
                "baseline cannot impose this Neumann/Robin condition"
            )
        mat = form.second[f]
        diag = _simplify(mat[0][0])
        iso = all(_is_zero(_simplify(mat[i][j])) for i in range(d) for j in range(d) if i != j)
        iso = iso and all(_simplify(mat[i][i]) == diag for i in range(d))
        if not iso:
            raise UnsupportedProblem(
                f"{problem.name}, condition {name!r}: the diffusion of {f.name} in equation "
                f"{form.name!r} is anisotropic, so n·grad({f.name}) is not its natural "
                "(conormal) flux; the FEM baseline imposes Neumann/Robin conditions for "
                "isotropic diffusion only"
            )
        return diag

    for name, c in problem.conditions.items():
        if isinstance(c, C.Dirichlet):
            for f, v in c.values:
                dirichlet.append(DirichletSpec(name, f, v, c.on))
        elif isinstance(c, C.Neumann):
            coef = flux_coefficient(name, c.field)
            expr = calculus.mul(coef, jets.to_jets(problem.expand(c.value)))
            bterms.append(BoundaryTerm(name, c.field, c.on, Integrand.build(expr, jets, 0)))
        elif isinstance(c, C.Robin):
            if _is_zero(_simplify(problem.expand(c.b))):
                dirichlet.append(DirichletSpec(name, c.field, calculus.div(c.value, c.a), c.on))
                continue
            coef = flux_coefficient(name, c.field)
            a = jets.to_jets(problem.expand(c.a))
            b = jets.to_jets(problem.expand(c.b))
            val = jets.to_jets(problem.expand(c.value))
            # a u + b dn u = value  =>  dn u = (value - a u) / b
            dn = calculus.div(calculus.sub(val, calculus.mul(a, jets.value(c.field))), b)
            expr = calculus.mul(coef, dn)
            bterms.append(BoundaryTerm(name, c.field, c.on, Integrand.build(expr, jets, 0)))
        elif isinstance(c, C.Initial):
            for f, v in c.values:
                initial[f] = v
            if c.rates:
                warnings.warn(f"{problem.name}, condition {name!r}: initial rates are ignored "
                              "by the FEM baseline (first order in time)", stacklevel=4)
        elif isinstance(c, C.Periodic):
            periodic.append((name, tuple(c.fields), tuple(c.pair)))
        elif isinstance(c, C.Constraint):
            raise UnsupportedProblem(
                f"{problem.name}, condition {name!r}: a Constraint ({c.expr} = 0) is not "
                "supported by the FEM baseline"
            )
        elif isinstance(c, C.Data):
            warnings.warn(f"{problem.name}, condition {name!r}: observed data are ignored by "
                          "the FEM baseline (forward solve only)", stacklevel=4)
        else:  # pragma: no cover
            raise UnsupportedProblem(f"condition {name!r} of type {type(c).__name__} is not "
                                     "supported by the FEM baseline")
    if problem.is_evolution:
        missing = [f.name for f in jets.fields if f not in initial]
        if missing:
            raise UnsupportedProblem(
                f"{problem.name}: no initial condition for {missing}; add "
                "pinn.Initial(field, value) for each field"
            )
    for b in bterms:
        if _uses(b.integrand.expr, jets.all_symbols() - jets.first_order_symbols()) or any(
            a > 0 for (_, a) in b.integrand.jac
        ):
            raise UnsupportedProblem(
                f"{problem.name}, condition {b.name!r}: the boundary value depends on "
                "derivatives of the solution; only values are supported there"
            )
    return bterms, dirichlet, initial, periodic
