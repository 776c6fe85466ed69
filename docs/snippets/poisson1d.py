# The problem every how-to trains: u'' = -pi^2 sin(pi x) on [0, 1], u = 0 at both ends
# (exact: sin(pi x)), the same one tests/test_extension_points.py trains.
import pinn

x = pinn.coords("x")
u = pinn.field("u")
problem = pinn.Problem(
    domain=pinn.Interval(0, 1),
    equations={"poisson": pinn.D(u, x, 2) + pinn.pi**2 * pinn.sin(pinn.pi * x)},
    conditions={"ends": pinn.Dirichlet(u, 0, on="boundary", hard=True)},
    exact={u: pinn.sin(pinn.pi * x)},
)
