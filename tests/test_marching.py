"""Time marching (pinn.marching): window problems, the previous window as initial values,
the piecewise network, and a marched heat equation against its closed form."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn import conditions as C
from pinn import marching as M
from pinn.dsl import expr as E

x, t = pinn.coords("x t")
u = pinn.field("u")


def heat(hard=False, data=False):
    # u_t = 0.1 u_xx, u(0) = u(1) = 0, u = exp(-0.1 pi^2 t) sin(pi x)
    exact = pinn.exp(-0.1 * pinn.pi**2 * t) * pinn.sin(pinn.pi * x)
    conds = {"walls": pinn.Dirichlet(u, 0, on="boundary", hard=True),
             "start": pinn.Initial(u, pinn.sin(pinn.pi * x), weight=10.0, hard=hard)}
    if data:
        pts = np.c_[np.linspace(0.1, 0.9, 9), np.linspace(0.0, 1.0, 9)]
        vals = np.exp(-0.1 * np.pi**2 * pts[:, 1]) * np.sin(np.pi * pts[:, 0])
        conds["obs"] = pinn.Data(pts, {u: vals})
    return pinn.Problem(domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1), coords=(x, t),
                        equations={"heat": pinn.D(u, t) - 0.1 * pinn.D(u, x, 2)},
                        conditions=conds, exact={u: exact}, name="heat1d")


def test_window_problems_cut_time_and_data():
    p = heat(data=True)
    edges = M.window_edges(p, 4)
    np.testing.assert_allclose(edges, [0, 0.25, 0.5, 0.75, 1])
    first = M.window_problem(p, 0, edges)
    assert (first.time.t0, first.time.t1) == (0.0, 0.25)
    assert first.conditions["start"] is p.conditions["start"]
    last = M.window_problem(p, 3, edges)
    obs = last.conditions["obs"].points
    assert np.all(obs[:, 1] >= 0.75) and len(obs) == 3  # t = 0.75, 0.875, 1 (the end kept)
    middle = M.window_problem(p, 1, edges)
    assert np.all((middle.conditions["obs"].points[:, 1] >= 0.25)
                  & (middle.conditions["obs"].points[:, 1] < 0.5))
    assert not middle.conditions["start"].hard


def test_previous_window_gives_values_rates_and_derivatives():
    # a "network" with a closed form: u = sin(2x) (1 + t^2), so the start values at t = 0.5
    # are 1.25 sin(2x), their x-derivative 2.5 cos(2x), the rate sin(2x)
    def apply(params, pts):
        return (jnp.sin(params["k"] * pts[:, :1]) * (1 + pts[:, 1:2] ** 2))

    params = {"k": jnp.asarray(2.0)}
    xs = jnp.linspace(0, 1, 7)
    calls = []

    def counted(params, pts):
        calls.append(pts.shape)
        return apply(params, pts)

    value = M.WindowStart(counted, params, 0, 0.5, 1, box=([0.0], [1.0]))
    # the previous window is evaluated once, into a Chebyshev table: not at every point of
    # the next window (a chain of windows would evaluate every window before)
    made = len(calls)
    assert value.error < 1e-13
    np.testing.assert_allclose(value([xs]), 1.25 * np.sin(2 * xs), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(value([xs], (1,)), 2.5 * np.cos(2 * xs), rtol=1e-5)
    np.testing.assert_allclose(value([np.asarray(xs)], (2,), xp=np), -5 * np.sin(2 * xs),
                               rtol=1e-5, atol=1e-6)
    assert len(calls) == made
    rate = M.WindowStart(apply, params, 0, 0.5, 1, rate=True)
    np.testing.assert_allclose(rate([xs]), np.sin(2 * xs), rtol=1e-6, atol=1e-7)
    # a 2D start (sin(2x) cos(3y) (1 + t^2)): a tensor table, value and mixed derivative
    v2 = M.WindowStart(lambda p, z: (jnp.sin(2 * z[:, :1]) * jnp.cos(3 * z[:, 1:2])
                                     * (1 + z[:, 2:3] ** 2)), params, 0, 0.5, 2,
                       box=([0.0, -1.0], [1.0, 1.0]))
    with jax.enable_x64(True):
        pts = np.random.default_rng(1).uniform([0, -1], [1, 1], (9, 2))
        np.testing.assert_allclose(v2([pts[:, 0], pts[:, 1]]), 1.25 * np.sin(2 * pts[:, 0])
                                   * np.cos(3 * pts[:, 1]), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(v2([pts[:, 0], pts[:, 1]], (1, 1)), -7.5 * np.cos(
            2 * pts[:, 0]) * np.sin(3 * pts[:, 1]), rtol=1e-10, atol=1e-12)
    # in a window's problem: the initial values are this table, built into the network
    p = heat()
    start = M.window_problem(p, 1, M.window_edges(p, 2), previous=(apply, params))
    c = start.conditions["start"]
    assert isinstance(c, C.Initial) and c.hard and c.weight == 10.0
    (f, v), = c.values
    assert f == u and isinstance(v, E.Tabulated) and v.table.t == 0.5


def test_a_later_window_starts_exactly_where_the_one_before_ended():
    """The window's network at its start time equals the previous window there, and so do
    the x-derivatives the PDE takes (through the hard start): value and rate carried over
    for a second-order evolution, whatever the window's own network."""
    from pinn.network import hard_transforms

    def previous(params, pts):  # u = sin(2x)(1 + t^2): u_t(x, 0.5) = sin(2x)
        return jnp.sin(params["k"] * pts[:, :1]) * (1 + pts[:, 1:2] ** 2)

    def raw(params, pts):  # the window's own network: anything
        return jnp.cos(3 * pts[:, :1] + pts[:, 1:2]) + params

    wave = pinn.Problem(domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1), coords=(x, t),
                        equations={"wave": pinn.D(u, t, 2) - pinn.D(u, x, 2)},
                        conditions={"start": pinn.Initial(u, pinn.sin(2 * x), rate=0)})
    with jax.enable_x64(True):
        prev = (previous, {"k": jnp.asarray(2.0)})
        pk = M.window_problem(wave, 1, M.window_edges(wave, 2), previous=prev)
        apply = hard_transforms(pk, raw)
        xs = jnp.linspace(0.05, 0.95, 7)

        def at(tt):
            return lambda z: apply(jnp.asarray(0.7), jnp.stack([z, jnp.full_like(z, tt)], 1))

        np.testing.assert_allclose(at(0.5)(xs)[:, 0], 1.25 * np.sin(2 * xs), rtol=1e-12)
        u_x = jax.vmap(jax.grad(lambda z: at(0.5)(z[None])[0, 0]))(xs)
        np.testing.assert_allclose(u_x, 2.5 * np.cos(2 * xs), rtol=1e-12)
        u_t = jax.vmap(jax.grad(lambda tt, z: apply(
            jnp.asarray(0.7), jnp.stack([z, tt])[None])[0, 0]), (None, 0))(0.5, xs)
        np.testing.assert_allclose(u_t, np.sin(2 * xs), rtol=1e-12, atol=1e-14)


def test_piecewise_apply_selects_by_time():
    applies = [lambda p, z: jnp.full((z.shape[0], 1), p) for _ in range(3)]
    fn = M.piecewise_apply(applies, [0.0, 1.0, 2.0, 3.0], time_index=1)
    pts = jnp.asarray([[0.0, -1.0], [0.0, 0.5], [0.0, 1.0], [0.0, 2.5], [0.0, 4.0]])
    out = fn({"w0": 10.0, "w1": 11.0, "w2": 12.0}, pts)[:, 0]
    np.testing.assert_array_equal(out, [10, 10, 11, 12, 12])
    # derivatives inside a window are the window's own
    g = jax.grad(lambda p: fn(p, pts).sum())({"w0": 1.0, "w1": 1.0, "w2": 1.0})
    assert (g["w0"], g["w1"], g["w2"]) == (2.0, 1.0, 2.0)


def test_windows_refused_where_they_cannot_work():
    steady = pinn.Problem(domain=pinn.Interval(0, 1), coords=(x,),
                          equations={"p": pinn.D(u, x, 2) + 1},
                          conditions={"ends": pinn.Dirichlet(u, 0, on="boundary")})
    with pytest.raises(ValueError, match="steady"):
        M.check_windows(steady, 2)
    M.check_windows(steady, 1)
    with pytest.raises(ValueError, match="integer >= 1"):
        pinn.Training(windows=0)


@pytest.fixture(scope="module")
def marched(tmp_path_factory):
    out = tmp_path_factory.mktemp("marched")
    training = pinn.Training(
        stages=[pinn.Stage(pinn.Adam(lr=1e-2), 300), pinn.Stage(pinn.SSBroyden(), 100)],
        points=pinn.Points(interior=256, boundary=32, initial=64, resample_every=0),
        chunk=300, windows=2)
    sol = pinn.solve(heat(hard=True), pinn.MLP(width=16, depth=2), training,
                     precision=64, progress=False, out_dir=out)
    return sol, out


def test_marched_heat_meets_its_closed_form(marched):
    sol, _ = marched
    assert sol.windows == (0.0, 0.5, 1.0)
    assert sol.metrics["windows"] == 2 and len(sol.metrics["window_metrics"]) == 2
    assert sol.metrics["steps"] == 2 * 400
    # seeded, measured (2 CPU cores): 7.3e-6 in the first window, 7.4e-5 in the second,
    # 3.9e-5 over the whole interval; the second window inherits the first's error
    errs = [w["rel_l2"]["u"] for w in sol.metrics["window_metrics"]]
    assert errs[0] < 5e-5 and errs[1] < 4e-4, errs
    assert sol.metrics["rel_l2"]["u"] < 2e-4, sol.metrics["rel_l2"]
    # continuity at the seam: the soft start of window 2 fits window 1's end
    xs = np.linspace(0.05, 0.95, 19)
    below = sol(np.c_[xs, np.full(19, 0.5 - 1e-9)])[:, 0]
    above = sol(np.c_[xs, np.full(19, 0.5)])[:, 0]
    assert np.max(np.abs(below - above)) < 3e-4  # measured 4.3e-5
    # the residual of the PDE through the piecewise network, in the second window
    res = sol.evaluate(np.c_[xs, np.full(19, 0.8)], {"r": "u_t - 0.1*u_xx"})["r"]
    assert np.max(np.abs(res)) < 3e-3  # measured 5.4e-4


def test_marched_solution_saves_loads_and_resumes(marched):
    sol, out = marched
    back = pinn.Solution.load(out)
    pts = np.c_[np.linspace(0, 1, 11), np.linspace(0, 1, 11)]
    np.testing.assert_array_equal(back(pts), sol(pts))
    assert back.windows == sol.windows
    assert (out / "windows" / "w0" / "params.npz").is_file()
    assert (out / "windows" / "w1" / "params.npz").is_file()
    # resume: both windows are finished, nothing is trained again, the same solution
    training = sol.training
    again = pinn.solve(heat(hard=True), pinn.MLP(width=16, depth=2), training,
                       precision=64, progress=False, out_dir=out, resume=True)
    np.testing.assert_array_equal(again(pts), sol(pts))
    # the finished windows' history and metrics are read back with their parameters
    assert again.metrics["steps_done"] == sol.metrics["steps_done"] == 800
    assert len(again.history) == len(sol.history) > 0
    assert again.metrics["rel_l2"] == pytest.approx(sol.metrics["rel_l2"])


def test_missed_start_is_the_worst_soft_miss_relative_to_the_start():
    from pinn.plan import missed_start

    def predict(pts):  # u 20 % low everywhere: the miss is 0.2 of the start, at any points
        return {"u": 0.8 * np.sin(np.pi * pts[:, 0])}

    name, field, miss = missed_start(heat(), predict)
    assert (name, field) == ("start", "u") and miss == pytest.approx(0.2, rel=1e-12)
    assert missed_start(heat(), lambda p: {"u": np.sin(np.pi * p[:, 0])})[2] < 1e-12
    assert missed_start(heat(hard=True), predict) is None  # built in: nothing to miss
    zero = heat()
    zero = pinn.Problem(domain=zero.domain, coords=zero.coords, equations=zero.equations,
                        conditions={**zero.conditions, "start": pinn.Initial(u, 0, hard=False)})
    assert missed_start(zero, predict) is None  # a zero start has no size to miss against


def test_the_plan_marches_again_only_a_soft_start_it_may_march():
    from pinn.plan import Planning, make_plan

    plan = make_plan(heat())  # the default recipe, a soft start (weighted in the problem)
    assert plan.remarch and any("misses a soft start" in line for line in plan.lines())
    assert not make_plan(heat(hard=True)).remarch  # a start built in is never missed
    assert not make_plan(heat(), planning=Planning(windows=False)).remarch
    assert not make_plan(heat(), training=pinn.Training()).remarch  # the user's recipe


def _short(**kw):
    # too short to fit the start: Adam for 30 steps from a random network
    return pinn.Training(stages=[pinn.Stage(pinn.Adam(lr=1e-3), 30)], chunk=30,
                         points=pinn.Points(interior=128, boundary=16, initial=64,
                                            resample_every=0), **kw)


def test_a_run_that_misses_its_start_is_trained_again_in_two_windows(tmp_path):
    from pinn.plan import MISSED_START, REMARCH_WINDOWS, Planning

    sol = pinn.solve(heat(), pinn.MLP(width=8, depth=1), _short(), precision=64,
                     progress=False, out_dir=tmp_path, plan=Planning(windows=True))
    note = sol.metrics["remarched"]
    assert note["condition"] == "start" and note["field"] == "u"
    assert note["miss"] > MISSED_START and note["windows"] == REMARCH_WINDOWS
    # the run kept is the one that misses the start less, and says so
    marched = note["marched_miss"] < note["miss"]
    assert note["kept"] == ("2 windows" if marched else "one window")
    assert (sol.windows == (0.0, 0.5, 1.0)) if marched else sol.windows is None
    # both runs' steps counted; the other run's numbers kept beside
    assert sol.metrics["steps_done"] == sol.metrics["steps"] == 30 + 2 * 30
    assert note["other"]["steps_done"] == (30 if marched else 2 * 30)
    assert note["why"][1:] in (tmp_path / "report.md").read_text()
    back = pinn.Solution.load(tmp_path)  # the kept run is the one saved
    pts = np.c_[np.linspace(0, 1, 7), np.linspace(0, 1, 7)]
    np.testing.assert_array_equal(back(pts), sol(pts))


def test_no_second_run_where_the_time_limit_leaves_less_than_the_first_took():
    from pinn.plan import Planning

    sol = pinn.solve(heat(), pinn.MLP(width=8, depth=1), _short(time_limit=1e-3),
                     precision=64, progress=False, plan=Planning(windows=True))
    note = sol.metrics["remarched"]
    assert "not marched" in note["why"] and "kept" not in note and sol.windows is None


def test_warnings_held_during_a_first_run_are_shown_when_it_raises():
    from pinn.run import _held_warnings

    with pytest.warns(RuntimeWarning, match="kept for later"):
        with pytest.raises(KeyboardInterrupt):
            with _held_warnings() as held:
                warnings.warn("kept for later", RuntimeWarning, stacklevel=1)
                assert len(held) == 1  # recorded, not shown, while the block runs
                raise KeyboardInterrupt
