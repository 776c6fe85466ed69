"""Held-out observations in an inverse problem (pinn.plan's ``holdout``, issue 33): the
plan holds a tenth of the data out of training, the run keeps the parameters at which
their misfit was lowest (pinn.train.KeepBest), and says so."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from pinn import config
from pinn.plan import HOLDOUT_FRACTION, Planning, make_plan
from pinn.train import KeepBest, TrainResult

INVERSE = """\
name: inv
coords: [x]
fields: [u]
params: {{k: {{value: 0.5, learnable: {learn}}}}}
domain: {{interval: [0, 1]}}
equations: {{pde: "-k*u_xx - pi^2*sin(pi*x)"}}
conditions:
  ends: {{dirichlet: {{u: 0}}, on: boundary}}
  observed: {{data: {{file: obs.csv}}}}
exact: {{u: "sin(pi*x)"}}
{extra}"""


def _inverse(tmp_path, n=400, extra="", noise=0.1, seed=0, learn="true"):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    u = np.sin(np.pi * x) + noise * rng.standard_normal(n)
    np.savetxt(tmp_path / "obs.csv", np.c_[x, u], delimiter=",", header="x,u", comments="")
    f = tmp_path / "inv.yaml"
    f.write_text(INVERSE.format(extra=extra, learn=learn))
    return config.load(str(f))


def test_a_tenth_of_the_observations_is_held_out_the_same_each_time(tmp_path):
    built = _inverse(tmp_path, n=400)
    plan = built.plan()
    (made,) = [c for c in plan.choices if c.what == "holdout"]
    assert made.value == {"observed": round(HOLDOUT_FRACTION * 400)}
    (name, held), = plan.validation
    train = plan.problem.conditions["observed"]
    orig = built.problem.conditions["observed"]
    assert name == "observed" and len(held.points) == 40 and len(train.points) == 360
    # disjoint, and together every row of the file, each with its own value
    rows = np.concatenate([train.points[:, 0], held.points[:, 0]])
    np.testing.assert_array_equal(np.sort(rows), np.sort(orig.points[:, 0]))
    by_x = dict(zip(orig.points[:, 0], orig.values[0][1], strict=True))
    for d in (train, held):
        assert all(by_x[x] == v for x, v in zip(d.points[:, 0], d.values[0][1], strict=True))
    again = built.plan().validation[0][1]  # a resume plans again: the same rows
    np.testing.assert_array_equal(again.points, held.points)


def test_no_holdout_for_few_rows_a_forward_problem_or_when_turned_off(tmp_path):
    def held(**kw):
        return [c for c in _inverse(tmp_path, **kw).plan().choices if c.what == "holdout"]

    assert held(n=150) == []  # a tenth would be 15: too few to judge by
    assert held(extra="plan: {holdout: false}\n") == []
    assert held(learn="false") == []  # k given: a forward problem with data
    built = _inverse(tmp_path)
    assert make_plan(built.problem, planning=Planning(holdout=False)).validation == ()


class _Info:
    total = 10_000

    def due(self, step, every):
        return step % every == 0

    def physical(self, params):
        return params


def _feed(keep, path):
    """(loss, value) per check, at steps 100, 200, ...; the params are the step."""
    for i, (loss, value) in enumerate(path):
        step = 100 * (i + 1)
        keep.fn = lambda p, v=value: v
        row = {"loss": loss}
        keep.on_chunk(SimpleNamespace(kind="chunk", step=step, row=row, info=_Info(),
                                      state={"params": {"step": np.asarray(step)}}))
        assert row["eval.heldout"] == value


def test_keep_best_chooses_the_lowest_misfit_among_states_that_fit_the_physics():
    keep = KeepBest(lambda p: 0.0)
    # step 100: lowest misfit but a loss 10x the lowest (the physics not fitted): never
    # chosen; step 300 is the lowest misfit within 2x of the lowest loss (1.0 at 600)
    _feed(keep, [(10.0, 0.01), (3.0, 0.05), (1.5, 0.03), (1.2, 0.04), (1.1, 0.06),
                 (1.0, 0.07)])
    result = TrainResult(params={"step": np.asarray(600)}, history=[], step=600, stages=[])
    kept = keep.apply(result)
    assert kept == {"name": "heldout", "step": 300, "value": 0.03, "last_step": 600,
                    "last_value": 0.07}
    assert int(result.params["step"]) == 300 and result.kept == kept


def test_keep_best_leaves_the_last_parameters_where_they_are_best():
    keep = KeepBest(lambda p: 0.0)
    _feed(keep, [(3.0, 0.05), (2.0, 0.04), (1.0, 0.03)])
    result = TrainResult(params={"step": np.asarray(300)}, history=[], step=300, stages=[])
    kept = keep.apply(result)
    assert kept["step"] == 300 and result.kept is None
    assert int(result.params["step"]) == 300


def test_the_run_keeps_the_step_of_lowest_held_out_misfit(tmp_path):
    """A short run of the noisy inverse problem: its history logs the held-out misfit at
    every check, and the solution's parameters are those of the step the run says it kept
    (their misfit, recomputed from the solution, is the one logged there)."""
    built = _inverse(tmp_path, extra="training:\n  stages: [{adam: {lr: 1.0e-2}, steps: 600}]\n"
                                      "  seed: 0\n")
    run = built.setup(progress=False)
    sol = run.train()
    checks = [r for r in sol.history if "eval.heldout" in r]
    assert [r["step"] for r in checks][:6] == [100, 200, 300, 400, 500, 600]
    (_, held), = run.plan.validation
    pred = sol(held.points)[:, 0]
    obs = held.values[0][1]
    misfit = float(np.mean((pred - obs) ** 2) / np.mean(obs ** 2))
    kept = sol.metrics.get("kept")
    step = kept["step"] if kept else sol.metrics["steps_done"]
    logged = {r["step"]: r["eval.heldout"] for r in checks}
    assert misfit == pytest.approx(logged[step], rel=1e-5)
    if kept:  # the run says so, and it was the lowest among states that fit the physics
        assert kept["value"] <= kept["last_value"]
    json.dumps(sol.metrics.get("kept"))  # JSON-ready
