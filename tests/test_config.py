"""Problem files: YAML loading with places, the schema, overrides, building library objects."""

from __future__ import annotations

import glob
import math
import os

import pytest

from pinn.config import ConfigError, load, load_spec, resolved_dict
from pinn.config.yamlio import load as load_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEMS = sorted(glob.glob(os.path.join(ROOT, "problems", "*.yaml")))

HEAT = """\
name: heat2d
coords: [x, y, t]
fields: [u]
params: {alpha: 0.05}
domain: {space: {rectangle: {min: [0, 0], max: [1, 1]}}, time: [0, 1]}
equations: {heat: "u_t - alpha*(u_xx + u_yy)"}
conditions:
  walls: {dirichlet: {u: 0}, on: boundary}
  start: {initial: {u: "sin(pi*x)*sin(pi*y)"}}
exact: {u: "exp(-2*pi^2*alpha*t)*sin(pi*x)*sin(pi*y)"}
model: {mlp: {width: 64, depth: 4, activation: tanh}}
training:
  seed: 0
  points: {interior: 4096, boundary: 1024, initial: 1024, resample_every: 100}
  stages: [{adam: {lr: 1.0e-3}, steps: 5000}, {lbfgs: {}, steps: 500}]
"""


def error_of(text: str, overrides=(), name="heat2d.yaml") -> str:
    with pytest.raises(ConfigError) as info:
        load(name, overrides, text=text)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# -- YAML ---------------------------------------------------------------------


def test_yaml_12_scalars_and_places():
    data, src = load_yaml("on: boundary\nlr: 1e-3\nflag: yes\nok: true\nd: 2001-01-01\n", "f.yaml")
    assert data == {"on": "boundary", "lr": 1e-3, "flag": "yes", "ok": True, "d": "2001-01-01"}
    assert src.location(("lr",)).line == 2
    assert str(src.location(("d", "deeper"))) == "f.yaml:5"


def test_duplicate_keys_are_errors():
    msg = error_of(HEAT.replace("fields: [u]", "fields: [u]\nfields: [v]"))
    assert msg.startswith("heat2d.yaml:4") and "'fields' appears twice (first on line 3)" in msg


def test_sketch_of_the_issue_builds():
    built = load("heat2d.yaml", text=HEAT)
    p = built.problem
    assert [c.name for c in p.coords] == ["x", "y", "t"]
    assert p.field_names == ("u",)
    assert str(p.equations["heat"]) == "D(u, t) - alpha*(D(u, x, 2) + D(u, y, 2))"
    assert set(p.conditions) == {"walls", "start"}
    assert built.seed == 0 and built.precision == 32
    training = built.training()
    assert [s.steps for s in training.stages] == [5000, 500]
    assert training.points.interior == 4096


def test_defaults_are_enough():
    built = load("p.yaml", text="domain: {interval: [0, 1]}\n"
                 "equations: {poisson: \"-u_xx = pi^2*sin(pi*x)\"}\n"
                 "conditions: {ends: {dirichlet: {u: 0}}}\n")
    assert built.name == "p"
    assert [c.name for c in built.problem.coords] == ["x"]
    assert built.spec.model.kind == "mlp" and built.spec.training.precision == "auto"
    # the default recipe: Adam, then self-scaled Broyden in float64, on a 3 x 30 MLP
    assert built.precision == 64
    assert (built.spec.model.mlp.width, built.spec.model.mlp.depth) == (30, 3)
    kinds = [type(s.optimizer).__name__ for s in built.training().stages]
    assert kinds == ["Adam", "SSBroyden"]
    first_order = load("p.yaml", text="domain: {interval: [0, 1]}\n"
                       "equations: {poisson: \"-u_xx = 1\"}\n"
                       "training: {stages: [{adam: {}, steps: 10}, {lbfgs: {}, steps: 5}]}\n")
    assert first_order.precision == 32
    assert str(built.problem.equations["poisson"]) == "-D(u, x, 2) - pi^2*sin(pi*x)"


def test_parameter_expressions_use_earlier_parameters():
    text = HEAT.replace("params: {alpha: 0.05}",
                        'params: {Re: 40, lam: "Re/2 - sqrt(Re^2/4 + 4*pi^2)", alpha: 0.05}')
    built = load("heat2d.yaml", text=text)
    re_ = 40.0
    lam = re_ / 2 - math.sqrt(re_**2 / 4 + 4 * math.pi**2)
    assert built.params["lam"].value == pytest.approx(lam, rel=1e-15)
    msg = error_of(HEAT.replace("params: {alpha: 0.05}", 'params: {a: "2*b", b: 1, alpha: 1}'))
    assert msg.startswith("heat2d.yaml:4 params.a:") and "'b', which is defined later" in msg


def test_learnable_parameter():
    text = HEAT.replace("params: {alpha: 0.05}", "params: {alpha: {value: 0.1, learnable: true}}")
    text += "  # data\n"
    text = text.replace("  start:", "  obs: {data: {generate: {from: exact, n: 50, noise: 0.01}}}\n"
                        "  start:")
    built = load("heat2d.yaml", text=text)
    (p,) = built.problem.learnable
    assert p.name == "alpha" and p.value == 0.1
    data = built.problem.conditions["obs"]
    assert data.points.shape == (50, 3)
    assert resolved_dict(built.spec)["params"]["alpha"] == {"value": 0.1, "learnable": True}


def test_generated_data_match_the_exact_solution():
    text = HEAT.replace("  start:", "  obs: {data: {generate: {from: exact, n: 64, seed: 3}}}\n"
                        "  start:")
    built = load("heat2d.yaml", text=text)
    d = built.problem.conditions["obs"]
    x, y, t = d.points.T
    ((_, u),) = d.values
    exact = [math.exp(-2 * math.pi**2 * 0.05 * ti) * math.sin(math.pi * xi) * math.sin(math.pi * yi)
             for xi, yi, ti in zip(x, y, t, strict=True)]
    assert max(abs(a - b) for a, b in zip(u, exact, strict=True)) < 1e-12


def test_data_from_csv_file(tmp_path):
    (tmp_path / "obs.csv").write_text("x,y,t,u\n0.5,0.5,0,1\n0.25,0.5,0.1,0.5\n")
    text = HEAT.replace("  start:", "  obs: {data: {file: obs.csv}, noise: 0.01}\n  start:")
    built = load(str(tmp_path / "heat2d.yaml"), text=text)
    d = built.problem.conditions["obs"]
    assert d.points.tolist() == [[0.5, 0.5, 0.0], [0.25, 0.5, 0.1]]
    assert d.noise == 0.01
    msg = error_of(text.replace("obs.csv", "nope.csv"), name=str(tmp_path / "heat2d.yaml"))
    assert "conditions.obs.data.file: no data file 'nope.csv'" in msg


def test_definitions_and_l_shape():
    built = load(os.path.join(ROOT, "problems", "poisson_lshape.yaml"))
    dom = built.problem.domain
    assert set(built.spec.define) == {"r", "theta", "singular"}
    import numpy as np

    inside = np.asarray(dom.contains(np.array([[-0.5, -0.5], [0.5, 0.5], [0.5, -0.5]])))
    assert inside.tolist() == [True, True, False]


# -- overrides ----------------------------------------------------------------


def test_overrides_are_yaml_typed_with_list_indices():
    built = load("heat2d.yaml", ["training.stages.0.steps=500", "training.stages.1.lbfgs.memory=5",
                                 "params.alpha=1e-2", "model.mlp.activation=sin",
                                 "training.points.sampler=sobol"], text=HEAT)
    assert [s.steps for s in built.spec.training.stages] == [500, 500]
    assert built.spec.training.stages[1].args.memory == 5
    assert built.params["alpha"].value == 0.01
    assert built.spec.model.mlp.activation == "sin"


def test_override_errors_name_the_override():
    msg = error_of(HEAT, ["training.stages.0.steps=many"])
    assert msg.startswith("--set training.stages.0.steps=many training.stages.0.steps:")
    assert "expected a whole number" in msg
    msg = error_of(HEAT, ["training.stages.7.steps=1"])
    assert msg.startswith("--set training.stages.7.steps=1") and "out of range" in msg
    msg = error_of(HEAT, ["training.seed"])
    assert "key.path=value" in msg
    msg = error_of(HEAT, ["name.first=1"])
    assert "not a mapping or list" in msg


def test_zero_step_stage_is_skipped():
    built = load("heat2d.yaml", ["training.stages.1.steps=0"], text=HEAT)
    assert len(built.training().stages) == 1


# -- errors: file, line, path (and column) -----------------------------------


@pytest.mark.parametrize("edit, expected", [
    (("walls: {dirichlet: {u: 0}", "walls: {dirichlet: {w: 0}"),
     "heat2d.yaml:8 conditions.walls.dirichlet: unknown field 'w' (fields: u)"),
    (("domain:", "domian:"), "heat2d.yaml:5: unknown key 'domian' (did you mean 'domain'?)"),
    (("width: 64", "width: wide"),
     "heat2d.yaml:11 model.mlp.width: expected a whole number, got the text 'wide'"),
    (("on: boundary", "on: lft"),
     "heat2d.yaml:8 conditions.walls.on: unknown boundary part 'lft' (did you mean 'left'?)"),
    (("interior: 4096", "interior: -5"),
     "heat2d.yaml:14 training.points.interior: must be ≥ 1, got -5"),
    (("interior: 4096", "interior: 100000000000000000000000"),
     "heat2d.yaml:14 training.points.interior: must be ≤ 50000000"),
    (("alpha: 0.05", "alpha: 1.0e999"), "heat2d.yaml:4 params.alpha: the number is too large"),
    (("rectangle:", "rectangel:"), "heat2d.yaml:5 domain.space: unknown key 'rectangel' "
     "(did you mean 'rectangle'?)"),
    (("{adam: {lr: 1.0e-3}, steps: 5000}", "{adam: {lr: 1.0e-3}}"),
     "heat2d.yaml:15 training.stages.0: missing 'steps'"),
    (("coords: [x, y, t]", "coords: [x, t]"), "heat2d.yaml:2 coords: 2 coordinate(s)"),
    (("max: [1, 1]", "max: [1, 1, 1]"), "heat2d.yaml:5 domain.space.rectangle.max: rectangle "
     "needs 2 numbers here, got 3"),
    (("time: [0, 1]", "time: [1, 0]"),
     "heat2d.yaml:5 domain.time: TimeInterval needs finite t0 < t1, got t0=1.0, t1=0.0"),
    (("{lbfgs: {}, steps: 500}", "{lbfgs: {}, adam: {}, steps: 500}"),
     "heat2d.yaml:15 training.stages.1: give exactly one optimizer (adam, adamw, soap, lbfgs, "
     "lm, gauss_newton"),
])
def test_errors_name_the_place(edit, expected):
    old, new = edit
    assert old in HEAT
    msg = error_of(HEAT.replace(old, new, 1))
    assert msg.startswith(expected), msg


def test_expression_errors_give_the_column():
    msg = error_of(HEAT.replace("u_t - alpha*", "u_t - alhpa*"))
    # line 6, the string starts after `equations: {heat: "` (19 characters): column 20 + 6
    assert msg.startswith("heat2d.yaml:6:26 equations.heat: unknown name 'alhpa': did you mean "
                          "'alpha'? (column 7 of the equation)"), msg
    msg = error_of(HEAT.replace("u_t - alpha*(u_xx + u_yy)", "u_t - alpha*(u_xx + u_yy"))
    assert msg.startswith("heat2d.yaml:6:") and "equations.heat:" in msg and "column" in msg
    msg = error_of(HEAT.replace('{u: "sin(pi*x)*sin(pi*y)"}', '{u: "sin(pi*x)*sin(pi*z)"}'))
    assert msg.startswith("heat2d.yaml:9:")
    assert "conditions.start.initial.u: unknown name 'z'" in msg


def test_expression_error_in_block_scalar_gives_its_line():
    text = HEAT.replace('equations: {heat: "u_t - alpha*(u_xx + u_yy)"}',
                        "equations:\n  heat: >\n    u_t - alpha*(u_xx +\n    u_yy) + $\n")
    msg = error_of(text)
    assert msg.startswith("heat2d.yaml:") and "equations.heat:" in msg and "column" in msg


def test_empty_binary_and_non_mapping_files(tmp_path):
    for content, expected in [(b"", "the file is empty"),
                              (b"# only a comment\n", "the file is empty"),
                              (b"\x00\x01\x02binary", "binary file"),
                              (b"\xff\xfe\xfa bad", "not UTF-8"),
                              (b"- a\n- b\n", "not a list"),
                              (b"name: [unclosed\n", "YAML syntax error")]:
        f = tmp_path / "bad.yaml"
        f.write_bytes(content)
        with pytest.raises(ConfigError) as info:
            load_spec(str(f))
        msg = str(info.value)
        assert msg.startswith("bad.yaml") and expected in msg, msg


def test_several_errors_are_all_kept():
    text = HEAT.replace("width: 64", "width: wide").replace("interior: 4096", "interior: -1")
    with pytest.raises(ConfigError) as info:
        load("heat2d.yaml", text=text)
    assert len(info.value.issues) == 2
    assert "(and 1 more problem" in str(info.value)
    assert [i.location.line for i in info.value.issues] == [11, 14]


def test_semantic_errors():
    cases = [
        (HEAT.replace("fields: [u]", "fields: [u, sin]"), "'sin' is a built-in name"),
        (HEAT.replace("fields: [u]", "fields: [u, alpha]"), "'alpha' is declared twice"),
        (HEAT.replace("{initial: {u:", "{dirichlet: {u: 0}, rate: {u: 0}, initial: {u:"),
         "give exactly one condition type"),
        (HEAT.replace("walls: {dirichlet: {u: 0}, on: boundary}",
                      "walls: {neumann: {u: 0}, on: boundary, hard: true}"),
         "conditions.walls.hard: a neumann condition cannot be hard"),
        (HEAT.replace("time: [0, 1]", "time: [0, 1]}\nx: {y: 1").replace("}}\nx", "}\nx"),
         "unknown key 'x'"),
        (HEAT.replace('exact: {u: "', 'exact: {u: "u + '), "an exact solution cannot use fields"),
        (HEAT.replace("on: boundary", 'on: "u > 0"'), "a predicate selects points"),
    ]
    for text, expected in cases:
        assert expected in error_of(text)


def test_resolved_config_round_trips(tmp_path):
    import yaml

    built = load("heat2d.yaml", text=HEAT)
    resolved = resolved_dict(built.spec)
    text = yaml.safe_dump(resolved, sort_keys=False)
    again = load("heat2d.yaml", text=text)
    assert resolved_dict(again.spec) == resolved


@pytest.mark.parametrize("path", PROBLEMS, ids=[os.path.basename(p) for p in PROBLEMS])
def test_every_problem_file_builds(path):
    built = load(path)
    assert built.problem.equations
    built.model()
    built.training()


PLATE = """\
domain:
  difference:
    - rectangle: {min: [0, 0], max: [2, 1]}
    - {disk: {center: [0.5, 0.5], radius: 0.2}, parts: {circle: hole}}
  parts: {left: inlet}
  time: [0, 1]
equations: {heat: "u_t - laplacian(u)"}
conditions:
  cold: {neumann: {u: 0}, on: hole}
  hot: {dirichlet: {u: 1}, on: [inlet, "top"]}
  corner: {dirichlet: {u: 0}, on: "x == 2 and y > 0.5"}
"""


def test_csg_with_renamed_parts_and_predicates():
    built = load("plate.yaml", text=PLATE)
    space = built.problem.space
    assert set(space.boundary_parts) == {"inlet", "right", "bottom", "top", "hole"}
    conds = built.problem.conditions
    assert conds["cold"].on == "hole" and conds["hot"].on == ("inlet", "top")
    assert str(conds["corner"].on) == "x == 2 and y > 0.5"
    import numpy as np

    assert np.asarray(space.contains(np.array([[0.5, 0.5], [1.5, 0.5]]))).tolist() == [False,
                                                                                      True]
    msg = error_of(PLATE.replace("{circle: hole}", "{circel: hole}"), name="plate.yaml")
    assert msg.startswith("plate.yaml:4 domain.difference.1.parts:")
    assert "no boundary part 'circel' (did you mean 'circle'?)" in msg
    msg = error_of(PLATE.replace("on: hole", "on: hol"), name="plate.yaml")
    assert msg.startswith("plate.yaml:9 conditions.cold.on: unknown boundary part 'hol' "
                          "(did you mean 'hole'?)")


# -- geometry and numbers come from the library, errors keep their place -----


@pytest.mark.parametrize("domain, expected", [
    ("{interval: [1, 0]}", "p.yaml:1 domain.interval: Interval needs finite a < b"),
    ("{annulus: {center: [0, 0], inner: 2, outer: 1}}",
     "p.yaml:1 domain.annulus: an annulus needs inner < outer"),
    ("{polygon: [[0, 0], [1, 0]]}", "p.yaml:1 domain.polygon: Polygon needs at least 3 vertices"),
    ("{polygon: [[0, 0], [1, 0], [2, 0]]}", "p.yaml:1 domain.polygon: Polygon: edges side1 and "
     "side2 fold back"),
    ("{ellipse: {center: [0, 0], semi_axes: [1, -1]}}",
     "p.yaml:1 domain.ellipse: Ellipse: semi_axes must be a positive number"),
    ("{triangle: [[0, 0], [1, 0], [0, 1], [1, 1]]}",
     "p.yaml:1 domain.triangle: a triangle has 3 vertices, got 4"),
    ("{disk: {center: [0, 0, 0], radius: 1}}",
     "p.yaml:1 domain.disk.center: disk needs 2 numbers here, got 3"),
    ("{union: [{interval: [0, 1]}, {disk: {center: [0, 0], radius: 1}}]}",
     "p.yaml:1 domain.union: cannot combine a 1-D shape with a 2-D shape"),
])
def test_geometry_errors_come_from_the_constructors(domain, expected):
    text = f"domain: {domain}\nequations: {{e: \"u\"}}\n"
    msg = error_of(text, name="p.yaml")
    assert msg.startswith(expected), msg


def test_annulus_and_l_shape_build():
    import numpy as np

    built = load("p.yaml", text="domain: {annulus: {center: [0, 0], inner: 0.5, outer: 1}}\n"
                 "equations: {e: \"-laplacian(u) = 1\"}\n")
    inside = built.problem.domain.contains(np.array([[0.75, 0.0], [0.25, 0.0], [1.5, 0.0]]))
    assert np.asarray(inside).tolist() == [True, False, False]
    for cut, out in [("lower_right", [0.5, -0.5]), ("upper_left", [-0.5, 0.5])]:
        built = load("p.yaml", text=f"domain: {{l_shape: {{cut: {cut}}}}}\n"
                     "equations: {e: \"-laplacian(u) = 1\"}\n")
        assert built.problem.domain.measure == pytest.approx(3.0)
        assert not bool(np.asarray(built.problem.domain.contains(np.array([out])))[0])


@pytest.mark.parametrize("value, expected", [
    ('"1/0"', "params.a: cannot evaluate parameter a 1/0: division by zero"),
    ('"sqrt(-1)"', "params.a: parameter a sqrt(-1) is not a real number (nan)"),
    ('"exp(1000)"', "params.a: parameter a exp(1000) is infinite (inf)"),
])
def test_parameter_values_are_evaluated_by_the_dsl(value, expected):
    text = HEAT.replace("params: {alpha: 0.05}", f"params: {{a: {value}, alpha: 0.05}}")
    msg = error_of(text)
    assert msg.startswith("heat2d.yaml:4 " + expected), msg
    text = HEAT.replace("params: {alpha: 0.05}",
                        'params: {a: "max(2, 3)^2 + sign(-1) + where(1 < 2, 0.5, 0)", alpha: 0.05}')
    assert load("heat2d.yaml", text=text).params["a"].value == 8.5


# -- references: library objects, each built with what it needs ------------


def test_fem_reference_is_built_with_its_problem():
    import pickle

    from pinn.reference import FEMReference

    built = load(os.path.join(ROOT, "problems", "ns_cavity.yaml"))
    ref = built.problem.reference
    assert isinstance(ref, FEMReference) and (ref.cells, ref.element) == (48, "P2")
    assert ref.problem.reference is None  # the same problem, without a reference
    assert dict(ref.problem.equations) == dict(built.problem.equations)
    assert set(ref.problem.conditions) == set(built.problem.conditions)
    again = pickle.loads(pickle.dumps(built.problem))
    assert isinstance(again.reference, FEMReference) and again.reference._solution is None


def test_reference_options_and_kinds(tmp_path):
    from pinn.reference import Burgers, SpectralReference

    built = load(os.path.join(ROOT, "problems", "allen_cahn1d.yaml"))
    ref = built.problem.reference
    assert isinstance(ref, SpectralReference) and ref.kind == "allen_cahn"
    assert set(ref.options) == {"diffusion", "reaction"}
    path = os.path.join(ROOT, "problems", "burgers1d.yaml")
    built = load(path, ["reference.burgers.n_nodes=50"])
    assert isinstance(built.problem.reference, Burgers)
    assert built.problem.reference.n_nodes == 50 and isinstance(built.problem.reference.n_nodes,
                                                                int)
    with pytest.raises(ConfigError) as info:
        load(path, ["reference.burgers.nus=1"])
    assert "reference.burgers.nus: unknown option 'nus' (did you mean 'nu'?)" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load(path, ["reference.burgers.nu=2*x"])
    assert ("reference.burgers.nu: nu must be a number or an expression of parameters; it uses x"
            in str(info.value))
    with pytest.raises(ConfigError) as info:
        load(path, ["reference=file: nope.npz"])
    assert "no reference file 'nope.npz'" in str(info.value)


def test_file_reference_and_data_from_it(tmp_path):
    import numpy as np

    from pinn.reference import FileReference

    g = np.linspace(0.0, 1.0, 11)
    pts = np.stack([a.ravel() for a in np.meshgrid(g, g)], axis=1)  # the hull is the square
    np.savez(tmp_path / "ref.npz", points=pts, u=pts[:, 0] + 2 * pts[:, 1])
    ref = FileReference(tmp_path / "ref.npz")
    assert ref.fields == ("u",)
    assert np.allclose(ref(pts[:5])["u"], pts[:5, 0] + 2 * pts[:5, 1])  # its own points
    assert np.allclose(ref(np.array([[0.5, 0.5]]))["u"], 1.5)  # linear: exact inside
    assert np.isfinite(ref(np.array([[5.0, 5.0]]))["u"]).all()  # nearest outside the hull
    text = ("domain: {rectangle: {min: [0, 0], max: [1, 1]}}\n"
            "equations: {e: \"-laplacian(u) = 0\"}\n"
            "conditions: {obs: {data: {generate: {from: reference, n: 20}}}}\n"
            "reference: {file: ref.npz}\n")
    built = load(str(tmp_path / "p.yaml"), text=text)
    d = built.problem.conditions["obs"]
    ((_, u),) = d.values
    assert np.allclose(u, d.points[:, 0] + 2 * d.points[:, 1], atol=1e-9)
    np.savez(tmp_path / "bad.npz", u=pts[:, 0])
    msg = error_of(text.replace("ref.npz", "bad.npz"), name=str(tmp_path / "p.yaml"))
    assert "reference.file: cannot read bad.npz" in msg and "no 'points' array" in msg
    msg = error_of(text.replace("{file: ref.npz}", "{fem: {cells: 8}}"),
                   name=str(tmp_path / "p.yaml"))
    assert "conditions.obs.data.generate: data cannot be generated from a FEM reference" in msg


def test_a_file_reference_with_non_finite_entries_is_refused(tmp_path):
    import numpy as np

    from pinn.reference import FileReference

    pts = np.random.default_rng(0).uniform(size=(1200, 2))
    u = pts[:, 0] + pts[:, 1]
    u[[1, 2, 3]] = [np.nan, np.inf, -np.inf]
    np.savez(tmp_path / "ref.npz", points=pts, u=u)
    with pytest.raises(ValueError, match=r"ref\.npz: 3 of 1200 values of u are not finite "
                                         r"\(NaN or inf\); remove those rows"):
        FileReference(tmp_path / "ref.npz")
    np.savetxt(tmp_path / "ref.dat", np.column_stack([pts, u]), header="x y u", comments="")
    with pytest.raises(ValueError, match=r"ref\.dat: 3 of 1200 values of u are not finite"):
        FileReference.from_table(tmp_path / "ref.dat", ["x", "y"], ["u"])
    bad = pts.copy()
    bad[7, 0] = np.nan
    with pytest.raises(ValueError, match=r"1 of 1200 points are not finite"):
        FileReference.from_arrays(bad, {"u": pts[:, 0]})
    # a run folder's reference (saved data) still loads
    assert FileReference.from_data({"points": pts, "values": {"u": u}}).fields == ("u",)


def test_trainable_periods_and_time_windows_are_checked():
    # a learnt period needs the coordinate in model.periodic (with its starting period)
    text = HEAT.replace("activation: tanh}}",
                        "activation: tanh}, periodic: {x: null}, trainable_periods: [t]}")
    with pytest.raises(ConfigError, match=r"model.trainable_periods: 't' has no period"):
        load("heat2d.yaml", text=text).model()
    text = HEAT.replace("activation: tanh}}", "activation: tanh}, trainable_periods: [t]}")
    with pytest.raises(ConfigError, match="trainable_periods needs the coordinates"):
        load("heat2d.yaml", text=text).model()
    good = HEAT.replace("activation: tanh}}",
                        "activation: tanh}, periodic: {t: 1.0}, trainable_periods: [t]}")
    assert load("heat2d.yaml", text=good).model().periodic.trainable == (2,)
    # time windows: an evolution problem with an initial condition; not a steady one
    assert load("heat2d.yaml", ["training.windows=4"], text=HEAT).training().windows == 4
    steady = (HEAT.replace("coords: [x, y, t]", "coords: [x, y]")
              .replace(", time: [0, 1]", "").replace("u_t - ", "")
              .replace("  start: {initial: {u: \"sin(pi*x)*sin(pi*y)\"}}\n", "")
              .replace("exp(-2*pi^2*alpha*t)*", ""))
    with pytest.raises(ConfigError, match=r"training.windows: time windows need an evolution"):
        load("heat2d.yaml", ["training.windows=2"], text=steady).training()
