"""The plan's start layer: where a diffusive evolution's start disagrees with its boundary
conditions, time is drawn and taken by its square root, the equations and boundary
conditions weighted by it, and the start built in by ``sqrt((t - t0)/span)``. What the
plan chooses and refuses, the points' law, the network's time, the weights, the built-in
start, saving and marching, and a short training against the closed form of a heated rod."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erfc

import pinn
from pinn import config
from pinn.geometry.spacetime import TimeInterval
from pinn.plan import Planning, make_plan
from pinn.train.loss import INTERIOR, assemble

# a rod heated through its left end from cold: u_t = u_xx on [0, 3], u = 0 at the start,
# flux 1 in at x = 0 (du/dn = -u_x = 1), u = 0 at x = 3 (erfc(3) = 2e-5 away by t = 1/4)
ROD = """\
coords: [x, t]
fields: [u]
domain: {space: {interval: [0, 3]}, time: [0, 0.25]}
equations: {heat: "u_t - u_xx"}
conditions:
  start: {initial: {u: START}}
  heated: {neumann: {u: FLUX}, on: left}
  far: {dirichlet: {u: 0}, on: right}
"""


def _rod_exact(x, t):
    """The half-line's solution for a unit flux in from a cold start:
    2 sqrt(t/pi) exp(-x^2/4t) - x erfc(x/(2 sqrt t))."""
    t = np.maximum(t, 1e-300)
    return np.where(t > 1e-200, 2 * np.sqrt(t / np.pi) * np.exp(-x * x / (4 * t))
                    - x * erfc(x / (2 * np.sqrt(t))), 0.0)


def _load(tmp_path, text, *sets):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    return config.load(str(f), list(sets))


def _rod(tmp_path, start="0", flux="1", *sets):
    return _load(tmp_path, ROD.replace("START", start).replace("FLUX", flux), *sets)


def _choice(plan, what):
    return next((c for c in plan.choices if c.what == what), None)


def test_the_plan_takes_time_by_its_root_where_the_start_misses_the_boundary(tmp_path):
    built = _rod(tmp_path)
    plan = make_plan(built.problem)
    c = _choice(plan, "layer")
    assert c is not None and c.value is True
    assert "heated" in c.why and "by up to 1" in c.why and "built in" in c.why
    assert plan.problem.time.layer
    assert plan.problem.conditions["start"].hard is True
    # the problem is unchanged but for its time: the same equations and values
    assert plan.problem.equations == built.problem.equations
    # off, the start stays a soft loss term as before
    off = make_plan(built.problem, planning=Planning(layer=False))
    assert _choice(off, "layer") is None and not off.problem.time.layer
    assert off.problem.conditions["start"].hard is False


def test_the_plan_leaves_a_start_that_meets_its_boundary_alone(tmp_path):
    # flux 0 at the left end and a start whose slope is 0 there, 0 at x = 3: compatible
    quiet = make_plan(_rod(tmp_path, start="cos(pi*x/6)", flux="0").problem)
    assert _choice(quiet, "layer") is None and not quiet.problem.time.layer
    # a start of slope -1/3 meets a flux of 1/3: a gap below 1 % of the values' size (1)
    # is no layer, one of 1/6 is
    small = make_plan(_rod(tmp_path, start="1 - x/3", flux="0.3343").problem)
    assert _choice(small, "layer") is None
    gap = make_plan(_rod(tmp_path, start="1 - x/3", flux="0.5").problem)
    assert _choice(gap, "layer").value is True and "by up to 0.167" in _choice(gap, "layer").why


@pytest.mark.parametrize("equation", ["u_tt - u_xx", "u_t + u_x"])
def test_no_layer_for_a_wave_or_pure_transport(tmp_path, equation):
    text = ROD.replace("u_t - u_xx", equation).replace("START", "0").replace("FLUX", "1")
    if equation.startswith("u_tt"):
        text = text.replace("{initial: {u: 0}}", "{initial: {u: 0}, rate: {u: 0}}")
    plan = make_plan(_load(tmp_path, text).problem)
    assert _choice(plan, "layer") is None and not plan.problem.time.layer


def test_a_start_that_a_built_in_wall_value_misses_stays_soft(tmp_path):
    # u = 1 built in on the left wall against u = 0 at the start: a layer, but the start
    # cannot be built in beside that wall value (it would not hold there)
    text = ROD.replace("START", "0").replace("{neumann: {u: FLUX}, on: left}",
                                             "{dirichlet: {u: 1}, on: left}")
    plan = make_plan(_load(tmp_path, text).problem)
    c = _choice(plan, "layer")
    assert c.value is True and "the start soft" in c.why
    assert plan.problem.conditions["heated"].hard is True
    assert plan.problem.conditions["start"].hard is False


def test_a_soft_start_the_user_asked_for_stays_soft(tmp_path):
    built = _rod(tmp_path, "0", "1", "conditions.start.hard=false")
    plan = make_plan(built.problem)
    assert _choice(plan, "layer").value is True
    assert plan.problem.conditions["start"].hard is False
    off = _rod(tmp_path, "0", "1", "plan.layer=false")
    assert not off.setup(progress=False).plan.problem.time.layer


def test_layer_points_are_uniform_in_the_root_of_time():
    time = TimeInterval(1.0, 5.0, layer=True)
    t = np.asarray(time.draw(jax.random.PRNGKey(0), 200_000, jnp.float32)).ravel()
    tau = np.sqrt((t - 1.0) / 4.0)
    assert t.min() >= 1.0 and t.max() <= 5.0
    # tau uniform on [0, 1]: mean 1/2, mean square 1/3; (t - t0)/span has mean 1/3
    assert np.mean(tau) == pytest.approx(0.5, abs=3e-3)
    assert np.mean(tau**2) == pytest.approx(1 / 3, abs=3e-3)
    assert np.histogram(tau, bins=10, range=(0, 1))[0] / len(tau) == pytest.approx(
        np.full(10, 0.1), abs=3e-3)
    # without a layer, the same draw as before (uniform over the interval)
    plain = TimeInterval(1.0, 5.0).draw(jax.random.PRNGKey(0), 1000, jnp.float32)
    before = jax.random.uniform(jax.random.PRNGKey(0), (1000, 1), jnp.float32, 1.0, 5.0)
    np.testing.assert_allclose(np.asarray(plain), np.asarray(before), rtol=1e-6)


def test_the_network_time_and_the_weight():
    with jax.enable_x64(True):
        time = TimeInterval(2.0, 6.0, layer=True)
        t = jnp.asarray([2.0, 3.0, 6.0])
        # t0 + span sqrt((t - t0)/span): the same interval, stretched near its start
        np.testing.assert_allclose(np.asarray(time.network_time(t)),
                                   [2.0 + 4e-6, 2.0 + 4 * 0.5, 6.0], atol=1e-9)
        slope = jax.grad(lambda s: time.network_time(s))(jnp.asarray(2.0))
        assert np.isfinite(float(slope)) and float(slope) > 1e4
        np.testing.assert_allclose(np.asarray(time.weight(t)),
                                   np.sqrt(3 * np.array([0.0, 0.25, 1.0])), atol=1e-12)
        plain = TimeInterval(2.0, 6.0)
        assert np.all(np.asarray(plain.network_time(t)) == np.asarray(t))
        assert np.all(np.asarray(plain.weight(t)) == 1.0)


def test_the_equations_with_a_rate_and_the_boundary_terms_are_weighted(tmp_path):
    text = """\
coords: [x, t]
fields: [u, v]
domain: {space: {interval: [0, 1]}, time: [0, 2]}
equations: {heat: "u_t - u_xx", steady: "v_x - u"}
conditions:
  start: {initial: {u: 0, v: 0}, hard: false}
  left: {dirichlet: {u: 1, v: 0}, on: left, hard: false}
"""
    built = _load(tmp_path, text)
    with jax.enable_x64(True):
        layered = make_plan(built.problem).problem
        assert layered.time.layer
        # the same problem without the layer (nor the rate a layer rules out)
        plain = make_plan(built.problem, planning=Planning(layer=False, rates=False)).problem
        from pinn.network import build_network

        apply, params = build_network(plain, pinn.MLP(width=8, depth=2), seed=0)
        x = jnp.asarray(np.random.default_rng(0).uniform([0, 0], [1, 2], (64, 2)))
        xb = x.at[:, 0].set(0.0)
        batch = {INTERIOR: x, "left": xb, "start": x.at[:, 1].set(0.0)}
        w = np.sqrt(3 * np.asarray(x[:, 1]) / 2)
        a, b = (assemble(p, apply).terms_fn.residuals({"net": params}, batch)
                for p in (layered, plain))
        # the layered problem's network is the same raw network: compare the residuals of
        # the same function (the time map lives in build_network, not assemble)
        # the equation in s = sqrt(3 t/span): u_s = 2 s u_t; the boundary's weight s
        np.testing.assert_allclose(np.asarray(a["heat"]), 2 * w * np.asarray(b["heat"]),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(np.asarray(a["steady"]), np.asarray(b["steady"]),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.asarray(a["left"]).reshape(2, -1),
                                   np.asarray(b["left"]).reshape(2, -1) * w, rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(np.asarray(a["start"]), np.asarray(b["start"]))


def test_the_built_in_start_is_exact_and_moves_like_the_root(tmp_path):
    built = _rod(tmp_path)
    with jax.enable_x64(True):
        run = built.setup(progress=False)
        assert run.plan.problem.time.layer and run.plan.problem.conditions["start"].hard
        apply = run.assembly.apply
        x = jnp.asarray(np.stack([np.linspace(0, 3, 7), np.zeros(7)], 1))
        np.testing.assert_allclose(np.asarray(apply(run.params["net"], x)), 0.0, atol=1e-12)
        # u(x, t) / sqrt(t/span) is bounded as t -> t0 (the network's value)
        ratios = []
        for t in (1e-8, 1e-6, 1e-4):
            xt = x.at[:, 1].set(t)
            ratios.append(np.asarray(apply(run.params["net"], xt)).ravel() / np.sqrt(t / 0.25))
        np.testing.assert_allclose(ratios[0], ratios[1], rtol=2e-2, atol=1e-6)


def test_a_layered_solution_saves_and_loads(tmp_path):
    built = _rod(tmp_path, "0", "1", "training.stages=[{adam: {lr: 0.001}, steps: 20}]")
    sol = built.setup(progress=False).train()
    assert sol.problem.time.layer
    sol.save(tmp_path / "run")
    back = pinn.Solution.load(tmp_path / "run")
    assert back.problem.time.layer
    pts = np.stack([np.linspace(0, 3, 11), np.linspace(0, 0.25, 11)], 1)
    np.testing.assert_allclose(back.evaluate(pts)["u"], sol.evaluate(pts)["u"], rtol=1e-12,
                               atol=1e-12)


def test_only_the_first_time_window_is_a_layer(tmp_path):
    from pinn import marching

    problem = make_plan(_rod(tmp_path).problem).problem
    edges = [0.0, 0.1, 0.25]
    first = marching.window_problem(problem, 0, edges)
    assert first.time.layer and (first.time.t0, first.time.t1) == (0.0, 0.1)
    second = marching.window_problem(problem, 1, edges)
    assert not second.time.layer and (second.time.t0, second.time.t1) == (0.1, 0.25)


def _rod_error(sol):
    x, t = (a.ravel() for a in np.meshgrid(np.linspace(0, 3, 121), np.linspace(0, 0.25, 51)))
    exact = _rod_exact(x, t)
    u = sol.evaluate(np.stack([x, t], 1))["u"].ravel()
    return float(np.linalg.norm(u - exact) / np.linalg.norm(exact))


def test_a_heated_rod_trains_to_its_closed_form(tmp_path):
    # Adam 2000 + SSBroyden 600 (float64): 2.2e-4 measured (21 s idle)
    stages = ("training.stages=[{adam: {lr: 0.001}, steps: 2000}, "
              "{ssbroyden: {}, steps: 600, precision: 64}]")
    sol = _rod(tmp_path, "0", "1", stages).setup(progress=False).train()
    assert sol.problem.time.layer
    assert _rod_error(sol) < 1e-3


@pytest.mark.slow
def test_the_layer_beats_plain_time_on_the_heated_rod(tmp_path):
    # the default recipe (its steps, no time limit: the same under any load): 2.3e-4 with
    # the layer, 5.9e-3 without (about a minute each, idle)
    errors = {}
    for layer in (True, False):
        built = _rod(tmp_path, "0", "1", f"plan.layer={layer}")
        errors[layer] = _rod_error(built.setup(progress=False).train())
    assert errors[True] < 1e-3
    assert errors[False] > 5 * errors[True]


def test_root_starts_with_and_without_walls():
    from pinn.nets import hard_dirichlet_initial, hard_initial

    with jax.enable_x64(True):
        def net(p, x):  # a stand-in network: 1 + x^2 + t, nonzero everywhere
            return (1.0 + x[:, :1] ** 2 + x[:, 1:2]) * p

        u0 = lambda x: jnp.sin(x[:, 0])  # noqa: E731
        g = lambda x: 2.0 + x[:, 1]  # noqa: E731
        d = lambda x: x[:, 0] * (1.0 - x[:, 0])  # noqa: E731
        x = jnp.asarray(np.random.default_rng(1).uniform([0, 1], [1, 5], (50, 2)))
        frac = np.sqrt((np.asarray(x[:, 1]) - 1.0) / 4.0 + 1e-12) - 1e-6
        n = np.asarray(net(1.0, x)).ravel()
        a = hard_initial(net, u0, t_index=1, t0=1.0, span=4.0, root=True)
        np.testing.assert_allclose(np.asarray(a(1.0, x)).ravel(),
                                   np.sin(np.asarray(x[:, 0])) + frac * n, rtol=1e-12)
        b = hard_dirichlet_initial(net, d, g, u0, t_index=1, t0=1.0, span=4.0, root=True)
        want = (np.sin(np.asarray(x[:, 0])) + (np.asarray(x[:, 1]) - 1.0)
                + np.asarray(d(x)) * frac * n)
        np.testing.assert_allclose(np.asarray(b(1.0, x)).ravel(), want, rtol=1e-12)
        # exact at the start, and on the walls (d = 0) the wall's value moved by its start
        x0 = x.at[:, 1].set(1.0)
        np.testing.assert_allclose(np.asarray(b(1.0, x0)).ravel(), np.sin(np.asarray(x[:, 0])),
                                   atol=1e-15)
        with pytest.raises(ValueError, match="root=True"):
            hard_initial(net, u0, t_index=1, rate_fn=u0, root=True)
