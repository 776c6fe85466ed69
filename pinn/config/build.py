"""From a validated :class:`~pinn.config.schema.ProblemSpec` to library objects.

This is the one place where strings become objects: expressions (through
:class:`~pinn.config.context.Context`), and shapes, samplers, optimisers,
weightings, networks and references (through the name -> constructor
registries of :mod:`pinn.config.registry`), one module per section:
:mod:`~pinn.config.geometry`, :mod:`~pinn.config.conditions`,
:mod:`~pinn.config.data` (data files and tables), :mod:`~pinn.config.reference` and
:mod:`~pinn.config.training`.  It defines no library objects.
Every error names the file, the line and the YAML path of the value that
caused it; a library constructor's ``ValueError`` becomes a
:class:`~pinn.config.errors.ConfigError` at the place of its value.  Library
modules are imported lazily, so that reading and checking a file stays fast.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from pinn import conditions as C
from pinn.config import schema as S
from pinn.config.conditions import build_condition
from pinn.config.context import RESERVED, Context
from pinn.config.data import coefficients
from pinn.config.errors import ConfigError, suggest
from pinn.config.geometry import build_domain
from pinn.config.quantities import build_quantities
from pinn.config.reference import build_reference
from pinn.config.registry import CSG, optimizers
from pinn.config.training import build_model, build_training
from pinn.config.yamlio import Source
from pinn.dsl import expr as E

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

    def planning(self):
        """What the plan may choose (:class:`pinn.plan.Planning`): the ``plan:`` section;
        the points only where ``training.points`` is not given, Fourier features only
        where ``model.fourier`` is not, time windows only where neither
        ``training.windows`` nor ``training.stages`` is (stages written for the whole
        interval are not run once per window, unless ``plan: {windows: true}`` says so)."""
        from pinn.plan import Planning

        given = self.spec.training.model_fields_set
        return Planning(hard=self.spec.plan.hard,
                        points=self.spec.plan.points and "points" not in given,
                        scale=self.spec.plan.scale,
                        frequency=self.spec.plan.frequency and "fourier" not in
                        self.spec.model.model_fields_set,
                        windows=self.spec.plan.windows and "windows" not in given
                        and ("stages" not in given
                             or "windows" in self.spec.plan.model_fields_set),
                        balance=self.spec.plan.balance, holdout=self.spec.plan.holdout,
                        energy=self.spec.plan.energy, layer=self.spec.plan.layer,
                        residuals=self.spec.plan.residuals,
                        unevolved=self.spec.plan.unevolved,
                        rates=self.spec.plan.rates,
                        weighted=tuple(n for n, c in (self.spec.conditions or {}).items()
                                       if "weight" in getattr(c, "model_fields_set", ())))

    def setup(self, *, problem=None, model=None, training=None, **options):
        """A run of this file set up as ``pinn solve`` sets it up (:func:`pinn.setup`): its
        problem, network, training, precision and plan, each replaceable; ``options`` go
        to :func:`pinn.setup` (and override the precision or plan)."""
        from pinn.run import setup

        return setup(self.problem if problem is None else problem,
                     self.model() if model is None else model,
                     self.training() if training is None else training,
                     **{"precision": self.precision, "plan": self.planning(), **options})

    def plan(self):
        """The plan of this problem (:func:`pinn.plan.make_plan`) with its network and
        training."""
        from pinn.plan import make_plan

        return make_plan(self.problem, self.model(), self.training(), self.planning())

    def checked_problem(self):
        """The problem the manufactured-solution check reads: the file's, less the start
        values the plan leaves out (``plan.unevolved``, :func:`pinn.plan.unevolved`: the
        start of a field no equation evolves, which the other fields fix), so that an exact
        solution is not refused for a start the run does not use."""
        from pinn.plan import unevolved

        return unevolved(self.problem)[0] if self.planning().unevolved else self.problem

    def resolved(self) -> dict:
        """The configuration with every default filled in (what the run used), but for the
        entries the plan decides (``training.points``, ``training.windows``,
        ``model.fourier`` where it may choose them): written out, they would be the user's
        on a reload, and a resumed run (read from this) would not plan them again (1D:
        4096 points, not the plan's 1024, against the checkpoint's)."""
        data = resolved_dict(self.spec)
        plan = self.planning()
        training, model = data.get("training") or {}, data.get("model") or {}
        if plan.points:
            training.pop("points", None)
        if plan.windows:
            training.pop("windows", None)
        if plan.frequency:
            model.pop("fourier", None)
        return data


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
    quantities = build_quantities(ctx, spec, domain)
    name = spec.name or _stem(source.file)
    try:
        problem = Problem(domain=domain, equations=eqs, conditions=conds, coords=ctx.coords,
                          fields=ctx.fields, exact=exact or None, reference=reference,
                          name=name, quantities=quantities or None)
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
    coefficients(ctx, spec)  # after define: a piecewise value may use a definition
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
    if sep and head.split(".")[0] in ("equations", "conditions", "exact", "params",
                                      "quantities"):
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


