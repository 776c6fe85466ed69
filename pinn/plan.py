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
  :func:`pinn.geometry.adf.lift`), unless the condition says ``hard`` itself;
- **points**: the collocation points sized by the problem's dimension (a 1D problem does
  not need 4096 interior and 1024 boundary points).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import Any

from pinn import conditions as C
from pinn import network
from pinn.dsl import calculus
from pinn.train.spec import Training

__all__ = ["Choice", "Planning", "Plan", "make_plan"]


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
    points passes ``True``)."""

    hard: bool = True
    points: bool | None = None


@dataclass(frozen=True)
class Plan:
    """The problem, network and training a run uses, and the choices that made them."""

    problem: Any
    model: Any
    training: Training
    choices: tuple[Choice, ...] = ()

    def lines(self) -> list[str]:
        """The plan in a few lines (what ``pinn validate`` and ``pinn solve`` print)."""
        return [c.line() for c in self.choices] or ["nothing to plan: the problem's and the "
                                                    "training's own settings"]

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
        planning = Planning(hard=False, points=False)
    choices: list[Choice] = []
    problem, made = _hard(problem, planning.hard)
    choices += made
    plan_points = planning.points if planning.points is not None else training is None
    training = Training() if training is None else training
    if plan_points:
        training, made = _points(problem, training)
        choices += made
    return Plan(problem, model, training, tuple(choices))


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
            soft.append(f"{name}: {why}")
    if not hard and not soft:
        return problem, []
    planned = replace(problem, conditions=conditions)
    if not allowed:
        return planned, []
    out = []
    if hard:
        parts = {n: ", ".join(planned.conditions[n].on) if isinstance(planned.conditions[n].on,
                                                                      tuple)
                 else str(planned.conditions[n].on) for n in hard}
        out.append(Choice("hard", hard, "Dirichlet values built into the network (exactly "
                          "met; " + "; ".join(f"{n} on {p}" for n, p in parts.items()) + ")"))
    if soft:
        out.append(Choice("soft", [s.split(":")[0] for s in soft], "; ".join(soft)))
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
    try:
        for h in c.hard_outputs(problem, name):
            C.check_hard_subset(problem, name, h)
        # the network's own rule decides (several values of one field on different parts)
        network.check_hard(replace(problem, conditions={**problem.conditions, name: c}))
    except ValueError as exc:
        return str(exc).removeprefix(f"conditions.{name}: ")
    return None


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
