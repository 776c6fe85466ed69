"""Training: optimiser stages, loss-term weighting, the jitted loop, observers, checkpoints.

from pinn.train import Adam, LBFGS, Stage, Training, GradNorm, run
training = Training([Stage(Adam(lr=1e-3), 10_000), Stage(LBFGS(), 1_000)],
                    weighting=GradNorm())
result = run(terms_fn, params, training, sample_fn=sample_fn, key=jax.random.key(0))
"""

from .callbacks import EarlyStopping
from .checkpoint import CheckpointError, latest_checkpoint, load_checkpoint, save_checkpoint
from .gauss_newton import GaussNewton, LevenbergMarquardt
from .history import read_history
from .loggers import MLflow, TensorBoard
from .loop import Interrupted, TrainingDiverged, TrainResult, run
from .observers import (
    Callback,
    Checkpoints,
    ChunkEvent,
    Evaluation,
    History,
    KeepBest,
    NanGuard,
    Observer,
    Progress,
    RunInfo,
    Signals,
    StallStop,
    StopWhenDone,
)
from .optim import Adam, AdamW, FirstOrder, Optax, Optimizer
from .quasi_newton import LBFGS, SSBFGS, LineSearch, SSBroyden
from .soap import SOAP
from .spec import Points, Stage, Stop, Training, precision_scope
from .terms import Loss
from .weighting import (
    RBA,
    VRBA,
    Annealing,
    Causal,
    Fixed,
    GradNorm,
    Weighting,
    causal_loss,
    causal_weights,
)

__all__ = [
    "Training",
    "Points",
    "Loss",
    "Stage",
    "precision_scope",
    "Optimizer",
    "FirstOrder",
    "LineSearch",
    "Weighting",
    "Adam",
    "AdamW",
    "LBFGS",
    "SOAP",
    "LevenbergMarquardt",
    "GaussNewton",
    "SSBFGS",
    "SSBroyden",
    "Optax",
    "Fixed",
    "GradNorm",
    "Annealing",
    "Causal",
    "RBA",
    "VRBA",
    "causal_weights",
    "causal_loss",
    "run",
    "TrainResult",
    "TrainingDiverged",
    "Interrupted",
    "CheckpointError",
    "save_checkpoint",
    "load_checkpoint",
    "latest_checkpoint",
    "read_history",
    "Callback",
    "Checkpoints",
    "ChunkEvent",
    "EarlyStopping",
    "Evaluation",
    "KeepBest",
    "History",
    "NanGuard",
    "Observer",
    "Progress",
    "RunInfo",
    "Signals",
    "StallStop",
    "StopWhenDone",
    "Stop",
    "TensorBoard",
    "MLflow",
]
