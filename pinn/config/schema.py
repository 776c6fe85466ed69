"""The schema of a problem file (pydantic v2, unknown keys are errors).

Only structure and types are checked here (including how many numbers a
point of a shape has); names, expressions and boundary parts are checked when
the library objects are built (:mod:`pinn.config.build`), where the problem's
coordinates and fields are known, and the values of shapes, optimisers and
networks by their own constructors.

A section that offers alternatives is a mapping with exactly one of its kind
keys (``{rectangle: {...}}``, ``{adam: {...}, steps: 500}``); a kind given as a
bare string (``sampler: sobol``, ``weighting: gradnorm``) means that kind with
its defaults.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

MAX_POINTS = 50_000_000
MAX_STEPS = 1_000_000_000
MAX_SIZE = 1_000_000  # modes, cells
MAX_WIDTH = 8192  # network widths, Fourier features
MAX_DEPTH = 64  # hidden layers, blocks
MAX_STAGES = 64  # training stages: each compiles its own program


# ---------------------------------------------------------------------------
# scalar types


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "nothing (null)"
    if isinstance(v, str):
        return f"the text {v!r}" if len(v) < 40 else "a text"
    return repr(v)


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PydanticCustomError("number", "expected a number, got {got}", {"got": _kind(v)})
    if not math.isfinite(float(v)) or abs(v) > 1e300:
        what = "not a number" if v != v else "too large (infinite)" if math.isinf(v) else (
            f"too large ({_short(v)})")
        raise PydanticCustomError("finite", "the number is {what}", {"what": what})
    return float(v) if isinstance(v, float) else v


def _short(v) -> str:
    s = repr(v)
    return s if len(s) <= 24 else s[:10] + "…" + s[-6:]


def _integer(v: Any) -> int:
    if isinstance(v, float) and not math.isfinite(v):
        raise PydanticCustomError("finite", "the number is too large (infinite)")
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise PydanticCustomError("integer", "expected a whole number, got {got}",
                                  {"got": _kind(v)})
    return v


def _expr_like(v: Any):
    """A number or an expression string of the PDE language."""
    if isinstance(v, str):
        if not v.strip():
            raise PydanticCustomError("expression", "the expression is empty")
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PydanticCustomError(
            "expression", "expected a number or an expression (text), got {got}",
            {"got": _kind(v)})
    return _number(v)


def _expr_text(v: Any):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        raise PydanticCustomError("expression", "expected an expression (text), got {got}",
                                  {"got": _kind(v)})
    if not v.strip():
        raise PydanticCustomError("expression", "the expression is empty")
    return v


def _name(v: Any) -> str:
    # ASCII only: names become Python identifiers, loss-term keys and file names everywhere
    if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
        raise PydanticCustomError(
            "name", "expected a name (ASCII letters, digits and _, not starting with a "
            "digit), got {got}", {"got": _kind(v)})
    return v


#: the run name names a folder (``runs/<name>``): a file name, never a path
_RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}")


def _run_name(v: Any) -> str:
    if not isinstance(v, str) or not _RUN_NAME.fullmatch(v) or v.endswith("."):
        raise PydanticCustomError(
            "run_name", "the name is the run folder's file name (runs/<name>): ASCII letters, "
            "digits, _ . + - (not first: . + -), at most 100 characters, no / or .., got {got}",
            {"got": _kind(v) if "\x00" not in str(v) else "a text with a NUL byte"})
    return v


def _bounded(lo: int, hi: int, reason: str):
    """An integer in ``[lo, hi]``; the message gives ``reason`` for the upper bound."""

    def check(v: int) -> int:
        if v < lo:
            raise PydanticCustomError("bound", "must be ≥ {lo}, got {got}", {"lo": lo, "got": v})
        if v > hi:
            raise PydanticCustomError("bound", "must be ≤ {hi}, got {got}: {reason}",
                                      {"hi": hi, "got": v, "reason": reason})
        return v

    return Annotated[int, BeforeValidator(_integer), AfterValidator(check)]


def _names(v: Any):
    """A list of names, or one string of names separated by spaces or commas."""
    if isinstance(v, str):
        return v.replace(",", " ").split()
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise PydanticCustomError("boolean", "expected true or false, got {got}", {"got": _kind(v)})
    return v


def _part_name(v: Any) -> str:
    if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", v):
        raise PydanticCustomError("part", "expected a boundary part name (letters, digits, _ "
                                  "and dots, e.g. left or piece1.circle), got {got}",
                                  {"got": _kind(v)})
    return v


Number = Annotated[float, BeforeValidator(_number)]
Positive = Annotated[float, BeforeValidator(_number), Field(gt=0)]
NonNegative = Annotated[float, BeforeValidator(_number), Field(ge=0)]
Fraction = Annotated[float, BeforeValidator(_number), Field(ge=0, le=1)]
Int = Annotated[int, BeforeValidator(_integer)]
Count = _bounded(1, MAX_POINTS, "more points than that do not fit in one device's memory "
                 "(resample_every covers the domain with fewer)")
Steps = Annotated[int, BeforeValidator(_integer), Field(ge=0, le=MAX_STEPS)]
Every = Annotated[int, BeforeValidator(_integer), Field(ge=0, le=MAX_STEPS)]
Size = Annotated[int, BeforeValidator(_integer), Field(ge=1, le=MAX_SIZE)]
Seed = Annotated[int, BeforeValidator(_integer), Field(ge=0, lt=2**32)]
Bool = Annotated[bool, BeforeValidator(_bool)]
Name = Annotated[str, BeforeValidator(_name)]
RunName = Annotated[str, BeforeValidator(_run_name)]
#: network sizes: a layer of width w holds w*w weights (8192: 67 million a layer)
Width = _bounded(1, MAX_WIDTH, "a layer of width w holds w*w weights (8192: 67 million a "
                 "layer); PINNs train well with widths of 32 to 512")
Depth = _bounded(0, MAX_DEPTH, "deeper networks compile slowly and do not train better as "
                 "PINNs (4 to 8 layers are usual)")
PartName = Annotated[str, BeforeValidator(_part_name)]
Names = Annotated[list[Name], BeforeValidator(_names)]
ExprLike = Annotated[Any, BeforeValidator(_expr_like)]
ExprText = Annotated[str, BeforeValidator(_expr_text)]


def _fields(v: Any):
    """``[u, v]`` (or ``"u v"``): fields of every coordinate; ``{u: [x, y, t], a: [x, y]}``:
    each field with the coordinates it depends on (``null``: all of them)."""
    if isinstance(v, dict):
        return {k: _names(c) for k, c in v.items()}
    if isinstance(v, (str, list)):
        return _names(v)
    raise PydanticCustomError(
        "fields", "expected a list of field names ([u, v]) or a mapping of each field to its "
                  "coordinates ({{u: [x, y, t], a: [x, y]}}), got {got}", {"got": _kind(v)})


#: ``fields:``: names, or each name with its coordinates (``None``: all of them)
FieldNames = Annotated[dict[Name, Names | None] | list[Name], BeforeValidator(_fields)]


class Strict(BaseModel):
    """Unknown keys are errors; numbers must be finite."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


def _takes_model(cls, name: str) -> bool:
    """Whether the field ``name`` of ``cls`` holds a model (so ``null`` means its defaults)."""
    import typing

    info = cls.model_fields.get(name)
    if info is None:
        return False
    stack = [info.annotation]
    while stack:
        tp = stack.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return True
        if typing.get_origin(tp) in (list, dict):
            continue
        stack.extend(typing.get_args(tp))
    return False


class OneOf(Strict):
    """A mapping with exactly one of the keys in ``KINDS`` (plus common options)."""

    KINDS: ClassVar[tuple[str, ...]] = ()
    WHAT: ClassVar[str] = "kind"

    @model_validator(mode="before")
    @classmethod
    def _bare_kind(cls, data: Any) -> Any:
        if isinstance(data, str) and data in cls.KINDS and _takes_model(cls, data):
            return {data: {}}
        if isinstance(data, str):
            from pinn.config.errors import suggest

            raise PydanticCustomError(
                "kind", "unknown {what} {got}{hint}; choose one of: {kinds}",
                {"what": cls.WHAT, "got": repr(data), "hint": suggest(data, cls.KINDS),
                 "kinds": ", ".join(cls.KINDS)})
        if isinstance(data, dict):  # `adam:` with nothing after it means its defaults
            return {k: ({} if v is None and k in cls.KINDS and _takes_model(cls, k) else v)
                    for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _exactly_one(self):
        given = [k for k in self.KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            got = "none" if not given else " and ".join(given)
            raise PydanticCustomError(
                "one_kind", "give exactly one {what} ({kinds}); got {got}",
                {"what": self.WHAT, "kinds": ", ".join(self.KINDS), "got": got})
        return self

    @property
    def kind(self) -> str:
        return next(k for k in self.KINDS if getattr(self, k) is not None)

    @property
    def args(self):
        return getattr(self, self.kind)


def _bound(v: Any):
    """A coordinate or size of a shape: a number, or an expression of numbers, parameters
    and ``pi`` (``"2*pi"``), evaluated when the shape is built."""
    if isinstance(v, str):
        if not v.strip():
            raise PydanticCustomError("expression", "the expression is empty")
        return v
    return float(_number(v))


def _positive_bound(v: Any):
    v = _bound(v)
    if not isinstance(v, str) and not v > 0:
        raise PydanticCustomError("bound", "must be > 0, got {got}", {"got": v})
    return v


#: a number or an expression of constants (the geometry constructor checks the value)
Bound = Annotated[Any, BeforeValidator(_bound)]
PositiveBound = Annotated[Any, BeforeValidator(_positive_bound)]


# ---------------------------------------------------------------------------
# parameters


class ParamSpec(Strict):
    """A parameter: ``alpha: 0.05``, ``lam: "Re/2 - sqrt(Re^2/4 + 4*pi^2)"`` (earlier
    parameters only), ``nu: {value: 0.05, learnable: true}``, or ranged (a parametric
    problem: an input of the network, one training for the whole range)
    ``alpha: {range: [0.01, 0.1]}``."""

    value: ExprLike | None = None
    learnable: Bool = False
    range: Annotated[list[Bound], Field(min_length=2, max_length=2)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _scalar(cls, data: Any) -> Any:
        return data if isinstance(data, dict) else {"value": data}

    @model_validator(mode="after")
    def _value_or_range(self):
        if self.range is not None:
            if self.value is not None or self.learnable:
                raise PydanticCustomError(
                    "param_range", "give either a value (learnable or not) or a range "
                    "[lo, hi], not both")
            lo, hi = self.range  # expressions ("0.01/pi") are checked when built
            if not isinstance(lo, str) and not isinstance(hi, str) and not lo < hi:
                raise PydanticCustomError(
                    "param_range", "range needs lo < hi, got [{lo}, {hi}]", {"lo": lo, "hi": hi})
        elif self.value is None:
            raise PydanticCustomError(
                "param_value", "give a value (alpha: 0.05) or a range (alpha: {{range: "
                "[0.01, 0.1]}})")
        return self

    @model_serializer(mode="wrap")
    def _compact(self, handler):
        out = handler(self)
        if self.range is not None:
            return {"range": out["range"]}
        return out if self.learnable else out["value"]


# ---------------------------------------------------------------------------
# geometry



#: the shape of any dimension to name when a 2-D one gets another number of coordinates
_ANY_DIM = {"rectangle": "box", "disk": "ball"}


def _vec(n: int | None, kind: str):
    """A list of ``n`` numbers (a point or extent of a ``kind``; ``None``: one or more); the
    values themselves are checked by the geometry constructor."""

    def check(v: list) -> list:
        if n is None and not v:
            raise PydanticCustomError("length", "{kind} needs at least one number here",
                                      {"kind": kind})
        if n is not None and len(v) != n:
            other = _ANY_DIM.get(kind)
            hint = f" (a {kind} is 2-D; {other} takes any dimension)" if other else ""
            raise PydanticCustomError("length", "{kind} needs {n} numbers here, got {got}{hint}",
                                      {"kind": kind, "n": n, "got": len(v), "hint": hint})
        return v

    return Annotated[list[Bound], AfterValidator(check)]


class _Corners(Strict):
    """``{min: [...], max: [...]}`` or ``[[...], [...]]``."""

    @model_validator(mode="before")
    @classmethod
    def _pair(cls, data: Any) -> Any:
        if isinstance(data, list):
            if len(data) != 2:
                raise PydanticCustomError("corners", "give the two corners, [min, max] (or "
                                          "{{min: [...], max: [...]}}), got {n} item(s)",
                                          {"n": len(data)})
            return {"min": data[0], "max": data[1]}
        return data


class RectangleArgs(_Corners):
    min: _vec(2, "rectangle")
    max: _vec(2, "rectangle")


class BoxArgs(_Corners):
    """A box in any dimension: ``{min: [0, 0, 0, 0, 0], max: [1, 1, 1, 1, 1]}``."""

    min: _vec(None, "box")
    max: _vec(None, "box")

    @model_validator(mode="after")
    def _same_length(self):
        if len(self.min) != len(self.max):
            raise PydanticCustomError(
                "corners", "min has {a} numbers and max {b}; a box's corners have one number "
                "per dimension", {"a": len(self.min), "b": len(self.max)})
        return self


class IntervalArgs(Strict):
    min: Bound
    max: Bound

    @model_validator(mode="before")
    @classmethod
    def _pair(cls, data: Any) -> Any:
        if isinstance(data, list):
            if len(data) != 2:
                raise PydanticCustomError("interval", "an interval is [min, max], got {n} "
                                          "number(s)", {"n": len(data)})
            return {"min": data[0], "max": data[1]}
        return data


class DiskArgs(Strict):
    center: _vec(2, "disk")
    radius: PositiveBound


class BallArgs(Strict):
    """A ball in any dimension (``center`` has one number per dimension)."""

    center: _vec(None, "ball")
    radius: PositiveBound


class AnnulusArgs(Strict):
    center: _vec(2, "annulus")
    inner: PositiveBound
    outer: PositiveBound


class EllipseArgs(Strict):
    center: _vec(2, "ellipse")
    semi_axes: _vec(2, "ellipse")


class VerticesArgs(Strict):
    vertices: list[_vec(2, "a vertex")]

    @model_validator(mode="before")
    @classmethod
    def _list(cls, data: Any) -> Any:
        return {"vertices": data} if isinstance(data, list) else data


class TriangleArgs(VerticesArgs):
    @model_validator(mode="after")
    def _three(self):
        if len(self.vertices) != 3:
            raise PydanticCustomError("triangle", "a triangle has 3 vertices, got {n}",
                                      {"n": len(self.vertices)})
        return self


class LShapeArgs(Strict):
    """The square ``[min, max]`` without one quarter (the re-entrant corner at its centre)."""

    min: _vec(2, "l_shape") = [-1.0, -1.0]
    max: _vec(2, "l_shape") = [1.0, 1.0]
    cut: Literal["lower_right", "lower_left", "upper_right", "upper_left"] = "lower_right"


class ShapeSpec(OneOf):
    KINDS: ClassVar = ("interval", "rectangle", "box", "hypercube", "disk", "ball", "hyperball",
                       "annulus", "ellipse", "triangle", "polygon", "l_shape", "union",
                       "difference", "intersection")
    WHAT: ClassVar = "shape"

    interval: IntervalArgs | None = None
    rectangle: RectangleArgs | None = None
    box: BoxArgs | None = None
    hypercube: BoxArgs | None = None  # another name of box (PINNacle's, DeepXDE's)
    disk: DiskArgs | None = None
    ball: BallArgs | None = None
    hyperball: BallArgs | None = None  # another name of ball
    annulus: AnnulusArgs | None = None
    ellipse: EllipseArgs | None = None
    triangle: TriangleArgs | None = None
    polygon: VerticesArgs | None = None
    l_shape: LShapeArgs | None = None
    union: Annotated[list[ShapeSpec], Field(min_length=2)] | None = None
    difference: Annotated[list[ShapeSpec], Field(min_length=2)] | None = None
    intersection: Annotated[list[ShapeSpec], Field(min_length=2)] | None = None
    parts: dict[PartName, PartName] | None = None  # rename boundary parts: {circle: hole}



class DomainSpec(ShapeSpec):
    """``{space: <shape>, time: [t0, t1]}``, or the shape's key directly:
    ``{rectangle: ..., time: [t0, t1]}``."""

    KINDS: ClassVar = ("space",) + ShapeSpec.KINDS
    WHAT: ClassVar = "domain shape"

    space: ShapeSpec | None = None
    time: Annotated[list[Bound], Field(min_length=2, max_length=2)] | None = None

    @property
    def shape(self) -> ShapeSpec:
        if self.space is not None:
            return self.space
        return ShapeSpec(**{self.kind: self.args, "parts": self.parts})


# ---------------------------------------------------------------------------
# coefficients and initial values given as data


class FileValues(Strict):
    """Values read from a table file and interpolated: ``{file: k.dat, interpolation:
    linear}`` (columns: the coordinates, then the value; ``coords`` names them, default
    the spatial coordinates). Scattered points take ``interpolation: nearest`` (resampled
    once on a regular grid of ``resample`` nodes per axis)."""

    file: str
    interpolation: Literal["linear", "nearest"] = "linear"
    coords: Names | None = None
    resample: Annotated[int, BeforeValidator(_integer), Field(ge=2, le=4096)] | None = None


class PieceSpec(Strict):
    """One piece of a piecewise coefficient: ``{where: "x < 0.5", value: 1}``; the last
    piece may go without ``where`` (the value everywhere else)."""

    where: ExprText | None = None
    value: ExprLike


class CellsSpec(Strict):
    """A table of rectangular cells: ``edges`` per coordinate (``{x: [0, 0.5, 1], y: [0,
    1]}``) and ``values`` nested as the edges (``[[1], [16]]``: cell (i, j) at
    ``values[i][j]``), numbers or expressions."""

    edges: Annotated[dict[Name, Annotated[list[Number], Field(min_length=2)]],
                     Field(min_length=1)]
    values: list


class CoefficientSpec(OneOf):
    """A named coefficient usable in every expression: from data ``{file: k.dat,
    interpolation: linear|nearest}``, ``{piecewise: [{where: "x < 0.5", value: 1},
    {value: 16}]}`` or ``{cells: {edges: {x: [...], y: [...]}, values: [[...], ...]}}``."""

    KINDS: ClassVar = ("file", "piecewise", "cells")
    WHAT: ClassVar = "coefficient"

    file: str | None = None
    piecewise: Annotated[list[PieceSpec], Field(min_length=1)] | None = None
    cells: CellsSpec | None = None
    interpolation: Literal["linear", "nearest"] | None = None
    coords: Names | None = None
    resample: Annotated[int, BeforeValidator(_integer), Field(ge=2, le=4096)] | None = None

    @model_validator(mode="after")
    def _file_options(self):
        if self.file is None:
            extra = [k for k in ("interpolation", "coords", "resample")
                     if getattr(self, k) is not None]
            if extra:
                raise PydanticCustomError(
                    "coefficient", "{key} belongs to a coefficient read from a file "
                    "(file: k.dat)", {"key": extra[0]})
        return self


def _initial_value(v: Any):
    """An initial value: a number, an expression, or ``{file: u0.dat, ...}``."""
    if isinstance(v, dict):
        return FileValues.model_validate(v)
    return _expr_like(v)


InitialValue = Annotated[Any, BeforeValidator(_initial_value)]


# ---------------------------------------------------------------------------
# conditions


class RobinArgs(Strict):
    """``a*u + b*du/dn = value``."""

    a: ExprLike = 1.0
    b: ExprLike = 1.0
    value: ExprLike = 0.0


class PeriodicArgs(Strict):
    pair: Annotated[list[PartName], Field(min_length=2, max_length=2)]
    fields: Names | None = None
    order: Annotated[int, BeforeValidator(_integer), Field(ge=0, le=4)] = 1

    @model_validator(mode="before")
    @classmethod
    def _pair(cls, data: Any) -> Any:
        return {"pair": data} if isinstance(data, list) else data


class GenerateArgs(Strict):
    """Synthetic observations: ``{from: exact, n: 2000, noise: 0.01, seed: 0}``."""

    from_: Literal["exact", "reference"] = Field("exact", alias="from")
    n: Count = 1000
    noise: NonNegative = 0.0
    seed: Seed = 0
    sampler: Literal["uniform", "sobol", "halton", "lhs"] = "uniform"


class DataArgs(Strict):
    """Observed values: ``{file: obs.csv}`` (relative to the problem file) or ``{generate: ...}``.

    A CSV file has a header naming the coordinates and the observed fields; an
    NPZ file has one array per coordinate and field (or ``points[N, d]``).
    ``noise`` is the standard deviation of the measurement noise, as a fraction
    of the standard deviation of the values (``0.01``: 1 % noise).
    """

    file: str | None = None
    generate: GenerateArgs | None = None
    fields: Names | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.file is None) == (self.generate is None):
            raise PydanticCustomError(
                "data_source", "give exactly one of file (a CSV/NPZ path) or generate "
                "({{from: exact, n: 1000}})")
        return self


Where = Annotated[Any, BeforeValidator(lambda v: _on(v))]


def _on(v: Any):
    if isinstance(v, str) and v.strip():
        return v
    if isinstance(v, list) and v:
        return [_part_name(s) for s in v]
    raise PydanticCustomError(
        "on", "'on' is a boundary part name, a list of names, or a predicate such as "
        "\"x == 0\"; got {got}", {"got": _kind(v)})


class ConditionSpec(OneOf):
    """One named condition; ``on``, ``weight`` and ``hard`` are common options."""

    KINDS: ClassVar = ("dirichlet", "neumann", "robin", "periodic", "initial", "constraint",
                       "data")
    WHAT: ClassVar = "condition type"

    dirichlet: Annotated[dict[Name, ExprLike], Field(min_length=1)] | None = None
    neumann: Annotated[dict[Name, ExprLike], Field(min_length=1, max_length=1)] | None = None
    robin: Annotated[dict[Name, RobinArgs], Field(min_length=1, max_length=1)] | None = None
    periodic: PeriodicArgs | None = None
    initial: Annotated[dict[Name, InitialValue], Field(min_length=1)] | None = None
    constraint: ExprText | None = None
    data: DataArgs | None = None

    on: Where | None = None
    rate: Annotated[dict[Name, ExprLike], Field(min_length=1)] | None = None
    weight: NonNegative = 1.0
    # dirichlet: null (the default) lets the plan decide (built in where the geometry can)
    hard: Bool | None = None
    noise: NonNegative | None = None


# ---------------------------------------------------------------------------
# model

Activation = Literal["tanh", "sin", "gelu", "swish", "silu", "relu", "softplus", "sigmoid"]


class RWFArgs(Strict):
    """Random weight factorisation (Wang et al.): ``W = V diag(exp(s))``, ``s ~ N(mean, std)``."""

    mean: Number = 1.0
    std: NonNegative = 0.1


class MLPArgs(Strict):
    width: Width = 64
    depth: Depth = 4
    activation: Activation = "tanh"


class PirateArgs(Strict):
    width: Width = 64
    blocks: _bounded(1, MAX_DEPTH, "each block is three layers; deeper networks compile "
                     "slowly and do not train better as PINNs") = 3
    activation: Activation = "tanh"


class FourierArgs(Strict):
    features: Width = 64
    scale: Positive | dict[Name, Positive] = 1.0
    """An angular frequency in the normalised inputs' units: one number, or one per
    coordinate (``{x: 30, t: 5}``; a coordinate not listed: 1)."""


def _periods(v: Any):
    if isinstance(v, str):
        v = v.replace(",", " ").split()
    if isinstance(v, list):
        return {k: None for k in v}
    return v


class ModelSpec(OneOf):
    """``{mlp: {width: 64, depth: 4}}``, ``{modified_mlp: {...}}`` or ``{pirate: {...}}``.

    Options for every network: ``fourier`` (random Fourier features), ``rwf``
    (random weight factorisation), ``periodic`` (coordinates embedded exactly
    periodically: ``[x]`` with the domain's length as period, or ``{x: 2.0}``),
    ``harmonics`` (of the periodic embedding), ``trainable_periods`` (periodic coordinates
    whose period is learnt), ``normalize`` (scale inputs to
    [-1, 1] from the domain's bounds) and ``per_field`` (one network of this kind per
    field, PINNacle's PFNN; a field declared on a subset of the coordinates, ``fields:
    {a: [x, y]}``, gets its own network of those inputs in any case).  PirateNet uses
    Fourier features and RWF by default; ``fourier: false`` / ``rwf: false`` switch them
    off.
    """

    KINDS: ClassVar = ("mlp", "modified_mlp", "pirate")
    WHAT: ClassVar = "network"

    mlp: MLPArgs | None = None
    modified_mlp: MLPArgs | None = None
    pirate: PirateArgs | None = None
    fourier: FourierArgs | Literal[False] | None = None
    rwf: RWFArgs | Literal[False] | None = None
    periodic: Annotated[dict[Name, Positive | None], BeforeValidator(_periods)] | None = None
    harmonics: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=64)] = 1
    trainable_periods: Names = []
    """Coordinates in ``periodic`` whose period is learnt from the one given (JAX-PI's
    trainable time period: ``periodic: {t: 1.0}, trainable_periods: [t]``)."""
    normalize: Bool = True
    output_scale: dict[Name, Positive] | None = None
    """The network's output for each field listed times this number (the others 1): a
    field of size 1e4 as 1e4 times an output of order one. Absent: the plan decides."""
    per_field: Bool = False
    """One network of this kind per field, each with the width and depth given (PINNacle's
    PFNN), instead of one network with an output per field."""


# ---------------------------------------------------------------------------
# training


class AdamArgs(Strict):
    """``decay``: none, exponential (``decay_rate`` per ``decay_steps``; default: a tenth of
    the stage) or cosine (to 0 over ``decay_steps``; default: the stage)."""

    lr: Positive = 1e-3
    warmup: Steps = 0
    decay: Literal["exponential", "cosine", "none"] = "exponential"
    decay_rate: Annotated[float, BeforeValidator(_number), Field(gt=0, le=1)] = 0.9
    decay_steps: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=MAX_STEPS)] | None = None
    b1: Annotated[float, BeforeValidator(_number), Field(ge=0, lt=1)] = 0.9
    b2: Annotated[float, BeforeValidator(_number), Field(ge=0, lt=1)] = 0.999
    clip: Positive | None = None


class AdamWArgs(AdamArgs):
    weight_decay: NonNegative = 1e-4


class SOAPArgs(AdamArgs):
    """SOAP: Adam in the eigenbasis of Shampoo's preconditioner (Vyas et al. 2024), with
    Adam's schedule options; ``precondition_frequency``: steps between eigenbasis refreshes;
    ``max_precond_dim``: longer axes are not rotated."""

    lr: Positive = 3e-3
    b1: Annotated[float, BeforeValidator(_number), Field(ge=0, lt=1)] = 0.95
    b2: Annotated[float, BeforeValidator(_number), Field(ge=0, lt=1)] = 0.95
    weight_decay: NonNegative = 0.0
    precondition_frequency: Annotated[int, BeforeValidator(_integer),
                                      Field(ge=1, le=MAX_STEPS)] = 10
    shampoo_beta: Annotated[float, BeforeValidator(_number), Field(ge=0, lt=1)] | None = None
    max_precond_dim: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=100_000)] = 10_000


class LBFGSArgs(Strict):
    memory: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1000)] = 20
    max_linesearch_steps: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1000)] = 30
    gtol: NonNegative = 0.0


class SSBroydenArgs(Strict):
    """Self-scaled quasi-Newton (dense inverse Hessian): use with ``precision: 64``."""

    resample_every: Annotated[int, BeforeValidator(_integer),
                              Field(ge=1, le=MAX_STEPS)] | None = None
    max_linesearch_steps: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1000)] = 30
    gtol: NonNegative = 0.0
    max_params: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=100_000)] = 20_000


class LMArgs(Strict):
    """Levenberg-Marquardt on the residual vector (full batch; use ``precision: 64``):
    ``damping`` relative to the Gram matrix's mean diagonal, raised ``up`` on a rejected or
    poor trial, lowered ``down`` on a good one."""

    damping: Positive = 1e-3
    up: Annotated[float, BeforeValidator(_number), Field(gt=1)] = 3.0
    down: Annotated[float, BeforeValidator(_number), Field(gt=0, lt=1)] = 1 / 3
    max_tries: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1000)] = 30
    gtol: NonNegative = 0.0
    max_jacobian: Annotated[int, BeforeValidator(_integer), Field(ge=1)] = 50_000_000


class GaussNewtonArgs(Strict):
    """Gauss-Newton (energy natural gradient) with a fixed ``damping`` and a backtracking
    line search (step length times ``shrink`` per trial); full batch, ``precision: 64``."""

    damping: Positive = 1e-10
    shrink: Annotated[float, BeforeValidator(_number), Field(gt=0, lt=1)] = 0.5
    max_tries: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1000)] = 30
    gtol: NonNegative = 0.0
    max_jacobian: Annotated[int, BeforeValidator(_integer), Field(ge=1)] = 50_000_000


class StageSpec(OneOf):
    """``{adam: {lr: 1e-3}, steps: 5000}``, ``{lbfgs: {}, steps: 500}`` or
    ``{ssbroyden: {resample_every: 500}, steps: 5000}``."""

    KINDS: ClassVar = ("adam", "adamw", "soap", "lbfgs", "lm", "gauss_newton", "ssbroyden",
                       "ssbfgs")
    WHAT: ClassVar = "optimizer"

    adam: AdamArgs | None = None
    adamw: AdamWArgs | None = None
    soap: SOAPArgs | None = None
    lm: LMArgs | None = None
    gauss_newton: GaussNewtonArgs | None = None
    lbfgs: LBFGSArgs | None = None
    ssbroyden: SSBroydenArgs | None = None
    ssbfgs: SSBroydenArgs | None = None
    steps: Steps
    # this stage in float32 or float64, or mixed (a line-search stage: float32 until its
    # line search stalls, then float64); null: training.precision's choice for it
    precision: Literal[32, 64, "mixed"] | None = None



class RADArgs(Strict):
    """Residual-based adaptive sampling: density ∝ |r|^k / mean|r|^k + c from a pool."""

    k: NonNegative = 1.0
    c: NonNegative = 1.0
    pool: Count | None = None  # the library's: max(100 000, 10 x interior)


Sampler = Literal["uniform", "sobol", "halton", "lhs", "grid"]


class PointsSpec(Strict):
    interior: Count = 4096
    boundary: Count = 1024
    initial: Count = 1024
    resample_every: Every = 100
    sampler: Sampler = "uniform"
    rad: RADArgs | None = None


class FixedArgs(Strict):
    weights: dict[Name, NonNegative] | None = None


class GradNormArgs(Strict):
    """Balancing of the condition terms against the equations' residual gradient; the
    equations' weights stay fixed, the others within ``bounds`` (``[lower, upper]``)."""

    every: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=MAX_STEPS)] = 1000
    alpha: Fraction = 0.9
    bounds: Annotated[list[Positive], Field(min_length=2, max_length=2)] = [1.0, 1.0e4]

    @model_validator(mode="after")
    def _ordered(self):
        if not self.bounds[0] <= self.bounds[1]:
            raise PydanticCustomError("bounds", "bounds are [lower, upper] with lower <= "
                                      "upper, got {b}", {"b": self.bounds})
        return self


class AnnealingArgs(GradNormArgs):
    """Wang et al. 2021's learning-rate annealing (``max|grad R| / mean|grad L_i|``)."""

    every: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=MAX_STEPS)] = 100


class CausalArgs(Strict):
    eps: Positive = 1.0
    chunks: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=10_000)] = 32


class RBAArgs(Strict):
    """Residual-based attention: a multiplier per collocation point of each equation,
    ``lambda <- gamma*lambda + eta*|r|/max|r|``, bounded by ``eta/(1 - gamma)``."""

    gamma: Annotated[float, BeforeValidator(_number), Field(ge=0, lt=1)] = 0.999
    eta: Positive = 0.01
    initial: NonNegative = 1.0

    @model_validator(mode="after")
    def _bounded(self):
        if self.initial > self.eta / (1 - self.gamma) * (1 + 1e-12):
            raise PydanticCustomError(
                "initial", "initial {i} is above the multipliers' bound eta/(1 - gamma) = "
                "{b}; lower initial or raise eta", {"i": self.initial,
                                                    "b": self.eta / (1 - self.gamma)})
        return self


class VRBAArgs(RBAArgs):
    """vRBA's exponential potential (Toscano et al. 2025): ``c_log`` scales its temperature,
    ``phi`` mixes it with uniform weights."""

    c_log: Positive = 1.0
    phi: Fraction = 1.0


class WeightingSpec(OneOf):
    KINDS: ClassVar = ("fixed", "gradnorm", "annealing", "causal", "rba", "vrba")
    WHAT: ClassVar = "weighting"

    fixed: FixedArgs | None = None
    gradnorm: GradNormArgs | None = None
    annealing: AnnealingArgs | None = None
    causal: CausalArgs | None = None
    rba: RBAArgs | None = None
    vrba: VRBAArgs | None = None



def _default_stages() -> list[StageSpec]:
    """The default recipe (as pinn.Training's): Adam to the basin, then self-scaled Broyden
    in float64 with the points redrawn every 500 steps."""
    adam = AdamArgs(lr=5e-3, decay="exponential", decay_rate=0.98, decay_steps=1000)
    return [StageSpec(adam=adam, steps=2000),
            StageSpec(ssbroyden=SSBroydenArgs(resample_every=500), steps=3000)]


def _devices(v: Any) -> Any:
    """``training.devices``: ``all`` or a device count >= 1 (null: one device, no mesh)."""
    if v is None or v == "all":
        return v
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise PydanticCustomError("devices", "write 'all' or a device count >= 1 (null: one "
                                  "device), got {v}", {"v": repr(v)})
    return v


class StopArgs(Strict):
    """When a stage is done before its steps run out (``pinn.train.Stop``): converged once
    the loss is ``residual^2`` of the run's first loss; the last stage only, on a plateau
    once the lowest loss of the last ``patience`` steps (at least ``patience_fraction`` of
    the stage) is not ``improvement`` below the lowest before; checked every ``every``
    steps. ``null`` turns a criterion off; ``stop: false`` runs every step of every
    stage."""

    residual: Annotated[float, BeforeValidator(_number), Field(gt=0, lt=1)] | None = 1e-8
    improvement: Annotated[float, BeforeValidator(_number), Field(gt=0, lt=1)] | None = 0.01
    patience: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=MAX_STEPS)] = 300
    patience_fraction: Fraction = 0.2
    every: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=MAX_STEPS)] = 100


class TrainingSpec(Strict):
    seed: Seed = 0
    # auto: first-order stages in float32; the line-search second-order ones (ssbroyden,
    # ssbfgs, lbfgs is first-order here) mixed: float32 until the line search stalls, then
    # float64; Gauss-Newton (lm, gauss_newton) in float64; a stage's own precision wins
    precision: Literal[32, 64, "auto"] = "auto"
    points: PointsSpec = Field(default_factory=PointsSpec)
    stages: Annotated[list[StageSpec], Field(min_length=1, max_length=MAX_STAGES)] = Field(
        default_factory=_default_stages)
    weighting: WeightingSpec = Field(default_factory=lambda: WeightingSpec(fixed=FixedArgs()))
    chunk: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1_000_000)] = 500
    checkpoint_every: Every = 1000
    eval_every: Every = 1000
    # data parallel: "all" or a device count (null: one device, no mesh); micro_batch: at
    # most this many points per device in one pass (gradient accumulation; null: all)
    devices: Annotated[Literal["all"] | int | None, BeforeValidator(_devices)] = None
    micro_batch: Count | None = None
    stop: StopArgs | Literal[False] = Field(default_factory=StopArgs)
    windows: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=1000)] = 1
    """Time marching: an evolution problem trained in this many equal time windows, one
    after another, each by the stages above, each starting from the previous one's values
    at its start (a soft initial condition; ``pinn.marching``). 1: the whole interval at
    once."""
    time_limit: Annotated[float, BeforeValidator(_number), Field(gt=0, le=1e7)] | None = None
    """Seconds of wall time for the run, compilation included (``null``: no limit): each
    stage but the last ends at its share of it, the run at it, and a last stage that has run
    its steps while its loss still falls goes on until it is done or the time is up
    (``pinn.Training.time_limit``)."""


class PlanSpec(Strict):
    """What the plan made from the problem may choose (``pinn.plan``): ``hard`` (build in the
    Dirichlet conditions that do not say ``hard`` themselves, where the geometry can),
    ``points`` (size the collocation points by the problem's dimension, where
    ``training.points`` does not give them) and ``scale`` (multiply the network's output by
    the size of a field's boundary, initial and data values where that is far from one and
    ``model.output_scale`` does not say) and ``frequency`` (random Fourier features where a
    source or value oscillates fast, each input's scale its frequency, where
    ``model.fourier`` does not say) and ``windows`` (march an evolution in time windows
    where its horizon, time span times rate, is long, where ``training.windows`` does not
    say); ``frequency`` is off unless the file turns it on (not yet shown to help on
    problems nobody tuned); ``balance`` (in an inverse problem, weight each data condition
    to start the size of the physics, where its ``weight`` is not given); ``holdout`` (in
    an inverse problem, hold a tenth of each data condition of 200 rows or more out of
    training and keep the parameters at which its misfit was lowest); ``energy`` (where a
    steady equation's diffusion coefficient jumps in space, minimise its energy, the
    divergence form's, beside the residual, with the network bending at the jumps);
    ``layer`` (where a diffusive evolution's soft start disagrees with its boundary
    conditions, take time by its square root); ``residuals`` (where one equation's terms
    are more than ten times another's, weight the smaller so that each is met to the same
    relative accuracy, and a soft Neumann or Robin condition of weight 1 likewise against
    the equations, where ``training.weighting`` is fixed and does not weight it);
    ``unevolved`` (leave out the start values of the fields no equation differentiates in
    time, a pressure: the other fields fix them at every time); ``rates`` (where there are
    such fields, hold the equations that fix them with no time derivative, continuity, in
    rate at the start too, ``D(equation, t) = 0``: the start's one-sided points leave that
    rate, and so the pressure there, free)."""

    hard: Bool = True
    points: Bool = True
    scale: Bool = True
    frequency: Bool = False
    windows: Bool = True
    balance: Bool = True
    holdout: Bool = True
    energy: Bool = True
    layer: Bool = True
    residuals: Bool = True
    unevolved: Bool = True
    rates: Bool = True


# ---------------------------------------------------------------------------
# evaluation, references, FEM


class EvaluationSpec(Strict):
    """The grid on which errors and plots are computed: points per coordinate."""

    resolution: Annotated[int, BeforeValidator(_integer), Field(ge=2, le=100_000)] | list[
        Annotated[int, BeforeValidator(_integer), Field(ge=2, le=100_000)]] | None = None
    snapshots: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=12)] = 4

    @model_validator(mode="after")
    def _size(self):
        res = self.resolution
        if isinstance(res, list) and math.prod(res) > 20_000_000:
            raise PydanticCustomError("grid", "the evaluation grid has {n} points; keep it "
                                      "under 20 million", {"n": math.prod(res)})
        return self


class FemSpec(Strict):
    """Options of the finite-element baseline (``pinn fem``) and of ``reference: {fem: ...}``."""

    cells: Size = 64
    element: Literal["P1", "P2"] = "P2"
    dt: Positive | None = None
    theta: Fraction = 0.5


class ReferenceSpec(OneOf):
    """``{burgers: {nu: "0.01/pi"}}``, ``{allen_cahn: {}}``, ``{kdv: {}}``,
    ``{kuramoto_sivashinsky: {alpha: ..., beta: ..., gamma: ...}}``, ``{fem: {cells: 128}}``
    or ``{file: ref.npz}`` (points and values, relative to the problem file)."""

    KINDS: ClassVar = ("burgers", "allen_cahn", "kdv", "kuramoto_sivashinsky", "fem", "file")
    WHAT: ClassVar = "reference"

    burgers: dict[Name, ExprLike] | None = None
    allen_cahn: dict[Name, ExprLike] | None = None
    kdv: dict[Name, ExprLike] | None = None
    kuramoto_sivashinsky: dict[Name, ExprLike] | None = None
    fem: FemSpec | None = None
    file: str | None = None



# ---------------------------------------------------------------------------
# quantities of interest

#: the most quadrature points of one quantity (pinn.qoi.MAX_POINTS)
MAX_QUANTITY_POINTS = 1 << 22


class QuantitySpec(OneOf):
    """A quantity of interest (``pinn.qoi``), one number computed from the fields: the
    ``integral``, ``mean``, ``max`` or ``min`` of an expression over a region (``on``:
    ``interior``, the default, ``boundary``, a part, a list of parts, or a predicate such as
    ``"x < 0.5"``; ``where``: a predicate restricting it; ``time``: the spatial region at
    that time of an evolution problem; ``points``: the Sobol points of its quadrature,
    default 4096), or its ``value`` at a point (``at``: one number per coordinate):
    ``{mean: u}``, ``{integral: "-k*u_x", on: left}``, ``{value: u, at: [0.5, 0.5]}``."""

    KINDS: ClassVar = ("integral", "mean", "max", "min", "value")
    WHAT: ClassVar = "quantity"

    integral: ExprText | None = None
    mean: ExprText | None = None
    max: ExprText | None = None
    min: ExprText | None = None
    value: ExprText | None = None
    on: Where | None = None
    where: ExprText | None = None
    time: Number | None = None
    points: _bounded(1, MAX_QUANTITY_POINTS, "each point is evaluated for every query; a "
                     "power of two such as 4096 or 65536 balances Sobol's points") | None = None
    at: Annotated[list[Number], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _options_of_the_kind(self):
        if sum(getattr(self, k) is not None for k in self.KINDS) != 1:
            return self  # OneOf says: give exactly one
        if self.value is not None:
            extra = [k for k in ("on", "where", "time", "points") if getattr(self, k) is not None]
            if extra:
                raise PydanticCustomError(
                    "quantity", "{key} belongs to a quantity over a region (integral, mean, "
                    "max, min); a value is taken at one point (at: [...])", {"key": extra[0]})
            if self.at is None:
                raise PydanticCustomError(
                    "quantity", "a value needs the point: at: [x, y, ...] (one number per "
                    "coordinate)")
        elif self.at is not None:
            raise PydanticCustomError(
                "quantity", "at belongs to a value (value: u, at: [...]); a {kind} is "
                "taken over a region (on: ...)", {"kind": self.kind})
        return self


# ---------------------------------------------------------------------------
# the file


class ProblemSpec(Strict):
    """A whole problem file.  ``define`` names expressions of the coordinates and
    parameters (``r: "sqrt(x^2 + y^2)"``) that later expressions may use; ``coefficients``
    names coefficients given as data or piecewise (``k: {file: k.dat}``), usable in every
    expression after them."""

    name: RunName | None = None
    description: str | None = None
    coords: Names | None = None
    fields: FieldNames = ["u"]
    """The unknowns, each a function of every coordinate (``[u, v]``), or each with the
    coordinates it depends on (``{u: [x, y, t], a: [x, y]}``): a field of fewer
    coordinates gets its own network of those inputs, so its derivatives along the others
    are exactly zero."""
    params: dict[Name, ParamSpec] = {}
    define: dict[Name, ExprText] = {}
    coefficients: dict[Name, CoefficientSpec] = {}
    domain: DomainSpec
    equations: Annotated[dict[Name, ExprText], Field(min_length=1)]
    conditions: dict[Name, ConditionSpec] = {}
    exact: dict[Name, ExprLike] | None = None
    reference: ReferenceSpec | None = None
    quantities: dict[Name, QuantitySpec] = {}
    """Named outputs computed from the fields (``pinn.qoi``): ``pinn quantities RUN``
    evaluates them, ``pinn optimize FILE --run RUN --minimize NAME`` optimises one over a
    parametric solution's parameters."""
    # no model: a 3 x 30 tanh MLP, the size the default (second-order) recipe is made for
    model: ModelSpec = Field(default_factory=lambda: ModelSpec(mlp=MLPArgs(width=30, depth=3)))
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    plan: PlanSpec = Field(default_factory=PlanSpec)
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)
    fem: FemSpec = Field(default_factory=FemSpec)


ShapeSpec.model_rebuild()
DomainSpec.model_rebuild()
