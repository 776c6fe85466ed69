"""A griffe extension for the API reference: reST roles in docstrings read as code.

The docstrings of ``pinn`` use Sphinx roles (``:func:`pinn.evaluate.score```, with ``~``
for the last name only) and ``::`` before literal blocks; Markdown shows neither, so each
role becomes inline code and ``::`` a colon before the (indented) code block. Google-style
Args entries that share a description (``b1, b2, eps: ...``) become one entry per name.
"""

from __future__ import annotations

import re

import griffe

# ``b1, b2, eps: Adam's moment rates`` in an Args section: one entry per name
SHARED = re.compile(r"^([ \t]+)(\w+(?:, \w+)+): (.*)$", re.M)
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc|const):`(~?)([^`]+)`")


def _role(m: re.Match) -> str:
    tilde, target = m.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def _shared(m: re.Match) -> str:
    indent, names, rest = m.groups()
    return "\n".join(f"{indent}{n}: {rest}" for n in names.split(", "))


def markdown_text(text: str) -> str:
    """The docstring with roles as inline code, ``::`` (end of line) as ``:`` and the
    entries ``a, b: text`` of an Args section split into one per name."""
    text = SHARED.sub(_shared, ROLE.sub(_role, text))
    return re.sub(r"(?<=\S)::[ \t]*$", ":", re.sub(r"^[ \t]*::[ \t]*$", "", text,
                                                    flags=re.M), flags=re.M)


class RolesAsCode(griffe.Extension):
    """Rewrite each docstring once, when griffe loads its object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_text(obj.docstring.value)
