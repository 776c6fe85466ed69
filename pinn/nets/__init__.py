"""Neural networks for PINNs (flax.nnx), their pure split, and hard-constraint transforms.

Describe a network with a spec, build it once the problem is known, split it::

    import jax
    from pinn import nets

    spec = nets.MLP(width=64, depth=4, activation="tanh", fourier=nets.Fourier(1.0, 64))
    module = spec.build(d_in=2, d_out=1, key=jax.random.key(0), bounds=([0, 0], [1, 1]))
    apply, params = nets.split(module)       # apply(params, x[N, 2]) -> [N, 1], pure
    nets.count_params(params)

Specs: :class:`MLP`, :class:`ModifiedMLP`, :class:`PirateNet`; options
:class:`Fourier` (random Fourier features), :class:`RWF` (random weight
factorisation) and :class:`Periodic` (exact periodic input embedding).
The modules they build (``MLPModule``, ...) can also be made directly.
``spec.build(..., inputs=[[0, 1, 2], [0, 1]])`` (the input columns of each output) or
``per_field=True`` builds one sub-network per field (:class:`FieldNetworksModule`).
"""

from pinn.nets._embeddings import Embedding, FourierFeatures, Normalization, PeriodicEmbedding
from pinn.nets._fieldnets import FieldNetworksModule
from pinn.nets._layers import ACTIVATIONS, Buffer, Dense
from pinn.nets._networks import (
    MLPModule,
    ModifiedMLPModule,
    PirateBlock,
    PirateNetModule,
    gate,
)
from pinn.nets._specs import MLP, RWF, Fourier, ModelSpec, ModifiedMLP, Periodic, PirateNet
from pinn.nets._split import Apply, count_params, split
from pinn.nets.constraints import (
    box_distance,
    hard_dirichlet,
    hard_dirichlet_initial,
    hard_initial,
)

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "RWF",
    "Apply",
    "Buffer",
    "Dense",
    "Embedding",
    "FieldNetworksModule",
    "Fourier",
    "FourierFeatures",
    "MLPModule",
    "ModelSpec",
    "ModifiedMLP",
    "ModifiedMLPModule",
    "Normalization",
    "Periodic",
    "PeriodicEmbedding",
    "PirateBlock",
    "PirateNet",
    "PirateNetModule",
    "box_distance",
    "count_params",
    "gate",
    "hard_dirichlet",
    "hard_dirichlet_initial",
    "hard_initial",
    "split",
]
