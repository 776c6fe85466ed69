from poisson1d import problem  # u'' = -pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0

import pinn

training = pinn.Training(stages=[pinn.Stage(pinn.Adam(lr=1e-2), 3000)],
                         points=pinn.Points(interior=128, boundary=16), seed=0,
                         eval_every=50, chunk=50)

# stop once the relative L2 error (checked every eval_every steps) is at most 2e-2
stop = pinn.EarlyStopping(target_error=2e-2)
run = pinn.setup(problem, pinn.MLP(width=16, depth=2), training, progress=False,
                 observers=[stop])
solution = run.train()
print(stop.reason, stop.stopped_at)               # why and when it stopped
assert stop.stopped_at == solution.metrics["steps_done"] < 3000
assert solution.metrics["stages"][-1]["status"] == "early_stop"


# a function of the history row at each chunk's end: add metrics, or stop with a reason
def watch(row):
    row["aux.twice_loss"] = 2.0 * row["loss"]    # a custom metric, kept in the history
    if row["loss"] < 1.0:
        return f"loss below 1 at step {row['step']}"   # a text stops the run


run = pinn.setup(problem, pinn.MLP(width=16, depth=2), training, progress=False)
solution = run.train(on_chunk=watch)
last = solution.history[-1]
print(last["event"], last["message"])             # early_stop loss below 1 at step ...
assert last["event"] == "early_stop" and last["stopped_by"] == "watch"
