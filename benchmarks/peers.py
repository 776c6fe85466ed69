"""The benchmark problems written for DeepXDE (the optional ``peers`` extra).

    pip install -e ".[peers]"      # deepxde and torch==2.13.0 (CPU wheel)

DeepXDE picks its backend at import from ``DDE_BACKEND`` (``pytorch`` or ``jax``),
so each backend runs in its own process (``speed.py`` and ``time_to_accuracy.py``
start one per side).  The problems are the same as in ``_common``: Burgers 1D
(nu = 0.01/pi, u0 = -sin(pi x)) and heat 2D (alpha = 0.05) with zero Dirichlet
walls, written as in DeepXDE's own examples.  Note that DeepXDE evaluates the
PDE residual on the boundary and initial points too (its ``PDE`` data class
stacks them in front of the domain points and drops their residuals after
computing them).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from _common import ALPHA_HEAT, NU_BURGERS


def available() -> bool:
    from importlib.util import find_spec

    return find_spec("deepxde") is not None and find_spec("torch") is not None


def build(problem: str, *, width: int, depth: int, interior: int, boundary: int, initial: int,
          seed: int = 0, hard: bool = False):
    """An uncompiled ``dde.Model`` for ``problem`` ('burgers' or 'heat2d').

    ``hard=True`` builds the wall and initial conditions into the output, as
    ``pinn`` does for ``hard: true`` conditions
    (``pinn.nets.constraints.hard_dirichlet_initial`` with ``box_distance``):
    ``u = u0(x) + d(x) t N(x, t)``, with ``d = 1 - x^2`` (Burgers) or
    ``16 x(1-x) y(1-y)`` (heat 2D); the loss is then the PDE residual alone.
    """
    import deepxde as dde

    jax_backend = dde.backend.backend_name == "jax"
    dde.config.set_random_seed(seed)
    if problem == "burgers":
        space, d_in = dde.geometry.Interval(-1, 1), 2

        def pde(x, y):
            y_x = dde.grad.jacobian(y, x, i=0, j=0)
            y_t = dde.grad.jacobian(y, x, i=0, j=1)
            y_xx = dde.grad.hessian(y, x, i=0, j=0)
            if jax_backend:
                y, y_x, y_t, y_xx = y[0], y_x[0], y_t[0], y_xx[0]
            return y_t + y * y_x - NU_BURGERS * y_xx

        def u0(x):
            return -np.sin(np.pi * x[:, 0:1])
    elif problem == "heat2d":
        space, d_in = dde.geometry.Rectangle([0, 0], [1, 1]), 3

        def pde(x, y):
            y_t = dde.grad.jacobian(y, x, i=0, j=2)
            y_xx = dde.grad.hessian(y, x, i=0, j=0)
            y_yy = dde.grad.hessian(y, x, i=1, j=1)
            if jax_backend:
                y_t, y_xx, y_yy = y_t[0], y_xx[0], y_yy[0]
            return y_t - ALPHA_HEAT * (y_xx + y_yy)

        def u0(x):
            return np.sin(np.pi * x[:, 0:1]) * np.sin(np.pi * x[:, 1:2])
    else:
        raise ValueError(f"no DeepXDE version of problem {problem!r}; use 'burgers' or 'heat2d'")
    geomtime = dde.geometry.GeometryXTime(space, dde.geometry.TimeDomain(0, 1))
    net = dde.nn.FNN([d_in] + [width] * depth + [1], "tanh", "Glorot normal")
    if hard:
        net.apply_output_transform(_hard_transform(problem))
        data = dde.data.TimePDE(geomtime, pde, [], num_domain=interior, num_test=256)
        return dde.Model(data, net)
    bc = dde.icbc.DirichletBC(geomtime, lambda x: 0, lambda _, on_boundary: on_boundary)
    ic = dde.icbc.IC(geomtime, u0, lambda _, on_initial: on_initial)
    data = dde.data.TimePDE(geomtime, pde, [bc, ic], num_domain=interior,
                            num_boundary=boundary, num_initial=initial, num_test=256)
    return dde.Model(data, net)


def _hard_transform(problem: str):
    """DeepXDE's output transform for hard walls and start (see :func:`build`)."""
    import deepxde as dde

    bkd = dde.backend
    pi = math.pi
    if problem == "burgers":
        def transform(x, y):
            xs, t = x[..., 0:1], x[..., 1:2]
            return -bkd.sin(pi * xs) + (1 - xs) * (1 + xs) * t * y
    else:
        def transform(x, y):
            xs, ys, t = x[..., 0:1], x[..., 1:2], x[..., 2:3]
            u0 = bkd.sin(pi * xs) * bkd.sin(pi * ys)
            return u0 + 16 * xs * (1 - xs) * ys * (1 - ys) * t * y
    return transform


def backend_name() -> str:
    import deepxde as dde

    return dde.backend.backend_name


def predict(model, points: np.ndarray) -> np.ndarray:
    """The model's u at ``points``, in DeepXDE's working precision (float32 unless set)."""
    import deepxde as dde

    return np.asarray(model.predict(np.asarray(points, dde.config.real(np))), np.float64)[:, 0]


def _block(model) -> None:
    """Wait for pending device work (the JAX backend dispatches asynchronously)."""
    if backend_name() == "jax":
        import jax

        jax.block_until_ready(model.params)


def callback(fn: Callable[[int], None]):
    """A DeepXDE callback calling ``fn(step)`` at the start of every batch."""
    import deepxde as dde

    class _Hook(dde.callbacks.Callback):
        def on_batch_begin(self):
            fn(self.model.train_state.step)

    return _Hook()


def timed_steps(model, steps: int) -> tuple[float, float]:
    """Run ``steps + 1`` Adam iterations; wall and CPU seconds of exactly ``steps`` of them.

    The clock starts at the first iteration and stops at the start of the last one,
    so DeepXDE's evaluation of the test loss at the start and end of ``train`` is
    not timed (the work between is its plain training loop).
    """
    marks: list[tuple[float, float]] = []
    start = model.train_state.step

    def mark(step):
        if step - start in (0, steps):
            _block(model)
            marks.append((time.perf_counter(), time.process_time()))

    model.train(iterations=steps + 1, display_every=10**9, verbose=0,
                callbacks=[callback(mark)])
    (w0, c0), (w1, c1) = marks
    return w1 - w0, c1 - c0


def adam_decay(optimizer, steps: int):
    """DeepXDE's ``decay=`` for a pinn ``Adam`` (the same schedule, via LambdaLR/optax)."""
    sched = optimizer.schedule(steps)
    lr = optimizer.lr
    factors = np.asarray(sched(np.arange(steps + 1)), np.float64) / lr
    if np.allclose(factors, 1.0):
        return None
    if backend_name() == "pytorch":
        return ("lambda", lambda k: float(factors[min(int(k), steps)]))
    if optimizer.decay == "exponential" and optimizer.warmup == 0:
        return ("exponential", optimizer.decay_steps or max(1, steps // 10),
                optimizer.decay_rate)
    return None


def set_lbfgs(maxiter: int, every: int) -> None:
    """L-BFGS for ``maxiter`` iterations, handing control back every ``every`` iterations."""
    import deepxde as dde

    dde.optimizers.config.set_LBFGS_options(maxiter=maxiter)
    opts = dde.optimizers.config.LBFGS_options
    opts["iter_per_step"] = max(1, min(every, maxiter))
    opts["fun_per_step"] = int(math.ceil(opts["maxfun"] * opts["iter_per_step"] / maxiter))
