"""Objects as data: the registry of ``pinn`` classes a file may name, and the tagged codec.

The bottom of the package: it imports nothing of ``pinn``. Each class that saves as data
registers itself where it is defined (``@register("domain")``), and the reader looks names
up in that one registry; a file can never add a class (only classes of ``pinn`` register,
and a kind is frozen once it has been read). The run format (:mod:`pinn.serialize`) and
the problem files' vocabulary (:mod:`pinn.config.registry`) both read it.

The codec writes a value as JSON data and a dict of arrays (for an npz file):

- numbers, strings, booleans, null, lists and mappings as they are;
- a numeric array as ``{"$array": KEY}`` (the array under ``KEY``);
- an object of a registered class as ``{"$type": NAME, ...arguments}``, its arguments from
  ``to_data()`` (written recursively), read back with ``from_data(arguments)`` or the
  constructor; a class may write and read itself (``write_data`` / ``read_data``);
- a value of a registered tag (``register_tag``; the expressions of the PDE language
  register ``$expr``) as ``{TAG: TEXT}``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

__all__ = ["NotData", "init_fields", "register", "register_tag", "registered", "name_of",
           "Writer", "Reader", "NUMERIC"]

#: numpy dtype kinds an array of data may have
NUMERIC = "biufc"
#: a class registered under this kind may appear inside a value of any kind
ANY = "value"


class NotData(ValueError):
    """An object that cannot be written as data (a user's own class, a Python callable)."""


def init_fields(obj) -> dict:
    """The ``__init__`` fields of a dataclass ``obj``: its constructor's arguments."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


_READ: dict[str, dict[str, type]] = {}  # kind -> name -> class
_WRITE: dict[str, dict[type, str]] = {}  # kind -> class -> name
_FROZEN: set[str] = set()


def register(kind: str, name: str | None = None, *, read: bool = True) -> Callable:
    """Class decorator: ``cls`` saves as data under ``kind`` and ``name`` (default: its own
    name). ``read=False``: written under ``name``, which another class reads back (a
    subclass saved as its factory's data). Only ``pinn``'s classes register, before the
    kind is first read."""

    def add(cls: type) -> type:
        if not cls.__module__.split(".")[0] == "pinn":
            raise TypeError(f"register: only pinn's classes save as data, not "
                            f"{cls.__module__}.{cls.__qualname__}")
        if kind in _FROZEN:
            raise RuntimeError(f"register: the kind {kind!r} has been read already; register "
                               f"{cls.__qualname__} where it is defined")
        key = name or cls.__name__
        readers = _READ.setdefault(kind, {})
        if read:
            if readers.get(key, cls) is not cls:
                raise TypeError(f"register: {kind} {key!r} is {readers[key].__qualname__} "
                                f"already")
            readers[key] = cls
        _WRITE.setdefault(kind, {})[cls] = key
        return cls

    return add


def registered(kind: str) -> Mapping[str, type]:
    """The classes a file may name under ``kind``, by name (the kind is frozen from now on:
    a reader imports the packages whose classes it may meet first)."""
    _FROZEN.add(kind)
    return MappingProxyType(_READ.get(kind, {}))


def name_of(kind: str, cls: type) -> str | None:
    """The name ``cls`` is written under in ``kind`` (or :data:`ANY`), or None."""
    return _WRITE.get(kind, {}).get(cls) or _WRITE.get(ANY, {}).get(cls)


class _Tag(NamedTuple):
    type: type
    write: Callable  # (value, writer, where) -> JSON text
    read: Callable  # (text, reader, where) -> value


_TAGS: dict[str, _Tag] = {}


def register_tag(tag: str, type_: type, write: Callable, read: Callable) -> None:
    """Values of ``type_`` are written as ``{tag: write(value, writer, where)}`` and read
    back by ``read(text, reader, where)`` (``tag`` starts with ``$``)."""
    if not tag.startswith("$") or tag in ("$array", "$type"):
        raise ValueError(f"register_tag: {tag!r} is not a free tag ($name)")
    _TAGS[tag] = _Tag(type_, write, read)


def _allowed(kind: str) -> str:
    return ", ".join([*_READ.get(kind, {}), *_READ.get(ANY, {})])


@dataclasses.dataclass
class Writer:
    """Writes values as data, collecting the arrays they refer to in ``arrays``.
    ``context``: what the tags need (the expressions: the problem's names)."""

    arrays: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    context: Any = None

    def value(self, v, where: str, kind: str):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.generic) and v.dtype.kind in "biuf":
            v = v.item()
        if isinstance(v, (int, float)):
            if isinstance(v, float) and not math.isfinite(v):
                raise NotData(f"{where}: the number {v!r} is not finite")
            return v
        for tag, t in _TAGS.items():
            if isinstance(v, t.type):
                return {tag: t.write(v, self, where)}
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in NUMERIC:
                raise NotData(f"{where}: an array of {v.dtype} is not numeric data")
            self.arrays[where] = v
            return {"$array": where}
        if isinstance(v, Mapping):
            out = {}
            for k, x in v.items():
                if not isinstance(k, str) or k.startswith("$"):
                    raise NotData(f"{where}: the key {k!r} is not a name")
                out[k] = self.value(x, f"{where}/{k}", kind)
            return out
        if isinstance(v, (list, tuple)):
            return [self.value(x, f"{where}/{i}", kind) for i, x in enumerate(v)]
        return self.object(v, where, kind)

    def object(self, obj, where: str, kind: str) -> dict:
        """``{"$type": NAME, ...arguments}`` of an object of a class registered as ``kind``."""
        name = name_of(kind, type(obj))
        own = getattr(type(obj), "write_data", None)
        if name is None or not (own or hasattr(obj, "to_data")):
            what = (f"the Python callable {getattr(obj, '__name__', obj)!r}" if callable(obj)
                    and not hasattr(obj, "to_data") else
                    f"{type(obj).__module__}.{type(obj).__qualname__}")
            raise NotData(f"{where}: {what} is not one of the {kind} classes of pinn that save "
                          f"as data ({_allowed(kind)})")
        if own is not None:
            return {"$type": name, **obj.write_data(self, where)}
        try:
            arguments = obj.to_data()
        except NotImplementedError:
            raise NotData(f"{where}: {type(obj).__name__} does not define to_data()") from None
        return {"$type": name, **{k: self.value(x, f"{where}/{k}", kind)
                                  for k, x in arguments.items()}}


@dataclasses.dataclass
class Reader:
    """Reads what :class:`Writer` wrote (``arrays``: the arrays it collected; ``context``:
    what the tags need). Raises ``ValueError`` naming the bad entry."""

    arrays: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    context: Any = None
    source: str = "params.npz"  # where the arrays come from (for messages)

    def value(self, v, where: str, kind: str):
        if isinstance(v, list):
            return tuple(self.value(x, f"{where}/{i}", kind) for i, x in enumerate(v))
        if not isinstance(v, dict):
            return v
        for tag, t in _TAGS.items():
            if tag in v:
                return t.read(v[tag], self, where)
        if "$array" in v:
            key = v["$array"]
            if not isinstance(key, str) or key not in self.arrays:
                raise ValueError(f"{where}: the array {key!r} is not in {self.source}")
            return self.arrays[key]
        if "$type" in v:
            return self.object(v, where, kind)
        return {k: self.value(x, f"{where}/{k}", kind) for k, x in v.items()}

    def object(self, d, where: str, kind: str):
        """The object ``{"$type": NAME, ...}`` of a class registered as ``kind``."""
        if not isinstance(d, dict) or "$type" not in d:
            raise ValueError(f"{where}: expected an object {{\"$type\": NAME, ...}}, got {d!r}")
        name = d["$type"]
        arguments = {k: v for k, v in d.items() if k != "$type"}
        cls = None
        if isinstance(name, str):
            cls = registered(kind).get(name) or registered(ANY).get(name)
        if cls is None:
            raise ValueError(f"{where}: unknown {kind} class {name!r}; the run format knows "
                             f"{_allowed(kind)}")
        own = getattr(cls, "read_data", None)
        if own is not None:
            return own(arguments, self, where)
        arguments = {k: self.value(v, f"{where}/{k}", kind) for k, v in arguments.items()}
        make = getattr(cls, "from_data", None)
        try:
            return make(arguments) if make is not None else cls(**arguments)
        except (TypeError, KeyError) as exc:
            raise ValueError(f"{where}: cannot build {name} from {sorted(arguments)} "
                             f"({exc})") from None
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
