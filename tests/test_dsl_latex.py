"""LaTeX output of the PDE language."""

from __future__ import annotations

import pytest

import pinn.dsl as d
from pinn.dsl.latex import latex, latex_name
from pinn.dsl.parser import Namespace, parse

x, y, t = d.coords("x y t")
x1 = d.coords("x1")
u, v = d.fields("u v")
NS = Namespace([x, y, t, x1, u, v, d.param("nu", 0.01), d.param("alpha", 0.05),
                d.param("nu_0", 1.0), d.param("Re", 100.0), d.param("Omega", 1.0)])


@pytest.mark.parametrize("text, tex", [
    ("u_t + u*u_x - nu*u_xx",
     r"\frac{\partial u}{\partial t} + u \frac{\partial u}{\partial x} - \nu "
     r"\frac{\partial^2 u}{\partial x^2}"),
    ("D(u, t) - alpha*laplacian(u)", r"\frac{\partial u}{\partial t} - \alpha \Delta u"),
    ("exp(-2*pi^2*alpha*t)*sin(pi*x)",
     r"e^{- 2 \pi^{2} \alpha t} \sin{\left(\pi x\right)}"),
    ("u_xy", r"\frac{\partial^2 u}{\partial x \partial y}"),
    ("D(u, x, 2, y)", r"\frac{\partial^3 u}{\partial x^2 \partial y}"),
    ("D(u*v, x)", r"\frac{\partial}{\partial x} \left(u v\right)"),
    ("(x + 1)^2/(2*y)", r"\frac{\left(x + 1\right)^{2}}{2 y}"),
    ("sin(x)^2", r"\sin^{2}{\left(x\right)}"),
    ("x*(-y)", r"x \left(- y\right)"),
    ("2*3", r"2 \cdot 3"),
    ("1e-05*x + 1.5e-07", r"10^{-5} x + 1.5 \cdot 10^{-7}"),
    ("nu_0*Re*x1*Omega", r"\nu_{0} \mathrm{Re} x_{1} \Omega"),
    ("sqrt(x) + abs(y)", r"\sqrt{x} + \left|y\right|"),
    ("dot(grad(u), grad(v))", r"\nabla u \cdot \nabla v"),
    ("div(nu*grad(u))", r"\nabla \cdot \left(\nu \nabla u\right)"),
    ("grad(u)[0]", r"\left(\nabla u\right)_{0}"),
    ("laplacian(u, x, y)", r"\Delta_{x, y} u"),
    ("x <= 1 and not y > 2 or x != 0", r"x \leq 1 \wedge \neg \left(y > 2\right) \vee x \neq 0"),
    ("where(x < 0.5, 1, 0)",
     r"\begin{cases} 1 & \text{if } x < 0.5 \\ 0 & \text{otherwise} \end{cases}"),
    ("-(x + y)", r"- \left(x + y\right)"),
    ("x - (y - t)", r"x - \left(y - t\right)"),
])
def test_latex(text, tex):
    e = parse(text, NS)
    assert latex(e) == tex
    assert e.to_latex() == tex
    assert e._repr_latex_() == f"${tex}$"


@pytest.mark.parametrize("name, tex", [
    ("alpha", r"\alpha"), ("nu", r"\nu"), ("Gamma", r"\Gamma"), ("lambda", r"\lambda"),
    ("eps", r"\varepsilon"), ("nu_0", r"\nu_{0}"), ("u_1_2", "u_{1,2}"), ("x2", "x_{2}"),
    ("alpha2", r"\alpha_{2}"), ("Re", r"\mathrm{Re}"), ("u", "u"), ("_x", r"\mathrm{\_x}"),
])
def test_latex_names(name, tex):
    assert latex_name(name) == tex
