"""The synthesis chapter's committed seed survey (data/results/survey/synthesis.json): every verdict
is the same in all runs (tests/test_chapters.py), and here the margins the claims keep in each run,
so that a verdict resting on a near miss shows up as a failing test, not as a lucky seed."""
from __future__ import annotations

from rnnbook.claims import survey_values
from rnnbook.paths import SURVEY_DIR
from rnnbook.synthesis import learnability, regulariser, stable_students

RUNS = survey_values(SURVEY_DIR / "synthesis.json")


def test_survey_has_seeds_and_a_setting():
    assert {f"seed {s}" for s in range(5)} < set(RUNS)


def test_margins_in_every_run():
    z_tol = regulariser.settings("quick").z_tol
    s2, s4 = stable_students.settings("quick"), learnability.settings("quick")
    for name, v in RUNS.items():
        assert v["S1a"]["grid max |z|"] <= 0.85 * z_tol, name  # Monte-Carlo: room left
        reach = [x[0] for k, x in v["S2"].items() if k.startswith("lambda=")]
        assert reach and max(reach) <= s2.horizon_q - 5, name  # no stable student near q
        assert v["S2"]["unconstrained eps_q"] <= 0.5 * s2.tol, name
        assert v["S4a"]["time (max |rel. err.|)"] <= 0.6 * s4.tol_time, name
