"""Unit tests of rnnbook.synthesis.regulariser (synthesis chapter, S1): the identity between Proca et
al.'s regulariser and the output variance under white inputs, the two chapters' code against each
other, the crossover constants, that each check can fail, determinism, settings validation, and the
curse-of-memory ``mc_moments``'s new ``L`` argument."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from rnnbook import params
from rnnbook.curse_of_memory import theory as com
from rnnbook.learning_dynamics import theory as ld
from rnnbook.synthesis import regulariser as R

TINY = replace(R.settings("full", smoke=True), one_minus_b=(1.0, 0.1, 0.0), Ts=(10,), n=400, cross_Ts=(10,))


def test_variance_is_lemma_3_2_regulariser():
    """2E at s = 0 is c²a²(1 - b^{2T})/(1 - b²); at b = 1 it is c²a²T."""
    b = np.array([0.0, 0.5, 0.9, -0.7])
    for T in (1, 4, 30):
        assert np.allclose(R.variance(0.8, b, 1.5, T), 1.44 * (1 - b ** (2 * T)) / (1 - b ** 2), rtol=1e-13)
    assert R.variance(0.8, 1.0, 1.5, 7)[0] == pytest.approx(1.44 * 7, rel=1e-14)


def test_split_is_exact_with_whitened_inputs():
    for b in (0.5, 0.9, 1.0):
        errs = R.split_check(0.8, b, 1.5, 6, 2.0, seed=3)
        assert max(v for k, v in errs.items() if k != "T") < 1e-12, errs


def test_closed_forms_agree():
    out = R.closed_form_check((1.0, 0.3, 0.01, 0.0), (5, 40))
    assert max(out.values()) < 1e-12, out


def test_mc_moments_L_default_unchanged_and_finite_T():
    """``L=None`` draws exactly what the old code drew; ``L=T`` gives the finite-T moments, b = 1 too."""
    lam = 0.8
    a = com.mc_moments(lam, 0.5, 200, torch.Generator().manual_seed(1))
    b = com.mc_moments(lam, 0.5, 200, torch.Generator().manual_seed(1), L=math.ceil(20 / (1 - lam)))
    assert a == b
    mc = com.mc_moments(1.0, 0.0, 20_000, torch.Generator().manual_seed(2), L=5)
    assert abs(mc["h2"] - 5) < 5 * mc["h2_se"] and abs(mc["dh"] - 30) < 5 * mc["dh_se"]  # Σk² = 30


def test_grid_passes_and_fails_on_correlated_inputs():
    ok = R.grid_check(TINY, seed=0)
    assert ok["passed"] and ok["n_cmp"] == 9
    bad = R.grid_check(replace(TINY, n=2000), seed=0, rho=0.5)  # not white: E[h²] is larger
    assert not bad["passed"] and bad["max_z"] > 10


def test_crossover_constants():
    assert R.crossover_prediction("variance") == pytest.approx(math.log(2) / 2, rel=1e-12)
    assert R.crossover_prediction("curvature") == pytest.approx(1.33703, rel=1e-5)
    T = 50  # the variance's crossover is exact: b^{2T} = 1/2
    assert R.crossover(T, "variance") == pytest.approx(2 ** (-1 / (2 * T)), rel=1e-13)
    with pytest.raises(params.ParameterError):
        R.crossover_prediction("mean")


def test_crossover_check_passes_and_fails_on_a_wrong_prediction():
    assert R.crossover_check(TINY, seed=0)["passed"]
    swapped = {"variance": R.crossover_prediction("curvature"), "curvature": R.crossover_prediction("variance")}
    assert not R.crossover_check(TINY, seed=0, c_pred=swapped)["passed"]


def test_saturation_at_b_1():
    for row in R.saturation((10, 100)):
        assert row["E[h_T^2] / T"] == pytest.approx(1, rel=1e-14)
        assert row["pull / (T(T-1)/2)"] == pytest.approx(1, rel=1e-14)
        T = row["T"]
        assert row["curvature / (T^3/3)"] == pytest.approx((T - 1) * (2 * T - 1) / (2 * T * T), rel=1e-12)


def test_compute_deterministic_and_passes():
    a, b = R.compute(TINY, seed=4), R.compute(TINY, seed=4)
    assert a["grid"]["rows"] == b["grid"]["rows"] and a["cross"]["rows"] == b["cross"]["rows"]
    assert a["identity_passed"] and a["readings_passed"]
    assert R.compute(TINY, seed=5)["grid"]["rows"] != a["grid"]["rows"]


def test_settings_validation():
    assert R.settings("quick").n == 4000
    assert R.settings("full").n > R.settings("quick").n
    assert isinstance(R.settings("full", smoke=True), R.Settings)
    with pytest.raises(params.ParameterError):
        R.settings("bogus")
    with pytest.raises(params.ParameterError):
        R.settings("quick", smoke=True)


def test_false_alarm():
    assert R.false_alarm(1, 1.959963984540054) == pytest.approx(0.05, rel=1e-9)


def test_figure():
    import matplotlib
    matplotlib.use("Agg")
    from rnnbook.synthesis import plots_regulariser
    fig = plots_regulariser.plot_s1(R.compute(TINY, seed=0), TINY)
    assert len(fig.axes) == 2
    assert ld.curvature(0.5, 3)[0][0] == pytest.approx(1 + 4 * 0.25)  # k = 1, 2
