"""Write the data files of the PINNacle problems whose data the public snapshot lacks.

PINNacle's ``heat_2d_coef_256.dat`` (Heat2d-VC), ``darcy_2d_coef_256.dat`` (Wave2d-CG) and
``burgers2d_init_{u,v}_0.dat`` (Burgers2d-C) are not in the public repository (their blobs
are absent, see ``../shared/pinnacle/README.md``). The two coefficient tables are
regenerated exactly; the Burgers initial values are stand-ins of the same kind, seeded and
described here (scores on them are not PINNacle's numbers):

* ``heat2d_vc_coef.npz`` and ``wave2d_cg_coef.npz`` (``points[N, 2]``, ``values[N]``, a
  256 x 256 tensor grid): PINNacle's own tables, made by its generator
  (``data/generate_functions.py``: ``gaussian_random_field(alpha=4, size=256)`` after
  ``seed_everything(20220722)``, then ``exp(g)`` for heat and ``where(g > 0, 12, 1)`` for
  Darcy/wave), re-implemented in :func:`heat_coefficient` and :func:`wave_coefficient`.
  The public repository keeps the images that generator saved beside the tables
  (``data/heat_2d_coef_256.png``, ``data/darcy_2d_coef_256.png``, ``plt.imsave`` of the
  arrays): the arrays made here, saved the same way, match them pixel for pixel (all
  65 536 pixels of each; checked 2026-12-01 with matplotlib's default colormap), and the
  FEM solution of Heat2d-VC with this table matches PINNacle's COMSOL reference
  (``heat_darcy.dat``; see heat2d_vc.yaml). The wave table is placed on [-1, 1]^2
  (Wave2d-CG reads the [0, 1]^2 table at ``(x + 1)/2``).
* ``burgers2d_init_u.dat``, ``burgers2d_init_v.dat``: columns ``x y u`` (``x y v``) on a
  65 x 65 grid of [0, 4]^2: a random periodic field of Fourier modes up to 2 waves per
  period, amplitude about 1.

* ``*_ref.npz`` (``python make_data.py refs``): PINNacle's reference tables
  (``../shared/pinnacle/ref/*.dat``, or ``$PINNACLE_REF``) converted to NPZ
  (``points[N, d]`` and one array per field), so that a clean clone holds them: Burgers1d-C
  (``burgers1d.dat``), Poisson2d-CG (``poisson_boltzmann2d.dat``), NS2d-C
  (``lid_driven_a4.dat``), NS2d-CG (``ns_0_obstacle.dat``) whole, and Heat2d-LT
  (``heat_longtime.dat``: 192 points x 501 time levels) at every 5th time level (t = 0, 1,
  ..., 100: 19 392 of its 96 192 points, to stay under 1 MB).
* ``heat2d_vc_ref.npz`` (``python make_data.py heat2d_vc``, ~6 min): our FEM solution of
  Heat2d-VC's equation with PINNacle's coefficient (P2, 96 x 96 cells, Crank-Nicolson
  dt = 0.005; it differs from the 48-cell, dt = 0.01 solution by 6.9e-3 relative L2, so
  its own error is about 1e-3), at a 41 x 41 grid x 26 times (t = 0, 0.2, ..., 5).
  PINNacle's COMSOL table (``heat_darcy.dat``) does not solve that equation with that
  coefficient (see heat2d_vc.yaml), so it is not used.
* ``poisson3d_cg_ref.npz`` (``python make_data.py poisson3d_cg``, ~6 min): our FEM solution
  of Poisson3d-CG (P2 on pinn.fem's mesh of the cube minus four balls, h = 0.05) at the
  27 791 points of the 31^3 grid inside the domain; good to about 1e-2 (relative L2, see
  :func:`poisson3d_cg_reference`).
* ``wave2d_ms_ref.npz``: a reference for Wave2d-MS that solves its PDE (PINNacle's closed
  form does not: see wave2d_ms.yaml): u = U + w with U PINNacle's closed form and w the
  sine series (400 modes per axis) of the forced wave equation w_tt = w_xx + 2 w_yy +
  2 pi^2 U with zero data, each mode in closed form; at 20 000 seeded random points.
* ``gs_ref.npz``: a reference for GS, whose table (``grayscott.dat``) is not public: ETDRK4
  with 512 x 512 Fourier modes on the periodic [-1, 1]^2, dt = 0.25 (dt = 0.125 changes it
  by 2e-7; 256 x 256 modes by 0.4 % in u and 7 % in v, and no finer check was run, so it
  is good to a few per cent in v at best), kept at 41 x 41 nodes x 21 times (t = 0, 10,
  ..., 200); the fields stay at u = 1, v = 0 near the walls (checked), where PINNacle has
  no boundary condition.
* ``burgers2d_c_ref.npz`` (``python make_data.py burgers2d_c``, ~10 min): a reference for
  Burgers2d-C on the stand-in initial values: second-order finite volumes (MUSCL, MC
  slopes, path-conservative Rusanov, SSP-RK2, float32) on 1024 x 1024 cells from the
  cell averages of the stand-ins' closed form, at 41 x 41 x 11 points (t = 0, 0.1, ...,
  1). Shocks (width ~1e-3) form by t ~ 0.3 and are not resolved: successive grids (128,
  256, 512, 1024) differ by 3.3e-2, 2.2e-2, 1.4e-2 (rel. L2; observed order 0.6-0.7), so
  it is good to about 2-3e-2, not better (to ~4e-5 before the shocks); see
  :func:`burgers2d_c_reference`.
* ``pinv_data.csv``, ``hinv_data.csv``: PInv's and HInv's noisy observations of u, as
  PINNacle makes them (the 50 x 50 grid of [0, 1]^2, and ``heatinv_points.dat``'s 2500
  points; u_ref plus Gaussian noise of standard deviation 0.1, seeded).

    python benchmarks/pinnacle/make_data.py        # the stand-ins and the generated files
    python benchmarks/pinnacle/make_data.py refs   # also convert PINNacle's tables
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PINNACLE_REF = Path(os.environ.get("PINNACLE_REF", HERE.parents[2] / "shared" / "pinnacle" / "ref"))


def _pinnacle_grf(alpha: float, size: int) -> np.ndarray:
    """PINNacle's ``gaussian_random_field`` (``src/utils/random.py``): a power-law spectrum
    ``|k|^(-alpha/2)`` drawn from NumPy's legacy global generator, normalised to mean 0 and
    standard deviation 1."""
    k = np.fft.fftshift(np.mgrid[:size, :size] - int((size + 1) / 2))
    amplitude = np.power(k[0] ** 2 + k[1] ** 2 + 1e-10, -alpha / 4.0)
    amplitude[0, 0] = 0
    noise = np.random.normal(size=(size, size)) + 1j * np.random.normal(size=(size, size))
    g = np.fft.ifft2(noise * amplitude).real
    g = g - np.mean(g)
    return g / np.std(g)


#: the seed of PINNacle's ``data/generate_functions.py`` (``seed_everything(20220722)``)
PINNACLE_SEED = 20220722


def _pinnacle_table(kind: str, n: int = 256) -> np.ndarray:
    # Each generator ran first after seeding: np.random.seed is global state, set here
    # and restored after, so calling this does not disturb anyone's generator.
    state = np.random.get_state()
    try:
        np.random.seed(PINNACLE_SEED)
        g = _pinnacle_grf(4.0, n)
    finally:
        np.random.set_state(state)
    return np.where(g > 0, 12.0, 1.0) if kind == "darcy" else np.exp(g)


def _grid_table(values: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    # PINNacle's layout: np.meshgrid(x, y) ('xy' indexing), value[i, j] at (x_j, y_i)
    xs = np.linspace(lo, hi, values.shape[0])
    X, Y = np.meshgrid(xs, xs)
    return np.c_[X.ravel(), Y.ravel()], values.ravel()


def heat_coefficient(n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """PINNacle's ``heat_2d_coef_256.dat``: ``exp(g)`` of its Gaussian random field on a
    ``n x n`` grid of [0, 1]^2 (values 0.060 ... 14.2)."""
    return _grid_table(_pinnacle_table("heat", n), 0.0, 1.0)


def wave_coefficient(n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """PINNacle's ``darcy_2d_coef_256.dat`` (12 where its field is positive, 1 elsewhere),
    placed on [-1, 1]^2: Wave2d-CG reads the [0, 1]^2 table at ``(x + 1)/2``."""
    return _grid_table(_pinnacle_table("darcy", n), -1.0, 1.0)


def _burgers_modes(seed: int = 1) -> dict[str, list[tuple[int, int, float, float]]]:
    """The stand-in Burgers fields' Fourier modes: ``(p, q, a, b)`` per field, the field
    being the sum of ``a cos(phi) + b sin(phi)``, ``phi = 2 pi (p x + q y) / length``,
    p, q = 0, 1, 2 (drawn in this order; a, b standard normal over 1 + p + q)."""
    rng = np.random.default_rng(seed)
    return {name: [(p, q, *(rng.standard_normal(2) / (1 + p + q)))
                   for p in range(3) for q in range(3)] for name in ("u", "v")}


def _burgers_sum(modes, X, Y, length: float, average: float | None = None) -> np.ndarray:
    # the Fourier sum at (X, Y); with ``average`` = h, its mean over the h x h cells
    # centred there (each mode times sinc(k_x h / 2) sinc(k_y h / 2))
    f = np.zeros_like(X)
    for p, q, a, b in modes:
        phase = 2 * np.pi * (p * X + q * Y) / length
        if average is None:
            f += a * np.cos(phase) + b * np.sin(phase)
        else:
            h = average / length
            f += np.sinc(p * h) * np.sinc(q * h) * (a * np.cos(phase) + b * np.sin(phase))
    return f


def burgers_initial(n: int = 65, length: float = 4.0, seed: int = 1) -> dict[str, np.ndarray]:
    xs = np.linspace(0, length, n)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    out = {"x": X.ravel(), "y": Y.ravel()}
    for name, modes in _burgers_modes(seed).items():
        f = _burgers_sum(modes, X, Y, length)
        out[name] = (f - f.mean()).ravel()
    return out


def burgers_initial_closed_form(x, y, length: float = 4.0, seed: int = 1,
                                average: float | None = None) -> dict[str, np.ndarray]:
    """The function whose values at the 65 x 65 nodes the stand-in files hold: the Fourier
    sum of :func:`_burgers_modes` minus the same constant :func:`burgers_initial`
    subtracts (the sum's mean over those 65 x 65 nodes, which count x = 0 and x = 4
    both; so its mean over the square is not exactly 0, but 7.2e-4 (u) and 3.3e-3 (v)).
    ``average`` = h: the means over the h x h cells centred at (x, y) instead. The PINN
    is given the files' bilinear interpolant, which differs from this by 2.2e-3 (rel. L2
    over the square, u and v together; at most 4.9e-3 in u, 1.0e-2 in v)."""
    nodes = burgers_initial(65, length, seed)
    xs = np.linspace(0, length, 65)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    out = {}
    for name, modes in _burgers_modes(seed).items():
        shift = _burgers_sum(modes, X, Y, length).ravel() - nodes[name]
        out[name] = _burgers_sum(modes, np.asarray(x, float), np.asarray(y, float), length,
                                 average) - shift.mean()
    return out


#: PINNacle's tables converted whole (or thinned): file -> (npz, coords, fields, time step)
REFERENCES = {
    "burgers1d.dat": ("burgers1d_c_ref.npz", ["x", "t"], ["u"], 1),
    "poisson_boltzmann2d.dat": ("poisson2d_cg_ref.npz", ["x", "y"], ["u"], 1),
    "lid_driven_a4.dat": ("ns2d_c_ref.npz", ["x", "y"], ["u", "v", "p"], 1),
    "ns_0_obstacle.dat": ("ns2d_cg_ref.npz", ["x", "y"], ["u", "v", "p"], 1),
    "heat_longtime.dat": ("heat2d_lt_ref.npz", ["x", "y", "t"], ["u"], 5),
}


def convert_references(src: Path = PINNACLE_REF) -> list[str]:
    """PINNacle's reference tables as NPZ files beside this script (see the docstring)."""
    from pinn.reference.file import FileReference

    done = []
    for name, (out, coords, fields, every) in REFERENCES.items():
        ref = FileReference.from_table(src / name, coords, fields)
        points, values = ref.points, ref.values
        if every > 1:  # keep every `every`-th time level
            times = np.unique(points[:, -1])
            keep = np.isin(points[:, -1], times[::every])
            points, values = points[keep], {k: v[keep] for k, v in values.items()}
        np.savez_compressed(HERE / out, points=points.astype(np.float32),
                            **{k: v.astype(np.float32) for k, v in values.items()})
        done.append(f"{out} ({len(points)} points from {name})")
    return done


def wave2d_ms_closed_form(x, y, t):
    """PINNacle's Wave2d-MS (Wave2D_LongTime) closed form U (which misses its PDE)."""
    return (np.sin(np.pi * x) * np.sinh(np.pi * y) * np.cos(np.pi * t)
            + np.sinh(3 * np.pi * x) * np.sin(2 * np.pi * y) * np.cos(np.pi * t))


def wave2d_ms_reference(points: np.ndarray, modes: int = 400) -> np.ndarray:
    """The solution of u_tt = u_xx + 2 u_yy on [0, 1]^2 x [0, 100] with u = U on the walls
    and u = U, u_t = 0 at t = 0 (U: :func:`wave2d_ms_closed_form`). U_tt - U_xx - 2 U_yy =
    -2 pi^2 U, so u = U + w with w_tt - w_xx - 2 w_yy = 2 pi^2 U and zero data; in the
    sine basis each mode (m, n) of U is c_mn cos(pi t), and w_mn = 2 pi^2 c_mn (cos(pi t)
    - cos(omega t)) / (omega^2 - pi^2), omega^2 = pi^2 (m^2 + 2 n^2). U's modes: sinh(a s)
    = sum_j 2 j pi (-1)^(j+1) sinh(a) / (a^2 + j^2 pi^2) sin(j pi s)."""
    x, y, t = points[:, 0], points[:, 1], points[:, 2]
    j = np.arange(1, modes + 1)

    def sinh_modes(a):
        return 2 * j * np.pi * (-1.0) ** (j + 1) * np.sinh(a) / (a**2 + (j * np.pi) ** 2)

    pi2 = np.pi**2

    def series(m, n, coef, shape):
        om2 = pi2 * (m**2 + 2 * n**2)
        amp = 2 * pi2 * coef / (om2 - pi2)
        return np.sum(amp * (np.cos(np.pi * t)[:, None] - np.cos(np.sqrt(om2) * t[:, None]))
                      * shape, axis=1)

    # sin(pi x) sinh(pi y): modes (1, j); sinh(3 pi x) sin(2 pi y): modes (j, 2)
    w = (np.sin(np.pi * x) * series(1, j, sinh_modes(np.pi), np.sin(np.pi * np.outer(y, j)))
         + np.sin(2 * np.pi * y) * series(j, 2, sinh_modes(3 * np.pi),
                                          np.sin(np.pi * np.outer(x, j))))
    return wave2d_ms_closed_form(x, y, t) + w


def gs_reference(n: int = 512, dt: float = 0.25, t_end: float = 200.0, keep: int = 41,
                 keep_t: int = 21) -> dict[str, np.ndarray]:
    """Gray-Scott as in gs.yaml (b = 0.04, d = 0.1, eps = (1e-5, 5e-6) on [-1, 1]^2), by
    ETDRK4 with ``n`` x ``n`` Fourier modes, periodic (PINNacle gives no boundary condition;
    the fields stay at u = 1, v = 0 far from the pattern, which the check in main() asserts
    at the walls); kept at ``keep`` x ``keep`` nodes and ``keep_t`` times. The stepper is
    pinn.reference.spectral.etdrk4 on the two fields' modes laid out as one vector."""
    from pinn.reference.spectral import etdrk4

    b, d, eps = 0.04, 0.1, (1e-5, 5e-6)
    xs = -1 + 2 * np.arange(n) / n
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    kx = np.pi * np.fft.fftfreq(n, d=1.0 / n)               # period 2
    ky = np.pi * np.fft.rfftfreq(n, d=1.0 / n)
    k2 = kx[:, None] ** 2 + ky[None, :] ** 2
    shape = (2, *k2.shape)
    L = np.stack([-e * k2 for e in eps]).ravel()            # diagonal: one entry per mode

    def nl(w):
        w = w.reshape(shape)
        u, v = np.fft.irfft2(w[0], (n, n)), np.fft.irfft2(w[1], (n, n))
        uv2 = u * v * v
        return np.stack([np.fft.rfft2(b * (1 - u) - uv2), np.fft.rfft2(uv2 - d * v)]).ravel()

    w0 = np.stack([np.fft.rfft2(1 - np.exp(-80 * ((X + 0.05) ** 2 + (Y + 0.02) ** 2))),
                   np.fft.rfft2(np.exp(-80 * ((X - 0.05) ** 2 + (Y - 0.02) ** 2)))])
    steps = int(round(t_end / dt))
    _, states = etdrk4(w0.ravel(), L, nl, [(dt, steps, steps // (keep_t - 1))], m=32)
    frames = [f.reshape(shape) for f in states]
    idx = np.linspace(0, n, keep).round().astype(int) % n      # x = -1 ... 1 (1 is -1)
    gx = np.linspace(-1, 1, keep)
    ts = np.linspace(0, t_end, keep_t)
    P, U, V = [], [], []
    for t, f in zip(ts, frames, strict=True):
        u, v = np.fft.irfft2(f[0], (n, n)), np.fft.irfft2(f[1], (n, n))
        Xk, Yk = np.meshgrid(gx, gx, indexing="ij")
        P.append(np.c_[Xk.ravel(), Yk.ravel(), np.full(Xk.size, t)])
        U.append(u[np.ix_(idx, idx)].ravel())
        V.append(v[np.ix_(idx, idx)].ravel())
    return {"points": np.concatenate(P), "u": np.concatenate(U), "v": np.concatenate(V)}


def inverse_data(seed: int = 0) -> dict[str, np.ndarray]:
    """PInv's and HInv's observations: u_ref plus N(0, 0.1) noise, at PINNacle's points."""
    rng = np.random.default_rng(seed)
    g = np.linspace(0, 1, 50)
    X, Y = np.meshgrid(g, g)
    x, y = X.ravel(), Y.ravel()
    out = {"pinv": np.c_[x, y, np.sin(np.pi * x) * np.sin(np.pi * y) + rng.normal(0, 0.1, x.size)]}
    pts_file = PINNACLE_REF / "heatinv_points.dat"
    if pts_file.exists():
        p = np.loadtxt(pts_file)
        u = np.exp(-p[:, 2]) * np.sin(np.pi * p[:, 0]) * np.sin(np.pi * p[:, 1])
        out["hinv"] = np.c_[p, u + rng.normal(0, 0.1, len(p))]
    return out


def heat2d_vc_reference(cells: int = 96, dt: float = 0.005) -> dict[str, np.ndarray]:
    """The FEM reference of ``heat2d_vc.yaml`` (see the module docstring)."""
    from pinn import fem
    from pinn.config import load

    problem = load(str(HERE / "heat2d_vc.yaml"), ["reference=null"]).problem
    sol = fem.solve(problem, cells=cells, element="P2", dt=dt)
    xs, ts = np.linspace(0, 1, 41), np.linspace(0, 5, 26)
    X, Y, T = np.meshgrid(xs, xs, ts, indexing="ij")
    points = np.c_[X.ravel(), Y.ravel(), T.ravel()]
    return {"points": points, "u": sol.evaluate(points)["u"]}


def wave2d_cg_reference(cells: int = 128, steps: int = 20000, keep: int = 101,
                        keep_t: int = 11) -> dict[str, np.ndarray]:
    """The FEM reference of ``wave2d_cg.yaml`` (``python make_data.py wave2d``, about 20 min
    on one core): P2 on ``cells`` x ``cells`` squares (2 triangles each; 66 049 dofs),
    Newmark's average acceleration (energy-conserving, O(dt^2)) with ``steps`` steps over
    [0, 5], c from wave2d_cg_coef.npz at the quadrature points; kept at ``keep`` x ``keep``
    nodes of [-1, 1]^2 and ``keep_t`` times 0, 0.5, ..., 5 (the stored steps themselves).
    Checked by refinement (2026-12-01, on the 101 x 101 x 26 grid): 64 cells (7475 steps)
    differ from it by 4.9e-3 (rel. L2), 32 cells by 1.5e-2 (an observed order of 1.7:
    c jumps from 1 to 12 within one table cell); halving the step on 32 cells changes the
    result by 1.7e-3, about 4e-5 at this step. Extrapolating at that order, it is within
    about 2e-3 of the PDE's solution (rel. L2; the 64-cell difference, 4.9e-3, is the
    bound if the convergence stays monotone)."""
    from pinn import fem
    from pinn.config import load

    problem = load(str(HERE / "wave2d_cg.yaml"), ["reference=null"]).problem
    every = steps // (keep_t - 1)
    if every * (keep_t - 1) != steps:
        raise ValueError(f"steps={steps} must be a multiple of keep_t - 1 = {keep_t - 1}")
    sol = fem.solve(problem, cells=cells, element="P2", steps=steps, store_every=every)
    xs, ts = np.linspace(-1, 1, keep), np.linspace(0, 5, keep_t)
    if not np.allclose(sol.times, ts):
        raise RuntimeError("wave2d_cg_reference: the stored steps are not the kept times")
    X, Y, T = np.meshgrid(xs, xs, ts, indexing="ij")
    points = np.c_[X.ravel(), Y.ravel(), T.ravel()]
    return {"points": points, "u": sol.evaluate(points)["u"]}


def ns2d_lt_solution(cells: int = 64, dt: float = 0.01):
    """The FEM solution of ``ns2d_lt.yaml``: Taylor-Hood P2-P1 on a ``cells x cells / 2``
    grid of squares cut into triangles, Crank-Nicolson with continuity at each new level
    and the pressure fully implicit (pinn.fem.constraints), Newton per step. The YAML's
    initial p = 0 is not used (the pressure at t = 0 is the flow's, extrapolated from the
    first steps). 64 cells, dt = 0.01: 18 915 dofs, 500 steps, 6.3 min on the shared
    2-core machine under load (2026-12-01)."""
    import warnings

    from pinn import fem
    from pinn.config import load

    problem = load(str(HERE / "ns2d_lt.yaml"), ["reference=null"]).problem
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*initial value of p is not used")
        return fem.solve(problem, cells=cells, element="P2", dt=dt)


def ns2d_lt_reference(cells: int = 64, dt: float = 0.01, keep: tuple[int, int] = (81, 41),
                      keep_t: int = 21, solution=None) -> dict[str, np.ndarray]:
    """NS2d-LT's reference: :func:`ns2d_lt_solution` at a ``keep`` grid of [0, 2] x [0, 1]
    and ``keep_t`` times 0 ... 5 (81 x 41 x 21: t = 0, 0.25, ..., 5, under 1 MB in
    float32). ``solution``: an FEMSolution already computed. Checked by refinement
    (2026-12-01; 81 x 41 x 26 grid, rel. L2): 48 cells differ from it by 2.7e-3 (u),
    2.2e-2 (v), 5.6e-4 (p), 32 cells by 1.4e-2, 5.0e-2, 1.9e-3 (u: order 3); halving dt
    on 32 cells changes u, v, p by 1.6e-4, 1.9e-3, 5.5e-3 (order 2). So u is good to
    about 2e-3, p to about 7e-3 (its time error) and v to about 2e-2 (v's error sits in
    the layer at the inlet, x < 0.1, which 64 cells do not resolve: not yet asymptotic
    there; elsewhere about 6e-3)."""
    sol = ns2d_lt_solution(cells, dt) if solution is None else solution
    xs, ys, ts = np.linspace(0, 2, keep[0]), np.linspace(0, 1, keep[1]), np.linspace(0, 5, keep_t)
    X, Y, T = np.meshgrid(xs, ys, ts, indexing="ij")
    points = np.c_[X.ravel(), Y.ravel(), T.ravel()]
    return {"points": points, **sol.evaluate(points)}


def poisson3d_cg_reference(cells: int = 20) -> dict[str, np.ndarray]:
    """The FEM reference of ``poisson3d_cg.yaml`` (``python make_data.py poisson3d_cg``,
    about 6 min on the shared 2-core machine): P2 on pinn.fem's 3-D CSG mesh of the cube
    minus the four balls (``cells`` = 20: h = 0.05, 85 742 tetrahedra, 120 149 dofs; the
    piecewise k^2 evaluated at the quadrature points), at the 31 x 31 x 31 grid's 27 791
    points inside the domain. Checked (2026-12-01, rel. L2 at those points): 16 cells differ
    from it by 3.0e-3, 12 cells by 7.4e-3, an observed order of only ~0.5-1 (the mesh does
    not follow the jump of k^2 at z = 0.5: tetrahedra straddle it), so its own error is
    estimated at about 1e-2, not better."""
    from pinn import fem
    from pinn.config import load

    problem = load(str(HERE / "poisson3d_cg.yaml"), ["reference=null"]).problem
    xs = np.linspace(0, 1, 31)
    grid = np.stack(np.meshgrid(xs, xs, xs, indexing="ij"), -1).reshape(-1, 3)
    points = grid[np.asarray(problem.space.contains(grid), dtype=bool)]
    sol = fem.solve(problem, cells=cells, element="P2")
    return {"points": points, "u": sol.evaluate(points)["u"]}


def burgers2d_rhs(q: np.ndarray, h: float, nu: float) -> np.ndarray:
    """d/dt of the cell averages ``q[2, n, n]`` (u, v; axis 1 is x, axis 2 is y; cells
    of side ``h``, periodic) for q_t + u q_x + v q_y = nu lap q: MUSCL with MC-limited
    slopes and the path-conservative Rusanov scheme (Castro, Pares et al.) on straight
    paths, per direction, plus nu times the 5-point Laplacian. The system is q_t + A q_x +
    B q_y = 0 with A = u I, B = v I: at a face with states L, R the fluctuations into
    the right and left cells are (abar +- alpha) (R - L) / 2, abar = (u_L + u_R) / 2
    (exact for the straight path), alpha = max(|u_L|, |u_R|); inside a cell u s, s the
    slope. For u in x this is Rusanov's flux of u^2 / 2 (conservative); the straight
    path is also what the viscous profile of a shock follows, the tangential velocity
    being affine in the normal one across it when both diffuse alike."""
    out = np.empty_like(q)
    w = np.pad(q, ((0, 0), (1, 1), (1, 1)), mode="wrap")
    out[:] = w[:, :-2, 1:-1] + w[:, 2:, 1:-1] + w[:, 1:-1, :-2] + w[:, 1:-1, 2:]
    out -= 4 * q
    out *= nu / h**2
    for ax in (1, 2):
        pad = [(0, 0), (0, 0), (0, 0)]
        pad[ax] = (2, 2)
        w = np.moveaxis(np.pad(q, pad, mode="wrap"), ax, 1)  # cells -2 ... n + 1 on axis 1
        d = w[:, 1:] - w[:, :-1]
        a, b = d[:, :-1], d[:, 1:]                           # backward, forward: cells -1 ... n
        s = np.minimum(np.minimum(np.abs(a), np.abs(b)) * 2, np.abs(a + b) * 0.5)
        s *= (np.sign(a) + np.sign(b)) * 0.5                 # MC slopes
        wc = w[:, 1:-1]
        L = wc[:, :-1] + 0.5 * s[:, :-1]                     # faces -1/2 ... n - 1/2
        R = wc[:, 1:] - 0.5 * s[:, 1:]
        c = ax - 1                                           # the velocity along this axis
        abar = 0.5 * (L[c] + R[c])
        alpha = np.maximum(np.abs(L[c]), np.abs(R[c]))
        dq = R - L
        into_right, into_left = dq * (0.5 * (abar + alpha)), dq * (0.5 * (abar - alpha))
        total = into_right[:, :-1] + into_left[:, 1:] + wc[c, 1:-1] * s[:, 1:-1]
        out -= np.moveaxis(total, 1, ax) / h
    return out


def burgers2d_solve(q0: np.ndarray, length: float, nu: float, times, cfl: float = 0.45,
                    dtype=np.float32) -> list[np.ndarray]:
    """The cell averages ``q0[2, n, n]`` advanced by :func:`burgers2d_rhs` with SSP-RK2
    (Heun) to each of ``times`` (``times[0]``: the start): a list of ``q`` there. Each
    step: dt max(|u| + |v|) / h <= ``cfl`` (the current maximum) and dt <= h^2 / (8 nu),
    shortened to land on the next time. ``dtype``: float32 halves the run time; its
    rounding (~1e-7 per step) stays far below the scheme's own error."""
    h = dtype(length / q0.shape[1])
    nu = dtype(nu)
    q = np.array(q0, dtype=dtype)
    frames, t = [q.copy()], float(times[0])
    for t1 in times[1:]:
        while t < t1:
            speed = max(float(np.max(np.abs(q[0]) + np.abs(q[1]))), 1e-12)
            dt = min(cfl * float(h) / speed, float(h) ** 2 / (8 * float(nu)))
            dt = t1 - t if t + 1.01 * dt >= t1 else dt
            q1 = q + dtype(dt) * burgers2d_rhs(q, h, nu)
            q = dtype(0.5) * (q + q1 + dtype(dt) * burgers2d_rhs(q1, h, nu))
            t = float(t1) if dt == t1 - t else t + dt
        frames.append(q.copy())
    return frames


def _periodic_bilinear(cells: np.ndarray, length: float, x, y) -> np.ndarray:
    # bilinear interpolation of cell-centre values (periodic) at the points (x, y)
    n = cells.shape[0]
    gx, gy = np.asarray(x) * n / length - 0.5, np.asarray(y) * n / length - 0.5
    i, j = np.floor(gx).astype(int), np.floor(gy).astype(int)
    fx, fy = gx - i, gy - j
    i0, i1, j0, j1 = i % n, (i + 1) % n, j % n, (j + 1) % n
    return ((1 - fx) * ((1 - fy) * cells[i0, j0] + fy * cells[i0, j1])
            + fx * ((1 - fy) * cells[i1, j0] + fy * cells[i1, j1]))


def _bilinear_on_nodes(nodes: np.ndarray, length: float, X, Y) -> np.ndarray:
    # bilinear interpolation of values at the nodes 0, h, ..., length (both ends) at (X, Y)
    n = nodes.shape[0] - 1
    gx, gy = X * n / length, Y * n / length
    i, j = np.minimum(np.floor(gx).astype(int), n - 1), np.minimum(np.floor(gy).astype(int), n - 1)
    fx, fy = gx - i, gy - j
    return ((1 - fx) * ((1 - fy) * nodes[i, j] + fy * nodes[i, j + 1])
            + fx * ((1 - fy) * nodes[i + 1, j] + fy * nodes[i + 1, j + 1]))


def burgers2d_c_solution(cells: int = 512, keep: int = 41, keep_t: int = 11,
                         initial: str = "closed form") -> dict[str, np.ndarray]:
    """Burgers2d-C (nu = 0.001 on the periodic [0, 4]^2, t in [0, 1]) by
    :func:`burgers2d_solve` on ``cells`` x ``cells`` cells, at the ``keep`` x ``keep``
    nodes of [0, 4]^2 (both x = 0 and x = 4) and ``keep_t`` times 0 ... 1 (bilinear in the
    cell centres). ``initial``: the cells' averages of the stand-in fields' closed form
    (:func:`burgers_initial_closed_form`), or ``"table"``: of the bilinear interpolant
    of the 65 x 65 files, what the PINN is given (``cells`` a multiple of 64: each cell
    inside one table cell, where the mean of a bilinear function is its centre value)."""
    length, nu = 4.0, 0.001
    h = length / cells
    centres = (np.arange(cells) + 0.5) * h
    X, Y = np.meshgrid(centres, centres, indexing="ij")
    if initial == "closed form":
        f = burgers_initial_closed_form(X, Y, length, average=h)
    elif initial == "table":
        if cells % 64:
            raise ValueError(f"initial='table' needs cells a multiple of 64, not {cells}")
        nodes = burgers_initial(65, length)
        f = {k: _bilinear_on_nodes(nodes[k].reshape(65, 65), length, X, Y)
             for k in ("u", "v")}
    else:
        raise ValueError(f"initial={initial!r}: give 'closed form' or 'table'")
    ts = np.linspace(0, 1, keep_t)
    frames = burgers2d_solve(np.stack([f["u"], f["v"]]), length, nu, ts)
    xs = np.linspace(0, length, keep)
    Xk, Yk = np.meshgrid(xs, xs, indexing="ij")
    P, U, V = [], [], []
    for t, q in zip(ts, frames, strict=True):
        P.append(np.c_[Xk.ravel(), Yk.ravel(), np.full(Xk.size, t)])
        U.append(_periodic_bilinear(q[0], length, Xk.ravel(), Yk.ravel()))
        V.append(_periodic_bilinear(q[1], length, Xk.ravel(), Yk.ravel()))
    return {"points": np.concatenate(P), "u": np.concatenate(U), "v": np.concatenate(V)}


def burgers2d_c_reference(cells: int = 1024) -> dict[str, np.ndarray]:
    """Burgers2d-C's reference (``python make_data.py burgers2d_c``):
    :func:`burgers2d_c_solution` on 1024 x 1024 cells from the closed form's cell
    averages, at the 41 x 41 nodes of [0, 4]^2 x 11 times (t = 0, 0.1, ..., 1; the
    YAML's evaluation grid), float32; the run took 10.4 min wall, 8.1 min of CPU, on
    the shared 2-core machine under ``nice -n 19`` (2026-12-01; steps of dt <= 4.2e-4).

    Checked by refinement (2026-12-01; rel. L2 at these points, u and v together):

    ======================  ========  ==========  ==========  ===========
    cells                   128       256         512         1024 (this)
    vs the next finer       3.29e-2   2.21e-2     1.37e-2     --
    vs this one             5.84e-2   3.33e-2     1.37e-2     --
    ======================  ========  ==========  ==========  ===========

    An observed order of 0.57, then 0.69: shocks form at t ~ 0.3 (jumps of 2-4; viscous
    width 4 nu / jump ~ 1e-3, against h = 3.9e-3 here), and where a shock is smeared over
    a few cells the L2 error goes as h^(1/2) until the cells resolve the viscous profile.
    Extrapolating at that order puts this one at 2-3e-2 from the viscous solution; the
    error sits on the shocks (up to t = 0.2, before them, the grids converge at order 2
    and this one is within ~4e-5). The differences grow with t: 512 vs 1024 is 5.0e-3
    at t = 0.3, 1.3-2.2e-2 from t = 0.4 to 1. Float32 against float64 (256 cells):
    6e-7. The scheme itself: second order against an exact Cole-Hopf solution of the
    coupled system (tests/test_burgers2d_reference.py).

    The PINN is given the files' bilinear interpolant, not the closed form: started
    from the interpolant's cell averages instead (``initial="table"``, 512 cells), the
    solution differs from the closed form's by 5.4e-3 (2.2e-3 at t = 0, growing to
    ~1e-2 at t = 0.8 - 1 as shocks shift), below this reference's own error."""
    return burgers2d_c_solution(cells)


#: ``python make_data.py NAME``: the FEM references that take minutes (file, function)
GENERATED_REFERENCES = {
    "heat2d_vc": ("heat2d_vc_ref.npz", heat2d_vc_reference),
    "wave2d": ("wave2d_cg_ref.npz", wave2d_cg_reference),
    "ns2d_lt": ("ns2d_lt_ref.npz", ns2d_lt_reference),
    "poisson3d_cg": ("poisson3d_cg_ref.npz", poisson3d_cg_reference),
    "burgers2d_c": ("burgers2d_c_ref.npz", burgers2d_c_reference),
}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 1 and argv[0] in GENERATED_REFERENCES:  # one slow FEM reference
        out, make = GENERATED_REFERENCES[argv[0]]
        ref = make()
        np.savez_compressed(HERE / out, **{k: np.asarray(v, dtype=np.float32)
                                           for k, v in ref.items()})
        print(f"wrote {out}")
        return
    points, values = heat_coefficient()
    np.savez_compressed(HERE / "heat2d_vc_coef.npz", points=points.astype(np.float32),
                        values=values.astype(np.float32))
    points, values = wave_coefficient()
    np.savez_compressed(HERE / "wave2d_cg_coef.npz", points=points.astype(np.float32),
                        values=values.astype(np.float32))
    init = burgers_initial()
    for name in ("u", "v"):
        np.savetxt(HERE / f"burgers2d_init_{name}.dat", np.c_[init["x"], init["y"], init[name]],
                   fmt="%.8g", header=f"x y {name}", comments="% ")
    rng = np.random.default_rng(0)
    pts = np.c_[rng.uniform(0, 1, (20000, 2)), rng.uniform(0, 100, 20000)]
    np.savez_compressed(HERE / "wave2d_ms_ref.npz", points=pts.astype(np.float32),
                        u=wave2d_ms_reference(pts).astype(np.float32))
    gs = gs_reference()
    P, U, V = gs["points"], gs["u"], gs["v"]
    wall = (np.abs(P[:, 0]) > 0.99) | (np.abs(P[:, 1]) > 0.99)
    if np.abs(U[wall] - 1).max() > 1e-6 or np.abs(V[wall]).max() > 1e-6:
        raise RuntimeError("gs_reference: the pattern reached the walls; a periodic "
                           "reference no longer stands for PINNacle's problem")
    np.savez_compressed(HERE / "gs_ref.npz", points=P.astype(np.float32),
                        u=U.astype(np.float32), v=V.astype(np.float32))
    data = inverse_data()
    np.savetxt(HERE / "pinv_data.csv", data["pinv"], fmt="%.8g", delimiter=",",
               header="x,y,u", comments="")
    if "hinv" in data:
        np.savetxt(HERE / "hinv_data.csv", data["hinv"], fmt="%.8g", delimiter=",",
                   header="x,y,t,u", comments="")
    done = ["heat2d_vc_coef.npz", "wave2d_cg_coef.npz", "burgers2d_init_u.dat",
            "burgers2d_init_v.dat", "wave2d_ms_ref.npz", "gs_ref.npz",
            "pinv_data.csv"]
    done += ["hinv_data.csv"] if "hinv" in data else []
    if "refs" in argv:
        done += convert_references()
    print("wrote " + ", ".join(done))


if __name__ == "__main__":
    main()
