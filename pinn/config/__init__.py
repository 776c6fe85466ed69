"""Problem files: YAML -> validated schema -> library objects.

    built = pinn.config.load("problems/heat2d.yaml", overrides=["training.seed=1"])
    built.problem            # pinn.Problem
    built.model()            # network spec (pinn.nets)
    built.training()         # pinn.Training

Every error is a :class:`ConfigError` whose ``str()`` is one line naming the
file, the line and the YAML path (and the column inside an expression).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pinn.config.build import Built, build, resolved_dict
from pinn.config.errors import ConfigError, Issue, Location
from pinn.config.load import load_spec
from pinn.config.schema import ProblemSpec

__all__ = ["Built", "ConfigError", "Issue", "Location", "ProblemSpec", "build", "load",
           "load_spec", "resolved_dict"]


def load(path: str, overrides: Sequence[str] = (), *, text: str | None = None) -> Built:
    """Read, validate and build a problem file (``overrides``: ``a.b.c=value`` strings)."""
    spec, source = load_spec(path, overrides, text=text)
    base = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    return build(spec, source, base)
