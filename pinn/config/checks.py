"""What can be known about a problem before training, checked before anything is written.

``pinn validate`` and ``pinn solve`` call :func:`check` on a built problem file. Each
failure is a :class:`~pinn.config.errors.ConfigError` naming the YAML path and the fix,
found in well under a second, where training would otherwise fail minutes later (or
never end):

- derivatives of a higher order than :data:`MAX_DERIVATIVE_ORDER` and equations whose
  compiled program would be huge (:data:`MAX_EXPANDED_NODES`, :data:`MAX_STREAMS`);
- a domain whose interior is empty (a CSG difference that removes everything) and
  boundary selections (``on:`` part names or predicates) that select no point, and
  quantities of interest whose region holds none of their quadrature points;
- exact solutions, initial and boundary values and source terms that divide by zero or
  overflow on points sampled in the domain (NumPy, float64);
- a memory estimate of one gradient step (points x network width and depth x derivative
  streams x bytes) against the machine's memory (:func:`machine_memory`).

Legal but suspicious input (a boundary selection that catches very few candidate points)
passes with a warning.
"""

from __future__ import annotations

import os

from pinn.config.errors import ConfigError, Issue
from pinn.dsl import expr as E
from pinn.dsl.calculus import MAX_DERIVATIVE_ORDER, derivative_order

__all__ = ["MAX_DERIVATIVE_ORDER", "MAX_EXPANDED_NODES", "MAX_STREAMS", "check",
           "derivative_order", "machine_memory", "memory_estimate"]

#: Nodes of the expressions once derivatives are pushed onto the fields (a stand-in for
#: the size of the program XLA compiles: a chain rule through a tower of powers grows it).
MAX_EXPANDED_NODES = 50_000
#: Distinct (field, derivative) streams the network is differentiated to.
MAX_STREAMS = 2_000
#: Bytes one stored activation costs per point, layer, width unit and derivative stream,
#: relative to the float size: forward value, tangents and the backward pass's copies.
_ACTIVATION_COPIES = 6
#: Fraction of the machine's memory one gradient step may be estimated to take.
_MEMORY_FRACTION = 0.8
_SAMPLES = 2048


def check(built, *, memory: bool = True) -> None:
    """Raise :class:`ConfigError` for what would fail in training (see the module doc)."""
    from pinn.config.training import check_training

    check_training(built)
    exprs = _expressions(built.problem)
    for path, ex in exprs:
        _order(built, path, ex)
    streams = _compile_size(built)
    _domain(built)
    _quantities(built)
    _values(built)
    if memory:
        _memory(built, streams)


def _error(built, path, message: str) -> ConfigError:
    path = tuple(path)
    return ConfigError(Issue(message, path, built.source.location(path)))


def _expressions(problem) -> list[tuple[tuple, E.Expr]]:
    """``(yaml path, expression)`` of every equation and condition."""
    out = [(("equations", n), ex) for n, ex in problem.equations.items()]
    for name, c in problem.conditions.items():
        try:
            items = c.expressions()
        except Exception:  # noqa: BLE001 - a user's condition type: nothing to check here
            continue
        out += [(("conditions", name), ex) for ex in items if isinstance(ex, E.Expr)]
    return out


# ---------------------------------------------------------------------------
# derivative order and program size


def _order(built, path, ex: E.Expr) -> None:
    k = derivative_order(ex)
    if k > MAX_DERIVATIVE_ORDER:
        raise _error(built, path, f"a derivative of order {k}; derivatives go up to order "
                     f"{MAX_DERIVATIVE_ORDER} (each order multiplies the compiled program, "
                     "which would compile for minutes): lower the order, e.g. write the "
                     "equation as a system of lower-order equations with more fields")


def _size(e: E.Expr, limit: int | None = None) -> int:
    """Nodes of ``e`` as a tree (a shared sub-expression counts each time: hashing and
    comparing expressions costs that much); counting stops past ``limit``."""
    n, stack = 0, [e]
    while stack and (limit is None or n <= limit):
        node = stack.pop()
        n += 1
        stack.extend(node.children())
    return n


def _too_big(built, path, n: int) -> ConfigError:
    return _error(built, path, f"the expression grows to more than {n:,} terms once its "
                  f"derivatives are taken (at most {MAX_EXPANDED_NODES:,}: the compiled "
                  "program would take minutes and gigabytes); simplify it, e.g. introduce a "
                  "field for a repeated sub-expression")


def _guarded_derivatives(built, path, ex: E.Expr) -> None:
    """Take the symbolic derivatives of ``ex`` one order at a time, stopping as soon as the
    result outgrows :data:`MAX_EXPANDED_NODES` (a tower of powers grows exponentially)."""
    from pinn.dsl.calculus import diff, resolve, walk

    problem = built.problem
    r = resolve(ex, problem.spatial)
    done: set[int] = set()
    for node in walk(r):
        if id(node) in done or not isinstance(node, E.Derivative) or isinstance(
                node.expr, E.Field):
            continue
        done.add(id(node))
        out = node.expr
        for c in node.wrt:
            out = diff(out, c, problem.coords)
            if _size(out, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
                raise _too_big(built, path, MAX_EXPANDED_NODES)


def _compile_size(built) -> int:
    """The number of derivative streams; raises when the program would be too large."""
    problem = built.problem
    from pinn.dsl.calculus import expand, field_derivatives

    streams: set = set()
    for path, ex in _expressions(problem):
        try:
            _guarded_derivatives(built, path, ex)
            expanded = expand(ex, problem.spatial, problem.coords)
        except ConfigError:
            raise
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise _error(built, path, f"cannot differentiate {E.to_string_safe(ex)[:60]}: "
                         f"{exc}; fix the expression") from None
        if _size(expanded, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
            raise _too_big(built, path, MAX_EXPANDED_NODES)
        streams |= field_derivatives(expanded)
    if len(streams) > MAX_STREAMS:
        raise _error(built, ("equations",), f"{len(streams):,} distinct field derivatives are "
                     f"needed (at most {MAX_STREAMS:,}); use fewer fields or lower orders")
    return max(len(streams), 1)


# ---------------------------------------------------------------------------
# the domain and its boundary selections


def _domain(built) -> None:
    """The interior and every boundary selection accept some of the candidate points that
    training's sampler draws (the same test, :func:`pinn.geometry._core.acceptance_rate`,
    cached: training does not repeat it)."""
    import warnings

    from pinn.geometry._core import acceptance_rate

    problem = built.problem
    space = problem.space

    def rate(kind, on, coords, path):
        caught: list = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                acceptance_rate(*space._rate_key(kind, on, coords), "float32")
        finally:
            # re-issued outside the recording context (inside it, each would be recorded
            # into the list being read, without end); e.g. a selection that catches few
            # points: legal, slow
            for w in list(caught):
                warnings.warn(f"{built.source.location(path)} {'.'.join(path)}: "
                              f"{_first(w.message)}", stacklevel=4)

    try:
        rate("interior", None, None, ("domain",))
    except ValueError as exc:
        raise _error(built, ("domain",), f"the domain is empty ({_first(exc)}); change the "
                     "shapes (a difference must leave something of the first shape)") from None
    names = tuple(c.name for c in problem.spatial)
    for name, c in problem.conditions.items():
        on = getattr(c, "on", None)
        if on is None or (isinstance(on, str) and on in ("interior", "initial")):
            continue
        on = tuple(on) if isinstance(on, list) else on
        path = ("conditions", name, "on")
        try:
            space._resolve_parts(on)
            coords = space._coord_key(on, names)
            rate("boundary", on, coords, path)
        except ValueError as exc:
            raise _error(built, path, f"selects no boundary point ({_first(exc)}); name a "
                         "part of the boundary, or write a predicate that holds on a piece "
                         "of it (such as \"x == 0\")") from None
        except Exception:  # noqa: BLE001 - e.g. a predicate of time: training decides
            continue


def _quantities(built) -> None:
    """Every region of a quantity of interest holds some of its quadrature points (a
    predicate such as ``x == 0.5`` selects a line of the interior, not a region)."""
    for name, q in (built.problem.quantities or {}).items():
        if not q.REGION:
            continue
        try:
            q.quadrature(built.problem)
        except ValueError as exc:
            raise _error(built, ("quantities", name), str(exc)) from None


def _first(exc) -> str:
    text = str(exc).split(";")[0]
    return text if len(text) < 160 else text[:157] + "..."


# ---------------------------------------------------------------------------
# values on sampled points


def _points(built):
    """``[N, len(coords)]`` float64 points in the domain (:class:`pinn.points.ProblemPoints`,
    seeded) and, for an evolution problem, the same points at the initial time."""
    import jax
    import numpy as np

    from pinn.points import ProblemPoints

    problem = built.problem
    d = len(problem.coords)
    with jax.enable_x64(True):
        try:
            pts = np.asarray(ProblemPoints(problem, dtype=np.float64).interior(
                jax.random.key(0), _SAMPLES))[:, :d]
        except ValueError:  # no interior to draw from: reported by its own check
            return np.zeros((0, d)), None
    if not problem.is_evolution:
        return pts, None
    initial = pts.copy()
    initial[:, -1] = problem.time.t0
    return pts, initial


def _values(built) -> None:
    problem = built.problem
    pts, initial = _points(built)
    if len(pts) == 0:
        return
    checks = [(("exact", f.name), ex, pts, "the exact solution")
              for f, ex in (problem.exact or {}).items()]
    for name, ex in problem.equations.items():
        checks += [(("equations", name), t, pts, "the source term") for t in _sources(ex)]
    for name, c in problem.conditions.items():
        for what, v in c.prescribed():
            at, key = (initial, "initial") if what == "initial value" else (pts, c.kind)
            checks += [(("conditions", name, key), v, at, f"the {what}")]
    for path, ex, at, what in checks:
        if at is not None and not calculus_fields(ex):
            _finite(built, path, ex, at, what)
    for name, ex in problem.equations.items():
        _finite_with_fields(built, ("equations", name), ex, pts)


def _stand_ins(problem) -> dict:
    """A smooth function with values of both signs for each field (a network at its
    initialisation looks like that): ``0.5 sin(k . x + phi)``."""
    from pinn.dsl import builders as B

    out = {}
    for i, f in enumerate(problem.fields):
        arg = E.as_expr(0.4 + i)
        for j, c in enumerate(problem.coords):
            arg = arg + (1.3 + 0.7 * j + 0.3 * i) * c
        out[f] = 0.5 * B.sin(arg)
    return out


def _finite_with_fields(built, path, ex: E.Expr, pts) -> None:
    """An equation that is NaN or infinite where its fields take ordinary values of both
    signs stops training at its first step (``u^u`` for u < 0, ``log(u)``)."""
    import numpy as np

    from pinn.dsl.calculus import substitute
    from pinn.dsl.evaluate import evaluate_points_numpy

    problem = built.problem
    if not calculus_fields(ex):
        return
    try:
        stood = substitute(ex, _stand_ins(problem))
        if _size(stood, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
            return
        v = evaluate_points_numpy(stood, problem.coords, pts, spatial=problem.spatial,
                                  time_coord=problem.time_coord)
    except Exception:  # noqa: BLE001 - what NumPy cannot evaluate, training will judge
        return
    bad = ~np.isfinite(v)
    if bad.mean() > 0.01:
        text = E.to_string_safe(ex)
        text = text if len(text) <= 60 else text[:57] + "..."
        names = ", ".join(f.name for f in problem.fields)
        raise _error(built, path, f"the equation {text} is not finite on {bad.mean():.0%} of "
                     f"the points when {names} take(s) values of both signs, as a network "
                     "does when training starts (a power or log of a negative value?); "
                     "write it so that any value is allowed, e.g. u = exp(v) for a positive u")


def calculus_fields(ex: E.Expr) -> tuple:
    from pinn.dsl.calculus import fields_of

    return fields_of(ex)


def _sources(ex: E.Expr) -> list[E.Expr]:
    """The field-free terms of a sum (``-laplacian(u) - f``: ``f``)."""
    if isinstance(ex, (E.Add, E.Sub)):
        return _sources(ex.left) + _sources(ex.right)
    if isinstance(ex, E.Neg):
        return _sources(ex.arg)
    if calculus_fields(ex) or isinstance(ex, (E.Number, E.Constant, E.Param)):
        return []
    return [ex]


def _finite(built, path, ex: E.Expr, pts, what: str) -> None:
    import numpy as np

    from pinn.dsl.evaluate import evaluate_points_numpy

    problem = built.problem
    text = E.to_string_safe(ex)
    text = text if len(text) <= 60 else text[:57] + "..."
    try:
        v = evaluate_points_numpy(ex, problem.coords, pts, spatial=problem.spatial,
                                  time_coord=problem.time_coord)
    except (ZeroDivisionError, OverflowError, FloatingPointError) as exc:
        raise _error(built, path, f"{what} {text} cannot be evaluated ({exc}); write a "
                     "finite expression") from None
    except Exception:  # noqa: BLE001 - what NumPy cannot evaluate, training will judge
        return
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.argmax(bad))
        at = ", ".join(f"{c.name}={pts[i, j]:.3g}" for j, c in enumerate(problem.coords))
        kind = "not a number" if np.isnan(v[i]) else "infinite"
        raise _error(built, path, f"{what} {text} is {kind} at {at} (a division by zero or "
                     "an overflow); write an expression that is finite in the domain")


# ---------------------------------------------------------------------------
# memory


def machine_memory() -> int | None:
    """Bytes of memory of this machine (psutil when installed, else ``os.sysconf``)."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def memory_estimate(built, streams: int = 1) -> int:
    """Bytes of one gradient step, roughly: points per pass x width x (depth + 1) x
    derivative streams x float bytes x the copies training keeps of each activation, plus
    the weights with their gradients, Adam moments and L-BFGS history."""
    spec = built.spec
    t = spec.training
    p = t.points
    conds = built.problem.conditions.values()
    n = p.interior + sum(p.initial if c.initial else p.boundary for c in conds if not c.hard)
    if t.micro_batch is not None:
        n = min(n, t.micro_batch)
    args = spec.model.args
    width = getattr(args, "width", 64)
    depth = getattr(args, "depth", None)
    depth = 3 * getattr(args, "blocks", 3) if depth is None else depth
    features = spec.model.fourier.features if spec.model.fourier else 0
    width = max(width, features)
    nbytes = 8 if built.precision == 64 else 4
    activations = n * width * (depth + 1) * (streams + 1) * nbytes * _ACTIVATION_COPIES
    weights = (width * width * max(depth, 1) + width * 8) * nbytes
    history = max((getattr(s.args, "memory", 0) for s in t.stages), default=0)
    return activations + weights * (4 + 2 * history)  # params, gradients, moments, L-BFGS


def _memory(built, streams: int) -> None:
    total = machine_memory()
    if not total:
        return
    need = memory_estimate(built, streams)
    if need > _MEMORY_FRACTION * total:
        gib = 2.0 ** 30
        raise _error(built, ("training", "points"), f"one gradient step needs about "
                     f"{need / gib:.1f} GiB (points x width x depth x {streams} derivative "
                     f"stream(s) x bytes), more than this machine's {total / gib:.1f} GiB; "
                     "use fewer points or a smaller network, or stream the points with "
                     "training.micro_batch")

