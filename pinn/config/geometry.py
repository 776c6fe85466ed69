"""``domain:`` -> the geometry: shapes (with expressions of the parameters in their sizes),
CSG, renamed parts, the time interval.

A size or position that uses a ranged parameter (``radius: r`` with ``params: {r: {range:
[0.1, 0.3]}}``) stays an expression: the shape is a family, one per value
(:mod:`pinn.geometry.parametric`), for the kinds in :data:`PARAMETRIC_KINDS` and their CSG;
a hole whose range takes it across the boundary of what it is cut from at some values and
not at others is refused at its path."""

from __future__ import annotations

import functools

from pinn.config import schema as S
from pinn.config.context import Context
from pinn.config.errors import ConfigError, Issue, suggest
from pinn.config.registry import CSG, shapes

__all__ = ["build_shape", "build_domain", "PARAMETRIC_KINDS"]

#: the shapes whose numbers may be expressions of ranged parameters
PARAMETRIC_KINDS = ("interval", "rectangle", "box", "hypercube", "disk", "ball", "hyperball",
                    "annulus")


def build_shape(ctx: Context, s: S.ShapeSpec, path):
    """The geometry object for a shape spec; the constructor's ``ValueError`` (its own
    checks) becomes a ConfigError at ``path.<kind>``."""
    kind, a = s.kind, s.args
    kpath = tuple(path) + (kind,)
    parts = [build_shape(ctx, child, kpath + (i,)) for i, child in enumerate(a)] \
        if kind in CSG else None
    if parts is None:
        a = _evaluated(ctx, a, kpath, kind)
    try:
        shape = functools.reduce(CSG[kind], parts) if parts else shapes()[kind](a)
    except (ValueError, TypeError) as exc:
        raise ctx.error(kpath, str(exc)) from None
    if kind == "difference" and shape.params:
        for i, hole in enumerate(parts[1:], start=1):
            _check_hole(ctx, parts[0], hole, kpath + (i,))
    if kind == "annulus" and shape.params:
        _check_hole(ctx, shape.a, shape.b, kpath + ("inner",))
    if not s.parts:
        return shape
    try:
        return shape.rename(dict(s.parts))
    except (ValueError, TypeError) as exc:
        where = tuple(path) + ("parts",)
        old = next((k for k in s.parts if k not in shape.boundary_parts), None)
        if old is None:
            raise ctx.error(where, str(exc)) from None
        raise ConfigError(Issue(
            f"no boundary part '{old}'{suggest(old, shape.boundary_parts)} to rename; this "
            f"shape's parts are: {', '.join(shape.boundary_parts)}", where,
            ctx.source.location(where + (old,)))) from None


def _bounds(ctx: Context, value, path, what: str, kind: str | None = None):
    """Numbers, with the expressions among them (``"2*pi"``, ``"L/2"``) evaluated (nested
    lists too); an expression of ranged parameters stays one where ``kind`` takes it."""
    if isinstance(value, list):
        return [_bounds(ctx, v, tuple(path) + (i,), what, kind) for i, v in enumerate(value)]
    if isinstance(value, str):
        from pinn.dsl.calculus import params_of

        ex = ctx.expr(value, path, what=what)
        ctx.no_fields(ex, path, f"{what} must be a number or an expression of parameters; "
                      "it uses {names}", coords=True)
        learnable = sorted({p.name for p in params_of(ex) if p.learnable})
        if learnable:
            raise ctx.error(path, f"{what} uses the learnable parameter(s) "
                            f"{', '.join(learnable)}; a shape's numbers may use fixed "
                            "parameters, or ranged ones ({range: [lo, hi]}) in "
                            f"{', '.join(PARAMETRIC_KINDS)}")
        ranged = sorted({p.name for p in params_of(ex) if p.range is not None})
        if not ranged:
            return ctx.number(value, path, what=what)
        if kind not in PARAMETRIC_KINDS:
            where = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            raise ctx.error(path, f"{what} depends on the ranged parameter(s) "
                            f"{', '.join(ranged)}, which {where} cannot follow; sizes and "
                            "positions that follow ranged parameters are supported in "
                            f"{', '.join(PARAMETRIC_KINDS)} (and their union, difference "
                            "and intersection)")
        return ex
    return value


def _evaluated(ctx: Context, args, path, kind: str):
    """A shape's options with the expressions in its coordinates and sizes evaluated (those
    of ranged parameters kept: :data:`PARAMETRIC_KINDS`)."""
    if args is None:
        return args
    update = {name: _bounds(ctx, getattr(args, name), tuple(path) + (name,), f"{kind} {name}",
                            kind)
              for name in type(args).model_fields
              if name != "cut"}  # l_shape's cut is a word, not a number
    return args.model_copy(update=update)


def _check_hole(ctx: Context, plate, hole, path) -> None:
    """A shape cut from ``plate`` whose parameters take it across ``plate``'s boundary at
    some values and not at others (a hole that leaves the plate, a notch that closes)."""
    from pinn.geometry.parametric import crossings, merge_params

    found = crossings(plate, hole)
    if found is None:
        return
    out, inside = found
    ranges = ", ".join(f"{p.name} in {list(p.range)}"
                       for p in merge_params(plate.params, hole.params))

    def show(v):
        return ", ".join(f"{k}={x:.4g}" for k, x in v.items())

    raise ctx.error(path, f"with {ranges} this shape crosses the boundary of the shape it is "
                    f"cut from at {show(out)} but not at {show(inside)}; narrow the range so "
                    "that it stays inside (or stays across) for every value")


def build_domain(ctx: Context, d: S.DomainSpec):
    """The spatial shape, times the time interval for an evolution problem."""
    shape = build_shape(ctx, d.shape, ("domain", "space") if d.space is not None else ("domain",))
    if d.time is None:
        return shape
    import pinn.geometry as G

    time = _bounds(ctx, list(d.time), ("domain", "time"), "time", "time interval")
    try:
        return shape * G.TimeInterval(*time)
    except ValueError as exc:
        raise ctx.error(("domain", "time"), str(exc)) from None
