"""``model:`` and ``training:`` -> the network spec and :class:`pinn.Training`, through the
registry's YAML vocabulary (:mod:`pinn.config.registry`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinn.config import schema as S
from pinn.config.errors import ConfigError, Issue, suggest
from pinn.config.registry import kwargs, models, optimizers, samplers, weightings

if TYPE_CHECKING:
    from pinn.config.build import Built

__all__ = ["build_model", "build_training", "build_optimizer", "build_weighting",
           "check_training"]


def build_sampler(name: str):
    return samplers()[name]()


def build_rad(rad: S.RADArgs | None):
    if rad is None:
        return None
    import pinn.geometry as G

    return G.RAD(**kwargs(rad))


def _fourier_scales(b: Built, scale):
    """A Fourier scale from YAML: one number, or ``{input: scale}`` as a tuple over the
    network's inputs in order (those not listed: 1)."""
    if not isinstance(scale, dict):
        return scale
    names = [c.name for c in b.problem.inputs]
    unknown = [n for n in scale if n not in names]
    if unknown:
        raise ConfigError(Issue(
            f"unknown coordinate '{unknown[0]}'{suggest(unknown[0], names)} (inputs: "
            f"{', '.join(names)})", ("model", "fourier", "scale"),
            b.source.location(("model", "fourier", "scale", unknown[0]))))
    return tuple(float(scale.get(n, 1.0)) for n in names)


def build_model(b: Built):
    """The network spec (``pinn.nets``) described by ``model:``."""
    import numpy as np

    import pinn.nets as N

    m = b.spec.model
    kw: dict[str, Any] = dict(kwargs(m.args), normalize=m.normalize)
    if m.per_field:
        kw["per_field"] = True
    if m.output_scale is not None:
        names = [f.name for f in b.problem.fields]
        unknown = [n for n in m.output_scale if n not in names]
        if unknown:
            raise ConfigError(Issue(
                f"unknown field '{unknown[0]}'{suggest(unknown[0], names)} (fields: "
                f"{', '.join(names)})", ("model", "output_scale"),
                b.source.location(("model", "output_scale", unknown[0]))))
        kw["output_scale"] = tuple(float(m.output_scale.get(n, 1.0)) for n in names)
    for key, cls in (("fourier", N.Fourier), ("rwf", N.RWF)):
        option = getattr(m, key)
        if option is not None:  # absent: the network's default; false: none
            kw[key] = None if option is False else cls(**{**kwargs(option), **(
                {"scale": _fourier_scales(b, option.scale)} if key == "fourier" else {})})
    if m.trainable_periods and not m.periodic:
        raise ConfigError(Issue(
            "trainable_periods needs the coordinates in model.periodic (with their starting "
            "period, e.g. periodic: {t: 1.0})", ("model", "trainable_periods"),
            b.source.location(("model", "trainable_periods"))))
    if m.periodic:
        names = [c.name for c in b.coords]
        lo, hi = b.problem.domain.bounds  # space, then time
        periods = {}
        for cname, period in m.periodic.items():
            if cname not in names:
                raise ConfigError(Issue(
                    f"unknown coordinate '{cname}'{suggest(cname, names)} (coords: "
                    f"{', '.join(names)})", ("model", "periodic"),
                    b.source.location(("model", "periodic", cname))))
            i = names.index(cname)
            periods[i] = float(period) if period is not None else float(
                np.atleast_1d(hi)[i] - np.atleast_1d(lo)[i])
        trainable = []
        for cname in m.trainable_periods:
            if cname not in m.periodic:
                raise ConfigError(Issue(
                    f"'{cname}' has no period to learn: list it in model.periodic too "
                    f"(periodic: {', '.join(m.periodic)})", ("model", "trainable_periods"),
                    b.source.location(("model", "trainable_periods"))))
            trainable.append(names.index(cname))
        kw["periodic"] = N.Periodic(periods, harmonics=m.harmonics, trainable=trainable)
    try:
        return models()[m.kind](**kw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(Issue(str(exc), ("model", m.kind),
                                b.source.location(("model", m.kind)))) from None


def build_optimizer(stage: S.StageSpec):
    kw = kwargs(stage.args)
    if kw.get("decay") == "none":
        kw["decay"] = None
    return optimizers()[stage.kind](**kw)


def build_weighting(w: S.WeightingSpec):
    return weightings()[w.kind](**kwargs(w.args))


def check_training(b: Built) -> None:
    """What ``training:`` must name and hold (checked before anything is built)."""
    t = b.spec.training
    terms = list(b.problem.equations) + list(b.problem.conditions)
    if t.weighting.kind == "fixed" and t.weighting.fixed.weights:
        for k in t.weighting.fixed.weights:
            if k not in terms:
                raise ConfigError(Issue(
                    f"no loss term named '{k}'{suggest(k, terms)}; terms: {', '.join(terms)}",
                    ("training", "weighting", "fixed", "weights"),
                    b.source.location(("training", "weighting", "fixed", "weights", k))))
    if t.windows > 1:
        from pinn.marching import check_windows

        try:
            check_windows(b.problem, t.windows)
        except ValueError as exc:
            raise ConfigError(Issue(str(exc).split(": ", 1)[-1], ("training", "windows"),
                                    b.source.location(("training", "windows")))) from None
    for i, s in enumerate(t.stages):
        if s.precision == "mixed" and not optimizers()[s.kind].supports_mixed:
            path = ("training", "stages", i, "precision")
            raise ConfigError(Issue(
                f"precision 'mixed' (float32, then float64 once the line search stalls) needs "
                f"ssbroyden, ssbfgs or lbfgs, not {s.kind}: give this stage 32 or 64",
                path, b.source.location(path)))
    space = b.problem.space
    if t.points.sampler == "grid" and space.params:  # pinn.geometry.parametric
        path = ("training", "points", "sampler")
        raise ConfigError(Issue(
            f"a regular grid cannot follow the domain, whose shape changes with "
            f"{', '.join(q.name for q in space.params)}; use sobol, halton, lhs or uniform",
            path, b.source.location(path)))
    if not any(s.steps > 0 for s in t.stages):
        raise ConfigError(Issue("every stage has 0 steps: nothing to train",
                                ("training", "stages"), b.source.location(("training", "stages"))))


def build_training(b: Built):
    """``pinn.Training`` from the ``training:`` section (stages with 0 steps are skipped)."""
    from pinn.train.spec import Points, Stage, Stop, Training

    check_training(b)
    t = b.spec.training
    stages = [Stage(build_optimizer(s), s.steps, precision=s.precision)
              for s in t.stages if s.steps > 0]
    p = t.points
    points = Points(interior=p.interior, boundary=p.boundary, initial=p.initial,
                    resample_every=p.resample_every, sampler=build_sampler(p.sampler),
                    rad=build_rad(p.rad))
    training = Training(stages=stages, points=points, weighting=build_weighting(t.weighting),
                        seed=t.seed, chunk=t.chunk, eval_every=t.eval_every or None,
                        checkpoint_every=t.checkpoint_every or None, devices=t.devices,
                        micro_batch=t.micro_batch, windows=t.windows,
                        stop=None if t.stop is False else Stop(**kwargs(t.stop)),
                        time_limit=t.time_limit)
    # each stage's precision in the stage where they differ or one is mixed (a stage's own,
    # or auto's), so that setup(precision=b.precision) keeps them
    return training.with_stage_precisions(t.precision)
