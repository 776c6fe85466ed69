"""PINNacle's main table, trained and scored here, beside PINNacle's own numbers.

``benchmarks/pinnacle/*.yaml`` and ``benchmarks/pinnacle/user/*.yaml`` ->
``benchmarks/PINNACLE.md`` (and ``benchmarks/results/pinnacle.json``).

Each of the 22 problems has two files: the expert file (``benchmarks/pinnacle/<name>.yaml``,
its own network, points and stages) and the file as a new user writes it
(``benchmarks/pinnacle/user/<name>.yaml``: no ``model:`` or ``training:`` section, so the
library's default recipe). Each is loaded with ``pinn.config.load`` and trained under a
wall-clock budget per run (``--budget-seconds``, default 600 s, compilation included). A
user file gets it as its own ``training.time_limit`` (what ``pinn solve --time-limit``
sets: each stage but the last ends at its share of the steps' time, the run at the limit,
and a last stage still improving at its planned end goes on until its plateau or the
limit; rows made before that feature say no ``time_limit`` in their overrides); the expert
files' stages end when their share of the budget is spent (split evenly between the
stages), and the run ends with the budget. The rows: the user file as it is, the expert
file with its own stages, and the expert file with ``pinn``'s default recipe in place of
its stages (``--files``, ``--recipe``). The score is PINNacle's L2RE, ``||pred - ref|| /
||ref||`` over all fields together (PINNacle scores its outputs as one array), at the
reference's own points where the reference is a file (PINNacle's, converted, or one we
generate: ``rel_l2_ref_points``), else on the evaluation grid against the closed form or
our FEM solution; per-field errors go in the JSON. Beside it: PINNacle's plain PINN and
best method from its Table 3 (``benchmarks/pinnacle/table3.json``), and the verdicts:
beats PINNacle's best (both bests where a footnote changes it), at most its plain PINN, at
most 5e-2 (Burgers 1d-C judged against the exact solution, PINNacle's reference being
1.3e-2 off it), with a summary of the counts per group of rows.

    python benchmarks/pinnacle.py --smoke                      # every problem, a few steps
    python benchmarks/pinnacle.py --files user                 # the user files, 600 s each
    python benchmarks/pinnacle.py --files expert --recipe file --problems burgers1d_c,ns2d_c
    python benchmarks/pinnacle.py --from-json benchmarks/results/pinnacle.json  # table only

Rows of problems not run keep their last result in the JSON (and say in which mode and at
which budget they were made), so a partial run regenerates the whole table. Each run is in
its own process.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common as C  # noqa: E402

from pinn.train import Observer  # noqa: E402

PROBLEM_DIR = HERE / "pinnacle"
USER_DIR = PROBLEM_DIR / "user"   # the same 22 problems as a user writes them
RESULTS = HERE / "results" / "pinnacle.json"
OUT_MD = HERE / "PINNACLE.md"
DEFAULT_BUDGET = 600.0

PINNACLE = ("Hao et al., *PINNacle: A comprehensive benchmark of physics-informed neural "
            "networks for solving PDEs*, arXiv:2306.08827 v2, Table 3 (mean L2RE over 3 "
            "runs; the NeurIPS 2024 camera-ready may differ in a few cells)")


def sci(v) -> str:
    return C.fmt(v, ".2e")


@dataclass(frozen=True)
class Entry:
    key: str            # file stem in benchmarks/pinnacle/ (and benchmarks/pinnacle/user/)
    label: str          # PINNacle's name in its Table 3 (benchmarks/pinnacle/table3.json)
    reference: str      # where the truth comes from
    note: str = ""                 # what differs from PINNacle
    exact_at_points: str | None = None   # also score against this closed form there


SUITE = (
    Entry("burgers1d_c", "Burgers 1d-C", "PINNacle's (burgers1d.dat)",
          exact_at_points="cole_hopf"),
    Entry("burgers2d_c", "Burgers 2d-C",
          "ours (finite volume, MUSCL-Rusanov 1024^2; good to ~3e-2)",
          note="stand-in initial data (make_data.py)"),
    Entry("poisson2d_c", "Poisson 2d-C", "PINNacle's (poisson1_cg_data.dat)"),
    Entry("poisson2d_cg", "Poisson 2d-CG", "PINNacle's (poisson_boltzmann2d.dat)"),
    Entry("poisson3d_cg", "Poisson 3d-CG", "ours (FEM, P2 h = 0.05; good to ~1e-2)",
          note="user file: 5.92e-2 until the plan weighted its zero-flux walls (610, 81ec4a1; "
               "the same run again 3.21e-2); with the walls unweighted, within 0.02 of them "
               "its field was off by 9 % of its size, 4.7 % further in; weighted by hand "
               "(the recipe's 5000 steps, no time limit) 10, 100, 1000, 3.3e4: 4.58e-2, "
               "4.04e-2, 3.24e-2, 6.64e-2 (both stages stalled); a 3 x 60 network unweighted "
               "4.08e-2 (0b5e50b), but width 60 lost on two 3D problems nobody tuned at the "
               "same budget (8.3e-3 against 2.5e-2, 6.4e-8 against 4.4e-6)"),
    Entry("poisson2d_ms", "Poisson 2d-MS", "ours (FEM, P2 160x160)"),
    Entry("heat2d_vc", "Heat 2d-VC", "ours (FEM, P2 96 cells)",
          note="PINNacle's coefficient (regenerated); its COMSOL reference does not solve "
          "the stated PDE with it, so ours is used; k linear, not nearest"),
    Entry("heat2d_ms", "Heat 2d-MS", "closed form"),
    Entry("heat2d_cg", "Heat 2d-CG", "ours (FEM, P2 128 cells)"),
    Entry("heat2d_lt", "Heat 2d-LT", "PINNacle's (heat_longtime.dat, every 5th time level)"),
    Entry("ns2d_c", "NS 2d-C", "PINNacle's (lid_driven_a4.dat)"),
    Entry("ns2d_cg", "NS 2d-CG", "PINNacle's (ns_0_obstacle.dat)"),
    Entry("ns2d_lt", "NS 2d-LT", "ours (FEM, P2-P1 64 x 32, CN dt 0.01; v good to ~2 %)",
          note="user file: its 5e-2 is a draw, not a margin: at 9961b16 (the plan's rates "
               "on) three runs under the same 600 s budget on an AMD EPYC ended at 4.30e-2 "
               "(this row), 5.19e-2 and 9.72e-2; without the rates 6.30e-2 (600 s) and "
               "7.33e-2 (the recipe's 20000 steps, no time limit), and 5.09e-2 at "
               "110552c (an Intel Xeon)"),
    Entry("wave1d_c", "Wave 1d-C", "closed form"),
    Entry("wave2d_cg", "Wave 2d-CG", "ours (FEM, P2 128 cells, Newmark; good to ~2e-3)",
          note="PINNacle's wave speed table (regenerated); its reference is not public"),
    Entry("wave2d_ms", "Wave 2d-MS", "ours (sine series; PINNacle's closed form misses the PDE)",
          note="scored against the PDE's solution, not PINNacle's closed form"),
    Entry("gs", "GS", "ours (ETDRK4 spectral, 512^2; v good to a few %)",
          note="periodic reference (PINNacle: no BC)"),
    Entry("ks", "KS", "ours (pinn.reference.kuramoto_sivashinsky, ETDRK4)",
          note="periodic network (PINNacle: no BC)"),
    Entry("poisson_nd", "PNd", "closed form"),
    Entry("heat_nd", "HNd", "closed form"),
    Entry("pinv", "PInv", "closed form", note="source corrected ((2x-1), (2y-1))"),
    Entry("hinv", "HInv", "closed form", note="a(x, y): its own sub-network of (x, y), as "
          "PINNacle's PFNN"),
)
BY_KEY = {e.key: e for e in SUITE}
BY_LABEL = {e.label: e for e in SUITE}

# the four problems on which every PINNacle method fails (its best L2RE >= 0.9)
HARD = ("heat2d_lt", "ns2d_lt", "wave2d_ms", "ks")
GOOD = 5e-2         # "solved": L2RE at most this (written 5e-2 in the table)
HARD_GOOD = 0.2     # on the four hard problems: L2RE at most this
#: Results known to hang on a draw: the mark, then every run of the user file measured
#: (runs under the same budget whose rounding or timing differed; WHY_MISSED and the notes
#: say which commits and machines).
DRAWS = {
    "ns2d_lt": "5e-2: 4.30e-2, 5.19e-2, 9.72e-2 at 9961b16, the budget's share of each "
               "window set by the machine's speed; 3.97e-2 at fb40a00",
    "wave2d_ms": "0.2: 0.173, 0.180, 0.258, 3.89 under SSBroyden updates that differ only "
                 "in rounding; 0.124 at fb40a00 (Adam no longer ended on a plateau)",
    "gs": "PINNacle's best, 7.99e-2: 7.46e-2 and 8.33e-2 under such updates; 7.33e-2 at "
          "fb40a00 (Adam no longer ended on a plateau)",
    "wave2d_cg": "PINNacle's best, 7.94e-1: 0.753 (the row before, 10600 steps) and 1.14 "
                 "(fb40a00, 11200 steps), the last stage's extension set by the machine's "
                 "speed; 1.61 with no time limit",
}
#: What is known of why a user file misses a mark (the report says "not analysed" where a
#: problem has no entry). Facts measured or read from the files, not guesses.
WHY_MISSED = {
    "ns2d_cg": "its loss ends at 3.2e-7 while its error is 7.42e-2 (the row before "
               "fb40a00, whose Adam ended on a plateau at step 1400; 7.58e-2 now, Adam "
               "running its 2000 steps): not a training limit. "
               "PINNacle's problem (src_pde/ns.py NS2D_BackStep, followed by the user file) "
               "gives only p = 0 at the outlet, nothing on the velocity there, so the PDE "
               "and these conditions may hold for more than one field, and the network "
               "keeps its own; the reference's (COMSOL) outlet condition is not stated. "
               "At the outlet the reference's v is within 1.5e-3 of 0 and its p up to "
               "0.024 from it (a normal-flow outlet, p weakly 0); with v = 0 added there "
               "the same file ended far worse on the grid, u 0.566, v 0.328, p 21 (8000 "
               "steps, 50b2749 plus the plan's changes of 110552c, none of which touches "
               "this file, beside another run): not the missing piece either",
    "hinv": "an inverse problem with a coefficient field, a(x, y) its own sub-network. a "
            "is fixed by its boundary values (given u, its equation is a transport along "
            "grad u): with those at weight 1 against the data's 39 it ended at 3.64 (a "
            "2.15-3.69) in earlier rows; the plan now weighs them as it weighs the data "
            "(a_walls 6.7, this row, 2.84e-2). Earlier, with the data weight alone, the "
            "result hung on rounding (1.45e-1, 5.35e-2, 3.64 at three SSBroyden updates). "
            "PINNacle's vPINN (1.19e-2) stays below",
    "pinv": "the plan's held-out observations keep the step of lowest held-out misfit "
            "(here step 2100 of 5000) and its balance weighs a's boundary values (11) as "
            "it weighs the data (8.6): 1.34e-2 (u 9.9e-3, a 1.7e-2). Before: 1.95e-2 with "
            "the holdout alone (e3ea6ab, load 5.4); 4.75e-2 without the data balance, "
            "1.22e-1 with it (3421031). The data's noise (N(0, 0.1)) is fitted the more the "
            "heavier the data weigh and the longer it trains",
    "poisson2d_ms": "a coefficient constant on each of 5 x 5 blocks (0.13 to 88), "
                    "jumping between them; the reference solves the divergence form (the "
                    "flux a du/dn continuous across the blocks' edges, so du/dn jumps). "
                    "The plan now minimises the equation's energy beside its residual, the "
                    "walls' Robin condition natural in it, with |x - edge| and |y - edge| "
                    "inputs at the 8 interior edges (9594859): 9.46e-3, against 1.22 with "
                    "the pointwise residual alone (the pointwise form's solution, 1.47 from "
                    "the divergence form's) and 0.68 for a prototype with the kinks and a "
                    "squared flux-jump term instead of the energy",
    "heat2d_lt": "every PINNacle method fails too: this row's 0.99910 and PINNacle's plain "
                 "PINN and best (0.999, six methods) are equal at the table's three "
                 "digits, and none predicts more than zero does. The plan does not march "
                 "it (its "
                 "horizon asks for 33 windows, more than 10); marched in 10 anyway "
                 "(9a3d09f, which capped the count) it ended at loss 7.5e-10 and 0.998: "
                 "the network sits on the fixed point u = sqrt(pi) of "
                 "5 sin(u^2) F(t) s(x, y), which is unstable whenever F(t) = 1 + 2 "
                 "sin(pi t/4) < 0 (t in (4.7, 7.3) + 8n, growth ~15 per time unit). The "
                 "true solution leaves it there, pushed off by the 0.001 laplacian(u) "
                 "term: a finite-difference solution (32^2, RK45, rtol 1e-6 and 1e-10) "
                 "falls from rms 1.46 to 0.13 and back every period of 8, as PINNacle's "
                 "reference does; the same ODE without the diffusion stays on the fixed "
                 "point as the PINN does. A residual of 1e-5 there grows by e^40 per "
                 "period: windows short against 1/15 time units would be needed",
    "ns2d_lt": "every PINNacle method fails too. The plan marches it in 4 windows (the "
               "inlet's rate, 10 per time unit, over 5 time units: a horizon of 50); this "
               "row (110552c) is u 0.202, v 0.821, p 0.0502 field by field: the joint "
               "L2RE is p's, whose norm (rms 14) dwarfs u's (0.48) and v's (0.08). Three "
               "plan choices took it from 0.811 (9a3d09f): p, which has only zeros for "
               "values, sized ~45 by the momentum its gradient balances (scale); "
               "continuity, whose terms are ~40 times smaller than the momentum "
               "equations', weighted 1600 (residuals: unweighted, the run met momentum to "
               "1e-3 of its terms and left continuity off by half of its own, with no "
               "pressure built); and PINNacle's start p = 0 left out (unevolved: the "
               "inflow accelerates the fluid from rest at once, the reference's p is 38 "
               "at t = 0; kept, that slice held 95 % of the squared error of a 150 s run "
               "whose joint L2RE was 0.331, idle, 2026-12-05). Steps: the scale alone "
               "0.64 for p on the grid (600 s); with the start left out as well 0.475 "
               "(600 s); continuity weighted 400 too, 0.158 (150 s). With those three, "
               "p's error sat at the window starts (t = 0, 1.25, 2.5, 3.75: 88 % of its "
               "square in a 600 s run at 4e3322e, 6.30e-2 in all), where a start built in "
               "meets continuity whatever its rate and nothing fixes p; holding that rate "
               "there (rates, 9961b16) cut those slices 2.5 to 7-fold (two runs), and "
               "the error moved to the last window's end (t = 5, where the inflow's "
               "acceleration peaks): runs of "
               "4.30e-2, 5.19e-2 and 9.72e-2 at 9961b16, the last with 89 % of its square "
               "at t = 5; the rate's term also doubles the compilation (128 s of the 600 "
               "against 55)",
    "wave2d_ms": "its result hangs on rounding: three SSBroyden updates that differ only "
                 "in rounding ended the same file at 0.258, 3.89 and 0.180, at commits "
                 "36601ce, 65143d9 and 9cd35fd (an AMD EPYC), and 2c4419b (9cd35fd's "
                 "update) at 0.173 on an Intel Xeon; with Adam no longer ended on its "
                 "plateau (at step 600 before fb40a00) 0.124 (this row, an AMD EPYC): "
                 "its 0.2 is a draw, not a margin; "
                 "with its start built in (value and rate) it ended at 1.58 (fd53d8a): over "
                 "fifty periods the plan keeps that start soft; marched in 10 windows of "
                 "five periods (9a3d09f) it ended at 68: the plan does not march a horizon "
                 "that needs more than 10 windows",
    "wave2d_cg": "every run of it fails. Scored per time slice (no time limit, 10000 "
                 "steps, 2 windows, 2026-12-06, beside the slow tests), the error is 0.43 "
                 "at t = 0.5 and above 1 from t = 1 on (3.4 at t = 5): the wave through "
                 "the speed table is lost within its first time unit, and the joint L2RE "
                 "(1.61 there) is noise. That run ended at the same 1.61 to ten digits "
                 "with the stop rule before fb40a00 (02e3327) and after it: no window's "
                 "Adam stage rested on a plateau, and the row before's 0.753 against this "
                 "row's 1.14 is how many steps the budget let the last stage add (10600 "
                 "against 11200), not the rule: its win over PINNacle's best (7.94e-1) was "
                 "a draw",
    "gs": "the same file ended at 7.46e-2 (65143d9, 5600 steps) and 8.33e-2 (3421031, 9200 "
          "steps) under SSBroyden updates that differ only in rounding, on either side of "
          "PINNacle's best (7.99e-2), and at 7.33e-2 (this row, fb40a00, 5600 steps) once "
          "its Adam stage was no longer ended on a plateau (at step 700 before). With its "
          "start built in "
          "(conditions.start.hard=true, as the expert file does) it ended far worse, u "
          "0.353 and v 2.20 (5000 steps, 62 s, 96c5aa9, idle): the plan's rule that keeps a "
          "first-order start soft holds here too",
    "ks": "chaotic (Kuramoto-Sivashinsky over its horizon); every PINNacle method fails "
          "too. Its start's modes move at 5.8 per unit time, but a small perturbation grows "
          "at up to b^2/4g = 25 (the mode cos(11 x)); read so (55e5c13, reverted), the plan "
          "marched it in 2 windows and it ended at 3.53 (10000 steps, 339 s, 2026-12-05, "
          "idle): the second window starts from the first's error, grown ~e^12, and a wrong "
          "chaotic field scores worse than none. The first 0.4 time units hold only 19 % "
          "of the reference's squared norm",
    "burgers2d_c": "scored against stand-in initial data (PINNacle's is not public). Shocks "
                   "of width ~1e-3 form by t ~ 0.3 (nu = 0.001). In one window (the plan's "
                   "horizon for it is 2.1, under 4 pi) the trained network misses its own "
                   "start, u by 0.33 of its rms, so the run is trained again in 2 windows "
                   "(pinn.plan.MISSED_START; this row, 2026-12-05, alone on the 2 cores; "
                   "the same 0.236 in 596 s beside a test run): the one window's loss "
                   "ended at 0.10, u 0.457 and v 0.359 at the reference's points (the row "
                   "before, that window alone: L2RE 0.392); the 2 windows miss u's start by "
                   "0.18. In one window none of these moved it "
                   "(each two at a time on the 2 cores, 50b2749, 2026-12-05): a 3 x 60 "
                   "network u 0.440, v 0.347 (4550 steps, the 600 s budget); 32768 interior "
                   "points u 0.440, v 0.348 (5600 steps, the budget); causal weighting u "
                   "0.418, v 0.391; the periodic pairs built in u 0.501, v 0.397; "
                   "residual-based adaptive points (training.points.rad.k=1, alone) u "
                   "0.457, v 0.336. Time windows (the plan marches only horizons over 4 pi; "
                   "this one's is 2.1), the recipe's steps in each, no time limit, two runs "
                   "at once (8e21482): 2 windows 0.265 at the reference's points (u 0.306, "
                   "v 0.257; 554 s) and, with another seed, 0.246, below PINNacle's plain "
                   "PINN; 3 windows 0.300; 4 windows 0.423 (its loss ending at 132); one "
                   "window with 8000 SSBroyden steps 0.365; the start built in (u = u0 + t "
                   "N) 0.334. Burgers 1d-C, whose shock forms as early (t ~ 0.3), is 10 "
                   "times worse in 2 windows (1.16e-2 against the exact solution at the "
                   "reference's points; one window 1.17e-3): nothing read from the problem "
                   "before training tells them apart, but the trained network does: Burgers "
                   "1d-C fits its start (loss 1e-8), KS misses its start by 0.042 (left in "
                   "one window; in 2 it did worse, 3.53 against 0.99)",
    "heat2d_vc": "the error moves with each redraw of the points, between 5.7e-2 and 7.4e-2 "
                 "over one run's last 2000 steps (0239866, evaluated every 500): this row ended at "
                 "7.19e-2 where f6f9cb9's extension (its SSBroyden stage, still in float32, "
                 "went on while it improved) took it from 5000 to 6200 steps; the previous "
                 "row (3421031) stopped at 5000 with 5.74e-2. Neither capacity nor points "
                 "alone is the limit: a 3 x 64 network (7x slower steps) ended at 5.38e-2 "
                 "(4800 steps in 600 s; loss 7-15 against 40, but a gap between the batches), "
                 "32768 interior points (4x) at 5.45e-2 (6050 steps, 564 s; loss ~40, no gap); "
                 "both at once do not fit the budget",
    "heat2d_cg": "17 holes whose Robin data start hot (u + du/dn = 5) against a cold start "
                 "(u = 0): a layer, u ~ sqrt(t) at a hole's wall. The plan now takes time by "
                 "its square root there (points uniform in tau = sqrt(t/3), the network's "
                 "time tau, the start built in as u = tau N, the equation weighted by 2s and "
                 "the Robin terms by s, s = sqrt(3) tau): 3.35e-2 (e0617e7, this row), from "
                 "5.62e-2 with plain time (a22454f, against the corrected FEM reference; "
                 "until then the reference missed two small holes and this row was 9.02e-2). "
                 "Plain time's error, scored per time slice (befd876, idle): 42 % of its "
                 "square at t = 0, where the soft start u = 0 is missed beside the hot "
                 "holes, from t = 1.5 on each slice within 3.7e-2; with the layer the t = 0 "
                 "slice is exact and the later ones within 2.5e-2 (t = 0.3: 14 %). Steps "
                 "to it (idle, per-slice scoring, 2026-12-05): time by its root with the "
                 "start soft 6.23e-2 (t = 0 worse: 310 against 177 of the square), its Robin "
                 "terms weighted by s 4.93e-2, the start built in 3.40e-2; the equation "
                 "weighted by s instead of 2s 4.04e-2. Before (e3ea6ab, plain time): 4x the "
                 "points 6.10e-2, width 60 6.25e-2, the Robin terms weighted 10 7.77e-2, "
                 "the start built in as u = t N / 3 0.151, the soft start weighted 10 0.246",
}


# ---------------------------------------------------------------------------
# PINNacle's numbers (Table 3), from benchmarks/pinnacle/table3.json

TABLE3_JSON = PROBLEM_DIR / "table3.json"
TABLE3_DIGITS = 3  # significant digits of every value in PINNacle's Table 3
TABLE3_MD = HERE.parent.parent / "shared" / "pinnacle" / "TABLE3.md"  # where the JSON is from
_NUM = r"[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?"


def _cell(text: str) -> tuple[float | None, str | None]:
    """``"1.96e-2 (b)"`` -> ``(0.0196, "b")``; ``"– (e)"`` -> ``(None, "e")``."""
    m = re.fullmatch(rf"\s*({_NUM}|–|-)?\s*(?:\((\w)\))?\s*", text)
    if m is None:
        raise ValueError(f"TABLE3: cannot read the cell {text!r}")
    v = m.group(1)
    return (None if v in (None, "–", "-") else float(v)), m.group(2)


def table3_from_markdown(text: str) -> dict:
    """PINNacle's Table 3 as ``/work/shared/pinnacle/TABLE3.md`` (``../shared/pinnacle/``
    from the repository root) writes it: the methods, one entry per problem (every
    method's cell, ``None`` for "–", the footnote marks, the ``best`` column) and the
    footnotes' alternative values. ``benchmarks/pinnacle/table3.json`` is this plus its
    ``_source`` line (tests/test_pinnacle_files.py checks that they agree)::

        C.write_text(TABLE3_JSON, table3_json(table3_from_markdown(TABLE3_MD.read_text())))
    """
    lines = [ln.strip() for ln in text.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| problem |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    methods = header[1:-1]
    assert header[0] == "problem" and header[-1] == "best", header
    problems = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip("|").split("|")]
        values, marks = {}, {}
        for m, c in zip(methods, cells[1:-1], strict=True):
            values[m], mark = _cell(c)
            if mark:
                marks[m] = mark
        problems.append({"problem": cells[0], "key": BY_LABEL[cells[0]].key,
                         "values": values, "marks": marks, "best": _cell(cells[-1])[0]})
    notes_text = " ".join(lines[lines.index(next(ln for ln in lines
                                                   if ln.startswith("Notes:"))):])
    notes_text = notes_text.split("Where a note")[0]
    meth = "|".join(re.escape(m) for m in sorted(methods, key=len, reverse=True))
    footnotes = {}
    for m in re.finditer(rf"\((\w)\) (the appendix|another survey) gives ({_NUM}) for "
                         rf"(.+?) ({meth})\b", notes_text):
        footnotes[m.group(1)] = {"problem": m.group(4), "method": m.group(5),
                                 "value": float(m.group(3)), "source": m.group(2)}
    return {"methods": methods, "problems": problems, "footnotes": footnotes}


TABLE3_SOURCE = (
    "PINNacle (Hao et al., arXiv:2306.08827 v2, the ICLR 2024 submission) Table 3, mean L2RE "
    "over 3 runs, copied from the project's shared/pinnacle/TABLE3.md (machine-extracted from "
    "the paper's LaTeX source by sinemsalvaersoy/when-the-winner-changes, "
    "data/pinnacle_published_metrics.csv; see TABLE3.md for the checks and the footnotes); "
    "regenerate with benchmarks/pinnacle.py's table3_from_markdown")


def table3_json(d: dict) -> str:
    """``table3_from_markdown``'s dict as ``table3.json``'s text: the ``_source`` line
    first, one line per problem and per footnote."""
    def one(x) -> str:
        return json.dumps(x, ensure_ascii=False)

    rows = ",\n  ".join(one(r) for r in d["problems"])
    notes = ",\n  ".join(f"{one(k)}: {one(v)}" for k, v in d["footnotes"].items())
    return (f'{{"_source": {one(TABLE3_SOURCE)},\n "methods": {one(d["methods"])},\n'
            f' "problems": [\n  {rows}\n ],\n "footnotes": {{\n  {notes}\n }}\n}}\n')


@dataclass(frozen=True)
class Pinnacle:
    """One problem's row of PINNacle's Table 3: its plain PINN, its best method(s) and,
    where a footnote's value (the appendix's) changes the best, the other best."""

    problem: str
    pinn: float | None
    best: float | None
    best_methods: tuple[str, ...]
    alt_best: float | None = None           # the best with the footnote's value
    alt_methods: tuple[str, ...] = ()
    alt_notes: tuple[tuple[str, str, float, str], ...] = ()  # (method, source, value, mark)

    def best_cell(self) -> str:
        if self.best is None:
            return "–"
        out = f"{sci(self.best)} ({_methods(self.best_methods)})"
        if self.alt_best is None:
            return out
        if self.alt_methods == self.best_methods:  # the same method, another value
            why = ", ".join(f"{s}'s value, note {k}" for _, s, _, k in self.alt_notes)
            return out + f"; {sci(self.alt_best)} ({_methods(self.alt_methods)}: {why})"
        why = ", ".join(f"{m} is {s}'s {sci(v)} (note {k})" for m, s, v, k in self.alt_notes)
        return out + f"; {sci(self.alt_best)} ({_methods(self.alt_methods)}) if {why}"


def _methods(ms: tuple[str, ...]) -> str:
    return ms[0] if len(ms) == 1 else f"{len(ms)} tie: " + ", ".join(ms)


def _best(values: dict) -> tuple[float | None, tuple[str, ...]]:
    have = {m: v for m, v in values.items() if v is not None}
    if not have:
        return None, ()
    b = min(have.values())
    return b, tuple(m for m, v in have.items() if v == b)


def load_table3(path: Path = TABLE3_JSON) -> dict[str, Pinnacle]:
    """``{file stem: Pinnacle}`` from ``benchmarks/pinnacle/table3.json``."""
    d = C.read_json(path)
    out = {}
    for row in d["problems"]:
        best, methods = _best(row["values"])
        if best != row["best"]:
            raise ValueError(f"table3.json: {row['problem']}'s best column {row['best']} is "
                             f"not its lowest cell {best}")
        alt = dict(row["values"])
        why = []
        for mark, fn in sorted(d["footnotes"].items()):
            if fn["problem"] == row["problem"]:
                alt[fn["method"]] = fn["value"]
                why.append((fn["method"], fn["source"], fn["value"], mark))
        alt_best, alt_methods = _best(alt)
        if (alt_best, alt_methods) == (best, methods):  # the footnote changes no best
            alt_best, alt_methods, why = None, (), []
        out[row["key"]] = Pinnacle(row["problem"], row["values"].get("PINN"), best, methods,
                                   alt_best, alt_methods, tuple(why))
    return out


TABLE3 = load_table3()


# ---------------------------------------------------------------------------
# one problem


def smoke_overrides(spec) -> list[str]:
    """One Adam stage of 10 steps, a tiny network and few points: checks that the problem
    trains and is scored, in seconds."""
    out = ["training.stages=[{adam: {lr: 0.001}, steps: 10}]", "training.chunk=5",
           "training.eval_every=0", "training.points.interior=128",
           "training.points.boundary=64", "training.points.initial=64",
           "training.points.resample_every=0"]
    if spec.training.points.rad is not None:
        out += ["training.points.rad.pool=1024"]
    if spec.training.windows > 1:  # time marching: two windows show it
        out += ["training.windows=2"]
    kind = spec.model.kind
    out += [f"model.{kind}.width=8",
            f"model.{kind}.blocks=1" if kind == "pirate" else f"model.{kind}.depth=1"]
    if spec.evaluation.resolution is not None:
        res = spec.evaluation.resolution
        cap = 13 if len(spec.coords or ()) <= 3 else 5  # 13: not a divisor grid of sin(20 pi x)
        res = [min(r, cap) for r in res] if isinstance(res, list) else min(res, cap)
        out += [f"evaluation.resolution={json.dumps(res)}"]
    return out


def _size(model) -> str:
    a = model.args
    return f"{a.width}x{getattr(a, 'depth', getattr(a, 'blocks', '?'))}"


def budget_overrides(spec) -> list[str]:
    return ["training.chunk=100", "training.eval_every=0"]


def default_recipe_overrides(spec) -> list[str]:
    """The file with ``pinn``'s default recipe in place of its own training stages: what a
    problem file with no ``training.stages`` (and no network size) gets, the recipe of the
    accuracy issue (Adam, then self-scaled Broyden in float64) on a 3 x 30 MLP. The file's
    points, conditions, weighting and network structure (periodic, per-field) stay."""
    from pinn.config.schema import _default_stages

    stages = json.dumps([st.model_dump(exclude_defaults=True) for st in _default_stages()])
    out = [f"training.stages={stages}", "training.precision=auto"]
    if spec.model.kind == "mlp":
        out += ["model.mlp.width=30", "model.mlp.depth=3"]
    return out


def uses_default_recipe(spec) -> bool:
    """Whether the file's own stages are already a second-order recipe (then its own row is
    the default recipe's row too, and it is not run twice)."""
    return any(st.kind in ("ssbroyden", "ssbfgs", "lm") for st in spec.training.stages)


class Budget(Observer):
    """End each stage when its share of ``seconds`` is spent, and the run at ``seconds``
    (wall time since training started, compilation included). A run in ``windows`` time
    windows (``training.windows``) gives each window an equal share, ``seconds /
    windows``, on one clock: window ``k`` ends at ``(k + 1) seconds / windows`` from the
    start, its stages at even shares of that."""

    every = None

    def __init__(self, seconds: float, n_stages: int, windows: int = 1) -> None:
        self.seconds, self.n = float(seconds), max(1, n_stages)
        self.windows = max(1, int(windows))
        self.stopped_by: str | None = None
        self._start: float | None = None
        self._window = -1

    def init(self, info) -> None:
        self.info = info
        self._window += 1
        if self._start is None:
            self._start = time.perf_counter()

    def on_chunk(self, event) -> None:
        if event.kind != "chunk":
            return
        share = self.seconds / self.windows
        w = min(self._window, self.windows - 1)
        t = time.perf_counter() - self._start - w * share  # into this window's share
        if t >= share:
            self.stopped_by = (f"budget of {self.seconds:.0f} s spent at step {event.step}"
                               + (f" of window {w + 1}/{self.windows}"
                                  if self.windows > 1 else ""))
            event.stop()
        elif t >= share * (event.stage + 1) / self.n and event.stage < self.n - 1:
            event.end_stage("budget", f"stage {event.stage + 1}'s share of the budget spent "
                            f"at step {event.step}")

    def close(self, result) -> None:
        pass


def joint_l2re(pred: dict, truth: dict, shift=(), times=None) -> float | None:
    """PINNacle's L2RE: all fields as one array, ``||pred - truth|| / ||truth||`` (a field
    defined up to a constant compared after removing the mean of the difference, at each
    time with ``times``: pinn.evaluate.free_part)."""
    import numpy as np

    from pinn import evaluate as ev

    num = den = 0.0
    used = False
    for name, t in (truth or {}).items():
        if name not in pred:
            continue
        p = np.asarray(pred[name], dtype=np.float64).reshape(-1)
        t = np.asarray(t, dtype=np.float64).reshape(-1)
        ok = np.isfinite(t) & np.isfinite(p)
        d, t = p[ok] - t[ok], t[ok]
        if name in shift and d.size:
            at = None if times is None else np.asarray(times, dtype=np.float64)[ok]
            d, t = d - ev.free_part(d, at), t - ev.free_part(t, at)
        num, den, used = num + float(d @ d), den + float(t @ t), True
    if not used or den == 0:
        return None
    return math.sqrt(num / den)


def problem_path(key: str, recipe: str = "file") -> Path:
    """The expert file ``benchmarks/pinnacle/<key>.yaml``, or for ``recipe="user"`` the
    file as a user writes it, ``benchmarks/pinnacle/user/<key>.yaml``."""
    return (USER_DIR if recipe == "user" else PROBLEM_DIR) / f"{key}.yaml"


def run_entry(key: str, mode: str, budget: float, recipe: str = "file") -> dict:
    """Train and score one problem; never raises (a failure is a result).

    ``recipe``: ``"file"`` (the expert file with its own stages), ``"default"`` (the
    expert file with pinn's default recipe, :func:`default_recipe_overrides`) or
    ``"user"`` (the user's file, ``benchmarks/pinnacle/user/<key>.yaml``, as it is: no
    ``training:`` or ``model:`` section, so the library's defaults)."""
    import numpy as np

    import pinn
    import pinn.config
    import pinn.evaluate as ev

    entry = BY_KEY[key]
    path = problem_path(key, recipe)
    out: dict = {"key": key, "label": entry.label,
                 "file": str(path.relative_to(HERE.parent)),
                 "mode": mode, "budget_seconds": None if mode == "smoke" else budget,
                 "date": C.machine()["date"], "load_start": C.load_average(),
                 "recipe_kind": recipe}
    try:
        spec, _ = pinn.config.load_spec(str(path))
        sets = smoke_overrides(spec) if mode == "smoke" else budget_overrides(spec)
        if recipe == "default":
            sets = default_recipe_overrides(spec) + sets
        limited = recipe == "user" and mode != "smoke"
        if limited:  # the library's own time limit: the stages share it, the last goes on
            sets = sets + [f"training.time_limit={budget:g}"]  # while its loss falls
        out["overrides"] = sets
        built = pinn.config.load(str(path), sets)
        problem = built.problem
        ref = problem.reference
        kind = type(ref).__name__ if ref is not None else ("exact" if problem.exact else None)
        if mode == "smoke" and kind == "FEMReference":
            problem = dataclasses.replace(problem, reference=None)  # minutes: not in a smoke
            out["note"] = "smoke: the FEM reference is not computed"
            kind = None
        out["truth"] = kind
        model, training = built.model(), built.training()
        out["model"] = repr(model)
        out["stages"] = [f"{type(s.optimizer).__name__} x {s.steps}" for s in training.stages]
        # the file's own stages (or the default recipe's), not the smoke's
        full, _ = pinn.config.load_spec(str(path), default_recipe_overrides(spec)
                                        if recipe == "default" else [])
        out["recipe"] = " + ".join(f"{st.kind} {st.steps}" for st in full.training.stages) + (
            f", {full.model.kind} {_size(full.model)}")
        budget_obs = Budget(budget if mode != "smoke" and not limited else math.inf,
                            len(training.stages), training.windows)
        if training.windows > 1:
            out["windows"] = training.windows
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            # set up as `pinn solve` sets it up: the file's precision and plan (the points
            # by dimension where the file gives none)
            sol = built.setup(problem=problem, model=model, training=training,
                              progress=False, observers=[budget_obs],
                              resolution=built.spec.evaluation.resolution).train()
        out["wall_seconds"] = time.perf_counter() - t0
        m = sol.metrics
        out["steps"] = m.get("steps_done", m.get("steps"))  # the steps run, not planned
        out["steps_planned"] = m.get("steps")
        out["train_seconds"] = m.get("train_seconds")
        out["compile_seconds"] = m.get("compile_seconds")
        out["stopped_by"] = budget_obs.stopped_by
        ends = [st for st in m.get("stages", []) if str(st.get("status", "")).startswith(
            ("time_limit", "not run"))]
        if limited and ends:
            out["stopped_by"] = (f"time limit of {budget:.0f} s reached at step "
                                 f"{ends[0]['stopped_at']} (stage {ends[0]['stage'] + 1})")
        extended = sum(int(st.get("extended_by", 0)) for st in m.get("stages", []))
        if extended:
            out["extended_by"] = extended
        if m.get("kept"):  # the plan's held-out observations chose an earlier step
            out["kept"] = m["kept"]
        if m.get("remarched"):  # one window missed its start: trained again, marched
            out["remarched"] = m["remarched"]
        out["precision"] = built.precision
        out["loss"] = (sol.history[-1].get("loss") if sol.history else None)
        out["rel_l2_grid"] = m.get("rel_l2") or {}
        shift = ev.up_to_constant(problem)
        if m.get("rel_l2_ref_points"):
            pts = np.asarray(problem.reference.points, dtype=np.float64)
            pred = ev.predict_in_chunks(sol.evaluate, pts)
            out["l2re"] = joint_l2re(pred, problem.reference.values, shift,
                                     ev.point_times(problem, pts))
            out["where"] = f"the reference's {len(pts)} points"
            out["rel_l2_ref_points"] = m["rel_l2_ref_points"]
            if entry.exact_at_points == "cole_hopf":  # Burgers: the exact solution there
                import pinn.reference as R

                # nu = 0.01/pi, burgers1d_c.yaml's and R.burgers' default
                exact = {"u": np.asarray(R.burgers(pts[:, 0], pts[:, 1])).reshape(-1)}
                out["l2re_exact"] = joint_l2re(pred, exact)
                out["ref_vs_exact"] = joint_l2re(problem.reference.values, exact)
        elif problem.reference is not None or problem.exact:
            s = sol.score()
            out["l2re"] = joint_l2re(s.pred, None if s.truth is None else s.truth.values,
                                     s.shift, s.times)
            out["where"] = f"the evaluation grid ({int(s.grid.mask.sum())} points)"
        else:
            out["l2re"] = None
            out["where"] = None
    except Exception as exc:  # noqa: BLE001 - one problem's failure is a result
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc(limit=8)
    return out


def run_in_subprocess(key: str, mode: str, budget: float, timeout: float,
                      recipe: str = "file") -> dict:
    args = ["--worker", key, "--budget-seconds", str(budget), "--worker-recipe", recipe] + (
        ["--smoke"] if mode == "smoke" else [])
    res, why = C.run_worker(Path(__file__), args, timeout)
    return res if res is not None else {"key": key, "label": BY_KEY[key].label, "mode": mode,
                                        "recipe_kind": recipe, "error": why,
                                        "budget_seconds": None if mode == "smoke" else budget}


# ---------------------------------------------------------------------------
# the table


ROWS = {"user": "user file", "file": "expert file", "default": "expert file, default recipe"}
GROUPS = {"user files": ("user",), "expert files (own or default recipe)": ("file", "default"),
          "either (the best of all rows)": ("user", "file", "default")}


def verdict_value(r: dict | None) -> float | None:
    """The L2RE a row is judged by: a real (budget) run's, against the exact solution where
    the row has it (Burgers 1d-C: PINNacle's reference is itself 1.3e-2 off), else
    PINNacle's metric against the reference. Smoke rows and failures: ``None``."""
    if not r or r.get("mode") != "budget" or r.get("error") or r.get("same_as_file"):
        return None
    return r["l2re_exact"] if r.get("l2re_exact") is not None else r.get("l2re")


def ours(rows: dict, which=("user", "file", "default")) -> tuple[float | None, str | None]:
    """The lowest verdict value of the rows ``which`` (keys of :data:`ROWS`) and its key."""
    vals = [(v, k) for k in which if (v := verdict_value(rows.get(k))) is not None]
    return min(vals) if vals else (None, None)


def best_of(*rows) -> float | None:
    """The lowest verdict value of the given rows."""
    return ours(dict(enumerate(rows)), range(len(rows)))[0]


def at_table_precision(v: float) -> float:
    """``v`` to the three significant digits of PINNacle's cells (their means are known to
    no more): the verdicts compare at that precision, so a difference in a fourth digit
    is neither a win nor a loss."""
    return float(f"{v:.{TABLE3_DIGITS}g}")


def beats(v: float | None, p: Pinnacle | None) -> str:
    """``v`` against PINNacle's best (at :func:`at_table_precision`): "yes"/"no", and where
    a footnote changes the best, "yes (both)", "yes vs <method> <value> only" (the other
    best) or "no"."""
    if v is None or p is None or p.best is None:
        return "–"
    v = at_table_precision(v)
    if p.alt_best is None:
        return "yes" if v < p.best else "no"
    a, b = v < p.best, v < p.alt_best
    if a and b:
        return "yes (both)"
    if a or b:
        m, x = (p.best_methods, p.best) if a else (p.alt_methods, p.alt_best)
        return f"yes vs {_methods(m)} {sci(x)} only"
    return "no"


def verdict(e: Entry, *rows) -> str:
    return beats(best_of(*rows), TABLE3.get(e.key))


def _yes(cond: bool | None) -> str:
    return "–" if cond is None else ("yes" if cond else "no")


def _score_cell(r: dict | None) -> str:
    if not r or r.get("l2re") is None:
        return "–"
    cell = sci(r["l2re"]) if r.get("mode") == "budget" else f"({sci(r['l2re'])})"
    if r.get("l2re_exact") is not None:
        ex = sci(r["l2re_exact"])
        cell += f"; exact: {ex if r.get('mode') == 'budget' else f'({ex})'}"
    return cell


def _run_cells(r: dict | None) -> list[str]:
    """Mode, budget, steps, time and L2RE of one run."""
    if r is None:
        return ["not run", "–", "–", "–", "–"]
    budget = C.fmt(r.get("budget_seconds"), ".0f")
    if r.get("error"):
        return [r.get("mode", "?"), budget, "failed", "–", "–"]
    return [r.get("mode", "?"), budget, C.fmt(r.get("steps"), "d"),
            C.fmt(r.get("wall_seconds"), ".0f"), _score_cell(r)]


def _default_cells(r: dict | None) -> list[str]:
    """Steps, time and L2RE of the default-recipe row (or of the file's, when the same)."""
    if r is not None and r.get("same_as_file"):
        return ["(the file's)", "", ""]
    if r is None:
        return ["not run", "–", "–"]
    if r.get("error"):
        return ["failed", "–", "–"]
    return [C.fmt(r.get("steps"), "d"), C.fmt(r.get("wall_seconds"), ".0f"), _score_cell(r)]


def _l2re_cell(r: dict | None) -> str:
    if r is not None and r.get("same_as_file"):
        return "(the file's)"
    if r is None:
        return "not run"
    return "failed" if r.get("error") else _score_cell(r)


def _notes(e: Entry, rows: dict) -> str:
    r, d, u = rows.get("file"), rows.get("default"), rows.get("user")
    scored = next((x for x in (r, u, d) if x and x.get("mode") == "budget" and x.get("where")),
                  next((x for x in (r, u, d) if x and x.get("where")), None))
    exact = next((x for x in (r, u, d) if x and x.get("ref_vs_exact") is not None), None)
    parts = [e.note,
             r.get("note") if r and r.get("mode") == "budget" else None,
             (f"\"exact\": the L2RE against the Cole-Hopf solution at the same points, the "
              f"one the verdicts use (PINNacle's reference is itself "
              f"{sci(exact['ref_vs_exact'])} from it, the floor of the L2RE against it)")
             if exact else None,
             f"scored on {scored['where']}" if scored else None,
             *(f"{ROWS[k]}: kept step {x['kept']['step']} of {x['kept']['last_step']} (the "
               f"held-out observations' misfit lowest there)"
               for k, x in (("user", u), ("file", r), ("default", d))
               if x and isinstance(x.get("kept"), dict)),
             *(f"{ROWS[k]}: {x['remarched']['why']} (steps and time count both runs)"
               for k, x in (("user", u), ("file", r), ("default", d))
               if x and isinstance(x.get("remarched"), dict))]
    for key, x in (("file", r), ("default", d), ("user", u)):
        if x and x.get("error"):
            parts.append(f"{ROWS[key]} FAILED: {x['error'][:160]}")
    if not any(x and x.get("error") is None and x.get("l2re") is not None for x in (r, d, u)):
        parts.append("not scored: no reference")
    return "; ".join(p for p in parts if p)


def _rows_of(key: str, results: dict, defaults: dict, user: dict) -> dict:
    return {"user": user.get(key), "file": results.get(key), "default": defaults.get(key)}


def _verdict_row(e: Entry, rows: dict) -> list[str]:
    p = TABLE3.get(e.key)
    v, which = ours(rows)
    r = rows.get(which) if which else None
    best = ("–" if v is None else
            f"{sci(v)} ({ROWS[which]}, {C.fmt(r.get('budget_seconds'), '.0f')} s"
            + ("; vs exact" if r.get("l2re_exact") is not None else "") + ")")
    pinn_ = p.pinn if p else None
    return [f"`{e.key}`", e.label, _l2re_cell(rows["user"]), _l2re_cell(rows["file"]),
            _l2re_cell(rows["default"]), best, sci(pinn_), p.best_cell() if p else "–",
            beats(v, p), _yes(None if v is None or pinn_ is None
                 else at_table_precision(v) <= pinn_),
            _yes(None if v is None else v <= GOOD)]


def _labels(items) -> str:
    return f" ({', '.join(items)})" if items else ""


def _beats_best(e: Entry, v: float) -> bool:
    return beats(v, TABLE3.get(e.key)).startswith("yes")


def _above_pinn(e: Entry, v: float) -> bool:
    """Worse than PINNacle's plain PINN (at :func:`at_table_precision`)."""
    p = TABLE3.get(e.key)
    return p is not None and p.pinn is not None and at_table_precision(v) > p.pinn


def missed(user: dict) -> list[str]:
    """One line per user file that misses a mark (PINNacle's best, its plain PINN, 5e-2,
    and 0.2 on the four hard problems): which, how its run ended, and why where known
    (:data:`WHY_MISSED`)."""
    out = []
    for e in SUITE:
        r, p = user.get(e.key), TABLE3.get(e.key)
        v = verdict_value(r)
        if v is None:
            if r and r.get("error"):
                error = " ".join(r["error"].split())[:120]
                out.append(f"- {e.label}: the run failed ({error}).")
            continue
        marks = []
        if p is not None and not _beats_best(e, v):
            marks.append(f"PINNacle's best {sci(p.best)}")
        if _above_pinn(e, v):
            marks.append(f"**its plain PINN {sci(p.pinn)}**")
        if v > GOOD:
            marks.append("5e-2")
        if e.key in HARD and v > HARD_GOOD:
            marks.append(f"{HARD_GOOD:g} (one of the four hard problems)")
        if not marks:
            continue
        budget, wall = r.get("budget_seconds"), r.get("wall_seconds")
        grown = r.get("extended_by")
        short = r.get("steps_planned") and r.get("steps", 0) < r["steps_planned"]
        why_ended = (f"its last stage extended by {grown} steps while its loss fell, then done"
                     if grown else "the budget ended it before the recipe's steps" if short
                     else "the recipe, not the budget, was the limit")
        ended = (f"the budget ended it at step {r.get('steps')}" if r.get("stopped_by") else
                 f"it ended at step {r.get('steps')}"
                 + (f" of {r['steps_planned']} planned" if r.get("steps_planned") else "")
                 + f" after {C.fmt(wall, '.0f')} s of the {C.fmt(budget, '.0f')} s budget "
                 f"({why_ended})")
        out.append(f"- {e.label}: {sci(v)} misses " + ", ".join(marks) + f"; {ended}; "
                   + WHY_MISSED.get(e.key, "not analysed yet") + ".")
    if not out:
        return []
    return ["## Where the user files miss, and why", "",
            "A user file's row against each mark it misses, how its run ended, and what is "
            "known of the cause.", "", *out, ""]


def summary(results: dict, defaults: dict, user: dict) -> list[str]:
    """The counts of the questions the table answers, per group of rows (user files, expert
    files, either)."""
    all_rows = {e.key: _rows_of(e.key, results, defaults, user) for e in SUITE}
    hard = [BY_KEY[k] for k in HARD]

    def line(title: str, test, entries=SUITE, detail=None) -> str:
        parts = []
        for group, which in GROUPS.items():
            got = [(e, ours(all_rows[e.key], which)) for e in entries]
            run = [(e, v, k) for e, (v, k) in got if v is not None]
            hits = [(e, v, k) for e, v, k in run if test(e, v)]
            names = [e.label + (f" [{detail(e, v)}]" if detail and detail(e, v) else "")
                     for e, v, k in hits]
            if not run:
                parts.append(f"{group}: no budget run yet")
                continue
            parts.append(f"{group}: **{len(hits)}** of {len(entries)}"
                         + (f" ({len(run)} with a budget run)" if len(run) < len(entries)
                            else "") + _labels(names))
        return f"- {title}: " + "; ".join(parts) + "."

    def beat_detail(e, v):
        b = beats(v, TABLE3.get(e.key))
        return {"yes": "", "yes (both)": "both bests"}.get(b, b[4:])

    return [
        "## Summary", "",
        "Each count is of the problems whose rows of that group have a real (budget) run, "
        "judged by the lowest L2RE among those rows (Burgers 1d-C: against the exact "
        "solution); \"user files\" are the rows of `benchmarks/pinnacle/user/`, \"expert "
        "files\" those of `benchmarks/pinnacle/` with their own or the default recipe. The "
        "rows of one group may come from runs at different budgets (the tables give each "
        "row's).", "",
        line("Beat PINNacle's best method", _beats_best, detail=beat_detail),
        line("Above PINNacle's plain PINN (worse than it; should be none)", _above_pinn,
             detail=lambda e, v: f"{sci(v)} vs {sci(TABLE3[e.key].pinn)}"),
        line("L2RE ≤ 5e-2", lambda e, v: v <= GOOD),
        line(f"Of the four problems on which every PINNacle method fails (its best ≥ 0.95: "
             f"{', '.join(e.label for e in hard)}), L2RE ≤ {HARD_GOOD:g}",
             lambda e, v: v <= HARD_GOOD, entries=hard, detail=lambda e, v: sci(v)),
        "- Failed (the best of all our rows no better than predicting zero, L2RE ≥ 1): "
        + (", ".join(e.label for e in SUITE
                     if (ours(all_rows[e.key])[0] or 0.0) >= 1.0) or "none") + ".",
        "- Draws (the same user file, run again, landed on the other side of a mark; "
        "the counts above take the row as run): " + "; ".join(
            f"{BY_KEY[k].label} ({what})" for k, what in DRAWS.items()) + ".",
        "- Not scored (no reference in the public snapshot and none generated yet): "
        + (", ".join(e.label for e in SUITE if e.reference == "missing") or "none") + ".",
        "- Stand-in data (PINNacle's table is not public), so the score is not "
        "comparable with PINNacle's: Burgers 2d-C (initial values). The coefficient "
        "tables of Heat 2d-VC and Wave 2d-CG are PINNacle's own, regenerated from its "
        "seeded generator (make_data.py; they match the images PINNacle published of "
        "them pixel for pixel), but Heat 2d-VC is scored against our FEM solution: "
        "PINNacle's COMSOL table is 4.7 (relative L2) from the solution of the stated "
        "PDE with that coefficient (heat2d_vc.yaml says how this was measured).",
        "- PINNacle's Burgers 1d-C reference (burgers1d.dat) is itself 1.33e-2 from the "
        "exact (Cole-Hopf) solution at its own points, so an L2RE against it below "
        "about 1e-2 measures the reference, not the PINN (every PINNacle method's number "
        "there is about this floor); its rows give both, and the verdicts use the error "
        "against the exact solution.",
        "- Corrections of PINNacle: Wave 2d-MS is scored against the solution of its "
        "PDE (its closed form misses the PDE by -2 pi^2 U); PInv's source uses "
        "(2x - 1), (2y - 1).", ""]


def report(results: dict, command: str, machine: dict,
           defaults: dict | None = None, user: dict | None = None) -> str:
    defaults, user = defaults or {}, user or {}
    lines = ["# PINNacle's main table on this machine", "",
             C.generated_note("pinnacle.py", command), "",
             f"Machine: {C.machine_line(machine)}.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()) + ".",
             "",
             "Every problem of PINNacle's main table is a file in `benchmarks/pinnacle/` "
             "(the expert file: see each file's header for what differs from PINNacle and "
             "where its data come from) and a file in `benchmarks/pinnacle/user/` (the same "
             "problem as a new user writes it: no `model:` or `training:` section, "
             "conditions soft, no lifts, Fourier features or time windows). Each row is a "
             "training run under a wall-clock budget (default "
             f"{DEFAULT_BUDGET:.0f} s; compilation included; a stage ends when its even "
             "share of the budget is spent): the user file as it is (the library's default "
             "recipe: Adam 2000, then self-scaled Broyden 3000 in float64 on a 3 x 30 MLP), "
             "the expert file with its own settings, and the expert file with `pinn`'s "
             "default recipe in place of its stages (its points, conditions and network "
             "structure kept; `(the file's)` where the file's own stages are already that "
             "recipe). **mode** says how the row was made: `budget` (a real run at the "
             "budget in the column), `smoke` (a tiny network and 10 steps: only checks that "
             "the problem trains and is scored; its error, in parentheses, means nothing, "
             "and it gets no verdict) or `not run`. The machine line is the last run's; "
             "each row's date and load average at its start are in `results/pinnacle.json` "
             "(the rows of one table may come from different runs and budgets).", "",
             "**L2RE** is PINNacle's metric, `||pred - ref|| / ||ref||` over all fields "
             "together, at the reference's own points where the reference is a file, else on "
             "the evaluation grid. PINNacle's columns: " + PINNACLE + ", from "
             "`benchmarks/pinnacle/table3.json` (PINNacle arXiv v2's Table 3, see its "
             "`_source`): its plain PINN and its best method (ties listed); where a "
             "footnote's value (the appendix's) changes the best (HInv, PInv), both bests, "
             "and **beats best** says against which: `yes (both)` or `yes vs <method> "
             "<value> only`. The verdicts take the lowest L2RE of our budget rows "
             "(**ours**, which row and budget), for Burgers 1d-C the error against the "
             "exact solution, and compare it with PINNacle's at the three significant "
             "digits of PINNacle's cells (their means are known to no more): equal there is "
             "neither a win nor a loss.", "",
             "## Runs", ""]
    header = ["problem", "PINNacle", "reference", "user file: mode", "budget (s)", "steps",
              "time (s)", "L2RE", "expert file: recipe", "mode", "budget (s)", "steps",
              "time (s)", "L2RE", "expert file, default recipe: steps", "time (s)", "L2RE",
              "notes"]
    rows, verdicts = [], []
    for e in SUITE:
        rs = _rows_of(e.key, results, defaults, user)
        r = rs["file"]
        rows.append([f"`{e.key}`", e.label, e.reference, *_run_cells(rs["user"]),
                     r.get("recipe", "–") if r else "–", *_run_cells(r),
                     *_default_cells(rs["default"]), _notes(e, rs)])
        verdicts.append(_verdict_row(e, rs))
    lines += [C.table(header, rows), "", "## Against PINNacle", ""]
    vheader = ["problem", "PINNacle", "L2RE: user file", "expert file",
               "expert file, default recipe", "ours (lowest budget row)", "PINNacle PINN",
               "PINNacle best (method)", "beats best", "≤ plain PINN", "≤ 5e-2"]
    lines += [C.table(vheader, verdicts), ""]
    lines += missed(user)
    lines += summary(results, defaults, user)
    return "\n".join(lines)


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="a few steps per problem (seconds)")
    ap.add_argument("--problems", default=None,
                    help="comma-separated file stems (default: all): " + ",".join(BY_KEY))
    ap.add_argument("--budget-seconds", type=float, default=DEFAULT_BUDGET,
                    help=f"wall-clock budget per run (default {DEFAULT_BUDGET:.0f}, "
                         "compilation included)")
    ap.add_argument("--out", default=str(OUT_MD), help="the Markdown table")
    ap.add_argument("--results", default=str(RESULTS), help="the JSON results (merged)")
    ap.add_argument("--fresh", action="store_true", help="do not keep earlier rows")
    ap.add_argument("--from-json", default=None, help="only write the table from this JSON")
    ap.add_argument("--files", choices=("user", "expert", "file", "both"), default="both",
                    help="which files to run: the user files (benchmarks/pinnacle/user/, as "
                         "they are: the library's default recipe), the expert files "
                         "(benchmarks/pinnacle/, with --recipe; 'file' is a synonym), or both "
                         "(default)")
    ap.add_argument("--recipe", choices=("file", "default", "both"), default="both",
                    help="the expert files: train with each file's own stages, with pinn's "
                         "default recipe (Adam, then self-scaled Broyden, 3 x 30 MLP), or "
                         "both (default)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-recipe", choices=tuple(ROWS), default="file",
                    help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "budget"
    if args.worker:
        C.write_json(Path(args.worker_out), run_entry(args.worker, mode, args.budget_seconds,
                                                      args.worker_recipe))
        return 0
    if args.from_json:
        data = C.read_json(Path(args.from_json))
        C.write_text(Path(args.out), report(data["results"], C.command_line("pinnacle.py", argv),
                                            data["machine"], data.get("defaults"),
                                            data.get("user")) + "\n")
        print(f"wrote {args.out}")
        return 0
    keys = list(BY_KEY) if not args.problems else [k.strip() for k in args.problems.split(",")
                                                   if k.strip()]
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        ap.error(f"unknown problem(s) {', '.join(unknown)}; choose from {', '.join(BY_KEY)}")
    res_path = Path(args.results)
    old = {} if args.fresh or not res_path.exists() else C.read_json(res_path)
    results, defaults = old.get("results", {}), old.get("defaults", {})
    user = old.get("user", {})
    tables = {"file": results, "default": defaults, "user": user}
    machine = C.machine()
    timeout = 300 if mode == "smoke" else 3 * args.budget_seconds + 600
    recipes = []
    if args.files != "user":
        recipes += ["file", "default"] if args.recipe == "both" else [args.recipe]
    if args.files in ("user", "both"):
        recipes += ["user"]
    failed = False
    for k in keys:
        for recipe in recipes:
            table = tables[recipe]
            if recipe == "default":
                import pinn.config

                spec, _ = pinn.config.load_spec(str(problem_path(k)))
                if uses_default_recipe(spec):
                    table[k] = {"key": k, "same_as_file": True}
                    continue
            r = run_in_subprocess(k, mode, args.budget_seconds, timeout, recipe)
            table[k] = r
            failed |= bool(r.get("error"))
            msg = (f"FAILED: {r['error'][:200]}" if r.get("error") else
                   f"L2RE {sci(r.get('l2re'))} in {C.fmt(r.get('wall_seconds'), '.1f')} s "
                   f"({r.get('steps')} steps)")
            print(f"{k} [{mode}, {ROWS[recipe]}]: {msg}", flush=True)
            C.write_json(res_path, {"machine": machine, "results": results,
                                    "defaults": defaults, "user": user})
    command = C.command_line("pinnacle.py", argv)
    C.write_text(Path(args.out), report(results, command, machine, defaults, user) + "\n")
    print(f"wrote {args.out} and {res_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
