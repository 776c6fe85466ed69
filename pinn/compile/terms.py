"""Lower named PDE-language expressions to one pure JAX function.

``compile_terms`` plans, once, every field derivative that *all* the
expressions need, then returns ``fn(params, points, extra=None) -> {name:
values[N]}``: at call time it computes each planned derivative once (all
fields at once, since one network gives all outputs) and evaluates the
expression trees on those arrays.  ``fn`` is pure: use it under ``jit``,
``grad`` and ``vmap``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from pinn.compile.derivatives import STRATEGIES, derivatives
from pinn.compile.plan import Collapsed, MultiIndex, multi_index
from pinn.dsl import calculus
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate

__all__ = ["CompileError", "Plan", "plan_terms", "collapse_terms", "compile_terms",
           "compile_expressions", "compile_fields", "initial_pde_params"]


class CompileError(ValueError):
    """Expressions cannot be compiled against the given coordinates and fields."""


@dataclass(frozen=True)
class Plan:
    """What a compiled function computes.

    ``expanded``: each expression with vector operators resolved and
    derivatives pushed onto fields; ``alphas``: the distinct derivative
    multi-indices (over ``coords``) the network is differentiated to, each
    computed once for all fields; ``combos``: collapsed combinations
    ``((alpha, weight), ...)`` of highest derivatives that the expressions
    only use as a whole (see :func:`collapse`); ``leaves``: ``{node: (field
    index, alpha or combo)}`` for every field value / derivative node in the
    expressions; ``learnable``: names read from ``params["pde"]``.
    """

    coords: tuple[E.Coord, ...]
    fields: tuple[E.Field, ...]
    inputs: tuple[E.Coord, ...]
    spatial: tuple[E.Coord, ...]
    expanded: Mapping[str, E.Expr]
    alphas: tuple[MultiIndex, ...]
    leaves: Mapping[E.Expr, tuple[int, object]]
    learnable: tuple[str, ...]
    combos: tuple = ()

    @property
    def needs_network(self) -> bool:
        return bool(self.leaves)

    @property
    def max_order(self) -> int:
        orders = [sum(a) for a in self.alphas] + [sum(g) for c in self.combos for g, _ in c]
        return max(orders, default=0)


def _as_coords(cs, what: str) -> tuple[E.Coord, ...]:
    if isinstance(cs, E.Coord):
        cs = (cs,)
    out = tuple(cs)
    for c in out:
        if not isinstance(c, E.Coord):
            raise CompileError(f"{what} must be coordinates (pinn.coords), got {c!r}")
    if len(set(out)) != len(out):
        raise CompileError(f"{what} repeat a coordinate: {[c.name for c in out]}")
    return out


def _plan_coords(exprs: Mapping[str, E.Expr], coords, fields, spatial, inputs):
    """``(coords, fields, spatial, inputs)`` checked: coordinates, fields, and no coordinate
    also a per-point input; ``spatial`` by default the coordinates but ``t`` and the input
    columns of ranged parameters."""
    coords = _as_coords(coords, "coords")
    inputs = _as_coords(inputs, "inputs")
    fields = tuple(fields)
    for f in fields:
        if not isinstance(f, E.Field):
            raise CompileError(f"fields must be pinn.field(...) objects, got {f!r}")
    both = set(coords) & set(inputs)
    if both:
        raise CompileError(
            f"{sorted(c.name for c in both)} are both coordinates and per-point inputs; "
            "an input is supplied in `extra` and never differentiated"
        )
    if spatial is None:  # not "t", nor the input column of a ranged parameter
        ranged = {p.name for ex in exprs.values() for p in calculus.params_of(E.as_expr(ex))
                  if p.range is not None}
        spatial = tuple(c for c in coords if c.name != "t" and c.name not in ranged)
    spatial = _as_coords(spatial, "spatial")
    return coords, fields, spatial, inputs


def _expanded(name: str, ex, coords, inputs, spatial, known: set) -> E.Expr:
    """The scalar expression ``ex`` with vector operators resolved and derivatives pushed
    onto fields, in none but the known coordinates."""
    ex = E.as_expr(ex)
    if ex.is_vector:
        raise CompileError(f"{name}: {ex} is a vector; compile its components separately")
    try:
        ex = calculus.expand(ex, spatial, coords)
    except (TypeError, ValueError) as err:
        raise CompileError(f"{name}: {err}") from err
    for c in calculus.coords_of(ex):
        if c not in known:
            raise CompileError(
                f"{name}: unknown coordinate {c.name!r} in {ex}; coordinates are "
                f"{[k.name for k in coords]}, per-point inputs {[k.name for k in inputs]}"
            )
    return ex


def _check_nodes(name: str, ex: E.Expr, coords, fields, field_pos: dict, known: set,
                 learnable: dict) -> None:
    """Check the fields, derivatives and parameters of the expanded ``ex`` against the
    network; collect its learnable parameters into ``learnable``."""
    for node in calculus.walk(ex):
        if isinstance(node, E.Field):
            if node not in field_pos:
                raise CompileError(
                    f"{name}: field {node.name!r} is not one of the network's outputs "
                    f"{[f.name for f in fields]}; pass it in fields="
                )
        elif isinstance(node, E.Derivative):
            bad = [c.name for c in node.wrt if c not in coords]
            if bad:
                raise CompileError(
                    f"{name}: {node} differentiates with respect to {bad}, which are "
                    "per-point inputs, not coordinates of the network"
                )
        elif isinstance(node, E.Param):
            if node.learnable:
                learnable[node.name] = node
            elif node.range is not None:
                if E.Coord(node.name) not in known:
                    raise CompileError(
                        f"{name}: parameter {node.name!r} ranges over {list(node.range)}: "
                        f"it is an input of the network; compile with its column among "
                        f"the coordinates (coords=problem.inputs)")
            elif node.value is None:
                raise CompileError(f"{name}: parameter {node.name!r} has no value")


def plan_terms(exprs: Mapping[str, E.Expr], *, coords, fields=(), spatial=None,
               inputs=(), collapse: bool = True) -> Plan:
    """Expand every expression and collect the derivatives they need (no JAX work)."""
    coords, fields, spatial, inputs = _plan_coords(exprs, coords, fields, spatial, inputs)
    field_pos = {f: i for i, f in enumerate(fields)}
    known = set(coords) | set(inputs)

    expanded: dict[str, E.Expr] = {}
    leaves: dict[E.Expr, tuple[int, MultiIndex]] = {}
    learnable: dict[str, E.Param] = {}
    for name, ex in exprs.items():
        ex = _expanded(name, ex, coords, inputs, spatial, known)
        _check_nodes(name, ex, coords, fields, field_pos, known, learnable)
        # in a fixed order (the pairs come as a set, whose order follows the names' string
        # hashes, which differ between processes): the traced program is then the same in
        # every process, and a re-run finds its compiled programs (pinn.compile_cache)
        found = sorted(calculus.field_derivatives(ex), key=lambda p: (
            field_pos[p[0]], multi_index(p[1], coords), tuple(c.name for c in p[1])))
        for f, wrt in found:
            node = E.Derivative(f, wrt) if wrt else f
            leaves[node] = (field_pos[f], multi_index(wrt, coords))
        expanded[name] = ex
    combos: tuple = ()
    if collapse:
        expanded, leaves, combos = collapse_terms(expanded, leaves, fields)
    alphas = tuple(sorted({a for _, a in leaves.values() if a not in combos},
                          key=lambda a: (sum(a), a[::-1])))
    return Plan(coords, fields, inputs, spatial, expanded, alphas, leaves, tuple(learnable),
                combos)


def _maximal(alphas) -> set:
    """Maximal elements of the lower set generated by ``alphas`` (order >= 1)."""
    alphas = set(alphas)
    out = set()
    for a in alphas:
        if sum(a) == 0:
            continue
        if not any(b != a and all(x <= y for x, y in zip(a, b, strict=True)) for b in alphas):
            out.add(a)
    return out


def collapse_terms(expanded: Mapping[str, E.Expr], leaves: Mapping, fields):
    """Find highest derivatives that every expression uses only through one
    fixed linear combination, and replace that combination by one symbol.

    For ``u_t - a*(u_xx + u_yy)`` (fixed ``a``) the derivatives ``t, xx, yy``
    are maximal (nothing else needs them) and appear only as ``u_t - a u_xx
    - a u_yy``: Taylor mode then carries that sum as ONE stream instead of
    three (collapsed Taylor mode).  Each expression must be linear in these
    derivatives (checked symbolically), and the ratios of their
    coefficients must be constants, the same in every expression and for
    every field (checked at random values, both signs, of every other
    symbol): a shared factor such as ``sqrt(x)`` or a learnable ``nu`` in
    ``nu*laplacian(u)`` is fine, ``u_t - nu*u_xx`` with learnable ``nu``
    keeps ``u_t`` apart.  Coefficients with branches (``where``, ``abs``,
    comparisons) never collapse.  Returns ``(expanded, leaves, combos)``.
    """
    top = _maximal(a for _, a in leaves.values())
    top_nodes = {n: v for n, v in leaves.items() if v[1] in top}
    if len({a for _, a in top_nodes.values()}) < 2:
        return expanded, leaves, ()
    ph = {n: E.Coord(f"__leaf{i}") for i, n in enumerate(leaves)}
    coef, blocked = _top_coefficients(expanded, top_nodes, ph)
    cand = sorted({a for _, a in top_nodes.values()} - blocked, key=lambda a: (sum(a), a))
    if len(cand) < 2:
        return expanded, leaves, ()
    node_of = {(i, a): n for n, (i, a) in top_nodes.items()}
    cells = [(name, i) for name in expanded for i in range(len(fields))]
    per_cell = [[coef.get((name, node_of.get((i, g)))) for name, i in cells] for g in cand]
    groups = _ratio_groups(coef, cand, per_cell)
    if not groups:
        return expanded, leaves, ()
    combos = tuple(Collapsed(tuple((g, _clean(r)) for g, r in grp)) for grp in groups)
    new_leaves = {n: v for n, v in leaves.items()
                  if not any(v[1] == g for c in combos for g, _ in c)}
    back = {c: n for n, c in ph.items()}
    new_expanded = {}
    for name, ex in expanded.items():
        zero = {}
        extra = []
        for k, combo in enumerate(combos):
            rep = combo.parts[0][0]
            for i, f in enumerate(fields):
                for g, _ in combo:
                    n = node_of.get((i, g))
                    if n is not None:
                        zero[n] = E.Number(0)
                a = coef.get((name, node_of.get((i, rep))))
                if a is not None and a != E.Number(0):
                    sym = E.Coord(f"__collapsed{k}_{f.name}")
                    new_leaves[sym] = (i, combo)
                    extra.append(calculus.mul(calculus.substitute(a, back), sym))
        out = _simplify(calculus.substitute(ex, zero)) if zero else ex
        for t in extra:
            out = calculus.add(out, t)
        new_expanded[name] = out
    return new_expanded, new_leaves, combos


def _top_coefficients(expanded, top_nodes, ph):
    """``(coef, blocked)``: ``coef[(name, node)] = d expr / d node`` (placeholder form).

    A highest derivative is blocked when an expression is not linear in the
    highest derivatives or its coefficient has branches.
    """
    back = {c: n for n, c in ph.items()}
    top_ph = {ph[n] for n in top_nodes}
    coef: dict = {}
    blocked: set = set()
    for name, ex in expanded.items():
        ex_p = calculus.substitute(ex, ph)
        present = set(calculus.symbols(ex_p, E.Coord))
        for n in top_nodes:
            if ph[n] not in present:
                continue
            a = calculus.diff(ex_p, ph[n], ())
            inside = [c for c in calculus.symbols(a, E.Coord) if c in top_ph]
            if inside:  # not linear in the highest derivatives: keep them explicit
                blocked.add(top_nodes[n][1])
                blocked.update(top_nodes[back[c]][1] for c in inside)
            if _piecewise(a):  # ratios could change across a branch: never collapse
                blocked.add(top_nodes[n][1])
            coef[(name, n)] = a
    return coef, blocked


def _ratio_groups(coef, cand, cand_coefs) -> list[list]:
    """Group the candidates whose coefficients are constant multiples of each other.

    ``cand_coefs[k]``: the coefficient (or None) of candidate ``k`` in every
    (expression, field) cell.  Checked at random values, both signs, of every
    symbol; returns the groups of two or more ``[(alpha, ratio), ...]``.
    """
    from pinn.dsl.evaluate import evaluate as _ev

    rng = np.random.default_rng(0)
    n_samples = 6

    def draw():  # both signs (half each), magnitudes away from 0
        signs = rng.permutation(np.resize([1.0, -1.0], n_samples))
        return rng.uniform(0.5, 1.5, n_samples) * signs

    env: dict = {}
    for a in coef.values():
        for c in calculus.symbols(a, E.Coord):
            env.setdefault(c, draw())
        for p in calculus.params_of(a):
            if p.learnable or p.range is not None:
                env.setdefault(p, draw())

    def values(a) -> np.ndarray | None:
        """Samples of a coefficient (None: structurally zero; NaN where undefined or 0)."""
        if a is None or a == E.Number(0):
            return None
        v = np.broadcast_to(np.asarray(_ev(a, env), dtype=float), (n_samples,)).copy()
        v[~np.isfinite(v) | (v == 0)] = np.nan
        return v

    vals = {g: [values(a) for a in cs] for g, cs in zip(cand, cand_coefs, strict=True)}

    def ratio(g1, g2) -> float | None:
        """The constant c with coefficient(g2) = c * coefficient(g1) everywhere, or None."""
        r0 = None
        for v1, v2 in zip(vals[g1], vals[g2], strict=True):
            if v1 is None and v2 is None:
                continue
            if v1 is None or v2 is None:
                return None
            ok1, ok2 = ~np.isnan(v1), ~np.isnan(v2)
            if np.any(ok1 != ok2) or ok1.sum() < 3:  # e.g. sqrt(x): compare where defined
                return None
            r = v2[ok1] / v1[ok1]
            if r0 is None:
                r0 = float(r[0])
            if not np.allclose(r, r0, rtol=1e-4, atol=0.0):
                return None
        return r0

    groups: list[list] = []
    for g in cand:
        for grp in groups:
            r = ratio(grp[0][0], g)
            if r is not None:
                grp.append((g, r))
                break
        else:
            groups.append([(g, 1.0)])
    return [grp for grp in groups if len(grp) > 1]


_PIECEWISE_CALLS = {"where", "min", "max", "sign", "heaviside", "abs"}


def _piecewise(e: E.Expr) -> bool:
    return any(isinstance(n, (E.Compare, E.And, E.Or, E.Not))
               or (isinstance(n, E.Call) and n.func in _PIECEWISE_CALLS)
               for n in calculus.walk(e))


_SIMPLIFY = {E.Add: calculus.add, E.Sub: calculus.sub, E.Mul: calculus.mul, E.Div: calculus.div}


def _simplify(e: E.Expr) -> E.Expr:
    """Fold the zeros left where collapsed derivatives were taken out."""

    def fn(node):
        f = _SIMPLIFY.get(type(node))
        if f is not None:
            return f(node.left, node.right)
        if isinstance(node, E.Neg):
            return calculus.neg(node.arg)
        return None

    return calculus.transform(e, fn)


def _clean(r: float) -> float:
    """Snap a measured ratio to a nearby short decimal (1e-4 -> exact)."""
    for digits in range(0, 7):
        q = round(r, digits)
        if q != 0 and abs(q - r) <= 1e-6 * abs(r):
            return q
    return r


def initial_pde_params(exprs: Mapping[str, E.Expr] | Sequence[E.Expr]) -> dict:
    """``{name: initial value}`` of the learnable parameters in ``exprs``: ``params["pde"]``."""
    items = exprs.values() if isinstance(exprs, Mapping) else exprs
    out: dict = {}
    for ex in items:
        for p in calculus.params_of(E.as_expr(ex)):
            if p.learnable:
                out[p.name] = jnp.asarray(p.value, dtype=float)
    return out


def _put_inputs(env: dict, plan: Plan, extra, n: int) -> None:
    """Put the per-point inputs, the columns of ``extra[n, len(plan.inputs)]``, in ``env``."""
    if extra is None:
        raise ValueError(
            f"these expressions use the per-point inputs "
            f"{[c.name for c in plan.inputs]}: pass extra[N, {len(plan.inputs)}]"
        )
    extra = jnp.asarray(extra)
    if extra.shape != (n, len(plan.inputs)):
        raise ValueError(
            f"extra must have shape ({n}, {len(plan.inputs)}) for inputs "
            f"{[c.name for c in plan.inputs]}, got {tuple(extra.shape)}"
        )
    for i, c in enumerate(plan.inputs):
        env[c] = extra[:, i]


def _put_learnable(env: dict, plan: Plan, params, nodes: set) -> None:
    """Put the learnable parameters ``nodes``, read from ``params["pde"]``, in ``env``."""
    pde = params.get("pde") if isinstance(params, Mapping) else None
    missing = [k for k in plan.learnable if pde is None or k not in pde]
    if missing:
        raise KeyError(
            f"learnable parameter(s) {missing} not found in params['pde']; pass "
            "params={'net': ..., 'pde': initial_pde_params(exprs)}"
        )
    for p in nodes:
        env[p] = pde[p.name]


def _put_derivatives(env: dict, plan: Plan, apply: Callable, params, points,
                     strategy: str) -> None:
    """Put every planned field value and derivative in ``env``: the network's derivatives,
    each multi-index (or collapsed combination) computed once for all fields."""
    n, n_fields = points.shape[0], len(plan.fields)
    if not isinstance(params, Mapping) or "net" not in params:
        raise KeyError("params must be a dict with the network parameters under 'net'")
    derivs = derivatives(apply, params["net"], points, plan.alphas, strategy=strategy,
                         combos=plan.combos)
    for node, (i, alpha) in plan.leaves.items():
        out = derivs[alpha]
        if out.ndim == 1:
            out = out[:, None]
        if out.shape != (n, n_fields):
            raise ValueError(
                f"apply returned shape {tuple(derivs[alpha].shape)}; expected "
                f"({n}, {n_fields}) for fields {[f.name for f in plan.fields]}"
            )
        env[node] = out[:, i]


def compile_terms(exprs: Mapping[str, E.Expr], *, coords, fields=(), apply: Callable | None = None,
                  spatial=None, inputs=(), strategy: str = "auto",
                  collapse: bool = True) -> Callable:
    """Compile named expressions to ``fn(params, points[N, d], extra=None) -> {name: values[N]}``.

    ``params = {"net": net_params, "pde": {learnable_name: scalar}}``;
    ``apply(net_params, x[N, d]) -> [N, len(fields)]`` (``[N]`` for one
    field).  Fixed parameters are constants; learnable ones
    (``param(..., learnable=True)``) are read from ``params["pde"]``.
    ``inputs`` are extra per-point symbols (e.g. ``Coord("n_x")``) given as
    ``extra[N, len(inputs)]``, never differentiated.  Every field derivative
    that any expression needs is computed once, by ``strategy`` (see
    :func:`pinn.compile.derivatives.derivatives`); ``collapse`` lets highest
    derivatives used only in one fixed combination (a Laplacian, a whole
    linear residual) travel as one Taylor stream.  Expressions without
    fields (sources, exact solutions and their symbolic derivatives) need no
    network: ``apply`` may then be None.
    """
    if strategy not in STRATEGIES:
        raise CompileError(
            f"unknown derivative strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}"
        )
    plan = plan_terms(exprs, coords=coords, fields=fields, spatial=spatial, inputs=inputs,
                      collapse=collapse)
    if plan.needs_network and apply is None:
        used = sorted({plan.fields[i].name for i, _ in plan.leaves.values()})
        raise CompileError(f"the expressions use the fields {used}: pass the network as apply=")
    d = len(plan.coords)
    learnable_nodes = {p for ex in plan.expanded.values() for p in calculus.params_of(ex)
                       if p.learnable}

    def fn(params, points, extra=None):
        points = jnp.asarray(points)
        if points.ndim != 2 or points.shape[-1] != d:
            raise ValueError(
                f"points must have shape [N, {d}] (coordinates "
                f"{', '.join(c.name for c in plan.coords)}), got {tuple(points.shape)}"
            )
        n = points.shape[0]
        env: dict = {c: points[:, i] for i, c in enumerate(plan.coords)}
        if plan.inputs:
            _put_inputs(env, plan, extra, n)
        if plan.learnable:
            _put_learnable(env, plan, params, learnable_nodes)
        if plan.needs_network:
            _put_derivatives(env, plan, apply, params, points, strategy)
        return {
            name: jnp.broadcast_to(jnp.asarray(evaluate(ex, env), dtype=points.dtype), (n,))
            for name, ex in plan.expanded.items()
        }

    fn.plan = plan
    return fn


def compile_expressions(exprs: Mapping[str, E.Expr] | Sequence[E.Expr] | E.Expr, *, coords,
                        fields=(), apply: Callable | None = None, spatial=None, inputs=(),
                        strategy: str = "auto") -> Callable:
    """Like :func:`compile_terms` for arbitrary expressions of a (trained) network:
    a sequence (or one expression) is named by ``str(expr)``."""
    if isinstance(exprs, E.Expr):
        exprs = [exprs]
    if not isinstance(exprs, Mapping):
        exprs = {str(e): e for e in exprs}
    return compile_terms(exprs, coords=coords, fields=fields, apply=apply, spatial=spatial,
                         inputs=inputs, strategy=strategy)


def compile_fields(*, coords, fields, apply: Callable) -> Callable:
    """``fn(params, points) -> {field_name: values[N]}``: the network's fields by name."""
    fields = tuple(fields)
    return compile_terms({f.name: f for f in fields}, coords=coords, fields=fields, apply=apply)
