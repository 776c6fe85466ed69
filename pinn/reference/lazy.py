"""References computed on first use: the FEM solution of a problem, spectral solvers.

Computing a fine-mesh FEM solution or a spectral reference takes seconds to
minutes, so these references do it on their first call and keep the result.
They are saved (:meth:`to_data`: their constructor's arguments) and copied between
processes without it: it is recomputed, or read from the disk cache, after loading.
"""

from __future__ import annotations

from typing import Any

from pinn.data import register


class LazyReference:
    """Base of references computed on first use: subclasses define :meth:`compute`,
    which returns a callable ``points[N, d] -> {field: values[N]}``."""

    _solution: Any = None

    def compute(self):  # pragma: no cover - interface
        raise NotImplementedError

    def solution(self):
        """The computed reference (computed now if it is not yet)."""
        if self._solution is None:
            self._solution = self.compute()
        return self._solution

    def __call__(self, points):
        return self.solution()(points)

    def to_data(self) -> dict:  # pragma: no cover - interface
        """The constructor's arguments (the run format, :mod:`pinn.serialize`)."""
        raise NotImplementedError

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_solution"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._solution = None


@register("reference")
class FEMReference(LazyReference):
    """The finite-element solution of ``problem`` itself (``pinn.fem.fem_reference``),
    computed on first use and cached on disk.

    ``problem`` is the problem without this reference: build it first, then

        problem = dataclasses.replace(problem, reference=FEMReference(problem, cells=128))
    """

    def __init__(self, problem, cells: int = 64, element: str = "P2", dt: float | None = None):
        self.problem, self.cells, self.element, self.dt = problem, cells, element, dt

    def compute(self):
        from pinn.fem import fem_reference

        return fem_reference(self.problem, cells=self.cells, element=self.element, dt=self.dt)

    def to_data(self) -> dict:
        return {"problem": self.problem, "cells": self.cells, "element": self.element,
                "dt": self.dt}

    @property
    def description(self) -> str:
        return f"FEM ({self.element}, {self.cells} cells)"

    @property
    def up_to_constant(self) -> tuple[str, ...]:
        """Fields fixed only up to a constant (compared after removing the mean)."""
        return tuple(self.solution().up_to_constant)

    def __repr__(self) -> str:
        return f"FEMReference(cells={self.cells}, element={self.element!r})"


@register("reference")
class SpectralReference(LazyReference):
    """A periodic spectral reference, :func:`~pinn.reference.allen_cahn`,
    :func:`~pinn.reference.kdv` or :func:`~pinn.reference.kuramoto_sivashinsky` with
    ``options``, computed on first use (and cached on disk by those functions).

        ref = SpectralReference("allen_cahn", {"n": 1024})
    """

    KINDS = ("allen_cahn", "kdv", "kuramoto_sivashinsky")

    def __init__(self, kind: str, options: dict | None = None, field: str = "u"):
        if kind not in self.KINDS:
            raise ValueError(f"unknown spectral reference {kind!r}; choose one of: "
                             f"{', '.join(self.KINDS)}")
        self.kind, self.options, self.field = kind, dict(options or {}), field

    def compute(self):
        from pinn.reference import spectral

        return getattr(spectral, self.kind)(field=self.field, **self.options)

    def to_data(self) -> dict:
        return {"kind": self.kind, "options": dict(self.options), "field": self.field}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.kind}({opts})"
