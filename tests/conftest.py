"""Test-wide settings: the suite compiles without the persistent compilation cache (each
test compiles what it runs, whatever ran before it; tests/test_compile_cache.py turns it
on in its own processes)."""

import os

os.environ.setdefault("PINN_COMPILE_CACHE", "off")
