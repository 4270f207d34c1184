"""Unit tests of rnnbook.curse_of_memory: closed forms against series, Monte-Carlo and autograd;
the FFT training step against the step-by-step recurrence; the Adam probe against torch.optim.Adam;
and every claim check failing on synthetic bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import rnnbook
import rnnbook.curse_of_memory as cm

RHOS = (0.0, 0.5, 0.9, 1.0)


# ----------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("lam", (0.3, 0.8, 0.95))
def test_closed_forms_match_series(lam, rho):
    e_h2, e_dh = cm.series_moments(lam, rho)
    assert abs(e_h2 / cm.h2(lam, rho) - 1) < 1e-12
    assert abs(e_dh / cm.dh_dlamb(lam, rho) - 1) < 1e-12
    assert abs(cm.f_corr(lam, lam, rho) / cm.h2(lam, rho) - 1) < 1e-12
    assert abs(cm.S(lam, lam, rho) / cm.dh_dlamb(lam, rho) - 1) < 1e-12


def test_S_is_mixed_derivative_of_f_complex():
    """Eq. cm-S equals d1 d2 f (autograd through f on complex arguments) off the diagonal."""
    for l1, l2, rho in ((0.3 + 0.4j, 0.6 - 0.2j, 0.9), (0.9, 0.2, 0.5), (0.5j, 0.7, 0.0)):
        a = torch.tensor(l1, dtype=torch.complex128)
        b = torch.tensor(l2, dtype=torch.complex128)
        # holomorphic: d/da via finite complex step is exact enough; use central differences
        h = 1e-5
        num = (cm.f_corr(a + h, b + h, rho) - cm.f_corr(a + h, b - h, rho)
               - cm.f_corr(a - h, b + h, rho) + cm.f_corr(a - h, b - h, rho)) / (4 * h * h)
        assert abs(complex(num) / complex(cm.S(a, b, rho)) - 1) < 1e-5


def test_sympy_asymptotes():
    for rho in (0.0, 0.9, 1.0):
        s = cm.sympy_asymptotes(rho)
        a = cm.asymptotes(rho)
        assert abs(float(s["h2_pref"]) - a["h2_pref"]) < 1e-12
        assert abs(float(s["dh_pref"]) - a["dh_pref"]) < 1e-12


def test_monte_carlo_and_per_sample_autograd():
    """K1, K2 by Monte-Carlo (recurrence d_t = h_{t-1} + lam d_{t-1}) and by per-sample autograd."""
    gen = torch.Generator().manual_seed(0)
    lam, rho = 0.8, 0.5
    mc = cm.mc_moments(lam, rho, 20_000, gen)
    assert abs(mc["h2"] / cm.h2(lam, rho) - 1) < 4 * mc["h2_se"] / mc["h2"]
    assert abs(mc["dh"] / cm.dh_dlamb(lam, rho) - 1) < 4 * mc["dh_se"] / mc["dh"]
    x = torch.tensor(cm.ar1_inputs(4000, 100, rho, gen))

    def h_last(l, xs):
        h = torch.zeros((), dtype=torch.float64)
        for t in range(xs.shape[0]):
            h = l * h + xs[t]
        return h

    grad = torch.func.vmap(torch.func.grad(h_last), in_dims=(None, 0))(
        torch.tensor(lam, dtype=torch.float64), x)
    est = (grad ** 2).mean().item()
    se = (grad ** 2).std().item() / math.sqrt(len(grad))
    assert abs(est - cm.dh_dlamb(lam, rho)) < 4 * se


def test_ar1_autocorrelation():
    x = cm.ar1_inputs(20_000, 30, 0.7, torch.Generator().manual_seed(1))
    assert abs((x[:, 0] ** 2).mean() - 1) < 0.05
    assert abs((x[:, 20] * x[:, 17]).mean() - 0.7 ** 3) < 0.05


def test_gamma_forms_and_exp_derivative():
    lam = np.array([0.5, 0.9, 0.999])
    for rho in (0.0, 0.9):
        assert np.allclose(cm.gamma_h2(lam, rho), (1 + rho * lam) / (1 - rho * lam), rtol=1e-10)
    w = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    lam_t, d = cm.dlam_domega_nu(w)
    g = torch.autograd.grad(lam_t.sum(), w)[0]
    assert torch.allclose(g, d, rtol=1e-12)


def test_loss_1d_series_and_mc():
    lam, ls = 0.6 * np.exp(0.3j), 0.8 * np.exp(-0.2j)
    k = np.arange(400)
    dk = lam ** k - ls ** k
    mu, sigma = 0.7, 1.3
    series = 0.5 * (mu ** 2 * abs(dk.sum()) ** 2 + sigma ** 2 * (abs(dk) ** 2).sum())
    assert abs(cm.loss_1d(lam, ls, mu, sigma) / series - 1) < 1e-10
    # torch arguments give the same value (the conjugate must be taken for tensors too)
    t = cm.loss_1d(torch.tensor(lam), torch.tensor(ls), mu, sigma)
    assert abs(float(t) / series - 1) < 1e-10
    rng = np.random.default_rng(0)
    x = mu + sigma * rng.normal(size=(20_000, 120))
    e = (x * (lam ** np.arange(120) - ls ** np.arange(120))).sum(1)
    v = 0.5 * abs(e) ** 2
    assert abs(v.mean() - cm.loss_1d(lam, ls, mu, sigma)) < 3 * v.std() / math.sqrt(len(v))
    # gamma loss vanishes at the teacher
    assert abs(cm.gamma_loss_1d(ls, ls)) < 1e-12


def test_notebook_S_pins():
    assert abs(cm.S(0.5, 0.5, 0.5) - 6.5185) < 1e-3
    assert abs(cm.S_notebook(0.5, 0.5, 0.5) - 4.6091) < 1e-3
    for rho in (0.0, 1.0):
        assert abs(cm.S_notebook(0.7, 0.2, rho) / cm.S(0.7, 0.2, rho) - 1) < 1e-12


# ----------------------------------------------------------------------------- Adam probe (K6)
def test_adam_probe_matches_torch_adam():
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(5, dtype=torch.float64))
    opt = torch.optim.Adam([p], lr=1e-3)
    for _ in range(7):
        opt.zero_grad()
        p.grad = torch.randn(5, dtype=torch.float64)
        opt.step()
    st = opt.state[p]
    m, v, k = st["exp_avg"].clone(), st["exp_avg_sq"].clone(), int(st["step"])
    predicted = cm.adam_effective_lr(m, v, k, 1e-3)
    before = p.detach().clone()
    p.grad = torch.ones(5, dtype=torch.float64)
    opt.step()
    assert torch.allclose(before - p.detach(), predicted, rtol=1e-12, atol=1e-15)
    assert cm.adam_effective_lr(torch.zeros(1), torch.zeros(1), 0, 1e-3).item() == pytest.approx(
        1e-3, rel=1e-4)
    assert cm.group_lr(torch.tensor([-1.0, 1e-3])) == pytest.approx(10 ** ((-8 + math.log10(1e-3 + 1e-8)) / 2))


# ----------------------------------------------------------------------------- FFT trainer
SPECS = [cm.ModelSpec("RNN", "dense", 6), cm.ModelSpec("block", "dense", 6, heads=3),
         cm.ModelSpec("LRU", "diag", 6), cm.ModelSpec("polar", "diag", 6, param="polar"),
         cm.ModelSpec("cdiag", "diag", 6, param="default", gamma="none")]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_fft_step_equals_recurrence(spec):
    """Loss and gradients of the FFT form equal those of the step-by-step recurrence (1e-10)."""
    gen = torch.Generator().manual_seed(3)
    p = cm.stack_params([cm.init_params(spec, gen, 0.9) for _ in range(2)])
    x = torch.randn(2, 5, 50, generator=gen, dtype=torch.float64)
    target = torch.randn(2, 5, 50, generator=gen, dtype=torch.float64)
    res = []
    for fn in (cm.predict_fft, cm.predict_recurrent):
        q = {k: v.clone().requires_grad_() for k, v in p.items()}
        loss = 0.5 * ((fn(spec, q, x) - target) ** 2).mean((1, 2))
        g = torch.autograd.grad(loss.sum(), list(q.values()))
        res.append((loss.detach(), g))
    assert torch.allclose(res[0][0], res[1][0], rtol=1e-10, atol=0)
    for a, b in zip(res[0][1], res[1][1]):
        assert ((a - b).norm() / b.norm()).item() < 1e-10


def test_train_runs_are_independent_and_learn():
    """A run's result does not depend on which runs share its batch; the loss goes down."""
    spec = cm.ModelSpec("LRU", "diag", 8)
    a = cm.RunCfg(spec, 0.5, 1e-2, 0)
    b = cm.RunCfg(cm.ModelSpec("RNN", "dense", 8), 0.9, 3e-3, 1, schedule="constant")
    c = cm.RunCfg(spec, 0.9, 3e-2, 1)
    both = cm.train([a, b, c], 32, 60, 16, tail=10, dtype=torch.float64)
    one = cm.train([a], 32, 60, 16, tail=10, dtype=torch.float64)
    assert abs(both["final"][0] / one["final"][0] - 1) < 1e-10
    assert both["curve"][0, -1] < both["curve"][0, 0]
    assert both["eff_l1"][0] > 0 and np.isnan(both["eff_l1"][1]) and both["eff_A"][1] > 0


def test_teacher_is_fixed_and_stable():
    t1, t2 = cm.teacher(0.9), cm.teacher(0.9)
    assert torch.equal(t1["A"], t2["A"])
    mods = torch.linalg.eigvals(t1["A"][0]).abs()
    assert mods.min() >= 0.9 - 1e-9 and mods.max() < 1


# ----------------------------------------------------------------------------- Hessians (K9)
def test_hessian_null_space():
    h = cm.hessians(cm.small_teacher(0), 2048)
    for n in ("dense", "cdiag"):
        assert h[f"loss_{n}"] < 1e-20
        e = np.abs(h[f"eig_{n}"])
        assert e[8] / e[9] > 1e4
    assert cm.hessian_check(h)["passed"] in (True, False)


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(("kwargs", "name"), [
    ({"profile": "fast"}, "profile"), ({"rho": [2.0]}, "rho"), ({"rho": [-0.1]}, "rho"),
    ({"nu0_values": [1.0]}, "nu0_values"), ({"nu0_values": [0.0]}, "nu0_values"),
    ({"T": 0}, "T"), ({"steps": -5}, "steps"), ({"hidden_size": 63}, "hidden_size"),
    ({"lrs": {"RNN": [1e-3]}}, "lrs"), ({"lrs": {"RNN": [-1.0], "LRU": [1e-2]}}, "lrs"),
    ({"lrs": {"RNN": [1e-3], "LRU": [1e-2], "GRU": [1e-2]}}, "lrs"), ({"seeds": [-1]}, "seeds")])
def test_resolve_rejects(kwargs, name):
    args = dict(profile="quick", rho=[0.0, 1.0], nu0_values=None, T=300, hidden_size=64, steps=None,
                lrs=None, seeds=None)
    args.update(kwargs)
    with pytest.raises(rnnbook.ParameterError) as err:
        cm.resolve(**args)
    assert err.value.name == name


def test_resolve_defaults():
    s = cm.resolve("quick", [0.0], None, 300, 64, None, None, None)
    assert s.steps == 1000 and s.nu0_values == [0.36, 0.84, 0.96, 0.99] and s.seeds == [0]
    f = cm.resolve("full", [0.0], None, 300, 64, None, None, None)
    assert f.steps == 10_000 and len(f.nu0_values) == 7 and len(f.seeds) == 10


# ----------------------------------------------------------------------------- claim checks fail
def test_mc_check_can_fail():
    assert cm.mc_check((0.5,), (0.5,), 4000, 0.10, 0)["passed"]
    assert not cm.mc_check((0.5,), (0.5,), 4000, 1e-6, 0)["passed"]


def test_slope_and_gamma_checks_can_fail(monkeypatch):
    assert cm.slope_check((0.0, 1.0))["passed"]
    monkeypatch.setattr(cm, "dh_dlamb", lambda lam, rho: cm.h2(lam, rho))  # backward = forward
    assert not cm.slope_check((0.0,))["passed"]
    assert not cm.gamma_check((0.5,))["passed"]


def test_c3_check_can_fail():
    good = {"RNN": {0.36: 1e-7, 0.99: 1.0}, "LRU": {0.36: 1e-6, 0.99: 1e-3}}
    assert cm.c3_check(good, quick=True)["passed"]
    assert not cm.c3_check({"RNN": {0.36: 1e-2, 0.99: 1.0}, "LRU": good["LRU"]}, True)["passed"]
    assert not cm.c3_check({"RNN": good["RNN"], "LRU": {0.36: 1e-6, 0.99: 0.03}}, True)["passed"]
    assert not cm.c3_check({"RNN": {0.36: 1e-7, 0.99: 10.0}, "LRU": {0.36: 1e-6, 0.99: 0.05}},
                           True)["passed"]
    assert not cm.c3_check(good, quick=False)["passed"]  # LRU 1e-3 > 1e-4


def test_c4_gain():
    assert cm.c4_gain(1.0, 1e-4, 1e-4) == pytest.approx(1.0)
    assert cm.c4_gain(1.0, 0.5, 1e-4) < 0.5


def test_hessian_check_can_fail():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(25, 25))
    H = M @ M.T  # full rank: no gap at 9
    w, v = np.linalg.eigh(H)
    fake = {"eig_dense": w[::-1], "vec_dense": v[:, ::-1], "eig_cdiag": w[::-1], "vec_cdiag": v[:, ::-1]}
    assert not cm.hessian_check(fake)["passed"]


def test_oscillation_and_ipr():
    assert cm.oscillation(np.ones(100)) == 1.0
    assert cm.oscillation(np.r_[np.ones(90), 1e-3, 1.0] * np.ones(1)) > 10
    assert cm.oscillation(np.zeros(50)) == 1.0
    assert cm.ipr(np.eye(4)).tolist() == [1.0] * 4
    assert cm.ipr(np.ones((4, 1)))[0] == pytest.approx(0.25)


def test_learn_theta_batched_equals_single():
    both = cm.learn_theta(["polar", "exp"], [True, False], 60)
    one = cm.learn_theta(["exp"], [False], 60)
    assert both["loss"].shape == (2, 60) and both["loss"][1, -1] < both["loss"][1, 0]
    assert np.allclose(both["loss"][1], one["loss"][0], rtol=1e-12)


def test_c11_check_can_fail():
    assert cm.c11_check([1, 4, 16, 32], [2.0, 0.1, 0.05, 1e-3], True)["passed"]
    assert not cm.c11_check([1, 4, 16, 32], [2.0, 0.1, 0.05, 0.1], True)["passed"]  # 20x only
    assert not cm.c11_check([1, 4, 16, 32], [1e-3, 0.1, 0.05, 2.0], True)["passed"]
