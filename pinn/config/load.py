"""From a file (and overrides) to a validated :class:`~pinn.config.schema.ProblemSpec`."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ValidationError

from pinn.config import schema as S
from pinn.config.errors import ConfigError, Issue, Location, suggest
from pinn.config.yamlio import Source, apply_overrides, load, load_file

EXAMPLE = "see problems/heat2d.yaml for a complete example"


def load_spec(path: str | None = None, overrides: Sequence[str] = (), *,
              text: str | None = None) -> tuple[S.ProblemSpec, Source]:
    """Read, override and validate a problem file; raise :class:`ConfigError` on any problem."""
    if text is None:
        if path is None:
            raise TypeError("give a path or text")
        data, source = load_file(path)
    else:
        data, source = load(text, path)
    if data is None:
        raise ConfigError(Issue(f"the file is empty; write a problem ({EXAMPLE})", (),
                                Location(source.file, 1)))
    if not isinstance(data, dict):
        raise ConfigError(Issue(
            f"a problem file is a mapping of sections (name, domain, equations, ...), "
            f"not {S._kind(data)}; {EXAMPLE}", (), source.location(())))
    for item in overrides:
        _defaults_along(data, item.partition("=")[0].strip().split("."))
    apply_overrides(data, source, overrides)
    return validate(data, source), source


def _defaults_along(data: dict, parts: list[str]) -> None:
    """Fill the sections an override path goes through, where the file leaves them out,
    with their defaults as data (``--set training.stages.0.steps=500`` on a file without
    ``training:`` sets the default recipe's first stage, not a new mapping)."""
    node, path = data, []
    for part in parts[:-1]:
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return
            node, path = node[int(part)], [*path, int(part)]
            continue
        if not isinstance(node, dict):
            return
        if node.get(part) is None:
            default = _default_at(path, part)
            if default is None:
                return
            node[part] = default
        node, path = node[part], [*path, part]


def _default_at(path: list, key: str):
    """The schema's default of ``key`` in the model at ``path``, as YAML data (None: none)."""
    model = model_at(tuple(path))
    field = model.model_fields.get(key) if model is not None else None
    if field is None or field.is_required():
        return None
    value = field.get_default(call_default_factory=True)
    # only what the default sets: a section filled in for an override is not a section the
    # file gives (the plan still decides what the file leaves out)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True)
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return [v.model_dump(mode="json", exclude_unset=True, by_alias=True) for v in value]
    return None


def validate(data: dict, source: Source) -> S.ProblemSpec:
    try:
        return S.ProblemSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    issues = _dedupe(_issue(err, source) for err in _merge_misspelled(_union_noise(errors)))
    issues.sort(key=lambda i: (i.location.override is None, i.location.line or 0))
    raise ConfigError(issues)


def _merge_misspelled(errors: list[dict]) -> list[dict]:
    """Drop "missing 'domain'" when the same mapping has an unknown key 'domian'."""
    extras = {}
    for e in errors:
        if e["type"] == "extra_forbidden":
            loc = _data_path(e["loc"])
            extras.setdefault(loc[:-1], []).append(str(loc[-1]))
    out = []
    for e in errors:
        if e["type"] == "missing":
            loc = _data_path(e["loc"])
            import difflib

            if difflib.get_close_matches(str(loc[-1]), extras.get(loc[:-1], []), n=1,
                                         cutoff=0.6):
                continue
        out.append(e)
    return out


_BRANCH_TYPES = {"literal_error", "list_type", "dict_type", "model_type", "model_attributes_type"}


def _union_noise(errors: list[dict]) -> list[dict]:
    """Drop "expected False" of ``fourier: {...} | false`` (or "expected a list" of
    ``resolution: 1``) when another branch of the union has a real error: the user wrote
    that branch's kind of value, its error is the one to report."""
    def parent(e):
        return tuple(e["loc"][:-1])

    def noise(e):
        return e["type"] in _BRANCH_TYPES and len(e["loc"]) > 1

    others = [e for e in errors if not noise(e)]
    return [e for e in errors if not noise(e) or not any(
        tuple(o["loc"][:len(parent(e))]) == parent(e) and len(o["loc"]) > len(parent(e))
        for o in others)]


def _dedupe(issues) -> list[Issue]:
    seen, out = set(), []
    for i in issues:
        key = (i.path, i.message)
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out


#: pydantic's own loc parts: ``[key]`` tags, validator and union-branch names
_INTERNAL = ("[", "function-", "dict[", "list[", "nullable[", "tuple[")


def _data_path(loc: Iterable) -> tuple:
    """Drop pydantic's internal loc parts (``'[key]'``, union tags) that are not data keys."""
    out = []
    for part in loc:
        if isinstance(part, str) and part.startswith(_INTERNAL):
            continue
        out.append(part)
    return tuple(out)


def _issue(err: dict, source: Source) -> Issue:
    loc = _data_path(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        key = loc[-1]
        model = model_at(loc[:-1])
        allowed = list(model.model_fields) if model else []
        if model is not None:
            allowed = [f.alias or n for n, f in model.model_fields.items()]
        hint = suggest(key, allowed)
        what = f"unknown key '{key}'{hint}"
        if model is not None and issubclass(model, S.OneOf) and hint == "":
            others = [a for a in allowed if a not in model.KINDS]
            what += f"; a {model.WHAT} is one of: {', '.join(model.KINDS)}"
            if others:
                what += f"; options: {', '.join(others)}"
        elif allowed:
            what += f"; expected: {', '.join(allowed)}"
        return Issue(what, loc[:-1], source.location(loc))
    if kind == "missing":
        key = loc[-1] if loc else "?"
        where = source.location(loc[:-1])
        if len(loc) == 1:  # a missing section: the file, not its first line
            where = Location(where.file) if where.override is None else where
            return Issue(f"missing section '{key}' ({EXAMPLE})", (), where)
        return Issue(f"missing '{key}'", loc[:-1], where)
    while loc and loc not in source.places:  # name what the user wrote (`alpha: 1`, not
        loc = loc[:-1]                         # `alpha.value`; `interval: [0, 1]`, not `.min`)
    msg = err["msg"]
    ctx = err.get("ctx") or {}
    got = S._kind(err.get("input"))
    bounds = {"greater_than": ">", "greater_than_equal": "≥", "less_than": "<",
              "less_than_equal": "≤"}
    if kind in bounds:
        (limit,) = ctx.values()
        msg = f"must be {bounds[kind]} {limit}, got {got}"
    elif kind.endswith("_type") or kind in ("literal_error", "too_short", "too_long"):
        msg = _plain(msg) + f", got {got}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        msg = f"expected a mapping (key: value), got {S._kind(err.get('input'))}"
    if kind == "list_type":
        msg = f"expected a list, got {S._kind(err.get('input'))}"
    return Issue(msg, loc, source.location(loc))


def _plain(msg: str) -> str:
    msg = msg.replace("Input should be", "expected")
    msg = msg.replace("Dictionary should have", "expected").replace("List should have", "expected")
    msg = msg.replace(" after validation", "")
    return msg


def model_at(path: Sequence) -> type[BaseModel] | None:
    """The schema model that describes the data at ``path`` (None if not a model)."""
    tp: object = S.ProblemSpec
    for part in path:
        tp = _step(tp, part)
        if tp is None:
            return None
    models = _models(tp)
    return models[0] if models else None


def _models(tp) -> list[type[BaseModel]]:
    out, stack = [], [tp]
    while stack:
        t = stack.pop()
        if isinstance(t, type) and issubclass(t, BaseModel):
            out.append(t)
        elif typing.get_origin(t) not in (list, dict):
            stack.extend(typing.get_args(t))
    return out


def _containers(tp, origin) -> list:
    out, stack = [], [tp]
    while stack:
        t = stack.pop()
        if typing.get_origin(t) is origin:
            out.append(t)
        elif not (isinstance(t, type) and issubclass(t, BaseModel)):
            stack.extend(typing.get_args(t))
    return out


def _step(tp, part):
    if isinstance(part, int):
        lists = _containers(tp, list)
        return typing.get_args(lists[0])[0] if lists else None
    for model in _models(tp):
        for name, f in model.model_fields.items():
            if part in (name, f.alias):
                return f.annotation
    dicts = _containers(tp, dict)
    if dicts:
        return typing.get_args(dicts[0])[1]
    return None
