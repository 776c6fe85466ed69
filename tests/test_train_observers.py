"""The observer protocol of the training loop: what observers see, what they may ask for,
and that asking for a stop still resumes bit for bit."""

import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pinn.train import (
    LBFGS,
    Adam,
    ChunkEvent,
    Evaluation,
    History,
    Observer,
    Points,
    Stage,
    Training,
    read_history,
    run,
)

# module-level problem, so that equal runs share one compiled program


def fit_terms(params, batch):
    """A least-squares fit of a degree-8 polynomial to sin(3x) (ill-conditioned: L-BFGS
    needs tens of steps) with a small penalty on the coefficients."""
    x = batch["x"]
    u = (x[:, None] ** jnp.arange(9)) @ params["a"]
    return {"fit": jnp.mean((u - jnp.sin(3.0 * x)) ** 2),
            "small": 1e-8 * jnp.sum(params["a"] ** 2)}


def fit_sample(key, params):
    del params
    return {"x": jax.random.uniform(key, (64,), minval=-1.0, maxval=1.0)}


STAGES = [Stage(Adam(lr=5e-2), 40), Stage(LBFGS(gtol=1e-12), 60)]


def fit_run(eval_every=None, **kwargs):
    kwargs.setdefault("progress", False)
    with jax.enable_x64(True):
        return run(fit_terms, {"a": jnp.zeros(9)},
                   Training(STAGES, points=Points(resample_every=10), chunk=15,
                            eval_every=eval_every, checkpoint_every=None),
                   sample_fn=fit_sample, key=jax.random.key(1), **kwargs)


def strip(rows):
    return [{k: v for k, v in r.items() if k not in ("time", "steps_per_s")} for r in rows]


def same_state(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        if not np.array_equal(np.asarray(x), np.asarray(y)):
            return False
    return True


class Recorder(Observer):
    """Looks at everything, changes nothing."""

    def __init__(self, every=None):
        self.every = every
        self.events, self.closed, self.info = [], [], None

    def init(self, info):
        self.info = info

    def on_chunk(self, event):
        self.events.append((event.kind, event.step, event.stage,
                            None if event.row is None else dict(event.row)))

    def close(self, result):
        self.closed.append(result)


@pytest.fixture(scope="module")
def straight():
    return fit_run()


def test_a_user_observer_sees_every_chunk_and_changes_nothing(straight):
    rec = Recorder(every=7)
    res = fit_run(observers=[rec])
    assert rec.info.total == 100 and rec.info.start_step == 0 and rec.info.names == ["fit",
                                                                                      "small"]
    kinds = [k for k, *_ in rec.events]
    assert kinds[0] == "stage_start" and kinds[-1] == "end"
    # every row of the history passed through the observer, complete and in order
    rows = [row for *_, row in rec.events if row is not None]
    assert strip(rows) == strip(res.history)
    chunks = [step for kind, step, _, _ in rec.events if kind == "chunk"]
    assert chunks == [r["step"] for r in res.history if r["event"] is None]
    # each chunk is followed by its boundary; `every` cuts chunks at its multiples
    bounds = [step for kind, step, _, _ in rec.events if kind == "boundary"]
    assert len(bounds) == len(chunks)
    assert {7, 14, 21, 28, 35, 40} <= set(bounds)
    assert rec.closed == [res]
    # looking changes nothing: cutting chunks elsewhere leaves the training bit for bit
    assert res.step == straight.step and res.stages == straight.stages
    assert same_state(res.state, straight.state)


class Misbehaving(Observer):
    def __init__(self, request):
        self.request = request

    def on_chunk(self, event):
        if event.kind == "chunk":
            self.request(event)


@pytest.mark.parametrize(
    "request_, match",
    [
        (lambda e: e.roll_back({"event": "rollback"}, 0.5), "roll_back.*'chunk'"),
        (lambda e: e.fail(RuntimeError("no")), "fail.*'chunk'"),
    ],
)
def test_an_observer_can_stop_nothing_it_should_not(request_, match):
    before = signal.getsignal(signal.SIGINT)
    rec = Recorder()
    with pytest.raises(ValueError, match=match):
        fit_run(observers=[Misbehaving(request_), rec])
    # the run ended cleanly all the same: every observer was closed, handlers restored
    assert len(rec.closed) == 1 and rec.closed[0].step == 15
    assert signal.getsignal(signal.SIGINT) is before
    # a stage stop outside a chunk, or any request at the end, is refused too
    info = rec.info
    for kind in ("boundary", "end"):
        event = ChunkEvent(kind, 0, 0, None, info)
        with pytest.raises(ValueError, match="not allowed"):
            event.end_stage("x", "y")
    with pytest.raises(ValueError, match="not allowed"):
        ChunkEvent("end", 0, 0, None, info).stop()


def test_an_observer_error_propagates_after_every_close():
    class Boom(Observer):
        def on_chunk(self, event):
            if event.kind == "boundary" and event.step >= 30:
                raise ZeroDivisionError("observer bug")

    rec = Recorder()
    with pytest.raises(ZeroDivisionError, match="observer bug"):
        fit_run(observers=[Boom(), rec])
    assert len(rec.closed) == 1 and rec.closed[0].step == 30


class StopAt(Observer):
    """Early stopping: ends the run at the first boundary at or after ``step``."""

    def __init__(self, step):
        self.step = step

    def on_chunk(self, event):
        if event.kind == "boundary" and event.step >= self.step:
            event.stop()


@pytest.mark.parametrize("stop_at", [20, 45])  # mid-Adam, mid-L-BFGS
def test_a_stop_request_checkpoints_and_resumes_bit_for_bit(tmp_path, straight, stop_at):
    out = tmp_path / "run"
    early = fit_run(out_dir=out, observers=[StopAt(stop_at), Recorder()])
    assert stop_at <= early.step < stop_at + 15 < 100
    assert early.checkpoint is not None and early.checkpoint.name == f"ckpt_{early.step:09d}.npz"
    rec = Recorder()
    resumed = fit_run(out_dir=out, resume=True, observers=[rec])
    assert rec.info.start_step == early.step and rec.info.resumed_from == early.checkpoint
    assert resumed.step == straight.step
    assert same_state(resumed.state, straight.state)
    assert resumed.stages == straight.stages
    assert strip(resumed.history) == strip(straight.history)
    assert strip(read_history(out / "history.jsonl")) == strip(straight.history)


def test_built_in_observers_compose_by_hand(tmp_path):
    """What run's arguments make, a caller can pass as objects: the same files come out."""
    def evaluate(p):
        return {"a_err": abs(float(p["a"][1]) - 3.0)}

    by_args = fit_run(out_dir=tmp_path / "a", evaluate=evaluate, eval_every=20, history_csv=True)
    by_hand = fit_run(observers=[Evaluation(evaluate, every=20),
                                 History(tmp_path / "b", csv=True)])
    assert strip(by_hand.history) == strip(by_args.history)
    evaluated = {r["step"] for r in by_hand.history if "eval.a_err" in r}
    assert {20, 40, 60} <= evaluated <= {20, 40, 60, 80, 100}
    assert strip(read_history(tmp_path / "b" / "history.jsonl")) == strip(by_args.history)
    header = (tmp_path / "b" / "history.csv").read_text().splitlines()[0]
    assert "eval.a_err" in header and "loss.fit" in header


def test_observers_must_be_observers():
    with pytest.raises(TypeError, match="pinn.train.Observer \\(init\\(info\\), on_chunk"):
        fit_run(observers=[object()])
