"""From the PDE language to a weak form.

The translation reads the expanded equations, not the problem's name.  Each
equation ``e = 0``, with the fields and their derivatives as *field atoms*
(:mod:`pinn.dsl.symbolic`), is split into

    e = sum_g a_g g_tt + sum_g m_g g_t + sum_{g,i,j} c^g_ij d_ij g + e0(x, t, g, grad g)

where the ``c^g_ij`` (the second-order coefficients) must not depend on second
derivatives, and the inertia ``a_g`` and mass ``m_g`` on the solution at all
(the time stepping needs ``sum a_g g_tt + sum m_g g_t`` linear in the rates).
Integrating the second-order part by parts against a test function ``phi`` gives
the weak residual

    R(U; phi) = int  S phi + sum_i F_i d_i phi  dx  +  boundary terms,
    F_i = -sum_{g,j} c^g_ij d_j g,    S = e0 - sum_{g,i,j} (d_i c^g_ij) d_j g,

which holds for variable (even solution-dependent) coefficients.  The
coefficients and Newton's Jacobian (the derivative of ``S`` and ``F_i`` with
respect to each field atom) come from :func:`pinn.dsl.symbolic.jacobian`, the
one linearisation of the package; the problem is linear when those
derivatives contain no field.

Conditions are applied by a visitor of its own (``_APPLY``, keyed by
condition type): the baseline does not depend on the PINN side.  Anything
outside these classes raises :class:`UnsupportedProblem` naming the term or
condition that is the reason.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pinn import conditions as C
from pinn.dsl import calculus
from pinn.dsl import expr as E
from pinn.dsl import symbolic as S

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
# field atoms


def _check_atom(f: E.Field, wrt: tuple[E.Coord, ...], spatial, time) -> None:
    """Raise unless ``D(f, wrt)`` is at most second order in space or in time (not mixed)."""
    n_t = sum(1 for c in wrt if c == time)
    space = [c for c in wrt if c != time]
    if n_t and space:
        raise UnsupportedProblem(f"term {term_name(f, wrt)} (a mixed space-time derivative) is "
                                 "not supported by the FEM baseline")
    if n_t > 2:
        raise UnsupportedProblem(
            f"term {term_name(f, wrt)} ({_order_words(wrt)}) is not supported by the FEM "
            "baseline: time stepping is for first order (heat-type) and second order "
            "(wave-type) equations in time"
        )
    unknown = [c.name for c in space if c not in spatial]
    if unknown:
        raise UnsupportedProblem(f"term {term_name(f, wrt)}: unknown coordinate(s) {unknown}")
    if len(space) > 2:
        raise UnsupportedProblem(
            f"term {term_name(f, wrt)} ({_order_words(wrt)}) is not supported by the FEM "
            "baseline: it handles equations of at most second order in space (H1 Lagrange "
            "elements)"
        )


def _second_atoms(e: E.Expr, time) -> list[S.Atom]:
    """Atoms of ``e`` that are second derivatives in space or first derivatives in time."""
    return [(f, w) for f, w in S.field_atoms(e) if len(w) == 2 or time in w]


def _names(atoms) -> list[str]:
    return sorted(term_name(f, w) for f, w in atoms)


def _is_zero(e: E.Expr) -> bool:
    return isinstance(e, E.Number) and e.value == 0


def _simplify(e: E.Expr) -> E.Expr:
    return S.simplify(e)


# ---------------------------------------------------------------------------
# the weak form


@dataclass
class Integrand:
    """``expr`` (in fields and their first derivatives) with its derivatives w.r.t. them.

    ``jac[(g, a)]``: derivative of ``expr`` w.r.t. atom ``a`` of field ``g``
    (0: the value, ``i + 1``: the derivative along spatial coordinate ``i``),
    from :func:`pinn.dsl.symbolic.jacobian`.
    """

    expr: E.Expr
    jac: dict[tuple[E.Field, int], E.Expr] = field(default_factory=dict)

    @classmethod
    def build(cls, expr: E.Expr, problem) -> Integrand:
        expr = _simplify(expr)
        spatial = tuple(problem.spatial)
        jac = {}
        for (g, wrt), d in S.jacobian(expr, problem.fields, spatial, problem.coords).items():
            if len(wrt) > 1 or (wrt and wrt[0] not in spatial):  # pragma: no cover - guarded
                raise UnsupportedProblem(f"{term_name(g, wrt)}: only values and first "
                                         "derivatives may remain in a weak-form integrand")
            jac[(g, spatial.index(wrt[0]) + 1 if wrt else 0)] = d
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
    inertia: dict[E.Field, E.Expr] = field(default_factory=dict)  # coefficient of D(g, t, 2)


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
    fields: tuple[E.Field, ...]
    spatial: tuple[E.Coord, ...]
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
    rates: dict[E.Field, E.Expr] = field(default_factory=dict)  # initial D(g, t), inertial g

    @property
    def inertial(self) -> tuple[E.Field, ...]:
        """The fields whose second time derivative appears (wave-type time stepping)."""
        seen = {g for form in self.equations for g in form.inertia}
        return tuple(f for f in self.fields if f in seen)

    @property
    def constraint_equations(self) -> tuple[EquationForm, ...]:
        """Of an evolution problem: the equations without a time derivative (such as
        incompressibility), which :mod:`pinn.fem.constraints` imposes at each new level."""
        return tuple(f for f in self.equations if not f.mass and not f.inertia)

    @property
    def algebraic(self) -> tuple[E.Field, ...]:
        """The fields without a time derivative in any equation (such as a pressure)."""
        timed = {g for form in self.equations for g in (*form.mass, *form.inertia)}
        return tuple(f for f in self.fields if f not in timed)

    @property
    def multipliers(self) -> tuple[E.Field, ...]:
        """The algebraic fields that no constraint equation contains (index 2: the
        pressure of incompressible flow, a Lagrange multiplier)."""
        seen = {g for form in self.constraint_equations
                for it in (form.source, *form.flux) for (g, _) in it.jac}
        seen |= {g for form in self.constraint_equations for g in form.second}
        return tuple(f for f in self.algebraic if f not in seen)


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
    names = list(problem.equations)
    if len(names) != len(fields):
        raise UnsupportedProblem(
            f"{problem.name}: {len(names)} equation(s) for {len(fields)} field(s) "
            f"({', '.join(problem.field_names)}); the FEM baseline needs one equation per field"
        )
    partial = {name: cs for name, cs in problem.field_coords.items()
               if len(cs) < len(problem.coords)}
    if partial:
        name, cs = next(iter(partial.items()))
        raise UnsupportedProblem(
            f"{problem.name}: field {name!r} is declared on ({', '.join(c.name for c in cs)}) "
            f"only; the FEM baseline solves for fields of every coordinate "
            f"({', '.join(c.name for c in problem.coords)}): declare it on all of them to "
            "compare with FEM"
        )
    for p in problem.learnable:
        warnings.warn(f"{problem.name}: learnable parameter {p.name!r} is held at its initial "
                      f"value {p.value} by the FEM baseline (forward solve only)", stacklevel=3)
    eqs = {n: _expanded_equation(problem, n) for n in names}
    coeffs, masses, inertias = {}, {}, {}
    for n, e in eqs.items():
        coeffs[n], masses[n], inertias[n] = _second_order_parts(problem, n, e)
    diffused_in = {n: set(coeffs[n]) for n in names}
    diffused_any = set().union(*diffused_in.values())
    _check_classes(problem, names, diffused_in, masses, inertias)
    pairing = _pair_equations(names, diffused_in, fields, diffused_any)
    forms = [_equation_form(problem, n, eqs[n], coeffs[n], masses[n], inertias[n], pairing[n])
             for n in names]
    applied = _apply_conditions(problem, {f.test: f for f in forms})
    rates = _initial_rates(problem, forms, applied)
    deg = _degrees(problem, diffused_any, degree)
    linear, time_dep, op_time, used_values = _properties(problem, forms, applied.boundary)
    # fields without a time derivative (all, when steady) that appear only differentiated
    fixed = {s.field for s in applied.dirichlet}
    timed = {g for form in forms for g in (*form.mass, *form.inertia)}
    value_free = {f for f in fields if f not in used_values and f not in fixed
                  and f not in timed}
    return WeakForm(fields, tuple(problem.spatial), forms, applied.boundary, applied.dirichlet,
                    applied.initial, deg, linear, time_dep, op_time, value_free,
                    applied.periodic, rates)


def _expanded_equation(problem, n: str) -> E.Expr:
    """Equation ``n`` expanded to field atoms, each of an order the baseline supports."""
    ex = problem.expand(problem.equations[n])
    try:
        for f, wrt in S.field_atoms(ex):
            _check_atom(f, wrt, problem.spatial, problem.time_coord)
    except UnsupportedProblem as err:
        raise UnsupportedProblem(f"{problem.name}, equation {n!r}: {err}") from None
    return ex


def _second_order_parts(problem, n: str, e: E.Expr):
    """``({g: c^g (d x d)}, {g: m_g}, {g: a_g})``: the second-order coefficients and those
    of the first and second time derivatives."""
    spatial, tcoord = tuple(problem.spatial), problem.time_coord
    d = len(spatial)
    coeffs: dict[E.Field, list[list[E.Expr]]] = {}
    masses: dict[E.Field, E.Expr] = {}
    inertias: dict[E.Field, E.Expr] = {}
    jumpy: dict[E.Field, E.Expr] = {}
    for (g, wrt), c in S.jacobian(e, problem.fields, spatial, problem.coords).items():
        if tcoord is not None and wrt in ((tcoord,), (tcoord, tcoord)):
            bad = S.field_atoms(c)
            if bad:
                what = ("a nonlinear second-time-derivative term" if len(wrt) == 2 else
                        "a nonlinear time-derivative term")
                raise UnsupportedProblem(
                    f"{problem.name}, equation {n!r}: the coefficient of {term_name(g, wrt)} "
                    f"depends on the solution ({_names(bad)}: {what}); the FEM baseline "
                    "needs it to depend on the coordinates and time only"
                )
            (masses if len(wrt) == 1 else inertias)[g] = c
        elif len(wrt) == 2:
            bad = _second_atoms(c, tcoord)
            if bad:
                raise UnsupportedProblem(
                    f"{problem.name}, equation {n!r}: term {term_name(g, wrt)} appears "
                    f"nonlinearly (its coefficient {c} contains {_names(bad)}); the FEM "
                    "baseline handles equations linear in the second and time derivatives"
                )
            i, j = spatial.index(wrt[0]), spatial.index(wrt[1])
            if i == j and calculus.jumps_in_space(c, spatial):
                jumpy.setdefault(g, c)
            mat = coeffs.setdefault(g, [[E.Number(0)] * d for _ in range(d)])
            if i == j:
                mat[i][i] = c
            else:
                half = calculus.div(c, E.Number(2))
                mat[i][j] = half
                mat[j][i] = half
    for g, c in jumpy.items():
        warnings.warn(
            f"{problem.name}, equation {n!r}: the coefficient of {g.name}'s second derivatives "
            f"jumps in space ({_short(c)} is piecewise or a nearest-node table): the FEM "
            "baseline solves the divergence form, its flux (coefficient times normal "
            "derivative) continuous across the jumps, where a network of the pointwise "
            "equation keeps the normal derivative itself continuous: at the jumps the two "
            "solve different problems unless the PINN's plan minimises the energy (plan: "
            "{energy: true}, where the problem is steady)", RuntimeWarning, stacklevel=2)
    return coeffs, masses, inertias


def _short(c: E.Expr, n: int = 60) -> str:
    text = str(c)
    return text if len(text) <= n else text[:n] + " ..."


def _check_classes(problem, names, diffused_in, masses, inertias) -> None:
    """Raise for equations without diffusion (one field) or without a time derivative."""
    fields = problem.fields
    for n in names:
        if not diffused_in[n] and len(fields) == 1:
            raise UnsupportedProblem(
                f"{problem.name}, equation {n!r} has no second-order term in "
                f"{fields[0].name} (a first-order, hyperbolic equation): the FEM baseline "
                "(continuous Galerkin without stabilisation) needs a diffusion term"
            )
    if not problem.is_evolution:
        return
    untimed = [n for n in names if not masses[n] and not inertias[n]]
    if len(untimed) == len(names):
        raise UnsupportedProblem(
            f"{problem.name}: no equation has a time derivative in a time-dependent problem; "
            "the FEM baseline's time stepping needs at least one (solve a steady problem "
            "with t as a parameter instead)")
    second = [n for n in names if inertias[n]]
    if untimed and second:
        raise UnsupportedProblem(
            f"{problem.name}, equation {untimed[0]!r} has no time derivative (a constraint) "
            f"while {second[0]!r} is second order in time: the FEM baseline imposes "
            "constraints with first-order-in-time equations only (theta-method), not with "
            "Newmark's scheme")


def _equation_form(problem, n, e, coeffs, masses, inertias, test) -> EquationForm:
    """Integrate the second-order part of ``e`` by parts: the source and the fluxes."""
    spatial, tcoord = tuple(problem.spatial), problem.time_coord
    d = len(spatial)
    src = calculus.substitute(e, {S.atom_expr(a): E.Number(0) for a in _second_atoms(e, tcoord)})
    flux: list[E.Expr] = [E.Number(0)] * d
    for g, mat in coeffs.items():
        for i in range(d):
            for j in range(d):
                c = mat[i][j]
                if _is_zero(c):
                    continue
                gj = E.Derivative(g, (spatial[j],))
                flux[i] = calculus.sub(flux[i], calculus.mul(c, gj))
                # d_i c, by the chain rule through the fields
                dc = problem.expand(E.Derivative(c, (spatial[i],)))
                if _second_atoms(dc, tcoord):
                    raise UnsupportedProblem(
                        f"{problem.name}, equation {n!r}: the coefficient {c} of "
                        f"{term_name(g, (spatial[min(i, j)], spatial[max(i, j)]))} depends on "
                        "the gradient of the solution; the FEM baseline supports coefficients "
                        "that depend on the coordinates and the solution's values only"
                    )
                src = calculus.sub(src, calculus.mul(dc, gj))
    return EquationForm(
        name=n, test=test, source=Integrand.build(src, problem),
        flux=tuple(Integrand.build(fx, problem) for fx in flux),
        mass=masses, second={g: tuple(map(tuple, m)) for g, m in coeffs.items()},
        inertia=inertias,
    )


def _degrees(problem, diffused_any, degree: int) -> dict[E.Field, int]:
    """Element degrees: Taylor-Hood when some field only appears differentiated."""
    fields = problem.fields
    constrained = [f for f in fields if f not in diffused_any]
    if not constrained:
        return {f: degree for f in fields}
    top = max(2, degree)
    if degree < 2:
        warnings.warn(
            f"{problem.name}: fields {[f.name for f in constrained]} act as constraints "
            f"(like a pressure): using Taylor-Hood elements P{top}-P{top - 1} instead of "
            f"P{degree}", stacklevel=4)
    return {f: top if f in diffused_any else top - 1 for f in fields}


def _properties(problem, forms, bterms):
    """``(linear, depends_on_time, operator_depends_on_time, fields used by value)``."""
    tcoord = problem.time_coord

    def has_t(e):
        return tcoord is not None and tcoord in calculus.coords_of(e)

    linear, time_dep, op_time = True, False, False
    used: set[E.Field] = set()
    integrands = [it for f in forms for it in (f.source, *f.flux)]
    for it in integrands + [b.integrand for b in bterms]:
        for jx in it.jac.values():
            linear = linear and not S.field_atoms(jx)
            op_time = op_time or has_t(jx)
        time_dep = time_dep or has_t(it.expr)
        used.update(f for f, w in S.field_atoms(it.expr) if not w)
    if any(has_t(m) for form in forms for m in (*form.mass.values(), *form.inertia.values())):
        op_time = time_dep = True
    return linear, time_dep or op_time, op_time, used


# ---------------------------------------------------------------------------
# conditions: the FEM visitor (its own, so the baseline never depends on the PINN side)


@dataclass
class _Applied:
    """What the conditions add to a weak form."""

    problem: object
    by_test: dict
    boundary: list[BoundaryTerm] = field(default_factory=list)
    dirichlet: list[DirichletSpec] = field(default_factory=list)
    initial: dict[E.Field, E.Expr] = field(default_factory=dict)
    periodic: list = field(default_factory=list)
    rates: dict = field(default_factory=dict)     # field -> (condition name, D(field, t))


def _flux_coefficient(acc: _Applied, name: str, f: E.Field) -> E.Expr:
    """The isotropic diffusion coefficient of ``f``: n·grad(f) is then the natural flux."""
    problem, d = acc.problem, len(acc.problem.spatial)
    form = acc.by_test.get(f)
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


def _boundary_term(problem, name, test: E.Field, on, expr: E.Expr) -> BoundaryTerm:
    derivs = [a for a in S.field_atoms(expr) if a[1]]
    if derivs:
        raise UnsupportedProblem(
            f"{problem.name}, condition {name!r}: the boundary value depends on derivatives "
            f"of the solution ({_names(derivs)}); only values are supported there"
        )
    return BoundaryTerm(name, test, on, Integrand.build(expr, problem))


def _apply_dirichlet(acc: _Applied, name: str, c: C.Dirichlet) -> None:
    for f, v in c.values:
        acc.dirichlet.append(DirichletSpec(name, f, v, c.on))


def _apply_neumann(acc: _Applied, name: str, c: C.Neumann) -> None:
    expr = calculus.mul(_flux_coefficient(acc, name, c.field), acc.problem.expand(c.value))
    acc.boundary.append(_boundary_term(acc.problem, name, c.field, c.on, expr))


def _apply_robin(acc: _Applied, name: str, c: C.Robin) -> None:
    p = acc.problem
    if _is_zero(_simplify(p.expand(c.b))):
        acc.dirichlet.append(DirichletSpec(name, c.field, calculus.div(c.value, c.a), c.on))
        return
    coef = _flux_coefficient(acc, name, c.field)
    a, b, val = (p.expand(e) for e in (c.a, c.b, c.value))
    # a u + b dn u = value  =>  dn u = (value - a u) / b
    dn = calculus.div(calculus.sub(val, calculus.mul(a, c.field)), b)
    acc.boundary.append(_boundary_term(p, name, c.field, c.on, calculus.mul(coef, dn)))


def _apply_initial(acc: _Applied, name: str, c: C.Initial) -> None:
    for f, v in c.values:
        acc.initial[f] = v
    for f, v in c.rates:
        acc.rates[f] = (name, v)


def _apply_periodic(acc: _Applied, name: str, c: C.Periodic) -> None:
    acc.periodic.append((name, tuple(c.fields), tuple(c.pair)))


def _reject_constraint(acc: _Applied, name: str, c: C.Constraint) -> None:
    raise UnsupportedProblem(
        f"{acc.problem.name}, condition {name!r}: a Constraint ({c.expr} = 0) is not "
        "supported by the FEM baseline; remove it to solve with FEM"
    )


def _ignore_data(acc: _Applied, name: str, c: C.Data) -> None:
    warnings.warn(f"{acc.problem.name}, condition {name!r}: observed data are ignored by "
                  "the FEM baseline (forward solve only)", stacklevel=5)


_APPLY = {
    C.Dirichlet: _apply_dirichlet,
    C.Neumann: _apply_neumann,
    C.Robin: _apply_robin,
    C.Initial: _apply_initial,
    C.Periodic: _apply_periodic,
    C.Constraint: _reject_constraint,
    C.Data: _ignore_data,
}


def _apply_conditions(problem, by_test: dict[E.Field, EquationForm]) -> _Applied:
    acc = _Applied(problem, by_test)
    for name, c in problem.conditions.items():
        apply = next((_APPLY[k] for k in type(c).__mro__ if k in _APPLY), None)
        if apply is None:
            handled = ", ".join(k.__name__ for k in _APPLY if k is not C.Constraint)
            raise UnsupportedProblem(
                f"{problem.name}, condition {name!r}: the FEM baseline cannot apply a "
                f"{type(c).__name__} condition; it handles {handled} (remove the condition "
                "or solve this problem with the PINN)"
            )
        apply(acc, name, c)
    if problem.is_evolution:
        # fields without a time derivative (a pressure) take no initial value
        timed = {g for form in by_test.values() for g in (*form.mass, *form.inertia)}
        missing = [f.name for f in problem.fields if f not in acc.initial and f in timed]
        if missing:
            raise UnsupportedProblem(
                f"{problem.name}: no initial condition for {missing}; add "
                "pinn.Initial(field, value) for each field"
            )
    return acc


def _initial_rates(problem, forms, acc: _Applied) -> dict[E.Field, E.Expr]:
    """The initial ``D(g, t)`` of each field that is second order in time (required); a
    rate given for a field of first order in time is ignored, with a warning."""
    inertial = [f for f in problem.fields if any(f in form.inertia for form in forms)]
    missing = [f.name for f in inertial if f not in acc.rates]
    if missing:
        raise UnsupportedProblem(
            f"{problem.name}: {', '.join(missing)} is second order in time and needs its "
            "initial rate too; add it to the initial condition (YAML: rate: {"
            f"{missing[0]}: ...}}; Python: pinn.Initial({missing[0]}, value, rate=...))")
    for f, (name, _) in acc.rates.items():
        if f not in inertial:
            warnings.warn(f"{problem.name}, condition {name!r}: the initial rate of {f.name} "
                          "is ignored by the FEM baseline (first order in time)", stacklevel=4)
    return {f: acc.rates[f][1] for f in inertial}
