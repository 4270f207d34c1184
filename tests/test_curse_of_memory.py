"""Unit tests of rnnbook.curse_of_memory: closed forms against series, Monte-Carlo and autograd;
the quadratic-form training loss against the step-by-step recurrence; the Adam probe against
torch.optim.Adam;
and every claim check failing on synthetic bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import rnnbook
from rnnbook.claims import Claim
from rnnbook.curse_of_memory import curvature, experiments, models, propagation, report, theory

RHOS = (0.0, 0.5, 0.9, 1.0)


# ----------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("lam", (0.3, 0.8, 0.95))
def test_closed_forms_match_series(lam, rho):
    e_h2, e_dh = theory.series_moments(lam, rho)
    assert abs(e_h2 / theory.h2(lam, rho) - 1) < 1e-12
    assert abs(e_dh / theory.dh_dlamb(lam, rho) - 1) < 1e-12
    assert abs(theory.f_corr(lam, lam, rho) / theory.h2(lam, rho) - 1) < 1e-12
    assert abs(theory.S(lam, lam, rho) / theory.dh_dlamb(lam, rho) - 1) < 1e-12


def test_S_is_mixed_derivative_of_f_complex():
    """Eq. cm-S equals d1 d2 f (autograd through f on complex arguments) off the diagonal."""
    for l1, l2, rho in ((0.3 + 0.4j, 0.6 - 0.2j, 0.9), (0.9, 0.2, 0.5), (0.5j, 0.7, 0.0)):
        a = torch.tensor(l1, dtype=torch.complex128)
        b = torch.tensor(l2, dtype=torch.complex128)
        # holomorphic: d/da via finite complex step is exact enough; use central differences
        h = 1e-5
        num = (theory.f_corr(a + h, b + h, rho) - theory.f_corr(a + h, b - h, rho)
               - theory.f_corr(a - h, b + h, rho) + theory.f_corr(a - h, b - h, rho)) / (4 * h * h)
        assert abs(complex(num) / complex(theory.S(a, b, rho)) - 1) < 1e-5


def test_sympy_asymptotes():
    for rho in (0.0, 0.9, 1.0):
        s = theory.sympy_asymptotes(rho)
        a = theory.asymptotes(rho)
        assert abs(float(s["h2_pref"]) - a["h2_pref"]) < 1e-12
        assert abs(float(s["dh_pref"]) - a["dh_pref"]) < 1e-12


def test_monte_carlo_and_per_sample_autograd():
    """K1, K2 by Monte-Carlo (recurrence d_t = h_{t-1} + lam d_{t-1}) and by per-sample autograd."""
    gen = torch.Generator().manual_seed(0)
    lam, rho = 0.8, 0.5
    mc = theory.mc_moments(lam, rho, 20_000, gen)
    assert abs(mc["h2"] / theory.h2(lam, rho) - 1) < 4 * mc["h2_se"] / mc["h2"]
    assert abs(mc["dh"] / theory.dh_dlamb(lam, rho) - 1) < 4 * mc["dh_se"] / mc["dh"]
    x = torch.tensor(theory.ar1_inputs(4000, 100, rho, gen))

    def h_last(l, xs):
        h = torch.zeros((), dtype=torch.float64)
        for t in range(xs.shape[0]):
            h = l * h + xs[t]
        return h

    grad = torch.func.vmap(torch.func.grad(h_last), in_dims=(None, 0))(
        torch.tensor(lam, dtype=torch.float64), x)
    est = (grad ** 2).mean().item()
    se = (grad ** 2).std().item() / math.sqrt(len(grad))
    assert abs(est - theory.dh_dlamb(lam, rho)) < 4 * se


def test_ar1_autocorrelation():
    x = theory.ar1_inputs(20_000, 30, 0.7, torch.Generator().manual_seed(1))
    assert abs((x[:, 0] ** 2).mean() - 1) < 0.05
    assert abs((x[:, 20] * x[:, 17]).mean() - 0.7 ** 3) < 0.05


def test_gamma_forms_and_exp_derivative():
    lam = np.array([0.5, 0.9, 0.999])
    for rho in (0.0, 0.9):
        assert np.allclose(theory.gamma_h2(lam, rho), (1 + rho * lam) / (1 - rho * lam), rtol=1e-10)
    w = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    lam_t, d = theory.dlam_domega_nu(w)
    g = torch.autograd.grad(lam_t.sum(), w)[0]
    assert torch.allclose(g, d, rtol=1e-12)


def test_loss_1d_series_and_mc():
    lam, ls = 0.6 * np.exp(0.3j), 0.8 * np.exp(-0.2j)
    k = np.arange(400)
    dk = lam ** k - ls ** k
    mu, sigma = 0.7, 1.3
    series = 0.5 * (mu ** 2 * abs(dk.sum()) ** 2 + sigma ** 2 * (abs(dk) ** 2).sum())
    assert abs(theory.loss_1d(lam, ls, mu, sigma) / series - 1) < 1e-10
    # torch arguments give the same value (the conjugate must be taken for tensors too)
    t = theory.loss_1d(torch.tensor(lam), torch.tensor(ls), mu, sigma)
    assert abs(float(t) / series - 1) < 1e-10
    rng = np.random.default_rng(0)
    x = mu + sigma * rng.normal(size=(20_000, 120))
    e = (x * (lam ** np.arange(120) - ls ** np.arange(120))).sum(1)
    v = 0.5 * abs(e) ** 2
    assert abs(v.mean() - theory.loss_1d(lam, ls, mu, sigma)) < 3 * v.std() / math.sqrt(len(v))
    # gamma loss vanishes at the teacher
    assert abs(theory.gamma_loss_1d(ls, ls)) < 1e-12


def test_notebook_S_pins():
    assert abs(theory.S(0.5, 0.5, 0.5) - 6.5185) < 1e-3
    assert abs(theory.S_notebook(0.5, 0.5, 0.5) - 4.6091) < 1e-3
    for rho in (0.0, 1.0):
        assert abs(theory.S_notebook(0.7, 0.2, rho) / theory.S(0.7, 0.2, rho) - 1) < 1e-12


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
    predicted = models.adam_effective_lr(m, v, k, 1e-3)
    before = p.detach().clone()
    p.grad = torch.ones(5, dtype=torch.float64)
    opt.step()
    assert torch.allclose(before - p.detach(), predicted, rtol=1e-12, atol=1e-15)
    assert models.adam_effective_lr(torch.zeros(1), torch.zeros(1), 0, 1e-3).item() == pytest.approx(
        1e-3, rel=1e-4)
    assert models.group_lr(torch.tensor([-1.0, 1e-3])) == pytest.approx(10 ** ((-8 + math.log10(1e-3 + 1e-8)) / 2))


# ----------------------------------------------------------------------------- trainer (Eq. cm-quad)
SPECS = [models.ModelSpec("RNN", "dense", 6), models.ModelSpec("block", "dense", 6, heads=3),
         models.ModelSpec("LRU", "diag", 6), models.ModelSpec("polar", "diag", 6, param="polar"),
         models.ModelSpec("cdiag", "diag", 6, param="default", gamma="none")]


def test_lag_moments_are_the_batch_second_moments():
    x = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    lagged = torch.stack([torch.nn.functional.pad(x, (k, 0))[..., :7] for k in range(7)], -1)  # x_{t-k}
    explicit = torch.einsum("sbtk,sbtl->skl", lagged, lagged) / (3 * 7)
    assert torch.allclose(models.lag_moments(x), explicit, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_quadratic_loss_equals_recurrence(spec):
    """Loss and gradients of the quadratic form (Eq. cm-quad) equal those of the step-by-step
    recurrence against a random target system (1e-10)."""
    gen = torch.Generator().manual_seed(3)
    p = models.stack_params([models.init_params(spec, gen, 0.9) for _ in range(2)])
    t = models.stack_params([models.teacher(0.5) for _ in range(2)])
    x = torch.randn(2, 5, 50, generator=gen, dtype=torch.float64)
    target = models.predict_recurrent(models.TEACHER_SPEC, t, x)
    res = []
    for quad in (True, False):
        q = {k: v.clone().requires_grad_() for k, v in p.items()}
        if quad:
            dK = models.kernel_error(models.kernel(spec, q, 50), q["D"], models.kernel(models.TEACHER_SPEC, t, 50), t["D"])
            loss = models.batch_loss(dK, models.lag_moments(x), torch.arange(2))
        else:
            loss = 0.5 * ((models.predict_recurrent(spec, q, x) - target) ** 2).mean((1, 2))
        res.append((loss.detach(), torch.autograd.grad(loss.sum(), list(q.values()))))
    assert torch.allclose(res[0][0], res[1][0], rtol=1e-10, atol=0)
    for a, b in zip(res[0][1], res[1][1]):
        assert ((a - b).norm() / b.norm()).item() < 1e-10


def test_train_runs_are_independent_and_learn():
    """A run's result does not depend on which runs share its batch; the loss goes down."""
    spec = models.ModelSpec("LRU", "diag", 8)
    a = models.RunCfg(spec, 0.5, 1e-2, 0)
    b = models.RunCfg(models.ModelSpec("RNN", "dense", 8), 0.9, 3e-3, 1, schedule="constant")
    c = models.RunCfg(spec, 0.9, 3e-2, 1)
    both = models.train([a, b, c], 32, 60, 16, tail=10, dtype=torch.float64)
    one = models.train([a], 32, 60, 16, tail=10, dtype=torch.float64)
    assert abs(both["final"][0] / one["final"][0] - 1) < 1e-10
    assert both["curve"][0, -1] < both["curve"][0, 0]
    assert both["eff_l1"][0] > 0 and np.isnan(both["eff_l1"][1]) and both["eff_A"][1] > 0


def test_sweep_by_seed_stores_a_piece_per_seed_and_resumes(tmp_path):
    """Issue 47: the full profile trains a sweep one seed per program, one cache entry per seed; the
    rows equal those of one program, in the order of the configs, a rerun computes nothing, and a
    lost piece is recomputed alone."""
    from dataclasses import replace
    from rnnbook.cache import Cache
    S = replace(experiments.resolve("full", [0.0], None, 32, 8, 30, None, (0, 1), smoke=True), tail=5)
    spec, rnn = models.ModelSpec("LRU", "diag", 8), models.ModelSpec("RNN", "dense", 8)
    cfgs = [models.RunCfg(sp, nu, lr, sd) for sp, lr in ((spec, 1e-2), (rnn, 1e-3)) for nu in (0.5, 0.9)
            for sd in (1, 0)]
    one = models.sweep(Cache(tmp_path / "one", "v"), "ladder", cfgs, replace(S, by_seed=False), "cpu", iter)
    cache = Cache(tmp_path / "pieces", "v")
    rows = models.sweep(cache, "ladder", cfgs, S, "cpu", iter)
    assert len(list((tmp_path / "pieces").glob("ladder-*.npz"))) == 2 and cache.misses == 2
    for c, a, b in zip(cfgs, rows, one):
        assert (a["model"], a["seed"], a["nu0"]) == (b["model"], b["seed"], b["nu0"]) == (c.spec.name, c.seed, c.nu0)
        assert abs(a["final"] / b["final"] - 1) < 1e-5
    next(iter((tmp_path / "pieces").glob("ladder-*.npz"))).unlink()
    again = Cache(tmp_path / "pieces", "v")
    redo = models.sweep(again, "ladder", cfgs, S, "cpu", iter)
    assert [r["final"] for r in redo] == [r["final"] for r in rows] and (again.hits, again.misses) == (1, 1)


def test_teacher_is_fixed_and_stable():
    t1, t2 = models.teacher(0.9), models.teacher(0.9)
    assert torch.equal(t1["A"], t2["A"])
    mods = torch.linalg.eigvals(t1["A"][0]).abs()
    assert mods.min() >= 0.9 - 1e-9 and mods.max() < 1


# ----------------------------------------------------------------------------- Hessians (K9)
def test_hessian_null_space():
    h = curvature.hessians(curvature.small_teacher(0), 2048)
    for n in ("dense", "cdiag"):
        assert h[f"loss_{n}"] < 1e-20
        e = np.abs(h[f"eig_{n}"])
        assert e[8] / e[9] > 1e4
    c6 = curvature.hessian_check([h, h, h])
    assert c6["median IPR ratio"] == c6["IPR ratio per teacher"][0] and c6["passed"] in (True, False)


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
        experiments.resolve(**args)
    assert err.value.name == name


def test_resolve_defaults():
    s = experiments.resolve("quick", [0.0], None, 300, 64, None, None, None)
    assert s.steps == 1000 and s.nu0_values == [0.36, 0.84, 0.96, 0.99] and s.seeds == [0]
    f = experiments.resolve("full", [0.0], None, 300, 64, None, None, None)
    assert f.steps == 10_000 and len(f.nu0_values) == 7 and len(f.seeds) == 10


def test_resolve_smoke_gives_toy_sizes_in_the_full_profile():
    """Smoke (issue 24, item 2): profile "full" at SMOKE's sizes where the parameters are left at the
    cell's defaults, an explicit value kept; smoke=False unchanged; quick refuses smoke."""
    cell = dict(rho=list(experiments.RHO_DEFAULT), nu0_values=None, T=300, hidden_size=64, steps=None,
                lrs=None, seeds=None)
    s = experiments.resolve("full", **cell, smoke=True)
    toy = experiments.SMOKE
    assert s.profile == "full" and (s.T, s.hidden_size, s.steps) == (toy["T"], toy["hidden_size"], toy["steps"])
    assert s.rho == toy["rho"] and len(s.seeds) == 2 and all(len(v) == 2 for v in s.lrs.values())
    assert s.long_steps == s.e1_steps == toy["steps"] and s.f12 == toy["f12"] and s.ladder_seeds == 2
    assert s.theta0s == experiments.resolve("full", **cell).theta0s  # full-only grids stay
    assert experiments.resolve("full", **{**cell, "T": 40}, smoke=True).T == 40
    f = experiments.resolve("full", **cell, smoke=False)
    assert (f.T, f.hidden_size, f.steps, f.long_steps, len(f.seeds)) == (300, 64, 10_000, 10_000, 10)
    with pytest.raises(rnnbook.ParameterError, match="'smoke'"):
        experiments.resolve("quick", **cell, smoke=True)


# ----------------------------------------------------------------------------- claim checks fail
def test_mc_check_can_fail():
    assert theory.mc_check((0.5,), (0.5,), 4000, 0.10, 0)["passed"]
    assert not theory.mc_check((0.5,), (0.5,), 4000, 1e-6, 0)["passed"]


def test_slope_and_gamma_checks_can_fail(monkeypatch):
    assert theory.slope_check((0.0, 1.0))["passed"]
    assert theory.slope_check((0.0, 0.9, 0.99, 0.999, 1.0), tol=0.005)["passed"]  # K3's 0.02 has margin
    assert not theory.slope_check((0.0,), tol=1e-4)["passed"]  # finite-window curvature: 9e-4 at rho=0
    monkeypatch.setattr(theory, "dh_dlamb", lambda lam, rho: theory.h2(lam, rho))  # backward = forward
    assert not theory.slope_check((0.0,))["passed"]
    assert not theory.gamma_check((0.5,))["passed"]


def test_c2_control_gamma_alone_does_not_level_off():
    """C2's control (deterministic claim, so the seed survey says nothing about it): the rule's
    "within 1% of the limit (1+ρ)/(2(1-ρ)) at 1-λ = 1e-6" holds for γ+exp and fails for γ alone,
    whose sensitivity is still (1-λ)^-2 times larger, and for γ+exp at ρ = 1 (no finite limit)."""
    lim = theory.asymptotes(0.5)["gamma_exp_limit"]
    assert abs(theory.gamma_exp_dh(1 - 1e-6, 0.5) / lim - 1) <= 0.01
    assert theory.gamma_dh(1 - 1e-6, 0.5) / lim > 1e6
    assert theory.gamma_exp_dh(1 - 1e-6, 1.0) > 1e5


def test_gamma_check_is_two_sided(monkeypatch):
    assert theory.gamma_check((0.5,))["passed"]
    monkeypatch.setattr(theory, "gamma_exp_dh", lambda lam, rho: 0.0)  # a sensitivity that vanished
    assert not theory.gamma_check((0.5,))["passed"]


def test_c3_check_can_fail():
    good = {"RNN": {0.36: 1e-7, 0.99: 1.0}, "LRU": {0.36: 1e-6, 0.99: 1e-3}}
    assert experiments.c3_check(good, quick=True)["passed"]
    assert not experiments.c3_check({"RNN": {0.36: 1e-2, 0.99: 1.0}, "LRU": good["LRU"]}, True)["passed"]
    assert not experiments.c3_check({"RNN": good["RNN"], "LRU": {0.36: 1e-6, 0.99: 0.03}}, True)["passed"]
    assert not experiments.c3_check({"RNN": {0.36: 1e-7, 0.99: 10.0}, "LRU": {0.36: 1e-6, 0.99: 0.05}},
                           True)["passed"]
    assert not experiments.c3_check(good, quick=False)["passed"]  # LRU 1e-3 > 1e-4


def test_c4_gain():
    assert experiments.c4_gain(1.0, 1e-4, 1e-4) == pytest.approx(1.0)
    assert experiments.c4_gain(1.0, 0.5, 1e-4) < 0.5


def test_hessian_check_can_fail():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(25, 25))
    H = M @ M.T  # full rank: no gap at 9
    w, v = np.linalg.eigh(H)
    fake = {"eig_dense": w[::-1], "vec_dense": v[:, ::-1], "eig_cdiag": w[::-1], "vec_cdiag": v[:, ::-1]}
    assert not curvature.hessian_check([fake])["passed"]
    good = curvature.hessians(curvature.small_teacher(2), 2048)
    # the median decides: one failing teacher among three passing ones does not fail the claim
    assert curvature.hessian_check([good, good, fake])["passed"]
    assert not curvature.hessian_check([good, fake, fake])["passed"]


def test_c6_spectra_control():
    """C6's control: "similar spectra" (<= 1 decade) holds between the dense and c-diag Hessians of
    one teacher, on the batch Hessian (Fig. 4's 64 x 300) as on the population one, and fails
    between two dense Hessians whose teachers differ in memory (|λ| ≈ 0.99 against ≈ 0.5)."""
    x = torch.randn(1, 64, 300, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    batch = curvature.hessians(curvature.small_teacher(2), 300, models.lag_moments(x)[0])
    pop = curvature.hessians(curvature.small_teacher(2), 2048)
    short = curvature.hessians(curvature.small_teacher(2, nu=(0.5, 0.503)), 2048)
    assert batch["loss_dense"] < 1e-20 and np.abs(batch["eig_dense"][8] / batch["eig_dense"][9]) > 1e4
    assert curvature.spectra_distance(batch["eig_dense"], batch["eig_cdiag"]) <= curvature.C6_SPECTRA
    assert curvature.spectra_distance(pop["eig_dense"], pop["eig_cdiag"]) <= curvature.C6_SPECTRA
    assert curvature.spectra_distance(pop["eig_dense"], short["eig_dense"]) > 2 * curvature.C6_SPECTRA
    assert curvature.hessian_check([batch, batch, short])["verdict"] == "reproduced"


def test_oscillation_and_ipr():
    assert experiments.oscillation(np.ones(100)) == 1.0
    assert experiments.oscillation(np.r_[np.ones(90), 1e-3, 1.0] * np.ones(1)) > 10
    assert experiments.oscillation(np.zeros(50)) == 1.0
    assert curvature.ipr(np.eye(4)).tolist() == [1.0] * 4
    assert curvature.ipr(np.ones((4, 1)))[0] == pytest.approx(0.25)


def test_eigvec_concentration():
    """F5V's numbers: a unit eigenvector on one coordinate has participation number 1, one spread
    evenly over all 25 has 25; the recurrent share counts A's 16 (dense) and λ's 8 (c-diag)
    coordinates. On a teacher's batch Hessians (Fig. 4's 64 x 300) the top-4 eigenvectors of both
    networks lie on the recurrent parameters, and the c-diag ones on fewer coordinates."""
    one = {"vec_dense": np.eye(25), "vec_cdiag": np.eye(25)[:, ::-1]}
    c = curvature.eigvec_concentration(one)
    assert c["dense"] == {"participation": 1.0, "recurrent share": 1.0}
    assert c["cdiag"] == {"participation": 1.0, "recurrent share": 0.0}  # the last four: C_im, D
    flat = {n: np.ones((25, 4)) for n in ("vec_dense", "vec_cdiag")}
    c = curvature.eigvec_concentration(flat)
    assert c["dense"]["participation"] == pytest.approx(25) and c["dense"]["recurrent share"] == pytest.approx(16 / 25)
    assert c["cdiag"]["recurrent share"] == pytest.approx(8 / 25)
    x = torch.randn(1, 64, 300, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    c = curvature.eigvec_concentration(curvature.hessians(curvature.small_teacher(7), 300, models.lag_moments(x)[0]))
    assert min(c[n]["recurrent share"] for n in c) > 0.95
    assert c["cdiag"]["participation"] < c["dense"]["participation"]


def test_learn_theta_batched_equals_single():
    both = curvature.learn_theta(["polar", "exp"], [True, False], 60)
    one = curvature.learn_theta(["exp"], [False], 60)
    assert both["loss"].shape == (2, 60) and both["loss"][1, -1] < both["loss"][1, 0]
    assert np.allclose(both["loss"][1], one["loss"][0], rtol=1e-12)


def test_angle_parametrisations_start_at_lambda0_and_opt_gets_stuck():
    """F8: every parametrisation starts at Fig. 7's λ0 and recovers λ* at its ω*; under the notebook's
    sign descent opt stops in a valley far from λ* (the paper: near 20; exp's convergence is C12's),
    and the Hessian there has the steep ω_ν walls of F7's reading."""
    for name in curvature.ANGLE_PARAMS:
        for lam in (curvature.F8_LAM0, curvature.F8_LAM_STAR):
            w = curvature.angle_omega(name, lam)
            k = torch.tensor([curvature.ANGLE_PARAMS.index(name)])
            got = complex(curvature.angle_param(k, *torch.tensor([[w[0]], [w[1]]], dtype=torch.float64))[0])
            assert abs(got - lam) < 1e-12, name
        assert float(curvature.angle_loss(name, *curvature.angle_omega(name, curvature.F8_LAM_STAR))) < 1e-9
    r = curvature.learn_theta(["opt"], [False], 1500)
    assert r["loss"][0, -1] > 10 and np.ptp(r["loss"][0, -100:]) < 0.01 * r["loss"][0, -1]  # stopped
    H = curvature.angle_hessian("opt", r["traj"][0, -1])
    assert H[0, 0] > 1e3 * H[1, 1] > 0


def test_c11_check_can_fail():
    assert experiments.c11_check([1, 4, 16, 32], [2.0, 0.1, 0.05, 1e-3], True)["passed"]
    assert not experiments.c11_check([1, 4, 16, 32], [2.0, 0.1, 0.05, 0.1], True)["passed"]  # 20x only
    assert not experiments.c11_check([1, 4, 16, 32], [1e-3, 0.1, 0.05, 2.0], True)["passed"]


def test_c11_ranks_neighbours_only_beyond_a_factor_two():
    """Seed 3's medians: 1 and 4 heads tie on a plateau, 16 heads just below 32 (Spearman -0.6):
    the claim holds; a step to more heads that raises the loss by more than x2 fails it. Spearman is
    still computed exactly (seed 1's -4/5 once came out as -0.7999999999999999)."""
    c11 = experiments.c11_check([1, 4, 16, 32], [0.137, 0.139, 1.28e-4, 1.40e-4], True)
    assert c11["spearman"] == -0.6 and c11["largest rise"] == pytest.approx(1.40 / 1.28) and c11["passed"]
    assert not experiments.c11_check([1, 4, 16, 32], [1.42, 2.1, 1e-4, 9e-4], True)["passed"]  # x9
    assert experiments.c11_check([1, 4, 16, 32], [1.42, 2.1, 9.11e-4, 1.11e-4], True)["spearman"] == -0.8


# ----------------------------------------------------------------------------- optimisers (E1)
@pytest.mark.parametrize("kind", ["sgd", "adamw", "adam"])
def test_optimizer_step_matches_torch(kind):
    torch.manual_seed(1)
    p0 = torch.randn(2, 5, dtype=torch.float64)
    ref = torch.nn.Parameter(p0[1].clone())
    opt = {"sgd": lambda q: torch.optim.SGD(q, lr=1e-2, momentum=0.9),
           "adamw": lambda q: torch.optim.AdamW(q, lr=1e-2, weight_decay=1e-2),
           "adam": lambda q: torch.optim.Adam(q, lr=1e-2)}[kind]([ref])
    p = {"w": p0.clone()}
    st = {"w": (torch.zeros_like(p0), torch.zeros_like(p0))}
    lr = torch.full((2,), 1e-2, dtype=torch.float64)
    sgd = torch.tensor([False, kind == "sgd"])
    mom = torch.tensor([0.0, 0.9 if kind == "sgd" else 0.0], dtype=torch.float64)
    wd = torch.tensor([0.0, 1e-2 if kind == "adamw" else 0.0], dtype=torch.float64)
    for k in range(1, 6):
        g = torch.randn(2, 5, dtype=torch.float64)
        ref.grad = g[1].clone()
        opt.step()
        models.optimizer_step(p, {"w": g}, st, lr, k, sgd, mom, wd)
    assert torch.allclose(p["w"][1], ref.detach(), rtol=1e-12, atol=1e-14)


def test_best_lr_ignores_other_optimisers_and_f10_configs():
    rows = [{"model": "RNN", "nu0": 0.9, "lr": 1e-3, "schedule": "cosine", "opt": "adam", "final": 1.0,
             "seed": 0},
            {"model": "RNN", "nu0": 0.9, "lr": 1e-2, "schedule": "cosine", "opt": "sgd", "final": 1e-5,
             "seed": 0}]
    assert experiments.best_lr(rows, model="RNN", nu0=0.9)["loss"] == 1.0
    S = experiments.resolve("quick", [0.0], None, 300, 64, None, None, None)
    specs = {"LRU": models.ModelSpec("LRU", "diag", 64), "RNN": models.ModelSpec("RNN", "dense", 64),
             "complex diag": models.ModelSpec("complex diag", "diag", 64, param="default", gamma="none")}
    made = [models.RunCfg(specs[m], 0.99, lr, 0) for m in ("LRU", "RNN") for lr in S.lrs[m]]
    made.append(models.RunCfg(specs["complex diag"], 0.99, 1e-2, 0))
    cfgs, names = experiments.f10_configs(specs, S, 0.99, [0], made)
    # LRU: 3.2e-3 and 0.1 at pi + 2 lrs x 2 small theta0; c-diag: 2 more at pi + 3 x 2; RNN: 2 x 2
    assert len(cfgs) == len(set(cfgs)) == 6 + 8 + 4 and not set(cfgs) & set(made)
    assert names["LRU", math.pi] == "LRU" and names["complex diag", math.pi] == "complex diag"
    assert names["RNN", S.theta0s[-1]] == "RNN, theta0 = 0.01 pi"


# ----------------------------------------------------------------------------- K7, F7, F10
def test_block_H_matches_autograd_and_monte_carlo():
    r = curvature.block_H_check(seed=1, seqs=4096)
    assert r["autograd rel. err"] < 1e-10 and r["MC rel. err"] < 0.08
    H = curvature.theory_hessian(0.1, seed=0)
    assert np.allclose(H, H.T, atol=1e-8 * abs(H).max())


def test_f7_curvature_limits():
    c = curvature.f7_curvatures(np.array([1 - 1e-4]))
    assert c["exp"][0, 0] == pytest.approx(0.25, rel=1e-3)  # exp flattens the modulus
    assert c["opt"][0, 1] == pytest.approx(1.0, rel=1e-3)  # opt flattens the phase
    assert c["polar"][0, 1] > 1e6 and c["exp"][0, 1] > 1e6
    for name in ("polar", "exp", "opt"):
        w = torch.tensor(curvature.omega_of(name, 0.9, 0.7), dtype=torch.float64)
        lam = complex(curvature.param_lambda(name, w[0], w[1]))
        assert lam == pytest.approx(0.9 * np.exp(0.7j), abs=1e-12)


# ----------------------------------------------------------------------------- F6, F12 (signal module)
def test_substitute_inputs_autocorrelation():
    x = propagation.substitute_inputs(16, 2048, 32, torch.Generator().manual_seed(0), dtype=torch.float64)
    fit = propagation.fit_autocorrelation(propagation.autocorrelation(x, 400))
    assert fit["a0"] == pytest.approx(0.332, rel=0.03)
    assert fit["a1"] == pytest.approx(0.0431, rel=0.15)
    assert fit["rho"] == pytest.approx(0.997, abs=1e-3)


def test_diag_layer_scan_equals_recurrence():
    gen = torch.Generator().manual_seed(0)
    for kind in ("c-diag", "LRU"):
        p = propagation.init_deep(kind, [3.0, 30.0], 4, 4, gen, layers=1, dtype=torch.float64)
        lay = p["layers"][0]
        u = torch.randn(2, 3, 37, 4, generator=gen, dtype=torch.float64)
        lam = propagation._lambda(kind, lay)[:, None, :]
        Bm = torch.complex(lay["B_re"], lay["B_im"])
        if kind == "LRU":
            Bm = torch.exp(lay["gamma"])[..., None] * Bm
        C = torch.complex(lay["C_re"], lay["C_im"])
        h = torch.zeros(2, 3, 4, dtype=torch.complex128)
        ys = []
        for t in range(37):
            h = lam * h + torch.einsum("rij,rnj->rni", Bm, u[:, :, t].to(Bm.dtype))
            ys.append(torch.einsum("roi,rni->rno", C, h).real)
        ref = torch.stack(ys, 2) + lay["D"] * u
        assert torch.allclose(propagation.diag_layer(kind, lay, u), ref, rtol=1e-10, atol=1e-10)


def test_normalise():
    x = 5 + 3 * torch.randn(3, 4, 6, 8, dtype=torch.float64)
    y = propagation.normalise(x, torch.tensor([0, 1, 2]))
    assert torch.equal(y[0], x[0])
    assert torch.allclose(y[1].mean(-1), torch.zeros(4, 6, dtype=torch.float64), atol=1e-10)
    assert torch.allclose(y[2].mean((0, 1)), torch.zeros(8, dtype=torch.float64), atol=1e-10)
    with pytest.raises(ValueError):
        propagation.signal_propagation("c-diag", [1.0, 2.0], ["layer", "none"], x[0, :, :, :4].float(), 4, 4, 0)


def test_gru_jacobian_against_autograd():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 4, generator=gen, dtype=torch.float64)
    J = propagation.gru_jacobian((16,), (0.0, 1.0), x, 5, torch.Generator().manual_seed(1))
    assert J["off"][0].max() == 0.0 and J["off"][1].max() > 0
    # the sigma_h = 1 network rebuilt, its Jacobian by autograd
    g = torch.Generator().manual_seed(1)
    R, d = 2, 4
    bz = torch.log(1 + torch.rand(R, d, generator=g, dtype=torch.float64) * 15)
    Wi = torch.randn(R, 3, d, d, generator=g, dtype=torch.float64) * math.sqrt(2 / d)
    Q = torch.linalg.qr(torch.randn(R, 3, d, d, generator=g, dtype=torch.float64))[0][1]

    def run(h0):
        h = h0
        for t in range(5):
            a = torch.einsum("nj,gji->gni", x[:, t], Wi[1])
            gh = torch.einsum("nj,gji->gni", h, Q)
            r = torch.sigmoid(a[0] + gh[0])
            z = torch.sigmoid(a[1] + bz[1] + gh[1])
            n = torch.tanh(a[2] + r * gh[2])
            h = (1 - z) * n + z * h
        return h

    Ja = torch.autograd.functional.jacobian(lambda h0: run(h0.reshape(2, d)).sum(0), torch.zeros(2 * d,
                                            dtype=torch.float64)).reshape(d, 2, d).permute(1, 0, 2)
    dg = torch.diagonal(Ja.abs(), dim1=-2, dim2=-1).mean()
    assert float(dg) == pytest.approx(J["diag"][1, -1], rel=1e-10)


def test_gru_theory_and_moments():
    b = torch.tensor([-0.5, 0.0, 2.0, 5.0], dtype=torch.float64)
    th = propagation.gru_theory(b)
    lam = torch.sigmoid(b)
    ref = sum(a * (1 - lam) ** 2 * theory.f_corr(lam, lam, r) for a, r in zip(propagation.SUB_RHO0, propagation.SUB_RHO))
    assert torch.allclose(th["var_h"], ref, rtol=1e-12)
    # d_alpha d_beta aux by finite differences
    e = 1e-4
    fd = (propagation.aux(lam + e, lam + e) - propagation.aux(lam + e, lam - e) - propagation.aux(lam - e, lam + e)
          + propagation.aux(lam - e, lam - e)) / (4 * e * e)
    assert torch.allclose(th["var_dbh"], fd * (lam * (1 - lam)) ** 2, rtol=1e-3)
    gen = torch.Generator().manual_seed(0)
    x = propagation.substitute_inputs(20, 1200, 32, gen, dtype=torch.float64)
    m = propagation.gru_moments(["constant", "x+h"], x, 30.0, 600, gen, probes=4)
    t = propagation.gru_theory(torch.tensor(m["b"]))
    ratio = (m["var_h"][0] / m["w2"]).mean() / t["var_h"].numpy().mean()
    assert 0.8 < ratio < 1.25
    assert np.isnan(m["var_dbh"][1, 4:]).all() and np.isfinite(m["var_dbh"][1, :4]).all()


def test_signal_claim_checks_can_fail():
    # C7 on Fig. 5C's own curves (LayerNorm: lambda spans 10^2.9, the rest 10^0.8; none: 10^15.9)
    g = {"none": np.array([10 ** -5.5, 10 ** 10.4]), "layer": np.array([1e-7, 10 ** -4.1]),
         "batch": np.array([1.0, 2.0])}
    rest = {"none": np.array([1e-6, 1e6]), "layer": np.array([10 ** -6.8, 10 ** -7.6]), "batch": np.ones(2)}
    assert propagation.c7_check(g, rest)["verdict"] == "reproduced"
    # controls: a LayerNorm lambda-gradient spanning 1e4 is only partly kept; a growing rest fails;
    # and without the curse (none's lambda span < 1e3) there is nothing for LayerNorm to tame
    assert propagation.c7_check({**g, "layer": np.array([1.0, 1e4])}, rest)["verdict"] == "partly"
    assert not propagation.c7_check(g, {**rest, "layer": np.array([1.0, 50.0])})["passed"]
    assert not propagation.c7_check({**g, "none": np.array([1.0, 50.0])}, rest)["passed"]
    assert not propagation.c7_check(g, rest)["kept under control"]["none"]
    taus = [1.0, 10.0, 100.0]
    act = {"c-diag": np.array([[1.0], [10], [1e3]]), "LRU": np.ones((3, 1)), "GRU": np.ones((3, 1))}
    assert propagation.c8_check(act, taus)["passed"]
    assert not propagation.c8_check({**act, "LRU": np.array([[1.0], [1], [20]])}, taus)["passed"]
    assert not propagation.c8_check({**act, "c-diag": np.ones((3, 1))}, taus)["passed"]
    assert propagation.c9_check(np.array([0.9, 1.3]), True)["passed"]
    assert not propagation.c9_check(np.array([0.6]), True)["passed"]
    assert not propagation.c9_check(np.array([1.3]), False)["passed"]


def test_gru_without_recurrent_weights_is_diagonal():
    """C9's structural half (Fig. 14): with σ_h = 0 the chrono GRU's gates read the input only, so
    every neuron is a scalar recurrence and the off-diagonal dh/dh0 vanish exactly, for every chrono
    range; with recurrent weights they do not."""
    gen = torch.Generator().manual_seed(3)
    x = propagation.substitute_inputs(3, 40, 8, gen, dtype=torch.float64)
    J = propagation.gru_jacobian((1, 16, 256), (0.0, 1.0), x, 40, gen)
    assert np.all(J["off"][J["sigma_h"] == 0] == 0.0)
    assert np.all(J["off"][J["sigma_h"] == 1][:, 1:] > 0)
    assert np.all(J["diag"] > 0)


class _Probe:
    """A cache that records the key and computes."""
    def cached(self, name: str, config: dict, compute):
        self.key, self.result = (name, config), compute()
        return self.result


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here"))])
def test_f12_runs_on_the_given_device(device):
    """F12 on ``device`` (issue 24, item 1): the default's cache key (the device is not in it); the
    CPU's arrays are the default's bit for bit; a GPU's (same draws, made on the CPU) agree to 1e-3
    of each array's largest entry (float32, another order of sums)."""
    cfg = experiments.SMOKE["f12"]
    ref, got = _Probe(), _Probe()
    propagation.f12_run(ref, cfg, 0)
    out = propagation.f12_run(got, cfg, 0, device=torch.device(device))
    assert got.key == ref.key == ("f12", {"cfg": cfg, "seed": 0, "gates": ["constant", "x", "x+h"]})
    assert out["jac"]["diag"].dtype == np.float64 and got.result["mom_var_h"].dtype == np.float32
    for k, b in ref.result.items():
        a = got.result[k]
        assert a.dtype == b.dtype and np.array_equal(np.isnan(a), np.isnan(b))
        if device == "cpu":
            assert np.array_equal(a, b, equal_nan=True), k
        assert np.nanmax(np.abs(a - b)) <= 1e-3 * np.nanmax(np.abs(b)), k


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here"))])
def test_f6_runs_on_the_given_device(device):
    """F6 on ``device`` (issue 24, item 1): the default's cache key (the device is not in it); the
    CPU's arrays are the default's bit for bit; a GPU's (same draws, made on the CPU) agree to 1e-3
    of each array's largest entry (float32 networks, another order of sums)."""
    cfg = experiments.SMOKE["f6"]
    ref, got = _Probe(), _Probe()
    propagation.f6_run(ref, cfg, 0)
    out = propagation.f6_run(got, cfg, 0, device=torch.device(device))
    assert got.key == ref.key == ("f6", {"cfg": cfg, "seed": 0})
    assert out["act"]["GRU"].dtype == np.float64 and out["act"]["GRU"].shape == (5, 4)
    assert got.result.keys() == ref.result.keys()
    for k, b in ref.result.items():
        a = got.result[k]
        assert a.dtype == b.dtype and a.shape == b.shape and np.all(np.isfinite(a)), k
        if device == "cpu":
            assert np.array_equal(a, b, equal_nan=True), k
        assert np.max(np.abs(a - b)) <= 1e-3 * np.max(np.abs(b)), k


def test_f6_per_block_gradients_and_fig13_table():
    """Fig. 13 (F6L): each block's λ-gradient second moment averages (blocks of equal size) to the
    network's; a block's "rest" is its own parameters only, so the blocks' rest, weighted by
    their sizes, falls short of the whole network's by the encoder and decoder; the table gives the
    paper's growth where its notebook prints one and "—" for the GRU."""
    x = propagation.substitute_inputs(4, 16, 6, torch.Generator().manual_seed(0))
    r = propagation.signal_propagation("c-diag", [1.0, 100.0], ["none", "none"], x, 6, 2, 0)
    assert r["g2l_lambda"].shape == (2, 4)
    assert np.allclose(r["g2l_lambda"].mean(1), r["g2_lambda"], rtol=1e-12)
    p = propagation.init_deep("c-diag", [1.0], 6, 6, torch.Generator())
    leaves = propagation._leaves(p)
    n_block = sum(t[0].numel() for n, t in leaves.items() if n.startswith("0.") and n[2:4] not in ("l1", "l2"))
    n_all = sum(t[0].numel() for n, t in leaves.items() if n.split(".")[1] not in ("l1", "l2"))
    assert np.all(r["g2l_rest"].sum(1) * n_block < r["g2_rest"] * n_all)
    g2_layer = {"c-diag": {"lambda": np.array([[1.0, 2, 3, 4], [10, 20, 30, 80]])},
                "GRU": {"rest": np.ones((2, 4))}}
    rows = propagation.layer_growth(g2_layer, [1.0, 100.0])
    assert rows[0]["ours: τ=100 over τ=1, blocks 1-4"] == "10, 10, 10, 20"
    assert rows[0]["ours: blocks' max/min at τ=100"] == "8" and rows[0]["paper: blocks' max/min"] == "8.7"
    assert rows[1]["paper: τ=100 over τ=1"] == "—"


def test_c10_check_verdicts():
    f10 = {"LRU": {"1π": 1e-3, "0.01π": 1e-4}, "complex diag": {"1π": 1e-2, "0.01π": 1e-2},
           "RNN": {"1π": 1.0, "0.01π": 3.0}}
    by_lr = [{"model": "LRU", "lr": 0.03, "1π": 1e-3, "0.01π": 5e-4},
             {"model": "LRU", "lr": 0.1, "1π": 1.0, "0.01π": 1e-4}]
    c = experiments.c10_check(f10, by_lr, "1π", "0.01π", 3, 3)
    assert c["verdict"] == "reproduced" and c["equal rate"] == 0.03 and c["equal-rate ratio, LRU"] == 2
    within = {**f10, "complex diag": {"1π": 1e-2, "0.01π": 2.9e-2}}  # worse, within the factor 3
    assert experiments.c10_check(within, by_lr, "1π", "0.01π", 3, 3)["verdict"] == "reproduced"
    worse = {**f10, "complex diag": {"1π": 1e-2, "0.01π": 0.3}}
    c = experiments.c10_check(worse, by_lr, "1π", "0.01π", 3, 3)
    assert c["passed"] and c["verdict"] == "partly"
    assert experiments.c10_check(worse, by_lr, "1π", "0.01π", 3, None)["verdict"] == "reproduced"
    t = experiments.c10_numbers(worse, c, "1π", "0.01π", 3)
    assert t["c10_cd"] == pytest.approx(1 / 30) and t["c10_eq_side"].startswith("below")
    assert t["f10_rnn_small"] == 3.0
    assert experiments.c10_check(f10, by_lr, "1π", "0.01π", 30, 3)["verdict"] == "partly"
    flat = {**f10, "LRU": {"1π": 1e-3, "0.01π": 1e-3}}
    assert not experiments.c10_check(flat, by_lr, "1π", "0.01π", 3, 3)["passed"]


def test_f3_grid_notes_and_c1_numbers():
    f3 = {"RNN": {0.36: {"lr": 1e-3, "loss": 1e-6}, 0.99: {"lr": 1e-3, "loss": 2.0}},
          "LRU": {0.36: {"lr": 0.01, "loss": 1e-5}, 0.99: {"lr": 0.032, "loss": 2e-3}}}
    lrs = {"RNN": [3.2e-4, 1e-3], "LRU": [0.01, 0.032]}
    twin = [{"model": "LRU", "nu0": 0.99, "lr": 0.1, "opt": "adam", "schedule": "cosine", "final": 1.3,
             "theta0": math.pi}]
    n = experiments.f3_grid_notes(twin, f3, lrs, 0.99)
    assert n["top"] == "3 of the 4" and "bracketed" in n["above"] and n["lru_growth"] == pytest.approx(200)
    assert experiments.f3_grid_notes([], f3, lrs, 0.99)["above"].startswith("No other run")
    mc = theory.mc_check((0.5,), (0.0,), 4000, 0.10, 0)
    c = theory.c1_numbers(mc, theory.slope_check((0.0,)), 4000, 0.10)
    assert c["mc_n"] == 2 and c["mc_nse"] == pytest.approx(0.1 / math.sqrt(2 / 4000))
    assert c["mc_alarm_pct"] < 1e-2 and 0 < c["slope_dev"] < 0.02
    assert theory.c1_numbers(mc, theory.slope_check((0.0,)), 20_000, 0.03)["mc_alarm_pct"] == pytest.approx(0.54, abs=0.01)


def test_f10_lr_table_and_heads_table_lrs():
    th = math.pi
    rows = [{"model": m, "nu0": 0.99, "lr": lr, "theta0": t, "opt": "adam", "schedule": "cosine",
             "final": f, "seed": 0, "effhist_A": np.ones(3), "probe_steps": np.arange(3)}
            for m, lr, t, f in (("LRU", 1e-2, th, 3.0), ("LRU", 3.2e-2, th, 2.0),
                                ("LRU, small", 3.2e-2, 0.01 * th, 0.5), ("RNN", 1e-3, th, 1.0),
                                ("RNN", 3.2e-4, th, 2.0))]
    names = {("LRU", th): "LRU", ("LRU", 0.01 * th): "LRU, small"}
    t = experiments.f10_lr_table(rows, names, 0.99)
    assert t == [{"model": "LRU", "lr": 1e-2, "1π": 3.0},
                 {"model": "LRU", "lr": 3.2e-2, "1π": 2.0, "0.01π": 0.5}]
    heads, best, _, _ = experiments.heads_table(rows, [1], 0.99, 64)
    assert heads == [1] and best[0]["loss"] == 1.0 and best[0]["lr"] == 1e-3


def test_ladder_decides_on_the_median_over_seeds():
    """C4 and C11 pick each model's rate by the median over seeds and judge the median g."""
    rows = [{"model": m, "nu0": 0.99, "lr": lr, "opt": "adam", "schedule": "cosine", "final": f, "seed": sd}
            for m, lr, fs in (("RNN", 1e-3, (1.0, 1.0, 1.0)), ("LRU", 1e-2, (1e-4, 1e-4, 1e-4)),
                              ("block 32x2", 1e-3, (1e-4, 1e-4, 0.05)),  # one seed on the plateau
                              ("block 32x2", 3.2e-3, (1e-2, 1e-2, 1e-2)))
            for sd, f in enumerate(fs)]
    b = experiments.best_lr(rows, np.median, model="block 32x2", nu0=0.99)
    assert b["lr"] == 1e-3 and b["per_seed"] == [1e-4, 1e-4, 0.05]
    assert experiments.best_lr(rows, model="block 32x2", nu0=0.99)["lr"] == 3.2e-3  # the mean's pick
    ladder = {m: experiments.best_lr(rows, np.median, model=m, nu0=0.99) for m in ("RNN", "block 32x2", "LRU")}
    c4 = experiments.c4_check(ladder, quick=True)
    assert c4["g"] == pytest.approx(1.0) and c4["verdict"] == "reproduced"
    assert c4["g per seed"][2] == pytest.approx(math.log(20) / math.log(1e4))
    S = experiments.resolve("quick", [0.0], None, 300, 64, None, None, None)
    specs = {m: models.ModelSpec(m, "dense", 64) for m in experiments.LADDER}
    cfgs = experiments.ladder_configs(specs, S, 0.99, [0, 1])
    assert {c.spec.name for c in cfgs} == set(experiments.LADDER) | {"4 heads", "16 heads"}
    assert {c.lr for c in cfgs if c.spec.name == "4 heads"} == {1e-3} and len(cfgs) == 2 * 8


def test_e1_grid_and_brackets():
    S = experiments.resolve("quick", [0.0], None, 300, 64, None, None, None)
    specs = {"RNN": models.ModelSpec("RNN", "dense", 64), "LRU": models.ModelSpec("LRU", "diag", 64)}
    cfgs = experiments.e1_configs(specs, S, 0)
    assert {c.momentum for c in cfgs if c.opt == "sgd"} == {0.0, 0.9}
    assert sorted({c.lr for c in cfgs if c.opt == "adamw" and c.spec.name == "LRU"}) == S.lrs["LRU"]
    b = {r["run"]: r for r in experiments.e1_brackets({"a": {1e-3: 1.0, 1e-2: 0.5, 1e-1: math.inf},
                                              "b": {1e-3: 1.0, 1e-2: 0.5}})}
    assert b["a"]["best lr"] == 1e-2 and b["a"]["next lr up"] == "diverged"
    assert b["b"]["next lr up"] == "none (grid top)" and b["b"]["next lr down"] == "worse"


def test_f9_ratios_two_sided_and_exact_at_ends():
    r = {x["rho"]: x for x in experiments.f9_ratios([0.0, 0.9, 1.0], 40, 100)}
    for rho in (0.0, 1.0):
        assert abs(r[rho]["min"] - 1) < 1e-12 and abs(r[rho]["max"] - 1) < 1e-12
    assert r[0.9]["min"] < 0.5 and r[0.9]["max"] > 2  # both directions
    assert abs(r[0.9]["at conj(lambda_0)"] - 0.5263) < 1e-3


def test_kernels_of_shared_buckets_equal_each_groups_own():
    """Groups of one kind and block size share one doubling / one evaluation in `kernels`: the
    same impulse responses as each group alone (float64)."""
    specs = [models.ModelSpec("b4", "dense", 8, heads=4), models.ModelSpec("b8", "dense", 16, heads=8),
             models.ModelSpec("RNN", "dense", 8), models.ModelSpec("LRU", "diag", 8),
             models.ModelSpec("cd", "diag", 8, param="default", gamma="none")]
    P = {s: models.stack_params([models.init_params(s, torch.Generator().manual_seed(i + r), 0.9)
                                 for r in range(2)]) for i, s in enumerate(specs)}
    both = models.kernels(P, 40)
    alone = torch.cat([models.kernel(s, p, 40) for s, p in P.items()])
    assert both.shape == (10, 40) and torch.allclose(both, alone, rtol=1e-12, atol=1e-14)


def test_survey_ranges_quote_the_seed_runs_only():
    """The C4/C5/C10 numbers the text glues from the committed survey: over the `seed N` runs,
    and the seeds whose equal-rate ratio is under C10's bound of 3."""
    from rnnbook.curse_of_memory import experiments
    run = lambda best, eq, g: {  # noqa: E731
        "C10": {"L(pi)/L(pi/100), LRU": best, "equal-rate ratio, LRU": eq,
                "losses": {"complex diag": {"1π": 1e-3, "0.01π": 0.3}}},
        "C5": {"median ratio": 20.0, "ratios per seed": [9.0, 20.0]}, "C4": {"g (median)": g}}
    out = experiments.survey_ranges({"seed 0": run(90, 12, 1.2), "seed 1": run(16, 2.5, 1.0),
                                     "rho 0.3": run(1, 1, 0.1)})
    assert (out["c10_best"], out["c10_eq"], out["c10_eq_below"]) == ("16 to 90", "2.5 to 12", "seed 1")
    assert out["c4_g"] == "1.20, 1.00" and out["c5_single"] == "9 to 20"


def test_survey_counts_quote_the_seed_runs_only():
    """The C6 and C11 counts the text glues from the committed survey: over the `seed N` runs only."""
    from rnnbook.curse_of_memory import report
    run = lambda gaps, iprs, l16: {  # noqa: E731
        "C6": {"eig9/eig10 per teacher": gaps, "IPR ratio per teacher": iprs},
        "C11": {"heads": [1, 4, 16, 32], "median losses": [1.0, 0.1, l16, 1e-4]}}
    out = report.survey_counts({"seed 0": run([1e7, 2.0], [1.5, 0.9], 4.2e-4),
                                "seed 1": run([5e3, 1e8], [2.0, 3.0], 1.04e-4),
                                "rho 0.3": run([1.0, 1.0], [0.1, 0.1], 1.0)})
    assert out == {"c6_total": "4", "c6_short": "2", "c6_below10": "1", "c6_below1": "1",
                   "c11_16_32": "1.04 to 4.20"}


def test_evidence_reason_only_where_not_reproduced():
    """Issue 42: an evidence claim's coded reason is given exactly where its verdict (None: from
    `passed`) is not "reproduced", and must be one of the schema's reasons."""
    assert experiments.evidence_reason(None, True, "differs") is None
    assert experiments.evidence_reason("reproduced", True, "differs") is None
    assert experiments.evidence_reason(None, False, "not-at-scale") == "not-at-scale"
    assert experiments.evidence_reason("partly", True, "setting") == "setting"
    with pytest.raises(ValueError):
        experiments.evidence_reason("partly", True, "seed")


def test_report_names_only_figures_and_claims_of_the_chapter():
    """The findings table names our figures (F1-F12, F5V, F6L, E1, E2) and claims (C1-C12) only, and every
    row without one of ours is 'not run' (the quick run's own names: tests/test_chapters.py)."""
    from rnnbook import report as report_mod
    from rnnbook.curse_of_memory.report import FINDINGS, SUMMARY
    figures = {f"F{i}" for i in range(1, 13)} | {"F5V", "F6L", "E1", "E2"}
    claims_ = {f"C{i}" for i in range(1, 13)}
    assert report_mod.unknown_names(FINDINGS, figures, claims_) == []
    assert all((f.outcome == "not run") == (not f.names) for f in FINDINGS)
    assert report_mod.chapter_report("curse_of_memory").SUMMARY is SUMMARY


def test_group_shares_ceiling_and_negative():
    """Fig. 9 / C5's shares: an entry whose gradients died out (m = v = 0) sits at Adam's ceiling,
    one with momentum against the probe (m << 0) at or below 0, one with large v far below both."""
    m = torch.tensor([[0.0, -1.0, 0.0]])
    v = torch.tensor([[0.0, 0.0, 1e4]])
    ceil, neg = models.group_shares(m, v, 1000, torch.tensor([1e-3]))
    assert ceil.item() == pytest.approx(1 / 3) and neg.item() == pytest.approx(1 / 3)
    top = models.adam_effective_lr(torch.zeros(()), torch.zeros(()), 3000, 1e-3).item()
    k = 3001  # the probe's ceiling: 0.1 / (1 - 0.9^k) over sqrt(0.001 / (1 - 0.999^k)), about 3.1 eta
    assert top == pytest.approx(1e-3 * 0.1 / (1 - 0.9 ** k) / math.sqrt(1e-3 / (1 - 0.999 ** k)), rel=1e-6)


def test_full_text_quotes_the_full_run_or_says_it_has_not_reached_a_claim():
    """The sentences that quote the committed full run in the text (C3 to C5, C7 to C10), from toy
    claims; without them each says the full run has not reached its claim."""
    assert set(report.full_text({}).values()) == {"The full profile's run has not reached this claim yet."}
    def claim(cid: str, value: dict) -> Claim:
        return Claim(cid, "s", "src", value, "t", "reproduced", True)
    full = {"C3": claim("C3", {"LRU at max nu0": 1e-5, "RNN/LRU at max nu0": 1e4, "RNN(max)/RNN(min)": 1e6,
                               "nu0": [0.36, 0.99]}),
            "C4": claim("C4", {"g (median)": 1.25, "median losses": {"RNN": 0.05, "a": 1e-6, "b": 3e-5}}),
            "C5": claim("C5", {"median ratio": 400.0, "ratios per seed": [100.0, 400.0, 900.0],
                               "RNN": {"A": 10 ** -7.27 * 40}, "complex diag": {"lambda": 10 ** -3.12 * 2}}),
            "C10": claim("C10", {"L(pi)/L(pi/100), LRU": 60.0, "L(pi)/L(pi/100), complex diag": 0.5,
                                 "losses": {"LRU": {"1π": 1.2e-5, "0.01π": 2e-7},
                                            "complex diag": {"1π": 3e-5, "0.01π": 6e-5}}}),
            "C7": claim("C7", {"max/min over tau": {"none": 1e14, "layer": 1e3, "batch": 1e4},
                               "all but lambda, max/min over tau": {"none": 1e10, "layer": 3.0, "batch": 2.0}}),
            "C8": claim("C8", {"act(100)/act(1), block 4": {"c-diag": 1.2e4, "LRU": 0.95, "GRU": 0.9}}),
            "C9": Claim("C9", "s", "src", {"worst ratio": 1.31, "tolerance": 1.2}, "t", "fails", False)}
    text = report.full_text(full)
    assert "RNN ends at 1e-07 at ν₀ = 0.36 and 0.1 at 0.99, the LRU at 1e-05" in text["full_c3"]
    assert "$g$ = 1.25" in text["full_c4"] and "a factor of 30, from 1e-06 (a) to 3e-05 (b)" in text["full_c4"]
    assert "median ratio is 400 (per seed 100 to 900)" in text["full_c5"] and "40 times" in text["full_c5"]
    assert "spans 1e+03 across τ" in text["full_c7"] and "a factor 3.16 below the rule's line" in text["full_c7"]
    assert "grows by 1.2e+04 for c-diag" in text["full_c8"] and "0.95 for the LRU" in text["full_c8"]
    assert "with c-diag 8.3 times short of the paper's" in text["full_c8"]
    full["C7"].value["max/min over tau"]["layer"] = 10 ** 3.5 * 2  # above the line: said so
    assert "a factor 2.00 above the rule's line" in report.full_text(full)["full_c7"]
    assert "off by 1.31 against its tolerance 1.2: the check *fails*" in text["full_c9"]
    assert "a factor of 60" in text["full_c10"] and "(ratio 0.50" in text["full_c10"] and "*reproduced*" in text["full_c10"]

