"""Test-wide settings: the suite compiles without the persistent compilation cache (each
test compiles what it runs, whatever ran before it; tests/test_compile_cache.py turns it
on in its own processes)."""

import os
import textwrap

import pytest

os.environ.setdefault("PINN_COMPILE_CACHE", "off")

#: A problem that trains in a second: -u'' = 1 on [0, 1], u = 0 at the ends, 20 Adam steps
#: (its run folders are what the reader and writer tests work on).
ROD = textwrap.dedent("""\
    name: rod
    coords: [x]
    fields: [u]
    domain: {interval: [0, 1]}
    equations: {pde: "u_xx + 1"}
    conditions: {ends: {dirichlet: {u: 0}, on: boundary}}
    exact: {u: "x*(1 - x)/2"}
    training:
      stages: [{adam: {lr: 1.0e-2}, steps: 20}]
    """)


@pytest.fixture(scope="session")
def rod_text() -> str:
    """:data:`ROD` (for fixtures of a wider scope than a test's)."""
    return ROD


@pytest.fixture
def rod(tmp_path):
    """:data:`ROD` written to ``tmp_path/rod.yaml``."""
    path = tmp_path / "rod.yaml"
    path.write_text(ROD)
    return path
