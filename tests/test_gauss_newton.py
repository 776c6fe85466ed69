"""Gauss-Newton stages (pinn.train.gauss_newton): the residual form of the loss terms,
convergence rates on small least-squares problems, and PINN stages (forward and inverse)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pinn
from pinn.train.gauss_newton import GaussNewton, LevenbergMarquardt, gauss_newton_step

x, y, t = pinn.coords("x y t")
u, v = pinn.fields("u v")


# -- the residual form: terms == sum(square(residuals)) for every kind of term ----------


def _own_term(apply, params, pts):  # a user's JAX loss term (a scalar)
    return jnp.mean(apply(params["net"], pts)[:, 0] ** 2) + 0.1


@pytest.fixture(scope="module")
def system():
    """A system with a term of every kind, its raw network and parameters (float64)."""
    from pinn.network import build_network

    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1, (12, 3))
    kappa = pinn.param("kappa", 0.5, learnable=True)
    problem = pinn.Problem(
        domain=pinn.Rectangle((0, 0), (1, 1)) * pinn.TimeInterval(0, 1),
        coords=(x, y, t),
        equations={"heat": pinn.D(u, t) - kappa * pinn.laplacian(u) - v,
                   "link": v - pinn.D(u, x) * u},
        conditions={
            "wall": pinn.Dirichlet({u: 0, v: pinn.sin(y)}, on="left"),
            "flux": pinn.Neumann(u, 1, on="right"),
            "seam": pinn.Periodic(v, ("bottom", "top")),
            "start": pinn.Initial(u, pinn.sin(pinn.pi * x)),
            "obs": pinn.Data(pts, {u: np.cos(pts[:, 0])}),
            "own": pinn.LossTerm(_own_term, points="interior", n=16),
        },
    )
    with jax.enable_x64(True):
        apply, net = build_network(problem, pinn.MLP(width=8, depth=1), 0)
        params = {"net": net, "pde": {"kappa": jnp.asarray(0.5, jnp.float64)}}
    return problem, apply, params


def test_residuals_square_to_the_terms(system):
    from pinn.train.loss import assemble

    problem, apply, params = system
    points = pinn.Points(interior=64, boundary=16, initial=16)
    with jax.enable_x64(True):
        batch = None
        for causal in (None, pinn.Causal(eps=1.0, chunks=4)):  # the same point sets
            asm = assemble(problem, apply, points, causal=causal, dtype=jnp.float64)
            if batch is None:
                batch = jax.jit(asm.sample_fn)(jax.random.key(1), params)
            terms = jax.jit(asm.terms_fn)(params, batch)
            residuals = jax.jit(asm.residuals_fn)(params, batch)
            assert asm.terms_fn.residuals is asm.residuals_fn
            assert set(residuals) == set(terms) == set(asm.names)
            for name, term in terms.items():
                r = residuals[name]
                assert r.ndim == 1, name
                np.testing.assert_allclose(float(jnp.sum(r**2)), float(term), rtol=1e-12,
                                           err_msg=f"{name} (causal: {causal})")
            # point by point (what the Jacobian is built from): every term but the user's
            def by_points(params, batch, blocks=asm.terms_fn.pointwise):
                out = {}
                for blk in blocks:
                    weights = blk.weights(params, batch)
                    values = jax.vmap(lambda e, blk=blk: blk.residual(params, e))(
                        blk.points(batch))
                    for name in blk.names:
                        out[name] = jnp.sum(weights[name][:, None] * values[name] ** 2)
                return out

            covered = jax.jit(by_points)(params, batch)
            for name, got in covered.items():
                np.testing.assert_allclose(float(got), float(terms[name]), rtol=1e-12,
                                           err_msg=f"{name} point by point")
            assert set(covered) == set(terms) - {"own"}
        # a sum of several means is several vectors: the Dirichlet term on u and v
        assert residuals["wall"].size == 2 * 16 and residuals["obs"].size == 12
        assert residuals["own"].size == 1


# -- convergence on small least-squares problems ----------------------------------------


def _rosenbrock(z):
    return jnp.stack([10 * (z[1] - z[0] ** 2), 1 - z[0]])


_T = np.linspace(0, 1, 20)


def _exponential_fit(z):  # zero residual at (2, -1.5)
    return z[0] * jnp.exp(z[1] * _T) - 2.0 * jnp.exp(-1.5 * _T)


def _iterate(opt, f, z0, solution, steps=60):
    with jax.enable_x64(True):
        z0, solution = jnp.asarray(z0, jnp.float64), jnp.asarray(solution, jnp.float64)
        rule, m = opt._rule(), f(z0).size
        state = opt.init(z0, steps)
        step = jax.jit(lambda z, s: gauss_newton_step(f, z, s, rule, m))
        z, errors = z0, []
        for _ in range(steps):
            z, state, info = step(z, state)
            errors.append(float(jnp.linalg.norm(z - solution)))
            if errors[-1] < 1e-12:
                break
        return errors


@pytest.mark.parametrize(("opt", "most"), [(LevenbergMarquardt(), 22), (GaussNewton(), 13)])
@pytest.mark.parametrize("problem", ["rosenbrock", "exponential"])
def test_superlinear_convergence(opt, most, problem):
    f, z0, solution = {
        "rosenbrock": (_rosenbrock, jnp.array([-1.2, 1.0]), jnp.array([1.0, 1.0])),
        "exponential": (_exponential_fit, jnp.array([1.0, 0.0]), jnp.array([2.0, -1.5])),
    }[problem]
    errors = _iterate(opt, f, z0, solution)
    # measured: Rosenbrock LM 19, GN 11 iterations; exponential fit LM 5, GN 4
    assert errors[-1] < 1e-10 and len(errors) <= most, errors
    # superlinear: once close, the error ratios fall (to below 1e-2), none rising
    ratios = [b / a for a, b in zip(errors, errors[1:], strict=False) if a < 0.2 and b > 1e-13]
    assert ratios and ratios[-1] < 1e-2, errors
    assert all(r2 <= 1.5 * r1 for r1, r2 in zip(ratios, ratios[1:], strict=False)), errors


def test_gauss_newton_is_quadratic_near_the_solution():
    errors = _iterate(GaussNewton(), _rosenbrock, jnp.array([-1.2, 1.0]), jnp.array([1.0, 1.0]))
    close = [(a, b) for a, b in zip(errors, errors[1:], strict=False) if 1e-7 < a < 0.2]
    assert close and all(b <= 10 * a**2 for a, b in close), errors


# -- PINN stages --------------------------------------------------------------------------


def _poisson():
    # -u'' = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0: u = sin(pi x)
    return pinn.Problem(
        domain=pinn.Interval(0, 1), coords=(x,),
        equations={"poisson": -pinn.D(u, x, 2) - pinn.pi**2 * pinn.sin(pinn.pi * x)},
        conditions={"ends": pinn.Dirichlet(u, 0, on="boundary")},
        exact={u: pinn.sin(pinn.pi * x)}, name="poisson1d",
    )


def test_levenberg_marquardt_after_adam_on_poisson():
    training = pinn.Training(
        stages=[pinn.Stage(pinn.Adam(lr=1e-2), 500), pinn.Stage(LevenbergMarquardt(), 100)],
        points=pinn.Points(interior=64, boundary=8, resample_every=0), chunk=250)
    sol = pinn.solve(_poisson(), pinn.MLP(width=16, depth=2), training, precision=64,
                     progress=False)
    err = sol.metrics["rel_l2"]["u"]
    # measured 1.45e-6 (72 residuals, 321 parameters: the kernel form); LBFGS() in the
    # same place reaches 1.3e-4, GaussNewton() 6.9e-6
    assert err < 5e-6, sol.metrics
    assert sol.metrics["stages"][1]["status"] == "completed"


def test_levenberg_marquardt_learns_a_pde_parameter():
    # u = exp(-kappa pi^2 t) sin(pi x) with kappa = 0.1; kappa learnt from 100 samples
    # (164 residuals, 152 parameters with kappa: the normal equations' form), from the
    # network's initialisation
    kappa = pinn.param("kappa", 0.5, learnable=True)
    rng = np.random.default_rng(0)
    pts = np.column_stack([rng.uniform(0, 1, 100), rng.uniform(0, 1, 100)])
    vals = np.exp(-0.1 * np.pi**2 * pts[:, 1]) * np.sin(np.pi * pts[:, 0])
    problem = pinn.Problem(
        domain=pinn.Interval(0, 1) * pinn.TimeInterval(0, 1),
        equations={"heat": pinn.D(u, t) - kappa * pinn.D(u, x, 2)},
        conditions={"obs": pinn.Data(pts, {u: vals})},
    )
    training = pinn.Training(stages=[pinn.Stage(LevenbergMarquardt(), 30)],
                             points=pinn.Points(interior=64, resample_every=0), chunk=30)
    sol = pinn.solve(problem, pinn.MLP(width=10, depth=2), training, precision=64,
                     progress=False)
    # measured 0.1000224 (Adam 500 + LBFGS 100 steps, 200 samples, 128 points: 0.0967)
    assert abs(sol.learned_params()["kappa"] - 0.1) < 1e-4, sol.learned_params()


@pytest.mark.parametrize(("m", "n"), [(5, 9), (9, 5)], ids=["kernel", "normal"])
def test_the_two_forms_solve_the_damped_normal_equations(m, n):
    from pinn.train.gauss_newton import _solver

    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        J, r, lam = rng.normal(size=(m, n)), rng.normal(size=m), 0.3
        solve, _ = _solver(jnp.asarray(J), jnp.asarray(r))
        want = np.linalg.solve(J.T @ J + lam * np.eye(n), -J.T @ r)
        np.testing.assert_allclose(np.asarray(solve(lam)), want, rtol=1e-10, atol=1e-12)


def test_a_terms_function_without_residuals_is_refused():
    def terms_fn(params, batch):
        return {"fit": jnp.mean((params["a"] * batch - 1.0) ** 2)}

    with pytest.raises(ValueError, match="residual vectors"):
        pinn.train.run(terms_fn, {"a": jnp.ones(())},
                       pinn.Training([pinn.Stage(LevenbergMarquardt(), 2)]),
                       sample_fn=lambda key, p: jnp.ones((4,)), key=jax.random.key(0),
                       progress=False, handle_signals=False)


def test_a_plain_loss_with_residuals_trains():
    # a loss of one's own (pinn.train.Loss: the terms and their residual form) without
    # pinn.assemble; a fit of a, b in a*exp(b*s)
    def residuals(params, batch):
        r = params["a"] * jnp.exp(params["b"] * batch) - 2.0 * jnp.exp(-1.5 * batch)
        return {"fit": r / jnp.sqrt(r.size)}

    def terms_fn(params, batch):
        return {"fit": jnp.mean((params["a"] * jnp.exp(params["b"] * batch)
                                 - 2.0 * jnp.exp(-1.5 * batch)) ** 2)}

    loss = pinn.train.Loss(terms_fn, residuals=residuals)
    with jax.enable_x64(True):
        s = jnp.linspace(0.0, 1.0, 16)
        result = pinn.train.run(loss, {"a": jnp.ones(()), "b": jnp.zeros(())},
                                pinn.Training([pinn.Stage(LevenbergMarquardt(), 20)],
                                              points=pinn.Points(resample_every=None), chunk=20,
                                              eval_every=None, checkpoint_every=None),
                                sample_fn=lambda key, p: s, key=jax.random.key(0), progress=False,
                                handle_signals=False)
    assert abs(float(result.params["a"]) - 2.0) < 1e-12
    assert abs(float(result.params["b"]) + 1.5) < 1e-12
    assert result.stages[0]["status"] == "converged"  # a zero gradient after 6 steps


def test_stages_from_yaml():
    from pinn.config import ConfigError, load

    text = """\
name: poisson1d
coords: [x]
fields: [u]
domain: {space: {interval: [0, 1]}}
equations: {poisson: "-u_xx - pi^2*sin(pi*x)"}
conditions:
  ends: {dirichlet: {u: 0}, on: boundary}
training:
  stages: STAGES
"""
    stages = load("p.yaml", text=text.replace(
        "STAGES", "[{adam: {}, steps: 10}, {lm: {}, steps: 5}, "
                  "{gauss_newton: {damping: 1.0e-8}, steps: 5}]")).training().stages
    assert stages[1].optimizer == LevenbergMarquardt()
    assert stages[2].optimizer == GaussNewton(damping=1e-8)
    assert stages[1].full_batch and stages[2].full_batch
    with pytest.raises(ConfigError, match="down"):
        load("p.yaml", text=text.replace("STAGES", "[{lm: {down: 2}, steps: 5}]"))
