"""Reading YAML with the line (and column) of every value, and overrides.

The loader follows YAML 1.2 where 1.1 surprises people: only ``true`` and
``false`` are booleans (``on:``, ``yes``, ``no`` stay strings, which matters
because conditions have an ``on:`` key), ``1e-3`` is a number, and dates stay
strings.  Duplicate keys are errors.  Every node's place is recorded in a
:class:`Source` keyed by its path (``("conditions", "walls", "on")``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import yaml

from pinn.config.errors import ConfigError, Issue, Location, Path, format_path

MAX_BYTES = 2_000_000
MAX_NODES = 200_000
MAX_DEPTH = 64
#: the tags of plain data (what YAML gives untagged values, and ``!!str`` etc. spelled out)
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map",
                                                   "seq")}


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans and floats, no timestamps."""


_DROP = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"}
_Loader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] not in _DROP]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
            |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
            |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
            |[-+]?\.(?:inf|Inf|INF)
            |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


@dataclass
class Source:
    """Where each path of a loaded document came from."""

    file: str | None = None
    places: dict = field(default_factory=dict)  # path -> Location of the key (or item)
    values: dict = field(default_factory=dict)  # path -> (line, column, style) of scalar values

    def location(self, path: Iterable) -> Location:
        """The location of ``path``, or of its nearest recorded ancestor."""
        p = tuple(path)
        while True:
            if p in self.places:
                return self.places[p]
            if not p:
                return Location(self.file)
            p = p[:-1]

    def expression_location(self, path: Iterable, column: int | None) -> Location:
        """Location of ``column`` (1-based) inside the string at ``path``."""
        p = tuple(path)
        loc = self.location(p)
        if loc.override is not None or column is None:
            return loc
        val = self.values.get(p)
        if val is None:
            return loc
        line, col, style = val
        if style in ("|", ">"):  # block scalar: lines differ, give the expression's column
            return Location(loc.file, line, None)
        quote = 1 if style in ("'", '"') else 0
        return Location(loc.file, line, col + quote + column)


def _error(source: Source, message: str, line=None, column=None, path: Path = ()) -> ConfigError:
    return ConfigError(Issue(message, path, Location(source.file, line, column)))


def read_text(path: str) -> str:
    """Read a problem file as UTF-8 text, with clear errors for binary or huge files.

    Only a regular file is read (a folder, a FIFO, a device such as a link to /dev/zero
    are refused before a byte is read), and at most :data:`MAX_BYTES` + 1 bytes of it:
    the size ``stat`` reports is not trusted (a device reports 0).
    """
    import os
    import stat

    name = os.path.basename(path)

    def fail(msg: str) -> ConfigError:
        return ConfigError(Issue(msg, (), Location(name)))

    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise fail("is a folder; give a problem file (.yaml)") from None
    except OSError as exc:
        raise fail(f"cannot read the file: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise fail("is a folder; give a problem file (.yaml)")
    with os.fdopen(fd, "rb") as fh:
        if stat.S_ISDIR(mode):
            raise fail("is a folder; give a problem file (.yaml)")
        if not stat.S_ISREG(mode):
            kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device"
                    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
                    if stat.S_ISSOCK(mode) else "not a regular file")
            raise fail(f"is {kind}, not a regular file; give a problem file (.yaml)")
        try:
            raw = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            raise fail(f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise fail(f"the file is larger than {MAX_BYTES} bytes, the limit of a problem file "
                   "(put data in a CSV/NPZ file and name it under conditions.<name>.data.file)")
    if b"\x00" in raw:
        raise ConfigError(Issue("this is a binary file, not a YAML problem file", (),
                                Location(name)))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(Issue(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
            (), Location(name, line))) from None


def load(text: str, file: str | None = None) -> tuple[object, Source]:
    """Parse YAML ``text``; return the plain data and its :class:`Source`."""
    source = Source(file)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, source
        count = [0]
        data = _build(loader, node, (), source, count, 0)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        ctx = f" ({exc.context})" if exc.context and exc.problem else ""
        raise _error(source, f"YAML syntax error: {what}{ctx}",
                     mark.line + 1 if mark else None, mark.column + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise _error(source, f"YAML error: {exc}") from None
    except RecursionError:
        raise _error(source, f"the document is nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()
    return data, source


def _build(loader, node, path, source: Source, count, depth):
    count[0] += 1
    if count[0] > MAX_NODES:
        raise _error(source, f"the document has more than {MAX_NODES} values (an alias bomb?)",
                     node.start_mark.line + 1)
    if depth > MAX_DEPTH:
        raise _error(source, f"the document is nested more than {MAX_DEPTH} levels deep",
                     node.start_mark.line + 1, path=path)
    if path not in source.places:
        source.places[path] = Location(source.file, node.start_mark.line + 1)
    if node.tag not in _PLAIN_TAGS:  # !!python/object, !include, ...: data has no tags
        raise _error(source, f"YAML tags such as {node.tag.replace('tag:yaml.org,2002:', '!!')}"
                     " are not allowed in a problem file; write plain values",
                     node.start_mark.line + 1, node.start_mark.column + 1, path)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                raise _error(source, "mapping keys must be plain names",
                             knode.start_mark.line + 1, knode.start_mark.column + 1, path)
            key = loader.construct_object(knode)
            if key is None:
                key = "null"
            if isinstance(key, float) and not math.isfinite(key):
                key = knode.value
            kpath = path + (key,)
            if key in out:
                first = source.places[kpath]
                raise _error(source, f"key '{key}' appears twice (first on line {first.line})",
                             knode.start_mark.line + 1, None, path)
            source.places[kpath] = Location(source.file, knode.start_mark.line + 1)
            out[key] = _build(loader, vnode, kpath, source, count, depth + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, path + (i,), source, count, depth + 1)
                for i, item in enumerate(node.value)]
    source.values[path] = (node.start_mark.line + 1, node.start_mark.column, node.style)
    return loader.construct_object(node)


def load_file(path: str) -> tuple[object, Source]:
    import os

    text = read_text(path)
    return load(text, os.path.basename(path))


def parse_value(text: str):
    """A YAML scalar or flow value, as ``--set`` reads it (``500``, ``1e-3``, ``[1, 2]``)."""
    data, _ = load(text, None)
    return data


# ---------------------------------------------------------------------------
# overrides


def apply_overrides(data: dict, source: Source, overrides: Iterable[str]) -> dict:
    """Apply ``a.b.c=value`` overrides in order (YAML-typed values, list indices)."""
    for item in overrides:
        _apply_one(data, source, item)
    return data


def _apply_one(data: dict, source: Source, item: str) -> None:
    def fail(msg: str, path: Path = ()) -> ConfigError:
        return ConfigError(Issue(msg, path, Location(override=item)))

    if "=" not in item:
        raise fail("an override is written key.path=value, e.g. training.stages.0.steps=500")
    bad = next((c for c in item if (ord(c) < 32 and c not in "\t\n") or ord(c) == 127
                or 0xD800 <= ord(c) <= 0xDFFF), None)
    if bad is not None:  # (a lone surrogate: bytes that are not UTF-8, as Python reads argv)
        what = ("a byte that is not UTF-8" if ord(bad) >= 0xD800
                else f"the control character {bad!r}")
        raise fail(f"the override holds {what}; write it as plain text")
    key, _, raw = item.partition("=")
    key = key.strip()
    parts = key.split(".") if key else []
    if not parts or any(p == "" for p in parts):
        raise fail(f"bad key path {key!r}; write it with dots, e.g. training.seed=1")
    try:
        value = parse_value(raw)
    except ConfigError as exc:
        raise fail(f"the value {raw!r} is not valid YAML ({exc.issues[0].message})") from None
    node = data
    path: list = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.lstrip("-").isdigit():
                raise fail(f"{format_path(path) or 'the top level'} is a list; use an index "
                           f"(0..{len(node) - 1}), not {part!r}", tuple(path))
            idx = int(part)
            if idx < 0 or idx > len(node) or (idx == len(node) and not last):
                raise fail(f"index {idx} is out of range: {format_path(path)} has {len(node)} "
                           "item(s)", tuple(path))
            seg = idx
        elif isinstance(node, dict):
            seg = part
        else:
            raise fail(f"{format_path(path)} is a value ({node!r}), not a mapping or list; "
                       f"cannot set {part!r} inside it", tuple(path))
        path.append(seg)
        if last:
            if isinstance(node, list) and seg == len(node):
                node.append(value)
            else:
                node[seg] = value
            _mark(source, tuple(path), value, item)
            return
        if isinstance(node, dict) and (seg not in node or node[seg] is None):
            node[seg] = {}
            source.places[tuple(path)] = Location(override=item)
        node = node[seg]


def _mark(source: Source, path: Path, value, item: str) -> None:
    loc = Location(override=item)
    for p in list(source.places):
        if p[: len(path)] == path:
            del source.places[p]
    for p in list(source.values):
        if p[: len(path)] == path:
            del source.values[p]

    def rec(v, p):
        source.places[p] = loc
        if isinstance(v, dict):
            for k, w in v.items():
                rec(w, p + (k,))
        elif isinstance(v, list):
            for i, w in enumerate(v):
                rec(w, p + (i,))

    rec(value, path)
