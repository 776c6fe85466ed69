"""``domain:`` -> the geometry: shapes (with expressions of the parameters in their sizes),
CSG, renamed parts, the time interval."""

from __future__ import annotations

import functools

from pinn.config import schema as S
from pinn.config.context import Context
from pinn.config.errors import ConfigError, Issue, suggest
from pinn.config.registry import CSG, shapes

__all__ = ["build_shape", "build_domain"]


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


def _bounds(ctx: Context, value, path, what: str):
    """Numbers, with the expressions among them (``"2*pi"``, ``"L/2"``) evaluated (nested
    lists too)."""
    if isinstance(value, list):
        return [_bounds(ctx, v, tuple(path) + (i,), what) for i, v in enumerate(value)]
    if isinstance(value, str):
        return ctx.number(value, path, what=what)
    return value


def _evaluated(ctx: Context, args, path, kind: str):
    """A shape's options with the expressions in its coordinates and sizes evaluated."""
    if args is None:
        return args
    update = {name: _bounds(ctx, getattr(args, name), tuple(path) + (name,), f"{kind} {name}")
              for name in type(args).model_fields
              if name != "cut"}  # l_shape's cut is a word, not a number
    return args.model_copy(update=update)


def build_domain(ctx: Context, d: S.DomainSpec):
    """The spatial shape, times the time interval for an evolution problem."""
    shape = build_shape(ctx, d.shape, ("domain", "space") if d.space is not None else ("domain",))
    if d.time is None:
        return shape
    import pinn.geometry as G

    time = _bounds(ctx, list(d.time), ("domain", "time"), "time")
    try:
        return shape * G.TimeInterval(*time)
    except ValueError as exc:
        raise ctx.error(("domain", "time"), str(exc)) from None
