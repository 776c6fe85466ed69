"""The graph every format exports: ``points[N, d] float32 -> values[N, k] float32``.

:func:`build_graph` compiles the requested outputs (any expressions of the fields, through
:func:`pinn.compile.compile_terms`) with the trained parameters baked in as constants, and
traces it once to a closed jaxpr over a symbolic batch size ``N``. :func:`in_dtype` replays
that jaxpr with every floating value in a reduced precision (float16, bfloat16), so the
float32 trace is the one truth each artefact is a lowering of.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinn.dsl.parser import split_expressions

__all__ = ["ExportError", "Graph", "Program", "build_graph", "in_dtype", "split_outputs",
           "DTYPES"]

#: constants up to this many elements computed from constants are folded into one
_FOLD_MAX = 1 << 22

#: compute precisions of an export (int8: ONNX dynamic quantisation of the weights)
DTYPES = ("float32", "float16", "bfloat16", "int8")

#: the largest exported file read back (ONNX's own limit)
MAX_ARTEFACT_BYTES = 2**31


class ExportError(ValueError):
    """Bad export input: an unknown output, an expression the graph cannot hold, a missing
    optional dependency. The message names the fix."""


def split_outputs(text: str | Sequence[str] | None) -> list[str] | None:
    """``"u,v,D(u, x)"`` -> ``["u", "v", "D(u, x)"]``: commas inside brackets do not split."""
    if text is None:
        return None
    if not isinstance(text, str):
        return [s for t in text for s in (split_outputs(t) or [])]
    try:
        return split_expressions(text)
    except ValueError as exc:
        raise ExportError(f"--outputs {exc}") from None


@dataclass(frozen=True)
class Program:
    """An exported file read back by its format's ``load``: ``fn(points[N, d]) ->
    values[N, k]`` (NumPy in and out), and the widths its graph declares, ``inputs`` (d)
    and ``outputs`` (k), None where the graph leaves one open."""

    fn: Callable[[Any], Any]
    inputs: int | None
    outputs: int | None

    def __call__(self, points):
        return self.fn(points)


def width(shape) -> int | None:
    """The number of columns of ``shape`` (``[N, k]``, ``N`` symbolic), None when it is not
    a fixed number."""
    if len(shape) != 2:
        return None
    k = shape[1]
    return k if isinstance(k, int) and not isinstance(k, bool) else None


@dataclass
class Graph:
    """A solution's outputs as one function of one array.

    ``fn(points[N, d]) -> values[N, k]`` in the solution's precision; ``closed`` its jaxpr
    over the symbolic ``N`` (``spec`` is the input's abstract value); ``inputs`` the
    coordinate names (the columns of ``points``), ``outputs`` the output names (the
    columns of ``values``) and ``exprs`` the expression of each output.
    """

    fn: Any
    closed: Any
    spec: Any
    inputs: list[str]
    outputs: list[str]
    exprs: dict[str, str]
    parametric: list[str] = field(default_factory=list)
    precision: int = 32


def _expressions(solution, outputs: Sequence[str] | None) -> dict:
    from pinn.dsl.parser import ParseError

    problem = solution.problem
    names = list(outputs) if outputs else list(problem.field_names)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ExportError(f"output(s) {dup} asked for twice; give each once")
    known = ", ".join([*problem.field_names, *(c.name for c in problem.coords)])
    exprs = {}
    for n in names:
        try:
            exprs[n] = solution._parse(n)
        except ParseError as exc:
            raise ExportError(f"output {n!r} is not an expression of {problem.name}: {exc} "
                              f"(names it knows: {known}; derivatives as u_x, D(u, x), "
                              "laplacian(u))") from None
        except ValueError as exc:  # a derivative of too high an order
            raise ExportError(f"output {exc}") from None
    return exprs


def build_graph(solution, outputs: Sequence[str] | None = None) -> Graph:
    """Compile ``outputs`` (names or expressions; default: the fields) of a trained
    ``solution`` into one traced function of ``points[N, d]``."""
    import jax
    import jax.numpy as jnp
    from jax import export as jex

    from pinn.compile import CompileError, UnsupportedPrimitive, compile_terms
    from pinn.train.spec import precision_scope

    problem = solution.problem
    exprs = _expressions(solution, outputs)
    names = list(exprs)
    d = len(problem.inputs)  # the coordinates, then the ranged parameters (parametric)
    with precision_scope(solution.precision):
        dtype = jnp.zeros(()).dtype
        try:
            fn = compile_terms(exprs, coords=problem.inputs, fields=problem.fields,
                               apply=solution.apply, spatial=problem.spatial)
        except CompileError as exc:
            raise ExportError(f"cannot export {names}: {exc}") from None
        params = jax.tree.map(lambda a: jnp.asarray(a, dtype)
                              if jnp.issubdtype(jnp.asarray(a).dtype, jnp.floating)
                              else jnp.asarray(a), jax.device_get(solution.params))

        def graph(points):
            out = fn(params, points)
            return jnp.stack([jnp.broadcast_to(jnp.asarray(out[k], points.dtype),
                                               points.shape[:1]) for k in names], axis=1)

        n = jex.symbolic_shape("N")[0]
        spec = jax.ShapeDtypeStruct((n, d), dtype)
        try:
            closed = jax.make_jaxpr(graph)(spec)
        except (UnsupportedPrimitive, CompileError, KeyError) as exc:
            raise ExportError(f"the exported graph cannot hold {names}: {exc}") from None
        except ValueError as exc:  # e.g. per-point inputs (normals) the graph does not have
            raise ExportError(f"the exported graph cannot hold {names}: {exc}; export "
                              "expressions of the fields and coordinates only") from None
    return Graph(graph, closed, spec, [c.name for c in problem.coords], names,
                 {k: str(v) for k, v in exprs.items()},
                 parametric=[p.name for p in problem.ranged], precision=solution.precision)


def _is_float(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating) or str(dtype) == "bfloat16"


def _cast(v, target):
    """``v`` (a literal, an array, a tracer, a Python float) in ``target`` when it is
    floating; anything else as it is."""
    import jax
    from jax.extend import core as jcore

    a = v.val if isinstance(v, jcore.Literal) else v
    dt = getattr(a, "dtype", None)
    if isinstance(a, jax.core.Tracer):
        return a.astype(target) if _is_float(dt) and dt != target else a
    if dt is not None and _is_float(dt) and dt != target:
        return np.asarray(a).astype(target)
    if isinstance(a, float):
        return np.asarray(a, target)
    return a


def _fix_params(params, target) -> dict:
    """An equation's parameters with each floating dtype among them made ``target``."""
    out = {}
    for k, v in params.items():
        if isinstance(v, np.dtype) and _is_float(v):
            v = target
        out[k] = v
    return out


def _bind(eqn, invals: list, target) -> list:
    """The outputs of ``eqn`` on ``invals``: computed now when they are constants (of a static
    shape, none over ``_FOLD_MAX`` elements), else bound into the trace."""
    import jax

    params = _fix_params(eqn.params, target)
    static = all(isinstance(d, int) for v in eqn.outvars for d in v.aval.shape)
    if invals and static and all(not isinstance(x, jax.core.Tracer) for x in invals):
        # weights only (a factorised weight, scaled Fourier features, the input map):
        # computed once here, so that the graph holds the result as a constant, which
        # onnxruntime's int8 quantisation needs of a MatMul's weights
        try:
            with jax.ensure_compile_time_eval():
                outs = eqn.primitive.bind(*invals, **params)
            vals = outs if eqn.primitive.multiple_results else [outs]
            if all(np.size(o) <= _FOLD_MAX for o in vals):
                return [np.asarray(o) for o in vals]
        except (TypeError, ValueError, jax.errors.JAXTypeError):
            pass  # a primitive that cannot run eagerly: it stays in the graph
    outs = eqn.primitive.bind(*invals, **params)
    return outs if eqn.primitive.multiple_results else [outs]


def _replay(jaxpr, consts, args, target, dtype: str) -> list:
    """The outputs of ``jaxpr`` on ``args`` with every floating value in ``target`` (``dtype``
    names it); ``jit`` and ``custom_jvp`` / ``custom_vjp`` calls are inlined."""
    from jax.extend import core as jcore

    env: dict = {}

    def read(v):
        return _cast(v, target) if isinstance(v, jcore.Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts, strict=True):
        env[v] = _cast(c, target)
    for v, a in zip(jaxpr.invars, args, strict=True):
        env[v] = _cast(a, target)
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        sub = eqn.params.get("jaxpr") if eqn.primitive.name in ("pjit", "jit") else None
        if sub is None and eqn.primitive.name in ("custom_jvp_call", "custom_vjp_call"):
            sub = eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
        if sub is not None:
            outs = _replay(sub.jaxpr, sub.consts, invals, target, dtype)
        else:
            if any(isinstance(p, (jcore.Jaxpr, jcore.ClosedJaxpr))
                   for p in eqn.params.values()):
                raise ExportError(
                    f"the graph has a {eqn.primitive.name} (a control-flow primitive) "
                    f"that a {dtype} export cannot rewrite; export float32")
            outs = _bind(eqn, invals, target)
        for v, o in zip(eqn.outvars, outs, strict=True):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def in_dtype(closed, dtype: str, io_dtype=None):
    """``f(points) -> values``: the jaxpr ``closed`` replayed with every floating value
    (inputs, constants, literals, dtype parameters) in ``dtype``; ``points`` come in and
    ``values`` go out as ``io_dtype`` (default: the jaxpr's own). Operations on constants
    alone (of a static shape) are computed during the replay, so the graph holds weights,
    not the recipe for them. Only first-order primitives and ``jit`` / ``custom_jvp``
    calls (inlined) are replayed: a control-flow primitive is an :class:`ExportError`."""
    import jax.numpy as jnp

    target = jnp.dtype(dtype)
    # the constants (the weights) are cast here, once, so that the graph holds them in
    # ``dtype`` (half the bytes for 16 bits) rather than float32 and a conversion
    consts = [np.asarray(c).astype(target) if _is_float(getattr(c, "dtype", np.float64))
              and np.ndim(c) else c for c in closed.consts]

    def f(points):
        out_dtype = io_dtype or points.dtype
        (y,) = _replay(closed.jaxpr, consts, [points], target, dtype)
        return jnp.asarray(y).astype(out_dtype)

    f.__name__ = f"pinn_graph_{dtype}"
    return f
