import jax.numpy as jnp
from flax import nnx
from poisson1d import problem  # u'' = -pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0

import pinn


class Net(nnx.Module):
    """Any flax.nnx module from inputs [N, 1] (x) to outputs [N, 1] (u)."""

    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(1, 16, rngs=rngs)
        self.l2 = nnx.Linear(16, 16, rngs=rngs)
        self.l3 = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.l3(jnp.tanh(self.l2(jnp.tanh(self.l1(x)))))


training = pinn.Training(stages=[pinn.Stage(pinn.Adam(lr=1e-2), 600)],
                         points=pinn.Points(interior=128, boundary=16), seed=0)
# a module as it is, or a function key -> module (initialised from the run's seed)
solution = pinn.solve(problem, lambda key: Net(nnx.Rngs(key)), training, progress=False)
print(solution.metrics["rel_l2"])                 # {'u': ...}
assert solution.metrics["rel_l2"]["u"] < 5e-3
assert solution([[0.0], [1.0]]).tolist() == [[0.0], [0.0]]   # hard: u = 0 exactly
