"""``pinn quantities`` and ``pinn optimize``: quantities of interest of a trained solution,
and design optimisation through a parametric one (checked by one FEM solve)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pinn.cli import (
    EXIT_OK,
    JsonOpt,
    QuietOpt,
    RunArg,
    SetOpt,
    UserError,
    _examples,
    _load,
    _load_run,
    _out,
    _user,
    app,
)

ParamOpt = Annotated[list[str] | None, typer.Option(
    "--param", metavar="NAME=VALUE",
    help="A ranged parameter's value, e.g. k=2.5 (repeatable).", show_default=False)]


def _with_file_quantities(sol, file: Path | None, sets) -> None:
    """Give ``sol``'s problem the quantities of the problem file ``file`` (the run's own
    where none is given), once the file is the run's problem: the same coordinates,
    fields and ranged parameters."""
    if file is None:
        return
    built = _load(file, list(sets or []), checks=False)
    mine, theirs = sol.problem, built.problem

    def shape(p):
        return ([c.name for c in p.coords], list(p.field_names),
                [(q.name, tuple(q.range)) for q in p.ranged])

    if shape(mine) != shape(theirs):
        (c1, f1, r1), (c2, f2, r2) = shape(mine), shape(theirs)
        what = ("coordinates", c1, c2) if c1 != c2 else ("fields", f1, f2) if f1 != f2 else (
            "ranged parameters", r1, r2)
        raise UserError(f"{file}: not the problem the run was trained on (its {what[0]} are "
                        f"{what[2]}, the run's {what[1]}); give the run's problem file")
    if not theirs.quantities:
        raise UserError(f"{file}: declares no quantities (add a quantities: section, e.g. "
                        "quantities: {mean_u: {mean: u}})")
    sol.problem = _user(dataclasses.replace, mine, quantities=dict(theirs.quantities))


def _names(which: str | None, problem) -> list[str] | None:
    if which is None:
        return None
    names = [w.strip() for w in which.split(",") if w.strip()]
    if not names:
        raise UserError(f"--which {which!r}: name quantities, comma-separated")
    return names


def _fmt(v: float, digits: int) -> str:
    return format(float(v), f".{digits}g")


@app.command(epilog=_examples(
    "pinn quantities runs/poisson2d_parametric --param a=0.5",
    "pinn quantities runs/poisson2d_parametric --params designs.csv   # CSV: a row a query",
    "pinn quantities runs/poisson2d_parametric --file problems/poisson2d_parametric.yaml "
    "--which energy --json"))
def quantities(
    run_dir: RunArg,
    param: ParamOpt = None,
    params_file: Annotated[Path | None, typer.Option(
        "--params", help="Many queries at once: a CSV (header naming the ranged parameters, "
                         "one row per query), .npz or .npy, as `pinn predict --params` reads "
                         "them; prints CSV query,<parameters>,<quantities>.",
        show_default=False)] = None,
    which: Annotated[str | None, typer.Option(
        "--which", help="Comma-separated quantities (default: all).")] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", help="Take the quantities from this problem file (the run's problem, "
                       "with quantities added since it was trained).", show_default=False)
                    ] = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
):
    """The quantities of interest of a trained solution (the problem's quantities: section).

    Integrals and means over a region are sums over a fixed quasi-random (Sobol) quadrature
    of the region; maxima and minima are taken over its points; values at one point."""
    from pinn import io
    from pinn.cli.train import _param_values

    if param and params_file is not None:
        raise UserError(f"--param {param[0]} and --params {params_file}: give one of them")
    sol = _load_run(run_dir)
    _with_file_quantities(sol, file, set_)
    problem = sol.problem
    names = _names(which, problem)
    digits = 17 if sol.precision == 64 else 9
    if params_file is not None:
        if not problem.ranged:
            raise UserError(f"--params {params_file}: this solution has no ranged parameters; "
                            "drop --params")
        pnames = [q.name for q in problem.ranged]
        rows = _user(io.read_params, params_file, pnames)
        _user(problem.param_rows, rows, where=str(params_file))
        values = _user(sol.quantities, rows, names)
        if json_:
            import numpy as np

            _out(json.dumps({"param_names": pnames, "params": rows.tolist(),
                             "quantities": {k: np.asarray(v).tolist()
                                            for k, v in values.items()}}))
            return EXIT_OK
        lines = [",".join(["query", *pnames, *values])]
        for i, row in enumerate(rows):
            lines.append(",".join([str(i), *(repr(float(v)) for v in row),
                                   *(_fmt(v[i], digits) for v in values.values())]))
        sys.stdout.write("\n".join(lines) + "\n")
        return EXIT_OK
    at = _param_values(param, problem)
    if problem.ranged and at is None:
        ex = " ".join(f"--param {q.name}={q.range[0]}" for q in problem.ranged)
        raise UserError(f"{problem.name} is parametric: give the parameters' values ({ex}) "
                        "or --params FILE for many")
    values = _user(sol.quantities, at, names)
    if json_:
        _out(json.dumps({"params": at or {}, "quantities": values}))
        return EXIT_OK
    chosen = {k: problem.quantities[k] for k in values}
    width = max(len(k) for k in values)
    head = f"{problem.name}" + (f" at {_at(at)}" if at else "")
    _out(head)
    for k, v in values.items():
        _out(f"  {k:<{width}} = {_fmt(v, digits)}   ({chosen[k].describe()})")
    return EXIT_OK


def _at(values: dict) -> str:
    return ", ".join(f"{k} = {v:.6g}" for k, v in values.items())


@app.command(epilog=_examples(
    "pinn optimize problems/poisson2d_parametric.yaml --run runs/poisson2d_parametric "
    "--minimize energy",
    "pinn optimize problems/poisson2d_parametric.yaml --run runs/poisson2d_parametric "
    "--maximize u_quarter --no-check --json",
    "pinn optimize FILE --run RUN --minimize mean_T --over k,r --param q=1.5 --starts 16"))
def optimize(
    file: Annotated[Path, typer.Argument(help="The problem file (its quantities: section "
                                         "names the quantity).", show_default=False)],
    run_dir: Annotated[Path, typer.Option("--run", help="A finished `pinn solve` run of this "
                                          "problem, parametric.", show_default=False)],
    minimize: Annotated[str | None, typer.Option(
        "--minimize", metavar="QOI", help="The quantity to minimise.", show_default=False)
                        ] = None,
    maximize: Annotated[str | None, typer.Option(
        "--maximize", metavar="QOI", help="The quantity to maximise.", show_default=False)
                        ] = None,
    over: Annotated[str | None, typer.Option(
        "--over", help="Comma-separated ranged parameters to optimise (default: all).")
                    ] = None,
    param: ParamOpt = None,
    starts: Annotated[int, typer.Option(help="Starts of L-BFGS-B, a Sobol design of the "
                                        "parameters' box (the first its centre).")] = 8,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Solve once by FEM at "
                                        "the optimum and report its value of the "
                                        "quantity.")] = True,
    cells: Annotated[int | None, typer.Option(help="FEM check: cells per side (default: "
                                              "fem.cells).")] = None,
    element: Annotated[str | None, typer.Option(help="FEM check: P1 or P2 (default: "
                                                "fem.element).")] = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
):
    """Optimise a quantity of interest over a parametric solution's parameters.

    Gradient-based (scipy's L-BFGS-B within the ranges the network was trained on, the
    gradient by JAX through the network) from several starts; prints the optimum, the
    quantity there, the iterations and the wall time; then, unless --no-check, solves the
    problem once by FEM at that design and prints FEM's value of the quantity beside the
    network's. Parameters not optimised are held at --param values (default: the centre of
    their ranges)."""
    from pinn import design

    if (minimize is None) == (maximize is None):
        raise UserError("give the quantity to optimise: --minimize QOI or --maximize QOI "
                        "(one of them)")
    name = minimize if minimize is not None else maximize
    if not 1 <= starts <= design.MAX_STARTS:
        raise UserError(f"--starts {starts}: give 1 to {design.MAX_STARTS}")
    sets = list(set_ or [])
    for key, value in (("cells", cells), ("element", element)):
        if value is not None:
            sets.append(f"fem.{key}={value}")
    flag = "--minimize" if minimize is not None else "--maximize"
    built, over_names, held = _optimize_inputs(file, sets, f"{flag} {name}", over, param)
    sol = _load_run(run_dir)
    _with_file_quantities(sol, file, set_)
    best = _user(design.optimize, sol, name, over=over_names, minimize=minimize is not None,
                 fixed=held, starts=starts)
    fem_line, fem_data = None, None
    if check:
        fem_line, fem_data = _fem_check(built, name, best)
    if json_:
        _out(json.dumps({"optimum": best.to_data(), "fem": fem_data}))
        return EXIT_OK
    _show(built, best, sol.precision, fem_line, quiet)
    return EXIT_OK


def _optimize_inputs(file: Path, sets: list[str], what: str, over: str | None,
                     param: list[str] | None):
    """``(built, over, held)`` of ``pinn optimize``'s options, checked against the problem
    file: the quantity (``what``: ``--minimize NAME``) is one of its quantities, it has
    ranged parameters, ``--over`` names some, ``--param`` holds the others."""
    from pinn import design
    from pinn.cli.train import _name_values

    if not file.exists() and not file.is_symlink():
        raise UserError(f"{file}: no such file")
    built = _load(file, sets, checks=False)
    problem = built.problem
    name = what.split(" ", 1)[1]
    if name not in (problem.quantities or {}):
        have = ", ".join(problem.quantities or {}) or "none"
        raise UserError(f"{what}: not a quantity of {file} (its quantities: {have})")
    if not problem.ranged:
        raise UserError(f"{file}: {built.name} has no ranged parameters; there is nothing to "
                        "optimise over (give a parameter a range, params: {k: {range: [lo, "
                        "hi]}}, and train over it)")
    over_names = None if over is None else [o.strip() for o in over.split(",") if o.strip()]
    if over is not None and not over_names:
        raise UserError(f"--over {over!r}: name ranged parameters, comma-separated")
    if over_names is not None:
        _user(design.check_over, problem, over_names, where="--over")
    held = _name_values(param, f"{problem.ranged[0].name}={problem.ranged[0].range[0]}"
                        ) if param else {}
    ranged = [q.name for q in problem.ranged]
    for k in held:
        if k not in ranged:
            raise UserError(f"--param {k}: not a ranged parameter of {built.name} (ranged: "
                            f"{', '.join(ranged)})")
        if over_names is None or k in over_names:
            raise UserError(f"--param {k}: {k} is optimised (--over); --param holds the "
                            "parameters that are not")
    return built, over_names, held


def _show(built, best, precision: int, fem_line: str | None, quiet: bool) -> None:
    """``pinn optimize``'s lines: the optimum, the quantity there, the work, the FEM check."""
    name, problem = best.quantity, built.problem
    goal = "minimum" if best.minimize else "maximum"
    box = ", ".join(f"{q.name} in {list(q.range)}" for q in problem.ranged
                    if q.name in best.over)
    _out(f"{built.name}: {goal} of {name} over {box} (L-BFGS-B, {best.starts} starts)", quiet)
    bounds = (f" (on the {', '.join(f'{b} bound of {k}' for k, b in best.at_bounds.items())}"
              ": the optimum may lie outside the trained range)" if best.at_bounds else "")
    _out(f"optimum: {_at({k: best.params[k] for k in best.over})}{bounds}", quiet)
    others = {k: v for k, v in best.params.items() if k not in best.over}
    if others:
        _out(f"held: {_at(others)}", quiet)
    digits = 17 if precision == 64 else 9
    _out(f"{name} = {_fmt(best.value, digits)} (PINN)", quiet)
    note = "" if best.converged else f"; L-BFGS-B: {best.message.lower()}"
    _out(f"iterations: {best.iterations} (the best start), {best.total_iterations} in all; "
         f"{best.evaluations} evaluations; {best.seconds:.3g} s{note}", quiet)
    if fem_line:
        _out(fem_line, quiet)


def _fem_check(built, name: str, best) -> tuple[str, dict | None]:
    """``(line, data)`` of the FEM check at ``best``'s design; a problem or quantity the FEM
    baseline cannot handle is said in the line (data None)."""
    from pinn import design
    from pinn import fem as F

    opts = built.spec.fem
    try:
        c = design.fem_check(built.problem, name, best.params, cells=opts.cells,
                             element=opts.element, dt=opts.dt, theta=opts.theta)
    except F.UnsupportedProblem as exc:
        why = str(exc)
        if not why.startswith("the FEM baseline"):
            why = f"the FEM baseline cannot solve this problem: {why}"
        return f"FEM check: not done: {why}", None
    except F.NewtonError as exc:
        return f"FEM check: not done: the FEM solve failed ({exc})", None
    except ValueError as exc:
        return f"FEM check: not done: {exc}", None
    diff = best.value - c.value
    rel = abs(diff) / abs(c.value) if c.value != 0 else float("inf")
    line = (f"FEM check ({c.element}, {opts.cells} cells, {c.dofs} dofs, {c.seconds:.3g} s): "
            f"{name} = {c.value:.9g}; PINN - FEM = {diff:.3e} ({rel:.2e} relative)")
    return line, {**c.to_data(), "difference": diff, "relative_difference": rel}

