"""``conditions:`` -> :mod:`pinn.conditions` objects, each error at its YAML path."""

from __future__ import annotations

from collections.abc import Mapping

from pinn import conditions as C
from pinn.config import schema as S
from pinn.config.context import Context
from pinn.config.data import data_condition, file_table
from pinn.config.errors import ConfigError, suggest
from pinn.dsl import expr as E

__all__ = ["build_condition", "CONDITIONS"]


def _on(ctx: Context, c: S.ConditionSpec, path, domain, default="boundary"):
    on = c.on
    if on is None:
        return default
    known = ("boundary",) + tuple(domain.boundary_parts)
    ppath = tuple(path) + ("on",)

    def check(name: str, p):
        if name not in known:
            raise ctx.error(p, f"unknown boundary part '{name}'{suggest(name, known)}; this "
                            f"domain's parts are: {', '.join(known)} (or write a predicate such "
                            "as \"x == 0\")")
        return name

    if isinstance(on, list):
        return tuple(check(n, ppath + (i,)) for i, n in enumerate(on))
    if on in known or (default == "interior" and on == "interior"):
        return on
    if all(p.isidentifier() for p in on.split(".")) and on not in ctx.namespace:
        return check(on, ppath)
    pred = ctx.expr(on, ppath, what="predicate")
    if not isinstance(pred, (E.Compare, E.And, E.Or, E.Not)):
        raise ctx.error(ppath, f"'{on}' is neither a boundary part nor a condition; write a part "
                        f"name ({', '.join(known)}) or a comparison such as \"x == 0\"")
    ctx.no_fields(pred, ppath, "a predicate selects points by their coordinates; it cannot use "
                  "fields ({names})")
    return pred


def _values(ctx: Context, mapping: Mapping, path, what: str):
    out = {}
    for fname, v in mapping.items():
        p = tuple(path) + (fname,)
        out[ctx.field(fname, p)] = ctx.expr(v, p, what=what)
    return out


def _dirichlet(ctx, c, path, domain):
    return C.Dirichlet(_values(ctx, c.dirichlet, path + ("dirichlet",), "boundary value"),
                       on=_on(ctx, c, path, domain), weight=c.weight, hard=c.hard)


def _neumann(ctx, c, path, domain):
    ((f, v),) = _values(ctx, c.neumann, path + ("neumann",), "normal derivative").items()
    return C.Neumann(f, v, on=_on(ctx, c, path, domain), weight=c.weight)


def _robin(ctx, c, path, domain):
    ((fname, r),) = c.robin.items()
    p = path + ("robin", fname)
    return C.Robin(ctx.field(fname, p), ctx.expr(r.a, p + ("a",)), ctx.expr(r.b, p + ("b",)),
                   ctx.expr(r.value, p + ("value",)), on=_on(ctx, c, path, domain),
                   weight=c.weight)


def _periodic(ctx, c, path, domain):
    a, kpath = c.periodic, path + ("periodic",)
    fields = ([ctx.field(n, kpath + ("fields", i)) for i, n in enumerate(a.fields)]
              if a.fields else list(ctx.fields))
    parts = domain.boundary_parts
    for i, part in enumerate(a.pair):
        if part not in parts:
            raise ctx.error(kpath + ("pair", i), f"unknown boundary part '{part}'"
                            f"{suggest(part, parts)}; this domain's parts are: {', '.join(parts)}")
    return C.Periodic(tuple(fields), tuple(a.pair), order=a.order, weight=c.weight,
                      hard=bool(c.hard))


def _initial(ctx, c, path, domain):
    values = _values(ctx, {k: v for k, v in c.initial.items()
                           if not isinstance(v, S.FileValues)}, path + ("initial",),
                     "initial value")
    for fname, v in c.initial.items():  # from a data file: a table over the space
        if isinstance(v, S.FileValues):
            p = path + ("initial", fname)
            values[ctx.field(fname, p)] = file_table(ctx, None, f"{fname}0", v, p,
                                                  over=ctx.coords[:-1])
    values = {f: values[f] for f in (ctx.field(n, path + ("initial", n)) for n in c.initial)}
    rates = _values(ctx, c.rate, path + ("rate",), "initial rate") if c.rate else None
    return C.Initial(values, rate=rates, weight=c.weight,
                     hard=None if c.hard is None else bool(c.hard))


def _constraint(ctx, c, path, domain):
    ex = ctx.expr(c.constraint, path + ("constraint",), what="constraint", allow_equals=True)
    return C.Constraint(ex, on=_on(ctx, c, path, domain, default="interior"), weight=c.weight)


#: condition kind -> ``builder(ctx, spec, path, domain)`` (``data`` needs the truth too)
CONDITIONS = {"dirichlet": _dirichlet, "neumann": _neumann, "robin": _robin,
              "periodic": _periodic, "initial": _initial, "constraint": _constraint}


def build_condition(ctx: Context, spec: S.ProblemSpec, name: str, c: S.ConditionSpec, domain,
                    exact=None, reference=None):
    """The condition ``conditions.<name>`` (``exact``/``reference``: what ``data:
    {generate: ...}`` may sample)."""
    path = ("conditions", name)
    kind = c.kind
    if c.rate is not None and kind != "initial":
        raise ctx.error(path + ("rate",), "'rate' belongs to an initial condition")
    if c.hard and kind not in ("dirichlet", "periodic", "initial"):
        raise ctx.error(path + ("hard",), f"a {kind} condition cannot be hard; hard constraints "
                        "exist for dirichlet, periodic and initial conditions")
    if c.on is not None and kind in ("periodic", "initial", "data"):
        raise ctx.error(path + ("on",), f"'on' does not apply to a {kind} condition"
                        + (" (use pair: [a, b])" if kind == "periodic" else ""))
    if c.noise is not None and kind != "data":
        raise ctx.error(path + ("noise",), "'noise' belongs to a data condition")
    if kind == "initial" and spec.domain.time is None:
        raise ctx.error(path + (kind,), "an initial condition needs a time interval: add "
                        "domain.time: [t0, t1]")
    try:
        if kind == "data":
            return data_condition(ctx, c, path, domain, exact or {}, reference)
        return CONDITIONS[kind](ctx, c, path, domain)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ctx.error(path + (kind,), str(exc)) from None
