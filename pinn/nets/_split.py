"""From a stateful nnx module to a pure function and a pytree of parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

Params = dict[str, Any]
ApplyFn = Callable[[Params, jax.Array], jax.Array]


def _key_template(tree):
    """The nested keys of a pure dict (leaves replaced by None)."""
    if isinstance(tree, dict):
        return {k: _key_template(v) for k, v in tree.items()}
    return None


def _string_keys(tree):
    if isinstance(tree, dict):
        return {str(k): _string_keys(v) for k, v in tree.items()}
    return tree


def _original_keys(tree, template):
    if template is None:
        return tree
    return {k: _original_keys(tree[str(k)], sub) for k, sub in template.items()}


class Apply:
    """``apply(params, x) -> y``: the module as a pure function of its parameters.

    Holds the module's graph definition and its fixed buffers (input bounds,
    Fourier matrices, periods), which are constants of the function. Each call
    merges the graph with ``params`` and the buffers into a fresh module, so it
    can be traced by ``jax.jit``/``grad``/``vmap``/``jvp`` at any nesting depth.
    """

    def __init__(self, graphdef, keys, constants, d_in: int | None, d_out: int | None):
        self._graphdef = graphdef
        self._keys = keys
        self._constants = constants
        self.d_in = d_in
        self.d_out = d_out

    def module(self, params: Params) -> nnx.Module:
        """A module with these parameters (for inspection; training uses ``__call__``)."""
        return nnx.merge(self._graphdef, _original_keys(params, self._keys), self._constants)

    def __call__(self, params: Params, x: jax.Array) -> jax.Array:
        return self.module(params)(x)

    def __repr__(self) -> str:
        return f"Apply(d_in={self.d_in}, d_out={self.d_out})"


def split(module: nnx.Module) -> tuple[Apply, Params]:
    """Split ``module`` once into a pure ``apply`` and its trainable ``params``.

    ``params`` is a nested dict (string keys) of the module's :class:`nnx.Param`
    arrays, and nothing else: the fixed buffers (normalisation, Fourier matrices,
    periodic embeddings) stay in ``apply`` and so receive no gradient and are not
    seen by an optimiser. ``apply(params, x[N, d_in]) -> [N, d_out]`` is pure.

    >>> apply, params = split(MLP(width=32, depth=2).build(2, 1, key=jax.random.key(0)))
    >>> y = jax.jit(apply)(params, x)
    """
    if not isinstance(module, nnx.Module):
        raise TypeError(f"split takes an nnx.Module (e.g. MLP(...).build(...)), got {module!r}")
    graphdef, trainable, rest = nnx.split(module, nnx.Param, ...)
    pure = nnx.to_pure_dict(trainable)
    constants = nnx.to_pure_dict(rest)
    apply = Apply(
        graphdef,
        _key_template(pure),
        constants,
        getattr(module, "d_in", None),
        getattr(module, "d_out", None),
    )
    return apply, _string_keys(pure)


def count_params(params) -> int:
    """Number of trainable scalars in a parameter pytree."""
    return int(sum(np.size(leaf) for leaf in jax.tree.leaves(params)))


def user_module(model: Any, key: jax.Array) -> nnx.Module:
    """A user's own network: an ``nnx.Module`` as it is, or ``model(key)`` for a function
    ``key -> module`` (so that the run's seed initialises it)."""
    if isinstance(model, nnx.Module):
        return model
    if callable(model) and not isinstance(model, type):
        module = model(key)
        if not isinstance(module, nnx.Module):
            raise TypeError(
                f"model: the function {getattr(model, '__name__', model)!r} returned "
                f"{type(module).__name__}; a model function must return a flax.nnx.Module "
                "(e.g. lambda key: MyNet(rngs=nnx.Rngs(key)))."
            )
        return module
    raise TypeError(
        "model must be a network spec (pinn.MLP(...), pinn.PirateNet(...)), a flax.nnx.Module "
        f"or a function key -> nnx.Module, got {model!r}."
    )


def split_user(module: nnx.Module, d_in: int, d_out: int, dtype: Any,
               columns: str = "") -> tuple[Apply, Params]:
    """:func:`split` of a user's module, checked to map ``[N, d_in]`` to ``[N, d_out]``,
    with its floating parameters cast to the run's ``dtype`` (float64 runs)."""
    apply, params = split(module)
    params = jax.tree.map(
        lambda a: a.astype(dtype) if jnp.issubdtype(jnp.result_type(a), jnp.floating) else a,
        params)
    where = f" (columns {columns})" if columns else ""
    try:
        out = jax.eval_shape(apply, params, jax.ShapeDtypeStruct((2, d_in), dtype))
    except Exception as err:  # noqa: BLE001 - the user's module: say what it was given
        raise ValueError(
            f"model: {type(module).__name__} could not be called on points [N, {d_in}]{where}: "
            f"{type(err).__name__}: {err}. Its first layer must take {d_in} inputs."
        ) from err
    if getattr(out, "shape", None) != (2, d_out):
        raise ValueError(
            f"model: {type(module).__name__} maps points [N, {d_in}] to "
            f"{getattr(out, 'shape', out)} for N = 2; it must return [N, {d_out}] (one column "
            "per field, in the problem's order)."
        )
    apply.d_in, apply.d_out = d_in, d_out
    return apply, params
