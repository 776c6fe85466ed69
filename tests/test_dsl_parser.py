"""The string form of the PDE language: round trips, errors, safety."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pinn.dsl as d
from pinn.dsl import expr as E
from pinn.dsl.parser import MAX_DEPTH, MAX_LENGTH, Namespace, ParseError, parse

x, y, z, t = d.coords("x y z t")
u, v = d.fields("u v")
nu = d.param("nu", 0.01)
alpha = d.param("alpha", 0.05)
nu0 = d.param("nu_0", 1.0)
k = d.param("k", 2.0, learnable=True)
NS = Namespace([x, y, z, t, u, v, nu, alpha, nu0, k])


# ---------------------------------------------------------------------------
# hand-picked round trips and meanings


@pytest.mark.parametrize("text, expected", [
    ("u_t + u*u_x - nu*u_xx",
     d.D(u, t) + u * d.D(u, x) - nu * d.D(u, x, 2)),
    ("D(u, t) - alpha*laplacian(u)", d.D(u, t) - alpha * d.laplacian(u)),
    ("exp(-2*pi^2*alpha*t)*sin(pi*x)",
     d.exp(E.Neg(E.Number(2)) * d.pi ** 2 * alpha * t) * d.sin(d.pi * x)),
    ("-x^2", E.Neg(E.Pow(x, E.Number(2)))),
    ("(-x)^2", E.Pow(E.Neg(x), E.Number(2))),
    ("2^-1", E.Pow(E.Number(2), E.Neg(E.Number(1)))),
    ("x^y^z", E.Pow(x, E.Pow(y, z))),
    ("x**2", E.Pow(x, E.Number(2))),
    ("-a*b".replace("a", "x").replace("b", "y"), E.Mul(E.Neg(x), y)),
    ("x - y - z", E.Sub(E.Sub(x, y), z)),
    ("x - (y - z)", E.Sub(x, E.Sub(y, z))),
    ("x/y/z", E.Div(E.Div(x, y), z)),
    ("-2", E.Neg(E.Number(2))),
    ("--x", E.Neg(E.Neg(x))),
    ("+x", x),
    ("1e-05", E.Number(1e-05)),
    ("0.05", E.Number(0.05)),
    (".5", E.Number(0.5)),
    ("2.", E.Number(2.0)),
    ("1E+3", E.Number(1000.0)),
    ("D(u, x, 2, y)", E.Derivative(u, (x, x, y))),
    ("D(u, x, y)", E.Derivative(u, (x, y))),
    ("D(u, x, 1)", E.Derivative(u, (x,))),
    ("D(u*v, x)", E.Derivative(u * v, (x,))),
    ("laplacian(u, x, y)", E.Laplacian(u, (x, y))),
    ("grad(u)[1]", E.Component(E.Grad(u), 1)),
    ("div(vector(u, v))", E.Div_(E.Vector((u, v)))),
    ("dot(vector(u, v), grad(u))", E.Dot(E.Vector((u, v)), E.Grad(u))),
    ("div(k*grad(u))", E.Div_(E.Mul(k, E.Grad(u)))),
    ("where(x < 0.5, 1, 0)", d.where(x < 0.5, 1, 0)),
    ("not x < 1 and y >= 0 or t == 0",
     E.Or(E.And(E.Not(x < 1), y >= 0), d.eq(t, 0))),
    ("x != 1", d.ne(x, 1)),
    ("min(x, y) + max(x, 1) + abs(x)", d.minimum(x, y) + d.maximum(x, 1) + d.abs_(x)),
    ("nu_0*u", nu0 * u),
    ("k*u", k * u),
    ("  x\t+\ny ", x + y),
])
def test_meaning_and_round_trip(text, expected):
    got = parse(text, NS)
    assert got == expected
    assert parse(str(got), NS) == got


def test_integers_stay_integers():
    e = parse("2*x + 3.0", NS)
    assert isinstance(e.left.left.value, int) and e.left.left.value == 2
    assert isinstance(e.right.value, float)
    assert str(e) == "2*x + 3.0"


def test_parse_passes_expressions_and_numbers_through():
    assert parse(u, NS) is u
    assert parse(3) == E.Number(3)
    assert parse(-1.5) == E.Neg(E.Number(1.5))
    with pytest.raises(TypeError):
        parse(None)  # type: ignore[arg-type]


def test_namespace_forms():
    text = "nu*u_xx + x"
    ref = parse(text, NS)
    assert parse(text, [x, u, nu]) == ref
    assert parse(text, {"x": x, "u": u, "nu": nu}) == ref

    class ProblemLike:
        coords = (x, t)
        fields = (u,)
        params = (nu,)

    assert parse(text, ProblemLike()) == ref
    # named definitions are substituted
    r = d.sqrt(x ** 2 + y ** 2)
    assert parse("sin(r)", {"x": x, "y": y, "r": r}) == d.sin(r)
    assert parse("2*c", {"c": 0.5}) == E.Mul(E.Number(2), E.Number(0.5))


@pytest.mark.parametrize("bad", ["sin", "D", "and", "laplacian", "__x", "2x", "x y"])
def test_namespace_refuses_reserved_or_invalid_names(bad):
    with pytest.raises(ValueError, match=repr(bad)):
        Namespace({bad: x})


def test_namespace_checks_consistency():
    with pytest.raises(ValueError, match="names must agree"):
        Namespace({"a": x})
    with pytest.raises(TypeError):
        Namespace([x + 1])
    with pytest.raises(TypeError):
        Namespace.of("x t")


def test_constants_and_shadowing():
    assert parse("pi*e", NS) == E.Mul(d.pi, d.e)
    ep = d.param("e", 0.3)
    assert parse("e*x", [x, ep]) == ep * x  # a declared name shadows the constant
    assert parse("pi", [x, ep]) == d.pi


# ---------------------------------------------------------------------------
# subscript shorthand


def test_shorthand_derivatives():
    assert parse("u_t", NS) == E.Derivative(u, (t,))
    assert parse("u_xx", NS) == E.Derivative(u, (x, x))
    assert parse("u_xy", NS) == E.Derivative(u, (x, y))
    assert parse("v_xxyt", NS) == E.Derivative(v, (x, x, y, t))
    # D(u, x, y) and u_yx are different trees (the printer keeps the order)
    assert parse("u_yx", NS) == E.Derivative(u, (y, x))


def test_declared_underscore_name_wins_over_shorthand():
    u_x = d.field("u_x")  # a field literally called u_x
    ns = [x, u, u_x]
    assert parse("u_x", ns) == u_x
    assert parse("u_x_x", ns) == E.Derivative(u_x, (x,))
    assert parse("nu_0", NS) == nu0


def test_ambiguous_shorthand_is_refused():
    u_t = d.field("u_t")
    with pytest.raises(ParseError, match=r"ambiguous name 'u_tx'.*D\(u, t, x\) or D\(u_t, x\)"):
        parse("u_tx", [x, t, u, u_t])
    assert parse("u_t", [x, t, u, u_t]) == u_t


def test_parse_error_pickles():
    import pickle

    err = _err("1 + alhpa")
    back = pickle.loads(pickle.dumps(err))
    assert (back.reason, back.text, back.column, str(back)) == (err.reason, err.text,
                                                                err.column, str(err))


def test_shorthand_needs_a_field_and_one_letter_coordinates():
    with pytest.raises(ParseError, match="applies to fields only") as err:
        parse("nu_x", NS)
    assert err.value.column == 1
    with pytest.raises(ParseError, match="'q' is not a declared coordinate") as err:
        parse("1 + u_xq", NS)
    assert err.value.column == 8  # the offending letter
    x1 = d.coords("x1")
    with pytest.raises(ParseError, match="D\\(u, ...\\)"):
        parse("u_x1", [x1, u])
    with pytest.raises(ParseError, match="unknown name 'w_x'"):
        parse("w_x", NS)


# ---------------------------------------------------------------------------
# errors: column, message, suggestion


def _err(text, ns=NS) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, ns)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.text == text
    assert "^" in str(err) and f"column {err.column}" in str(err)
    return err


def test_unknown_name_suggests_close_declared_names():
    err = _err("u_t - alhpa*u_xx")
    assert err.column == 7
    assert "unknown name 'alhpa': did you mean 'alpha'?" in str(err)
    caret_line = str(err).splitlines()[-1]
    assert caret_line.index("^") - 2 == err.column - 1
    err = _err("sinn(x)")
    assert err.column == 1 and "did you mean 'sin'" in str(err)
    err = _err("lapalcian(u)")
    assert "did you mean 'laplacian'" in str(err)
    err = _err("lapalcian")
    assert "did you mean 'laplacian(...)'" in str(err)
    err = _err("foo + x")
    assert "declared names: x, y, z, t, u, v, nu, alpha, nu_0, k" in str(err)


@pytest.mark.parametrize("text, column, fragment", [
    ("", 1, "empty expression"),
    ("   ", 1, "empty expression"),
    ("(x + 1", 1, "'(' at column 1 is never closed"),
    ("sin(x + (y", 9, "'(' at column 9 is never closed"),
    ("x + 1)", 6, "unmatched ')'"),
    ("x + ", 5, "operand is missing"),
    ("x * * y", 5, "operand is missing"),
    ("x y", 3, "implicit multiplication"),
    ("2x", 1, "implicit multiplication is not supported; write 2*x"),
    ("x < y < z", 7, "chained comparisons"),
    ("x = 1", 3, "residual"),
    ("sin(x, y)", 1, "sin() takes 1 argument, got 2"),
    ("where(x, y)", 1, "where() takes 3 arguments"),
    ("dot(u)", 1, "dot() takes 2 arguments"),
    ("D(u)", 1, "at least one coordinate"),
    ("D(u, 2)", 6, "an order must follow a coordinate"),
    ("D(u, x, 2, 2)", 12, "an order must follow a coordinate"),
    ("D(u, x, 0)", 9, "order must be >= 1"),
    ("D(u, x, 1.5)", 9, "positive integer"),
    ("D(u, nu)", 6, "coordinates"),
    ("D(grad(u), x)", 1, "scalar"),
    ("laplacian(u, nu)", 14, "expected a coordinate"),
    ("u[0]", 2, "scalar and has no components"),
    ("grad(u)[x]", 9, "non-negative integer"),
    ("vector(u, v)[2]", 13, "does not exist"),
    ("u(x)", 1, "not a function"),
    ("sin + 1", 1, "call it as sin(...)"),
    ("x + not y", 5, "parentheses"),
    ("1e", 1, "malformed number"),
    ("1.2.3", 1, "malformed number"),
    ("1e999", 1, "too large"),
    ("x // y", 3, "floor division"),
    ("x % y", 3, "'%' is not supported"),
    ("x & y", 3, "write 'and'"),
    ("(x, y)", 3, "tuples are not allowed"),
    ("()", 1, "empty parentheses"),
    ("f(,)", 1, "unknown function"),
    ("sin(x,)", 7, "missing argument"),
    ("x + grad(u)", 3, "cannot add a vector and a scalar"),
    ("grad(u)*grad(v)", 8, "dot(a, b)"),
    ("αx", 1, "non-ASCII"),
    ("x\x07", 2, "control character"),
])
def test_error_columns_and_messages(text, column, fragment):
    err = _err(text)
    assert err.column == column, str(err)
    assert fragment in str(err), str(err)


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os')", "names starting with '__' are not allowed"),
    ("__import__('os').system('ls')", "names starting with '__' are not allowed"),
    ("x.__class__", "no attribute access"),
    ("x.__class__.__bases__[0].__subclasses__()", "no attribute access"),
    ("().__class__", "empty parentheses"),
    ("lambda x: x", "lambdas are not part of the PDE language"),
    ("[x for x in y]", "comprehensions are not part of the language"),
    ("(x for x in y)", "comprehensions are not part of the PDE language"),
    ("x if y else z", "conditional expressions"),
    ("'abc'", "strings are not allowed"),
    ('"abc"', "strings are not allowed"),
    ("eval('1')", "unknown function 'eval'"),
    ("exec('import os')", "unknown function 'exec'"),
    ("open('/etc/passwd')", "unknown function 'open'"),
    ("getattr(x, 'y')", "unknown function 'getattr'"),
    ("import os", "Python keyword"),
    ("x; import os", "one expression"),
    ("{x: 1}", "braces"),
    ("x @ y", "dot(a, b)"),
    ("`x`", "not allowed"),
    ("x#comment", "comments"),
])
def test_malicious_strings_are_refused_clearly(text, fragment):
    err = _err(text)
    assert fragment in str(err), str(err)


def test_declared_python_keyword_names_are_fine():
    lam = d.param("lambda", 1.0)  # the Lame parameter
    assert parse("lambda*x", [x, lam]) == lam * x


def test_limits_raise_parse_error_not_recursion_error():
    with pytest.raises(ParseError, match="too long"):
        parse("x+" * (MAX_LENGTH // 2) + "x", NS)
    with pytest.raises(ParseError, match="nested too deeply"):
        parse("(" * 300 + "x" + ")" * 300, NS)
    with pytest.raises(ParseError, match="nested too deeply"):
        parse("-" * 1000 + "x", NS)
    with pytest.raises(ParseError, match="nested too deeply"):
        parse("sin(" * 150 + "x" + ")" * 150, NS)
    with pytest.raises(ParseError, match="nested too deeply"):
        parse("x^" * 500 + "x", NS)
    with pytest.raises(ParseError, match="too deep"):
        parse("+".join(["x"] * 1000), NS)
    # just inside the limits: parses and round-trips
    e = parse("(" * 150 + "x" + ")" * 150, NS)
    assert e == x
    long_sum = parse("+".join(["x"] * (MAX_DEPTH - 5)), NS)
    assert parse(str(long_sum), NS) == long_sum


def test_error_display_is_windowed_for_long_inputs():
    text = "x + " * 200 + "oops"
    err = _err(text)
    lines = str(err).splitlines()
    assert len(lines[1]) < 90
    assert lines[1][lines[2].index("^"):].startswith("oops")


# ---------------------------------------------------------------------------
# property tests: random trees round-trip; random text only raises ParseError

COORDS = (x, y, z, t)
_coord_sets = st.one_of(st.none(), st.lists(st.sampled_from(COORDS), min_size=1, max_size=3)
                        .map(tuple))
_numbers = st.one_of(
    st.integers(0, 10 ** 30).map(E.Number),
    st.floats(0, 1e300, allow_nan=False, allow_infinity=False).map(E.Number),
    st.sampled_from([0.05, 1e-05, 2.0, 0.1, 1e16, 5e-324]).map(E.Number),
)
_leaves = st.one_of(
    _numbers,
    st.sampled_from([d.pi, d.e, x, y, z, t, u, v, nu, alpha, nu0, k]),
)


def _extend(s):
    vec = st.deferred(lambda: st.one_of(
        st.lists(s, min_size=1, max_size=3).map(lambda xs: E.Vector(tuple(xs))),
        st.builds(E.Grad, s, _coord_sets),
        st.builds(E.Mul, s, vec),
        st.builds(E.Div, vec, s),
        st.builds(E.Neg, vec),
        st.builds(E.Laplacian, vec, _coord_sets),
    ))
    return st.one_of(
        st.builds(E.Add, s, s), st.builds(E.Sub, s, s), st.builds(E.Mul, s, s),
        st.builds(E.Div, s, s), st.builds(E.Pow, s, s), st.builds(E.Neg, s),
        st.sampled_from(sorted(E.FUNCTIONS)).flatmap(
            lambda f: st.lists(s, min_size=E.FUNCTIONS[f], max_size=E.FUNCTIONS[f]).map(
                lambda a: E.Call(f, tuple(a)))),
        st.builds(E.Compare, st.sampled_from(E.COMPARISONS), s, s),
        st.builds(E.And, s, s), st.builds(E.Or, s, s), st.builds(E.Not, s),
        st.builds(E.Derivative, s,
                  st.lists(st.sampled_from(COORDS), min_size=1, max_size=4).map(tuple)),
        st.builds(E.Laplacian, s, _coord_sets),
        st.builds(lambda vv, i: E.Component(vv, i % len(vv.items) if isinstance(vv, E.Vector)
                                            else i), vec, st.integers(0, 3)),
        st.builds(E.Dot, vec, vec),
        st.builds(E.Div_, vec, _coord_sets),
    )


trees = st.recursive(_leaves, _extend, max_leaves=25)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_random_trees_round_trip(e):
    text = str(e)
    assert parse(text, NS) == e
    assert str(parse(text, NS)) == text


_TOKENS = [
    "x", "y", "t", "u", "v", "nu", "alpha", "u_x", "u_xx", "u_q", "nu_x", "pi", "e", "0", "2",
    "1.5", "1e-3", "+", "-", "*", "/", "^", "**", "(", ")", "[", "]", ",", "<", "<=", "==",
    "!=", ">", "and", "or", "not", "sin", "where", "D", "laplacian", "grad", "div", "vector",
    "dot", "min", "lambda", "for", "if", "__import__", ".", "'", "=", ":", " ",
]


def _check_only_parse_errors(text):
    try:
        e = parse(text, NS)
    except ParseError as err:
        assert 1 <= err.column <= max(len(text), 0) + 1
        assert err.text == text
        return
    assert isinstance(e, E.Expr)
    assert parse(str(e), NS) == e


@settings(max_examples=250, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_TOKENS), max_size=25).map(" ".join))
def test_fuzz_token_soup_only_raises_parse_error(text):
    _check_only_parse_errors(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=60))
def test_fuzz_arbitrary_text_only_raises_parse_error(text):
    _check_only_parse_errors(text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(alphabet="xyu_tn0123456789.eE+-*/^()[],<>=! andortsiw", max_size=40))
def test_fuzz_grammar_alphabet_only_raises_parse_error(text):
    _check_only_parse_errors(text)
