"""Write the data files of the PINNacle problems whose data the public snapshot lacks.

PINNacle's ``heat_2d_coef_256.dat`` (Heat2d-VC) and ``burgers2d_init_{u,v}_0.dat``
(Burgers2d-C) are not in the public repository (their blobs are absent, see
``../shared/pinnacle/README.md``), so these are stand-ins of the same kind, seeded and
described here; scores on them are not PINNacle's numbers:

* ``heat2d_vc_coef.npz``: a 256 x 256 tensor grid on [0, 1]^2 (``points[N, 2]``,
  ``values[N]``) of a smooth Gaussian random field (spectrum ``(4 pi^2 |k|^2 + 9)^-2``,
  PINNacle's ``alpha = 4``), mapped to ``0.5 + 0.4 tanh(g / std(g))`` in (0.1, 0.9).
* ``wave2d_cg_coef.npz``: the same kind of grid on [-1, 1]^2 (Wave2d-CG reads PINNacle's
  ``darcy_2d_coef_256.dat`` at ``(x + 1)/2``): a two-phase medium, 4 where another such
  field (seed 2) is positive and 1 elsewhere (the thresholded fields of Darcy benchmarks).
* ``burgers2d_init_u.dat``, ``burgers2d_init_v.dat``: columns ``x y u`` (``x y v``) on a
  65 x 65 grid of [0, 4]^2: a random periodic field of Fourier modes up to 2 waves per
  period, amplitude about 1.

    python benchmarks/pinnacle/make_data.py      # rewrites the files beside this script
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _field(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = np.fft.fftfreq(n, d=1.0 / n)
    kx, ky = np.meshgrid(k, k, indexing="ij")
    spectrum = (4 * np.pi**2 * (kx**2 + ky**2) + 9.0) ** -2.0
    noise = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    g = np.real(np.fft.ifft2(np.sqrt(spectrum) * noise))
    return g / g.std()


def heat_coefficient(n: int = 256, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    values = 0.5 + 0.4 * np.tanh(_field(n, seed))
    xs = np.linspace(0, 1, n)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    return np.c_[X.ravel(), Y.ravel()], values.ravel()


def wave_coefficient(n: int = 256, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    values = np.where(_field(n, seed) > 0, 4.0, 1.0)
    xs = np.linspace(-1, 1, n)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    return np.c_[X.ravel(), Y.ravel()], values.ravel()


def burgers_initial(n: int = 65, length: float = 4.0, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = np.linspace(0, length, n)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    out = {"x": X.ravel(), "y": Y.ravel()}
    for name in ("u", "v"):
        f = np.zeros_like(X)
        for p in range(3):
            for q in range(3):
                a, b = rng.standard_normal(2) / (1 + p + q)
                phase = 2 * np.pi * (p * X + q * Y) / length
                f += a * np.cos(phase) + b * np.sin(phase)
        out[name] = (f - f.mean()).ravel()
    return out


def main() -> None:
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
    print("wrote heat2d_vc_coef.npz, wave2d_cg_coef.npz, burgers2d_init_u.dat, "
          "burgers2d_init_v.dat")


if __name__ == "__main__":
    main()
