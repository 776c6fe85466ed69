"""Observed data for ``data:`` conditions: read from a CSV/NPZ file, or sampled from the
exact (or reference) solution."""

from __future__ import annotations

import os

from pinn.config import schema as S
from pinn.config.context import RESERVED, Context
from pinn.config.errors import ConfigError, suggest
from pinn.dsl import expr as E


def data_condition(ctx: Context, c: S.ConditionSpec, path, domain, exact, reference):
    """The :class:`pinn.conditions.Data` of a ``data:`` condition (``reference``: the
    problem's reference, ``"fem"`` for the FEM reference that does not exist yet)."""
    from pinn import conditions as C

    ranged = [p.name for p in ctx.params.values() if p.range is not None]
    if ranged:  # the data would need a value of each ranged parameter per point
        raise ctx.error(tuple(path), f"data conditions are not supported in a parametric "
                        f"problem yet (ranged: {', '.join(ranged)}); give the parameters a "
                        "value or drop this condition")
    d = c.data
    dpath = tuple(path) + ("data",)
    want = ([ctx.field(n, dpath + ("fields", i)) for i, n in enumerate(d.fields)]
            if d.fields else None)
    if d.file is not None:
        points, values = load_data_file(ctx, d.file, dpath + ("file",), want)
        return C.Data(points, values, noise=c.noise, weight=c.weight, source=f"file {d.file}")
    g = d.generate
    points, values = generate_data(ctx, g, dpath + ("generate",), domain, exact, reference, want)
    noise = None
    if g.noise > 0:  # a fraction of each field's standard deviation
        import numpy as np

        rng = np.random.default_rng(g.seed + 1)
        sigmas = []
        for f in values:
            sigma = g.noise * (float(np.std(values[f])) or 1.0)
            values[f] = values[f] + sigma * rng.standard_normal(values[f].shape)
            sigmas.append(sigma)
        noise = float(np.mean(sigmas))  # Data.noise: the absolute standard deviation
    note = f"generated from the {g.from_} solution (n={g.n}, noise={g.noise}, seed={g.seed})"
    return C.Data(points, values, noise=noise, weight=c.weight, source=note)


def load_data_file(ctx: Context, rel: str, path, want):
    """Points and values from a CSV (header row of names) or NPZ file."""
    import numpy as np

    full = rel if os.path.isabs(rel) else os.path.join(ctx.base_dir, rel)
    names = [c.name for c in ctx.coords]
    if not os.path.isfile(full):
        raise ctx.error(path, f"no data file {rel!r} (looked for {full})")
    try:
        if full.lower().endswith(".npz"):
            with np.load(full, allow_pickle=False) as z:
                cols = {k: np.asarray(z[k], dtype=np.float64) for k in z.files}
            if "points" in cols:
                pts = cols.pop("points")
                if pts.ndim != 2 or pts.shape[1] != len(names):
                    raise ctx.error(path, f"'points' in {rel} has shape {pts.shape}; expected "
                                    f"[N, {len(names)}] with columns {', '.join(names)}")
                for i, n in enumerate(names):
                    cols[n] = pts[:, i]
        else:
            with open(full, encoding="utf-8") as fh:
                header = fh.readline()
            heads = [h.strip() for h in header.replace(";", ",").split(",")]
            arr = np.loadtxt(full, delimiter=",", skiprows=1, ndmin=2)
            if arr.shape[1] != len(heads):
                raise ctx.error(path, f"{rel}: the header names {len(heads)} columns but rows "
                                f"have {arr.shape[1]}")
            cols = {h: arr[:, i] for i, h in enumerate(heads)}
    except ConfigError:
        raise
    except (OSError, ValueError) as exc:
        raise ctx.error(path, f"cannot read {rel}: {exc}") from None
    missing = [n for n in names if n not in cols]
    if missing:
        raise ctx.error(path, f"{rel} has no column for the coordinate(s) "
                        f"{', '.join(missing)} (found: {', '.join(cols)})")
    fields = want if want is not None else [f for f in ctx.fields if f.name in cols]
    if not fields:
        declared = ", ".join(f.name for f in ctx.fields)
        raise ctx.error(path, f"{rel} has no column for any field ({declared}; found: "
                        f"{', '.join(cols)})")
    for f in fields:
        if f.name not in cols:
            raise ctx.error(path, f"{rel} has no column '{f.name}' (found: {', '.join(cols)})")
    pts = np.stack([cols[n].reshape(-1) for n in names], axis=1)
    return pts, {f: cols[f.name].reshape(-1) for f in fields}


def generate_data(ctx: Context, g: S.GenerateArgs, path, domain, exact, reference, want):
    """Observations sampled from the exact (or reference) solution at random points."""
    import jax
    import numpy as np

    from pinn.config.registry import samplers

    pts = domain.sample_interior(jax.random.key(g.seed), g.n, samplers()[g.sampler]())
    pts = np.asarray(pts, dtype=np.float64)
    if g.from_ == "exact":
        if not exact:
            raise ctx.error(path, "generate from: exact needs an exact solution (add exact: "
                            "{u: ...}) or use from: reference")
        from pinn.dsl.evaluate import evaluate_on_points

        space = getattr(domain, "space", domain)  # a shape, or a shape times time
        values = {}
        with jax.enable_x64(True):
            for f in want if want is not None else list(exact):
                if f not in exact:
                    raise ctx.error(path, f"no exact solution for field '{f.name}'")
                values[f] = np.asarray(evaluate_on_points(exact[f], ctx.coords, pts,
                                                          spatial=ctx.coords[:space.dim]),
                                       dtype=np.float64)
        return pts, values
    if reference is None:
        raise ctx.error(path, "generate from: reference needs a reference: section")
    if reference == "fem":
        raise ctx.error(path, "data cannot be generated from a FEM reference of the same "
                        "problem; use from: exact, or a file")
    ref = reference(pts)
    fields = want if want is not None else [f for f in ctx.fields if f.name in ref]
    return pts, {f: np.asarray(ref[f.name], dtype=np.float64) for f in fields}


# ---------------------------------------------------------------------------
# coefficients and initial values given as data


def _spatial(ctx: Context, spec: S.ProblemSpec) -> tuple:
    return ctx.coords[:-1] if spec.domain.time is not None else ctx.coords


def file_table(ctx: Context, spec: S.ProblemSpec | None, name: str, fv, path, *, over=None):
    """The coefficient ``name`` read from ``fv.file`` (a :class:`~pinn.config.schema.
    FileValues` or a coefficient spec with ``file``), as an expression of ``fv.coords``
    (default ``over``, else the spatial coordinates, or all of them when the file has a
    column for each)."""
    from pinn.dsl import tables as T

    fpath = tuple(path) + ("file",)
    full = fv.file if os.path.isabs(fv.file) else os.path.join(ctx.base_dir, fv.file)
    if not os.path.isfile(full):
        raise ctx.error(fpath, f"no file {fv.file!r} (looked for {full})")
    try:
        data, names = T.read_table(full)
    except (OSError, ValueError) as exc:
        raise ctx.error(fpath, f"cannot read {fv.file}: {exc}") from None
    known = {c.name: c for c in ctx.coords}
    if fv.coords is not None:
        for i, n in enumerate(fv.coords):
            if n not in known:
                raise ctx.error(tuple(path) + ("coords", i), f"unknown coordinate '{n}'"
                                f"{suggest(n, known)} (coords: {', '.join(known)})")
        args = tuple(known[n] for n in fv.coords)
    elif names is not None and all(n in known for n in names[:-1]):
        args = tuple(known[n] for n in names[:-1])
    else:
        space = tuple(over) if over is not None else _spatial(ctx, spec)
        args = space if data.shape[1] != len(ctx.coords) + 1 or over is not None \
            else ctx.coords
    if data.shape[1] != len(args) + 1:
        cols = ", ".join(c.name for c in args)
        raise ctx.error(fpath, f"{fv.file} has {data.shape[1]} column(s); {name} of ({cols}) "
                        f"needs {len(args) + 1}: the coordinates {cols}, then the value (or "
                        "name the columns with coords: [...])")
    try:
        table = T.table_from_points(data[:, :-1], data[:, -1], fv.interpolation or "linear",
                                    resample=fv.resample, source=full)
    except ValueError as exc:
        raise ctx.error(fpath, str(exc).replace(full + ": ", fv.file + ": ")) from None
    return E.Tabulated(name, table, args)


def coefficients(ctx: Context, spec: S.ProblemSpec) -> None:
    """``coefficients:``: data tables, piecewise expressions and tables of cells, each
    a name later expressions may use."""
    from pinn.dsl.builders import cells, piecewise

    for name, c in spec.coefficients.items():
        path = ("coefficients", name)
        if name in RESERVED:
            raise ctx.error(path, f"'{name}' is a built-in name of the PDE language; choose "
                            "another name")
        if name in ctx.namespace:
            raise ctx.error(path, f"'{name}' is already declared (a coordinate, field, "
                            "parameter or definition); choose another name")
        kind = c.kind
        if kind == "file":
            node = file_table(ctx, spec, name, c, path)
        elif kind == "piecewise":
            pieces = []
            last = len(c.piecewise) - 1
            for i, p in enumerate(c.piecewise):
                ppath = path + ("piecewise", i)
                if p.where is None and i != last:
                    raise ctx.error(ppath, "only the last piece may go without 'where' (the "
                                    "value everywhere else)")
                value = ctx.expr(p.value, ppath + ("value",), what="value")
                if p.where is None:
                    pieces.append(value)
                    continue
                cond = ctx.expr(p.where, ppath + ("where",), what="condition")
                if not isinstance(cond, (E.Compare, E.And, E.Or, E.Not)):
                    raise ctx.error(ppath + ("where",), f"'{p.where}' is not a condition; "
                                    "write a comparison such as \"x < 0.5\"")
                pieces.append((cond, value))
            node = piecewise(*pieces)
        else:
            cpath = path + ("cells",)
            known = {co.name: co for co in ctx.coords}
            over = []
            for n in c.cells.edges:
                if n not in known:
                    raise ctx.error(cpath + ("edges", n), f"unknown coordinate '{n}'"
                                    f"{suggest(n, known)} (coords: {', '.join(known)})")
                over.append(known[n])
            values = _cell_values(ctx, c.cells.values, cpath + ("values",))
            try:
                node = cells(over, list(c.cells.edges.values()), values)
            except (TypeError, ValueError) as exc:
                raise ctx.error(cpath, str(exc).removeprefix("cells: ")) from None
        ctx.no_fields(node, path, "a coefficient cannot use fields ({names}); write it in "
                      "the coordinates and parameters")
        ctx.namespace[name] = node


def _cell_values(ctx: Context, values, path):
    """The nested lists of a table of cells, each entry parsed as an expression."""
    if isinstance(values, list):
        return [_cell_values(ctx, v, tuple(path) + (i,)) for i, v in enumerate(values)]
    if isinstance(values, bool) or not isinstance(values, (int, float, str)):
        raise ctx.error(path, f"a cell value is a number or an expression, got {values!r}")
    return ctx.expr(values, path, what="cell value")
