"""Files: atomic writes, JSON that is data, and the cache folder.

Every file ``pinn`` writes goes through :func:`atomic_write`: a temporary name in the same
folder (``.NAME.tmp-PID-HEX``, which readers ignore), flushed to disk, then renamed with
:func:`os.replace`, so a run killed at any moment leaves the old file or the new one, never
a torn one. Files are data (JSON, npz without pickles), never code. Files are created
with mode ``0o666`` less the umask (like ``open``), so colleagues sharing a project folder
read them as they read any other file.

A write that fails (a full disk, no permission, a read-only file system) raises
:class:`WriteError`, an ``OSError`` naming the file (never its temporary) and saying what
was kept: the old file, untouched, or none.

Every file the package reads goes through :func:`regular_file` and the readers built on it
(:func:`read_text_file`, :func:`read_bytes_file`, :func:`read_json_file`,
:func:`read_npz_file`, :func:`read_npy_file`), and what a JSON file holds is checked
against the kinds of value each key must hold (:class:`Kind`, :func:`check_json`): a fault
is :class:`BadFile`, one line naming the file, the key, what it must be and what to do.

A run folder is locked while a command writes into it (:func:`lock_run_folder`: an
advisory ``flock`` on ``RUN/.lock``, released when the process ends, also by a crash or a
kill), and whoever holds the lock removes the temporary files a killed writer left.

Test hook (inert unless set): ``PINN_TEST_SLOW_WRITES=SECONDS`` sleeps that long inside
every atomic write, after the temporary file is written and before the rename, so that a
fault test can kill a process in the middle of a write (tests/test_faults.py).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import re
import stat
import time
import uuid
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BadFile",
    "regular_file",
    "read_text_file",
    "read_bytes_file",
    "read_json_file",
    "read_npz_file",
    "read_npy_file",
    "Kind",
    "NUMBER",
    "INTEGER",
    "TEXT",
    "BOOLEAN",
    "list_of",
    "mapping_of",
    "mapping",
    "check_json",
    "WriteError",
    "make_folder",
    "refuse_special",
    "atomic_write",
    "open_new",
    "write_text",
    "write_bytes",
    "write_json",
    "write_jsonl",
    "write_yaml",
    "write_npz",
    "clean_json",
    "cache_dir",
    "TMP_MARK",
    "LOCK_FILE",
    "RunLock",
    "FolderInUse",
    "lock_run_folder",
    "check_not_in_use",
    "folder_in_use",
    "remove_stale_temporaries",
    "run_folder",
    "write_config",
    "COMMAND_FILE",
    "write_command",
    "read_command",
    "read_points",
    "read_params",
    "check_queries",
    "write_values",
    "write_query_values",
]

#: Part of every temporary file's name (``.NAME.tmp-PID-HEX``): readers skip such files.
TMP_MARK = ".tmp-"


# ---------------------------------------------------------------------------
# reading: every file the package reads is checked before it is opened

#: The most a text file the package reads (a run folder's JSON, YAML, history; a points
#: file) may hold; a larger one is refused before it is read.
MAX_TEXT_BYTES = 256 * 2**20
#: The most an ``.npz`` file's arrays may hold, uncompressed, together.
MAX_NPZ_BYTES = 8 * 2**30


class BadFile(ValueError):
    """A file the package reads is not what it must be (its message: one line naming the
    file, what is wrong and what to do)."""


def _unreadable(p: Path, exc: OSError) -> BadFile:
    return BadFile(f"{p}: cannot be read ({exc.strerror or exc}); make it (and the folders "
                   "above it) readable")


def regular_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path``, checked before anything opens it: a regular file (a link to one is
    followed). A FIFO, a device, a socket or a folder is refused with :class:`BadFile` (it
    would block or never end), as is a file that cannot be reached (no permission); a
    missing file raises ``FileNotFoundError``."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(p)) from None
    except OSError as exc:
        raise _unreadable(p, exc) from None
    if not stat.S_ISREG(mode):
        raise BadFile(f"{p}: {_kind(mode)}, not a regular file; a {what} must be a regular "
                      "file: put one there")
    return p


def read_bytes_file(path: str | os.PathLike, what: str = "file",
                    limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of ``path``, checked by :func:`regular_file` and at most ``limit`` bytes;
    :class:`BadFile` naming the fault (a file without read permission included)."""
    p = regular_file(path, what)
    try:
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise _unreadable(p, exc) from None
    if len(data) > limit:
        raise BadFile(f"{p}: more than {limit} bytes, too large for a {what}; give the "
                      f"{what} it should be")
    return data


def read_text_file(path: str | os.PathLike, what: str = "file",
                   limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark dropped), read by
    :func:`read_bytes_file`; :class:`BadFile` naming the fault."""
    p = Path(path)
    data = read_bytes_file(p, what, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadFile(f"{p}: not UTF-8 text (byte {exc.start}); give the {what} as UTF-8 "
                      "text") from None


def read_json_file(path: str | os.PathLike, what: str = "JSON file",
                   limit: int = MAX_TEXT_BYTES) -> Any:
    """The JSON document of ``path`` (:func:`read_text_file`); :class:`BadFile` for what is
    not JSON or nests too deeply."""
    text = read_text_file(path, what, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadFile(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column "
                      f"{exc.colno}); the {what} is damaged: write it again") from None
    except RecursionError:
        raise BadFile(f"{path}: JSON nested too deeply to be a {what}") from None


def read_npz_file(path: str | os.PathLike, what: str = "npz file",
                  limit: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` at ``path`` (no pickles), checked before they are read:
    each array's header (shape, dtype) against the size its archive entry declares, and
    the total against ``limit``; :class:`BadFile` for a damaged, truncated or oversized
    file."""
    p = regular_file(path, what)
    try:
        fh = open(p, "rb")
    except OSError as exc:  # (no permission: not damaged, closed to us)
        raise _unreadable(p, exc) from None
    try:
        with fh, zipfile.ZipFile(fh) as zf:
            total = 0
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with zf.open(info) as member:
                    shape, dtype = _npy_header(member)
                if dtype.hasobject:
                    raise BadFile(f"{p}: the array {info.filename[:-4]!r} holds Python "
                                  "objects, which are never loaded; write numbers")
                need = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
                if need > info.file_size:
                    raise BadFile(f"{p}: the array {info.filename[:-4]!r} declares {shape} "
                                  f"{dtype} but its entry holds {info.file_size} bytes; the "
                                  f"{what} is damaged: write it again")
                total += need
                if total > limit:
                    raise BadFile(f"{p}: its arrays hold more than {limit} bytes, too large "
                                  f"for a {what}")
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
    except BadFile:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError,
            MemoryError) as exc:
        why = str(exc) or type(exc).__name__
        raise BadFile(f"{p}: not a readable npz ({why}); the {what} is damaged or "
                      "truncated: write it again") from None


def _npy_header(fh) -> tuple[tuple, np.dtype]:
    """The shape and dtype a ``.npy`` stream declares (its header only, nothing loaded)."""
    version = np.lib.format.read_magic(fh)
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read(fh)
    return shape, dtype


def read_npy_file(path: str | os.PathLike, what: str = "npy file",
                  limit: int = MAX_NPZ_BYTES) -> np.ndarray:
    """The array of the ``.npy`` at ``path`` (no pickles), its header (shape, dtype) checked
    against the file's size and ``limit`` before the data is read; :class:`BadFile` for a
    damaged, truncated or oversized file."""
    p = regular_file(path, what)
    try:
        fh = open(p, "rb")
    except OSError as exc:  # (no permission: not damaged, closed to us)
        raise _unreadable(p, exc) from None
    try:
        with fh:
            size = os.fstat(fh.fileno()).st_size
            shape, dtype = _npy_header(fh)
            if dtype.hasobject:
                raise BadFile(f"{p}: the array holds Python objects, which are never loaded; "
                              "write numbers")
            need = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
            if need > limit:
                raise BadFile(f"{p}: its array holds more than {limit} bytes, too large for "
                              f"a {what}")
            if need > size - fh.tell():
                raise BadFile(f"{p}: the array declares {shape} {dtype} but the file holds "
                              f"{size - fh.tell()} bytes of data; the {what} is damaged or "
                              "truncated: write it again")
            fh.seek(0)
            return np.load(fh, allow_pickle=False)
    except BadFile:
        raise
    except (OSError, ValueError, EOFError, MemoryError) as exc:
        why = str(exc) or type(exc).__name__
        raise BadFile(f"{p}: not a readable npy ({why}); the {what} is damaged or "
                      "truncated: write it again") from None


# ---------------------------------------------------------------------------
# what a JSON file holds: the kind of value at each key


@dataclass(frozen=True)
class Kind:
    """A kind of JSON value a file must hold at a key: ``name`` (as messages say it) and
    ``test`` (of the value itself); ``items``: the kind of every entry of a list or an
    object; ``keys``: the kinds of an object's known keys (a key ending in ``*`` stands for
    every key beginning so; other keys are free); ``required``: the keys it must have;
    ``null``: null is allowed too (:meth:`or_null`)."""

    name: str
    test: Callable[[Any], bool]
    items: Kind | None = None
    keys: Mapping[str, Kind] | None = None
    required: tuple[str, ...] = ()
    null: bool = False

    def or_null(self) -> Kind:
        """This kind, or null."""
        return replace(self, name=f"{self.name} or null", null=True)

    def fault(self, value: Any, at: tuple = ()) -> tuple[tuple, Kind, Any] | None:
        """``None`` when ``value`` is of this kind; else where the first fault is (the keys
        and indices leading to it), the kind expected there and what is there."""
        if value is None and self.null:
            return None
        if not self.test(value):
            return at, self, value
        for key in self.required if isinstance(value, dict) else ():
            if key not in value:
                return (*at, key), self._kind_of(key) or _ANY, _MISSING
        if self.items is not None and isinstance(value, (dict, list)):
            for k, v in value.items() if isinstance(value, dict) else enumerate(value):
                found = self.items.fault(v, (*at, k))
                if found is not None:
                    return found
        if self.keys is not None and isinstance(value, dict):
            for k, v in value.items():
                kind = self._kind_of(k)
                found = None if kind is None else kind.fault(v, (*at, k))
                if found is not None:
                    return found
        return None

    def _kind_of(self, key: str) -> Kind | None:
        keys = self.keys or {}
        if key in keys:
            return keys[key]
        return next((kind for k, kind in keys.items()
                     if k.endswith("*") and key.startswith(k[:-1])), None)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


NUMBER = Kind("a number", _is_number)
INTEGER = Kind("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
TEXT = Kind("text", lambda v: isinstance(v, str))
BOOLEAN = Kind("true or false", lambda v: isinstance(v, bool))
_ANY = Kind("a value", lambda v: True)
_MISSING = object()


def list_of(kind: Kind, name: str = "a list") -> Kind:
    """A list whose every entry is of ``kind``."""
    return Kind(name, lambda v: isinstance(v, list), items=kind)


def mapping_of(kind: Kind, name: str = "an object") -> Kind:
    """An object (``{name: value}``) whose every value is of ``kind``."""
    return Kind(name, lambda v: isinstance(v, dict), items=kind)


def mapping(keys: Mapping[str, Kind], name: str = "an object",
            required: tuple[str, ...] = ()) -> Kind:
    """An object whose known ``keys`` hold values of their kinds (see :class:`Kind`)."""
    return Kind(name, lambda v: isinstance(v, dict), keys=dict(keys), required=required)


def _key_path(at: tuple) -> str:
    """``rel_l2["u"]``, ``stages[0]``, ``loss.pde``: the keys leading to a value."""
    out = ""
    for i, k in enumerate(at):
        if isinstance(k, int):
            out += f"[{k}]"
        elif i == 0 and k and k.isprintable() and not any(c in k for c in ' []"\''):
            out += k
        else:
            out += f"[{json.dumps(k)}]"
    return out


def _shown(v: Any) -> str:
    if v is _MISSING:
        return "missing"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f"the text {json.dumps(v[:40] + ('...' if len(v) > 40 else ''))}"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if isinstance(v, list):
        return "a list"
    return "an object" if isinstance(v, dict) else type(v).__name__


def check_json(value: Any, kind: Kind, path: str | os.PathLike, fix: str, *,
               line: int | None = None) -> Any:
    """``value`` (read from the file ``path``, at its ``line``) when it is of ``kind``; else
    :class:`BadFile`: one line naming the file, the key, what it must be and what it is,
    then ``fix`` (what to do)."""
    found = kind.fault(value)
    if found is None:
        return value
    at, want, got = found
    where = f"{path}" + (f", line {line}" if line is not None else "")
    if not at:
        raise BadFile(f"{where}: must hold {want.name}, not {_shown(got)}; {fix}")
    if got is _MISSING:
        raise BadFile(f"{where}: {_key_path(at)} is missing; {fix}")
    raise BadFile(f"{where}: {_key_path(at)} must be {want.name}, not {_shown(got)}; {fix}")


# ---------------------------------------------------------------------------
# writing: atomically, never onto a special file; a failure names the file


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _test_slow_write() -> None:
    """The fault tests' hook: ``PINN_TEST_SLOW_WRITES=SECONDS`` (unset: nothing)."""
    delay = os.environ.get("PINN_TEST_SLOW_WRITES")
    if delay:
        time.sleep(float(delay))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def refuse_special(path: str | os.PathLike) -> None:
    """Raise ``OSError`` (``EEXIST``, naming ``path``) when ``path`` exists and is a FIFO, a
    device, a socket or a folder: writing a file there would replace it (or block)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return  # a link is replaced by the new file, never written through
    raise OSError(errno.EEXIST, f"{_kind(mode)} is there, not a regular file; nothing was "
                  "written", str(path))


class WriteError(OSError):
    """A file could not be written (a full disk, no permission, a read-only file system):
    ``filename`` is the file (never its temporary), ``errno`` and ``strerror`` the
    system's reason, ``kept`` what is left (its previous contents, or no file)."""

    def __init__(self, path: str | os.PathLike, cause: OSError, kept: str) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.kept = kept

    def __str__(self) -> str:
        return f"{self.filename}: cannot be written ({self.strerror}); {self.kept}"


def make_folder(folder: str | os.PathLike, *, file: str | os.PathLike | None = None,
                kept: str = "nothing was written") -> Path:
    """``folder``, made with its parents where missing; :class:`WriteError` naming it (or
    ``file``, the file it was made for, and what of that is ``kept``) and the folder that
    could not be made, when they cannot be."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(folder if file is None else file, exc,
                         f"the folder {exc.filename or folder} could not be made; {kept}"
                         ) from exc
    return folder


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "wb") -> Path:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it to ``path``
    (never onto a FIFO, a device or a socket: :func:`refuse_special`). A failure of the
    file system is :class:`WriteError`, naming ``path`` and saying what was kept."""
    path = Path(path)
    kept = (f"{path.name} keeps its previous contents" if os.path.lexists(path)
            else f"{path.name} was not created")
    make_folder(path.parent, file=path, kept=kept)
    refuse_special(path)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        # a new file (never through a link planted under the name), mode 0o666 less umask
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        with open(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        _test_slow_write()
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(path, exc, kept) from exc
        raise
    _fsync_dir(path.parent)
    return path


def open_new(path: str | os.PathLike, mode: str = "wb", *, buffering: int = -1):
    """``path`` opened for writing as a new, empty file, for a file written as it goes (a
    run's log, an event file) where :func:`atomic_write` cannot serve: whatever file or
    link was there is replaced (never written through), a FIFO, a device, a socket or a
    folder is refused (:func:`refuse_special`). A failure of the file system is
    :class:`WriteError` naming ``path``."""
    path = Path(path)
    kept = f"{path.name} was not created"
    make_folder(path.parent, file=path, kept=kept)
    refuse_special(path)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a link or a hard link planted there: replaced, not followed
        access = os.O_RDWR if "+" in mode else os.O_WRONLY
        fd = os.open(path, access | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as exc:
        raise WriteError(path, exc, kept) from exc
    return open(fd, mode, buffering=buffering,
                **({} if "b" in mode else {"encoding": "utf-8"}))


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(text), "w")


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(data), "wb")


def clean_json(value: Any) -> Any:
    """A JSON-safe copy: NumPy/JAX scalars and arrays to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if hasattr(value, "__array__") and not isinstance(value, (str, bytes)):
        return clean_json(np.asarray(value).tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """``obj`` as indented JSON (see :func:`clean_json`), written atomically."""
    return write_text(path, json.dumps(clean_json(obj), indent=2, sort_keys=False) + "\n")


def write_jsonl(path: str | os.PathLike, rows: Any) -> Path:
    """``rows`` as JSON lines, one object per line (see :func:`clean_json`), written
    atomically: a run's ``history.jsonl``."""
    return write_text(path, "".join(json.dumps(clean_json(r)) + "\n" for r in rows))


def write_yaml(path: str | os.PathLike, obj: Any, header: str = "") -> Path:
    """``obj`` as YAML (safe dump) after ``header``, written atomically."""
    import yaml

    text = yaml.safe_dump(clean_json(obj), sort_keys=False, default_flow_style=None, width=100)
    return write_text(path, header + text)


def write_npz(path: str | os.PathLike, *, compress: bool = True, **arrays: Any) -> Path:
    """Arrays into one ``.npz`` (compressed unless ``compress=False``), written atomically."""
    buf = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(buf, **arrays)
    return write_bytes(path, buf.getvalue())


def cache_dir(kind: str | None = None, override: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``override``, else ``$PINN_CACHE``, else ``~/.cache/pinn``; with
    ``kind`` (``"fem"``, ``"reference"``) its sub-folder for that kind (not with override)."""
    if override is not None:
        return Path(override).expanduser()
    root = Path(os.environ.get("PINN_CACHE") or "~/.cache/pinn").expanduser()
    return root / kind if kind else root


# ---------------------------------------------------------------------------
# the run folder's lock, and the temporary files killed writers leave

#: The lock file of a run folder (it holds the PID of the process that took the lock).
LOCK_FILE = ".lock"

_TMP_NAME = re.compile(r"^\..+" + re.escape(TMP_MARK) + r"(\d+)-[0-9a-f]{8}$")


class FolderInUse(ValueError):
    """Another process holds the lock of a run folder."""


def _try_lock(fd: int) -> bool:
    """Take an exclusive advisory lock on ``fd`` without waiting; ``False``: taken."""
    try:
        import fcntl
    except ImportError:  # Windows: a byte-range lock on the first byte
        try:
            import msvcrt
        except ImportError:  # neither: no locking
            return True
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return False
    return True


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return "?"
    return text if text.isdigit() else "?"


#: The run folders this process holds locked (their real paths), with how many holders:
#: a writer inside a command that holds its folder (``pinn solve`` then the Python API's
#: ``out_dir``) takes the same lock again instead of refusing itself.
_HELD: dict[str, list] = {}


class RunLock:
    """The lock of a run folder, held until :meth:`release` (or the end of the process:
    the operating system drops it, also after a crash or a kill). ``created``: the folder
    did not exist before (an error before anything else is written may remove it). Taken
    again in the process that holds it, it is shared: the last release drops it."""

    def __init__(self, folder: Path, fd: int | None, created: bool, key: str = "") -> None:
        self.folder, self._fd, self.created, self._key = folder, fd, created, key

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock (closing its file drops the ``flock``); the lock file stays, so
        that a process waiting on it never locks a file that is being removed."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        entry = _HELD.get(self._key)
        if entry is not None and entry[0] == fd:
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _HELD[self._key]
        os.close(fd)

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_run_folder(folder: str | os.PathLike) -> RunLock:
    """Lock ``folder`` (created if missing) for this process, then remove the temporary
    files that killed writers left in it (:func:`remove_stale_temporaries`). Raises
    :class:`FolderInUse` (a ``ValueError``) naming the folder and the process holding it,
    :class:`WriteError` when the folder or its lock file cannot be made."""
    folder = Path(folder)
    created = not folder.exists()
    make_folder(folder)
    key = os.path.realpath(folder)
    if key in _HELD:  # this process holds it (a command, then the API inside it)
        _HELD[key][1] += 1
        return RunLock(folder, _HELD[key][0], created, key)
    lock = folder / LOCK_FILE
    try:
        mode = os.lstat(lock).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # a planted link or FIFO: never opened
        raise OSError(errno.EEXIST, f"the lock file is {_kind(mode)}, not a regular file; "
                      "remove it (a run folder's lock is a plain file)", str(lock))
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as exc:
        raise WriteError(lock, exc, "nothing in the folder was changed") from exc
    if not _try_lock(fd):
        os.close(fd)
        raise _in_use(folder, _holder(lock))
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as exc:  # (a full disk: not even the PID fits)
        os.close(fd)
        raise WriteError(lock, exc, "nothing else in the folder was changed") from exc
    remove_stale_temporaries(folder)
    _HELD[key] = [fd, 1]
    return RunLock(folder, fd, created, key)


def _in_use(folder: Path, pid: str) -> FolderInUse:
    return FolderInUse(f"{folder} is in use by process {pid}; wait for it to finish or use "
                       "another --out")


def check_not_in_use(folder: str | os.PathLike) -> None:
    """Raise :class:`FolderInUse` (naming the process) when another process holds the lock
    of ``folder``."""
    pid = folder_in_use(folder)
    if pid is not None:
        raise _in_use(Path(folder), pid)


def folder_in_use(folder: str | os.PathLike) -> str | None:
    """The PID (text) of the process holding ``folder``'s lock, or ``None`` when free."""
    lock = Path(folder) / LOCK_FILE
    if not lock.is_file():
        return None
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError:  # (a link is nobody's lock: lock_run_folder refuses it)
        return None
    try:
        if _try_lock(fd):
            return None
        return _holder(lock)
    finally:
        os.close(fd)  # (closing drops the probe's lock too)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process, or cannot tell: keep its file
    return True


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of :func:`atomic_write` (``.NAME.tmp-PID-HEX``) in
    ``folder`` and its sub-folders whose writer process is gone (a write killed half way);
    returns them. Call it while holding the folder's lock: other files are never touched."""
    removed = []
    for tmp in Path(folder).rglob(f"*{TMP_MARK}*"):
        m = _TMP_NAME.match(tmp.name)
        if m is None or not tmp.is_file() or tmp.is_symlink() or _alive(int(m.group(1))):
            continue
        try:
            tmp.unlink()
        except OSError:
            continue
        removed.append(tmp)
    return removed


def _empty(folder: Path) -> bool:
    """No entries but the lock file (what a run killed before writing anything leaves)."""
    return all(p.name == LOCK_FILE for p in folder.iterdir())


# ---------------------------------------------------------------------------
# the run folder's place, its configuration, and points files


def run_folder(base: str | os.PathLike | None, name: str, resume: bool, suffix: str = "",
               root: str | os.PathLike = "runs") -> Path:
    """Where a run writes: ``base``, or ``root/<name><suffix>`` (``-2``, ``-3``, ... when that
    one is taken and the run is new; the newest when resuming). Raises ``ValueError``
    naming the fix when ``base`` cannot be used."""
    if base is not None:
        base = Path(base)
        if resume and not base.exists():
            raise ValueError(f"{base}: no run folder to resume")
        check_not_in_use(base)
        if not resume and base.is_dir() and not _empty(base):
            raise ValueError(f"{base}: the run folder exists and is not empty; continue it "
                             "with --resume, or give a new --out")
        return base
    first = Path(root) / (name + suffix)
    if resume:
        found = [p for p in [first, *Path(root).glob(f"{name + suffix}-*")] if p.is_dir()]
        if not found:
            raise ValueError(f"no run folder {first} to resume; give --out DIR")
        return max(found, key=lambda p: p.stat().st_mtime)
    if not first.exists() or (_empty(first) and folder_in_use(first) is None):
        return first
    k = 2
    while (first.parent / f"{first.name}-{k}").exists():
        k += 1
    return first.parent / f"{first.name}-{k}"


#: Training settings a resumed run may change: more steps, and how the same steps are run.
_RESUMABLE = ("stages", "devices", "micro_batch", "chunk", "eval_every", "checkpoint_every")


def _without_stages(d: dict) -> dict:
    training = {k: v for k, v in (d.get("training") or {}).items() if k not in _RESUMABLE}
    return {**d, "training": training}


def write_config(run_dir: str | os.PathLike, resolved: dict, *, resume: bool = False,
                 header: str = "") -> Path:
    """``config.yaml`` of a run (the resolved configuration). On ``resume`` the problem
    must be the one the run started with (more steps, another device count or chunk size
    are fine): ``ValueError`` otherwise."""
    import yaml

    path = Path(run_dir) / "config.yaml"
    if resume and path.exists():
        old = yaml.safe_load(path.read_text(encoding="utf-8"))
        if old and _without_stages(old) != _without_stages(clean_json(resolved)):
            raise ValueError(f"{path}: the problem differs from the one this run was started "
                             "with; resume with the same file and overrides (`pinn solve "
                             f"--resume --out {path.parent}` knows them), or start a new run")
    return write_yaml(path, resolved, header=header)


#: How a run folder was made: the problem file and the overrides (``pinn solve --resume
#: --out RUN`` reads it, with ``config.yaml``, to continue from the folder alone).
COMMAND_FILE = "command.json"


def write_command(run_dir: str | os.PathLike, file: str | os.PathLike, overrides, *,
                  resume: bool = False) -> Path:
    """``command.json`` of a run: ``file`` (the problem file, absolute) and ``overrides``
    (``--set`` and the options that are overrides, in order; on ``resume`` appended to
    those the run was started with)."""
    path = Path(run_dir) / COMMAND_FILE
    before = read_command(run_dir).get("overrides", []) if resume and path.exists() else []
    return write_json(path, {"file": os.path.abspath(file), "overrides": [*before, *overrides]})


#: What ``command.json`` holds (:func:`write_command`).
_COMMAND = mapping({"file": TEXT, "overrides": list_of(TEXT, "a list of texts")},
                   'an object {"file": PATH, "overrides": [TEXT, ...]}',
                   required=("file", "overrides"))


def read_command(run_dir: str | os.PathLike) -> dict:
    """``command.json`` of a run folder (``file``, ``overrides``); ``ValueError`` naming the
    fix when it is missing, and :class:`BadFile` (one) when it is not what
    :func:`write_command` writes."""
    path = Path(run_dir) / COMMAND_FILE
    redo = (f"resume with `pinn solve FILE --out {run_dir} --resume` and the run's --set "
            "overrides")
    try:
        data = read_json_file(path, "run's command")
    except FileNotFoundError:
        raise ValueError(f"{run_dir}: no {COMMAND_FILE} (a run of an older pinn); {redo}"
                         ) from None
    return check_json(data, _COMMAND, path, f"the run's command is damaged: {redo}")


def _csv_table(text: str) -> tuple[list[str] | None, np.ndarray]:
    """A CSV text's header (None when its first line is numbers) and its rows of numbers
    ``[rows, columns]``; ValueError for a column named twice or a row that is not numbers."""
    first = text.split("\n", 1)[0]
    cells = [c.strip() for c in first.split(",")]
    try:
        [float(c) for c in cells]
        header = None
    except ValueError:
        header = cells
        twice = sorted({c for c in cells if cells.count(c) > 1})
        if twice:
            raise ValueError(f"the column {', '.join(twice)} appears twice in the header; "
                             "name each column once") from None
    import warnings

    with warnings.catch_warnings():  # "input contained no data": the callers report it
        warnings.simplefilter("ignore", UserWarning)
        arr = np.loadtxt(io.StringIO(text), delimiter=",",
                         skiprows=0 if header is None else 1, ndmin=2)
    return header, arr


def read_points(path: str | os.PathLike, names: list[str]) -> np.ndarray:
    """Points ``[N, len(names)]`` from a CSV file (a header naming the coordinates, or bare
    numbers) or an NPZ file (``points``, or one array per coordinate); ``ValueError``
    naming the problem otherwise."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if path.suffix.lower() == ".npy":
        raise ValueError(f"{path}: a .npy file; give the points as CSV (a header naming "
                         f"{', '.join(names)}) or as .npz (an array 'points')")
    try:
        if path.suffix.lower() == ".npz":
            z = read_npz_file(path, "points file")
            if "points" in z:
                pts = np.asarray(z["points"], dtype=np.float64)
            elif all(n in z for n in names):
                pts = np.stack([np.asarray(z[n], dtype=np.float64).reshape(-1)
                                for n in names], axis=1)
            else:
                raise ValueError(f"expected an array 'points' [N, {len(names)}] or arrays "
                                 f"{', '.join(names)}; found {', '.join(z)}")
        else:
            header, arr = _csv_table(read_text_file(path, "points file"))
            if arr.size == 0:
                raise ValueError("no points: the file has no rows of numbers")
            if header is not None:
                missing = [n for n in names if n not in header]
                if missing:
                    raise ValueError(f"no column for {', '.join(missing)} (header: "
                                     f"{', '.join(header)})")
                pts = np.stack([arr[:, header.index(n)] for n in names], axis=1)
            else:
                pts = arr
    except BadFile:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: cannot read points ({exc})") from None
    if pts.size == 0:
        raise ValueError(f"{path}: no points: the file has no rows of numbers")
    if pts.ndim != 2 or pts.shape[1] != len(names):
        raise ValueError(f"{path}: points must have {len(names)} columns ({', '.join(names)}), "
                         f"got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"{path}: points contain NaN or infinite values")
    return pts


def read_params(path: str | os.PathLike, names: list[str]) -> np.ndarray:
    """Values of the ranged parameters ``names`` for many queries, ``[Q, len(names)]`` (one
    row per query, columns in ``names``' order), from a CSV file (a header naming exactly
    ``names``, in any order, then one row per query), an NPZ file (``params`` ``[Q, p]``
    in ``names``' order, with ``param_names`` naming its columns where present; or one
    1-D array per name) or an NPY file (``[Q, p]`` in ``names``' order). Read by the
    checked readers (:func:`read_text_file`, :func:`read_npz_file`,
    :func:`read_npy_file`: a regular file within their size limits), every value a finite
    number; ``ValueError`` naming the file otherwise. The ranges are the problem's to check
    (:meth:`pinn.problem.Problem.param_rows`)."""
    path = Path(path)
    order = ",".join(names)
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            rows = np.asarray(read_npy_file(path, "parameter file"), dtype=np.float64)
            if rows.ndim != 2 or rows.shape[1] != len(names):
                raise ValueError(f"{path}: the array must be [Q, {len(names)}], one row per "
                                 f"query with the columns {', '.join(names)} in this order; "
                                 f"got shape {rows.shape}")
        elif suffix == ".npz":
            rows = _npz_params(path, read_npz_file(path, "parameter file"), names)
        else:
            text = read_text_file(path, "parameter file")
            if not text.strip():
                raise ValueError(f"{path}: empty; give a CSV with the header {order} and one "
                                 "row per query")
            header, arr = _csv_table(text)
            if header is None:
                raise ValueError(f"{path}: no header; the first line must name the ranged "
                                 f"parameters: {order}")
            missing = [n for n in names if n not in header]
            extra = [c for c in header if c not in names]
            if missing or extra:
                what = (f"no column for {', '.join(missing)}" if missing else
                        f"the column {', '.join(extra)} is not a ranged parameter")
                raise ValueError(f"{path}: {what} (header: {','.join(header)}); the columns "
                                 f"are the ranged parameters: {order}")
            if arr.size == 0:
                raise ValueError(f"{path}: no queries: the file has a header but no rows of "
                                 "numbers")
            rows = np.stack([arr[:, header.index(n)] for n in names], axis=1)
    except BadFile:
        raise
    except ValueError as exc:
        if str(exc).startswith(f"{path}: "):
            raise
        raise ValueError(f"{path}: cannot read parameter values ({exc})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: cannot read parameter values ({exc})") from None
    if len(rows) == 0:
        raise ValueError(f"{path}: no queries: the file has no rows of parameter values")
    bad = ~np.isfinite(rows)
    if bad.any():
        i, j = (int(k[0]) for k in np.nonzero(bad))
        raise ValueError(f"{path}: {names[j]}={rows[i, j]} in query {i} (counting from 0); "
                         "every parameter value must be a finite number")
    return rows


def _npz_params(path: Path, z: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    if "params" in z:
        rows = np.asarray(z["params"], dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != len(names):
            raise ValueError(f"{path}: 'params' must be [Q, {len(names)}], one row per query "
                             f"with the columns {', '.join(names)}; got shape {rows.shape}")
        if "param_names" in z:
            given = [str(n) for n in np.asarray(z["param_names"]).reshape(-1)]
            if given != list(names):
                raise ValueError(f"{path}: 'param_names' ({', '.join(given)}) are not the "
                                 f"ranged parameters in their order ({', '.join(names)})")
        return rows
    missing = [n for n in names if n not in z]
    extra = [k for k in z if k not in names]
    if missing or extra:
        what = (f"no array for {', '.join(missing)}" if missing else
                f"the array {', '.join(extra)} is not a ranged parameter")
        raise ValueError(f"{path}: {what} (arrays: {', '.join(z) or 'none'}); give an array "
                         f"'params' [Q, {len(names)}] or one array per ranged parameter: "
                         f"{', '.join(names)}")
    cols = {n: np.asarray(z[n], dtype=np.float64).reshape(-1) for n in names}
    if len({len(c) for c in cols.values()}) > 1:
        raise ValueError(f"{path}: the arrays have different lengths ("
                         + ", ".join(f"{n}: {len(c)}" for n, c in cols.items())
                         + "); give one value per query in each")
    return np.stack([cols[n] for n in names], axis=1)


def check_queries(path: str | os.PathLike, queries: int, points: int, columns: int) -> None:
    """Refuse ``queries`` x ``points`` rows of ``columns`` numbers (a batched evaluation's
    table: the query, the parameters, the coordinates, the outputs) that hold more, as
    float64, than the most a points file may (:data:`MAX_NPZ_BYTES`); ``BadFile`` naming
    ``path``."""
    need = queries * points * columns * 8
    if need > MAX_NPZ_BYTES:
        raise BadFile(f"{path}: {queries} queries x {points} points, {columns} numbers each, "
                      f"make {need} bytes, more than the {MAX_NPZ_BYTES} a points file may "
                      "hold; give fewer queries or fewer points in one call")


def _shortest(v) -> str:
    """The shortest text that reads back as ``v`` in its own precision (NumPy's repr)."""
    if not np.isfinite(v) or v == 0:
        return str(float(v))  # nan, inf, -inf, 0.0
    if 1e-4 <= abs(v) < 1e16:
        return np.format_float_positional(v, unique=True, trim="-")
    return np.format_float_scientific(v, unique=True, trim="-")


def write_values(out: str | os.PathLike | None, points: np.ndarray, names: list[str],
                 values: dict, *, digits: int | None = None) -> str | None:
    """Points and values at them: into ``out`` (``.npz``: ``points`` and one array per value;
    otherwise CSV), or, with no ``out``, returned as CSV text. In CSV the points are written
    as the shortest text that reads back the same float64, the values with at most
    ``digits`` significant digits (9 hold a float32 exactly, 17 a float64), the shortest
    that reads back the same value in that precision (default: 9 when every value is float32
    or narrower, else 17)."""
    values = {k: np.asarray(v) for k, v in values.items()}

    def column(name: str) -> str:  # a name with a comma or a quote (D(u, x)) in quotes
        return f'"{name.replace(chr(34), chr(34) * 2)}"' if any(c in name for c in ',"') else name

    if out is not None and Path(out).suffix.lower() == ".npz":
        write_npz(out, points=points, **values)
        return None
    if digits is None:
        narrow = all(v.dtype.kind == "f" and v.dtype.itemsize <= 4 for v in values.values())
        digits = 9 if narrow else 17
    kind = np.float32 if digits <= 9 else np.float64
    cols = [*(np.asarray(points[:, i], np.float64) for i in range(len(names))),
            *(np.asarray(v, kind).reshape(len(points), -1)[:, 0] if np.ndim(v) else
              np.full(len(points), v, kind) for v in values.values())]
    buf = io.StringIO()
    buf.write(",".join(column(n) for n in [*names, *values]) + "\n")
    for row in zip(*cols, strict=True):
        buf.write(",".join(_shortest(v) for v in row) + "\n")
    if out is None:
        return buf.getvalue()
    write_text(out, buf.getvalue())
    return None


def write_query_values(out: str | os.PathLike | None, points: np.ndarray, names: list[str],
                       params: np.ndarray, param_names: list[str], values: dict, *,
                       digits: int | None = None) -> str | None:
    """Values of many queries (``values[k]``: ``[Q, N]``, query ``q`` at the parameters
    ``params[q]`` and the points ``points[N, d]``): into ``out`` (``.npz``: ``points``
    ``[N, d]``, ``params`` ``[Q, p]``, ``param_names``, and each value ``[Q, N]``),
    otherwise CSV, returned as text with no ``out``: one row per query and point, query by
    query, the columns ``query,<param_names>,<names>,<values>``; numbers written as by
    :func:`write_values`."""
    q, n = len(params), len(points)
    values = {k: np.asarray(v) for k, v in values.items()}
    if out is not None and Path(out).suffix.lower() == ".npz":
        taken = sorted({"points", "params", "param_names"} & set(values))
        if taken:
            raise ValueError(f"{out}: an output named {taken[0]!r} would overwrite the array "
                             "of that name; name the output differently")
        write_npz(out, points=points, params=params, param_names=np.asarray(param_names),
                  **values)
        return None
    stacked = np.concatenate([np.repeat(params, n, axis=0), np.tile(points, (q, 1))], axis=1)
    text = write_values(None, stacked, [*param_names, *names],
                        {k: v.reshape(q * n, *v.shape[2:]) for k, v in values.items()},
                        digits=digits)
    header, _, body = text.partition("\n")
    lines = body.split("\n")  # the last is empty (the text ends with a newline)
    query = np.repeat(np.arange(q), n)
    text = "".join([f"query,{header}\n",
                    *(f"{k},{line}\n" for k, line in zip(query, lines[:-1], strict=True))])
    if out is None:
        return text
    write_text(out, text)
    return None
