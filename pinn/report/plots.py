"""Plots of a run: solution | exact or reference | pointwise error, loss and parameters.

- 1D: curves; 1D + time: x-t maps;
- 2D: images with the domain mask; 2D + time: one row per snapshot time;
- 3D: slices at several heights (z); 3D + time: the middle slice at several times.

Every function writes a PNG atomically and returns its path.  matplotlib is
used headless (Agg) and imported only here.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from pinn.evaluate import EvaluationGrid as Grid
from pinn.io import write_bytes


def save_figure(fig, path, dpi: int = 110):
    """Save a matplotlib figure atomically (PNG) and close it."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", dpi=dpi)
    plt.close(fig)
    return write_bytes(path, buf.getvalue())

def _plt():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            matplotlib.use("Agg")
        except Exception:  # noqa: BLE001 - a backend already in use is fine
            pass
    import matplotlib.pyplot as plt

    return plt


@functools.cache
def _figure_class():
    from matplotlib.figure import Figure

    class ShownFigure(Figure):
        """A figure that a notebook shows as a PNG (pyplot does not track it)."""

        def _repr_png_(self) -> bytes:
            import io

            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=90)
            return buf.getvalue()

    return ShownFigure


def _subplots(plt, *args, figsize=None, **kw):
    """``plt.subplots`` with constrained layout (one layout pass, colorbars included), as a
    bare :class:`matplotlib.figure.Figure`: pyplot does not track it, so a notebook shows
    only the figures it is handed (as a PNG), and nothing has to close it."""
    fig = _figure_class()(figsize=figsize, layout="constrained")
    return fig, fig.subplots(*args, **kw)


def _panels(pred: np.ndarray, truth: np.ndarray | None, labels: Sequence[str]):
    """[(title, array, kind)] with kind 'value' or 'error'."""
    out = [(labels[0], pred, "value")]
    if truth is not None:
        out.append((labels[1], truth, "value"))
        out.append(("|error|", np.abs(pred - truth), "error"))
    return out


def _vrange(arrays):
    vals = np.concatenate([a[np.isfinite(a)].ravel() for a in arrays if a is not None] or
                          [np.zeros(1)])
    if vals.size == 0:
        return 0.0, 1.0
    lo, hi = float(vals.min()), float(vals.max())
    return (lo, hi) if hi > lo else (lo - 1e-12, hi + 1e-12)


def field_figure(grid: Grid, name: str, pred: np.ndarray, truth: np.ndarray | None,
                 path: str | os.PathLike, *, labels=("PINN", "exact"), snapshots: int = 4):
    """Solution, truth and pointwise error of one field on ``grid`` (values on the full grid
    shape, NaN outside the domain), written to ``path`` (:func:`field_plot`)."""
    return save_figure(field_plot(grid, name, pred, truth, labels=labels,
                                  snapshots=snapshots), path)


def field_plot(grid: Grid, name: str, pred: np.ndarray, truth: np.ndarray | None, *,
               labels=("PINN", "exact"), snapshots: int = 4):
    """The figure of :func:`field_figure`: a :class:`matplotlib.figure.Figure`."""
    plt = _plt()
    if grid.space_dim > 3:  # N-D: the 3-D slice through the middle of the further axes
        grid, pred, truth, name = _middle_slice(grid, pred, truth, name)
    d, timed = grid.space_dim, grid.has_time
    if d == 1 and not timed:
        return _curve_plot(plt, grid, name, pred, truth, labels)
    if d == 1 and timed:
        return _xt_plot(plt, grid, name, pred, truth, labels)
    # 2D and 3D: a list of 2D slices (rows), each with the panels (columns)
    rows = _slice_rows(grid, pred, truth, snapshots)
    return _slices_plot(plt, grid, name, rows, truth is not None, labels)


def _curve_plot(plt, grid: Grid, name: str, pred, truth, labels):
    """1D: the curves, and the error on a log scale beside them."""
    names = grid.names
    fig, axs = _subplots(plt, 1, 2 if truth is not None else 1, figsize=(10, 3.6),
                         squeeze=False)
    x = grid.axes[0]
    ax = axs[0, 0]
    ax.plot(x, pred, label=labels[0])
    if truth is not None:
        ax.plot(x, truth, "--", label=labels[1])
        axs[0, 1].semilogy(x, np.abs(pred - truth) + 1e-300)
        axs[0, 1].set_title("|error|")
        axs[0, 1].set_xlabel(names[0])
    ax.set_xlabel(names[0])
    ax.set_title(name)
    ax.legend()
    return fig


def _xt_plot(plt, grid: Grid, name: str, pred, truth, labels):
    """1D + time: x-t maps, time on the horizontal axis, x vertical."""
    names = grid.names
    x, t = grid.axes
    panels = _panels(pred, truth, labels)
    vlo, vhi = _vrange([p for _, p, k in panels if k == "value"])
    fig, axs = _subplots(plt, 1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    for ax, (title, arr, kind) in zip(axs[0], panels, strict=True):
        im = ax.imshow(arr, origin="lower", aspect="auto",
                       extent=(t[0], t[-1], x[0], x[-1]),
                       cmap="viridis" if kind == "value" else "magma",
                       vmin=vlo if kind == "value" else None,
                       vmax=vhi if kind == "value" else None)
        ax.set_title(f"{name}: {title}")
        ax.set_xlabel(names[1])
        ax.set_ylabel(names[0])
        fig.colorbar(im, ax=ax, shrink=0.85)
    return fig


def _slice_rows(grid: Grid, pred, truth, snapshots: int) -> list:
    """2D and 3D: the 2D slices to show, ``[(row title, pred2d, truth2d)]``: 2D at
    ``snapshots`` times; 3D at ``snapshots`` heights, or the middle one at as many times."""
    names = grid.names
    rows = []  # (row title, pred2d, truth2d)
    if grid.space_dim == 2:
        if grid.has_time:
            t = grid.axes[-1]
            for k in _pick(len(t), snapshots):
                rows.append((f"{names[-1]} = {t[k]:.3g}", pred[..., k],
                             None if truth is None else truth[..., k]))
        else:
            rows.append(("", pred, truth))
    else:
        z = grid.axes[2]
        if grid.has_time:
            t = grid.axes[-1]
            kz = len(z) // 2
            for k in _pick(len(t), snapshots):
                rows.append((f"{names[2]} = {z[kz]:.3g}, {names[-1]} = {t[k]:.3g}",
                             pred[:, :, kz, k], None if truth is None else truth[:, :, kz, k]))
        else:
            for kz in _pick(len(z), snapshots):
                rows.append((f"{names[2]} = {z[kz]:.3g}", pred[:, :, kz],
                             None if truth is None else truth[:, :, kz]))
    return rows


def _slices_plot(plt, grid: Grid, name: str, rows: list, has_truth: bool, labels):
    """One row of images per slice of ``rows``: solution, truth and error (common colour
    scales for the values and for the errors)."""
    names = grid.names
    xa, ya = grid.axes[0], grid.axes[1]
    ncol = 3 if has_truth else 1
    vlo, vhi = _vrange([r[1] for r in rows] + [r[2] for r in rows])
    elo, ehi = _vrange([np.abs(r[1] - r[2]) for r in rows]) if has_truth else (0, 1)
    aspect = (ya[-1] - ya[0]) / max(xa[-1] - xa[0], 1e-300)
    w = 3.4
    fig, axs = _subplots(plt, len(rows), ncol, squeeze=False,
                         figsize=((w + 1.0) * ncol, max(2.2, w * aspect + 0.6) * len(rows)))
    for i, (rtitle, p2, t2) in enumerate(rows):
        for j, (title, arr, kind) in enumerate(_panels(p2, t2, labels)):
            ax = axs[i, j]
            im = ax.imshow(arr.T, origin="lower", extent=(xa[0], xa[-1], ya[0], ya[-1]),
                           cmap="viridis" if kind == "value" else "magma",
                           vmin=vlo if kind == "value" else elo,
                           vmax=vhi if kind == "value" else ehi, interpolation="nearest")
            ax.set_title(f"{name}: {title}" + (f"\n{rtitle}" if rtitle else ""), fontsize=9)
            ax.set_xlabel(names[0])
            ax.set_ylabel(names[1])
            fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def _middle_slice(grid, pred, truth, name):
    """``grid`` and the values cut to their first three space axes (the further space axes
    fixed at their middle node, named in the returned field name)."""
    import dataclasses

    d = grid.space_dim
    mid = [len(a) // 2 for a in grid.axes[3:d]]
    index = (slice(None),) * 3 + tuple(mid) + ((slice(None),) if grid.has_time else ())
    fixed = ", ".join(f"{n} = {a[k]:.3g}"
                      for n, a, k in zip(grid.names[3:d], grid.axes[3:d], mid, strict=True))
    keep = [0, 1, 2] + ([len(grid.axes) - 1] if grid.has_time else [])
    grid = dataclasses.replace(grid, names=tuple(grid.names[i] for i in keep),
                               axes=tuple(grid.axes[i] for i in keep), space_dim=3)
    return (grid, np.asarray(pred)[index], None if truth is None else np.asarray(truth)[index],
            f"{name} ({fixed})")


def _pick(n: int, k: int) -> list[int]:
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [n // 2]


def _stage_starts(history: Sequence[Mapping]) -> list[tuple[int, str]]:
    out = []
    for row in history:
        if row.get("event") == "stage_start":
            out.append((int(row.get("step", 0)), str(row.get("optimizer", ""))))
    if not out:
        last = None
        for row in history:
            st = row.get("stage")
            if st is not None and st != last:
                out.append((int(row.get("step", 0)), str(row.get("optimizer", ""))))
                last = st
    return out


def _series(history: Sequence[Mapping], prefix: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    keys: list[str] = []
    for row in history:
        for k in row:
            if k.startswith(prefix) and k not in keys:
                keys.append(k)
    out = {}
    for k in keys:
        steps, vals = [], []
        for row in history:
            v = row.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                steps.append(row.get("step", len(steps)))
                vals.append(v)
        if steps:
            out[k[len(prefix):]] = (np.asarray(steps), np.asarray(vals, dtype=np.float64))
    return out


def loss_figure(history: Sequence[Mapping], path: str | os.PathLike) -> str | None:
    """The loss per term (and the total) against the step, log scale, stage boundaries."""
    terms = _series(history, "loss.")
    total = _series(history, "loss")
    total = {k: v for k, v in total.items() if k == ""}
    if not terms and not total:
        return None
    plt = _plt()
    fig, ax = _subplots(plt, figsize=(7.5, 4.2))
    # an energy term (pinn.Energy) may be negative: a symmetric log scale, linear near zero
    signed = any(np.any(v < 0) for _, v in (*terms.values(), *total.values()))
    if "" in total:
        s, v = total[""]
        ax.plot(s, v if signed else np.maximum(v, 1e-300), color="black", lw=1.8,
                label="total (weighted)")
    for name, (s, v) in terms.items():
        ax.plot(s, v if signed else np.maximum(v, 1e-300), lw=1.1, label=name)
    if signed:
        small = [np.min(np.abs(v[v != 0])) for _, v in (*terms.values(), *total.values())
                 if np.any(v != 0)]
        ax.set_yscale("symlog", linthresh=max(min(small, default=1e-12), 1e-300))
    else:
        ax.set_yscale("log")
    for step, opt in _stage_starts(history):
        ax.axvline(step, color="grey", ls=":", lw=1)
        ax.text(step, 1.0, f" {opt}", transform=ax.get_xaxis_transform(), va="top",
                fontsize=8, color="grey")
    ax.set_xlabel("step")
    ax.set_ylabel("mean squared residual" + (" (an energy: its mean)" if signed else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return str(save_figure(fig, path))


def params_figure(history: Sequence[Mapping], path: str | os.PathLike,
                  true_values: Mapping[str, float] | None = None) -> str | None:
    """Learnable PDE parameters against the step (with the true value, when known)."""
    series = _series(history, "param.")
    if not series:
        return None
    plt = _plt()
    n = len(series)
    fig, axs = _subplots(plt, 1, n, figsize=(5 * n, 3.6), squeeze=False)
    for ax, (name, (s, v)) in zip(axs[0], series.items(), strict=True):
        ax.plot(s, v, label=name)
        if true_values and name in true_values:
            ax.axhline(true_values[name], color="black", ls="--", lw=1, label="true")
        ax.set_xlabel("step")
        ax.set_title(name)
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    return str(save_figure(fig, path))


def error_maps_figure(grid: Grid, name: str, errors: Mapping[str, np.ndarray],
                      path: str | os.PathLike, snapshots: int = 3) -> str:
    """Pointwise errors of several methods side by side (one column per method), on a
    common colour scale."""
    plt = _plt()
    from matplotlib.colors import LogNorm

    methods = list(errors)
    d, timed = grid.space_dim, grid.has_time
    absval = [np.abs(e) for e in errors.values()]
    finite = np.concatenate([a[np.isfinite(a)].ravel() for a in absval])
    ehi = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    pos = finite[finite > 0]
    elo = max(float(pos.min()) if pos.size else ehi * 1e-8, ehi * 1e-8)
    norm = LogNorm(vmin=elo, vmax=ehi) if ehi > elo * 10 else None
    if d == 1 and not timed:
        fig, ax = _subplots(plt, figsize=(7, 3.6))
        for m in methods:
            ax.semilogy(grid.axes[0], np.abs(errors[m]) + 1e-300, label=m)
        ax.set_xlabel(grid.names[0])
        ax.set_title(f"{name}: |error|")
        ax.legend()
        return str(save_figure(fig, path))
    if d == 1:
        rows = [("", {m: e for m, e in errors.items()})]
        x, t = grid.axes
        extent, xlabel, ylabel, transpose = (t[0], t[-1], x[0], x[-1]), grid.names[1], \
            grid.names[0], False
    else:
        if timed:
            t = grid.axes[-1]
            ks = _pick(len(t), snapshots)
            if d == 2:
                rows = [(f"{grid.names[-1]} = {t[k]:.3g}",
                         {m: e[..., k] for m, e in errors.items()}) for k in ks]
            else:
                kz = len(grid.axes[2]) // 2
                rows = [(f"{grid.names[-1]} = {t[k]:.3g}",
                         {m: e[:, :, kz, k] for m, e in errors.items()}) for k in ks]
        elif d == 2:
            rows = [("", dict(errors))]
        else:
            kz = len(grid.axes[2]) // 2
            rows = [(f"{grid.names[2]} = {grid.axes[2][kz]:.3g}",
                     {m: e[:, :, kz] for m, e in errors.items()})]
        xa, ya = grid.axes[0], grid.axes[1]
        extent, xlabel, ylabel, transpose = (xa[0], xa[-1], ya[0], ya[-1]), grid.names[0], \
            grid.names[1], True
    fig, axs = _subplots(plt, len(rows), len(methods), figsize=(4.2 * len(methods),
                                                              3.4 * len(rows)), squeeze=False)
    for i, (rtitle, maps) in enumerate(rows):
        for j, m in enumerate(methods):
            arr = np.abs(maps[m])
            ax = axs[i, j]
            arr = np.where(arr > 0, arr, elo) if norm is not None else arr
            im = ax.imshow(arr.T if transpose else arr, origin="lower", aspect="auto",
                           extent=extent, cmap="magma", norm=norm,
                           vmin=None if norm is not None else 0,
                           vmax=None if norm is not None else ehi)
            ax.set_title(f"{m}: |error| of {name}" + (f"\n{rtitle}" if rtitle else ""),
                         fontsize=9)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            fig.colorbar(im, ax=ax, shrink=0.8)
    return str(save_figure(fig, path))


def table_figure(header: Sequence[str], rows: Sequence[Sequence[str]], path: str | os.PathLike,
                 title: str = "") -> str:
    """A table as a PNG (for ``pinn compare``)."""
    plt = _plt()
    fig, ax = _subplots(plt, figsize=(min(2.0 + 1.6 * len(header), 16), 0.9 + 0.42 * len(rows)))
    ax.axis("off")
    tab = ax.table(cellText=[list(r) for r in rows], colLabels=list(header), loc="center",
                   cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(9)
    tab.scale(1, 1.3)
    if title:
        ax.set_title(title)
    return str(save_figure(fig, path))


def pareto_figure(curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                  path: str | os.PathLike, *, marks: Mapping[str, tuple[float, float]] = (),
                  points: Mapping[str, tuple[Sequence[float], Sequence[float]]] = (),
                  title: str = "") -> str:
    """Error against wall time, log-log (for ``pinn compare``): ``curves[label] = (seconds,
    errors)`` (a FEM refinement sequence per element, a PINN's training history) drawn as
    lines with markers; ``points[label]`` as markers only (FEM with coarser time steps);
    ``marks[label] = (seconds, error)`` ringed points (the matched FEM levels)."""
    plt = _plt()
    fig, ax = _subplots(plt, figsize=(6.4, 4.6))
    for label, (ts, es) in dict(points).items():
        ts, es = np.asarray(ts, float), np.asarray(es, float)
        keep = np.isfinite(ts) & np.isfinite(es) & (ts > 0) & (es > 0)
        if keep.any():
            ax.loglog(ts[keep], es[keep], "x", ms=5, color="0.45", label=label)
    for label, (ts, es) in curves.items():
        ts, es = np.asarray(ts, float), np.asarray(es, float)
        keep = np.isfinite(ts) & np.isfinite(es) & (ts > 0) & (es > 0)
        if keep.any():
            pinn_like = label.startswith("PINN")
            ax.loglog(ts[keep], es[keep], "-" if pinn_like else "-o", lw=2 if pinn_like else 1.2,
                      ms=4, label=label)
    for label, (t, e) in dict(marks).items():
        if t > 0 and e > 0 and math.isfinite(t) and math.isfinite(e):
            ax.loglog([t], [e], "o", ms=13, mfc="none", mew=1.6, label=label)
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("relative L2 error")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return str(save_figure(fig, path))
