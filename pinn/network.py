"""The problem's network: the field network of a :class:`~pinn.Problem` with its hard
conditions built in, as training, :class:`~pinn.Solution` and the exports all see it.

- :func:`build_network`: the raw network of a model spec (or a user's ``nnx.Module``) for a
  problem, split into ``(apply, params)``; a hard periodic condition is its input embedding;
- :func:`hard_transforms`: the output transforms of the hard Dirichlet and initial
  conditions around a raw ``apply`` (each condition's ``hard_outputs``);
- :func:`periodic_embedding`: ``{input index: period}`` of the hard periodic conditions;
- :func:`field_apply`: the network of a trained solution, whole or piecewise in time
  windows (:mod:`pinn.marching`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pinn import conditions as C
from pinn import marching
from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_on_points

__all__ = ["build_network", "hard_transforms", "check_hard", "periodic_embedding",
           "kink_inputs", "field_apply", "namespace_of"]


def build_network(problem, model, seed: int):
    """Build ``model`` for ``problem``; returns ``(apply, net_params)`` (the raw network:
    :func:`hard_transforms` builds the hard conditions around it).

    ``model``: a network spec (``pinn.MLP(...)``: its ``build`` gets the dimensions, the
    domain bounds, the hard periodic embedding and, where a field is declared on a subset
    of the coordinates, each field's input columns), a ``flax.nnx.Module`` mapping points
    ``[N, d]`` (the problem's coordinates in order, unscaled) to ``[N, n_fields]``, or a
    function ``key -> module`` (initialised from the run's seed)."""
    from pinn.nets import ModelSpec, split
    from pinn.nets._split import split_user, user_module

    key = jax.random.fold_in(jax.random.PRNGKey(seed), 1)
    periodic = periodic_embedding(problem) or None
    # the inputs: the coordinates, then a parametric problem's ranged parameters
    d_in, d_out = len(problem.inputs), len(problem.fields)
    kinks = kink_inputs(problem)
    if isinstance(model, ModelSpec):
        # a field on a subset of the coordinates: its own sub-network of those inputs
        subset = any(f.coords is not None for f in problem.fields)
        kw = {"inputs": problem.field_inputs} if subset else {}
        if kinks and subset:
            raise ValueError("kinks (an energy term's, pinn.Energy) and fields on a subset of "
                             "the coordinates cannot be combined yet; declare the fields on "
                             "all coordinates or drop the kinks")
        lo, hi = problem.input_box
        bounds = (tuple(lo) + (0.0,) * len(kinks), tuple(hi) + (1.0,) * len(kinks))
        module = model.build(d_in + len(kinks), d_out, key=key, bounds=bounds,
                             periodic=periodic, **kw)
        apply, params = split(module)
        return _scaled(_kinked(_timed(apply, problem), problem, kinks), params,
                       model.output_scale, problem)
    module = user_module(model, key)
    if kinks:
        raise ValueError(f"kinks (an energy term's, pinn.Energy) are extra inputs that only "
                         f"pinn's network specs build in; with your own {type(module).__name__} "
                         "use a spec such as pinn.MLP(...), or plan: {energy: false}")
    subset = [f"{f.name}({', '.join(f.coords)})" for f in problem.fields if f.coords]
    if subset:
        raise ValueError(
            f"fields {', '.join(subset)} depend on a subset of the coordinates: only pinn's "
            f"network specs (pinn.MLP(...), ...) build that in; your {type(module).__name__} "
            "would see every input. Use a spec, or declare the fields on all coordinates")
    if periodic:
        names = ", ".join(n for n, c in problem.conditions.items() if c.periodic_inputs(
            problem, n))
        raise ValueError(
            f"conditions {names}: a hard periodic condition is an input embedding that only "
            f"pinn's network specs build in; with your own {type(module).__name__} make it "
            "soft (hard=False) or use a spec such as pinn.MLP(...)")
    apply, params = split_user(module, d_in, d_out, jnp.zeros(()).dtype,
                               ", ".join(c.name for c in problem.inputs))
    return _timed(apply, problem), params


def _timed(apply, problem):
    """``apply`` taking time as the problem's interval asks
    (:meth:`pinn.geometry.TimeInterval.network_time`: itself, or its square root where
    the start is a layer)."""
    time = problem.time
    if time is None or not time.layer:
        return apply
    ti = problem.time_index

    def timed(p, x):
        # jnp.where, not a scatter: the Taylor-mode engine differentiates through it
        at = jnp.arange(x.shape[-1]) == ti
        return apply(p, jnp.where(at, time.network_time(x[..., ti])[..., None], x))

    return timed


def kink_inputs(problem) -> tuple:
    """The kinks of the problem's energy terms (:class:`pinn.conditions.Energy`): surfaces
    ``phi = 0`` across which the network's gradient may jump, once each."""
    out: list = []
    for c in problem.conditions.values():
        for k in c.kink_inputs():
            if k not in out:
                out.append(k)
    return tuple(out)


def _kinked(apply, problem, kinks):
    """``apply`` of the inputs followed by ``|phi_k(x)| / s_k`` for each kink (``s_k``: the
    largest ``|phi_k|`` on a grid over the input box, so that each extra input lies in
    [0, 1]): a tanh network of them can bend sharply across ``phi_k = 0``."""
    if not kinks:
        return apply
    fns = [value_fn(problem, k) for k in kinks]
    lo, hi = (np.asarray(v, dtype=np.float64) for v in problem.input_box)
    d = len(lo)
    if d <= 3:
        axes = [np.linspace(a, b, 17) for a, b in zip(lo, hi, strict=True)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, d)
    else:
        grid = lo + (hi - lo) * np.random.default_rng(0).random((4096, d))
    sizes = []
    for k, f in zip(kinks, fns, strict=True):
        top = float(np.max(np.abs(np.asarray(f(jnp.asarray(grid))))))
        if not np.isfinite(top) or top <= 0:
            raise ValueError(f"kink {k}: |{k}| is not positive anywhere on the domain's box")
        sizes.append(top)

    def kinked(p, x):
        extra = [jnp.abs(f(x)) / s for f, s in zip(fns, sizes, strict=True)]
        return apply(p, jnp.concatenate([x, jnp.stack(extra, -1).astype(x.dtype)], -1))

    return kinked


def _scaled(apply, params, scale, problem):
    """``apply`` with its output multiplied by ``scale`` (one number per field)."""
    if scale is None or all(v == 1.0 for v in scale):
        return apply, params
    if len(scale) != len(problem.fields):
        raise ValueError(f"model output_scale has {len(scale)} numbers for "
                         f"{len(problem.fields)} fields ({', '.join(problem.field_names)}): "
                         "give one per field")

    def scaled(p, x):
        out = apply(p, x)
        return out * jnp.asarray(scale, out.dtype)

    return scaled, params


def periodic_embedding(problem) -> dict[int, float]:
    """``{input index: period}`` for hard periodic conditions (opposite faces of a box)."""
    out: dict[int, float] = {}
    for name, c in problem.conditions.items():
        out.update(c.periodic_inputs(problem, name))
    return out


def _hard_outputs(problem) -> tuple[dict, dict]:
    """``({field index: (distance, value fn)}, {field index: (value, rate)})``: the hard
    Dirichlet and initial conditions, by the field they constrain. Several hard Dirichlet
    conditions of one field, on different boundary parts, become one: the distance of all
    their parts and a lift equal to each one's value on its parts
    (:func:`pinn.geometry.adf.lift`)."""
    fidx = {f: i for i, f in enumerate(problem.fields)}
    dirichlet: dict[int, list] = {}
    initial: dict[int, tuple] = {}
    for name, c in problem.conditions.items():
        for h in c.hard_outputs(problem, name):
            C.check_hard_subset(problem, name, h)
            j = fidx[h.field]
            if h.kind == "initial":
                initial[j] = (h.value, h.rate)
            else:
                dirichlet.setdefault(j, []).append((name, h))
    return {j: _dirichlet(problem, hs) for j, hs in dirichlet.items()}, initial


def _dirichlet(problem, hs: list) -> tuple:
    """``(distance, value fn)`` of one field's hard Dirichlet conditions ``[(name, h)]``."""
    from pinn.geometry.adf import boundary_distance, lift
    from pinn.nets import box_distance

    if len(hs) == 1:
        (_, h), = hs
        if h.parts is None:  # a box: the product of its walls' distances
            return (box_distance(*problem.input_box, walls=list(h.walls)),
                    value_fn(problem, h.value))
        return (boundary_distance(problem.space, h.parts, inputs=problem.inputs),
                value_fn(problem, h.value))
    seen: dict[str, str] = {}
    for name, h in hs:
        for part in h.names:
            if part in seen:
                raise ValueError(f"conditions.{name}: field {h.field.name} already has a hard "
                                 f"Dirichlet condition on {part} ({seen[part]}); give each "
                                 "boundary part one value")
            seen[part] = name
    values = [value_fn(problem, h.value) for _, h in hs]
    if all(h.parts is None for _, h in hs):  # walls of a box: polynomial distances, smooth
        lo, hi = problem.input_box  # on the walls too (derivatives finite at every point)
        distances = [box_distance(lo, hi, walls=list(h.walls)) for _, h in hs]
        every = box_distance(lo, hi, walls=[w for _, h in hs for w in h.walls])
        return every, lift(distances, values)
    distances = [boundary_distance(problem.space, h.names, inputs=problem.inputs)
                 for _, h in hs]
    every = boundary_distance(problem.space, tuple(seen), inputs=problem.inputs)
    return every, lift(distances, values)


def value_fn(problem, e):
    """A function of the network's inputs (the ranged parameters pass through)."""
    def fn(x):
        return evaluate_on_points(e, problem.inputs, x, spatial=problem.spatial
                                  ).astype(x.dtype)

    return fn


def check_hard(problem) -> None:
    """Raise ``ValueError`` naming the fix where the hard conditions of ``problem`` cannot
    be built into a network (the check :func:`hard_transforms` makes)."""
    _hard_outputs(problem)


def hard_transforms(problem, apply, *, time_span: bool = True):
    """``apply`` wrapped so that the hard conditions (each condition's ``hard_outputs``)
    hold exactly.

    ``time_span``: hard initial values scale the network by ``(t - t0)/(t1 - t0)``
    (False: by ``t - t0``, as solutions saved in format 1 were trained), by its square
    root where the start is a layer (:class:`pinn.geometry.TimeInterval`)."""
    from pinn.nets import hard_dirichlet, hard_dirichlet_initial, hard_initial

    dirichlet, initial = _hard_outputs(problem)
    if not dirichlet and not initial:
        return apply
    t0 = problem.time.t0 if problem.is_evolution else 0.0
    # the network's factor (t - t0)/span runs over [0, 1] whatever the time scale
    span = (float(problem.time.t1 - problem.time.t0) if problem.is_evolution and time_span
            else 1.0)
    ti = problem.time_index if problem.is_evolution else -1

    value = functools.partial(value_fn, problem)
    out = apply
    for j in sorted(set(dirichlet) | set(initial)):
        if j in dirichlet and j in initial:
            (dist, g), (u0, rate) = dirichlet[j], initial[j]
            out = hard_dirichlet_initial(out, dist, g, value(u0), t_index=ti, t0=t0,
                                         span=span, outputs=[j],
                                         rate_fn=None if rate is None else value(rate),
                                         root=rate is None and problem.time.layer)
        elif j in dirichlet:
            dist, g = dirichlet[j]
            out = hard_dirichlet(out, dist, g, outputs=[j])
        else:
            u0, rate = initial[j]
            out = hard_initial(out, value(u0), t_index=ti, t0=t0, span=span,
                               rate_fn=None if rate is None else value(rate), outputs=[j],
                               root=rate is None and problem.time.layer)
    return out


def field_apply(problem, model, seed: int, *, windows: Sequence[float] | None = None,
                time_span: bool = True, net=None):
    """``apply(net_params, x[N, d]) -> [N, n_fields]`` of a trained solution: the network
    of ``model`` with the hard conditions (:func:`hard_transforms`), or, trained in time
    windows (the edges ``windows``), one such network per window, piecewise in time
    (:func:`pinn.marching.piecewise_apply`; ``net_params`` by :func:`~pinn.marching.
    window_key`). A later window starts exactly where the one before ended: its network is
    built on that window's values at its start, so the windows' trained parameters ``net``
    are needed to build it (as training built it)."""
    if windows is None:
        raw, _ = build_network(problem, model, seed)
        return hard_transforms(problem, raw, time_span=time_span)
    applies, previous = [], None
    for k in range(len(windows) - 1):
        if k > 0 and net is None:
            raise ValueError("a solution in time windows needs its trained parameters to "
                             "build its network (each window starts from the one before)")
        pk = marching.window_problem(problem, k, windows, previous=previous)
        raw, _ = build_network(pk, model, seed)
        applies.append(hard_transforms(pk, raw))
        if net is not None:
            previous = (applies[-1], net[marching.window_key(k)])
    return marching.piecewise_apply(applies, windows, problem.time_index)


def namespace_of(problem) -> dict[str, E.Expr]:
    """The names a string expression about ``problem`` may use."""
    ns: dict[str, E.Expr] = {c.name: c for c in problem.coords}
    ns.update({f.name: f for f in problem.fields})
    ns.update({p.name: p for p in problem.params})
    return ns
