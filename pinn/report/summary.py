"""What ``pinn validate`` and ``pinn info`` report, as data and as lines of text."""

from __future__ import annotations

import os

from pinn.report.metrics import machine, versions

__all__ = ["problem_summary", "summary_lines", "check_lines", "environment",
           "environment_lines"]


def problem_summary(built) -> dict:
    """What ``pinn validate`` reports of a loaded problem file (JSON-ready)."""
    p = built.problem
    spec = built.spec
    conds = {}
    for name, c in p.conditions.items():
        on = getattr(c, "on", None)
        conds[name] = {"type": c.kind,
                       **({"on": on if isinstance(on, (str, tuple)) else str(on)}
                          if on is not None else {})}
    return {
        "name": built.name,
        "coords": [c.name for c in p.coords],
        "fields": list(p.field_names),
        **({"field_coords": {f.name: list(f.coords) for f in p.fields if f.coords}}
           if any(f.coords for f in p.fields) else {}),
        "params": {k: {"value": v.value, "learnable": v.learnable,
                       **({"range": list(v.range)} if v.range is not None else {})}
                   for k, v in built.params.items()},
        "domain": shape_text(p.domain),
        "equations": {k: f"{v} = 0" for k, v in p.equations.items()},
        "conditions": conds,
        "exact": {f.name: str(v) for f, v in p.exact.items()},
        "reference": None if p.reference is None else repr(p.reference),
        "coefficients": _coefficients(built),
        "model": spec.model.kind,
        "steps": sum(s.steps for s in spec.training.stages),
        "precision": built.precision,
    }


def shape_text(shape, width: int = 100) -> str:
    """A domain in one short line: a chain of differences, unions or intersections
    flattened and its like pieces counted (``Rectangle(...) minus 11 disks and 6 disks``
    becomes ``Rectangle(lo=(-8.0, -12.0), hi=(8.0, 12.0)) minus 17 disks``), a space-time
    domain as ``SPACE x time [t0, t1]``; a primitive's repr where it is short."""
    from collections import Counter

    from pinn.geometry.csg import Difference, Intersection, Union

    time = getattr(shape, "time", None)
    if time is not None and hasattr(shape, "space"):
        return f"{shape_text(shape.space, width)} x time [{time.t0:g}, {time.t1:g}]"
    words = {Difference: "minus", Union: "or", Intersection: "and"}
    kind = type(shape)
    if kind in words:
        pieces, base = [], shape
        while type(base) is kind:  # left-nested chains: ((a - b) - c) - d
            pieces.append(base.b)
            base = base.a
        if kind is not Difference:
            pieces.append(base)
        names = Counter(type(x).__name__.lower() for x in reversed(pieces))
        many = ", ".join(f"{n} {k}s" if n > 1 else shape_text(next(
            x for x in pieces if type(x).__name__.lower() == k), width // 2)
            for k, n in names.items())
        if kind is Difference:
            return f"{shape_text(base, width)} minus {many}"
        return f"{'union' if kind is Union else 'intersection'} of {many}"
    text = repr(shape)
    return text if len(text) <= width else f"{type(shape).__name__} (...)"


def _coefficients(built) -> dict[str, str]:
    """``{name: what it is}`` of the coefficients given as data, piecewise or as cells
    (initial values from files too)."""
    from pinn.data import NotData
    from pinn.problem import problem_tables

    out = {}
    try:
        tables = problem_tables(built.problem)
    except NotData:
        tables = {}
    for name, node in tables.items():
        t = node.table
        where = f" from {os.path.basename(t.source)}" if t.source else ""
        out[name] = (f"{' x '.join(str(len(a)) for a in t.axes)} table over "
                     f"({', '.join(str(a) for a in node.args)}), {t.method}{where}")
    for name, c in getattr(built.spec, "coefficients", {}).items():
        if c.kind == "piecewise":
            out[name] = f"piecewise, {len(c.piecewise)} pieces"
        elif c.kind == "cells":
            out[name] = (f"{' x '.join(str(len(e) - 1) for e in c.cells.edges.values())} "
                         f"cells over ({', '.join(c.cells.edges)})")
    return out


def summary_lines(file, s: dict) -> list[str]:
    """The summary as ``pinn validate`` prints it."""
    out = []
    _out = out.append
    _out(f"{file}: valid" if s.get("ok", True) else
         f"{file}: read, but the exact solution fails the manufactured-solution check (below)")
    on = s.get("field_coords", {})  # fields on a subset of the coordinates: a(x, y)
    fields = [f"{f}({', '.join(on[f])})" if f in on else f for f in s["fields"]]
    _out(f"  problem     {s['name']}: coords {', '.join(s['coords'])}; fields "
         f"{', '.join(fields)}")
    if s["params"]:
        _out("  params      " + ", ".join(
            (f"{k} in [{v['range'][0]:.6g}, {v['range'][1]:.6g}] (an input of the network)"
             if v.get("range") else
             f"{k} = {v['value']:.6g}" + (" (learnable)" if v["learnable"] else ""))
            for k, v in s["params"].items()))
    _out(f"  domain      {s['domain']}")
    for k, v in s["equations"].items():
        _out(f"  equation    {k}: {v}")
    for k, v in s["conditions"].items():
        _out(f"  condition   {k}: {v['type']}" + (f" on {v['on']}" if "on" in v else ""))
    if s["exact"]:
        for k, v in s["exact"].items():
            _out(f"  exact       {k} = {v}")
    for k, v in (s.get("coefficients") or {}).items():
        _out(f"  coefficient {k}: {v}")
    if s["reference"]:
        _out(f"  reference   {s['reference']}")
    _out(f"  training    {s['model']}, {s['steps']} steps, float{s['precision']}")
    return out


def validation(built, file, check: bool = True) -> dict:
    """``pinn validate``'s result: the summary and, with an exact solution and ``check``,
    the manufactured-solution check (``ok`` is False when a residual is too large)."""
    checks = []
    if check and built.problem.exact:
        from pinn.report.manufactured import check as mms

        checks = mms(built.checked_problem())
    plan = built.plan()
    return {"ok": all(c.ok for c in checks), "file": str(file), **problem_summary(built),
            "plan": plan.to_data()["choices"], "plan_lines": plan.lines(),
            "manufactured": [c.as_dict() for c in checks], "checks": checks}


def validation_lines(file, result: dict, asked: bool, problem) -> list[str]:
    plan = [f"  plan        {line}" for line in result.get("plan_lines", ())]
    return summary_lines(file, result) + plan + check_lines(result["checks"], asked, problem)


def check_lines(checks, asked: bool, problem) -> list[str]:
    """The manufactured-solution check's table (or why it was skipped)."""
    if not checks:
        return (["no exact solution: manufactured-solution check skipped"]
                if asked and not problem.exact else [])
    out = ["manufactured-solution check (float64, largest |residual| on the exact solution):"]
    for c in checks:
        flag = ("ok" if c.small or c.kind == "data" else "--" if c.ok  # not binding
                else "FAIL")
        note = f"  ({c.note})" if c.note else ""
        out.append(f"  {flag:4} {c.name:<16} {c.kind:<10} {c.max_residual:10.3e}   "
                   f"(terms up to {c.scale:.3g}){note}")
    return out


def environment() -> dict:
    """Versions, devices, the default precision and the machine (``pinn info``)."""
    import jax
    import jax.numpy as jnp

    return {
        "versions": versions(),
        "devices": [f"{d.platform}:{d.id} ({getattr(d, 'device_kind', '')})"
                    for d in jax.devices()],
        "default_backend": jax.default_backend(),
        "precision": "float64" if jnp.zeros(()).dtype == jnp.float64 else
        "float32 (float64 per run: --precision 64)",
        "machine": machine(),
        "malloc_tuned": os.environ.get("PINN_MALLOC", "0").lower() in ("1", "on", "true", "yes"),
    }


def environment_lines(d: dict) -> list[str]:
    out = [f"{k:<18} {v or '-'}" for k, v in d["versions"].items()]
    out += [f"{'devices':<18} {', '.join(d['devices'])}",
            f"{'precision':<18} {d['precision']}",
            f"{'machine':<18} {d['machine']['cpu']}, {d['machine']['cores']} cores",
            f"{'malloc tuning':<18} {'on' if d['malloc_tuned'] else 'off'} (PINN_MALLOC)"]
    return out
