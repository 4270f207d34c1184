"""Synthesis chapter, S5 (rnnbook.synthesis.memory_scale): Miller & Hardt's bound solved for k, the
exponents' finite-size bias, the finite-T saturation, the check's ability to fail, determinism and
the settings."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rnnbook import params
from rnnbook.curse_of_memory import theory as com
from rnnbook.learning_dynamics import theory as ld
from rnnbook.stable_models import theory as sm
from rnnbook.synthesis import memory_scale as s5, plots_memory_scale

DTYPE = torch.float64


@pytest.fixture(scope="module")
def smoke():
    S = s5.settings("full", smoke=True)
    return S, s5.compute(S, seed=0)


@pytest.fixture(scope="module")
def instance():
    S = s5.settings("quick")
    return s5.mh_instances(S, seed=0)


# ----------------------------------------------------------------------------- stable models: k for an eps
def test_inference_depth_is_the_shortest_guaranteed_truncation(instance):
    U, x = instance
    lam = torch.tensor([0.5, 0.9, 0.99, 0.999], dtype=DTYPE)[:, None]
    for eps in (1e-2, 1e-6):
        kc = torch.ceil(sm.inference_depth(lam, U, x, eps))  # (4, instances)
        for i in range(len(lam)):  # inference_bound at ceil(k_eps) and one step shorter, per instance
            for j in range(U.shape[0]):
                B = sm.inference_bound(lam[i, 0], U[j], x[j], torch.stack([kc[i, j] - 1, kc[i, j]]))
                assert B[1] <= eps * (1 + 1e-12) < B[0]


def test_inference_depth_zero_when_the_bound_is_already_below_eps(instance):
    U, x = instance
    lam = torch.tensor([[0.5]], dtype=DTYPE)
    assert torch.all(sm.inference_depth(lam, U, x, 1e6) == 0)


def test_inference_bound_unchanged():
    """inference_bound's numbers stay as they were (C3): λ^k (||U||_2 B_x)/(1 - λ)."""
    U = torch.tensor([[[3.0, 0.0], [0.0, 1.0]]], dtype=DTYPE)  # ||U||_2 = 3
    x = torch.tensor([[[0.6, 0.8], [0.0, 0.5]]], dtype=DTYPE)  # B_x = 1
    out = sm.inference_bound(torch.tensor([0.5], dtype=DTYPE), U, x, torch.arange(3, dtype=DTYPE))
    assert torch.allclose(out, torch.tensor([[6.0, 3.0, 1.5]], dtype=DTYPE), rtol=0, atol=1e-14)


# ----------------------------------------------------------------------------- exponents and their bias
def test_bias_slope_is_the_fitted_slope_of_one_over_M():
    w = (1e-3, 1e-1)
    eps = np.logspace(-3, -1, 20)
    ref = np.polyfit(np.log(1 / eps), eps, 1)[0]
    assert abs(s5.bias_slope(w) - ref) < 1e-12


def test_first_order_bias_explains_the_window(instance):
    """The a_1 of PREDICTIONS: the fitted exponent minus p equals a_1 sigma_W up to O(1/M^2) (< 1e-3 on
    M in [10, 1000]) for every quantity; a wrong a_1 sign would leave 0.017."""
    qs = s5.quantities(*instance, 1e-3)
    for r in s5.exponent_rows(qs, (1e-3, 1e-1)):
        assert abs(r["s - p"] - r["bias a_1 sigma_W"]) < 1e-3, r["quantity"]
        assert r["passed"]


def test_ld_at_infinite_T_is_com_at_rho_zero():
    """The T = inf LD rows repeat the CoM rows (S1's identity, relied on, not re-checked here)."""
    lam = s5.lam_of(np.geomspace(2, 1e4, 30))
    qs = s5.quantities(torch.zeros(1, 2, 2, dtype=DTYPE), torch.zeros(1, 3, 2, dtype=DTYPE), 1.0)
    assert np.allclose(qs["LD regulariser"](lam, 0.0), com.h2(lam, 0.0), rtol=1e-12)
    assert np.allclose(qs["LD curvature"](lam, 0.0), com.dh_dlamb(lam, 0.0), rtol=1e-12)


def test_exponent_check_fails_on_a_wrong_power(instance):
    qs = dict(s5.quantities(*instance, 1e-3))
    qs["CoM E[h^2]"] = lambda lam, rho: com.h2(lam, rho) * (1 - lam) ** -0.05  # exponent 1.05
    qs["LD curvature"] = lambda lam, rho: com.h2(lam, 0.9)  # CoM at rho = 0.9: not yet asymptotic
    qs["MH k_eps / ln(B_0/eps)"] = qs["MH k_eps"]  # the raw depth: exponent 1 + log correction
    rows = {r["quantity"]: r for r in s5.exponent_rows(qs, (1e-3, 1e-1))}
    assert not rows["CoM E[h^2]"]["passed"]
    assert not rows["LD curvature"]["passed"]
    assert not rows["MH k_eps / ln(B_0/eps)"]["passed"]
    assert rows["CoM E[(dh)^2]"]["passed"]


def test_exponent_check_sees_the_sign_of_a1(instance, monkeypatch):
    """A correction a_1 of the wrong sign moves the expected exponent by 2|a_1 sigma_W|: it fails."""
    qs = s5.quantities(*instance, 1e-3)
    flipped = {k: (paper, p, -a1) for k, (paper, p, a1) in s5.PREDICTIONS.items()}
    monkeypatch.setattr(s5, "PREDICTIONS", flipped)
    rows = {r["quantity"]: r for r in s5.exponent_rows(qs, (1e-3, 1e-1))}
    assert rows["MH B_0"]["passed"]  # a_1 = 0
    assert not any(r["passed"] for k, r in rows.items() if k != "MH B_0")


def test_mh_raw_exponent_is_reduced_plus_log_correction(instance):
    U, x = instance
    w = (1e-3, 1e-1)
    mh = s5.mh_log_correction(U[:3], x[:3], 1e-3, w)
    red = [s5.slope(lambda lam, rho: s5.mh_depth(lam, U[i:i + 1], x[i:i + 1], 1e-3)[:, 0]
                    / np.log(s5.mh_B0(lam, U[i:i + 1], x[i:i + 1])[:, 0] / 1e-3), w) for i in range(3)]
    assert np.allclose(mh["raw"], np.array(red) + mh["log correction"], atol=1e-12)
    assert np.all(mh["log correction"] > 0.05)  # the logarithm is not negligible on this window


def test_rho_one_exponents_two_and_four():
    rows = {r["rho"]: r for r in s5.rho_rows((0.0,), (1e-3, 1e-1))}
    assert abs(rows[1.0]["E[h^2] window"] - 2) < 1e-9 and abs(rows[1.0]["E[(dh)^2] window"] - 4) < 1e-6


# ----------------------------------------------------------------------------- finite T
def test_half_point_prediction_solves_the_scaling_limit():
    y1 = 2 / s5.half_point_prediction(1.0)
    assert abs(y1 / math.expm1(y1) - 0.5) < 1e-12  # p = 1: 1 - y/(e^y - 1) = 1/2
    assert abs(s5.scaling_slope(3.0, 2 / s5.half_point_prediction(3.0)) - 1.5) < 1e-12


def test_regulariser_half_point_matches_the_derived_one_over_T_term():
    """T (M_1/2/(c_1 T) - 1) -> 3/(8 phi'(y_1)) + y_1/4 (S5.md), phi(y) = y/(e^y - 1)."""
    y = 2 / s5.half_point_prediction(1.0)
    dphi = (math.expm1(y) - y * math.exp(y)) / math.expm1(y) ** 2
    pred = 3 / (8 * dphi) + y / 4
    row = s5.saturation_rows((1000,), 2.0)[0]
    assert row["term"] == "LD regulariser" and abs(row["T (M_1/2/(c_p T) - 1)"] - pred) < 0.01


def test_saturation_check_fails_without_saturation():
    """T = inf terms in place of the finite-T ones: the exponent never halves, NaN, not passed."""
    inf = lambda T: {"LD regulariser": lambda b, rho: ld.curvature(b, 1)[3]}  # noqa: E731
    row = s5.saturation_rows((10,), 2.0, fns=inf)[0]
    assert math.isnan(row["M_1/2"]) and not row["passed"]
    late = lambda T: s5.ld_finite(10 * T)  # noqa: E731  saturating ten times later
    assert not any(r["passed"] for r in s5.saturation_rows((10,), 2.0, fns=late))


# ----------------------------------------------------------------------------- the section
def test_smoke_passes_and_agrees(smoke):
    S, res = smoke
    assert res["passed"] and res["verdict"] == "agree"
    v = s5.claim_value(res)
    assert set(v["s - p"]) == {*s5.PREDICTIONS, "MH k_eps (raw)"}
    assert 0.05 < v["MH log correction"] < 0.15 and v["max |T(M_1/2/(c_p T) - 1)|"] <= S.sat_tol


def test_deterministic_for_a_seed(smoke):
    S, res = smoke
    again = s5.compute(S, seed=0)
    assert np.array_equal(again["curves"]["MH k_eps instances"], res["curves"]["MH k_eps instances"])
    assert s5.claim_value(again) == s5.claim_value(res)
    other = s5.compute(S, seed=1)
    assert not np.array_equal(other["curves"]["MH k_eps instances"], res["curves"]["MH k_eps instances"])
    assert other["verdict"] == res["verdict"]


def test_settings_validation():
    assert s5.settings("quick") == s5.Settings()
    assert s5.settings("full").instances == 200
    with pytest.raises(params.ParameterError):
        s5.settings("medium")
    with pytest.raises(params.ParameterError):
        s5.settings("quick", smoke=True)
    with pytest.raises(params.ParameterError):
        s5.Settings(window=(0.1, 0.01))
    with pytest.raises(params.ParameterError):
        s5.Settings(Ts=(1,))
    with pytest.raises(params.ParameterError):
        s5.Settings(eps=0.0)


def test_figure(smoke):
    import matplotlib
    matplotlib.use("Agg")
    from rnnbook import figures
    figures.use_style()
    S, res = smoke
    fig = plots_memory_scale.plot_s5(res, S)
    fig.canvas.draw()
    assert len(fig.axes) == 3 and figures.smallest_text_px(fig) >= figures.MIN_TEXT_PX
    matplotlib.pyplot.close(fig)


def test_raw_depth_is_judged_with_its_log_correction(instance):
    """The raw k_eps passes at 1 + 1/ln(B_0/eps) (eq. syn-s5-mh) and fails without the logarithm
    (its correction is about eight tolerances) or at another accuracy's correction."""
    U, x = instance
    qs, w = s5.quantities(U, x, 1e-3), (1e-3, 1e-1)
    ell = s5.mh_log_correction(U, x, 1e-3, w)["L median"]
    row = s5.raw_depth_row(qs, ell, 1e-3, w)
    assert row["passed"] and row["predicted"] > 1.05
    assert not s5._row("no log", "", row["fitted exponent"], 1.0, row["bias a_1 sigma_W"], row["tolerance"])["passed"]
    assert not s5.raw_depth_row(qs, ell, 1e-9, w)["passed"]  # the correction of eps = 1e-9 is smaller
