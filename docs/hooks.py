"""mkdocs hooks: the YAML reference is generated from the pydantic schema at build time.

``docs/yaml.md`` holds the prose and the marker ``<!-- yaml-reference -->``; the marker is
replaced by one section per schema model (:mod:`pinn.config.schema`), reached from the root
``ProblemSpec``: each key with its type, default and description. Descriptions are the
models' docstrings and the attribute docstrings (or comments) of their fields, so the page
follows the schema and cannot drift from it.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import typing
from functools import cache

MARKER = "<!-- yaml-reference -->"

# validators of the schema's named types -> how the reference names the type
VALIDATED = {
    "_number": "number",
    "_integer": "integer",
    "_bool": "`true` or `false`",
    "_name": "name",
    "_part_name": "boundary part name",
    "_names": "names (a list, or one text: `x y t`)",
    "_expr_like": "number or expression",
    "_expr_text": "expression",
    "_initial_value": ("number, expression, or a table file `{file: u0.dat, interpolation: "
                       "linear|nearest, coords: [x, y], resample: 256}` (the options of "
                       "[CoefficientSpec](#coefficientspec))"),
    "_periods": "names, or a mapping name → period",
    "_fields": ("names (a list, or one text: `u v`), or a mapping name → its coordinates "
                "(`{u: [x, y, t], a: [x, y]}`; null: all of them)"),
    "_devices": "`all` or a device count",
    "_on": "boundary part name, list of names, or a predicate (`x == 0`)",
    "_bound": "number or constant expression",
    "_positive_bound": "positive number or constant expression",
    "_run_name": "run name (a file name: letters, digits, `_ . + -`)",
}
PLURAL = {"number": "numbers", "number or constant expression": "numbers or constant expressions",
          "integer": "integers", "name": "names", "text": "texts",
          "expression": "expressions", "boundary part name": "boundary part names"}
BASIC = {float: "number", int: "integer", str: "text", bool: "`true` or `false`",
         typing.Any: "any"}


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace the marker of the YAML reference page by the generated reference."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, yaml_reference())
    return markdown


def _models():
    from pydantic import BaseModel

    return BaseModel


def _anchor(cls) -> str:
    return cls.__name__.lower()


def _validator_name(meta) -> str | None:
    func = getattr(meta, "func", None)
    if func is None:
        return None
    name = getattr(func, "__name__", "")
    if name == "<lambda>":  # Where = BeforeValidator(lambda v: _on(v))
        name = next((n for n in func.__code__.co_names if n in VALIDATED), name)
    return name


def _constraints(metadata) -> list[str]:
    out, lo_len, hi_len = [], None, None
    for m in metadata:
        items = getattr(m, "metadata", None)  # a FieldInfo inside Annotated
        if items is not None and not hasattr(m, "func"):
            sub = _constraints(items)
            out += [s for s in sub]
            continue
        kind = type(m).__name__
        if kind in ("Gt", "Ge", "Lt", "Le"):
            sym = {"Gt": ">", "Ge": "≥", "Lt": "<", "Le": "≤"}[kind]
            value = next(iter(vars(m).values())) if hasattr(m, "__dict__") else None
            value = getattr(m, kind.lower(), value)
            out.append(f"{sym} {_number(value)}")
        elif kind == "MinLen":
            lo_len = m.min_length
        elif kind == "MaxLen":
            hi_len = m.max_length
    if lo_len is not None and lo_len == hi_len:
        out.append(f"exactly {lo_len}")
    else:
        if lo_len:
            out.append(f"at least {lo_len}")
        if hi_len is not None:
            out.append(f"at most {hi_len}")
    return out


def _number(v) -> str:
    if isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:_}".replace("_", " ") if v % 1000 else f"{v:,}".replace(",", " ")
    return repr(v)


def type_text(tp, metadata=()) -> str:
    """The type of a schema field in words, with links to the models' sections."""
    BaseModel = _models()
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        return type_text(base, (*meta, *metadata))
    extra = _constraints(metadata)
    named = next((VALIDATED[n] for n in map(_validator_name, metadata) if n in VALIDATED),
                 None)
    after = next((m.func for m in metadata
                  if type(m).__name__ == "AfterValidator"), None)
    # the schema's checks made by closures: _vec(n, kind) and _bounded(lo, hi, reason)
    closure = inspect.getclosurevars(after).nonlocals if after is not None else {}
    if "lo" in closure and "hi" in closure:
        extra = [f"≥ {_number(closure['lo'])}", f"≤ {_number(closure['hi'])}", *extra]
    if named is not None:
        text = named
    elif "n" in closure and "kind" in closure:
        args = typing.get_args(tp) if typing.get_origin(tp) is list else ()
        head, sep, rest = (type_text(args[0]) if args else "number").partition(" (")
        items = PLURAL.get(head, head) + sep + rest
        n = closure["n"]
        text = f"list of {n} {items}" if n is not None else f"list of {items}"
    elif origin is typing.Literal:
        text = " or ".join(f"`{_flow(v)}`" for v in typing.get_args(tp))
    elif origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        parts = [type_text(a) for a in typing.get_args(tp) if a is not type(None)]
        text = " or ".join(parts)
    elif origin is list:
        (item,) = typing.get_args(tp)
        inner = type_text(item)
        head, sep, rest = inner.partition(" (")
        text = f"list of {PLURAL.get(head, head)}{sep}{rest}"
    elif origin is dict:
        key, value = typing.get_args(tp)
        text = f"mapping {type_text(key)} → {type_text(value)}"
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        text = f"[{tp.__name__}](#{_anchor(tp)})"
    else:
        text = BASIC.get(tp, getattr(tp, "__name__", str(tp)))
    return f"{text} ({', '.join(extra)})" if extra else text


def _flow(v) -> str:
    """A value as YAML flow text (``{adam: {}, steps: 10000}``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    if isinstance(v, str):
        return v if re.fullmatch(r"[A-Za-z_][\w.]*", v) else json.dumps(v)
    return repr(v)


def _dump(v):
    BaseModel = _models()
    if isinstance(v, BaseModel):
        return v.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    if isinstance(v, list):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v


def default_text(info) -> str:
    """``required``, or the default as YAML flow text."""
    if info.is_required():
        return "required"
    from pydantic_core import PydanticUndefined

    value = info.default_factory() if info.default_factory is not None else info.default
    if value is PydanticUndefined:
        return "required"
    value = _dump(value)
    if value == {} and info.default_factory is not None:
        return "its defaults"
    return f"`{_flow(value)}`"


@cache
def _class_defs(module_name: str) -> tuple[dict[str, ast.ClassDef], list[str]]:
    """The top-level classes of a module's source, by name, and its lines (parsed once)."""
    import sys

    source = inspect.getsource(sys.modules[module_name])
    tree = ast.parse(source)
    return ({n.name: n for n in tree.body if isinstance(n, ast.ClassDef)},
            source.splitlines())


@cache
def _field_notes(cls) -> dict[str, str]:
    """Attribute docstrings (a string right after the field) and comments of ``cls``'s
    fields, from its source (and its bases' in pinn)."""
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("pinn."):
            continue
        defs, lines = _class_defs(klass.__module__)
        body = defs.get(klass.__name__)
        if body is None:
            continue
        stmts = body.body
        for i, stmt in enumerate(stmts):
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            name = stmt.target.id
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            if (isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                notes[name] = inspect.cleandoc(nxt.value.value)
                continue
            comments = []
            j = stmt.lineno - 2  # comment lines right above the field
            while j >= 0 and lines[j].strip().startswith("#"):
                comments.insert(0, lines[j].strip().lstrip("#").strip())
                j -= 1
            end = lines[stmt.end_lineno - 1]
            if "  # " in end:
                comments.append(end.split("  # ", 1)[1].strip())
            if comments:
                notes[name] = " ".join(comments)
    return notes


def _sub_models(tp) -> list[tuple[type, str]]:
    """The models a field's type holds, each with the path step to reach it."""
    BaseModel = _models()
    found: list[tuple[type, str]] = []

    def walk(t, step):
        origin = typing.get_origin(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            found.append((t, step))
        elif origin is list:
            walk(typing.get_args(t)[0], step + "[*]")
        elif origin is dict:
            walk(typing.get_args(t)[1], step + ".NAME")
        else:
            for a in typing.get_args(t):
                walk(a, step)

    walk(tp, "")
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _section(cls, paths: list[str]) -> str:
    title = f"`{paths[0]}`" if paths[0] else "The file"
    lines = [f"## {title} {{#{_anchor(cls)}}}", ""]
    also = ", ".join(f"`{p}`" for p in paths[1:])
    lines += [f"Schema model `{cls.__name__}`" + (f"; also at {also}." if also else "."), ""]
    doc = inspect.getdoc(cls)
    own = cls.__dict__.get("__doc__")
    if doc and own:
        lines += [doc, ""]
    kinds = getattr(cls, "KINDS", ())
    if kinds:
        from pinn.config.schema import _takes_model

        lines.append(f"Give exactly one {getattr(cls, 'WHAT', 'kind')}: "
                     + ", ".join(f"`{k}`" for k in kinds) + ".")
        bare = next((k for k in kinds if _takes_model(cls, k)), None)
        if bare is not None:
            lines.append(f"A kind with nothing after it (`{bare}:`) takes its defaults, and "
                         f"so does a bare string in place of the mapping (`{bare}`).")
        lines.append("")
    notes = _field_notes(cls)
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    for name, info in cls.model_fields.items():
        key = info.alias or name
        tp = type_text(info.annotation, tuple(info.metadata))
        lines.append(f"| `{key}` | {_cell(tp)} | {_cell(default_text(info))} | "
                     f"{_cell(notes.get(name, ''))} |")
    return "\n".join(lines) + "\n"


def yaml_reference() -> str:
    """The reference of every key of a problem file, as Markdown."""
    from pinn.config import schema as S

    order: list[type] = []
    paths: dict[type, list[str]] = {}
    queue: list[tuple[type, str]] = [(S.ProblemSpec, "")]
    while queue:
        cls, path = queue.pop(0)
        if cls in paths:
            if path not in paths[cls]:
                paths[cls].append(path)
            continue
        paths[cls] = [path]
        order.append(cls)
        for name, info in cls.model_fields.items():
            key = info.alias or name
            for sub, step in _sub_models(info.annotation):
                queue.append((sub, f"{path}.{key}{step}".lstrip(".")))
    return "\n".join(_section(cls, [p for p in paths[cls][:4]]) for cls in order)
