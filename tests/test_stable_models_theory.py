"""Unit tests of rnnbook.stable_models.theory (chapter "stable_models", theory half): the A.1 closed
forms against autograd; the projection and the LSTM constraint's properties; truncated forward passes
against the full one; the hand-written BPTT against autograd; the Prop. 3 bound; and the claim rules
failing on bad input."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

import rnnbook
from rnnbook.stable_models import constraints, gradient_gap, theory

F64 = torch.float64


# ----------------------------------------------------------------------------- A.1 (C2, F7)
def _a1_autograd(a: float, T: int) -> tuple[float, float]:
    """h_T and dL/da through the recurrence h_t = a h_{t-1} + 1 with autograd (float64)."""
    a_ = torch.tensor(a, dtype=F64, requires_grad=True)
    h = torch.zeros((), dtype=F64)
    for _ in range(T):
        h = a_ * h + 1
    loss = 0.5 * (h - 1) ** 2
    loss.backward()
    return h.item(), a_.grad.item()


@pytest.mark.parametrize("T", (1, 2, 5, 10, 40))
def test_a1_closed_form_matches_autograd(T):
    a = np.array([-2.0, -1.1, -0.5, 0.0, 0.3, 0.9995, 1.0, 1.0004, 1.01, 1.5, 2.0])
    h, g = theory.h_T(a, T), theory.grad_A1(a, T)
    for i, ai in enumerate(a):
        h_ref, g_ref = _a1_autograd(float(ai), T)
        assert h[i] == pytest.approx(h_ref, rel=1e-10, abs=1e-12)
        assert g[i] == pytest.approx(g_ref, rel=1e-9, abs=1e-12)


def test_a1_vectorised_over_a_and_T():
    a, T = np.linspace(-2, 2, 9), np.array([5, 10, 20, 40])
    g = theory.grad_A1(a[:, None], T[None, :])
    assert g.shape == (9, 4)
    assert np.allclose(g[:, 2], theory.grad_A1(a, 20), rtol=0, atol=0)


def test_a1_gd_diverges_from_unstable_start_and_stays_at_the_optimum():
    path = theory.gd_A1(np.array([0.0, 2.0]), 10, 100)
    steps = theory.divergence_step(path)
    assert steps[0] == -1 and np.all(path[0] == 0.0)  # a = 0 solves the task: g = 0
    assert steps[1] >= 1 and np.isnan(path[1, -1])



def test_a1_table_and_diverging_lengths_agree():
    S = theory.theory_settings("quick")
    for row in theory.a1_divergence_table(S):
        assert [int(k[4:]) for k, v in row.items() if k.startswith("T = ") and v != "-"] == \
            theory.diverging_lengths(S, row["a0"])
    assert theory.diverging_lengths(S, -0.5) == [] and theory.diverging_lengths(S, -1.1) == [10, 20, 50]

def test_a1_control_separates_stable_from_unstable_starts():
    """C2's control: steps 1/i make stable starts diverge too; at c* (the largest scale with no
    stable start diverging) the unstable starts away from -1 diverge, -1.01 at no T."""
    S = theory.theory_settings("quick")
    ctrl = theory.a1_control(S)
    assert ctrl["c_star"] == 0.002 and ctrl["stable diverged at 1/i"] > 0
    assert all(ctrl["at c*/i"][f"{a:g}"] == [] for a in S.c2_stable)
    assert ctrl["at c*/i"]["2"] == ctrl["at c*/i"]["-2"] == list(S.c2_T)
    assert ctrl["at c*/i"]["-1.01"] == [] and ctrl["unstable diverged at c*/i"] < ctrl["unstable pairs"]
    rows = theory.a1_control_table(S, ctrl)
    assert [r["start"] for r in rows].count("stable") == len(S.c2_stable)
    assert "T = none" in theory.c2_ours(S, ctrl)


# ----------------------------------------------------------------------------- projections (C1)
SMALL = replace(theory.theory_settings("quick"), c1_count=24, c1_n=16, c1_Z=100, c1_lstms=3)


def test_projection_properties_small():
    p = theory.projection_properties(SMALL, seed=1)
    assert p["max ||P(W)||_2 - 1"] <= 1e-6
    assert p["max ||P(P(W)) - P(W)||_F"] <= 1e-9
    assert p["max ||P(W) - W||_F, ||W||_2 <= 1"] <= 1e-9
    assert p["max <W - P(W), Z - P(W)>"] <= 1e-6
    assert p["max ||W - P(W)||_F - ||W - W/||W||_2||_F"] <= 1e-9
    assert p["min ||W||_2"] > 1.5  # the matrices really are outside the ball


def test_projection_batched_equals_one_at_a_time():
    W = theory.random_matrices(6, 12, 4.0, torch.Generator().manual_seed(0))
    batched = constraints.project_spectral(W)
    for i in range(6):
        assert torch.allclose(batched[i], constraints.project_spectral(W[i]), rtol=0, atol=1e-12)
    stack = W.clone()
    theory.project_stack_(stack, 0.8)
    assert torch.allclose(stack, constraints.project_spectral(W, 0.8), rtol=0, atol=1e-12)
    inside = W / 10
    theory.project_stack_(inside, 0.8)
    assert torch.equal(inside, W / 10)  # feasible matrices are left exactly as they are


def test_training_projection_equals_the_svd_form():
    """project_spectral_feasible (used in training, batched) = eq. (sm-proj), skipping feasible W."""
    W = theory.random_matrices(6, 12, 4.0, torch.Generator().manual_seed(3))
    inside = W[0] / torch.linalg.matrix_norm(W[0], ord=2) * 0.99
    P = constraints.project_spectral_feasible(torch.cat([W, inside[None]]))
    assert torch.allclose(P[:6], constraints.project_spectral(W), rtol=0, atol=1e-12)
    assert torch.equal(P[6], inside)  # a feasible W is left exactly as it is


def test_projection_is_the_nearest_feasible_point():
    """Against random feasible points: no point of the ball is closer to W than P(W)."""
    gen = torch.Generator().manual_seed(2)
    W = theory.random_matrices(1, 8, 3.0, gen)[0]
    P = constraints.project_spectral(W)
    Z = constraints.project_spectral(theory.random_matrices(2000, 8, 3.0, gen))
    assert torch.linalg.matrix_norm(W - P) <= torch.linalg.matrix_norm(W - Z).min()


def test_lstm_row_constraint():
    p = theory.lstm_constraint_properties(SMALL, seed=0, hidden=8, m=5)
    assert p["max row sum / c - 1"] <= 1e-12
    assert p["max |C(C(W)) - C(W)|"] <= 1e-12
    small_hh = torch.full((32, 8), 1e-3, dtype=F64)  # within every bound: unchanged
    small_ih = torch.full((32, 5), 1e-3, dtype=F64)
    W, U = constraints.constrain_lstm(small_hh, small_ih, "row")
    assert torch.equal(W, small_hh) and torch.equal(U, small_ih)
    assert theory.lstm_rowsum_excess(small_hh * 1e3, small_ih) > 0  # the check can fail


# ----------------------------------------------------------------------------- truncation (C3)
def _instance(n=6, m=3, T=12, lam=0.9, seed=0):
    gen = torch.Generator().manual_seed(seed)
    W, U = theory.tanh_rnn_instances(2, (lam,), n, m, gen)
    x = torch.rand(1, 2, T, m, generator=gen, dtype=F64) * 2 - 1
    return W, U, x


def test_truncated_final_states_k_at_least_T_equals_full():
    W, U, x = _instance()
    full = theory.tanh_forward(W, U, x)[..., -1, :]
    h_k = theory.truncated_final_states(W, U, x, K=15)  # k = 1..15, T = 12
    for k in (12, 13, 15):
        assert torch.allclose(h_k[..., k - 1, :], full, rtol=0, atol=1e-15)
    k = 5  # one truncation by hand: run from 0 over the last k inputs
    by_hand = theory.tanh_forward(W, U, x[..., -k:, :])[..., -1, :]
    assert torch.allclose(h_k[..., k - 1, :], by_hand, rtol=0, atol=1e-15)


def test_inference_bound_holds_small_instance():
    W, U, x = _instance(n=16, m=4, T=60, lam=0.95, seed=3)
    err = torch.linalg.vector_norm(theory.tanh_forward(W, U, x)[..., -1, None, :]
                                   - theory.truncated_final_states(W, U, x, 30), dim=-1)
    lam = torch.full((1, 2), 0.95, dtype=F64)
    bound = theory.inference_bound(lam, U, x, torch.arange(1, 31, dtype=F64))
    assert torch.all(err <= bound * (1 + 1e-9))
    assert err[..., 0].min() > 1e-3  # not vacuous: the gap is visible at k = 1


def test_c3_summary_fails_when_bound_is_violated():
    res = {"err": np.array([[[1e-1, 1e-2, 1e-3]]]), "bound": np.array([[[1e-1, 1e-3, 1e-2]]]),
           "k": np.arange(1, 4.0), "lams": np.array([0.5])}
    s = theory.c3_summary(res)
    assert s["max err/bound"] == pytest.approx(10.0)
    assert s["max decay rate"]["0.5"] == pytest.approx(0.1)


# ----------------------------------------------------------------------------- training (C4)
def _stack(seed=0, T=7):
    gen = torch.Generator().manual_seed(seed)
    k = torch.tensor([T, T, 5, 3, 3, 1])
    M, B, n, m = len(k), 4, 5, 3
    W = torch.randn(M, n, n, generator=gen, dtype=F64) * 0.3
    U = torch.randn(M, n, m, generator=gen, dtype=F64) * 0.5
    c = torch.randn(M, n, generator=gen, dtype=F64)
    x = torch.randn(M, B, T, m, generator=gen, dtype=F64)
    y = torch.randn(M, B, generator=gen, dtype=F64)
    return W, U, c, x, y, k


def test_truncated_forward_matches_windows():
    W, U, c, x, y, k = _stack()
    _, y_hat = theory.truncated_stack_forward(W, U, c, x, k)
    for i, ki in enumerate(k.tolist()):
        h = theory.tanh_forward(W[i], U[i], x[i, :, -ki:])[:, -1]  # k >= T: the full forward
        assert torch.allclose(y_hat[i], h @ c[i], rtol=0, atol=1e-14)
    with pytest.raises(ValueError, match="sorted"):
        theory.truncated_stack_forward(W, U, c, x, k.flip(0))


def test_truncated_grads_match_autograd():
    W, U, c, x, y, k = _stack(seed=1)
    loss, grads = theory.truncated_stack_grads(W, U, c, x, y, k)
    params = [p.clone().requires_grad_() for p in (W, U, c)]
    ref = sum(0.5 * ((theory.tanh_forward(params[0][i], params[1][i], x[i, :, -ki:])[:, -1] @ params[2][i]
                      - y[i]) ** 2).mean() for i, ki in enumerate(k.tolist()))
    ref_grads = torch.autograd.grad(ref, params)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-13)
    for g, r in zip(grads, ref_grads):
        assert torch.allclose(g, r, rtol=1e-11, atol=1e-13)


def test_weight_gap_runs_tiny_and_rules_can_fail():
    S = replace(theory.theory_settings("quick"), c4_N=30, c4_N_k=20, c4_ks=(1, 4, 8), c4_T=10)
    res = theory.weight_gap_runs(S, seed=0)
    assert res["gap"].shape == (5, len(S.c4_schedules), 3, len(res["N"]))
    assert np.all(res["final_finite"])
    assert np.all(res["gap"][..., 0, :] >= res["gap"][..., 2, :])  # k = 8 is closer than k = 1
    summary = theory.c4_summary(S, res)
    bad = dict(res, gap=res["gap"][:, :, ::-1])  # gaps that grow with k
    assert not theory.c4_summary(S, bad)["passed_a"]
    flat = dict(res, gap=np.ones_like(res["gap"]))  # constant steps must grow with N
    assert not theory.c4_summary(S, flat)["passed_b"]
    assert np.isfinite(summary["ratio"])
    # C16 (Thm. 1): the prediction gap of the same runs, and a rule that can fail
    assert res["pred_gap"].shape == res["gap"].shape
    assert res["pred_gap_control"].shape == res["gap"].shape[:-1]
    assert np.all(np.median(res["pred_gap"], 0)[:, 0] > np.median(res["pred_gap"], 0)[:, 2])
    c16 = theory.c16_summary(S, res)
    assert c16["control refused"] and np.isfinite(c16["ratio per k (1/t, N = 20)"])
    assert not theory.c16_summary(S, dict(res, pred_gap=res["pred_gap"][:, :, ::-1]))["passed"]
    growing = dict(res, pred_gap=res["pred_gap"] * res["N"])  # a gap that grows like N
    assert not theory.c16_summary(S, growing)["passed"]


def test_settings_validate_profile():
    assert theory.theory_settings("full").c4_instances == theory.theory_settings("quick").c4_instances == 5
    with pytest.raises(rnnbook.ParameterError, match="profile"):
        theory.theory_settings("huge")


def test_c15_gradient_gap_falls_in_k_not_with_t_and_the_control_fails():
    """C15 (App. B.1.1): at ||W||_2 = lambda the truncation's gradient gap falls faster than lambda^k
    and does not grow with T; at ||W||_2 = 2 (the control) it stops falling, and the rule says so."""
    S = theory.theory_settings("quick")
    s = gradient_gap.c15_summary(S, gradient_gap.gradient_gaps(S, 0))
    assert s["passed"] and s["control refused"] and s["ratio per k (stable)"] <= S.c4_lam
    bad = gradient_gap.c15_summary(S, gradient_gap.gradient_gaps(S, 0, norms=(2.0, 2.0)))
    assert not bad["passed"] and bad["ratio per k (stable)"] > S.c4_lam
