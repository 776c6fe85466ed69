"""Data files of the DeepXDE problems that need them (run from anywhere; seconds).

    python benchmarks/deepxde/make_data.py

- ``schrodinger_ref.npz``: the nonlinear Schrodinger equation of DeepXDE's
  ``Schrodinger.ipynb`` (i h_t + h_xx/2 + |h|^2 h = 0, periodic on [-5, 5], h(x, 0) =
  2 sech(x), t in [0, pi/2]) by Strang split-step Fourier (400 modes, 40 000 steps; the
  cubic step is exact), u = Re h and v = Im h at 201 x 51 points (x step 0.05, t step
  pi/100). DeepXDE scores against Raissi's NLS.mat, which is not here.
- ``lotka_volterra_ref.npz``: DeepXDE's ``Lotka_Volterra.py`` system on t in [0, 1]
  (scipy's DOP853, rtol 1e-12), r and p at 201 times.
- ``diffusion_1d_inverse_obs.csv`` and ``brinkman_forchheimer_inverse_obs.csv``: the
  observations of DeepXDE's inverse examples at its own points (10 points at t = 1; 5
  points in (0, 1)), exact values; ``diffusion_1d_inverse_ref.npz`` and
  ``brinkman_forchheimer_inverse_ref.npz``: the exact solutions at grid points, the
  reference the runs are scored against. (An ``exact:`` section cannot be used there:
  ``pinn validate`` checks the exact solution against the equations with the learnable
  parameter at its starting value, and refuses the file.)

Each check printed compares with a finer or differently stepped solve.
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _save(name: str, **arrays) -> None:
    path = os.path.join(HERE, name)
    np.savez_compressed(path, **arrays)
    print(f"wrote {name} ({os.path.getsize(path) / 1024:.0f} KiB)")


# ---------------------------------------------------------------------------
# Schrodinger


def nls(n_modes: int, n_steps: int, t_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """h at ``t_out`` on the grid x_j = -5 + 10 j / n_modes (Strang splitting)."""
    x = -5.0 + 10.0 * np.arange(n_modes) / n_modes
    k = 2 * np.pi * np.fft.fftfreq(n_modes, d=10.0 / n_modes)
    h = (2.0 / np.cosh(x)).astype(np.complex128)
    t_end = float(t_out[-1])
    dt = t_end / n_steps
    lin = np.exp(-0.5j * k**2 * dt)
    out = np.empty((len(t_out), n_modes), dtype=np.complex128)
    stride = n_steps // (len(t_out) - 1)
    assert stride * (len(t_out) - 1) == n_steps
    out[0] = h
    for step in range(1, n_steps + 1):
        h = h * np.exp(0.5j * dt * np.abs(h) ** 2)
        h = np.fft.ifft(lin * np.fft.fft(h))
        h = h * np.exp(0.5j * dt * np.abs(h) ** 2)
        if step % stride == 0:
            out[step // stride] = h
    return x, out


def schrodinger() -> None:
    t = np.linspace(0, np.pi / 2, 51)
    x, h = nls(400, 40_000, t)
    _, h_check = nls(800, 20_000, t)
    rel = np.linalg.norm(h_check[:, ::2] - h) / np.linalg.norm(h)
    print(f"schrodinger: 800 modes / 20 000 steps differ by {rel:.1e} (rel. L2)")
    xs = x[::2]                                   # step 0.05, -5 ... 4.95
    hs = h[:, ::2]
    xs = np.append(xs, 5.0)                       # and x = 5, the periodic copy of -5
    hs = np.concatenate([hs, hs[:, :1]], axis=1)
    X, T = np.meshgrid(xs, t, indexing="ij")
    H = hs.T
    points = np.stack([X.ravel(), T.ravel()], axis=1)
    _save("schrodinger_ref.npz", points=points, u=H.real.ravel(), v=H.imag.ravel())


# ---------------------------------------------------------------------------
# Lotka-Volterra


def lotka_volterra() -> None:
    from scipy.integrate import solve_ivp

    ub, rb = 200.0, 20.0

    def rhs(_, y):
        r, p = y
        return [rb / ub * (2.0 * ub * r - 0.04 * ub * r * ub * p),
                rb / ub * (0.02 * r * ub * p * ub - 1.06 * p * ub)]

    t = np.linspace(0, 1, 201)
    sol = solve_ivp(rhs, (0, 1), [100 / ub, 15 / ub], method="DOP853", t_eval=t,
                    rtol=1e-12, atol=1e-14)
    check = solve_ivp(rhs, (0, 1), [100 / ub, 15 / ub], method="Radau", t_eval=t,
                      rtol=1e-11, atol=1e-13)
    rel = np.linalg.norm(check.y - sol.y) / np.linalg.norm(sol.y)
    print(f"lotka_volterra: Radau differs by {rel:.1e} (rel. L2)")
    _save("lotka_volterra_ref.npz", points=t[:, None], r=sol.y[0], p=sol.y[1])


# ---------------------------------------------------------------------------
# the inverse problems' observations and exact references


def diffusion_1d_inverse() -> None:
    def exact(x, t):
        return np.sin(np.pi * x) * np.exp(-t)

    xo = np.linspace(-1, 1, 10)                   # DeepXDE's observe_x: 10 points at t = 1
    with open(os.path.join(HERE, "diffusion_1d_inverse_obs.csv"), "w") as fh:
        fh.write("x,t,u\n")
        for xv in xo:
            fh.write(f"{xv:.17g},1,{exact(xv, 1.0):.17g}\n")
    print("wrote diffusion_1d_inverse_obs.csv")
    X, T = np.meshgrid(np.linspace(-1, 1, 101), np.linspace(0, 1, 51), indexing="ij")
    _save("diffusion_1d_inverse_ref.npz", points=np.stack([X.ravel(), T.ravel()], axis=1),
          u=exact(X, T).ravel())


def brinkman_forchheimer_inverse() -> None:
    g, nu, eps, H = 1.0, 1e-3, 0.4, 1.0
    r = np.sqrt(nu * eps / (1e-3 * 1e-3))         # nu_e = K = 1e-3 (the true values)

    def exact(x):
        return g * 1e-3 / nu * (1 - np.cosh(r * (x - H / 2)) / np.cosh(r * H / 2))

    num = 5
    xo = np.linspace(1 / (num + 1), 1, num, endpoint=False)   # DeepXDE's gen_traindata(5)
    with open(os.path.join(HERE, "brinkman_forchheimer_inverse_obs.csv"), "w") as fh:
        fh.write("x,u\n")
        for xv in xo:
            fh.write(f"{xv:.17g},{exact(xv):.17g}\n")
    print("wrote brinkman_forchheimer_inverse_obs.csv")
    x = np.linspace(0, 1, 501)
    _save("brinkman_forchheimer_inverse_ref.npz", points=x[:, None], u=exact(x))


if __name__ == "__main__":
    schrodinger()
    lotka_volterra()
    diffusion_1d_inverse()
    brinkman_forchheimer_inverse()
