"""A condition type defined outside pinn (a subclass providing the protocol's
methods) is checked by the Problem, trained through ``assemble``, checked by the
manufactured-solution report, and refused by name by the FEM baseline."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import pinn
from pinn import conditions as C
from pinn.dsl import expr as E
from pinn.train.loss import assemble
from pinn.train.spec import Points

x = pinn.coords("x")
u = pinn.field("u")


@dataclass(frozen=True)
class Slope(C.Condition):
    """``D(field, coord) = value`` on a boundary part (a new condition type)."""

    field: E.Field
    coord: E.Coord
    value: E.Expr
    on: object = "boundary"
    weight: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "value", E.as_expr(self.value))

    def expressions(self):
        return (self.value,)

    def fields_used(self):
        return (self.field,)

    def validate(self, problem, name):
        if self.coord not in problem.coords:
            raise ValueError(f"conditions.{name}: {self.coord.name} is not a coordinate")

    def residuals(self, problem, name):
        return C.Residuals({"0": E.Derivative(self.field, (self.coord,)) - self.value}, self.on)


def _problem():
    # -u'' = (pi/2)^2 sin(pi x / 2) on [0, 1], u(0) = 0, u'(1) = 0: u = sin(pi x / 2)
    k = pinn.pi / 2
    return pinn.Problem(pinn.Interval(0, 1), {"pde": -pinn.D(u, x, 2) - k**2 * pinn.sin(k * x)},
                        {"left": pinn.Dirichlet(u, 0, on="left"),
                         "right": Slope(u, x, 0, on="right")},
                        exact={u: pinn.sin(k * x)})


def _mlp(params, X):
    h = X
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return h @ w + b


def test_new_condition_type_trains_through_assemble():
    problem = _problem()
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    sizes = [1, 16, 16, 1]
    net = [(jax.random.normal(k, (m, n)) / np.sqrt(m), jnp.zeros(n))
           for k, m, n in zip(keys, sizes[:-1], sizes[1:], strict=True)]
    asm = assemble(problem, _mlp, Points(interior=128, boundary=16, resample_every=0))
    assert set(asm.names) == {"pde", "left", "right"} and asm.weights["right"] == 1.0
    params = {"net": net, "pde": {}}
    batch = asm.sample_fn(jax.random.PRNGKey(1), params)
    opt = optax.adam(1e-2)

    def loss(p):
        terms = asm.terms_fn(p, batch)
        return sum(asm.weights[n] * v for n, v in terms.items())

    @jax.jit
    def steps(p, s):
        def step(carry, _):
            p, s = carry
            g = jax.grad(loss)(p)
            upd, s = opt.update(g, s, p)
            return (optax.apply_updates(p, upd), s), None

        return jax.lax.scan(step, (p, s), None, length=1500)[0]

    params, _ = steps(params, opt.init(params))
    xs = jnp.linspace(0, 1, 101)[:, None]
    pred = asm.apply(params["net"], xs)[:, 0]
    exact = jnp.sin(jnp.pi / 2 * xs[:, 0])
    rel = float(jnp.linalg.norm(pred - exact) / jnp.linalg.norm(exact))
    assert rel < 2e-2, rel
    # the new term is what pins the slope: it is small after training
    assert float(asm.terms_fn(params, batch)["right"]) < 1e-3


def test_new_condition_type_is_validated_and_checked():
    with pytest.raises(pinn.ProblemError, match="is not a coordinate"):
        pinn.Problem(pinn.Interval(0, 1), {"pde": pinn.D(u, x, 2)},
                     {"right": Slope(u, E.Coord("y"), 0, on="right")})
    from pinn.report.manufactured import check

    results = {c.name: c for c in check(_problem(), n=50)}
    assert results["right"].kind == "slope" and results["right"].ok, results["right"]


def test_fem_names_a_condition_type_it_cannot_apply():
    from pinn import fem

    with pytest.raises(fem.UnsupportedProblem, match=r"'right'.*Slope.*handles Dirichlet"):
        fem.solve(_problem(), cells=4)


def test_a_condition_must_be_a_condition():
    with pytest.raises(pinn.ProblemError, match="expected a condition"):
        pinn.Problem(pinn.Interval(0, 1), {"pde": pinn.D(u, x, 2)}, {"c": "u = 0"})
