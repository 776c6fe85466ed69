"""A plan before training, made from the problem itself: what the default recipe switches on
and why.

:func:`make_plan` reads the problem (its dimensions, its conditions and what the geometry
can build in) and returns a :class:`Plan`: the problem, network and training a run uses,
and the list of :class:`Choice` es made, each with its reason. ``pinn validate`` and
``pinn solve`` print it in a few lines, a run folder keeps it (``plan.json``), and every
choice can be overridden: a choice the user made (a condition's own ``hard``, the
training's own points) is never changed, and :class:`Planning` turns a kind of choice off
(YAML ``plan: {hard: false}``).

The choices:

- **hard**: Dirichlet conditions whose values are expressions of the coordinates and
  parameters, on named boundary parts of a shape with distance functions, are built into
  the network (different values on different parts blended by one lift,
  :func:`pinn.geometry.adf.lift`), unless the condition says ``hard`` itself. Not where
  two values jump where their parts meet (the lift's derivatives are unbounded there), nor
  where the value's formula is the problem's exact solution inside the domain as well (a
  manufactured benchmark: the lift would be the answer);
- **points**: the collocation points sized by the problem's dimension (a 1D problem does
  not need 4096 interior and 1024 boundary points);
- **scale**: a field whose boundary, initial or data values are large (above 10 at their
  largest) is the network's output times that size
  (``output_scale`` of the network spec), so that the network itself stays of order one
  (a tanh network starts at outputs of ~1: a field of 1e4 would take Adam thousands of
  steps just to grow). The problem is unchanged: its exact solution still satisfies it.
  A field with no values (a pressure) is sized by the terms its first derivatives
  balance (:func:`balanced_sizes`);
- **residuals**: an equation whose terms are over ten times smaller than another's
  (dimensional analysis, :func:`equation_sizes`) weighted by the square of that ratio,
  and a soft Neumann or Robin condition likewise against the equations
  (:func:`condition_sizes`, :func:`_residuals`);
- **unevolved**: the start values of fields no equation differentiates in time left out
  (:func:`unevolved`);
- **rates**: where such fields are, the equations that hold them with no time derivative
  (continuity) held in rate at the start as well (:func:`_rates`);
- **balance**: in an inverse problem (learnable parameters, or more fields than
  equations), a data condition whose weight is not given is weighted so that the
  observations are not swamped by a forced equation (:func:`_balance`). The problem's
  solution is unchanged; only the loss's path to it.
- **energy**: where a steady equation's diffusion coefficient jumps in space, its energy
  (the divergence form's) is minimised beside the residual, Robin and Neumann conditions
  natural in it, and the network bends at the jumps (:func:`_energy`);
- **layer**: where a diffusive evolution's soft start disagrees with its boundary
  conditions (a cold body in a hot bath), time is taken by its square root
  (:func:`_layer`, :class:`pinn.geometry.TimeInterval`);
- **holdout**: in an inverse problem, a tenth of each data condition of at least
  :data:`HOLDOUT_MIN_ROWS` observations is held out of training (:func:`_holdout`); the run
  keeps the parameters at which their misfit was lowest (:class:`pinn.train.KeepBest`),
  not the last ones: fitting the observations' noise shows there first.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pinn import conditions as C
from pinn import marching, network
from pinn.dsl import calculus
from pinn.dsl import expr as E
from pinn.geometry.adf import boundary_distance, inside_function
from pinn.nets import MLP
from pinn.train.spec import Training

__all__ = ["Choice", "Planning", "Plan", "make_plan", "unevolved"]

#: The network when none is given: the size the default recipe (a dense quasi-Newton
#: stage) is made for; a problem file without ``model:`` gets the same.
DEFAULT_MODEL = MLP(width=30, depth=3)
#: An input's frequency (angular, the input mapped to [-1, 1]) above which the plan, when
#: ``Planning(frequency=True)``, adds Fourier features. Off by default: the default recipe
#: with a plain 3 x 30 tanh network reached 7.3e-5 on -u'' = k^2 sin(k x), k = 20 pi on
#: [0, 1] (frequency 31; 348 s on 2 busy cores), and no run has yet shown the features
#: doing better on a problem nobody tuned.
FOURIER_ABOVE = 10.0
#: Fourier features the plan adds (each a cos and a sin).
FOURIER_FEATURES = 64
#: The horizon (radians of an oscillation, e-folds of a decay: :mod:`pinn.scales`) one time
#: window of a marched evolution holds at most: two periods. Measured: DeepXDE's two-mode
#: wave u_tt = 100 u_xx (horizon 54, 5 windows) 5.8e-6 under a 900 s limit, 0.97 in one
#: window.
HORIZON_PER_WINDOW = 4 * np.pi
#: The most windows the plan marches in (each trains the whole recipe); a horizon that
#: needs more is not marched: windows holding more than two periods each did worse than
#: one window (PINNacle's Wave 2d-MS, fifty periods, in 10 windows of five: 68 against 0.173
#: in one; Heat 2d-LT, 33 wanted, in 10: 0.998 against 0.999, both failures).
MAX_WINDOWS = 10
#: A soft start the trained network misses by more than this (the rms of the miss over the
#: start's points, relative to the start's own rms, in its worst field) says one network did
#: not carry the start through the horizon: a run the plan may march is trained again in
#: :data:`REMARCH_WINDOWS` windows (:func:`missed_start`, :func:`pinn.run.remarch`).
#: Measured (PINNacle's user files, the default recipe in one window, 2026-12-05):
#: Burgers 2d-C misses u's start by 0.33 (L2RE 0.38; in 2 windows 0.25 and 0.27, two
#: seeds); KS by 0.042 (in 2 windows it did worse, 3.53 against 0.99).
MISSED_START = 0.1
#: The windows a run that missed its start is marched in: the horizon halved. Burgers 2d-C
#: (above) in 3 windows 0.300, in 4 windows 0.423.
REMARCH_WINDOWS = 2
#: The fewest observations of a data condition of which the plan holds out a tenth
#: (:func:`_holdout`): below it a tenth is too few to judge a misfit by.
HOLDOUT_MIN_ROWS = 200
#: The share of a data condition's observations held out.
HOLDOUT_FRACTION = 0.1
#: The longest horizon (radians, :mod:`pinn.scales`) over which the plan builds a
#: second-order start in: ten periods. The built-in start multiplies the network by
#: ``((t - t0)/span)^2``, which over n periods holds it down to 1/n^2 of its reach in the
#: first one. Measured (PINNacle, user files, 600 s): Wave1d-C (horizon 17) 0.448 -> 3.0e-6,
#: Wave2d-CG (19) 0.689 -> 0.714, Wave2d-MS (314, fifty periods) 0.180 -> 1.58.
HARD_START_HORIZON = 20 * np.pi

#: A start that misses a boundary condition where they meet by more than this share of
#: their values' size is a layer (:func:`_layer`).
LAYER_GAP = 1e-2

#: How many times smaller than another equation's terms an equation's must be for the plan
#: to weight its residual (:func:`_residuals`): dimensional analysis is good to a few times.
RESIDUALS_ABOVE = 10.0


@dataclass(frozen=True)
class Choice:
    """One decision of a plan: ``what`` was chosen (``value``, JSON-ready) and ``why``."""

    what: str
    value: Any
    why: str

    def line(self) -> str:
        return f"{self.what}: {self.value} ({self.why})"


@dataclass(frozen=True)
class Planning:
    """Which kinds of choice the plan may make: ``False`` leaves that to the defaults;
    ``points`` ``None``: only when no training is given (a problem file without its own
    points passes ``True``). ``frequency`` is off by default (measured: a plain network
    resolves a source of frequency 31 in normalised units to 7.3e-5, see
    :data:`FOURIER_ABOVE`); on, it acts where the spec has no Fourier features.
    ``windows`` (``None``: only when no training is given, as ``points``; a problem file
    without its own stages or windows passes ``True``) acts where the training has one
    window (see :func:`_windows`): a recipe written for the whole interval is not
    multiplied by the window count."""

    hard: bool = True
    points: bool | None = None
    scale: bool = True
    frequency: bool = False
    windows: bool | None = None
    balance: bool = True
    holdout: bool = True
    energy: bool = True
    layer: bool = True
    residuals: bool = True
    unevolved: bool = True
    rates: bool = True
    weighted: tuple[str, ...] = ()  # conditions whose weight the user gave: kept


@dataclass(frozen=True)
class Plan:
    """The problem, network and training a run uses, and the choices that made them."""

    problem: Any
    model: Any
    training: Training
    choices: tuple[Choice, ...] = ()
    #: held-out observations, ``{condition name: pinn.conditions.Data}`` (:func:`_holdout`)
    validation: tuple[tuple[str, Any], ...] = ()
    #: a run in one window that misses its soft start is marched (:func:`missed_start`)
    remarch: bool = False

    def lines(self) -> list[str]:
        """The plan in a few lines (what ``pinn validate`` and ``pinn solve`` print)."""
        out = [c.line() for c in self.choices]
        if self.remarch:
            out.append(f"windows: 1 (or {REMARCH_WINDOWS} where the trained network misses a "
                       f"soft start by more than {MISSED_START:g}, rms relative, and the time "
                       "limit leaves as long again)")
        return out or ["nothing to plan: the problem's and the training's own settings"]

    def to_data(self) -> dict:
        """The choices as JSON data (a run folder's ``plan.json``)."""
        return {"choices": [dataclasses.asdict(c) for c in self.choices]}


def make_plan(problem, model=None, training: Training | None = None,
              planning: Planning | bool | None = None) -> Plan:
    """The plan of ``problem``: see the module docstring. ``training``: the user's (None:
    the default recipe); ``planning``: which choices the plan may make (``False``:
    none)."""
    if planning is None or planning is True:
        planning = Planning()
    elif planning is False:
        planning = Planning(hard=False, points=False, scale=False, frequency=False,
                            windows=False, balance=False, holdout=False, energy=False,
                            layer=False, residuals=False, unevolved=False,
                            rates=False)
    choices: list[Choice] = []
    if planning.unevolved:
        problem, made = unevolved(problem)
        choices += made
    problem, made = _hard(problem, planning.hard)
    choices += made
    validation: tuple = ()
    if planning.holdout:
        problem, validation, made = _holdout(problem)
        choices += made
    if planning.balance:
        problem, made = _balance(problem, planning.weighted)
        choices += made
    energy = False
    if planning.energy:
        problem, made = _energy(problem)
        choices += made
        energy = any(c.what == "energy" and c.value for c in made)
    if planning.layer:
        problem, made = _layer(problem)
        choices += made
    if planning.rates:
        problem, made = _rates(problem)
        choices += made
    problem = _settle_starts(problem)
    model = DEFAULT_MODEL if model is None else model
    if planning.frequency:
        model, made = _frequency(problem, model)
        choices += made
    sized = _sizes(problem) if planning.scale or planning.residuals else None
    if planning.scale:
        model, made = _scale(problem, model, sized)
        choices += made
    recipe = training is None  # the default recipe: points and windows are the plan's

    def may(choice: bool | None) -> bool:
        return recipe if choice is None else choice

    training = Training() if training is None else training
    if energy and training.stop is not None:  # an energy has no floor at zero to judge by
        training = replace(training, stop=replace(training.stop, residual=None,
                                                  improvement=None))
    if planning.residuals:
        problem, training, made = _residuals(problem, training, sized[0], planning.weighted)
        choices += made
    if may(planning.points):
        training, made = _points(problem, training)
        choices += made
    remarch = False
    if may(planning.windows):
        training, made = _windows(problem, training)
        choices += made
        remarch = (training.windows == 1 and bool(_soft_starts(problem))
                   and _marchable(problem))  # marchable: an evolution
    return Plan(problem, model, training, tuple(choices), validation, remarch)


# ---------------------------------------------------------------------------
# starts of fields no equation evolves


def unevolved(problem) -> tuple[Any, list[Choice]]:
    """The start values of the fields no equation differentiates in time left out (the
    pressure of an incompressible flow, a field an equation defines at each instant): such
    a field follows the others at every time, so its value at the start is fixed by
    theirs, and a start for it repeats that or contradicts it. PINNacle's NS 2d-LT states
    p = 0 at t = 0, where the flow, at rest, is accelerated by its inflow at once and the
    pressure that drives it is up to 38 (its reference); kept, that slice held 95 % of the
    squared error of a 150 s run with :func:`_residuals`' weights (0.331 in all; left
    out, the 600 s row is 5.09e-2, ``benchmarks/PINNACLE.md``).
    Only in a forward evolution (some equation differentiates some field in time; in an
    inverse problem the equations do not fix every field) and for fields some equation
    holds; a start left with no values goes."""
    if problem.time_coord is None or inverse(problem):
        return problem, []
    evolved, free = _held_unevolved(problem)
    if not evolved:
        return problem, []
    conditions, dropped = dict(problem.conditions), {}
    for name, c in problem.conditions.items():
        left = [f.name for f, _ in c.values] if isinstance(c, C.Initial) else []
        left = [f for f in left if f in free]
        if not left:
            continue
        data = c.to_data()
        values = {k: v for k, v in data["values"].items() if k not in left}
        rates = {k: v for k, v in data["rates"].items() if k not in left}
        dropped[name] = left
        if values:
            conditions[name] = type(c).from_data({**data, "values": values, "rates": rates})
        else:
            del conditions[name]
    if not dropped:
        return problem, []
    return replace(problem, conditions=conditions), [Choice(
        "unevolved", dropped, "start values left out: no equation holds "
        + ", ".join(sorted({f for fs in dropped.values() for f in fs}))
        + "'s time derivative, so the other fields fix it at every time, the start too")]


def _held_unevolved(problem) -> tuple[set, set]:
    """The names of the fields some equation differentiates in time (evolved), and of those
    some equation holds but none evolves (a pressure): ``(evolved, unevolved)``."""
    t = problem.time_coord
    expanded = [problem.expand(eq) for eq in problem.equations.values()]
    held = {f.name for e in expanded for f in calculus.fields_of(e)}
    evolved = {f.name for e in expanded for f, wrt in calculus.field_derivatives(e)
               if t in wrt}
    return evolved, held - evolved


def _rates(problem) -> tuple[Any, list[Choice]]:
    """In a forward evolution with fields no equation evolves (a pressure), each equation
    that differentiates nothing in time but holds an evolved field (continuity) also held
    in rate at the start: ``D(equation, t) = 0`` on the initial slice (of every time
    window). Such a field is fixed at each time by the constraint's rate (the pressure by
    ``div(u_t) = 0``), and at the start that rate is held by nothing: the collocation
    points lie on one side of it, and a start built in (``u = u0 + tau N``, every later
    window's) meets the constraint itself there to first order in ``tau`` whatever the
    rate. Measured (PINNacle's NS 2d-LT, user file, 4 windows, 600 s, 2026-12-05): without
    it the pressure at the four window starts held 88 % of its squared error (the slice at
    t = 2.5, where the reference's p is ~0, had 50 times its norm); with it those slices
    held 2.5 to 7 times less in two runs (1.0e-3 and 3.5e-4 of the fields' squared norm,
    against 2.6e-3). Not where time is taken by its square root (:func:`_layer`: the
    rates are unbounded at the start) nor in an inverse problem."""
    t = problem.time_coord
    if t is None or inverse(problem) or problem.time.layer:
        return problem, []
    evolved, free = _held_unevolved(problem)
    if not evolved or not free:
        return problem, []
    conditions, made = dict(problem.conditions), []
    for name, eq in problem.equations.items():
        e = problem.expand(eq)
        fields = {f.name for f in calculus.fields_of(e)}
        if any(t in wrt for _, wrt in calculus.field_derivatives(e)) or not fields & evolved:
            continue
        key = f"{name}_rate"
        while key in conditions or key in problem.equations:
            key += "_"
        conditions[key] = C.Constraint(E.Derivative(e, (t,)), on="initial")
        made.append(key)
    if not made:
        return problem, []
    return replace(problem, conditions=conditions), [Choice(
        "rates", made, "held at the start: " + ", ".join(sorted(free)) + " follow"
        + ("s" if len(free) == 1 else "") + " the other fields through these equations' "
        "rates, which the start's one-sided points leave free")]


# ---------------------------------------------------------------------------
# hard conditions


def _hard(problem, allowed: bool) -> tuple[Any, list[Choice]]:
    """The Dirichlet conditions left to the plan (``hard=None``) made hard where the
    geometry can build them in and their values are data (no fields); soft where not, or
    where the plan may not (``allowed`` false)."""
    conditions, hard, soft = dict(problem.conditions), [], []
    for name, c in problem.conditions.items():
        if not isinstance(c, C.Dirichlet) or c.hard is not None:
            continue
        trial = c.with_hard(True)
        why = _why_not_hard(problem, name, trial) if allowed else "the plan may not"
        if why is None:
            conditions[name] = trial
            hard.append(name)
        else:
            conditions[name] = c.with_hard(False)
            soft.append(([name], why))
    if hard:
        for pair, why in _jumps(replace(problem, conditions=conditions), hard):
            pair = [n for n in pair if n in hard]
            for name in pair:
                conditions[name] = problem.conditions[name].with_hard(False)
                hard.remove(name)
            if pair:
                soft.append((pair, why))
    starts = []
    for name, c in problem.conditions.items():
        if not isinstance(c, C.Initial) or c.hard is not None:
            continue
        # a first-order start stays a loss term unless its start is a layer (_layer, which
        # builds it in by sqrt((t - t0)/span)): built in as u = u0 + (t - t0) N / span it
        # cannot follow a start that disagrees with the boundary data (u ~ sqrt(t) there):
        # PINNacle's Heat 2d-CG, user file, 5.62e-2 soft, 0.151 built in (2026-12-05)
        if not allowed:
            conditions[name] = c.with_hard(False)
            continue
        if not c.rates:
            continue  # _layer decides; _settle_starts makes it soft where it does not
        why = _why_not_hard_start(replace(problem, conditions=conditions), name,
                                  c.with_hard(True))
        conditions[name] = c.with_hard(why is None)
        if why is None:
            starts.append(name)
        else:
            soft.append(([name], why))
    if not hard and not soft and not starts:
        return replace(problem, conditions=conditions), []
    planned = replace(problem, conditions=conditions)
    if not allowed:
        return planned, []
    out = []
    if hard or starts:
        parts = {n: ", ".join(planned.conditions[n].on) if isinstance(planned.conditions[n].on,
                                                                      tuple)
                 else str(planned.conditions[n].on) for n in hard}
        why = []
        if hard:
            why.append("Dirichlet values built into the network (exactly met; "
                       + "; ".join(f"{n} on {p}" for n, p in parts.items()) + ")")
        if starts:
            why.append(f"{', '.join(starts)}: the start's value and rate built in, u = u0 + "
                       "(t - t0) v0 + (t - t0)^2 N (a second-order evolution's start, a weak "
                       "loss term when soft)")
        out.append(Choice("hard", hard + starts, "; ".join(why)))
    if soft:
        out.append(Choice("soft", [n for names, _ in soft for n in names],
                          "; ".join(f"{', '.join(names)}: {why}" for names, why in soft)))
    return planned, out


def _why_not_hard(problem, name, c) -> str | None:
    """Why the Dirichlet condition ``c`` cannot be built in (None: it can)."""
    for _, v in c.values:
        if calculus.fields_of(v):
            return "its value uses the fields"
    if not isinstance(c.on, (str, tuple)) or (isinstance(c.on, str)
                                              and c.on not in ("boundary",
                                                               *problem.space.boundary_parts)):
        return "it holds where a predicate says, not on named parts"
    given = _the_answer(problem, c)
    if given is not None:
        return (f"its value is the exact solution of {given} inside the domain too: built in, "
                "the lift would be the answer and the error would not measure the solve")
    try:
        for h in c.hard_outputs(problem, name):
            C.check_hard_subset(problem, name, h)
        # the network's own rule decides (several values of one field on different parts)
        network.check_hard(replace(problem, conditions={**problem.conditions, name: c}))
    except ValueError as exc:
        return str(exc).removeprefix(f"conditions.{name}: ")
    return None


def _why_not_hard_start(problem, name, c, n: int = 256) -> str | None:
    """Why the initial condition ``c`` (value and rate) cannot be built in (None: it can):
    its values use the fields, the horizon is longer than :data:`HARD_START_HORIZON`,
    another start of its field is built in, or its value or rate differs, where the
    boundary meets the start, from a built-in Dirichlet value of the same field (built in
    together, the boundary value would not hold there)."""
    from pinn.points import ProblemPoints
    from pinn.scales import problem_scales

    for _, v in (*c.values, *c.rates):
        if calculus.fields_of(v):
            return "its value uses the fields"
    s = problem_scales(problem)
    if s.horizon is not None and s.horizon > HARD_START_HORIZON:
        return (f"a horizon of {s.horizon / (2 * np.pi):.3g} periods ({s.rate_from}): built "
                "in, the start's factor ((t - t0)/span)^2 would hold the network down over "
                "the first ones")
    mine = {f for f, _ in c.values}
    for other, o in problem.conditions.items():
        if other != name and isinstance(o, C.Initial) and o.hard and mine & {
                f for f, _ in o.values}:
            return f"{other} builds in a start of the same field"
    rates, values = dict(c.rates), dict(c.values)
    ti, span = problem.time_index, float(problem.time.t1 - problem.time.t0)
    pts = ProblemPoints(problem)
    x0 = pts.initial(jax.random.PRNGKey(0), n)
    size = {f: float(np.max(np.abs(_values(problem, v, x0))))
            for f, v in c.values}  # the gap is measured against the start's own size
    for k, (other, o) in enumerate(problem.conditions.items()):
        if not (isinstance(o, C.Dirichlet) and o.hard and isinstance(o.on, (str, tuple))):
            continue
        x, _ = pts.boundary(jax.random.PRNGKey(k), n, o.on)
        x = jnp.asarray(x).at[:, ti].set(problem.time.t0)
        tangent = jnp.zeros_like(x).at[:, ti].set(1.0)
        for f, g in o.values:
            if f not in mine:
                continue
            boundary = network.value_fn(problem, g)
            pairs = [(network.value_fn(problem, values[f])(x), boundary(x), "value")]
            if f in rates:
                gt = jax.jvp(boundary, (x,), (tangent,))[1]
                pairs.append((span * network.value_fn(problem, rates[f])(x), span * gt,
                              "rate"))
            for a, b, what in pairs:
                a, b = (np.broadcast_to(np.asarray(v, np.float64), (len(x),)) for v in (a, b))
                gap = np.abs(a - b)
                scale = max(size[f], float(np.max(np.abs(b))), 1e-30)
                if not np.all(np.isfinite(gap)) or float(gap.max()) > 1e-4 * scale:
                    return (f"its {what} of {f.name} differs from {other}'s built-in boundary "
                            f"value where they meet (by up to {float(np.nanmax(gap)):.3g}): "
                            "built in together, the boundary value would not hold there")
    return None


def _the_answer(problem, c, n: int = 256) -> str | None:
    """The field whose Dirichlet value in ``c`` equals the problem's exact solution at
    points inside the domain (a manufactured benchmark that writes the exact formula as the
    boundary value), or None."""
    from pinn.points import ProblemPoints

    exact = {f.name: v for f, v in problem.exact.items()} if problem.exact else {}
    todo = [(f, v) for f, v in c.values if f.name in exact]
    if not todo:
        return None
    x = ProblemPoints(problem).interior(jax.random.PRNGKey(0), n)
    for f, v in todo:
        g, u = _values(problem, v, x), _values(problem, exact[f.name], x)
        size = float(np.max(np.abs(u)))
        if np.all(np.isfinite(g - u)) and float(np.max(np.abs(g - u))) <= 1e-6 * max(size,
                                                                                      1e-30):
            return f.name
    return None


def _jumps(problem, names: list[str]) -> list[tuple[tuple[str, str], str]]:
    """The conditions among ``names`` (hard Dirichlet) whose value differs, where one of
    their parts meets a part of another hard condition of the same field, from that one's:
    a lift across a jump (the lid-driven cavity's corners) has derivatives that grow like
    ``1/r`` and ``1/r^2`` towards the corner, which the network must cancel; soft, the
    boundary loss only smooths the jump. The meeting points looked at: the corners and edge
    midpoints of flat boundary pieces, at the start, middle and end of the time interval
    and the middle of each ranged parameter's range."""
    space = problem.space
    pieces = [p for p in space._boundary_pieces() if p.affine is not None]
    if space.dim < 2 or not pieces:
        return []
    by_field: dict = {}
    for name in names:
        for h in problem.conditions[name].hard_outputs(problem, name):
            by_field.setdefault(h.field, []).append((name, h))
    out = []
    for field, hs in by_field.items():
        for i, (a, ha) in enumerate(hs):
            for b, hb in hs[i + 1:]:
                found = _jump(problem, pieces, ha, hb)
                if found is not None:
                    where, va, vb = found
                    out.append(((a, b), f"{field.name} jumps where they meet ({va:.3g} vs "
                                        f"{vb:.3g} at {where}): a lift across a jump has "
                                        "unbounded derivatives"))
    return out


def _jump(problem, pieces, ha, hb):
    """``(point, value a, value b)`` of the largest jump between two hard Dirichlet values
    at the points where their parts meet, or None."""
    space = problem.space
    verts = []
    for p in pieces:
        if p.name not in ha.names and p.name not in hb.names:
            continue
        o, axes, _ = p.affine
        axes = np.asarray(axes, np.float64).reshape(-1, space.dim)
        grids = np.stack(np.meshgrid(*[[0.0, 0.5, 1.0]] * len(axes), indexing="ij"), -1)
        coef = grids.reshape(-1, len(axes))
        verts.append(np.asarray(o, np.float64) + coef @ axes)
    if not verts:
        return None
    x = np.unique(np.concatenate(verts), axis=0)
    da = np.asarray(boundary_distance(space, ha.names)(x))
    db = np.asarray(boundary_distance(space, hb.names)(x))
    meet = (da < 1e-9) & (db < 1e-9) & _on_closure(space, x)
    if not meet.any():
        return None
    x = np.concatenate([x[meet], x[~meet]])  # the meeting points, then the rest (for scale)
    n_meet = int(meet.sum())
    rows = [x]
    if problem.is_evolution:
        t0, t1 = problem.time.t0, problem.time.t1
        rows = [np.hstack([x, np.full((len(x), 1), t)]) for t in (t0, (t0 + t1) / 2, t1)]
    pts = np.concatenate(rows)
    mids = [0.5 * (p.range[0] + p.range[1]) for p in problem.ranged]
    if mids:
        pts = np.hstack([pts, np.tile(mids, (len(pts), 1))])
    jpts = jnp.asarray(pts, dtype=float)  # the default float type, without a warning
    va, vb = _values(problem, ha.value, jpts), _values(problem, hb.value, jpts)
    # a jump of 1e-4 of the values' size: above float32's rounding of either value
    scale = max(float(np.max(np.abs(va))), float(np.max(np.abs(vb))))
    at = (np.arange(len(pts)) % len(x)) < n_meet
    gap = np.where(at, np.abs(va - vb), 0.0)
    k = int(np.argmax(gap))
    if not np.isfinite(gap[k]) or gap[k] <= 1e-4 * scale:
        return None
    where = "(" + ", ".join(f"{c:.3g}" for c in pts[k, :space.dim]) + ")"
    return where, float(va[k]), float(vb[k])


def _on_closure(space, x: np.ndarray) -> np.ndarray:
    """Which of the points ``x`` lie on the closure of ``space``: some point within a
    millionth of its size, in one of the 3^d - 1 directions, is inside. A face's corner
    that a difference cuts away (a step's inlet extended to the removed block's corner)
    is on the face's plane but not on the boundary, and no jump there matters."""
    lo, hi = (np.asarray(b, np.float64) for b in space.bounds)
    eps = 1e-6 * float(np.max(hi - lo))
    d = x.shape[1]
    dirs = np.stack(np.meshgrid(*[[-1.0, 0.0, 1.0]] * d, indexing="ij"), -1).reshape(-1, d)
    dirs = dirs[np.any(dirs != 0, axis=1)]
    near = (x[:, None, :] + eps * dirs[None]).reshape(-1, d)
    inside = np.asarray(inside_function(space)(jnp.asarray(near, dtype=float)))
    return (inside.reshape(len(x), -1) > 0).any(axis=1)


# ---------------------------------------------------------------------------
# energy: the divergence form where a diffusion coefficient jumps


def _energy(problem) -> tuple[Any, list[Choice]]:
    """Where the one equation of a steady problem is ``k laplacian(u) + r1 u + r0 = 0``
    with ``k`` jumping in space (a table of cells, a ``where`` of the coordinates): its
    energy (:class:`pinn.conditions.Energy`) ``int 1/2 k |grad u|^2 - 1/2 r1 u^2 - r0 u``,
    plus ``int k (a/(2b) u^2 - g/b u)`` on each Robin part ``a u + b du/dn = g`` (``-int k g
    u`` on a Neumann part), which replace those conditions (natural in the energy), and
    the network given ``|phi|`` inputs at the jumps ``phi = 0`` so that its gradient can
    jump there. Why: the squared pointwise residual says nothing at the jumps, and a smooth
    network keeps ``du/dn`` continuous there, while the physical (divergence-form) solution
    keeps the flux ``k du/dn`` continuous; the energy's minimum is that solution. The
    equation's own residual stays (it holds inside each piece). The training's stop rules
    (:class:`pinn.train.Stop`: a fraction of the first loss, a plateau relative to the
    loss) are turned off: an energy has no floor at zero to judge a loss by. Not for an
    evolution, an inverse or parametric problem or several fields (nothing said); where a
    condition is not natural in the energy (a soft Dirichlet condition, data, a predicate
    region) or the energy has no minimum, the choice says why not.

    Measured (the default recipe, 2 busy cores): PINNacle's Poisson 2d-MS as a user writes
    it (5 x 5 blocks of a from 0.13 to 88), 1.22 without it (the pointwise form's
    solution, 1.47 from the divergence form's), 9.46e-3 with it (600 s budget); a disk
    inclusion (k 20 in a disk of radius 1/2, 1 outside, u = 0 on the square's walls),
    0.349 without, 4.0e-3 with it (120 s each)."""
    from pinn.dsl import symbolic as S
    from pinn.qoi import region_quadrature

    if (problem.is_evolution or len(problem.equations) != 1 or len(problem.fields) != 1
            or problem.learnable or problem.ranged):
        return problem, []
    (name, eq), = problem.equations.items()
    u, spatial = problem.fields[0], tuple(problem.spatial)
    try:
        coefs, source = S.coefficients(problem.expand(eq), [u], spatial, problem.coords)
    except S.NonlinearError:
        return problem, []
    k = coefs.get((u, (spatial[0], spatial[0])))
    if k is None or not calculus.jumps_in_space(k, spatial):
        return problem, []
    try:
        inside = region_quadrature(problem, "interior", points=4096)
        sign, r1 = _energy_sign(problem, u, k, coefs, inside.points)
        conditions, parts = _natural(problem, u, calculus.mul(E.as_expr(sign), k),
                                     float(inside.measure))
    except _NoEnergy as why:
        return problem, [Choice("energy", False, f"equation {name}: its coefficient of "
                                f"laplacian({u.name}) jumps in space, but {why}: the "
                                "pointwise residual is kept")]
    surfaces = calculus.jump_surfaces(k, spatial) or ()
    density = _energy_density(u, spatial, *(calculus.mul(E.as_expr(sign), e)
                                            for e in (k, r1, source)))
    conditions[f"{name}_energy"] = C.Energy(density, measure=1.0, kinks=surfaces)
    conditions.update({f"{n}_energy": term for n, term in parts})
    kinks = (f"; |phi| inputs at its {len(surfaces)} jump surfaces (" +
             ", ".join(f"{s} = 0" for s in surfaces[:4]) +
             (", ..." if len(surfaces) > 4 else "") + ")") if surfaces else ""
    natural = [n for n, _ in parts]
    return replace(problem, conditions=conditions), [Choice(
        "energy", True, f"equation {name}: its coefficient of laplacian({u.name}) jumps in "
        "space, so the flux k du/dn (not du/dn) is continuous across the jumps: its energy "
        "is minimised beside the residual"
        + (f", {', '.join(natural)} natural in it" if natural else "") + kinks
        + "; the stop rules are off (an energy has no floor at zero to judge a loss by): "
        "each stage runs its steps, the last one on while a time limit allows")]


class _NoEnergy(Exception):
    """Why an equation whose coefficient jumps gets no energy (:func:`_energy`)."""


def _energy_sign(problem, u, k, coefs, x) -> tuple[float, Any]:
    """``(sign, r1)``: the sign of ``k`` (one sign at every point ``x``) and the coefficient
    of ``u`` itself; raises :class:`_NoEnergy` where the equation is not ``k laplacian(u)
    + r1 u + r0`` (first-order terms other than ``div(k grad u)``'s own) or its energy has
    no minimum (``k`` changing sign, ``sign * r1 > 0`` somewhere)."""
    from pinn.dsl import symbolic as S

    for (g, wrt), c in coefs.items():
        if wrt == () or (len(wrt) == 2 and wrt[0] == wrt[1] and c == k):
            continue
        rest = S.simplify(calculus.sub(c, calculus.diff(k, wrt[0]))) if len(wrt) == 1 else None
        if isinstance(rest, E.Number) and rest.value == 0:
            continue  # div(k grad u)'s own first-order term (zero where k is constant)
        raise _NoEnergy(f"it has the term {c}*D({g.name}, {', '.join(w.name for w in wrt)}) "
                        "(the energy covers k laplacian(u) + r1 u + r0 with an isotropic k)")
    r1 = coefs.get((u, ()), E.Number(0))
    kv, r1v = _values(problem, k, x), _values(problem, r1, x)
    if not (np.all(kv > 0) or np.all(kv < 0)):
        raise _NoEnergy("it changes sign (no energy is a minimum there)")
    sign = 1.0 if kv[0] > 0 else -1.0
    if np.any(sign * r1v > 0):
        raise _NoEnergy("its term in u itself has the sign of a Helmholtz term (the energy "
                        "would have no minimum)")
    return sign, r1


def _energy_density(u, spatial, k, r1, r0):
    """``1/2 k |grad u|^2 - 1/2 r1 u^2 - r0 u``: its first variation is the weak form of
    ``div(k grad u) + r1 u + r0 = 0``."""
    half, two = E.Number(0.5), E.Number(2)
    grad2 = calculus.power(E.Derivative(u, (spatial[0],)), two)
    for c in spatial[1:]:
        grad2 = calculus.add(grad2, calculus.power(E.Derivative(u, (c,)), two))
    return calculus.sub(calculus.sub(calculus.mul(calculus.mul(half, k), grad2),
                                     calculus.mul(calculus.mul(half, r1),
                                                  calculus.power(u, two))),
                        calculus.mul(r0, u))


def _natural(problem, u, k, measure: float) -> tuple[dict, list]:
    """``(conditions kept, [(name, Energy)])``: each Robin ``a u + b du/dn = g`` on
    ``u``'s named parts becomes ``int k (a/(2b) u^2 - g/b u)``, each Neumann ``du/dn = g``
    ``-int k g u`` (each weighted by its parts' measure over the domain's, ``measure``); a
    built-in Dirichlet condition, a periodic one and those of other fields stay. Raises
    :class:`_NoEnergy` for any other condition on ``u`` or a Robin one without a minimum."""
    from pinn.qoi import region_quadrature

    kept, parts, half = {}, [], E.Number(0.5)
    for cname, c in problem.conditions.items():
        if (u not in c.fields_used() or isinstance(c, C.Periodic)
                or (isinstance(c, C.Dirichlet) and c.hard)):
            kept[cname] = c
            continue
        if not isinstance(c, (C.Robin, C.Neumann)):
            raise _NoEnergy(f"condition {cname} ({type(c).__name__.lower()}) is not natural "
                            "in an energy")
        if not isinstance(c.on, (str, tuple)):
            raise _NoEnergy(f"condition {cname} holds where a predicate says, not on named "
                            "parts")
        xb = region_quadrature(problem, c.on, points=2048)
        if isinstance(c, C.Neumann):
            density = calculus.neg(calculus.mul(calculus.mul(k, c.value), u))
        else:
            b, a = (_values(problem, v, xb.points) for v in (c.b, c.a))
            if np.any(b == 0):
                raise _NoEnergy(f"condition {cname} has no normal derivative somewhere "
                                "(b = 0)")
            if np.any(a * b < 0):
                raise _NoEnergy(f"condition {cname}'s a/b is negative somewhere (no "
                                "minimum)")
            density = calculus.mul(k, calculus.sub(
                calculus.mul(calculus.div(calculus.mul(half, c.a), c.b),
                             calculus.power(u, E.Number(2))),
                calculus.mul(calculus.div(c.value, c.b), u)))
        parts.append((cname, C.Energy(density, on=c.on, measure=float(xb.measure) / measure)))
    return kept, parts


# ---------------------------------------------------------------------------
# a start layer


def _layer(problem, n: int = 512) -> tuple[Any, list[Choice]]:
    """Time by its square root (``problem.time.layer``) where an evolution's start is a
    layer: every equation first order in time, one of them diffusive (second order in
    space), one start of values, and a boundary condition on the start's fields that its
    values miss, at the start, by more than :data:`LAYER_GAP` of their size (a cold body in
    a hot bath: the solution near that wall moves like ``sqrt(t - t0)``, its rate
    unbounded at the start). A network of ``t`` spends its first features on that corner;
    one of ``tau = sqrt((t - t0)/span)``, drawn uniformly in ``tau``, sees it stretched over
    the first part of its input, and a start built in as ``u0 + tau N`` moves as the
    solution does (``u0 + (t - t0) N`` cannot). Not for a second time derivative (a wave
    carries its jump along, it does not diffuse it) or no diffusion. Measured (PINNacle's
    Heat 2d-CG, written plainly: Robin data u + du/dn = 5 on holes in a cold plate, the
    default recipe, idle): 5.62e-2 with plain time, 3.35e-2 with the layer."""
    time = problem.time
    if time is None or time.layer or problem.ranged or not problem.equations:
        return problem, []
    t = problem.time_coord
    orders = [calculus.coord_orders(problem.expand(e), problem.spatial)
              for e in problem.equations.values()]
    if max(o.get(t, 0) for o in orders) != 1 or not any(
            o.get(c, 0) >= 2 for o in orders for c in problem.spatial):
        return problem, []
    starts = [(name, c) for name, c in problem.conditions.items() if isinstance(c, C.Initial)]
    if len(starts) != 1 or starts[0][1].rates or any(
            calculus.fields_of(v) for _, v in starts[0][1].values):
        return problem, []
    sname, start = starts[0]
    try:
        worst = _start_gap(problem, start, n)
    except (ValueError, TypeError, KeyError, NotImplementedError):
        return problem, []
    if worst is None:
        return problem, []
    name, g, scale = worst
    from pinn.geometry.spacetime import SpaceTime

    layered = replace(problem, domain=SpaceTime(problem.space, replace(time, layer=True)))
    built = ""
    if start.hard is None:
        why = _why_not_hard_start(layered, sname, start.with_hard(True))
        conditions = dict(layered.conditions)
        conditions[sname] = start.with_hard(why is None)
        layered = replace(layered, conditions=conditions)
        built = ("; the start built in, u = u0 + sqrt((t - t0)/span) N" if why is None
                 else f"; the start soft: {why}")
    return layered, [Choice("layer", True, f"the start ({sname}) misses {name} where they meet "
                            f"by up to {g:.3g} (of {scale:.3g}): a layer moving like "
                            "sqrt(t - t0); time drawn and taken by the network as "
                            "sqrt((t - t0)/span), the equations and boundary conditions "
                            f"weighted by it{built}")]


def _start_gap(problem, start, n: int) -> tuple[str, float, float] | None:
    """The boundary condition the start's values miss most, at ``t0``, relative to their
    size: ``(name, gap, size)``, or None where none misses by :data:`LAYER_GAP` of it. Each
    condition's residual with the start's values in place of the fields (their derivatives
    taken symbolically), at its own points moved to ``t0``; residuals of fields the start
    does not give are left out."""
    from pinn.dsl.symbolic import summands
    from pinn.points import ProblemPoints
    from pinn.scales import _eval, _zeroed

    values = dict(start.values)
    draw, ti = ProblemPoints(problem), problem.time_index
    x0 = np.asarray(draw.initial(jax.random.PRNGKey(0), n), np.float64)
    size = max(float(np.max(np.abs(_eval(problem, v, x0)))) for v in values.values())
    worst = None
    for k, (name, c) in enumerate(problem.conditions.items()):
        if isinstance(c, (C.Initial, C.Data, C.Energy)) or not set(c.fields_used()) & set(
                values):
            continue
        res = c.residuals(problem, name)
        if (res.points is not None or res.match is not None
                or not isinstance(res.on, (str, tuple)) or res.on in ("interior", "initial")):
            continue
        xb, normals = (np.array(a, np.float64) for a in draw.boundary(
            jax.random.PRNGKey(k + 1), n, res.on))
        xb[:, ti] = problem.time.t0
        extra = {s: normals[:, i] for i, s in enumerate(C.normal_symbols(len(
            problem.spatial)))}
        for e in res.exprs.values():
            if not set(calculus.fields_of(problem.expand(e))) <= set(values):
                continue  # a field the start does not give (one no equation evolves)
            gap = np.abs(_eval(problem, _zeroed(problem, e, values), xb, extra))
            terms = [np.abs(_eval(problem, _zeroed(problem, p, values), xb, extra))
                     for p in summands(problem.expand(e))]
            scale = max([size] + [float(np.nanmax(v)) for v in terms if np.any(np.isfinite(v))])
            g = float(np.nanmax(gap)) if np.any(np.isfinite(gap)) else 0.0
            if scale > 0 and g > LAYER_GAP * scale and (
                    worst is None or g / scale > worst[1] / worst[2]):
                worst = (name, g, scale)
    return worst


def _settle_starts(problem):
    """The first-order starts the plan left open (``hard=None``) made soft."""
    conditions = {n: c.with_hard(False) if isinstance(c, C.Initial) and c.hard is None
                  and not c.rates else c for n, c in problem.conditions.items()}
    return replace(problem, conditions=conditions)


# ---------------------------------------------------------------------------
# output scale


def _sizes(problem) -> tuple[dict[str, float], dict[str, tuple[float, str]]]:
    """``(sizes, balanced)``: each field's size, from its values (:func:`field_sizes`) or,
    where they say nothing, by the terms it balances (``balanced``,
    :func:`balanced_sizes`), for the output scale and the residuals' weights alike."""
    sizes = field_sizes(problem)
    balanced = balanced_sizes(problem, sizes)
    sizes.update({f: v for f, (v, _) in balanced.items()})
    return sizes, balanced


def _scale(problem, model, sized) -> tuple[Any, list[Choice]]:
    """The network spec with ``output_scale`` set where a field's values are far from
    order one (and the spec does not set it itself)."""
    from pinn.nets import ModelSpec

    if not isinstance(model, ModelSpec) or model.output_scale is not None:
        return model, []
    sizes, balanced = sized
    scale = tuple(_round(sizes.get(f.name, 0.0)) for f in problem.fields)
    if all(v == 1.0 for v in scale):
        return model, []
    chosen = {f.name: v for f, v in zip(problem.fields, scale, strict=True) if v != 1.0}
    why = [f"{n} ~ {sizes[n]:.2g}: {balanced[n][1]}" if n in balanced else
           f"{n} up to {sizes[n]:.3g}: its boundary, initial and data values" for n in chosen]
    return replace(model, output_scale=scale), [Choice(
        "scale", chosen, "the network's output times the field's size (" + "; ".join(why)
        + ")")]


def _frequency(problem, model) -> tuple[Any, list[Choice]]:
    """Random Fourier features where a source or value oscillates faster than a plain
    network of the normalised inputs resolves (:data:`FOURIER_ABOVE`), each input's scale
    its frequency (:func:`pinn.scales.problem_scales`; 1 for the others); not where the
    spec has Fourier features or periodic inputs of its own."""
    from pinn.nets import Fourier, ModelSpec
    from pinn.scales import problem_scales

    if (not isinstance(model, ModelSpec) or model.fourier is not None
            or model.periodic is not None or network.periodic_embedding(problem)):
        return model, []
    freq = problem_scales(problem).frequency
    fast = {c: w for c, (w, _) in freq.items() if w > FOURIER_ABOVE}
    if not fast:
        return model, []
    scale = tuple(float(f"{max(freq.get(c.name, (1.0, ''))[0], 1.0):.2g}")
                  for c in problem.inputs)
    chosen = {c.name: v for c, v in zip(problem.inputs, scale, strict=True) if v != 1.0}
    return replace(model, fourier=Fourier(scale, FOURIER_FEATURES)), [Choice(
        "fourier", chosen, "random Fourier features of these angular frequencies (inputs "
        "mapped to [-1, 1]): " + "; ".join(f"{c} {w:.3g} in {freq[c][1]}"
                                           for c, w in fast.items()))]


def _round(size: float) -> float:
    """The size to one digit where it is above 10; else 1. Small values do not scale down:
    a field that vanishes on the boundary (``sin(pi x)`` at the ends of [-1, 1] is ~1e-16)
    can be of order one inside."""
    if not np.isfinite(size) or size <= 10:
        return 1.0
    return float(f"{size:.0e}")


def field_sizes(problem, n: int = 512, seed: int = 0) -> dict[str, float]:
    """``{field: largest |value|}`` over the problem's Dirichlet values (on their parts),
    initial values and rates times the time span (on the initial slice) and data, where
    they are given: the size the field has where the problem says what it is."""
    from pinn.points import ProblemPoints

    pts = ProblemPoints(problem)
    key = jax.random.PRNGKey(seed)
    sizes: dict[str, float] = {}

    def see(field, values):
        v = np.abs(np.asarray(values, np.float64))
        v = v[np.isfinite(v)]
        if v.size:
            sizes[field.name] = max(sizes.get(field.name, 0.0), float(v.max()))

    for k, c in enumerate(problem.conditions.values()):
        kk = jax.random.fold_in(key, k)
        if isinstance(c, C.Dirichlet) and isinstance(c.on, (str, tuple)):
            x, _ = pts.boundary(kk, n, c.on)
            for f, v in c.values:
                if not calculus.fields_of(v):
                    see(f, network.value_fn(problem, v)(x))
        elif isinstance(c, C.Initial):
            x = pts.initial(kk, n)
            span = float(problem.time.t1 - problem.time.t0)
            for f, v in c.values:
                if not calculus.fields_of(v):
                    see(f, network.value_fn(problem, v)(x))
            for f, v in c.rates:
                if not calculus.fields_of(v):
                    see(f, span * np.asarray(network.value_fn(problem, v)(x)))
        elif isinstance(c, C.Data):
            for f, v in c.values:
                see(f, v)
    return sizes


def balanced_sizes(problem, sizes: dict[str, float], n: int = 512,
                   seed: int = 0) -> dict[str, tuple[float, str]]:
    """``{field: (size, why)}`` for the fields ``sizes`` (:func:`field_sizes`) says nothing
    of (no value, or only zeros) that an equation holds only through first derivatives (a
    pressure in a momentum equation, a velocity component in continuity, an unknown whose
    rate alone is given): there those derivatives balance the equation's other terms, so
    the field's size is theirs over ``max_c a_c / l_c``, ``a_c`` the largest coefficient of
    its derivative along ``c`` and ``l_c`` the domain's extent along ``c`` (in time, one
    over the evolution's rate). A second derivative is left alone: how far a diffusion
    spreads a source depends on modes the problem does not state (a Poisson source of
    sin(pi x) sin(pi y) on [-1, 1]^2 makes u of 1/(2 pi^2) of it, not 4x). Terms are sized
    by :func:`_term_sizes`; the largest estimate over the equations is kept."""
    from pinn.dsl.symbolic import summands
    from pinn.points import ProblemPoints

    unknown = [f for f in problem.fields if not sizes.get(f.name)]
    if not unknown:
        return {}
    per = _per_unit(problem)
    x = np.asarray(ProblemPoints(problem).interior(jax.random.PRNGKey(seed), n), np.float64)
    out: dict[str, tuple[float, str]] = {}
    for name, eq in problem.equations.items():
        ex = calculus.expand(problem.expand(eq), problem.spatial, problem.coords)
        derivs = calculus.field_derivatives(ex)
        for f in unknown:
            wrts = sorted({tuple(w) for g, w in derivs if g == f and w}, key=str)
            zero = {E.Derivative(f, w): E.Number(0.0) for w in wrts}
            rest = calculus.substitute(ex, zero)
            if not wrts or any(len(w) > 1 for w in wrts) or f in calculus.fields_of(rest):
                continue  # not in it, not only differentiated, or a higher derivative
            other = _term_sizes(problem, summands(rest), sizes, per, x)
            own = max(per[w[0]] * _term_sizes(problem, [
                calculus.substitute(t, {**zero, E.Derivative(f, w): E.Number(1.0)})
                for t in summands(ex) if E.Derivative(f, w) in calculus.walk(t)],
                sizes, per, x) for w in wrts)
            size = other / own if own > 0 else 0.0
            if math.isfinite(size) and size > out.get(f.name, (0.0, ""))[0]:
                along = ", ".join(w[0].name for w in wrts)
                out[f.name] = (size, f"its derivatives along {along} balance {name}'s "
                               f"other terms (up to {other:.2g}) over the domain")
    return out


def equation_sizes(problem, sizes: dict[str, float] | None = None, n: int = 512,
                   seed: int = 0, per: dict | None = None) -> dict[str, float]:
    """``{equation: size}``: each equation's largest term by dimensional analysis
    (:func:`_term_sizes`), the fields sized by their values (:func:`field_sizes`) or, where
    they have none, by the terms they balance (:func:`balanced_sizes`); a field sized by
    neither counts as order one (the network's own output). ``per``: what a derivative
    along each coordinate multiplies a size by (default :func:`_per_unit`)."""
    from pinn.dsl.symbolic import summands
    from pinn.points import ProblemPoints

    if sizes is None:
        sizes = _sizes(problem)[0]
    sizes = {f.name: sizes.get(f.name) or 1.0 for f in problem.fields}
    per = _per_unit(problem) if per is None else per
    x = np.asarray(ProblemPoints(problem).interior(jax.random.PRNGKey(seed), n), np.float64)
    return {name: _term_sizes(problem, summands(calculus.expand(
        problem.expand(eq), problem.spatial, problem.coords)), sizes, per, x)
        for name, eq in problem.equations.items()}


def _per_unit(problem, waves: bool = False) -> dict:
    """``{coordinate: 1/extent}`` over the domain's bounding box, and for time the
    evolution's rate (:func:`pinn.scales.problem_scales`; one over the span where none is
    seen): what a derivative along each coordinate multiplies a size by. ``waves``: along a
    spatial coordinate, the frequency of the problem's sources and values where that is
    larger (:attr:`pinn.scales.Scales.frequency`, in the inputs mapped to [-1, 1]: times
    2/extent)."""
    from pinn.scales import problem_scales

    lo, hi = (np.asarray(b, np.float64) for b in problem.space.bounds)
    per = {c: 1.0 / float(h - low) if 0 < h - low < np.inf else 0.0
           for c, low, h in zip(problem.spatial, lo, hi, strict=True)}
    scales = problem_scales(problem) if waves or problem.time is not None else None
    if waves:
        per = {c: max(v, 2.0 * v * scales.frequency.get(c.name, (0.0, ""))[0])
               for c, v in per.items()}
    if problem.time is not None:
        rate = scales.rate
        per[problem.time_coord] = rate or 1.0 / float(problem.time.t1 - problem.time.t0)
    return per


def _term_sizes(problem, terms: list, sizes: dict[str, float], per: dict,
                x: np.ndarray) -> float:
    """The largest of ``terms`` by dimensional analysis: each field its size (0 where
    unknown), each derivative along ``c`` times ``per[c]`` (one over the domain's extent,
    in time the rate), coefficients and sources their largest value at the points ``x``."""
    from pinn.scales import _eval

    best = 0.0
    for term in terms:
        mapping: dict = {}
        for g, wrt in calculus.field_derivatives(term):
            value = sizes.get(g.name, 0.0) * math.prod(per[c] for c in wrt)
            mapping[E.Derivative(g, tuple(wrt)) if wrt else g] = E.Number(value)
        for g in problem.fields:
            mapping.setdefault(g, E.Number(sizes.get(g.name, 0.0)))
        v = np.abs(_eval(problem, calculus.substitute(term, mapping), x))
        v = v[np.isfinite(v)]
        best = max(best, float(v.max()) if v.size else 0.0)
    return best


def _residuals(problem, training: Training, fields: dict[str, float],
               kept: tuple[str, ...] = ()) -> tuple[Any, Training, list[Choice]]:
    """``(problem, training, choices)``: each equation, and each soft Neumann or Robin
    condition (:func:`condition_sizes`), whose largest term is more than
    :data:`RESIDUALS_ABOVE` times smaller than the largest equation's (:func:`equation_sizes`)
    weighted by the square of that ratio, so that the loss measures every residual against
    its own terms and each is met to the same relative accuracy. Unweighted, an
    incompressible flow driven at rate 10 (PINNacle's NS 2d-LT: momentum terms of ~22,
    continuity ~1.1) is fitted with its momentum balanced to 1e-3 of its terms while
    continuity is off by half of its own, and the pressure that continuity demands is never
    built; a zero-flux wall beside a source of ~180 oscillating at ~25 per unit length
    (PINNacle's Poisson 3d-CG as a user writes it: the wall's terms ~25) is met so loosely
    that the field within 0.02 of the walls is off by 9 % of its size, 4.7 % further in
    (5.95e-2 in all; the walls weighted 10, 100, 1000: 4.6e-2, 4.0e-2, 3.2e-2, the
    default recipe to its 5000 steps). Only under fixed weighting, and not an
    equation or condition the user weighted (``kept``, a condition's own weight other than
    1, the weighting's names); dimensional analysis is good to a few times, so residuals
    within :data:`RESIDUALS_ABOVE` of the largest are left alone. ``fields``: the fields'
    sizes (:func:`_sizes`). Equations are weighted by the training's weighting, conditions
    by their own ``weight``."""
    from pinn.train.weighting import Fixed

    if not problem.equations or type(training.weighting) is not Fixed:
        return problem, training, []
    bounds, against = condition_sizes(problem, fields)
    if len(problem.equations) < 2 and not bounds:  # nothing to weigh against
        return problem, training, []
    given = dict(training.weighting.weights or {})
    sizes = equation_sizes(problem, fields)
    top = max(sizes.values())

    def weight(s: float, largest: float) -> float | None:
        ratio = largest / s if s > 0 else 0.0
        return float(f"{ratio ** 2:.2g}") if ratio > RESIDUALS_ABOVE else None

    chosen = {} if len(sizes) < 2 else {
        name: w for name, s in sizes.items()
        if name not in given and (w := weight(s, top)) is not None}
    weighed = {name: w for name, s in bounds.items() if name not in given
               and name not in kept and (w := weight(s, against)) is not None}
    if not chosen and not weighed:
        return problem, training, []
    if chosen:
        training = replace(training, weighting=replace(training.weighting,
                                                       weights={**given, **chosen}))
    conditions = {name: (type(c).from_data({**c.to_data(), "weight": weighed[name]})
                         if name in weighed else c) for name, c in problem.conditions.items()}
    return replace(problem, conditions=conditions), training, [Choice(
        "residuals", {**chosen, **weighed}, "each residual weighted by the square of its "
        "terms' size against the largest equation's (by dimensional analysis: " + ", ".join(
            f"{n} {v:.2g}" for n, v in sizes.items())
        + (f"; a condition's against the equations' {against:.2g}, each derivative sized by "
           "the problem's frequencies too: " + ", ".join(f"{n} {bounds[n]:.2g}" for n in weighed)
           if weighed else "") + ")")]


def condition_sizes(problem, sizes: dict[str, float] | None = None, n: int = 512,
                    seed: int = 0) -> tuple[dict[str, float], float]:
    """``({condition: size}, largest equation's size)`` for each soft Neumann (``du/dn =
    g``) or Robin (``a u + b du/dn = g``) condition of weight 1: its largest term by
    dimensional analysis, ``a``, ``b`` and ``g`` their largest values on the condition's
    part, and the equations' terms (:func:`equation_sizes`) sized the same way: each field
    at least of order one (the network's output: a field whose boundary values are ~0 can
    be of order one inside), each derivative along a spatial coordinate by one over the
    extent or the problem's frequency there where larger (:func:`_per_unit`), ``du/dn`` by
    the largest of them. Sized by the extent alone, a zero-flux wall beside a source of
    frequency 25 (PINNacle's Poisson 3d-CG) is weighted 3.3e4: Adam ends on a plateau at
    step 1100 and SSBroyden stalls (6.6e-2 against 5.95e-2 unweighted); by its frequency,
    610 (measured by hand: 100 gives 4.0e-2, 1000 3.2e-2; the plan's 610 3.2e-2)."""
    from pinn.points import ProblemPoints
    from pinn.scales import _eval

    soft = {k: (name, c) for k, (name, c) in enumerate(problem.conditions.items())
            if type(c) in (C.Neumann, C.Robin) and c.weight == 1.0}
    if not soft:
        return {}, 0.0
    if sizes is None:
        sizes = _sizes(problem)[0]
    sizes = {f.name: max(sizes.get(f.name) or 1.0, 1.0) for f in problem.fields}
    per = _per_unit(problem, waves=True)
    slope = max(per[c] for c in problem.spatial)
    draw, out = ProblemPoints(problem), {}
    for k, (name, c) in soft.items():
        at = np.asarray(draw.boundary(jax.random.fold_in(jax.random.PRNGKey(seed), k), n,
                                      c.on)[0], np.float64)

        def top(e, at=at):
            v = np.abs(_eval(problem, e, at))
            v = v[np.isfinite(v)]
            return float(v.max()) if v.size else 0.0

        u = sizes[c.field.name]
        a, b = (top(c.a), top(c.b)) if isinstance(c, C.Robin) else (0.0, 1.0)
        out[name] = max(a * u, b * u * slope, top(c.value))
    return out, max(equation_sizes(problem, sizes, n, seed, per).values())


# ---------------------------------------------------------------------------
# data balance


def inverse(problem) -> bool:
    """Whether ``problem`` is an inverse problem: learnable parameters, or more fields than
    equations (a coefficient field the physics alone does not determine)."""
    return bool(problem.learnable) or len(problem.fields) > len(problem.equations)


def _balance(problem, kept: tuple[str, ...] = (), n: int = 2048,
             seed: int = 0) -> tuple[Any, list[Choice]]:
    """In an inverse problem, each data condition of weight 1 (not in ``kept``) weighted by
    ``sqrt(S / D)`` where that is at least 2: ``S`` the largest equation's source (the
    equation with every field zero) in mean square over the domain, ``D`` the data's mean
    square. With the unknowns free, many wrong fields meet the physics, and a forced
    equation whose loss starts far above the data's drives the fields away from the
    observations before the data can pin them; weighting the data all the way to ``S / D``
    fits their noise instead. Measured (PINNacle's inverse problems, N(0, 0.1) noise,
    Adam 2000 then SSBroyden to step 2500): HInv (``S / D`` 1500) u, a errors 2.1, 2.7 at
    weight 1, 0.11, 0.10 at 40 (after Adam alone), 5.8e-2, 6.1e-2 at 1000; PInv (``S / D``
    74) 1.2e-2, 1.9e-2 at 1, 1.8e-2, 4.2e-2 at 8.6, 2.2e-2, 8.2e-2 at 80.

    The same for a Dirichlet condition (weight 1, soft) on a field no data condition
    observes, ``D`` its values' mean square on its boundary: the unobserved coefficient's
    boundary values are all that anchors it (its equation, given the observed field, is a
    transport along that field's gradient, fixed by those values), so they must weigh as
    the data do. Measured (HInv, user file, the default recipe, 2026-12-05): a's boundary
    values at weight 1 (the data at 39): u, a errors 7.9e-2, 2.15 (506 s); at 39: 5.4e-2,
    3.9e-2 (356 s, beside another run)."""
    from pinn.points import ProblemPoints
    from pinn.scales import _eval, _zeroed

    data = {n_: c for n_, c in problem.conditions.items()
            if isinstance(c, C.Data) and c.weight == 1.0 and n_ not in kept}
    if not problem.equations or not inverse(problem):
        return problem, []
    observed = {f for c in problem.conditions.values() if isinstance(c, C.Data)
                for f in c.fields_used()}
    anchors = {n_: c for n_, c in problem.conditions.items()
               if type(c) is C.Dirichlet and c.weight == 1.0 and not c.hard
               and n_ not in kept and observed and not set(c.fields_used()) & observed}
    if not data and not anchors:
        return problem, []
    draw = ProblemPoints(problem)
    pts = np.asarray(draw.interior(jax.random.PRNGKey(seed), n), np.float64)
    source = 0.0
    for eq in problem.equations.values():
        v = _eval(problem, _zeroed(problem, eq), pts)
        v = v[np.isfinite(v)]
        if v.size:
            source = max(source, float(np.mean(v * v)))
    conditions, chosen, sizes = dict(problem.conditions), {}, {}

    def weigh(name, c, vals):
        vals = vals[np.isfinite(vals)]
        size = float(np.mean(vals * vals)) if vals.size else 0.0
        ratio = source / size if size > 0 else math.inf
        if not math.isfinite(ratio) or ratio < 4:
            return
        w = float(f"{math.sqrt(ratio):.2g}")
        conditions[name] = type(c).from_data({**c.to_data(), "weight": w})
        chosen[name], sizes[name] = w, size

    for name, c in data.items():
        weigh(name, c, np.concatenate([np.asarray(v, np.float64).reshape(-1)
                                       for _, v in c.values]))
    for k, (name, c) in enumerate(anchors.items()):
        key = jax.random.fold_in(jax.random.PRNGKey(seed), k + 1)
        at = np.asarray(draw.boundary(key, 512, c.on)[0], np.float64)
        weigh(name, c, np.concatenate([_eval(problem, v, at) for _, v in c.values]))
    if not chosen:
        return problem, []
    what = " and ".join(w for w, names in (("data", data), ("the unobserved fields' "
                                                             "boundary values", anchors))
                        if set(names) & set(chosen))
    return replace(problem, conditions=conditions), [Choice(
        "balance", chosen, f"an inverse problem: {what} weighted by the square root of the "
        f"sources' mean square, {source:.3g}, over their own ("
        + ", ".join(f"{n_} {sizes[n_]:.3g}" for n_ in chosen) + ")")]


def _holdout(problem, seed: int = 0) -> tuple[Any, tuple, list[Choice]]:
    """In an inverse problem, :data:`HOLDOUT_FRACTION` of each data condition of at least
    :data:`HOLDOUT_MIN_ROWS` rows held out of training (a seeded draw, the same on a
    resume): the problem without them, ``((name, held-out Data), ...)`` and the choice.
    The run keeps the parameters at which the held-out misfit was lowest. Measured
    (PINNacle's PInv, N(0, 0.1) noise, the default recipe): the held-out misfit was lowest
    at step 2400 (u, a errors 1.5e-2, 3.1e-2) and rose after, as the fit of the noise took
    a to 0.20 by step 5000 while the training loss kept falling."""
    data = {n: c for n, c in problem.conditions.items()
            if isinstance(c, C.Data) and len(c.points) >= HOLDOUT_MIN_ROWS}
    if not data or not problem.equations or not inverse(problem) or problem.ranged:
        return problem, (), []
    conditions, held = dict(problem.conditions), []
    for k, (name, c) in enumerate(data.items()):
        n = len(c.points)
        order = np.random.default_rng([seed, k]).permutation(n)
        m = max(1, round(HOLDOUT_FRACTION * n))
        out, keep = np.sort(order[:m]), np.sort(order[m:])
        conditions[name] = c.take(keep)
        held.append((name, c.take(out)))
    return replace(problem, conditions=conditions), tuple(held), [Choice(
        "holdout", {n: len(d.points) for n, d in held},
        f"an inverse problem: {HOLDOUT_FRACTION:.0%} of the observations held out of "
        "training; the run keeps the parameters at which their misfit was lowest (fitting "
        "the data's noise shows there first)")]


def _values(problem, expr, x) -> np.ndarray:
    """An expression of the coordinates (no fields) at points ``x``, as float64, one value
    per point (a constant broadcast)."""
    v = np.asarray(network.value_fn(problem, expr)(jnp.asarray(x)), np.float64)
    return np.broadcast_to(v, (len(x),))


# ---------------------------------------------------------------------------
# points


def _points(problem, training: Training) -> tuple[Training, list[Choice]]:
    """Collocation points by the problem's dimension (space and time)."""
    d = len(problem.coords)
    interior = {1: 1024, 2: 4096}.get(d, 8192)
    boundary = 64 if problem.space.dim == 1 else 1024
    initial = 256 if problem.space.dim == 1 else 1024
    p = training.points
    planned = replace(p, interior=interior, boundary=boundary, initial=initial)
    if planned == p:
        return training, []
    return replace(training, points=planned), [Choice(
        "points", {"interior": interior, "boundary": boundary, "initial": initial},
        f"{d} coordinate{'s' if d > 1 else ''}"
        + (", a boundary of two end points" if problem.space.dim == 1 else ""))]


def _windows(problem, training: Training) -> tuple[Training, list[Choice]]:
    """Time marching where the evolution's horizon (time span times its rate,
    :func:`pinn.scales.problem_scales`) exceeds :data:`HORIZON_PER_WINDOW`: one window per
    :data:`HORIZON_PER_WINDOW`, each starting exactly from the last one's end; none where
    that would be more than :data:`MAX_WINDOWS` (the plan says so)."""
    from pinn.scales import problem_scales

    if problem.time is None or training.windows != 1 or not _marchable(problem):
        return training, []  # an inverse or parametric problem, or one with no start
    s = problem_scales(problem)
    if s.horizon is None or s.horizon <= HORIZON_PER_WINDOW:
        return training, []
    n = math.ceil(s.horizon / HORIZON_PER_WINDOW)
    if n > MAX_WINDOWS:
        return training, [Choice(
            "windows", 1, f"not marched: a horizon of {s.horizon:.3g} ({s.rate_from}) would "
            f"need {n} windows of at most {HORIZON_PER_WINDOW:.3g}, more than "
            f"{MAX_WINDOWS}; longer windows did worse than none (PINNacle's Wave 2d-MS, "
            "horizon 314, in 10 windows: 68 against 0.173)")]
    return replace(training, windows=n), [Choice(
        "windows", n, f"time marching: the evolution's rate is {s.rate:.3g} per unit time "
        f"({s.rate_from}), a horizon of {s.horizon:.3g} over the time span, at most "
        f"{HORIZON_PER_WINDOW:.3g} per window")]


def _marchable(problem) -> bool:
    """Whether ``problem`` can be marched (:func:`pinn.marching.check_windows`)."""
    try:
        marching.check_windows(problem, 2)
    except ValueError:
        return False
    return True


def _soft_starts(problem) -> list[tuple[str, E.Field, E.Expr]]:
    """``(condition, field, value)`` of each soft start's values that name no field."""
    return [(name, f, v) for name, c in problem.conditions.items()
            if isinstance(c, C.Initial) and c.hard is False
            for f, v in c.values if not calculus.fields_of(v)]


def missed_start(problem, predict, n: int = 4096) -> tuple[str, str, float] | None:
    """``(condition, field, miss)``: the soft start value a trained solution misses most,
    the rms of the miss at ``n`` points of the start (seeded) relative to the start's own
    rms; ``None`` where no soft start has a value that is not zero. ``predict(points) ->
    {field: values}`` (:func:`pinn.evaluate.predict_in_chunks` of the solution)."""
    from pinn.points import ProblemPoints
    from pinn.scales import _eval, _rms

    starts = _soft_starts(problem)
    if not starts:
        return None
    x0 = np.asarray(ProblemPoints(problem).initial(jax.random.PRNGKey(0), n), np.float64)
    pred = predict(x0)
    worst = None
    for name, f, v in starts:
        want = _eval(problem, v, x0)
        size = _rms(want)
        if size == 0:
            continue
        miss = _rms(np.asarray(pred[str(f)], np.float64).reshape(-1) - want) / size
        if worst is None or miss > worst[2]:
            worst = (name, str(f), miss)
    return worst
