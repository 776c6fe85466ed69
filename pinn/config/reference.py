"""``reference:`` -> the problem's reference (a file's values, or a solver), other than
``fem`` (which needs the problem itself: :func:`pinn.config.build.build`)."""

from __future__ import annotations

import os

from pinn.config import schema as S
from pinn.config.context import Context
from pinn.config.registry import references

__all__ = ["build_reference"]


def build_reference(ctx: Context, r: S.ReferenceSpec):
    """The reference of ``reference:`` other than ``fem`` (which needs the problem: see
    :func:`build`)."""
    kind = r.kind
    path = ("reference", kind)
    if kind == "file":
        from pinn.reference.file import FileReference

        full = r.file if os.path.isabs(r.file) else os.path.join(ctx.base_dir, r.file)
        if not os.path.isfile(full):
            raise ctx.error(path, f"no reference file {r.file!r} (looked for {full})")
        names = [c.name for c in ctx.coords]
        try:
            if full.endswith((".dat", ".txt", ".csv")):  # PINNacle's / COMSOL's tables
                ref = FileReference.from_table(full, names, [f.name for f in ctx.fields])
            else:
                ref = FileReference(full)
        except (OSError, ValueError) as exc:
            msg = str(exc)
            if isinstance(exc, ValueError) and msg.startswith(full + ": "):  # read, refused
                raise ctx.error(path, f"{r.file}: {msg[len(full) + 2:]}") from None
            msg = msg.replace(full + ": ", "").replace(full, r.file)
            raise ctx.error(path, f"cannot read {r.file}: {msg}") from None
        if ref.points.shape[1] != len(names):
            raise ctx.error(path, f"{r.file} has points of {ref.points.shape[1]} coordinate(s); "
                            f"this problem has {len(names)} ({', '.join(names)})")
        unknown = [k for k in ref.values if k not in {f.name for f in ctx.fields}]
        if unknown:
            raise ctx.error(path, f"{r.file} holds values of {', '.join(unknown)}, which are "
                            f"not fields of this problem ({', '.join(f.name for f in ctx.fields)})")
        return ref
    make, reals, ints = references()[kind]
    options = r.args or {}
    ctx.check_options(path, options, reals | ints)
    if len(ctx.coords) != 2:
        raise ctx.error(path, f"the {kind} reference is for 1D problems in (x, t)")
    ranged = {k: v for k, v in options.items()
              if isinstance(v, str) and v.strip() in ctx.params
              and ctx.params[v.strip()].range is not None}
    if ranged and kind != "burgers":
        raise ctx.error(path + (next(iter(ranged)),), f"the {kind} reference takes fixed "
                        "values; a ranged parameter is supported only as burgers' nu")
    opts = {k: None if k in ranged else ctx.number(v, path + (k,), what=k)
            for k, v in options.items()}
    return make(ctx.fields[0].name, {k: int(v) if k in ints else v for k, v in opts.items()})
