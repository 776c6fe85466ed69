"""SOAP (pinn.train.soap): the update rule against a plain NumPy transcription of the
published algorithm (Vyas et al. 2024, Algorithm 3 and the authors' reference code), its
advantage over Adam on an ill-conditioned quadratic, and a PINN stage trained with it."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import pinn
from pinn.train.soap import soap

# ---------------------------------------------------------------------------
# the reference: one parameter at a time, written from the paper, loops and NumPy only


class ReferenceSOAP:
    """SOAP for one parameter (a matrix: both sides rotated unless longer than
    ``max_dim``; a vector: Adam). The first step only builds the preconditioner."""

    def __init__(self, shape, lr, b1, b2, eps, wd, freq, max_dim):
        self.lr, self.b1, self.b2, self.eps, self.wd, self.freq = lr, b1, b2, eps, wd, freq
        self.m = np.zeros(shape)  # first moment, original basis
        self.v = np.zeros(shape)  # second moment, rotated basis
        self.t = 0
        self.matrix = len(shape) == 2
        self.left = self.matrix and shape[0] <= max_dim
        self.right = self.matrix and shape[1] <= max_dim
        self.L = np.zeros((shape[0], shape[0])) if self.left else None
        self.R = np.zeros((shape[1], shape[1])) if self.right else None
        self.QL = self.QR = None
        self.built = False

    def to_eigenbasis(self, x):
        if self.QL is not None:
            x = self.QL.T @ x
        if self.QR is not None:
            x = x @ self.QR
        return x

    def from_eigenbasis(self, x):
        if self.QL is not None:
            x = self.QL @ x
        if self.QR is not None:
            x = x @ self.QR.T
        return x

    def accumulate(self, G):
        if self.left:
            self.L = self.b2 * self.L + (1 - self.b2) * G @ G.T
        if self.right:
            self.R = self.b2 * self.R + (1 - self.b2) * G.T @ G

    @staticmethod
    def eigenvectors(P):
        w, Q = np.linalg.eigh(P)
        return Q[:, ::-1]  # largest eigenvalue first

    def power_qr(self, P, Q, axis):
        estimate = np.array([Q[:, j] @ P @ Q[:, j] for j in range(Q.shape[1])])
        order = np.argsort(-estimate)
        self.v = np.take(self.v, order, axis=axis)
        Qnew, _ = np.linalg.qr(P @ Q[:, order])
        return Qnew

    def step(self, p, G):
        if not self.built:  # the first gradient builds L, R and their eigenbases only
            self.built = True
            self.accumulate(G)
            if self.left:
                self.QL = self.eigenvectors(self.L)
            if self.right:
                self.QR = self.eigenvectors(self.R)
            return p
        self.t += 1
        Gr = self.to_eigenbasis(G)
        self.m = self.b1 * self.m + (1 - self.b1) * G
        self.v = self.b2 * self.v + (1 - self.b2) * Gr**2
        N = self.to_eigenbasis(self.m) / (np.sqrt(self.v) + self.eps)
        size = self.lr * np.sqrt(1 - self.b2**self.t) / (1 - self.b1**self.t)
        p = p - size * self.from_eigenbasis(N)
        p = p - self.lr * self.wd * p
        self.accumulate(G)
        if self.t % self.freq == 0:
            if self.left:
                self.QL = self.power_qr(self.L, self.QL, 0)
            if self.right:
                self.QR = self.power_qr(self.R, self.QR, 1)
        return p


def _gradient_sequence(rng, p, steps):
    """Gradients of a fixed nonlinear loss at the iterates (a sequence that depends on the
    path, so that a wrong update shows): ``A`` and ``c`` fixed."""
    A = rng.normal(size=(p["w"].shape[0], p["w"].shape[0]))
    c = rng.normal(size=p["w"].shape)
    noise = [rng.normal(size=p["w"].shape) for _ in range(steps)], [
        rng.normal(size=p["b"].shape) for _ in range(steps)]
    return A, c, noise


def _grads(A, c, noise, k, p):
    w, b = p["w"], p["b"]
    gw = A.T @ (A @ w - c) + np.tanh(w) * 0.3 + 0.1 * noise[0][k] + 0.05 * b[None, :]
    gb = b * (1 + b**2) + 0.1 * noise[1][k]
    return {"w": gw, "b": gb}


@pytest.mark.parametrize(("x64", "tol"), [(True, 1e-10), (False, 2e-5)])
@pytest.mark.parametrize("max_dim", [10_000, 3])
def test_matches_reference_update(x64, tol, max_dim):
    rng = np.random.default_rng(0)
    p0 = {"w": rng.normal(size=(3, 4)), "b": rng.normal(size=(4,))}
    steps, cfg = 25, dict(lr=0.02, b1=0.9, b2=0.95, eps=1e-8, wd=0.01, freq=3)
    A, c, noise = _gradient_sequence(rng, p0, steps)

    refs = {k: ReferenceSOAP(v.shape, **cfg, max_dim=max_dim) for k, v in p0.items()}
    p_ref = dict(p0)
    ref_path = []
    for k in range(steps):
        g = _grads(A, c, noise, k, p_ref)
        p_ref = {n: refs[n].step(p_ref[n], g[n]) for n in p_ref}
        ref_path.append(p_ref)

    with jax.enable_x64(x64):
        dt = jnp.float64 if x64 else jnp.float32
        tx = soap(cfg["lr"], b1=cfg["b1"], b2=cfg["b2"], eps=cfg["eps"],
                  weight_decay=cfg["wd"], precondition_frequency=cfg["freq"],
                  max_precond_dim=max_dim)
        p = jax.tree.map(lambda x: jnp.asarray(x, dt), p0)
        state = tx.init(p)
        update = jax.jit(tx.update)
        for k in range(steps):
            g = jax.tree.map(lambda x: jnp.asarray(x, dt),
                             _grads(A, c, noise, k, jax.tree.map(np.asarray, p)))
            u, state = update(g, state, p)
            p = optax.apply_updates(p, u)
            for n in p:
                got, want = np.asarray(p[n], np.float64), ref_path[k][n]
                np.testing.assert_allclose(got, want, rtol=0, atol=tol * max(1, np.abs(want).max()),
                                           err_msg=f"step {k}, leaf {n}")
    assert np.abs(ref_path[-1]["w"] - p0["w"]).max() > 0.05  # the iterates moved


def test_first_call_only_builds_the_preconditioner():
    tx = soap(1e-2)
    p = {"w": jnp.ones((3, 2)), "b": jnp.ones((2,))}
    g = {"w": jnp.arange(6.0).reshape(3, 2), "b": jnp.ones((2,))}
    u, state = tx.update(g, tx.init(p), p)
    assert all(float(jnp.abs(x).max()) == 0 for x in jax.tree.leaves(u))
    q_left, q_right = state.q[1]  # leaves in sorted-key order: b, w
    assert state.q[0] == (None,)  # a bias is not rotated
    np.testing.assert_allclose(q_left.T @ q_left, np.eye(3), atol=1e-6)
    np.testing.assert_allclose(q_right.T @ q_right, np.eye(2), atol=1e-6)


def _quadratic(key, n=8, cond=1e4):
    """f(W) = ½ tr((W - W*)ᵀ A (W - W*) B) with A, B ill-conditioned and rotated: a
    Kronecker-factored curvature, where Adam's diagonal scaling cannot help."""
    k1, k2, k3 = jax.random.split(key, 3)
    U = jnp.linalg.qr(jax.random.normal(k1, (n, n)))[0]
    V = jnp.linalg.qr(jax.random.normal(k2, (n, n)))[0]
    A = U @ jnp.diag(jnp.logspace(0, jnp.log10(cond), n)) @ U.T
    B = V @ jnp.diag(jnp.logspace(0, 1, n)) @ V.T
    target = jax.random.normal(k3, (n, n))

    def f(p):
        d = p["w"] - target
        return 0.5 * jnp.trace(d.T @ A @ d @ B) / cond

    return f


def _best(make, f, p, steps, rates):
    """The lowest ``f`` after ``steps`` steps of ``make(lr)`` over the learning ``rates``."""

    @jax.jit
    def run(lr):
        tx = make(lr)

        def body(_, carry):
            q, s = carry
            u, s = tx.update(jax.grad(f)(q), s, q)
            return optax.apply_updates(q, u), s

        return f(jax.lax.fori_loop(0, steps, body, (p, tx.init(p)))[0])

    return min(float(run(jnp.float32(lr))) for lr in rates)


def test_faster_than_adam_on_ill_conditioned_quadratic():
    f = _quadratic(jax.random.key(1))
    p = {"w": jnp.zeros((8, 8))}
    start = float(f(p))
    rates = (3e-3, 1e-2, 3e-2, 1e-1)
    best_adam = _best(lambda lr: optax.adam(lr, b1=0.95, b2=0.95), f, p, 300, rates)
    best_soap = _best(lambda lr: soap(lr, precondition_frequency=10), f, p, 300, rates)
    # measured: start 18, Adam 7e-4 (lr 0.1), SOAP 2.5e-5 (lr 0.03)
    assert best_soap < start * 1e-5
    assert best_soap < 0.1 * best_adam, (start, best_adam, best_soap)


def test_soap_stage_trains_a_pinn():
    # -u'' = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0: u = sin(pi x)
    x = pinn.coords("x")
    u = pinn.field("u")
    problem = pinn.Problem(
        domain=pinn.Interval(0, 1), coords=(x,),
        equations={"poisson": -pinn.D(u, x, 2) - pinn.pi**2 * pinn.sin(pinn.pi * x)},
        conditions={"ends": pinn.Dirichlet(u, 0, on="boundary")},
        exact={u: pinn.sin(pinn.pi * x)}, name="poisson1d",
    )
    training = pinn.Training(
        stages=[pinn.Stage(pinn.SOAP(lr=3e-3), 600)],
        points=pinn.Points(interior=64, boundary=8, resample_every=0), chunk=300)
    sol = pinn.solve(problem, pinn.MLP(width=16, depth=2), training, progress=False)
    err = sol.metrics["rel_l2"]["u"]
    assert err < 2e-3, sol.metrics  # measured 5.7e-4 (Adam(lr=3e-3): 4.5e-4)


def test_soap_stage_from_yaml():
    from pinn.config import ConfigError, load

    text = HEAT_LIKE.replace("STAGES", "[{soap: {lr: 1.0e-3, precondition_frequency: 5}, "
                                       "steps: 100}, {soap: {}, steps: 10}]")
    stages = load("p.yaml", text=text).training().stages
    assert stages[0].optimizer == pinn.SOAP(lr=1e-3, precondition_frequency=5,
                                            decay="exponential")
    assert stages[1].optimizer.b1 == 0.95 and stages[1].optimizer.lr == 3e-3
    with pytest.raises(ConfigError, match="precondition_frequency"):
        load("p.yaml", text=HEAT_LIKE.replace(
            "STAGES", "[{soap: {precondition_frequency: 0}, steps: 10}]"))


HEAT_LIKE = """\
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
