"""Fields declared on a subset of the coordinates, and one sub-network per field (PFNN).

A field ``a(x, y)`` of a problem in ``x, y, t`` is the output of a sub-network that is fed
only the columns x, y: its derivatives along t are exactly zero (every order, mixed ones
too), and along x, y they match central finite differences of the network (float64).
``per_field`` builds one sub-network per field; the parameter count is the sum of theirs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
import pinn.config
from pinn.config.errors import ConfigError
from pinn.nets import FieldNetworksModule, count_params, split
from pinn.network import build_network
from pinn.problem import ProblemError
from pinn.solution import Solution
from pinn.train.spec import precision_scope

x, y, t = pinn.coords("x y t")
SMALL = pinn.MLP(width=12, depth=2)

YAML = """
name: subset
fields: {u: [x, y, t], a: [x, y]}
domain: {rectangle: {min: [0, 0], max: [1, 1]}, time: [0, 1]}
equations:
  heat: "u_t - div(a*grad(u))"
conditions:
  walls: {dirichlet: {u: 0}, on: boundary}
  a_walls: {dirichlet: {a: "1 + x*y"}, on: boundary}
  start: {initial: {u: "sin(pi*x)*sin(pi*y)"}}
exact:
  a: "1 + x*y"
model: {mlp: {width: 8, depth: 1}}
training:
  seed: 0
  points: {interior: 64, boundary: 32, initial: 32}
  stages:
    - {adam: {lr: 1.0e-3}, steps: 5}
evaluation: {resolution: [5, 5, 3]}
"""


def _heat(a, *, alpha=None):
    u = pinn.field("u")
    k = 1 if alpha is None else alpha
    return pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - k * pinn.div(a * pinn.grad(u))},
        fields=(u, a))


def _solution(problem, model=SMALL) -> Solution:
    with precision_scope(64):
        _, net = build_network(problem, model, 0)
    return Solution(problem, model, {"net": net, "pde": {}}, precision=64)


def _points(n=40, d=3, seed=0):
    return np.random.default_rng(seed).uniform(0.1, 0.9, size=(n, d))


def test_a_subset_field_has_zero_derivatives_along_missing_coordinates():
    """a(x, y): D(a, t), D(a, t, 2) and D(D(a, x), t) are exactly 0; D(a, x), D(a, y) and
    D(a, x, 2) match central differences of the network (h = 1e-4 / 1e-3, float64)."""
    a = pinn.field("a", coords=(x, y))
    sol = _solution(_heat(a))
    pts = _points()
    out = sol.evaluate(pts, {"a_t": pinn.D(a, t), "a_tt": pinn.D(a, t, 2),
                             "a_xt": pinn.D(pinn.D(a, x), t), "a_x": pinn.D(a, x),
                             "a_y": pinn.D(a, y), "a_xx": pinn.D(a, x, 2),
                             "u_t": pinn.D(pinn.field("u"), t)})
    for k in ("a_t", "a_tt", "a_xt"):
        assert np.all(out[k] == 0.0), k
    assert np.max(np.abs(out["u_t"])) > 1e-3  # u does see t: the test can tell the two apart
    # a does not change along t at all
    shifted = pts.copy()
    shifted[:, 2] = 1.0 - pts[:, 2]
    np.testing.assert_array_equal(sol(pts)[:, 1], sol(shifted)[:, 1])

    def a_at(p):
        return sol(p)[:, 1]

    for i, name in ((0, "a_x"), (1, "a_y")):
        h = 1e-4
        e = np.zeros(3)
        e[i] = h
        fd = (a_at(pts + e) - a_at(pts - e)) / (2 * h)
        np.testing.assert_allclose(out[name], fd, rtol=1e-6, atol=1e-8)
    h = 1e-3
    e = np.array([h, 0.0, 0.0])
    fd2 = (a_at(pts + e) - 2 * a_at(pts) + a_at(pts - e)) / h**2
    np.testing.assert_allclose(out["a_xx"], fd2, rtol=1e-4, atol=1e-6)


def test_the_jvp_strategy_also_gives_exact_zeros():
    from pinn.compile import compile_terms

    a = pinn.field("a", coords="x y")
    p = _heat(a)
    with precision_scope(64):
        apply, net = build_network(p, SMALL, 0)
        fn = compile_terms({"a_t": pinn.D(a, t), "a_tt": pinn.D(a, t, 2)}, coords=p.inputs,
                           fields=p.fields, apply=apply, spatial=p.spatial, strategy="jvp")
        out = fn({"net": net, "pde": {}}, jnp.asarray(_points()))
    assert all(np.all(np.asarray(v) == 0.0) for v in out.values())


def test_parameter_counts_are_the_sum_of_the_sub_networks():
    key = jax.random.key(0)

    def n(module):
        return count_params(split(module)[1])

    one = SMALL.build(3, 1, key=key)
    shared = SMALL.build(3, 2, key=key)
    per_field = pinn.MLP(width=12, depth=2, per_field=True).build(3, 2, key=key)
    assert isinstance(per_field, FieldNetworksModule)
    assert n(per_field) == 2 * n(one) != n(shared)
    subset = SMALL.build(3, 2, key=key, inputs=[(0, 1, 2), (0, 1)])
    assert n(subset) == n(one) + n(SMALL.build(2, 1, key=key))
    # 12 wide, 2 deep: (3*12 + 12) + (12*12 + 12) + (12 + 1) for u, (2*12 + 12) + ... for a
    assert n(subset) == (48 + 156 + 13) + (36 + 156 + 13)


def test_outputs_are_placed_in_field_order():
    """inputs [[0, 1], [0, 1, 2], [0, 1]]: outputs 0 and 2 share one sub-network of x, y;
    output 1 (all columns) is the only one that changes when column 2 does."""
    module = SMALL.build(3, 3, key=jax.random.key(1), inputs=[(0, 1), (0, 1, 2), (0, 1)])
    assert [len(o) for o in module.outputs] == [2, 1]
    apply, params = split(module)
    pts = jnp.asarray(_points(d=3))
    moved = pts.at[:, 2].set(0.5)
    a, b = np.asarray(apply(params, pts)), np.asarray(apply(params, moved))
    np.testing.assert_array_equal(a[:, [0, 2]], b[:, [0, 2]])
    assert np.max(np.abs(a[:, 1] - b[:, 1])) > 1e-4
    assert np.max(np.abs(a[:, 0] - a[:, 2])) > 1e-4  # two outputs of one net, not copies


def test_one_network_stays_one_network():
    """Without subsets and per_field the network (and its seed) is what it always was."""
    p = _heat(pinn.field("a"))
    apply, params = build_network(p, SMALL, 0)
    ref = split(SMALL.build(3, 2, key=jax.random.fold_in(jax.random.PRNGKey(0), 1),
                            bounds=p.input_box))[1]
    assert jax.tree.structure(params) == jax.tree.structure(ref)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(params),
                                                    jax.tree.leaves(ref), strict=True))


def test_a_ranged_parameter_is_an_input_of_every_sub_network():
    """alpha in [0.5, 2]: a(x, y; alpha)'s sub-network takes x, y, alpha; D(a, t) is 0 and
    a changes with alpha."""
    a = pinn.field("a", coords=(x, y))
    alpha = pinn.param("alpha", range=(0.5, 2.0))
    p = _heat(a, alpha=alpha)
    assert p.field_inputs == ((0, 1, 2, 3), (0, 1, 3))
    sol = _solution(p)
    assert sol.params["net"]["nets"]["1"]["hidden"]["0"]["kernel"].shape == (3, 12)
    pts = _points()
    lo = sol.evaluate(pts, {"a": a, "a_t": pinn.D(a, t)}, params={"alpha": 0.5})
    hi = sol.evaluate(pts, {"a": a}, params={"alpha": 2.0})
    assert np.all(lo["a_t"] == 0.0)
    assert np.max(np.abs(lo["a"] - hi["a"])) > 1e-4


def test_python_api_errors_name_the_coordinates():
    with pytest.raises(ProblemError, match=r"fields\.a: unknown coordinate 'q'; this "
                       r"problem's coordinates are \[x, y, t\]"):
        _heat(pinn.field("a", coords="x q"))
    with pytest.raises(ValueError, match="at least one coordinate"):
        pinn.field("a", coords=())
    with pytest.raises(ProblemError, match=r"exact\.a: uses t"):
        u, a = pinn.field("u"), pinn.field("a", coords="x y")
        pinn.Problem(domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
                     equations={"heat": pinn.D(u, t) - a * pinn.laplacian(u)},
                     fields=(u, a), exact={a: 1 + t})


def test_a_user_module_cannot_take_a_subset_field():
    from flax import nnx

    p = _heat(pinn.field("a", coords=(x, y)))
    with pytest.raises(ValueError, match=r"fields a\(x, y\) depend on a subset"):
        build_network(p, nnx.Linear(3, 2, rngs=nnx.Rngs(0)), 0)


def test_a_hard_condition_may_not_bring_in_a_missing_coordinate():
    u, a = pinn.field("u"), pinn.field("a", coords=(x, y))
    p = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - pinn.div(a * pinn.grad(u))}, fields=(u, a),
        conditions={"a0": pinn.Initial(a, 1 + x, hard=True)})
    with pytest.raises(ValueError, match=r"conditions\.a0: a hard condition on a, declared "
                       r"on \[x, y\], would make it depend on t"):
        pinn.setup(p, SMALL, progress=False)


@pytest.mark.filterwarnings("ignore:.*the run did not converge")
def test_yaml_subset_fields_validate_and_train():
    """The YAML of the issue validates and trains 5 steps (the loss goes down)."""
    built = pinn.config.load("subset.yaml", text=YAML)
    assert [f.coords for f in built.problem.fields] == [None, ("x", "y")]
    sol = pinn.setup(built.problem, built.model(), built.training(), progress=False,
                     resolution=built.spec.evaluation.resolution).train()
    assert sol.metrics["steps"] == 5
    loss = [r["loss"] for r in sol.history if "loss" in r]
    assert len(loss) >= 2 and np.isfinite(loss).all() and loss[-1] < loss[0]
    assert np.all(sol.evaluate(_points(), ["D(a, t)"])["D(a, t)"] == 0.0)


def test_save_load_and_export_keep_the_subset(tmp_path):
    """Saved and loaded back, a is still a(x, y) (same values); exported to StableHLO,
    the graph gives the same values and an exactly zero a_t."""
    import pinn.export as X

    built = pinn.config.load("subset.yaml", text=YAML)
    sol = _solution(built.problem, built.model())
    sol.precision = 32
    sol.params = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), sol.params)
    sol.save(tmp_path / "run", report=False)
    back = Solution.load(tmp_path / "run")
    assert back.problem.field_coords["a"] == (x, y)
    pts = _points()
    np.testing.assert_array_equal(back(pts), sol(pts))
    art = X.export(back, tmp_path / "x", outputs=["u", "a", "D(a, t)", "D(a, x)"])[0]
    got = X.load(art.path).evaluate(pts.astype(np.float32))
    want = back.evaluate(pts, ["a", "D(a, x)"])
    assert np.all(got["D(a, t)"] == 0.0)
    np.testing.assert_allclose(got["a"], want["a"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["D(a, x)"], want["D(a, x)"], rtol=1e-4, atol=1e-5)


def test_yaml_per_field_builds_one_network_per_field():
    built = pinn.config.load("pf.yaml", text=YAML.replace(
        "{u: [x, y, t], a: [x, y]}", "[u, a]").replace("depth: 1}}", "depth: 1}, per_field: "
                                                          "true}").replace(
        'exact:\n  a: "1 + x*y"\n', ""))
    model = built.model()
    assert model.per_field is True
    _, net = build_network(built.problem, model, 0)
    one = count_params(split(pinn.MLP(width=8, depth=1).build(3, 1, key=jax.random.key(0)))[1])
    assert count_params(net) == 2 * one


@pytest.mark.parametrize("fields, where, message", [
    ("{u: [x, y, t], a: [x, q]}", "fields.a.1",
     "unknown coordinate 'q' for field 'a' (coords: x, y, t)"),
    ("{u: [x, y, t], a: []}", "fields.a", "field 'a' has no coordinates"),
    ("{u: [x, y, t], a: [x, x]}", "fields.a.1", "coordinate 'x' is listed twice"),
    ("3", "fields", "expected a list of field names"),
])
def test_yaml_bad_field_coordinates_are_one_clear_line(fields, where, message):
    text = YAML.replace("{u: [x, y, t], a: [x, y]}", fields)
    with pytest.raises(ConfigError) as err:
        pinn.config.load("bad.yaml", text=text)
    msg = str(err.value)
    assert where in msg and message in msg, msg
    assert "\n" not in msg.strip()
