import optax
from poisson1d import problem  # u'' = -pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0

import pinn

points = pinn.Points(interior=128, boundary=16)

# any optax.GradientTransformation is a stage optimiser
adamw = pinn.Stage(optax.adamw(1e-2, weight_decay=1e-5), 600)
solution = pinn.solve(problem, pinn.MLP(width=16, depth=2),
                      pinn.Training(stages=[adamw], points=points, seed=0), progress=False)
assert solution.metrics["rel_l2"]["u"] < 5e-3


# or a factory of the stage's length (for schedules), with the rate it reports per step
def cosine(steps):
    return optax.adam(optax.cosine_decay_schedule(1e-2, steps))


opt = pinn.Optax(cosine, learning_rate=optax.cosine_decay_schedule(1e-2, 600))
training = pinn.Training(stages=[pinn.Stage(opt, 600)], points=points, seed=0)
solution = pinn.solve(problem, pinn.MLP(width=16, depth=2), training, progress=False)
print(solution.metrics["rel_l2"], solution.history[-1]["lr"])   # ... 0.0: decayed to 0
assert solution.metrics["rel_l2"]["u"] < 5e-3 and solution.history[-1]["lr"] < 1e-9
