"""Quantities of interest (``pinn.qoi``) and design optimisation (``pinn.optimize``,
``pinn quantities``, ``pinn optimize``).

The quantities are checked on solutions whose network is replaced by a known function
(``Solution(..., apply=...)``): the quadrature's error against closed forms falls at
least like Sobol's ``1/n`` (a fitted log-log slope, over n = 64 ... 32768: interior, a
boundary part, a predicate region), point values equal the field, batched values equal
one-by-one values, and the gradient along the parameters equals the closed form. The
optimiser finds closed-form optima (inside the range, on its bounds, the better of two
wells); the FEM check solves a problem whose quantity is known. The command lines run on
an untrained run folder (their numbers equal the library's), and bad input is one line,
exit 2.
"""

from __future__ import annotations

import functools
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
import pinn.config
from pinn import design, qoi
from pinn.cli import main
from pinn.problem import ProblemError, problem_from_data, problem_to_data
from pinn.train.spec import precision_scope

x, y, t = pinn.coords("x y t")
u = pinn.field("u")
PI = math.pi
NS = [2**m for m in range(6, 16)]


def square(quantities=None, **ranges):
    """-laplacian(u) = f on the unit square, u = 0 on the walls; ``ranges``: ranged
    parameters ``{name: (lo, hi)}`` (all in the source)."""
    src = 2 * pinn.pi**2 * pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y)
    for name, r in ranges.items():
        src = src + pinn.param(name, range=r) * pinn.sin(pinn.pi * x)
    return pinn.Problem(domain=pinn.Rectangle((0, 0), (1, 1)),
                        equations={"poisson": -pinn.laplacian(u) - src},
                        conditions={"walls": pinn.Dirichlet(u, 0.0, on="boundary")},
                        quantities=quantities, name="square")


def known(problem, fn, precision=64):
    """A solution whose network is ``fn(inputs[N, d + p]) -> u[N]`` (jax.numpy)."""
    return pinn.Solution(problem, None, {"net": {}}, precision=precision,
                         apply=lambda params, X: fn(X)[:, None])


def sin_sin(X):
    return jnp.sin(jnp.pi * X[:, 0]) * jnp.sin(jnp.pi * X[:, 1])


def exp_sum(X):
    return jnp.exp(X[:, 0] + X[:, 1])


def slope(ns, errors) -> float:
    return float(np.polyfit(np.log(ns), np.log(errors), 1)[0])


# ---------------------------------------------------------------------------
# the quadrature: Sobol's rate on closed forms


def test_the_mean_over_the_square_converges_at_sobols_rate():
    sol = known(square(), sin_sin)
    got = sol.quantities(which={f"n{n}": qoi.Mean(u, points=n) for n in NS})
    errors = [abs(got[f"n{n}"] - 4 / PI**2) for n in NS]
    assert slope(NS, errors) < -0.9, errors  # Sobol: ~1/n up to logs (Monte Carlo: -0.5)
    assert errors[-1] < 1e-7


def test_an_integral_over_a_boundary_part_converges_at_sobols_rate():
    # -int_0^1 u_x(0, y) dy for u = exp(x + y): -(e - 1); u over the top side: e (e - 1)
    sol = known(square(), exp_sum)
    flux = sol.quantities(which={f"n{n}": qoi.Integral(-pinn.D(u, x), on="left", points=n)
                                 for n in NS})
    top = sol.quantities(which={f"n{n}": qoi.Integral(u, on="top", points=n) for n in NS})
    e_flux = [abs(flux[f"n{n}"] + (math.e - 1)) for n in NS]
    e_top = [abs(top[f"n{n}"] - math.e * (math.e - 1)) for n in NS]
    # a 1-D part: the points' centred net is the midpoint rule, 1/n^2
    assert slope(NS, e_flux) < -1.8 and slope(NS, e_top) < -1.8, (e_flux, e_top)
    assert e_flux[-1] < 1e-9 and e_top[-1] < 1e-9


def test_the_whole_boundary_and_a_predicate_region_converge():
    sol = known(square(), exp_sum)
    whole = 2 * (math.e - 1) + 2 * math.e * (math.e - 1)  # the four sides
    left_half = (math.exp(0.5) - 1) * (math.e - 1)  # x < 0.5
    b = sol.quantities(which={f"n{n}": qoi.Integral(u, on="boundary", points=n) for n in NS})
    h = sol.quantities(which={f"n{n}": qoi.Integral(u, on=x < 0.5, points=n) for n in NS})
    e_b = [abs(b[f"n{n}"] - whole) for n in NS]
    e_h = [abs(h[f"n{n}"] - left_half) for n in NS]
    # the sides one after another on the first Sobol coordinate: the midpoint rule on each;
    # a predicate cuts the integrand at its edge, which costs some of the rate (about
    # n^-3/4 in 2-D for an edge across the points' grid)
    assert slope(NS, e_b) < -1.8 and slope(NS, e_h) < -0.75, (e_b, e_h)
    assert e_b[-1] < 1e-8 and e_h[-1] < 1e-5
    # the mean divides by the region's measure, measured on the same points
    m = sol.quantities(which={"m": qoi.Mean(u, on=x < 0.5, points=4096)})["m"]
    assert m == pytest.approx(h["n4096"] / 0.5, rel=1e-12)


def test_a_random_digital_shift_gives_another_estimate_of_the_same_integral():
    sol = known(square(), sin_sin)
    q = {"m": qoi.Mean(u, points=4096)}
    fixed = sol.quantities(which=q)["m"]
    assert sol.quantities(which=q)["m"] == fixed  # the rule is fixed
    shifted = [sol.quantities(which=q, key=jax.random.key(i))["m"] for i in range(3)]
    assert len(set(shifted)) == 3 and all(abs(v - 4 / PI**2) < 1e-4 for v in shifted)


def test_space_time_regions_and_time_slices():
    # u = exp(-t) sin(pi x) on [0, 1] x [0, 2]
    p = pinn.Problem(domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 2),
                     equations={"heat": pinn.D(u, t) - pinn.laplacian(u) / PI**2},
                     conditions={"ends": pinn.Dirichlet(u, 0.0, on="boundary"),
                                 "start": pinn.Initial(u, pinn.sin(pinn.pi * x))},
                     coords=pinn.coords("x t"))
    sol = known(p, lambda X: jnp.exp(-X[:, 1]) * jnp.sin(jnp.pi * X[:, 0]))
    got = sol.quantities(which={
        "all": qoi.Integral(u, points=1 << 14),                     # over x and t
        "final": qoi.Mean(u, time=2.0),                             # the slice t = 2
        "flux": qoi.Integral(-pinn.D(u, x), on="left", time=0.5),   # a point at one time
        "centre": qoi.Value(u, at=(0.5, 1.0))})
    assert got["all"] == pytest.approx((2 / PI) * (1 - math.exp(-2)), abs=1e-6)
    assert got["final"] == pytest.approx(math.exp(-2) * 2 / PI, abs=1e-7)
    assert got["flux"] == pytest.approx(-PI * math.exp(-0.5), rel=1e-12)
    assert got["centre"] == pytest.approx(math.exp(-1.0), rel=1e-12)


# ---------------------------------------------------------------------------
# point values, extremes, batches, gradients


def test_a_point_value_equals_the_field_there():
    sol = known(square(), lambda X: jnp.exp(X[:, 0]) * jnp.cos(3 * X[:, 1]))
    at = (0.3, 0.7)
    got = sol.quantities(which={"v": qoi.Value(u, at=at),
                                "dx": qoi.Value(pinn.D(u, x) + u**2, at=at)})
    field = sol([at])[0, 0]
    assert got["v"] == field
    assert got["dx"] == pytest.approx(field + field**2, rel=1e-14)


def test_max_and_min_are_taken_over_the_points():
    sol = known(square(), sin_sin)
    got = sol.quantities(which={"hi": qoi.Max(u), "lo": qoi.Min(u, on="boundary"),
                                "fine": qoi.Max(u, points=1 << 14)})
    assert 1 - 1e-3 < got["hi"] <= 1.0 and got["hi"] <= got["fine"] <= 1.0
    assert abs(got["lo"]) < 1e-12  # u = 0 on the walls


def quadratic(X):
    """u = ((a - 0.3)^2 + 2 (b + 0.5)^2 + 1) sin(pi x) sin(pi y): its mean is 4/pi^2 times
    the bracket, least at (a, b) = (0.3, -0.5)."""
    a, b = X[:, 2], X[:, 3]
    return ((a - 0.3) ** 2 + 2 * (b + 0.5) ** 2 + 1) * sin_sin(X)


@functools.cache
def rule_mean() -> float:
    """The quadrature's mean of sin(pi x) sin(pi y) (4/pi^2 to 2e-6): the quantities below
    are it times a closed form in the parameters, so they are compared to 1e-12."""
    return known(square(), sin_sin).quantities(which={"s": qoi.Mean(u)})["s"]


def mean_of_quadratic(a, b):
    return rule_mean() * ((a - 0.3) ** 2 + 2 * (b + 0.5) ** 2 + 1)


def two_params():
    return square({"m": qoi.Mean(u), "c": qoi.Value(u, at=(0.5, 0.5)),
                   "fl": qoi.Integral(-pinn.D(u, x), on="left")}, a=(-1, 1), b=(-1, 1))


@pytest.mark.parametrize("precision", [64, 32])
def test_batched_quantities_equal_one_by_one(precision):
    sol = known(two_params(), quadratic, precision)
    rows = np.array([[0.3, -0.5], [-1.0, 1.0], [0.7, 0.1]])
    many = sol.quantities(params=rows)
    assert set(many) == {"m", "c", "fl"} and many["m"].shape == (3,)
    tol = 1e-12 if precision == 64 else 2e-6
    for i, (a, b) in enumerate(rows):
        one = sol.quantities(params={"a": a, "b": b})
        for k in many:
            assert many[k][i] == pytest.approx(one[k], rel=tol, abs=tol)
    np.testing.assert_allclose(many["m"], mean_of_quadratic(rows[:, 0], rows[:, 1]),
                               rtol=tol)
    np.testing.assert_allclose(many["fl"], -2 * mean_of_quadratic(rows[:, 0], rows[:, 1])
                               / rule_mean(), rtol=1e-6)
    with pytest.raises(ValueError, match=r"parametric .* give params="):
        sol.quantities()


def test_the_gradient_along_the_parameters_is_the_closed_form():
    sol = known(two_params(), quadratic)
    f = sol.quantity_function("m")
    with precision_scope(64):
        v, g = jax.value_and_grad(f)(jnp.asarray([0.8, 0.25]))
    assert float(v) == pytest.approx(mean_of_quadratic(0.8, 0.25), rel=1e-12)
    np.testing.assert_allclose(np.asarray(g), rule_mean() * np.array([2 * (0.8 - 0.3),
                                                                      4 * (0.25 + 0.5)]),
                               rtol=1e-12)


# ---------------------------------------------------------------------------
# the problem: checks, files, the run format


def test_quantities_are_checked_against_the_problem():
    k = pinn.param("k", range=(0, 1))
    cases = [
        ({"q": qoi.Mean(pinn.field("v"))}, "unknown field"),
        ({"q": qoi.Mean(u, on="lefft")}, "not a region of this domain"),
        ({"q": qoi.Value(u, at=(0.5,))}, "at has 1 number"),
        ({"q": qoi.Value(u, at=(1.5, 0.5))}, "outside the domain"),
        ({"q": qoi.Mean(u, time=0.5)}, "evolution problem"),
        ({"q": qoi.Mean(k * u)}, "not an input of this problem's network"),
        ({"q": qoi.Mean(u, where=pinn.eq(pinn.field("u"), 0))}, "uses fields"),
        ({"x": qoi.Mean(u)}, "coordinate or field"),
        ({"q": "u"}, "expected a quantity"),
    ]
    for quantities, message in cases:
        with pytest.raises(ProblemError, match=message):
            square(quantities)
    with pytest.raises(ValueError, match="points: a whole number"):
        qoi.Mean(u, points=0)
    with pytest.raises(ValueError, match="not a condition"):
        qoi.Mean(u, where=x + 1)


YAML = """
name: qp
params: {a: {range: [-1, 1]}, k: 2.0}
domain: {rectangle: {min: [0, 0], max: [1, 1]}}
equations:
  poisson: "-laplacian(u) = 2*pi^2*sin(pi*x)*sin(pi*y) + a*sin(pi*x)"
conditions:
  walls: {dirichlet: {u: 0}, on: boundary}
quantities:
  mean_T: {mean: u}
  flux_left: {integral: "-k*u_x", on: left}
  T_center: {value: u, at: [0.5, 0.5]}
  T_max: {max: u, on: interior}
  half: {mean: u, on: "x < 0.5", points: 1024}
  right_walls: {integral: u, on: boundary, where: "x > 0.5"}
fem: {cells: 8}
"""


def test_a_problem_file_declares_quantities_and_they_survive_the_run_format():
    p = pinn.config.load("qp.yaml", text=YAML).problem
    qs = p.quantities
    assert list(qs) == ["mean_T", "flux_left", "T_center", "T_max", "half", "right_walls"]
    assert isinstance(qs["flux_left"], qoi.Integral) and qs["flux_left"].on == "left"
    assert qs["half"].on == "interior" and qs["half"].points == 1024
    assert qs["T_center"].at == (0.5, 0.5)
    data, arrays = problem_to_data(p)  # k is used by a quantity only: written all the same
    back = problem_from_data(json.loads(json.dumps(data)), arrays)
    assert list(back.quantities) == list(qs)
    for name in qs:
        assert type(back.quantities[name]) is type(qs[name])
        assert back.quantities[name].to_data().keys() == qs[name].to_data().keys()
        assert str(back.quantities[name].expr) == str(qs[name].expr)


@pytest.mark.parametrize("entry, where, message", [
    ("{mean: v}", "quantities.q.mean", "unknown name 'v'"),
    ("{mean: u, on: lefft}", "quantities.q.on", "did you mean 'left'"),
    ("{value: u, at: [0.5]}", "quantities.q", "at has 1 number"),
    ("{value: u, at: [2, 0.5]}", "quantities.q", "outside the domain"),
    ("{value: u, on: left, at: [0.5, 0.5]}", "quantities.q", "on belongs to a quantity over"),
    ("{mean: u, at: [0.5, 0.5]}", "quantities.q", "at belongs to a value"),
    ("{value: u}", "quantities.q", "a value needs the point"),
    ("{mean: u, time: 1}", "quantities.q", "evolution problem"),
    ("{mean: u, points: 0}", "quantities.q.points", "must be ≥ 1"),
    ("{average: u}", "quantities.q", "unknown key 'average'"),
    ("{mean: 'u +'}", "quantities.q.mean", "column 4"),
    ("{mean: u, where: 'x + 1'}", "quantities.q.where", "not a condition"),
    ("{mean: u, on: 'x == 0.5'}", "quantities.q", "no length, area or volume"),
    ("{mean: u, max: u}", "quantities.q", "give exactly one quantity"),
    ("3", "quantities.q", "expected a mapping"),
])
def test_bad_quantities_in_a_file_are_one_line_naming_the_path(tmp_path, capsys, entry,
                                                               where, message):
    f = tmp_path / "qp.yaml"
    f.write_text(YAML)
    assert main(["validate", str(f), "--set", f"quantities.q={entry}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f" {where}: " in err and message in err, err


# ---------------------------------------------------------------------------
# the optimiser


def test_the_optimum_inside_the_range_is_the_closed_form():
    sol = known(two_params(), quadratic)
    best = pinn.optimize(sol, "m", over=["a", "b"])
    assert best.params["a"] == pytest.approx(0.3, abs=1e-7)
    assert best.params["b"] == pytest.approx(-0.5, abs=1e-7)
    assert best.value == pytest.approx(mean_of_quadratic(0.3, -0.5), rel=1e-7)
    assert best.at_bounds == {} and best.converged and best.starts == 8
    assert best.iterations >= 1 and best.total_iterations >= best.iterations
    assert best.evaluations >= best.total_iterations and best.seconds > 0
    # one parameter, the other held
    one = pinn.optimize(sol, "m", over="a", fixed={"b": 0.2})
    assert one.params == pytest.approx({"a": 0.3, "b": 0.2}, abs=1e-7)
    assert one.value == pytest.approx(mean_of_quadratic(0.3, 0.2), rel=1e-7)


def test_an_optimum_on_the_bounds_is_said():
    sol = known(two_params(), quadratic)
    worst = pinn.optimize(sol, "m", minimize=False)  # the farthest corner from (0.3, -0.5)
    assert worst.params == {"a": -1.0, "b": 1.0}
    assert worst.at_bounds == {"a": "lower", "b": "upper"}
    assert worst.value == pytest.approx(mean_of_quadratic(-1.0, 1.0), rel=1e-7)
    # the flux through the left side is -2 (bracket): least where the bracket is largest
    low = pinn.optimize(sol, "fl", over="b", fixed={"a": 0.3})
    assert low.params["b"] == 1.0 and low.at_bounds == {"b": "upper"}


def test_several_starts_find_the_better_of_two_wells():
    # mean u = S ((b^2 - 0.5)^2 - 0.2 a + 1), b = a - 0.2: wells near a = -0.51 and
    # a = +0.91 (the lower); from the centre, a = 0, the slope leads into the upper one
    def wells(X):
        a = X[:, 2]
        return (((a - 0.2) ** 2 - 0.5) ** 2 - 0.2 * a + 1) * sin_sin(X)

    def q(a):
        return ((a - 0.2) ** 2 - 0.5) ** 2 - 0.2 * a

    sol = known(square({"m": qoi.Mean(u)}, a=(-1, 1)), wells)
    roots = np.roots([4, 0, -2, -0.2]).real + 0.2  # q'(a) = 4 b^3 - 2 b - 0.2
    a_best = min((r for r in roots if -1 <= r <= 1), key=q)
    best = pinn.optimize(sol, "m")
    assert a_best > 0.9 and best.params["a"] == pytest.approx(a_best, abs=1e-7)
    assert best.value == pytest.approx(rule_mean() * (q(a_best) + 1), rel=1e-12)
    alone = pinn.optimize(sol, "m", starts=1)  # the centre alone: the upper well
    assert alone.params["a"] < -0.4 and alone.value > best.value + 0.2 * rule_mean()


def test_a_quantity_object_and_a_float32_solution():
    sol = known(two_params(), quadratic, precision=32)
    best = pinn.optimize(sol, qoi.Value(u, at=(0.5, 0.5)), over=("b",), fixed={"a": 0.3})
    assert best.quantity == "quantity" and best.params["a"] == 0.3
    assert best.params["b"] == pytest.approx(-0.5, abs=1e-3)
    assert best.value == pytest.approx(1.0, rel=1e-6)
    best = pinn.optimize(sol, "m")
    assert best.params["a"] == pytest.approx(0.3, abs=1e-3)
    assert best.params["b"] == pytest.approx(-0.5, abs=1e-3)


@pytest.mark.parametrize("kwargs, message", [
    ({"quantity": "nope"}, r"'nope' is not a quantity of square \(its quantities: m, c, fl\)"),
    ({"quantity": "m", "over": ["c"]}, "is not a parameter of the problem"),
    ({"quantity": "m", "over": ["a", "a"]}, "named twice"),
    ({"quantity": "m", "over": []}, "no parameter named"),
    ({"quantity": "m", "over": "a", "fixed": {"b": 3.0}}, r"b=3.0 is outside the range"),
    ({"quantity": "m", "over": "a", "fixed": {"a": 0.0}}, "optimised"),
    ({"quantity": "m", "starts": 0}, "starts: a whole number"),
])
def test_bad_optimiser_input_names_the_fix(kwargs, message):
    sol = known(two_params(), quadratic)
    q = kwargs.pop("quantity")
    with pytest.raises(ValueError, match=message):
        pinn.optimize(sol, q, **kwargs)
    with pytest.raises(ValueError, match="no ranged parameters: there is nothing"):
        pinn.optimize(known(square({"m": qoi.Mean(u)}), sin_sin), "m")


# ---------------------------------------------------------------------------
# the FEM check


def test_the_fem_check_computes_the_quantity_of_one_solve():
    # -laplacian(u) = (1 + a) 2 pi^2 sin sin: u = (1 + a) sin(pi x) sin(pi y)
    b = pinn.param("b", range=(0, 1))
    src = (1 + b) * 2 * pinn.pi**2 * pinn.sin(pinn.pi * x) * pinn.sin(pinn.pi * y)
    p = pinn.Problem(domain=pinn.Rectangle((0, 0), (1, 1)),
                     equations={"poisson": -pinn.laplacian(u) - src},
                     conditions={"walls": pinn.Dirichlet(u, 0.0, on="boundary")},
                     quantities={"m": qoi.Mean(u), "fl": qoi.Integral(-pinn.D(u, x), on="left"),
                                 "lap": qoi.Mean(pinn.laplacian(u))})
    fixed = design.fixed_problem(p, {"b": 0.5})
    assert not fixed.ranged and [q.name for q in fixed.params] == ["b"]
    m = design.fem_check(p, "m", {"b": 0.5}, cells=16)
    assert m.value == pytest.approx(1.5 * 4 / PI**2, rel=1e-4) and m.dofs > 0
    # the flux from P2's gradient at the wall: its error falls like h^2
    errors = [abs(design.fem_check(p, "fl", {"b": 0.5}, cells=n).value + 1.5 * 2)
              for n in (16, 32)]
    assert errors[0] < 2e-2 and errors[1] < errors[0] / 3.5, errors
    with pytest.raises(ValueError, match="first space derivatives only"):
        design.fem_check(p, "lap", {"b": 0.5}, cells=4)


# ---------------------------------------------------------------------------
# the command lines


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The problem file and an untrained float64 run of it (what the commands read)."""
    d = tmp_path_factory.mktemp("qoi")
    f = d / "qp.yaml"
    f.write_text(YAML)
    built = pinn.config.load(str(f))
    model = pinn.MLP(width=8, depth=1)
    run = pinn.setup(built.problem, model, progress=False, precision=64)
    pinn.Solution(built.problem, model, run.params, precision=64).save(d / "run",
                                                                     report=False)
    return f, d / "run"


def test_pinn_quantities_prints_the_librarys_numbers(files, tmp_path, capsys):
    f, run = files
    sol = pinn.Solution.load(run)
    assert main(["quantities", str(run), "--param", "a=0.2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = sol.quantities(params={"a": 0.2})
    assert got["quantities"] == pytest.approx(want, rel=1e-15)
    assert main(["quantities", str(run), "--param", "a=0.2"]) == 0
    text = capsys.readouterr().out
    assert "mean_T" in text and "mean of u over interior" in text
    rows = tmp_path / "a.csv"
    rows.write_text("a\n0.1\n-0.5\n0.9\n")
    assert main(["quantities", str(run), "--params", str(rows), "--which",
                 "mean_T,T_center"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "query,a,mean_T,T_center" and len(lines) == 4
    table = np.array([[float(v) for v in ln.split(",")] for ln in lines[1:]])
    many = sol.quantities(params={"a": np.array([0.1, -0.5, 0.9])},
                          which=["mean_T", "T_center"])
    np.testing.assert_allclose(table[:, 2], many["mean_T"], rtol=1e-15)
    np.testing.assert_allclose(table[:, 3], many["T_center"], rtol=1e-15)


def test_pinn_optimize_reports_the_optimum_and_the_fem_check(files, capsys):
    f, run = files
    assert main(["optimize", str(f), "--run", str(run), "--minimize", "mean_T",
                 "--over", "a", "--starts", "4"]) == 0
    out = capsys.readouterr().out
    assert "minimum of mean_T over a in [-1.0, 1.0]" in out and "optimum: a = " in out
    assert "iterations:" in out and "FEM check (P2, 8 cells" in out
    assert main(["optimize", str(f), "--run", str(run), "--maximize", "flux_left",
                 "--no-check", "--json", "--starts", "4"]) == 0
    got = json.loads(capsys.readouterr().out)
    best = pinn.optimize(pinn.Solution.load(run), "flux_left", minimize=False, starts=4)
    assert got["fem"] is None and got["optimum"]["goal"] == "maximize"
    assert got["optimum"]["params"] == pytest.approx(best.params, abs=1e-12)
    assert got["optimum"]["value"] == pytest.approx(best.value, rel=1e-12)


@pytest.mark.parametrize("args, message", [
    (["--minimize", "mean_T", "--maximize", "T_max"], "--minimize QOI or --maximize QOI"),
    ([], "--minimize QOI or --maximize QOI"),
    (["--minimize", "nope"], "--minimize nope: not a quantity of"),
    (["--minimize", "mean_T", "--over", "b"], "'b' is not a parameter of the problem"),
    (["--minimize", "mean_T", "--over", "k"], "'k' has a fixed value, not a range"),
    (["--minimize", "mean_T", "--param", "a=0.5"], "--param a: a is optimised"),
    (["--minimize", "mean_T", "--over", "a", "--param", "z=1"], "--param z: not a ranged"),
    (["--minimize", "mean_T", "--param", "a"], "expected NAME=VALUE"),
    (["--minimize", "mean_T", "--starts", "0"], "--starts 0: give 1 to"),
    (["--minimize", "mean_T", "--over", ","], "name ranged parameters"),
])
def test_bad_optimize_arguments_are_one_line(files, capsys, args, message):
    f, run = files
    assert main(["optimize", str(f), "--run", str(run), "--no-check", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_bad_runs_and_files_are_one_line(files, tmp_path, capsys):
    f, run = files
    other = tmp_path / "other.yaml"
    other.write_text(YAML.replace("a: {range: [-1, 1]}", "a: {range: [-2, 1]}"))
    no_q = tmp_path / "noq.yaml"
    no_q.write_text(YAML.split("quantities:")[0])
    cases = [
        (["optimize", str(other), "--run", str(run), "--minimize", "mean_T"],
         "not the problem the run was trained on"),
        (["optimize", str(f), "--run", str(tmp_path / "none"), "--minimize", "mean_T"],
         "no such run folder"),
        (["optimize", str(tmp_path / "none.yaml"), "--run", str(run), "--minimize", "m"],
         "no such file"),
        (["quantities", str(run)], "is parametric: give the parameters' values"),
        (["quantities", str(run), "--param", "a=3"], "outside the range"),
        (["quantities", str(run), "--param", "a=0.1", "--which", "nope"],
         "'nope' is not a quantity of qp"),
        (["quantities", str(run), "--param", "a=0.1", "--file", str(no_q)],
         "declares no quantities"),
        (["quantities", str(run), "--param", "a=0.1", "--params", str(f)], "give one of them"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (args, err)
