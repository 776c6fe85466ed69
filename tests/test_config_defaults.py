"""A problem file's defaults are the library's: every stage, weighting, network, sampler
and the training settings built from an empty YAML mapping equal the library's default
objects (the schema keeps them as data so that checking a file does not load JAX; this
pins the two together)."""

import pytest

import pinn
import pinn.config
import pinn.geometry as G
from pinn.config.registry import MODELS, OPTIMIZERS, SAMPLERS, WEIGHTINGS, registered
from pinn.plan import DEFAULT_MODEL

BASE = "domain: {interval: [0, 1]}\nequations: {e: 'u_xx + 1'}\n"


def _built(text: str = ""):
    return pinn.config.load("defaults.yaml", text=BASE + text)


@pytest.mark.parametrize("word", sorted(OPTIMIZERS))
def test_every_optimizer_from_an_empty_mapping_is_the_library_default(word):
    stage = _built(f"training: {{stages: [{{{word}: {{}}, steps: 7}}]}}\n").training().stages[0]
    assert stage.optimizer == registered("optimizer")[OPTIMIZERS[word]]()
    assert stage.steps == 7


@pytest.mark.parametrize("word", sorted(WEIGHTINGS))
def test_every_weighting_from_an_empty_mapping_is_the_library_default(word):
    training = _built(f"training: {{weighting: {word}}}\n").training()
    assert training.weighting == registered("weighting")[WEIGHTINGS[word]]()


@pytest.mark.parametrize("word", sorted(MODELS))
def test_every_network_from_an_empty_mapping_is_the_library_default(word):
    cls = registered("model")[MODELS[word]]
    assert _built(f"model: {{{word}: {{}}}}\n").model() == cls()
    with_options = _built(f"model: {{{word}: {{}}, fourier: {{}}, rwf: {{}}}}\n").model()
    assert with_options == cls(fourier=pinn.nets.Fourier(), rwf=pinn.nets.RWF())


@pytest.mark.parametrize("word", sorted(SAMPLERS))
def test_every_sampler_is_the_library_default(word):
    points = _built(f"training: {{points: {{sampler: {word}}}}}\n").training().points
    assert points.sampler == registered("sampler")[SAMPLERS[word]]()


def test_no_training_and_no_model_is_the_library_default_run():
    built = _built()
    assert built.training() == pinn.Training().with_stage_precisions(None)
    assert built.model() == DEFAULT_MODEL
    assert _built("training: {points: {rad: {}}}\n").training().points.rad == G.RAD()


def test_set_reaches_into_a_default_section():
    """--set into a section the file leaves out changes that default, not a new one."""
    built = pinn.config.load("defaults.yaml", ["training.stages.0.steps=500",
                                               "model.mlp.width=10"], text=BASE)
    stages = built.training().stages
    default = pinn.Training().stages
    assert [s.steps for s in stages] == [500, default[1].steps]
    assert [s.optimizer for s in stages] == [s.optimizer for s in default]
    assert built.model() == pinn.MLP(width=10, depth=DEFAULT_MODEL.depth)
