"""Observed data for ``data:`` conditions: read from a CSV/NPZ file, or sampled from the
exact (or reference) solution."""

from __future__ import annotations

import os

from pinn.config import schema as S
from pinn.config.context import Context
from pinn.config.errors import ConfigError


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
