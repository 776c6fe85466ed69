"""Atomic checkpoints of the training state (one ``.npz`` file per checkpoint).

A checkpoint holds every leaf of a pytree (parameters, optimiser state, weighting state,
PRNG key, current batch, counters) plus JSON metadata. Files are written to a temporary
name in the same folder, flushed to disk, then renamed with :func:`os.replace`, so a
checkpoint file either exists complete or not at all. Readers ignore temporary files.

Restoring needs a template pytree with the same structure (the loop rebuilds one from the
problem); the structure, shapes and dtypes are checked against the metadata. A resume
takes the newest *intact* checkpoint (:func:`intact_checkpoint`: every member's CRC and
every leaf the header lists), so a file damaged after it was written (a full disk, a bad
copy) costs the steps since the one before, not the run.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from pinn.io import write_bytes

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "latest_checkpoint",
    "list_checkpoints",
    "verify_checkpoint",
    "intact_checkpoint",
    "CheckpointError",
]

_NAME = re.compile(r"^ckpt_(\d{9})\.npz$")


class CheckpointError(RuntimeError):
    """A checkpoint cannot be read or does not match the run that tries to resume from it."""


def _is_key(leaf: Any) -> bool:
    return hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _encode(leaf: Any) -> tuple[np.ndarray, dict]:
    if _is_key(leaf):
        data = np.asarray(jax.random.key_data(leaf))
        return data, {"key_impl": str(jax.random.key_impl(leaf)), "shape": list(leaf.shape)}
    arr = np.asarray(leaf)
    info = {"dtype": arr.dtype.name, "shape": list(arr.shape)}
    if arr.dtype.kind not in "biufc":  # e.g. bfloat16 (ml_dtypes): store the raw bytes
        arr = np.frombuffer(arr.tobytes(), np.uint8).copy()
        info["raw"] = True
    return arr, info


def save_checkpoint(
    directory: str | os.PathLike, step: int, tree: Any, meta: dict, *, keep: int | None = 3
) -> Path:
    """Save ``tree`` (any pytree of arrays) and JSON-able ``meta`` as ``ckpt_<step>.npz``.

    Atomic; keeps the newest ``keep`` checkpoints (``None``: all). Over several processes
    (:mod:`pinn.distributed`) every process calls this (arrays sharded over processes are
    gathered) and process 0 alone writes; all return the path.
    """
    from pinn.distributed import is_main, to_host

    directory = Path(directory)
    leaves, treedef = jax.tree.flatten(tree)
    arrays, infos = {}, []
    for i, leaf in enumerate(to_host(leaves)):
        arr, info = _encode(leaf)
        arrays[f"leaf_{i:05d}"] = arr
        infos.append(info)
    if not is_main():
        return directory / f"ckpt_{int(step):09d}.npz"
    header = {"step": int(step), "treedef": str(treedef), "leaves": infos, "meta": meta}
    buffer = io.BytesIO()
    np.savez(buffer, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    path = write_bytes(directory / f"ckpt_{int(step):09d}.npz", buffer.getvalue())
    if keep is not None:
        for old in list_checkpoints(directory)[:-keep]:
            old.unlink(missing_ok=True)
    return path


def list_checkpoints(directory: str | os.PathLike) -> list[Path]:
    """Complete checkpoint files in ``directory``, oldest first (temporary files ignored)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if _NAME.match(p.name)]
    return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)))


def latest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint in ``directory``, or ``None``."""
    found = list_checkpoints(directory)
    return found[-1] if found else None


def verify_checkpoint(path: str | os.PathLike) -> dict:
    """The header of the checkpoint at ``path`` once the whole file is checked: a readable
    zip whose members all match their CRC, a header that parses, and every leaf it lists
    present with the recorded shape. Raises :class:`CheckpointError` saying what is wrong."""
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
            if bad is not None:
                raise CheckpointError(f"checkpoint {str(path)!r} is damaged (member {bad!r} "
                                      "fails its CRC)")
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        raise CheckpointError(f"checkpoint {str(path)!r} is unreadable ({err})") from err
    header = read_header(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            for i, info in enumerate(header["leaves"]):
                arr = data[f"leaf_{i:05d}"]
                want = (tuple(info["shape"]) if "key_impl" not in info and not info.get("raw")
                        else None)
                if want is not None and arr.shape != want:
                    raise CheckpointError(f"checkpoint {str(path)!r}: leaf {i} has shape "
                                          f"{list(arr.shape)}, its header says {list(want)}")
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as err:
        raise CheckpointError(f"checkpoint {str(path)!r} is incomplete ({err})") from err
    return header


def intact_checkpoint(directory: str | os.PathLike) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest checkpoint in ``directory`` that :func:`verify_checkpoint` accepts (or
    ``None``), and the newer ones it skipped, each with the reason."""
    skipped = []
    for path in reversed(list_checkpoints(directory)):
        try:
            verify_checkpoint(path)
        except CheckpointError as err:
            skipped.append((path, str(err)))
            continue
        return path, skipped
    return None, skipped


def read_header(path: str | os.PathLike) -> dict:
    """The metadata of a checkpoint (step, tree structure, leaf infos, ``meta``)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["__header__"].tobytes().decode())
        if not isinstance(header, dict) or not {"step", "treedef", "leaves", "meta"} <= set(
                header):
            raise ValueError("the header lacks step, treedef, leaves or meta")
        return header
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise CheckpointError(
            f"cannot read checkpoint {str(path)!r}: {err}. Delete it or resume from another "
            "checkpoint."
        ) from err


def load_checkpoint(path: str | os.PathLike, template: Any) -> tuple[Any, dict]:
    """Load a checkpoint into the structure of ``template``; returns ``(tree, header)``.

    Raises :class:`CheckpointError` if the file is unreadable or its structure, shapes or
    dtypes differ from the template's.
    """
    header = read_header(path)
    leaves, treedef = jax.tree.flatten(template)
    if header["treedef"] != str(treedef) or len(header["leaves"]) != len(leaves):
        raise CheckpointError(
            f"checkpoint {str(path)!r} holds a different state structure than this run "
            "(another model, optimiser, weighting or loss terms). Resume with the settings it "
            "was written with, or start a fresh run without resume."
        )
    out = []
    with np.load(path, allow_pickle=False) as data:
        for i, (leaf, info) in enumerate(zip(leaves, header["leaves"], strict=True)):
            arr = data[f"leaf_{i:05d}"]
            if "key_impl" in info:
                out.append(jax.random.wrap_key_data(arr, impl=info["key_impl"]))
                continue
            want = np.dtype(getattr(leaf, "dtype", np.asarray(leaf).dtype))
            if info.get("raw"):
                arr = np.frombuffer(arr.tobytes(), want).reshape(info["shape"])
            shape = tuple(getattr(leaf, "shape", np.shape(leaf)))
            if arr.dtype != want or arr.shape != shape:
                raise CheckpointError(
                    f"checkpoint {str(path)!r}: leaf {i} is {arr.dtype}{list(arr.shape)} but this "
                    f"run expects {want}{list(shape)} (precision or model size changed?). Resume "
                    "with the same precision and model, or start a fresh run."
                )
            out.append(jax.numpy.asarray(arr))
    return jax.tree.unflatten(treedef, out), header
