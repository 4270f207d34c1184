"""Unit tests of rnnbook.extrapolation: the maths the chapter's claims rest on, and that its checks
can fail."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rnnbook.extrapolation import experiments, plots, report, theory, train
from rnnbook import ParameterError
from rnnbook.claims import Claim, validate


def cfg(k=5, variant="sym_bal", steps=300, seed=1, lam=(1.0, -0.9), w=(0.5, 0.5), d=8):
    return train.RunConfig("F1", d, lam, w, k, variant, 1e-2, 1e-2, steps, seed, 30,
                        experiments.checkpoint_steps(steps, "quick"))


def test_closed_form_gradient_matches_autograd():
    check = theory.gradient_check(seed=3)
    assert set(check) == {"symmetric", "non-symmetric", "upper-triangle update"}
    assert max(check.values()) <= 1e-12


def test_half_symmetrised_update_is_caught():
    """The spec's trap: (G + G^T) / 2 is not the upper-triangle gradient, and C9 would see it."""
    G = torch.randn(1, 3, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert not torch.allclose(torch.triu(theory.sym_grad(G)), torch.triu((G + G.mT) / 2))
    assert theory.half_update_error(seed=3) > 0.1  # far outside C9's 1e-10


def test_sym_grad_is_the_upper_triangle_update():
    G = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    S = theory.sym_grad(G)
    assert torch.equal(S, S.mT)
    assert torch.equal(torch.diagonal(S, dim1=1, dim2=2), torch.diagonal(G, dim1=1, dim2=2))
    assert torch.allclose(S[:, 0, 1], G[:, 0, 1] + G[:, 1, 0])


def test_descend_is_the_step_with_G_formed():
    """descend updates A without forming G: the same step as A - eta sym_grad(U^T W) (symmetric
    runs) and A - eta U^T W (the others), to round-off, whatever the blocks."""
    g = torch.Generator().manual_seed(5)
    R, d, K, n_sym = 6, 9, 4, 3
    A = torch.randn(R, d, d, generator=g, dtype=torch.float64) * 0.2
    A[:n_sym] = (A[:n_sym] + A[:n_sym].mT) / 2
    B, C, h_hat = (torch.randn(R, n, generator=g, dtype=torch.float64) for n in (d, d, K))
    k, lr = [4, 3, 2, 4, 3, 1], torch.full((R,), 0.05, dtype=torch.float64)
    mask = torch.arange(K) < torch.tensor(k)[:, None]
    P = theory.krylov(A, B, C, k, n_sym)
    r2 = theory.residuals(P, C, h_hat, mask)[1]
    U, W = theory.grad_factors(P, r2)[:2]
    G = U.mT @ W
    want = A - 0.05 * torch.cat([theory.sym_grad(G[:n_sym]), G[n_sym:]])
    for block in (1, 2 ** 30):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(theory, "BLOCK_BYTES", block)
            got = A.clone()
            theory.descend(got, B.clone(), C.clone(), P, r2, lr, k, n_sym)
        assert torch.allclose(got, want, rtol=0, atol=1e-15)
        assert torch.allclose(got[:n_sym], got[:n_sym].mT, rtol=0, atol=1e-15)  # symmetric to round-off


@pytest.mark.parametrize("variant", ["sym_bal", "sym_ind", "nonsym"])
def test_trainer_matches_a_reference_gd_loop(variant):
    """The batched, blocked torch trainer (here with blocks of one run) against plain autograd GD
    (``train_one``): parameters within 1e-12 relative after 300 steps."""
    configs = [cfg(k=k, variant=variant, steps=300, seed=s) for k, s in ((5, 1), (3, 2), (6, 3))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(theory, "BLOCK_BYTES", 1)
        got = train.train_students(configs)
    for c, r in zip(configs, got):
        for x, ref in zip((r["A"], r["B"], r["C"]), train.train_one(c)):
            assert np.abs(x - ref.numpy()).max() <= 1e-12 * np.abs(ref.numpy()).max()


def test_batched_runs_equal_single_runs():
    configs = [cfg(k=3, seed=1), cfg(k=5, variant="nonsym", seed=2), cfg(k=6, variant="sym_ind")]
    together = train.train_students(configs)
    for c, r in zip(configs, together):
        alone = train.train_students([c])[0]
        assert alone["loss"] == pytest.approx(r["loss"], rel=1e-9, abs=1e-15)
        assert np.allclose(alone["A"], r["A"], rtol=1e-9, atol=1e-15)


def test_a_run_that_drops_A_keeps_what_the_chapter_reads():
    """A piece without A (``keep_A=False``: the full profile's larger sizes) has the same loss, B, C
    and h as one with it, and the end asymmetry and conserved Q that C2's table reads from A."""
    keep = cfg(k=5, variant="nonsym", seed=2)
    drop = train.RunConfig(**{**keep.__dict__, "keep_A": False})
    a, b = train.train_students([keep, drop])
    assert "A" in a and "A" not in b
    for key in ("loss", "eps", "B", "C", "h", "asymmetry", "Q_norm"):
        assert np.array_equal(a[key], b[key])
    A = a["A"]
    assert a["asymmetry"] == pytest.approx(np.linalg.norm(A - A.T) / np.linalg.norm(A), rel=1e-12)
    assert a["Q_norm"] == pytest.approx(np.linalg.norm(theory.conserved(A, a["B"], a["C"])), rel=1e-12)


def test_sweeps_keep_A_at_the_first_size_only():
    """Pieces keep A only at the chapter's first size ds[0], where E1's spectra read it."""
    S = resolve(profile="full", d_sizes=[8, 20, 50])
    runs = experiments.build_sweep(S.teachers, S.ds, 1, 0, S.init_scale, S.lr, lambda *_: 10, 20,
                                   "quick", S.scales) + experiments.later_sweep(S, 0, "quick")
    assert {c.keep_A for c in runs if c.d == S.ds[0]} == {True}
    assert {c.keep_A for c in runs if c.d != S.ds[0]} == {False}


def test_moment_check_covers_every_default_teacher():
    """C7 checks the full profile's d_hat = 4 teacher too (it once skipped every default teacher
    beyond d_hat = 3)."""
    c = experiments.moment_check({dh: t for dh, t in experiments.TEACHERS.items()})
    assert "default d_hat=4" in c["table"].columns and c["passed"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here"))])
def test_trainer_runs_on_the_given_device(device):
    """``device`` given explicitly: the CPU's results are the default's, bit for bit; a GPU's agree
    to 1e-12 relative (another order of sums) and keep a balanced student exactly balanced."""
    configs = [cfg(k=3, seed=1), cfg(k=5, variant="nonsym", seed=2), cfg(k=6, variant="sym_ind"),
               cfg(k=4, steps=200, seed=4)]
    ref = train.train_students(configs)
    got = train.train_students(configs, device=device)
    for a, b in zip(got, ref):
        for key in ("A", "B", "C", "h", "ck_loss"):
            if device == "cpu":
                assert np.array_equal(a[key], b[key])
            assert np.abs(a[key] - b[key]).max() <= 1e-12 * np.abs(b[key]).max()
    assert got[0]["imbalance_max"] == 0.0 and got[3]["imbalance_max"] == 0.0


def test_gd_reduces_loss_and_keeps_balance():
    r = train.train_students([cfg(steps=2000)])[0]
    initial = float((theory.teacher_impulse((1.0, -0.9), (0.5, 0.5), 5) ** 2).sum())  # student ~ 0
    assert r["loss"] < 1e-3 * initial and r["ck_loss"][-1] < r["ck_loss"][0]
    assert r["imbalance_max"] == 0.0
    assert not r["diverged"]


def test_too_large_step_is_diverged_not_extrapolation_failure():
    bad = train.RunConfig("F1", 8, (1.0, -0.9), (0.5, 0.5), 6, "sym_bal", 0.5, 1.0, 200, 1, 30, (200,))
    r = train.train_students([bad])[0]
    assert r["diverged"]


def test_a_run_that_stops_improving_stalls():
    """A run whose loss falls by less than STALL_DROP over a window stops there, marked stalled;
    one that keeps improving runs on."""
    slow = train.RunConfig("F1", 8, (1.0, -0.9), (0.5, 0.5), 5, "sym_bal", 1e-2, 1e-9, 50_000, 1, 30, (50_000,))
    r = train.train_students([slow, cfg(steps=3000)])
    assert r[0]["stalled"] and r[0]["steps_run"] == train.STALL_WINDOW
    assert not experiments.converged({**r[0], "diverged": False}, 1e-6)
    assert not r[1]["stalled"] and r[1]["steps_run"] == 3000


def test_budgets_grow_for_slow_students():
    """Non-symmetric students from d_hat = 3 on get 1e6 steps (quick); the rest the spec's. The full
    profile multiplies by 4, but gives symmetric, balanced students of d_hat <= 2 C10's budget."""
    steps = experiments.default_steps
    assert [steps(dh, "quick") for dh in (1, 2, 3, 4, 5)] == [50_000, 50_000, 150_000, 300_000, 300_000]
    assert [steps(dh, "quick", "nonsym") for dh in (2, 3, 4)] == [50_000, 1_000_000, 1_000_000]
    assert steps(3, "full", "nonsym") == 4 * steps(3, "quick", "nonsym")
    assert steps(2, "full", "nonsym") == 200_000 and steps(3, "full") == 600_000
    assert steps(1, "full") == steps(2, "full") == experiments.FULL_SIZE_STEPS == 400_000


def test_converged_table_counts_runs_per_k():
    row = lambda e, k, loss, **kw: {"experiment": e, "d_hat": 2, "d": 20, "k": k, "loss": loss,
                                    "variant": "sym_bal" if e == "F1" else "nonsym",
                                    "diverged": False, "stalled": False, **kw}
    rows = [row("F1", 5, 1e-8), row("F1", 5, 1e-3, stalled=True), row("F2", 5, 1e-7),
            row("F2", 5, math.inf, diverged=True), row("F5", 5, 1e-8)]
    got = experiments.converged_table(rows, 1e-6).records
    assert [(r["students"][:2], r["k=5"], r["stalled"], r["diverged"]) for r in got] == [
        ("F1", "1/2", 1, 0), ("F2", "1/2", 0, 1)]


def test_prop3_fits_then_departs():
    res = experiments.prop3_check((1.0, -0.9, 0.6), (0.4, 0.3, 0.3), 7)
    assert res["passed"]


def test_prop3_check_fails_on_a_wrong_construction(monkeypatch):
    right = theory.prop3_student

    def off_by_one(lam, w, k, alpha):  # solves the Vandermonde system one moment short
        return right(lam, w, k - 1, alpha)

    monkeypatch.setattr(experiments, "prop3_student", off_by_one)
    assert not experiments.prop3_check((1.0, -0.9), (0.5, 0.5), 6)["passed"]


def test_moment_lp_unique_only_above_2_d_hat():
    lam, w = experiments.TEACHERS[2]
    assert theory.off_support_mass(lam, w, 5) <= 1e-6
    assert theory.off_support_mass(lam, w, 4) >= 0.1


def rows_for(eps_below, eps_above, loss=1e-9):
    rows = [{"k": k, "eps": e, "loss": loss, "diverged": False} for k, e in ((1, eps_below), (2, eps_below))]
    rows += [{"k": k, "eps": eps_above, "loss": loss, "diverged": False} for k in (5, 6)]
    return rows


def test_transition_check_can_fail_and_be_inconclusive():
    assert experiments.transition_check(rows_for(1.0, 1e-3), 2, 1e-6, 0.05)["passed"]
    assert not experiments.transition_check(rows_for(0.01, 1e-3), 2, 1e-6, 0.05)["passed"]  # (a)
    res = experiments.transition_check(rows_for(1.0, 0.5), 2, 1e-6, 0.05)  # (b)
    assert not res["passed"] and res["verdict"] == "not reproduced"
    res = experiments.transition_check(rows_for(1.0, 1e-3, loss=1e-3), 2, 1e-6, 0.05)  # nothing converged
    assert not res["passed"] and res["verdict"] == "inconclusive"
    rows = rows_for(0.01, 1e-3)[:2] + rows_for(1.0, 1e-3, loss=1e-3)[2:]  # (a) fails, (c) too
    assert experiments.transition_check(rows, 2, 1e-6, 0.05)["verdict"] == "not reproduced"  # spec: FAIL
    rows = rows_for(1.0, 0.5)  # k = 5 converged and failed (b); k = 6 did not converge, so (c) fails
    rows = rows[:3] + [{**r, "loss": 1e-3} for r in rows[3:]]
    res = experiments.transition_check(rows, 2, 1e-6, 0.05)
    assert not res["c"] and res["judged_above"] == [5] and res["verdict"] == "not reproduced"


def test_groups_verdict_fails_on_any_failure_and_is_partly_when_mixed():
    g = experiments.group_verdict
    assert g(["reproduced"] * 3) == "reproduced"
    assert g(["reproduced", "inconclusive"]) == "inconclusive"
    assert g(["reproduced", "not reproduced", "inconclusive"]) == "partly"
    assert g(["not reproduced", "inconclusive"]) == g(["not reproduced"]) == "not reproduced"


def test_k1_does_not_count_for_a_and_d_hat_1_is_not_testable():
    rows = [{"k": 1, "eps": 1e-3, "loss": 1e-9, "diverged": False}]  # would fail (a) if judged
    rows += [{"k": k, "eps": e, "loss": 1e-9, "diverged": False} for k, e in ((2, 1.0), (5, 1e-3))]
    res = experiments.transition_check(rows, 2, 1e-6, 0.05)
    assert res["judged_below"] == [2] and res["passed"]
    one = experiments.transition_check([r for r in rows if r["k"] != 2], 1, 1e-6, 0.05)
    assert not one["a_testable"] and one["judged_below"] == [] and one["verdict"] == "reproduced"


class FakeRun:
    def claim(self, cid, statement, source, value, tolerance, passed, verdict=None, **kw):
        self.recorded = {"value": value, "passed": passed, "verdict": verdict, **kw}
        validate(Claim(cid, statement, source, value, tolerance, verdict, passed, kw["kind"],
                       kw["paper"], kw["ours"], kw["reason"]))  # the schema's rules, as run.claim


def test_transition_claim_of_d_hat_1_rests_on_b_and_c():
    rows = [{"experiment": "F1", "d": 20, "d_hat": 1, "k": k, "eps": e, "loss": 1e-9,
             "diverged": False, "Q_norm": 0.0} for k, e in ((1, 1.0), (2, 0.08), (3, 1e-3), (4, 1e-3))]
    S = resolve(d_hat=[1])
    run = FakeRun()
    experiments.transition_claim(run, rows, S, "C1", "F1", "statement", "§5.1", paper="§5.1: ...")
    assert run.recorded["verdict"] == "reproduced" and run.recorded["passed"]
    assert run.recorded["kind"] == "evidence" and run.recorded["reason"] is None
    assert "≤ 0.001 at every converged k > 2d̂" in run.recorded["ours"]
    assert "not testable" in run.recorded["value"]["d_hat=1, d=20"]["(a)"]
    rows[-1]["eps"] = 0.5  # (b) still decides
    experiments.transition_claim(run, rows, S, "C1", "F1", "statement", "§5.1", paper="§5.1: ...")
    assert run.recorded["verdict"] == "not reproduced" and not run.recorded["passed"]
    assert run.recorded["reason"] == "differs"
    for r in rows:
        r["loss"] = 1e-3  # nothing converged: too few runs to judge at this scale
    experiments.transition_claim(run, rows, S, "C1", "F1", "statement", "§5.1", paper="§5.1: ...")
    assert run.recorded["verdict"] == "inconclusive" and run.recorded["reason"] == "not-at-scale"


def test_size_claim_fails_when_a_large_student_stops_extrapolating_or_a_small_k_extrapolates():
    """C10 and its control: C1's rule at every d, so a large d whose k = 5 misses the tolerance, or
    whose k = 3 (below the line) extrapolates, makes the claim partly reproduced (every d: not)."""
    S = resolve()
    rows = [{"experiment": "F7", "d": d, "d_hat": 2, "k": k, "eps": 2.0 if k == 3 else 0.01,
             "loss": 1e-9, "diverged": False} for d in S.sizes for k in S.size_ks for _ in range(3)]
    run = FakeRun()
    experiments.size_claim(run, rows, S)
    assert run.recorded["verdict"] == "reproduced" and set(run.recorded["value"]) == {f"d={d}" for d in S.sizes}
    for flip, to in ((5, 0.2), (3, 0.01)):
        bad = [{**r, "eps": to} if r["d"] == 200 and r["k"] == flip else r for r in rows]
        experiments.size_claim(run, bad, S)  # the other sizes still reproduce
        assert run.recorded["verdict"] == "partly" and run.recorded["reason"] == "differs"
        bad = [{**r, "eps": to} if r["k"] == flip else r for r in rows]
        experiments.size_claim(run, bad, S)
        assert run.recorded["verdict"] == "not reproduced" and not run.recorded["passed"]


def test_gradient_flow_conserves_q_and_the_far_start_is_far_from_balance():
    """C2/C11: the invariance of h under (SAS^-1, SB, CS^-1) makes
    G_A A^T - A^T G_A + G_B B^T - C^T G_C vanish (so Q is conserved by gradient flow), on our
    closed-form gradients of non-symmetric students; GD at the chapter's step keeps Q to a small
    drift; "nonsym_far" starts with ||Q|| of order one, "nonsym" with order sigma^2 d."""
    *_, (_, At, Bt, Ct, h_hat, k) = theory._random_students(seed=2, runs=3, d=6, K=5)  # non-symmetric
    _, GA, GB, GC = (x.numpy() for x in theory.loss_and_grads(At, Bt, Ct, h_hat, k.tolist()))
    A, B, C = (x.numpy() for x in (At, Bt, Ct))
    outer = lambda x, y: x[:, :, None] * y[:, None, :]
    X = GA @ A.swapaxes(1, 2) - A.swapaxes(1, 2) @ GA + outer(GB, B) - outer(C, GC)
    assert np.abs(X).max() <= 1e-10 * np.abs(GA).max()
    far, near = cfg(variant="nonsym_far", steps=1000, d=20), cfg(variant="nonsym", steps=1000, d=20)
    q = lambda a: np.linalg.norm(theory.conserved(*(np.asarray(x) for x in a)))
    q0 = q(train.init_student(far))
    assert 0.3 < q0 < 3 and q(train.init_student(near)) < 0.05
    r = train.train_students([far])[0]
    assert r["loss"] < 1e-4 and abs(q((r["A"], r["B"], r["C"])) - q0) < 0.05 * q0


def test_tables_fit_the_page():
    """The settings and transition tables stay narrow (about 100 characters a row) in both
    profiles: k runs down the rows, not across."""
    for profile in ("quick", "full"):
        s = resolve(profile=profile)
        text = repr(experiments.settings_table(s, profile))
        assert max(map(len, text.splitlines())) <= 110
    rows = [{"k": k, "eps": 1.0 if k < 8 else 1e-3, "loss": 1e-9, "diverged": False}
            for k in range(1, 12) for _ in range(5)]
    checks = {(4, d): experiments.transition_check(rows, 4, 1e-8, 0.01) for d in (20, 50, 100)}
    text = repr(experiments.transition_table(checks))
    assert max(map(len, text.splitlines())) <= 110
    assert "verdict" in text.splitlines()[0]


def test_spearman_link_fails_when_eps_rises():
    good = {"ck_loss": np.array([1e-4, 1e-6, 1e-8]), "ck_eps": np.array([1e-1, 1e-2, 1e-3])}
    bad = {"ck_loss": np.array([1e-4, 1e-6, 1e-8]), "ck_eps": np.array([1e-3, 1e-2, 1e-1])}
    assert experiments.spearman_link([good])["meets_rule"]
    assert not experiments.spearman_link([good, bad, bad])["meets_rule"]


def test_diagonal_gradient_matches_autograd():
    rng = np.random.default_rng(1)
    R, d, K = 3, 4, 5
    h_hat, mask = rng.normal(size=(R, K)), np.ones((R, K), dtype=bool)
    lam, b = rng.normal(size=(2, R, d)) * 0.5 + 1j * rng.normal(size=(2, R, d)) * 0.5
    _, g_lam, g_b = theory.diagonal_loss_and_grads(lam, b, None, h_hat, mask)
    parts = [torch.tensor(x, requires_grad=True) for x in (lam.real, lam.imag, b.real, b.imag)]
    z = torch.complex(parts[0], parts[1])
    h = ((parts[2] ** 2 + parts[3] ** 2)[..., None] * z[..., None] ** torch.arange(K)).real.sum(1)
    L = ((h - torch.tensor(h_hat)) ** 2).sum()
    auto = torch.autograd.grad(L, parts)
    assert np.allclose(g_lam.real, auto[0]) and np.allclose(g_lam.imag, auto[1])
    assert np.allclose(g_b.real, auto[2]) and np.allclose(g_b.imag, auto[3])


def resolve(**kw):
    base = dict(profile="quick", d=None, d_hat=None, k_values=None, teacher_eigs=None,
                teacher_weights=None, init_scale=1e-2, lr=1e-2, steps=None, n_seeds=None,
                horizon_q=None, gru_hidden=None, gru_steps=None)
    return experiments.resolve(**{**base, **kw})


def test_smoke_is_the_full_profile_at_toy_sizes():
    """Issue 24, item 2: smoke=True keeps the full profile's teachers, k values, gate, tolerance,
    F5 scales and chunks at SMOKE's sizes (-p values still win); smoke=False changes nothing."""
    full, toy = resolve(profile="full"), resolve(profile="full", smoke=True)
    assert (full.ds, full.n_seeds, full.horizon_q) == ([20, 50, 100], 5, 100)
    assert (full.gru_hidden, full.gru_steps, full.gru_batch, full.gru_ks, full.gru_seeds) == (
        64, 5000, 256, list(range(1, 13)), 16)
    assert full.steps_for(3, "full", "nonsym") == 4_000_000 and full.step_scale == 1
    quick = resolve()
    assert (quick.ds, quick.n_seeds, quick.horizon_q, quick.gru_ks, quick.chunk_size) == (
        [20], 3, 60, [2, 6, 10], None)
    assert quick.steps_for(1, "quick") == 50_000 and resolve(smoke=False) == quick
    assert (toy.ds, toy.n_seeds, toy.horizon_q, toy.gru_hidden, toy.gru_steps, toy.gru_ks) == (
        [12, 14], 2, 20, 4, 20, [1, 2, 12])
    same = ("teachers", "gate", "tol", "scales", "chunk_size", "init_scale", "lr")
    assert all(getattr(toy, f) == getattr(full, f) for f in same)
    assert set(toy.gru_ks) <= set(full.gru_ks) and toy.steps_for(3, "full", "nonsym") == 4000
    assert experiments.checkpoint_steps(200, "full", toy.step_scale) == tuple(range(20, 201, 20))
    given = resolve(profile="full", smoke=True, d=30, n_seeds=3)
    assert (given.ds, given.n_seeds) == ([30], 3)
    with pytest.raises(ParameterError, match="parameter 'smoke'"):
        resolve(smoke=True)


@pytest.mark.parametrize(("kw", "name"), [
    ({"profile": "slow"}, "profile"), ({"d": 4}, "d"), ({"d_hat": [0]}, "d_hat"),
    ({"d_hat": [7]}, "d_hat"), ({"d_hat": [2], "teacher_eigs": [[1.0]]}, "teacher_eigs"),
    ({"d_hat": [2], "teacher_eigs": [[1.2, 0.5]]}, "teacher_eigs"),
    ({"d_hat": [2], "teacher_weights": [[0.5, -0.5]]}, "teacher_weights"),
    ({"k_values": [0, 3]}, "k_values"), ({"lr": 0}, "lr"), ({"steps": 2.5}, "steps"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"k_values": [1, 2, 3, 4]}, "k_values"),  # no k = 2 d_hat + 1 = 5 for the reference teacher
])
def test_resolve_refuses_bad_parameters(kw, name):
    with pytest.raises(ParameterError, match=f"parameter '{name}'"):
        resolve(**kw)


def test_resolve_derives_teacher_and_k_from_d_hat():
    s = resolve(d_hat=[3], teacher_eigs=[[0.9, -0.5, 0.2]], d=30)
    lam, w, ks = s.teachers[3]
    assert lam == (0.9, -0.5, 0.2) and math.isclose(sum(w), 1.0) and ks == list(range(1, 10))


def test_plot_prop3_short_student_horizon():
    # a student horizon q = 20 shorter than the plot's 21 taps (rerun with -p horizon_q 20)
    lam, w = experiments.TEACHERS[2]
    fig = plots.plot_prop3(lam, w, 6, np.zeros(20))
    assert len(fig.axes[0].lines[0].get_xdata()) == 20


def test_survey_margins_of_the_committed_survey():
    from rnnbook.paths import SURVEY_DIR
    rows = experiments.survey_margins(SURVEY_DIR / "extrapolation.json").records
    assert [r["run"] for r in rows][:2] == ["seed 0", "seed 1"] and len(rows) >= 5
    for r in rows:  # every headline value is on the passing side of its threshold
        above, below = r["C1 (≤ 0.05 | ≥ 0.1)"].split(" | ")
        assert float(above) <= 0.05 and (below == "—" or float(below) >= 0.1)
        assert float(r["C3 (≤ 1)"]) <= 1 and float(r["C5 (≥ 1.5)"]) >= 1.5
        assert max(map(float, r["C8 (≤ 0.6 | ≤ 0.6)"].split(" | "))) <= 0.6


def test_a_horizon_shorter_than_the_longest_k_is_refused_and_short_full_runs_keep_a_checkpoint():
    """Bad input, clear error: eps_q's horizon q must cover every training length (here k up to
    2 d_hat + 3 = 7 and E3's 1..7); a full run with -p steps below F4's spacing still records its
    last step."""
    kw = dict(profile="quick", d=20, d_hat=[1, 2], k_values=None, teacher_eigs=None,
              teacher_weights=None, init_scale=1e-2, lr=1e-2, steps=None, n_seeds=None,
              gru_hidden=None, gru_steps=None)
    with pytest.raises(ParameterError, match="'horizon_q'.*>= 7"):
        experiments.resolve(horizon_q=6, **kw)
    assert experiments.resolve(horizon_q=7, **kw).horizon_q == 7
    assert experiments.checkpoint_steps(500, "full") == (500,)
    assert experiments.checkpoint_steps(40_000, "full") == (20_000, 40_000)


def test_hankel_rank_and_tail_share_tell_long_memory_from_short():
    """C12's measures: the d_hat = 2 teacher (lam_hat = 1) has Hankel rank 2 and keeps about half its
    response beyond q/2; the zero-loss short-memory construction fits the first k taps exactly, with
    a tail share near 0 and more modes than the teacher; the halved teacher forgets."""
    lam, w = experiments.TEACHERS[2]
    h = theory.teacher_impulse(lam, w, 60).numpy()
    assert theory.hankel_rank(h) == 2 and 0.5 < theory.tail_share(h) < 0.55
    for k in (3, 4):
        built = theory.short_memory_student(lam, w, k, 60)
        assert np.abs(built[:k] - h[:k]).max() <= 1e-12
        assert theory.tail_share(built) < 1e-6 and theory.hankel_rank(built) > 2
    short = theory.teacher_impulse(*experiments.short_teacher(lam, w), 60).numpy()
    assert theory.tail_share(short) < 1e-6 and theory.hankel_rank(short) == 2
    assert theory.tail_share(np.array([1.0, np.inf])) == math.inf and theory.hankel_rank(np.full(4, np.nan)) == -1


def memory_rows(experiment, h, ks=(3, 4), n=3, loss=1e-9):
    return [{"experiment": experiment, "d_hat": 2, "d": 20, "k": k, "h": h, "eps": 0.5, "loss": loss,
             "lam": (1.0, -0.9), "diverged": False} for k in ks for _ in range(n)]


def test_memory_check_needs_long_memory_and_its_control_to_forget():
    """C12 and its control: learned students with the teacher's memory and a halved teacher's
    students that forget pass; learned students of short memory fail, and so does a control that
    keeps long memory (GD pushing atoms to 1 by itself); no converged run is inconclusive."""
    lam, w = experiments.TEACHERS[2]
    long_h = theory.teacher_impulse(lam, w, 60).numpy()
    short_h = theory.teacher_impulse(*experiments.short_teacher(lam, w), 60).numpy()
    built = theory.short_memory_student(lam, w, 3, 60)
    check = lambda rows: experiments.memory_check(rows, 2, 20, 1e-6, lam, w, 60)
    good = memory_rows("F1", long_h) + memory_rows("F2", long_h) + memory_rows("F1-short", short_h) \
        + memory_rows("F2-short", short_h)
    res = check(good)
    assert res["passed"] and res["verdict"] == "reproduced" and res["ks"] == [3, 4]
    assert res["construction"][3]["tail share"] < experiments.MEMORY_LINE
    forgot = [{**r, "h": built} if r["experiment"] == "F2" else r for r in good]
    assert check(forgot)["verdict"] == "not reproduced" and not check(forgot)["long"]
    kept = [{**r, "h": long_h} if r["experiment"] == "F1-short" else r for r in good]
    assert check(kept)["verdict"] == "not reproduced" and not check(kept)["control fails"]
    wide = theory.teacher_impulse((1.0, -0.9, 0.6, -0.3), (0.3, 0.3, 0.2, 0.2), 60).numpy()  # rank 4
    assert not check([{**r, "h": wide} if r["experiment"] == "F1" else r for r in good])["low"]
    unconverged = [{**r, "loss": 1e-3} if r["experiment"] == "F2" else r for r in good]
    assert check(unconverged)["verdict"] == "inconclusive"
    own = [{**r, "experiment": r["experiment"] + "-mem"} if r["experiment"] in ("F1", "F2") else r for r in good]
    assert check(own)["passed"]  # C12's own runs where the chapter does not sweep the d_hat = 2 teacher
    other = [{**r, "lam": (0.9, -0.5)} if r["experiment"] == "F1" else r for r in good]
    assert check(other)["verdict"] == "inconclusive"  # another teacher's F1 runs are not C12's


def test_c12_runs_its_own_students_only_where_the_chapter_does_not():
    """C12 reads F1's and F2's runs of the default d_hat = 2 teacher with k = 3, 4, else trains its own;
    its control (the teacher's eigenvalues halved) always."""
    names = lambda S: {c.experiment for c in experiments.later_sweep(S, 0, "quick")}
    assert experiments.memory_reuses(resolve()) and "F1-mem" not in names(resolve())
    assert {"F1-short", "F2-short"} <= names(resolve())
    for S in (resolve(d_hat=[1]), resolve(d_hat=[3]), resolve(d_hat=[2], teacher_eigs=[[0.9, -0.5]])):
        assert not experiments.memory_reuses(S) and {"F1-mem", "F2-mem"} <= names(S)


def bound_rows(ratio_of_seed, ks, loss_of, experiment="F1", eps_of=None):
    rows = []
    for k in ks:
        for i, c in enumerate(ratio_of_seed):
            L = loss_of(k, i)
            rows.append({"experiment": experiment, "d": 20, "lam": (1.0, -0.9), "w": (0.5, 0.5), "k": k,
                         "variant": "sym_bal", "init_scale": 1e-2, "d_hat": 2, "diverged": False, "loss": L,
                         "eps": eps_of(k, i) if eps_of else c * math.sqrt(L)})
    return rows


def test_loss_bound_fits_c_on_the_first_seed_and_its_control_must_break_it():
    """C6 across runs: eps = c sqrt(L) with one c for every seed passes, and the per-seed values
    are each seed's largest ratio; a seed at 3c fails; so does a control below the line that
    extrapolates (eps vanishing with L there)."""
    loss = lambda k, i: 10.0 ** -(6 + k - 5 + i)
    above = bound_rows([17.0, 16.0, 17.5], (5, 6), loss)
    below = bound_rows([1, 1, 1], (2, 3), lambda k, i: 1e-10, eps_of=lambda k, i: 0.5)
    res = experiments.loss_bound(above, below, 1e-6)
    assert res["passed"] and res["c fitted (seed 1)"] == pytest.approx(17.0)
    assert list(res["c per seed"]) == ["seed 1", "seed 2", "seed 3"] and res["runs above"] == 6
    assert res["below / fitted c"] > 1e3 and res["Spearman across runs"] > 0.9
    assert experiments.seed_positions(above) == [0, 1, 2, 0, 1, 2]
    off = bound_rows([17.0, 16.0, 3 * 17.0], (5, 6), loss)
    assert not experiments.loss_bound(off, below, 1e-6)["held"]
    extrapolating_below = bound_rows([17.0] * 3, (2, 3), lambda k, i: 1e-10)
    res = experiments.loss_bound(above, extrapolating_below, 1e-6)
    assert res["held"] and not res["control fails"] and not res["passed"]
    assert not experiments.loss_bound(above[:1], below, 1e-6)["testable"]  # one seed: nothing to check


def test_the_long_memory_gru_teacher_runs_in_the_full_profile_only():
    """C8's long-memory teacher (lam_hat = 1) is the full profile's; its students draw their own seeds."""
    assert resolve(profile="full").gru_long and not resolve().gru_long
    assert experiments.GRU_LONG_TEACHER[0][0] == 1.0 and math.isclose(sum(experiments.GRU_LONG_TEACHER[1]), 1.0)
    assert experiments.short_teacher((1.0, -0.9), (0.5, 0.5)) == ((0.5, -0.45), (0.5, 0.5))
    assert experiments.memory_ks(1) == [2] and experiments.memory_ks(2) == [3, 4]


def test_ratio_along_runs_stays_put_only_where_eps_goes_with_sqrt_l():
    """C6 (reported): eps = c sqrt(L) along a run moves the ratio by nothing; eps that stays put while
    L falls 100-fold moves it tenfold."""
    L = np.array([1e-4, 1e-5, 1e-6])
    with_l = {"ck_loss": L, "ck_eps": 17 * np.sqrt(L), "diverged": False}
    without = {"ck_loss": L, "ck_eps": np.full(3, 0.5), "diverged": False}
    assert experiments.ratio_along_runs([with_l])["largest move"] == pytest.approx(1.0)
    res = experiments.ratio_along_runs([without])
    assert res["largest move"] == pytest.approx(10.0) and res["median decades of L"] == pytest.approx(2.0)


def test_survey_text_quotes_the_survey():
    """The survey numbers the chapter's text quotes (C1 at k = 2d̂, C4, C10 per size), from a toy
    survey of two seed runs and one setting."""
    def run(eps8: float, eps20: float, c4: float) -> dict:
        return {"C10": {"d=8": {"median_eps": {"3": 9.0, "5": eps8}}, "d=20": {"median_eps": {"3": 5.0, "5": eps20}}},
                "C4": c4, "C1": {"d_hat=1, d=20": {"median_eps": {"1": 1.0, "2": eps8}}, "(a)": "x"}}
    text = report.survey_text({"seed 0": run(0.011, 0.01, 0.0), "seed 1": run(0.013, 0.01, 8e-17),
                               "d_hat 1": run(0.5, 0.5, 0.0)})  # a setting: not in C10's seeds
    assert text["c10_survey_by_d"] == "0.011 to 0.013 at $d = 8$, 0.01 at $d = 20$"
    assert (text["c4_survey_max"], text["c4_survey_zeros"]) == ("8.0e-17", "2")
    assert text["c1_at_survey"] == "0.011 to 0.5 at $\\hat d$ = 1"



def test_full_text_quotes_the_full_run_or_says_it_has_not_reached_a_claim():
    """Issue 47: the sentences at C1, C2, C8 and C10 that quote the committed full run, from toy
    claims (NaN medians of unconverged k left out); without them each says it is not reached."""
    assert all("has not reached this claim" in t for t in report.full_text({}).values())
    tol = "(a) median eps >= 0.1 for 2 <= k < 2 d_hat; (b) <= 0.01 for k > 2 d_hat"
    cells = {"d_hat=2, d=50": {"median_eps": {"1": 0.9, "2": 0.8, "3": 3.0, "5": 0.004, "6": "nan"}},
             "d_hat=1, d=100": {"median_eps": {"1": 1.0, "3": 0.007}, "converged_above": 0.4}}
    full = {"C1": Claim("C1", "s", "src", cells, tol, "reproduced", True),
            "C10": Claim("C10", "s", "src", {"d=8": {"median_eps": {"3": 4.0, "5": 0.01}},
                                             "d=400": {"median_eps": {"3": 5.0, "5": 0.02}}}, tol,
                         "not reproduced", False),
            "C8": Claim("C8", "s", "src", {"k_small": 2, "ratio_small": 1.0, "k_large": 12, "ratio_large": 0.3,
                                           "beyond_large": 0.25, "max_train_rel_loss": 1e-3,
                                           "long-memory teacher": {"ratio_small": 1.1, "ratio_large": 0.4,
                                                                   "beyond_large": 0.5, "max_train_rel_loss": 2e-3}},
                        "t", "reproduced", True)}
    text = report.full_text(full)
    assert "C1 is *reproduced* over 2 cells ($d$ = 50, 100)" in text["full_c1"]
    assert "below the line is 0.8 (rule: at least 0.1), and the largest above it 0.007 (tolerance 0.01;" \
        in text["full_c1"] and "in 1 of the cells fewer than two thirds" in text["full_c1"]
    assert "*not reproduced*" in text["full_c10"] and "0.01 at $d$ = 8, 0.02 at $d$ = 400" in text["full_c10"]
    assert "the long-memory teacher's 1.10 and 0.40 (0.50 beyond)" in text["full_c8"]
    assert "has not reached" in text["full_c2"]
    cells = {"d_hat=2, d=50": {"verdict": "reproduced", "median_eps": {"2": 0.8, "5": 0.004}, "judged_above": [5]},
             "d_hat=3, d=50": {"verdict": "not reproduced", "median_eps": {"4": 0.5, "7": 0.15, "8": 0.005},
                               "judged_above": [7, 8], report.EDGE_EPS: 0.15, report.EDGE_RUNS: 5,
                               report.EDGE_Q: 0.05},
             "d_hat=4, d=50": {"verdict": "inconclusive", "median_eps": {"4": 0.5, "9": "nan"}, "judged_above": []}}
    text = report.full_text({"C2": Claim("C2", "s", "src", cells, tol, "partly", False)})["full_c2"]
    assert ("*reproduced* at ($\\hat d$ = 2, $d$ = 50), *not reproduced* at ($\\hat d$ = 3, $d$ = 50: "
            "$k$ = 7, 0.15), *inconclusive* at ($\\hat d$ = 4, $d$ = 50)") in text
    assert "are 0.15 and 0.05 at (3, 50) ($(\\hat d, d)$)" in text  # the edge, where a run was at the floor


def test_edge_balance_reads_the_runs_at_the_loss_floor_only():
    row = lambda eps, loss, q: {"eps": eps, "loss": loss, "Q_norm": q, "diverged": False}  # noqa: E731
    edge = experiments.edge_balance([row(0.2, 1e-10, 0.1), row(0.4, 0.99e-10, 0.3), row(5.0, 1e-8, 0.2)])
    assert list(edge.values()) == [pytest.approx(0.3), 2, pytest.approx(0.2)]
    assert math.isnan(experiments.edge_balance([])["at k = 2d̂+1: median ε_q at the loss floor"])


def test_c5_rule_can_fail():
    """C5's control (review3): the rule passes an imbalance that falls like sigma^2 and rejects one
    that falls only like sigma (the slope of no effect beyond the init's own scale) or not at all."""
    scales = (1e-1, 1e-2, 1e-3)

    def rows(power: float) -> list[dict]:
        B = np.ones(4)
        return [{"init_scale": s, "B": B, "C": B + np.eye(4)[0] * s ** power * seed_factor}
                for s in scales for seed_factor in (0.5, 1.0, 2.0)]
    assert experiments.imbalance_scaling(rows(2), scales)["passed"]
    assert not experiments.imbalance_scaling(rows(1), scales)["passed"]
    assert not experiments.imbalance_scaling(rows(0), scales)["passed"]
