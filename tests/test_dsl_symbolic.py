"""Classification, coefficients and linearisation (Gateaux derivative) of PDE expressions."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import pinn.dsl as d
from pinn.dsl import expr as E
from pinn.dsl import symbolic as S
from pinn.dsl.evaluate import evaluate_on_points
from pinn.dsl.parser import Namespace, parse

x, y, t = d.coords("x y t")
u, v, p = d.fields("u v p")
du, dv, dp = d.fields("du dv dp")
nu = d.param("nu", 0.07)
alpha = d.param("alpha", 0.05)
kk = d.param("k", 3.0)
NS = Namespace([x, y, t, u, v, p, nu, alpha, kk])


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def _pts(dim, n=7, seed=1):
    return np.random.default_rng(seed).uniform(0.1, 0.9, size=(n, dim))


def _with_fields(e, subs, coords, spatial, pts):
    """Evaluate ``e`` with its fields replaced by concrete functions of the coordinates."""
    ex = d.expand(e, spatial, coords)
    return np.asarray(evaluate_on_points(d.substitute(ex, subs), coords, pts, spatial=spatial))


# concrete functions for the fields (and for the directions)
U1 = d.sin(2 * x) * d.exp(-t) + x**2
W1 = d.cos(3 * x) * (1 + t) - x * t
U2 = d.sin(x) * d.cos(2 * y) + x * y**2
V2 = d.exp(x - y) + y**3
P2 = x**2 - d.sin(y)
W2, Z2, Q2 = d.cos(x + 2 * y), x * y + 1, d.sin(3 * x) * y


def _gateaux_fd(e, base, dirs, coords, spatial, pts, h=1e-4):
    """Central finite difference of eps -> e(u + eps w) at eps = 0."""
    plus = {f: base[f] + h * dirs[f] for f in base}
    minus = {f: base[f] - h * dirs[f] for f in base}
    return (_with_fields(e, plus, coords, spatial, pts)
            - _with_fields(e, minus, coords, spatial, pts)) / (2 * h)


@pytest.mark.parametrize("text", [
    "u_t + u*u_x - nu*u_xx",  # Burgers
    "u_t - D(u^2*u_x, x)",  # porous medium
    "u_t + 6*u*u_x + u_xxx",  # KdV
    "u_xx + exp(u)",  # Bratu
    "u_t - u_xx + sin(u)*u_x^2 - u/(2 + x)",
    "sqrt(1 + u_x^2) - u*abs(u + 3)",
    "where(x < 0.5, u^3, u_x*u)",
])
def test_linearize_matches_finite_differences_1d(text):
    e = parse(text, NS)
    coords, spatial = (x, t), (x,)
    lin = S.linearize(e, spatial=spatial, coords=coords)
    assert set(d.fields_of(lin)) <= {u, du}
    pts = _pts(2)
    got = _with_fields(lin, {u: U1, du: W1}, coords, spatial, pts)
    fd = _gateaux_fd(e, {u: U1}, {u: W1}, coords, spatial, pts)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)
    # linear in the direction: the coefficients do not involve du
    coefs, source = S.coefficients(lin, [du], spatial, coords)
    assert S._is_zero(source)
    assert all(du not in d.fields_of(c) for c in coefs.values())


def test_linearize_navier_stokes_system_2d():
    vel = d.vector(u, v)
    mom_x = d.dot(vel, d.grad(u)) + d.D(p, x) - nu * d.laplacian(u)
    mom_y = d.dot(vel, d.grad(v)) + d.D(p, y) - nu * d.laplacian(v)
    cont = d.div(vel)
    coords = spatial = (x, y)
    base = {u: U2, v: V2, p: P2}
    dirs = {u: W2, v: Z2, p: Q2}
    pts = _pts(2)
    for e in (mom_x, mom_y, cont):
        lin = S.linearize(e, [u, v, p], spatial, coords)
        got = _with_fields(lin, {u: U2, v: V2, p: P2, du: W2, dv: Z2, dp: Q2}, coords,
                           spatial, pts)
        fd = _gateaux_fd(e, base, dirs, coords, spatial, pts)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)
    # the x-momentum linearisation, written out
    want = parse("D(u, x)*du + u*D(du, x) + v*D(du, y) - nu*D(du, x, 2) - nu*D(du, y, 2) "
                 "+ D(u, y)*dv + D(dp, x)", [*NS.fields, du, dv, dp, x, y, nu])
    assert S.linearize(mom_x, [u, v, p], spatial, coords) == want


def test_linearize_of_nonlinear_diffusion_2d_divergence_form():
    e = -d.div((1 + u**2) * d.grad(u)) - x
    lin = S.linearize(e, spatial=(x, y))
    pts = _pts(2)
    got = _with_fields(lin, {u: U2, du: W2}, (x, y), (x, y), pts)
    fd = _gateaux_fd(e, {u: U2}, {u: W2}, (x, y), (x, y), pts)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)


def test_linearize_only_some_fields_and_custom_directions():
    e = u * v + d.D(u, x) * v**2
    w = d.field("w")
    lin = S.linearize(e, [u], (x,), directions={u: w})
    assert lin == parse("v*w + v^2*D(w, x)", [u, v, w, x])
    with pytest.raises(ValueError, match="already appear"):
        S.linearize(u * w, [u], (x,), directions={u: w})
    with pytest.raises(ValueError, match="no direction field"):
        S.linearize(e, [u, v], (x,), directions={u: w})


def test_linearize_of_a_linear_expression_is_itself_in_the_directions():
    e = d.D(u, t) - alpha * d.laplacian(u) + x * u
    lin = S.linearize(e, spatial=(x, y), coords=(x, y, t))
    assert str(lin) == "x*du + D(du, t) - alpha*D(du, x, 2) - alpha*D(du, y, 2)"
    coefs_u, _ = S.coefficients(e, [u], (x, y), (x, y, t))
    coefs_du, source = S.coefficients(lin, [du], (x, y), (x, y, t))
    assert coefs_du == {(du, wrt): c for (_, wrt), c in coefs_u.items()}
    assert source == E.Number(0)


def test_jacobian_of_burgers():
    e = parse("u_t + u*u_x - nu*u_xx", NS)
    jac = S.jacobian(e, spatial=(x,), coords=(x, t))
    assert jac == {
        (u, ()): E.Derivative(u, (x,)),
        (u, (x,)): u,
        (u, (t,)): E.Number(1),
        (u, (x, x)): E.Neg(nu),
    }


# ---------------------------------------------------------------------------
# coefficients


def _rebuild(coefs, source):
    out = source
    for atom, c in coefs.items():
        out = out + c * S.atom_expr(atom)
    return out


def test_coefficients_heat():
    e = parse("D(u, t) - alpha*laplacian(u)", NS)
    coefs, source = S.coefficients(e, spatial=(x, y), coords=(x, y, t))
    assert coefs == {(u, (t,)): E.Number(1), (u, (x, x)): E.Neg(alpha),
                     (u, (y, y)): E.Neg(alpha)}
    assert source == E.Number(0)


def test_coefficients_helmholtz_with_source():
    e = parse("laplacian(u) + k^2*u - sin(pi*x)*sin(pi*y)", NS)
    coefs, source = S.coefficients(e, spatial=(x, y))
    assert coefs == {(u, ()): kk**2, (u, (x, x)): E.Number(1), (u, (y, y)): E.Number(1)}
    assert source == -(d.sin(d.pi * x) * d.sin(d.pi * y))


def test_coefficients_variable_coefficient_diffusion():
    kappa = 1 + x**2 * y
    e = -d.div(kappa * d.grad(u)) + 2 * u - d.exp(x)
    coefs, source = S.coefficients(e, spatial=(x, y))
    assert set(coefs) == {(u, ()), (u, (x,)), (u, (y,)), (u, (x, x)), (u, (y, y))}
    pts = _pts(2)
    X, Y = pts[:, 0], pts[:, 1]

    def num(expr):
        return np.asarray(evaluate_on_points(expr, (x, y), pts))

    np.testing.assert_allclose(num(coefs[(u, (x,))]), -2 * X * Y, rtol=1e-13)
    np.testing.assert_allclose(num(coefs[(u, (y,))]), -X**2, rtol=1e-13)
    np.testing.assert_allclose(num(coefs[(u, (x, x))]), -(1 + X**2 * Y), rtol=1e-13)
    np.testing.assert_allclose(num(coefs[(u, (y, y))]), -(1 + X**2 * Y), rtol=1e-13)
    np.testing.assert_allclose(num(coefs[(u, ())]), 2, rtol=1e-13)
    np.testing.assert_allclose(num(source), -np.exp(X), rtol=1e-13)
    # sum of coefficient * atom + source gives back the expression
    np.testing.assert_allclose(
        _with_fields(_rebuild(coefs, source), {u: U2}, (x, y), (x, y), pts),
        _with_fields(e, {u: U2}, (x, y), (x, y), pts), rtol=1e-12)


def test_coefficients_burgers_names_the_nonlinear_term():
    e = parse("u_t + u*u_x - nu*u_xx", NS)
    with pytest.raises(S.NonlinearError, match=r"the term u\*D\(u, x\) is nonlinear") as err:
        S.coefficients(e, spatial=(x,), coords=(x, t))
    assert err.value.term == u * d.D(u, x)
    assert "linearize()" in str(err.value)
    with pytest.raises(S.NonlinearError, match=r"the term sin\(u\)"):
        S.coefficients(parse("nu*(u_xx + 2*sin(u))", NS), spatial=(x,))
    with pytest.raises(S.NonlinearError, match="the term 1/u"):
        S.coefficients(parse("u_xx + 1/u", NS), spatial=(x,))


def test_coefficients_of_a_system_treat_other_fields_as_given():
    e = parse("u_xx + v*u_x - v^2", NS)
    coefs, source = S.coefficients(e, [u], (x,))
    assert coefs == {(u, (x,)): v, (u, (x, x)): E.Number(1)}
    assert source == -(v**2)
    with pytest.raises(S.NonlinearError):
        S.coefficients(e, None, (x,))  # linear in u, not in (u, v)


def test_cancellation_and_piecewise_linearity():
    assert S.is_linear(parse("u*u_x - u*u_x + u_xx", NS), spatial=(x,))
    assert S.is_linear(parse("where(x < 0.5, u, 2*u_x)", NS), spatial=(x,))
    assert not S.is_linear(parse("where(u < 0.5, u, 2*u_x)", NS), spatial=(x,))
    assert not S.is_linear(parse("max(u, 0)", NS), spatial=(x,))
    assert not S.is_linear(parse("u^2", NS))
    assert S.is_linear(parse("(1 + x)*u^1 + u/nu", NS))


# ---------------------------------------------------------------------------
# orders, time, classification, helpers


def test_orders_and_time():
    burgers = parse("u_t + u*u_x - nu*u_xx", NS)
    assert S.order(burgers, spatial=(x,), coords=(x, t)) == 2
    assert S.orders(burgers, (x,), (x, t)) == {u: {t: 1, x: 2}}
    assert S.time_order(burgers, t, (x,)) == 1
    assert S.is_time_dependent(burgers, t, (x,))
    wave = parse("D(u, t, 2) - laplacian(u)", NS)
    assert S.time_order(wave, t, (x, y)) == 2
    biharm = parse("laplacian(laplacian(u)) - 1", NS)
    assert S.order(biharm, spatial=(x, y)) == 4
    assert S.orders(biharm, (x, y)) == {u: {x: 4, y: 4}}
    assert not S.is_time_dependent(biharm, t, (x, y))
    assert S.is_time_dependent(parse("u_xx - sin(t)", NS), t, (x,))
    assert not S.is_time_dependent(burgers, None)
    assert S.order(parse("u*v + u_x", NS), [v], (x,)) == 0


def test_classify():
    c = S.classify(parse("u_t - alpha*laplacian(u) - x", NS), spatial=(x, y),
                   coords=(x, y, t), time=t)
    assert (c.order, c.time_order, c.linear, c.homogeneous, c.steady) == (2, 1, True, False,
                                                                          False)
    c = S.classify(parse("u_t + u*u_x - nu*u_xx", NS), spatial=(x,), time=t)
    assert not c.linear and c.fields == (u,)
    c = S.classify(parse("laplacian(u) + k*u", NS), spatial=(x, y))
    assert c.linear and c.homogeneous and c.steady


def test_summands_and_simplify():
    e = parse("a - (b - c) + -(d + f)", {n: d.field(n) for n in "abcdf"})
    assert [str(s) for s in S.summands(e)] == ["a", "-b", "c", "-d", "-f"]
    assert S.simplify(parse("0*x + 1*y - (x - x) + 2*3 + y^1", NS)) == parse("y + 6 + y", NS)
    assert S.simplify(parse("x/0", NS)) == parse("x/0", NS)  # left alone, no exception


def test_field_atoms():
    ex = d.expand(parse("u*u_x + D(v, y)", NS), (x, y))
    assert S.field_atoms(ex) == ((u, ()), (u, (x,)), (v, (y,)))
    assert S.field_atoms(ex, [v]) == ((v, (y,)),)
    with pytest.raises(ValueError, match="expand"):
        S.field_atoms(d.D(u * v, x))
