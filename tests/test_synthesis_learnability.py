"""Synthesis chapter, S4 (rnnbook.synthesis.learnability): the extrapolation trainer's ``init``
option, the mapping L = 2E with s_i = h_{T-i}, the two trainers' common path, the checks (and that
they can fail), determinism and the settings."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from rnnbook import params
from rnnbook.extrapolation.train import RunConfig, init_student, train_students
from rnnbook.learning_dynamics import theory as ld
from rnnbook.synthesis import learnability as s4, plots_learnability


def _same(a: list[dict], b: list[dict]) -> bool:
    """Byte-equal trainer results."""
    return all(x.keys() == y.keys() and all(np.array_equal(np.asarray(x[k]), np.asarray(y[k]), equal_nan=True)
                                            for k in x) for x, y in zip(a, b))


def _mini() -> s4.Settings:
    """Toy sizes (under a second): two one-mode teachers, d = 1, 2 on the two-mode teacher."""
    return s4.Settings(ks=(5,), n_seeds=1, steps_one=1000, steps_floor=3000, steps_wide=3000,
                       one_mode=((1.0, 1.0), (0.5, 1.1)), ds=(1, 2))


@pytest.fixture(scope="module")
def mini():
    S = _mini()
    res = s4.train(S, seed=0)
    return S, res, s4.check(res, S, seed=0)


# ----------------------------------------------------------------------------- the trainer's option
def test_init_none_is_todays_program():
    # (tests/test_synthesis_stable_students.py pins the default program's results to a digest)
    cfgs = [RunConfig("S4", 4, lam, w, k, v, 1e-2, 2e-2, 200, 5 + i, 10, (50, 200)) for i, (lam, w, k, v)
            in enumerate((((1.0,), (1.0,), 3, "sym_bal"), ((1.0, -0.9), (0.5, 0.5), 5, "nonsym")))]
    today = train_students(cfgs)
    assert _same(train_students(cfgs, init=None), today)
    init = tuple(torch.stack(t).numpy() for t in zip(*(init_student(c) for c in cfgs)))
    assert _same(train_students(cfgs, init=init), today)  # the same start, given explicitly
    assert np.array_equal(init[0], torch.stack([init_student(c)[0] for c in cfgs]).numpy())  # not moved


def test_padded_student_is_exact():
    cfg = RunConfig("S4", 1, (1.0, -0.9), (0.5, 0.5), 5, "sym_bal", 1e-2, 1e-2, 400, 3, 12, (0, 200, 400))
    alone = train_students([cfg])[0]
    A, B, C = s4.padded_init([cfg, dataclasses.replace(cfg, d=3)])
    both = train_students([cfg, dataclasses.replace(cfg, d=3, seed=4)], init=(A, B, C))[0]
    assert np.array_equal(both["A"][1:], np.zeros((2, 3))) and np.array_equal(both["A"][0, 1:], np.zeros(2))
    assert np.array_equal(both["B"][1:], np.zeros(2)) and np.array_equal(both["C"][1:], np.zeros(2))
    assert np.allclose(both["ck_loss"], alone["ck_loss"], rtol=1e-13, atol=0)
    assert abs(both["A"][0, 0] - alone["A"][0, 0]) < 1e-13


# ----------------------------------------------------------------------------- the mapping
def test_index_convention():
    h = np.arange(5.0)  # h_0 .. h_4
    s = s4.singular_values(h)
    assert s[-1] == h[0] and s[0] == h[4]  # s_T = h_0 (the latest input), s_1 = h_{T-1}
    for lam, w in ((0.5, 1.1), (1.1, 0.5), (1.0, 1.0)):  # one mode: Proca's inverse-exponential task
        assert np.allclose(s4.mode_task((lam,), (w,), 7), ld.task("inv_exp", 7, w, lam), rtol=1e-14)


def test_mapping_is_exact_and_can_fail():
    S = _mini()
    assert s4.mapping_check(S, seed=1)["passed"]
    assert s4.mapping_check(S, seed=1)["max"] < 1e-13
    assert not s4.mapping_check(S, seed=1, convention="i-1")["passed"]
    assert not s4.mapping_check(S, seed=1, norm=1.0)["passed"]


# ----------------------------------------------------------------------------- the checks
def test_checks_pass(mini):
    S, res, c = mini
    assert c["path"]["passed"] and c["solution"]["passed"] and c["time"]["passed"]
    assert c["s4a_verdict"] == "agree" and c["s4b_verdict"] == "agree"
    row = c["floor"]["rows"][0]
    assert row["median L d=2"] < S.gate < row["2E* (Proca floor)"]


def test_path_check_fails_with_unmapped_rate():
    S = _mini()
    res = s4.train(S, seed=0, rate=1.0)  # mode_gd at the extrapolation chapter's η, not 2η
    assert not s4.path_check(res, S)["passed"]


def test_learning_time_can_fail(mini):
    S, res, _ = mini
    assert not s4.learning_time(res, S, frozen="target")["passed"]  # b frozen at its target
    late = dict(res, ld_a=np.roll(res["ld_a"], 40, axis=1))  # a path 200 steps late
    assert not s4.learning_time(late, S)["passed"]


def test_floor_check_can_fail(mini):
    S, res, _ = mini
    r1 = s4._rows(res, 1, 2)
    wrong = dict(res, loss=res["loss"].copy())
    wrong["loss"][r1] *= 1.001  # a d = 1 student above the floor
    assert not s4.floor_check(wrong, S)["passed"]
    wrong = dict(res, loss=res["loss"].copy())
    wrong["loss"][s4._rows(res, 2, 2)] = 0.5  # a wider student stuck
    assert not s4.floor_check(wrong, S)["passed"]
    wrong = dict(res, A=res["A"].copy())
    wrong["A"][s4._rows(res, 1, 1), 0, 0] *= 0.99  # off Proca's zero-loss solution
    assert not s4.solution_check(wrong, S)["passed"]


def test_floor_check_accepts_the_other_local_minimum(mini):
    """A d = 1 student that settled in E*(b)'s other basin sits at a minimum of Proca's energy: it
    passes (and is not counted at b*); one a little off that minimum fails."""
    S, res, _ = mini
    r = s4._rows(res, 1, 2)[0]
    s = s4._task(res, r)
    (b_loc, _), = [m for m in s4.profile_minima(s) if abs(m[0] - ld.min_energy(s)[1]) > 0.05]
    u_loc = float(ld.profile_energy(np.array([b_loc]), s)[1])
    E_loc, b_loc = s4.nearest_minimum(s, b_loc, u_loc)
    u_loc = float(ld.profile_energy(np.array([b_loc]), s)[1])
    other = {x: res[x].copy() for x in ("A", "B", "C", "loss")}
    other["A"][r, 0, 0], other["B"][r, 0], other["C"][r, 0] = b_loc, np.sqrt(abs(u_loc)), np.sign(u_loc) * np.sqrt(abs(u_loc))
    other["loss"][r] = 2 * E_loc
    c = s4.floor_check(dict(res, **other), S)
    assert c["passed"] and c["rows"][0]["d=1 at b* (of n)"][0] == c["rows"][0]["d=1 at b* (of n)"][1] - 1
    other["loss"][r] *= 1 + 1e-6
    assert not s4.floor_check(dict(res, **other), S)["passed"]


def test_profile_minima_has_the_global_minimum():
    s = s4.mode_task((1.0, -0.9), (0.5, 0.5), 5)
    E, b = ld.min_energy(s)
    mins = s4.profile_minima(s)
    assert len(mins) == 2 and min(e for _, e in mins) == pytest.approx(E, rel=1e-6)


def test_deterministic():
    S = dataclasses.replace(_mini(), steps_one=50, steps_floor=50, steps_wide=50)
    a, b = s4.train(S, seed=4), s4.train(S, seed=4)
    assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    assert not np.array_equal(a["A0"], s4.train(S, seed=5)["A0"])


# ----------------------------------------------------------------------------- settings, figure
def test_settings():
    for profile, smoke in (("quick", False), ("full", False), ("full", True)):
        S = s4.settings(profile, smoke=smoke)
        assert 1 in S.ds and min(S.ks) >= 5
    with pytest.raises(params.ParameterError):
        s4.settings("slow")
    with pytest.raises(params.ParameterError):
        s4.settings("quick", smoke=True)
    for bad in ({"ks": (4,)}, {"ds": (2, 3)}, {"ds": (1,)}, {"n_seeds": 0}, {"lr": 0.0},
                {"horizon_q": 3}, {"one_mode": ((1.0, 0.0),)}):
        with pytest.raises(params.ParameterError):
            dataclasses.replace(_mini(), **bad)
    with pytest.raises(params.ParameterError):
        s4.singular_values(np.ones(3), convention="i")


def test_figure(mini):
    import matplotlib
    matplotlib.use("Agg")
    S, res, c = mini
    fig = plots_learnability.plot_s4(res, c, S)
    assert len(fig.axes) == 4
