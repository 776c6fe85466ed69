"""Every number in the README's performance section comes from a generated table."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("RESULTS.md", "TIME_TO_ACCURACY.md", "SPEED.md", "SURROGATE.md", "PINNACLE.md",
             "DESIGN.md")
# errors (2.17e-4), times in seconds ("58 s", "111.4 s") and speed ratios ("6.28×") are
# checked; plain counts (steps, cores) and dates are not numbers measured by the benchmarks
SCI = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?e[-+]?\d+)")
SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) s\b")
RATIO = re.compile(r"(?<![\w.])(\d+\.\d+)×")
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)")


def section(text: str, title: str) -> str:
    start = text.index(title)
    nxt = text.find("\n## ", start + len(title))
    return text[start: nxt if nxt >= 0 else len(text)]


def numbers(text: str) -> list[float]:
    return [float(m) for m in SCI.findall(text)]


def test_readme_performance_numbers_are_in_the_generated_tables():
    readme = (ROOT / "README.md").read_text()
    perf = section(readme, "## Performance")
    quoted = numbers(perf)
    assert quoted, "the performance section quotes no measured error"
    tables = " ".join((ROOT / "benchmarks" / f).read_text() for f in GENERATED
                      if (ROOT / "benchmarks" / f).exists())
    available = numbers(tables)
    missing = [q for q in quoted
               if not any(abs(q - a) <= 0.006 * abs(a) + 1e-300 for a in available)]
    assert not missing, f"README numbers not found in {GENERATED}: {missing}"
    plain = [float(m) for m in NUMBER.findall(tables)]
    times = [float(m) for m in SECONDS.findall(perf)]
    assert times, "the performance section quotes no measured time"
    missing = [t for t in times if not any(abs(t - a) <= max(0.5, 0.005 * t) for a in plain)]
    assert not missing, f"README times (s) not found in {GENERATED}: {missing}"
    ratios = [float(m) for m in RATIO.findall(perf)]
    missing = [r for r in ratios if r not in plain]
    assert not missing, f"README speed ratios not found in {GENERATED}: {missing}"
