"""``quantities:`` -> :mod:`pinn.qoi` objects, each error at its YAML path."""

from __future__ import annotations

from pinn.config import schema as S
from pinn.config.context import Context
from pinn.config.errors import ConfigError, suggest
from pinn.dsl import expr as E

__all__ = ["build_quantities"]


def _on(ctx: Context, q: S.QuantitySpec, path, domain):
    """``on``: ``interior`` (the default), ``boundary``, part names, or a predicate (a region
    of the domain)."""
    on = q.on
    if on is None:
        return "interior"
    known = ("interior", "boundary") + tuple(domain.boundary_parts)
    ppath = tuple(path) + ("on",)

    def check(name: str, p):
        if name not in known[1:]:
            raise ctx.error(p, f"unknown boundary part '{name}'{suggest(name, known)}; this "
                            f"domain's parts are: {', '.join(known[1:])} (a list names parts; "
                            "interior is a region of its own)")
        return name

    if isinstance(on, list):
        return tuple(check(n, ppath + (i,)) for i, n in enumerate(on))
    if on in known:
        return on
    if all(p.isidentifier() for p in on.split(".")) and on not in ctx.namespace:
        raise ctx.error(ppath, f"unknown region '{on}'{suggest(on, known)}; write one of: "
                        f"{', '.join(known)}, or a predicate such as \"x < 0.5\"")
    return _predicate(ctx, on, ppath)


def _predicate(ctx: Context, text: str, path) -> E.Expr:
    pred = ctx.expr(text, path, what="predicate")
    if not isinstance(pred, (E.Compare, E.And, E.Or, E.Not)):
        raise ctx.error(path, f"'{text}' is not a condition; write a comparison such as "
                        "\"x < 0.5\" or \"x == 0\"")
    ctx.no_fields(pred, path, "a predicate selects points by their coordinates; it cannot use "
                  "fields ({names})")
    return pred


def build_quantities(ctx: Context, spec: S.ProblemSpec, domain) -> dict:
    """``{name: pinn.qoi quantity}`` of ``spec.quantities`` (what the problem then checks
    against its fields, parameters and domain: :meth:`pinn.qoi.Quantity.validate`)."""
    from pinn import qoi

    out = {}
    for name, q in spec.quantities.items():
        path = ("quantities", name)
        if name in {c.name for c in ctx.coords} | {f.name for f in ctx.fields}:
            raise ctx.error(path, f"'{name}' is a coordinate or field; name the quantity "
                            "otherwise")
        kind = q.kind
        ex = ctx.expr(q.args, path + (kind,), what="quantity")
        try:
            if kind == "value":
                out[name] = qoi.Value(ex, at=tuple(q.at))
                continue
            where = (None if q.where is None else
                     _predicate(ctx, q.where, path + ("where",)))
            options = {} if q.points is None else {"points": q.points}
            out[name] = qoi.KINDS[kind](ex, on=_on(ctx, q, path, domain), where=where,
                                        time=q.time, **options)
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ctx.error(path, str(exc)) from None
    return out
