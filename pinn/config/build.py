"""From a validated :class:`~pinn.config.schema.ProblemSpec` to library objects.

This is the one place where strings become objects: expressions (through
:class:`~pinn.config.context.Context`), and shapes, samplers, optimisers,
weightings, networks and references (through the name -> constructor
registries of :mod:`pinn.config.registry`).  It defines no library objects.
Every error names the file, the line and the YAML path of the value that
caused it; a library constructor's ``ValueError`` becomes a
:class:`~pinn.config.errors.ConfigError` at the place of its value.  Library
modules are imported lazily, so that reading and checking a file stays fast.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinn import conditions as C
from pinn.config import schema as S
from pinn.config.context import RESERVED, Context
from pinn.config.data import data_condition
from pinn.config.errors import ConfigError, Issue, suggest
from pinn.config.registry import (
    CSG,
    kwargs,
    models,
    optimizers,
    references,
    samplers,
    shapes,
    weightings,
)
from pinn.config.yamlio import Source
from pinn.dsl import expr as E

_MOVED = {"FileReference": "pinn.reference.file", "FEMReference": "pinn.reference.lazy",
          "SpectralReference": "pinn.reference.lazy", "_Lazy": "pinn.reference.lazy"}


def __getattr__(name: str):
    """The reference classes now live in :mod:`pinn.reference` (old imports, old pickles)."""
    if name in _MOVED:
        import importlib

        module = importlib.import_module(_MOVED[name])
        return getattr(module, "LazyReference" if name == "_Lazy" else name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        """32 or 64, the run's (its highest stage's): ``auto``: 64 when a stage's optimiser
        wants float64, else 32 (:meth:`stage_precisions`)."""
        from pinn.train.spec import run_bits

        return run_bits(self.stage_precisions)

    @property
    def stage_precisions(self) -> tuple[int | str, ...]:
        """Each stage's precision (:func:`pinn.train.spec.stage_precisions`; stages of 0 steps
        left out, as :meth:`training` leaves them out)."""
        from pinn.train.spec import stage_precisions

        t = self.spec.training
        stages = [s for s in t.stages if s.steps > 0] or t.stages
        return stage_precisions([optimizers()[s.kind] for s in stages],
                                [s.precision for s in stages], t.precision)

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
    """The validated problem file with every default filled in, as JSON-ready data
    (what a run folder's ``config.yaml`` holds)."""
    return spec.model_dump(mode="json", exclude_none=True, by_alias=True)


def build(spec: S.ProblemSpec, source: Source, base_dir: str = ".") -> Built:
    """The :class:`~pinn.problem.Problem` (and the rest) described by ``spec``."""
    from pinn.problem import Problem, ProblemError

    ctx = Context(source, base_dir)
    params = _params(ctx, spec)
    # names and equations first, the geometry (which loads JAX) after: a typo is reported
    # without loading the numerical stack
    dim = _static_dim(spec.domain.shape)
    domain = build_domain(ctx, spec.domain) if dim is None else None
    eqs = _names_and_equations(ctx, spec, dim or getattr(domain, "space", domain).dim)
    if domain is None:
        domain = build_domain(ctx, spec.domain)
        real = getattr(domain, "space", domain).dim
        if real != dim:  # pragma: no cover - a shape kind _static_dim reads wrongly
            ctx = Context(source, base_dir)
            params = _params(ctx, spec)
            eqs = _names_and_equations(ctx, spec, real)
    clash = set(spec.equations) & set(spec.conditions)
    if clash:
        n = sorted(clash)[0]
        raise ctx.error(("conditions", n), f"'{n}' names both an equation and a condition; "
                        "rename one")
    exact = {}
    for fname, text in (spec.exact or {}).items():
        f = ctx.field(fname, ("exact", fname))
        exact[f] = ctx.expr(text, ("exact", fname), what="exact solution")
        ctx.no_fields(exact[f], ("exact", fname), "an exact solution cannot use fields "
                      "({names}); write it in the coordinates")
    fem = spec.reference is not None and spec.reference.kind == "fem"
    reference = build_reference(ctx, spec.reference) if spec.reference and not fem else None
    conds = {name: build_condition(ctx, spec, name, c, domain, exact,
                                   "fem" if fem else reference)
             for name, c in spec.conditions.items()}
    name = spec.name or _stem(source.file)
    try:
        problem = Problem(domain=domain, equations=eqs, conditions=conds, coords=ctx.coords,
                          fields=ctx.fields, exact=exact or None, reference=reference,
                          name=name)
    except ProblemError as exc:
        raise _problem_error(ctx, str(exc)) from None
    if fem:  # the FEM solution of this very problem (without a reference)
        from pinn.reference.lazy import FEMReference

        r = spec.reference.fem
        problem = dataclasses.replace(
            problem, reference=FEMReference(problem, cells=r.cells, element=r.element, dt=r.dt))
    _check_hard(ctx, problem)
    for pname, p in params.items():
        if p.learnable and p not in problem.params:
            raise ctx.error(("params", pname), f"learnable parameter '{pname}' is not used by "
                            "any equation or condition")
        if p.range is not None and p not in problem.params:
            raise ctx.error(("params", pname), f"ranged parameter '{pname}' is not used by "
                            "any equation, condition or exact solution; drop it")
    return Built(spec=spec, source=source, base_dir=base_dir, problem=problem,
                 coords=ctx.coords, fields=ctx.fields, params=params, name=name)


def _check_hard(ctx: Context, problem) -> None:
    """Hard conditions the geometry cannot build fail here, at ``conditions.<name>.hard``,
    rather than when training starts."""
    for cname, c in problem.conditions.items():
        if not getattr(c, "hard", False):
            continue
        try:
            for h in c.hard_outputs(problem, cname):
                C.check_hard_subset(problem, cname, h)
            c.periodic_inputs(problem, cname)
        except ValueError as exc:
            msg = str(exc).removeprefix(f"conditions.{cname}: ").replace("hard=False",
                                                                         "hard: false")
            raise ctx.error(("conditions", cname, "hard"), msg) from None


def _names_and_equations(ctx: Context, spec: S.ProblemSpec, dim: int) -> dict:
    _coords_fields(ctx, spec, dim)
    _definitions(ctx, spec)
    _coefficients(ctx, spec)  # after define: a piecewise value may use a definition
    return {name: ctx.expr(text, ("equations", name), what="equation", allow_equals=True)
            for name, text in spec.equations.items()}


def _static_dim(shape: S.ShapeSpec) -> int | None:
    """The space dimension of a shape read from its spec (None: build it to know)."""
    kind, a = shape.kind, shape.args
    if kind in CSG:
        return _static_dim(a[0]) if a else None
    if kind == "interval":
        return 1
    if kind in ("triangle", "polygon", "l_shape", "annulus", "ellipse", "disk", "rectangle"):
        for key in ("min", "center"):  # rectangle/disk may take more numbers one day
            if isinstance(getattr(a, key, None), list):
                return len(getattr(a, key))
        return 2
    for key in ("min", "center"):
        if isinstance(getattr(a, key, None), list):
            return len(getattr(a, key))
    return None


def _stem(file: str | None) -> str:
    """The run name of a file without ``name:``: its stem, made a safe file name."""
    import re

    if not file:
        return "problem"
    stem = re.sub(r"[^A-Za-z0-9_.+-]", "_", os.path.splitext(os.path.basename(file))[0])
    stem = stem.lstrip(".+-").rstrip(".")[:100]
    return stem or "problem"


def _problem_error(ctx: Context, msg: str) -> ConfigError:
    """Map a ProblemError (``equations.heat: ...``) to the YAML place it names."""
    head, sep, rest = msg.partition(": ")
    if sep and head.split(".")[0] in ("equations", "conditions", "exact", "params"):
        parts = head.replace("[", ".").replace("]", "").split(".")
        path = [p for p in parts if p and not p.isdigit()]
        return ctx.error(tuple(path[:2]), rest)
    return ctx.error((), msg)


# ---------------------------------------------------------------------------
# parameters, coordinates, fields, definitions


def _params(ctx: Context, spec: S.ProblemSpec) -> dict[str, E.Param]:
    from pinn.dsl.builders import param

    out: dict[str, E.Param] = {}
    names = list(spec.params)
    for i, (name, p) in enumerate(spec.params.items()):
        path = ("params", name)
        if name in RESERVED:
            raise ctx.error(path, f"'{name}' is a built-in name of the PDE language; choose "
                            "another parameter name")
        if isinstance(p.value, str):
            later = [n for n in names[i + 1:] if _mentions(p.value, n)]
            if later or _mentions(p.value, name):
                who = name if _mentions(p.value, name) else later[0]
                raise ctx.error(path, f"'{name}' uses '{who}', which is "
                                f"{'itself' if who == name else 'defined later'}; a parameter "
                                "may use only the parameters above it")
        if p.range is not None:  # a parametric problem: the parameter is a network input
            lo, hi = (ctx.number(b, path + ("range", j), what=f"the range of {name}")
                      for j, b in enumerate(p.range))
            if not lo < hi:
                raise ctx.error(path + ("range",), f"range needs lo < hi, got [{lo:g}, {hi:g}]")
            out[name] = param(name, range=(lo, hi))
        else:
            v = ctx.number(p.value, path, what=f"parameter {name}")
            out[name] = param(name, v, learnable=p.learnable)
        ctx.namespace[name] = out[name]
    ctx.params = out
    return out


def _mentions(text: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def _coords_fields(ctx: Context, spec: S.ProblemSpec, dim: int) -> None:
    has_time = spec.domain.time is not None
    want = dim + (1 if has_time else 0)
    if spec.coords is None:  # x, y, z; x1, ..., xN beyond 3-D (the N-D box's face names)
        names = ([("x", "y", "z")[i] for i in range(dim)] if dim <= 3 else
                 [f"x{i + 1}" for i in range(dim)]) + (["t"] if has_time else [])
    else:
        names = list(spec.coords)
        if len(names) != want:
            raise ctx.error(("coords",), f"{len(names)} coordinate(s) ({', '.join(names)}) for a "
                            f"domain with {dim} space dimension(s){' and time' if has_time else ''}"
                            f"; give {want}")
    seen: dict[str, str] = {n: "params" for n in ctx.params}
    for kind, items in (("coords", names), ("fields", list(spec.fields))):
        for i, n in enumerate(items):
            path = (kind, i) if spec.coords is not None or kind == "fields" else ("domain",)
            if kind == "fields" and isinstance(spec.fields, dict):
                path = (kind, n)
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
    ctx.fields = tuple(E.Field(n, _field_coords(ctx, spec, n, names)) for n in spec.fields)
    for node in ctx.coords + ctx.fields:
        ctx.namespace[node.name] = node


def _field_coords(ctx: Context, spec: S.ProblemSpec, name: str, coords: list[str]
                  ) -> tuple[str, ...] | None:
    """The coordinates ``fields: {name: [...]}`` gives the field (None: all of them)."""
    given = spec.fields.get(name) if isinstance(spec.fields, dict) else None
    if given is None:
        return None
    if not given:
        raise ctx.error(("fields", name), f"field '{name}' has no coordinates; list the ones "
                        f"it depends on (coords: {', '.join(coords)}), or null for all")
    for i, c in enumerate(given):
        if c not in coords:
            raise ctx.error(("fields", name, i), f"unknown coordinate '{c}'"
                            f"{suggest(c, coords)} for field '{name}' (coords: "
                            f"{', '.join(coords)})")
        if given.index(c) != i:
            raise ctx.error(("fields", name, i), f"coordinate '{c}' is listed twice for "
                            f"field '{name}'")
    return None if set(given) == set(coords) else tuple(c for c in coords if c in given)


def _spatial(ctx: Context, spec: S.ProblemSpec) -> tuple:
    return ctx.coords[:-1] if spec.domain.time is not None else ctx.coords


def file_table(ctx: Context, spec: S.ProblemSpec | None, name: str, fv, path, *, over=None):
    """The coefficient ``name`` read from ``fv.file`` (a :class:`~pinn.config.schema.
    FileValues` or a coefficient spec with ``file``), as an expression of ``fv.coords``
    (default ``over``, else the spatial coordinates, or all of them when the file has a
    column for each)."""
    from pinn.dsl import tables as T

    fpath = tuple(path) + ("file",)
    full = fv.file if os.path.isabs(fv.file) else os.path.join(ctx.base_dir, fv.file)
    if not os.path.isfile(full):
        raise ctx.error(fpath, f"no file {fv.file!r} (looked for {full})")
    try:
        data, names = T.read_table(full)
    except (OSError, ValueError) as exc:
        raise ctx.error(fpath, f"cannot read {fv.file}: {exc}") from None
    known = {c.name: c for c in ctx.coords}
    if fv.coords is not None:
        for i, n in enumerate(fv.coords):
            if n not in known:
                raise ctx.error(tuple(path) + ("coords", i), f"unknown coordinate '{n}'"
                                f"{suggest(n, known)} (coords: {', '.join(known)})")
        args = tuple(known[n] for n in fv.coords)
    elif names is not None and all(n in known for n in names[:-1]):
        args = tuple(known[n] for n in names[:-1])
    else:
        space = tuple(over) if over is not None else _spatial(ctx, spec)
        args = space if data.shape[1] != len(ctx.coords) + 1 or over is not None \
            else ctx.coords
    if data.shape[1] != len(args) + 1:
        cols = ", ".join(c.name for c in args)
        raise ctx.error(fpath, f"{fv.file} has {data.shape[1]} column(s); {name} of ({cols}) "
                        f"needs {len(args) + 1}: the coordinates {cols}, then the value (or "
                        "name the columns with coords: [...])")
    try:
        table = T.table_from_points(data[:, :-1], data[:, -1], fv.interpolation or "linear",
                                    resample=fv.resample, source=full)
    except ValueError as exc:
        raise ctx.error(fpath, str(exc).replace(full + ": ", fv.file + ": ")) from None
    return E.Tabulated(name, table, args)


def _coefficients(ctx: Context, spec: S.ProblemSpec) -> None:
    """``coefficients:``: data tables, piecewise expressions and tables of cells, each
    a name later expressions may use."""
    from pinn.dsl.builders import cells, piecewise

    for name, c in spec.coefficients.items():
        path = ("coefficients", name)
        if name in RESERVED:
            raise ctx.error(path, f"'{name}' is a built-in name of the PDE language; choose "
                            "another name")
        if name in ctx.namespace:
            raise ctx.error(path, f"'{name}' is already declared (a coordinate, field, "
                            "parameter or definition); choose another name")
        kind = c.kind
        if kind == "file":
            node = file_table(ctx, spec, name, c, path)
        elif kind == "piecewise":
            pieces = []
            last = len(c.piecewise) - 1
            for i, p in enumerate(c.piecewise):
                ppath = path + ("piecewise", i)
                if p.where is None and i != last:
                    raise ctx.error(ppath, "only the last piece may go without 'where' (the "
                                    "value everywhere else)")
                value = ctx.expr(p.value, ppath + ("value",), what="value")
                if p.where is None:
                    pieces.append(value)
                    continue
                cond = ctx.expr(p.where, ppath + ("where",), what="condition")
                if not isinstance(cond, (E.Compare, E.And, E.Or, E.Not)):
                    raise ctx.error(ppath + ("where",), f"'{p.where}' is not a condition; "
                                    "write a comparison such as \"x < 0.5\"")
                pieces.append((cond, value))
            node = piecewise(*pieces)
        else:
            cpath = path + ("cells",)
            known = {co.name: co for co in ctx.coords}
            over = []
            for n in c.cells.edges:
                if n not in known:
                    raise ctx.error(cpath + ("edges", n), f"unknown coordinate '{n}'"
                                    f"{suggest(n, known)} (coords: {', '.join(known)})")
                over.append(known[n])
            values = _cell_values(ctx, c.cells.values, cpath + ("values",))
            try:
                node = cells(over, list(c.cells.edges.values()), values)
            except (TypeError, ValueError) as exc:
                raise ctx.error(cpath, str(exc).removeprefix("cells: ")) from None
        ctx.no_fields(node, path, "a coefficient cannot use fields ({names}); write it in "
                      "the coordinates and parameters")
        ctx.namespace[name] = node


def _cell_values(ctx: Context, values, path):
    """The nested lists of a table of cells, each entry parsed as an expression."""
    if isinstance(values, list):
        return [_cell_values(ctx, v, tuple(path) + (i,)) for i, v in enumerate(values)]
    if isinstance(values, bool) or not isinstance(values, (int, float, str)):
        raise ctx.error(path, f"a cell value is a number or an expression, got {values!r}")
    return ctx.expr(values, path, what="cell value")


def _definitions(ctx: Context, spec: S.ProblemSpec) -> None:
    for name, text in spec.define.items():
        path = ("define", name)
        if name in RESERVED:
            raise ctx.error(path, f"'{name}' is a built-in name of the PDE language; choose "
                            "another name")
        if name in ctx.namespace:
            raise ctx.error(path, f"'{name}' is already declared (a coordinate, field or "
                            "parameter); choose another name")
        ctx.namespace[name] = ctx.expr(text, path, what="definition")


# ---------------------------------------------------------------------------
# geometry


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


# ---------------------------------------------------------------------------
# conditions


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
    return C.Periodic(tuple(fields), tuple(a.pair), order=a.order, weight=c.weight, hard=c.hard)


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
    return C.Initial(values, rate=rates, weight=c.weight, hard=c.hard)


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


# ---------------------------------------------------------------------------
# references, samplers, model, training


def build_reference(ctx: Context, r: S.ReferenceSpec):
    """The reference of ``reference:`` other than ``fem`` (which needs the problem: see
    :func:`build`)."""
    kind = r.kind
    path = ("reference", kind)
    if kind == "file":
        from pinn.reference.file import FileReference

        full = r.file if os.path.isabs(r.file) else os.path.join(ctx.base_dir, r.file)
        if not os.path.isfile(full):
            raise ctx.error(path, f"no reference file {r.file!r} (looked for {full})")
        names = [c.name for c in ctx.coords]
        try:
            if full.endswith((".dat", ".txt", ".csv")):  # PINNacle's / COMSOL's tables
                ref = FileReference.from_table(full, names, [f.name for f in ctx.fields])
            else:
                ref = FileReference(full)
        except (OSError, ValueError) as exc:
            msg = str(exc).replace(full + ": ", "").replace(full, r.file)
            raise ctx.error(path, f"cannot read {r.file}: {msg}") from None
        if ref.points.shape[1] != len(names):
            raise ctx.error(path, f"{r.file} has points of {ref.points.shape[1]} coordinate(s); "
                            f"this problem has {len(names)} ({', '.join(names)})")
        unknown = [k for k in ref.values if k not in {f.name for f in ctx.fields}]
        if unknown:
            raise ctx.error(path, f"{r.file} holds values of {', '.join(unknown)}, which are "
                            f"not fields of this problem ({', '.join(f.name for f in ctx.fields)})")
        return ref
    make, reals, ints = references()[kind]
    options = r.args or {}
    ctx.check_options(path, options, reals | ints)
    if len(ctx.coords) != 2:
        raise ctx.error(path, f"the {kind} reference is for 1D problems in (x, t)")
    ranged = {k: v for k, v in options.items()
              if isinstance(v, str) and v.strip() in ctx.params
              and ctx.params[v.strip()].range is not None}
    if ranged and kind != "burgers":
        raise ctx.error(path + (next(iter(ranged)),), f"the {kind} reference takes fixed "
                        "values; a ranged parameter is supported only as burgers' nu")
    opts = {k: None if k in ranged else ctx.number(v, path + (k,), what=k)
            for k, v in options.items()}
    return make(ctx.fields[0].name, {k: int(v) if k in ints else v for k, v in opts.items()})


def build_sampler(name: str):
    return samplers()[name]()


def build_rad(rad: S.RADArgs | None):
    if rad is None:
        return None
    import pinn.geometry as G

    return G.RAD(**kwargs(rad))


def build_model(b: Built):
    """The network spec (``pinn.nets``) described by ``model:``."""
    import numpy as np

    import pinn.nets as N

    m = b.spec.model
    kw: dict[str, Any] = dict(kwargs(m.args), normalize=m.normalize)
    if m.per_field:
        kw["per_field"] = True
    for key, cls in (("fourier", N.Fourier), ("rwf", N.RWF)):
        option = getattr(m, key)
        if option is not None:  # absent: the network's default; false: none
            kw[key] = None if option is False else cls(**kwargs(option))
    if m.trainable_periods and not m.periodic:
        raise ConfigError(Issue(
            "trainable_periods needs the coordinates in model.periodic (with their starting "
            "period, e.g. periodic: {t: 1.0})", ("model", "trainable_periods"),
            b.source.location(("model", "trainable_periods"))))
    if m.periodic:
        names = [c.name for c in b.coords]
        lo, hi = b.problem.domain.bounds  # space, then time
        periods = {}
        for cname, period in m.periodic.items():
            if cname not in names:
                raise ConfigError(Issue(
                    f"unknown coordinate '{cname}'{suggest(cname, names)} (coords: "
                    f"{', '.join(names)})", ("model", "periodic"),
                    b.source.location(("model", "periodic", cname))))
            i = names.index(cname)
            periods[i] = float(period) if period is not None else float(
                np.atleast_1d(hi)[i] - np.atleast_1d(lo)[i])
        trainable = []
        for cname in m.trainable_periods:
            if cname not in m.periodic:
                raise ConfigError(Issue(
                    f"'{cname}' has no period to learn: list it in model.periodic too "
                    f"(periodic: {', '.join(m.periodic)})", ("model", "trainable_periods"),
                    b.source.location(("model", "trainable_periods"))))
            trainable.append(names.index(cname))
        kw["periodic"] = N.Periodic(periods, harmonics=m.harmonics, trainable=trainable)
    try:
        return models()[m.kind](**kw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(Issue(str(exc), ("model", m.kind),
                                b.source.location(("model", m.kind)))) from None


def build_optimizer(stage: S.StageSpec):
    kw = kwargs(stage.args)
    if kw.get("decay") == "none":
        kw["decay"] = None
    return optimizers()[stage.kind](**kw)


def build_weighting(w: S.WeightingSpec):
    return weightings()[w.kind](**kwargs(w.args))


def check_training(b: Built) -> None:
    """What ``training:`` must name and hold (checked before anything is built)."""
    t = b.spec.training
    terms = list(b.problem.equations) + list(b.problem.conditions)
    if t.weighting.kind == "fixed" and t.weighting.fixed.weights:
        for k in t.weighting.fixed.weights:
            if k not in terms:
                raise ConfigError(Issue(
                    f"no loss term named '{k}'{suggest(k, terms)}; terms: {', '.join(terms)}",
                    ("training", "weighting", "fixed", "weights"),
                    b.source.location(("training", "weighting", "fixed", "weights", k))))
    if t.windows > 1:
        from pinn.marching import check_windows

        try:
            check_windows(b.problem, t.windows)
        except ValueError as exc:
            raise ConfigError(Issue(str(exc).split(": ", 1)[-1], ("training", "windows"),
                                    b.source.location(("training", "windows")))) from None
    for i, s in enumerate(t.stages):
        if s.precision == "mixed" and not optimizers()[s.kind].supports_mixed:
            path = ("training", "stages", i, "precision")
            raise ConfigError(Issue(
                f"precision 'mixed' (float32, then float64 once the line search stalls) needs "
                f"ssbroyden, ssbfgs or lbfgs, not {s.kind}: give this stage 32 or 64",
                path, b.source.location(path)))
    if not any(s.steps > 0 for s in t.stages):
        raise ConfigError(Issue("every stage has 0 steps: nothing to train",
                                ("training", "stages"), b.source.location(("training", "stages"))))


def build_training(b: Built):
    """``pinn.Training`` from the ``training:`` section (stages with 0 steps are skipped)."""
    from pinn.train.spec import Points, Stage, Training

    check_training(b)
    t = b.spec.training
    stages = [Stage(build_optimizer(s), s.steps, precision=s.precision)
              for s in t.stages if s.steps > 0]
    p = t.points
    points = Points(interior=p.interior, boundary=p.boundary, initial=p.initial,
                    resample_every=p.resample_every, sampler=build_sampler(p.sampler),
                    rad=build_rad(p.rad))
    training = Training(stages=stages, points=points, weighting=build_weighting(t.weighting),
                        seed=t.seed, chunk=t.chunk, eval_every=t.eval_every or None,
                        checkpoint_every=t.checkpoint_every or None, devices=t.devices,
                        micro_batch=t.micro_batch, windows=t.windows)
    # each stage's precision in the stage where they differ or one is mixed (a stage's own,
    # or auto's), so that setup(precision=b.precision) keeps them
    return training.with_stage_precisions(t.precision)
