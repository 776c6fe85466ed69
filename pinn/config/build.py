"""From a validated :class:`~pinn.config.schema.ProblemSpec` to library objects.

This is the one place where strings become objects (expressions, shapes,
conditions, networks, optimisers, samplers).  Every error names the file, the
line and the YAML path of the value that caused it; errors inside expressions
add the column.  Library modules are imported here, lazily, so that reading
and checking a file stays fast.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinn.config import schema as S
from pinn.config.errors import ConfigError, Issue, suggest
from pinn.config.yamlio import Source
from pinn.dsl import expr as E

RESERVED = {"pi", "e", "D", "grad", "div", "laplacian", "vector", "dot", "and", "or", "not",
            "true", "false"} | set(E.FUNCTIONS)
_SPATIAL = ("x", "y", "z")


class _Ctx:
    """What expressions may refer to, and where to report errors."""

    def __init__(self, source: Source, base_dir: str):
        self.source = source
        self.base_dir = base_dir
        self.namespace: dict[str, E.Expr] = {}
        self.coords: tuple[E.Coord, ...] = ()
        self.fields: tuple[E.Field, ...] = ()
        self.params: dict[str, E.Param] = {}
        self.hint = ""  # added to "unknown name" errors

    def error(self, path, message: str, column: int | None = None) -> ConfigError:
        path = tuple(path)
        loc = (self.source.expression_location(path, column) if column is not None
               else self.source.location(path))
        return ConfigError(Issue(message, path, loc))

    # -- expressions -----------------------------------------------------
    def expr(self, value, path, *, what: str = "expression", allow_equals: bool = False) -> E.Expr:
        """A number or a string of the PDE language (``lhs = rhs`` where allowed)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return E.as_expr(value)
        text = str(value)
        if allow_equals:
            at = _equals_at(text)
            if at is not None:
                lhs = self._parse(text[:at], path, 0, what)
                rhs = self._parse(text[at + 1:], path, at + 1, what)
                from pinn.dsl.calculus import sub

                return sub(lhs, rhs)
        elif _equals_at(text) is not None:
            at = _equals_at(text)
            raise self.error(path, f"'=' is not allowed in this {what}; write a value, or "
                             "'==' for a comparison", at + 1)
        return self._parse(text, path, 0, what)

    def _parse(self, text: str, path, offset: int, what: str) -> E.Expr:
        from pinn.dsl.parser import ParseError, parse

        try:
            return parse(text, self.namespace)
        except ParseError as exc:
            col = getattr(exc, "column", None)
            msg = _parse_message(exc)
            if msg.startswith("unknown name") and self.hint:
                msg += f" ({self.hint})"
            col_abs = None if col is None else col + offset
            where = f" (column {col_abs} of the {what})" if col_abs is not None else ""
            raise self.error(path, msg + where, col_abs) from None

    def number(self, value, path, *, what="value") -> float:
        """A number, or an expression of the parameters (``"0.01/pi"``) evaluated now."""
        ex = self.expr(value, path, what=what)
        bad = [n.name for n in _leaves(ex) if isinstance(n, (E.Coord, E.Field))]
        if bad:
            raise self.error(path, f"{what} must be a number or an expression of parameters; "
                             f"it uses {', '.join(sorted(set(bad)))}")
        try:
            v = numeric(ex)
        except (ValueError, ZeroDivisionError, OverflowError) as exc:
            raise self.error(path, f"cannot evaluate {what} {ex}: {exc}") from None
        if not math.isfinite(v):
            raise self.error(path, f"{what} {ex} is not finite ({v})")
        return v

    def field(self, name: str, path, *, where: str = "fields") -> E.Field:
        """The declared field ``name``; ``path`` is the key's path (the error names its parent)."""
        for f in self.fields:
            if f.name == name:
                return f
        names = ", ".join(f.name for f in self.fields)
        path = tuple(path)
        hint = suggest(name, [f.name for f in self.fields])
        raise ConfigError(Issue(f"unknown field '{name}'{hint} ({where}: {names})", path[:-1],
                                self.source.location(path)))

    def coord(self, name: str, path) -> E.Coord:
        for c in self.coords:
            if c.name == name:
                return c
        raise self.error(path, f"unknown coordinate '{name}'"
                         f"{suggest(name, [c.name for c in self.coords])} (coords: "
                         f"{', '.join(c.name for c in self.coords)})")


def _parse_message(exc) -> str:
    msg = getattr(exc, "reason", None) or str(exc)
    return msg.splitlines()[0] if msg else "invalid expression"


def _equals_at(text: str) -> int | None:
    """The index of a single top-level ``=`` (not ``==``, ``<=``, ``>=``, ``!=``)."""
    found = []
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "=" and depth == 0:
            prev = text[i - 1] if i else ""
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if prev in "<>!=" or nxt == "=":
                continue
            found.append(i)
    return found[0] if len(found) == 1 else None


def _leaves(e: E.Expr):
    from pinn.dsl.calculus import walk

    return [n for n in walk(e) if not n.children()]


_MATH = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log,
    "sqrt": math.sqrt, "tanh": math.tanh, "sinh": math.sinh, "cosh": math.cosh, "abs": abs,
    "arctan": math.atan, "arcsin": math.asin, "arccos": math.acos,
    "sign": lambda a: float((a > 0) - (a < 0)),
    "heaviside": lambda a: 1.0 if a > 0 else 0.0 if a < 0 else 0.5,
    "min": min, "max": max,
}


def numeric(e: E.Expr) -> float:
    """Evaluate a coordinate- and field-free expression with Python floats (no JAX)."""
    t = type(e)
    if t is E.Number or t is E.Constant:
        return float(e.value)
    if t is E.Param:
        if e.value is None:
            raise ValueError(f"parameter {e.name} has no value")
        return float(e.value)
    if t is E.Neg:
        return -numeric(e.arg)
    if t in (E.Add, E.Sub, E.Mul, E.Div, E.Pow):
        a, b = numeric(e.left), numeric(e.right)
        if t is E.Add:
            return a + b
        if t is E.Sub:
            return a - b
        if t is E.Mul:
            return a * b
        if t is E.Div:
            if b == 0:
                raise ZeroDivisionError("division by zero")
            return a / b
        out = a**b
        if isinstance(out, complex):
            raise ValueError(f"{a}^{b} is not a real number")
        return float(out)
    if t is E.Call:
        args = [numeric(a) for a in e.args]
        if e.func == "where":
            return args[1] if args[0] else args[2]
        return float(_MATH[e.func](*args))
    if t is E.Compare:
        a, b = numeric(e.left), numeric(e.right)
        return float({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                      "!=": a != b}[e.op])
    raise ValueError(f"{e} is not a plain number")


# ---------------------------------------------------------------------------
# the result


@dataclass
class Built:
    """Everything a run needs, built from one problem file."""

    spec: S.ProblemSpec
    source: Source
    base_dir: str
    problem: Any
    coords: tuple
    fields: tuple
    params: dict
    name: str
    extras: dict = field(default_factory=dict)

    @property
    def precision(self) -> int:
        return self.spec.training.precision

    @property
    def seed(self) -> int:
        return self.spec.training.seed

    def model(self):
        return build_model(self)

    def training(self):
        return build_training(self)

    def resolved(self) -> dict:
        """The configuration with every default filled in (what the run used)."""
        return resolved_dict(self.spec)


def resolved_dict(spec: S.ProblemSpec) -> dict:
    return spec.model_dump(mode="json", exclude_none=True, by_alias=True)


def build(spec: S.ProblemSpec, source: Source, base_dir: str = ".") -> Built:
    """The :class:`~pinn.problem.Problem` (and the rest) described by ``spec``."""
    ctx = _Ctx(source, base_dir)
    params = _params(ctx, spec)
    shape_spec = spec.domain.shape
    space_path = ("domain", "space") if spec.domain.space is not None else ("domain",)
    dim = shape_dim(ctx, shape_spec, space_path)
    has_time = spec.domain.time is not None
    _coords_fields(ctx, spec, dim, has_time)
    _definitions(ctx, spec)
    domain = build_domain(ctx, spec)
    eqs = {}
    for name, text in spec.equations.items():
        eqs[name] = ctx.expr(text, ("equations", name), what="equation", allow_equals=True)
    clash = set(spec.equations) & set(spec.conditions)
    if clash:
        n = sorted(clash)[0]
        raise ctx.error(("conditions", n), f"'{n}' names both an equation and a condition; "
                        "rename one")
    exact = {}
    for fname, text in (spec.exact or {}).items():
        f = ctx.field(fname, ("exact", fname))
        exact[f] = ctx.expr(text, ("exact", fname), what="exact solution")
        bad = [n.name for n in _leaves(exact[f]) if isinstance(n, E.Field)]
        if bad:
            raise ctx.error(("exact", fname), f"an exact solution cannot use fields "
                            f"({', '.join(sorted(set(bad)))}); write it in the coordinates")
    reference = build_reference(ctx, spec, params) if spec.reference is not None else None
    problem_probe = _ProblemProbe(domain, ctx.coords, exact, reference)
    conds = {}
    for name, c in spec.conditions.items():
        conds[name] = build_condition(ctx, spec, name, c, domain, problem_probe)

    from pinn.problem import Problem, ProblemError

    try:
        problem = Problem(domain=domain, equations=eqs, conditions=conds, coords=ctx.coords,
                          fields=ctx.fields, exact=exact or None, reference=reference,
                          name=spec.name or _stem(source.file))
    except ProblemError as exc:
        raise _problem_error(ctx, str(exc)) from None
    if isinstance(reference, FEMReference):
        reference.problem = problem
    for pname, p in params.items():
        if p.learnable and p not in problem.params:
            raise ctx.error(("params", pname), f"learnable parameter '{pname}' is not used by "
                            "any equation or condition")
    return Built(spec=spec, source=source, base_dir=base_dir, problem=problem,
                 coords=ctx.coords, fields=ctx.fields, params=params,
                 name=spec.name or _stem(source.file))


def _stem(file: str | None) -> str:
    if not file:
        return "problem"
    return os.path.splitext(os.path.basename(file))[0]


def _problem_error(ctx: _Ctx, msg: str) -> ConfigError:
    """Map a ProblemError (``equations.heat: ...``) to the YAML place it names."""
    head, sep, rest = msg.partition(": ")
    if sep and head.split(".")[0] in ("equations", "conditions", "exact", "params"):
        parts = head.replace("[", ".").replace("]", "").split(".")
        path = [p for p in parts if p and not p.isdigit()]
        return ctx.error(tuple(path[:2]), rest)
    return ctx.error((), msg)


# ---------------------------------------------------------------------------
# parameters, coordinates, fields


def _params(ctx: _Ctx, spec: S.ProblemSpec) -> dict[str, E.Param]:
    from pinn.dsl.builders import param

    out: dict[str, E.Param] = {}
    names = list(spec.params)
    for i, (name, p) in enumerate(spec.params.items()):
        path = ("params", name)
        if name in RESERVED:
            raise ctx.error(path, f"'{name}' is a built-in name of the PDE language; choose "
                            "another parameter name")
        value = p.value
        if isinstance(value, str):
            later = [n for n in names[i + 1:] if _mentions(value, n)]
            if later or _mentions(value, name):
                who = name if _mentions(value, name) else later[0]
                raise ctx.error(path, f"'{name}' uses '{who}', which is "
                                f"{'itself' if who == name else 'defined later'}; a parameter "
                                "may use only the parameters above it")
        v = ctx.number(value, path if not isinstance(p.value, str) else path,
                       what=f"parameter {name}")
        out[name] = param(name, v, learnable=p.learnable)
        ctx.namespace[name] = out[name]
    ctx.params = out
    return out


def _mentions(text: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def _coords_fields(ctx: _Ctx, spec: S.ProblemSpec, dim: int, has_time: bool) -> None:
    want = dim + (1 if has_time else 0)
    if spec.coords is None:
        if dim > 3:
            raise ctx.error(("domain",), f"a {dim}-D domain needs explicit coords: [...]")
        names = list(_SPATIAL[:dim]) + (["t"] if has_time else [])
    else:
        names = list(spec.coords)
        if len(names) != want:
            raise ctx.error(("coords",), f"{len(names)} coordinate(s) ({', '.join(names)}) for a "
                            f"domain with {dim} space dimension(s){' and time' if has_time else ''}"
                            f"; give {want}")
    fields = list(spec.fields)
    seen: dict[str, str] = {n: "params" for n in ctx.params}
    for kind, items in (("coords", names), ("fields", fields)):
        for i, n in enumerate(items):
            path = (kind, i) if spec.coords is not None or kind == "fields" else ("domain",)
            if n in RESERVED:
                raise ctx.error(path, f"'{n}' is a built-in name of the PDE language; choose "
                                f"another name for this {kind[:-1]}")
            if n in seen:
                raise ctx.error(path, f"'{n}' is declared twice (in {seen[n]} and {kind}); "
                                "every name may have one meaning")
            seen[n] = kind
    if "fields" not in spec.model_fields_set:
        ctx.hint = "fields default to [u]; declare others with fields: [u, v, ...]"
    ctx.coords = tuple(E.Coord(n) for n in names)
    ctx.fields = tuple(E.Field(n) for n in fields)
    for c in ctx.coords:
        ctx.namespace[c.name] = c
    for f in ctx.fields:
        ctx.namespace[f.name] = f


def _definitions(ctx: _Ctx, spec: S.ProblemSpec) -> None:
    for name, text in spec.define.items():
        path = ("define", name)
        if name in RESERVED:
            raise ctx.error(path, f"'{name}' is a built-in name of the PDE language; choose "
                            "another name")
        if name in ctx.namespace:
            raise ctx.error(path, f"'{name}' is already declared (a coordinate, field or "
                            "parameter); choose another name")
        ex = ctx.expr(text, path, what="definition")
        ctx.namespace[name] = ex


# ---------------------------------------------------------------------------
# geometry


def shape_dim(ctx: _Ctx, s: S.ShapeSpec, path) -> int:
    kind, a = s.kind, s.args
    path = tuple(path) + (kind,)

    def need(vec, n, key):
        if len(vec) != n:
            raise ctx.error(path + (key,), f"{kind} needs {n} numbers here, got {len(vec)}")

    if kind == "interval":
        if not a.min < a.max:
            raise ctx.error(path, f"an interval needs min < max, got [{a.min}, {a.max}]")
        return 1
    if kind in ("rectangle", "box"):
        n = 2 if kind == "rectangle" else 3
        need(a.min, n, "min")
        need(a.max, n, "max")
        if not all(lo < hi for lo, hi in zip(a.min, a.max, strict=True)):
            raise ctx.error(path, f"a {kind} needs min < max in every coordinate, got "
                            f"min {a.min}, max {a.max}")
        return n
    if kind in ("disk", "annulus"):
        need(a.center, 2, "center")
        if kind == "annulus" and not a.inner < a.outer:
            raise ctx.error(path, f"an annulus needs inner < outer, got {a.inner}, {a.outer}")
        return 2
    if kind == "ball":
        need(a.center, 3, "center")
        return 3
    if kind == "ellipse":
        need(a.center, 2, "center")
        need(a.semi_axes, 2, "semi_axes")
        if not all(v > 0 for v in a.semi_axes):
            raise ctx.error(path + ("semi_axes",), "semi-axes must be positive")
        return 2
    if kind in ("triangle", "polygon"):
        n = 3 if kind == "triangle" else None
        if n is not None and len(a.vertices) != 3:
            raise ctx.error(path, f"a triangle has 3 vertices, got {len(a.vertices)}")
        if len(a.vertices) < 3:
            raise ctx.error(path, f"a polygon needs at least 3 vertices, got {len(a.vertices)}")
        for i, v in enumerate(a.vertices):
            if len(v) != 2:
                raise ctx.error(path + ("vertices", i), f"a vertex has 2 coordinates, got {len(v)}")
        return 2
    if kind == "l_shape":
        need(a.min, 2, "min")
        need(a.max, 2, "max")
        return 2
    dims = [shape_dim(ctx, child, path + (i,)) for i, child in enumerate(a)]
    if len(set(dims)) != 1:
        raise ctx.error(path, f"the shapes of a {kind} must have the same dimension, got {dims}")
    return dims[0]


def build_shape(ctx: _Ctx, s: S.ShapeSpec, path):
    """The geometry object for a shape spec (pinn.geometry, imported lazily)."""
    shape = _build_shape(ctx, s, path)
    if s.parts:
        try:
            shape = shape.rename(dict(s.parts))
        except (ValueError, TypeError) as exc:
            old = next((k for k in s.parts if k not in shape.boundary_parts), None)
            where = tuple(path) + ("parts",)
            if old is not None:
                raise ConfigError(Issue(
                    f"no boundary part '{old}'{suggest(old, shape.boundary_parts)} to rename; "
                    f"this shape's parts are: {', '.join(shape.boundary_parts)}", where,
                    ctx.source.location(where + (old,)))) from None
            raise ctx.error(where, str(exc)) from None
    return shape


def _build_shape(ctx: _Ctx, s: S.ShapeSpec, path):
    import pinn.geometry as G

    kind, a = s.kind, s.args
    path = tuple(path) + (kind,)
    try:
        if kind == "interval":
            return G.Interval(a.min, a.max)
        if kind == "rectangle":
            return G.Rectangle(tuple(a.min), tuple(a.max))
        if kind == "box":
            return G.Box(tuple(a.min), tuple(a.max))
        if kind == "disk":
            return G.Disk(tuple(a.center), a.radius)
        if kind == "ball":
            return G.Ball(tuple(a.center), a.radius)
        if kind == "annulus":
            if hasattr(G, "Annulus"):
                return G.Annulus(tuple(a.center), a.inner, a.outer)
            return G.Disk(tuple(a.center), a.outer) - G.Disk(tuple(a.center), a.inner)
        if kind == "ellipse":
            return G.Ellipse(tuple(a.center), tuple(a.semi_axes))
        if kind == "triangle":
            return G.Triangle(*[tuple(v) for v in a.vertices])
        if kind == "polygon":
            return G.Polygon([tuple(v) for v in a.vertices])
        if kind == "l_shape":
            return _l_shape(G, a)
        parts = [build_shape(ctx, child, path + (i,)) for i, child in enumerate(a)]
        out = parts[0]
        for p in parts[1:]:
            out = out | p if kind == "union" else out - p if kind == "difference" else out & p
        return out
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ctx.error(path, str(exc)) from None


def _l_shape(G, a):
    if hasattr(G, "LShape"):
        try:
            return G.LShape(tuple(a.min), tuple(a.max), cut=a.cut)
        except TypeError:
            pass
    (x0, y0), (x1, y1) = a.min, a.max
    xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
    corners = {
        "lower_right": [(x0, y0), (xm, y0), (xm, ym), (x1, ym), (x1, y1), (x0, y1)],
        "lower_left": [(xm, y0), (x1, y0), (x1, y1), (x0, y1), (x0, ym), (xm, ym)],
        "upper_right": [(x0, y0), (x1, y0), (x1, ym), (xm, ym), (xm, y1), (x0, y1)],
        "upper_left": [(x0, y0), (x1, y0), (x1, y1), (xm, y1), (xm, ym), (x0, ym)],
    }
    return G.Polygon(corners[a.cut])


def build_domain(ctx: _Ctx, spec: S.ProblemSpec):
    d = spec.domain
    path = ("domain", "space") if d.space is not None else ("domain",)
    shape = build_shape(ctx, d.shape, path)
    if d.time is None:
        return shape
    t0, t1 = d.time
    if not t0 < t1:
        raise ctx.error(("domain", "time"), f"time is [t0, t1] with t0 < t1, got [{t0}, {t1}]")
    import pinn.geometry as G

    return shape * G.TimeInterval(t0, t1)


def boundary_parts(domain) -> tuple[str, ...] | None:
    space = getattr(domain, "space", domain)
    parts = getattr(space, "boundary_parts", None)
    return tuple(parts) if parts is not None else None


# ---------------------------------------------------------------------------
# conditions


class _ProblemProbe:
    """What data generation needs before the Problem exists."""

    def __init__(self, domain, coords, exact, reference):
        self.domain, self.coords, self.exact, self.reference = domain, coords, exact, reference


def _on(ctx: _Ctx, c: S.ConditionSpec, path, domain, default="boundary"):
    on = c.on
    if on is None:
        return default
    parts = boundary_parts(domain)
    known = ("boundary",) + (parts or ())
    ppath = tuple(path) + ("on",)

    def check(name: str, p):
        if parts is not None and name not in known:
            raise ctx.error(p, f"unknown boundary part '{name}'{suggest(name, known)}; this "
                            f"domain's parts are: {', '.join(known)} (or write a predicate such "
                            "as \"x == 0\")")
        return name

    if isinstance(on, list):
        return tuple(check(n, ppath + (i,)) for i, n in enumerate(on))
    if on in known:
        return on
    dotted = all(p.isidentifier() for p in on.split("."))
    if dotted and on not in ctx.namespace:
        if default == "interior" and on == "interior":
            return on
        return check(on, ppath)
    pred = ctx.expr(on, ppath, what="predicate")
    if not isinstance(pred, (E.Compare, E.And, E.Or, E.Not)):
        raise ctx.error(ppath, f"'{on}' is neither a boundary part nor a condition; write a part "
                        f"name ({', '.join(known)}) or a comparison such as \"x == 0\"")
    bad = [n.name for n in _leaves(pred) if isinstance(n, E.Field)]
    if bad:
        raise ctx.error(ppath, "a predicate selects points by their coordinates; it cannot use "
                        f"fields ({', '.join(sorted(set(bad)))})")
    return pred


def _values(ctx: _Ctx, mapping: Mapping, path, what: str):
    out = {}
    for fname, v in mapping.items():
        p = tuple(path) + (fname,)
        out[ctx.field(fname, p)] = ctx.expr(v, p, what=what)
    return out


def build_condition(ctx: _Ctx, spec: S.ProblemSpec, name: str, c: S.ConditionSpec, domain,
                    probe: _ProblemProbe):
    from pinn import conditions as C

    path = ("conditions", name)
    kind = c.kind
    kpath = path + (kind,)
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
    if kind in ("initial",) and spec.domain.time is None:
        raise ctx.error(kpath, "an initial condition needs a time interval: add "
                        "domain.time: [t0, t1]")
    w = c.weight
    try:
        if kind == "dirichlet":
            return C.Dirichlet(_values(ctx, c.dirichlet, kpath, "boundary value"),
                               on=_on(ctx, c, path, domain), weight=w, hard=c.hard)
        if kind == "neumann":
            ((f, v),) = _values(ctx, c.neumann, kpath, "normal derivative").items()
            return C.Neumann(f, v, on=_on(ctx, c, path, domain), weight=w)
        if kind == "robin":
            ((fname, r),) = c.robin.items()
            p = kpath + (fname,)
            f = ctx.field(fname, p)
            return C.Robin(f, ctx.expr(r.a, p + ("a",)), ctx.expr(r.b, p + ("b",)),
                           ctx.expr(r.value, p + ("value",)), on=_on(ctx, c, path, domain),
                           weight=w)
        if kind == "periodic":
            a = c.periodic
            fields = ([ctx.field(n, kpath + ("fields", i)) for i, n in enumerate(a.fields)]
                      if a.fields else list(ctx.fields))
            parts = boundary_parts(domain)
            if parts is not None:
                for i, part in enumerate(a.pair):
                    if part not in parts:
                        raise ctx.error(kpath + ("pair", i), f"unknown boundary part '{part}'"
                                        f"{suggest(part, parts)}; this domain's parts are: "
                                        f"{', '.join(parts)}")
            return C.Periodic(tuple(fields), tuple(a.pair), order=a.order, weight=w,
                              hard=c.hard)
        if kind == "initial":
            values = _values(ctx, c.initial, kpath, "initial value")
            rates = _values(ctx, c.rate, path + ("rate",), "initial rate") if c.rate else None
            return C.Initial(values, rate=rates, weight=w, hard=c.hard)
        if kind == "constraint":
            return C.Constraint(ctx.expr(c.constraint, kpath, what="constraint",
                                         allow_equals=True),
                                on=_on(ctx, c, path, domain, default="interior"), weight=w)
        return _data(ctx, c, path, probe)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ctx.error(kpath, str(exc)) from None


def _data(ctx: _Ctx, c: S.ConditionSpec, path, probe: _ProblemProbe):
    from pinn import conditions as C

    d = c.data
    dpath = path + ("data",)
    want = ([ctx.field(n, dpath + ("fields", i)) for i, n in enumerate(d.fields)]
            if d.fields else None)
    if d.file is not None:
        points, values, note = load_data_file(ctx, d.file, dpath + ("file",), want)
        noise = c.noise
    else:
        g = d.generate
        points, values = generate_data(ctx, g, dpath + ("generate",), probe, want)
        noise = None
        note = f"generated from the {g.from_} solution (n={g.n}, noise={g.noise}, seed={g.seed})"
        if g.noise > 0:  # a fraction of each field's standard deviation
            import numpy as np

            rng = np.random.default_rng(g.seed + 1)
            sigmas = []
            for f in values:
                sigma = g.noise * (float(np.std(values[f])) or 1.0)
                values[f] = values[f] + sigma * rng.standard_normal(values[f].shape)
                sigmas.append(sigma)
            noise = float(np.mean(sigmas))  # Data.noise: the absolute standard deviation
    return C.Data(points, values, noise=noise, weight=c.weight, source=note)


def load_data_file(ctx: _Ctx, rel: str, path, want):
    """Points and values from a CSV (header row of names) or NPZ file."""
    import numpy as np

    full = rel if os.path.isabs(rel) else os.path.join(ctx.base_dir, rel)
    names = [c.name for c in ctx.coords]
    if not os.path.isfile(full):
        raise ctx.error(path, f"no data file {rel!r} (looked for {full})")
    try:
        if full.lower().endswith(".npz"):
            with np.load(full, allow_pickle=False) as z:
                cols = {k: np.asarray(z[k], dtype=np.float64) for k in z.files}
            if "points" in cols:
                pts = cols.pop("points")
                if pts.ndim != 2 or pts.shape[1] != len(names):
                    raise ctx.error(path, f"'points' in {rel} has shape {pts.shape}; expected "
                                    f"[N, {len(names)}] with columns {', '.join(names)}")
                for i, n in enumerate(names):
                    cols[n] = pts[:, i]
        else:
            with open(full, encoding="utf-8") as fh:
                header = fh.readline()
            heads = [h.strip() for h in header.replace(";", ",").split(",")]
            arr = np.loadtxt(full, delimiter=",", skiprows=1, ndmin=2)
            if arr.shape[1] != len(heads):
                raise ctx.error(path, f"{rel}: the header names {len(heads)} columns but rows "
                                f"have {arr.shape[1]}")
            cols = {h: arr[:, i] for i, h in enumerate(heads)}
    except (OSError, ValueError) as exc:
        raise ctx.error(path, f"cannot read {rel}: {exc}") from None
    missing = [n for n in names if n not in cols]
    if missing:
        raise ctx.error(path, f"{rel} has no column for the coordinate(s) "
                        f"{', '.join(missing)} (found: {', '.join(cols)})")
    fields = want if want is not None else [f for f in ctx.fields if f.name in cols]
    if not fields:
        declared = ", ".join(f.name for f in ctx.fields)
        raise ctx.error(path, f"{rel} has no column for any field ({declared}; found: "
                        f"{', '.join(cols)})")
    for f in fields:
        if f.name not in cols:
            raise ctx.error(path, f"{rel} has no column '{f.name}' (found: {', '.join(cols)})")
    pts = np.stack([cols[n].reshape(-1) for n in names], axis=1)
    values = {f: cols[f.name].reshape(-1) for f in fields}
    return pts, values, f"file {rel}"


def generate_data(ctx: _Ctx, g: S.GenerateArgs, path, probe: _ProblemProbe, want):
    """Observations sampled from the exact (or reference) solution at random points."""
    import jax
    import numpy as np

    key = jax.random.key(g.seed)
    sampler = build_sampler(g.sampler)
    domain = probe.domain
    try:
        pts = domain.sample_interior(key, g.n, sampler)
    except TypeError:
        pts = domain.sample_interior(key, g.n)
    pts = np.asarray(pts, dtype=np.float64)
    if g.from_ == "exact":
        if not probe.exact:
            raise ctx.error(path, "generate from: exact needs an exact solution (add exact: "
                            "{u: ...}) or use from: reference")
        fields = want if want is not None else list(probe.exact)
        values = {}
        from pinn.dsl.evaluate import evaluate_on_points

        space = getattr(domain, "space", domain)
        spatial = probe.coords[: getattr(space, "dim", len(probe.coords))]
        with jax.enable_x64(True):
            for f in fields:
                if f not in probe.exact:
                    raise ctx.error(path, f"no exact solution for field '{f.name}'")
                values[f] = np.asarray(evaluate_on_points(probe.exact[f], probe.coords, pts,
                                                          spatial=spatial), dtype=np.float64)
        return pts, values
    if probe.reference is None:
        raise ctx.error(path, "generate from: reference needs a reference: section")
    if isinstance(probe.reference, FEMReference):
        raise ctx.error(path, "data cannot be generated from a FEM reference of the same "
                        "problem; use from: exact, or a file")
    ref = probe.reference(pts)
    fields = want if want is not None else [f for f in ctx.fields if f.name in ref]
    return pts, {f: np.asarray(ref[f.name], dtype=np.float64) for f in fields}


# ---------------------------------------------------------------------------
# references


class FileReference:
    """A reference solution from an NPZ file (``points[N, d]`` and one array per field),
    interpolated linearly (nearest value outside the convex hull)."""

    def __init__(self, path: str, names: tuple[str, ...]):
        import numpy as np

        with np.load(path, allow_pickle=False) as z:
            self.points = np.asarray(z["points"], dtype=np.float64)
            self.values = {k: np.asarray(z[k], dtype=np.float64) for k in z.files
                           if k != "points"}
        self.names = names
        self._interp: dict = {}

    def __call__(self, points):
        import numpy as np
        from scipy.interpolate import LinearNDInterpolator, NearestNDInterpolator

        p = np.asarray(points, dtype=np.float64)
        out = {}
        for k, v in self.values.items():
            if k not in self._interp:
                self._interp[k] = (LinearNDInterpolator(self.points, v),
                                   NearestNDInterpolator(self.points, v))
            lin, near = self._interp[k]
            val = lin(p)
            bad = ~np.isfinite(val)
            if bad.any():
                val[bad] = near(p[bad])
            out[k] = val
        return out


class _Lazy:
    """A reference computed on first use; pickled without the computed solution (it is
    recomputed, or read from the disk cache, after loading)."""

    _solution = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_solution"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._solution = None


class FEMReference(_Lazy):
    """The finite-element solution of the problem itself, computed on first use (a fine
    mesh takes seconds to minutes) and kept for later calls.  Picklable: the solution
    is recomputed after loading."""

    def __init__(self, cells: int, element: str, dt: float | None = None):
        self.cells, self.element, self.dt = cells, element, dt
        self.problem = None  # set once the Problem exists
        self._solution = None

    @property
    def description(self) -> str:
        return f"FEM ({self.element}, {self.cells} cells)"

    def solution(self):
        if self._solution is None:
            if self.problem is None:
                raise RuntimeError("FEMReference.problem is not set")
            from pinn.fem import fem_reference

            self._solution = fem_reference(self.problem, cells=self.cells, element=self.element,
                                           dt=self.dt)
        return self._solution

    def __call__(self, points):
        return self.solution().evaluate(points)

    @property
    def up_to_constant(self) -> tuple[str, ...]:
        """Fields fixed only up to a constant (compared after removing the mean)."""
        return tuple(getattr(self.solution(), "up_to_constant", ()))

    def __repr__(self) -> str:
        return f"FEMReference(cells={self.cells}, element={self.element!r})"


def build_reference(ctx: _Ctx, spec: S.ProblemSpec, params):
    r = spec.reference
    kind = r.kind
    path = ("reference", kind)
    if kind == "file":
        full = r.file if os.path.isabs(r.file) else os.path.join(ctx.base_dir, r.file)
        if not os.path.isfile(full):
            raise ctx.error(path, f"no reference file {r.file!r} (looked for {full})")
        return FileReference(full, tuple(c.name for c in ctx.coords))
    if kind == "fem":
        return FEMReference(r.fem.cells, r.fem.element, r.fem.dt)
    opts = {k: ctx.number(v, path + (k,), what=k) for k, v in (r.args or {}).items()}
    if kind == "burgers":
        from pinn.reference.burgers import Burgers

        allowed = {"nu", "n_nodes"}
        _check_opts(ctx, path, opts, allowed)
        if "n_nodes" in opts:
            opts["n_nodes"] = int(opts["n_nodes"])
        if len(ctx.coords) != 2:
            raise ctx.error(path, "the Burgers reference is for 1D problems in (x, t)")
        return Burgers(field=ctx.fields[0].name, **opts)
    allowed = {"allen_cahn": {"diffusion", "reaction", "n", "dt", "t_end"},
               "kdv": {"delta", "n", "dt", "t_end"}}[kind]
    _check_opts(ctx, path, opts, allowed)
    if len(ctx.coords) != 2:
        raise ctx.error(path, f"the {kind} reference is for 1D problems in (x, t)")
    for k in ("n",):
        if k in opts:
            opts[k] = int(opts[k])
    return SpectralReference(kind, opts, ctx.fields[0].name)


class SpectralReference(_Lazy):
    """A periodic spectral reference (pinn.reference.allen_cahn / kdv), computed on first
    use (then cached on disk by pinn.reference)."""

    def __init__(self, kind: str, options: dict, field: str):
        self.kind, self.options, self.field = kind, dict(options), field
        self._solution = None

    def __call__(self, points):
        if self._solution is None:
            import pinn.reference as R

            self._solution = getattr(R, self.kind)(field=self.field, **self.options)
        return self._solution(points)

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.kind}({opts})"


def _check_opts(ctx, path, opts, allowed):
    for k in opts:
        if k not in allowed:
            raise ctx.error(path + (k,), f"unknown option '{k}'{suggest(k, allowed)}; "
                            f"expected: {', '.join(sorted(allowed))}")


# ---------------------------------------------------------------------------
# samplers, model, training


def build_sampler(name: str):
    import pinn.geometry as G

    cls = {"uniform": "Uniform", "sobol": "Sobol", "halton": "Halton", "lhs": "LatinHypercube",
           "grid": "Grid"}[name]
    return getattr(G, cls)()


def build_rad(rad: S.RADArgs | None):
    if rad is None:
        return None
    import pinn.geometry as G

    return G.RAD(k=rad.k, c=rad.c, pool=rad.pool)


def build_model(b: Built):
    """The network spec (``pinn.nets``) described by ``model:``."""
    import pinn.nets as N

    m = b.spec.model
    kind, a = m.kind, m.args
    cls = {"mlp": N.MLP, "modified_mlp": N.ModifiedMLP, "pirate": N.PirateNet}[kind]
    kw: dict[str, Any] = {"activation": a.activation, "normalize": m.normalize}
    if kind == "pirate":
        kw.update(width=a.width, blocks=a.blocks)
    else:
        kw.update(width=a.width, depth=a.depth)
    if m.fourier is not None:
        kw["fourier"] = None if m.fourier is False else N.Fourier(scale=m.fourier.scale,
                                                                   features=m.fourier.features)
    if m.rwf is not None:
        kw["rwf"] = None if m.rwf is False else N.RWF(mean=m.rwf.mean, std=m.rwf.std)
    if m.periodic:
        periods = {}
        names = [c.name for c in b.coords]
        lo, hi = _bounds(b.problem)
        for cname, period in m.periodic.items():
            if cname not in names:
                raise ConfigError(Issue(
                    f"unknown coordinate '{cname}'{suggest(cname, names)} (coords: "
                    f"{', '.join(names)})", ("model", "periodic"),
                    b.source.location(("model", "periodic", cname))))
            i = names.index(cname)
            periods[i] = float(period) if period is not None else float(hi[i] - lo[i])
        kw["periodic"] = N.Periodic(periods, harmonics=m.harmonics)
    try:
        return cls(**kw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(Issue(str(exc), ("model", kind),
                                b.source.location(("model", kind)))) from None


def _bounds(problem):
    import numpy as np

    lo, hi = problem.space.bounds
    lo, hi = list(np.atleast_1d(lo)), list(np.atleast_1d(hi))
    if problem.time is not None:
        lo.append(problem.time.t0)
        hi.append(problem.time.t1)
    return np.asarray(lo, float), np.asarray(hi, float)


def build_optimizer(stage: S.StageSpec):
    import pinn.train as T

    a = stage.args
    if stage.kind == "lbfgs":
        return T.LBFGS(memory=a.memory, max_linesearch_steps=a.max_linesearch_steps, gtol=a.gtol)
    kw = dict(lr=a.lr, warmup=a.warmup, decay=None if a.decay == "none" else a.decay,
              decay_rate=a.decay_rate, decay_steps=a.decay_steps, b1=a.b1, b2=a.b2, clip=a.clip)
    if stage.kind == "adamw":
        return T.AdamW(weight_decay=a.weight_decay, **kw)
    return T.Adam(**kw)


def build_weighting(w: S.WeightingSpec, names):
    import pinn.train as T

    if w.kind == "fixed":
        return T.Fixed(weights=dict(w.fixed.weights) if w.fixed.weights else None)
    if w.kind == "gradnorm":
        return T.GradNorm(every=w.gradnorm.every, alpha=w.gradnorm.alpha)
    return T.Causal(eps=w.causal.eps, chunks=w.causal.chunks)


def build_training(b: Built):
    """``pinn.Training`` from the ``training:`` section (stages with 0 steps are skipped)."""
    import pinn.train as T
    from pinn.solve import Training
    from pinn.train.loss import Points

    t = b.spec.training
    terms = list(b.problem.equations) + list(b.problem.conditions)
    if t.weighting.kind == "fixed" and t.weighting.fixed.weights:
        for k in t.weighting.fixed.weights:
            if k not in terms:
                raise ConfigError(Issue(
                    f"no loss term named '{k}'{suggest(k, terms)}; terms: {', '.join(terms)}",
                    ("training", "weighting", "fixed", "weights"),
                    b.source.location(("training", "weighting", "fixed", "weights", k))))
    stages = [T.Stage(build_optimizer(s), s.steps) for s in t.stages if s.steps > 0]
    if not stages:
        raise ConfigError(Issue("every stage has 0 steps: nothing to train",
                                ("training", "stages"), b.source.location(("training", "stages"))))
    points = Points(interior=t.points.interior, boundary=t.points.boundary,
                    initial=t.points.initial, resample_every=t.points.resample_every,
                    sampler=build_sampler(t.points.sampler), rad=build_rad(t.points.rad))
    return Training(stages=stages, points=points,
                    weighting=build_weighting(t.weighting, terms), seed=t.seed,
                    chunk=t.chunk, eval_every=t.eval_every or None,
                    checkpoint_every=t.checkpoint_every or None)
