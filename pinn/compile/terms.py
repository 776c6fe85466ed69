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

from pinn.compile.derivatives import STRATEGIES, derivatives
from pinn.compile.plan import MultiIndex, multi_index
from pinn.dsl import calculus
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate

__all__ = ["CompileError", "Plan", "plan_terms", "compile_terms", "compile_expressions", "compile_fields",
           "initial_pde_params"]


class CompileError(ValueError):
    """Expressions cannot be compiled against the given coordinates and fields."""


@dataclass(frozen=True)
class Plan:
    """What a compiled function computes.

    ``expanded``: each expression with vector operators resolved and
    derivatives pushed onto fields; ``alphas``: the distinct derivative
    multi-indices (over ``coords``) the network is differentiated to, each
    computed once for all fields; ``leaves``: ``{node: (field index,
    alpha)}`` for every field value / field derivative node in the
    expressions; ``learnable``: names read from ``params["pde"]``.
    """

    coords: tuple[E.Coord, ...]
    fields: tuple[E.Field, ...]
    inputs: tuple[E.Coord, ...]
    spatial: tuple[E.Coord, ...]
    expanded: Mapping[str, E.Expr]
    alphas: tuple[MultiIndex, ...]
    leaves: Mapping[E.Expr, tuple[int, MultiIndex]]
    learnable: tuple[str, ...]

    @property
    def needs_network(self) -> bool:
        return bool(self.leaves)

    @property
    def max_order(self) -> int:
        return max((sum(a) for a in self.alphas), default=0)


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


def plan_terms(exprs: Mapping[str, E.Expr], *, coords, fields=(), spatial=None,
               inputs=()) -> Plan:
    """Expand every expression and collect the derivatives they need (no JAX work)."""
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
    if spatial is None:
        spatial = tuple(c for c in coords if c.name != "t")
    spatial = _as_coords(spatial, "spatial")
    field_pos = {f: i for i, f in enumerate(fields)}
    known = set(coords) | set(inputs)

    expanded: dict[str, E.Expr] = {}
    leaves: dict[E.Expr, tuple[int, MultiIndex]] = {}
    learnable: dict[str, E.Param] = {}
    for name, ex in exprs.items():
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
                elif node.value is None:
                    raise CompileError(f"{name}: parameter {node.name!r} has no value")
        for f, wrt in calculus.field_derivatives(ex):
            node = E.Derivative(f, wrt) if wrt else f
            leaves[node] = (field_pos[f], multi_index(wrt, coords))
        expanded[name] = ex
    alphas = tuple(sorted({a for _, a in leaves.values()}, key=lambda a: (sum(a), a[::-1])))
    return Plan(coords, fields, inputs, spatial, expanded, alphas, leaves, tuple(learnable))


def initial_pde_params(exprs: Mapping[str, E.Expr] | Sequence[E.Expr]) -> dict:
    """``{name: initial value}`` of the learnable parameters in ``exprs`` (for ``params["pde"]``)."""
    items = exprs.values() if isinstance(exprs, Mapping) else exprs
    out: dict = {}
    for ex in items:
        for p in calculus.params_of(E.as_expr(ex)):
            if p.learnable:
                out[p.name] = jnp.asarray(p.value, dtype=float)
    return out


def compile_terms(exprs: Mapping[str, E.Expr], *, coords, fields=(), apply: Callable | None = None,
                  spatial=None, inputs=(), strategy: str = "auto") -> Callable:
    """Compile named expressions to ``fn(params, points[N, d], extra=None) -> {name: values[N]}``.

    ``params = {"net": net_params, "pde": {learnable_name: scalar}}``;
    ``apply(net_params, x[N, d]) -> [N, len(fields)]`` (``[N]`` for one
    field).  Fixed parameters are constants; learnable ones
    (``param(..., learnable=True)``) are read from ``params["pde"]``.
    ``inputs`` are extra per-point symbols (e.g. ``Coord("n_x")``) given as
    ``extra[N, len(inputs)]``, never differentiated.  Every field derivative
    that any expression needs is computed once, by ``strategy`` (see
    :func:`pinn.compile.derivatives.derivatives`).  Expressions without
    fields (sources, exact solutions and their symbolic derivatives) need no
    network: ``apply`` may then be None.
    """
    if strategy not in STRATEGIES:
        raise CompileError(
            f"unknown derivative strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}"
        )
    plan = plan_terms(exprs, coords=coords, fields=fields, spatial=spatial, inputs=inputs)
    if plan.needs_network and apply is None:
        used = sorted({plan.fields[i].name for i, _ in plan.leaves.values()})
        raise CompileError(f"the expressions use the fields {used}: pass the network as apply=")
    d, n_fields = len(plan.coords), len(plan.fields)
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
        if plan.learnable:
            pde = params.get("pde") if isinstance(params, Mapping) else None
            missing = [k for k in plan.learnable if pde is None or k not in pde]
            if missing:
                raise KeyError(
                    f"learnable parameter(s) {missing} not found in params['pde']; pass "
                    "params={'net': ..., 'pde': initial_pde_params(exprs)}"
                )
            for p in learnable_nodes:
                env[p] = pde[p.name]
        if plan.needs_network:
            if not isinstance(params, Mapping) or "net" not in params:
                raise KeyError("params must be a dict with the network parameters under 'net'")
            derivs = derivatives(apply, params["net"], points, plan.alphas, strategy=strategy)
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
