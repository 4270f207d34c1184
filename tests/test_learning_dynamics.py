"""Unit tests of rnnbook.learning_dynamics(_nets): closed forms against simulation, and that every
claim check can fail on synthetic bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import rnnbook
import rnnbook.learning_dynamics as ld
import rnnbook.learning_dynamics_nets as nets


# ----------------------------------------------------------------------------- closed forms
def test_mode_grads_match_autograd_real():
    rng = np.random.default_rng(0)
    R, T = 5, 4
    a, b, c = (rng.uniform(-1, 1, R) for _ in range(3))
    s = rng.uniform(0, 1, (R, T))
    E, ga, gb, gc = ld.mode_grads(a, b, c, s, ld.powers(T))
    t = [torch.tensor(x, requires_grad=True) for x in (a, b, c)]
    k = torch.tensor(ld.powers(T))
    Et = 0.5 * ((torch.tensor(s) - (t[0] * t[2])[:, None] * t[1][:, None] ** k) ** 2).sum(1)
    auto = torch.autograd.grad(Et.sum(), t)
    np.testing.assert_allclose(E, Et.detach().numpy(), rtol=1e-12)
    for g, h in zip((ga, gb, gc), auto):
        np.testing.assert_allclose(g, h.numpy(), rtol=1e-10, atol=1e-14)


def test_mode_grads_wirtinger():
    """Complex modes: the returned gradient is dE/dz* = z.grad / 2 (PyTorch convention)."""
    rng = np.random.default_rng(1)
    R, T = 3, 5
    a, b, c = (rng.normal(size=R) + 1j * rng.normal(size=R) for _ in range(3))
    b *= 0.5
    s = rng.normal(size=(R, T)) + 1j * rng.normal(size=(R, T))
    _, ga, gb, gc = ld.mode_grads(a, b, c, s, ld.powers(T))
    t = [torch.tensor(x, requires_grad=True) for x in (a, b, c)]
    k = torch.tensor(ld.powers(T))
    e = torch.tensor(s) - (t[0] * t[2])[:, None] * t[1][:, None] ** k
    (0.5 * (e.abs() ** 2).sum()).backward()
    for g, x in zip((ga, gb, gc), t):
        np.testing.assert_allclose(g, x.grad.numpy() / 2, rtol=1e-10, atol=1e-14)


def test_k1_network_step_is_euler_step():
    out = nets.k1_check(T=3, N=3, seed=2)
    assert out["rel diff"] <= 1e-12 and out["off-diagonal"] <= 1e-12


def test_k2_logistic():
    assert ld.k2_ivp_check() <= 1e-8
    f1 = ld.f1_runs(4, 0.1, 1e-3, 2000)
    assert ld.f1_check(f1)["K2 max |u_gd - u_theory| / max u"] <= 2e-3


def test_k4_taylor_matches_gd():
    s = ld.task("inv_exp", 5, 1.1, 0.5)
    gd = ld.mode_gd(np.array([1.1 ** 0.5]), np.array([0.1]), np.array([1.1 ** 0.5]), s[None],
                    ld.powers(5), lr=1e-3, steps=3000, freeze="u", every=1)
    tay = ld.taylor_b(s, 1.1, 0.1, 1e-3, 3000)
    assert np.max(np.abs(gd["b"][:, 0] - tay)) <= 2e-2


@pytest.mark.parametrize("fam", ["constant", "inv_exp", "exp"])
def test_k5_zero_loss(fam):
    for lam in (0.6, 1.3):
        b, u = ld.zero_loss_solution(fam, 5, 0.8, lam)
        s = ld.task(fam, 5, 0.8, lam)
        assert ld.energy(np.array([1.0]), np.array([b]), np.array([u]), s[None], ld.powers(5))[0] <= 1e-20


def test_k5_t_output_case():
    """s_{t,i} = delta lam^(t-i) for all outputs t: (b, ac) = (lam, delta) has zero loss."""
    T, delta, lam = 5, 0.7, 0.8
    pairs = [(t, i) for t in range(1, T + 1) for i in range(1, t + 1)]
    k = np.array([t - i for t, i in pairs])
    s = delta * lam ** k
    assert ld.energy(np.array([1.0]), np.array([lam]), np.array([delta]), s[None], k)[0] <= 1e-20


def test_k6_k7_symbolic():
    assert all(ld.symbolic_checks().values())


def test_k7_dirac_profile_matches_direct_minimisation():
    T, beta, b = 5, 1.3, 0.7
    s = ld.task("dirac", T, beta=beta, kappa=1 / beta)
    E, u = ld.profile_energy(np.array([b])[:, None], s[None])
    Ed, ud = ld.dirac_profile(beta, b, T)
    assert abs(2 * E[0] - Ed) <= 1e-12 and abs(u[0] - ud) <= 1e-12


def test_onsets():
    assert abs(ld.onset(3) - 1 / math.sqrt(2)) <= 5e-3
    assert ld.b_star(ld.onset(3) + 1e-3, 3) <= 0.1
    assert abs(ld.onset(6) - 1.088) <= 5e-3 and ld.b_star(ld.onset(6) + 1e-3, 6) >= 0.5


def test_k8_complex_gd():
    f9 = ld.f9_runs(5, 0.1, 0.01, 20000, every=1000)
    assert ld.f9_check(f9)["passed"]


def test_pad_masks_short_tasks():
    s, k, mask = ld.pad([np.ones(3), np.ones(5)])
    assert s.shape == (2, 5) and mask[0].sum() == 3 and list(k) == [4, 3, 2, 1, 0]


def test_whitening_is_exact():
    X = nets.whitened_inputs(40, 3, 4, np.random.default_rng(0)).reshape(40, 12)
    np.testing.assert_allclose(X.T @ X, np.eye(12), atol=1e-12)


# ----------------------------------------------------------------------------- checks can fail
def _fake_f1(late_hit, early_hit, n=200):
    lam, delta = np.array([0.5, 1.1]), np.array([1.1, 0.5])
    ramp = lambda hit, tgt: tgt * np.minimum(np.arange(n) / hit, 1.2)
    u = np.stack([ramp(late_hit, delta[0]), ramp(early_hit, delta[1])])
    b = np.stack([ramp(late_hit, lam[0]), ramp(early_hit, lam[1])])
    return {"lam": lam, "delta": delta, "u_joint": u, "b_joint": b, "u_gd": u, "b_gd": b,
            "u_theory": u, "b_theory": b}


def test_c1_check_can_fail():
    good = ld.f1_check(_fake_f1(50, 100))
    assert good["ac joint"]["ratio"] == pytest.approx(2.0, rel=0.05)
    bad = ld.f1_check(_fake_f1(100, 50))
    assert bad["ac joint"]["ratio"] < 1 and bad["b joint"]["ratio"] < 1


def test_c2_check_fails_on_exponential_random_tasks():
    good = ld.c2_check(5, 0, n_random=3, steps=200)
    assert good["passed"]
    bad = ld.c2_check(5, 0, n_random=3, steps=200, tasks=ld.task("exp", 5, 1.0, np.array([0.8, 1.1, 1.2])))
    assert not bad["passed"]


def test_c3_check_fails():
    f2 = ld.f2_runs([4], 4, 0.1, 0.01, 3000)
    f2["b"] = f2["b_theory"].copy()
    f2["u"] = f2["u_theory"].copy()
    assert ld.f2_check(f2, 1e-3)["passed"]
    f2["b"] = f2["b_theory"] + 0.01
    assert not ld.f2_check(f2, 1e-3)["passed"]
    f2["b"] = np.where(f2["early"], 0.9, f2["b_theory"])
    assert not ld.f2_check(f2, 1e-3)["passed"]


def test_c4_check_fails_at_lambda_one():
    assert ld.c4_check(5)["passed"]
    assert not ld.c4_check(5, lams=(1.0,))["passed"]


def _fake_f3(b, u):
    Ts, kap, n = [3], np.array(ld.F3_KAPPAS), 5
    x = np.stack([np.linspace(lo, hi, n) for _, lo, hi in ld.F3_GRIDS.values()])
    x[0, 1] = 1.0  # delta = kappa on the grid
    shape = (1, 3, len(kap), n)
    return {"T": np.array(Ts), "kappa": kap, "x": x, "b": np.broadcast_to(b, shape).copy(),
            "u": np.broadcast_to(u, shape).copy()}


def test_c6_check_fails_without_switch():
    assert not ld.f3_check(_fake_f3(0.5, 1.0))["passed"]
    f3 = _fake_f3(0.0, 0.0)
    f3["u"][:] = f3["kappa"][None, None, :, None]
    f3["b"][..., -1] = 1.0
    f3["b"][0, 0, :, 1] = 1.0
    assert ld.f3_check(f3)["passed"]


def test_c10_check_fails_without_threshold():
    r = np.geomspace(0.1, 5, 12)
    assert ld.f10_check({"ratio": r, "b": np.where(r > 1, 1.0, 0.0)[None]})["passed"]
    assert not ld.f10_check({"ratio": r, "b": np.full((1, 12), 0.5)})["passed"]


def test_c11_check_fails():
    f9 = ld.f9_runs(5, 0.1, 0.01, 200, every=100)
    assert not ld.f9_check(f9)["passed"]


def test_c7_check_fails_when_kernel_moves_less_with_T():
    Ts, sig = [1, 2, 4], np.array([0.05, 0.1, 0.2, 0.5])
    D = np.zeros((3, 2, 4, 1))
    D[:, :, :, 0] = np.array([0.1, 0.5, 0.9])[:, None, None] * (1 - sig)[None, None, :]
    ok = {"T": np.array(Ts), "sigma": sig, "D": D, "loss_ratio": np.zeros_like(D)}
    assert nets.ntk_check(ok)["passed"]
    bad = dict(ok, D=D[::-1].copy())
    assert not nets.ntk_check(bad)["passed"]


def _fake_sens(sv_h, sv_yx, mse, T=3):
    rules = np.array(["sum", "mean"])
    return {"T": T, "rule": rules, "sv_h": np.array([sv_h]), "sv_yx": np.array([sv_yx]),
            "rel_mse": np.array(mse), "T_test": np.arange(1, 3 * T + 1)}


def test_c8_check_fails():
    T = 3
    Tt = np.arange(1, 3 * T + 1)
    good = _fake_sens([[1.0] * 4, [1.0] * 4], [[1.0] * 4, [1 / T] * 4],
                      [1e-5 * np.ones(len(Tt)), 1e-4 * (1 + (Tt - T) ** 2)])
    assert nets.sensory_check(good)["passed"]
    bad = _fake_sens([[1.0] * 4, [1.0] * 4], [[1.0] * 4, [1.0] * 4],
                     [1e-5 * np.ones(len(Tt)), 1e-4 * (1 + (Tt - T) ** 2)])
    assert not nets.sensory_check(bad)["passed"]
    bad = _fake_sens([[1.0] * 4, [1.0] * 4], [[1.0] * 4, [1 / T] * 4],
                     [1e-2 * np.ones(len(Tt)), 1e-4 * (1 + (Tt - T) ** 2)])
    assert not nets.sensory_check(bad)["passed"]


def test_c9_check_fails_when_early_is_stable():
    def fake(g_early, sv_early):
        return {"rule": np.array(["late", "early"]), "grad_Wh": np.array([[1e-5, g_early]] * 30),
                "grad_h": np.array([[1e-5, g_early]] * 30),
                "sv_h": np.array([[[1.0, 1.0, 1.0, 1.0], sv_early]])}
    assert nets.stability_check(fake(0.3, [2.0, 1.0, 0.5, 0.2]))["passed"]
    assert not nets.stability_check(fake(1e-5, [1.0, 1.0, 1.0, 1.0]))["passed"]


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(("name", "value"), [("profile", "fast"), ("T", 0), ("lr", -0.01), ("lr", 0),
                                             ("steps", 0), ("init_scale", 0), ("b0", -1),
                                             ("T", 2.5)])
def test_resolve_refuses(name, value):
    kw = {"profile": "quick", "T": 6, "init_scale": 0.1, "lr": 0.01, "steps": 100, "b0": 0.8}
    kw[name] = value
    with pytest.raises(rnnbook.ParameterError, match=repr(name)):
        ld.resolve(**kw)
